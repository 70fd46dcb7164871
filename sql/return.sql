--
-- return_task: completed, aborted (transitive cascade), pending (retries up
-- to max_tries), status text, the order of the checks, tokens; return_tasks.
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

-- completed: finished, lease cleared, successors signalled; the one whose
-- last signal arrives becomes ready.
SELECT taskq.insert_tasks($$[
    {"id": "a", "action": "r", "to_signal_after": ["join", "next"], "status": "new"},
    {"id": "b", "action": "r", "to_signal_after": ["join"]},
    {"id": "join", "action": "r"},
    {"id": "next", "action": "r"}]$$);
SELECT n, id, deadline FROM public.own('w', 10, NULL, '10 minutes');
SELECT ret('a', 'completed');
-- status NULL keeps the previous status text.
SELECT * FROM public.tq;
SELECT n, id FROM public.own('w', 10, NULL);
SELECT ret('b', 'completed', 'b done');
SELECT id, status_code, status, num_signals, deps, finished FROM public.tq;
SELECT n, id FROM public.own('w', 10, NULL);
SELECT ret('join', 'completed', 'joined');
SELECT ret('next', 'completed');
SELECT id, status_code, status, num_signals, deps, has_token, deadline, finished FROM public.tq;

-- aborted: the task and every transitive successor that is unfinished; the
-- cascade names the predecessor.  num_signals still counts unfinished
-- predecessors (each finish decrements it once).
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[
    {"id": "root", "action": "r", "to_signal_after": ["l", "r"]},
    {"id": "l", "action": "r", "to_signal_after": ["bottom"]},
    {"id": "r", "action": "r", "to_signal_after": ["bottom"]},
    {"id": "bottom", "action": "r", "to_signal_after": ["after"]},
    {"id": "after", "action": "r"},
    {"id": "other", "action": "r", "to_signal_after": ["bottom2"]},
    {"id": "bottom2", "action": "s"},
    {"id": "r2", "action": "r", "to_signal_after": ["bottom2"]},
    {"id": "free", "action": "r"}]$$);
SELECT taskq.add_dependencies('{root}', '{r2}');
SELECT n, id FROM public.own('w', 10, '{r}');
SELECT ret('root', 'aborted', 'gave up');
SELECT id, status_code, status, num_signals, deps, finished FROM public.tq;
-- A finished task is not touched by a later signal; its count still drops.
SELECT ret('other', 'completed');
SELECT id, status_code, status, num_signals FROM public.tq WHERE id IN ('other', 'bottom2');
SELECT n, id FROM public.own('w', 10, NULL);
-- Aborting a task with no successors; status NULL keeps the status text.
UPDATE taskq.tasks SET status = 'working' WHERE id = 'free';
SELECT ret('free', 'aborted');
SELECT id, status_code, status FROM public.tq WHERE id = 'free';

-- pending: back for another try while tries are left, then aborted (with the
-- cascade) when max_tries is reached.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[
    {"id": "try2", "action": "t", "max_tries": 2, "to_signal_after": ["dep"]},
    {"id": "dep", "action": "d", "to_signal_after": ["dep2"]},
    {"id": "dep2", "action": "d"},
    {"id": "try1", "action": "t", "max_tries": 1},
    {"id": "unlimited", "action": "t"}]$$);
SELECT n, id, num_tries FROM public.own('w', 10, '{t}');
SELECT ret('try2', 'pending', 'flaky');
SELECT ret('try1', 'pending', 'no luck');
SELECT ret('unlimited', 'pending');
SELECT id, status_code, status, num_tries, max_tries, num_signals, has_token, deadline FROM public.tq;
SELECT n, id, num_tries FROM public.own('w', 10, '{t}');
SELECT ret('try2', 'pending');
SELECT ret('unlimited', 'pending');
SELECT id, status_code, status, num_tries, max_tries, num_signals, has_token, finished FROM public.tq;
-- Unlimited tries: many retries are fine.
DO $$
BEGIN
    FOR i IN 1..20 LOOP
        PERFORM public.ret(o.id, 'pending') FROM public.own('w', 1, '{t}') AS o;
    END LOOP;
END
$$;
SELECT id, status_code, num_tries FROM public.tq WHERE id = 'unlimited';

-- The checks, in order: status_code in_progress (22023), unknown id
-- (42704), token (TQ001), already finished (55000).
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[{"id": "c1", "action": "c"}, {"id": "c2", "action": "c"},
    {"id": "never", "action": "c"}]$$);
SELECT n, id FROM public.own('w', 2, '{c}');
SELECT token AS c1tok FROM public.tokens WHERE id = 'c1' \gset
SELECT expect_error($$SELECT taskq.return_task('ghost', gen_random_uuid(), NULL, 'in_progress')$$);
SELECT expect_error(format('SELECT taskq.return_task(%L, %L, NULL, %L)', 'c1', :'c1tok', 'in_progress'));
SELECT expect_error($$SELECT taskq.return_task('ghost', gen_random_uuid(), NULL, 'completed')$$);
SELECT expect_error($$SELECT taskq.return_task('c1', gen_random_uuid(), NULL, 'completed')$$);
-- A task never owned has no token: any token is invalid.
SELECT expect_error($$SELECT taskq.return_task('never', gen_random_uuid(), NULL, 'completed')$$);
-- The token of another task is invalid too.
SELECT expect_error($$SELECT taskq.return_task('c2', (SELECT token FROM public.tokens WHERE id = 'c1'), NULL, 'completed')$$);
SELECT id, status_code, status, has_token FROM public.tq;
SELECT ret('c1', 'completed', 'first');
-- The token is kept after finishing: the same return repeated (a worker
-- that lost the acknowledgement of its commit) succeeds and changes
-- nothing, not even the status text; another status code says 55000.
SELECT expect_error(format('SELECT taskq.return_task(%L, %L, %L, %L)', 'c1', :'c1tok', 'second', 'completed'));
SELECT id, status_code, status FROM public.tq WHERE id = 'c1';
SELECT expect_error(format('SELECT taskq.return_task(%L, %L, NULL, %L)', 'c1', :'c1tok', 'aborted'));
SELECT expect_error(format('SELECT taskq.return_task(%L, %L, NULL, %L)', 'c1', :'c1tok', 'pending'));
-- ... while a wrong token on a finished task is still TQ001.
SELECT expect_error($$SELECT taskq.return_task('c1', gen_random_uuid(), NULL, 'aborted')$$);
SELECT ret('c2', 'aborted');
SELECT expect_error($$SELECT taskq.return_task('c2', (SELECT token FROM public.tokens WHERE id = 'c2'), NULL, 'completed')$$);
SELECT id, status_code, status FROM public.tq;
-- The token of an earlier try is stale once the task is owned again.
SELECT n, id FROM public.own('w', 1, '{c}');
SELECT token AS old FROM public.tokens WHERE id = 'never' \gset
SELECT ret('never', 'pending');
SELECT n, id, num_tries, fresh_token FROM public.own('w', 1, '{c}');
SELECT expect_error(format('SELECT taskq.return_task(%L, %L, NULL, %L)', 'never', :'old', 'completed'));
SELECT id, status_code, num_tries FROM public.tq WHERE id = 'never';
SELECT ret('never', 'completed');

-- return_tasks: all or none, in id order; statuses may be NULL.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[{"id": "m1", "action": "m", "to_signal_after": ["m9"]},
    {"id": "m2", "action": "m", "to_signal_after": ["m8"]}, {"id": "m3", "action": "m", "max_tries": 1},
    {"id": "m4", "action": "m"}, {"id": "m8", "action": "n"}, {"id": "m9", "action": "n"}]$$);
SELECT n, id FROM public.own('w', 10, '{m}');
-- One invalid token fails the whole call: nothing changes.
SELECT expect_error($$SELECT taskq.return_tasks(ARRAY['m1', 'm2'],
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'm1'), gen_random_uuid()],
    NULL, ARRAY['completed', 'completed']::taskq.status[])$$);
SELECT expect_error($$SELECT taskq.return_tasks(ARRAY['m1', 'ghost'],
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'm1'), gen_random_uuid()],
    NULL, ARRAY['completed', 'completed']::taskq.status[])$$);
SELECT expect_error($$SELECT taskq.return_tasks(ARRAY['m1', 'm2'],
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'm1'), (SELECT token FROM public.tokens WHERE id = 'm2')],
    NULL, ARRAY['completed', 'in_progress']::taskq.status[])$$);
-- The same id twice: 22023.
SELECT expect_error($$SELECT taskq.return_tasks(ARRAY['m1', 'm1'],
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'm1'), (SELECT token FROM public.tokens WHERE id = 'm1')],
    NULL, ARRAY['completed', 'completed']::taskq.status[])$$);
SELECT id, status_code, num_signals, has_token FROM public.tq;
-- Empty arrays: 0.
SELECT taskq.return_tasks('{}', '{}', '{}', '{}');
SELECT taskq.return_tasks('{}', '{}', NULL, '{}');
-- Every code at once, statuses NULL.
SELECT taskq.return_tasks(ARRAY['m4', 'm2', 'm3', 'm1'],
    (SELECT array_agg(token ORDER BY array_position(ARRAY['m4', 'm2', 'm3', 'm1'], id))
       FROM public.tokens WHERE id IN ('m1', 'm2', 'm3', 'm4')),
    NULL, ARRAY['pending', 'aborted', 'pending', 'completed']::taskq.status[]);
SELECT id, status_code, status, num_tries, num_signals, has_token, finished FROM public.tq;
-- With statuses, one of them NULL.
SELECT n, id FROM public.own('w', 10, NULL);
SELECT taskq.return_tasks(ARRAY['m9', 'm4'],
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'm9'), (SELECT token FROM public.tokens WHERE id = 'm4')],
    ARRAY['nine', NULL], ARRAY['completed', 'completed']::taskq.status[]);
SELECT id, status_code, status FROM public.tq WHERE id IN ('m4', 'm9');

-- A batch completing several members of one join signals the join once
-- with the sum: j1 gets its three signals (ready), j2 two of four (still
-- blocked), and the spontaneous js completes and passes its signal on to jt.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[{"id": "j1", "action": "join"}, {"id": "j2", "action": "join"},
    {"id": "jt", "action": "join"}, {"id": "js", "action": "join", "spontaneous": true, "to_signal_after": ["jt"]},
    {"id": "b1", "action": "b", "to_signal_after": ["j1", "j2"]},
    {"id": "b2", "action": "b", "to_signal_after": ["j1", "js"]},
    {"id": "b3", "action": "b", "to_signal_after": ["j1", "j2", "js"]},
    {"id": "b4", "action": "later", "to_signal_after": ["j2"]},
    {"id": "b5", "action": "later", "to_signal_after": ["j2"]}]$$);
SELECT id, num_signals, deps FROM public.tq WHERE action = 'join' ORDER BY id;
SELECT n, id FROM public.own('w', 10, '{b}');
SELECT taskq.return_tasks(ARRAY['b3', 'b1', 'b2'],
    (SELECT array_agg(token ORDER BY array_position(ARRAY['b3', 'b1', 'b2'], id))
       FROM public.tokens WHERE id IN ('b1', 'b2', 'b3')),
    NULL, ARRAY['completed', 'completed', 'completed']::taskq.status[]);
SELECT id, status_code, num_signals, deps FROM public.tq WHERE action = 'join' ORDER BY id;
SELECT n, id FROM public.own('w', 10, '{join}');

-- The completion finds the row where this session's claim wrote it (direct.c,
-- fetch_claimed), and looks the id up as before when that version is not the
-- one the snapshot sees: here an admin's UPDATE wrote a newer one.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[{"id": "u1", "action": "u"}, {"id": "u2", "action": "u"}]$$);
SELECT n, id FROM public.own('w', 2, '{u}');
UPDATE taskq.tasks SET body = '{"edited": true}' WHERE id = 'u1';
SELECT public.ret('u1', 'completed'), public.ret('u2', 'completed');
SELECT id, status_code, body FROM taskq.tasks WHERE id IN ('u1', 'u2') ORDER BY id;
-- The remembered place is used once: after a return that is rolled back,
-- the second one looks the id up, and completes the task.
SELECT taskq.insert_tasks($$[{"id": "u3", "action": "u"}]$$);
SELECT n, id FROM public.own('w', 1, '{u}');
BEGIN;
SELECT public.ret('u3', 'completed');
ROLLBACK;
SELECT id, status_code FROM taskq.tasks WHERE id = 'u3';
SELECT public.ret('u3', 'completed');
SELECT id, status_code FROM taskq.tasks WHERE id = 'u3';
-- The claimed versions' pages are gone (VACUUM truncated the table) and
-- the id is a new task's: the remembered place is not read, and the old
-- token is refused as stale.
SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'v' || g, 'action', 'v',
    'body', jsonb_build_object('pad', repeat('x', 300)))) FROM generate_series(1, 200) g));
SELECT count(*) FROM public.own('w', 200, '{v}');
DELETE FROM taskq.tasks;
VACUUM taskq.tasks;
SELECT pg_relation_size('taskq.tasks') AS size_after_vacuum;
SELECT taskq.insert_tasks($$[{"id": "v200", "action": "v"}]$$);
SELECT public.ret('v200', 'completed');
SELECT id, status_code FROM public.tq WHERE id = 'v200';

-- A return of pending on the last try ended the task aborted; the same
-- return repeated is a no-op too, and completed is not.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[{"id": "last", "action": "l", "max_tries": 1}]$$);
SELECT n, id FROM public.own('w', 1, '{l}', '1 hour');
SELECT ret('last', 'pending', 'flaky');
SELECT ret('last', 'pending', 'flaky again');
SELECT id, status_code, status FROM public.tq WHERE id = 'last';
SELECT expect_error($$SELECT ret('last', 'completed')$$);

-- release_task: back to pending and ready at once, the try not counted,
-- the token gone; it follows return_task's token rules.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[{"id": "rel", "action": "rl", "max_tries": 1},
                             {"id": "rel2", "action": "rl"}]$$);
SELECT n, id, num_tries FROM public.own('w', 1, '{rl}', '1 hour');
SELECT taskq.release_task('rel', (SELECT token FROM public.tokens WHERE id = 'rel'));
SELECT id, status_code, num_tries, actor_id, has_token, deadline FROM public.tq WHERE id = 'rel';
-- with max_tries 1 the released task is claimed again (no try was used)
SELECT n, id, num_tries FROM public.own('w2', 1, '{rl}', '1 hour');
-- the old token is stale, an unknown id is 42704, a finished task 55000
SELECT expect_error($$SELECT taskq.release_task('rel', gen_random_uuid())$$);
SELECT expect_error($$SELECT taskq.release_task('nope', gen_random_uuid())$$);
SELECT ret('rel', 'completed');
SELECT expect_error($$SELECT taskq.release_task('rel', (SELECT token FROM public.tokens WHERE id = 'rel'))$$);
-- a task cancelled while owned ends aborted (cancelled) instead
SELECT n, id FROM public.own('w', 1, '{rl}', '1 hour');
SELECT taskq.cancel_tasks('{rel2}');
SELECT taskq.release_task('rel2', (SELECT token FROM public.tokens WHERE id = 'rel2'));
SELECT id, status_code, status, cancelled FROM taskq.tasks WHERE id = 'rel2';

