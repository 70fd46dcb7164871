--
-- taskq.metrics() and taskq.metrics_text(): counters per action counted at
-- commit (a rollback counts nothing), histograms of queue wait and run
-- time, the gauges as taskq.metric_gauges holds them, the text format.
-- Counters are the server's since it started, so each step prints what
-- changed since the step before (public.metric_changes).  Waits and runs
-- are made long by back-dating the rows, so that each lands in a known
-- bucket.  (The background worker's refresh of the gauges, and a restart,
-- are in test/t/035_metrics.pl.)
--
SET taskq.default_lease = 0;
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

CREATE TABLE public.metric_snap (name text, labels jsonb, value float8);
CREATE FUNCTION public.metric_changes()
RETURNS TABLE (name text, action text, le text, delta float8)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    SELECT m.name, m.labels->>'action', m.labels->>'le', m.value - COALESCE(s.value, 0)
      FROM taskq.metrics() AS m
      LEFT JOIN public.metric_snap AS s ON s.name = m.name AND s.labels = m.labels
     WHERE m.kind <> 'gauge' AND m.name NOT LIKE '%\_sum'
       AND m.value IS DISTINCT FROM s.value
       AND (s.value IS NOT NULL OR m.value <> 0)
     ORDER BY 1, 2, length(m.labels->>'le'), 3;
    DELETE FROM public.metric_snap;
    INSERT INTO public.metric_snap SELECT m.name, m.labels, m.value FROM taskq.metrics() AS m;
END
$$;
SELECT count(*) >= 0 AS snapshot_taken FROM public.metric_changes();

-- Inserted, per action; a rollback counts nothing, nor does a savepoint
-- rolled back.
SELECT taskq.insert_tasks('[{"id": "m1", "action": "m_a"}, {"id": "m2", "action": "m_a"},
                           {"id": "m3", "action": "m_a"}, {"id": "m4", "action": "m_b"}]');
SELECT * FROM public.metric_changes();
BEGIN;
SELECT taskq.enqueue('m_a', id => 'gone');
ROLLBACK;
BEGIN;
SELECT taskq.enqueue('m_b', id => 'm5');
SAVEPOINT s;
SELECT taskq.enqueue('m_b', id => 'gone');
SAVEPOINT s2;
SELECT taskq.enqueue('m_b', id => 'gone2');
RELEASE SAVEPOINT s2;
ROLLBACK TO SAVEPOINT s;
SAVEPOINT s3;
SELECT taskq.enqueue('m_c', id => 'm6');
RELEASE SAVEPOINT s3;
COMMIT;
SELECT * FROM public.metric_changes();

-- Claims: the wait runs from when the task was ready (here 100 s ago: the
-- bucket le="300" and above).  A claim rolled back counts nothing.
UPDATE taskq.tasks SET created_at = now() - interval '100 s', not_before = now() - interval '100 s';
BEGIN;
SELECT n, id FROM public.own('w', 1, '{m_a}');
ROLLBACK;
SELECT * FROM public.metric_changes();
SELECT n, id FROM public.own('w', 2, '{m_a}');
SELECT * FROM public.metric_changes();

-- Returns: the run time from the claim (here 2 s: le="2.5" and above);
-- completed, given back for another try, aborted, released.
UPDATE taskq.tasks SET claimed_at = now() - interval '2 s' WHERE id IN ('m1', 'm2');
SELECT ret('m1', 'completed');
SELECT ret('m2', 'pending');
SELECT * FROM public.metric_changes();
UPDATE taskq.tasks SET not_before = now() - interval '20 s' WHERE id = 'm2';
SELECT n, id FROM public.own('w', 1, '{m_a}');
SELECT ret('m2', 'aborted');
SELECT n, id FROM public.own('w', 1, '{m_b}');
SELECT taskq.release_task('m4', (SELECT token FROM public.tokens WHERE id = 'm4'));
SELECT * FROM public.metric_changes() WHERE name NOT LIKE 'taskq\_queue\_wait%'
   AND name NOT LIKE 'taskq\_run%';

-- The completion of a batch (return_tasks) counts each task.
SELECT n, id FROM public.own('w', 2, '{m_b}');
SELECT taskq.return_tasks(ARRAY['m4', 'm5'],
                          ARRAY(SELECT token FROM public.tokens WHERE id IN ('m4', 'm5') ORDER BY id),
                          NULL, '{completed,completed}');
SELECT * FROM public.metric_changes() WHERE name LIKE 'taskq\_tasks%' OR name LIKE '%\_count';

-- A lease that expired, swept by the next claim; cancelled; re-driven.
SELECT n, id FROM public.own('w', 1, '{m_a}', '1 hour');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE id = 'm3';
SELECT n, id FROM public.own('w', 1, '{nothing}');
SELECT taskq.cancel_tasks('{m3, m6}');
SELECT taskq.redrive_tasks('{m2}');
SELECT * FROM public.metric_changes() WHERE name LIKE 'taskq\_tasks%';

-- Every action with a policy appears, with zeros; so does one with
-- gauges (written here by hand: the background worker is off in this
-- suite).  Gauges come from the table, 0 where it has no row.
SELECT taskq.set_action_policy('m_policy', 3);
INSERT INTO taskq.metric_gauges VALUES ('taskq_tasks_ready', 'm_gauge', 7, now()),
    ('taskq_tasks_blocked', 'm_gauge', 2, now()), ('taskq_workers_live', '', 3, now());
SELECT name, labels, kind, value FROM taskq.metrics()
 WHERE labels->>'action' IN ('m_policy', 'm_gauge') AND value <> 0;
SELECT labels->>'action' AS action, count(*) AS samples, sum(value) AS total
  FROM taskq.metrics() WHERE labels->>'action' IN ('m_policy', 'm_gauge')
 GROUP BY 1 ORDER BY 1;
SELECT name, labels, kind, value FROM taskq.metrics()
 WHERE name IN ('taskq_workers_live', 'taskq_workers_stale', 'taskq_metric_actions_overflow_total');
SELECT value BETWEEN 0 AND 60 AS gauges_age_recent
  FROM taskq.metrics() WHERE name = 'taskq_gauges_age_seconds';
DELETE FROM taskq.metric_gauges;
SELECT taskq.set_action_policy('m_policy', NULL);

-- The names, kinds and label sets: one row per action and family (and per
-- bucket), with the same families for every action.
SELECT name, kind,
       count(DISTINCT labels->>'action') = (SELECT count(DISTINCT labels->>'action')
                                              FROM taskq.metrics()) AS every_action,
       count(DISTINCT labels->>'le') AS buckets
  FROM taskq.metrics() WHERE labels ? 'action' GROUP BY name, kind ORDER BY name;

-- Histograms: buckets never decrease with le, +Inf equals _count, for
-- every action.
WITH b AS (
    SELECT regexp_replace(name, '_bucket$', '') AS family, labels->>'action' AS action,
           CASE WHEN labels->>'le' = '+Inf' THEN 'Infinity'::float8
                ELSE (labels->>'le')::float8 END AS le, value
      FROM taskq.metrics() WHERE name LIKE '%\_bucket')
SELECT count(*) > 0 AS pairs,
       count(*) FILTER (WHERE later.value < earlier.value) AS decreasing
  FROM b AS earlier JOIN b AS later
    ON later.family = earlier.family AND later.action = earlier.action AND later.le > earlier.le;
SELECT count(*) > 0 AS histograms,
       count(*) FILTER (WHERE c.value <> i.value) AS inf_not_count
  FROM taskq.metrics() AS c
  JOIN taskq.metrics() AS i
    ON i.name = regexp_replace(c.name, '_count$', '_bucket')
   AND i.labels = c.labels || '{"le": "+Inf"}'
 WHERE c.name LIKE '%\_count';

-- The text format: every family has one HELP and one TYPE line before its
-- samples, each sample line is a name, labels and a value; label values
-- are escaped (\\, \" and \n).
SELECT taskq.enqueue(E'm_"q"\\x\ny', id => 'm7');
WITH l AS (SELECT line FROM regexp_split_to_table(taskq.metrics_text(), E'\n') AS line)
SELECT count(*) FILTER (WHERE line LIKE '# HELP %') AS help,
       count(*) FILTER (WHERE line LIKE '# TYPE %') AS type,
       count(*) FILTER (WHERE line ~ '^taskq_[a-z_]+(\{[^}]*\})? [-+0-9.eInfNa]+$')
         = (SELECT count(*) FROM taskq.metrics()) AS a_sample_per_row,
       count(*) FILTER (WHERE line NOT LIKE '# %'
                          AND line !~ '^taskq_[a-z_]+(\{[^}]*\})? [-+0-9.eInfNa]+$') AS other
  FROM l WHERE line <> '';
SELECT line FROM regexp_split_to_table(taskq.metrics_text(), E'\n') AS line
 WHERE line LIKE 'taskq_tasks_inserted_total{action="m_\\"q%'
    OR line LIKE '# % taskq_tasks_inserted_total%';
SELECT line FROM regexp_split_to_table(taskq.metrics_text(), E'\n') AS line
 WHERE line LIKE 'taskq_queue_wait_seconds%{action="m_a"%' AND line NOT LIKE '%\_sum%';

DELETE FROM taskq.tasks;
DROP FUNCTION public.metric_changes();
DROP TABLE public.metric_snap;
RESET taskq.default_lease;
