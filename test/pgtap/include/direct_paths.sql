-- test/pgtap/include/direct_paths.sql: what claim_path, complete_path and
-- insert_path share (each includes it with \ir): amcheck over every index
-- of taskq.tasks, and an audit trigger function such as an admin might put
-- on taskq.tasks (the direct paths must then give way to the SQL ones).
CREATE EXTENSION amcheck;

-- Does each index of taskq.tasks hold an entry for every row it covers?
-- (bt_index_check with heapallindexed fails if one is missing.)
CREATE FUNCTION pg_temp.check_task_indexes() RETURNS void LANGUAGE sql AS $$
    SELECT bt_index_check(c.oid, true) FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
     WHERE i.indrelid = 'taskq.tasks'::regclass
       AND c.relam = (SELECT a.oid FROM pg_am AS a WHERE a.amname = 'btree');
    SELECT NULL::void $$;

-- Rows the trigger saw: id, status before (NULL for an insert) and after.
CREATE TEMP TABLE seen (id text, old_status taskq.status, new_status taskq.status);
CREATE FUNCTION pg_temp.audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO seen VALUES (NEW.id, CASE WHEN TG_OP = 'UPDATE' THEN OLD.status_code END, NEW.status_code);
    RETURN NEW;
END $$;
