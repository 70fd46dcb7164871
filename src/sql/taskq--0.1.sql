/*
 * taskq 0.1 install script: the task table, its indexes, the monitoring
 * views and the SQL entry points of the core queue.  The hot paths (insert,
 * claim, return, signal, abort cascade, dependencies, wait) are C functions
 * in the taskq module; the shapes (chain, group, chord) are thin SQL over
 * insert_tasks.
 *
 * Rules for this script (PostgreSQL's rules for extension scripts): no
 * CREATE OR REPLACE and no IF NOT EXISTS, every reference schema-qualified,
 * pg_catalog operators spelled out in views and defaults.
 */

\echo Use "CREATE EXTENSION taskq" to load this file. \quit

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
-- Ready-or-delayed tasks by not_before: the worker finds delayed tasks
-- whose time came, and the next one to come, with a range scan.
CREATE INDEX tasks_not_before_idx ON taskq.tasks (not_before)
    WHERE status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status
      AND num_signals OPERATOR(pg_catalog.=) 0;
-- Finished tasks by age, for retention.
CREATE INDEX tasks_finished_idx ON taskq.tasks (finished_at)
    WHERE status_code OPERATOR(pg_catalog.>=) 'completed'::taskq.status;

SELECT pg_catalog.pg_extension_config_dump('taskq.tasks', '');
SELECT pg_catalog.pg_extension_config_dump('taskq.task_seq', '');

/* ---------------------------------------------------------------------
 * Core functions (C)
 * --------------------------------------------------------------------- */

CREATE FUNCTION taskq.insert_tasks(tasks jsonb)
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_insert_tasks'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION taskq.insert_tasks(jsonb) IS
    'atomically add the tasks of a JSON array; a duplicate id fails the whole call';

CREATE FUNCTION taskq.replace_tasks(tasks jsonb)
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_replace_tasks'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION taskq.replace_tasks(jsonb) IS
    'as insert_tasks, replacing (as though aborted) stored tasks with the same id that nobody owns';

CREATE FUNCTION taskq.own_tasks(actor text, max_tasks integer, actions text[],
                                max_duration interval DEFAULT NULL)
RETURNS TABLE (id text, token uuid, action text, body jsonb, num_tries integer,
               action_deadline timestamptz)
AS 'MODULE_PATHNAME', 'taskq_own_tasks'
LANGUAGE C VOLATILE ROWS 10;
COMMENT ON FUNCTION taskq.own_tasks(text, integer, text[], interval) IS
    'claim up to max_tasks ready tasks of the given actions (NULL: any) for actor';

CREATE FUNCTION taskq.extend_ownership(actor text, ids text[], tokens uuid[],
                                       max_duration interval)
RETURNS TABLE (id text, owned boolean)
AS 'MODULE_PATHNAME', 'taskq_extend_ownership'
LANGUAGE C VOLATILE ROWS 10;
COMMENT ON FUNCTION taskq.extend_ownership(text, text[], uuid[], interval) IS
    'extend the leases still held by actor with these tokens; one row per task';

CREATE FUNCTION taskq.return_task(id text, token uuid, status text, status_code taskq.status)
RETURNS void
AS 'MODULE_PATHNAME', 'taskq_return_task'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION taskq.return_task(text, uuid, text, taskq.status) IS
    'return an owned task as completed, aborted or pending (retry)';

CREATE FUNCTION taskq.return_tasks(ids text[], tokens uuid[], statuses text[],
                                   status_codes taskq.status[])
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_return_tasks'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION taskq.return_tasks(text[], uuid[], text[], taskq.status[]) IS
    'return many owned tasks in one call, all or none';

CREATE FUNCTION taskq.add_dependencies(after_ids text[], run_ids text[])
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_add_dependencies'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION taskq.add_dependencies(text[], text[]) IS
    'atomically make each run_ids[i] wait for after_ids[i]';

CREATE FUNCTION taskq.wait_for_task(id text, timeout interval DEFAULT NULL)
RETURNS taskq.tasks
AS 'MODULE_PATHNAME', 'taskq_wait_for_task'
LANGUAGE C VOLATILE;
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
SET search_path = pg_catalog, pg_temp
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
SET search_path = pg_catalog, pg_temp
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
SET search_path = pg_catalog, pg_temp
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
