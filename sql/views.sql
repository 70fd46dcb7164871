--
-- Monitoring views: taskq.action_stats and taskq.tasks_in_progress.
-- Counts and booleans only (no raw timestamps or durations).
--
-- These cases give every lease explicitly or check a claim without a
-- deadline: taskq.default_lease = 0 keeps the 0.x rule (no max_duration, no
-- deadline).  The default lease itself is checked in own.sql.
SET taskq.default_lease = 0;
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

-- Empty queue: no rows.
SELECT * FROM taskq.action_stats;
SELECT * FROM taskq.tasks_in_progress;

SELECT taskq.insert_tasks($$[
    {"id": "r1", "action": "a"}, {"id": "r2", "action": "a"},
    {"id": "ip1", "action": "a"}, {"id": "ip2", "action": "a"},
    {"id": "exp1", "action": "a"}, {"id": "exp2", "action": "a"},
    {"id": "done", "action": "a"}, {"id": "fail", "action": "a", "to_signal_after": ["casc"]},
    {"id": "casc", "action": "a"},
    {"id": "blk", "action": "a"}, {"id": "pred", "action": "b", "to_signal_after": ["blk"]},
    {"id": "later", "action": "a", "not_before": "2999-01-01T00:00:00Z"},
    {"id": "b_run", "action": "b", "max_tries": 3},
    {"id": "c_exp", "action": "c"}]$$);
SELECT action, ready, blocked, delayed, in_progress, lease_expired, completed, aborted,
       oldest_ready_age IS NOT NULL AS has_ready_age
  FROM taskq.action_stats ORDER BY action;

-- Claim and finish some of them (r1, r2, pred and blk are left alone).
SELECT n, id FROM public.own('w1', 1, '{c}', '1 hour');
SELECT n, id FROM public.own('w1', 1, '{b}', '1 hour');
UPDATE taskq.tasks SET priority = -1 WHERE id IN ('r1', 'r2', 'blk');
UPDATE taskq.tasks SET priority = 1 WHERE id IN ('ip1', 'ip2', 'exp1', 'exp2', 'done', 'fail');
SELECT n, id FROM public.own('w2', 1, '{a}', '1 hour');
SELECT n, id FROM public.own('w3', 1, '{a}');
SELECT n, id FROM public.own('w4', 4, '{a}', '1 hour');
SELECT ret('done', 'completed');
SELECT ret('fail', 'aborted');
-- exp1: in progress past its deadline; exp2 and c_exp: requeued by a claim's
-- sweep, token kept, not re-owned (not counted as ready).
UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id IN ('exp2', 'c_exp');
SELECT n, id FROM public.own('w9', 1, '{none}');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = 'exp1';
-- The oldest ready task of "a" has waited at least an hour.
UPDATE taskq.tasks SET not_before = now() - interval '1 hour' WHERE id = 'r1';
SELECT id, status_code, actor_id, has_token, deadline FROM public.tq;

SELECT action, ready, blocked, delayed, in_progress, lease_expired, completed, aborted,
       oldest_ready_age IS NOT NULL AS has_ready_age,
       oldest_ready_age >= interval '1 hour' AS waited_an_hour
  FROM taskq.action_stats ORDER BY action;
SELECT pg_typeof(ready) AS counts, pg_typeof(oldest_ready_age) AS age
  FROM taskq.action_stats LIMIT 1;

-- tasks_in_progress: earliest deadline first, no deadline last, then id.
SELECT id, action, actor_id, num_tries, max_tries,
       action_deadline IS NULL AS no_deadline,
       time_left > interval '0' AS time_left_positive,
       lease_expired
  FROM taskq.tasks_in_progress;
-- time_left is the deadline minus now.
SELECT bool_and(time_left = action_deadline - now()) AS consistent
  FROM taskq.tasks_in_progress WHERE action_deadline IS NOT NULL;

-- After a claim sweeps exp1 it leaves the view (requeued, still counted as
-- lease_expired until owned again); once owned it counts as in progress.
SELECT n, id FROM public.own('w9', 1, '{none}');
SELECT id FROM taskq.tasks_in_progress;
SELECT action, ready, in_progress, lease_expired FROM taskq.action_stats WHERE action = 'a';
SELECT n, id FROM public.own('w5', 1, '{c}', '1 hour');
SELECT action, ready, in_progress, lease_expired FROM taskq.action_stats WHERE action = 'c';
-- Back-dating not_before makes the delayed task ready.
UPDATE taskq.tasks SET not_before = now() - interval '1 second' WHERE id = 'later';
SELECT action, ready, delayed FROM taskq.action_stats WHERE action = 'a';
