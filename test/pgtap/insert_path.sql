-- test/pgtap/insert_path.sql: batches of more than 16 tasks, which
-- insert_tasks writes a page at a time without the executor
-- (src/queue/insert_rows.c).  Every column must be what the INSERT wrote: the values
-- given, the defaults of the others (status, tries, seq in batch order,
-- created_at and a missing not_before now()), every index entry in place
-- (amcheck); read-only transactions are refused; an admin's trigger on
-- taskq.tasks makes it give way to the INSERT, and one that skips rows
-- makes the call fail with a SQLSTATE; an admin's unique indexes and
-- constraints are checked on every path.
BEGIN;
SELECT plan(28);

\ir include/direct_paths.sql
SELECT taskq.set_action_policy('ip-pol', 7, NULL);

CREATE TEMP TABLE input AS
SELECT g, jsonb_strip_nulls(jsonb_build_object(
           'id', 'ip-' || g,
           'action', CASE WHEN g % 10 = 0 THEN 'ip-pol' ELSE 'ip' END,
           'body', CASE WHEN g % 3 = 0 THEN NULL ELSE jsonb_build_object('n', g) END,
           'priority', g % 4,
           'status', CASE WHEN g % 5 = 0 THEN 'st-' || g END,
           'max_tries', CASE WHEN g % 7 = 0 THEN g END,
           'not_before', CASE WHEN g % 11 = 0 THEN '2999-01-01T00:00:00Z' END,
           'to_signal_after', CASE WHEN g % 13 = 0 THEN jsonb_build_array('ip-' || (g + 1), 'ip-' || (g + 2)) END,
           'post_result', g % 2 = 0,
           'retry', CASE WHEN g % 17 = 0 THEN '{"delay": "1 s"}'::jsonb END,
           'workflow', CASE WHEN g % 19 = 0 THEN 'ip-wf' END)) AS task
  FROM generate_series(1, 100) g;

SELECT is(taskq.insert_tasks((SELECT jsonb_agg(task ORDER BY g) FROM input)), 100::bigint,
          'a batch of 100 tasks is inserted');
SELECT is((SELECT count(*) FROM input i JOIN taskq.tasks t ON t.id = i.task->>'id'
            WHERE t.action = i.task->>'action'
              AND t.body IS NOT DISTINCT FROM i.task->'body'
              AND t.priority = (i.task->>'priority')::int
              AND t.status IS NOT DISTINCT FROM i.task->>'status'
              AND t.post_result = (i.task->>'post_result')::boolean
              AND t.retry IS NOT DISTINCT FROM i.task->'retry'
              AND t.workflow IS NOT DISTINCT FROM i.task->>'workflow'),
          100::bigint, 'every given value is stored');
SELECT is((SELECT count(*) FROM input i JOIN taskq.tasks t ON t.id = i.task->>'id'
            WHERE t.max_tries IS NOT DISTINCT FROM
                  COALESCE((i.task->>'max_tries')::int, CASE WHEN i.task->>'action' = 'ip-pol' THEN 7 END)),
          100::bigint, 'max_tries as given, or the action''s policy');
SELECT is((SELECT count(*) FROM taskq.tasks
            WHERE id LIKE 'ip-%' AND status_code = 'pending' AND num_tries = 0 AND NOT cancelled
              AND created_at = now() AND actor_id IS NULL AND performance_token IS NULL
              AND action_deadline IS NULL AND finished_at IS NULL),
          100::bigint, 'the other columns take their defaults');
SELECT is((SELECT count(*) FROM input i JOIN taskq.tasks t ON t.id = i.task->>'id'
            WHERE t.not_before = COALESCE((i.task->>'not_before')::timestamptz, now())),
          100::bigint, 'not_before as given, or now()');
SELECT is((SELECT array_agg(id ORDER BY seq) FROM taskq.tasks WHERE id LIKE 'ip-%'),
          (SELECT array_agg(task->>'id' ORDER BY g) FROM input),
          'seq follows the order of the batch');
SELECT is((SELECT string_agg(id || ':' || num_signals || '/' || total_dependencies, ',' ORDER BY id)
             FROM taskq.tasks WHERE num_signals > 0 AND id LIKE 'ip-%'),
          'ip-14:1/1,ip-15:1/1,ip-27:1/1,ip-28:1/1,ip-40:1/1,ip-41:1/1,ip-53:1/1,ip-54:1/1,ip-66:1/1,ip-67:1/1,ip-79:1/1,ip-80:1/1,ip-92:1/1,ip-93:1/1',
          'successors named in the batch wait for their predecessors');
SELECT is((SELECT to_signal_after FROM taskq.tasks WHERE id = 'ip-13'), ARRAY['ip-14', 'ip-15']::text[],
          'to_signal_after is stored as given');

SELECT lives_ok('SELECT pg_temp.check_task_indexes()',
                'amcheck: each index of taskq.tasks holds every row it covers');

-- read-only transactions do not insert
SAVEPOINT ro;
SET TRANSACTION READ ONLY;
SELECT throws_ok($$SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'ro-' || g, 'action', 'ro'))
                                               FROM generate_series(1, 20) g))$$,
                 '25006', NULL, 'a batch in a read-only transaction fails with 25006');
ROLLBACK TO SAVEPOINT ro;

-- an admin's trigger: the INSERT runs, and the trigger sees every row
CREATE TRIGGER ip_audit AFTER INSERT ON taskq.tasks
    FOR EACH ROW EXECUTE FUNCTION pg_temp.audit();
SELECT is(taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'tr-' || g, 'action', 'tr'))
                                FROM generate_series(1, 20) g)),
          20::bigint, 'with a trigger on taskq.tasks a batch is inserted');
SELECT is((SELECT count(*) FROM seen WHERE id LIKE 'tr-%'), 20::bigint, 'and the trigger saw every row');
DROP TRIGGER ip_audit ON taskq.tasks;

-- a trigger that skips rows: the call fails, naming how many, never XX000
CREATE FUNCTION pg_temp.skip() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER ip_skip BEFORE INSERT ON taskq.tasks
    FOR EACH ROW EXECUTE FUNCTION pg_temp.skip();
SELECT throws_ok($$SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'sk-' || g, 'action', 'sk'))
                                               FROM generate_series(1, 20) g))$$,
                 '09000', 'could not insert 20 of 20 tasks',
                 'a batch whose rows a trigger skipped fails with 09000');
SELECT throws_ok($$SELECT taskq.insert_tasks('[{"id": "sk-a", "action": "sk"}, {"id": "sk-b", "action": "sk"}]')$$,
                 '09000', 'could not insert 2 of 2 tasks',
                 'so does a small one');
DROP TRIGGER ip_skip ON taskq.tasks;

-- an index made after this session's direct paths kept the table's shape:
-- the next insert, claim and return add their entries to it (read through it alone)
CREATE INDEX ip_late_idx ON taskq.tasks (priority) WHERE priority > 1000000;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
SELECT is(taskq.enqueue('late', NULL, 'late-1', priority => 2000000), 'late-1', 'a task enqueued after the index was made');
SELECT is((SELECT array_agg(id) FROM taskq.tasks WHERE priority > 1000000), '{late-1}'::text[],
          'an index made later has the entry of the next direct insert');
SELECT is((SELECT count(*) FROM taskq.own_tasks('ip', 1, '{late}', '1 minute')), 1::bigint, 'the task is claimed');
SELECT is((SELECT array_agg(status_code::text) FROM taskq.tasks WHERE priority > 1000000), '{in_progress}'::text[],
          'and the index has the claimed version''s entry');
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP INDEX taskq.ip_late_idx;

-- An admin's partial unique index (one pending task per workflow of action
-- ip-u): the direct insert adds a new row's entries itself, checked, on
-- the one-task path and on the page-at-a-time path.
CREATE UNIQUE INDEX ip_one_pending ON taskq.tasks (workflow)
    WHERE status_code = 'pending' AND action = 'ip-u';
SELECT is(taskq.enqueue('ip-u', NULL, 'ip-u1', workflow => 'ip-uw'), 'ip-u1', 'the first pending task of the workflow goes in');
SELECT throws_ok($$SELECT taskq.enqueue('ip-u', NULL, 'ip-u2', workflow => 'ip-uw')$$, '23505', NULL,
                 'a one-task enqueue that would break an admin''s partial unique index fails with 23505');
SELECT throws_ok($$SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'ip-ub' || g, 'action', 'ip-u', 'workflow', 'ip-ubw'))
                                              FROM generate_series(1, 20) g))$$, '23505', NULL,
                 'so does a batch written a page at a time');
SELECT is(taskq.enqueue('ip-u', NULL, 'ip-u3', workflow => 'ip-uw2'), 'ip-u3', 'a task of another workflow goes in');
DROP INDEX taskq.ip_one_pending;

-- An exclusion constraint (one pending task per workflow of the action) is
-- checked by the executor's code, immediate or deferrable (at the end of
-- the statement): 23P01 on both insert paths.
CREATE FUNCTION pg_temp.exclusion_checks(a text, how text) RETURNS SETOF text LANGUAGE plpgsql AS $f$
BEGIN
    EXECUTE format($$ALTER TABLE taskq.tasks ADD CONSTRAINT ip_one_pending EXCLUDE USING btree (workflow WITH =)
                       WHERE (action = %L AND status_code = 'pending') %s$$,
                   a, CASE how WHEN 'deferrable' THEN 'DEFERRABLE INITIALLY IMMEDIATE' ELSE '' END);
    RETURN NEXT is(taskq.enqueue(a, NULL, a || '-1', workflow => a || '-w'), a || '-1',
                   format('with an %s exclusion constraint a task goes in', how));
    RETURN NEXT throws_ok(format('SELECT taskq.enqueue(%L, NULL, %L, workflow => %L)', a, a || '-2', a || '-w'),
                          '23P01', NULL, format('a one-task enqueue that breaks the %s constraint fails with 23P01', how));
    RETURN NEXT throws_ok(format($$SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', %L || g, 'action', %L, 'workflow', %L))
                                                              FROM generate_series(1, 20) g))$$, a || '-b', a, a || '-bw'),
                          '23P01', NULL, format('so does a batch written a page at a time (%s)', how));
    ALTER TABLE taskq.tasks DROP CONSTRAINT ip_one_pending;
END $f$;
SELECT * FROM pg_temp.exclusion_checks('ip-x', 'immediate');
SELECT * FROM pg_temp.exclusion_checks('ip-y', 'deferrable');

SELECT * FROM finish();
ROLLBACK;
