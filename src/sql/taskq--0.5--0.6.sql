/*
 * taskq 0.5 -> 0.6: the statistics of runs count execution, not the wait
 * in the queue.  taskq.tasks gains claimed_at, the moment the last try was
 * claimed (every claim sets it; NULL until the first); run_steps' started_at
 * is that moment, and state_stats' seconds run from it to the successful
 * finish, with a saga's undo of a step in a row of its own ("<step>:undo").
 * run_steps and state_stats are dropped and created again: an update
 * script never replaces an object in place.  The workers registry is new:
 * the table taskq.worker_registry, worker_heartbeat and worker_stopped,
 * and the view taskq.workers.  Schedules are new: the table
 * taskq.schedule_registry, schedule, unschedule, the view taskq.schedules
 * and the internal _schedule_next and _cron_next.  Actions may keep the
 * history of their attempts: action_policies.keep_attempts, the table
 * taskq.attempts, set_action_policy's fourth argument and task_attempts.
 * Metrics: the index tasks_blocked_idx, the table taskq.metric_gauges,
 * taskq.metrics() and taskq.metrics_text().  Concurrency limits are new:
 * taskq.tasks gains concurrency_key and the index tasks_running_idx,
 * enqueue and enqueue_many a last argument concurrency_key (dropped and
 * created again), and there are the tables taskq.flow_limits and
 * taskq.flow_claims, set_concurrency_limit, set_rate_limit, clear_limits
 * and the view taskq.limits.  own_tasks and return_and_own return the
 * claimed task's concurrency_key as a last column (dropped and created
 * again).
 * and the view taskq.limits.  Timers of runs: taskq.runs gains deadline,
 * the table taskq.run_timers is new with the internal _fire_timers, and
 * start_machine and start_saga a last argument deadline (dropped and
 * created again); the graphs' _definition_parts labels transitions with
 * their timers (dropped and created again).
 * Same rules as the install script (test/static/install_scripts.sh); the
 * objects are as in taskq.sql, word for word.
 */
\echo Use "ALTER EXTENSION taskq UPDATE TO '0.6'" to load this file. \quit

-- Attempt history, opt-in per action: the policy's keep_attempts, the
-- table taskq.attempts, set_action_policy with its fourth argument (the
-- function is dropped and created again) and task_attempts.
ALTER TABLE taskq.action_policies ADD COLUMN keep_attempts boolean NOT NULL DEFAULT false;
COMMENT ON TABLE taskq.action_policies IS
    'per action: default max_tries and retry backoff for tasks that give none, and whether claims keep attempt history (set with taskq.set_action_policy)';
COMMENT ON COLUMN taskq.action_policies.keep_attempts IS
    'each claim of the action''s tasks adds a row to taskq.attempts';

-- The history of attempts, for the actions whose policy keeps it
-- (keep_attempts): one row per claim, written in the claim's transaction,
-- its outcome in the transaction that ends the claim.  No foreign key to
-- taskq.tasks (its trigger would cost every delete of a task): the rows of
-- a task are deleted by the statement trigger tasks_ready_hint_delete, and
-- by the completion that deletes a task with taskq.retention = 0.
CREATE TABLE taskq.attempts (
    task_id     text COLLATE "C" NOT NULL,
    try         integer NOT NULL,
    actor       text NOT NULL,
    claimed_at  timestamptz NOT NULL,
    finished_at timestamptz,
    outcome     text,
    status      text,
    result      jsonb,
    CONSTRAINT attempts_pkey PRIMARY KEY (task_id, try),
    CONSTRAINT attempts_try_check CHECK (try OPERATOR(pg_catalog.>) 0),
    CONSTRAINT attempts_outcome_check
        CHECK (outcome OPERATOR(pg_catalog.=) ANY
               (ARRAY['completed', 'aborted', 'pending', 'released', 'expired', 'cancelled']))
);
COMMENT ON TABLE taskq.attempts IS
    'one row per claim of a task whose action keeps attempts (taskq.set_action_policy): who held it, when, and how the claim ended';
COMMENT ON COLUMN taskq.attempts.try IS 'the claim''s number among the task''s claims, from 1';
COMMENT ON COLUMN taskq.attempts.outcome IS
    'NULL while held; completed, aborted, pending (given back to retry), released, expired or cancelled';
COMMENT ON COLUMN taskq.attempts.status IS 'the status text the owner returned, if any';
COMMENT ON COLUMN taskq.attempts.result IS 'the result the owner returned, if any';
SELECT pg_catalog.pg_extension_config_dump('taskq.attempts', '');

GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.attempts TO taskq_admin;
GRANT SELECT ON taskq.attempts TO taskq_monitor;

DROP FUNCTION taskq.set_action_policy(text, integer, jsonb);

CREATE FUNCTION taskq.set_action_policy(action text, max_tries integer DEFAULT NULL,
                                        retry jsonb DEFAULT NULL,
                                        keep_attempts boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF action IS NULL OR action OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'argument "action" must not be null or empty'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.octet_length(action) OPERATOR(pg_catalog.>) 255 THEN
        RAISE EXCEPTION 'argument "action" is too long'
            USING ERRCODE = 'string_data_right_truncation',
                  DETAIL = 'An action is at most 255 bytes.';
    END IF;
    IF max_tries OPERATOR(pg_catalog.<) 1 THEN
        RAISE EXCEPTION 'argument "max_tries" must be at least 1, or null for unlimited tries'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF keep_attempts IS NULL THEN
        RAISE EXCEPTION 'argument "keep_attempts" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM taskq._check_retry(retry);
    IF max_tries IS NULL AND retry IS NULL AND NOT keep_attempts THEN
        DELETE FROM taskq.action_policies AS p WHERE p.action OPERATOR(pg_catalog.=) set_action_policy.action;
    ELSE
        INSERT INTO taskq.action_policies AS p (action, max_tries, retry, keep_attempts)
             VALUES (set_action_policy.action, set_action_policy.max_tries, set_action_policy.retry,
                     set_action_policy.keep_attempts)
        ON CONFLICT ON CONSTRAINT action_policies_pkey
           DO UPDATE SET max_tries = EXCLUDED.max_tries, retry = EXCLUDED.retry,
                         keep_attempts = EXCLUDED.keep_attempts;
    END IF;
END
$$;
COMMENT ON FUNCTION taskq.set_action_policy(text, integer, jsonb, boolean) IS
    'set the whole policy of an action (or, with null, null, false, clear it): default max_tries, retry backoff, and whether claims keep attempt history';
REVOKE ALL ON FUNCTION taskq.set_action_policy(text, integer, jsonb, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.set_action_policy(text, integer, jsonb, boolean) TO taskq_admin;

CREATE FUNCTION taskq.task_attempts(id text)
RETURNS SETOF taskq.attempts
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF id IS NULL THEN
        RAISE EXCEPTION 'argument "id" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM FROM taskq.tasks AS t WHERE t.id OPERATOR(pg_catalog.=) task_attempts.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'task "%" does not exist', task_attempts.id USING ERRCODE = 'undefined_object';
    END IF;
    RETURN QUERY
    SELECT a.task_id, a.try, a.actor, a.claimed_at, a.finished_at, a.outcome, a.status, a.result
      FROM taskq.attempts AS a
     WHERE a.task_id OPERATOR(pg_catalog.=) task_attempts.id
     ORDER BY a.try;
END
$$;
COMMENT ON FUNCTION taskq.task_attempts(text) IS
    'the attempts of a task whose action keeps them, in try order (empty when it keeps none)';
REVOKE ALL ON FUNCTION taskq.task_attempts(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.task_attempts(text) TO taskq_producer, taskq_worker, taskq_admin, taskq_monitor;

-- Tasks claimed before the update keep NULL: their claim was not recorded.
ALTER TABLE taskq.tasks ADD COLUMN claimed_at timestamptz;
COMMENT ON COLUMN taskq.tasks.claimed_at IS 'when the last try was claimed, the moment its lease runs from (NULL: never claimed)';

DROP FUNCTION taskq.run_steps(text);

CREATE FUNCTION taskq.run_steps(id text)
RETURNS TABLE (seq integer, step text, direction text, task_id text,
               status_code taskq.status, outcome text, num_tries integer,
               started_at timestamptz, finished_at timestamptz, error text)
LANGUAGE plpgsql STABLE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF id IS NULL THEN
        RAISE EXCEPTION 'argument "id" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM FROM taskq.runs AS r WHERE r.id OPERATOR(pg_catalog.=) run_steps.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'run "%" does not exist', run_steps.id USING ERRCODE = 'undefined_object';
    END IF;
    RETURN QUERY
    SELECT (pg_catalog.row_number() OVER (ORDER BY t.seq))::integer,
           COALESCE(t.body OPERATOR(pg_catalog.->>) 'state', t.body OPERATOR(pg_catalog.->>) 'step'),
           COALESCE(t.body OPERATOR(pg_catalog.->>) 'direction', 'state'),
           t.id::text, t.status_code,
           CASE t.status_code WHEN 'completed' THEN COALESCE(t.status, 'completed')
                              WHEN 'aborted' THEN 'aborted' END,
           t.num_tries,
           t.claimed_at,
           t.finished_at,
           CASE WHEN t.status_code OPERATOR(pg_catalog.=) 'aborted' THEN t.status END
      FROM taskq.tasks AS t
     WHERE t.workflow OPERATOR(pg_catalog.=) run_steps.id
       AND pg_catalog.starts_with(t.id, run_steps.id OPERATOR(pg_catalog.||) '/')
     ORDER BY t.seq;
END
$$;
COMMENT ON FUNCTION taskq.run_steps(text) IS
    'the history of a run: one row per visit of a state or do/undo of a step, in order';
REVOKE ALL ON FUNCTION taskq.run_steps(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.run_steps(text) TO taskq_producer, taskq_admin;

DROP VIEW taskq.state_stats;

-- The statistics of each state of a machine and each step of a saga, per
-- version: runs in it now, and over the tasks retention keeps, how often it
-- was entered, succeeded, the tries that failed, and the seconds from the
-- claim of the last try to done of its successful visits (the wait in the
-- queue is not the state's).  A saga's undo of a step has a row of its own,
-- "<step>:undo", after the step's.  A map state counts its visits (its join
-- task), not its items.
CREATE VIEW taskq.state_stats AS
WITH states AS (
    SELECT d.name AS definition, d.kind, d.version,
           s.value OPERATOR(pg_catalog.->>) 'name' AS state,
           s.ordinality OPERATOR(pg_catalog.*) 2 AS ord
      FROM taskq.definitions AS d,
           pg_catalog.jsonb_array_elements(d.definition OPERATOR(pg_catalog.->)
               CASE d.kind WHEN 'machine' THEN 'states' ELSE 'steps' END) WITH ORDINALITY AS s
    UNION ALL
    SELECT d.name, d.kind, d.version,
           (s.value OPERATOR(pg_catalog.->>) 'name') OPERATOR(pg_catalog.||) ':undo',
           s.ordinality OPERATOR(pg_catalog.*) 2 OPERATOR(pg_catalog.+) 1
      FROM taskq.definitions AS d,
           pg_catalog.jsonb_array_elements(d.definition OPERATOR(pg_catalog.->) 'steps') WITH ORDINALITY AS s
     WHERE d.kind OPERATOR(pg_catalog.=) 'saga'
       AND pg_catalog.jsonb_typeof(s.value OPERATOR(pg_catalog.->) 'undo') OPERATOR(pg_catalog.=) 'string'
), visits AS (
    SELECT r.definition, r.version,
           CASE WHEN t.body OPERATOR(pg_catalog.->>) 'direction' OPERATOR(pg_catalog.=) 'undo'
                THEN (t.body OPERATOR(pg_catalog.->>) 'step') OPERATOR(pg_catalog.||) ':undo'
                ELSE COALESCE(t.body OPERATOR(pg_catalog.->>) 'state', t.body OPERATOR(pg_catalog.->>) 'step')
           END AS state,
           t.status_code, t.num_tries,
           pg_catalog.date_part('epoch', t.finished_at OPERATOR(pg_catalog.-) t.claimed_at) AS seconds
      FROM taskq.runs AS r
      JOIN taskq.tasks AS t ON t.workflow OPERATOR(pg_catalog.=) r.id
     -- a map state's items are its work, not visits: its join is the visit
     WHERE NOT t.body OPERATOR(pg_catalog.?&) ARRAY['index', 'item']
), now_in AS (
    SELECT r.definition, r.version, r.state, pg_catalog.count(*) AS n
      FROM taskq.runs AS r
     WHERE r.finished_at IS NULL AND r.kind OPERATOR(pg_catalog.=) 'machine'
     GROUP BY 1, 2, 3
)
SELECT s.definition, s.kind, s.version, s.state,
       CASE s.kind WHEN 'machine' THEN COALESCE(pg_catalog.max(n.n), 0)
            ELSE pg_catalog.count(*) FILTER (WHERE v.status_code OPERATOR(pg_catalog.<) 'completed') END
           AS in_state,
       pg_catalog.count(v.state) AS entered,
       pg_catalog.count(*) FILTER (WHERE v.status_code OPERATOR(pg_catalog.=) 'completed') AS succeeded,
       COALESCE(pg_catalog.sum(GREATEST(v.num_tries OPERATOR(pg_catalog.-)
           CASE WHEN v.status_code OPERATOR(pg_catalog.=) ANY (ARRAY['completed', 'in_progress']::taskq.status[])
                THEN 1 ELSE 0 END, 0)), 0)::pg_catalog.int8 AS failed_tries,
       pg_catalog.round(pg_catalog.avg(v.seconds) FILTER (WHERE v.status_code OPERATOR(pg_catalog.=) 'completed')::pg_catalog.numeric, 3)
           AS avg_seconds,
       pg_catalog.round((pg_catalog.percentile_cont(0.95) WITHIN GROUP (ORDER BY v.seconds)
           FILTER (WHERE v.status_code OPERATOR(pg_catalog.=) 'completed'))::pg_catalog.numeric, 3) AS p95_seconds
  FROM states AS s
  LEFT JOIN visits AS v
    ON v.definition OPERATOR(pg_catalog.=) s.definition AND v.version OPERATOR(pg_catalog.=) s.version
   AND v.state OPERATOR(pg_catalog.=) s.state
  LEFT JOIN now_in AS n
    ON n.definition OPERATOR(pg_catalog.=) s.definition AND n.version OPERATOR(pg_catalog.=) s.version
   AND n.state OPERATOR(pg_catalog.=) s.state
 GROUP BY s.definition, s.kind, s.version, s.state, s.ord
 ORDER BY s.definition, s.version, s.ord;
COMMENT ON VIEW taskq.state_stats IS
    'per state of a machine or step of a saga and version: runs in it now, visits, successes, failed tries, seconds';
GRANT SELECT ON taskq.state_stats TO taskq_monitor, taskq_admin;

/* =====================================================================
 * Workers registry: the processes that run tasks say who they are, with a
 * heartbeat; one that stops heartbeating is shown stale, and the
 * background worker deletes its row after taskq.worker_retention.
 * ===================================================================== */

-- Admins may ALTER SYSTEM the retention of its rows, as taskq.retention, and
-- how often the worker refreshes the gauges of taskq.metrics().
GRANT ALTER SYSTEM ON PARAMETER taskq.worker_retention, taskq.metrics_interval TO taskq_admin;

CREATE TABLE taskq.worker_registry (
    worker_id           text COLLATE "C" NOT NULL,
    actor               text,
    host                text,
    pid                 integer,
    version             text,
    actions             text[],
    concurrency         integer,
    heartbeat_interval  interval NOT NULL,
    started_at          timestamptz NOT NULL,
    last_seen           timestamptz NOT NULL,
    CONSTRAINT worker_registry_pkey PRIMARY KEY (worker_id)
);
COMMENT ON TABLE taskq.worker_registry IS
    'one row per worker process that heartbeats (taskq.worker_heartbeat); read it through taskq.workers';
-- The background worker's retention reads the oldest rows first.
CREATE INDEX worker_registry_last_seen_idx ON taskq.worker_registry (last_seen);
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.worker_registry TO taskq_admin;

CREATE FUNCTION taskq.worker_heartbeat(worker_id text, info jsonb DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    k text;
    v jsonb;
    t text;
    s_actor text;
    s_host text;
    s_version text;
    i_pid integer;
    i_concurrency integer;
    a_actions text[];
    n numeric;
    hb interval := '10 s';
BEGIN
    IF worker_id IS NULL THEN
        RAISE EXCEPTION 'argument "worker_id" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF worker_id OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'argument "worker_id" must not be empty'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.octet_length(worker_id) OPERATOR(pg_catalog.>) 200 THEN
        RAISE EXCEPTION 'argument "worker_id" is too long'
            USING ERRCODE = 'string_data_right_truncation',
                  DETAIL = 'A worker id is at most 200 bytes.';
    END IF;
    IF info IS NULL THEN
        info := '{}';
    END IF;
    IF pg_catalog.jsonb_typeof(info) OPERATOR(pg_catalog.<>) 'object' THEN
        RAISE EXCEPTION 'argument "info" must be a JSON object, not %', pg_catalog.jsonb_typeof(info)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR k, v IN SELECT e.key, e.value FROM pg_catalog.jsonb_each(info) AS e ORDER BY e.key LOOP
        t := pg_catalog.jsonb_typeof(v);
        CONTINUE WHEN t OPERATOR(pg_catalog.=) 'null';
        IF k OPERATOR(pg_catalog.=) ANY ('{actor,host,version}'::text[]) THEN
            IF t OPERATOR(pg_catalog.<>) 'string' THEN
                RAISE EXCEPTION 'key "%" of argument "info" must be a string, not %', k, t
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF (v OPERATOR(pg_catalog.#>>) '{}') OPERATOR(pg_catalog.=) '' THEN
                RAISE EXCEPTION 'key "%" of argument "info" must not be an empty string', k
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF pg_catalog.octet_length(v OPERATOR(pg_catalog.#>>) '{}') OPERATOR(pg_catalog.>) 255 THEN
                RAISE EXCEPTION 'value of key "%" of argument "info" is too long', k
                    USING ERRCODE = 'string_data_right_truncation',
                          DETAIL = 'It is at most 255 bytes.';
            END IF;
            CASE k
                WHEN 'actor' THEN s_actor := v OPERATOR(pg_catalog.#>>) '{}';
                WHEN 'host' THEN s_host := v OPERATOR(pg_catalog.#>>) '{}';
                ELSE s_version := v OPERATOR(pg_catalog.#>>) '{}';
            END CASE;
        ELSIF k OPERATOR(pg_catalog.=) ANY ('{pid,concurrency}'::text[]) THEN
            n := CASE WHEN t OPERATOR(pg_catalog.=) 'number' THEN (v::text)::numeric END;
            IF n IS NULL OR n OPERATOR(pg_catalog.<>) pg_catalog.trunc(n)
               OR n OPERATOR(pg_catalog.<) 1 OR n OPERATOR(pg_catalog.>) 2147483647 THEN
                RAISE EXCEPTION 'key "%" of argument "info" must be an integer from 1 to 2147483647, not %', k, v::text
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF k OPERATOR(pg_catalog.=) 'pid' THEN
                i_pid := n::integer;
            ELSE
                i_concurrency := n::integer;
            END IF;
        ELSIF k OPERATOR(pg_catalog.=) 'actions' THEN
            IF t OPERATOR(pg_catalog.<>) 'array' THEN
                RAISE EXCEPTION 'key "actions" of argument "info" must be an array of strings, not %', t
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF EXISTS (SELECT FROM pg_catalog.jsonb_array_elements(v) AS a(e)
                        WHERE pg_catalog.jsonb_typeof(a.e) OPERATOR(pg_catalog.<>) 'string'
                           OR (a.e OPERATOR(pg_catalog.#>>) '{}') OPERATOR(pg_catalog.=) '') THEN
                RAISE EXCEPTION 'key "actions" of argument "info" must be an array of non-empty strings'
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF EXISTS (SELECT FROM pg_catalog.jsonb_array_elements_text(v) AS a(e)
                        WHERE pg_catalog.octet_length(a.e) OPERATOR(pg_catalog.>) 255) THEN
                RAISE EXCEPTION 'an action of key "actions" of argument "info" is too long'
                    USING ERRCODE = 'string_data_right_truncation',
                          DETAIL = 'An action is at most 255 bytes.';
            END IF;
            SELECT pg_catalog.array_agg(a.e ORDER BY a.n) INTO a_actions
              FROM pg_catalog.jsonb_array_elements_text(v) WITH ORDINALITY AS a(e, n);
            a_actions := COALESCE(a_actions, '{}');
        ELSIF k OPERATOR(pg_catalog.=) 'heartbeat_interval' THEN
            n := CASE WHEN t OPERATOR(pg_catalog.=) 'number' THEN (v::text)::numeric END;
            IF n IS NULL OR n OPERATOR(pg_catalog.<=) 0 OR n OPERATOR(pg_catalog.>) 86400 THEN
                RAISE EXCEPTION 'key "heartbeat_interval" of argument "info" must be a number of seconds greater than 0 and at most 86400, not %', v::text
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            hb := pg_catalog.make_interval(secs => n::double precision);
        ELSE
            RAISE EXCEPTION 'unrecognized key "%" of argument "info"', k
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'The keys of info are actor, host, pid, version, actions, concurrency and heartbeat_interval.';
        END IF;
    END LOOP;
    INSERT INTO taskq.worker_registry AS r
           (worker_id, actor, host, pid, version, actions, concurrency, heartbeat_interval,
            started_at, last_seen)
    VALUES (worker_heartbeat.worker_id, s_actor, s_host, i_pid, s_version, a_actions,
            i_concurrency, hb, pg_catalog.now(), pg_catalog.now())
    ON CONFLICT ON CONSTRAINT worker_registry_pkey
       DO UPDATE SET actor = EXCLUDED.actor, host = EXCLUDED.host, pid = EXCLUDED.pid,
                     version = EXCLUDED.version, actions = EXCLUDED.actions,
                     concurrency = EXCLUDED.concurrency,
                     heartbeat_interval = EXCLUDED.heartbeat_interval,
                     last_seen = EXCLUDED.last_seen;
END
$$;
COMMENT ON FUNCTION taskq.worker_heartbeat(text, jsonb) IS
    'a worker says it is alive and who it is (actor, host, pid, version, actions, concurrency, heartbeat_interval): its row in taskq.workers is written, started_at kept';
REVOKE ALL ON FUNCTION taskq.worker_heartbeat(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.worker_heartbeat(text, jsonb) TO taskq_worker, taskq_admin;

CREATE FUNCTION taskq.worker_stopped(worker_id text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF worker_id IS NULL THEN
        RAISE EXCEPTION 'argument "worker_id" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    DELETE FROM taskq.worker_registry AS r
     WHERE r.worker_id OPERATOR(pg_catalog.=) worker_stopped.worker_id;
END
$$;
COMMENT ON FUNCTION taskq.worker_stopped(text) IS
    'a worker stopping cleanly: its row in taskq.workers is deleted (an unknown id is no error)';
REVOKE ALL ON FUNCTION taskq.worker_stopped(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.worker_stopped(text) TO taskq_worker, taskq_admin;

-- in_progress: the tasks in progress owned by the worker's actor, found
-- through tasks_lease_idx (every task in progress is in it, a lease
-- without a deadline too), so the count costs the tasks in progress, not
-- the table.  Stale: not seen for three heartbeat intervals.
CREATE VIEW taskq.workers AS
SELECT w.worker_id, w.actor, w.host, w.pid, w.version, w.actions, w.concurrency,
       w.started_at, w.last_seen,
       (SELECT pg_catalog.count(*) FROM taskq.tasks AS t
         WHERE t.status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status
           AND t.actor_id OPERATOR(pg_catalog.=) w.actor)::pg_catalog.int4 AS in_progress,
       (w.heartbeat_interval OPERATOR(pg_catalog.*) 3::pg_catalog.float8)
           OPERATOR(pg_catalog.+) w.last_seen OPERATOR(pg_catalog.<) pg_catalog.now() AS stale
  FROM taskq.worker_registry AS w
 ORDER BY w.worker_id;
COMMENT ON VIEW taskq.workers IS
    'the workers that heartbeat: who they are, since when, last seen, the tasks their actor holds, and whether they are stale (not seen for three heartbeat intervals)';
GRANT SELECT ON taskq.workers TO taskq_monitor, taskq_admin;

/* =====================================================================
 * Schedules: the background worker inserts one task per tick of a cron
 * expression, with id "<name>/<tick as ISO 8601 UTC>" and not_before the
 * tick, and advances last_tick and next_tick in the same transaction.
 * ===================================================================== */

CREATE TABLE taskq.schedule_registry (
    name       text COLLATE "C" NOT NULL,
    cron       text NOT NULL,
    time_zone  text NOT NULL,
    task       jsonb NOT NULL,
    catch_up   text NOT NULL,
    last_tick  timestamptz,
    next_tick  timestamptz,
    CONSTRAINT schedule_registry_pkey PRIMARY KEY (name),
    CONSTRAINT schedule_registry_catch_up_check
        CHECK (catch_up OPERATOR(pg_catalog.=) ANY (ARRAY['latest', 'all', 'none']::pg_catalog.text[]))
);
COMMENT ON TABLE taskq.schedule_registry IS
    'one row per schedule (taskq.schedule); read it through taskq.schedules';
-- The background worker finds the schedules due, and its next wakeup, by next_tick.
CREATE INDEX schedule_registry_next_tick_idx ON taskq.schedule_registry (next_tick);
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.schedule_registry TO taskq_admin;

-- Every check of schedule() (22004, 22023), then the first tick after
-- now(); the database's background worker is woken for it at the commit.
CREATE FUNCTION taskq._schedule_next(name text, cron text, task jsonb, time_zone text,
                                     catch_up text)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'taskq_schedule_next'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION taskq._schedule_next(text, text, jsonb, text, text) IS
    'internal: check the arguments of schedule() and return the first tick after now()';
REVOKE ALL ON FUNCTION taskq._schedule_next(text, text, jsonb, text, text) FROM PUBLIC;

-- The first tick of a cron expression after an instant (NULL: none within
-- nine years), for tests.
CREATE FUNCTION taskq._cron_next(cron text, time_zone text, after timestamptz)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'taskq_cron_next_sql'
LANGUAGE C STABLE;
COMMENT ON FUNCTION taskq._cron_next(text, text, timestamptz) IS
    'internal: the first tick of a cron expression in a time zone after an instant';
REVOKE ALL ON FUNCTION taskq._cron_next(text, text, timestamptz) FROM PUBLIC;

-- An update that keeps cron and time_zone keeps next_tick (a tick due is
-- not lost by a repeated schedule()); one that changes either starts from
-- the first tick after now().  last_tick is kept.
CREATE FUNCTION taskq.schedule(name text, cron text, task jsonb, time_zone text DEFAULT 'UTC',
                               catch_up text DEFAULT 'latest')
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    first_tick timestamptz;
BEGIN
    first_tick := taskq._schedule_next(schedule.name, schedule.cron, schedule.task,
                                       schedule.time_zone, schedule.catch_up);
    INSERT INTO taskq.schedule_registry AS r
           (name, cron, time_zone, task, catch_up, last_tick, next_tick)
    VALUES (schedule.name, schedule.cron, schedule.time_zone, schedule.task,
            schedule.catch_up, NULL, first_tick)
    ON CONFLICT ON CONSTRAINT schedule_registry_pkey
       DO UPDATE SET cron = EXCLUDED.cron, time_zone = EXCLUDED.time_zone,
                     task = EXCLUDED.task, catch_up = EXCLUDED.catch_up,
                     next_tick = CASE WHEN r.cron OPERATOR(pg_catalog.=) EXCLUDED.cron
                                       AND r.time_zone OPERATOR(pg_catalog.=) EXCLUDED.time_zone
                                       AND r.next_tick IS NOT NULL
                                      THEN r.next_tick ELSE EXCLUDED.next_tick END;
END
$$;
COMMENT ON FUNCTION taskq.schedule(text, text, jsonb, text, text) IS
    'create the schedule of this name, or replace it: the background worker inserts the task once per tick of the cron expression in the time zone, with id "<name>/<tick>"; catch_up (latest, all, none) says which missed ticks it inserts';
REVOKE ALL ON FUNCTION taskq.schedule(text, text, jsonb, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.schedule(text, text, jsonb, text, text) TO taskq_admin;

CREATE FUNCTION taskq.unschedule(name text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF name IS NULL THEN
        RAISE EXCEPTION 'argument "name" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    DELETE FROM taskq.schedule_registry AS r
     WHERE r.name OPERATOR(pg_catalog.=) unschedule.name;
    RETURN FOUND;
END
$$;
COMMENT ON FUNCTION taskq.unschedule(text) IS
    'remove the schedule of this name (its tasks already inserted stay); whether there was one';
REVOKE ALL ON FUNCTION taskq.unschedule(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.unschedule(text) TO taskq_admin;

CREATE VIEW taskq.schedules AS
SELECT s.name, s.cron, s.time_zone, s.task, s.catch_up, s.last_tick, s.next_tick
  FROM taskq.schedule_registry AS s
 ORDER BY s.name;
COMMENT ON VIEW taskq.schedules IS
    'the schedules: cron expression, time zone, task, catch_up, the last tick handled and the next one';
GRANT SELECT ON taskq.schedules TO taskq_monitor, taskq_admin;

-- Blocked tasks (pending, predecessors left) by action: the gauge of
-- taskq.metrics() counts them without reading the rest of the table.  A
-- task without predecessors is never in it.
CREATE INDEX tasks_blocked_idx ON taskq.tasks (action)
    WHERE status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status
      AND num_signals OPERATOR(pg_catalog.>) 0;

-- The gauges of taskq.metrics(): per action, the tasks ready, delayed,
-- blocked and in progress and the age of the oldest ready one, and the
-- workers that heartbeat, written by the background worker every
-- taskq.metrics_interval (a row per gauge that is not 0), so that a scrape
-- reads these few rows instead of counting taskq.tasks.  action '' is a
-- gauge without one.
CREATE TABLE taskq.metric_gauges (
    name            text COLLATE "C" NOT NULL,
    action          text COLLATE "C" NOT NULL,
    value           double precision NOT NULL,
    refreshed_at    timestamptz NOT NULL,
    CONSTRAINT metric_gauges_pkey PRIMARY KEY (name, action)
);
COMMENT ON TABLE taskq.metric_gauges IS
    'the gauges of taskq.metrics() as the background worker last counted them (every taskq.metrics_interval)';
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.metric_gauges TO taskq_admin;

-- Counters and histograms since the server started (shared memory, counted
-- at commit) and the gauges of the last refresh, in Prometheus' names.
CREATE FUNCTION taskq.metrics()
RETURNS TABLE (name text, labels jsonb, kind text, value double precision)
AS 'MODULE_PATHNAME', 'taskq_metrics'
LANGUAGE C VOLATILE ROWS 100
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.metrics() IS
    'per action: tasks inserted, claimed, completed, aborted, retried, released, expired, cancelled, redriven since the server started, histograms of queue wait and run time, and the gauges the background worker last refreshed';
REVOKE ALL ON FUNCTION taskq.metrics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.metrics() TO taskq_monitor, taskq_admin;

CREATE FUNCTION taskq.metrics_text()
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_metrics_text'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.metrics_text() IS
    'taskq.metrics() in the Prometheus text exposition format';
REVOKE ALL ON FUNCTION taskq.metrics_text() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.metrics_text() TO taskq_monitor, taskq_admin;

-- Tasks claimed before the update have no key.
ALTER TABLE taskq.tasks ADD COLUMN concurrency_key text COLLATE "C";
COMMENT ON COLUMN taskq.tasks.concurrency_key IS 'tasks of an action that share it share its max_running_per_key (NULL: none)';

-- Tasks in progress per action and concurrency key: a claim of an action
-- with a concurrency limit counts those still holding a slot through it
-- (taskq.set_concurrency_limit), as does the view taskq.limits.
CREATE INDEX tasks_running_idx ON taskq.tasks (action, concurrency_key)
    WHERE status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status;

-- enqueue and enqueue_many gain concurrency_key: dropped and created again.
DROP FUNCTION taskq.enqueue(text, jsonb, text, integer, timestamptz, integer, text);
DROP FUNCTION taskq.enqueue_many(text, jsonb[], text[], integer, timestamptz, integer, text);

CREATE FUNCTION taskq.enqueue(action text, body jsonb DEFAULT NULL, id text DEFAULT NULL,
    priority integer DEFAULT 0, not_before timestamptz DEFAULT NULL,
    max_tries integer DEFAULT NULL, workflow text DEFAULT NULL,
    concurrency_key text DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_enqueue'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text) IS
    'add one task of an action and return its id (made by taskq if not given)';
REVOKE ALL ON FUNCTION taskq.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text) TO taskq_producer, taskq_admin;

CREATE FUNCTION taskq.enqueue_many(action text, bodies jsonb[], ids text[] DEFAULT NULL,
    priority integer DEFAULT 0, not_before timestamptz DEFAULT NULL,
    max_tries integer DEFAULT NULL, workflow text DEFAULT NULL,
    concurrency_key text DEFAULT NULL)
RETURNS text[]
AS 'MODULE_PATHNAME', 'taskq_enqueue_many'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.enqueue_many(text, jsonb[], text[], integer, timestamptz, integer, text, text) IS
    'atomically add one task of an action per body and return their ids (made by taskq where not given)';
REVOKE ALL ON FUNCTION taskq.enqueue_many(text, jsonb[], text[], integer, timestamptz, integer, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.enqueue_many(text, jsonb[], text[], integer, timestamptz, integer, text, text) TO taskq_producer, taskq_admin;

/*
 * Limits per action.  Concurrency: at most max_running of its tasks hold a
 * lease at once, and at most max_running_per_key of those that share a
 * concurrency_key.  Rate: in any window of length rate_per, at most
 * rate_max claims (rate_by_key: per concurrency_key).  A claim of a
 * limited action takes the action's limiter lock, counts its tasks in
 * progress through tasks_running_idx and its claims in the window in
 * taskq.flow_claims; each session keeps which actions are limited until
 * these triggers say the table was written.
 */
CREATE TABLE taskq.flow_limits (
    action              text COLLATE "C" NOT NULL,
    max_running         integer,
    max_running_per_key integer,
    rate_max            integer,
    rate_per            interval,
    rate_by_key         boolean NOT NULL DEFAULT false,
    CONSTRAINT flow_limits_pkey PRIMARY KEY (action),
    CONSTRAINT flow_limits_max_running_check CHECK (max_running OPERATOR(pg_catalog.>=) 0),
    CONSTRAINT flow_limits_max_running_per_key_check CHECK (max_running_per_key OPERATOR(pg_catalog.>=) 0),
    CONSTRAINT flow_limits_rate_check CHECK (rate_max IS NULL AND rate_per IS NULL
        OR rate_max IS NOT NULL AND rate_per IS NOT NULL
           AND rate_max OPERATOR(pg_catalog.>=) 1 AND rate_per OPERATOR(pg_catalog.>) '0 s'::pg_catalog.interval)
);
COMMENT ON TABLE taskq.flow_limits IS
    'per action: how many of its tasks may hold a lease at once, in all and per concurrency key, and how many claims a window may hold (set with taskq.set_concurrency_limit and taskq.set_rate_limit)';
SELECT pg_catalog.pg_extension_config_dump('taskq.flow_limits', '');

GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.flow_limits TO taskq_admin;

-- The claims of rate-limited actions still in their window: one row per
-- claim (key: the task's concurrency_key, NULL when none), at the clock
-- time the claim was made under the action's limiter lock.  Claims delete
-- the rows that left the window of their action; the background worker
-- deletes them too, when it wakes for the moment a window reopens.
CREATE TABLE taskq.flow_claims (
    action      text COLLATE "C" NOT NULL,
    key         text COLLATE "C",
    claimed_at  timestamptz NOT NULL
);
COMMENT ON TABLE taskq.flow_claims IS
    'the claims of rate-limited actions still in their window (taskq.set_rate_limit)';
CREATE INDEX flow_claims_action_idx ON taskq.flow_claims (action, claimed_at);
CREATE INDEX flow_claims_claimed_at_idx ON taskq.flow_claims (claimed_at);
SELECT pg_catalog.pg_extension_config_dump('taskq.flow_claims', '');

GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.flow_claims TO taskq_admin;

CREATE FUNCTION taskq.flow_limits_written()
RETURNS trigger
AS 'MODULE_PATHNAME', 'taskq_flow_limits_written'
LANGUAGE C;
COMMENT ON FUNCTION taskq.flow_limits_written() IS
    'trigger: every session drops the limits it kept when taskq.flow_limits is written';
REVOKE ALL ON FUNCTION taskq.flow_limits_written() FROM PUBLIC;
-- rows, not statements: logical replication's apply worker fires row triggers only
CREATE TRIGGER flow_limits_written
    AFTER INSERT OR UPDATE OR DELETE ON taskq.flow_limits
    FOR EACH ROW EXECUTE FUNCTION taskq.flow_limits_written();
CREATE TRIGGER flow_limits_truncated
    AFTER TRUNCATE ON taskq.flow_limits
    FOR EACH STATEMENT EXECUTE FUNCTION taskq.flow_limits_written();
-- also in sessions with session_replication_role = replica (pg_restore, replication tools)
ALTER TABLE taskq.flow_limits ENABLE ALWAYS TRIGGER flow_limits_written;
ALTER TABLE taskq.flow_limits ENABLE ALWAYS TRIGGER flow_limits_truncated;

CREATE FUNCTION taskq.set_concurrency_limit(action text, max_running integer DEFAULT NULL,
                                            max_running_per_key integer DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF action IS NULL OR action OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'argument "action" must not be null or empty'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.octet_length(action) OPERATOR(pg_catalog.>) 255 THEN
        RAISE EXCEPTION 'argument "action" is too long'
            USING ERRCODE = 'string_data_right_truncation',
                  DETAIL = 'An action is at most 255 bytes.';
    END IF;
    IF max_running OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'argument "max_running" must not be negative'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass 0 to let nothing start, null for no limit.';
    END IF;
    IF max_running_per_key OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'argument "max_running_per_key" must not be negative'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass 0 to let nothing with a key start, null for no limit.';
    END IF;
    INSERT INTO taskq.flow_limits AS f (action, max_running, max_running_per_key)
         VALUES (set_concurrency_limit.action, set_concurrency_limit.max_running,
                 set_concurrency_limit.max_running_per_key)
    ON CONFLICT ON CONSTRAINT flow_limits_pkey
       DO UPDATE SET max_running = EXCLUDED.max_running,
                     max_running_per_key = EXCLUDED.max_running_per_key;
    DELETE FROM taskq.flow_limits AS f
     WHERE f.action OPERATOR(pg_catalog.=) set_concurrency_limit.action
       AND f.max_running IS NULL AND f.max_running_per_key IS NULL AND f.rate_max IS NULL;
END
$$;
COMMENT ON FUNCTION taskq.set_concurrency_limit(text, integer, integer) IS
    'set how many tasks of an action may hold a lease at once, in all and per concurrency key (null: no limit, 0: none start)';
REVOKE ALL ON FUNCTION taskq.set_concurrency_limit(text, integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.set_concurrency_limit(text, integer, integer) TO taskq_admin;

CREATE FUNCTION taskq.set_rate_limit(action text, max integer, per interval,
                                     by_key boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF action IS NULL OR action OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'argument "action" must not be null or empty'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.octet_length(action) OPERATOR(pg_catalog.>) 255 THEN
        RAISE EXCEPTION 'argument "action" is too long'
            USING ERRCODE = 'string_data_right_truncation',
                  DETAIL = 'An action is at most 255 bytes.';
    END IF;
    IF max IS NULL OR max OPERATOR(pg_catalog.<) 1 THEN
        RAISE EXCEPTION 'argument "max" must be at least 1'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'taskq.clear_limits removes the limits of an action.';
    END IF;
    IF per IS NULL OR per OPERATOR(pg_catalog.<=) '0 s'::interval THEN
        RAISE EXCEPTION 'argument "per" must be a positive interval'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- a window that reaches past the range of timestamps: 22008 now, not at each claim
    PERFORM pg_catalog.now() OPERATOR(pg_catalog.-) per OPERATOR(pg_catalog.-) per;
    IF by_key IS NULL THEN
        RAISE EXCEPTION 'argument "by_key" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    INSERT INTO taskq.flow_limits AS f (action, rate_max, rate_per, rate_by_key)
         VALUES (set_rate_limit.action, set_rate_limit.max, set_rate_limit.per, set_rate_limit.by_key)
    ON CONFLICT ON CONSTRAINT flow_limits_pkey
       DO UPDATE SET rate_max = EXCLUDED.rate_max, rate_per = EXCLUDED.rate_per,
                     rate_by_key = EXCLUDED.rate_by_key;
END
$$;
COMMENT ON FUNCTION taskq.set_rate_limit(text, integer, interval, boolean) IS
    'set how many claims of an action any window of length per may hold (by_key: per concurrency key)';
REVOKE ALL ON FUNCTION taskq.set_rate_limit(text, integer, interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.set_rate_limit(text, integer, interval, boolean) TO taskq_admin;

CREATE FUNCTION taskq.clear_limits(action text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF action IS NULL THEN
        RAISE EXCEPTION 'argument "action" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    DELETE FROM taskq.flow_limits AS f WHERE f.action OPERATOR(pg_catalog.=) clear_limits.action;
    DELETE FROM taskq.flow_claims AS c WHERE c.action OPERATOR(pg_catalog.=) clear_limits.action;
END
$$;
COMMENT ON FUNCTION taskq.clear_limits(text) IS
    'remove the concurrency and rate limits of an action';
REVOKE ALL ON FUNCTION taskq.clear_limits(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.clear_limits(text) TO taskq_admin;

-- running: the action's tasks holding a slot now (in progress, lease not
-- passed), through tasks_running_idx; window_claims: its claims in the
-- last rate_per (in all, also with by_key).  by_key and window_claims are
-- NULL without a rate limit.
CREATE VIEW taskq.limits AS
SELECT f.action, f.max_running, f.max_running_per_key,
       f.rate_max, f.rate_per,
       CASE WHEN f.rate_max IS NOT NULL THEN f.rate_by_key END AS by_key,
       (SELECT pg_catalog.count(*) FROM taskq.tasks AS t
         WHERE t.action OPERATOR(pg_catalog.=) f.action
           AND t.status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status
           AND (t.action_deadline IS NULL
                OR t.action_deadline OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()))::pg_catalog.int4
           AS running,
       CASE WHEN f.rate_max IS NOT NULL THEN
       (SELECT pg_catalog.count(*) FROM taskq.flow_claims AS c
         WHERE c.action OPERATOR(pg_catalog.=) f.action
           AND c.claimed_at OPERATOR(pg_catalog.+) f.rate_per
               OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())::pg_catalog.int4
       END AS window_claims
  FROM taskq.flow_limits AS f
 ORDER BY f.action;
COMMENT ON VIEW taskq.limits IS
    'the actions with limits: concurrency and rate, how many of their tasks hold a slot now, and their claims in the current window';
GRANT SELECT ON taskq.limits TO taskq_monitor, taskq_admin;

-- own_tasks and return_and_own return each task's concurrency_key as a
-- last column, so that a worker's handler can see it: dropped and created
-- again (a function's result type cannot be replaced).
DROP FUNCTION taskq.own_tasks(text, integer, text[], interval, interval);
DROP FUNCTION taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[],
                                   interval, jsonb[]);

CREATE FUNCTION taskq.own_tasks(actor text, max_tasks integer, actions text[],
                                max_duration interval DEFAULT NULL,
                                wait interval DEFAULT NULL)
RETURNS TABLE (id text, token uuid, action text, body jsonb, num_tries integer,
               action_deadline timestamptz, concurrency_key text)
AS 'MODULE_PATHNAME', 'taskq_own_tasks'
LANGUAGE C VOLATILE ROWS 10
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.own_tasks(text, integer, text[], interval, interval) IS
    'claim up to max_tasks ready tasks of the given actions (NULL: any) for actor; with wait, sleep until there are some or the wait passes';
REVOKE ALL ON FUNCTION taskq.own_tasks(text, integer, text[], interval, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.own_tasks(text, integer, text[], interval, interval) TO taskq_worker, taskq_admin;

CREATE FUNCTION taskq.return_and_own(ids text[], tokens uuid[], statuses text[],
                                     status_codes taskq.status[], actor text,
                                     max_tasks integer, actions text[],
                                     max_duration interval DEFAULT NULL,
                                     results jsonb[] DEFAULT NULL)
RETURNS TABLE (id text, token uuid, action text, body jsonb, num_tries integer,
               action_deadline timestamptz, concurrency_key text)
AS 'MODULE_PATHNAME', 'taskq_return_and_own'
LANGUAGE C VOLATILE ROWS 10
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval, jsonb[]) IS
    'return_tasks, then own_tasks, in one call: a worker''s whole cycle in one round trip and one transaction';
REVOKE ALL ON FUNCTION taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval, jsonb[])
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval, jsonb[])
    TO taskq_worker, taskq_admin;

-- ---------------------------------------------------------------------
-- Child runs: a machine's child state or a saga's child step starts a run
-- of another definition ("<root id>/k<n>", numbered by taskq.fork_seq);
-- taskq.runs.parent names the run that started it.  The graphs draw them.
-- ---------------------------------------------------------------------
COMMENT ON COLUMN taskq.runs.id IS 'caller-chosen run id; forks are "<root id>/c<n>", child runs "<root id>/k<n>"';
COMMENT ON COLUMN taskq.runs.parent IS 'the run this one was forked from by a continuation, or whose child state or step started it; else NULL';
COMMENT ON COLUMN taskq.runs.fork IS 'internal: machine: the run the current visit forked (a continuation) or started (a child state)';
COMMENT ON SEQUENCE taskq.fork_seq IS 'numbers of the runs forked by continuations and of child runs';

-- Timers of runs: a run's deadline, the table taskq.run_timers the
-- background worker fires, and start_machine and start_saga with a last
-- argument deadline (dropped and created again).
ALTER TABLE taskq.runs ADD COLUMN deadline timestamptz;
COMMENT ON COLUMN taskq.runs.deadline IS 'the run fails with error "deadline exceeded" if not finished by then (start_machine, start_saga), or NULL';
GRANT SELECT (deadline) ON taskq.runs TO taskq_monitor;

-- Timers of runs, fired by the background worker: a waiting state's
-- timeout (kind 'timeout', the state it belongs to) and a run's deadline
-- (kind 'deadline').  At most one of each kind per run: a new visit of a
-- waiting state replaces its run's timeout.  The worker reads only the
-- first entries of run_timers_due_idx; a row whose run moved on is deleted
-- when it comes due.
CREATE TABLE taskq.run_timers (
    run_id      text COLLATE "C" NOT NULL,
    kind        text COLLATE "C" NOT NULL,
    state       text COLLATE "C",
    due_at      timestamptz NOT NULL,
    CONSTRAINT run_timers_pkey PRIMARY KEY (run_id, kind),
    CONSTRAINT run_timers_kind_check CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['timeout', 'deadline']::pg_catalog.text[]))
);
COMMENT ON TABLE taskq.run_timers IS
    'timers of runs: waiting states'' timeouts and runs'' deadlines, fired by the background worker';
COMMENT ON COLUMN taskq.run_timers.state IS 'timeout: the waiting state whose visit it belongs to';
CREATE INDEX run_timers_due_idx ON taskq.run_timers (due_at);
SELECT pg_catalog.pg_extension_config_dump('taskq.run_timers', '');
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.run_timers TO taskq_admin;
GRANT SELECT ON taskq.run_timers TO taskq_monitor;

DROP FUNCTION taskq.start_machine(text, text, jsonb, jsonb);

CREATE FUNCTION taskq.start_machine(machine text, id text, context jsonb DEFAULT '{}'::jsonb,
                                    debug jsonb DEFAULT NULL, deadline interval DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_start_machine_sql'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.start_machine(text, text, jsonb, jsonb, interval) IS
    'start a run of the latest version of a state machine in its initial state (failing at its deadline if given); returns the run id';
REVOKE ALL ON FUNCTION taskq.start_machine(text, text, jsonb, jsonb, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.start_machine(text, text, jsonb, jsonb, interval) TO taskq_producer, taskq_admin;

DROP FUNCTION taskq.start_saga(text, text, jsonb, jsonb);

CREATE FUNCTION taskq.start_saga(saga text, id text, inputs jsonb DEFAULT '{}'::jsonb,
                                 debug jsonb DEFAULT NULL, deadline interval DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'taskq_start_saga_sql'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.start_saga(text, text, jsonb, jsonb, interval) IS
    'start a run of the latest version of a saga: the steps with no predecessor become ready (undone at its deadline if given); returns the run id';
REVOKE ALL ON FUNCTION taskq.start_saga(text, text, jsonb, jsonb, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.start_saga(text, text, jsonb, jsonb, interval) TO taskq_producer, taskq_admin;

-- The timers of runs due now fired as the background worker fires them,
-- for tests (where the worker is off); when to look again.
CREATE FUNCTION taskq._fire_timers()
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'taskq_fire_timers_sql'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION taskq._fire_timers() IS
    'internal: fire the timers of runs that are due, as the background worker does';
REVOKE ALL ON FUNCTION taskq._fire_timers() FROM PUBLIC;

-- Graphs draw child states and steps and map states (their items' action
-- and array; run_graph counts their items by status and draws their items
-- and join as no steps), and label a transition with its "after" and the
-- timeout that sends it (the helper of definition_graph and run_graph,
-- dropped and created again).
DROP FUNCTION taskq._definition_parts(jsonb, text, text, integer);

-- The nodes and edges of a definition (version v), with live figures (none
-- when name is NULL: a saga run's graph labels its steps itself), as rows:
-- kind 'node' (key, label, attributes) or 'edge' (key -> key2, label).
CREATE FUNCTION taskq._definition_parts(def jsonb, kind text, name text, v integer)
RETURNS TABLE (part text, key text, key2 text, label text, initial boolean, final boolean,
               waiting boolean, ord bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- the live figures of every state at once: state_stats reads the tasks
    -- of every run of the definition, so once per graph, not once per node
    WITH st AS MATERIALIZED (
        SELECT x.state,
               E'\nnow ' OPERATOR(pg_catalog.||) x.in_state OPERATOR(pg_catalog.||)
               ', entered ' OPERATOR(pg_catalog.||) x.entered OPERATOR(pg_catalog.||)
               ', ok ' OPERATOR(pg_catalog.||) x.succeeded OPERATOR(pg_catalog.||)
               ', failed tries ' OPERATOR(pg_catalog.||) x.failed_tries OPERATOR(pg_catalog.||)
               COALESCE(', avg ' OPERATOR(pg_catalog.||) x.avg_seconds OPERATOR(pg_catalog.||) ' s', '') AS figures
          FROM taskq.state_stats AS x
         WHERE name IS NOT NULL
           AND x.definition OPERATOR(pg_catalog.=) name AND x.version OPERATOR(pg_catalog.=) v
    )
    SELECT 'node', s.value OPERATOR(pg_catalog.->>) 'name', NULL::text,
           (s.value OPERATOR(pg_catalog.->>) 'name')
           OPERATOR(pg_catalog.||) CASE WHEN kind OPERATOR(pg_catalog.=) 'machine' THEN
               E'\n' OPERATOR(pg_catalog.||) COALESCE('action: ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->>) 'action'),
                                                       'child: machine ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->) 'child' OPERATOR(pg_catalog.->>) 'machine'),
                                                       'child: saga ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->) 'child' OPERATOR(pg_catalog.->>) 'saga'),
                        -- a map state: its items' action and array
                        (SELECT 'map: ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.#>>) '{map,action}') OPERATOR(pg_catalog.||) ' over '
                                   OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.#>>) '{map,items}')
                                   OPERATOR(pg_catalog.||) COALESCE(', ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.#>>) '{map,max_parallel}') OPERATOR(pg_catalog.||) ' at once', '')
                 WHERE s.value OPERATOR(pg_catalog.?) 'map'),
                        'waits for an event')
               OPERATOR(pg_catalog.||) CASE WHEN (s.value OPERATOR(pg_catalog.->>) 'continuation')::boolean THEN E'\ncontinuation' ELSE '' END
               OPERATOR(pg_catalog.||) COALESCE(E'\nfan-in ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->>) 'fan_in') OPERATOR(pg_catalog.||) ' s', '')
             ELSE
               E'\n' OPERATOR(pg_catalog.||) COALESCE('do: ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->>) 'do'), 'child: machine ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->) 'child' OPERATOR(pg_catalog.->>) 'machine'),
                                                       'child: saga ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->) 'child' OPERATOR(pg_catalog.->>) 'saga'))
               OPERATOR(pg_catalog.||) E'\nundo: ' OPERATOR(pg_catalog.||) COALESCE(s.value OPERATOR(pg_catalog.->>) 'undo', '-')
               OPERATOR(pg_catalog.||) COALESCE(E'\ntrigger: ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->>) 'trigger'), '')
             END
           OPERATOR(pg_catalog.||) COALESCE((SELECT st.figures FROM st
                                              WHERE st.state OPERATOR(pg_catalog.=) (s.value OPERATOR(pg_catalog.->>) 'name')), ''),
           COALESCE((s.value OPERATOR(pg_catalog.->>) 'initial')::boolean, false),
           COALESCE((s.value OPERATOR(pg_catalog.->>) 'final')::boolean, false),
           kind OPERATOR(pg_catalog.=) 'machine' AND (s.value OPERATOR(pg_catalog.->) 'action') OPERATOR(pg_catalog.=) 'null'::jsonb
               AND NOT s.value OPERATOR(pg_catalog.?) 'child' AND NOT s.value OPERATOR(pg_catalog.?) 'map',
           s.ordinality
      FROM pg_catalog.jsonb_array_elements(def OPERATOR(pg_catalog.->)
               CASE kind WHEN 'machine' THEN 'states' ELSE 'steps' END) WITH ORDINALITY AS s
    UNION ALL
    -- a transition's label: its event, its "after", and the timeout that sends it
    SELECT 'edge', s.value OPERATOR(pg_catalog.->>) 'name', t.value OPERATOR(pg_catalog.->>) 'to',
           (t.value OPERATOR(pg_catalog.->>) 'event')
           OPERATOR(pg_catalog.||) COALESCE(' (after ' OPERATOR(pg_catalog.||) (t.value OPERATOR(pg_catalog.->>) 'after') OPERATOR(pg_catalog.||) ')', '')
           OPERATOR(pg_catalog.||) CASE WHEN (t.value OPERATOR(pg_catalog.->>) 'event') OPERATOR(pg_catalog.=) (s.value OPERATOR(pg_catalog.->>) 'on_timeout')
                                        THEN ' (timeout ' OPERATOR(pg_catalog.||) (s.value OPERATOR(pg_catalog.->>) 'timeout') OPERATOR(pg_catalog.||) ')'
                                        ELSE '' END,
           NULL, NULL, NULL, s.ordinality * 1000 OPERATOR(pg_catalog.+) t.ordinality
      FROM pg_catalog.jsonb_array_elements(def OPERATOR(pg_catalog.->) 'states') WITH ORDINALITY AS s,
           pg_catalog.jsonb_array_elements(COALESCE(s.value OPERATOR(pg_catalog.->) 'transitions', '[]'::jsonb)) WITH ORDINALITY AS t
     WHERE kind OPERATOR(pg_catalog.=) 'machine'
    UNION ALL
    -- a saga step comes after its "after" steps, by default the previous step
    SELECT 'edge', a.after, s.value OPERATOR(pg_catalog.->>) 'name', NULL, NULL, NULL, NULL,
           s.ordinality * 1000 OPERATOR(pg_catalog.+) a.ord
      FROM pg_catalog.jsonb_array_elements(def OPERATOR(pg_catalog.->) 'steps') WITH ORDINALITY AS s,
           LATERAL (SELECT x.value AS after, x.ordinality AS ord
                      FROM pg_catalog.jsonb_array_elements_text(s.value OPERATOR(pg_catalog.->) 'after') WITH ORDINALITY AS x
                     WHERE s.value ? 'after'
                    UNION ALL
                    SELECT (def OPERATOR(pg_catalog.->) 'steps' OPERATOR(pg_catalog.->) (s.ordinality::integer OPERATOR(pg_catalog.-) 2))
                               OPERATOR(pg_catalog.->>) 'name', 1
                     WHERE NOT s.value ? 'after' AND s.ordinality OPERATOR(pg_catalog.>) 1) AS a
     WHERE kind OPERATOR(pg_catalog.=) 'saga'
$$;
COMMENT ON FUNCTION taskq._definition_parts(jsonb, text, text, integer) IS
    'internal: the nodes and edges of a definition, for the graph functions';
REVOKE ALL ON FUNCTION taskq._definition_parts(jsonb, text, text, integer) FROM PUBLIC;

DROP FUNCTION taskq.run_graph(text, text);
CREATE FUNCTION taskq.run_graph(id text, format text DEFAULT 'dot')
RETURNS text
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
    def jsonb;
    nodes jsonb;
    edges jsonb;
BEGIN
    PERFORM taskq._graph_format(format);
    IF id IS NULL THEN
        RAISE EXCEPTION 'argument "id" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT x.* INTO r FROM taskq.runs AS x WHERE x.id OPERATOR(pg_catalog.=) run_graph.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'run "%" does not exist', id USING ERRCODE = 'undefined_object';
    END IF;
    SELECT d.definition INTO def FROM taskq.definitions AS d
     WHERE d.name OPERATOR(pg_catalog.=) r.definition AND d.version OPERATOR(pg_catalog.=) r.version;

    IF r.kind OPERATOR(pg_catalog.=) 'machine' THEN
        -- the path: each step's state, and the transition its event took
        -- (through the waiting states the run passed, which have no task)
        WITH steps AS (
            SELECT t.body OPERATOR(pg_catalog.->>) 'state' AS state, t.status AS event, t.status_code,
                   pg_catalog.row_number() OVER (ORDER BY t.seq) AS k
              FROM taskq.tasks AS t
             WHERE t.workflow OPERATOR(pg_catalog.=) r.id
               AND pg_catalog.starts_with(t.id, r.id OPERATOR(pg_catalog.||) '/')
               -- a map state's items and join are not steps
               AND NOT t.body OPERATOR(pg_catalog.?|) ARRAY['index', 'map_items']
        ), states AS (
            SELECT s.value AS st FROM pg_catalog.jsonb_array_elements(def OPERATOR(pg_catalog.->) 'states') AS s
        ), moves AS (
            -- from a step's state on its event, to the state the definition names
            SELECT a.state AS src, tr.value OPERATOR(pg_catalog.->>) 'to' AS dst, a.event AS label
              FROM steps AS a, states AS s,
                   pg_catalog.jsonb_array_elements(COALESCE(s.st OPERATOR(pg_catalog.->) 'transitions', '[]')) AS tr
             WHERE s.st OPERATOR(pg_catalog.->>) 'name' OPERATOR(pg_catalog.=) a.state
               AND a.status_code OPERATOR(pg_catalog.=) 'completed'
               AND tr.value OPERATOR(pg_catalog.->>) 'event' OPERATOR(pg_catalog.=) a.event
            UNION ALL
            -- out of a waiting state: to the next step's state (by send_event)
            SELECT w.st OPERATOR(pg_catalog.->>) 'name', tr.value OPERATOR(pg_catalog.->>) 'to',
                   tr.value OPERATOR(pg_catalog.->>) 'event'
              FROM steps AS a
              JOIN steps AS b ON b.k OPERATOR(pg_catalog.=) (a.k OPERATOR(pg_catalog.+) 1),
                   states AS w,
                   pg_catalog.jsonb_array_elements(COALESCE(w.st OPERATOR(pg_catalog.->) 'transitions', '[]')) AS tr
             WHERE (w.st OPERATOR(pg_catalog.->) 'action') OPERATOR(pg_catalog.=) 'null'::jsonb
               AND tr.value OPERATOR(pg_catalog.->>) 'to' OPERATOR(pg_catalog.=) b.state
               AND EXISTS (SELECT 1 FROM states AS s2,
                                  pg_catalog.jsonb_array_elements(COALESCE(s2.st OPERATOR(pg_catalog.->) 'transitions', '[]')) AS t2
                            WHERE s2.st OPERATOR(pg_catalog.->>) 'name' OPERATOR(pg_catalog.=) a.state
                              AND t2.value OPERATOR(pg_catalog.->>) 'event' OPERATOR(pg_catalog.=) a.event
                              AND t2.value OPERATOR(pg_catalog.->>) 'to' OPERATOR(pg_catalog.=) (w.st OPERATOR(pg_catalog.->>) 'name'))
            UNION ALL
            -- out of an initial state without a task of its own (a map, child
            -- or waiting state): to the first step's state
            SELECT i.st OPERATOR(pg_catalog.->>) 'name', tr.value OPERATOR(pg_catalog.->>) 'to',
                   tr.value OPERATOR(pg_catalog.->>) 'event'
              FROM steps AS b, states AS i,
                   pg_catalog.jsonb_array_elements(COALESCE(i.st OPERATOR(pg_catalog.->) 'transitions', '[]')) AS tr
             WHERE b.k OPERATOR(pg_catalog.=) 1
               AND (i.st OPERATOR(pg_catalog.->) 'action') OPERATOR(pg_catalog.=) 'null'::jsonb
               AND COALESCE((i.st OPERATOR(pg_catalog.->>) 'initial')::boolean, false)
               AND tr.value OPERATOR(pg_catalog.->>) 'to' OPERATOR(pg_catalog.=) b.state
        ), visited AS (
            SELECT state AS name FROM steps UNION SELECT src FROM moves UNION SELECT dst FROM moves
            UNION SELECT r.state WHERE r.state IS NOT NULL
        )
        SELECT (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                    'key', v.name,
                    'label', v.name OPERATOR(pg_catalog.||) COALESCE(E'\nvisits: ' OPERATOR(pg_catalog.||)
                        NULLIF((SELECT pg_catalog.count(*) FROM steps AS s WHERE s.state OPERATOR(pg_catalog.=) v.name), 0), '')
                        OPERATOR(pg_catalog.||) COALESCE(E'\nchild: ' OPERATOR(pg_catalog.||)
                        (SELECT pg_catalog.string_agg(c.id OPERATOR(pg_catalog.||) ' (' OPERATOR(pg_catalog.||) c.status
                                                      OPERATOR(pg_catalog.||) ')', ', ' ORDER BY c.created_at, c.id)
                           FROM taskq.runs AS c
                          WHERE c.parent OPERATOR(pg_catalog.=) r.id AND st.st OPERATOR(pg_catalog.?) 'child'
                            AND c.definition OPERATOR(pg_catalog.=) (SELECT x.value FROM pg_catalog.jsonb_each_text(st.st OPERATOR(pg_catalog.->) 'child') AS x LIMIT 1)
                            AND c.id OPERATOR(pg_catalog.~) '/k[0-9]+$'), '')
                        -- a map state: its items by status
                        OPERATOR(pg_catalog.||) COALESCE((SELECT E'\nitems: ' OPERATOR(pg_catalog.||) pg_catalog.string_agg(
                                   x.n OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) x.code, ', ' ORDER BY x.code)
                              FROM (SELECT t.status_code::text AS code, pg_catalog.count(*) AS n FROM taskq.tasks AS t
                                     WHERE t.workflow OPERATOR(pg_catalog.=) r.id
                                       AND t.body OPERATOR(pg_catalog.->>) 'state' OPERATOR(pg_catalog.=) v.name
                                       AND t.body OPERATOR(pg_catalog.?) 'index' GROUP BY 1) AS x), ''),
                    'initial', COALESCE((st.st OPERATOR(pg_catalog.->>) 'initial')::boolean, false),
                    'final', COALESCE((st.st OPERATOR(pg_catalog.->>) 'final')::boolean, false),
                    'waiting', (st.st OPERATOR(pg_catalog.->) 'action') OPERATOR(pg_catalog.=) 'null'::jsonb
                               AND NOT st.st OPERATOR(pg_catalog.?) 'child' AND NOT st.st OPERATOR(pg_catalog.?) 'map',
                    'current', v.name OPERATOR(pg_catalog.=) r.state,
                    'fill', CASE WHEN v.name OPERATOR(pg_catalog.=) r.state THEN
                                 CASE r.status WHEN 'failed' THEN 'tomato' WHEN 'succeeded' THEN 'palegreen'
                                               WHEN 'cancelled' THEN 'lightgrey' WHEN 'merged' THEN 'lightgrey'
                                               ELSE 'lightblue' END END)
                    ORDER BY st.ord), '[]')
                  FROM visited AS v
                  JOIN (SELECT s.value AS st, s.ordinality AS ord
                          FROM pg_catalog.jsonb_array_elements(def OPERATOR(pg_catalog.->) 'states') WITH ORDINALITY AS s) AS st
                    ON st.st OPERATOR(pg_catalog.->>) 'name' OPERATOR(pg_catalog.=) v.name),
               (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('key', m.src, 'key2', m.dst,
                    'label', m.label OPERATOR(pg_catalog.||) CASE WHEN m.n OPERATOR(pg_catalog.>) 1 THEN ' x' OPERATOR(pg_catalog.||) m.n ELSE '' END)
                    ORDER BY m.src, m.dst, m.label), '[]')
                  FROM (SELECT src, dst, label, pg_catalog.count(*) AS n FROM moves GROUP BY 1, 2, 3) AS m)
          INTO nodes, edges;
        RETURN taskq._draw('run ' OPERATOR(pg_catalog.||) r.id OPERATOR(pg_catalog.||) ' (' OPERATOR(pg_catalog.||) r.status
                           OPERATOR(pg_catalog.||) ')', format, true, nodes, edges);
    END IF;

    -- a saga: its steps, coloured by what their do and undo did
    SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'key', p.key,
               'label', p.key OPERATOR(pg_catalog.||) COALESCE(E'\nchild: ' OPERATOR(pg_catalog.||) x.child, E'\ndo: ' OPERATOR(pg_catalog.||) COALESCE(x.do_status, 'not started'))
                        OPERATOR(pg_catalog.||) COALESCE(E'\nundo: ' OPERATOR(pg_catalog.||) x.undo_status, ''),
               'fill', CASE WHEN x.undo_status OPERATOR(pg_catalog.=) 'completed' THEN 'khaki'
                            WHEN x.undo_status OPERATOR(pg_catalog.=) 'aborted' THEN 'red'
                            WHEN x.undo_status IS NOT NULL THEN 'orange'
                            WHEN x.do_status OPERATOR(pg_catalog.=) 'completed' THEN 'palegreen'
                            WHEN x.do_status OPERATOR(pg_catalog.=) 'aborted' THEN 'tomato'
                            WHEN x.do_status IS NOT NULL THEN 'lightblue' END) ORDER BY p.ord), '[]')
      INTO nodes
      FROM taskq._definition_parts(def, 'saga', NULL, NULL) AS p
      LEFT JOIN LATERAL (
          SELECT (SELECT t.status_code::text FROM taskq.tasks AS t
                   WHERE t.workflow OPERATOR(pg_catalog.=) r.id AND t.body OPERATOR(pg_catalog.->>) 'step' OPERATOR(pg_catalog.=) p.key
                     AND t.body OPERATOR(pg_catalog.->>) 'direction' OPERATOR(pg_catalog.=) 'do' ORDER BY t.seq DESC LIMIT 1) AS do_status,
                 (SELECT t.status_code::text FROM taskq.tasks AS t
                   WHERE t.workflow OPERATOR(pg_catalog.=) r.id AND t.body OPERATOR(pg_catalog.->>) 'step' OPERATOR(pg_catalog.=) p.key
                     AND t.body OPERATOR(pg_catalog.->>) 'direction' OPERATOR(pg_catalog.=) 'undo' ORDER BY t.seq DESC LIMIT 1) AS undo_status,
                 (SELECT c.id OPERATOR(pg_catalog.||) ' (' OPERATOR(pg_catalog.||) c.status OPERATOR(pg_catalog.||) ')'
                    FROM taskq.saga_steps AS ss JOIN taskq.runs AS c ON c.id OPERATOR(pg_catalog.=) ss.do_task
                   WHERE ss.run OPERATOR(pg_catalog.=) r.id AND ss.step OPERATOR(pg_catalog.=) p.key
                     AND c.parent OPERATOR(pg_catalog.=) r.id) AS child
      ) AS x ON true
     WHERE p.part OPERATOR(pg_catalog.=) 'node';
    SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('key', p.key, 'key2', p.key2) ORDER BY p.ord), '[]')
      INTO edges
      FROM taskq._definition_parts(def, 'saga', NULL, NULL) AS p WHERE p.part OPERATOR(pg_catalog.=) 'edge';
    RETURN taskq._draw('run ' OPERATOR(pg_catalog.||) r.id OPERATOR(pg_catalog.||) ' (' OPERATOR(pg_catalog.||) r.status
                       OPERATOR(pg_catalog.||) ')', format, false, nodes, edges);
END
$$;
COMMENT ON FUNCTION taskq.run_graph(text, text) IS
    'one run as a DOT or Mermaid graph: the path a machine took, or a saga''s steps coloured by do and undo';
REVOKE ALL ON FUNCTION taskq.run_graph(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.run_graph(text, text) TO taskq_producer, taskq_admin;

-- ---------------------------------------------------------------------
-- Definitions stored under a version the caller gives, and redrive_run of
-- a dismal saga.
-- ---------------------------------------------------------------------
DROP FUNCTION taskq.define_machine(text, jsonb);
CREATE FUNCTION taskq.define_machine(name text, definition jsonb, version integer DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'taskq_define_machine_sql'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.define_machine(text, jsonb, integer) IS
    'store a state machine (checked whole) as the next version of name, or under the version given (the same definition there: a no-op); returns the version';
REVOKE ALL ON FUNCTION taskq.define_machine(text, jsonb, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.define_machine(text, jsonb, integer) TO taskq_admin;

COMMENT ON FUNCTION taskq.redrive_run(text) IS
    'give a failed state machine run another life from the state that failed (returns its state), or continue the undo of a dismal saga (returns its status)';

DROP FUNCTION taskq.define_saga(text, jsonb);
CREATE FUNCTION taskq.define_saga(name text, definition jsonb, version integer DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'taskq_define_saga_sql'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.define_saga(text, jsonb, integer) IS
    'store a saga (checked whole) as the next version of name, or under the version given (the same definition there: a no-op); returns the version';
REVOKE ALL ON FUNCTION taskq.define_saga(text, jsonb, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.define_saga(text, jsonb, integer) TO taskq_admin;

-- Monitors (the web console's read-only role among them) browse tasks by
-- their indexed columns and see their shape; a task's body and result (the
-- application's data) and its performance token stay with producers,
-- workers and admins, as a run's context does.
GRANT SELECT (id, action, status_code, status, num_tries, max_tries, num_signals, total_dependencies,
              to_signal_after, actor_id, action_deadline, post_result, priority, not_before,
              created_at, finished_at, seq, spontaneous, retry, workflow, cancelled, "trigger",
              num_completed, num_failed, claimed_at, concurrency_key)
    ON taskq.tasks TO taskq_monitor;
-- The pictures of task graphs and runs are monitoring too (definitions: below).
GRANT EXECUTE ON FUNCTION taskq.run_graph(text, text) TO taskq_monitor;
GRANT EXECUTE ON FUNCTION taskq.task_graph(text, text) TO taskq_monitor;

-- definition_graph reads its parts (and their live figures) once; a monitor
-- may draw it.
DROP FUNCTION taskq.definition_graph(text, text, integer);
CREATE FUNCTION taskq.definition_graph(name text, format text DEFAULT 'dot', version integer DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    d record;
BEGIN
    PERFORM taskq._graph_format(format);
    IF name IS NULL THEN
        RAISE EXCEPTION 'argument "name" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT x.kind, x.version AS v, x.definition AS def INTO d FROM taskq.definitions AS x
     WHERE x.name OPERATOR(pg_catalog.=) definition_graph.name
       AND (definition_graph.version IS NULL OR x.version OPERATOR(pg_catalog.=) definition_graph.version)
     ORDER BY x.version DESC LIMIT 1;
    IF NOT FOUND THEN
        IF definition_graph.version IS NULL THEN
            RAISE EXCEPTION 'definition "%" does not exist', name USING ERRCODE = 'undefined_object';
        END IF;
        RAISE EXCEPTION 'definition "%" has no version %', name, definition_graph.version
            USING ERRCODE = 'undefined_object';
    END IF;
    -- the parts once (their live figures cost a read of the definition's runs)
    RETURN (WITH p AS MATERIALIZED (SELECT * FROM taskq._definition_parts(d.def, d.kind, name, d.v))
            SELECT taskq._draw(name OPERATOR(pg_catalog.||) ' v' OPERATOR(pg_catalog.||) d.v, format,
        d.kind OPERATOR(pg_catalog.=) 'machine',
        (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('key', p.key, 'label', p.label,
                    'initial', p.initial, 'final', p.final, 'waiting', p.waiting) ORDER BY p.ord), '[]')
           FROM p WHERE p.part OPERATOR(pg_catalog.=) 'node'),
        (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('key', p.key, 'key2', p.key2,
                    'label', p.label) ORDER BY p.ord), '[]')
           FROM p WHERE p.part OPERATOR(pg_catalog.=) 'edge')));
END
$$;
COMMENT ON FUNCTION taskq.definition_graph(text, text, integer) IS
    'a state machine or saga (latest version, or version) as a DOT or Mermaid graph, with live figures';
REVOKE ALL ON FUNCTION taskq.definition_graph(text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.definition_graph(text, text, integer) TO taskq_producer, taskq_admin, taskq_monitor;
