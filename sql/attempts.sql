--
-- Attempt history (set_action_policy's keep_attempts, taskq.attempts,
-- task_attempts): a row per claim of an action that keeps them, each
-- outcome, try numbers across retries, releases, expiry and re-drive, a
-- late owner's return and extension of an expired attempt, cancellation,
-- the SQL claim and completion, deletion with the task.  Leases expire by
-- moving action_deadline into the past (no sleeping).
--
SET taskq.default_lease = 0;
DELETE FROM public.tokens;

-- What is stable of a task's attempts.
CREATE FUNCTION pg_temp.att(p_id text)
RETURNS TABLE (try int, actor text, outcome text, status text, result jsonb,
               finished boolean)
LANGUAGE sql AS $$
    SELECT a.try, a.actor, a.outcome, a.status, a.result, a.finished_at IS NOT NULL
      FROM taskq.task_attempts(p_id) AS a
$$;

-- Back-date the task's lease and sweep (a claim of an action with no work).
CREATE FUNCTION pg_temp.expire(p_id text) RETURNS void LANGUAGE sql AS $$
    UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = p_id;
    SELECT count(*) FROM taskq.own_tasks('sweeper', 1, '{at-nothing}');
$$;

-- ---------------------------------------------------------------
-- set_action_policy: arguments, the whole policy set, cleared
-- ---------------------------------------------------------------
SELECT public.expect_error($$SELECT taskq.set_action_policy(NULL, 1, NULL, true)$$);
SELECT public.expect_error($$SELECT taskq.set_action_policy('', 1, NULL, true)$$);
SELECT public.expect_error($$SELECT taskq.set_action_policy(repeat('a', 256), NULL, NULL, true)$$);
SELECT public.expect_error($$SELECT taskq.set_action_policy('at-x', 0, NULL, true)$$);
SELECT public.expect_error($$SELECT taskq.set_action_policy('at-x', NULL, NULL, NULL)$$);
SELECT public.expect_error($$SELECT taskq.set_action_policy('at-x', NULL, '{"delay": "x"}', true)$$);
SELECT public.expect_error($$SELECT taskq.set_action_policy('at-x', NULL, '{"factor": 2}', true)$$);
SELECT count(*) AS nothing_stored FROM taskq.action_policies WHERE action = 'at-x';
-- keep_attempts alone is a policy; each call sets all of it
SELECT taskq.set_action_policy('at-x', NULL, NULL, true);
SELECT action, max_tries, retry, keep_attempts FROM taskq.action_policies WHERE action = 'at-x';
SELECT taskq.set_action_policy('at-x', 3, '{"delay": "1 s"}');
SELECT action, max_tries, retry, keep_attempts FROM taskq.action_policies WHERE action = 'at-x';
SELECT taskq.set_action_policy('at-x', NULL, NULL, true);
SELECT action, max_tries, retry, keep_attempts FROM taskq.action_policies WHERE action = 'at-x';
SELECT taskq.set_action_policy('at-x', NULL, NULL, false);
SELECT count(*) AS cleared FROM taskq.action_policies WHERE action = 'at-x';

-- task_attempts: NULL id, an unknown id, a task of an action that keeps none
SELECT public.expect_error($$SELECT * FROM taskq.task_attempts(NULL)$$);
SELECT public.expect_error($$SELECT * FROM taskq.task_attempts('at-no-such-task')$$);
SELECT taskq.insert_tasks('[{"id": "at-plain", "action": "at-plain"}]');
SELECT n, id, num_tries FROM public.own('w1', 1, '{at-plain}');
SELECT public.ret('at-plain', 'completed');
SELECT count(*) AS no_attempts FROM taskq.task_attempts('at-plain');

-- ---------------------------------------------------------------
-- Each outcome, by the direct claim and completion
-- ---------------------------------------------------------------
SELECT taskq.set_action_policy('at-k', 3, NULL, true);
SELECT taskq.insert_tasks('[{"id": "at-c", "action": "at-k"}, {"id": "at-a", "action": "at-k"},
                            {"id": "at-r", "action": "at-k"}]');
SELECT n, id, num_tries FROM public.own('w1', 3, '{at-k}', '1 hour');
-- held: outcome NULL, claimed at the claim's moment
SELECT a.try, a.actor, a.outcome, a.claimed_at = t.claimed_at AS at_claim, a.finished_at
  FROM taskq.task_attempts('at-c') AS a JOIN taskq.tasks AS t ON t.id = a.task_id;
SELECT taskq.return_task('at-c', (SELECT token FROM public.tokens WHERE id = 'at-c'),
                         'all good', 'completed', NULL, '{"rows": 3}');
SELECT * FROM pg_temp.att('at-c');
SELECT taskq.return_task('at-a', (SELECT token FROM public.tokens WHERE id = 'at-a'),
                         'broken', 'aborted', NULL, '{"error": "x"}');
SELECT * FROM pg_temp.att('at-a');
-- a repeated return changes nothing
SELECT taskq.return_task('at-a', (SELECT token FROM public.tokens WHERE id = 'at-a'),
                         'again', 'aborted');
SELECT * FROM pg_temp.att('at-a');

-- at-r: pending (given back), released, expired, and the last try's
-- pending that aborts it; try numbers count every claim
SELECT public.ret('at-r', 'pending', 'try again');
UPDATE taskq.tasks SET not_before = now() WHERE id = 'at-r';
SELECT n, id, num_tries FROM public.own('w2', 1, '{at-k}', '1 hour');
SELECT taskq.release_task('at-r', (SELECT token FROM public.tokens WHERE id = 'at-r'));
SELECT n, id, num_tries FROM public.own('w3', 1, '{at-k}', '1 hour');
SELECT pg_temp.expire('at-r');
SELECT n, id, num_tries FROM public.own('w4', 1, '{at-k}', '1 hour');
SELECT id, status_code, num_tries FROM taskq.tasks WHERE id = 'at-r';
SELECT * FROM pg_temp.att('at-r');
SELECT public.ret('at-r', 'pending', 'no luck');
SELECT id, status_code, status, num_tries FROM taskq.tasks WHERE id = 'at-r';
SELECT * FROM pg_temp.att('at-r');
-- re-driven: num_tries starts again, the next claim's try follows the last
SELECT taskq.redrive_tasks('{at-r}');
SELECT n, id, num_tries FROM public.own('w6', 1, '{at-k}', '1 hour');
SELECT public.ret('at-r', 'completed');
SELECT try, actor, outcome FROM pg_temp.att('at-r');

-- ---------------------------------------------------------------
-- Expiry: the last try, a late owner's return and extension
-- ---------------------------------------------------------------
SELECT taskq.insert_tasks('[{"id": "at-last", "action": "at-k", "max_tries": 1},
                            {"id": "at-late", "action": "at-k"},
                            {"id": "at-ext", "action": "at-k"}]');
SELECT n, id, num_tries FROM public.own('w1', 3, '{at-k}', '1 hour');
SELECT pg_temp.expire('at-last');
SELECT id, status_code, status FROM taskq.tasks WHERE id = 'at-last';
SELECT * FROM pg_temp.att('at-last');
SELECT pg_temp.expire('at-late');
SELECT * FROM pg_temp.att('at-late');
-- not owned since: the late owner's return ends the expired attempt
SELECT taskq.return_task('at-late', (SELECT token FROM public.tokens WHERE id = 'at-late'),
                         'late', 'completed', NULL, '{"late": true}');
SELECT * FROM pg_temp.att('at-late');
SELECT pg_temp.expire('at-ext');
SELECT * FROM pg_temp.att('at-ext');
-- the late owner's extension holds it again
SELECT * FROM taskq.extend_ownership('w1', '{at-ext}',
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'at-ext')], '1 hour');
SELECT * FROM pg_temp.att('at-ext');
SELECT public.ret('at-ext', 'completed');
SELECT * FROM pg_temp.att('at-ext');
-- a stale owner (another claimed it since) changes nothing
SELECT taskq.insert_tasks('[{"id": "at-stale", "action": "at-k"}]');
SELECT n, id FROM public.own('w1', 1, '{at-k}', '1 hour');
CREATE TEMP TABLE stale_token AS SELECT token FROM public.tokens WHERE id = 'at-stale';
SELECT pg_temp.expire('at-stale');
SELECT n, id, num_tries FROM public.own('w2', 1, '{at-k}', '1 hour');
SELECT public.expect_error($$SELECT taskq.return_task('at-stale', (SELECT token FROM stale_token), NULL, 'completed')$$);
SELECT public.ret('at-stale', 'completed');
SELECT * FROM pg_temp.att('at-stale');

-- ---------------------------------------------------------------
-- Cancelled while held: by the return, the release, the expiry, or
-- the cancel itself when the lease had passed unswept
-- ---------------------------------------------------------------
SELECT taskq.insert_tasks('[{"id": "at-x1", "action": "at-k"}, {"id": "at-x2", "action": "at-k"},
                            {"id": "at-x3", "action": "at-k"}, {"id": "at-x4", "action": "at-k"},
                            {"id": "at-x5", "action": "at-k"}]');
SELECT n, id FROM public.own('w1', 5, '{at-k}', '1 hour');
SELECT taskq.cancel_tasks('{at-x1,at-x2,at-x3}');
SELECT * FROM pg_temp.att('at-x1');
SELECT taskq.return_task('at-x1', (SELECT token FROM public.tokens WHERE id = 'at-x1'),
                         'finished anyway', 'completed', NULL, '{"n": 1}');
SELECT taskq.release_task('at-x2', (SELECT token FROM public.tokens WHERE id = 'at-x2'));
SELECT pg_temp.expire('at-x3');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = 'at-x4';
SELECT taskq.cancel_tasks('{at-x4}');
SELECT id, status_code, status FROM taskq.tasks WHERE id LIKE 'at-x_' ORDER BY id;
SELECT t.id, a.try, a.outcome, a.status, a.result
  FROM taskq.tasks AS t, taskq.task_attempts(t.id) AS a
 WHERE t.id LIKE 'at-x_' ORDER BY t.id, a.try;
-- cancelled after its lease expired and was swept: the attempt stays expired
SELECT pg_temp.expire('at-x5');
SELECT taskq.cancel_tasks('{at-x5}');
SELECT * FROM pg_temp.att('at-x5');

-- ---------------------------------------------------------------
-- return_and_own; return_tasks' batch completion
-- ---------------------------------------------------------------
SELECT taskq.insert_tasks('[{"id": "at-b1", "action": "at-k"}, {"id": "at-b2", "action": "at-k"},
                            {"id": "at-b3", "action": "at-k"}, {"id": "at-p1", "action": "at-plain"}]');
SELECT n, id FROM public.own('w1', 2, '{at-k}', '1 hour');
SELECT id, num_tries FROM taskq.return_and_own(
    '{at-b1,at-b2}', ARRAY[(SELECT token FROM public.tokens WHERE id = 'at-b1'),
                           (SELECT token FROM public.tokens WHERE id = 'at-b2')],
    '{one,two}', '{completed,completed}', 'w7', 5, '{at-k,at-plain}', '1 hour');
SELECT t.id, a.try, a.actor, a.outcome, a.status
  FROM taskq.tasks AS t, taskq.task_attempts(t.id) AS a
 WHERE t.id IN ('at-b1', 'at-b2', 'at-b3', 'at-p1') ORDER BY t.id, a.try;

-- ---------------------------------------------------------------
-- The SQL claim and completion (an admin's trigger on taskq.tasks turns
-- the direct paths off), and the policy turned off while a task is held
-- ---------------------------------------------------------------
CREATE FUNCTION pg_temp.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
SELECT taskq.insert_tasks('[{"id": "at-s1", "action": "at-k"}, {"id": "at-s2", "action": "at-plain"}]');
BEGIN;
CREATE TRIGGER at_noop BEFORE UPDATE ON taskq.tasks FOR EACH ROW EXECUTE FUNCTION pg_temp.noop();
SELECT n, id, num_tries FROM public.own('w8', 5, '{at-k,at-plain}', '1 hour');
SELECT a.try, a.actor, a.outcome, a.claimed_at = t.claimed_at AS at_claim
  FROM taskq.task_attempts('at-s1') AS a JOIN taskq.tasks AS t ON t.id = a.task_id;
SELECT count(*) AS plain_none FROM taskq.task_attempts('at-s2');
SELECT taskq.return_tasks('{at-s1,at-s2}',
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'at-s1'),
          (SELECT token FROM public.tokens WHERE id = 'at-s2')],
    '{sql,sql}', '{completed,completed}', ARRAY['{"via": "sql"}'::jsonb, NULL]);
SELECT * FROM pg_temp.att('at-s1');
ROLLBACK;
DELETE FROM taskq.tasks WHERE id IN ('at-s1', 'at-s2');

-- turned off while held: the attempt stays open (nothing is written for
-- an action that keeps none)
SELECT taskq.insert_tasks('[{"id": "at-off", "action": "at-k"}]');
SELECT n, id FROM public.own('w1', 1, '{at-k}', '1 hour');
SELECT taskq.set_action_policy('at-k', 3, NULL, false);
SELECT public.ret('at-off', 'completed');
SELECT * FROM pg_temp.att('at-off');
-- turned on after a claim it did not record: the next claim's try is its
-- num_tries
SELECT taskq.insert_tasks('[{"id": "at-on", "action": "at-k"}]');
SELECT n, id FROM public.own('w1', 1, '{at-k}', '1 hour');
SELECT public.ret('at-on', 'pending');
SELECT taskq.set_action_policy('at-k', 3, NULL, true);
SELECT n, id, num_tries FROM public.own('w2', 1, '{at-k}', '1 hour');
SELECT public.ret('at-on', 'completed');
SELECT * FROM pg_temp.att('at-on');

-- ---------------------------------------------------------------
-- Deleted with the task: purge_finished, replace_tasks, a DELETE by
-- hand, the completion that deletes (taskq.retention = 0), also when no
-- policy keeps attempts any more
-- ---------------------------------------------------------------
SELECT count(*) AS before FROM taskq.attempts WHERE task_id IN ('at-c', 'at-a', 'at-r');
UPDATE taskq.tasks SET finished_at = now() - interval '2 days' WHERE id IN ('at-c', 'at-a');
SELECT taskq.purge_finished('1 day');
SELECT task_id, count(*) FROM taskq.attempts WHERE task_id IN ('at-c', 'at-a', 'at-r')
 GROUP BY 1 ORDER BY 1;
SELECT taskq.replace_tasks('[{"id": "at-r", "action": "at-k"}]');
SELECT count(*) AS replaced FROM taskq.task_attempts('at-r');
DELETE FROM taskq.tasks WHERE id = 'at-r';
DELETE FROM taskq.tasks WHERE id = 'at-late';
SELECT count(*) AS by_hand FROM taskq.attempts WHERE task_id = 'at-late';
SET taskq.retention = 0;
SELECT taskq.insert_tasks('[{"id": "at-gone", "action": "at-k"}]');
SELECT n, id FROM public.own('w1', 1, '{at-k}', '1 hour');
SELECT count(*) AS held FROM taskq.attempts WHERE task_id = 'at-gone';
SELECT public.ret('at-gone', 'completed');
SELECT count(*) AS task, (SELECT count(*) FROM taskq.attempts WHERE task_id = 'at-gone') AS attempts
  FROM taskq.tasks WHERE id = 'at-gone';
RESET taskq.retention;
SELECT taskq.set_action_policy('at-k', NULL, NULL, false);
SELECT count(*) > 0 AS rows_left FROM taskq.attempts;
DELETE FROM taskq.tasks WHERE id LIKE 'at-%';
SELECT count(*) AS none_left FROM taskq.attempts;
DELETE FROM public.tokens;
RESET taskq.default_lease;
