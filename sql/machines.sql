--
-- State machines: definitions and their checks, runs, transitions, retries,
-- waiting states and events, continuation, fan-in, cancel, redrive,
-- migrate, fault injection, and the core's calls on steps.
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

-- A step's token, as own() kept it.
CREATE FUNCTION pg_temp.tok(p_id text) RETURNS uuid
LANGUAGE sql AS $$ SELECT k.token FROM public.tokens AS k WHERE k.id = p_id $$;
CREATE FUNCTION pg_temp.tr(p_id text, p_event text, p_ctx jsonb DEFAULT NULL) RETURNS text
LANGUAGE sql AS $$ SELECT taskq.transition(p_id, pg_temp.tok(p_id), p_event, p_ctx) $$;
CREATE FUNCTION pg_temp.run(p_id text)
RETURNS TABLE (status text, state text, context jsonb, step_task text, error text)
LANGUAGE sql AS $$
    SELECT r.status, r.state, r.context, r.step_task, r.error FROM taskq.runs AS r WHERE r.id = p_id
$$;

-- ---------------------------------------------------------------
-- Definitions: every error names the state or event (22023)
-- ---------------------------------------------------------------
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '[]')$$) AS not_object;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": []}')$$) AS no_states;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [{"name": "A", "action": "a", "final": true}]}')$$) AS no_initial;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "final": true},
    {"name": "B", "action": "a", "initial": true, "final": true}]}')$$) AS two_initial;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "transitions": [{"event": "e", "to": "A"}]}]}')$$) AS no_final;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "transitions": [{"event": "e", "to": "Z"}]},
    {"name": "B", "action": "b", "final": true}]}')$$) AS unknown_to;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "final": true},
    {"name": "A", "action": "b", "final": true}]}')$$) AS duplicate_state;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "transitions": [{"event": "e", "to": "B"}, {"event": "e", "to": "B"}]},
    {"name": "B", "action": "b", "final": true}]}')$$) AS duplicate_event;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "transitions": [{"event": "e", "to": "B"}]},
    {"name": "B", "action": "b"},
    {"name": "C", "action": "c", "final": true}]}')$$) AS not_final_no_transitions;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "final": true},
    {"name": "B", "action": "b", "final": true}]}')$$) AS unreachable;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "final": true, "retry": {"delay": "soon"}}]}')$$) AS bad_retry;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "final": true, "fan_in": 0}]}')$$) AS fan_in_zero;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "transitions": [{"event": "e", "to": "W"}]},
    {"name": "W", "action": null, "continuation": true, "transitions": [{"event": "e", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS waiting_continuation;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "transitions": [{"event": "e", "to": "W"}]},
    {"name": "W", "action": null, "final": true}]}')$$) AS waiting_final;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "transitions": [{"event": "e", "to": "W"}]},
    {"name": "W", "action": null, "fan_in": 2, "transitions": [{"event": "e", "to": "A"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS waiting_fan_in;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [{"name": "", "action": "a", "initial": true, "final": true}]}')$$) AS empty_name;
SELECT public.expect_error(format($$SELECT taskq.define_machine('bad', '{"states": [{"name": "%s", "action": "a", "initial": true, "final": true}]}')$$, repeat('n', 64))) AS long_name;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [{"name": "a\u0001", "action": "a", "initial": true, "final": true}]}')$$) AS control_name;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [{"name": "A", "action": "a", "initial": true, "final": true, "colour": "red"}]}')$$) AS unknown_state_key;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [{"name": "A", "action": "a", "initial": true, "final": true}], "owner": "me"}')$$) AS unknown_machine_key;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "transitions": [{"event": "e", "to": "B", "when": "now"}]},
    {"name": "B", "action": "b", "final": true}]}')$$) AS unknown_transition_key;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [{"name": "A", "initial": true, "final": true}]}')$$) AS no_action;
SELECT count(*) AS stored FROM taskq.definitions WHERE name = 'bad';

-- A machine with a loop, a waiting state and retries; versions
SELECT taskq.define_machine('order', '{"states": [
    {"name": "Check", "action": "check", "initial": true,
     "transitions": [{"event": "ok", "to": "Ship"}, {"event": "hold", "to": "Approve"}]},
    {"name": "Approve", "action": null,
     "transitions": [{"event": "approved", "to": "Ship"}, {"event": "rejected", "to": "Check"}]},
    {"name": "Ship", "action": "ship", "final": true, "max_tries": 2,
     "transitions": [{"event": "again", "to": "Check"}]}]}') AS v1;
SELECT taskq.define_machine('order', (SELECT definition FROM taskq.definitions WHERE name = 'order')) AS v2_identical;
SELECT name, version, kind FROM taskq.definitions WHERE name = 'order' ORDER BY version;

-- ---------------------------------------------------------------
-- start_machine
-- ---------------------------------------------------------------
SELECT public.expect_error($$SELECT taskq.start_machine('nope', 'x')$$) AS unknown_machine;
SELECT public.expect_error($$SELECT taskq.start_machine('order', 'a/b')$$) AS slash_in_id;
SELECT public.expect_error($$SELECT taskq.start_machine('order', 'x', '[1]')$$) AS context_not_object;
SELECT public.expect_error($$SELECT taskq.start_machine('order', 'x', '{}', '{"sometimes": true}')$$) AS unknown_debug;
SELECT taskq.start_machine('order', 'o1', '{"qty": 1}');
SELECT public.expect_error($$SELECT taskq.start_machine('order', 'o1')$$) AS duplicate_run;
SELECT taskq.create_job('job-1');
SELECT public.expect_error($$SELECT taskq.start_machine('order', 'job-1')$$) AS clash_with_job;
SELECT id, kind, definition, version, status, state, context, parent FROM taskq.runs ORDER BY id;
SELECT id, action, body, workflow, status_code FROM taskq.tasks WHERE workflow = 'o1';

-- ---------------------------------------------------------------
-- transition
-- ---------------------------------------------------------------
SELECT n, id, action FROM public.own('w', 1, '{check}');
SELECT public.expect_error($$SELECT pg_temp.tr('o1/1', 'shipped')$$) AS unknown_event;
SELECT public.expect_error($$SELECT pg_temp.tr('o1/1', NULL)$$) AS null_event_not_final;
SELECT public.expect_error($$SELECT pg_temp.tr('o1/1', 'ok', '[1]')$$) AS context_not_array;
SELECT public.expect_error($$SELECT taskq.transition('o1/1', gen_random_uuid(), 'ok')$$) AS stale_token;
SELECT status_code FROM taskq.tasks WHERE id = 'o1/1';
SELECT pg_temp.tr('o1/1', 'ok', '{"qty": 2}') AS next;
SELECT pg_temp.tr('o1/1', 'ok', '{"qty": 2}') AS repeated;
SELECT public.expect_error($$SELECT pg_temp.tr('o1/1', 'hold')$$) AS other_event_after;
SELECT * FROM pg_temp.run('o1');
SELECT id, action, body->>'state' AS state, body->'context' AS context FROM taskq.tasks WHERE id = 'o1/2';
SELECT public.expect_error($$SELECT taskq.transition('o1/9', gen_random_uuid(), 'ok')$$) AS not_current_step;
SELECT taskq.insert_tasks('[{"id": "plain", "action": "p"}]');
SELECT n, id FROM public.own('w', 1, '{p}');
SELECT public.expect_error($$SELECT pg_temp.tr('plain', 'ok')$$) AS plain_task;

-- a final state goes on with an event (a loop) or ends with NULL
SELECT n, id FROM public.own('w', 1, '{ship}');
SELECT pg_temp.tr('o1/2', 'again') AS loop_back;
SELECT n, id FROM public.own('w', 1, '{check}');
-- the plain return: completed is the transition on its status text
SELECT public.ret('o1/3', 'completed', 'ok');
SELECT * FROM pg_temp.run('o1');
SELECT public.expect_error($$SELECT public.ret('o1/4', 'completed', 'bogus')$$) AS not_owned_yet;
SELECT n, id FROM public.own('w', 1, '{ship}');
SELECT public.expect_error($$SELECT public.ret('o1/4', 'completed', 'bogus')$$) AS return_unknown_event;
SELECT status_code FROM taskq.tasks WHERE id = 'o1/4';
SELECT pg_temp.tr('o1/4', NULL) AS ended;
SELECT status, state, context, finished_at IS NOT NULL AS finished FROM taskq.runs WHERE id = 'o1';
SELECT seq, step, direction, task_id, status_code, outcome, num_tries FROM taskq.run_steps('o1');
SELECT public.expect_error($$SELECT * FROM taskq.run_steps('nope')$$) AS steps_unknown;

-- ---------------------------------------------------------------
-- Retries keep the context; giving up fails the run
-- ---------------------------------------------------------------
SELECT taskq.start_machine('order', 'o2', '{"qty": 5}');
SELECT n, id FROM public.own('w', 1, '{check}');
SELECT pg_temp.tr('o2/1', 'ok', '{"qty": 6}');
SELECT n, id, num_tries, body->'context' AS context FROM public.own('w', 1, '{ship}');
SELECT public.ret('o2/2', 'pending', 'try later');
SELECT * FROM pg_temp.run('o2');
SELECT n, id, num_tries, body->'context' AS context FROM public.own('w', 1, '{ship}');
SELECT public.ret('o2/2', 'pending', 'still no truck');
SELECT * FROM pg_temp.run('o2');
SELECT status_code, status FROM taskq.tasks WHERE id = 'o2/2';
-- aborted fails the run at once
SELECT taskq.start_machine('order', 'o3');
SELECT n, id FROM public.own('w', 1, '{check}');
SELECT public.ret('o3/1', 'aborted', 'bad address');
SELECT * FROM pg_temp.run('o3');
-- a lease that expires on the last try fails it too (back-dated, no sleep)
SELECT taskq.start_machine('order', 'o4');
SELECT n, id FROM public.own('w', 1, '{check}');
SELECT pg_temp.tr('o4/1', 'ok');
SELECT n, id FROM public.own('w', 1, '{ship}');
SELECT public.ret('o4/2', 'pending');
SELECT n, id FROM public.own('w', 1, '{ship}', '1 hour');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE id = 'o4/2';
SELECT n, id FROM public.own('w', 1, '{nothing}');
SELECT * FROM pg_temp.run('o4');
SELECT status_code FROM taskq.tasks WHERE id = 'o4/2';

-- redrive_run: another life from the failed state, with its context
SELECT public.expect_error($$SELECT taskq.redrive_run('o1')$$) AS redrive_succeeded;
SELECT taskq.redrive_run('o2');
SELECT * FROM pg_temp.run('o2');
SELECT id, body->'context' AS context, status_code FROM taskq.tasks WHERE workflow = 'o2' ORDER BY seq;

-- ---------------------------------------------------------------
-- Waiting states and events
-- ---------------------------------------------------------------
SELECT taskq.start_machine('order', 'o5', '{"qty": 1}');
SELECT public.expect_error($$SELECT taskq.send_event('o5', 'ok')$$) AS not_a_waiting_event;
SELECT public.expect_error($$SELECT taskq.send_event('nope', 'approved')$$) AS unknown_run;
-- an early event is kept, with its context
SELECT taskq.send_event('o5', 'approved', '{"approver": "ann"}') AS early;
SELECT taskq.send_event('o5', 'rejected') AS second_early;
SELECT events FROM taskq.runs WHERE id = 'o5';
SELECT n, id FROM public.own('w', 1, '{check}');
SELECT pg_temp.tr('o5/1', 'hold') AS consumed_at_once;
SELECT * FROM pg_temp.run('o5');
SELECT events FROM taskq.runs WHERE id = 'o5';
-- a run that waits moves on the event
SELECT taskq.start_machine('order', 'o6');
SELECT n, id FROM public.own('w', 1, '{check}');
SELECT pg_temp.tr('o6/1', 'hold') AS waits;
SELECT * FROM pg_temp.run('o6');
SELECT * FROM taskq.wait_for_run('o6', '0 s') \gset w_
SELECT :'w_status' AS waited_status;
SELECT taskq.send_event('o6', 'rejected', '{"why": "stock"}') AS back_to_check;
SELECT * FROM pg_temp.run('o6');
SELECT taskq.cancel_run('o6');
SELECT public.expect_error($$SELECT taskq.send_event('o6', 'approved')$$) AS finished_run;

-- ---------------------------------------------------------------
-- Cancel
-- ---------------------------------------------------------------
SELECT * FROM pg_temp.run('o6');
SELECT status_code, status FROM taskq.tasks WHERE workflow = 'o6' ORDER BY seq;
SELECT public.expect_error($$SELECT taskq.cancel_run('o6')$$) AS cancel_twice;
SELECT public.expect_error($$SELECT taskq.cancel_run('nope')$$) AS cancel_unknown;
-- an owned step ends aborted when its owner returns it
SELECT taskq.start_machine('order', 'o7');
SELECT n, id FROM public.own('w', 1, '{check}');
SELECT taskq.cancel_workflow('o7') AS via_cancel_workflow;
SELECT pg_temp.tr('o7/1', 'ok') IS NULL AS transition_null;
SELECT status_code, status FROM taskq.tasks WHERE id = 'o7/1';
SELECT status FROM taskq.runs WHERE id = 'o7';

-- The core's calls do not change steps
SELECT taskq.start_machine('order', 'o8');
SELECT public.expect_error($$SELECT taskq.cancel_tasks('{o8/1}')$$) AS cancel_tasks_step;
SELECT public.expect_error($$SELECT taskq.replace_tasks('[{"id": "o8/1", "action": "x"}]')$$) AS replace_step;
SELECT public.expect_error($$SELECT taskq.redrive_tasks('{o3/1}')$$) AS redrive_step;
SELECT public.expect_error($$SELECT taskq.add_dependencies('{plain}', '{o8/1}')$$) AS add_dependencies_step;

-- ---------------------------------------------------------------
-- migrate_run
-- ---------------------------------------------------------------
SELECT taskq.define_machine('order', '{"states": [
    {"name": "Verify", "action": "verify", "initial": true, "transitions": [{"event": "ok", "to": "Send"}]},
    {"name": "Send", "action": "ship", "final": true}]}') AS v3;
SELECT public.expect_error($$SELECT taskq.migrate_run('o8', 3)$$) AS state_missing;
SELECT public.expect_error($$SELECT taskq.migrate_run('o8', 9, '{"Check": "Verify"}')$$) AS no_version;
SELECT public.expect_error($$SELECT taskq.migrate_run('o1', 3, '{"Check": "Verify"}')$$) AS finished;
SELECT taskq.migrate_run('o8', 3, '{"Check": "Verify"}');
SELECT version, state, step_task FROM taskq.runs WHERE id = 'o8';
SELECT id, action, status_code, status FROM taskq.tasks WHERE workflow = 'o8' ORDER BY seq;
SELECT n, id FROM public.own('w', 1, '{verify}');
SELECT public.expect_error($$SELECT taskq.migrate_run('o8', 1, '{"Verify": "Check"}')$$) AS owned_step;
SELECT pg_temp.tr('o8/2', 'ok');

-- ---------------------------------------------------------------
-- Continuation and fan-in
-- ---------------------------------------------------------------
SELECT taskq.define_machine('mail', '{"states": [
    {"name": "Send", "action": "send", "initial": true, "continuation": true,
     "transitions": [{"event": "sent", "to": "Count"}]},
    {"name": "Count", "action": "count", "final": true, "fan_in": 3}]}');
SELECT taskq.start_machine('mail', 'm1', '{"list": "news"}');
SELECT n, id, body FROM public.own('w', 1, '{send}');
SELECT taskq.continue_machine('m1/1', pg_temp.tok('m1/1'), '100') AS fork;
SELECT taskq.continue_machine('m1/1', pg_temp.tok('m1/1'), '200') AS same_fork;
SELECT public.expect_error($$SELECT taskq.continue_machine('o8/2', pg_temp.tok('o8/2'), 'x')$$) AS not_continuation;
SELECT id, status, state, parent FROM taskq.runs WHERE id LIKE 'm1%' ORDER BY id;
SELECT pg_temp.tr('m1/1', 'sent');
SELECT n, id, body->>'cursor' AS cursor, body->>'run' AS run FROM public.own('w', 1, '{send}');
SELECT taskq.continue_machine(id, pg_temp.tok(id), NULL) IS NULL AS last_chunk
  FROM taskq.tasks WHERE action = 'send' AND status_code = 'in_progress';
SELECT pg_temp.tr(id, 'sent') FROM taskq.tasks WHERE action = 'send' AND status_code = 'in_progress';
-- both instances are in one batch, whose task is ready 3 s later
SELECT m.arrival - min(m.arrival) OVER () AS arrival, r.id ~ '^m1/c' AS fork
  FROM taskq.fan_in_members AS m JOIN taskq.runs AS r ON r.id = m.run ORDER BY m.arrival;
SELECT id, action, body->>'fan_in' AS fan_in, not_before > now() + interval '2 s' AS later
  FROM taskq.tasks WHERE action = 'count';
SELECT count(*) AS before_window FROM taskq.own_tasks('w', 1, '{count}');
UPDATE taskq.tasks SET not_before = now() WHERE action = 'count';
SELECT n, id FROM public.own('w', 1, '{count}');
-- claimed: the batch is closed; a third instance opens a new one
SELECT taskq.start_machine('mail', 'm2');
SELECT n, id FROM public.own('w', 1, '{send}');
SELECT pg_temp.tr('m2/1', 'sent');
SELECT count(DISTINCT batch) AS batches FROM taskq.fan_in_members;
SELECT run ~ '^m1' AS m1, context FROM taskq.fan_in_contexts('m1/2', pg_temp.tok('m1/2'));
SELECT public.expect_error($$SELECT * FROM taskq.fan_in_contexts('o8/2', pg_temp.tok('o8/2'))$$) AS not_a_batch;
SELECT pg_temp.tr('m1/2', NULL, '{"counted": 2}') IS NULL AS ended;
SELECT id ~ '^m1/c' AS fork, status, context FROM taskq.runs WHERE id LIKE 'm1%' ORDER BY id;
-- cancel of the only instance of an open batch cancels its task
SELECT taskq.cancel_run('m2');
SELECT count(*) AS members FROM taskq.fan_in_members;
SELECT status_code, status FROM taskq.tasks WHERE id = 'm2/2';

-- the run that opened a batch is cancelled: the next instance in it goes on
SELECT taskq.start_machine('mail', 'm3'), taskq.start_machine('mail', 'm4');
SELECT n, id FROM public.own('w', 2, '{send}');
SELECT pg_temp.tr('m3/1', 'sent'), pg_temp.tr('m4/1', 'sent');
SELECT taskq.cancel_run('m3');
UPDATE taskq.tasks SET not_before = now() WHERE id = 'm3/2';
SELECT n, id FROM public.own('w', 1, '{count}');
SELECT run, context FROM taskq.fan_in_contexts('m3/2', pg_temp.tok('m3/2'));
SELECT pg_temp.tr('m3/2', NULL) IS NULL AS ended;
SELECT id, status, state, step_task FROM taskq.runs WHERE id IN ('m3', 'm4') ORDER BY id;

-- a batch that gives up fails every instance in it
SELECT taskq.define_machine('tally', '{"states": [
    {"name": "Add", "action": "add", "initial": true, "final": true, "fan_in": 1, "max_tries": 1}]}');
SELECT taskq.start_machine('tally', 't1'), taskq.start_machine('tally', 't2');
UPDATE taskq.tasks SET not_before = now() WHERE action = 'add';
SELECT n, id FROM public.own('w', 1, '{add}');
SELECT public.ret('t1/1', 'pending', 'db down');
SELECT id, status, error FROM taskq.runs WHERE id IN ('t1', 't2') ORDER BY id;
-- cancel of the batch's first instance: the next one goes on with the batch
SELECT taskq.start_machine('tally', 'fc1'), taskq.start_machine('tally', 'fc2');
SELECT taskq.cancel_run('fc1');
UPDATE taskq.tasks SET not_before = now() WHERE id = 'fc1/1';
SELECT n, id FROM public.own('w', 1, '{add}');
SELECT run, context FROM taskq.fan_in_contexts('fc1/1', pg_temp.tok('fc1/1'));
SELECT pg_temp.tr('fc1/1', NULL, '{"total": 1}') IS NULL AS ended;
SELECT id, status, context FROM taskq.runs WHERE id IN ('fc1', 'fc2') ORDER BY id;

-- ---------------------------------------------------------------
-- Fault injection (admins only)
-- ---------------------------------------------------------------
SELECT taskq.start_machine('tally', 'd1', '{}', '{"restart_each_step": true}');
UPDATE taskq.tasks SET not_before = now() WHERE id = 'd1/1';
SELECT n, id, num_tries FROM public.own('w', 1, '{add}');
SELECT pg_temp.tr('d1/1', NULL) IS NULL AS discarded;
SELECT status_code, num_tries FROM taskq.tasks WHERE id = 'd1/1';
SELECT n, id, num_tries FROM public.own('w', 1, '{add}');
SELECT pg_temp.tr('d1/1', NULL) IS NULL AS counted;
SELECT status, debug FROM taskq.runs WHERE id = 'd1';
SELECT taskq.define_machine('order', (SELECT definition FROM taskq.definitions WHERE name = 'order' AND version = 1)) AS v4;
SELECT taskq.start_machine('order', 'd2', '{}', '{"fail_at_steps": {"Check": "retry"}}');
SELECT n, id, num_tries FROM public.own('w', 1, '{check}');
SELECT pg_temp.tr('d2/1', 'ok') IS NULL AS turned_into_retry;
SELECT status_code, status, num_tries FROM taskq.tasks WHERE id = 'd2/1';
SELECT n, id, num_tries FROM public.own('w', 1, '{check}');
SELECT pg_temp.tr('d2/1', 'ok') AS second_finish_counts;
SELECT taskq.start_machine('order', 'd3', '{}', '{"fail_at_steps": {"Check": "fatal"}}');
SELECT n, id FROM public.own('w', 1, '{check}');
SELECT pg_temp.tr('d3/1', 'ok') IS NULL AS turned_into_fatal;
SELECT * FROM pg_temp.run('d3');

-- ---------------------------------------------------------------
-- wait_for_run, retention
-- ---------------------------------------------------------------
SELECT id, status FROM taskq.wait_for_run('o1');
SELECT taskq.wait_for_run('o8', '10 ms') IS NULL AS timed_out;
SELECT public.expect_error($$SELECT taskq.wait_for_run('nope')$$) AS wait_unknown;
SELECT public.expect_error($$SELECT taskq.wait_for_run('o8', '-1 s')$$) AS wait_negative;
-- purge_finished keeps the steps of unfinished runs
UPDATE taskq.tasks SET finished_at = now() - interval '1 day' WHERE workflow IN ('o5', 'o1');
SELECT taskq.purge_finished('1 hour') >= 0 AS purged;
SELECT workflow, count(*) FROM taskq.tasks WHERE workflow IN ('o5', 'o1') GROUP BY 1 ORDER BY 1;
UPDATE taskq.runs SET finished_at = now() - interval '1 day' WHERE id = 'o1';
SELECT taskq.purge_finished('1 hour') >= 0 AS purged;
SELECT count(*) AS o1_left FROM taskq.runs WHERE id = 'o1';

-- ---------------------------------------------------------------
-- Graphs and statistics
-- ---------------------------------------------------------------
SELECT definition, kind, version, state, in_state, entered, succeeded, failed_tries,
       avg_seconds >= 0 AS has_avg, p95_seconds >= 0 AS has_p95
  FROM taskq.state_stats WHERE definition IN ('mail', 'tally') ORDER BY definition, version, state;
SELECT regexp_replace(taskq.definition_graph('mail'), 'avg [0-9.]+ s', 'avg N s', 'g');
SELECT taskq.definition_graph('order', 'mermaid', 1);
SELECT taskq.run_graph('o5');
SELECT taskq.run_graph('o2', 'mermaid');
SELECT public.expect_error($$SELECT taskq.definition_graph('mail', 'svg')$$) AS bad_format;
SELECT public.expect_error($$SELECT taskq.definition_graph('nope')$$) AS unknown_definition;
SELECT public.expect_error($$SELECT taskq.definition_graph('mail', 'dot', 7)$$) AS unknown_version;
SELECT public.expect_error($$SELECT taskq.run_graph('nope')$$) AS unknown_run;
