--
-- Sagas: definitions and their checks, runs, return_step (success, retry,
-- fatal, wait, rerun), resume_run, the plain returns, undo in reverse
-- topological order, dismal failure, cancel, fault injection, and every
-- failure point of a linear saga and of a DAG.
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

CREATE FUNCTION pg_temp.tok(p_id text) RETURNS uuid
LANGUAGE sql AS $$ SELECT k.token FROM public.tokens AS k WHERE k.id = p_id $$;
CREATE FUNCTION pg_temp.rs(p_id text, p_result text, p_working jsonb DEFAULT NULL,
                           p_error text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM taskq.return_step(p_id, pg_temp.tok(p_id), p_result, p_working, p_error);
    RETURN p_result;
END
$$;
CREATE FUNCTION pg_temp.run(p_id text)
RETURNS TABLE (status text, context jsonb, error text, finished boolean)
LANGUAGE sql AS $$
    SELECT r.status, r.context, r.error, r.finished_at IS NOT NULL
      FROM taskq.runs AS r WHERE r.id = p_id
$$;
-- The steps of a run: do and undo, task and state.
CREATE FUNCTION pg_temp.steps(p_id text)
RETURNS TABLE (step text, do_task text, do_state text, undo_task text, undo_state text)
LANGUAGE sql AS $$
    SELECT s.step, s.do_task, s.do_state, s.undo_task, s.undo_state
      FROM taskq.saga_steps AS s WHERE s.run = p_id ORDER BY s.do_task COLLATE "C"
$$;
CREATE FUNCTION pg_temp.tasks(p_id text)
RETURNS TABLE (id text, action text, step text, direction text, status_code taskq.status,
               status text, num_tries int)
LANGUAGE sql AS $$
    SELECT t.id, t.action, t.body->>'step', t.body->>'direction', t.status_code, t.status,
           t.num_tries
      FROM taskq.tasks AS t WHERE t.workflow = p_id ORDER BY t.seq
$$;

-- ---------------------------------------------------------------
-- Definitions: every error names the step (22023)
-- ---------------------------------------------------------------
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '[]')$$) AS not_object;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{}')$$) AS no_steps_key;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": []}')$$) AS no_steps;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [1]}')$$) AS step_not_object;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"do": "a"}]}')$$) AS no_name;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A"}]}')$$) AS no_do;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": ""}]}')$$) AS empty_do;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a", "undo": 3}]}')$$) AS undo_not_string;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a"}, {"name": "A", "do": "b"}]}')$$) AS duplicate_step;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a", "after": ["Z"]}]}')$$) AS unknown_after;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a", "after": "B"}]}')$$) AS after_not_array;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a", "after": []},
    {"name": "B", "do": "b", "after": ["A", "A"]}]}')$$) AS after_twice;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a", "after": ["A"]}]}')$$) AS self_cycle;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [
    {"name": "A", "do": "a", "after": ["C"]}, {"name": "B", "do": "b"}, {"name": "C", "do": "c"},
    {"name": "D", "do": "d"}]}')$$) AS cycle;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a"},
    {"name": "B", "do": "b", "trigger": "all_done"}]}')$$) AS trigger_all_done;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a"},
    {"name": "B", "do": "b", "trigger": "one_failed"}]}')$$) AS trigger_one_failed;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a", "trigger": "sometimes"}]}')$$) AS trigger_unknown;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a", "colour": "red"}]}')$$) AS unknown_step_key;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a"}], "owner": "me"}')$$) AS unknown_saga_key;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a", "max_tries": 0}]}')$$) AS max_tries_zero;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a", "undo_max_tries": 1.5}]}')$$) AS undo_max_tries_fraction;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a", "retry": {"delay": "soon"}}]}')$$) AS bad_retry;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a"}], "undo_retry": {"delay": "soon"}}')$$) AS bad_undo_retry;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "A", "do": "a"}], "undo_retry": 5}')$$) AS undo_retry_not_object;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "", "do": "a"}]}')$$) AS empty_name;
SELECT public.expect_error(format($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "%s", "do": "a"}]}')$$, repeat('n', 64))) AS long_name;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "a\u0001", "do": "a"}]}')$$) AS control_name;
SELECT public.expect_error($$SELECT taskq.define_saga('', '{"steps": [{"name": "A", "do": "a"}]}')$$) AS empty_saga_name;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', NULL)$$) AS null_definition;
SELECT count(*) AS stored FROM taskq.definitions WHERE name = 'bad';
-- one namespace with state machines ('order' is one)
SELECT public.expect_error($$SELECT taskq.define_saga('order', '{"steps": [{"name": "A", "do": "a"}]}')$$) AS machine_name;

-- The contract's example: a DAG; versions
SELECT taskq.define_saga('ws', '{"steps": [
   {"name": "save-metadata", "do": "save-metadata", "undo": "delete-metadata"},
   {"name": "create-fs",     "do": "create-fs",     "undo": "delete-fs",  "after": []},
   {"name": "create-db",     "do": "create-db",     "undo": "drop-db",    "after": []},
   {"name": "bootstrap",     "do": "bootstrap",     "undo": null,         "after": ["create-db"]},
   {"name": "mark-running",  "do": "mark-running",
    "after": ["save-metadata", "create-fs", "bootstrap"]}
 ],
 "max_tries": 5, "retry": {"delay": "0 s"},
 "undo_max_tries": null, "undo_retry": {"delay": "0 s", "factor": 2, "max_delay": "5 min"}}') AS v1;
SELECT taskq.define_saga('ws', (SELECT definition FROM taskq.definitions WHERE name = 'ws')) AS v2_identical;
SELECT name, version, kind FROM taskq.definitions WHERE name = 'ws' ORDER BY version;
SELECT public.expect_error($$SELECT taskq.define_machine('ws', '{"states": [{"name": "A", "action": "a", "initial": true, "final": true}]}')$$) AS saga_name;
SELECT public.expect_error($$SELECT taskq.start_machine('ws', 'm-ws')$$) AS start_machine_of_saga;

-- ---------------------------------------------------------------
-- start_saga
-- ---------------------------------------------------------------
SELECT public.expect_error($$SELECT taskq.start_saga('nope', 'x')$$) AS unknown_saga;
SELECT public.expect_error($$SELECT taskq.start_saga('order', 'x')$$) AS machine_not_saga;
SELECT public.expect_error($$SELECT taskq.start_saga('ws', 'a/b')$$) AS slash_in_id;
SELECT public.expect_error($$SELECT taskq.start_saga('ws', 'x', '[1]')$$) AS inputs_not_object;
SELECT public.expect_error($$SELECT taskq.start_saga('ws', 'x', NULL)$$) AS inputs_null;
SELECT public.expect_error($$SELECT taskq.start_saga('ws', 'x', '{}', '{"sometimes": true}')$$) AS unknown_debug;
SELECT public.expect_error($$SELECT taskq.start_saga('ws', 'x', '{}', '{"fail_at_steps": {"nope": "fatal"}}')$$) AS debug_unknown_step;
SELECT public.expect_error($$SELECT taskq.start_saga('ws', 'x', '{}', '{"undo_fail_at_steps": {"create-fs": "later"}}')$$) AS debug_bad_failure;
SELECT public.expect_error($$SELECT taskq.start_saga('ws', 'x', '{}', '{"last_step_failure": 1}')$$) AS debug_not_bool;
SELECT taskq.start_saga('ws', 'w1', '{"owner": "ann"}');
SELECT public.expect_error($$SELECT taskq.start_saga('ws', 'w1')$$) AS duplicate_run;
SELECT public.expect_error($$SELECT taskq.start_saga('ws', 'job-1')$$) AS clash_with_job;
SELECT public.expect_error($$SELECT taskq.start_saga('ws', 'o2')$$) AS clash_with_machine_run;
SELECT id, kind, definition, version, status, state, context, inputs, parent FROM taskq.runs WHERE id = 'w1';
-- the steps with no predecessor are ready; the others have no task yet
SELECT * FROM pg_temp.tasks('w1');
SELECT * FROM pg_temp.steps('w1');
SELECT body FROM taskq.tasks WHERE id = 'w1/1';

-- ---------------------------------------------------------------
-- return_step: success merges the working map; the join waits for all
-- ---------------------------------------------------------------
SELECT n, id, action FROM public.own('w', 3, '{save-metadata,create-fs,create-db}');
SELECT public.expect_error($$SELECT pg_temp.rs('w1/1', 'done')$$) AS unknown_result;
SELECT public.expect_error($$SELECT pg_temp.rs('w1/1', NULL)$$) AS null_result;
SELECT public.expect_error($$SELECT pg_temp.rs('w1/1', 'success', '[1]')$$) AS working_not_object;
SELECT public.expect_error($$SELECT taskq.return_step('w1/1', gen_random_uuid(), 'success')$$) AS stale_token;
SELECT public.expect_error($$SELECT taskq.return_step('w1/1', NULL, 'success')$$) AS null_token;
SELECT public.expect_error($$SELECT taskq.return_step('w1/99', gen_random_uuid(), 'success')$$) AS unknown_step_task;
SELECT status_code FROM taskq.tasks WHERE id = 'w1/1';
SELECT pg_temp.rs('w1/1', 'success', '{"meta": 1}');
SELECT pg_temp.rs('w1/1', 'success', '{"meta": 1}') AS repeated;
SELECT public.expect_error($$SELECT pg_temp.rs('w1/1', 'rerun')$$) AS other_result_after;
SELECT public.expect_error($$SELECT pg_temp.rs('w1/1', 'fatal')$$) AS fatal_after_success;
SELECT pg_temp.rs('w1/3', 'success', '{"db": "d1"}');
-- bootstrap (after create-db) is ready with the map as of now
SELECT id, body->>'step' AS step, body->'working' AS working FROM taskq.tasks WHERE id = 'w1/4';
SELECT * FROM pg_temp.run('w1');
SELECT n, id FROM public.own('w', 1, '{bootstrap}');
SELECT pg_temp.rs('w1/4', 'success', '{"boot": true, "db": "d1-booted"}');
-- mark-running still waits for create-fs
SELECT count(*) AS mark_running FROM taskq.tasks WHERE action = 'mark-running';
SELECT pg_temp.rs('w1/2', 'success', '{"fs": "/w1"}');
SELECT id, body->'working' AS working FROM taskq.tasks WHERE action = 'mark-running';
SELECT n, id FROM public.own('w', 1, '{mark-running}');
SELECT pg_temp.rs('w1/5', 'success');
SELECT * FROM pg_temp.run('w1');
SELECT * FROM pg_temp.steps('w1');
SELECT seq, step, direction, task_id, status_code, outcome, num_tries FROM taskq.run_steps('w1');

-- the core's calls on saga steps
SELECT taskq.start_saga('ws', 'w2');
SELECT public.expect_error($$SELECT taskq.cancel_tasks('{w2/1}')$$) AS cancel_tasks_step;
SELECT public.expect_error($$SELECT taskq.replace_tasks('[{"id": "w2/1", "action": "x"}]')$$) AS replace_step;
SELECT public.expect_error($$SELECT taskq.add_dependencies('{w1/1}', '{w2/1}')$$) AS add_dependencies_step;
-- transition is for machines, return_step for sagas (55000)
SELECT n, id FROM public.own('w', 1, '{save-metadata}');
SELECT public.expect_error($$SELECT taskq.transition('w2/1', pg_temp.tok('w2/1'), 'ok')$$) AS transition_on_saga;
SELECT taskq.start_machine('order', 'm-saga');
SELECT n, id FROM public.own('w', 1, '{check}');
SELECT public.expect_error($$SELECT pg_temp.rs('m-saga/1', 'success')$$) AS return_step_on_machine;
SELECT taskq.insert_tasks('[{"id": "plain-s", "action": "p"}]');
SELECT n, id FROM public.own('w', 1, '{p}');
SELECT public.expect_error($$SELECT pg_temp.rs('plain-s', 'success')$$) AS plain_task;
SELECT public.ret('plain-s', 'completed');
SELECT taskq.cancel_run('m-saga');

-- ---------------------------------------------------------------
-- retry keeps the working map; fatal switches to undo
-- ---------------------------------------------------------------
SELECT pg_temp.rs('w2/1', 'retry', '{"dropped": true}', 'disk busy');
SELECT status_code, status, num_tries FROM taskq.tasks WHERE id = 'w2/1';
SELECT n, id, num_tries, body->'working' AS working FROM public.own('w', 1, '{save-metadata}');
SELECT pg_temp.rs('w2/1', 'success', '{"meta": 2}');
SELECT n, id, action FROM public.own('w', 2, '{create-fs,create-db}');
SELECT pg_temp.rs('w2/3', 'success', '{"db": "d2"}');
-- create-fs fails: nothing new starts (bootstrap, ready, unclaimed, is
-- skipped); every started step is undone, the failed one too, each once
SELECT pg_temp.rs('w2/2', 'fatal', '{"fs_half": "/w2"}', 'quota exceeded');
SELECT * FROM pg_temp.run('w2');
SELECT * FROM pg_temp.tasks('w2');
SELECT * FROM pg_temp.steps('w2');
-- the undo body: the map persisted at the switch (with the failing step's
-- working) and the error
SELECT body FROM taskq.tasks WHERE workflow = 'w2' AND body->>'direction' = 'undo' ORDER BY seq LIMIT 1;
SELECT n, id, action FROM public.own('w', 5);
-- undo steps accept success, retry, fatal only
SELECT public.expect_error($$SELECT pg_temp.rs('w2/5', 'wait')$$) AS undo_wait;
SELECT public.expect_error($$SELECT pg_temp.rs('w2/5', 'rerun')$$) AS undo_rerun;
SELECT pg_temp.rs('w2/5', 'retry', NULL, 'not yet');
SELECT pg_temp.rs('w2/6', 'success', '{"meta_deleted": true}');
SELECT pg_temp.rs('w2/7', 'success');
SELECT n, id, action, num_tries FROM public.own('w', 5);
SELECT pg_temp.rs('w2/5', 'success');
SELECT * FROM pg_temp.run('w2');
SELECT seq, step, direction, status_code, outcome, num_tries, error FROM taskq.run_steps('w2');
SELECT public.expect_error($$SELECT taskq.cancel_run('w2')$$) AS cancel_failed_run;

-- mark-running and bootstrap have no undo: they count as undone at once,
-- and the undos of the three steps before them are ready together
SELECT taskq.start_saga('ws', 'w3');
SELECT n, id FROM public.own('w', 3);
SELECT pg_temp.rs('w3/1', 'success'), pg_temp.rs('w3/2', 'success'), pg_temp.rs('w3/3', 'success');
SELECT n, id FROM public.own('w', 1);
SELECT pg_temp.rs('w3/4', 'success');
SELECT n, id FROM public.own('w', 1);
SELECT pg_temp.rs('w3/5', 'fatal', NULL, 'no capacity');
SELECT * FROM pg_temp.steps('w3');
SELECT n, id, action FROM public.own('w', 5);
SELECT pg_temp.rs('w3/6', 'success');
SELECT * FROM pg_temp.steps('w3');
SELECT n, id, action FROM public.own('w', 5);
SELECT pg_temp.rs(id, 'success') FROM taskq.tasks WHERE workflow = 'w3' AND status_code = 'in_progress' ORDER BY id;
SELECT * FROM pg_temp.run('w3');

-- ---------------------------------------------------------------
-- retries run out: the saga fails as with fatal
-- ---------------------------------------------------------------
SELECT taskq.define_saga('pair', '{"steps": [
    {"name": "one", "do": "p-one", "undo": "u-one", "undo_max_tries": 2},
    {"name": "two", "do": "p-two", "undo": "u-two", "max_tries": 2}]}');
SELECT taskq.start_saga('pair', 'p1');
SELECT n, id FROM public.own('w', 1, '{p-one}');
SELECT pg_temp.rs('p1/1', 'success', '{"a": 1}');
SELECT n, id FROM public.own('w', 1, '{p-two}');
SELECT pg_temp.rs('p1/2', 'retry', '{"b": 1}');
SELECT n, id, num_tries FROM public.own('w', 1, '{p-two}');
SELECT pg_temp.rs('p1/2', 'retry', '{"b": 2}', 'gave up');
SELECT * FROM pg_temp.run('p1');
SELECT * FROM pg_temp.tasks('p1');
-- a repeat of the last retry is a no-op (the queue aborted the task)
SELECT pg_temp.rs('p1/2', 'retry', NULL, 'gave up') AS repeated_retry;

-- ---------------------------------------------------------------
-- Dismal failure: an undo that gives up (fatal, or out of tries)
-- ---------------------------------------------------------------
SELECT n, id FROM public.own('w', 1, '{u-two}');
SELECT pg_temp.rs('p1/3', 'success');
SELECT n, id FROM public.own('w', 1, '{u-one}');
SELECT pg_temp.rs('p1/4', 'retry');
SELECT n, id, num_tries FROM public.own('w', 1, '{u-one}');
SELECT pg_temp.rs('p1/4', 'retry', NULL, 'bucket locked');
SELECT * FROM pg_temp.run('p1');
SELECT * FROM pg_temp.steps('p1');
SELECT taskq.start_saga('pair', 'p2');
SELECT n, id FROM public.own('w', 1, '{p-one}');
SELECT pg_temp.rs('p2/1', 'success');
SELECT n, id FROM public.own('w', 1, '{p-two}');
SELECT pg_temp.rs('p2/2', 'fatal');
SELECT n, id FROM public.own('w', 1, '{u-two}');
SELECT pg_temp.rs('p2/3', 'fatal', NULL, 'volume gone');
SELECT * FROM pg_temp.run('p2');
-- no further undo started
SELECT * FROM pg_temp.steps('p2');
SELECT count(*) AS ready_undos FROM taskq.tasks WHERE workflow = 'p2' AND status_code = 'pending';

-- ---------------------------------------------------------------
-- wait and resume_run; rerun
-- ---------------------------------------------------------------
SELECT taskq.start_saga('pair', 'p3');
SELECT n, id FROM public.own('w', 1, '{p-one}');
SELECT public.expect_error($$SELECT taskq.resume_run('p3')$$) AS resume_not_waiting;
SELECT pg_temp.rs('p3/1', 'wait', '{"approval": "asked"}');
SELECT * FROM pg_temp.run('p3');
SELECT count(*) AS two_not_ready FROM taskq.tasks WHERE workflow = 'p3' AND action = 'p-two';
SELECT status FROM taskq.wait_for_run('p3', '0 s');
SELECT public.expect_error($$SELECT taskq.resume_run('p3', '"yes"')$$) AS resume_working_not_object;
SELECT public.expect_error($$SELECT taskq.resume_run('nope')$$) AS resume_unknown;
SELECT public.expect_error($$SELECT taskq.resume_run('o2')$$) AS resume_machine;
SELECT taskq.resume_run('p3', '{"approval": "granted"}');
SELECT * FROM pg_temp.run('p3');
SELECT id, body->'working' AS working FROM taskq.tasks WHERE workflow = 'p3' AND action = 'p-two';
SELECT n, id FROM public.own('w', 1, '{p-two}');
-- rerun: the same step again as a new task, tries counted afresh
SELECT pg_temp.rs('p3/2', 'retry');
SELECT n, id, num_tries FROM public.own('w', 1, '{p-two}');
SELECT pg_temp.rs('p3/2', 'rerun', '{"polls": 1}');
SELECT * FROM pg_temp.tasks('p3');
SELECT n, id, num_tries, body->'working' AS working FROM public.own('w', 1, '{p-two}');
SELECT pg_temp.rs('p3/3', 'success', '{"polls": 2}');
SELECT * FROM pg_temp.run('p3');
SELECT pg_temp.rs('p3/2', 'rerun') AS repeated_rerun;
SELECT public.expect_error($$SELECT pg_temp.rs('p3/2', 'success')$$) AS success_after_rerun;

-- ---------------------------------------------------------------
-- The plain returns: completed is success, pending retry, aborted fatal
-- ---------------------------------------------------------------
SELECT taskq.start_saga('pair', 'p4');
SELECT n, id FROM public.own('w', 1, '{p-one}');
SELECT public.ret('p4/1', 'pending', 'later');
SELECT status_code, status, num_tries FROM taskq.tasks WHERE id = 'p4/1';
SELECT n, id FROM public.own('w', 1, '{p-one}');
SELECT taskq.release_task('p4/1', pg_temp.tok('p4/1'));
SELECT status_code, num_tries FROM taskq.tasks WHERE id = 'p4/1';
SELECT n, id FROM public.own('w', 1, '{p-one}');
SELECT public.ret('p4/1', 'completed', 'all good');
SELECT n, id FROM public.own('w', 1, '{p-two}');
SELECT taskq.return_tasks(ARRAY['p4/2'], ARRAY[pg_temp.tok('p4/2')], ARRAY['broken'], ARRAY['aborted'::taskq.status]);
SELECT * FROM pg_temp.run('p4');
SELECT * FROM pg_temp.tasks('p4');
SELECT n, id, action FROM public.own('w', 2);
SELECT count(*) AS owned FROM taskq.return_and_own(ARRAY['p4/3'], ARRAY[pg_temp.tok('p4/3')], ARRAY[NULL], ARRAY['completed'::taskq.status], 'w', 0, NULL);
SELECT n, id, action FROM public.own('w', 2);
SELECT public.ret('p4/4', 'completed');
SELECT * FROM pg_temp.run('p4');

-- ---------------------------------------------------------------
-- A late success: a step in progress at the switch finishes, and is undone
-- ---------------------------------------------------------------
SELECT taskq.define_saga('fan', '{"steps": [
    {"name": "a", "do": "f-a", "undo": "fu-a", "after": []},
    {"name": "b", "do": "f-b", "undo": "fu-b", "after": []},
    {"name": "c", "do": "f-c", "undo": "fu-c", "after": []},
    {"name": "d", "do": "f-d", "undo": "fu-d", "after": ["a", "b", "c"], "trigger": "one_success"}],
    "max_tries": 3}');
SELECT taskq.start_saga('fan', 'f1');
SELECT n, id, action FROM public.own('w', 3);
SELECT pg_temp.rs('f1/1', 'fatal', '{"a": "half"}', 'boom');
SELECT * FROM pg_temp.steps('f1');
SELECT id, max_tries, num_tries, status_code FROM taskq.tasks WHERE id IN ('f1/2', 'f1/3') ORDER BY id;
-- a's undo waits for nothing: it ran alone; b finishes late
SELECT pg_temp.rs('f1/2', 'success', '{"b": "made"}');
-- c is retried after the switch: counted as failed, not retried, undone
SELECT pg_temp.rs('f1/3', 'retry');
SELECT * FROM pg_temp.steps('f1');
SELECT * FROM pg_temp.tasks('f1');
SELECT n, id, action FROM public.own('w', 5);
SELECT pg_temp.rs(id, 'success') FROM taskq.tasks WHERE workflow = 'f1' AND status_code = 'in_progress' ORDER BY id;
SELECT * FROM pg_temp.run('f1');
-- one_success: d is ready as soon as one of a, b, c succeeded
SELECT taskq.start_saga('fan', 'f2');
SELECT n, id, action FROM public.own('w', 3);
SELECT pg_temp.rs('f2/2', 'success');
SELECT id, action FROM taskq.tasks WHERE workflow = 'f2' AND action = 'f-d';
SELECT pg_temp.rs('f2/1', 'success'), pg_temp.rs('f2/3', 'success');
SELECT count(*) AS one_d FROM taskq.tasks WHERE workflow = 'f2' AND action = 'f-d';
-- a lease that expires after the switch ends the step on its last try
SELECT n, id FROM public.own('w', 1, '{f-d}', '1 hour');
SELECT taskq.cancel_run('f2');
SELECT id, max_tries, num_tries FROM taskq.tasks WHERE id = 'f2/4';
UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE id = 'f2/4';
SELECT n, id, action FROM public.own('w', 1, '{nothing}');
SELECT * FROM pg_temp.steps('f2');
SELECT n, id, action FROM public.own('w', 5);
SELECT pg_temp.rs(id, 'success') FROM taskq.tasks WHERE workflow = 'f2' AND status_code = 'in_progress' ORDER BY id;
SELECT n, id, action FROM public.own('w', 5);
SELECT pg_temp.rs(id, 'success') FROM taskq.tasks WHERE workflow = 'f2' AND status_code = 'in_progress' ORDER BY id;
SELECT * FROM pg_temp.run('f2');
-- a do lease that expires on its last try while running fails the saga;
-- an undo's does the same to the undo (dismal)
SELECT taskq.start_saga('pair', 'p5');
SELECT n, id FROM public.own('w', 1, '{p-one}');
SELECT pg_temp.rs('p5/1', 'success');
SELECT n, id FROM public.own('w', 1, '{p-two}');
SELECT pg_temp.rs('p5/2', 'retry');
SELECT n, id FROM public.own('w', 1, '{p-two}', '1 hour');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE id = 'p5/2';
SELECT n, id, action FROM public.own('w', 1, '{nothing}');
SELECT n, id, action FROM public.own('w', 1, '{u-two}');
SELECT * FROM pg_temp.run('p5');
SELECT pg_temp.rs('p5/3', 'success');
SELECT n, id FROM public.own('w', 1, '{u-one}', '1 hour');
SELECT pg_temp.rs('p5/4', 'retry');
SELECT n, id FROM public.own('w', 1, '{u-one}', '1 hour');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE id = 'p5/4';
SELECT n, id, action FROM public.own('w', 1, '{nothing}');
SELECT * FROM pg_temp.run('p5');

-- ---------------------------------------------------------------
-- cancel_run compensates
-- ---------------------------------------------------------------
SELECT taskq.start_saga('pair', 'c1');
SELECT taskq.cancel_run('c1') AS nothing_started;
SELECT * FROM pg_temp.run('c1');
SELECT * FROM pg_temp.tasks('c1');
SELECT taskq.start_saga('pair', 'c2');
SELECT n, id FROM public.own('w', 1, '{p-one}');
SELECT pg_temp.rs('c2/1', 'success');
SELECT taskq.cancel_workflow('c2') AS via_cancel_workflow;
SELECT * FROM pg_temp.run('c2');
SELECT public.expect_error($$SELECT taskq.cancel_run('c2')$$) AS cancel_undoing;
SELECT * FROM pg_temp.tasks('c2');
SELECT n, id, action, body->>'error' AS error FROM public.own('w', 1, '{u-one}');
SELECT pg_temp.rs('c2/3', 'success');
SELECT * FROM pg_temp.run('c2');
-- a waiting saga is cancelled too
SELECT taskq.start_saga('pair', 'c3');
SELECT n, id FROM public.own('w', 1, '{p-one}');
SELECT pg_temp.rs('c3/1', 'wait');
SELECT taskq.cancel_run('c3');
SELECT n, id FROM public.own('w', 1, '{u-one}');
SELECT pg_temp.rs('c3/2', 'success');
SELECT * FROM pg_temp.run('c3');
SELECT public.expect_error($$SELECT taskq.resume_run('c3')$$) AS resume_cancelled;

-- ---------------------------------------------------------------
-- Fault injection
-- ---------------------------------------------------------------
-- restart_each_step: the first finish of each do and undo is discarded
SELECT taskq.start_saga('pair', 'x1', '{}', '{"restart_each_step": true}');
SELECT n, id, num_tries FROM public.own('w', 1, '{p-one}');
SELECT pg_temp.rs('x1/1', 'success', '{"lost": true}');
SELECT status_code, num_tries FROM taskq.tasks WHERE id = 'x1/1';
SELECT n, id, num_tries, body->'working' AS working FROM public.own('w', 1, '{p-one}');
SELECT pg_temp.rs('x1/1', 'success', '{"kept": true}');
SELECT * FROM pg_temp.run('x1');
SELECT debug, faults FROM taskq.runs WHERE id = 'x1';
SELECT n, id FROM public.own('w', 1, '{p-two}');
SELECT pg_temp.rs('x1/2', 'success');
SELECT n, id FROM public.own('w', 1, '{p-two}');
SELECT pg_temp.rs('x1/2', 'success');
SELECT * FROM pg_temp.run('x1');
-- fail_at_steps: retry, then the next finish counts
SELECT taskq.start_saga('pair', 'x2', '{}', '{"fail_at_steps": {"one": "retry"}}');
SELECT n, id FROM public.own('w', 1, '{p-one}');
SELECT pg_temp.rs('x2/1', 'success');
SELECT status_code, status, num_tries FROM taskq.tasks WHERE id = 'x2/1';
SELECT n, id FROM public.own('w', 1, '{p-one}');
SELECT pg_temp.rs('x2/1', 'success');
SELECT * FROM pg_temp.tasks('x2');
SELECT n, id FROM public.own('w', 1, '{p-two}');
SELECT pg_temp.rs('x2/2', 'success');
-- undo_fail_at_steps: fatal is a dismal failure
SELECT taskq.start_saga('pair', 'x3', '{}', '{"fail_at_steps": {"two": "fatal"}, "undo_fail_at_steps": {"one": "fatal"}}');
SELECT n, id FROM public.own('w', 1, '{p-one}');
SELECT pg_temp.rs('x3/1', 'success');
SELECT n, id FROM public.own('w', 1, '{p-two}');
SELECT pg_temp.rs('x3/2', 'success', '{"two": "made"}');
SELECT * FROM pg_temp.run('x3');
SELECT n, id FROM public.own('w', 1, '{u-two}');
SELECT pg_temp.rs('x3/3', 'success');
SELECT n, id FROM public.own('w', 1, '{u-one}');
SELECT pg_temp.rs('x3/4', 'success');
SELECT * FROM pg_temp.run('x3');
-- last_step_failure: the last do fails fatally, everything is undone
SELECT taskq.start_saga('pair', 'x4', '{}', '{"last_step_failure": true}');
SELECT n, id FROM public.own('w', 1, '{p-one}');
SELECT pg_temp.rs('x4/1', 'success');
SELECT n, id FROM public.own('w', 1, '{p-two}');
SELECT pg_temp.rs('x4/2', 'success');
SELECT n, id, action FROM public.own('w', 1);
SELECT pg_temp.rs('x4/3', 'success');
SELECT n, id, action FROM public.own('w', 1);
SELECT pg_temp.rs('x4/4', 'success');
SELECT * FROM pg_temp.run('x4');

-- ---------------------------------------------------------------
-- Every failure point: a linear saga of 6 steps and a DAG of 8 (two
-- branches and a join), failing at each step k with fatal and with its
-- retries exhausted; claimed in batches (parallel steps in flight at the
-- switch), one by one, and one by one with restart_each_step.
-- ---------------------------------------------------------------
SELECT taskq.define_saga('lin', '{"steps": [
    {"name": "s1", "do": "l-do", "undo": "l-undo"}, {"name": "s2", "do": "l-do", "undo": "l-undo"},
    {"name": "s3", "do": "l-do", "undo": "l-undo"}, {"name": "s4", "do": "l-do", "undo": "l-undo"},
    {"name": "s5", "do": "l-do", "undo": "l-undo"}, {"name": "s6", "do": "l-do", "undo": "l-undo"}],
    "max_tries": 1}');
SELECT taskq.define_saga('dag', '{"steps": [
    {"name": "a", "do": "g-do", "undo": "g-undo"},
    {"name": "b1", "do": "g-do", "undo": "g-undo", "after": ["a"]},
    {"name": "b2", "do": "g-do", "undo": "g-undo"},
    {"name": "c1", "do": "g-do", "undo": "g-undo", "after": ["a"]},
    {"name": "c2", "do": "g-do", "undo": null},
    {"name": "j", "do": "g-do", "undo": "g-undo", "after": ["b2", "c2"]},
    {"name": "e", "do": "g-do", "undo": "g-undo"},
    {"name": "f", "do": "g-do", "undo": "g-undo"}],
    "max_tries": 1}');
-- the transitive "after" of a definition: (step, later step)
CREATE FUNCTION pg_temp.later(p_saga text)
RETURNS TABLE (step text, later text)
LANGUAGE sql AS $$
    WITH RECURSIVE s AS (
        SELECT e.value->>'name' AS name, e.value->'after' AS after, e.ord,
               lag(e.value->>'name') OVER (ORDER BY e.ord) AS prev
          FROM taskq.definitions AS d,
               jsonb_array_elements(d.definition->'steps') WITH ORDINALITY AS e(value, ord)
         WHERE d.name = p_saga AND d.version = 1),
    edge AS (
        SELECT a.value AS step, s.name AS later FROM s, jsonb_array_elements_text(s.after) AS a(value)
         WHERE s.after IS NOT NULL
        UNION ALL
        SELECT s.prev, s.name FROM s WHERE s.after IS NULL AND s.prev IS NOT NULL),
    r AS (SELECT * FROM edge UNION SELECT r.step, e.later FROM r JOIN edge AS e ON e.step = r.later)
    SELECT * FROM r
$$;
CREATE TABLE public.saga_log (n serial, run text, step text, direction text, task text);
CREATE PROCEDURE public.drive_sagas(p_batch int) LANGUAGE plpgsql AS $$
DECLARE
    t record;
    claimed int;
BEGIN
    FOR i IN 1..10000 LOOP
        claimed := 0;
        FOR t IN SELECT * FROM taskq.own_tasks('drv', p_batch, ARRAY['l-do', 'l-undo', 'g-do', 'g-undo']) LOOP
            INSERT INTO public.saga_log (run, step, direction, task)
                VALUES (t.body->>'run', t.body->>'step', t.body->>'direction', t.id);
            claimed := claimed + 1;
        END LOOP;
        COMMIT;
        EXIT WHEN claimed = 0;
        FOR t IN SELECT k.id, k.task FROM (SELECT DISTINCT ON (l.task) l.n AS id, l.task
                                              FROM public.saga_log AS l ORDER BY l.task, l.n DESC) AS k
                                      JOIN taskq.tasks AS x ON x.id = k.task
                                     WHERE x.status_code = 'in_progress' AND x.actor_id = 'drv'
                                     ORDER BY k.id LOOP
            PERFORM taskq.return_step(x.id, x.performance_token, 'success',
                                      CASE WHEN x.body->>'direction' = 'do'
                                           THEN jsonb_build_object(x.body->>'step', true) END)
               FROM taskq.tasks AS x WHERE x.id = t.task;
            COMMIT;
        END LOOP;
    END LOOP;
END
$$;
-- runs "<saga>-<mode>-<failure>-<k>": mode b (batches), s (serial), r (serial, restart_each_step)
DO $$
DECLARE
    s record;
BEGIN
    FOR s IN SELECT d.name AS saga, st.value->>'name' AS step, st.ord, f.failure
               FROM taskq.definitions AS d,
                    jsonb_array_elements(d.definition->'steps') WITH ORDINALITY AS st(value, ord),
                    (VALUES ('fatal'), ('retry')) AS f(failure)
              WHERE d.name IN ('lin', 'dag') LOOP
        PERFORM taskq.start_saga(s.saga, format('%s-b-%s-%s', s.saga, s.failure, s.ord), '{}',
                                 jsonb_build_object('fail_at_steps', jsonb_build_object(s.step, s.failure)));
    END LOOP;
END
$$;
CALL public.drive_sagas(100);
DO $$
DECLARE
    s record;
BEGIN
    FOR s IN SELECT d.name AS saga, st.value->>'name' AS step, st.ord, f.failure, m.mode
               FROM taskq.definitions AS d,
                    jsonb_array_elements(d.definition->'steps') WITH ORDINALITY AS st(value, ord),
                    (VALUES ('fatal'), ('retry')) AS f(failure), (VALUES ('s'), ('r')) AS m(mode)
              WHERE d.name IN ('lin', 'dag') LOOP
        PERFORM taskq.start_saga(s.saga, format('%s-%s-%s-%s', s.saga, s.mode, s.failure, s.ord), '{}',
                                 jsonb_build_object('fail_at_steps', jsonb_build_object(s.step, s.failure),
                                                    'restart_each_step', s.mode = 'r'));
    END LOOP;
END
$$;
CALL public.drive_sagas(1);
-- per run: the failing step, started steps (do claimed), undos run
CREATE TEMP TABLE fp AS
SELECT r.id, r.definition AS saga, split_part(r.id, '-', 2) AS mode, split_part(r.id, '-', 3) AS failure,
       split_part(r.id, '-', 4)::int AS k, r.status, r.context, r.error,
       (SELECT array_agg(DISTINCT l.step ORDER BY l.step) FROM public.saga_log AS l
         WHERE l.run = r.id AND l.direction = 'do') AS started,
       (SELECT array_agg(DISTINCT l.step ORDER BY l.step) FROM public.saga_log AS l
         WHERE l.run = r.id AND l.direction = 'undo') AS undone,
       (SELECT array_agg(DISTINCT x.value->>'name' ORDER BY x.value->>'name')
          FROM public.saga_log AS l, taskq.definitions AS d,
               jsonb_array_elements(d.definition->'steps') AS x
         WHERE l.run = r.id AND l.direction = 'do' AND d.name = r.definition AND d.version = 1
           AND x.value->>'name' = l.step AND x.value->>'undo' IS NOT NULL) AS to_undo
  FROM taskq.runs AS r
 WHERE r.id ~ '^(lin|dag)-[bsr]-';
CREATE INDEX ON public.saga_log (run, direction, step);
ANALYZE public.saga_log;
CREATE TEMP TABLE later AS
SELECT 'lin' AS saga, * FROM pg_temp.later('lin') UNION ALL SELECT 'dag', * FROM pg_temp.later('dag');
SELECT saga, mode, failure, count(*) AS runs,
       count(*) FILTER (WHERE status = 'failed') AS failed,
       -- the undos that ran are exactly the started steps (with an undo)
       count(*) FILTER (WHERE undone = to_undo) AS undone_started,
       -- each once: one undo task per undone step, completed
       count(*) FILTER (WHERE NOT EXISTS (
           SELECT FROM taskq.tasks AS t WHERE t.workflow = fp.id AND t.body->>'direction' = 'undo'
            GROUP BY t.body->>'step' HAVING count(*) <> 1 OR bool_or(t.status_code <> 'completed'))) AS undone_once,
       -- reverse topological order: an undo is claimed only after the undos
       -- of every step after it were returned
       count(*) FILTER (WHERE NOT EXISTS (
           SELECT FROM later AS p, public.saga_log AS x, public.saga_log AS y
            WHERE p.saga = fp.saga AND x.run = fp.id AND y.run = fp.id AND x.direction = 'undo' AND y.direction = 'undo'
              AND x.step = p.step AND y.step = p.later AND x.n < y.n)) AS reverse_order,
       -- the working map: every do that succeeded, and the failing step's
       -- working when it failed with fatal
       count(*) FILTER (WHERE (SELECT COALESCE(array_agg(k ORDER BY k), '{}') FROM jsonb_object_keys(context) AS k)
           = (SELECT COALESCE(array_agg(t.body->>'step' ORDER BY t.body->>'step'), '{}') FROM taskq.tasks AS t
               WHERE t.workflow = fp.id AND t.body->>'direction' = 'do'
                 AND (t.status_code = 'completed'
                      OR (fp.failure = 'fatal' AND t.status LIKE 'fatal: injected%')))) AS working_map,
       -- the failing step is the one named
       count(*) FILTER (WHERE error LIKE format('step "%s": %s: injected by fail_at_steps',
                                                CASE saga WHEN 'lin' THEN 's' || k
                                                ELSE (ARRAY['a', 'b1', 'b2', 'c1', 'c2', 'j', 'e', 'f'])[k] END,
                                                failure)) AS error_named
  FROM fp
 GROUP BY saga, mode, failure
 ORDER BY saga, mode, failure;
-- in flight at the switch: the DAG failing at b1 in batches (c1 was claimed
-- with b1, finished late and was undone) and at c1 (b2 was ready, unclaimed:
-- skipped, not undone)
SELECT id, started, undone FROM fp WHERE mode = 'b' AND saga = 'dag' AND failure = 'fatal' AND k IN (2, 4) ORDER BY id;
-- linear, failing at 4: undone 4, 3, 2, 1
SELECT string_agg(l.step, ' ' ORDER BY l.n) AS undo_order FROM public.saga_log AS l
 WHERE l.run = 'lin-s-fatal-4' AND l.direction = 'undo';
-- restart_each_step: every do and undo ran twice, and the outcome is the
-- serial run's
SELECT r.saga, count(*) AS runs,
       count(*) FILTER (WHERE NOT EXISTS (SELECT FROM public.saga_log AS l WHERE l.run = r.id
                                           GROUP BY l.step, l.direction HAVING count(*) <> 2)) AS twice,
       count(*) FILTER (WHERE r.status = s.status AND r.context = s.context AND r.undone IS NOT DISTINCT FROM s.undone
                          AND r.started IS NOT DISTINCT FROM s.started AND r.error = s.error) AS same_outcome
  FROM fp AS r JOIN fp AS s ON s.saga = r.saga AND s.failure = r.failure AND s.k = r.k AND s.mode = 's'
 WHERE r.mode = 'r'
 GROUP BY r.saga ORDER BY r.saga;
-- last_step_failure over the DAG, with restart_each_step: all undone
SELECT taskq.start_saga('dag', 'dag-last', '{}', '{"last_step_failure": true, "restart_each_step": true}');
CALL public.drive_sagas(1);
SELECT status, error FROM taskq.runs WHERE id = 'dag-last';
SELECT string_agg(l.step, ' ' ORDER BY l.n) AS undo_order FROM public.saga_log AS l
 WHERE l.run = 'dag-last' AND l.direction = 'undo';

-- ---------------------------------------------------------------
-- wait_for_run, retention: a finished run goes with its steps
-- ---------------------------------------------------------------
SELECT id, status FROM taskq.wait_for_run('w1');
-- a finished run is returned at once, not after the timeout (NULL).  Not
-- "row IS NOT NULL": that is false when any column is, and a saga's state is.
SELECT w.id, w.status, w.finished_at IS NOT NULL AS finished_at_once
  FROM taskq.wait_for_run('w2', '10 ms') AS w;
SELECT count(*) AS w1_steps FROM taskq.saga_steps WHERE run = 'w1';
UPDATE taskq.runs SET finished_at = now() - interval '1 day' WHERE id = 'w1';
SELECT taskq.purge_finished('1 hour') >= 0 AS purged;
SELECT count(*) AS w1_runs FROM taskq.runs WHERE id = 'w1';
SELECT count(*) AS w1_steps FROM taskq.saga_steps WHERE run = 'w1';
DROP PROCEDURE public.drive_sagas(int);
DROP TABLE public.saga_log;
