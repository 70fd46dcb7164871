--
-- redrive_run of a dismal saga: the undo that gave up is tried again with
-- its undo policy afresh, undos that finished after the dismal point count
-- as done, dos that finished late are undone in their turn; the run ends
-- failed, cancelled or dismal again.  Its errors: a failed (fully undone)
-- saga, a running, undoing or succeeded one, a run that does not exist.
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
RETURNS TABLE (status text, error text, finished boolean)
LANGUAGE sql AS $$
    SELECT r.status, r.error, r.finished_at IS NOT NULL
      FROM taskq.runs AS r WHERE r.id = p_id
$$;
CREATE FUNCTION pg_temp.steps(p_id text)
RETURNS TABLE (step text, do_task text, do_state text, undo_task text, undo_state text)
LANGUAGE sql AS $$
    SELECT s.step, s.do_task, s.do_state, s.undo_task, s.undo_state
      FROM taskq.saga_steps AS s WHERE s.run = p_id ORDER BY s.do_task COLLATE "C"
$$;
CREATE FUNCTION pg_temp.tasks(p_id text)
RETURNS TABLE (id text, step text, direction text, status_code taskq.status,
               status text, num_tries int, max_tries int)
LANGUAGE sql AS $$
    SELECT t.id, t.body->>'step', t.body->>'direction', t.status_code, t.status,
           t.num_tries, t.max_tries
      FROM taskq.tasks AS t WHERE t.workflow = p_id ORDER BY t.seq
$$;

SELECT taskq.define_saga('trip', '{"steps": [
    {"name": "flight", "do": "t-do", "undo": "t-undo"},
    {"name": "hotel", "do": "t-do", "undo": "t-undo", "undo_max_tries": 2, "after": ["flight"]},
    {"name": "car", "do": "t-do", "undo": "t-undo", "after": ["hotel"]}]}');

-- ---------------------------------------------------------------
-- A linear saga: the undo of "hotel" gives up (fatal), redrive_run tries
-- it again as a new task, and the undo goes on to "flight": failed.
-- ---------------------------------------------------------------
SELECT taskq.start_saga('trip', 'r1', '{}',
    '{"fail_at_steps": {"car": "fatal"}, "undo_fail_at_steps": {"hotel": "fatal"}}');
SELECT n, id FROM public.own('w', 1, '{t-do}');
SELECT pg_temp.rs('r1/1', 'success');
SELECT n, id FROM public.own('w', 1, '{t-do}');
SELECT pg_temp.rs('r1/2', 'success');
SELECT n, id FROM public.own('w', 1, '{t-do}');
SELECT pg_temp.rs('r1/3', 'success');
SELECT n, id FROM public.own('w', 1, '{t-undo}');
SELECT pg_temp.rs('r1/4', 'success');
SELECT n, id FROM public.own('w', 1, '{t-undo}');
SELECT pg_temp.rs('r1/5', 'success');
SELECT * FROM pg_temp.run('r1');
SELECT * FROM pg_temp.steps('r1');
SELECT taskq.redrive_run('r1');
SELECT * FROM pg_temp.run('r1');
SELECT * FROM pg_temp.steps('r1');
SELECT * FROM pg_temp.tasks('r1');
-- the old undo task is no longer current: its repeated return changes nothing
SELECT public.expect_error($$SELECT pg_temp.rs('r1/5', 'success')$$) AS old_undo_task;
-- a second redrive while it undoes: 55000
SELECT public.expect_error($$SELECT taskq.redrive_run('r1')$$) AS redrive_undoing;
SELECT n, id, body->>'step' AS step, body->>'direction' AS direction
  FROM public.own('w', 1, '{t-undo}');
SELECT pg_temp.rs('r1/6', 'success');
SELECT n, id, body->>'step' AS step FROM public.own('w', 1, '{t-undo}');
SELECT pg_temp.rs('r1/7', 'success');
SELECT * FROM pg_temp.run('r1');
SELECT * FROM pg_temp.steps('r1');
-- fully undone: start a new run
SELECT public.expect_error($$SELECT taskq.redrive_run('r1')$$) AS redrive_failed;

-- ---------------------------------------------------------------
-- Out of tries: the redriven undo has all its tries again; it gives up
-- again and the run is dismal again, with one dismal text, not two.
-- ---------------------------------------------------------------
SELECT taskq.start_saga('trip', 'r2', '{}', '{"fail_at_steps": {"car": "fatal"}}');
SELECT n, id FROM public.own('w', 1, '{t-do}');
SELECT pg_temp.rs('r2/1', 'success');
SELECT n, id FROM public.own('w', 1, '{t-do}');
SELECT pg_temp.rs('r2/2', 'success');
SELECT n, id FROM public.own('w', 1, '{t-do}');
SELECT pg_temp.rs('r2/3', 'success');
SELECT n, id FROM public.own('w', 1, '{t-undo}');
SELECT pg_temp.rs('r2/4', 'success');
SELECT n, id, num_tries FROM public.own('w', 1, '{t-undo}');
SELECT pg_temp.rs('r2/5', 'retry', NULL, 'hotel desk closed');
SELECT n, id, num_tries FROM public.own('w', 1, '{t-undo}');
SELECT pg_temp.rs('r2/5', 'retry', NULL, 'hotel desk still closed');
SELECT * FROM pg_temp.run('r2');
SELECT taskq.redrive_run('r2');
SELECT * FROM pg_temp.tasks('r2');
SELECT n, id, num_tries FROM public.own('w', 1, '{t-undo}');
SELECT pg_temp.rs('r2/6', 'retry', NULL, 'closed for good');
SELECT n, id, num_tries FROM public.own('w', 1, '{t-undo}');
SELECT pg_temp.rs('r2/6', 'fatal', NULL, 'no such booking');
SELECT * FROM pg_temp.run('r2');
-- a lease that expires on the undo's last try is dismal too; redrive again
SELECT taskq.redrive_run('r2');
SELECT n, id, num_tries FROM public.own('w', 1, '{t-undo}');
SELECT pg_temp.rs('r2/7', 'retry');
SELECT n, id, num_tries FROM public.own('w', 1, '{t-undo}', '1 hour');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE id = 'r2/7';
SELECT n, id FROM public.own('w', 1, '{nothing}');
SELECT * FROM pg_temp.run('r2');
SELECT taskq.redrive_run('r2');
SELECT n, id, body->>'step' AS step FROM public.own('w', 1, '{t-undo}');
SELECT pg_temp.rs('r2/8', 'success');
SELECT n, id, body->>'step' AS step FROM public.own('w', 1, '{t-undo}');
SELECT pg_temp.rs('r2/9', 'success');
SELECT * FROM pg_temp.run('r2');

-- ---------------------------------------------------------------
-- Parallel branches: "b" and "c" undo side by side.  The undo of "b"
-- gives up while that of "c" is held; "c"'s finishes after the dismal
-- point and counts as done: the redrive undoes "b" again, then "a".
-- In the second run "c"'s undo fails late too: both are tried again.
-- ---------------------------------------------------------------
SELECT taskq.define_saga('fork', '{"steps": [
    {"name": "a", "do": "f-do", "undo": "f-undo"},
    {"name": "b", "do": "f-do", "undo": "f-undo", "after": ["a"]},
    {"name": "c", "do": "f-do", "undo": "f-undo", "after": ["a"]},
    {"name": "d", "do": "f-do", "undo": null, "after": ["b", "c"]}], "max_tries": 1}');
CREATE FUNCTION pg_temp.fork_to_dismal(p_run text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    u text;
BEGIN
    PERFORM taskq.start_saga('fork', p_run);
    PERFORM public.own('w', 1, '{f-do}');
    PERFORM pg_temp.rs(p_run || '/1', 'success');
    PERFORM public.own('w', 2, '{f-do}');
    PERFORM pg_temp.rs(p_run || '/2', 'success');
    PERFORM pg_temp.rs(p_run || '/3', 'success');
    PERFORM public.own('w', 1, '{f-do}');
    PERFORM pg_temp.rs(p_run || '/4', 'fatal', NULL, 'no seats');
    PERFORM public.own('w', 2, '{f-undo}');
    SELECT undo_task INTO u FROM taskq.saga_steps WHERE run = p_run AND step = 'b';
    PERFORM pg_temp.rs(u, 'fatal', NULL, 'refund refused');
    RETURN QUERY SELECT s.step || ': ' || s.undo_task || ' ' || s.undo_state
                   FROM taskq.saga_steps AS s WHERE s.run = p_run ORDER BY s.step;
END
$$;
SELECT pg_temp.fork_to_dismal('f1');
SELECT * FROM pg_temp.run('f1');
SELECT pg_temp.rs(undo_task, 'success') FROM taskq.saga_steps WHERE run = 'f1' AND step = 'c';
SELECT * FROM pg_temp.steps('f1');
SELECT taskq.redrive_run('f1');
SELECT * FROM pg_temp.steps('f1');
SELECT n, id, body->>'step' AS step FROM public.own('w', 5, '{f-undo}');
SELECT pg_temp.rs('f1/7', 'success');
SELECT n, id, body->>'step' AS step FROM public.own('w', 5, '{f-undo}');
SELECT pg_temp.rs('f1/8', 'success');
SELECT * FROM pg_temp.run('f1');

SELECT pg_temp.fork_to_dismal('f2');
SELECT pg_temp.rs(undo_task, 'fatal', NULL, 'car gone') FROM taskq.saga_steps
 WHERE run = 'f2' AND step = 'c';
SELECT * FROM pg_temp.run('f2');
SELECT taskq.redrive_run('f2');
SELECT * FROM pg_temp.steps('f2');
SELECT n, id, body->>'step' AS step FROM public.own('w', 5, '{f-undo}');
SELECT pg_temp.rs('f2/7', 'success');
SELECT pg_temp.rs('f2/8', 'success');
SELECT n, id, body->>'step' AS step FROM public.own('w', 5, '{f-undo}');
SELECT pg_temp.rs('f2/9', 'success');
SELECT * FROM pg_temp.run('f2');

-- ---------------------------------------------------------------
-- A do still in flight at the dismal point finishes late: after the
-- redrive it is undone in its turn.
-- ---------------------------------------------------------------
SELECT taskq.define_saga('late', '{"steps": [
    {"name": "a", "do": "l-do", "undo": "l-undo"},
    {"name": "b", "do": "l-slow", "undo": "l-undo", "after": ["a"]},
    {"name": "c", "do": "l-do", "undo": "l-undo", "after": ["a"]}], "max_tries": 1}');
SELECT taskq.start_saga('late', 'l1');
SELECT n, id, action FROM public.own('w', 1, '{l-do}');
SELECT pg_temp.rs('l1/1', 'success');
SELECT n, id, action FROM public.own('w', 1, '{l-slow}');
SELECT n, id, action FROM public.own('w', 1, '{l-do}');
SELECT pg_temp.rs('l1/3', 'fatal', NULL, 'sold out');
SELECT n, id, body->>'step' AS step FROM public.own('w', 1, '{l-undo}');
SELECT pg_temp.rs('l1/4', 'fatal', NULL, 'undo broke');
SELECT * FROM pg_temp.run('l1');
SELECT pg_temp.rs('l1/2', 'success');
SELECT * FROM pg_temp.steps('l1');
SELECT taskq.redrive_run('l1');
SELECT * FROM pg_temp.steps('l1');
SELECT n, id, body->>'step' AS step FROM public.own('w', 5, '{l-undo}');
SELECT pg_temp.rs('l1/5', 'success');
SELECT pg_temp.rs('l1/6', 'success');
SELECT n, id, body->>'step' AS step FROM public.own('w', 5, '{l-undo}');
SELECT pg_temp.rs('l1/7', 'success');
SELECT * FROM pg_temp.run('l1');

-- ---------------------------------------------------------------
-- A cancelled saga that went dismal ends cancelled after the redrive.
-- ---------------------------------------------------------------
SELECT taskq.start_saga('trip', 'c1', '{}', '{"undo_fail_at_steps": {"flight": "fatal"}}');
SELECT n, id FROM public.own('w', 1, '{t-do}');
SELECT pg_temp.rs('c1/1', 'success');
SELECT taskq.cancel_run('c1');
SELECT n, id FROM public.own('w', 1, '{t-undo}');
SELECT pg_temp.rs('c1/3', 'success');
SELECT * FROM pg_temp.run('c1');
SELECT taskq.redrive_run('c1');
SELECT n, id FROM public.own('w', 1, '{t-undo}');
SELECT pg_temp.rs('c1/4', 'success');
SELECT * FROM pg_temp.run('c1');
SELECT public.expect_error($$SELECT taskq.redrive_run('c1')$$) AS redrive_cancelled;

-- ---------------------------------------------------------------
-- Errors
-- ---------------------------------------------------------------
SELECT taskq.start_saga('trip', 'e1');
SELECT public.expect_error($$SELECT taskq.redrive_run('e1')$$) AS redrive_running;
SELECT n, id FROM public.own('w', 1, '{t-do}');
SELECT pg_temp.rs('e1/1', 'wait');
SELECT public.expect_error($$SELECT taskq.redrive_run('e1')$$) AS redrive_waiting;
SELECT taskq.resume_run('e1');
SELECT n, id FROM public.own('w', 1, '{t-do}');
SELECT pg_temp.rs('e1/2', 'success');
SELECT n, id FROM public.own('w', 1, '{t-do}');
SELECT pg_temp.rs('e1/3', 'success');
SELECT * FROM pg_temp.run('e1');
SELECT public.expect_error($$SELECT taskq.redrive_run('e1')$$) AS redrive_succeeded;
SELECT public.expect_error($$SELECT taskq.redrive_run('nobody')$$) AS redrive_unknown;
SELECT public.expect_error($$SELECT taskq.redrive_run(NULL)$$) AS redrive_null;

-- what this file made goes
DELETE FROM taskq.saga_steps WHERE run IN (SELECT id FROM taskq.runs WHERE definition IN ('trip', 'fork', 'late'));
DELETE FROM taskq.tasks WHERE workflow IN (SELECT id FROM taskq.runs WHERE definition IN ('trip', 'fork', 'late'));
DELETE FROM taskq.runs WHERE definition IN ('trip', 'fork', 'late');
DELETE FROM taskq.definitions WHERE name IN ('trip', 'fork', 'late');
DELETE FROM public.tokens;
