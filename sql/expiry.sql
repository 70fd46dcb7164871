--
-- Lease expiry: late owners, stale owners, the last try.  Leases are made
-- to expire by moving action_deadline into the past (no sleeping).
--
-- These cases give every lease explicitly or check a claim without a
-- deadline: taskq.default_lease = 0 keeps the 0.x rule (no max_duration, no
-- deadline).  The default lease itself is checked in own.sql.
SET taskq.default_lease = 0;
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

SELECT taskq.insert_tasks($$[
    {"id": "late1", "action": "e", "to_signal_after": ["next1"]},
    {"id": "next1", "action": "f"},
    {"id": "late2", "action": "e"},
    {"id": "late3", "action": "e"},
    {"id": "stale", "action": "e", "priority": -1},
    {"id": "forever", "action": "g"}]$$);
SELECT n, id, deadline FROM public.own('w1', 4, '{e}', '1 hour');
SELECT n, id, deadline FROM public.own('w1', 1, '{g}');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 second'
 WHERE id IN ('late1', 'late2', 'late3', 'stale');
SELECT id, status_code, actor_id, has_token, deadline FROM public.tq;

-- Expired but not swept yet: the late owner may still return it.
SELECT ret('late1', 'completed', 'late but fine');
SELECT id, status_code, status, has_token, deadline, finished FROM public.tq WHERE id IN ('late1', 'next1');

-- A claim sweeps expired leases: tries left, so back to pending, keeping
-- token, actor and deadline.  A claim for another action does the sweep
-- without taking them.
SELECT n, id FROM public.own('w2', 10, '{f}');
SELECT id, status_code, num_tries, actor_id, has_token, deadline FROM public.tq;
SELECT token = performance_token AS token_kept
  FROM taskq.tasks JOIN public.tokens USING (id) WHERE id IN ('late2', 'late3', 'stale') ORDER BY id;

-- A requeued lease has started: it cannot be given a new predecessor.
SELECT expect_error($$SELECT taskq.insert_tasks('[{"id": "n", "action": "a", "to_signal_after": ["late2"]}]')$$);
SELECT expect_error($$SELECT taskq.add_dependencies('{next1}', '{late2}')$$);

-- The late owner may still return it (nobody owned it since) ...
SELECT ret('late2', 'completed');
-- ... or extend it, which takes it back to in progress.
SELECT * FROM taskq.extend_ownership('w1', ARRAY['late3'],
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'late3')], '1 hour');
SELECT id, status_code, num_tries, actor_id, has_token, deadline, finished
  FROM public.tq WHERE id IN ('late2', 'late3');
SELECT ret('late3', 'pending');
SELECT id, status_code, num_tries, actor_id, has_token, deadline FROM public.tq WHERE id = 'late3';

-- Once someone else owns it, the late owner's token is stale: TQ001 and
-- nothing changes; extending it says false.
SELECT token AS stale_tok FROM public.tokens WHERE id = 'stale' \gset
SELECT n, id, num_tries, fresh_token FROM public.own('w3', 1, '{e}');
SELECT n, id, num_tries, fresh_token FROM public.own('w3', 1, '{e}');
SELECT expect_error(format('SELECT taskq.return_task(%L, %L, NULL, %L)', 'stale', :'stale_tok', 'completed'));
SELECT expect_error(format('SELECT taskq.return_task(%L, %L, NULL, %L)', 'stale', :'stale_tok', 'aborted'));
SELECT * FROM taskq.extend_ownership('w1', ARRAY['stale'], ARRAY[:'stale_tok'::uuid], '1 hour');
SELECT id, status_code, num_tries, actor_id, has_token, deadline, finished
  FROM public.tq WHERE id = 'stale';
SELECT ret('stale', 'completed', 'by w3');
SELECT id, status_code, status, actor_id FROM public.tq WHERE id = 'stale';

-- A lease without deadline never expires.
SELECT id, status_code, actor_id, deadline FROM public.tq WHERE id = 'forever';
SELECT ret('forever', 'completed');

-- A requeued lease keeps its place: original priority, then insertion order.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[{"id": "q1", "action": "q"}, {"id": "q2", "action": "q"},
    {"id": "q3", "action": "q", "priority": 1}]$$);
SELECT n, id FROM public.own('w', 1, '{q}', '1 minute');
SELECT n, id FROM public.own('w', 1, '{q}', '1 minute');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = 'q1';
SELECT n, id, num_tries FROM public.own('w', 10, '{q}', '1 minute');

-- A lease that expires on the last try: never handed out again, aborted
-- with the cascade.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[
    {"id": "one", "action": "l", "max_tries": 1, "to_signal_after": ["child"]},
    {"id": "child", "action": "c", "to_signal_after": ["grandchild"]},
    {"id": "grandchild", "action": "c"},
    {"id": "two", "action": "l", "max_tries": 2}]$$);
SELECT n, id, num_tries FROM public.own('w', 10, '{l}', '1 hour');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id IN ('one', 'two');
SELECT n, id, num_tries FROM public.own('w', 10, '{l}', '1 hour');
SELECT id, status_code, status, num_tries, max_tries, num_signals, has_token, deadline, finished
  FROM public.tq;
-- The late owner of the aborted task is told it is finished.
SELECT expect_error($$SELECT taskq.return_task('one', (SELECT token FROM public.tokens WHERE id = 'one'), NULL, 'completed')$$);
SELECT * FROM taskq.extend_ownership('w', ARRAY['one'],
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'one')], '1 hour');
-- The second try of "two" expires too: aborted the same way.
UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = 'two';
SELECT n, id, num_tries FROM public.own('w', 10, NULL, '1 hour');
SELECT id, status_code, status, num_tries, max_tries, has_token, deadline, finished
  FROM public.tq WHERE id = 'two';
-- On the last try too, the late owner may return the task as long as no
-- claim has swept it yet.
SELECT taskq.insert_tasks('[{"id": "three", "action": "l", "max_tries": 1}]');
SELECT n, id, num_tries FROM public.own('w', 10, '{l}', '1 hour');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = 'three';
SELECT ret('three', 'completed', 'just in time');
SELECT id, status_code, status, deadline, finished FROM public.tq WHERE id = 'three';
SELECT n, id FROM public.own('w', 10, NULL);
SELECT count(*) FILTER (WHERE status_code = 'aborted') AS aborted,
       count(*) FILTER (WHERE status_code = 'completed') AS completed,
       count(*) AS total
  FROM taskq.tasks;
