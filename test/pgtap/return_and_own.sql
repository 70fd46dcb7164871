-- test/pgtap/return_and_own.sql: a worker's return and next claim in one
-- call (src/api/return_and_own.c).  It must be return_tasks followed by own_tasks: the
-- returns all or none, a failed call claiming nothing and returning
-- nothing, the claim's rows as own_tasks gives them, the arguments checked
-- under their own names, and EXECUTE for workers and admins only.
BEGIN;
SELECT plan(21);

SELECT has_function('taskq', 'return_and_own',
    ARRAY['text[]', 'uuid[]', 'text[]', 'taskq.status[]', 'text', 'integer', 'text[]', 'interval', 'jsonb[]'],
    'return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval, jsonb[]) exists');
SELECT is(pg_catalog.pg_get_function_arguments(
              'taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval, jsonb[])'::regprocedure),
          'ids text[], tokens uuid[], statuses text[], status_codes taskq.status[], actor text, max_tasks integer, actions text[], max_duration interval DEFAULT NULL::interval, results jsonb[] DEFAULT NULL::jsonb[]',
          'argument names: return_tasks'' then own_tasks''; max_duration defaults to NULL');
SELECT is(pg_catalog.pg_get_function_result(
              'taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval, jsonb[])'::regprocedure),
          pg_catalog.pg_get_function_result('taskq.own_tasks(text, integer, text[], interval, interval)'::regprocedure),
          'it returns what own_tasks returns');
SELECT ok(pg_catalog.has_function_privilege('taskq_worker',
              'taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval, jsonb[])', 'EXECUTE')
          AND pg_catalog.has_function_privilege('taskq_admin',
              'taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval, jsonb[])', 'EXECUTE'),
          'workers and admins may call it');
SELECT ok(NOT pg_catalog.has_function_privilege('taskq_producer',
              'taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval, jsonb[])', 'EXECUTE')
          AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_proc, LATERAL pg_catalog.aclexplode(proacl) a
                           WHERE oid = 'taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval, jsonb[])'::regprocedure
                             AND a.grantee = 0),
          'producers and PUBLIC may not');

SELECT taskq.insert_tasks(jsonb_agg(jsonb_build_object('id', 'ro-' || g, 'action', 'ro', 'body', jsonb_build_object('n', g))))
  FROM generate_series(1, 7) g;

-- The first cycle has nothing to return.
CREATE TEMP TABLE c1 AS
SELECT * FROM taskq.return_and_own('{}', '{}', NULL, '{}', 'rw', 2, '{ro}', '1 min');
SELECT results_eq('SELECT id, action, body, num_tries, action_deadline = now() + interval ''1 min'' FROM c1 ORDER BY id',
                  $$VALUES ('ro-1', 'ro', '{"n": 1}'::jsonb, 1, true), ('ro-2', 'ro', '{"n": 2}'::jsonb, 1, true)$$,
                  'nothing to return: it claims as own_tasks does, with the same columns');
SELECT is((SELECT count(*) FROM taskq.tasks WHERE id IN ('ro-1', 'ro-2') AND status_code = 'in_progress'
              AND actor_id = 'rw' AND performance_token = (SELECT token FROM c1 WHERE c1.id = tasks.id)),
          2::bigint, 'the rows hold the tokens it handed out');

-- The next cycle returns those and claims the next two.
CREATE TEMP TABLE c2 AS
SELECT * FROM taskq.return_and_own((SELECT array_agg(id ORDER BY id) FROM c1),
                                   (SELECT array_agg(token ORDER BY id) FROM c1),
                                   ARRAY['one', NULL], ARRAY['completed', 'completed']::taskq.status[],
                                   'rw', 2, '{ro}', '1 min');
SELECT is((SELECT string_agg(id || '=' || status_code || '/' || coalesce(status, '-'), ',' ORDER BY id)
             FROM taskq.tasks WHERE id IN ('ro-1', 'ro-2')),
          'ro-1=completed/one,ro-2=completed/-', 'it returned the tasks it was given, with their statuses');
SELECT is((SELECT array_agg(id ORDER BY id) FROM c2), ARRAY['ro-3', 'ro-4'], 'and claimed the next ones');
SELECT ok((SELECT bool_and(token IS NOT NULL AND substr(token::text, 15, 1) = '4') FROM c2),
          'with fresh version-4 tokens');

-- A stale token: the call fails whole, naming the task; nothing is returned or claimed.
SELECT throws_ok($$SELECT * FROM taskq.return_and_own(ARRAY['ro-3', 'ro-4'],
                     ARRAY[(SELECT token FROM c2 WHERE id = 'ro-3'), gen_random_uuid()],
                     NULL, ARRAY['completed', 'completed']::taskq.status[], 'rw', 2, '{ro}')$$,
                 'TQ001', 'invalid performance token for task "ro-4"',
                 'a stale token fails the call and names the task');
SELECT is((SELECT string_agg(id || '=' || status_code, ',' ORDER BY id) FROM taskq.tasks WHERE id LIKE 'ro-%' AND id >= 'ro-3'),
          'ro-3=in_progress,ro-4=in_progress,ro-5=pending,ro-6=pending,ro-7=pending',
          'nothing of the failed call stays: no return, no claim');

-- A bad claim argument undoes the returns made before it.
SELECT throws_ok($$SELECT * FROM taskq.return_and_own(ARRAY['ro-3'], ARRAY[(SELECT token FROM c2 WHERE id = 'ro-3')],
                     NULL, ARRAY['completed']::taskq.status[], 'rw', -1, '{ro}')$$,
                 '22023', 'argument "max_tasks" must not be negative',
                 'a bad claim argument is named as own_tasks names it');
SELECT is((SELECT status_code FROM taskq.tasks WHERE id = 'ro-3'), 'in_progress'::taskq.status,
          'and the return in the same call is undone');
SELECT throws_ok($$SELECT * FROM taskq.return_and_own(ARRAY['ro-3'], '{}', NULL, ARRAY['completed']::taskq.status[],
                     'rw', 1, '{ro}')$$,
                 '2202E', NULL, 'arrays of different lengths: 2202E, as return_tasks says');
SELECT throws_ok($$SELECT * FROM taskq.return_and_own('{}', '{}', NULL, '{}', NULL, 1, '{ro}')$$,
                 '22004', NULL, 'a NULL actor: 22004, as own_tasks says');

-- A task given back (pending) is returned before the claim looks.
CREATE TEMP TABLE c3 AS
SELECT * FROM taskq.return_and_own(ARRAY['ro-3', 'ro-4'], (SELECT array_agg(token ORDER BY id) FROM c2),
                                   NULL, ARRAY['completed', 'pending']::taskq.status[], 'rw', 1, '{ro}', '1 min');
SELECT is((SELECT status_code FROM taskq.tasks WHERE id = 'ro-3'), 'completed'::taskq.status,
          'a completed return');
SELECT is((SELECT id || ':' || num_tries FROM c3), 'ro-4:2',
          'a task given back in the call is ready again for its claim (insertion order first)');

-- max_tasks 0: only the returns.
SELECT is_empty($$SELECT * FROM taskq.return_and_own(ARRAY['ro-4'], ARRAY[(SELECT token FROM c3)],
                    NULL, ARRAY['completed']::taskq.status[], 'rw', 0, '{ro}')$$,
                'max_tasks 0 claims nothing');
SELECT is((SELECT status_code FROM taskq.tasks WHERE id = 'ro-4'), 'completed'::taskq.status,
          'but returns');

-- A successor that the return makes ready is there for the claim of the same call.
SELECT taskq.insert_tasks('[{"id": "rc-2", "action": "rc"}, {"id": "rc-1", "action": "rc", "to_signal_after": ["rc-2"]}]');
CREATE TEMP TABLE c4 AS SELECT * FROM taskq.own_tasks('rw', 5, '{rc}', '1 min');
SELECT is((SELECT string_agg(id, ',') FROM taskq.return_and_own(ARRAY['rc-1'], ARRAY[(SELECT token FROM c4)],
                                   NULL, ARRAY['completed']::taskq.status[], 'rw', 5, '{rc}', '1 min')),
          'rc-2', 'a chain''s next hop, made ready by the return, is claimed in the same call');

SELECT * FROM finish();
ROLLBACK;
