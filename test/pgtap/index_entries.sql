-- test/pgtap/index_entries.sql: the direct paths open an index of
-- taskq.tasks only when a row goes into it (src/queue/tasks_shape.c), so
-- each must still find every index its rows belong in.  One session makes
-- rows for each of the eight indexes through each path (one-task enqueue,
-- small and page-at-a-time insert_tasks, claim, completion, retry with a
-- delay), and after each step every btree index must hold an entry for
-- each row it covers (amcheck) and the GIN index of successors must find
-- them.  A path that left an index closed that a row needed fails here.
BEGIN;
SELECT plan(12);

\ir include/direct_paths.sql

-- the successors' GIN index finds each task that lists id (read through it alone)
CREATE FUNCTION pg_temp.predecessors_of(p_id text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    SET LOCAL enable_seqscan = off;
    SET LOCAL enable_indexscan = off;
    SELECT count(*) INTO n FROM taskq.tasks WHERE to_signal_after @> ARRAY[p_id]::text[];
    RETURN n;
END $$;

-- one-task enqueues: ready, delayed, in a workflow
SELECT taskq.enqueue('ie', NULL, 'ie-1');
SELECT taskq.enqueue('ie', NULL, 'ie-2', not_before => now() + interval '1 hour', workflow => 'ie-wf');
SELECT taskq.enqueue('ie', NULL, 'ie-3', workflow => 'ie-wf');
SELECT lives_ok('SELECT pg_temp.check_task_indexes()', 'one-task enqueues: every index has its entries');

-- a small insert_tasks with successors (2 rows), and a page-at-a-time one (40 rows):
-- half delayed, a third in a workflow, each of the first 20 a predecessor of ie-join
SELECT is(taskq.insert_tasks('[{"id": "ie-s1", "action": "ie", "to_signal_after": ["ie-sjoin"]},
                               {"id": "ie-sjoin", "action": "ie-join", "workflow": "ie-wf"}]'),
          2::bigint, 'a small batch with an edge');
SELECT is(taskq.insert_tasks((SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
              'id', 'ie-b' || g, 'action', 'ie',
              'not_before', CASE WHEN g % 2 = 0 THEN now() + interval '1 hour' END,
              'workflow', CASE WHEN g % 3 = 0 THEN 'ie-wf' END,
              'to_signal_after', CASE WHEN g <= 20 THEN jsonb_build_array('ie-join') END)))
            || '[{"id": "ie-join", "action": "ie-join"}]'::jsonb
            FROM generate_series(1, 40) AS g)),
          41::bigint, 'a batch written a page at a time');
SELECT lives_ok('SELECT pg_temp.check_task_indexes()', 'batches: every index has its entries');
SELECT is(pg_temp.predecessors_of('ie-sjoin'), 1::bigint, 'the GIN index has the small batch''s successors');
SELECT is(pg_temp.predecessors_of('ie-join'), 20::bigint, 'and the large batch''s');

-- claims: the claimed versions go into the lease index
CREATE TEMP TABLE held AS SELECT * FROM taskq.own_tasks('ie-worker', 100, '{ie}', '1 minute');
SELECT is((SELECT count(*) FROM held), 23::bigint, 'the ready tasks of the action are claimed');
SELECT lives_ok('SELECT pg_temp.check_task_indexes()', 'claims: every index has its entries');

-- completions (finished index, workflow index with the new status), and
-- returns with a retry delay (the delayed tasks' index)
SELECT taskq.return_task(h.id, h.token, NULL, 'completed') FROM held AS h WHERE h.id LIKE 'ie-b%' OR h.id = 'ie-1';
SELECT taskq.return_task(h.id, h.token, NULL, 'pending', interval '1 hour')
  FROM held AS h WHERE NOT (h.id LIKE 'ie-b%' OR h.id = 'ie-1');
SELECT is((SELECT count(*) FROM taskq.tasks WHERE id LIKE 'ie-%' AND status_code = 'completed'), 21::bigint,
          'the completions');
SELECT is((SELECT count(*) FROM taskq.tasks WHERE id IN ('ie-3', 'ie-s1') AND status_code = 'pending'
              AND not_before > now() + interval '50 minutes'), 2::bigint, 'the returns with a delay');
SELECT lives_ok('SELECT pg_temp.check_task_indexes()', 'returns: every index has its entries');
SELECT is((SELECT count(*) FROM taskq.tasks WHERE id = 'ie-join' AND num_signals = 0), 0::bigint,
          'the join still waits for its delayed predecessors');

SELECT * FROM finish();
ROLLBACK;
