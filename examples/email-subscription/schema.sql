-- examples/email-subscription/schema.sql: the demo's tables, in schema mail_demo,
-- and the machine.  Run by run.sh before the workers start; safe to run again.
--
--   subscribers  the list to mail (SUBSCRIBERS rows, set by run.sh as :subscribers)
--   outbox       one row per email sent, written in the transaction of the step
--                that sent it (the step's return commits it, or nothing)
--   email_batch  EmailBatch: one counter, updated once per fan-in batch
--   batches      one row per batch the count state handled (its size)

\set ON_ERROR_STOP on
SET client_min_messages = warning;

DROP SCHEMA IF EXISTS mail_demo CASCADE;
-- Runs and steps left by an earlier run of this demo.
DELETE FROM taskq.tasks WHERE action IN ('send-email', 'count-email');
DELETE FROM taskq.fan_in_members;
DELETE FROM taskq.fan_in_open WHERE machine = 'SendSubscriberEmail';
DELETE FROM taskq.runs WHERE definition = 'SendSubscriberEmail';

CREATE SCHEMA mail_demo;
CREATE TABLE mail_demo.subscribers (id int PRIMARY KEY, email text NOT NULL);
INSERT INTO mail_demo.subscribers
    SELECT i, 'subscriber' || i || '@example.com' FROM generate_series(1, :subscribers) AS i;
CREATE TABLE mail_demo.outbox (
    subscriber int NOT NULL REFERENCES mail_demo.subscribers,
    run        text NOT NULL,
    task       text NOT NULL,
    worker     text NOT NULL,
    sent_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE mail_demo.email_batch (key text PRIMARY KEY, counter bigint NOT NULL DEFAULT 0);
INSERT INTO mail_demo.email_batch VALUES ('1', 0);
CREATE TABLE mail_demo.batches (
    task     text NOT NULL,
    size     int NOT NULL,
    worker   text NOT NULL,
    at       timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The machine: SendEmail is a continuation
-- (one instance per subscriber), CountEmail fans the instances in every 3 s.
SELECT taskq.define_machine('SendSubscriberEmail', '{"states": [
    {"name": "SendEmail", "action": "send-email", "initial": true, "continuation": true,
     "transitions": [{"event": "ok", "to": "CountEmail"}]},
    {"name": "CountEmail", "action": "count-email", "final": true, "fan_in": 3}],
  "retry": {"delay": "0.2 s", "factor": 2, "max_delay": "2 s"}}') AS version \gset

-- The end state: one line per violation (run.sh prints them and fails).
CREATE VIEW mail_demo.violations AS
    SELECT 'subscriber ' || s.id || ' got ' || count(o.subscriber) || ' emails' AS violation
      FROM mail_demo.subscribers AS s LEFT JOIN mail_demo.outbox AS o ON o.subscriber = s.id
     GROUP BY s.id HAVING count(o.subscriber) <> 1
    UNION ALL
    SELECT 'the counter is ' || b.counter || ', there are ' || (SELECT count(*) FROM mail_demo.subscribers)
           || ' subscribers'
      FROM mail_demo.email_batch AS b
     WHERE b.counter <> (SELECT count(*) FROM mail_demo.subscribers)
    UNION ALL
    SELECT 'the batches add up to ' || coalesce(sum(size), 0) || ', not to the counter'
      FROM mail_demo.batches
    HAVING coalesce(sum(size), 0) <> (SELECT counter FROM mail_demo.email_batch)
    UNION ALL
    SELECT 'run ' || id || ' ended ' || status || ' in ' || state
      FROM taskq.runs
     WHERE definition = 'SendSubscriberEmail' AND status NOT IN ('succeeded', 'merged')
    UNION ALL
    SELECT 'there are ' || count(*) || ' runs, one per subscriber was expected'
      FROM taskq.runs WHERE definition = 'SendSubscriberEmail'
    HAVING count(*) <> (SELECT count(*) FROM mail_demo.subscribers)
    UNION ALL
    SELECT count(*) || ' runs succeeded, but ' || (SELECT count(*) FROM mail_demo.batches)
           || ' batches were counted (one instance of each goes on, the others are merged)'
      FROM taskq.runs
     WHERE definition = 'SendSubscriberEmail' AND status = 'succeeded'
    HAVING count(*) <> (SELECT count(*) FROM mail_demo.batches);
