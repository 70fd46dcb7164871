-- test/pgtap/complete_path.sql: returning tasks as completed, which updates
-- taskq.tasks without the executor (src/direct.c).  What it writes must be
-- what the UPDATE wrote: status, finished_at, no deadline, signals to the
-- successors once, every index entry in place (amcheck); a batch is all or
-- none; a task cancelled while owned ends aborted inside a batch; read-only
-- transactions are refused; and an admin's trigger on taskq.tasks makes it
-- give way to the UPDATE.
BEGIN;
SELECT plan(17);

\ir include/direct_paths.sql

-- c-1 .. c-100, and a join after c-1 .. c-10 and c-100
SELECT taskq.insert_tasks('[{"id": "c-join", "action": "cp-join"}]');
SELECT taskq.insert_tasks(jsonb_agg(jsonb_build_object(
           'id', 'c-' || g, 'action', 'cp',
           'to_signal_after', CASE WHEN g <= 10 OR g = 100 THEN '["c-join"]'::jsonb ELSE '[]'::jsonb END)))
  FROM generate_series(1, 100) g;
CREATE TEMP TABLE held AS SELECT * FROM taskq.own_tasks('cw', 100, '{cp}', '1 min');

SELECT is((SELECT taskq.return_tasks(array_agg(id ORDER BY id DESC), array_agg(token ORDER BY id DESC),
                                     array_agg(CASE WHEN id = 'c-5' THEN 'five' END ORDER BY id DESC),
                                     array_agg('completed'::taskq.status))
             FROM held WHERE id <> 'c-100'),
          99::bigint, 'a batch of 99 completions, in any order');
SELECT is((SELECT count(*) FROM taskq.tasks
            WHERE action = 'cp' AND status_code = 'completed' AND finished_at = now()
              AND action_deadline IS NULL AND actor_id = 'cw' AND num_tries = 1),
          99::bigint, 'each is completed now, with no deadline, owner and tries kept');
SELECT is((SELECT status FROM taskq.tasks WHERE id = 'c-5'), 'five', 'a status given is set');
SELECT is((SELECT count(*) FROM taskq.tasks WHERE action = 'cp' AND status IS NOT NULL),
          1::bigint, 'no status given: the column is kept (NULL)');
SELECT is((SELECT num_signals FROM taskq.tasks WHERE id = 'c-join'), 1,
          'the join got one signal from each completed predecessor: c-100 is still open');
SELECT lives_ok('SELECT pg_temp.check_task_indexes()',
                'amcheck: each index of taskq.tasks holds every row it covers');
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
SELECT is((SELECT count(*) FROM taskq.tasks WHERE status_code >= 'completed' AND finished_at <= now()),
          99::bigint, 'the index of finished tasks finds them');
RESET enable_seqscan;
RESET enable_bitmapscan;

-- the single return, then the join is ready
SELECT lives_ok($$SELECT taskq.return_task(id, token, 'last', 'completed') FROM held WHERE id = 'c-100'$$,
                'return_task completes a single task');
SELECT is((SELECT status_code::text || '/' || status FROM taskq.tasks WHERE id = 'c-100'), 'completed/last',
          'and sets its status');
SELECT is((SELECT id FROM taskq.own_tasks('cw', 1, '{cp-join}')), 'c-join',
          'the join is ready once every predecessor completed');

-- all or none: a stale token fails the batch, and nothing of it stays
SELECT taskq.insert_tasks('[{"id": "n-1", "action": "n"}, {"id": "n-2", "action": "n"}]');
CREATE TEMP TABLE nheld AS SELECT * FROM taskq.own_tasks('cw', 2, '{n}', '1 min');
SELECT throws_ok($$SELECT taskq.return_tasks(ARRAY['n-1', 'n-2'],
                     ARRAY[(SELECT token FROM nheld WHERE id = 'n-1'), gen_random_uuid()],
                     NULL, ARRAY['completed', 'completed']::taskq.status[])$$,
                 'TQ001', 'invalid performance token for task "n-2"',
                 'a stale token in a batch fails the call and names the task');
SELECT is((SELECT count(*) FROM taskq.tasks WHERE action = 'n' AND status_code = 'in_progress'),
          2::bigint, 'and nothing of the batch was completed');

-- cancelled while owned: aborted, the rest of the batch completes
SELECT taskq.insert_tasks('[{"id": "w-1", "action": "wk", "workflow": "cp-wf"},
                            {"id": "w-2", "action": "wk"}]');
CREATE TEMP TABLE wheld AS SELECT * FROM taskq.own_tasks('cw', 2, '{wk}', '1 min');
SELECT taskq.cancel_workflow('cp-wf');
SELECT is((SELECT taskq.return_tasks(array_agg(id ORDER BY id), array_agg(token ORDER BY id), NULL,
                                     ARRAY['completed', 'completed']::taskq.status[]) FROM wheld),
          2::bigint, 'a batch with a task cancelled while owned succeeds');
SELECT is((SELECT string_agg(id || ':' || status_code, ',' ORDER BY id) FROM taskq.tasks WHERE action = 'wk'),
          'w-1:aborted,w-2:completed', 'the cancelled task ends aborted, the other completed');

-- read-only transactions do not return
SAVEPOINT ro;
SET TRANSACTION READ ONLY;
SELECT throws_ok($$SELECT taskq.return_task('n-1', (SELECT token FROM nheld WHERE id = 'n-1'), NULL, 'completed')$$,
                 '25006', NULL, 'return_task in a read-only transaction fails with 25006');
ROLLBACK TO SAVEPOINT ro;

-- an admin's trigger: the UPDATE runs, and the trigger sees it
CREATE TRIGGER cp_audit AFTER UPDATE ON taskq.tasks
    FOR EACH ROW EXECUTE FUNCTION pg_temp.audit();
SELECT is((SELECT taskq.return_tasks(array_agg(id ORDER BY id), array_agg(token ORDER BY id), NULL,
                                     ARRAY['completed', 'completed']::taskq.status[]) FROM nheld),
          2::bigint, 'with a trigger on taskq.tasks the batch completes');
SELECT is((SELECT string_agg(id || ':' || old_status || '>' || new_status, ',' ORDER BY id) FROM seen),
          'n-1:in_progress>completed,n-2:in_progress>completed', 'and the trigger saw both');
DROP TRIGGER cp_audit ON taskq.tasks;

SELECT * FROM finish();
ROLLBACK;
