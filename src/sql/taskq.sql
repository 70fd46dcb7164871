/*
 * taskq install script: the whole current schema in one place.
 *
 * This file is the source; the Makefile copies it to taskq--<version>.sql,
 * the install script of the default version in taskq.control.  A database
 * of an older version reaches the same schema through the update scripts
 * taskq--A--B.sql (test/t/011_upgrade.pl compares the two), so every change
 * made here is also made, in the same words, in the update script to the
 * default version.
 *
 * Sections, in the order of the code's layers; each creates what the next
 * ones use:
 *   common      the schema, the roles, the settings admins may change
 *   queue       the task table, its status type, indexes and triggers, the
 *               deferred signals, the per-action settings tables
 *   workflow    what ties tasks together: cancelled workflows, jobs and
 *               their states, the helpers that build chains, groups and
 *               chords
 *   api         the functions callers use, each with its COMMENT and who
 *               may execute it
 *   monitoring  the views operators read
 *
 * Rules for this script (PostgreSQL's rules for extension scripts): no
 * CREATE OR REPLACE and no IF NOT EXISTS, every reference schema-qualified,
 * pg_catalog operators spelled out in views and defaults
 * (test/static/install_scripts.sh checks them).
 *
 * The control file names schema pg_catalog and this script creates schema
 * taskq itself: CREATE SCHEMA fails if a schema of that name exists, so the
 * extension never adopts a schema somebody else prepared, and the schema is
 * a member of the extension (DROP EXTENSION drops it).
 *
 * Privileges: nothing is granted to PUBLIC.  Four roles get what their job
 * needs, granted next to each object: producers and workers EXECUTE on
 * their functions only; monitors SELECT on the views only (views read the
 * tables with their owner's rights); admins every function and DML on the
 * tables.  The public functions are SECURITY DEFINER with a pinned
 * search_path, so producers and workers have no privileges on the tables
 * and reach them only through the API.  Nobody but the owner gets TRIGGER
 * or REFERENCES: a trigger on taskq.tasks would run inside the SECURITY
 * DEFINER functions as the owner.  The internal helpers (taskq._*) are for
 * the owner alone.
 */

\echo Use "CREATE EXTENSION taskq" to load this file. \quit

/* =====================================================================
 * common: the schema, the roles and the settings.  Everything below lives
 * in schema taskq and is granted to these roles.
 * ===================================================================== */

CREATE SCHEMA taskq;
COMMENT ON SCHEMA taskq IS 'the taskq task queue: tasks, their functions and monitoring views';
REVOKE ALL ON SCHEMA taskq FROM PUBLIC;

/*
 * Roles are cluster-wide: they outlive DROP EXTENSION and are shared by
 * every database that installs taskq.  A missing one is created (NOLOGIN)
 * and marked with a comment starting "taskq role: ".  An existing one is
 * used only if it carries that mark, which only superusers and roles with
 * CREATEROLE can set; any other role of the same name makes CREATE
 * EXTENSION fail, so that it is never granted privileges it did not have.
 */
DO $roles$
DECLARE
    r record;
    note text;
BEGIN
    FOR r IN SELECT v.name, v.job
               FROM (VALUES ('taskq_producer', 'enqueue tasks, add dependencies, wait for tasks'),
                            ('taskq_worker', 'claim tasks, extend leases, return tasks'),
                            ('taskq_admin', 'everything: every function, the tables, per-action limits, settings'),
                            ('taskq_monitor', 'read the monitoring views')) AS v(name, job)
    LOOP
        SELECT pg_catalog.shobj_description(a.oid, 'pg_authid') INTO note
          FROM pg_catalog.pg_roles AS a
         WHERE a.rolname OPERATOR(pg_catalog.=) r.name;
        IF NOT FOUND THEN
            EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r.name);
            EXECUTE pg_catalog.format('COMMENT ON ROLE %I IS %L', r.name,
                                      'taskq role: ' OPERATOR(pg_catalog.||) r.job);
        ELSIF note IS NULL OR NOT pg_catalog.starts_with(note, 'taskq role: ') THEN
            RAISE EXCEPTION 'role "%" already exists and is not a taskq role', r.name
                USING ERRCODE = 'duplicate_object',
                      DETAIL = 'CREATE EXTENSION taskq grants privileges to roles taskq_producer, taskq_worker, taskq_admin and taskq_monitor, and uses an existing one only if its comment starts with "taskq role: ".',
                      HINT = pg_catalog.format('Drop or rename role %I, or, if it is meant for taskq, mark it: COMMENT ON ROLE %I IS %L.',
                                               r.name, r.name, 'taskq role: ' OPERATOR(pg_catalog.||) r.job);
        END IF;
    END LOOP;
END
$roles$;

GRANT USAGE ON SCHEMA taskq TO taskq_producer, taskq_worker, taskq_admin, taskq_monitor;

-- Settings are cluster-wide, like the roles: admins may ALTER SYSTEM the
-- settings that tune the queue (applied at the next reload).  Not
-- taskq.worker_role or taskq.background_worker: those stay superuser's.
GRANT ALTER SYSTEM ON PARAMETER taskq.notify_interval, taskq.worker_naptime, taskq.retention,
    taskq.worker_retention, taskq.metrics_interval TO taskq_admin;

/* =====================================================================
 * queue: the tasks and what keeps claiming them cheap.  One table holds
 * every task from insertion to retention; partial indexes hold the ready
 * set in claim order, the leases, the delayed tasks and the finished ones;
 * statement triggers keep the claims' start in the ready indexes right;
 * the deferred signals let completions of a join's predecessors never wait
 * for each other; the per-action tables hold what admins set per action
 * (retry policies, which actions a worker role may handle).
 * ===================================================================== */

CREATE TYPE taskq.status AS ENUM ('pending', 'in_progress', 'completed', 'aborted');
COMMENT ON TYPE taskq.status IS 'life of a task: pending, in_progress, then completed or aborted';

-- When a task with predecessors may run (its "trigger"): the rule belongs
-- to the successor and is settled by its counts, in the transaction that
-- finishes the deciding predecessor.
CREATE TYPE taskq.trigger_rule AS ENUM ('all_success', 'all_done', 'one_failed', 'one_success');
COMMENT ON TYPE taskq.trigger_rule IS
    'when a task with predecessors runs: all_success, all_done, one_failed, one_success';

CREATE SEQUENCE taskq.task_seq;
COMMENT ON SEQUENCE taskq.task_seq IS 'insertion order of tasks (ties after priority)';
GRANT USAGE, SELECT, UPDATE ON SEQUENCE taskq.task_seq TO taskq_admin;

/*
 * One row per task.  Columns named in the public contract come first; seq
 * and spontaneous are ours.  id and action use the "C" collation: they are
 * identifiers, compared bytewise, which keeps the btrees cheap.
 *
 * Invariant kept by every path: num_signals is the number of predecessors
 * that have not finished yet (every finish of a predecessor, completed or
 * aborted, decrements it once), so that replace_tasks can carry a replaced
 * task's live incoming edges over exactly; num_completed and num_failed
 * count the finishes by outcome.  A one_success or one_failed task that
 * its rule released early is the exception: its num_signals is 0 from then
 * on (it is ready), and its unfinished predecessors are total_dependencies
 * - num_completed - num_failed.
 */
CREATE TABLE taskq.tasks (
    id                  text COLLATE "C" NOT NULL,
    action              text COLLATE "C" NOT NULL,
    body                jsonb,
    status_code         taskq.status NOT NULL DEFAULT 'pending',
    status              text,
    num_tries           integer NOT NULL DEFAULT 0,
    max_tries           integer,
    num_signals         integer NOT NULL DEFAULT 0,
    total_dependencies  integer NOT NULL DEFAULT 0,
    to_signal_after     text[] COLLATE "C",
    actor_id            text,
    action_deadline     timestamptz,
    performance_token   uuid,
    post_result         boolean NOT NULL DEFAULT false,
    priority            integer NOT NULL DEFAULT 0,
    not_before          timestamptz NOT NULL DEFAULT pg_catalog.now(),
    created_at          timestamptz NOT NULL DEFAULT pg_catalog.now(),
    finished_at         timestamptz,
    seq                 bigint NOT NULL DEFAULT pg_catalog.nextval('taskq.task_seq'::pg_catalog.regclass),
    spontaneous         boolean NOT NULL DEFAULT false,
    retry               jsonb,
    workflow            text COLLATE "C",
    cancelled           boolean NOT NULL DEFAULT false,
    "trigger"           taskq.trigger_rule NOT NULL DEFAULT 'all_success'::taskq.trigger_rule,
    num_completed       integer NOT NULL DEFAULT 0,
    num_failed          integer NOT NULL DEFAULT 0,
    result              jsonb,
    claimed_at          timestamptz,
    concurrency_key     text COLLATE "C",
    CONSTRAINT tasks_pkey PRIMARY KEY (id),
    CONSTRAINT tasks_num_tries_check CHECK (num_tries OPERATOR(pg_catalog.>=) 0),
    CONSTRAINT tasks_max_tries_check CHECK (max_tries OPERATOR(pg_catalog.>) 0),
    CONSTRAINT tasks_num_signals_check CHECK (num_signals OPERATOR(pg_catalog.>=) 0)
);
COMMENT ON TABLE taskq.tasks IS 'one row per task of the queue';
-- A queue table turns over fast: each task leaves two dead row versions
-- behind (claim, end) and dead entries at the head of the ready indexes,
-- which every claim must step over until VACUUM removes them.  Vacuum it
-- after 2% of its rows changed, not the default 20%, and at full speed.
ALTER TABLE taskq.tasks SET (autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0);

COMMENT ON COLUMN taskq.tasks.id IS 'unique, caller-chosen task identifier';
COMMENT ON COLUMN taskq.tasks.action IS 'name of the operation a worker performs for this task';
COMMENT ON COLUMN taskq.tasks.body IS 'parameters of the action, for the worker';
COMMENT ON COLUMN taskq.tasks.status_code IS 'state of the task in its life';
COMMENT ON COLUMN taskq.tasks.status IS 'human-readable status set by application code';
COMMENT ON COLUMN taskq.tasks.num_tries IS 'number of times the task was owned';
COMMENT ON COLUMN taskq.tasks.max_tries IS 'most times the task may be owned (NULL: unlimited)';
COMMENT ON COLUMN taskq.tasks.num_signals IS 'predecessors that have not finished yet';
COMMENT ON COLUMN taskq.tasks.total_dependencies IS 'number of predecessors the task was given';
COMMENT ON COLUMN taskq.tasks.to_signal_after IS 'successors: tasks signalled when this one finishes';
COMMENT ON COLUMN taskq.tasks.actor_id IS 'worker that owns or last owned the task';
COMMENT ON COLUMN taskq.tasks.action_deadline IS 'end of the current lease (NULL: no deadline)';
COMMENT ON COLUMN taskq.tasks.performance_token IS 'token of the current or last performance; fences returns';
COMMENT ON COLUMN taskq.tasks.post_result IS 'the caller intends to wait for the result';
COMMENT ON COLUMN taskq.tasks.priority IS 'higher runs first';
COMMENT ON COLUMN taskq.tasks.not_before IS 'the task is not owned before this time';
COMMENT ON COLUMN taskq.tasks.seq IS 'insertion order';
COMMENT ON COLUMN taskq.tasks.spontaneous IS 'completed by the queue itself when its last signal arrives';
COMMENT ON COLUMN taskq.tasks.retry IS 'backoff between tries: {"delay", "factor", "max_delay", "jitter"} (NULL: the action''s policy)';
COMMENT ON COLUMN taskq.tasks.workflow IS 'key of the workflow or group the task belongs to, for cancel_workflow';
COMMENT ON COLUMN taskq.tasks.cancelled IS 'cancelled while in progress: it ends aborted whatever its worker returns';
COMMENT ON COLUMN taskq.tasks."trigger" IS 'when the task runs, from its predecessors'' outcomes: all_success, all_done, one_failed, one_success';
COMMENT ON COLUMN taskq.tasks.num_completed IS 'predecessors whose completion was counted';
COMMENT ON COLUMN taskq.tasks.num_failed IS 'predecessors whose abort was counted';
COMMENT ON COLUMN taskq.tasks.result IS 'what the last return gave as result (at most 1 MiB), for wait_for_task and the successors';
COMMENT ON COLUMN taskq.tasks.claimed_at IS 'when the last try was claimed, the moment its lease runs from (NULL: never claimed)';
COMMENT ON COLUMN taskq.tasks.concurrency_key IS 'tasks of an action that share it share its max_running_per_key (NULL: none)';

/*
 * The ready set, per action in claim order.  Partial: a row is in it only
 * while it is pending with every predecessor done, so the claim cost does
 * not grow with blocked, in-progress or finished tasks.  not_before is the
 * last key column so that delayed tasks are skipped inside the index,
 * without heap visits.  A claim of several actions (or of any) merges the
 * walks of each action's entries; a second index in claim order over all
 * actions would cost every enqueue one more entry.  No deduplication: seq
 * is unique per task, so a key repeats only for the versions of one task
 * made ready again (a retry, an expiry), and the pass that tries it on
 * each full leaf page would merge next to nothing.
 */
CREATE INDEX tasks_ready_action_idx ON taskq.tasks
    (action, priority DESC, seq, not_before)
    WITH (deduplicate_items = off)
    WHERE status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status
      AND num_signals OPERATOR(pg_catalog.=) 0;
-- Leases, earliest deadline first: the expiry sweep reads its head only.
CREATE INDEX tasks_lease_idx ON taskq.tasks (action_deadline)
    WHERE status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status;
-- Tasks in progress per action and concurrency key: a claim of an action
-- with a concurrency limit counts those still holding a slot through it
-- (taskq.set_concurrency_limit), as does the view taskq.limits.
CREATE INDEX tasks_running_idx ON taskq.tasks (action, concurrency_key)
    WHERE status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status;
-- Delayed tasks by not_before: the worker finds those whose time came, and
-- the next one to come, with a range scan.  Only tasks that were delayed
-- (not_before after their insertion: a future not_before, or a retry's
-- backoff) are in it, so an ordinary enqueue costs no entry here.
CREATE INDEX tasks_not_before_idx ON taskq.tasks (not_before)
    WHERE status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status
      AND num_signals OPERATOR(pg_catalog.=) 0
      AND not_before OPERATOR(pg_catalog.>) created_at;
-- Blocked tasks (pending, predecessors left) by action: the gauge of
-- taskq.metrics() counts them without reading the rest of the table.  A
-- task without predecessors is never in it.
CREATE INDEX tasks_blocked_idx ON taskq.tasks (action)
    WHERE status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status
      AND num_signals OPERATOR(pg_catalog.>) 0;
-- Finished tasks by age, for retention.
CREATE INDEX tasks_finished_idx ON taskq.tasks (finished_at)
    WHERE status_code OPERATOR(pg_catalog.>=) 'completed'::taskq.status;

-- Tasks of a workflow by state: cancel_workflow, and a job's state.
CREATE INDEX tasks_workflow_idx ON taskq.tasks (workflow, status_code)
    WHERE workflow IS NOT NULL;

-- A task's predecessors, through their successors (predecessor_results).
-- No claim or return changes to_signal_after: their updates stay HOT.
CREATE INDEX tasks_successors_idx ON taskq.tasks USING gin (to_signal_after)
    WHERE to_signal_after IS NOT NULL;

SELECT pg_catalog.pg_extension_config_dump('taskq.tasks', '');
SELECT pg_catalog.pg_extension_config_dump('taskq.task_seq', '');

GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.tasks TO taskq_admin;
-- Monitors (the web console's read-only role among them) browse tasks by
-- their indexed columns and see their shape; a task's body and result (the
-- application's data) and its performance token stay with producers,
-- workers and admins, as a run's context does.
GRANT SELECT (id, action, status_code, status, num_tries, max_tries, num_signals, total_dependencies,
              to_signal_after, actor_id, action_deadline, post_result, priority, not_before,
              created_at, finished_at, seq, spontaneous, retry, workflow, cancelled, "trigger",
              num_completed, num_failed, claimed_at, concurrency_key)
    ON taskq.tasks TO taskq_monitor;

/*
 * Where claims start in the ready indexes.  Claims start past the dead
 * entries at the head of a ready index; every SQL statement that writes a
 * ready task moves that start back before it, and one that changes or
 * deletes a ready task keeps its transaction's claims from moving the
 * start, in these statement triggers over the changed rows.  The direct
 * paths (claim, completion, batch insert) fire no triggers and do the same
 * themselves.
 */
CREATE FUNCTION taskq.tasks_written()
RETURNS trigger
AS 'MODULE_PATHNAME', 'taskq_tasks_written'
LANGUAGE C;
COMMENT ON FUNCTION taskq.tasks_written() IS
    'trigger: ready tasks a statement wrote move the claims'' start in the ready indexes back before them';
REVOKE ALL ON FUNCTION taskq.tasks_written() FROM PUBLIC;

CREATE TRIGGER tasks_ready_hint_insert AFTER INSERT ON taskq.tasks
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION taskq.tasks_written();
CREATE TRIGGER tasks_ready_hint_update AFTER UPDATE ON taskq.tasks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION taskq.tasks_written();
CREATE TRIGGER tasks_ready_hint_delete AFTER DELETE ON taskq.tasks
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION taskq.tasks_written();
-- also in sessions with session_replication_role = replica (pg_restore, replication tools)
ALTER TABLE taskq.tasks ENABLE ALWAYS TRIGGER tasks_ready_hint_insert;
ALTER TABLE taskq.tasks ENABLE ALWAYS TRIGGER tasks_ready_hint_update;
ALTER TABLE taskq.tasks ENABLE ALWAYS TRIGGER tasks_ready_hint_delete;

-- Signals a completion did not add to a join's num_signals because another
-- transaction held the join's row, or the join is wide (more than 64
-- predecessors): the background worker adds them within milliseconds.
-- One counter row per join and backend (stripe = backend id), so
-- completions never wait for each other here, and adding to a counter is a
-- HOT update (fillfactor leaves the room): the table stays a few pages.
CREATE TABLE taskq.deferred_signals (
    task_id         text COLLATE "C" NOT NULL,
    stripe          integer NOT NULL,
    signals         integer NOT NULL CHECK (signals OPERATOR(pg_catalog.>=) 0),
    CONSTRAINT deferred_signals_pkey PRIMARY KEY (task_id, stripe)
) WITH (fillfactor = 50);
COMMENT ON TABLE taskq.deferred_signals IS
    'completions'' signals for joins that were locked or wide, waiting for the background worker to add them to num_signals';
SELECT pg_catalog.pg_extension_config_dump('taskq.deferred_signals', '');

GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.deferred_signals TO taskq_admin;

-- Defaults per action: max_tries and the retry backoff of tasks that give none.
CREATE TABLE taskq.action_policies (
    action      text COLLATE "C" NOT NULL,
    max_tries   integer,
    retry       jsonb,
    keep_attempts boolean NOT NULL DEFAULT false,
    CONSTRAINT action_policies_pkey PRIMARY KEY (action),
    CONSTRAINT action_policies_max_tries_check CHECK (max_tries OPERATOR(pg_catalog.>) 0)
);
COMMENT ON TABLE taskq.action_policies IS
    'per action: default max_tries and retry backoff for tasks that give none, and whether claims keep attempt history (set with taskq.set_action_policy)';
COMMENT ON COLUMN taskq.action_policies.keep_attempts IS
    'each claim of the action''s tasks adds a row to taskq.attempts';
SELECT pg_catalog.pg_extension_config_dump('taskq.action_policies', '');

GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.action_policies TO taskq_admin;

/*
 * Each session keeps the default max_tries it looked up per action; every
 * write of the table (set_action_policy, or an admin's own) tells all
 * sessions to drop them, through these triggers.
 */
CREATE FUNCTION taskq.action_policies_written()
RETURNS trigger
AS 'MODULE_PATHNAME', 'taskq_action_policies_written'
LANGUAGE C;
COMMENT ON FUNCTION taskq.action_policies_written() IS
    'trigger: every session drops the action policies it kept when taskq.action_policies is written';
REVOKE ALL ON FUNCTION taskq.action_policies_written() FROM PUBLIC;
-- rows, not statements: logical replication's apply worker fires row triggers only
CREATE TRIGGER action_policies_written
    AFTER INSERT OR UPDATE OR DELETE ON taskq.action_policies
    FOR EACH ROW EXECUTE FUNCTION taskq.action_policies_written();
CREATE TRIGGER action_policies_truncated
    AFTER TRUNCATE ON taskq.action_policies
    FOR EACH STATEMENT EXECUTE FUNCTION taskq.action_policies_written();
-- also in sessions with session_replication_role = replica (pg_restore, replication tools)
ALTER TABLE taskq.action_policies ENABLE ALWAYS TRIGGER action_policies_written;
ALTER TABLE taskq.action_policies ENABLE ALWAYS TRIGGER action_policies_truncated;

-- The history of attempts, for the actions whose policy keeps it
-- (keep_attempts): one row per claim, written in the claim's transaction,
-- its outcome in the transaction that ends the claim.  No foreign key to
-- taskq.tasks (its trigger would cost every delete of a task): the rows of
-- a task are deleted by the statement trigger tasks_ready_hint_delete, and
-- by the completion that deletes a task with taskq.retention = 0.
CREATE TABLE taskq.attempts (
    task_id     text COLLATE "C" NOT NULL,
    try         integer NOT NULL,
    actor       text NOT NULL,
    claimed_at  timestamptz NOT NULL,
    finished_at timestamptz,
    outcome     text,
    status      text,
    result      jsonb,
    CONSTRAINT attempts_pkey PRIMARY KEY (task_id, try),
    CONSTRAINT attempts_try_check CHECK (try OPERATOR(pg_catalog.>) 0),
    CONSTRAINT attempts_outcome_check
        CHECK (outcome OPERATOR(pg_catalog.=) ANY
               (ARRAY['completed', 'aborted', 'pending', 'released', 'expired', 'cancelled']))
);
COMMENT ON TABLE taskq.attempts IS
    'one row per claim of a task whose action keeps attempts (taskq.set_action_policy): who held it, when, and how the claim ended';
COMMENT ON COLUMN taskq.attempts.try IS 'the claim''s number among the task''s claims, from 1';
COMMENT ON COLUMN taskq.attempts.outcome IS
    'NULL while held; completed, aborted, pending (given back to retry), released, expired or cancelled';
COMMENT ON COLUMN taskq.attempts.status IS 'the status text the owner returned, if any';
COMMENT ON COLUMN taskq.attempts.result IS 'the result the owner returned, if any';
SELECT pg_catalog.pg_extension_config_dump('taskq.attempts', '');

GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.attempts TO taskq_admin;
GRANT SELECT ON taskq.attempts TO taskq_monitor;

-- Retry policies (an action's, or a task's own "retry"): the check that
-- set_action_policy makes, and the backoff a retried task waits.
CREATE FUNCTION taskq._check_retry(retry jsonb)
RETURNS void
AS 'MODULE_PATHNAME', 'taskq_check_retry'
LANGUAGE C IMMUTABLE;
COMMENT ON FUNCTION taskq._check_retry(jsonb) IS
    'internal: raise the error for a malformed retry policy';
REVOKE ALL ON FUNCTION taskq._check_retry(jsonb) FROM PUBLIC;

-- The wait before try number tries + 1: delay * factor^(tries - 1), at most
-- max_delay, spread by +-jitter.  No policy: no wait.  (OPERATOR() syntax
-- gives every operator the same precedence: hence every parenthesis.)
CREATE FUNCTION taskq._backoff(policy jsonb, tries integer)
RETURNS interval
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN policy IS NULL THEN '0 s'::interval ELSE
        pg_catalog.make_interval(secs => capped OPERATOR(pg_catalog.*) spread)
    END
      FROM (SELECT LEAST(COALESCE(pg_catalog.date_part('epoch', (policy OPERATOR(pg_catalog.->>) 'max_delay')::interval),
                                  86400 * 365),
                         pg_catalog.date_part('epoch', (policy OPERATOR(pg_catalog.->>) 'delay')::interval)
                         OPERATOR(pg_catalog.*)
                         pg_catalog.power(COALESCE((policy OPERATOR(pg_catalog.->>) 'factor')::float8, 2),
                                          LEAST(GREATEST(tries OPERATOR(pg_catalog.-) 1, 0), 60))) AS capped,
                   1 OPERATOR(pg_catalog.+)
                   (COALESCE((policy OPERATOR(pg_catalog.->>) 'jitter')::float8, 0)
                    OPERATOR(pg_catalog.*)
                    ((2 OPERATOR(pg_catalog.*) pg_catalog.random()) OPERATOR(pg_catalog.-) 1)) AS spread) AS b
$$;
COMMENT ON FUNCTION taskq._backoff(jsonb, integer) IS
    'internal: the wait before the next try under a retry policy';
REVOKE ALL ON FUNCTION taskq._backoff(jsonb, integer) FROM PUBLIC;

/*
 * Per-action limits: a role with rows here (or any role it belongs to) may
 * own, extend and return only tasks of these actions.  Superusers and
 * members of taskq_admin are never limited.
 */
CREATE TABLE taskq.action_grants (
    role    regrole NOT NULL,
    action  text COLLATE "C" NOT NULL,
    CONSTRAINT action_grants_pkey PRIMARY KEY (role, action),
    CONSTRAINT action_grants_action_check
        CHECK (pg_catalog.octet_length(action) OPERATOR(pg_catalog.>=) 1
               AND pg_catalog.octet_length(action) OPERATOR(pg_catalog.<=) 255)
);
COMMENT ON TABLE taskq.action_grants IS
    'per-action limits: a worker role with rows here handles only tasks of these actions';
COMMENT ON COLUMN taskq.action_grants.role IS
    'the limited role; members of it are limited too';
COMMENT ON COLUMN taskq.action_grants.action IS 'an action the role may own, extend and return';
SELECT pg_catalog.pg_extension_config_dump('taskq.action_grants', '');

-- Every backend caches the limits of its session user; a change here
-- clears the caches when it commits.  Row triggers, enabled ALWAYS: they also
-- fire under session_replication_role = replica and in logical
-- replication's apply worker (which fires row triggers only).
CREATE FUNCTION taskq._action_grants_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'taskq_action_grants_changed'
LANGUAGE C;
COMMENT ON FUNCTION taskq._action_grants_changed() IS
    'internal: drop the cached per-action limits of every backend';
REVOKE ALL ON FUNCTION taskq._action_grants_changed() FROM PUBLIC;

CREATE TRIGGER action_grants_changed
    AFTER INSERT OR UPDATE OR DELETE ON taskq.action_grants
    FOR EACH ROW EXECUTE FUNCTION taskq._action_grants_changed();
CREATE TRIGGER action_grants_truncated
    AFTER TRUNCATE ON taskq.action_grants
    FOR EACH STATEMENT EXECUTE FUNCTION taskq._action_grants_changed();
ALTER TABLE taskq.action_grants ENABLE ALWAYS TRIGGER action_grants_changed;
ALTER TABLE taskq.action_grants ENABLE ALWAYS TRIGGER action_grants_truncated;

GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.action_grants TO taskq_admin;

/* =====================================================================
 * workflow: what ties tasks together beyond single edges.  A workflow key
 * groups tasks for cancel_workflow; a job is a workflow with item counters
 * and a state derived from its tasks; chains, groups and chords are built
 * from task objects by the helpers here and inserted in one call, so they
 * keep every rule of insert_tasks and add_dependencies (atomic, duplicate
 * ids refused, cycles refused).
 * ===================================================================== */

-- Workflows cancelled: their tasks never run again, even ones inserted later.
CREATE TABLE taskq.cancelled_workflows (
    workflow        text COLLATE "C" NOT NULL,
    cancelled_at    timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT cancelled_workflows_pkey PRIMARY KEY (workflow)
);
COMMENT ON TABLE taskq.cancelled_workflows IS
    'workflow keys cancelled with taskq.cancel_workflow: tasks inserted with them are aborted at once';
SELECT pg_catalog.pg_extension_config_dump('taskq.cancelled_workflows', '');

GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.cancelled_workflows TO taskq_admin;

/*
 * Jobs: a job is the workflow of its tasks (their workflow key is the
 * job's id) plus item counters that workers move.  Its
 * state is derived from its tasks, so finishing a task never writes the job
 * row; only progress reports do.
 */
CREATE TABLE taskq.jobs (
    id              text COLLATE "C" NOT NULL,
    item_count      integer,
    item_progress   bigint NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT jobs_pkey PRIMARY KEY (id),
    CONSTRAINT jobs_item_count_check CHECK (item_count OPERATOR(pg_catalog.>=) 0),
    CONSTRAINT jobs_item_progress_check CHECK (item_progress OPERATOR(pg_catalog.>=) 0)
);
COMMENT ON TABLE taskq.jobs IS
    'jobs: a workflow of tasks with item counters; see taskq.job_states for their state';
SELECT pg_catalog.pg_extension_config_dump('taskq.jobs', '');

GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.jobs TO taskq_admin;

-- A job's state, for taskq.job_state (its result type) and for monitors.
CREATE VIEW taskq.job_states AS
SELECT j.id,
       CASE WHEN EXISTS (SELECT 1 FROM taskq.cancelled_workflows AS w
                          WHERE w.workflow OPERATOR(pg_catalog.=) j.id)
              OR EXISTS (SELECT 1 FROM taskq.tasks AS t
                          WHERE t.workflow OPERATOR(pg_catalog.=) j.id
                            AND t.status_code OPERATOR(pg_catalog.=) 'aborted'::taskq.status)
            THEN 'aborted'
            WHEN EXISTS (SELECT 1 FROM taskq.tasks AS t
                          WHERE t.workflow OPERATOR(pg_catalog.=) j.id)
             AND NOT EXISTS (SELECT 1 FROM taskq.tasks AS t
                              WHERE t.workflow OPERATOR(pg_catalog.=) j.id
                                AND t.status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status)
            THEN 'completed'
            WHEN j.item_progress OPERATOR(pg_catalog.>) 0
              OR EXISTS (SELECT 1 FROM taskq.tasks AS t
                          WHERE t.workflow OPERATOR(pg_catalog.=) j.id
                            AND t.status_code OPERATOR(pg_catalog.>=) 'in_progress'::taskq.status)
            THEN 'running'
            ELSE 'waiting'
       END AS state,
       j.item_count, j.item_progress, j.created_at, j.updated_at
  FROM taskq.jobs AS j;
COMMENT ON VIEW taskq.job_states IS
    'each job''s state (waiting, running, completed, aborted) and item counters, for a page to poll';
GRANT SELECT ON taskq.job_states TO taskq_monitor, taskq_admin;
GRANT SELECT ON taskq.job_states TO taskq_producer;

/*
 * Building shapes: each takes task objects of the insert_tasks form; a
 * to_signal_after given by the caller is kept and the shape's edges are
 * added to it.
 */

CREATE FUNCTION taskq._check_task_array(tasks jsonb, argname text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF tasks IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null', argname
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.jsonb_typeof(tasks) OPERATOR(pg_catalog.<>) 'array' THEN
        RAISE EXCEPTION 'argument "%" must be a JSON array of task objects', argname
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;
COMMENT ON FUNCTION taskq._check_task_array(jsonb, text) IS
    'internal: raise the argument error for a value that is not a JSON array';
REVOKE ALL ON FUNCTION taskq._check_task_array(jsonb, text) FROM PUBLIC;

-- The checks insert_tasks makes on each task object (the same C parser),
-- made on an argument that holds one task object, chord's join, before it
-- joins a batch: an error then names the argument and the task in its
-- context line, where insert_tasks would name the task's place in argument
-- "tasks".
CREATE FUNCTION taskq._check_task(task jsonb, argname text)
RETURNS void
AS 'MODULE_PATHNAME', 'taskq_check_task'
LANGUAGE C STABLE;
COMMENT ON FUNCTION taskq._check_task(jsonb, text) IS
    'internal: raise insert_tasks'' error for a malformed task object, naming the argument that holds it';
REVOKE ALL ON FUNCTION taskq._check_task(jsonb, text) FROM PUBLIC;

CREATE FUNCTION taskq._add_successor(task jsonb, successor text)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF successor IS NULL THEN
        RETURN task;
    END IF;
    IF pg_catalog.jsonb_typeof(task) OPERATOR(pg_catalog.<>) 'object' THEN
        RETURN task;            -- insert_tasks reports the bad element
    END IF;
    RETURN task OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('to_signal_after',
        CASE WHEN pg_catalog.jsonb_typeof(task OPERATOR(pg_catalog.->) 'to_signal_after')
                  OPERATOR(pg_catalog.=) 'array'
             THEN task OPERATOR(pg_catalog.->) 'to_signal_after'
             ELSE '[]'::jsonb END
        OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_array(successor));
END
$$;
COMMENT ON FUNCTION taskq._add_successor(jsonb, text) IS
    'internal: the task object with one more successor';
REVOKE ALL ON FUNCTION taskq._add_successor(jsonb, text) FROM PUBLIC;

-- insert_tasks, where each of waiting_ids also waits for every stored task
-- of after_ids; the waits are added before spontaneous tasks complete.
CREATE FUNCTION taskq._insert_after(tasks jsonb, after_ids text[], waiting_ids text[])
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_insert_after'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION taskq._insert_after(jsonb, text[], text[]) IS
    'internal: insert_tasks where some tasks also wait for stored tasks';
REVOKE ALL ON FUNCTION taskq._insert_after(jsonb, text[], text[]) FROM PUBLIC;

-- The ids of a task array, in order (NULL for elements without one).
CREATE FUNCTION taskq._ids(tasks jsonb)
RETURNS text[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.array_agg(t.value OPERATOR(pg_catalog.->>) 'id' ORDER BY t.ord)
      FROM pg_catalog.jsonb_array_elements(tasks) WITH ORDINALITY AS t(value, ord)
$$;
COMMENT ON FUNCTION taskq._ids(jsonb) IS 'internal: the ids of a task array';
REVOKE ALL ON FUNCTION taskq._ids(jsonb) FROM PUBLIC;

-- ---------------------------------------------------------------------
-- Runs: state machines and sagas.  A definition is JSON, one row per
-- version; a run is one execution of a version; each visit of a state or
-- do/undo of a step is an ordinary task "<run id>/<n>" with workflow =
-- the run id.  The C of workflow/ keeps these tables in the transaction
-- that finishes each step.
-- ---------------------------------------------------------------------
CREATE TABLE taskq.definitions (
    name            text COLLATE "C" NOT NULL,
    version         integer NOT NULL,
    kind            text COLLATE "C" NOT NULL,
    definition      jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT definitions_pkey PRIMARY KEY (name, version),
    CONSTRAINT definitions_kind_check CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['machine', 'saga']::pg_catalog.text[])),
    CONSTRAINT definitions_version_check CHECK (version OPERATOR(pg_catalog.>) 0)
);
COMMENT ON TABLE taskq.definitions IS
    'state machines and sagas: one row per version of a definition (taskq.define_machine, taskq.define_saga)';
SELECT pg_catalog.pg_extension_config_dump('taskq.definitions', '');
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.definitions TO taskq_admin;

CREATE TABLE taskq.runs (
    id              text COLLATE "C" NOT NULL,
    kind            text COLLATE "C" NOT NULL,
    definition      text COLLATE "C" NOT NULL,
    version         integer NOT NULL,
    status          text COLLATE "C" NOT NULL DEFAULT 'running',
    state           text COLLATE "C",
    context         jsonb NOT NULL DEFAULT '{}'::pg_catalog.jsonb,
    inputs          jsonb,
    parent          text COLLATE "C",
    error           text,
    debug           jsonb,
    created_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    finished_at     timestamptz,
    step_task       text COLLATE "C",
    visits          integer NOT NULL DEFAULT 0,
    fork            text COLLATE "C",
    events          jsonb,
    faults          jsonb,
    deadline        timestamptz,
    CONSTRAINT runs_pkey PRIMARY KEY (id),
    CONSTRAINT runs_kind_check CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['machine', 'saga']::pg_catalog.text[])),
    CONSTRAINT runs_status_check CHECK (status OPERATOR(pg_catalog.=) ANY
        (ARRAY['running', 'waiting', 'undoing', 'succeeded', 'failed', 'dismal', 'cancelled', 'merged']::pg_catalog.text[]))
) WITH (fillfactor = 70);
COMMENT ON TABLE taskq.runs IS 'one row per run of a state machine or saga';
COMMENT ON COLUMN taskq.runs.id IS 'caller-chosen run id; forks are "<root id>/c<n>", child runs "<root id>/k<n>"';
COMMENT ON COLUMN taskq.runs.kind IS 'machine or saga';
COMMENT ON COLUMN taskq.runs.status IS 'running, waiting, undoing, succeeded, failed, dismal, cancelled or merged';
COMMENT ON COLUMN taskq.runs.state IS 'machine: the current state; saga: NULL';
COMMENT ON COLUMN taskq.runs.context IS 'machine: its context; saga: its working map';
COMMENT ON COLUMN taskq.runs.inputs IS 'saga: its input parameters (never changed)';
COMMENT ON COLUMN taskq.runs.parent IS 'the run this one was forked from by a continuation, or whose child state or step started it; else NULL';
COMMENT ON COLUMN taskq.runs.step_task IS 'internal: machine: the task of the current visit (or its fan-in batch)';
COMMENT ON COLUMN taskq.runs.visits IS 'internal: step tasks made so far (the next is "<id>/<visits + 1>")';
COMMENT ON COLUMN taskq.runs.fork IS 'internal: machine: the run the current visit forked (a continuation) or started (a child state)';
COMMENT ON COLUMN taskq.runs.events IS 'internal: machine: events sent before a waiting state took them';
COMMENT ON COLUMN taskq.runs.faults IS 'internal: the debug faults already injected';
COMMENT ON COLUMN taskq.runs.deadline IS 'the run fails with error "deadline exceeded" if not finished by then (start_machine, start_saga), or NULL';
CREATE INDEX runs_parent_idx ON taskq.runs (parent) WHERE parent IS NOT NULL;
-- A step rewrites its run's row (state, context, the step's task): with
-- room on the page (fillfactor) and no indexed column changed, that is a
-- HOT update with no new index entries, so the state is not in this index.
CREATE INDEX runs_unfinished_idx ON taskq.runs (definition, version) WHERE finished_at IS NULL;
CREATE INDEX runs_finished_idx ON taskq.runs (finished_at) WHERE finished_at IS NOT NULL;
SELECT pg_catalog.pg_extension_config_dump('taskq.runs', '');
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.runs TO taskq_admin;
GRANT SELECT (id, kind, definition, version, status, state, parent, error, created_at, finished_at,
              deadline)
    ON taskq.runs TO taskq_monitor;

CREATE SEQUENCE taskq.fork_seq;
COMMENT ON SEQUENCE taskq.fork_seq IS 'numbers of the runs forked by continuations and of child runs';
GRANT USAGE, SELECT, UPDATE ON SEQUENCE taskq.fork_seq TO taskq_admin;

-- Timers of runs, fired by the background worker: a waiting state's
-- timeout (kind 'timeout', the state it belongs to) and a run's deadline
-- (kind 'deadline').  At most one of each kind per run: a new visit of a
-- waiting state replaces its run's timeout.  The worker reads only the
-- first entries of run_timers_due_idx; a row whose run moved on is deleted
-- when it comes due.
CREATE TABLE taskq.run_timers (
    run_id      text COLLATE "C" NOT NULL,
    kind        text COLLATE "C" NOT NULL,
    state       text COLLATE "C",
    due_at      timestamptz NOT NULL,
    CONSTRAINT run_timers_pkey PRIMARY KEY (run_id, kind),
    CONSTRAINT run_timers_kind_check CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['timeout', 'deadline']::pg_catalog.text[]))
);
COMMENT ON TABLE taskq.run_timers IS
    'timers of runs: waiting states'' timeouts and runs'' deadlines, fired by the background worker';
COMMENT ON COLUMN taskq.run_timers.state IS 'timeout: the waiting state whose visit it belongs to';
CREATE INDEX run_timers_due_idx ON taskq.run_timers (due_at);
SELECT pg_catalog.pg_extension_config_dump('taskq.run_timers', '');
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.run_timers TO taskq_admin;
GRANT SELECT ON taskq.run_timers TO taskq_monitor;

-- Fan-in: the open batch of each fan-in state, and the instances in each
-- batch in arrival order.  A batch is open while its task was never claimed.
CREATE TABLE taskq.fan_in_open (
    machine         text COLLATE "C" NOT NULL,
    version         integer NOT NULL,
    state           text COLLATE "C" NOT NULL,
    batch           text COLLATE "C" NOT NULL,
    CONSTRAINT fan_in_open_pkey PRIMARY KEY (machine, version, state)
);
COMMENT ON TABLE taskq.fan_in_open IS 'internal: the batch that instances entering a fan-in state join';
SELECT pg_catalog.pg_extension_config_dump('taskq.fan_in_open', '');
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.fan_in_open TO taskq_admin;

CREATE TABLE taskq.fan_in_members (
    batch           text COLLATE "C" NOT NULL,
    arrival         bigint GENERATED ALWAYS AS IDENTITY,
    run             text COLLATE "C" NOT NULL,
    CONSTRAINT fan_in_members_pkey PRIMARY KEY (batch, arrival)
);
COMMENT ON TABLE taskq.fan_in_members IS 'internal: the instances of each fan-in batch, in arrival order';
CREATE INDEX fan_in_members_run_idx ON taskq.fan_in_members (run);
SELECT pg_catalog.pg_extension_config_dump('taskq.fan_in_members', '');
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.fan_in_members TO taskq_admin;

-- Sagas: per run, each started step's current do and undo task and their
-- states (the working map is the run's context).  A row appears when the
-- step first becomes ready; it goes with its run.
CREATE TABLE taskq.saga_steps (
    run             text COLLATE "C" NOT NULL,
    step            text COLLATE "C" NOT NULL,
    do_task         text COLLATE "C" NOT NULL,
    do_state        text COLLATE "C" NOT NULL,
    undo_task       text COLLATE "C",
    undo_state      text COLLATE "C",
    CONSTRAINT saga_steps_pkey PRIMARY KEY (run, step),
    CONSTRAINT saga_steps_do_state_check CHECK (do_state OPERATOR(pg_catalog.=) ANY
        (ARRAY['ready', 'succeeded', 'failed', 'skipped']::pg_catalog.text[])),
    CONSTRAINT saga_steps_undo_state_check CHECK (undo_state OPERATOR(pg_catalog.=) ANY
        (ARRAY['ready', 'succeeded', 'failed', 'none']::pg_catalog.text[]))
);
COMMENT ON TABLE taskq.saga_steps IS
    'the started steps of each saga run: current do and undo task and their states';
COMMENT ON COLUMN taskq.saga_steps.do_state IS
    'ready (its task unfinished), succeeded, failed (undone) or skipped (never claimed: nothing to undo)';
COMMENT ON COLUMN taskq.saga_steps.undo_state IS
    'NULL (not yet), ready, succeeded, failed (the run is dismal) or none (the step has no undo)';
SELECT pg_catalog.pg_extension_config_dump('taskq.saga_steps', '');
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.saga_steps TO taskq_admin;
GRANT SELECT ON taskq.saga_steps TO taskq_monitor;

/* =====================================================================
 * api: the functions callers use, each with its COMMENT and who may call
 * it.  SECURITY DEFINER: they run as the extension's owner, so callers need
 * EXECUTE on them and nothing on the tables.  The C code's SQL is
 * schema-qualified throughout; search_path is pinned anyway because type
 * names in casts still go through it.  The hot paths (insert, claim,
 * return, signal, abort cascade, dependencies, wait, cancellation) are C
 * functions in the taskq module; the shapes, set_action_policy,
 * create_job and job_state are thin SQL over them.
 * ===================================================================== */

-- Producers: enqueue, dependencies, waiting for a result.

CREATE FUNCTION taskq.insert_tasks(tasks jsonb)
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_insert_tasks'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.insert_tasks(jsonb) IS
    'atomically add the tasks of a JSON array; a duplicate id fails the whole call';
REVOKE ALL ON FUNCTION taskq.insert_tasks(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.insert_tasks(jsonb) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.replace_tasks(tasks jsonb)
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_replace_tasks'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.replace_tasks(jsonb) IS
    'as insert_tasks, replacing (as though aborted) stored tasks with the same id that nobody owns';
REVOKE ALL ON FUNCTION taskq.replace_tasks(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.replace_tasks(jsonb) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.insert_tasks_if_absent(tasks jsonb)
RETURNS TABLE (id text, inserted boolean)
AS 'MODULE_PATHNAME', 'taskq_insert_tasks_if_absent'
LANGUAGE C VOLATILE ROWS 10
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.insert_tasks_if_absent(jsonb) IS
    'idempotent enqueue: insert the tasks whose id is not stored yet; one row per task says which';
REVOKE ALL ON FUNCTION taskq.insert_tasks_if_absent(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.insert_tasks_if_absent(jsonb) TO taskq_producer, taskq_admin;

-- enqueue, enqueue_many: tasks of one action with the same options, from
-- typed arguments rather than a JSON document; taskq makes the ids the
-- caller leaves out (version-7 UUIDs, in time order).
CREATE FUNCTION taskq.enqueue(action text, body jsonb DEFAULT NULL, id text DEFAULT NULL,
    priority integer DEFAULT 0, not_before timestamptz DEFAULT NULL,
    max_tries integer DEFAULT NULL, workflow text DEFAULT NULL,
    concurrency_key text DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_enqueue'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text) IS
    'add one task of an action and return its id (made by taskq if not given)';
REVOKE ALL ON FUNCTION taskq.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.enqueue_many(action text, bodies jsonb[], ids text[] DEFAULT NULL,
    priority integer DEFAULT 0, not_before timestamptz DEFAULT NULL,
    max_tries integer DEFAULT NULL, workflow text DEFAULT NULL,
    concurrency_key text DEFAULT NULL)
RETURNS text[]
AS 'MODULE_PATHNAME', 'taskq_enqueue_many'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.enqueue_many(text, jsonb[], text[], integer, timestamptz, integer, text, text) IS
    'atomically add one task of an action per body and return their ids (made by taskq where not given)';
REVOKE ALL ON FUNCTION taskq.enqueue_many(text, jsonb[], text[], integer, timestamptz, integer, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.enqueue_many(text, jsonb[], text[], integer, timestamptz, integer, text, text) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.add_dependencies(after_ids text[], run_ids text[])
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_add_dependencies'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.add_dependencies(text[], text[]) IS
    'atomically make each run_ids[i] wait for after_ids[i]';
REVOKE ALL ON FUNCTION taskq.add_dependencies(text[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.add_dependencies(text[], text[]) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.wait_for_task(id text, timeout interval DEFAULT NULL)
RETURNS taskq.tasks
AS 'MODULE_PATHNAME', 'taskq_wait_for_task'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.wait_for_task(text, interval) IS
    'wait until the task is completed or aborted and return it; NULL after timeout';
REVOKE ALL ON FUNCTION taskq.wait_for_task(text, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.wait_for_task(text, interval) TO taskq_producer, taskq_admin;

-- Workers: claim, lease, return.

CREATE FUNCTION taskq.own_tasks(actor text, max_tasks integer, actions text[],
                                max_duration interval DEFAULT NULL,
                                wait interval DEFAULT NULL)
RETURNS TABLE (id text, token uuid, action text, body jsonb, num_tries integer,
               action_deadline timestamptz, concurrency_key text)
AS 'MODULE_PATHNAME', 'taskq_own_tasks'
LANGUAGE C VOLATILE ROWS 10
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.own_tasks(text, integer, text[], interval, interval) IS
    'claim up to max_tasks ready tasks of the given actions (NULL: any) for actor; with wait, sleep until there are some or the wait passes';
REVOKE ALL ON FUNCTION taskq.own_tasks(text, integer, text[], interval, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.own_tasks(text, integer, text[], interval, interval) TO taskq_worker, taskq_admin;

CREATE FUNCTION taskq.extend_ownership(actor text, ids text[], tokens uuid[],
                                       max_duration interval)
RETURNS TABLE (id text, owned boolean)
AS 'MODULE_PATHNAME', 'taskq_extend_ownership'
LANGUAGE C VOLATILE ROWS 10
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.extend_ownership(text, text[], uuid[], interval) IS
    'extend the leases still held by actor with these tokens; one row per task';
REVOKE ALL ON FUNCTION taskq.extend_ownership(text, text[], uuid[], interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.extend_ownership(text, text[], uuid[], interval) TO taskq_worker, taskq_admin;

CREATE FUNCTION taskq.return_task(id text, token uuid, status text, status_code taskq.status,
                                  retry_delay interval DEFAULT NULL, result jsonb DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'taskq_return_task'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.return_task(text, uuid, text, taskq.status, interval, jsonb) IS
    'return an owned task as completed, aborted or pending (retry, after retry_delay or its backoff), with its result';
REVOKE ALL ON FUNCTION taskq.return_task(text, uuid, text, taskq.status, interval, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.return_task(text, uuid, text, taskq.status, interval, jsonb) TO taskq_worker, taskq_admin;

CREATE FUNCTION taskq.release_task(id text, token uuid)
RETURNS void
AS 'MODULE_PATHNAME', 'taskq_release_task'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.release_task(text, uuid) IS
    'give an owned task back, ready again at once, without counting the try (a worker shutting down)';
REVOKE ALL ON FUNCTION taskq.release_task(text, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.release_task(text, uuid) TO taskq_worker, taskq_admin;

CREATE FUNCTION taskq.return_tasks(ids text[], tokens uuid[], statuses text[],
                                   status_codes taskq.status[], results jsonb[] DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_return_tasks'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.return_tasks(text[], uuid[], text[], taskq.status[], jsonb[]) IS
    'return many owned tasks in one call, all or none, with their results';
REVOKE ALL ON FUNCTION taskq.return_tasks(text[], uuid[], text[], taskq.status[], jsonb[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.return_tasks(text[], uuid[], text[], taskq.status[], jsonb[]) TO taskq_worker, taskq_admin;

CREATE FUNCTION taskq.return_and_own(ids text[], tokens uuid[], statuses text[],
                                     status_codes taskq.status[], actor text,
                                     max_tasks integer, actions text[],
                                     max_duration interval DEFAULT NULL,
                                     results jsonb[] DEFAULT NULL)
RETURNS TABLE (id text, token uuid, action text, body jsonb, num_tries integer,
               action_deadline timestamptz, concurrency_key text)
AS 'MODULE_PATHNAME', 'taskq_return_and_own'
LANGUAGE C VOLATILE ROWS 10
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval, jsonb[]) IS
    'return_tasks, then own_tasks, in one call: a worker''s whole cycle in one round trip and one transaction';
REVOKE ALL ON FUNCTION taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval, jsonb[])
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval, jsonb[])
    TO taskq_worker, taskq_admin;

/* ---------------------------------------------------------------------
 * DAGs: what a task's predecessors produced, and the picture of a task
 * graph.  (Trigger rules are the "trigger" key of a task object.)
 * --------------------------------------------------------------------- */

CREATE FUNCTION taskq.predecessor_results(id text, token uuid)
RETURNS TABLE (id text, status_code taskq.status, status text, result jsonb)
AS 'MODULE_PATHNAME', 'taskq_predecessor_results'
LANGUAGE C STABLE ROWS 10
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.predecessor_results(text, uuid) IS
    'the id, outcome, status and result of each direct predecessor of a task the caller owns (token-checked)';
REVOKE ALL ON FUNCTION taskq.predecessor_results(text, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.predecessor_results(text, uuid) TO taskq_worker, taskq_admin;

-- A name as a DOT string (quoted and escaped: any state, step or id renders).
-- This and _mermaid_text are the one home of graph escaping: task_graph,
-- definition_graph and run_graph all use them.
CREATE FUNCTION taskq._dot_quote(s text)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT '"' OPERATOR(pg_catalog.||)
           pg_catalog.regexp_replace(pg_catalog.replace(pg_catalog.replace(s, E'\\', E'\\\\'), '"', E'\\"'),
                                     E'[\\n\\r]', E'\\n', 'g')
           OPERATOR(pg_catalog.||) '"'
$$;
COMMENT ON FUNCTION taskq._dot_quote(text) IS 'internal: a name as a quoted DOT string';
REVOKE ALL ON FUNCTION taskq._dot_quote(text) FROM PUBLIC;

-- Text for a Mermaid label: characters Mermaid reads as syntax become
-- entity codes (#quot; ...), control characters spaces.
CREATE FUNCTION taskq._mermaid_text(s text)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.string_agg(
               CASE WHEN c OPERATOR(pg_catalog.~) E'[[:cntrl:]]' THEN ' '
                    WHEN c OPERATOR(pg_catalog.=) ANY (ARRAY['"', '#', ':', ';', '<', '>', '{', '}', '[', ']', '(', ')', '|', '`', '&'])
                    THEN '#' OPERATOR(pg_catalog.||) pg_catalog.ascii(c)::text OPERATOR(pg_catalog.||) ';'
                    ELSE c END, '' ORDER BY i)
      FROM pg_catalog.regexp_split_to_table(COALESCE(s, ''), '') WITH ORDINALITY AS x(c, i)
$$;
COMMENT ON FUNCTION taskq._mermaid_text(text) IS 'internal: text escaped for a Mermaid label';
REVOKE ALL ON FUNCTION taskq._mermaid_text(text) FROM PUBLIC;

CREATE FUNCTION taskq.task_graph(workflow text, format text DEFAULT 'dot')
RETURNS text
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    nodes text;
    edges text;
BEGIN
    IF workflow IS NULL THEN
        RAISE EXCEPTION 'argument "workflow" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF format IS NULL OR format OPERATOR(pg_catalog.<>) ALL (ARRAY['dot', 'mermaid']) THEN
        RAISE EXCEPTION 'unknown graph format "%"', format
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'The formats are dot and mermaid.';
    END IF;
    -- The tasks in id order, numbered (Mermaid's node names), each with the
    -- state shown: ready is a pending task nothing holds back; skipped is an
    -- abort by a trigger rule.  Edges between tasks of the workflow only.
    WITH g AS (
        SELECT pg_catalog.row_number() OVER (ORDER BY t.id) AS n, t.id, t.action,
               CASE WHEN t.status_code OPERATOR(pg_catalog.=) 'aborted'::taskq.status
                     AND t.status OPERATOR(pg_catalog.=) 'skipped' THEN 'skipped'
                    WHEN t.status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status
                     AND t.num_signals OPERATOR(pg_catalog.=) 0 THEN 'ready'
                    ELSE t.status_code::text END AS state,
               t."trigger"::text AS rule, t.to_signal_after AS succ
          FROM taskq.tasks AS t
         WHERE t.workflow OPERATOR(pg_catalog.=) task_graph.workflow),
    e AS (
        SELECT a.n AS src_n, a.id AS src, b.n AS dst_n, b.id AS dst, b.rule, s.ord
          FROM g AS a
          CROSS JOIN LATERAL pg_catalog.unnest(a.succ) WITH ORDINALITY AS s(id, ord)
          JOIN g AS b ON b.id OPERATOR(pg_catalog.=) s.id)
    SELECT (SELECT pg_catalog.string_agg(
                CASE format
                WHEN 'dot' THEN
                    '  ' OPERATOR(pg_catalog.||) taskq._dot_quote(g.id)
                    OPERATOR(pg_catalog.||) ' [label=' OPERATOR(pg_catalog.||)
                    taskq._dot_quote(g.id OPERATOR(pg_catalog.||) E'\n' OPERATOR(pg_catalog.||) g.action
                                       OPERATOR(pg_catalog.||) E'\n' OPERATOR(pg_catalog.||) g.state)
                    OPERATOR(pg_catalog.||) ', fillcolor="' OPERATOR(pg_catalog.||)
                    CASE g.state WHEN 'completed' THEN '#b7e1a1' WHEN 'aborted' THEN '#f4a6a6'
                                 WHEN 'skipped' THEN '#dddddd' WHEN 'in_progress' THEN '#a6c8f4'
                                 WHEN 'ready' THEN '#fff2a8' ELSE '#ffffff' END
                    OPERATOR(pg_catalog.||) '"' OPERATOR(pg_catalog.||)
                    CASE WHEN g.state OPERATOR(pg_catalog.=) 'skipped'
                         THEN ', fontcolor="#666666", style="rounded,filled,dashed"' ELSE '' END
                    OPERATOR(pg_catalog.||) E'];\n'
                ELSE
                    '  t' OPERATOR(pg_catalog.||) g.n::text OPERATOR(pg_catalog.||) '['
                    OPERATOR(pg_catalog.||)
                    '"' OPERATOR(pg_catalog.||) taskq._mermaid_text(g.id OPERATOR(pg_catalog.||) ' · ' OPERATOR(pg_catalog.||) g.action
                                       OPERATOR(pg_catalog.||) ' · ' OPERATOR(pg_catalog.||) g.state) OPERATOR(pg_catalog.||) '"'
                    OPERATOR(pg_catalog.||) ']:::' OPERATOR(pg_catalog.||) g.state OPERATOR(pg_catalog.||) E'\n'
                END, '' ORDER BY g.n) FROM g),
           (SELECT pg_catalog.string_agg(
                CASE format
                WHEN 'dot' THEN
                    '  ' OPERATOR(pg_catalog.||) taskq._dot_quote(e.src)
                    OPERATOR(pg_catalog.||) ' -> ' OPERATOR(pg_catalog.||) taskq._dot_quote(e.dst)
                    OPERATOR(pg_catalog.||) ' [label="' OPERATOR(pg_catalog.||) e.rule
                    OPERATOR(pg_catalog.||) E'"];\n'
                ELSE
                    '  t' OPERATOR(pg_catalog.||) e.src_n::text OPERATOR(pg_catalog.||) ' -->|'
                    OPERATOR(pg_catalog.||) e.rule OPERATOR(pg_catalog.||) '| t'
                    OPERATOR(pg_catalog.||) e.dst_n::text OPERATOR(pg_catalog.||) E'\n'
                END, '' ORDER BY e.src_n, e.ord) FROM e)
      INTO nodes, edges;
    IF format OPERATOR(pg_catalog.=) 'dot' THEN
        RETURN 'digraph ' OPERATOR(pg_catalog.||) taskq._dot_quote(workflow)
            OPERATOR(pg_catalog.||) E' {\n  rankdir=LR;\n'
            OPERATOR(pg_catalog.||) E'  node [shape=box, style="rounded,filled", fontname="Helvetica"];\n'
            OPERATOR(pg_catalog.||) E'  edge [fontname="Helvetica", fontsize=10];\n'
            OPERATOR(pg_catalog.||) COALESCE(nodes, '') OPERATOR(pg_catalog.||) COALESCE(edges, '')
            OPERATOR(pg_catalog.||) E'}\n';
    END IF;
    RETURN E'flowchart LR\n' OPERATOR(pg_catalog.||) COALESCE(nodes, '')
        OPERATOR(pg_catalog.||) COALESCE(edges, '')
        OPERATOR(pg_catalog.||) E'  classDef pending fill:#ffffff,stroke:#333\n'
        OPERATOR(pg_catalog.||) E'  classDef ready fill:#fff2a8,stroke:#333\n'
        OPERATOR(pg_catalog.||) E'  classDef in_progress fill:#a6c8f4,stroke:#333\n'
        OPERATOR(pg_catalog.||) E'  classDef completed fill:#b7e1a1,stroke:#333\n'
        OPERATOR(pg_catalog.||) E'  classDef aborted fill:#f4a6a6,stroke:#333\n'
        OPERATOR(pg_catalog.||) E'  classDef skipped fill:#dddddd,stroke:#999,color:#666\n';
END
$$;
COMMENT ON FUNCTION taskq.task_graph(text, text) IS
    'the tasks of a workflow key and their edges, in DOT or Mermaid: tasks coloured by state, edges labelled with the successor''s trigger rule';
REVOKE ALL ON FUNCTION taskq.task_graph(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.task_graph(text, text) TO taskq_producer, taskq_admin, taskq_monitor;

/* --------------------------------------------------------------------- */

-- Shapes: chains, groups and chords of new tasks.

CREATE FUNCTION taskq.chain(tasks jsonb, after_ids text[] DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    linked jsonb;
BEGIN
    PERFORM taskq._check_task_array(tasks, 'tasks');
    SELECT COALESCE(pg_catalog.jsonb_agg(
               taskq._add_successor(t.value,
                   (tasks OPERATOR(pg_catalog.->) (t.ord::integer)) OPERATOR(pg_catalog.->>) 'id')
               ORDER BY t.ord), '[]'::jsonb)
      INTO linked
      FROM pg_catalog.jsonb_array_elements(tasks) WITH ORDINALITY AS t(value, ord);
    RETURN taskq._insert_after(linked, after_ids,
                               (taskq._ids(tasks))[1:1]);
END
$$;
COMMENT ON FUNCTION taskq.chain(jsonb, text[]) IS
    'insert tasks that run one after another, the first after every id of after_ids';
REVOKE ALL ON FUNCTION taskq.chain(jsonb, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.chain(jsonb, text[]) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq."group"(tasks jsonb, after_ids text[] DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM taskq._check_task_array(tasks, 'tasks');
    RETURN taskq._insert_after(tasks, after_ids, taskq._ids(tasks));
END
$$;
COMMENT ON FUNCTION taskq."group"(jsonb, text[]) IS
    'insert tasks that run in parallel, each after every id of after_ids';
REVOKE ALL ON FUNCTION taskq."group"(jsonb, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq."group"(jsonb, text[]) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.chord(tasks jsonb, "join" jsonb, after_ids text[] DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    join_id text;
    ids text[];
    linked jsonb;
    twin integer;
BEGIN
    PERFORM taskq._check_task_array(tasks, 'tasks');
    -- The join goes into the batch after the tasks, where insert_tasks'
    -- errors would call it the last task of argument "tasks": it is checked
    -- on its own first, as argument "join", and so is its id.
    PERFORM taskq._check_task("join", 'join');
    join_id := "join" OPERATOR(pg_catalog.->>) 'id';
    ids := taskq._ids(tasks);
    twin := pg_catalog.array_position(ids, join_id);
    IF twin IS NOT NULL THEN
        RAISE EXCEPTION 'task "%" appears in both argument "tasks" and argument "join"', join_id
            USING ERRCODE = 'unique_violation',
                  DETAIL = pg_catalog.format('Task %s of argument "tasks" has the id of the join.', twin);
    END IF;
    IF EXISTS (SELECT 1 FROM taskq.tasks AS t WHERE t.id OPERATOR(pg_catalog.=) join_id) THEN
        RAISE EXCEPTION 'task "%" already exists', join_id
            USING ERRCODE = 'unique_violation',
                  DETAIL = 'Argument "join" has the id of a stored task.',
                  HINT = 'Use taskq.replace_tasks to replace a task that is not in progress.';
    END IF;
    SELECT COALESCE(pg_catalog.jsonb_agg(taskq._add_successor(t.value, join_id)
                                         ORDER BY t.ord), '[]'::jsonb)
      INTO linked
      FROM pg_catalog.jsonb_array_elements(tasks) WITH ORDINALITY AS t(value, ord);
    RETURN taskq._insert_after(linked OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_array("join"),
                               after_ids, ids);
END
$$;
COMMENT ON FUNCTION taskq.chord(jsonb, jsonb, text[]) IS
    'insert tasks that run in parallel (after every id of after_ids) and a join task that runs after all of them';
REVOKE ALL ON FUNCTION taskq.chord(jsonb, jsonb, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.chord(jsonb, jsonb, text[]) TO taskq_producer, taskq_admin;

-- Job control: cancellation, dead letters, retry policies, jobs.

CREATE FUNCTION taskq.cancel_tasks(ids text[])
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_cancel_tasks'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.cancel_tasks(text[]) IS
    'cancel tasks: abort (with the cascade) those nobody owns, mark those owned so that they end aborted';
REVOKE ALL ON FUNCTION taskq.cancel_tasks(text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.cancel_tasks(text[]) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.cancel_workflow(workflow text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_cancel_workflow'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.cancel_workflow(text) IS
    'cancel every unfinished task of the workflow, and every task inserted with its key from now on';
REVOKE ALL ON FUNCTION taskq.cancel_workflow(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.cancel_workflow(text) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.redrive_tasks(ids text[])
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_redrive_tasks'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.redrive_tasks(text[]) IS
    'give aborted tasks another life: pending again, no tries used';
REVOKE ALL ON FUNCTION taskq.redrive_tasks(text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.redrive_tasks(text[]) TO taskq_admin;

CREATE FUNCTION taskq.set_action_policy(action text, max_tries integer DEFAULT NULL,
                                        retry jsonb DEFAULT NULL,
                                        keep_attempts boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF action IS NULL OR action OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'argument "action" must not be null or empty'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.octet_length(action) OPERATOR(pg_catalog.>) 255 THEN
        RAISE EXCEPTION 'argument "action" is too long'
            USING ERRCODE = 'string_data_right_truncation',
                  DETAIL = 'An action is at most 255 bytes.';
    END IF;
    IF max_tries OPERATOR(pg_catalog.<) 1 THEN
        RAISE EXCEPTION 'argument "max_tries" must be at least 1, or null for unlimited tries'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF keep_attempts IS NULL THEN
        RAISE EXCEPTION 'argument "keep_attempts" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM taskq._check_retry(retry);
    IF max_tries IS NULL AND retry IS NULL AND NOT keep_attempts THEN
        DELETE FROM taskq.action_policies AS p WHERE p.action OPERATOR(pg_catalog.=) set_action_policy.action;
    ELSE
        INSERT INTO taskq.action_policies AS p (action, max_tries, retry, keep_attempts)
             VALUES (set_action_policy.action, set_action_policy.max_tries, set_action_policy.retry,
                     set_action_policy.keep_attempts)
        ON CONFLICT ON CONSTRAINT action_policies_pkey
           DO UPDATE SET max_tries = EXCLUDED.max_tries, retry = EXCLUDED.retry,
                         keep_attempts = EXCLUDED.keep_attempts;
    END IF;
END
$$;
COMMENT ON FUNCTION taskq.set_action_policy(text, integer, jsonb, boolean) IS
    'set the whole policy of an action (or, with null, null, false, clear it): default max_tries, retry backoff, and whether claims keep attempt history';
REVOKE ALL ON FUNCTION taskq.set_action_policy(text, integer, jsonb, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.set_action_policy(text, integer, jsonb, boolean) TO taskq_admin;

CREATE FUNCTION taskq.task_attempts(id text)
RETURNS SETOF taskq.attempts
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF id IS NULL THEN
        RAISE EXCEPTION 'argument "id" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM FROM taskq.tasks AS t WHERE t.id OPERATOR(pg_catalog.=) task_attempts.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'task "%" does not exist', task_attempts.id USING ERRCODE = 'undefined_object';
    END IF;
    RETURN QUERY
    SELECT a.task_id, a.try, a.actor, a.claimed_at, a.finished_at, a.outcome, a.status, a.result
      FROM taskq.attempts AS a
     WHERE a.task_id OPERATOR(pg_catalog.=) task_attempts.id
     ORDER BY a.try;
END
$$;
COMMENT ON FUNCTION taskq.task_attempts(text) IS
    'the attempts of a task whose action keeps them, in try order (empty when it keeps none)';
REVOKE ALL ON FUNCTION taskq.task_attempts(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.task_attempts(text) TO taskq_producer, taskq_worker, taskq_admin, taskq_monitor;

/*
 * Limits per action.  Concurrency: at most max_running of its tasks hold a
 * lease at once, and at most max_running_per_key of those that share a
 * concurrency_key.  Rate: in any window of length rate_per, at most
 * rate_max claims (rate_by_key: per concurrency_key).  A claim of a
 * limited action takes the action's limiter lock, counts its tasks in
 * progress through tasks_running_idx and its claims in the window in
 * taskq.flow_claims; each session keeps which actions are limited until
 * these triggers say the table was written.
 */
CREATE TABLE taskq.flow_limits (
    action              text COLLATE "C" NOT NULL,
    max_running         integer,
    max_running_per_key integer,
    rate_max            integer,
    rate_per            interval,
    rate_by_key         boolean NOT NULL DEFAULT false,
    CONSTRAINT flow_limits_pkey PRIMARY KEY (action),
    CONSTRAINT flow_limits_max_running_check CHECK (max_running OPERATOR(pg_catalog.>=) 0),
    CONSTRAINT flow_limits_max_running_per_key_check CHECK (max_running_per_key OPERATOR(pg_catalog.>=) 0),
    CONSTRAINT flow_limits_rate_check CHECK (rate_max IS NULL AND rate_per IS NULL
        OR rate_max IS NOT NULL AND rate_per IS NOT NULL
           AND rate_max OPERATOR(pg_catalog.>=) 1 AND rate_per OPERATOR(pg_catalog.>) '0 s'::pg_catalog.interval)
);
COMMENT ON TABLE taskq.flow_limits IS
    'per action: how many of its tasks may hold a lease at once, in all and per concurrency key, and how many claims a window may hold (set with taskq.set_concurrency_limit and taskq.set_rate_limit)';
SELECT pg_catalog.pg_extension_config_dump('taskq.flow_limits', '');

GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.flow_limits TO taskq_admin;

-- The claims of rate-limited actions still in their window: one row per
-- claim (key: the task's concurrency_key, NULL when none), at the clock
-- time the claim was made under the action's limiter lock.  Claims delete
-- the rows that left the window of their action; the background worker
-- deletes them too, when it wakes for the moment a window reopens.
CREATE TABLE taskq.flow_claims (
    action      text COLLATE "C" NOT NULL,
    key         text COLLATE "C",
    claimed_at  timestamptz NOT NULL
);
COMMENT ON TABLE taskq.flow_claims IS
    'the claims of rate-limited actions still in their window (taskq.set_rate_limit)';
CREATE INDEX flow_claims_action_idx ON taskq.flow_claims (action, claimed_at);
CREATE INDEX flow_claims_claimed_at_idx ON taskq.flow_claims (claimed_at);
SELECT pg_catalog.pg_extension_config_dump('taskq.flow_claims', '');

GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.flow_claims TO taskq_admin;

CREATE FUNCTION taskq.flow_limits_written()
RETURNS trigger
AS 'MODULE_PATHNAME', 'taskq_flow_limits_written'
LANGUAGE C;
COMMENT ON FUNCTION taskq.flow_limits_written() IS
    'trigger: every session drops the limits it kept when taskq.flow_limits is written';
REVOKE ALL ON FUNCTION taskq.flow_limits_written() FROM PUBLIC;
-- rows, not statements: logical replication's apply worker fires row triggers only
CREATE TRIGGER flow_limits_written
    AFTER INSERT OR UPDATE OR DELETE ON taskq.flow_limits
    FOR EACH ROW EXECUTE FUNCTION taskq.flow_limits_written();
CREATE TRIGGER flow_limits_truncated
    AFTER TRUNCATE ON taskq.flow_limits
    FOR EACH STATEMENT EXECUTE FUNCTION taskq.flow_limits_written();
-- also in sessions with session_replication_role = replica (pg_restore, replication tools)
ALTER TABLE taskq.flow_limits ENABLE ALWAYS TRIGGER flow_limits_written;
ALTER TABLE taskq.flow_limits ENABLE ALWAYS TRIGGER flow_limits_truncated;

CREATE FUNCTION taskq.set_concurrency_limit(action text, max_running integer DEFAULT NULL,
                                            max_running_per_key integer DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF action IS NULL OR action OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'argument "action" must not be null or empty'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.octet_length(action) OPERATOR(pg_catalog.>) 255 THEN
        RAISE EXCEPTION 'argument "action" is too long'
            USING ERRCODE = 'string_data_right_truncation',
                  DETAIL = 'An action is at most 255 bytes.';
    END IF;
    IF max_running OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'argument "max_running" must not be negative'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass 0 to let nothing start, null for no limit.';
    END IF;
    IF max_running_per_key OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'argument "max_running_per_key" must not be negative'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass 0 to let nothing with a key start, null for no limit.';
    END IF;
    INSERT INTO taskq.flow_limits AS f (action, max_running, max_running_per_key)
         VALUES (set_concurrency_limit.action, set_concurrency_limit.max_running,
                 set_concurrency_limit.max_running_per_key)
    ON CONFLICT ON CONSTRAINT flow_limits_pkey
       DO UPDATE SET max_running = EXCLUDED.max_running,
                     max_running_per_key = EXCLUDED.max_running_per_key;
    DELETE FROM taskq.flow_limits AS f
     WHERE f.action OPERATOR(pg_catalog.=) set_concurrency_limit.action
       AND f.max_running IS NULL AND f.max_running_per_key IS NULL AND f.rate_max IS NULL;
END
$$;
COMMENT ON FUNCTION taskq.set_concurrency_limit(text, integer, integer) IS
    'set how many tasks of an action may hold a lease at once, in all and per concurrency key (null: no limit, 0: none start)';
REVOKE ALL ON FUNCTION taskq.set_concurrency_limit(text, integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.set_concurrency_limit(text, integer, integer) TO taskq_admin;

CREATE FUNCTION taskq.set_rate_limit(action text, max integer, per interval,
                                     by_key boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF action IS NULL OR action OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'argument "action" must not be null or empty'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.octet_length(action) OPERATOR(pg_catalog.>) 255 THEN
        RAISE EXCEPTION 'argument "action" is too long'
            USING ERRCODE = 'string_data_right_truncation',
                  DETAIL = 'An action is at most 255 bytes.';
    END IF;
    IF max IS NULL OR max OPERATOR(pg_catalog.<) 1 THEN
        RAISE EXCEPTION 'argument "max" must be at least 1'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'taskq.clear_limits removes the limits of an action.';
    END IF;
    IF per IS NULL OR per OPERATOR(pg_catalog.<=) '0 s'::interval THEN
        RAISE EXCEPTION 'argument "per" must be a positive interval'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- a window that reaches past the range of timestamps: 22008 now, not at each claim
    PERFORM pg_catalog.now() OPERATOR(pg_catalog.-) per OPERATOR(pg_catalog.-) per;
    IF by_key IS NULL THEN
        RAISE EXCEPTION 'argument "by_key" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    INSERT INTO taskq.flow_limits AS f (action, rate_max, rate_per, rate_by_key)
         VALUES (set_rate_limit.action, set_rate_limit.max, set_rate_limit.per, set_rate_limit.by_key)
    ON CONFLICT ON CONSTRAINT flow_limits_pkey
       DO UPDATE SET rate_max = EXCLUDED.rate_max, rate_per = EXCLUDED.rate_per,
                     rate_by_key = EXCLUDED.rate_by_key;
END
$$;
COMMENT ON FUNCTION taskq.set_rate_limit(text, integer, interval, boolean) IS
    'set how many claims of an action any window of length per may hold (by_key: per concurrency key)';
REVOKE ALL ON FUNCTION taskq.set_rate_limit(text, integer, interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.set_rate_limit(text, integer, interval, boolean) TO taskq_admin;

CREATE FUNCTION taskq.clear_limits(action text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF action IS NULL THEN
        RAISE EXCEPTION 'argument "action" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    DELETE FROM taskq.flow_limits AS f WHERE f.action OPERATOR(pg_catalog.=) clear_limits.action;
    DELETE FROM taskq.flow_claims AS c WHERE c.action OPERATOR(pg_catalog.=) clear_limits.action;
END
$$;
COMMENT ON FUNCTION taskq.clear_limits(text) IS
    'remove the concurrency and rate limits of an action';
REVOKE ALL ON FUNCTION taskq.clear_limits(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.clear_limits(text) TO taskq_admin;

-- running: the action's tasks holding a slot now (in progress, lease not
-- passed), through tasks_running_idx; window_claims: its claims in the
-- last rate_per (in all, also with by_key).  by_key and window_claims are
-- NULL without a rate limit.
CREATE VIEW taskq.limits AS
SELECT f.action, f.max_running, f.max_running_per_key,
       f.rate_max, f.rate_per,
       CASE WHEN f.rate_max IS NOT NULL THEN f.rate_by_key END AS by_key,
       (SELECT pg_catalog.count(*) FROM taskq.tasks AS t
         WHERE t.action OPERATOR(pg_catalog.=) f.action
           AND t.status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status
           AND (t.action_deadline IS NULL
                OR t.action_deadline OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()))::pg_catalog.int4
           AS running,
       CASE WHEN f.rate_max IS NOT NULL THEN
       (SELECT pg_catalog.count(*) FROM taskq.flow_claims AS c
         WHERE c.action OPERATOR(pg_catalog.=) f.action
           AND c.claimed_at OPERATOR(pg_catalog.+) f.rate_per
               OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())::pg_catalog.int4
       END AS window_claims
  FROM taskq.flow_limits AS f
 ORDER BY f.action;
COMMENT ON VIEW taskq.limits IS
    'the actions with limits: concurrency and rate, how many of their tasks hold a slot now, and their claims in the current window';
GRANT SELECT ON taskq.limits TO taskq_monitor, taskq_admin;

CREATE FUNCTION taskq.create_job(id text, tasks jsonb DEFAULT '[]', item_count integer DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    keyed jsonb;
BEGIN
    IF id IS NULL OR id OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'argument "id" must not be null or empty'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.octet_length(id) OPERATOR(pg_catalog.>) 255 THEN
        RAISE EXCEPTION 'argument "id" is too long'
            USING ERRCODE = 'string_data_right_truncation';
    END IF;
    IF item_count OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'argument "item_count" must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM taskq._check_task_array(tasks, 'tasks');
    IF EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements(tasks) AS t(v)
                WHERE pg_catalog.jsonb_typeof(t.v) OPERATOR(pg_catalog.=) 'object'
                  AND t.v OPERATOR(pg_catalog.?) 'workflow'
                  AND (t.v OPERATOR(pg_catalog.->>) 'workflow') IS DISTINCT FROM create_job.id) THEN
        RAISE EXCEPTION 'a task of job "%" has another workflow key', create_job.id
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'The tasks of a job take the job''s id as their workflow key.';
    END IF;
    BEGIN
        INSERT INTO taskq.jobs AS j (id, item_count) VALUES (create_job.id, create_job.item_count);
    EXCEPTION WHEN unique_violation THEN
        RAISE EXCEPTION 'job "%" already exists', create_job.id
            USING ERRCODE = 'unique_violation';
    END;
    SELECT COALESCE(pg_catalog.jsonb_agg(
               CASE WHEN pg_catalog.jsonb_typeof(t.v) OPERATOR(pg_catalog.=) 'object'
                    THEN t.v OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('workflow', create_job.id)
                    ELSE t.v END ORDER BY t.ord), '[]'::jsonb)
      INTO keyed
      FROM pg_catalog.jsonb_array_elements(tasks) WITH ORDINALITY AS t(v, ord);
    RETURN taskq.insert_tasks(keyed);
END
$$;
COMMENT ON FUNCTION taskq.create_job(text, jsonb, integer) IS
    'create a job and insert its first tasks (their workflow key is the job''s id); returns the tasks inserted';
REVOKE ALL ON FUNCTION taskq.create_job(text, jsonb, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.create_job(text, jsonb, integer) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.job_state(id text)
RETURNS taskq.job_states
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r taskq.job_states;
BEGIN
    IF id IS NULL THEN
        RAISE EXCEPTION 'argument "id" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO r FROM taskq.job_states AS j WHERE j.id OPERATOR(pg_catalog.=) job_state.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job "%" does not exist', job_state.id
            USING ERRCODE = 'undefined_object';
    END IF;
    RETURN r;
END
$$;
COMMENT ON FUNCTION taskq.job_state(text) IS
    'one job''s state (waiting, running, completed, aborted) and item counters, for a page to poll';
REVOKE ALL ON FUNCTION taskq.job_state(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.job_state(text) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.report_progress(id text, token uuid, items bigint DEFAULT 1)
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_report_progress'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.report_progress(text, uuid, bigint) IS
    'add items done to the job of a task the caller owns (token-checked); returns the job''s progress';
REVOKE ALL ON FUNCTION taskq.report_progress(text, uuid, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.report_progress(text, uuid, bigint) TO taskq_worker, taskq_admin;

CREATE FUNCTION taskq.set_job_item_count(id text, token uuid, item_count integer)
RETURNS void
AS 'MODULE_PATHNAME', 'taskq_set_job_item_count'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.set_job_item_count(text, uuid, integer) IS
    'set the item count of the job of a task the caller owns (token-checked), once the fan-out is known';
REVOKE ALL ON FUNCTION taskq.set_job_item_count(text, uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.set_job_item_count(text, uuid, integer) TO taskq_worker, taskq_admin;

-- Administration.

-- What the background worker's retention does, on demand: finished tasks
-- no unfinished predecessor still names (num_signals = 0, and for a task
-- its trigger rule released early, every predecessor counted), so that no
-- edge can point at a deleted id; and not one with a result while a
-- successor that may read it is unfinished.  SECURITY INVOKER: the caller
-- needs DELETE on taskq.tasks (taskq_admin has it).
CREATE FUNCTION taskq.purge_finished(older_than interval DEFAULT '0 s')
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n bigint;
BEGIN
    IF older_than IS NULL THEN
        RAISE EXCEPTION 'argument "older_than" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF older_than OPERATOR(pg_catalog.<) '0 s'::interval THEN
        RAISE EXCEPTION 'argument "older_than" must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    WITH gone AS (
        DELETE FROM taskq.runs AS r
         WHERE r.finished_at OPERATOR(pg_catalog.<=) (pg_catalog.now() OPERATOR(pg_catalog.-) older_than)
        RETURNING r.id, r.kind)
    DELETE FROM taskq.saga_steps AS s USING gone
     WHERE gone.kind OPERATOR(pg_catalog.=) 'saga' AND s.run OPERATOR(pg_catalog.=) gone.id;
    DELETE FROM taskq.tasks AS t
     WHERE t.status_code OPERATOR(pg_catalog.>=) 'completed'::taskq.status
       AND t.finished_at OPERATOR(pg_catalog.<=) (pg_catalog.now() OPERATOR(pg_catalog.-) older_than)
       AND t.num_signals OPERATOR(pg_catalog.=) 0
       AND NOT EXISTS (SELECT 1 FROM taskq.runs AS r
                        WHERE r.id OPERATOR(pg_catalog.=) t.workflow
                          AND r.finished_at IS NULL)
       AND (t."trigger" OPERATOR(pg_catalog.<) 'one_failed'::taskq.trigger_rule
            OR t.num_completed OPERATOR(pg_catalog.+) t.num_failed
               OPERATOR(pg_catalog.>=) t.total_dependencies)
       AND (t.result IS NULL OR t.to_signal_after IS NULL
            OR NOT EXISTS (SELECT FROM taskq.tasks AS s
                            WHERE s.id OPERATOR(pg_catalog.=) ANY (t.to_signal_after)
                              AND s.status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status));
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION taskq.purge_finished(interval) IS
    'delete finished tasks older than older_than that no unfinished task still names; returns how many';
REVOKE ALL ON FUNCTION taskq.purge_finished(interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.purge_finished(interval) TO taskq_admin;

-- ---------------------------------------------------------------------
-- Runs: state machines and sagas
-- ---------------------------------------------------------------------
CREATE FUNCTION taskq.wait_for_run(id text, timeout interval DEFAULT NULL)
RETURNS taskq.runs
AS 'MODULE_PATHNAME', 'taskq_wait_for_run'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.wait_for_run(text, interval) IS
    'wait until the run is finished or waiting and return its row; NULL after timeout';
REVOKE ALL ON FUNCTION taskq.wait_for_run(text, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.wait_for_run(text, interval) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.cancel_run(id text)
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_cancel_run_sql'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.cancel_run(text) IS
    'cancel a run: a machine (and its forks) stops; a saga compensates; returns the new status';
REVOKE ALL ON FUNCTION taskq.cancel_run(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.cancel_run(text) TO taskq_producer, taskq_admin;

-- The timers of runs due now fired as the background worker fires them,
-- for tests (where the worker is off); when to look again.
CREATE FUNCTION taskq._fire_timers()
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'taskq_fire_timers_sql'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION taskq._fire_timers() IS
    'internal: fire the timers of runs that are due, as the background worker does';
REVOKE ALL ON FUNCTION taskq._fire_timers() FROM PUBLIC;

CREATE FUNCTION taskq.run_steps(id text)
RETURNS TABLE (seq integer, step text, direction text, task_id text,
               status_code taskq.status, outcome text, num_tries integer,
               started_at timestamptz, finished_at timestamptz, error text)
LANGUAGE plpgsql STABLE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF id IS NULL THEN
        RAISE EXCEPTION 'argument "id" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM FROM taskq.runs AS r WHERE r.id OPERATOR(pg_catalog.=) run_steps.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'run "%" does not exist', run_steps.id USING ERRCODE = 'undefined_object';
    END IF;
    RETURN QUERY
    SELECT (pg_catalog.row_number() OVER (ORDER BY t.seq))::integer,
           COALESCE(t.body OPERATOR(pg_catalog.->>) 'state', t.body OPERATOR(pg_catalog.->>) 'step'),
           COALESCE(t.body OPERATOR(pg_catalog.->>) 'direction', 'state'),
           t.id::text, t.status_code,
           CASE t.status_code WHEN 'completed' THEN COALESCE(t.status, 'completed')
                              WHEN 'aborted' THEN 'aborted' END,
           t.num_tries,
           t.claimed_at,
           t.finished_at,
           CASE WHEN t.status_code OPERATOR(pg_catalog.=) 'aborted' THEN t.status END
      FROM taskq.tasks AS t
     WHERE t.workflow OPERATOR(pg_catalog.=) run_steps.id
       AND pg_catalog.starts_with(t.id, run_steps.id OPERATOR(pg_catalog.||) '/')
     ORDER BY t.seq;
END
$$;
COMMENT ON FUNCTION taskq.run_steps(text) IS
    'the history of a run: one row per visit of a state or do/undo of a step, in order';
REVOKE ALL ON FUNCTION taskq.run_steps(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.run_steps(text) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.define_machine(name text, definition jsonb, version integer DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'taskq_define_machine_sql'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.define_machine(text, jsonb, integer) IS
    'store a state machine (checked whole) as the next version of name, or under the version given (the same definition there: a no-op); returns the version';
REVOKE ALL ON FUNCTION taskq.define_machine(text, jsonb, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.define_machine(text, jsonb, integer) TO taskq_admin;

CREATE FUNCTION taskq.start_machine(machine text, id text, context jsonb DEFAULT '{}'::jsonb,
                                    debug jsonb DEFAULT NULL, deadline interval DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_start_machine_sql'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.start_machine(text, text, jsonb, jsonb, interval) IS
    'start a run of the latest version of a state machine in its initial state (failing at its deadline if given); returns the run id';
REVOKE ALL ON FUNCTION taskq.start_machine(text, text, jsonb, jsonb, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.start_machine(text, text, jsonb, jsonb, interval) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.transition(id text, token uuid, event text, context jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_transition'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.transition(text, uuid, text, jsonb) IS
    'finish an owned machine step with an event (NULL in a final state ends the run); returns the next state';
REVOKE ALL ON FUNCTION taskq.transition(text, uuid, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.transition(text, uuid, text, jsonb) TO taskq_worker, taskq_admin;

CREATE FUNCTION taskq.continue_machine(id text, token uuid, cursor text)
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_continue_machine'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.continue_machine(text, uuid, text) IS
    'fork the run of an owned continuation step for the next cursor; returns the new run id';
REVOKE ALL ON FUNCTION taskq.continue_machine(text, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.continue_machine(text, uuid, text) TO taskq_worker, taskq_admin;

CREATE FUNCTION taskq.fan_in_contexts(id text, token uuid)
RETURNS TABLE (run text, context jsonb)
AS 'MODULE_PATHNAME', 'taskq_fan_in_contexts'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.fan_in_contexts(text, uuid) IS
    'the instances of an owned fan-in batch and their contexts, in arrival order';
REVOKE ALL ON FUNCTION taskq.fan_in_contexts(text, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.fan_in_contexts(text, uuid) TO taskq_worker, taskq_admin;

CREATE FUNCTION taskq.send_event(run text, event text, context jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_send_event'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.send_event(text, text, jsonb) IS
    'move a run in a waiting state on an event, or keep the event until it reaches one; returns the next state';
REVOKE ALL ON FUNCTION taskq.send_event(text, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.send_event(text, text, jsonb) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.redrive_run(id text)
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_redrive_run'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.redrive_run(text) IS
    'give a failed state machine run another life from the state that failed (returns its state), or continue the undo of a dismal saga (returns its status)';
REVOKE ALL ON FUNCTION taskq.redrive_run(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.redrive_run(text) TO taskq_admin;

CREATE FUNCTION taskq.migrate_run(id text, version integer, state_map jsonb DEFAULT '{}'::jsonb)
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_migrate_run'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.migrate_run(text, integer, jsonb) IS
    'move a running or waiting machine run to another version of its machine; returns its state';
REVOKE ALL ON FUNCTION taskq.migrate_run(text, integer, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.migrate_run(text, integer, jsonb) TO taskq_admin;

CREATE FUNCTION taskq.define_saga(name text, definition jsonb, version integer DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'taskq_define_saga_sql'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.define_saga(text, jsonb, integer) IS
    'store a saga (checked whole) as the next version of name, or under the version given (the same definition there: a no-op); returns the version';
REVOKE ALL ON FUNCTION taskq.define_saga(text, jsonb, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.define_saga(text, jsonb, integer) TO taskq_admin;

CREATE FUNCTION taskq.start_saga(saga text, id text, inputs jsonb DEFAULT '{}'::jsonb,
                                 debug jsonb DEFAULT NULL, deadline interval DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_start_saga_sql'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.start_saga(text, text, jsonb, jsonb, interval) IS
    'start a run of the latest version of a saga: the steps with no predecessor become ready (undone at its deadline if given); returns the run id';
REVOKE ALL ON FUNCTION taskq.start_saga(text, text, jsonb, jsonb, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.start_saga(text, text, jsonb, jsonb, interval) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.return_step(id text, token uuid, result text, working jsonb DEFAULT NULL,
                                  error text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'taskq_return_step'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.return_step(text, uuid, text, jsonb, text) IS
    'finish an owned saga step (do or undo): success, retry, fatal, wait or rerun, merging working into the working map';
REVOKE ALL ON FUNCTION taskq.return_step(text, uuid, text, jsonb, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.return_step(text, uuid, text, jsonb, text) TO taskq_worker, taskq_admin;

CREATE FUNCTION taskq.resume_run(id text, working jsonb DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'taskq_resume_run'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.resume_run(text, jsonb) IS
    'let a waiting saga go on, merging working into its working map';
REVOKE ALL ON FUNCTION taskq.resume_run(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.resume_run(text, jsonb) TO taskq_producer, taskq_admin;

-- Functions are executable by PUBLIC unless revoked: each function above
-- revokes it, and this makes sure no function is left out.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA taskq FROM PUBLIC;

/* =====================================================================
 * monitoring: views over the task table for dashboards and operators.
 * They read the tables with their owner's rights, so monitors need SELECT
 * on the views only.  (taskq.job_states is with the jobs, above.)
 * ===================================================================== */

CREATE VIEW taskq.action_stats AS
SELECT t.action,
       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'pending'
                                     AND t.num_signals OPERATOR(pg_catalog.=) 0
                                     AND t.not_before OPERATOR(pg_catalog.<=) pg_catalog.now()
                                     AND t.performance_token IS NULL) AS ready,
       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'pending'
                                     AND t.num_signals OPERATOR(pg_catalog.>) 0) AS blocked,
       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'pending'
                                     AND t.num_signals OPERATOR(pg_catalog.=) 0
                                     AND t.not_before OPERATOR(pg_catalog.>) pg_catalog.now()) AS delayed,
       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'in_progress'
                                     AND (t.action_deadline IS NULL
                                          OR t.action_deadline OPERATOR(pg_catalog.>) pg_catalog.now())) AS in_progress,
       pg_catalog.count(*) FILTER (WHERE (t.status_code OPERATOR(pg_catalog.=) 'in_progress'
                                          AND t.action_deadline OPERATOR(pg_catalog.<=) pg_catalog.now())
                                      OR (t.status_code OPERATOR(pg_catalog.=) 'pending'
                                          AND t.performance_token IS NOT NULL
                                          AND t.not_before OPERATOR(pg_catalog.<=) pg_catalog.now())) AS lease_expired,
       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'completed') AS completed,
       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'aborted'
                                     AND t.status IS DISTINCT FROM 'skipped') AS aborted,
       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'aborted'
                                     AND t.status OPERATOR(pg_catalog.=) 'skipped') AS skipped,
       pg_catalog.now() OPERATOR(pg_catalog.-)
           pg_catalog.min(t.not_before) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'pending'
                                                  AND t.num_signals OPERATOR(pg_catalog.=) 0
                                                  AND t.not_before OPERATOR(pg_catalog.<=) pg_catalog.now()
                                                  AND t.performance_token IS NULL)
           AS oldest_ready_age
  FROM taskq.tasks AS t
 GROUP BY t.action;
COMMENT ON VIEW taskq.action_stats IS
    'per action: tasks ready, blocked on dependencies, delayed, in progress, with an expired lease, completed, aborted, skipped by a trigger rule, and how long the oldest ready task has waited';
GRANT SELECT ON taskq.action_stats TO taskq_monitor, taskq_admin;

CREATE VIEW taskq.tasks_in_progress AS
SELECT t.id, t.action, t.actor_id, t.num_tries, t.max_tries, t.action_deadline,
       t.action_deadline OPERATOR(pg_catalog.-) pg_catalog.now() AS time_left,
       t.action_deadline OPERATOR(pg_catalog.<=) pg_catalog.now() AS lease_expired
  FROM taskq.tasks AS t
 WHERE t.status_code OPERATOR(pg_catalog.=) 'in_progress'
 ORDER BY t.action_deadline NULLS LAST, t.id;
COMMENT ON VIEW taskq.tasks_in_progress IS
    'tasks owned by a worker, with actor, deadline and time left (negative: lease expired)';
GRANT SELECT ON taskq.tasks_in_progress TO taskq_monitor, taskq_admin;

CREATE VIEW taskq.dead_letters AS
SELECT t.id, t.action, t.status, t.num_tries, t.max_tries, t.workflow, t.cancelled,
       t.finished_at
  FROM taskq.tasks AS t
 WHERE t.status_code OPERATOR(pg_catalog.=) 'aborted'::taskq.status
   AND t.status IS DISTINCT FROM 'skipped'
 ORDER BY t.finished_at DESC, t.id;
COMMENT ON VIEW taskq.dead_letters IS
    'aborted tasks (not those a trigger rule skipped) with their last status and tries; re-drive them with taskq.redrive_tasks';
GRANT SELECT ON taskq.dead_letters TO taskq_monitor, taskq_admin;

/* =====================================================================
 * Workers registry: the processes that run tasks say who they are, with a
 * heartbeat; one that stops heartbeating is shown stale, and the
 * background worker deletes its row after taskq.worker_retention.
 * ===================================================================== */

CREATE TABLE taskq.worker_registry (
    worker_id           text COLLATE "C" NOT NULL,
    actor               text,
    host                text,
    pid                 integer,
    version             text,
    actions             text[],
    concurrency         integer,
    heartbeat_interval  interval NOT NULL,
    started_at          timestamptz NOT NULL,
    last_seen           timestamptz NOT NULL,
    CONSTRAINT worker_registry_pkey PRIMARY KEY (worker_id)
);
COMMENT ON TABLE taskq.worker_registry IS
    'one row per worker process that heartbeats (taskq.worker_heartbeat); read it through taskq.workers';
-- The background worker's retention reads the oldest rows first.
CREATE INDEX worker_registry_last_seen_idx ON taskq.worker_registry (last_seen);
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.worker_registry TO taskq_admin;

CREATE FUNCTION taskq.worker_heartbeat(worker_id text, info jsonb DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    k text;
    v jsonb;
    t text;
    s_actor text;
    s_host text;
    s_version text;
    i_pid integer;
    i_concurrency integer;
    a_actions text[];
    n numeric;
    hb interval := '10 s';
BEGIN
    IF worker_id IS NULL THEN
        RAISE EXCEPTION 'argument "worker_id" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF worker_id OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'argument "worker_id" must not be empty'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.octet_length(worker_id) OPERATOR(pg_catalog.>) 200 THEN
        RAISE EXCEPTION 'argument "worker_id" is too long'
            USING ERRCODE = 'string_data_right_truncation',
                  DETAIL = 'A worker id is at most 200 bytes.';
    END IF;
    IF info IS NULL THEN
        info := '{}';
    END IF;
    IF pg_catalog.jsonb_typeof(info) OPERATOR(pg_catalog.<>) 'object' THEN
        RAISE EXCEPTION 'argument "info" must be a JSON object, not %', pg_catalog.jsonb_typeof(info)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR k, v IN SELECT e.key, e.value FROM pg_catalog.jsonb_each(info) AS e ORDER BY e.key LOOP
        t := pg_catalog.jsonb_typeof(v);
        CONTINUE WHEN t OPERATOR(pg_catalog.=) 'null';
        IF k OPERATOR(pg_catalog.=) ANY ('{actor,host,version}'::text[]) THEN
            IF t OPERATOR(pg_catalog.<>) 'string' THEN
                RAISE EXCEPTION 'key "%" of argument "info" must be a string, not %', k, t
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF (v OPERATOR(pg_catalog.#>>) '{}') OPERATOR(pg_catalog.=) '' THEN
                RAISE EXCEPTION 'key "%" of argument "info" must not be an empty string', k
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF pg_catalog.octet_length(v OPERATOR(pg_catalog.#>>) '{}') OPERATOR(pg_catalog.>) 255 THEN
                RAISE EXCEPTION 'value of key "%" of argument "info" is too long', k
                    USING ERRCODE = 'string_data_right_truncation',
                          DETAIL = 'It is at most 255 bytes.';
            END IF;
            CASE k
                WHEN 'actor' THEN s_actor := v OPERATOR(pg_catalog.#>>) '{}';
                WHEN 'host' THEN s_host := v OPERATOR(pg_catalog.#>>) '{}';
                ELSE s_version := v OPERATOR(pg_catalog.#>>) '{}';
            END CASE;
        ELSIF k OPERATOR(pg_catalog.=) ANY ('{pid,concurrency}'::text[]) THEN
            n := CASE WHEN t OPERATOR(pg_catalog.=) 'number' THEN (v::text)::numeric END;
            IF n IS NULL OR n OPERATOR(pg_catalog.<>) pg_catalog.trunc(n)
               OR n OPERATOR(pg_catalog.<) 1 OR n OPERATOR(pg_catalog.>) 2147483647 THEN
                RAISE EXCEPTION 'key "%" of argument "info" must be an integer from 1 to 2147483647, not %', k, v::text
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF k OPERATOR(pg_catalog.=) 'pid' THEN
                i_pid := n::integer;
            ELSE
                i_concurrency := n::integer;
            END IF;
        ELSIF k OPERATOR(pg_catalog.=) 'actions' THEN
            IF t OPERATOR(pg_catalog.<>) 'array' THEN
                RAISE EXCEPTION 'key "actions" of argument "info" must be an array of strings, not %', t
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF EXISTS (SELECT FROM pg_catalog.jsonb_array_elements(v) AS a(e)
                        WHERE pg_catalog.jsonb_typeof(a.e) OPERATOR(pg_catalog.<>) 'string'
                           OR (a.e OPERATOR(pg_catalog.#>>) '{}') OPERATOR(pg_catalog.=) '') THEN
                RAISE EXCEPTION 'key "actions" of argument "info" must be an array of non-empty strings'
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF EXISTS (SELECT FROM pg_catalog.jsonb_array_elements_text(v) AS a(e)
                        WHERE pg_catalog.octet_length(a.e) OPERATOR(pg_catalog.>) 255) THEN
                RAISE EXCEPTION 'an action of key "actions" of argument "info" is too long'
                    USING ERRCODE = 'string_data_right_truncation',
                          DETAIL = 'An action is at most 255 bytes.';
            END IF;
            SELECT pg_catalog.array_agg(a.e ORDER BY a.n) INTO a_actions
              FROM pg_catalog.jsonb_array_elements_text(v) WITH ORDINALITY AS a(e, n);
            a_actions := COALESCE(a_actions, '{}');
        ELSIF k OPERATOR(pg_catalog.=) 'heartbeat_interval' THEN
            n := CASE WHEN t OPERATOR(pg_catalog.=) 'number' THEN (v::text)::numeric END;
            IF n IS NULL OR n OPERATOR(pg_catalog.<=) 0 OR n OPERATOR(pg_catalog.>) 86400 THEN
                RAISE EXCEPTION 'key "heartbeat_interval" of argument "info" must be a number of seconds greater than 0 and at most 86400, not %', v::text
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            hb := pg_catalog.make_interval(secs => n::double precision);
        ELSE
            RAISE EXCEPTION 'unrecognized key "%" of argument "info"', k
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'The keys of info are actor, host, pid, version, actions, concurrency and heartbeat_interval.';
        END IF;
    END LOOP;
    INSERT INTO taskq.worker_registry AS r
           (worker_id, actor, host, pid, version, actions, concurrency, heartbeat_interval,
            started_at, last_seen)
    VALUES (worker_heartbeat.worker_id, s_actor, s_host, i_pid, s_version, a_actions,
            i_concurrency, hb, pg_catalog.now(), pg_catalog.now())
    ON CONFLICT ON CONSTRAINT worker_registry_pkey
       DO UPDATE SET actor = EXCLUDED.actor, host = EXCLUDED.host, pid = EXCLUDED.pid,
                     version = EXCLUDED.version, actions = EXCLUDED.actions,
                     concurrency = EXCLUDED.concurrency,
                     heartbeat_interval = EXCLUDED.heartbeat_interval,
                     last_seen = EXCLUDED.last_seen;
END
$$;
COMMENT ON FUNCTION taskq.worker_heartbeat(text, jsonb) IS
    'a worker says it is alive and who it is (actor, host, pid, version, actions, concurrency, heartbeat_interval): its row in taskq.workers is written, started_at kept';
REVOKE ALL ON FUNCTION taskq.worker_heartbeat(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.worker_heartbeat(text, jsonb) TO taskq_worker, taskq_admin;

CREATE FUNCTION taskq.worker_stopped(worker_id text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF worker_id IS NULL THEN
        RAISE EXCEPTION 'argument "worker_id" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    DELETE FROM taskq.worker_registry AS r
     WHERE r.worker_id OPERATOR(pg_catalog.=) worker_stopped.worker_id;
END
$$;
COMMENT ON FUNCTION taskq.worker_stopped(text) IS
    'a worker stopping cleanly: its row in taskq.workers is deleted (an unknown id is no error)';
REVOKE ALL ON FUNCTION taskq.worker_stopped(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.worker_stopped(text) TO taskq_worker, taskq_admin;

-- in_progress: the tasks in progress owned by the worker's actor, found
-- through tasks_lease_idx (every task in progress is in it, a lease
-- without a deadline too), so the count costs the tasks in progress, not
-- the table.  Stale: not seen for three heartbeat intervals.
CREATE VIEW taskq.workers AS
SELECT w.worker_id, w.actor, w.host, w.pid, w.version, w.actions, w.concurrency,
       w.started_at, w.last_seen,
       (SELECT pg_catalog.count(*) FROM taskq.tasks AS t
         WHERE t.status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status
           AND t.actor_id OPERATOR(pg_catalog.=) w.actor)::pg_catalog.int4 AS in_progress,
       (w.heartbeat_interval OPERATOR(pg_catalog.*) 3::pg_catalog.float8)
           OPERATOR(pg_catalog.+) w.last_seen OPERATOR(pg_catalog.<) pg_catalog.now() AS stale
  FROM taskq.worker_registry AS w
 ORDER BY w.worker_id;
COMMENT ON VIEW taskq.workers IS
    'the workers that heartbeat: who they are, since when, last seen, the tasks their actor holds, and whether they are stale (not seen for three heartbeat intervals)';
GRANT SELECT ON taskq.workers TO taskq_monitor, taskq_admin;

/* =====================================================================
 * Schedules: the background worker inserts one task per tick of a cron
 * expression, with id "<name>/<tick as ISO 8601 UTC>" and not_before the
 * tick, and advances last_tick and next_tick in the same transaction.
 * ===================================================================== */

CREATE TABLE taskq.schedule_registry (
    name       text COLLATE "C" NOT NULL,
    cron       text NOT NULL,
    time_zone  text NOT NULL,
    task       jsonb NOT NULL,
    catch_up   text NOT NULL,
    last_tick  timestamptz,
    next_tick  timestamptz,
    CONSTRAINT schedule_registry_pkey PRIMARY KEY (name),
    CONSTRAINT schedule_registry_catch_up_check
        CHECK (catch_up OPERATOR(pg_catalog.=) ANY (ARRAY['latest', 'all', 'none']::pg_catalog.text[]))
);
COMMENT ON TABLE taskq.schedule_registry IS
    'one row per schedule (taskq.schedule); read it through taskq.schedules';
-- The background worker finds the schedules due, and its next wakeup, by next_tick.
CREATE INDEX schedule_registry_next_tick_idx ON taskq.schedule_registry (next_tick);
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.schedule_registry TO taskq_admin;

-- Every check of schedule() (22004, 22023), then the first tick after
-- now(); the database's background worker is woken for it at the commit.
CREATE FUNCTION taskq._schedule_next(name text, cron text, task jsonb, time_zone text,
                                     catch_up text)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'taskq_schedule_next'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION taskq._schedule_next(text, text, jsonb, text, text) IS
    'internal: check the arguments of schedule() and return the first tick after now()';
REVOKE ALL ON FUNCTION taskq._schedule_next(text, text, jsonb, text, text) FROM PUBLIC;

-- The first tick of a cron expression after an instant (NULL: none within
-- nine years), for tests.
CREATE FUNCTION taskq._cron_next(cron text, time_zone text, after timestamptz)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'taskq_cron_next_sql'
LANGUAGE C STABLE;
COMMENT ON FUNCTION taskq._cron_next(text, text, timestamptz) IS
    'internal: the first tick of a cron expression in a time zone after an instant';
REVOKE ALL ON FUNCTION taskq._cron_next(text, text, timestamptz) FROM PUBLIC;

-- An update that keeps cron and time_zone keeps next_tick (a tick due is
-- not lost by a repeated schedule()); one that changes either starts from
-- the first tick after now().  last_tick is kept.
CREATE FUNCTION taskq.schedule(name text, cron text, task jsonb, time_zone text DEFAULT 'UTC',
                               catch_up text DEFAULT 'latest')
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    first_tick timestamptz;
BEGIN
    first_tick := taskq._schedule_next(schedule.name, schedule.cron, schedule.task,
                                       schedule.time_zone, schedule.catch_up);
    INSERT INTO taskq.schedule_registry AS r
           (name, cron, time_zone, task, catch_up, last_tick, next_tick)
    VALUES (schedule.name, schedule.cron, schedule.time_zone, schedule.task,
            schedule.catch_up, NULL, first_tick)
    ON CONFLICT ON CONSTRAINT schedule_registry_pkey
       DO UPDATE SET cron = EXCLUDED.cron, time_zone = EXCLUDED.time_zone,
                     task = EXCLUDED.task, catch_up = EXCLUDED.catch_up,
                     next_tick = CASE WHEN r.cron OPERATOR(pg_catalog.=) EXCLUDED.cron
                                       AND r.time_zone OPERATOR(pg_catalog.=) EXCLUDED.time_zone
                                       AND r.next_tick IS NOT NULL
                                      THEN r.next_tick ELSE EXCLUDED.next_tick END;
END
$$;
COMMENT ON FUNCTION taskq.schedule(text, text, jsonb, text, text) IS
    'create the schedule of this name, or replace it: the background worker inserts the task once per tick of the cron expression in the time zone, with id "<name>/<tick>"; catch_up (latest, all, none) says which missed ticks it inserts';
REVOKE ALL ON FUNCTION taskq.schedule(text, text, jsonb, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.schedule(text, text, jsonb, text, text) TO taskq_admin;

CREATE FUNCTION taskq.unschedule(name text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF name IS NULL THEN
        RAISE EXCEPTION 'argument "name" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    DELETE FROM taskq.schedule_registry AS r
     WHERE r.name OPERATOR(pg_catalog.=) unschedule.name;
    RETURN FOUND;
END
$$;
COMMENT ON FUNCTION taskq.unschedule(text) IS
    'remove the schedule of this name (its tasks already inserted stay); whether there was one';
REVOKE ALL ON FUNCTION taskq.unschedule(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.unschedule(text) TO taskq_admin;

CREATE VIEW taskq.schedules AS
SELECT s.name, s.cron, s.time_zone, s.task, s.catch_up, s.last_tick, s.next_tick
  FROM taskq.schedule_registry AS s
 ORDER BY s.name;
COMMENT ON VIEW taskq.schedules IS
    'the schedules: cron expression, time zone, task, catch_up, the last tick handled and the next one';
GRANT SELECT ON taskq.schedules TO taskq_monitor, taskq_admin;

-- The gauges of taskq.metrics(): per action, the tasks ready, delayed,
-- blocked and in progress and the age of the oldest ready one, and the
-- workers that heartbeat, written by the background worker every
-- taskq.metrics_interval (a row per gauge that is not 0), so that a scrape
-- reads these few rows instead of counting taskq.tasks.  action '' is a
-- gauge without one.
CREATE TABLE taskq.metric_gauges (
    name            text COLLATE "C" NOT NULL,
    action          text COLLATE "C" NOT NULL,
    value           double precision NOT NULL,
    refreshed_at    timestamptz NOT NULL,
    CONSTRAINT metric_gauges_pkey PRIMARY KEY (name, action)
);
COMMENT ON TABLE taskq.metric_gauges IS
    'the gauges of taskq.metrics() as the background worker last counted them (every taskq.metrics_interval)';
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.metric_gauges TO taskq_admin;

-- Counters and histograms since the server started (shared memory, counted
-- at commit) and the gauges of the last refresh, in Prometheus' names.
CREATE FUNCTION taskq.metrics()
RETURNS TABLE (name text, labels jsonb, kind text, value double precision)
AS 'MODULE_PATHNAME', 'taskq_metrics'
LANGUAGE C VOLATILE ROWS 100
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.metrics() IS
    'per action: tasks inserted, claimed, completed, aborted, retried, released, expired, cancelled, redriven since the server started, histograms of queue wait and run time, and the gauges the background worker last refreshed';
REVOKE ALL ON FUNCTION taskq.metrics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.metrics() TO taskq_monitor, taskq_admin;

CREATE FUNCTION taskq.metrics_text()
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_metrics_text'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.metrics_text() IS
    'taskq.metrics() in the Prometheus text exposition format';
REVOKE ALL ON FUNCTION taskq.metrics_text() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.metrics_text() TO taskq_monitor, taskq_admin;

-- ---------------------------------------------------------------------
-- Graphs of definitions and runs, in DOT (Graphviz) or Mermaid.
-- ---------------------------------------------------------------------

-- The statistics of each state of a machine and each step of a saga, per
-- version: runs in it now, and over the tasks retention keeps, how often it
-- was entered, succeeded, the tries that failed, and the seconds from the
-- claim of the last try to done of its successful visits (the wait in the
-- queue is not the state's).  A saga's undo of a step has a row of its own,
-- "<step>:undo", after the step's.  A map state counts its visits (its join
-- task), not its items.
CREATE VIEW taskq.state_stats AS
WITH states AS (
    SELECT d.name AS definition, d.kind, d.version,
           s.value OPERATOR(pg_catalog.->>) 'name' AS state,
           s.ordinality OPERATOR(pg_catalog.*) 2 AS ord
      FROM taskq.definitions AS d,
           pg_catalog.jsonb_array_elements(d.definition OPERATOR(pg_catalog.->)
               CASE d.kind WHEN 'machine' THEN 'states' ELSE 'steps' END) WITH ORDINALITY AS s
    UNION ALL
    SELECT d.name, d.kind, d.version,
           (s.value OPERATOR(pg_catalog.->>) 'name') OPERATOR(pg_catalog.||) ':undo',
           s.ordinality OPERATOR(pg_catalog.*) 2 OPERATOR(pg_catalog.+) 1
      FROM taskq.definitions AS d,
           pg_catalog.jsonb_array_elements(d.definition OPERATOR(pg_catalog.->) 'steps') WITH ORDINALITY AS s
     WHERE d.kind OPERATOR(pg_catalog.=) 'saga'
       AND pg_catalog.jsonb_typeof(s.value OPERATOR(pg_catalog.->) 'undo') OPERATOR(pg_catalog.=) 'string'
), visits AS (
    SELECT r.definition, r.version,
           CASE WHEN t.body OPERATOR(pg_catalog.->>) 'direction' OPERATOR(pg_catalog.=) 'undo'
                THEN (t.body OPERATOR(pg_catalog.->>) 'step') OPERATOR(pg_catalog.||) ':undo'
                ELSE COALESCE(t.body OPERATOR(pg_catalog.->>) 'state', t.body OPERATOR(pg_catalog.->>) 'step')
           END AS state,
           t.status_code, t.num_tries,
           pg_catalog.date_part('epoch', t.finished_at OPERATOR(pg_catalog.-) t.claimed_at) AS seconds
      FROM taskq.runs AS r
      JOIN taskq.tasks AS t ON t.workflow OPERATOR(pg_catalog.=) r.id
     -- a map state's items are its work, not visits: its join is the visit
     WHERE NOT t.body OPERATOR(pg_catalog.?&) ARRAY['index', 'item']
), now_in AS (
    SELECT r.definition, r.version, r.state, pg_catalog.count(*) AS n
      FROM taskq.runs AS r
     WHERE r.finished_at IS NULL AND r.kind OPERATOR(pg_catalog.=) 'machine'
     GROUP BY 1, 2, 3
)
SELECT s.definition, s.kind, s.version, s.state,
       CASE s.kind WHEN 'machine' THEN COALESCE(pg_catalog.max(n.n), 0)
            ELSE pg_catalog.count(*) FILTER (WHERE v.status_code OPERATOR(pg_catalog.<) 'completed') END
           AS in_state,
       pg_catalog.count(v.state) AS entered,
       pg_catalog.count(*) FILTER (WHERE v.status_code OPERATOR(pg_catalog.=) 'completed') AS succeeded,
       COALESCE(pg_catalog.sum(GREATEST(v.num_tries OPERATOR(pg_catalog.-)
           CASE WHEN v.status_code OPERATOR(pg_catalog.=) ANY (ARRAY['completed', 'in_progress']::taskq.status[])
                THEN 1 ELSE 0 END, 0)), 0)::pg_catalog.int8 AS failed_tries,
       pg_catalog.round(pg_catalog.avg(v.seconds) FILTER (WHERE v.status_code OPERATOR(pg_catalog.=) 'completed')::pg_catalog.numeric, 3)
           AS avg_seconds,
       pg_catalog.round((pg_catalog.percentile_cont(0.95) WITHIN GROUP (ORDER BY v.seconds)
           FILTER (WHERE v.status_code OPERATOR(pg_catalog.=) 'completed'))::pg_catalog.numeric, 3) AS p95_seconds
  FROM states AS s
  LEFT JOIN visits AS v
    ON v.definition OPERATOR(pg_catalog.=) s.definition AND v.version OPERATOR(pg_catalog.=) s.version
   AND v.state OPERATOR(pg_catalog.=) s.state
  LEFT JOIN now_in AS n
    ON n.definition OPERATOR(pg_catalog.=) s.definition AND n.version OPERATOR(pg_catalog.=) s.version
   AND n.state OPERATOR(pg_catalog.=) s.state
 GROUP BY s.definition, s.kind, s.version, s.state, s.ord
 ORDER BY s.definition, s.version, s.ord;
COMMENT ON VIEW taskq.state_stats IS
    'per state of a machine or step of a saga and version: runs in it now, visits, successes, failed tries, seconds';
GRANT SELECT ON taskq.state_stats TO taskq_monitor, taskq_admin;

-- The format argument of the graph functions.
CREATE FUNCTION taskq._graph_format(format text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF format IS NULL THEN
        RAISE EXCEPTION 'argument "format" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF format OPERATOR(pg_catalog.<>) ALL (ARRAY['dot', 'mermaid']) THEN
        RAISE EXCEPTION 'unknown graph format "%"', format
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Use "dot" or "mermaid".';
    END IF;
    RETURN format;
END
$$;
COMMENT ON FUNCTION taskq._graph_format(text) IS 'internal: check the format argument of a graph function';
REVOKE ALL ON FUNCTION taskq._graph_format(text) FROM PUBLIC;

-- The nodes and edges of a definition (version v), with live figures (none
-- when name is NULL: a saga run's graph labels its steps itself), as rows:
-- kind 'node' (key, label, attributes) or 'edge' (key -> key2, label).
CREATE FUNCTION taskq._definition_parts(def jsonb, kind text, name text, v integer)
RETURNS TABLE (part text, key text, key2 text, label text, initial boolean, final boolean,
               waiting boolean, ord bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- the live figures of every state at once: state_stats reads the tasks
    -- of every run of the definition, so once per graph, not once per node
    WITH st AS MATERIALIZED (
        SELECT x.state,
               E'\nnow ' OPERATOR(pg_catalog.||) x.in_state OPERATOR(pg_catalog.||)
               ', entered ' OPERATOR(pg_catalog.||) x.entered OPERATOR(pg_catalog.||)
               ', ok ' OPERATOR(pg_catalog.||) x.succeeded OPERATOR(pg_catalog.||)
               ', failed tries ' OPERATOR(pg_catalog.||) x.failed_tries OPERATOR(pg_catalog.||)
               COALESCE(', avg ' OPERATOR(pg_catalog.||) x.avg_seconds OPERATOR(pg_catalog.||) ' s', '') AS figures
          FROM taskq.state_stats AS x
         WHERE name IS NOT NULL
           AND x.definition OPERATOR(pg_catalog.=) name AND x.version OPERATOR(pg_catalog.=) v
    )
    SELECT 'node', s.value OPERATOR(pg_catalog.->>) 'name', NULL::text,
           (s.value OPERATOR(pg_catalog.->>) 'name')
           OPERATOR(pg_catalog.||) CASE WHEN kind OPERATOR(pg_catalog.=) 'machine' THEN
               E'\n' OPERATOR(pg_catalog.||) COALESCE('action: ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->>) 'action'),
                                                       'child: machine ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->) 'child' OPERATOR(pg_catalog.->>) 'machine'),
                                                       'child: saga ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->) 'child' OPERATOR(pg_catalog.->>) 'saga'),
                        -- a map state: its items' action and array
                        (SELECT 'map: ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.#>>) '{map,action}') OPERATOR(pg_catalog.||) ' over '
                                   OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.#>>) '{map,items}')
                                   OPERATOR(pg_catalog.||) COALESCE(', ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.#>>) '{map,max_parallel}') OPERATOR(pg_catalog.||) ' at once', '')
                 WHERE s.value OPERATOR(pg_catalog.?) 'map'),
                        'waits for an event')
               OPERATOR(pg_catalog.||) CASE WHEN (s.value OPERATOR(pg_catalog.->>) 'continuation')::boolean THEN E'\ncontinuation' ELSE '' END
               OPERATOR(pg_catalog.||) COALESCE(E'\nfan-in ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->>) 'fan_in') OPERATOR(pg_catalog.||) ' s', '')
             ELSE
               E'\n' OPERATOR(pg_catalog.||) COALESCE('do: ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->>) 'do'), 'child: machine ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->) 'child' OPERATOR(pg_catalog.->>) 'machine'),
                                                       'child: saga ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->) 'child' OPERATOR(pg_catalog.->>) 'saga'))
               OPERATOR(pg_catalog.||) E'\nundo: ' OPERATOR(pg_catalog.||) COALESCE(s.value OPERATOR(pg_catalog.->>) 'undo', '-')
               OPERATOR(pg_catalog.||) COALESCE(E'\ntrigger: ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->>) 'trigger'), '')
             END
           OPERATOR(pg_catalog.||) COALESCE((SELECT st.figures FROM st
                                              WHERE st.state OPERATOR(pg_catalog.=) (s.value OPERATOR(pg_catalog.->>) 'name')), ''),
           COALESCE((s.value OPERATOR(pg_catalog.->>) 'initial')::boolean, false),
           COALESCE((s.value OPERATOR(pg_catalog.->>) 'final')::boolean, false),
           kind OPERATOR(pg_catalog.=) 'machine' AND (s.value OPERATOR(pg_catalog.->) 'action') OPERATOR(pg_catalog.=) 'null'::jsonb
               AND NOT s.value OPERATOR(pg_catalog.?) 'child' AND NOT s.value OPERATOR(pg_catalog.?) 'map',
           s.ordinality
      FROM pg_catalog.jsonb_array_elements(def OPERATOR(pg_catalog.->)
               CASE kind WHEN 'machine' THEN 'states' ELSE 'steps' END) WITH ORDINALITY AS s
    UNION ALL
    -- a transition's label: its event, its "after", and the timeout that sends it
    SELECT 'edge', s.value OPERATOR(pg_catalog.->>) 'name', t.value OPERATOR(pg_catalog.->>) 'to',
           (t.value OPERATOR(pg_catalog.->>) 'event')
           OPERATOR(pg_catalog.||) COALESCE(' (after ' OPERATOR(pg_catalog.||) (t.value OPERATOR(pg_catalog.->>) 'after') OPERATOR(pg_catalog.||) ')', '')
           OPERATOR(pg_catalog.||) CASE WHEN (t.value OPERATOR(pg_catalog.->>) 'event') OPERATOR(pg_catalog.=) (s.value OPERATOR(pg_catalog.->>) 'on_timeout')
                                        THEN ' (timeout ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->>) 'timeout') OPERATOR(pg_catalog.||) ')'
                                        ELSE '' END,
           NULL, NULL, NULL, s.ordinality * 1000 OPERATOR(pg_catalog.+) t.ordinality
      FROM pg_catalog.jsonb_array_elements(def OPERATOR(pg_catalog.->) 'states') WITH ORDINALITY AS s,
           pg_catalog.jsonb_array_elements(COALESCE(s.value OPERATOR(pg_catalog.->) 'transitions', '[]'::jsonb)) WITH ORDINALITY AS t
     WHERE kind OPERATOR(pg_catalog.=) 'machine'
    UNION ALL
    -- a saga step comes after its "after" steps, by default the previous step
    SELECT 'edge', a.after, s.value OPERATOR(pg_catalog.->>) 'name', NULL, NULL, NULL, NULL,
           s.ordinality * 1000 OPERATOR(pg_catalog.+) a.ord
      FROM pg_catalog.jsonb_array_elements(def OPERATOR(pg_catalog.->) 'steps') WITH ORDINALITY AS s,
           LATERAL (SELECT x.value AS after, x.ordinality AS ord
                      FROM pg_catalog.jsonb_array_elements_text(s.value OPERATOR(pg_catalog.->) 'after') WITH ORDINALITY AS x
                     WHERE s.value ? 'after'
                    UNION ALL
                    SELECT (def OPERATOR(pg_catalog.->) 'steps' OPERATOR(pg_catalog.->) (s.ordinality::integer OPERATOR(pg_catalog.-) 2))
                               OPERATOR(pg_catalog.->>) 'name', 1
                     WHERE NOT s.value ? 'after' AND s.ordinality OPERATOR(pg_catalog.>) 1) AS a
     WHERE kind OPERATOR(pg_catalog.=) 'saga'
$$;
COMMENT ON FUNCTION taskq._definition_parts(jsonb, text, text, integer) IS
    'internal: the nodes and edges of a definition, for the graph functions';
REVOKE ALL ON FUNCTION taskq._definition_parts(jsonb, text, text, integer) FROM PUBLIC;

-- Draw nodes and edges: nodes (key, label, shape, fill, initial, final),
-- edges (key, key2, label).  DOT: a digraph; Mermaid: a stateDiagram-v2
-- for machines, a flowchart otherwise.
CREATE FUNCTION taskq._draw(title text, format text, machine boolean, nodes jsonb, edges jsonb)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    out text;
    n jsonb;
    e jsonb;
    ids jsonb := '{}'::jsonb;
    i integer := 0;
BEGIN
    IF format OPERATOR(pg_catalog.=) 'dot' THEN
        out := 'digraph ' OPERATOR(pg_catalog.||) taskq._dot_quote(title) OPERATOR(pg_catalog.||)
               E' {\n  rankdir=LR;\n  node [shape=box, style="rounded,filled", fillcolor=white, fontname="Helvetica"];\n  edge [fontname="Helvetica"];\n';
        FOR n IN SELECT x FROM pg_catalog.jsonb_array_elements(nodes) AS x LOOP
            out := out OPERATOR(pg_catalog.||) '  ' OPERATOR(pg_catalog.||) taskq._dot_quote(n OPERATOR(pg_catalog.->>) 'key')
                   OPERATOR(pg_catalog.||) ' [label=' OPERATOR(pg_catalog.||) taskq._dot_quote(n OPERATOR(pg_catalog.->>) 'label')
                   OPERATOR(pg_catalog.||) COALESCE(', fillcolor=' OPERATOR(pg_catalog.||) taskq._dot_quote(n OPERATOR(pg_catalog.->>) 'fill'), '')
                   OPERATOR(pg_catalog.||) CASE WHEN (n OPERATOR(pg_catalog.->>) 'final')::boolean THEN ', peripheries=2' ELSE '' END
                   OPERATOR(pg_catalog.||) CASE WHEN (n OPERATOR(pg_catalog.->>) 'waiting')::boolean THEN ', shape=ellipse' ELSE '' END
                   OPERATOR(pg_catalog.||) CASE WHEN (n OPERATOR(pg_catalog.->>) 'current')::boolean THEN ', penwidth=3' ELSE '' END
                   OPERATOR(pg_catalog.||) E'];\n';
            IF (n OPERATOR(pg_catalog.->>) 'initial')::boolean THEN
                out := out OPERATOR(pg_catalog.||) '  "__start" [shape=point, label=""];' OPERATOR(pg_catalog.||) E'\n  "__start" -> '
                       OPERATOR(pg_catalog.||) taskq._dot_quote(n OPERATOR(pg_catalog.->>) 'key') OPERATOR(pg_catalog.||) E';\n';
            END IF;
        END LOOP;
        FOR e IN SELECT x FROM pg_catalog.jsonb_array_elements(edges) AS x LOOP
            out := out OPERATOR(pg_catalog.||) '  ' OPERATOR(pg_catalog.||) taskq._dot_quote(e OPERATOR(pg_catalog.->>) 'key')
                   OPERATOR(pg_catalog.||) ' -> ' OPERATOR(pg_catalog.||) taskq._dot_quote(e OPERATOR(pg_catalog.->>) 'key2')
                   OPERATOR(pg_catalog.||) COALESCE(' [label=' OPERATOR(pg_catalog.||) taskq._dot_quote(e OPERATOR(pg_catalog.->>) 'label') OPERATOR(pg_catalog.||) ']', '')
                   OPERATOR(pg_catalog.||) E';\n';
        END LOOP;
        RETURN out OPERATOR(pg_catalog.||) E'}\n';
    END IF;

    -- Mermaid: nodes get ids n0, n1, ...; names go in labels, escaped
    FOR n IN SELECT x FROM pg_catalog.jsonb_array_elements(nodes) AS x LOOP
        ids := ids OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object(n OPERATOR(pg_catalog.->>) 'key', 'n' OPERATOR(pg_catalog.||) i);
        i := i OPERATOR(pg_catalog.+) 1;
    END LOOP;
    out := CASE WHEN machine THEN E'stateDiagram-v2\n' ELSE E'flowchart LR\n' END;
    FOR n IN SELECT x FROM pg_catalog.jsonb_array_elements(nodes) AS x LOOP
        IF machine THEN
            out := out OPERATOR(pg_catalog.||) '  state "' OPERATOR(pg_catalog.||)
                   taskq._mermaid_text(pg_catalog.replace(n OPERATOR(pg_catalog.->>) 'label', E'\n', ' · '))
                   OPERATOR(pg_catalog.||) '" as ' OPERATOR(pg_catalog.||) (ids OPERATOR(pg_catalog.->>) (n OPERATOR(pg_catalog.->>) 'key')) OPERATOR(pg_catalog.||) E'\n';
            IF (n OPERATOR(pg_catalog.->>) 'initial')::boolean THEN
                out := out OPERATOR(pg_catalog.||) '  [*] --> ' OPERATOR(pg_catalog.||) (ids OPERATOR(pg_catalog.->>) (n OPERATOR(pg_catalog.->>) 'key')) OPERATOR(pg_catalog.||) E'\n';
            END IF;
            IF (n OPERATOR(pg_catalog.->>) 'final')::boolean THEN
                out := out OPERATOR(pg_catalog.||) '  ' OPERATOR(pg_catalog.||) (ids OPERATOR(pg_catalog.->>) (n OPERATOR(pg_catalog.->>) 'key')) OPERATOR(pg_catalog.||) E' --> [*]\n';
            END IF;
        ELSE
            out := out OPERATOR(pg_catalog.||) '  ' OPERATOR(pg_catalog.||) (ids OPERATOR(pg_catalog.->>) (n OPERATOR(pg_catalog.->>) 'key'))
                   OPERATOR(pg_catalog.||) '["' OPERATOR(pg_catalog.||)
                   taskq._mermaid_text(pg_catalog.replace(n OPERATOR(pg_catalog.->>) 'label', E'\n', ' · '))
                   OPERATOR(pg_catalog.||) E'"]\n';
        END IF;
        IF n ? 'fill' AND (n OPERATOR(pg_catalog.->>) 'fill') IS NOT NULL THEN
            out := out OPERATOR(pg_catalog.||) CASE WHEN machine THEN '  classDef c' ELSE '  style ' END
                   OPERATOR(pg_catalog.||) (ids OPERATOR(pg_catalog.->>) (n OPERATOR(pg_catalog.->>) 'key'))
                   OPERATOR(pg_catalog.||) ' fill:' OPERATOR(pg_catalog.||) (n OPERATOR(pg_catalog.->>) 'fill') OPERATOR(pg_catalog.||) E'\n';
            IF machine THEN
                out := out OPERATOR(pg_catalog.||) '  class ' OPERATOR(pg_catalog.||) (ids OPERATOR(pg_catalog.->>) (n OPERATOR(pg_catalog.->>) 'key'))
                       OPERATOR(pg_catalog.||) ' c' OPERATOR(pg_catalog.||) (ids OPERATOR(pg_catalog.->>) (n OPERATOR(pg_catalog.->>) 'key')) OPERATOR(pg_catalog.||) E'\n';
            END IF;
        END IF;
    END LOOP;
    FOR e IN SELECT x FROM pg_catalog.jsonb_array_elements(edges) AS x LOOP
        CONTINUE WHEN NOT ids ? (e OPERATOR(pg_catalog.->>) 'key') OR NOT ids ? (e OPERATOR(pg_catalog.->>) 'key2');
        out := out OPERATOR(pg_catalog.||) '  ' OPERATOR(pg_catalog.||) (ids OPERATOR(pg_catalog.->>) (e OPERATOR(pg_catalog.->>) 'key'))
               OPERATOR(pg_catalog.||) CASE WHEN machine THEN ' --> ' ELSE
                   CASE WHEN e OPERATOR(pg_catalog.->>) 'label' IS NULL THEN ' --> ' ELSE ' -->|"' OPERATOR(pg_catalog.||) taskq._mermaid_text(e OPERATOR(pg_catalog.->>) 'label') OPERATOR(pg_catalog.||) '"| ' END END
               OPERATOR(pg_catalog.||) (ids OPERATOR(pg_catalog.->>) (e OPERATOR(pg_catalog.->>) 'key2'))
               OPERATOR(pg_catalog.||) CASE WHEN machine AND e OPERATOR(pg_catalog.->>) 'label' IS NOT NULL
                   THEN ' : ' OPERATOR(pg_catalog.||) taskq._mermaid_text(e OPERATOR(pg_catalog.->>) 'label') ELSE '' END
               OPERATOR(pg_catalog.||) E'\n';
    END LOOP;
    RETURN out;
END
$$;
COMMENT ON FUNCTION taskq._draw(text, text, boolean, jsonb, jsonb) IS
    'internal: nodes and edges drawn in DOT or Mermaid';
REVOKE ALL ON FUNCTION taskq._draw(text, text, boolean, jsonb, jsonb) FROM PUBLIC;

CREATE FUNCTION taskq.definition_graph(name text, format text DEFAULT 'dot', version integer DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    d record;
BEGIN
    PERFORM taskq._graph_format(format);
    IF name IS NULL THEN
        RAISE EXCEPTION 'argument "name" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT x.kind, x.version AS v, x.definition AS def INTO d FROM taskq.definitions AS x
     WHERE x.name OPERATOR(pg_catalog.=) definition_graph.name
       AND (definition_graph.version IS NULL OR x.version OPERATOR(pg_catalog.=) definition_graph.version)
     ORDER BY x.version DESC LIMIT 1;
    IF NOT FOUND THEN
        IF definition_graph.version IS NULL THEN
            RAISE EXCEPTION 'definition "%" does not exist', name USING ERRCODE = 'undefined_object';
        END IF;
        RAISE EXCEPTION 'definition "%" has no version %', name, definition_graph.version
            USING ERRCODE = 'undefined_object';
    END IF;
    -- the parts once (their live figures cost a read of the definition's runs)
    RETURN (WITH p AS MATERIALIZED (SELECT * FROM taskq._definition_parts(d.def, d.kind, name, d.v))
            SELECT taskq._draw(name OPERATOR(pg_catalog.||) ' v' OPERATOR(pg_catalog.||) d.v, format,
        d.kind OPERATOR(pg_catalog.=) 'machine',
        (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('key', p.key, 'label', p.label,
                    'initial', p.initial, 'final', p.final, 'waiting', p.waiting) ORDER BY p.ord), '[]')
           FROM p WHERE p.part OPERATOR(pg_catalog.=) 'node'),
        (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('key', p.key, 'key2', p.key2,
                    'label', p.label) ORDER BY p.ord), '[]')
           FROM p WHERE p.part OPERATOR(pg_catalog.=) 'edge')));
END
$$;
COMMENT ON FUNCTION taskq.definition_graph(text, text, integer) IS
    'a state machine or saga (latest version, or version) as a DOT or Mermaid graph, with live figures';
REVOKE ALL ON FUNCTION taskq.definition_graph(text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.definition_graph(text, text, integer) TO taskq_producer, taskq_admin, taskq_monitor;

CREATE FUNCTION taskq.run_graph(id text, format text DEFAULT 'dot')
RETURNS text
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
    def jsonb;
    nodes jsonb;
    edges jsonb;
BEGIN
    PERFORM taskq._graph_format(format);
    IF id IS NULL THEN
        RAISE EXCEPTION 'argument "id" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT x.* INTO r FROM taskq.runs AS x WHERE x.id OPERATOR(pg_catalog.=) run_graph.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'run "%" does not exist', id USING ERRCODE = 'undefined_object';
    END IF;
    SELECT d.definition INTO def FROM taskq.definitions AS d
     WHERE d.name OPERATOR(pg_catalog.=) r.definition AND d.version OPERATOR(pg_catalog.=) r.version;

    IF r.kind OPERATOR(pg_catalog.=) 'machine' THEN
        -- the path: each step's state, and the transition its event took
        -- (through the waiting states the run passed, which have no task)
        WITH steps AS (
            SELECT t.body OPERATOR(pg_catalog.->>) 'state' AS state, t.status AS event, t.status_code,
                   pg_catalog.row_number() OVER (ORDER BY t.seq) AS k
              FROM taskq.tasks AS t
             WHERE t.workflow OPERATOR(pg_catalog.=) r.id
               AND pg_catalog.starts_with(t.id, r.id OPERATOR(pg_catalog.||) '/')
               -- a map state's items and join are not steps
               AND NOT t.body OPERATOR(pg_catalog.?|) ARRAY['index', 'map_items']
        ), states AS (
            SELECT s.value AS st FROM pg_catalog.jsonb_array_elements(def OPERATOR(pg_catalog.->) 'states') AS s
        ), moves AS (
            -- from a step's state on its event, to the state the definition names
            SELECT a.state AS src, tr.value OPERATOR(pg_catalog.->>) 'to' AS dst, a.event AS label
              FROM steps AS a, states AS s,
                   pg_catalog.jsonb_array_elements(COALESCE(s.st OPERATOR(pg_catalog.->) 'transitions', '[]')) AS tr
             WHERE s.st OPERATOR(pg_catalog.->>) 'name' OPERATOR(pg_catalog.=) a.state
               AND a.status_code OPERATOR(pg_catalog.=) 'completed'
               AND tr.value OPERATOR(pg_catalog.->>) 'event' OPERATOR(pg_catalog.=) a.event
            UNION ALL
            -- out of a waiting state: to the next step's state (by send_event)
            SELECT w.st OPERATOR(pg_catalog.->>) 'name', tr.value OPERATOR(pg_catalog.->>) 'to',
                   tr.value OPERATOR(pg_catalog.->>) 'event'
              FROM steps AS a
              JOIN steps AS b ON b.k OPERATOR(pg_catalog.=) (a.k OPERATOR(pg_catalog.+) 1),
                   states AS w,
                   pg_catalog.jsonb_array_elements(COALESCE(w.st OPERATOR(pg_catalog.->) 'transitions', '[]')) AS tr
             WHERE (w.st OPERATOR(pg_catalog.->) 'action') OPERATOR(pg_catalog.=) 'null'::jsonb
               AND tr.value OPERATOR(pg_catalog.->>) 'to' OPERATOR(pg_catalog.=) b.state
               AND EXISTS (SELECT 1 FROM states AS s2,
                                  pg_catalog.jsonb_array_elements(COALESCE(s2.st OPERATOR(pg_catalog.->) 'transitions', '[]')) AS t2
                            WHERE s2.st OPERATOR(pg_catalog.->>) 'name' OPERATOR(pg_catalog.=) a.state
                              AND t2.value OPERATOR(pg_catalog.->>) 'event' OPERATOR(pg_catalog.=) a.event
                              AND t2.value OPERATOR(pg_catalog.->>) 'to' OPERATOR(pg_catalog.=) (w.st OPERATOR(pg_catalog.->>) 'name'))
            UNION ALL
            -- out of an initial state without a task of its own (a map, child
            -- or waiting state): to the first step's state
            SELECT i.st OPERATOR(pg_catalog.->>) 'name', tr.value OPERATOR(pg_catalog.->>) 'to',
                   tr.value OPERATOR(pg_catalog.->>) 'event'
              FROM steps AS b, states AS i,
                   pg_catalog.jsonb_array_elements(COALESCE(i.st OPERATOR(pg_catalog.->) 'transitions', '[]')) AS tr
             WHERE b.k OPERATOR(pg_catalog.=) 1
               AND (i.st OPERATOR(pg_catalog.->) 'action') OPERATOR(pg_catalog.=) 'null'::jsonb
               AND COALESCE((i.st OPERATOR(pg_catalog.->>) 'initial')::boolean, false)
               AND tr.value OPERATOR(pg_catalog.->>) 'to' OPERATOR(pg_catalog.=) b.state
        ), visited AS (
            SELECT state AS name FROM steps UNION SELECT src FROM moves UNION SELECT dst FROM moves
            UNION SELECT r.state WHERE r.state IS NOT NULL
        )
        SELECT (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                    'key', v.name,
                    'label', v.name OPERATOR(pg_catalog.||) COALESCE(E'\nvisits: ' OPERATOR(pg_catalog.||)
                        NULLIF((SELECT pg_catalog.count(*) FROM steps AS s WHERE s.state OPERATOR(pg_catalog.=) v.name), 0), '')
                        OPERATOR(pg_catalog.||) COALESCE(E'\nchild: ' OPERATOR(pg_catalog.||)
                        (SELECT pg_catalog.string_agg(c.id OPERATOR(pg_catalog.||) ' (' OPERATOR(pg_catalog.||) c.status
                                                      OPERATOR(pg_catalog.||) ')', ', ' ORDER BY c.created_at, c.id)
                           FROM taskq.runs AS c
                          WHERE c.parent OPERATOR(pg_catalog.=) r.id AND st.st OPERATOR(pg_catalog.?) 'child'
                            AND c.definition OPERATOR(pg_catalog.=) (SELECT x.value FROM pg_catalog.jsonb_each_text(st.st OPERATOR(pg_catalog.->) 'child') AS x LIMIT 1)
                            AND c.id OPERATOR(pg_catalog.~) '/k[0-9]+$'), '')
                        -- a map state: its items by status
                        OPERATOR(pg_catalog.||) COALESCE((SELECT E'\nitems: ' OPERATOR(pg_catalog.||) pg_catalog.string_agg(
                                   x.n OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) x.code, ', ' ORDER BY x.code)
                              FROM (SELECT t.status_code::text AS code, pg_catalog.count(*) AS n FROM taskq.tasks AS t
                                     WHERE t.workflow OPERATOR(pg_catalog.=) r.id
                                       AND t.body OPERATOR(pg_catalog.->>) 'state' OPERATOR(pg_catalog.=) v.name
                                       AND t.body OPERATOR(pg_catalog.?) 'index' GROUP BY 1) AS x), ''),
                    'initial', COALESCE((st.st OPERATOR(pg_catalog.->>) 'initial')::boolean, false),
                    'final', COALESCE((st.st OPERATOR(pg_catalog.->>) 'final')::boolean, false),
                    'waiting', (st.st OPERATOR(pg_catalog.->) 'action') OPERATOR(pg_catalog.=) 'null'::jsonb
                               AND NOT st.st OPERATOR(pg_catalog.?) 'child' AND NOT st.st OPERATOR(pg_catalog.?) 'map',
                    'current', v.name OPERATOR(pg_catalog.=) r.state,
                    'fill', CASE WHEN v.name OPERATOR(pg_catalog.=) r.state THEN
                                 CASE r.status WHEN 'failed' THEN 'tomato' WHEN 'succeeded' THEN 'palegreen'
                                               WHEN 'cancelled' THEN 'lightgrey' WHEN 'merged' THEN 'lightgrey'
                                               ELSE 'lightblue' END END)
                    ORDER BY st.ord), '[]')
                  FROM visited AS v
                  JOIN (SELECT s.value AS st, s.ordinality AS ord
                          FROM pg_catalog.jsonb_array_elements(def OPERATOR(pg_catalog.->) 'states') WITH ORDINALITY AS s) AS st
                    ON st.st OPERATOR(pg_catalog.->>) 'name' OPERATOR(pg_catalog.=) v.name),
               (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('key', m.src, 'key2', m.dst,
                    'label', m.label OPERATOR(pg_catalog.||) CASE WHEN m.n OPERATOR(pg_catalog.>) 1 THEN ' x' OPERATOR(pg_catalog.||) m.n ELSE '' END)
                    ORDER BY m.src, m.dst, m.label), '[]')
                  FROM (SELECT src, dst, label, pg_catalog.count(*) AS n FROM moves GROUP BY 1, 2, 3) AS m)
          INTO nodes, edges;
        RETURN taskq._draw('run ' OPERATOR(pg_catalog.||) r.id OPERATOR(pg_catalog.||) ' (' OPERATOR(pg_catalog.||) r.status
                           OPERATOR(pg_catalog.||) ')', format, true, nodes, edges);
    END IF;

    -- a saga: its steps, coloured by what their do and undo did
    SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'key', p.key,
               'label', p.key OPERATOR(pg_catalog.||) COALESCE(E'\nchild: ' OPERATOR(pg_catalog.||) x.child, E'\ndo: ' OPERATOR(pg_catalog.||) COALESCE(x.do_status, 'not started'))
                        OPERATOR(pg_catalog.||) COALESCE(E'\nundo: ' OPERATOR(pg_catalog.||) x.undo_status, ''),
               'fill', CASE WHEN x.undo_status OPERATOR(pg_catalog.=) 'completed' THEN 'khaki'
                            WHEN x.undo_status OPERATOR(pg_catalog.=) 'aborted' THEN 'red'
                            WHEN x.undo_status IS NOT NULL THEN 'orange'
                            WHEN x.do_status OPERATOR(pg_catalog.=) 'completed' THEN 'palegreen'
                            WHEN x.do_status OPERATOR(pg_catalog.=) 'aborted' THEN 'tomato'
                            WHEN x.do_status IS NOT NULL THEN 'lightblue' END) ORDER BY p.ord), '[]')
      INTO nodes
      FROM taskq._definition_parts(def, 'saga', NULL, NULL) AS p
      LEFT JOIN LATERAL (
          SELECT (SELECT t.status_code::text FROM taskq.tasks AS t
                   WHERE t.workflow OPERATOR(pg_catalog.=) r.id AND t.body OPERATOR(pg_catalog.->>) 'step' OPERATOR(pg_catalog.=) p.key
                     AND t.body OPERATOR(pg_catalog.->>) 'direction' OPERATOR(pg_catalog.=) 'do' ORDER BY t.seq DESC LIMIT 1) AS do_status,
                 (SELECT t.status_code::text FROM taskq.tasks AS t
                   WHERE t.workflow OPERATOR(pg_catalog.=) r.id AND t.body OPERATOR(pg_catalog.->>) 'step' OPERATOR(pg_catalog.=) p.key
                     AND t.body OPERATOR(pg_catalog.->>) 'direction' OPERATOR(pg_catalog.=) 'undo' ORDER BY t.seq DESC LIMIT 1) AS undo_status,
                 (SELECT c.id OPERATOR(pg_catalog.||) ' (' OPERATOR(pg_catalog.||) c.status OPERATOR(pg_catalog.||) ')'
                    FROM taskq.saga_steps AS ss JOIN taskq.runs AS c ON c.id OPERATOR(pg_catalog.=) ss.do_task
                   WHERE ss.run OPERATOR(pg_catalog.=) r.id AND ss.step OPERATOR(pg_catalog.=) p.key
                     AND c.parent OPERATOR(pg_catalog.=) r.id) AS child
      ) AS x ON true
     WHERE p.part OPERATOR(pg_catalog.=) 'node';
    SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('key', p.key, 'key2', p.key2) ORDER BY p.ord), '[]')
      INTO edges
      FROM taskq._definition_parts(def, 'saga', NULL, NULL) AS p WHERE p.part OPERATOR(pg_catalog.=) 'edge';
    RETURN taskq._draw('run ' OPERATOR(pg_catalog.||) r.id OPERATOR(pg_catalog.||) ' (' OPERATOR(pg_catalog.||) r.status
                       OPERATOR(pg_catalog.||) ')', format, false, nodes, edges);
END
$$;
COMMENT ON FUNCTION taskq.run_graph(text, text) IS
    'one run as a DOT or Mermaid graph: the path a machine took, or a saga''s steps coloured by do and undo';
REVOKE ALL ON FUNCTION taskq.run_graph(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.run_graph(text, text) TO taskq_producer, taskq_admin, taskq_monitor;
