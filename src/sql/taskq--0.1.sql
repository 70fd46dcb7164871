/*
 * taskq 0.1 install script: the task table, its indexes, the monitoring
 * views and the SQL entry points of the core queue.  The hot paths (insert,
 * claim, return, signal, abort cascade, dependencies, wait) are C functions
 * in the taskq module; the shapes (chain, group, chord) are thin SQL over
 * insert_tasks.
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
 * needs (section "Roles and privileges" at the end); the public functions
 * are SECURITY DEFINER with a pinned search_path, so producers and workers
 * have no privileges on the tables and reach them only through the API.
 */

\echo Use "CREATE EXTENSION taskq" to load this file. \quit

CREATE SCHEMA taskq;
COMMENT ON SCHEMA taskq IS 'the taskq task queue: tasks, their functions and monitoring views';

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

CREATE TYPE taskq.status AS ENUM ('pending', 'in_progress', 'completed', 'aborted');
COMMENT ON TYPE taskq.status IS 'life of a task: pending, in_progress, then completed or aborted';

CREATE SEQUENCE taskq.task_seq;
COMMENT ON SEQUENCE taskq.task_seq IS 'insertion order of tasks (ties after priority)';

/*
 * One row per task.  Columns named in the public contract come first; seq
 * and spontaneous are ours.  id and action use the "C" collation: they are
 * identifiers, compared bytewise, which keeps the btrees cheap.
 *
 * Invariant kept by every path: num_signals is the number of predecessors
 * that have not finished yet (every finish of a predecessor, completed or
 * aborted, decrements it once), so that replace_tasks can carry a replaced
 * task's live incoming edges over exactly.
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
    CONSTRAINT tasks_pkey PRIMARY KEY (id),
    CONSTRAINT tasks_num_tries_check CHECK (num_tries OPERATOR(pg_catalog.>=) 0),
    CONSTRAINT tasks_max_tries_check CHECK (max_tries OPERATOR(pg_catalog.>) 0),
    CONSTRAINT tasks_num_signals_check CHECK (num_signals OPERATOR(pg_catalog.>=) 0)
);
COMMENT ON TABLE taskq.tasks IS 'one row per task of the queue';
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

/*
 * The ready set, in claim order.  Partial: a row is in it only while it is
 * pending with every predecessor done, so the claim cost does not grow with
 * blocked, in-progress or finished tasks.  not_before is the last key column
 * so that delayed tasks are skipped inside the index, without heap visits.
 */
CREATE INDEX tasks_ready_action_idx ON taskq.tasks
    (action, priority DESC, seq, not_before)
    WHERE status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status
      AND num_signals OPERATOR(pg_catalog.=) 0;
CREATE INDEX tasks_ready_idx ON taskq.tasks
    (priority DESC, seq, not_before)
    WHERE status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status
      AND num_signals OPERATOR(pg_catalog.=) 0;
-- Leases, earliest deadline first: the expiry sweep reads its head only.
CREATE INDEX tasks_lease_idx ON taskq.tasks (action_deadline)
    WHERE status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status;
-- Delayed tasks by not_before: the worker finds those whose time came, and
-- the next one to come, with a range scan.  Only tasks that were delayed
-- (not_before after their insertion: a future not_before, or a retry's
-- backoff) are in it, so an ordinary enqueue costs no entry here.
CREATE INDEX tasks_not_before_idx ON taskq.tasks (not_before)
    WHERE status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status
      AND num_signals OPERATOR(pg_catalog.=) 0
      AND not_before OPERATOR(pg_catalog.>) created_at;
-- Finished tasks by age, for retention.
CREATE INDEX tasks_finished_idx ON taskq.tasks (finished_at)
    WHERE status_code OPERATOR(pg_catalog.>=) 'completed'::taskq.status;

-- Tasks of a workflow by state: cancel_workflow, and a job's state.
CREATE INDEX tasks_workflow_idx ON taskq.tasks (workflow, status_code)
    WHERE workflow IS NOT NULL;

SELECT pg_catalog.pg_extension_config_dump('taskq.tasks', '');
SELECT pg_catalog.pg_extension_config_dump('taskq.task_seq', '');

-- Defaults per action: max_tries and the retry backoff of tasks that give none.
CREATE TABLE taskq.action_policies (
    action      text COLLATE "C" NOT NULL,
    max_tries   integer,
    retry       jsonb,
    CONSTRAINT action_policies_pkey PRIMARY KEY (action),
    CONSTRAINT action_policies_max_tries_check CHECK (max_tries OPERATOR(pg_catalog.>) 0)
);
COMMENT ON TABLE taskq.action_policies IS
    'per action: default max_tries and retry backoff for tasks that give none (set with taskq.set_action_policy)';
SELECT pg_catalog.pg_extension_config_dump('taskq.action_policies', '');

-- Workflows cancelled: their tasks never run again, even ones inserted later.
CREATE TABLE taskq.cancelled_workflows (
    workflow        text COLLATE "C" NOT NULL,
    cancelled_at    timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT cancelled_workflows_pkey PRIMARY KEY (workflow)
);
COMMENT ON TABLE taskq.cancelled_workflows IS
    'workflow keys cancelled with taskq.cancel_workflow: tasks inserted with them are aborted at once';
SELECT pg_catalog.pg_extension_config_dump('taskq.cancelled_workflows', '');

/* ---------------------------------------------------------------------
 * Core functions (C).  SECURITY DEFINER: they run as the extension's owner,
 * so callers need EXECUTE on them and nothing on the tables.  The C code's
 * SQL is schema-qualified throughout; search_path is pinned anyway because
 * type names in casts still go through it.
 * --------------------------------------------------------------------- */

CREATE FUNCTION taskq.insert_tasks(tasks jsonb)
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_insert_tasks'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.insert_tasks(jsonb) IS
    'atomically add the tasks of a JSON array; a duplicate id fails the whole call';

CREATE FUNCTION taskq.replace_tasks(tasks jsonb)
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_replace_tasks'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.replace_tasks(jsonb) IS
    'as insert_tasks, replacing (as though aborted) stored tasks with the same id that nobody owns';

CREATE FUNCTION taskq.own_tasks(actor text, max_tasks integer, actions text[],
                                max_duration interval DEFAULT NULL)
RETURNS TABLE (id text, token uuid, action text, body jsonb, num_tries integer,
               action_deadline timestamptz)
AS 'MODULE_PATHNAME', 'taskq_own_tasks'
LANGUAGE C VOLATILE ROWS 10
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.own_tasks(text, integer, text[], interval) IS
    'claim up to max_tasks ready tasks of the given actions (NULL: any) for actor';

CREATE FUNCTION taskq.extend_ownership(actor text, ids text[], tokens uuid[],
                                       max_duration interval)
RETURNS TABLE (id text, owned boolean)
AS 'MODULE_PATHNAME', 'taskq_extend_ownership'
LANGUAGE C VOLATILE ROWS 10
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.extend_ownership(text, text[], uuid[], interval) IS
    'extend the leases still held by actor with these tokens; one row per task';

CREATE FUNCTION taskq.return_task(id text, token uuid, status text, status_code taskq.status,
                                  retry_delay interval DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'taskq_return_task'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.return_task(text, uuid, text, taskq.status, interval) IS
    'return an owned task as completed, aborted or pending (retry, after retry_delay or its backoff)';

CREATE FUNCTION taskq.return_tasks(ids text[], tokens uuid[], statuses text[],
                                   status_codes taskq.status[])
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_return_tasks'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.return_tasks(text[], uuid[], text[], taskq.status[]) IS
    'return many owned tasks in one call, all or none';

CREATE FUNCTION taskq.add_dependencies(after_ids text[], run_ids text[])
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_add_dependencies'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.add_dependencies(text[], text[]) IS
    'atomically make each run_ids[i] wait for after_ids[i]';

CREATE FUNCTION taskq.wait_for_task(id text, timeout interval DEFAULT NULL)
RETURNS taskq.tasks
AS 'MODULE_PATHNAME', 'taskq_wait_for_task'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.wait_for_task(text, interval) IS
    'wait until the task is completed or aborted and return it; NULL after timeout';

/* ---------------------------------------------------------------------
 * Shapes: chains, groups and chords, built from JSON on insert_tasks and
 * add_dependencies, so they keep every rule of those (atomic, duplicate ids
 * refused, cycles refused).  Each takes task objects of the insert_tasks
 * form; a to_signal_after given by the caller is kept and the shape's edges
 * are added to it.
 * --------------------------------------------------------------------- */

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

-- insert_tasks, where each of waiting_ids also waits for every stored task
-- of after_ids; the waits are added before spontaneous tasks complete.
CREATE FUNCTION taskq._insert_after(tasks jsonb, after_ids text[], waiting_ids text[])
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_insert_after'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION taskq._insert_after(jsonb, text[], text[]) IS
    'internal: insert_tasks where some tasks also wait for stored tasks';

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

CREATE FUNCTION taskq.chord(tasks jsonb, "join" jsonb, after_ids text[] DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    join_id text;
    linked jsonb;
BEGIN
    PERFORM taskq._check_task_array(tasks, 'tasks');
    IF "join" IS NULL THEN
        RAISE EXCEPTION 'argument "join" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.jsonb_typeof("join") OPERATOR(pg_catalog.<>) 'object' THEN
        RAISE EXCEPTION 'argument "join" must be a JSON task object'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    join_id := "join" OPERATOR(pg_catalog.->>) 'id';
    SELECT COALESCE(pg_catalog.jsonb_agg(taskq._add_successor(t.value, join_id)
                                         ORDER BY t.ord), '[]'::jsonb)
      INTO linked
      FROM pg_catalog.jsonb_array_elements(tasks) WITH ORDINALITY AS t(value, ord);
    RETURN taskq._insert_after(linked OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_array("join"),
                               after_ids, taskq._ids(tasks));
END
$$;
COMMENT ON FUNCTION taskq.chord(jsonb, jsonb, text[]) IS
    'insert tasks that run in parallel (after every id of after_ids) and a join task that runs after all of them';

/* ---------------------------------------------------------------------
 * Monitoring views
 * --------------------------------------------------------------------- */

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
       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'aborted') AS aborted,
       pg_catalog.now() OPERATOR(pg_catalog.-)
           pg_catalog.min(t.not_before) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'pending'
                                                  AND t.num_signals OPERATOR(pg_catalog.=) 0
                                                  AND t.not_before OPERATOR(pg_catalog.<=) pg_catalog.now()
                                                  AND t.performance_token IS NULL)
           AS oldest_ready_age
  FROM taskq.tasks AS t
 GROUP BY t.action;
COMMENT ON VIEW taskq.action_stats IS
    'per action: tasks ready, blocked on dependencies, delayed, in progress, with an expired lease, completed, aborted, and how long the oldest ready task has waited';

CREATE VIEW taskq.tasks_in_progress AS
SELECT t.id, t.action, t.actor_id, t.num_tries, t.max_tries, t.action_deadline,
       t.action_deadline OPERATOR(pg_catalog.-) pg_catalog.now() AS time_left,
       t.action_deadline OPERATOR(pg_catalog.<=) pg_catalog.now() AS lease_expired
  FROM taskq.tasks AS t
 WHERE t.status_code OPERATOR(pg_catalog.=) 'in_progress'
 ORDER BY t.action_deadline NULLS LAST, t.id;
COMMENT ON VIEW taskq.tasks_in_progress IS
    'tasks owned by a worker, with actor, deadline and time left (negative: lease expired)';

/* ---------------------------------------------------------------------
 * Per-action limits: a role with rows here (or any role it belongs to) may
 * own, extend and return only tasks of these actions.  Superusers and
 * members of taskq_admin are never limited.  See src/acl.c.
 * --------------------------------------------------------------------- */

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
-- clears the caches when it commits.
CREATE FUNCTION taskq._action_grants_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'taskq_action_grants_changed'
LANGUAGE C;
COMMENT ON FUNCTION taskq._action_grants_changed() IS
    'internal: drop the cached per-action limits of every backend';

CREATE TRIGGER action_grants_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON taskq.action_grants
    FOR EACH STATEMENT EXECUTE FUNCTION taskq._action_grants_changed();

/* ---------------------------------------------------------------------
 * Administration
 * --------------------------------------------------------------------- */

-- What the background worker's retention does, on demand: finished tasks
-- no unfinished predecessor still names (num_signals = 0), so that no edge
-- can point at a deleted id.  SECURITY INVOKER: the caller needs DELETE on
-- taskq.tasks (taskq_admin has it).
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
    DELETE FROM taskq.tasks AS t
     WHERE t.status_code OPERATOR(pg_catalog.>=) 'completed'::taskq.status
       AND t.finished_at OPERATOR(pg_catalog.<=) (pg_catalog.now() OPERATOR(pg_catalog.-) older_than)
       AND t.num_signals OPERATOR(pg_catalog.=) 0;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION taskq.purge_finished(interval) IS
    'delete finished tasks older than older_than that no unfinished task still names; returns how many';

/* ---------------------------------------------------------------------
 * Job control: deduplicating enqueue, retry policies, cancellation, dead
 * letters (src/insert.c, src/control.c).
 * --------------------------------------------------------------------- */

CREATE FUNCTION taskq.insert_tasks_if_absent(tasks jsonb)
RETURNS TABLE (id text, inserted boolean)
AS 'MODULE_PATHNAME', 'taskq_insert_tasks_if_absent'
LANGUAGE C VOLATILE ROWS 10
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.insert_tasks_if_absent(jsonb) IS
    'idempotent enqueue: insert the tasks whose id is not stored yet; one row per task says which';

CREATE FUNCTION taskq.cancel_tasks(ids text[])
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_cancel_tasks'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.cancel_tasks(text[]) IS
    'cancel tasks: abort (with the cascade) those nobody owns, mark those owned so that they end aborted';

CREATE FUNCTION taskq.cancel_workflow(workflow text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_cancel_workflow'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.cancel_workflow(text) IS
    'cancel every unfinished task of the workflow, and every task inserted with its key from now on';

CREATE FUNCTION taskq.redrive_tasks(ids text[])
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_redrive_tasks'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.redrive_tasks(text[]) IS
    'give aborted tasks another life: pending again, no tries used';

CREATE FUNCTION taskq._check_retry(retry jsonb)
RETURNS void
AS 'MODULE_PATHNAME', 'taskq_check_retry'
LANGUAGE C IMMUTABLE;
COMMENT ON FUNCTION taskq._check_retry(jsonb) IS
    'internal: raise the error for a malformed retry policy';

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

CREATE FUNCTION taskq.set_action_policy(action text, max_tries integer DEFAULT NULL,
                                        retry jsonb DEFAULT NULL)
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
    PERFORM taskq._check_retry(retry);
    IF max_tries IS NULL AND retry IS NULL THEN
        DELETE FROM taskq.action_policies AS p WHERE p.action OPERATOR(pg_catalog.=) set_action_policy.action;
    ELSE
        INSERT INTO taskq.action_policies AS p (action, max_tries, retry)
             VALUES (set_action_policy.action, set_action_policy.max_tries, set_action_policy.retry)
        ON CONFLICT ON CONSTRAINT action_policies_pkey
           DO UPDATE SET max_tries = EXCLUDED.max_tries, retry = EXCLUDED.retry;
    END IF;
END
$$;
COMMENT ON FUNCTION taskq.set_action_policy(text, integer, jsonb) IS
    'set (or, with both null, clear) the default max_tries and retry backoff of an action''s tasks';

/*
 * Jobs: a job is the workflow of its tasks (their
 * workflow key is the job's id) plus item counters that workers move.  Its
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

CREATE FUNCTION taskq.report_progress(id text, token uuid, items bigint DEFAULT 1)
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_report_progress'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.report_progress(text, uuid, bigint) IS
    'add items done to the job of a task the caller owns (token-checked); returns the job''s progress';

CREATE FUNCTION taskq.set_job_item_count(id text, token uuid, item_count integer)
RETURNS void
AS 'MODULE_PATHNAME', 'taskq_set_job_item_count'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.set_job_item_count(text, uuid, integer) IS
    'set the item count of the job of a task the caller owns (token-checked), once the fan-out is known';

CREATE VIEW taskq.dead_letters AS
SELECT t.id, t.action, t.status, t.num_tries, t.max_tries, t.workflow, t.cancelled,
       t.finished_at
  FROM taskq.tasks AS t
 WHERE t.status_code OPERATOR(pg_catalog.=) 'aborted'::taskq.status
 ORDER BY t.finished_at DESC, t.id;
COMMENT ON VIEW taskq.dead_letters IS
    'aborted tasks with their last status and tries; re-drive them with taskq.redrive_tasks';

/* ---------------------------------------------------------------------
 * Roles and privileges.  Nothing for PUBLIC (functions are executable by
 * PUBLIC unless revoked).  Producers and workers get EXECUTE on their
 * functions only; monitors SELECT on the views only (views read the table
 * with their owner's rights); admins every function and DML on the tables.
 * Nobody but the owner gets TRIGGER or REFERENCES: a trigger on
 * taskq.tasks would run inside the SECURITY DEFINER functions as the owner.
 * The internal helpers (taskq._*) are for the owner alone.
 * --------------------------------------------------------------------- */

REVOKE ALL ON SCHEMA taskq FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA taskq FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA taskq FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA taskq FROM PUBLIC;

GRANT USAGE ON SCHEMA taskq TO taskq_producer, taskq_worker, taskq_admin, taskq_monitor;

GRANT EXECUTE ON FUNCTION
    taskq.insert_tasks(jsonb),
    taskq.replace_tasks(jsonb),
    taskq.add_dependencies(text[], text[]),
    taskq.wait_for_task(text, interval),
    taskq.chain(jsonb, text[]),
    taskq."group"(jsonb, text[]),
    taskq.chord(jsonb, jsonb, text[]),
    taskq.insert_tasks_if_absent(jsonb),
    taskq.cancel_tasks(text[]),
    taskq.cancel_workflow(text),
    taskq.create_job(text, jsonb, integer),
    taskq.job_state(text)
    TO taskq_producer, taskq_admin;

GRANT EXECUTE ON FUNCTION
    taskq.own_tasks(text, integer, text[], interval),
    taskq.extend_ownership(text, text[], uuid[], interval),
    taskq.return_task(text, uuid, text, taskq.status, interval),
    taskq.return_tasks(text[], uuid[], text[], taskq.status[]),
    taskq.report_progress(text, uuid, bigint),
    taskq.set_job_item_count(text, uuid, integer)
    TO taskq_worker, taskq_admin;

GRANT EXECUTE ON FUNCTION
    taskq.purge_finished(interval),
    taskq.redrive_tasks(text[]),
    taskq.set_action_policy(text, integer, jsonb)
    TO taskq_admin;

GRANT SELECT ON taskq.action_stats, taskq.tasks_in_progress, taskq.dead_letters, taskq.job_states
    TO taskq_monitor, taskq_admin;
GRANT SELECT ON taskq.job_states TO taskq_producer;
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE
    ON taskq.tasks, taskq.action_grants, taskq.action_policies, taskq.cancelled_workflows,
       taskq.jobs
    TO taskq_admin;
GRANT USAGE, SELECT, UPDATE ON SEQUENCE taskq.task_seq TO taskq_admin;

-- Settings are cluster-wide, like the roles: admins may ALTER SYSTEM the
-- settings that tune the queue (applied at the next reload).  Not
-- taskq.worker_role or taskq.background_worker: those stay superuser's.
GRANT ALTER SYSTEM ON PARAMETER taskq.notify_interval, taskq.worker_naptime, taskq.retention
    TO taskq_admin;
