--
-- branch_export: the "Branch export" story, step by step, in one session.
-- examples/branch-export runs the same story with concurrent workers.
--
-- Tasks per branch (id = action + '-' + branch):
--   next-export-main   queued by every commit, waits for done-export-main
--   start-export-main  created by next-export; plans the export
--   done-export-main   spontaneous join of the export, created with start-export
-- and per export of commit C: copy@C:path, delete@C:path, success@C:prefix_SUCCESS,
-- manifest@C (waits for done-export-main).
--
DELETE FROM taskq.tasks;
CREATE SCHEMA bx;
-- The versioned store's side, the "S3" side, and the completion log of the workers.
-- Keys compare bytewise ("C"), like task ids: the same order under any locale.
CREATE TABLE bx.commits (commit_id text COLLATE "C" PRIMARY KEY, branch text NOT NULL);
CREATE TABLE bx.objects (commit_id text COLLATE "C" NOT NULL, path text COLLATE "C" NOT NULL,
                         etag text NOT NULL, PRIMARY KEY (commit_id, path));
CREATE TABLE bx.s3 (branch text NOT NULL, path text COLLATE "C" NOT NULL, etag text NOT NULL,
                    PRIMARY KEY (branch, path));
CREATE TABLE bx.manifests (commit_id text COLLATE "C" NOT NULL, objects int NOT NULL);
CREATE TABLE bx.log (seq serial PRIMARY KEY, task_id text NOT NULL,
                     export_commit text COLLATE "C" NOT NULL, action text COLLATE "C" NOT NULL,
                     path text COLLATE "C");
-- A commit: its objects as {path: etag}.
CREATE FUNCTION bx.make_commit(c text, br text, objs jsonb) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO bx.commits VALUES (c, br);
    INSERT INTO bx.objects SELECT c, key, value FROM jsonb_each_text(objs);
$$;
-- Plan an export (the start-export handler): one copy per object of the commit,
-- one delete per key of the bucket no longer in it, one _SUCCESS per prefix
-- ('' is the root).  An object signals the _SUCCESS of its deepest existing
-- prefix, a _SUCCESS that of its parent prefix, the root's done-export-{branch}.
-- _SUCCESS tasks have priority 10, so they run as soon as they are ready.
CREATE FUNCTION bx.plan(br text, c text) RETURNS jsonb
LANGUAGE sql AS $$
WITH obj AS (SELECT path, etag FROM bx.objects WHERE commit_id = c),
prefixes AS (
    SELECT DISTINCT array_to_string(p[1:i], '/') || CASE WHEN i > 0 THEN '/' ELSE '' END AS prefix
      FROM obj, string_to_array(obj.path, '/') AS p, generate_series(0, cardinality(p) - 1) AS i),
keys AS (
    SELECT 1 AS kind, 'copy' AS verb, path, etag FROM obj
    UNION ALL
    SELECT 2, 'delete', s.path, NULL FROM bx.s3 s
     WHERE s.branch = br
       AND s.path NOT IN (SELECT path FROM obj)
       AND s.path NOT IN (SELECT prefix || '_SUCCESS' FROM prefixes)),
tasks AS (
    SELECT k.kind, k.path AS key,
           jsonb_build_object('id', k.verb || '@' || c || ':' || k.path,
                              'action', 'export-' || k.verb,
                              'body', jsonb_strip_nulls(jsonb_build_object(
                                  'branch', br, 'commit', c, 'path', k.path, 'etag', k.etag)),
                              'max_tries', 3,
                              'to_signal_after', jsonb_build_array(
                                  'success@' || c || ':' || home.prefix || '_SUCCESS')) AS task
      FROM keys k,
           LATERAL (SELECT prefix FROM prefixes WHERE starts_with(k.path, prefix)
                     ORDER BY length(prefix) DESC LIMIT 1) AS home
    UNION ALL
    SELECT 3, p.prefix,
           jsonb_build_object('id', 'success@' || c || ':' || p.prefix || '_SUCCESS',
                              'action', 'export-success',
                              'body', jsonb_build_object('branch', br, 'commit', c, 'prefix', p.prefix),
                              'priority', 10,
                              'to_signal_after', jsonb_build_array(coalesce(
                                  'success@' || c || ':' || parent.prefix || '_SUCCESS',
                                  'done-export-' || br)))
      FROM prefixes p
      LEFT JOIN LATERAL (SELECT q.prefix FROM prefixes q
                          WHERE starts_with(p.prefix, q.prefix) AND q.prefix <> p.prefix
                          ORDER BY length(q.prefix) DESC LIMIT 1) AS parent ON true)
SELECT jsonb_agg(task ORDER BY kind, key COLLATE "C") FROM tasks;
$$;
-- A worker: n times, own one task of actions, perform it and return it.  Tasks
-- named in failing fail this time (returned 'pending': retried until max_tries).
-- Copy, delete and _SUCCESS first check, holding a share lock, that their
-- export is still current (done-export-{branch} pending for their commit); a
-- task left over from an aborted export aborts itself instead.
CREATE FUNCTION bx.work(actor text, actions text[], n int DEFAULT 1, failing text[] DEFAULT '{}')
RETURNS TABLE (task text, try int, result text)
LANGUAGE plpgsql AS $$
DECLARE
    t record;
    br text;
    c text;
BEGIN
    FOR i IN 1..n LOOP
        SELECT * INTO t FROM taskq.own_tasks(actor, 1, actions, '1 hour');
        EXIT WHEN NOT FOUND;
        task := t.id;
        try := t.num_tries;
        br := t.body->>'branch';
        c := t.body->>'commit';
        IF t.id = ANY (failing) THEN
            PERFORM taskq.return_task(t.id, t.token, 'simulated S3 error', 'pending');
        ELSIF t.action IN ('export-copy', 'export-delete', 'export-success')
              AND NOT EXISTS (SELECT FROM taskq.tasks d
                               WHERE d.id = 'done-export-' || br AND d.body->>'commit' = c
                                 AND d.status_code = 'pending' FOR SHARE) THEN
            PERFORM taskq.return_task(t.id, t.token, 'export ' || c || ' was abandoned', 'aborted');
        ELSE
            CASE t.action
            WHEN 'next-export' THEN
                PERFORM taskq.replace_tasks(jsonb_build_array(
                    jsonb_build_object('id', 'start-export-' || br, 'action', 'start-export',
                                       'body', t.body, 'priority', 5,
                                       'to_signal_after', jsonb_build_array('done-export-' || br)),
                    jsonb_build_object('id', 'done-export-' || br, 'action', 'done-export',
                                       'body', t.body, 'spontaneous', true)));
            WHEN 'start-export' THEN
                PERFORM taskq.insert_tasks(jsonb_build_array(jsonb_build_object(
                    'id', 'manifest@' || c, 'action', 'export-manifest', 'body', t.body,
                    'priority', 1)));
                PERFORM taskq.add_dependencies(ARRAY['done-export-' || br], ARRAY['manifest@' || c]);
                PERFORM taskq.insert_tasks(bx.plan(br, c));
            WHEN 'export-copy' THEN
                INSERT INTO bx.s3 VALUES (br, t.body->>'path', t.body->>'etag')
                    ON CONFLICT (branch, path) DO UPDATE SET etag = excluded.etag;
            WHEN 'export-delete' THEN
                DELETE FROM bx.s3 WHERE branch = br AND path = t.body->>'path';
            WHEN 'export-success' THEN
                INSERT INTO bx.s3 VALUES (br, (t.body->>'prefix') || '_SUCCESS', c)
                    ON CONFLICT (branch, path) DO UPDATE SET etag = excluded.etag;
            WHEN 'export-manifest' THEN
                INSERT INTO bx.manifests SELECT c, count(*) FROM bx.objects WHERE commit_id = c;
            END CASE;
            INSERT INTO bx.log (task_id, export_commit, action, path)
                VALUES (t.id, c, t.action,
                        coalesce(t.body->>'path', (t.body->>'prefix') || '_SUCCESS'));
            PERFORM taskq.return_task(t.id, t.token, 'done', 'completed');
        END IF;
        SELECT s.status_code::text || coalesce(': ' || s.status, '') INTO result
          FROM taskq.tasks s WHERE s.id = t.id;
        RETURN NEXT;
    END LOOP;
END
$$;
CREATE VIEW bx.tasks AS
SELECT id, status_code AS state, num_signals AS waits, total_dependencies AS deps,
       priority AS prio, num_tries AS tries, to_signal_after AS signals
  FROM taskq.tasks;
--
-- 1. Commit main-c1.  Under the branch's commit lock: replace next-export-main,
-- then make it wait for done-export-main -- which does not exist yet (23503):
-- that is safe, roll back to the savepoint, the export starts at once.
--
BEGIN;
SELECT pg_advisory_xact_lock(hashtext('commit main'));
SELECT bx.make_commit('main-c1', 'main',
    '{"README.md": "r1", "tables/a/part-1": "a1", "tables/a/part-2": "a2", "tables/b/part-1": "b1"}');
SELECT taskq.replace_tasks('[{"id": "next-export-main", "action": "next-export", "priority": 5,
                              "body": {"branch": "main", "commit": "main-c1"}}]');
SAVEPOINT wait_for_export;
SELECT taskq.add_dependencies('{done-export-main}', '{next-export-main}');
ROLLBACK TO SAVEPOINT wait_for_export;
COMMIT;
SELECT * FROM bx.tasks ORDER BY id;
-- 2. next-export-main creates start-export-main and the spontaneous done-export-main.
SELECT * FROM bx.work('w1', '{next-export,start-export}');
SELECT * FROM bx.tasks ORDER BY id;
-- 3. start-export-main plans the export: 4 copies, 4 _SUCCESS, the manifest.
SELECT * FROM bx.work('w1', '{next-export,start-export}');
SELECT * FROM bx.tasks ORDER BY id;
-- 4. Copies; tables/a/part-2 fails once and is retried (max_tries 3).
SELECT * FROM bx.work('w1', '{export-copy,export-delete,export-success}', 3,
                      '{copy@main-c1:tables/a/part-2}');
--
-- 5. Commit main-c2 mid-export: it replaces next-export-main (completed) and waits
-- for done-export-main (1 dependency added).
--
BEGIN;
SELECT pg_advisory_xact_lock(hashtext('commit main'));
SELECT bx.make_commit('main-c2', 'main',
    '{"README.md": "r2", "tables/a/part-1": "a1", "tables/a/part-2": "a2", "tables/b/part-1": "b1"}');
SELECT taskq.replace_tasks('[{"id": "next-export-main", "action": "next-export", "priority": 5,
                              "body": {"branch": "main", "commit": "main-c2"}}]');
SAVEPOINT wait_for_export;
SELECT taskq.add_dependencies('{done-export-main}', '{next-export-main}');
COMMIT;
-- Blocked: nothing to own.
SELECT * FROM bx.work('w2', '{next-export}');
-- Commit main-c3, still mid-export: next-export-main (waiting, not owned) is
-- replaced.  The new one keeps the old one's live edge from done-export-main, so
-- add_dependencies finds it there and adds nothing (it returns 0).
-- main-c2 is never exported: the commits are coalesced.
BEGIN;
SELECT pg_advisory_xact_lock(hashtext('commit main'));
SELECT bx.make_commit('main-c3', 'main',
    '{"README.md": "r3", "tables/a/part-1": "a1", "tables/c/part-1": "c1"}');
SELECT taskq.replace_tasks('[{"id": "next-export-main", "action": "next-export", "priority": 5,
                              "body": {"branch": "main", "commit": "main-c3"}}]');
SAVEPOINT wait_for_export;
SELECT taskq.add_dependencies('{done-export-main}', '{next-export-main}');
COMMIT;
SELECT id, state, waits, deps, t.body->>'commit' AS commit
  FROM bx.tasks JOIN taskq.tasks t USING (id) WHERE id LIKE '%export-main' ORDER BY id;
-- 6. The retried copy completes (try 2); its prefix's _SUCCESS is now ready and,
-- with priority 10, goes before the remaining copy.
SELECT * FROM bx.work('w2', '{export-copy,export-delete,export-success}');
SELECT * FROM bx.work('w2', '{export-copy,export-delete,export-success}');
-- The rest, in priority order: the root's _SUCCESS last; done-export-main then
-- completes by itself and releases next-export-main and the manifest.
SELECT * FROM bx.work('w2', '{export-copy,export-delete,export-success}', 10);
SELECT * FROM bx.tasks WHERE id LIKE '%export-main' OR id LIKE 'manifest%' ORDER BY id;
SELECT * FROM bx.work('w1', '{export-manifest}');
-- 7. Each _SUCCESS was written after everything under its prefix (completion order).
SELECT row_number() OVER (ORDER BY seq) AS n, action, path FROM bx.log
 WHERE export_commit = 'main-c1' ORDER BY seq;
SELECT count(*) AS success_too_early
  FROM bx.log s JOIN bx.log o
    ON o.export_commit = s.export_commit AND o.seq > s.seq AND o.path <> s.path
   AND o.action IN ('export-copy', 'export-delete', 'export-success')
   AND starts_with(o.path, left(s.path, -length('_SUCCESS')))
 WHERE s.action = 'export-success';
SELECT * FROM bx.s3 ORDER BY path;
--
-- 8. Export main-c3.  A worker owns next-export-main; a commit arriving now
-- (main-c4) cannot replace it (55000): the producer rolls back and retries.
--
SELECT * FROM taskq.own_tasks('w1', 1, '{next-export}') \gset own_
BEGIN;
SELECT pg_advisory_xact_lock(hashtext('commit main'));
SELECT bx.make_commit('main-c4', 'main',
    '{"README.md": "r4", "tables/a/part-1": "a1", "tables/c/part-1": "c1"}');
SELECT taskq.replace_tasks('[{"id": "next-export-main", "action": "next-export", "priority": 5,
                              "body": {"branch": "main", "commit": "main-c4"}}]');
ROLLBACK;
-- The worker's handler: start-export-main and done-export-main replaced, for main-c3.
BEGIN;
SELECT taskq.replace_tasks(jsonb_build_array(
    jsonb_build_object('id', 'start-export-main', 'action', 'start-export', 'priority', 5,
                       'body', :'own_body'::jsonb, 'to_signal_after', '["done-export-main"]'::jsonb),
    jsonb_build_object('id', 'done-export-main', 'action', 'done-export',
                       'body', :'own_body'::jsonb, 'spontaneous', true)));
SELECT taskq.return_task(:'own_id', :'own_token', 'done', 'completed');
INSERT INTO bx.log (task_id, export_commit, action) VALUES (:'own_id', 'main-c3', 'next-export');
COMMIT;
-- The producer retries main-c4: it waits for the new done-export-main, which exists
-- before start-export-main has even run.
BEGIN;
SELECT pg_advisory_xact_lock(hashtext('commit main'));
SELECT bx.make_commit('main-c4', 'main',
    '{"README.md": "r4", "tables/a/part-1": "a1", "tables/c/part-1": "c1"}');
SELECT taskq.replace_tasks('[{"id": "next-export-main", "action": "next-export", "priority": 5,
                              "body": {"branch": "main", "commit": "main-c4"}}]');
SAVEPOINT wait_for_export;
SELECT taskq.add_dependencies('{done-export-main}', '{next-export-main}');
COMMIT;
-- Plan main-c3 against the bucket: tables/a/part-2 and all of tables/b/ go
-- (their deletes signal the nearest prefix that still exists).
SELECT * FROM bx.work('w1', '{start-export}');
SELECT id, waits, prio, signals FROM bx.tasks WHERE id LIKE '%@main-c3:%' ORDER BY id;
SELECT * FROM bx.work('w3', '{export-copy,export-delete,export-success}', 20);
SELECT * FROM bx.work('w3', '{export-manifest}');
SELECT * FROM bx.s3 ORDER BY path;
--
-- 9. Export main-c4, where README.md fails on all its 3 tries: the copy is
-- aborted, and with it everything that waits for it: the root _SUCCESS,
-- done-export-main, the manifest, and next-export-main for main-c5 (which
-- arrives meanwhile).
--
SELECT * FROM bx.work('w1', '{next-export,start-export}');
SELECT * FROM bx.work('w1', '{next-export,start-export}');
BEGIN;
SELECT pg_advisory_xact_lock(hashtext('commit main'));
SELECT bx.make_commit('main-c5', 'main',
    '{"README.md": "r5", "tables/a/part-1": "a5"}');
SELECT taskq.replace_tasks('[{"id": "next-export-main", "action": "next-export", "priority": 5,
                              "body": {"branch": "main", "commit": "main-c5"}}]');
SAVEPOINT wait_for_export;
SELECT taskq.add_dependencies('{done-export-main}', '{next-export-main}');
COMMIT;
SELECT * FROM bx.work('w1', '{export-copy}', 1, '{copy@main-c4:README.md}');
SELECT * FROM bx.work('w1', '{export-copy}', 1, '{copy@main-c4:README.md}');
SELECT * FROM bx.work('w1', '{export-copy}', 1, '{copy@main-c4:README.md}');
SELECT id, status_code, num_signals AS waits, status FROM taskq.tasks
 WHERE id LIKE '%@main-c4:%' OR id LIKE '%export-main' OR id = 'manifest@main-c4' ORDER BY id;
-- 10. Commit main-c6: done-export-main was aborted, add_dependencies says 55000,
-- which is safe: the export starts at once.  (main-c5 was not exported: its
-- next-export was aborted with the export it waited for; the next commit exports
-- the branch again.)
BEGIN;
SELECT pg_advisory_xact_lock(hashtext('commit main'));
SELECT bx.make_commit('main-c6', 'main',
    '{"README.md": "r6", "tables/a/part-1": "a6", "tables/d/part-1": "d6"}');
SELECT taskq.replace_tasks('[{"id": "next-export-main", "action": "next-export", "priority": 5,
                              "body": {"branch": "main", "commit": "main-c6"}}]');
SAVEPOINT wait_for_export;
SELECT taskq.add_dependencies('{done-export-main}', '{next-export-main}');
ROLLBACK TO SAVEPOINT wait_for_export;
COMMIT;
SELECT * FROM bx.work('w1', '{next-export,start-export}');
SELECT * FROM bx.work('w1', '{next-export,start-export}');
-- The tasks left over from main-c4 come first (inserted earlier): they find
-- their export abandoned and abort themselves, writing nothing.
SELECT * FROM bx.work('w2', '{export-copy,export-delete,export-success}', 20);
SELECT * FROM bx.work('w2', '{export-manifest}');
--
-- 11. End state: the bucket holds main-c6 and a _SUCCESS per prefix; one manifest
-- per export; every object copied once per export; no task unfinished.
--
SELECT * FROM bx.s3 ORDER BY path;
SELECT * FROM bx.manifests ORDER BY commit_id;
SELECT export_commit, action, count(*) FROM bx.log GROUP BY 1, 2 ORDER BY 1, 2;
SELECT export_commit, path, count(*) FROM bx.log WHERE action = 'export-copy'
 GROUP BY 1, 2 HAVING count(*) <> 1;
SELECT action, status_code, count(*) FROM taskq.tasks GROUP BY 1, 2 ORDER BY 1, 2;
SELECT id, status_code, status FROM taskq.tasks WHERE status_code IN ('pending', 'in_progress');
SET client_min_messages = warning;
DROP SCHEMA bx CASCADE;
RESET client_min_messages;
DELETE FROM taskq.tasks;
