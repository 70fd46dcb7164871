-- examples/photo-album/schema.sql: the demo's side tables (schema album_demo),
-- the saga provision-storage and the machine photo-upload.  Run by run.sh
-- before the workers start (psql variables confirm_timeout, max_parallel);
-- safe to run again: it drops what an earlier run left (tables, tasks, runs).
--
--   uploads        one row per upload: its run, its images, whether the
--                  producer confirms it and whether its storage must fail
--   confirmations  each send_event('confirmed') and the state it returned
--   resized        one row per resize that took effect (committed with the
--                  item's return: a retried try leaves nothing)
--   quota, buckets, policies   what provision-storage's steps made
--   executions     one row per saga do or undo that took effect
--   endings        one row per final step: album, expired or abandoned
--   pages          the albums' pages, in the order build-album read them

\set ON_ERROR_STOP on
SET client_min_messages = warning;

DROP SCHEMA IF EXISTS album_demo CASCADE;
DELETE FROM taskq.tasks
 WHERE action IN ('receive-upload', 'resize', 'build-album', 'expire-upload', 'abandon-upload',
                  'reserve-quota', 'release-quota', 'create-bucket', 'delete-bucket',
                  'apply-policy', 'remove-policy');
DELETE FROM taskq.saga_steps
 WHERE run IN (SELECT id FROM taskq.runs WHERE definition = 'provision-storage');
DELETE FROM taskq.run_timers
 WHERE run_id IN (SELECT id FROM taskq.runs WHERE definition IN ('photo-upload', 'provision-storage'));
DELETE FROM taskq.runs WHERE definition = 'provision-storage';
DELETE FROM taskq.runs WHERE definition = 'photo-upload';

CREATE SCHEMA album_demo;

CREATE TABLE album_demo.uploads (
    upload         text PRIMARY KEY,          -- the machine's run id
    images         jsonb NOT NULL,            -- the file names, in order
    confirm        boolean NOT NULL,          -- the producer sends 'confirmed'
    fail_provision boolean NOT NULL,          -- apply-policy refuses its storage
    requested_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE album_demo.confirmations (
    upload   text PRIMARY KEY,
    moved_to text,                            -- send_event's answer: NULL = kept
    at       timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE album_demo.resized (
    upload  text NOT NULL,
    idx     integer NOT NULL,
    source  text NOT NULL,
    resized text NOT NULL,
    bytes   integer NOT NULL,
    try     integer NOT NULL,
    actor   text NOT NULL,
    at      timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE album_demo.quota (upload text PRIMARY KEY, run text NOT NULL, mb integer NOT NULL);
CREATE TABLE album_demo.buckets (upload text PRIMARY KEY, run text NOT NULL, bucket text NOT NULL);
CREATE TABLE album_demo.policies (upload text PRIMARY KEY, run text NOT NULL, policy text NOT NULL);

CREATE TABLE album_demo.executions (
    run       text NOT NULL,                  -- the saga's run
    step      text NOT NULL,
    direction text NOT NULL,                  -- do, undo
    outcome   text NOT NULL,                  -- success, fatal
    try       integer NOT NULL,
    at        timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE album_demo.endings (
    upload text NOT NULL,
    branch text NOT NULL,                     -- album, expired, abandoned
    task   text NOT NULL,
    actor  text NOT NULL,
    at     timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE album_demo.pages (
    upload   text NOT NULL,
    position integer NOT NULL,
    source   text NOT NULL,
    resized  text NOT NULL,
    bytes    integer NOT NULL,
    PRIMARY KEY (upload, position)
);

-- The child saga: reserve quota, then create the bucket, then apply its
-- access policy (which apply-policy refuses for the uploads the producer
-- marked).  A do has 3 tries; an undo is tried until it succeeds.
SELECT taskq.define_saga('provision-storage', '{"steps": [
    {"name": "reserve-quota", "do": "reserve-quota", "undo": "release-quota"},
    {"name": "create-bucket", "do": "create-bucket", "undo": "delete-bucket"},
    {"name": "apply-policy",  "do": "apply-policy",  "undo": "remove-policy"}],
  "max_tries": 3,
  "retry": {"delay": "0.1 s", "factor": 2, "max_delay": "1 s"},
  "undo_retry": {"delay": "0.1 s", "factor": 2, "max_delay": "1 s"}}') AS saga \gset

-- The machine, one run per upload.  Confirm waits for the customer's
-- 'confirmed' at most :confirm_timeout (48 hours in real life), then moves on
-- 'expired'.  Provision runs the saga as a child.  Resize maps the images
-- (at most :max_parallel at once per upload; an item has 4 tries).
SELECT taskq.define_machine('photo-upload', replace(replace($json$ {"states": [
    {"name": "Receive", "action": "receive-upload", "initial": true,
     "transitions": [{"event": "received", "to": "Confirm"}]},
    {"name": "Confirm", "action": null, "timeout": "@TIMEOUT@", "on_timeout": "expired",
     "transitions": [{"event": "confirmed", "to": "Provision"}, {"event": "expired", "to": "Expire"}]},
    {"name": "Provision", "action": null, "child": {"saga": "provision-storage"},
     "transitions": [{"event": "child_succeeded", "to": "Resize"},
                     {"event": "child_failed", "to": "Abandon"}]},
    {"name": "Resize", "action": null,
     "map": {"items": "images", "action": "resize", "max_parallel": @PARALLEL@},
     "max_tries": 4, "retry": {"delay": "0.05 s", "factor": 2, "max_delay": "0.5 s"},
     "transitions": [{"event": "mapped", "to": "Album"}, {"event": "map_failed", "to": "Abandon"}]},
    {"name": "Album", "action": "build-album", "final": true},
    {"name": "Expire", "action": "expire-upload", "final": true},
    {"name": "Abandon", "action": "abandon-upload", "final": true}],
  "retry": {"delay": "0.1 s", "factor": 2, "max_delay": "1 s"}} $json$,
  '@TIMEOUT@', :'confirm_timeout'), '@PARALLEL@', :'max_parallel')::jsonb) AS machine \gset

-- One line per upload: how it ended.
CREATE VIEW album_demo.summary AS
SELECT u.upload, jsonb_array_length(u.images) AS images, u.confirm, u.fail_provision,
       r.status, r.state,
       (SELECT string_agg(e.branch, ',') FROM album_demo.endings e WHERE e.upload = u.upload) AS ended,
       (SELECT count(*) FROM album_demo.pages p WHERE p.upload = u.upload) AS pages,
       (SELECT c.status FROM taskq.runs c WHERE c.parent = u.upload) AS storage
  FROM album_demo.uploads u
  LEFT JOIN taskq.runs r ON r.id = u.upload
 ORDER BY length(u.upload), u.upload;
