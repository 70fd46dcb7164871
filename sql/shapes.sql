--
-- Shapes: chain, group, chord (with a spontaneous join), and after_ids.
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

SELECT taskq.insert_tasks($$[{"id": "gate1", "action": "gate"}, {"id": "gate2", "action": "gate"},
    {"id": "side", "action": "side"}]$$);
SELECT n, id FROM public.own('w', 1, '{gate}');
SELECT ret('gate1', 'completed');
-- gate1 is completed, gate2 pending.

-- chain: each task signals the next; the first waits for every after id (a
-- completed one is already satisfied).  A to_signal_after given by the
-- caller is kept.
SELECT taskq.chain($$[{"id": "c1", "action": "step", "to_signal_after": ["side"]},
    {"id": "c2", "action": "step"}, {"id": "c3", "action": "step", "priority": 3}]$$,
    '{gate2,gate1}');
SELECT id, status_code, num_signals, deps, succ FROM public.tq;
-- It runs one step after another once gate2 completes.
SELECT n, id FROM public.own('w', 10, '{step}');
SELECT n, id FROM public.own('w', 10, '{gate}');
SELECT ret('gate2', 'completed');
SELECT n, id FROM public.own('w', 10, '{step}');
SELECT ret('c1', 'completed');
SELECT n, id FROM public.own('w', 10, '{step}');
SELECT ret('c2', 'completed');
SELECT n, id FROM public.own('w', 10, '{step}');
SELECT ret('c3', 'completed');
SELECT id, status_code, num_signals FROM public.tq WHERE id IN ('c1', 'c2', 'c3', 'side');

-- chain without after_ids, empty chain, one-task chain.
SELECT taskq.chain('[{"id": "k1", "action": "k"}, {"id": "k2", "action": "k"}]');
SELECT taskq.chain('[]');
SELECT taskq.chain('[]', '{gate2}');
SELECT taskq.chain('[{"id": "solo", "action": "k"}]', '{k2}');
SELECT id, num_signals, deps, succ FROM public.tq WHERE id IN ('k1', 'k2', 'solo');

-- A chain ending in a spontaneous task: completed by the queue after the
-- last worker step.
SELECT taskq.chain($$[{"id": "s1", "action": "s"}, {"id": "s2", "action": "s"},
    {"id": "s_end", "action": "end", "spontaneous": true}]$$);
SELECT n, id FROM public.own('w', 10, '{s}');
SELECT ret('s1', 'completed');
SELECT n, id FROM public.own('w', 10, '{s}');
SELECT ret('s2', 'completed');
SELECT id, status_code, finished FROM public.tq WHERE id LIKE 's%' ORDER BY id;

-- group: parallel tasks, each waiting for every after id.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks('[{"id": "pre1", "action": "pre"}, {"id": "pre2", "action": "pre"}]');
SELECT taskq."group"($$[{"id": "g1", "action": "g"}, {"id": "g2", "action": "g"},
    {"id": "g3", "action": "g"}]$$, '{pre1,pre2}');
SELECT id, num_signals, deps, succ FROM public.tq;
SELECT n, id FROM public.own('w', 10, '{pre}');
SELECT ret('pre1', 'completed');
SELECT n, id FROM public.own('w', 10, '{g}');
SELECT ret('pre2', 'completed');
SELECT n, id FROM public.own('w', 10, '{g}');
SELECT taskq."group"('[{"id": "g4", "action": "g"}]');
SELECT taskq."group"('[]');
SELECT taskq."group"('[]', '{pre1}');
SELECT id, num_signals FROM public.tq WHERE id = 'g4';

-- chord: a group plus a join every task signals.  A spontaneous join is
-- completed by the queue when the last task completes.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks('[{"id": "start", "action": "start"}, {"id": "after_join", "action": "next"}]');
SELECT taskq.chord($$[{"id": "h1", "action": "h"}, {"id": "h2", "action": "h"},
    {"id": "h3", "action": "h"}]$$,
    '{"id": "join", "action": "join", "spontaneous": true, "to_signal_after": ["after_join"]}',
    '{start}');
SELECT id, status_code, num_signals, deps, succ FROM public.tq;
SELECT n, id FROM public.own('w', 10, '{start}');
SELECT ret('start', 'completed');
SELECT n, id FROM public.own('w', 10, '{h}');
SELECT ret('h1', 'completed');
SELECT ret('h3', 'completed');
SELECT id, status_code, num_signals FROM public.tq WHERE id IN ('join', 'after_join');
SELECT ret('h2', 'completed');
SELECT id, status_code, num_signals, finished FROM public.tq WHERE id IN ('join', 'after_join');
SELECT n, id FROM public.own('w', 10, NULL);

-- A worker join becomes ready instead; an aborted member aborts the join.
SELECT taskq.chord('[{"id": "m1", "action": "m"}, {"id": "m2", "action": "m"}]',
                   '{"id": "mjoin", "action": "mj"}');
SELECT n, id FROM public.own('w', 10, '{m}');
SELECT ret('m1', 'completed');
SELECT ret('m2', 'completed');
SELECT n, id FROM public.own('w', 10, '{mj}');
SELECT taskq.chord('[{"id": "f1", "action": "f"}, {"id": "f2", "action": "f"}]',
                   '{"id": "fjoin", "action": "fj", "spontaneous": true}');
SELECT n, id FROM public.own('w', 10, '{f}');
SELECT ret('f1', 'aborted', 'broken');
SELECT id, status_code, status, num_signals FROM public.tq WHERE id LIKE 'f%';
SELECT ret('f2', 'completed');
SELECT id, status_code, status, num_signals FROM public.tq WHERE id LIKE 'f%';
-- A chord with no tasks: a spontaneous join alone completes at once.
SELECT taskq.chord('[]', '{"id": "empty_join", "action": "ej", "spontaneous": true}');
SELECT taskq.chord('[]', '{"id": "empty_join2", "action": "ej"}', '{start}');
SELECT id, status_code, num_signals FROM public.tq WHERE id LIKE 'empty_join%';

-- Shapes keep insert_tasks' rules and are atomic.
SELECT count(*) AS before FROM taskq.tasks \gset
SELECT expect_error($$SELECT taskq.chain('[{"id": "n1", "action": "n"}, {"id": "n1", "action": "n"}]')$$);
SELECT expect_error($$SELECT taskq.chain('[{"id": "n1", "action": "n"}, {"id": "m1", "action": "n"}]')$$);
SELECT expect_error($$SELECT taskq.chain('[{"id": "n1", "action": "n"}]', '{ghost}')$$);
SELECT expect_error($$SELECT taskq.chain('[{"id": "n1", "action": "n"}]', '{f1}')$$);
SELECT expect_error($$SELECT taskq.chain('[{"id": "n1", "action": "n"}, {"id": "n2", "action": "n", "to_signal_after": ["n1"]}]')$$);
SELECT expect_error($$SELECT taskq."group"('[{"id": "n1", "action": "n"}, {"id": "n2", "action": "n"}]', '{start,ghost}')$$);
SELECT expect_error($$SELECT taskq."group"('[{"id": "n1", "action": "n"}, {"id": "n2", "action": "n", "bogus": 1}]')$$);
SELECT expect_error($$SELECT taskq.chord('[{"id": "n1", "action": "n"}]', '{"id": "n1", "action": "j"}')$$);
SELECT expect_error($$SELECT taskq.chord('[{"id": "n1", "action": "n"}]', '{"id": "n2", "action": "j"}', '{f1}')$$);
SELECT expect_error($$SELECT taskq.chord('[{"id": "n1", "action": "n"}]', '{"action": "j"}')$$);
SELECT count(*) = :before AS unchanged FROM taskq.tasks;

-- A spontaneous task of a shape that waits for stored tasks is held by them:
-- the waits are added before the queue completes spontaneous tasks.
SELECT taskq.insert_tasks('[{"id": "gate", "action": "g"}]');
SELECT taskq.chain('[{"id": "sp1", "action": "x", "spontaneous": true}, {"id": "sp2", "action": "x"}]', '{gate}');
SELECT taskq."group"('[{"id": "sp3", "action": "x", "spontaneous": true}]', '{gate}');
SELECT id, status_code, num_signals FROM public.tq WHERE id IN ('gate', 'sp1', 'sp2', 'sp3') ORDER BY id;
SELECT n, id FROM public.own('w', 1, '{g}');
SELECT ret('gate', 'completed');
SELECT id, status_code, num_signals FROM public.tq WHERE id IN ('gate', 'sp1', 'sp2', 'sp3') ORDER BY id;
