--
-- own_tasks (actions filter, order, max_tasks, tokens, tries, deadlines)
-- and extend_ownership.
--
-- These cases give every lease explicitly or check a claim without a
-- deadline: taskq.default_lease = 0 keeps the 0.x rule (no max_duration, no
-- deadline).  The default lease itself is checked at the end of this file.
SET taskq.default_lease = 0;
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

SELECT taskq.insert_tasks($$[
    {"id": "x1", "action": "x", "body": {"n": 1}},
    {"id": "y1", "action": "y", "priority": 1},
    {"id": "z1", "action": "z"},
    {"id": "x2", "action": "x", "priority": 2},
    {"id": "blocked", "action": "x", "priority": 99},
    {"id": "y2", "action": "y", "to_signal_after": ["blocked"]}]$$);

-- max_tasks 0 and an empty actions array: empty result, nothing claimed.
SELECT * FROM taskq.own_tasks('w', 0, NULL);
SELECT * FROM taskq.own_tasks('w', 5, '{}');
SELECT count(*) FILTER (WHERE status_code = 'pending') AS pending FROM taskq.tasks;

-- Only the given actions; an unknown action gives nothing.
SELECT * FROM public.own('w', 5, '{nothing}');
SELECT * FROM public.own('w1', 5, '{y}');
-- Several actions (a duplicate is harmless), in priority then insertion order;
-- the blocked task is not claimable.
SELECT * FROM public.own('w2', 5, '{z,x,z}');
-- NULL: any action; nothing is left.
SELECT * FROM public.own('w3', 5, NULL);

-- What own_tasks returns and stores.
SELECT taskq.insert_tasks('[{"id": "r1", "action": "r", "body": [true]}, {"id": "r2", "action": "r"}]');
BEGIN;
SELECT id, token IS NOT NULL AS has_token, action, body, num_tries,
       action_deadline = now() + interval '5 minutes' AS deadline_now_plus_duration
  FROM taskq.own_tasks('worker-1', 1, '{r}', '5 minutes');
SELECT id, status_code, actor_id, num_tries, has_token, deadline
  FROM public.tq WHERE id = 'r1';
COMMIT;
-- Without max_duration: no deadline.
SELECT id, token IS NOT NULL AS has_token, action_deadline IS NULL AS no_deadline
  FROM taskq.own_tasks('worker-2', 1, '{r}');
SELECT id, status_code, actor_id, deadline FROM public.tq WHERE id IN ('r1', 'r2');
SELECT * FROM taskq.own_tasks('w', 10, '{r}');

-- A task given back for another try gets a fresh token and one more try.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks('[{"id": "t", "action": "t"}]');
SELECT * FROM public.own('w', 1, '{t}', '1 hour');
SELECT ret('t', 'pending', 'again');
SELECT id, status_code, status, num_tries, actor_id, has_token, deadline FROM public.tq;
SELECT * FROM public.own('w', 1, '{t}', '1 hour');
SELECT ret('t', 'pending');
SELECT * FROM public.own('other', 1, NULL);
SELECT id, status_code, status, num_tries, actor_id, has_token, deadline FROM public.tq;
-- Keep the token of "t" for extend_ownership below.
SELECT token AS tok FROM public.tokens WHERE id = 't' \gset

-- extend_ownership: one row per element, in argument order.
SELECT taskq.insert_tasks('[{"id": "e1", "action": "e"}, {"id": "e2", "action": "e"}, {"id": "e3", "action": "e"}]');
SELECT n, id, deadline FROM public.own('ext', 3, '{e}', '1 minute');
SELECT ret('e3', 'completed');
BEGIN;
SELECT * FROM taskq.extend_ownership('ext',
    ARRAY['e2', 'ghost', 'e1', 'e3', 't'],
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'e2'),
          gen_random_uuid(),
          (SELECT token FROM public.tokens WHERE id = 'e1'),
          (SELECT token FROM public.tokens WHERE id = 'e3'),
          (SELECT token FROM public.tokens WHERE id = 't')],
    '2 hours');
-- The extended leases end at now() + max_duration; e3 (finished) and t (owned
-- by another actor) are untouched.
SELECT id, status_code, action_deadline = now() + interval '2 hours' AS extended
  FROM taskq.tasks WHERE id IN ('e1', 'e2', 'e3', 't') ORDER BY id;
COMMIT;
-- A wrong token, or the right token from another actor: not owned.
SELECT * FROM taskq.extend_ownership('ext', ARRAY['e1', 'e2'],
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'e2'),
          (SELECT token FROM public.tokens WHERE id = 'e1')], '1 hour');
SELECT * FROM taskq.extend_ownership('someone-else', ARRAY['e1'],
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'e1')], '1 hour');
-- The actor of 't' can extend it; a lease without deadline gets one.
SELECT * FROM taskq.extend_ownership('other', ARRAY['t'], ARRAY[:'tok'::uuid], '1 hour');
SELECT id, actor_id, deadline FROM public.tq WHERE id = 't';
-- A task given back for another try has no owner to extend it.
SELECT ret('e1', 'pending');
SELECT * FROM taskq.extend_ownership('ext', ARRAY['e1'],
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'e1')], '1 hour');
SELECT id, status_code, has_token, deadline FROM public.tq WHERE id = 'e1';
-- Empty arrays: no rows.
SELECT * FROM taskq.extend_ownership('ext', '{}', '{}', '1 hour');
-- The same id twice: one row each.
SELECT * FROM taskq.extend_ownership('ext', ARRAY['e2', 'e2'],
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'e2'),
          (SELECT token FROM public.tokens WHERE id = 'e2')], '1 hour');
SELECT id, status_code, actor_id, num_tries, has_token, deadline FROM public.tq;

-- taskq.default_lease: a claim without max_duration gets a lease of that
-- long (5 minutes by default); 0 keeps the claim without a deadline.
RESET taskq.default_lease;
SHOW taskq.default_lease;
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[{"id": "dl1", "action": "dl"}, {"id": "dl2", "action": "dl"}]$$);
SELECT id, action_deadline = now() + interval '5 minutes' AS five_minutes
  FROM taskq.own_tasks('w', 1, '{dl}');
SET taskq.default_lease = '90s';
SELECT id, action_deadline = now() + interval '90 seconds' AS ninety_seconds
  FROM taskq.return_and_own('{}', '{}', NULL, '{}', 'w', 1, '{dl}');
SET taskq.default_lease = 0;

