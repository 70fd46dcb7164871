--
-- The workers registry: taskq.worker_heartbeat, taskq.worker_stopped and
-- the view taskq.workers.  No raw timestamps are printed: started_at and
-- last_seen are compared, and staleness is made by back-dating last_seen.
-- (Deletion past taskq.worker_retention is the background worker's, in
-- test/t/021_worker_registry.pl.)
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SET taskq.default_lease = 0;

-- Nobody yet.
SELECT * FROM taskq.workers;

-- A first heartbeat with every key; a second with only some.
SELECT taskq.worker_heartbeat('host-a:101', '{"actor": "wa", "host": "host-a", "pid": 101,
    "version": "taskq-worker 0.6", "actions": ["x", "y"], "concurrency": 4,
    "heartbeat_interval": 5}');
SELECT taskq.worker_heartbeat('bare');
SELECT worker_id, actor, host, pid, version, actions, concurrency, in_progress, stale,
       started_at = last_seen AS first_seen
  FROM taskq.workers;
SELECT heartbeat_interval FROM taskq.worker_registry ORDER BY worker_id;

-- A later heartbeat keeps started_at, moves last_seen and replaces the
-- info (keys left out are cleared; null is the same as leaving a key out).
UPDATE taskq.worker_registry SET started_at = started_at - interval '1 hour',
                                 last_seen = last_seen - interval '1 hour';
SELECT started_at AS s0 FROM taskq.worker_registry WHERE worker_id = 'host-a:101' \gset
BEGIN;
SELECT taskq.worker_heartbeat('host-a:101', '{"actor": "wa", "host": "host-a", "pid": 101,
    "actions": ["x"], "concurrency": 2, "heartbeat_interval": 5, "version": null}');
SELECT worker_id, actor, version, actions, concurrency,
       started_at = :'s0'::timestamptz AS started_kept,
       last_seen = now() AS seen_now, stale
  FROM taskq.workers WHERE worker_id = 'host-a:101';
COMMIT;

-- Stale: last seen more than three heartbeat intervals ago (5 s here, the
-- default 10 s for "bare").
UPDATE taskq.worker_registry SET last_seen = now() - interval '14 s' WHERE worker_id = 'host-a:101';
UPDATE taskq.worker_registry SET last_seen = now() - interval '29 s' WHERE worker_id = 'bare';
SELECT worker_id, stale FROM taskq.workers;
UPDATE taskq.worker_registry SET last_seen = now() - interval '16 s' WHERE worker_id = 'host-a:101';
UPDATE taskq.worker_registry SET last_seen = now() - interval '31 s' WHERE worker_id = 'bare';
SELECT worker_id, stale FROM taskq.workers;
-- A heartbeat makes it fresh again.
SELECT taskq.worker_heartbeat('bare');
SELECT worker_id, stale FROM taskq.workers;

-- in_progress: the tasks in progress whose owner is the worker's actor,
-- counted from real claims (and no longer once returned).
SELECT taskq.insert_tasks('[{"id": "w1", "action": "x"}, {"id": "w2", "action": "x"},
                            {"id": "w3", "action": "x"}, {"id": "w4", "action": "y"}]');
SELECT n, id FROM public.own('wa', 2, '{x}', '1 hour');
SELECT n, id FROM public.own('other', 1, '{x}', '1 hour');
SELECT worker_id, actor, in_progress FROM taskq.workers;
SELECT public.ret('w1', 'completed');
SELECT n, id FROM public.own('wa', 1, '{y}');
SELECT worker_id, actor, in_progress FROM taskq.workers;
-- Two workers may share an actor: each shows the actor's tasks.
SELECT taskq.worker_heartbeat('host-b:7', '{"actor": "wa", "host": "host-b", "pid": 7}');
SELECT worker_id, actor, in_progress FROM taskq.workers;

-- The count reads an index of every task in progress (tasks_lease_idx or
-- tasks_running_idx, which the planner finds alike), not the table.
SET enable_seqscan = off;
CREATE FUNCTION pg_temp.plan_of(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    l text;
BEGIN
    FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        RETURN NEXT l;
    END LOOP;
END $$;
SELECT count(*) FILTER (WHERE l ~ 'Seq Scan') AS seq_scans,
       count(*) FILTER (WHERE l ~ 'tasks_(lease|running)_idx') AS in_progress_index_scans
  FROM pg_temp.plan_of($$SELECT in_progress FROM taskq.workers WHERE worker_id = 'host-a:101'$$) AS l;
RESET enable_seqscan;

-- worker_stopped deletes the row; an unknown id is no error; a heartbeat
-- after it starts anew (a new started_at).
SELECT taskq.worker_stopped('host-b:7');
SELECT taskq.worker_stopped('host-b:7');
SELECT taskq.worker_stopped('never-seen');
UPDATE taskq.worker_registry SET started_at = started_at - interval '1 day' WHERE worker_id = 'bare';
SELECT taskq.worker_stopped('bare');
BEGIN;
SELECT taskq.worker_heartbeat('bare', NULL);
SELECT worker_id, started_at = now() AS started_now FROM taskq.workers;
COMMIT;

-- Bad input: nothing is written.
\set VERBOSITY default
\set SHOW_CONTEXT never
SELECT taskq.worker_heartbeat(NULL);
SELECT taskq.worker_heartbeat('w', '{"actor": "wa", "colour": "red"}');
SELECT taskq.worker_heartbeat('w', '{"concurrency": 0}');
\set VERBOSITY terse
\set SHOW_CONTEXT errors
SELECT expect_error($$SELECT taskq.worker_heartbeat(NULL)$$);
SELECT expect_error($$SELECT taskq.worker_stopped(NULL)$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat(repeat('w', 201))$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat(repeat('w', 200))$$);
SELECT taskq.worker_stopped(repeat('w', 200));
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '[]')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '"x"')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"Actor": "a"}')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"actor": 1}')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"host": ""}')$$);
SELECT expect_error(format($$SELECT taskq.worker_heartbeat('w', '{"version": "%s"}')$$, repeat('v', 256)));
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"pid": 0}')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"pid": 1.5}')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"pid": "12"}')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"pid": 2147483648}')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"concurrency": -1}')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"concurrency": true}')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"actions": "x"}')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"actions": ["x", 1]}')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"actions": [""]}')$$);
SELECT expect_error(format($$SELECT taskq.worker_heartbeat('w', '{"actions": ["%s"]}')$$, repeat('a', 256)));
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"heartbeat_interval": 0}')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"heartbeat_interval": -3}')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"heartbeat_interval": "10"}')$$);
SELECT expect_error($$SELECT taskq.worker_heartbeat('w', '{"heartbeat_interval": 86401}')$$);
-- Edge values are taken: a fractional interval, the largest pid, no actions.
SELECT taskq.worker_heartbeat('w', '{"heartbeat_interval": 0.5, "pid": 2147483647, "actions": []}');
SELECT worker_id, pid, actions FROM taskq.workers WHERE worker_id = 'w';
SELECT heartbeat_interval FROM taskq.worker_registry WHERE worker_id = 'w';
SELECT count(*) FROM taskq.worker_registry;

-- Clean up for the files after this one.
\set VERBOSITY default
DELETE FROM taskq.worker_registry;
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
RESET taskq.default_lease;
