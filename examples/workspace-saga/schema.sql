-- examples/workspace-saga/schema.sql: the demo's side tables (schema ws_demo)
-- and its saga.  Run by run.sh before the workers start; safe to run again
-- (it drops what an earlier run left: its schemas, tasks and runs).
--
--   requests       one row per workspace asked for: the run id and the name
--   names          the reserved names (reserve-name / release-name)
--   catalogue      the registered workspaces (register / unregister)
--   cancellations  the run the producer cancelled mid-way, and when
--   executions     one row per do or undo that took effect, written in the
--                  transaction that returns its step (so: only if it counted)
-- The directories live under $WS_ROOT (run.sh makes a fresh one); each
-- workspace's database is a schema ws_<name> of this database.

\set ON_ERROR_STOP on
SET client_min_messages = warning;

DROP SCHEMA IF EXISTS ws_demo CASCADE;
DO $$
DECLARE s name;
BEGIN
    FOR s IN SELECT nspname FROM pg_namespace WHERE nspname LIKE 'ws\_data\_%' LOOP
        EXECUTE format('DROP SCHEMA %I CASCADE', s);
    END LOOP;
END $$;
-- Tasks and runs an earlier run of this demo left.
DELETE FROM taskq.tasks
 WHERE action IN ('reserve-name', 'release-name', 'create-dir', 'remove-dir',
                  'create-db', 'drop-db', 'register', 'unregister');
DELETE FROM taskq.saga_steps WHERE run IN (SELECT id FROM taskq.runs WHERE definition = 'workspace');
DELETE FROM taskq.runs WHERE definition = 'workspace';

CREATE SCHEMA ws_demo;

CREATE TABLE ws_demo.requests (
    run          text PRIMARY KEY,
    name         text NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE ws_demo.names (
    name        text PRIMARY KEY,
    run         text NOT NULL,
    reserved_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE ws_demo.catalogue (
    name          text PRIMARY KEY,
    run           text NOT NULL,
    dir           text NOT NULL,
    db_schema     text NOT NULL,
    registered_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE ws_demo.cancellations (
    run       text PRIMARY KEY,
    status    text NOT NULL,            -- what cancel_run returned
    cancel_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE ws_demo.executions (
    seq       bigserial PRIMARY KEY,
    run       text NOT NULL,
    step      text NOT NULL,
    direction text NOT NULL,            -- do, undo
    outcome   text NOT NULL,            -- success, fatal
    try       integer NOT NULL,
    actor     text NOT NULL,
    at        timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The saga: reserve the name; then the directory and the database in
-- parallel; then register the workspace.  A do is tried 3 times at most
-- (0.1 s, 0.2 s between tries); an undo as often as it takes.
SELECT taskq.define_saga('workspace', '{"steps": [
    {"name": "reserve-name", "do": "reserve-name", "undo": "release-name"},
    {"name": "create-dir",   "do": "create-dir",   "undo": "remove-dir", "after": ["reserve-name"]},
    {"name": "create-db",    "do": "create-db",    "undo": "drop-db",    "after": ["reserve-name"]},
    {"name": "register",     "do": "register",     "undo": "unregister",
     "after": ["create-dir", "create-db"]}],
  "max_tries": 3,
  "retry": {"delay": "0.1 s", "factor": 2, "max_delay": "1 s", "jitter": 0.1},
  "undo_retry": {"delay": "0.1 s", "factor": 2, "max_delay": "1 s", "jitter": 0.1}}') \gset

-- One line per workspace: its run and what it has now.
CREATE VIEW ws_demo.summary AS
SELECT q.run, q.name, r.status, n.run IS NOT NULL AS name_held,
       c.name IS NOT NULL AS registered,
       EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'ws_data_' || q.name
                 AND obj_description(oid, 'pg_namespace') = q.run) AS db,
       (SELECT count(*) FROM ws_demo.executions e WHERE e.run = q.run AND e.direction = 'do') AS dos,
       (SELECT count(*) FROM ws_demo.executions e WHERE e.run = q.run AND e.direction = 'undo') AS undos,
       r.error
  FROM ws_demo.requests q
  LEFT JOIN taskq.runs r ON r.id = q.run
  LEFT JOIN ws_demo.names n ON n.name = q.name AND n.run = q.run
  LEFT JOIN ws_demo.catalogue c ON c.name = q.name AND c.run = q.run
 ORDER BY length(q.run), q.run;
