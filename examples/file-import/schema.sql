-- examples/file-import/schema.sql: the demo's side tables, in schema import_demo.
-- Run by run.sh before the workers start; safe to run again (it starts afresh).
--
--   files       the "uploaded" files, one per job (job id, file name, row count)
--   file_rows   their rows (line number, content)
--   processed   one row per process-item a worker completed, written in the same
--               transaction as report_progress and return_task
--   jobs_done   one row per job-completed task (the join), same transaction

\set ON_ERROR_STOP on
SET client_min_messages = warning;

DROP SCHEMA IF EXISTS import_demo CASCADE;
-- Tasks and jobs left by an earlier run of this demo (the action names are the demo's own).
DELETE FROM taskq.tasks WHERE action IN ('create-job', 'process-item', 'job-completed');
DELETE FROM taskq.jobs WHERE id LIKE 'import-%';
DELETE FROM taskq.cancelled_workflows WHERE workflow LIKE 'import-%';

CREATE SCHEMA import_demo;

CREATE TABLE import_demo.files (
    job_id    text PRIMARY KEY,
    file_name text NOT NULL,
    row_count integer NOT NULL
);

CREATE TABLE import_demo.file_rows (
    job_id  text NOT NULL REFERENCES import_demo.files,
    line_no integer NOT NULL,
    content text NOT NULL,
    PRIMARY KEY (job_id, line_no)
);

CREATE TABLE import_demo.processed (           -- no unique key: duplicates must show
    job_id  text NOT NULL,
    line_no integer NOT NULL,
    actor   text NOT NULL,
    at      timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE import_demo.jobs_done (
    job_id text NOT NULL,
    actor  text NOT NULL,
    at     timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- One line per job: the queue's view and ours.
CREATE VIEW import_demo.summary AS
SELECT f.job_id, f.file_name, f.row_count, s.state, s.item_count, s.item_progress,
       (SELECT count(*) FROM import_demo.processed p WHERE p.job_id = f.job_id) AS processed,
       (SELECT count(DISTINCT actor) FROM import_demo.processed p WHERE p.job_id = f.job_id) AS workers,
       round(extract(epoch FROM (SELECT max(at) FROM import_demo.jobs_done d WHERE d.job_id = f.job_id)
                                - s.created_at)::numeric, 1) AS seconds
  FROM import_demo.files f
  LEFT JOIN taskq.job_states s ON s.id = f.job_id
 ORDER BY f.job_id;

-- Everything that should not have happened; run.sh fails when this is not empty.
CREATE VIEW import_demo.violations (violation) AS
SELECT format('job %s is %s, not completed', f.job_id, coalesce(s.state, 'missing'))
  FROM import_demo.files f LEFT JOIN taskq.job_states s ON s.id = f.job_id
 WHERE s.state IS DISTINCT FROM 'completed'
UNION ALL
SELECT format('job %s: item_progress %s, item_count %s, file rows %s',
              f.job_id, s.item_progress, s.item_count, f.row_count)
  FROM import_demo.files f JOIN taskq.job_states s ON s.id = f.job_id
 WHERE s.item_progress IS DISTINCT FROM s.item_count OR s.item_count IS DISTINCT FROM f.row_count
UNION ALL
SELECT format('job %s: row %s processed %s times', coalesce(r.job_id, p.job_id),
              coalesce(r.line_no, p.line_no), coalesce(p.n, 0))
  FROM import_demo.file_rows r
  FULL JOIN (SELECT job_id, line_no, count(*) AS n FROM import_demo.processed GROUP BY 1, 2) p
         USING (job_id, line_no)
 WHERE p.n IS DISTINCT FROM 1
UNION ALL
SELECT format('job %s marked done %s times', f.job_id, count(d.job_id))
  FROM import_demo.files f LEFT JOIN import_demo.jobs_done d USING (job_id)
 GROUP BY f.job_id HAVING count(d.job_id) <> 1
UNION ALL
SELECT format('job %s marked done before its last row was processed', d.job_id)
  FROM import_demo.jobs_done d
 WHERE d.at < (SELECT max(at) FROM import_demo.processed p WHERE p.job_id = d.job_id)
UNION ALL
SELECT format('task %s is %s (%s)', id, status_code, status)
  FROM taskq.tasks
 WHERE action IN ('create-job', 'process-item', 'job-completed') AND status_code <> 'completed';

-- Work left: jobs not yet marked done.
CREATE VIEW import_demo.work_left AS
SELECT count(*) AS jobs_left
  FROM import_demo.files f
 WHERE NOT EXISTS (SELECT 1 FROM import_demo.jobs_done d WHERE d.job_id = f.job_id);
