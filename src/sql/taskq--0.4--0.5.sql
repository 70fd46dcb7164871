/*
 * taskq 0.4 -> 0.5: trigger rules, results and task graphs (the block at
 * the end); release_task; an error in chord's join names argument "join".  The
 * join is inserted in one batch after the tasks, so insert_tasks named it
 * the last task of argument "tasks"; chord now checks the join on its own
 * first (taskq._check_task) and its id against the tasks and the stored
 * tasks.  chord is dropped and created again: an update script never
 * replaces an object in place.
 * Same rules as the install script (test/static/install_scripts.sh); the
 * objects are as in taskq.sql, word for word.
 */
\echo Use "ALTER EXTENSION taskq UPDATE TO '0.5'" to load this file. \quit

-- The checks insert_tasks makes on each task object (the same C parser),
-- made on an argument that holds one task object, chord's join, before it
-- joins a batch: an error then names the argument and the task in its
-- context line, where insert_tasks would name the task's place in argument
-- "tasks".
CREATE FUNCTION taskq._check_task(task jsonb, argname text)
RETURNS void
AS 'MODULE_PATHNAME', 'taskq_check_task'
LANGUAGE C STABLE;
COMMENT ON FUNCTION taskq._check_task(jsonb, text) IS
    'internal: raise insert_tasks'' error for a malformed task object, naming the argument that holds it';
REVOKE ALL ON FUNCTION taskq._check_task(jsonb, text) FROM PUBLIC;

DROP FUNCTION taskq.chord(jsonb, jsonb, text[]);

CREATE FUNCTION taskq.chord(tasks jsonb, "join" jsonb, after_ids text[] DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    join_id text;
    ids text[];
    linked jsonb;
    twin integer;
BEGIN
    PERFORM taskq._check_task_array(tasks, 'tasks');
    -- The join goes into the batch after the tasks, where insert_tasks'
    -- errors would call it the last task of argument "tasks": it is checked
    -- on its own first, as argument "join", and so is its id.
    PERFORM taskq._check_task("join", 'join');
    join_id := "join" OPERATOR(pg_catalog.->>) 'id';
    ids := taskq._ids(tasks);
    twin := pg_catalog.array_position(ids, join_id);
    IF twin IS NOT NULL THEN
        RAISE EXCEPTION 'task "%" appears in both argument "tasks" and argument "join"', join_id
            USING ERRCODE = 'unique_violation',
                  DETAIL = pg_catalog.format('Task %s of argument "tasks" has the id of the join.', twin);
    END IF;
    IF EXISTS (SELECT 1 FROM taskq.tasks AS t WHERE t.id OPERATOR(pg_catalog.=) join_id) THEN
        RAISE EXCEPTION 'task "%" already exists', join_id
            USING ERRCODE = 'unique_violation',
                  DETAIL = 'Argument "join" has the id of a stored task.',
                  HINT = 'Use taskq.replace_tasks to replace a task that is not in progress.';
    END IF;
    SELECT COALESCE(pg_catalog.jsonb_agg(taskq._add_successor(t.value, join_id)
                                         ORDER BY t.ord), '[]'::jsonb)
      INTO linked
      FROM pg_catalog.jsonb_array_elements(tasks) WITH ORDINALITY AS t(value, ord);
    RETURN taskq._insert_after(linked OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_array("join"),
                               after_ids, ids);
END
$$;
COMMENT ON FUNCTION taskq.chord(jsonb, jsonb, text[]) IS
    'insert tasks that run in parallel (after every id of after_ids) and a join task that runs after all of them';
REVOKE ALL ON FUNCTION taskq.chord(jsonb, jsonb, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.chord(jsonb, jsonb, text[]) TO taskq_producer, taskq_admin;

-- release_task: an owned task given back without counting the try.
CREATE FUNCTION taskq.release_task(id text, token uuid)
RETURNS void
AS 'MODULE_PATHNAME', 'taskq_release_task'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.release_task(text, uuid) IS
    'give an owned task back, ready again at once, without counting the try (a worker shutting down)';
REVOKE ALL ON FUNCTION taskq.release_task(text, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.release_task(text, uuid) TO taskq_worker, taskq_admin;

/* =====================================================================
 * DAGs: trigger rules on dependency edges, results passed to successors,
 * the picture of a task graph; monitoring tells skipped tasks apart.
 * ===================================================================== */

-- When a task with predecessors may run (its "trigger"): the rule belongs
-- to the successor and is settled by its counts, in the transaction that
-- finishes the deciding predecessor.
CREATE TYPE taskq.trigger_rule AS ENUM ('all_success', 'all_done', 'one_failed', 'one_success');
COMMENT ON TYPE taskq.trigger_rule IS
    'when a task with predecessors runs: all_success, all_done, one_failed, one_success';

ALTER TABLE taskq.tasks
    ADD COLUMN "trigger" taskq.trigger_rule NOT NULL DEFAULT 'all_success'::taskq.trigger_rule,
    ADD COLUMN num_completed integer NOT NULL DEFAULT 0,
    ADD COLUMN num_failed integer NOT NULL DEFAULT 0,
    ADD COLUMN result jsonb;
COMMENT ON COLUMN taskq.tasks."trigger" IS 'when the task runs, from its predecessors'' outcomes: all_success, all_done, one_failed, one_success';
COMMENT ON COLUMN taskq.tasks.num_completed IS 'predecessors whose completion was counted';
COMMENT ON COLUMN taskq.tasks.num_failed IS 'predecessors whose abort was counted';
COMMENT ON COLUMN taskq.tasks.result IS 'what the last return gave as result (at most 1 MiB), for wait_for_task and the successors';

-- A task's predecessors, through their successors (predecessor_results).
-- No claim or return changes to_signal_after: their updates stay HOT.
CREATE INDEX tasks_successors_idx ON taskq.tasks USING gin (to_signal_after)
    WHERE to_signal_after IS NOT NULL;

DROP FUNCTION taskq.return_task(text, uuid, text, taskq.status, interval);

CREATE FUNCTION taskq.return_task(id text, token uuid, status text, status_code taskq.status,
                                  retry_delay interval DEFAULT NULL, result jsonb DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'taskq_return_task'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.return_task(text, uuid, text, taskq.status, interval, jsonb) IS
    'return an owned task as completed, aborted or pending (retry, after retry_delay or its backoff), with its result';
REVOKE ALL ON FUNCTION taskq.return_task(text, uuid, text, taskq.status, interval, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.return_task(text, uuid, text, taskq.status, interval, jsonb) TO taskq_worker, taskq_admin;

DROP FUNCTION taskq.return_tasks(text[], uuid[], text[], taskq.status[]);

CREATE FUNCTION taskq.return_tasks(ids text[], tokens uuid[], statuses text[],
                                   status_codes taskq.status[], results jsonb[] DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'taskq_return_tasks'
LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.return_tasks(text[], uuid[], text[], taskq.status[], jsonb[]) IS
    'return many owned tasks in one call, all or none, with their results';
REVOKE ALL ON FUNCTION taskq.return_tasks(text[], uuid[], text[], taskq.status[], jsonb[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.return_tasks(text[], uuid[], text[], taskq.status[], jsonb[]) TO taskq_worker, taskq_admin;

DROP FUNCTION taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval);

CREATE FUNCTION taskq.return_and_own(ids text[], tokens uuid[], statuses text[],
                                     status_codes taskq.status[], actor text,
                                     max_tasks integer, actions text[],
                                     max_duration interval DEFAULT NULL,
                                     results jsonb[] DEFAULT NULL)
RETURNS TABLE (id text, token uuid, action text, body jsonb, num_tries integer,
               action_deadline timestamptz)
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

CREATE FUNCTION taskq.predecessor_results(id text, token uuid)
RETURNS TABLE (id text, status_code taskq.status, status text, result jsonb)
AS 'MODULE_PATHNAME', 'taskq_predecessor_results'
LANGUAGE C STABLE ROWS 10
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.predecessor_results(text, uuid) IS
    'the id, outcome, status and result of each direct predecessor of a task the caller owns (token-checked)';
REVOKE ALL ON FUNCTION taskq.predecessor_results(text, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.predecessor_results(text, uuid) TO taskq_worker, taskq_admin;

-- A name quoted for DOT (a double-quoted ID) or Mermaid (a quoted label,
-- entity codes for the characters that mean something there).
CREATE FUNCTION taskq._graph_quote(name text, format text)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE format
        WHEN 'dot' THEN '"' OPERATOR(pg_catalog.||)
            pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(
                pg_catalog.replace(name, E'\\', E'\\\\'), '"', E'\\"'),
                E'\n', E'\\n'), E'\r', E'\\r'), E'\t', ' ')
            OPERATOR(pg_catalog.||) '"'
        ELSE '"' OPERATOR(pg_catalog.||)
            pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(
                pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(
                    pg_catalog.replace(name, '#', '#35;'), '"', '#quot;'), '<', '#lt;'),
                    '>', '#gt;'), '`', '#96;'), E'\n', ' '), E'\r', ' '), E'\t', ' ')
            OPERATOR(pg_catalog.||) '"'
    END
$$;
COMMENT ON FUNCTION taskq._graph_quote(text, text) IS
    'internal: a name quoted and escaped for DOT or Mermaid';
REVOKE ALL ON FUNCTION taskq._graph_quote(text, text) FROM PUBLIC;

CREATE FUNCTION taskq.task_graph(workflow text, format text DEFAULT 'dot')
RETURNS text
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    nodes text;
    edges text;
BEGIN
    IF workflow IS NULL THEN
        RAISE EXCEPTION 'argument "workflow" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF format IS NULL OR format OPERATOR(pg_catalog.<>) ALL (ARRAY['dot', 'mermaid']) THEN
        RAISE EXCEPTION 'unknown graph format "%"', format
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'The formats are dot and mermaid.';
    END IF;
    -- The tasks in id order, numbered (Mermaid's node names), each with the
    -- state shown: ready is a pending task nothing holds back; skipped is an
    -- abort by a trigger rule.  Edges between tasks of the workflow only.
    WITH g AS (
        SELECT pg_catalog.row_number() OVER (ORDER BY t.id) AS n, t.id, t.action,
               CASE WHEN t.status_code OPERATOR(pg_catalog.=) 'aborted'::taskq.status
                     AND t.status OPERATOR(pg_catalog.=) 'skipped' THEN 'skipped'
                    WHEN t.status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status
                     AND t.num_signals OPERATOR(pg_catalog.=) 0 THEN 'ready'
                    ELSE t.status_code::text END AS state,
               t."trigger"::text AS rule, t.to_signal_after AS succ
          FROM taskq.tasks AS t
         WHERE t.workflow OPERATOR(pg_catalog.=) task_graph.workflow),
    e AS (
        SELECT a.n AS src_n, a.id AS src, b.n AS dst_n, b.id AS dst, b.rule, s.ord
          FROM g AS a
          CROSS JOIN LATERAL pg_catalog.unnest(a.succ) WITH ORDINALITY AS s(id, ord)
          JOIN g AS b ON b.id OPERATOR(pg_catalog.=) s.id)
    SELECT (SELECT pg_catalog.string_agg(
                CASE format
                WHEN 'dot' THEN
                    '  ' OPERATOR(pg_catalog.||) taskq._graph_quote(g.id, 'dot')
                    OPERATOR(pg_catalog.||) ' [label=' OPERATOR(pg_catalog.||)
                    taskq._graph_quote(g.id OPERATOR(pg_catalog.||) E'\n' OPERATOR(pg_catalog.||) g.action
                                       OPERATOR(pg_catalog.||) E'\n' OPERATOR(pg_catalog.||) g.state, 'dot')
                    OPERATOR(pg_catalog.||) ', fillcolor="' OPERATOR(pg_catalog.||)
                    CASE g.state WHEN 'completed' THEN '#b7e1a1' WHEN 'aborted' THEN '#f4a6a6'
                                 WHEN 'skipped' THEN '#dddddd' WHEN 'in_progress' THEN '#a6c8f4'
                                 WHEN 'ready' THEN '#fff2a8' ELSE '#ffffff' END
                    OPERATOR(pg_catalog.||) '"' OPERATOR(pg_catalog.||)
                    CASE WHEN g.state OPERATOR(pg_catalog.=) 'skipped'
                         THEN ', fontcolor="#666666", style="rounded,filled,dashed"' ELSE '' END
                    OPERATOR(pg_catalog.||) E'];\n'
                ELSE
                    '  t' OPERATOR(pg_catalog.||) g.n::text OPERATOR(pg_catalog.||) '['
                    OPERATOR(pg_catalog.||)
                    taskq._graph_quote(g.id OPERATOR(pg_catalog.||) ' (' OPERATOR(pg_catalog.||) g.action
                                       OPERATOR(pg_catalog.||) ') ' OPERATOR(pg_catalog.||) g.state, 'mermaid')
                    OPERATOR(pg_catalog.||) ']:::' OPERATOR(pg_catalog.||) g.state OPERATOR(pg_catalog.||) E'\n'
                END, '' ORDER BY g.n) FROM g),
           (SELECT pg_catalog.string_agg(
                CASE format
                WHEN 'dot' THEN
                    '  ' OPERATOR(pg_catalog.||) taskq._graph_quote(e.src, 'dot')
                    OPERATOR(pg_catalog.||) ' -> ' OPERATOR(pg_catalog.||) taskq._graph_quote(e.dst, 'dot')
                    OPERATOR(pg_catalog.||) ' [label="' OPERATOR(pg_catalog.||) e.rule
                    OPERATOR(pg_catalog.||) E'"];\n'
                ELSE
                    '  t' OPERATOR(pg_catalog.||) e.src_n::text OPERATOR(pg_catalog.||) ' -->|'
                    OPERATOR(pg_catalog.||) e.rule OPERATOR(pg_catalog.||) '| t'
                    OPERATOR(pg_catalog.||) e.dst_n::text OPERATOR(pg_catalog.||) E'\n'
                END, '' ORDER BY e.src_n, e.ord) FROM e)
      INTO nodes, edges;
    IF format OPERATOR(pg_catalog.=) 'dot' THEN
        RETURN 'digraph ' OPERATOR(pg_catalog.||) taskq._graph_quote(workflow, 'dot')
            OPERATOR(pg_catalog.||) E' {\n  rankdir=LR;\n'
            OPERATOR(pg_catalog.||) E'  node [shape=box, style="rounded,filled", fontname="Helvetica"];\n'
            OPERATOR(pg_catalog.||) E'  edge [fontname="Helvetica", fontsize=10];\n'
            OPERATOR(pg_catalog.||) COALESCE(nodes, '') OPERATOR(pg_catalog.||) COALESCE(edges, '')
            OPERATOR(pg_catalog.||) E'}\n';
    END IF;
    RETURN E'flowchart LR\n' OPERATOR(pg_catalog.||) COALESCE(nodes, '')
        OPERATOR(pg_catalog.||) COALESCE(edges, '')
        OPERATOR(pg_catalog.||) E'  classDef pending fill:#ffffff,stroke:#333\n'
        OPERATOR(pg_catalog.||) E'  classDef ready fill:#fff2a8,stroke:#333\n'
        OPERATOR(pg_catalog.||) E'  classDef in_progress fill:#a6c8f4,stroke:#333\n'
        OPERATOR(pg_catalog.||) E'  classDef completed fill:#b7e1a1,stroke:#333\n'
        OPERATOR(pg_catalog.||) E'  classDef aborted fill:#f4a6a6,stroke:#333\n'
        OPERATOR(pg_catalog.||) E'  classDef skipped fill:#dddddd,stroke:#999,color:#666\n';
END
$$;
COMMENT ON FUNCTION taskq.task_graph(text, text) IS
    'the tasks of a workflow key and their edges, in DOT or Mermaid: tasks coloured by state, edges labelled with the successor''s trigger rule';
REVOKE ALL ON FUNCTION taskq.task_graph(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.task_graph(text, text) TO taskq_producer, taskq_admin;

DROP FUNCTION taskq.purge_finished(interval);

CREATE FUNCTION taskq.purge_finished(older_than interval DEFAULT '0 s')
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n bigint;
BEGIN
    IF older_than IS NULL THEN
        RAISE EXCEPTION 'argument "older_than" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF older_than OPERATOR(pg_catalog.<) '0 s'::interval THEN
        RAISE EXCEPTION 'argument "older_than" must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    DELETE FROM taskq.tasks AS t
     WHERE t.status_code OPERATOR(pg_catalog.>=) 'completed'::taskq.status
       AND t.finished_at OPERATOR(pg_catalog.<=) (pg_catalog.now() OPERATOR(pg_catalog.-) older_than)
       AND t.num_signals OPERATOR(pg_catalog.=) 0
       AND (t."trigger" OPERATOR(pg_catalog.<) 'one_failed'::taskq.trigger_rule
            OR t.num_completed OPERATOR(pg_catalog.+) t.num_failed
               OPERATOR(pg_catalog.>=) t.total_dependencies)
       AND (t.result IS NULL OR t.to_signal_after IS NULL
            OR NOT EXISTS (SELECT FROM taskq.tasks AS s
                            WHERE s.id OPERATOR(pg_catalog.=) ANY (t.to_signal_after)
                              AND s.status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status));
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION taskq.purge_finished(interval) IS
    'delete finished tasks older than older_than that no unfinished task still names; returns how many';
REVOKE ALL ON FUNCTION taskq.purge_finished(interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.purge_finished(interval) TO taskq_admin;

DROP VIEW taskq.action_stats;

CREATE VIEW taskq.action_stats AS
SELECT t.action,
       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'pending'
                                     AND t.num_signals OPERATOR(pg_catalog.=) 0
                                     AND t.not_before OPERATOR(pg_catalog.<=) pg_catalog.now()
                                     AND t.performance_token IS NULL) AS ready,
       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'pending'
                                     AND t.num_signals OPERATOR(pg_catalog.>) 0) AS blocked,
       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'pending'
                                     AND t.num_signals OPERATOR(pg_catalog.=) 0
                                     AND t.not_before OPERATOR(pg_catalog.>) pg_catalog.now()) AS delayed,
       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'in_progress'
                                     AND (t.action_deadline IS NULL
                                          OR t.action_deadline OPERATOR(pg_catalog.>) pg_catalog.now())) AS in_progress,
       pg_catalog.count(*) FILTER (WHERE (t.status_code OPERATOR(pg_catalog.=) 'in_progress'
                                          AND t.action_deadline OPERATOR(pg_catalog.<=) pg_catalog.now())
                                      OR (t.status_code OPERATOR(pg_catalog.=) 'pending'
                                          AND t.performance_token IS NOT NULL
                                          AND t.not_before OPERATOR(pg_catalog.<=) pg_catalog.now())) AS lease_expired,
       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'completed') AS completed,
       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'aborted'
                                     AND t.status IS DISTINCT FROM 'skipped') AS aborted,
       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'aborted'
                                     AND t.status OPERATOR(pg_catalog.=) 'skipped') AS skipped,
       pg_catalog.now() OPERATOR(pg_catalog.-)
           pg_catalog.min(t.not_before) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'pending'
                                                  AND t.num_signals OPERATOR(pg_catalog.=) 0
                                                  AND t.not_before OPERATOR(pg_catalog.<=) pg_catalog.now()
                                                  AND t.performance_token IS NULL)
           AS oldest_ready_age
  FROM taskq.tasks AS t
 GROUP BY t.action;
COMMENT ON VIEW taskq.action_stats IS
    'per action: tasks ready, blocked on dependencies, delayed, in progress, with an expired lease, completed, aborted, skipped by a trigger rule, and how long the oldest ready task has waited';
GRANT SELECT ON taskq.action_stats TO taskq_monitor, taskq_admin;

DROP VIEW taskq.dead_letters;

CREATE VIEW taskq.dead_letters AS
SELECT t.id, t.action, t.status, t.num_tries, t.max_tries, t.workflow, t.cancelled,
       t.finished_at
  FROM taskq.tasks AS t
 WHERE t.status_code OPERATOR(pg_catalog.=) 'aborted'::taskq.status
   AND t.status IS DISTINCT FROM 'skipped'
 ORDER BY t.finished_at DESC, t.id;
COMMENT ON VIEW taskq.dead_letters IS
    'aborted tasks (not those a trigger rule skipped) with their last status and tries; re-drive them with taskq.redrive_tasks';
GRANT SELECT ON taskq.dead_letters TO taskq_monitor, taskq_admin;
