/*
 * taskq 0.4 -> 0.5: release_task; an error in chord's join names argument "join".  The
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
);
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
CREATE INDEX runs_unfinished_idx ON taskq.runs (definition, version, state) WHERE finished_at IS NULL;
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
    CONSTRAINT saga_steps_run_fkey FOREIGN KEY (run) REFERENCES taskq.runs (id) ON DELETE CASCADE,
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

-- purge_finished keeps the tasks of unfinished runs and deletes finished runs.
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
    DELETE FROM taskq.runs AS r
     WHERE r.finished_at OPERATOR(pg_catalog.<=) (pg_catalog.now() OPERATOR(pg_catalog.-) older_than);
    DELETE FROM taskq.tasks AS t
     WHERE t.status_code OPERATOR(pg_catalog.>=) 'completed'::taskq.status
       AND t.finished_at OPERATOR(pg_catalog.<=) (pg_catalog.now() OPERATOR(pg_catalog.-) older_than)
       AND t.num_signals OPERATOR(pg_catalog.=) 0
       AND NOT EXISTS (SELECT 1 FROM taskq.runs AS r
                        WHERE r.id OPERATOR(pg_catalog.=) t.workflow
                          AND r.finished_at IS NULL);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION taskq.purge_finished(interval) IS
    'delete finished tasks older than older_than that no unfinished task still names; returns how many';
REVOKE ALL ON FUNCTION taskq.purge_finished(interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.purge_finished(interval) TO taskq_admin;
