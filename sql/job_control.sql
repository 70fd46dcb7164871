--
-- Job control: retry policies with backoff, an explicit retry delay, the
-- idempotent enqueue, cancellation of tasks and workflows, dead letters
-- and re-driving them.  Delays are checked as bounds, never waited out.
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
DELETE FROM taskq.action_policies;
DELETE FROM taskq.cancelled_workflows;

-- A policy per action: default max_tries and backoff for tasks that give none.
SELECT taskq.set_action_policy('flaky', 3, '{"delay": "10 s", "factor": 2, "max_delay": "25 s"}');
SELECT expect_error($$SELECT taskq.set_action_policy('flaky', 0)$$);
SELECT expect_error($$SELECT taskq.set_action_policy('flaky', 3, '{"factor": 2}')$$);
SELECT expect_error($$SELECT taskq.set_action_policy('flaky', 3, '{"delay": "1 s", "max_delay": "0.5 s"}')$$);
SELECT expect_error($$SELECT taskq.set_action_policy('flaky', 3, '{"delay": "1 s", "jitter": 2}')$$);
SELECT expect_error($$SELECT taskq.set_action_policy('flaky', 3, '{"delay": "soon"}')$$);
SELECT expect_error($$SELECT taskq.set_action_policy('flaky', 3, '{"delay": "1 s", "bogus": 1}')$$);
SELECT action, max_tries, retry FROM taskq.action_policies;

SELECT taskq.insert_tasks($$[
    {"id": "f1", "action": "flaky"},
    {"id": "f2", "action": "flaky", "max_tries": 5, "retry": {"delay": "1 min"}},
    {"id": "f3", "action": "steady"}]$$);
SELECT id, max_tries, retry FROM taskq.tasks ORDER BY id;

-- Returning pending schedules the next try by the policy: 10 s, then 20 s,
-- then at most 25 s; the task is delayed meanwhile, not ready.
SELECT n, id, num_tries FROM public.own('w', 1, '{flaky}');
SELECT ret('f1', 'pending', 'try 1 failed');
SELECT id, status_code, status, num_tries,
       not_before - now() BETWEEN interval '9 s' AND interval '10 s' AS waits_10s
  FROM taskq.tasks WHERE id = 'f1';
SELECT action, ready, delayed FROM taskq.action_stats WHERE action = 'flaky';
SELECT n, id FROM public.own('w', 1, '{flaky}');   -- f2, not the delayed f1
UPDATE taskq.tasks SET not_before = now() WHERE id = 'f1';
SELECT n, id, num_tries FROM public.own('w', 1, '{flaky}');
SELECT ret('f1', 'pending');
SELECT not_before - now() BETWEEN interval '19 s' AND interval '20 s' AS waits_20s
  FROM taskq.tasks WHERE id = 'f1';
UPDATE taskq.tasks SET not_before = now() WHERE id = 'f1';
SELECT n, id, num_tries FROM public.own('w', 1, '{flaky}');
-- the third try was the last (max_tries 3 from the policy): aborted
SELECT ret('f1', 'pending', 'try 3 failed');
SELECT id, status_code, status, num_tries FROM taskq.tasks WHERE id = 'f1';

-- The task's own policy wins over the action's: 1 min.
SELECT ret('f2', 'pending');
SELECT not_before - now() BETWEEN interval '59 s' AND interval '60 s' AS waits_1min
  FROM taskq.tasks WHERE id = 'f2';
-- An explicit delay wins over both; none at all without a policy.
UPDATE taskq.tasks SET not_before = now() WHERE id = 'f2';
SELECT n, id FROM public.own('w', 1, '{flaky}');
SELECT taskq.return_task('f2', (SELECT token FROM public.tokens WHERE id = 'f2'), NULL, 'pending', '5 s');
SELECT not_before - now() BETWEEN interval '4 s' AND interval '5 s' AS waits_5s
  FROM taskq.tasks WHERE id = 'f2';
SELECT n, id FROM public.own('w', 1, '{steady}');
SELECT ret('f3', 'pending');
SELECT not_before <= now() AS ready_at_once FROM taskq.tasks WHERE id = 'f3';
SELECT expect_error($$SELECT taskq.return_task('f3', gen_random_uuid(), NULL, 'completed', '1 s')$$);
SELECT expect_error($$SELECT taskq.return_task('f3', gen_random_uuid(), NULL, 'pending', '-1 s')$$);
-- Jitter spreads the wait within +-jitter.
SELECT bool_and(taskq._backoff('{"delay": "10 s", "jitter": 0.5}', 1)
                BETWEEN interval '5 s' AND interval '15 s') AS jitter_in_bounds
  FROM generate_series(1, 200);
SELECT taskq._backoff('{"delay": "1 s", "factor": 3}', 4) AS fourth_wait,
       taskq._backoff('{"delay": "1 s"}', 1000) >= interval '1 year' AS huge_tries_capped,
       taskq._backoff(NULL, 3) AS no_policy;
SELECT expect_error($$SELECT taskq.insert_tasks('[{"id": "r", "action": "a", "retry": {"delay": 5}}]')$$);
SELECT expect_error($$SELECT taskq.insert_tasks('[{"id": "r", "action": "a", "retry": "3 s"}]')$$);
-- Clearing a policy.
SELECT taskq.set_action_policy('flaky');
SELECT count(*) AS policies FROM taskq.action_policies;

-- The idempotent enqueue: existing ids are left alone and reported.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks('[{"id": "d1", "action": "x", "body": {"v": 1}}]');
SELECT * FROM taskq.insert_tasks_if_absent($$[
    {"id": "d1", "action": "x", "body": {"v": 2}},
    {"id": "d2", "action": "x", "to_signal_after": ["d1"]},
    {"id": "d3", "action": "x"}]$$);
SELECT id, body, num_signals, to_signal_after FROM taskq.tasks ORDER BY id;
SELECT * FROM taskq.insert_tasks_if_absent('[]');
-- Duplicates inside the batch are still an error, and a skipped id keeps
-- the rules of a stored successor: d2 has started now.
SELECT expect_error($$SELECT * FROM taskq.insert_tasks_if_absent('[{"id": "e", "action": "x"}, {"id": "e", "action": "x"}]')$$);
SELECT n, id FROM public.own('w', 1, '{x}');
SELECT expect_error($$SELECT * FROM taskq.insert_tasks_if_absent('[{"id": "d2", "action": "x"}, {"id": "e", "action": "x", "to_signal_after": ["d2"]}]')$$);
SELECT count(*) AS tasks FROM taskq.tasks;

-- Cancellation.  A workflow: create (owned) -> configure -> report, and a
-- pending sibling.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[
    {"id": "create", "action": "site", "workflow": "site-7", "to_signal_after": ["configure"]},
    {"id": "configure", "action": "site", "workflow": "site-7", "to_signal_after": ["report"]},
    {"id": "report", "action": "report"},
    {"id": "sibling", "action": "site", "workflow": "site-7"},
    {"id": "other", "action": "site", "workflow": "site-8"}]$$);
SELECT n, id FROM public.own('w', 1, '{site}', '1 hour');
-- What nobody owns is aborted at once, with the cascade (report has no key);
-- the owned task is marked.
SELECT taskq.cancel_workflow('site-7');
SELECT id, status_code, status, cancelled, num_signals FROM taskq.tasks ORDER BY id;
-- The owner finds out at its next heartbeat ...
SELECT owned FROM taskq.extend_ownership('w', '{create}',
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'create')], '1 hour');
-- ... and whatever it returns, the task ends aborted: never resurrected.
SELECT ret('create', 'pending', 'will retry');
SELECT id, status_code, status, cancelled FROM taskq.tasks WHERE id = 'create';
SELECT expect_error($$SELECT ret('create', 'completed')$$);
-- A task inserted later under the cancelled key never runs.
SELECT taskq.insert_tasks('[{"id": "late", "action": "site", "workflow": "site-7", "to_signal_after": ["after-late"]}, {"id": "after-late", "action": "x"}]');
SELECT id, status_code, status FROM taskq.tasks WHERE id IN ('late', 'after-late') ORDER BY id;
SELECT count(*) AS claimable FROM taskq.own_tasks('w', 10, '{site}');
-- Cancelling again, or a finished or unknown task, does nothing.
SELECT taskq.cancel_workflow('site-7');
SELECT taskq.cancel_tasks('{create,ghost}');
-- Cancel single tasks: one owned (its lease expires: the sweep aborts it,
-- not requeue it), one pending.
SELECT taskq.insert_tasks('[{"id": "c1", "action": "c"}, {"id": "c2", "action": "c"}]');
SELECT n, id FROM public.own('w', 1, '{c}', '1 hour');
SELECT taskq.cancel_tasks('{c1,c2}');
BEGIN;
UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE id = 'c1';
SELECT count(*) AS claimed FROM taskq.own_tasks('w2', 10, '{c}');
SELECT id, status_code, status FROM taskq.tasks WHERE id IN ('c1', 'c2') ORDER BY id;
COMMIT;
SELECT expect_error($$SELECT taskq.cancel_workflow('')$$);
SELECT expect_error($$SELECT taskq.cancel_tasks(NULL)$$);
SELECT taskq.cancel_tasks('{}');

-- Dead letters: aborted tasks with their last status and tries.
SELECT id, status, num_tries, workflow, cancelled FROM taskq.dead_letters ORDER BY id;

-- Re-drive: pending again with no tries used; its successors wait for it
-- again (num_signals + 1), so the counts stay exact.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[
    {"id": "p", "action": "p", "max_tries": 1, "to_signal_after": ["s"]},
    {"id": "s", "action": "s"}]$$);
SELECT n, id FROM public.own('w', 1, '{p}');
SELECT ret('p', 'pending', 'failed');
SELECT id, status_code, status, num_tries, num_signals FROM taskq.tasks ORDER BY id;
SELECT expect_error($$SELECT taskq.redrive_tasks('{p,ghost}')$$);
SELECT expect_error($$SELECT taskq.redrive_tasks('{p,p}')$$);
SELECT taskq.redrive_tasks('{p,s}');
SELECT id, status_code, status, num_tries, num_signals FROM taskq.tasks ORDER BY id;
SELECT expect_error($$SELECT taskq.redrive_tasks('{p}')$$);
SELECT n, id, num_tries FROM public.own('w', 1, '{p}');
SELECT ret('p', 'completed');
SELECT n, id FROM public.own('w', 1, '{s}');
SELECT id, status_code, num_signals FROM taskq.tasks ORDER BY id;

-- Jobs (a file import with a progress bar): create-job -> one process-item per row ->
-- job-completed, with item counts and progress from several workers.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
DELETE FROM taskq.jobs;
SELECT taskq.create_job('import-1', '[{"id": "import-1/create", "action": "create-job", "body": {"file": "rows.csv"}}]');
SELECT id, state, item_count, item_progress FROM taskq.job_states;
SELECT id, action, workflow FROM taskq.tasks ORDER BY id;
SELECT expect_error($$SELECT taskq.create_job('import-1')$$);
SELECT expect_error($$SELECT taskq.create_job('j2', '[{"id": "x", "action": "a", "workflow": "other"}]')$$);
SELECT expect_error($$SELECT taskq.create_job('', '[]')$$);
SELECT expect_error($$SELECT taskq.create_job('j2', '[]', -1)$$);
SELECT count(*) AS jobs FROM taskq.jobs;
-- The create-job worker learns the fan-out, sets the count and inserts one
-- task per row plus the job-completed join, in one transaction.
SELECT n, id FROM public.own('w', 1, '{create-job}');
SELECT id, state FROM taskq.job_states;
BEGIN;
SELECT taskq.set_job_item_count('import-1/create', (SELECT token FROM public.tokens WHERE id = 'import-1/create'), 3);
SELECT taskq.chord('[{"id": "import-1/row-1", "action": "process-item", "workflow": "import-1"},
                     {"id": "import-1/row-2", "action": "process-item", "workflow": "import-1"},
                     {"id": "import-1/row-3", "action": "process-item", "workflow": "import-1"}]',
                   '{"id": "import-1/done", "action": "job-completed", "workflow": "import-1"}');
SELECT ret('import-1/create', 'completed');
COMMIT;
SELECT id, state, item_count, item_progress FROM taskq.job_states;
-- Workers process rows and report progress for the task they own.
SELECT n, id FROM public.own('w1', 1, '{process-item}');
SELECT n, id FROM public.own('w2', 1, '{process-item}');
SELECT taskq.report_progress('import-1/row-1', (SELECT token FROM public.tokens WHERE id = 'import-1/row-1'));
SELECT taskq.report_progress('import-1/row-2', (SELECT token FROM public.tokens WHERE id = 'import-1/row-2'), 1);
SELECT ret('import-1/row-1', 'completed');
SELECT ret('import-1/row-2', 'completed');
SELECT id, state, item_count, item_progress FROM taskq.job_states;
-- Only the owner, with its token, for a task of a job.
SELECT expect_error($$SELECT taskq.report_progress('import-1/row-1', (SELECT token FROM public.tokens WHERE id = 'import-1/row-1'))$$);
SELECT expect_error($$SELECT taskq.report_progress('import-1/row-3', gen_random_uuid())$$);
SELECT expect_error($$SELECT taskq.report_progress('ghost', gen_random_uuid())$$);
SELECT expect_error($$SELECT taskq.report_progress('import-1/row-3', gen_random_uuid(), -1)$$);
SELECT taskq.insert_tasks('[{"id": "lonely", "action": "l"}]');
SELECT n, id FROM public.own('w', 1, '{l}');
SELECT expect_error($$SELECT taskq.report_progress('lonely', (SELECT token FROM public.tokens WHERE id = 'lonely'))$$);
SELECT n, id FROM public.own('w3', 1, '{process-item}');
SELECT taskq.report_progress('import-1/row-3', (SELECT token FROM public.tokens WHERE id = 'import-1/row-3'));
SELECT ret('import-1/row-3', 'completed');
SELECT n, id FROM public.own('w', 1, '{job-completed}');
SELECT id, state, item_count, item_progress FROM taskq.job_states;
SELECT state, item_count, item_progress FROM taskq.job_state('import-1');
SELECT expect_error($$SELECT taskq.job_state('no-such-job')$$);
SELECT ret('import-1/done', 'completed');
SELECT id, state, item_count, item_progress FROM taskq.job_states;
-- A job with an aborted task is aborted; so is a cancelled one.
SELECT taskq.create_job('import-2', '[{"id": "import-2/create", "action": "create-job", "max_tries": 1}]');
SELECT taskq.create_job('import-3', '[{"id": "import-3/create", "action": "create-job"}]');
SELECT n, id FROM public.own('w', 1, '{create-job}');
SELECT ret('import-2/create', 'pending', 'bad file');
SELECT taskq.cancel_workflow('import-3');
SELECT id, state FROM taskq.job_states ORDER BY id;
