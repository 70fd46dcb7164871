--
-- Timers of runs: a transition's "after", a waiting state's "timeout" and
-- "on_timeout", a run's deadline (start_machine, start_saga), and the
-- table taskq.run_timers.  The background worker is off in this suite:
-- timers are back-dated and fired with taskq._fire_timers(), the worker's
-- own firing (the worker firing them, also across kill -9:
-- test/t/036_timers.pl; races: test/specs/timeout-vs-event.spec and
-- deadline-vs-step.spec).
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

CREATE FUNCTION pg_temp.tok(p_id text) RETURNS uuid
LANGUAGE sql AS $$ SELECT k.token FROM public.tokens AS k WHERE k.id = p_id $$;
CREATE FUNCTION pg_temp.tr(p_id text, p_event text, p_ctx jsonb DEFAULT NULL) RETURNS text
LANGUAGE sql AS $$ SELECT taskq.transition(p_id, pg_temp.tok(p_id), p_event, p_ctx) $$;
CREATE FUNCTION pg_temp.run(p_id text)
RETURNS TABLE (status text, state text, step_task text, error text, has_deadline boolean)
LANGUAGE sql AS $$
    SELECT r.status, r.state, r.step_task, r.error, r.deadline IS NOT NULL
      FROM taskq.runs AS r WHERE r.id = p_id
$$;
-- The run's timers, with due_at relative to now (rounded to the minute).
CREATE FUNCTION pg_temp.timers(p_id text)
RETURNS TABLE (kind text, state text, due_in_minutes double precision)
LANGUAGE sql AS $$
    SELECT t.kind, t.state, round(extract(epoch FROM t.due_at - now()) / 60)
      FROM taskq.run_timers AS t WHERE t.run_id = p_id ORDER BY t.kind
$$;
-- Back-date a run's timer (and a deadline's run, whose deadline must have passed).
CREATE FUNCTION pg_temp.due(p_id text, p_kind text) RETURNS void
LANGUAGE sql AS $$
    UPDATE taskq.run_timers SET due_at = now() - interval '1 s'
     WHERE run_id = p_id AND kind = p_kind;
    UPDATE taskq.runs SET deadline = now() - interval '1 s'
     WHERE id = p_id AND p_kind = 'deadline';
$$;

-- Fire the timers due, as the worker does (when it looks next is not shown).
CREATE FUNCTION pg_temp.fire() RETURNS void
LANGUAGE sql AS $$ SELECT taskq._fire_timers() $$;

-- ---------------------------------------------------------------
-- Definitions: 22023 naming the state and event
-- ---------------------------------------------------------------
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "transitions": [{"event": "e", "to": "W", "after": "1 minute"}]},
    {"name": "W", "action": null, "transitions": [{"event": "go", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS after_into_waiting;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "transitions": [{"event": "e", "to": "B", "after": "1 minute"}]},
    {"name": "B", "action": "b", "fan_in": 5, "final": true}]}')$$) AS after_into_fan_in;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "transitions": [{"event": "e", "to": "B", "after": "soon"}]},
    {"name": "B", "action": "b", "final": true}]}')$$) AS after_not_interval;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "transitions": [{"event": "e", "to": "B", "after": 60}]},
    {"name": "B", "action": "b", "final": true}]}')$$) AS after_number;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "transitions": [{"event": "e", "to": "B", "after": "0 s"}]},
    {"name": "B", "action": "b", "final": true}]}')$$) AS after_zero;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "transitions": [{"event": "e", "to": "B", "after": "-5 minutes"}]},
    {"name": "B", "action": "b", "final": true}]}')$$) AS after_negative;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "W", "action": null, "initial": true, "timeout": "1 hour", "transitions": [{"event": "go", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS timeout_without_event;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "W", "action": null, "initial": true, "on_timeout": "go", "transitions": [{"event": "go", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS event_without_timeout;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "W", "action": null, "initial": true, "timeout": "1 hour", "on_timeout": "late",
     "transitions": [{"event": "go", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS on_timeout_not_an_event;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "A", "action": "a", "initial": true, "timeout": "1 hour", "on_timeout": "go",
     "transitions": [{"event": "go", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS timeout_on_action_state;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "W", "action": null, "initial": true, "timeout": "a while", "on_timeout": "go",
     "transitions": [{"event": "go", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS timeout_not_interval;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "W", "action": null, "initial": true, "timeout": "1 hour", "on_timeout": 7,
     "transitions": [{"event": "go", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS on_timeout_not_string;
SELECT count(*) AS stored FROM taskq.definitions WHERE name = 'bad';

-- ---------------------------------------------------------------
-- "after": the run shows the next state at once, its task is delayed
-- ---------------------------------------------------------------
SELECT taskq.define_machine('later', '{"states": [
    {"name": "A", "action": "t_a", "initial": true,
     "transitions": [{"event": "wait", "to": "B", "after": "1 hour"}, {"event": "now", "to": "B"}]},
    {"name": "B", "action": "t_b", "final": true}]}') AS later_v1;
-- graphs label the transition with its "after"
SELECT taskq.definition_graph('later', 'mermaid');
SELECT taskq.start_machine('later', 'tm-l1');
SELECT id, action FROM public.own('w', 1, ARRAY['t_a']);
SELECT pg_temp.tr('tm-l1/1', 'wait') AS next_state;
SELECT * FROM pg_temp.run('tm-l1');
SELECT id, status_code, round(extract(epoch FROM not_before - now()) / 60) AS ready_in_minutes
  FROM taskq.tasks WHERE id = 'tm-l1/2';
SELECT count(*) AS claimed_early FROM public.own('w', 1, ARRAY['t_b']);
-- the same transition without "after": ready at once
SELECT taskq.start_machine('later', 'tm-l2');
SELECT id FROM public.own('w', 1, ARRAY['t_a']);
SELECT pg_temp.tr('tm-l2/1', 'now') AS next_state;
SELECT id FROM public.own('w', 1, ARRAY['t_b']);

-- ---------------------------------------------------------------
-- Timeouts of waiting states
-- ---------------------------------------------------------------
SELECT taskq.define_machine('approval', '{"states": [
    {"name": "Ask", "action": "t_ask", "initial": true, "transitions": [{"event": "asked", "to": "Wait"}]},
    {"name": "Wait", "action": null, "timeout": "2 hours", "on_timeout": "expired",
     "transitions": [{"event": "approved", "to": "Done"}, {"event": "expired", "to": "Remind"}]},
    {"name": "Remind", "action": "t_remind", "transitions": [{"event": "reminded", "to": "Wait"}]},
    {"name": "Done", "action": "t_done", "final": true}]}') AS approval_v1;
-- graphs label the waiting state's timeout edge
SELECT taskq.definition_graph('approval', 'dot');

-- the timeout fires: the run moves on on_timeout, as send_event would
SELECT taskq.start_machine('approval', 'tm-a1');
SELECT id FROM public.own('w', 1, ARRAY['t_ask']);
SELECT pg_temp.tr('tm-a1/1', 'asked', '{"order": 7}') AS next_state;
SELECT * FROM pg_temp.run('tm-a1');
SELECT * FROM pg_temp.timers('tm-a1');
SELECT taskq._fire_timers() IS NOT NULL AS timers_left;
SELECT * FROM pg_temp.run('tm-a1');
SELECT pg_temp.due('tm-a1', 'timeout');
SELECT taskq._fire_timers() IS NULL AS none_left;
SELECT * FROM pg_temp.run('tm-a1');
-- the timeout is in the context the next state reads: the state, its
-- timeout and when the timer was due, over the run's own keys
SELECT context - 'timeout' AS own_keys, context->'timeout'->>'state' AS state,
       context->'timeout'->>'after' AS after,
       (context->'timeout'->>'due')::timestamptz BETWEEN now() - interval '1 minute' AND now() AS due
  FROM taskq.runs WHERE id = 'tm-a1';
SELECT body->'context'->'timeout'->>'state' AS step_reads FROM taskq.tasks WHERE id = 'tm-a1/2';
SELECT * FROM pg_temp.timers('tm-a1');
-- a later visit of the state starts a new timer
SELECT id FROM public.own('w', 1, ARRAY['t_remind']);
SELECT pg_temp.tr('tm-a1/2', 'reminded') AS next_state;
SELECT * FROM pg_temp.timers('tm-a1');
SELECT taskq.send_event('tm-a1', 'approved') AS moved_to;

-- an event first: the timer is stale and deleted when it comes due
SELECT taskq.start_machine('approval', 'tm-a2');
SELECT id FROM public.own('w', 1, ARRAY['t_ask']);
SELECT pg_temp.tr('tm-a2/1', 'asked') AS next_state;
SELECT taskq.send_event('tm-a2', 'approved') AS moved_to;
SELECT * FROM pg_temp.timers('tm-a2');
SELECT pg_temp.due('tm-a2', 'timeout');
SELECT pg_temp.fire();
SELECT * FROM pg_temp.run('tm-a2');
SELECT * FROM pg_temp.timers('tm-a2');

-- the visit that was timed out is over: its timer, due after the run
-- left and came back (a new visit's), fires nothing until that one's due
SELECT taskq.start_machine('approval', 'tm-a3');
SELECT id FROM public.own('w', 1, ARRAY['t_ask']);
SELECT pg_temp.tr('tm-a3/1', 'asked') AS next_state;
SELECT pg_temp.due('tm-a3', 'timeout');
SELECT taskq.send_event('tm-a3', 'expired') AS moved_to;
SELECT id FROM public.own('w', 1, ARRAY['t_remind']);
SELECT pg_temp.tr('tm-a3/2', 'reminded') AS next_state;
SELECT taskq._fire_timers() IS NOT NULL AS timers_left;
SELECT * FROM pg_temp.run('tm-a3');
SELECT * FROM pg_temp.timers('tm-a3');

-- a kept event is taken on entry: no timer
SELECT taskq.start_machine('approval', 'tm-a4');
SELECT taskq.send_event('tm-a4', 'approved') AS kept;
SELECT id FROM public.own('w', 1, ARRAY['t_ask']);
SELECT pg_temp.tr('tm-a4/1', 'asked') AS next_state;
SELECT * FROM pg_temp.timers('tm-a4');

-- cancel_run: the timer is stale
SELECT taskq.start_machine('approval', 'tm-a5');
SELECT id FROM public.own('w', 1, ARRAY['t_ask']);
SELECT pg_temp.tr('tm-a5/1', 'asked') AS next_state;
SELECT taskq.cancel_run('tm-a5');
SELECT pg_temp.due('tm-a5', 'timeout');
SELECT pg_temp.fire();
SELECT * FROM pg_temp.run('tm-a5');
SELECT count(*) AS timers_of_a5 FROM taskq.run_timers WHERE run_id = 'tm-a5';

-- ---------------------------------------------------------------
-- Deadlines
-- ---------------------------------------------------------------
SELECT public.expect_error($$SELECT taskq.start_machine('approval', 'tm-d0', '{}', NULL, '0 s')$$) AS zero_deadline;
SELECT public.expect_error($$SELECT taskq.start_machine('approval', 'tm-d0', '{}', NULL, '-1 hour')$$) AS negative_deadline;
SELECT count(*) AS d0_runs FROM taskq.runs WHERE id = 'tm-d0';

-- a machine's pending step: aborted, the run failed
SELECT taskq.start_machine('approval', 'tm-d1', deadline => '1 day');
SELECT * FROM pg_temp.run('tm-d1');
SELECT * FROM pg_temp.timers('tm-d1');
SELECT round(extract(epoch FROM deadline - now()) / 3600) AS deadline_in_hours
  FROM taskq.runs WHERE id = 'tm-d1';
SELECT pg_temp.due('tm-d1', 'deadline');
SELECT pg_temp.fire();
SELECT * FROM pg_temp.run('tm-d1');
SELECT id, status_code FROM taskq.tasks WHERE id = 'tm-d1/1';

-- an owned step: its later transition returns NULL, as for a cancelled run
SELECT taskq.start_machine('approval', 'tm-d2', '{}', NULL, '1 day');
SELECT id FROM public.own('w', 1, ARRAY['t_ask']);
SELECT pg_temp.due('tm-d2', 'deadline');
SELECT pg_temp.fire();
SELECT pg_temp.tr('tm-d2/1', 'asked') IS NULL AS transition_null;
SELECT * FROM pg_temp.run('tm-d2');
SELECT id, status_code FROM taskq.tasks WHERE id = 'tm-d2/1';

-- a waiting run, with its timeout pending: the deadline wins, the timeout is stale
SELECT taskq.start_machine('approval', 'tm-d3', deadline => '1 day');
SELECT id FROM public.own('w', 1, ARRAY['t_ask']);
SELECT pg_temp.tr('tm-d3/1', 'asked') AS next_state;
SELECT pg_temp.due('tm-d3', 'deadline');
SELECT taskq._fire_timers() IS NOT NULL AS timers_left;
SELECT * FROM pg_temp.run('tm-d3');
SELECT pg_temp.due('tm-d3', 'timeout');
SELECT pg_temp.fire();
SELECT * FROM pg_temp.run('tm-d3');
SELECT count(*) AS timers_of_d3 FROM taskq.run_timers WHERE run_id = 'tm-d3';

-- a run finished before its deadline: the timer is stale
SELECT taskq.start_machine('later', 'tm-d4', deadline => '1 day');
SELECT id FROM public.own('w', 1, ARRAY['t_a']);
SELECT pg_temp.tr('tm-d4/1', 'now') AS next_state;
SELECT id FROM public.own('w', 1, ARRAY['t_b']);
SELECT pg_temp.tr('tm-d4/2', NULL) IS NULL AS finished;
SELECT pg_temp.due('tm-d4', 'deadline');
SELECT pg_temp.fire();
SELECT * FROM pg_temp.run('tm-d4');

-- a deadline timer due while its run's deadline is later (a row edited by
-- hand) fires nothing and waits for the run's deadline
SELECT taskq.start_machine('approval', 'tm-d5', deadline => '1 day');
UPDATE taskq.run_timers SET due_at = now() - interval '1 s' WHERE run_id = 'tm-d5';
SELECT pg_temp.fire();
SELECT * FROM pg_temp.run('tm-d5');
SELECT * FROM pg_temp.timers('tm-d5');

-- a saga: it undoes, as a fatal step would make it
SELECT taskq.define_saga('trip', '{"steps": [
    {"name": "flight", "do": "t_fly", "undo": "t_unfly"},
    {"name": "hotel", "do": "t_hotel", "undo": "t_unhotel"}]}') AS trip_v1;
SELECT taskq.start_saga('trip', 'tm-s1', '{}', NULL, '1 day');
SELECT id FROM public.own('w', 1, ARRAY['t_fly']);
SELECT taskq.return_step('tm-s1/1', pg_temp.tok('tm-s1/1'), 'success');
SELECT pg_temp.due('tm-s1', 'deadline');
SELECT pg_temp.fire();
SELECT * FROM pg_temp.run('tm-s1');
SELECT id, action, status_code FROM taskq.tasks WHERE workflow = 'tm-s1' ORDER BY id;
-- its undo gives up (dismal); redrive_run's undo has no deadline: it runs
-- to the end however long ago the deadline passed
SELECT taskq.return_step(id, pg_temp.tok(id), 'fatal') IS NOT NULL AS undo_gave_up
  FROM public.own('w', 1, ARRAY['t_unfly']);
SELECT * FROM pg_temp.run('tm-s1');
SELECT taskq.redrive_run('tm-s1') AS redriven;
SELECT * FROM pg_temp.timers('tm-s1');
UPDATE taskq.runs SET deadline = now() - interval '1 day' WHERE id = 'tm-s1';
SELECT pg_temp.fire();
SELECT * FROM pg_temp.run('tm-s1');
SELECT taskq.return_step(id, pg_temp.tok(id), 'success') IS NOT NULL AS undone
  FROM public.own('w', 1, ARRAY['t_unfly']);
SELECT * FROM pg_temp.run('tm-s1');
-- dismal before its deadline, redriven: the deadline that comes during the
-- redriven undo changes nothing (an undoing saga goes on undoing)
SELECT taskq.start_saga('trip', 'tm-s3', '{}', NULL, '1 day');
SELECT taskq.return_step(id, pg_temp.tok(id), 'success') IS NOT NULL AS flown
  FROM public.own('w', 1, ARRAY['t_fly']);
SELECT taskq.return_step(id, pg_temp.tok(id), 'fatal', NULL, 'no rooms') IS NOT NULL AS no_hotel
  FROM public.own('w', 1, ARRAY['t_hotel']);
SELECT taskq.return_step(id, pg_temp.tok(id), 'success') IS NOT NULL AS hotel_undone
  FROM public.own('w', 1, ARRAY['t_unhotel']);
SELECT taskq.return_step(id, pg_temp.tok(id), 'fatal') IS NOT NULL AS undo_gave_up
  FROM public.own('w', 1, ARRAY['t_unfly']);
SELECT * FROM pg_temp.run('tm-s3');
SELECT taskq.redrive_run('tm-s3') AS redriven;
SELECT * FROM pg_temp.timers('tm-s3');
SELECT pg_temp.due('tm-s3', 'deadline');
SELECT pg_temp.fire();
SELECT * FROM pg_temp.run('tm-s3');
SELECT taskq.return_step(id, pg_temp.tok(id), 'success') IS NOT NULL AS undone
  FROM public.own('w', 1, ARRAY['t_unfly']);
SELECT * FROM pg_temp.run('tm-s3');

-- the arguments of v2 keep their meaning
SELECT taskq.start_saga('trip', 'tm-s2', '{"k": 1}');
SELECT * FROM pg_temp.run('tm-s2');
SELECT count(*) AS timers_of_s2 FROM taskq.run_timers WHERE run_id = 'tm-s2';

DELETE FROM taskq.tasks WHERE workflow LIKE 'tm-%';
DELETE FROM taskq.saga_steps WHERE run LIKE 'tm-%';
DELETE FROM taskq.runs WHERE id LIKE 'tm-%';
DELETE FROM taskq.run_timers;
DELETE FROM public.tokens;
