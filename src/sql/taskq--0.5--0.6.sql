/*
 * taskq 0.5 -> 0.6: the statistics of runs count execution, not the wait
 * in the queue.  taskq.tasks gains claimed_at, the moment the last try was
 * claimed (every claim sets it; NULL until the first); run_steps' started_at
 * is that moment, and state_stats' seconds run from it to the successful
 * finish, with a saga's undo of a step in a row of its own ("<step>:undo").
 * run_steps and state_stats are dropped and created again: an update
 * script never replaces an object in place.
 * Same rules as the install script (test/static/install_scripts.sh); the
 * objects are as in taskq.sql, word for word.
 */
\echo Use "ALTER EXTENSION taskq UPDATE TO '0.6'" to load this file. \quit

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
-- "<step>:undo", after the step's.
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
