--
-- define_machine and define_saga with the version given by the caller:
-- stored under exactly that number when it is the next one; the same
-- definition under a stored version is a no-op that returns it; another
-- definition there, or any other number, 55000 and nothing stored.
--
CREATE FUNCTION pg_temp.versions(p_name text)
RETURNS TABLE (version int, kind text, definition jsonb)
LANGUAGE sql AS $$
    SELECT d.version, d.kind, d.definition FROM taskq.definitions AS d
     WHERE d.name = p_name ORDER BY d.version
$$;

-- machines
SELECT taskq.define_machine('dv-m', '{"states": [{"name": "A", "action": "a", "initial": true, "final": true}]}', 1);
-- the same definition again under 1 (keys in another order, other spacing): a no-op
SELECT taskq.define_machine('dv-m', '{"states": [{"final": true, "initial": true,
    "action": "a", "name": "A"}]}', 1) AS same_again;
SELECT * FROM pg_temp.versions('dv-m');
-- another definition under a stored version: 55000
SELECT public.expect_error($$SELECT taskq.define_machine('dv-m',
    '{"states": [{"name": "B", "action": "b", "initial": true, "final": true}]}', 1)$$) AS other_under_1;
-- a version other than latest + 1: 55000
SELECT public.expect_error($$SELECT taskq.define_machine('dv-m',
    '{"states": [{"name": "B", "action": "b", "initial": true, "final": true}]}', 3)$$) AS skips_2;
SELECT public.expect_error($$SELECT taskq.define_machine('dv-m',
    '{"states": [{"name": "B", "action": "b", "initial": true, "final": true}]}', 0)$$) AS zero;
SELECT public.expect_error($$SELECT taskq.define_machine('dv-m',
    '{"states": [{"name": "B", "action": "b", "initial": true, "final": true}]}', -1)$$) AS negative;
SELECT public.expect_error($$SELECT taskq.define_machine('dv-new',
    '{"states": [{"name": "B", "action": "b", "initial": true, "final": true}]}', 2)$$) AS new_name_at_2;
SELECT * FROM pg_temp.versions('dv-m');
SELECT * FROM pg_temp.versions('dv-new');
-- the next version, given
SELECT taskq.define_machine('dv-m', '{"states": [{"name": "B", "action": "b", "initial": true, "final": true}]}', 2);
-- without a version (or NULL): the next one, also when identical
SELECT taskq.define_machine('dv-m', '{"states": [{"name": "B", "action": "b", "initial": true, "final": true}]}');
SELECT taskq.define_machine('dv-m', '{"states": [{"name": "B", "action": "b", "initial": true, "final": true}]}', NULL);
-- an older version given with its own definition: a no-op that returns it
SELECT taskq.define_machine('dv-m', '{"states": [{"name": "A", "action": "a", "initial": true, "final": true}]}', 1) AS old_again;
SELECT version, definition->'states'->0->>'name' AS first_state FROM pg_temp.versions('dv-m');
-- the definition is checked before the version: 22023
SELECT public.expect_error($$SELECT taskq.define_machine('dv-m', '{"states": []}', 5)$$) AS bad_definition;
-- a saga's name: 42809, also with a version
SELECT taskq.define_saga('dv-s', '{"steps": [{"name": "A", "do": "a", "undo": "u"}]}', 1);
SELECT public.expect_error($$SELECT taskq.define_machine('dv-s',
    '{"states": [{"name": "A", "action": "a", "initial": true, "final": true}]}', 2)$$) AS saga_name;
-- a version deleted by hand is not stored again under its number
DELETE FROM taskq.definitions WHERE name = 'dv-m' AND version = 2;
SELECT public.expect_error($$SELECT taskq.define_machine('dv-m',
    '{"states": [{"name": "B", "action": "b", "initial": true, "final": true}]}', 2)$$) AS deleted_version;
-- a run starts on the latest version; a no-op does not make one
SELECT taskq.define_machine('dv-m', '{"states": [{"name": "A", "action": "a", "initial": true, "final": true}]}', 1);
SELECT taskq.start_machine('dv-m', 'dv-run');
SELECT version, state FROM taskq.runs WHERE id = 'dv-run';
SELECT taskq.cancel_run('dv-run');

-- sagas
SELECT taskq.define_saga('dv-s', '{"steps": [{"undo": "u", "do": "a", "name": "A"}]}', 1) AS same_again;
SELECT public.expect_error($$SELECT taskq.define_saga('dv-s',
    '{"steps": [{"name": "A", "do": "a"}]}', 1)$$) AS other_under_1;
SELECT public.expect_error($$SELECT taskq.define_saga('dv-s',
    '{"steps": [{"name": "A", "do": "a"}]}', 3)$$) AS skips_2;
SELECT taskq.define_saga('dv-s', '{"steps": [{"name": "A", "do": "a"}]}', 2);
SELECT taskq.define_saga('dv-s', '{"steps": [{"name": "A", "do": "a"}]}');
SELECT public.expect_error($$SELECT taskq.define_saga('dv-m',
    '{"steps": [{"name": "A", "do": "a"}]}', 4)$$) AS machine_name;
SELECT public.expect_error($$SELECT taskq.define_saga('dv-s', '{"steps": []}', 4)$$) AS bad_definition;
SELECT * FROM pg_temp.versions('dv-s');

DELETE FROM taskq.runs WHERE id = 'dv-run';
DELETE FROM taskq.tasks WHERE workflow = 'dv-run';
DELETE FROM taskq.definitions WHERE name LIKE 'dv-%';
