/*
 * taskq 0.4 -> 0.5: state machines, sagas and their runs; trigger rules,
 * results and task graphs; release_task; own_tasks gains wait (a claim
 * that sleeps until work is ready); an error in chord's join names argument "join".  The
 * join is inserted in one batch after the tasks, so insert_tasks named it
 * the last task of argument "tasks"; chord now checks the join on its own
 * first (taskq._check_task) and its id against the tasks and the stored
 * tasks.  chord is dropped and created again: an update script never
 * replaces an object in place.
 * Same rules as the install script (test/static/install_scripts.sh); the
 * objects are as in taskq.sql, word for word.
 */
\echo Use "ALTER EXTENSION taskq UPDATE TO '0.5'" to load this file. \quit

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

DROP FUNCTION taskq.chord(jsonb, jsonb, text[]);

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

-- release_task: an owned task given back without counting the try.
CREATE FUNCTION taskq.release_task(id text, token uuid)
RETURNS void
AS 'MODULE_PATHNAME', 'taskq_release_task'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.release_task(text, uuid) IS
    'give an owned task back, ready again at once, without counting the try (a worker shutting down)';
REVOKE ALL ON FUNCTION taskq.release_task(text, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.release_task(text, uuid) TO taskq_worker, taskq_admin;

-- enqueue, enqueue_many: tasks of one action with the same options, from
-- typed arguments rather than a JSON document; taskq makes the ids the
-- caller leaves out (version-7 UUIDs, in time order).
CREATE FUNCTION taskq.enqueue(action text, body jsonb DEFAULT NULL, id text DEFAULT NULL,
    priority integer DEFAULT 0, not_before timestamptz DEFAULT NULL,
    max_tries integer DEFAULT NULL, workflow text DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_enqueue'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.enqueue(text, jsonb, text, integer, timestamptz, integer, text) IS
    'add one task of an action and return its id (made by taskq if not given)';
REVOKE ALL ON FUNCTION taskq.enqueue(text, jsonb, text, integer, timestamptz, integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.enqueue(text, jsonb, text, integer, timestamptz, integer, text) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.enqueue_many(action text, bodies jsonb[], ids text[] DEFAULT NULL,
    priority integer DEFAULT 0, not_before timestamptz DEFAULT NULL,
    max_tries integer DEFAULT NULL, workflow text DEFAULT NULL)
RETURNS text[]
AS 'MODULE_PATHNAME', 'taskq_enqueue_many'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.enqueue_many(text, jsonb[], text[], integer, timestamptz, integer, text) IS
    'atomically add one task of an action per body and return their ids (made by taskq where not given)';
REVOKE ALL ON FUNCTION taskq.enqueue_many(text, jsonb[], text[], integer, timestamptz, integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.enqueue_many(text, jsonb[], text[], integer, timestamptz, integer, text) TO taskq_producer, taskq_admin;

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
    CONSTRAINT runs_pkey PRIMARY KEY (id),
    CONSTRAINT runs_kind_check CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['machine', 'saga']::pg_catalog.text[])),
    CONSTRAINT runs_status_check CHECK (status OPERATOR(pg_catalog.=) ANY
        (ARRAY['running', 'waiting', 'undoing', 'succeeded', 'failed', 'dismal', 'cancelled', 'merged']::pg_catalog.text[]))
) WITH (fillfactor = 70);
COMMENT ON TABLE taskq.runs IS 'one row per run of a state machine or saga';
COMMENT ON COLUMN taskq.runs.id IS 'caller-chosen run id; forks are "<root id>/c<n>"';
COMMENT ON COLUMN taskq.runs.kind IS 'machine or saga';
COMMENT ON COLUMN taskq.runs.status IS 'running, waiting, undoing, succeeded, failed, dismal, cancelled or merged';
COMMENT ON COLUMN taskq.runs.state IS 'machine: the current state; saga: NULL';
COMMENT ON COLUMN taskq.runs.context IS 'machine: its context; saga: its working map';
COMMENT ON COLUMN taskq.runs.inputs IS 'saga: its input parameters (never changed)';
COMMENT ON COLUMN taskq.runs.parent IS 'the run this one was forked from by a continuation, or NULL';
COMMENT ON COLUMN taskq.runs.step_task IS 'internal: machine: the task of the current visit (or its fan-in batch)';
COMMENT ON COLUMN taskq.runs.visits IS 'internal: step tasks made so far (the next is "<id>/<visits + 1>")';
COMMENT ON COLUMN taskq.runs.fork IS 'internal: machine: the run the current visit forked';
COMMENT ON COLUMN taskq.runs.events IS 'internal: machine: events sent before a waiting state took them';
COMMENT ON COLUMN taskq.runs.faults IS 'internal: the debug faults already injected';
CREATE INDEX runs_parent_idx ON taskq.runs (parent) WHERE parent IS NOT NULL;
-- A step rewrites its run's row (state, context, the step's task): with
-- room on the page (fillfactor) and no indexed column changed, that is a
-- HOT update with no new index entries, so the state is not in this index.
CREATE INDEX runs_unfinished_idx ON taskq.runs (definition, version) WHERE finished_at IS NULL;
CREATE INDEX runs_finished_idx ON taskq.runs (finished_at) WHERE finished_at IS NOT NULL;
SELECT pg_catalog.pg_extension_config_dump('taskq.runs', '');
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.runs TO taskq_admin;
GRANT SELECT (id, kind, definition, version, status, state, parent, error, created_at, finished_at)
    ON taskq.runs TO taskq_monitor;

CREATE SEQUENCE taskq.fork_seq;
COMMENT ON SEQUENCE taskq.fork_seq IS 'numbers of the runs forked by continuations';
GRANT USAGE, SELECT, UPDATE ON SEQUENCE taskq.fork_seq TO taskq_admin;

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
           GREATEST(t.created_at, LEAST(t.not_before, COALESCE(t.finished_at, t.not_before))),
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

CREATE FUNCTION taskq.define_machine(name text, definition jsonb)
RETURNS integer
AS 'MODULE_PATHNAME', 'taskq_define_machine_sql'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.define_machine(text, jsonb) IS
    'store a state machine (checked whole) as the next version of name; returns the version';
REVOKE ALL ON FUNCTION taskq.define_machine(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.define_machine(text, jsonb) TO taskq_admin;

CREATE FUNCTION taskq.start_machine(machine text, id text, context jsonb DEFAULT '{}'::jsonb,
                                    debug jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_start_machine_sql'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.start_machine(text, text, jsonb, jsonb) IS
    'start a run of the latest version of a state machine in its initial state; returns the run id';
REVOKE ALL ON FUNCTION taskq.start_machine(text, text, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.start_machine(text, text, jsonb, jsonb) TO taskq_producer, taskq_admin;

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
    'give a failed state machine run another life from the state that failed; returns its state';
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

CREATE FUNCTION taskq.define_saga(name text, definition jsonb)
RETURNS integer
AS 'MODULE_PATHNAME', 'taskq_define_saga_sql'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.define_saga(text, jsonb) IS
    'store a saga (checked whole) as the next version of name; returns the version';
REVOKE ALL ON FUNCTION taskq.define_saga(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.define_saga(text, jsonb) TO taskq_admin;

CREATE FUNCTION taskq.start_saga(saga text, id text, inputs jsonb DEFAULT '{}'::jsonb,
                                 debug jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_start_saga_sql'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.start_saga(text, text, jsonb, jsonb) IS
    'start a run of the latest version of a saga: the steps with no predecessor become ready; returns the run id';
REVOKE ALL ON FUNCTION taskq.start_saga(text, text, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.start_saga(text, text, jsonb, jsonb) TO taskq_producer, taskq_admin;

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

/* =====================================================================
 * DAGs: trigger rules on dependency edges, results passed to successors,
 * the picture of a task graph; monitoring tells skipped tasks apart.
 * ===================================================================== */

-- When a task with predecessors may run (its "trigger"): the rule belongs
-- to the successor and is settled by its counts, in the transaction that
-- finishes the deciding predecessor.
CREATE TYPE taskq.trigger_rule AS ENUM ('all_success', 'all_done', 'one_failed', 'one_success');
COMMENT ON TYPE taskq.trigger_rule IS
    'when a task with predecessors runs: all_success, all_done, one_failed, one_success';

ALTER TABLE taskq.tasks
    ADD COLUMN "trigger" taskq.trigger_rule NOT NULL DEFAULT 'all_success'::taskq.trigger_rule,
    ADD COLUMN num_completed integer NOT NULL DEFAULT 0,
    ADD COLUMN num_failed integer NOT NULL DEFAULT 0,
    ADD COLUMN result jsonb;
COMMENT ON COLUMN taskq.tasks."trigger" IS 'when the task runs, from its predecessors'' outcomes: all_success, all_done, one_failed, one_success';
COMMENT ON COLUMN taskq.tasks.num_completed IS 'predecessors whose completion was counted';
COMMENT ON COLUMN taskq.tasks.num_failed IS 'predecessors whose abort was counted';
COMMENT ON COLUMN taskq.tasks.result IS 'what the last return gave as result (at most 1 MiB), for wait_for_task and the successors';

-- A task's predecessors, through their successors (predecessor_results).
-- No claim or return changes to_signal_after: their updates stay HOT.
CREATE INDEX tasks_successors_idx ON taskq.tasks USING gin (to_signal_after)
    WHERE to_signal_after IS NOT NULL;

DROP FUNCTION taskq.return_task(text, uuid, text, taskq.status, interval);

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

DROP FUNCTION taskq.return_tasks(text[], uuid[], text[], taskq.status[]);

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

DROP FUNCTION taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval);

CREATE FUNCTION taskq.return_and_own(ids text[], tokens uuid[], statuses text[],
                                     status_codes taskq.status[], actor text,
                                     max_tasks integer, actions text[],
                                     max_duration interval DEFAULT NULL,
                                     results jsonb[] DEFAULT NULL)
RETURNS TABLE (id text, token uuid, action text, body jsonb, num_tries integer,
               action_deadline timestamptz)
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
GRANT EXECUTE ON FUNCTION taskq.task_graph(text, text) TO taskq_producer, taskq_admin;

-- purge_finished keeps the tasks of unfinished runs, deletes finished runs,
-- and keeps what trigger rules and results still need.
DROP FUNCTION taskq.purge_finished(interval);

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
-- Graphs of definitions and runs, in DOT (Graphviz) or Mermaid.
-- ---------------------------------------------------------------------

-- The statistics of each state of a machine and each step of a saga, per
-- version: runs in it now, and over the tasks retention keeps, how often it
-- was entered, succeeded, the tries that failed, and the seconds from ready
-- to done of its successful visits.
CREATE VIEW taskq.state_stats AS
WITH states AS (
    SELECT d.name AS definition, d.kind, d.version,
           s.value OPERATOR(pg_catalog.->>) 'name' AS state, s.ordinality AS ord
      FROM taskq.definitions AS d,
           pg_catalog.jsonb_array_elements(d.definition OPERATOR(pg_catalog.->)
               CASE d.kind WHEN 'machine' THEN 'states' ELSE 'steps' END) WITH ORDINALITY AS s
), visits AS (
    SELECT r.definition, r.version,
           COALESCE(t.body OPERATOR(pg_catalog.->>) 'state', t.body OPERATOR(pg_catalog.->>) 'step') AS state,
           t.status_code, t.num_tries,
           pg_catalog.date_part('epoch', t.finished_at OPERATOR(pg_catalog.-)
                                GREATEST(t.created_at, t.not_before)) AS seconds
      FROM taskq.runs AS r
      JOIN taskq.tasks AS t ON t.workflow OPERATOR(pg_catalog.=) r.id
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

-- The nodes and edges of a definition (version v), with live figures, as
-- rows: kind 'node' (key, label, attributes) or 'edge' (key -> key2, label).
CREATE FUNCTION taskq._definition_parts(def jsonb, kind text, name text, v integer)
RETURNS TABLE (part text, key text, key2 text, label text, initial boolean, final boolean,
               waiting boolean, ord bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT 'node', s.value OPERATOR(pg_catalog.->>) 'name', NULL::text,
           (s.value OPERATOR(pg_catalog.->>) 'name')
           OPERATOR(pg_catalog.||) CASE WHEN kind OPERATOR(pg_catalog.=) 'machine' THEN
               E'\n' OPERATOR(pg_catalog.||) COALESCE('action: ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->>) 'action'), 'waits for an event')
               OPERATOR(pg_catalog.||) CASE WHEN (s.value OPERATOR(pg_catalog.->>) 'continuation')::boolean THEN E'\ncontinuation' ELSE '' END
               OPERATOR(pg_catalog.||) COALESCE(E'\nfan-in ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->>) 'fan_in') OPERATOR(pg_catalog.||) ' s', '')
             ELSE
               E'\ndo: ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->>) 'do')
               OPERATOR(pg_catalog.||) E'\nundo: ' OPERATOR(pg_catalog.||) COALESCE(s.value OPERATOR(pg_catalog.->>) 'undo', '-')
               OPERATOR(pg_catalog.||) COALESCE(E'\ntrigger: ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->>) 'trigger'), '')
             END
           OPERATOR(pg_catalog.||) COALESCE((SELECT E'\nnow ' OPERATOR(pg_catalog.||) st.in_state OPERATOR(pg_catalog.||)
                                                    ', entered ' OPERATOR(pg_catalog.||) st.entered OPERATOR(pg_catalog.||)
                                                    ', ok ' OPERATOR(pg_catalog.||) st.succeeded OPERATOR(pg_catalog.||)
                                                    ', failed tries ' OPERATOR(pg_catalog.||) st.failed_tries OPERATOR(pg_catalog.||)
                                                    COALESCE(', avg ' OPERATOR(pg_catalog.||) st.avg_seconds OPERATOR(pg_catalog.||) ' s', '')
                                               FROM taskq.state_stats AS st
                                              WHERE st.definition OPERATOR(pg_catalog.=) name
                                                AND st.version OPERATOR(pg_catalog.=) v
                                                AND st.state OPERATOR(pg_catalog.=) (s.value OPERATOR(pg_catalog.->>) 'name')), ''),
           COALESCE((s.value OPERATOR(pg_catalog.->>) 'initial')::boolean, false),
           COALESCE((s.value OPERATOR(pg_catalog.->>) 'final')::boolean, false),
           kind OPERATOR(pg_catalog.=) 'machine' AND (s.value OPERATOR(pg_catalog.->) 'action') OPERATOR(pg_catalog.=) 'null'::jsonb,
           s.ordinality
      FROM pg_catalog.jsonb_array_elements(def OPERATOR(pg_catalog.->)
               CASE kind WHEN 'machine' THEN 'states' ELSE 'steps' END) WITH ORDINALITY AS s
    UNION ALL
    SELECT 'edge', s.value OPERATOR(pg_catalog.->>) 'name', t.value OPERATOR(pg_catalog.->>) 'to',
           t.value OPERATOR(pg_catalog.->>) 'event', NULL, NULL, NULL, s.ordinality * 1000 OPERATOR(pg_catalog.+) t.ordinality
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
    RETURN taskq._draw(name OPERATOR(pg_catalog.||) ' v' OPERATOR(pg_catalog.||) d.v, format,
        d.kind OPERATOR(pg_catalog.=) 'machine',
        (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('key', p.key, 'label', p.label,
                    'initial', p.initial, 'final', p.final, 'waiting', p.waiting) ORDER BY p.ord), '[]')
           FROM taskq._definition_parts(d.def, d.kind, name, d.v) AS p WHERE p.part OPERATOR(pg_catalog.=) 'node'),
        (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('key', p.key, 'key2', p.key2,
                    'label', p.label) ORDER BY p.ord), '[]')
           FROM taskq._definition_parts(d.def, d.kind, name, d.v) AS p WHERE p.part OPERATOR(pg_catalog.=) 'edge'));
END
$$;
COMMENT ON FUNCTION taskq.definition_graph(text, text, integer) IS
    'a state machine or saga (latest version, or version) as a DOT or Mermaid graph, with live figures';
REVOKE ALL ON FUNCTION taskq.definition_graph(text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.definition_graph(text, text, integer) TO taskq_producer, taskq_admin;

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
        ), visited AS (
            SELECT state AS name FROM steps UNION SELECT src FROM moves UNION SELECT dst FROM moves
            UNION SELECT r.state WHERE r.state IS NOT NULL
        )
        SELECT (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                    'key', v.name,
                    'label', v.name OPERATOR(pg_catalog.||) COALESCE(E'\nvisits: ' OPERATOR(pg_catalog.||)
                        NULLIF((SELECT pg_catalog.count(*) FROM steps AS s WHERE s.state OPERATOR(pg_catalog.=) v.name), 0), ''),
                    'initial', COALESCE((st.st OPERATOR(pg_catalog.->>) 'initial')::boolean, false),
                    'final', COALESCE((st.st OPERATOR(pg_catalog.->>) 'final')::boolean, false),
                    'waiting', (st.st OPERATOR(pg_catalog.->) 'action') OPERATOR(pg_catalog.=) 'null'::jsonb,
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
               'label', p.key OPERATOR(pg_catalog.||) E'\ndo: ' OPERATOR(pg_catalog.||) COALESCE(x.do_status, 'not started')
                        OPERATOR(pg_catalog.||) COALESCE(E'\nundo: ' OPERATOR(pg_catalog.||) x.undo_status, ''),
               'fill', CASE WHEN x.undo_status OPERATOR(pg_catalog.=) 'completed' THEN 'khaki'
                            WHEN x.undo_status OPERATOR(pg_catalog.=) 'aborted' THEN 'red'
                            WHEN x.undo_status IS NOT NULL THEN 'orange'
                            WHEN x.do_status OPERATOR(pg_catalog.=) 'completed' THEN 'palegreen'
                            WHEN x.do_status OPERATOR(pg_catalog.=) 'aborted' THEN 'tomato'
                            WHEN x.do_status IS NOT NULL THEN 'lightblue' END) ORDER BY p.ord), '[]')
      INTO nodes
      FROM taskq._definition_parts(def, 'saga', r.definition, r.version) AS p
      LEFT JOIN LATERAL (
          SELECT (SELECT t.status_code::text FROM taskq.tasks AS t
                   WHERE t.workflow OPERATOR(pg_catalog.=) r.id AND t.body OPERATOR(pg_catalog.->>) 'step' OPERATOR(pg_catalog.=) p.key
                     AND t.body OPERATOR(pg_catalog.->>) 'direction' OPERATOR(pg_catalog.=) 'do' ORDER BY t.seq DESC LIMIT 1) AS do_status,
                 (SELECT t.status_code::text FROM taskq.tasks AS t
                   WHERE t.workflow OPERATOR(pg_catalog.=) r.id AND t.body OPERATOR(pg_catalog.->>) 'step' OPERATOR(pg_catalog.=) p.key
                     AND t.body OPERATOR(pg_catalog.->>) 'direction' OPERATOR(pg_catalog.=) 'undo' ORDER BY t.seq DESC LIMIT 1) AS undo_status
      ) AS x ON true
     WHERE p.part OPERATOR(pg_catalog.=) 'node';
    SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('key', p.key, 'key2', p.key2) ORDER BY p.ord), '[]')
      INTO edges
      FROM taskq._definition_parts(def, 'saga', r.definition, r.version) AS p WHERE p.part OPERATOR(pg_catalog.=) 'edge';
    RETURN taskq._draw('run ' OPERATOR(pg_catalog.||) r.id OPERATOR(pg_catalog.||) ' (' OPERATOR(pg_catalog.||) r.status
                       OPERATOR(pg_catalog.||) ')', format, false, nodes, edges);
END
$$;
COMMENT ON FUNCTION taskq.run_graph(text, text) IS
    'one run as a DOT or Mermaid graph: the path a machine took, or a saga''s steps coloured by do and undo';
REVOKE ALL ON FUNCTION taskq.run_graph(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.run_graph(text, text) TO taskq_producer, taskq_admin;
-- own_tasks gains wait: a claim that sleeps until work of its actions is ready.
DROP FUNCTION taskq.own_tasks(text, integer, text[], interval);

CREATE FUNCTION taskq.own_tasks(actor text, max_tasks integer, actions text[],
                                max_duration interval DEFAULT NULL,
                                wait interval DEFAULT NULL)
RETURNS TABLE (id text, token uuid, action text, body jsonb, num_tries integer,
               action_deadline timestamptz)
AS 'MODULE_PATHNAME', 'taskq_own_tasks'
LANGUAGE C VOLATILE ROWS 10
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.own_tasks(text, integer, text[], interval, interval) IS
    'claim up to max_tasks ready tasks of the given actions (NULL: any) for actor; with wait, sleep until there are some or the wait passes';
REVOKE ALL ON FUNCTION taskq.own_tasks(text, integer, text[], interval, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.own_tasks(text, integer, text[], interval, interval) TO taskq_worker, taskq_admin;

DROP VIEW taskq.action_stats;

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

DROP VIEW taskq.dead_letters;

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

-- Each session keeps the default max_tries it looked up per action; every
-- write of the table tells all sessions to drop them.
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
ALTER TABLE taskq.action_policies ENABLE ALWAYS TRIGGER action_policies_written;
ALTER TABLE taskq.action_policies ENABLE ALWAYS TRIGGER action_policies_truncated;

-- The limits' cache trigger: row triggers enabled ALWAYS, so that writes
-- under session_replication_role = replica and by logical replication's
-- apply worker (row triggers only) clear the caches too.
DROP TRIGGER action_grants_changed ON taskq.action_grants;
CREATE TRIGGER action_grants_changed
    AFTER INSERT OR UPDATE OR DELETE ON taskq.action_grants
    FOR EACH ROW EXECUTE FUNCTION taskq._action_grants_changed();
CREATE TRIGGER action_grants_truncated
    AFTER TRUNCATE ON taskq.action_grants
    FOR EACH STATEMENT EXECUTE FUNCTION taskq._action_grants_changed();
ALTER TABLE taskq.action_grants ENABLE ALWAYS TRIGGER action_grants_changed;
ALTER TABLE taskq.action_grants ENABLE ALWAYS TRIGGER action_grants_truncated;

-- One ready index: claims of several actions (or of any) merge the walks of
-- each action's entries of tasks_ready_action_idx, so the index of all
-- actions in claim order is dropped (one index entry less per enqueue).
DROP INDEX taskq.tasks_ready_idx;

-- A key of the ready index repeats only for the versions of one task (seq
-- is unique per task): no deduplication pass on its full leaf pages.
ALTER INDEX taskq.tasks_ready_action_idx SET (deduplicate_items = off);
