--
-- add_dependencies: run_ids[i] waits for after_ids[i].
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

SELECT taskq.insert_tasks($$[
    {"id": "a", "action": "d"}, {"id": "b", "action": "d"}, {"id": "c", "action": "d"},
    {"id": "run", "action": "r"}, {"id": "done", "action": "x"}, {"id": "failed", "action": "x"},
    {"id": "busy", "action": "x"}, {"id": "retried", "action": "x"}]$$);
SELECT n, id FROM public.own('w', 10, '{x}');
SELECT ret('done', 'completed');
SELECT ret('failed', 'aborted');
SELECT ret('retried', 'pending');

-- Empty arrays: nothing to do.
SELECT taskq.add_dependencies('{}', '{}');

-- Edges are appended to the after task's to_signal_after and counted on the
-- run task; an after task in progress is fine (it has not finished); a pair
-- named twice is added once; a completed after task is already satisfied
-- (not counted).
SELECT taskq.add_dependencies(ARRAY['a', 'b', 'busy', 'c', 'c', 'done'],
                              ARRAY['run', 'run', 'run', 'a', 'a', 'b']);
SELECT id, status_code, num_signals, deps, succ FROM public.tq
 WHERE id IN ('a', 'b', 'c', 'run', 'busy', 'done');
-- A task given more predecessors is no longer ready.
SELECT n, id FROM public.own('w', 10, '{r}');
-- A task given back for another try has not started: it may wait.
SELECT taskq.add_dependencies('{c}', '{retried}');
SELECT id, status_code, num_signals, deps, has_token FROM public.tq WHERE id = 'retried';

-- Refusals; each leaves every task as it was.
CREATE TEMP TABLE snap AS SELECT * FROM public.tq;
-- unknown after or run: 23503
SELECT expect_error($$SELECT taskq.add_dependencies('{ghost}', '{run}')$$);
SELECT expect_error($$SELECT taskq.add_dependencies('{a,c}', '{run,ghost}')$$);
-- waiting for itself: 22023
SELECT expect_error($$SELECT taskq.add_dependencies('{b,a}', '{run,a}')$$);
-- a run task that started or finished: 55000
SELECT expect_error($$SELECT taskq.add_dependencies('{a}', '{busy}')$$);
SELECT expect_error($$SELECT taskq.add_dependencies('{a}', '{done}')$$);
SELECT expect_error($$SELECT taskq.add_dependencies('{a}', '{failed}')$$);
-- an after task that aborted: 55000, even next to a valid pair
SELECT expect_error($$SELECT taskq.add_dependencies('{a,failed}', '{run,run}')$$);
-- cycles (a waits for c, run waits for a): closed by a stored edge, longer,
-- or within the call
SELECT expect_error($$SELECT taskq.add_dependencies('{a}', '{c}')$$);
SELECT expect_error($$SELECT taskq.add_dependencies('{run,b}', '{c,run}')$$);
SELECT expect_error($$SELECT taskq.add_dependencies('{run}', '{c}')$$);
SELECT taskq.insert_tasks('[{"id": "p", "action": "p"}, {"id": "q", "action": "p"}]');
SELECT expect_error($$SELECT taskq.add_dependencies('{p,q}', '{q,p}')$$);
SELECT (SELECT count(*) FROM public.tq) - 2 = (SELECT count(*) FROM snap) AS only_p_q_added,
       NOT EXISTS (SELECT * FROM public.tq EXCEPT SELECT * FROM snap
                   EXCEPT SELECT * FROM public.tq WHERE id IN ('p', 'q')) AS unchanged;
SELECT id, num_signals, deps, succ FROM public.tq WHERE id IN ('p', 'q');

-- Edges added by add_dependencies signal like any other: the run task waits
-- for every predecessor, including the in-progress one.
SELECT n, id FROM public.own('w', 10, '{d}');
SELECT ret('b', 'completed');
SELECT ret('c', 'completed');
SELECT id, num_signals FROM public.tq WHERE id IN ('a', 'retried');
SELECT n, id FROM public.own('w', 10, '{d}');
SELECT ret('a', 'completed');
SELECT id, num_signals FROM public.tq WHERE id = 'run';
SELECT n, id FROM public.own('w', 10, '{r}');
SELECT ret('busy', 'completed');
SELECT n, id FROM public.own('w', 10, '{r}');

-- A spontaneous task given a dependency completes when it is satisfied.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[{"id": "work", "action": "w"},
    {"id": "j", "action": "j", "spontaneous": true, "to_signal_after": ["after_j"]},
    {"id": "pre", "action": "w", "to_signal_after": ["j"]},
    {"id": "after_j", "action": "w"}]$$);
SELECT taskq.add_dependencies('{work}', '{j}');
SELECT id, status_code, num_signals, deps FROM public.tq;
SELECT n, id FROM public.own('w', 10, '{w}');
SELECT ret('pre', 'completed');
SELECT id, status_code, num_signals FROM public.tq WHERE id = 'j';
SELECT ret('work', 'completed');
SELECT id, status_code, num_signals FROM public.tq;
SELECT n, id FROM public.own('w', 10, '{w}');
