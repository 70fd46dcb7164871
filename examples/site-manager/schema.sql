-- examples/site-manager/schema.sql: the demo's side tables, in schema site_demo.
-- Run by run.sh before the workers start; safe to run again (it starts afresh).
--
--   sites          the site status object: state (creating, running, deleting)
--                  and one flag per step; the producer creates it synchronously
--   executions     one row per try of a task that a worker ran (ok or failed), written
--                  in the same transaction as taskq.return_task
--   cancellations  the deletion: cancel_at is clock_timestamp() at the end of the
--                  deletion's transaction (before its commit), committed_seen is read
--                  just after the commit

\set ON_ERROR_STOP on
SET client_min_messages = warning;

DROP SCHEMA IF EXISTS site_demo CASCADE;
-- Tasks and cancelled workflows left by an earlier run of this demo.
DELETE FROM taskq.tasks
 WHERE action IN ('save-metadata', 'create-fs', 'create-db', 'bootstrap', 'mark-running');
DELETE FROM taskq.cancelled_workflows WHERE workflow LIKE 'site-%';
-- The policy: up to 8 tries, waiting 0.2 s, 0.4 s, 0.8 s ... (at most 2 s, ±10 %).
SELECT taskq.set_action_policy(a, 8, '{"delay": "0.2 s", "factor": 2, "max_delay": "2 s", "jitter": 0.1}')
  FROM unnest(ARRAY['save-metadata', 'create-fs', 'create-db', 'bootstrap', 'mark-running']) AS a;

CREATE SCHEMA site_demo;

CREATE TABLE site_demo.sites (
    site_id        text PRIMARY KEY,
    name           text NOT NULL,
    domain         text NOT NULL UNIQUE,
    state          text NOT NULL DEFAULT 'creating'
                   CHECK (state IN ('creating', 'running', 'deleting')),
    metadata_ready boolean NOT NULL DEFAULT false,
    fs_ready       boolean NOT NULL DEFAULT false,
    db_ready       boolean NOT NULL DEFAULT false,
    bootstrapped   boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    running_at     timestamptz
);

CREATE TABLE site_demo.executions (
    seq     bigserial PRIMARY KEY,
    site_id text NOT NULL,
    task_id text NOT NULL,
    action  text NOT NULL,
    outcome text NOT NULL,              -- ok, failed (returned pending for a retry)
    try     integer NOT NULL,
    actor   text NOT NULL,
    at      timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE site_demo.cancellations (
    site_id        text PRIMARY KEY,
    tasks          bigint NOT NULL,     -- what cancel_workflow returned
    cancel_at      timestamptz NOT NULL,
    committed_seen timestamptz
);

-- One line per site: its status object, its tasks, its tries.
CREATE VIEW site_demo.summary AS
SELECT s.site_id, s.domain, s.state, s.metadata_ready AS meta, s.fs_ready AS fs, s.db_ready AS db,
       s.bootstrapped AS boot,
       (SELECT count(*) FROM site_demo.executions e WHERE e.site_id = s.site_id AND outcome = 'ok') AS ok,
       (SELECT count(*) FROM site_demo.executions e WHERE e.site_id = s.site_id AND outcome = 'failed') AS failed,
       (SELECT string_agg(t.status_code || ':' || count, ' ' ORDER BY t.status_code)
          FROM (SELECT status_code, count(*) FROM taskq.tasks WHERE workflow = s.site_id
                 GROUP BY 1) t) AS tasks,
       round(extract(epoch FROM s.running_at - s.created_at)::numeric, 1) AS seconds
  FROM site_demo.sites s
 ORDER BY s.site_id;

-- Work left: unfinished demo tasks.
CREATE VIEW site_demo.work_left AS
SELECT count(*) AS unfinished_tasks
  FROM taskq.tasks
 WHERE action IN ('save-metadata', 'create-fs', 'create-db', 'bootstrap', 'mark-running')
   AND status_code IN ('pending', 'in_progress');

-- Everything that should not have happened; run.sh fails when this is not empty.
CREATE VIEW site_demo.violations (violation) AS
-- the sites not deleted are running, with every step done, and all their tasks completed
SELECT format('site %s is %s (meta %s, fs %s, db %s, boot %s)', site_id, state,
              metadata_ready, fs_ready, db_ready, bootstrapped)
  FROM site_demo.sites s
 WHERE NOT EXISTS (SELECT 1 FROM site_demo.cancellations c WHERE c.site_id = s.site_id)
   AND NOT (state = 'running' AND metadata_ready AND fs_ready AND db_ready AND bootstrapped)
UNION ALL
SELECT format('task %s of site %s is %s (%s)', t.id, t.workflow, t.status_code, t.status)
  FROM taskq.tasks t JOIN site_demo.sites s ON s.site_id = t.workflow
 WHERE NOT EXISTS (SELECT 1 FROM site_demo.cancellations c WHERE c.site_id = s.site_id)
   AND t.status_code <> 'completed'
UNION ALL
-- each step ran ok exactly once per site, and only its task's last try was ok
SELECT format('task %s ran ok %s times', t.id, count(e.seq) FILTER (WHERE e.outcome = 'ok'))
  FROM taskq.tasks t LEFT JOIN site_demo.executions e ON e.task_id = t.id
 WHERE t.workflow LIKE 'site-%' AND t.status_code = 'completed'
 GROUP BY t.id HAVING count(e.seq) FILTER (WHERE e.outcome = 'ok') <> 1
UNION ALL
SELECT format('bootstrap of %s ran before create-db was ok', b.site_id)
  FROM site_demo.executions b
 WHERE b.action = 'bootstrap'
   AND NOT EXISTS (SELECT 1 FROM site_demo.executions d WHERE d.site_id = b.site_id
                    AND d.action = 'create-db' AND d.outcome = 'ok' AND d.seq < b.seq)
UNION ALL
SELECT format('mark-running of %s ran before %s was ok', m.site_id, a.action)
  FROM site_demo.executions m
 CROSS JOIN (VALUES ('save-metadata'), ('create-fs'), ('create-db'), ('bootstrap')) AS a (action)
 WHERE m.action = 'mark-running'
   AND NOT EXISTS (SELECT 1 FROM site_demo.executions d WHERE d.site_id = m.site_id
                    AND d.action = a.action AND d.outcome = 'ok' AND d.seq < m.seq)
UNION ALL
-- the deleted site: nothing of it ran after the deletion ...
SELECT format('site %s: %s (try %s, %s) committed after the deletion (%s > %s)',
              e.site_id, e.task_id, e.try, e.outcome, e.at, c.cancel_at)
  FROM site_demo.executions e JOIN site_demo.cancellations c USING (site_id)
 WHERE e.at > c.cancel_at
UNION ALL
-- ... its tasks ended: completed before the deletion, or aborted; never running
SELECT format('task %s of deleted site %s is %s (%s)', t.id, t.workflow, t.status_code, t.status)
  FROM taskq.tasks t JOIN site_demo.cancellations c ON c.site_id = t.workflow
 WHERE t.status_code NOT IN ('completed', 'aborted')
    OR (t.status_code = 'completed' AND t.finished_at > c.cancel_at)
    OR (t.action = 'mark-running' AND t.status_code <> 'aborted')
UNION ALL
SELECT format('deleted site %s is %s', s.site_id, s.state)
  FROM site_demo.sites s JOIN site_demo.cancellations c USING (site_id)
 WHERE s.state <> 'deleting';
