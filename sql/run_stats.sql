--
-- The statistics of runs count execution: run_steps' started_at is when the
-- visit's last try was claimed (taskq.tasks.claimed_at, NULL before), and
-- state_stats' seconds run from that claim to the successful finish, so the
-- wait in the queue is not counted.  A saga's undo has rows of its own.
-- Times are back-dated rows, never waited for.
--
CREATE FUNCTION pg_temp.tok(p_id text) RETURNS uuid
LANGUAGE sql AS $$ SELECT k.token FROM public.tokens AS k WHERE k.id = p_id $$;

-- ---------------------------------------------------------------
-- claimed_at: set by each claim to its moment, kept by a return to pending
-- ---------------------------------------------------------------
SELECT taskq.insert_tasks('[{"id": "ca1", "action": "rs-plain"}]');
SELECT id, claimed_at IS NULL AS never_claimed FROM taskq.tasks WHERE id = 'ca1';
-- the claim's moment is the transaction's now(), which the lease runs from
BEGIN;
SELECT n, id FROM public.own('w', 1, '{rs-plain}', '1 min');
SELECT claimed_at = now() AS claimed_now, action_deadline = claimed_at + interval '1 min' AS lease_from_it
  FROM taskq.tasks WHERE id = 'ca1';
COMMIT;
-- a retry leaves it; the next claim sets it again
UPDATE taskq.tasks SET claimed_at = claimed_at - interval '1 hour' WHERE id = 'ca1';
SELECT taskq.return_task('ca1', pg_temp.tok('ca1'), 'again', 'pending', '0 s');
SELECT status_code, claimed_at < now() - interval '59 min' AS kept FROM taskq.tasks WHERE id = 'ca1';
BEGIN;
SELECT n, id, num_tries FROM public.own('w', 1, '{rs-plain}');
SELECT claimed_at = now() AS claimed_again FROM taskq.tasks WHERE id = 'ca1';
COMMIT;
SELECT public.ret('ca1', 'completed');
-- the SQL claim (an admin's trigger on taskq.tasks turns the direct one
-- off) sets it too
CREATE FUNCTION pg_temp.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
SELECT taskq.insert_tasks('[{"id": "ca2", "action": "rs-plain"}]');
BEGIN;
CREATE TRIGGER rs_noop BEFORE UPDATE ON taskq.tasks FOR EACH ROW EXECUTE FUNCTION pg_temp.noop();
SELECT n, id FROM public.own('w', 1, '{rs-plain}');
SELECT claimed_at = now() AS sql_claim_sets_it FROM taskq.tasks WHERE id = 'ca2';
ROLLBACK;
DELETE FROM taskq.tasks WHERE id IN ('ca1', 'ca2');

-- ---------------------------------------------------------------
-- A machine: a step that waited an hour in the queue and ran for an
-- instant, and one that ran for ten minutes
-- ---------------------------------------------------------------
SELECT taskq.define_machine('rs-m', '{"states": [
    {"name": "A", "action": "rs-a", "initial": true, "transitions": [{"event": "ok", "to": "B"}]},
    {"name": "B", "action": "rs-b", "final": true}]}') AS v1;
SELECT taskq.start_machine('rs-m', 'rm1');
SELECT seq, step, status_code, started_at IS NULL AS not_started FROM taskq.run_steps('rm1');
UPDATE taskq.tasks SET created_at = now() - interval '1 hour', not_before = now() - interval '1 hour'
 WHERE id = 'rm1/1';
BEGIN;
SELECT n, id FROM public.own('w', 1, '{rs-a}');
SELECT seq, step, status_code, started_at = now() AS started_at_claim FROM taskq.run_steps('rm1');
COMMIT;
SELECT taskq.transition('rm1/1', pg_temp.tok('rm1/1'), 'ok') AS next;
SELECT n, id FROM public.own('w', 1, '{rs-b}');
-- B's try was claimed ten minutes ago
UPDATE taskq.tasks SET claimed_at = claimed_at - interval '10 min' WHERE id = 'rm1/2';
SELECT taskq.transition('rm1/2', pg_temp.tok('rm1/2'), NULL) AS ended;
SELECT seq, step, status_code, finished_at - started_at < interval '1 min' AS quick,
       finished_at - started_at >= interval '10 min' AS ten_minutes
  FROM taskq.run_steps('rm1');
-- A's hour in the queue is not counted; B's ten minutes are
SELECT state, entered, succeeded, avg_seconds < 60 AS a_minute_at_most,
       avg_seconds BETWEEN 600 AND 660 AS ten_minutes, p95_seconds = avg_seconds AS one_visit
  FROM taskq.state_stats WHERE definition = 'rs-m' ORDER BY state;

-- ---------------------------------------------------------------
-- A saga: the undo of a step is counted as "<step>:undo", not as the step
-- ---------------------------------------------------------------
SELECT taskq.define_saga('rs-s', '{"steps": [
    {"name": "first", "do": "rs-s-a", "undo": "rs-s-ua"},
    {"name": "second", "do": "rs-s-b", "after": ["first"]}]}') AS v1;
SELECT taskq.start_saga('rs-s', 'rsa1');
SELECT n, id FROM public.own('w', 1, '{rs-s-a}');
SELECT taskq.return_step('rsa1/1', pg_temp.tok('rsa1/1'), 'success');
SELECT n, id FROM public.own('w', 1, '{rs-s-b}');
SELECT taskq.return_step('rsa1/2', pg_temp.tok('rsa1/2'), 'fatal', NULL, 'no');
SELECT n, id, action FROM public.own('w', 1, '{rs-s-ua}');
-- the undo ran for five minutes
UPDATE taskq.tasks SET claimed_at = claimed_at - interval '5 min' WHERE id = 'rsa1/3';
SELECT taskq.return_step('rsa1/3', pg_temp.tok('rsa1/3'), 'success');
SELECT status FROM taskq.runs WHERE id = 'rsa1';
SELECT seq, step, direction, status_code, started_at IS NOT NULL AS started
  FROM taskq.run_steps('rsa1');
SELECT state, in_state, entered, succeeded, failed_tries,
       avg_seconds < 60 AS a_minute_at_most, avg_seconds BETWEEN 300 AND 360 AS five_minutes
  FROM taskq.state_stats WHERE definition = 'rs-s';

-- Nothing left for the files after this one.
DELETE FROM taskq.runs WHERE id IN ('rm1', 'rsa1');
DELETE FROM taskq.tasks WHERE workflow IN ('rm1', 'rsa1');
DELETE FROM taskq.saga_steps WHERE run = 'rsa1';
DELETE FROM taskq.definitions WHERE name IN ('rs-m', 'rs-s');
