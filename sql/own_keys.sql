--
-- own_tasks and return_and_own return each claimed task's concurrency_key
-- (NULL without one): through the claim walk, the SQL claim (an admin's
-- trigger on taskq.tasks turns the walk off) and the SQL claim with limits.
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks('[
    {"id": "ok1", "action": "okey", "concurrency_key": "customer-1", "priority": 3},
    {"id": "ok2", "action": "okey", "priority": 2},
    {"id": "ok3", "action": "okey", "concurrency_key": "customer-2", "priority": 1},
    {"id": "ok4", "action": "okey", "concurrency_key": "customer-1"},
    {"id": "ok5", "action": "okey", "concurrency_key": "customer-3"},
    {"id": "ok6", "action": "okey", "concurrency_key": "customer-4"}]');
-- the claim walk
SELECT id, action, num_tries, concurrency_key FROM taskq.own_tasks('w', 2, '{okey}');
-- return_and_own
SELECT id, concurrency_key
  FROM taskq.return_and_own(ARRAY['ok1'], ARRAY[(SELECT performance_token FROM taskq.tasks WHERE id = 'ok1')],
                            ARRAY['done'], ARRAY['completed']::taskq.status[], 'w', 1, '{okey}');
-- the SQL claim
CREATE FUNCTION pg_temp.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
BEGIN;
CREATE TRIGGER ok_noop BEFORE UPDATE ON taskq.tasks FOR EACH ROW EXECUTE FUNCTION pg_temp.noop();
SELECT id, concurrency_key FROM taskq.own_tasks('w', 1, NULL);
-- the SQL claim with limits
SELECT taskq.set_concurrency_limit('okey', 10, 1);
SELECT id, concurrency_key FROM taskq.own_tasks('w', 5, '{okey}');
ROLLBACK;
SELECT taskq.clear_limits('okey');
DELETE FROM taskq.tasks;
