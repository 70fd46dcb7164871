-- test/pgtap/claim_path.sql: the claim that updates taskq.tasks without the
-- executor (src/claim_direct.c).  What it writes must be what the SQL claim
-- wrote: the same rows in the same order, every index entry in place
-- (amcheck), fresh version-4 tokens; it must refuse read-only
-- transactions, name a task whose tries cannot grow, and give way to the
-- SQL claim when an admin put a trigger on taskq.tasks.  Before it claims,
-- it hands expired leases back, having asked the lease index directly
-- whether any expired (SQL asks it where that index is not there).
BEGIN;
SELECT plan(24);

\ir include/direct_paths.sql

SELECT taskq.insert_tasks(jsonb_agg(jsonb_build_object(
           'id', 'cp-' || g, 'action', CASE WHEN g % 5 = 0 THEN 'cq' ELSE 'cp' END,
           'priority', g % 3, 'body', jsonb_build_object('n', g))))
  FROM generate_series(1, 300) g;
-- a delayed task and a blocked one are not claimed
SELECT taskq.insert_tasks('[{"id": "cp-later", "action": "cp", "not_before": "2999-01-01"},
                            {"id": "cp-first", "action": "cp", "to_signal_after": ["cp-blocked"]},
                            {"id": "cp-blocked", "action": "cp"}]');

CREATE TEMP TABLE got AS
SELECT row_number() OVER () AS rn, o.*
  FROM taskq.own_tasks('cpw', 1000, '{cp}', '1 min') AS o;

SELECT is((SELECT count(*) FROM got), 241::bigint,
          'one action: every ready task of it, none delayed or blocked');
SELECT is((SELECT array_agg(id ORDER BY rn) FROM got),
          (SELECT array_agg(id ORDER BY priority DESC, seq) FROM taskq.tasks
            WHERE action = 'cp' AND id NOT IN ('cp-later', 'cp-blocked')),
          'claim order: priority descending, then insertion order');
SELECT is((SELECT count(DISTINCT token) FROM got), 241::bigint, 'every claim has its own token');
SELECT is((SELECT count(*) FROM got
            WHERE token::text ~ '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'),
          241::bigint, 'tokens are version-4 UUIDs');
SELECT is((SELECT count(*) FROM got g JOIN taskq.tasks t USING (id)
            WHERE t.performance_token = g.token AND t.status_code = 'in_progress'
              AND t.actor_id = 'cpw' AND t.num_tries = 1 AND g.num_tries = 1
              AND t.action_deadline = now() + interval '1 min'
              AND g.action_deadline = t.action_deadline
              AND g.body IS NOT DISTINCT FROM t.body AND g.action = 'cp'),
          241::bigint, 'each row says what own_tasks returned');
SELECT is((SELECT string_agg(id, ',' ORDER BY id) FROM taskq.tasks
            WHERE action = 'cp' AND status_code = 'pending'),
          'cp-blocked,cp-later', 'the delayed and the blocked task are still pending');

-- Every index has an entry for every row version it should cover.
SELECT lives_ok('SELECT pg_temp.check_task_indexes()',
                'amcheck: each index of taskq.tasks holds every row it covers');
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
SELECT is((SELECT count(*) FROM taskq.tasks WHERE status_code = 'in_progress'
              AND action_deadline <= now() + interval '1 min'),
          241::bigint, 'the lease index finds the claims');
RESET enable_seqscan;
RESET enable_bitmapscan;

-- Any action, and a list of actions.
SELECT is((SELECT count(*) FROM taskq.own_tasks('cpw', 10, NULL)), 10::bigint,
          'any action: as many as asked for');
SELECT is((SELECT count(*) FROM taskq.own_tasks('cpw', 1000, '{cq,nothing}')), 50::bigint,
          'a list of actions: the rest of them');
SELECT is((SELECT count(*) FROM taskq.tasks WHERE action = 'cq' AND status_code = 'in_progress'),
          60::bigint, 'every cq task is claimed once');

-- A task whose tries cannot grow is named.
SELECT taskq.insert_tasks('[{"id": "cp-worn", "action": "cp-worn"}]');
UPDATE taskq.tasks SET num_tries = 2147483647 WHERE id = 'cp-worn';
SELECT throws_ok($$SELECT * FROM taskq.own_tasks('cpw', 1, '{cp-worn}')$$, '22003',
                 'task "cp-worn" cannot be owned again: its number of tries is at the maximum',
                 'a claim that would overflow num_tries fails and names the task');

-- Read-only transactions do not claim.
SELECT taskq.insert_tasks('[{"id": "cp-ro", "action": "cp-ro"}]');
SAVEPOINT ro;
SET TRANSACTION READ ONLY;
SELECT throws_ok($$SELECT * FROM taskq.own_tasks('cpw', 1, '{cp-ro}')$$, '25006', NULL,
                 'own_tasks in a read-only transaction fails with 25006');
ROLLBACK TO SAVEPOINT ro;

-- A row this transaction locked itself is claimed.
SELECT id FROM taskq.tasks WHERE id = 'cp-ro' FOR UPDATE;
SELECT is((SELECT id FROM taskq.own_tasks('cpw', 1, '{cp-ro}')), 'cp-ro',
          'a row locked by the claiming transaction itself is claimed');

-- A join whose two predecessors this transaction returned, the second in a
-- subtransaction (a savepoint; a PL/pgSQL exception block is one too): the
-- join's row has a MultiXact of our own (sub)transactions as its xmax.  It
-- is claimed all the same.
SELECT taskq.insert_tasks('[{"id": "cp-mj", "action": "cp-mj"},
                            {"id": "cp-m1", "action": "cp-m", "to_signal_after": ["cp-mj"]},
                            {"id": "cp-m2", "action": "cp-m", "to_signal_after": ["cp-mj"]}]');
CREATE TEMP TABLE mheld AS SELECT * FROM taskq.own_tasks('cpw', 2, '{cp-m}');
SELECT taskq.return_task(id, token, NULL, 'completed') FROM mheld WHERE id = 'cp-m1';
SAVEPOINT m;
SELECT taskq.return_task(id, token, NULL, 'completed') FROM mheld WHERE id = 'cp-m2';
RELEASE SAVEPOINT m;
SELECT is((SELECT id FROM taskq.own_tasks('cpw', 1, '{cp-mj}')), 'cp-mj',
          'a join signalled from a subtransaction of the claiming transaction is claimed');

-- An expired lease is found and handed back before the claim, which takes
-- the task again; a lease still running is not.
SELECT taskq.insert_tasks('[{"id": "cp-x1", "action": "cp-x"}, {"id": "cp-x2", "action": "cp-x"}]');
SELECT count(*) FROM taskq.own_tasks('cpw', 2, '{cp-x}', interval '1 min');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = 'cp-x1';
SELECT is((SELECT string_agg(id, ',') FROM taskq.own_tasks('cpw2', 5, '{cp-x}')), 'cp-x1',
          'a claim hands an expired lease back and takes the task again');
SELECT is((SELECT string_agg(actor_id || ':' || num_tries, ',' ORDER BY id) FROM taskq.tasks WHERE action = 'cp-x'),
          'cpw2:2,cpw:1', 'the lease still running stays with its owner');
-- Without the lease index the claim asks SQL, with the same answer.
DROP INDEX taskq.tasks_lease_idx;
UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = 'cp-x2';
SELECT is((SELECT string_agg(id, ',') FROM taskq.own_tasks('cpw2', 5, '{cp-x}')), 'cp-x2',
          'without the lease index an expired lease is handed back all the same');
SELECT is((SELECT count(*) FROM taskq.own_tasks('cpw2', 5, '{cp-x}')), 0::bigint,
          'and with none expired nothing is');
CREATE INDEX tasks_lease_idx ON taskq.tasks (action_deadline) WHERE status_code = 'in_progress';

-- An admin's partial unique index, here one task in progress per action:
-- the claim's new version enters it, and a second one of the action fails.
CREATE UNIQUE INDEX cp_one_running ON taskq.tasks (action)
    WHERE status_code = 'in_progress' AND action = 'cp-u';
SELECT taskq.insert_tasks('[{"id": "cp-u1", "action": "cp-u"}, {"id": "cp-u2", "action": "cp-u"}]');
SELECT throws_ok($$SELECT * FROM taskq.own_tasks('cpw', 2, '{cp-u}')$$, '23505', NULL,
                 'a claim that would break an admin''s partial unique index fails with 23505');
DROP INDEX taskq.cp_one_running;

-- An admin's trigger on taskq.tasks: the SQL claim runs, and the trigger sees it.
CREATE TRIGGER cp_audit AFTER UPDATE ON taskq.tasks
    FOR EACH ROW EXECUTE FUNCTION pg_temp.audit();
SELECT taskq.insert_tasks('[{"id": "cp-aud", "action": "cp-aud"}]');
SELECT is((SELECT id FROM taskq.own_tasks('cpw', 1, '{cp-aud}')), 'cp-aud',
          'with a trigger on taskq.tasks the claim still works');
SELECT is((SELECT old_status || '>' || new_status FROM seen WHERE id = 'cp-aud'),
          'pending>in_progress', 'and the trigger saw the claim');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = 'cp-aud';
SELECT is((SELECT id FROM taskq.own_tasks('cpw', 1, '{cp-aud}')), 'cp-aud',
          'with a trigger on taskq.tasks an expired lease is handed back too');
DROP TRIGGER cp_audit ON taskq.tasks;
SELECT is((SELECT performance_token IS NOT NULL AND num_tries = 2 FROM taskq.tasks WHERE id = 'cp-aud'),
          true, 'the SQL claim gave a token and counted the tries');

SELECT * FROM finish();
ROLLBACK;
