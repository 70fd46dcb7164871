-- test/pgtap/workflow_paths.sql: the paths taskq takes around the executor
-- hold where they must and give way where they must not:
--  * taskq's statements are planned without sequential scans, so a backend
--    that first ran them while taskq.tasks held a row keeps index plans;
--  * a run's row is read and written without the executor only for the
--    table as installed: with a trigger on taskq.runs, the SQL runs (and the
--    trigger fires).
-- One transaction, rolled back.
BEGIN;
SELECT plan(7);

-- ======================================================= plans without seq scans
-- taskq.tasks as small as a new database's: one row, analyzed.  The expiry
-- probe that own_tasks runs first gets custom plans for five calls, then the
-- generic one; made on such a table they would be sequential scans.
TRUNCATE taskq.tasks CASCADE;
SELECT is(taskq.insert_tasks('[{"id": "wp-1", "action": "wp-other"}]'), 1::bigint, 'one task in taskq.tasks');
ANALYZE taskq.tasks;
-- the scans counted so far (TRUNCATE … CASCADE made some)
CREATE TEMP TABLE scans_before AS
    SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relid = 'taskq.tasks'::regclass;
SELECT is((SELECT count(*) FROM generate_series(1, 8) AS g,
                  LATERAL taskq.own_tasks('wp-worker', 1, ARRAY['wp-none'], '1 minute')),
          0::bigint, 'eight claims of an action without tasks claim nothing');
SELECT is((SELECT x.seq_scan - b.seq_scan FROM pg_stat_xact_user_tables AS x, scans_before AS b
            WHERE x.relid = 'taskq.tasks'::regclass),
          0::bigint, 'and none of them scanned taskq.tasks sequentially');

-- ======================================================= the run's row
SELECT lives_ok($$SELECT taskq.define_machine('wp-loop',
    '{"states": [{"name": "A", "action": "wp-step", "initial": true, "final": true,
                  "transitions": [{"event": "next", "to": "A"}]}]}')$$, 'a looping machine');
CREATE TEMP TABLE run_writes (id text, state text);
CREATE FUNCTION pg_temp.note_run_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO run_writes VALUES (NEW.id, NEW.state);
    RETURN NEW;
END
$$;
CREATE TRIGGER wp_note AFTER UPDATE ON taskq.runs FOR EACH ROW EXECUTE FUNCTION pg_temp.note_run_write();
SELECT is(taskq.start_machine('wp-loop', 'wp-run'), 'wp-run', 'a run starts with a trigger on taskq.runs');
SELECT is((SELECT taskq.transition(o.id, o.token, 'next')
             FROM taskq.own_tasks('wp-worker', 1, ARRAY['wp-step'], '1 minute') AS o),
          'A', 'its step transitions');
SELECT ok((SELECT count(*) FROM run_writes WHERE id = 'wp-run') >= 2,
          'the run''s row was written by UPDATE statements: the trigger saw its start and its step');

SELECT * FROM finish();
ROLLBACK;
