-- test/pgtap/retention_zero.sql: with taskq.retention = 0 the return that
-- completes a task deletes it (src/direct.c, and the SQL fallback in
-- src/finish.c).  Deleted: completed tasks, by return_task, return_tasks and
-- return_and_own, also one held while pending after a lease expiry; their
-- successors are still signalled.  Kept: a task whose caller waits for it
-- (post_result), one of a workflow, an aborted or retried one, one
-- cancelled while owned.  A stale return of a deleted task gets TQ001; an
-- admin's trigger sees the deletes; only superusers set the parameter.
BEGIN;
SELECT plan(22);

\ir include/direct_paths.sql

SET LOCAL taskq.retention = 0;

-- z-1 .. z-20; z-1 .. z-3 signal z-join; z-5 is waited for; z-6 belongs to a workflow
SELECT taskq.insert_tasks('[{"id": "z-join", "action": "rz-join"}]');
SELECT taskq.insert_tasks(jsonb_agg(jsonb_build_object(
           'id', 'z-' || g, 'action', 'rz',
           'to_signal_after', CASE WHEN g <= 3 THEN '["z-join"]'::jsonb ELSE '[]'::jsonb END,
           'post_result', g = 5)
           || CASE WHEN g = 6 THEN '{"workflow": "wf-z"}'::jsonb ELSE '{}'::jsonb END))
  FROM generate_series(1, 20) g;
CREATE TEMP TABLE held AS SELECT * FROM taskq.own_tasks('rw', 20, '{rz}', '1 min');

SELECT is((SELECT taskq.return_tasks(array_agg(id ORDER BY id), array_agg(token ORDER BY id), NULL,
                                     array_agg('completed'::taskq.status))
             FROM held WHERE id NOT IN ('z-1', 'z-7', 'z-8', 'z-9', 'z-10')),
          15::bigint, 'a batch of 15 completions');
SELECT is((SELECT array_agg(id ORDER BY id) FROM taskq.tasks
            WHERE action = 'rz' AND status_code = 'completed'),
          '{z-5,z-6}'::text[], 'only the task waited for and the workflow''s task are kept, completed');
SELECT is((SELECT count(*) FROM taskq.tasks
            WHERE id IN ('z-2', 'z-3', 'z-4', 'z-11', 'z-12', 'z-13', 'z-14', 'z-15', 'z-16',
                         'z-17', 'z-18', 'z-19', 'z-20')),
          0::bigint, 'the other 13 are deleted');
SELECT is((SELECT num_signals FROM taskq.tasks WHERE id = 'z-join'), 1,
          'their successor got its signals: z-1 is still open');
SELECT lives_ok('SELECT pg_temp.check_task_indexes()',
                'amcheck: each index of taskq.tasks holds every row it covers');

-- the single return
SELECT lives_ok($$SELECT taskq.return_task(id, token, NULL, 'completed') FROM held WHERE id = 'z-1'$$,
                'return_task completes a single task');
SELECT is((SELECT count(*) FROM taskq.tasks WHERE id = 'z-1'), 0::bigint, 'and deletes it');
SELECT is((SELECT id FROM taskq.own_tasks('rw', 1, '{rz-join}')), 'z-join',
          'the join is ready once its last predecessor completed');

-- a stale return of a deleted task
SELECT throws_ok($$SELECT taskq.return_task(id, token, NULL, 'completed') FROM held WHERE id = 'z-1'$$,
                 'TQ001', 'invalid performance token for task "z-1"',
                 'returning it again fails as a stale token does');

-- kept: aborted, retried, cancelled while owned
SELECT lives_ok($$SELECT taskq.return_tasks(ARRAY['z-7', 'z-8'],
                     ARRAY[(SELECT token FROM held WHERE id = 'z-7'), (SELECT token FROM held WHERE id = 'z-8')],
                     NULL, ARRAY['aborted', 'pending']::taskq.status[])$$,
                'an abort and a retry in one batch');
SELECT is((SELECT array_agg(id || ':' || status_code ORDER BY id) FROM taskq.tasks WHERE id IN ('z-7', 'z-8')),
          '{z-7:aborted,z-8:pending}'::text[], 'are kept: aborted, pending again');
UPDATE taskq.tasks SET cancelled = true WHERE id = 'z-9';
SELECT lives_ok($$SELECT taskq.return_task(id, token, NULL, 'completed') FROM held WHERE id = 'z-9'$$,
                'a task cancelled while owned is returned as completed');
SELECT is((SELECT status_code::text FROM taskq.tasks WHERE id = 'z-9'), 'aborted',
          'and kept, aborted');

-- a lease that expired with nobody owning the task since: its late owner completes it
UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE id = 'z-10';
SELECT count(*) FROM taskq.own_tasks('rw', 1, '{nothing}');   -- its sweep requeues z-10
SELECT is((SELECT status_code::text FROM taskq.tasks WHERE id = 'z-10'), 'pending', 'z-10''s lease expired');
SELECT lives_ok($$SELECT taskq.return_task(id, token, NULL, 'completed') FROM held WHERE id = 'z-10'$$,
                'its late owner completes it');
SELECT is((SELECT count(*) FROM taskq.tasks WHERE id = 'z-10'), 0::bigint, 'and it is deleted');
SELECT is((SELECT id FROM taskq.own_tasks('rw', 1, '{rz}')), 'z-8',
          'the next claim gets the retried task, not the deleted one');

-- return_and_own
SELECT taskq.insert_tasks('[{"id": "y-1", "action": "ry"}, {"id": "y-2", "action": "ry"}]');
CREATE TEMP TABLE y AS SELECT * FROM taskq.own_tasks('rw', 1, '{ry}', '1 min');
SELECT is((SELECT string_agg(o.id, ',') FROM y,
                  taskq.return_and_own(ARRAY[y.id], ARRAY[y.token], NULL, ARRAY['completed']::taskq.status[],
                                       'rw', 1, '{ry}', '1 min') AS o),
          'y-2', 'return_and_own claims the next task');
SELECT is((SELECT array_agg(id || ':' || status_code) FROM taskq.tasks WHERE action = 'ry'),
          '{y-2:in_progress}'::text[], 'and deleted the one it completed');

-- an admin's trigger: the DELETE runs, and the trigger sees it
CREATE TEMP TABLE gone (id text, status taskq.status);
CREATE FUNCTION pg_temp.audit_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO gone VALUES (OLD.id, OLD.status_code);
    RETURN OLD;
END $$;
CREATE TRIGGER rz_audit AFTER DELETE ON taskq.tasks
    FOR EACH ROW EXECUTE FUNCTION pg_temp.audit_delete();
SELECT is((SELECT taskq.return_tasks(ARRAY['y-2'], ARRAY[performance_token], NULL, ARRAY['completed']::taskq.status[])
             FROM taskq.tasks WHERE id = 'y-2'),
          1::bigint, 'with a trigger on taskq.tasks the return completes');
SELECT is((SELECT array_agg(id || ':' || status) FROM gone), '{y-2:in_progress}'::text[],
          'by a DELETE the trigger saw');
DROP TRIGGER rz_audit ON taskq.tasks;

-- only superusers (and roles granted SET on it) set the parameter
SET LOCAL ROLE taskq_worker;
SELECT throws_ok('SET taskq.retention = 0', '42501', NULL,
                 'a worker cannot set taskq.retention for its session');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
