-- The job-control rules (retry policies, idempotent enqueue, cancellation,
-- dead letters, jobs with progress) as the README and docs/semantics.md
-- state them.  One transaction, rolled back.
BEGIN;
SELECT plan(31);

CREATE TEMP TABLE tok (id text PRIMARY KEY, token uuid);
CREATE FUNCTION pg_temp.own(p_actions text[]) RETURNS SETOF text LANGUAGE sql AS $$
    INSERT INTO tok SELECT o.id, o.token FROM taskq.own_tasks('w', 1, p_actions, '1 hour') AS o
        ON CONFLICT (id) DO UPDATE SET token = EXCLUDED.token
    RETURNING id $$;
CREATE FUNCTION pg_temp.tok(p_id text) RETURNS uuid LANGUAGE sql AS $$
    SELECT token FROM tok WHERE id = p_id $$;
CREATE FUNCTION pg_temp.state(p_id text) RETURNS text LANGUAGE sql AS $$
    SELECT status_code::text FROM taskq.tasks WHERE id = p_id $$;

-- Retry policies.
SELECT lives_ok($$SELECT taskq.set_action_policy('jc-flaky', 2, '{"delay": "30 s", "factor": 2}')$$,
    'set_action_policy accepts max_tries and a backoff');
SELECT throws_ok($$SELECT taskq.set_action_policy('jc-flaky', 2, '{"factor": 2}')$$, '22023',
    NULL, 'a policy without a delay is refused');
SELECT is(taskq.insert_tasks('[{"id": "jc-f", "action": "jc-flaky"}]'), 1::bigint, 'insert');
SELECT is((SELECT max_tries FROM taskq.tasks WHERE id = 'jc-f'), 2, 'the action''s max_tries applies');
SELECT is(pg_temp.own('{jc-flaky}'), 'jc-f', 'claimed');
SELECT lives_ok($$SELECT taskq.return_task('jc-f', pg_temp.tok('jc-f'), 'failed', 'pending')$$, 'retry');
SELECT ok((SELECT not_before > now() + interval '29 s' AND not_before <= now() + interval '30 s'
             FROM taskq.tasks WHERE id = 'jc-f'), 'the retry waits the policy''s delay');
SELECT is((SELECT count(*) FROM taskq.own_tasks('w', 10, '{jc-flaky}')), 0::bigint,
    'a backed-off task is not ready');
UPDATE taskq.tasks SET not_before = now() WHERE id = 'jc-f';
SELECT is(pg_temp.own('{jc-flaky}'), 'jc-f', 'ready again when its time comes');
SELECT lives_ok($$SELECT taskq.return_task('jc-f', pg_temp.tok('jc-f'), 'failed again', 'pending')$$,
    'the last try returned pending');
SELECT is(pg_temp.state('jc-f'), 'aborted', 'all tries used: aborted');
SELECT throws_ok($$SELECT taskq.return_task('jc-f', gen_random_uuid(), NULL, 'completed', '1 s')$$,
    '22023', NULL, 'retry_delay only with pending');

-- Idempotent enqueue.
SELECT results_eq($$SELECT id::text, inserted FROM taskq.insert_tasks_if_absent(
                      '[{"id": "jc-f", "action": "x"}, {"id": "jc-new", "action": "x"}]')$$,
    $$VALUES ('jc-f', false), ('jc-new', true)$$, 'insert_tasks_if_absent says what existed');

-- Cancellation.
SELECT is(taskq.insert_tasks('[{"id": "jc-own", "action": "jc-c", "workflow": "jc-w"},
                               {"id": "jc-pend", "action": "jc-c", "workflow": "jc-w", "to_signal_after": ["jc-next"]},
                               {"id": "jc-next", "action": "jc-d"}]'), 3::bigint, 'a workflow');
SELECT is(pg_temp.own('{jc-c}'), 'jc-own', 'one task owned');
SELECT is(taskq.cancel_workflow('jc-w'), 2::bigint, 'cancel_workflow counts what it cancelled');
SELECT is(pg_temp.state('jc-pend'), 'aborted', 'a pending task is aborted at once');
SELECT is(pg_temp.state('jc-next'), 'aborted', '... with the cascade');
SELECT is((SELECT cancelled FROM taskq.tasks WHERE id = 'jc-own'), true, 'an owned task is marked');
SELECT is((SELECT owned FROM taskq.extend_ownership('w', '{jc-own}', ARRAY[pg_temp.tok('jc-own')], '1 hour')),
    false, 'extend_ownership says not owned');
SELECT lives_ok($$SELECT taskq.return_task('jc-own', pg_temp.tok('jc-own'), NULL, 'completed')$$,
    'its worker returns it');
SELECT is(pg_temp.state('jc-own'), 'aborted', 'a cancelled task never completes');
SELECT lives_ok($$SELECT taskq.insert_tasks('[{"id": "jc-late", "action": "jc-c", "workflow": "jc-w"}]')$$,
    'a later task of the cancelled workflow');
SELECT is(pg_temp.state('jc-late'), 'aborted', '... is aborted at insert');

-- Dead letters.
SELECT ok((SELECT count(*) FROM taskq.dead_letters WHERE id IN ('jc-f', 'jc-own', 'jc-pend')) = 3,
    'aborted tasks are dead letters');
SELECT is(taskq.redrive_tasks('{jc-f}'), 1::bigint, 'redrive_tasks');
SELECT is((SELECT status_code::text || '/' || num_tries FROM taskq.tasks WHERE id = 'jc-f'), 'pending/0',
    'a re-driven task is pending with no tries used');

-- Jobs.
SELECT is(taskq.create_job('jc-job', '[{"id": "jc-job/a", "action": "jc-j"}]', 2), 1::bigint, 'create_job');
SELECT is(pg_temp.own('{jc-j}'), 'jc-job/a', 'a task of the job owned');
SELECT is(taskq.report_progress('jc-job/a', pg_temp.tok('jc-job/a'), 2), 2::bigint,
    'report_progress returns the job''s total');
SELECT throws_ok($$SELECT taskq.report_progress('jc-job/a', gen_random_uuid())$$, 'TQ001', NULL,
    'only with the task''s token');

SELECT * FROM finish();
ROLLBACK;
