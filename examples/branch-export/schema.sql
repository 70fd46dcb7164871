-- examples/branch-export/schema.sql: the demo's side tables, in schema export_demo.
-- Run by run.sh before the workers start; safe to run again (it starts afresh).
--
--   commits, commit_objects   the versioned store's side: the commits of each branch and their objects
--   s3                        the "S3" side: what the export wrote (no network in this demo)
--   events                    one row per task a worker completed, written in the same
--                             transaction as taskq.return_task: the completion log checked
--                             at the end (seq is the order of completion)
--   manifests                 one row per manifest written

\set ON_ERROR_STOP on
SET client_min_messages = warning;

DROP SCHEMA IF EXISTS export_demo CASCADE;
-- Tasks left by an earlier run of this demo (the action names are the demo's own).
DELETE FROM taskq.tasks
 WHERE action IN ('next-export', 'start-export', 'done-export', 'export-copy',
                  'export-delete', 'export-success', 'export-manifest');

CREATE SCHEMA export_demo;

CREATE TABLE export_demo.commits (
    commit_id    text PRIMARY KEY,
    branch       text NOT NULL,
    seq          integer NOT NULL,          -- 1, 2, ... per branch
    producer     text NOT NULL,
    export_wait  text NOT NULL,             -- what add_dependencies on done-export said
    committed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (branch, seq)
);

CREATE TABLE export_demo.commit_objects (
    commit_id text NOT NULL REFERENCES export_demo.commits,
    path      text NOT NULL,
    etag      text NOT NULL,
    size_mb   integer NOT NULL,
    PRIMARY KEY (commit_id, path)
);

CREATE TABLE export_demo.s3 (
    branch        text NOT NULL,
    path          text NOT NULL,            -- key under s3://export-bucket/{branch}/
    etag          text NOT NULL,
    export_commit text NOT NULL,            -- the export that wrote it
    written_by    text NOT NULL,
    PRIMARY KEY (branch, path)
);

CREATE TABLE export_demo.events (
    seq           bigserial PRIMARY KEY,
    branch        text NOT NULL,
    export_commit text NOT NULL,
    task_id       text NOT NULL,
    action        text NOT NULL,
    path          text,                     -- object or _SUCCESS key (copy, delete, success)
    actor         text NOT NULL,
    tries         integer NOT NULL,
    at            timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE export_demo.manifests (
    branch    text NOT NULL,
    commit_id text NOT NULL,
    objects   integer NOT NULL,
    total_mb  bigint NOT NULL
);

-- Work left: unfinished demo tasks, plus branches whose last commit has no manifest yet.
CREATE VIEW export_demo.work_left AS
SELECT (SELECT count(*) FROM taskq.tasks
         WHERE action IN ('next-export', 'start-export', 'done-export', 'export-copy',
                          'export-delete', 'export-success', 'export-manifest')
           AND status_code IN ('pending', 'in_progress')) AS unfinished_tasks,
       (SELECT count(*) FROM export_demo.commits c
         WHERE c.seq = (SELECT max(seq) FROM export_demo.commits WHERE branch = c.branch)
           AND NOT EXISTS (SELECT 1 FROM export_demo.manifests m
                            WHERE m.commit_id = c.commit_id)) AS branches_behind;

-- One line per branch for the monitor: last commit, export running, last manifest.
CREATE VIEW export_demo.branches AS
SELECT c.branch,
       max(c.seq) AS commits,
       (SELECT body->>'commit' FROM taskq.tasks
         WHERE id = 'start-export-' || c.branch
           AND NOT EXISTS (SELECT 1 FROM taskq.tasks d
                            WHERE d.id = 'done-export-' || c.branch
                              AND d.status_code = 'completed')) AS exporting,
       (SELECT body->>'commit' FROM taskq.tasks
         WHERE id = 'next-export-' || c.branch
           AND status_code <> 'completed') AS next_export,
       (SELECT string_agg(m.commit_id, ' ' ORDER BY cm.seq)
          FROM export_demo.manifests m JOIN export_demo.commits cm USING (commit_id)
         WHERE m.branch = c.branch) AS exported
  FROM export_demo.commits c
 GROUP BY c.branch
 ORDER BY c.branch;

-- The prefixes of each commit: "" (the root) and every directory holding an object.
CREATE VIEW export_demo.commit_prefixes AS
SELECT DISTINCT o.commit_id,
       array_to_string((string_to_array(o.path, '/'))[1:i], '/')
           || CASE WHEN i > 0 THEN '/' ELSE '' END AS prefix
  FROM export_demo.commit_objects o,
       generate_series(0, cardinality(string_to_array(o.path, '/')) - 1) AS i;

-- The exports that ran: one row per start-export completed.
CREATE VIEW export_demo.exports AS
SELECT e.branch, e.export_commit, e.seq AS started_seq, c.seq AS commit_seq,
       lead(e.seq) OVER (PARTITION BY e.branch ORDER BY e.seq) AS next_started_seq,
       lag(c.seq) OVER (PARTITION BY e.branch ORDER BY e.seq) AS previous_commit_seq
  FROM export_demo.events e
  JOIN export_demo.commits c ON c.commit_id = e.export_commit
 WHERE e.action = 'start-export';

-- Everything that should not have happened; run.sh fails when this is not empty.
CREATE VIEW export_demo.violations (violation) AS
-- every demo task ended completed: none pending, in progress (lease or not) or aborted
SELECT format('task %s is %s (%s)', id, status_code, status)
  FROM taskq.tasks
 WHERE action IN ('next-export', 'start-export', 'done-export', 'export-copy',
                  'export-delete', 'export-success', 'export-manifest')
   AND status_code <> 'completed'
UNION ALL
-- every completed task (but the spontaneous done-export) was completed by exactly one worker
SELECT format('task %s (export %s) completed %s times', t.id, t.body->>'commit', count(e.seq))
  FROM taskq.tasks t
  LEFT JOIN export_demo.events e ON e.task_id = t.id AND e.export_commit = t.body->>'commit'
 WHERE t.action IN ('next-export', 'start-export', 'export-copy', 'export-delete',
                    'export-success', 'export-manifest')
   AND t.status_code = 'completed'
 GROUP BY t.id, t.body->>'commit'
HAVING count(e.seq) <> 1
UNION ALL
-- the last commit of every branch was exported, and the bucket holds exactly that commit:
-- its objects with their etags and a _SUCCESS (etag = commit id) in every prefix
(WITH last AS (
     SELECT DISTINCT ON (branch) branch, commit_id
       FROM export_demo.commits ORDER BY branch, seq DESC),
 expected AS (
     SELECT l.branch, o.path, o.etag
       FROM last l JOIN export_demo.commit_objects o USING (commit_id)
     UNION ALL
     SELECT l.branch, p.prefix || '_SUCCESS', l.commit_id
       FROM last l JOIN export_demo.commit_prefixes p USING (commit_id))
 SELECT format('branch %s: last commit %s has no manifest', l.branch, l.commit_id)
   FROM last l
  WHERE NOT EXISTS (SELECT 1 FROM export_demo.manifests m WHERE m.commit_id = l.commit_id)
 UNION ALL
 SELECT format('branch %s: s3 key %s has etag %s, expected %s', branch, path,
               coalesce(s.etag, 'none'), coalesce(x.etag, 'none'))
   FROM expected x
   FULL JOIN export_demo.s3 s USING (branch, path)
  WHERE x.etag IS DISTINCT FROM s.etag)
UNION ALL
-- one export per commit at most, in commit order, never two at once on a branch
SELECT format('commit %s exported %s times', export_commit, count(*))
  FROM export_demo.exports GROUP BY export_commit HAVING count(*) > 1
UNION ALL
SELECT format('branch %s: export of %s started after a newer commit was exported',
              branch, export_commit)
  FROM export_demo.exports WHERE commit_seq <= previous_commit_seq
UNION ALL
SELECT format('export %s: %s %s completed after the next export started',
              x.export_commit, e.action, e.task_id)
  FROM export_demo.exports x
  JOIN export_demo.events e ON e.export_commit = x.export_commit
 WHERE e.action NOT IN ('export-manifest', 'next-export')
   AND e.seq > x.next_started_seq
UNION ALL
-- within each export: every object copied exactly once, every key deleted at most once
(WITH expected AS (
     SELECT x.export_commit, o.path
       FROM export_demo.exports x JOIN export_demo.commit_objects o ON o.commit_id = x.export_commit),
 copied AS (
     SELECT export_commit, path, count(*) AS n
       FROM export_demo.events WHERE action = 'export-copy' GROUP BY 1, 2)
 SELECT format('export %s: %s copied %s times', export_commit, path, coalesce(c.n, 0))
   FROM expected x FULL JOIN copied c USING (export_commit, path)
  WHERE c.n IS DISTINCT FROM 1)
UNION ALL
SELECT format('export %s: %s deleted %s times', export_commit, path, count(*))
  FROM export_demo.events WHERE action = 'export-delete'
 GROUP BY export_commit, path HAVING count(*) > 1
UNION ALL
-- within each export: one _SUCCESS per prefix, written after everything under its prefix
(WITH expected AS (
     SELECT x.export_commit, p.prefix || '_SUCCESS' AS path
       FROM export_demo.exports x JOIN export_demo.commit_prefixes p ON p.commit_id = x.export_commit),
 written AS (
     SELECT export_commit, path, count(*) AS n
       FROM export_demo.events WHERE action = 'export-success' GROUP BY 1, 2)
 SELECT format('export %s: %s written %s times', export_commit, path, coalesce(w.n, 0))
   FROM expected x FULL JOIN written w USING (export_commit, path)
  WHERE w.n IS DISTINCT FROM 1)
UNION ALL
SELECT format('export %s: %s written before %s', s.export_commit, s.path, o.path)
  FROM export_demo.events s
  JOIN export_demo.events o
    ON o.export_commit = s.export_commit
   AND o.action IN ('export-copy', 'export-delete', 'export-success')
   AND o.path <> s.path
   AND starts_with(o.path, left(s.path, -length('_SUCCESS')))
   AND o.seq > s.seq
 WHERE s.action = 'export-success';

-- What happened, per branch.
CREATE VIEW export_demo.summary AS
SELECT c.branch,
       count(*) AS commits,
       count(*) FILTER (WHERE c.export_wait = 'waits for done-export') AS waited,
       (SELECT count(*) FROM export_demo.exports x WHERE x.branch = c.branch) AS exports,
       (SELECT count(*) FROM export_demo.events e
         WHERE e.branch = c.branch AND e.action = 'export-copy') AS copies,
       (SELECT count(*) FROM export_demo.events e
         WHERE e.branch = c.branch AND e.action = 'export-delete') AS deletes,
       (SELECT count(*) FROM export_demo.events e
         WHERE e.branch = c.branch AND e.action = 'export-success') AS successes,
       (SELECT coalesce(sum(e.tries - 1), 0) FROM export_demo.events e
         WHERE e.branch = c.branch AND e.action = 'export-copy') AS copy_retries,
       (SELECT count(DISTINCT e.actor) FROM export_demo.events e
         WHERE e.branch = c.branch) AS workers
  FROM export_demo.commits c
 GROUP BY c.branch
 ORDER BY c.branch;
