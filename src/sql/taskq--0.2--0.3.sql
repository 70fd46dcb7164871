/*
 * taskq 0.2 -> 0.3: return_and_own, a worker's return and next claim in
 * one call (the C side comes with the new module).
 * Same rules as the install script (test/static/install_scripts.sh).
 */
\echo Use "ALTER EXTENSION taskq UPDATE TO '0.3'" to load this file. \quit

CREATE FUNCTION taskq.return_and_own(ids text[], tokens uuid[], statuses text[],
                                     status_codes taskq.status[], actor text,
                                     max_tasks integer, actions text[],
                                     max_duration interval DEFAULT NULL)
RETURNS TABLE (id text, token uuid, action text, body jsonb, num_tries integer,
               action_deadline timestamptz)
AS 'MODULE_PATHNAME', 'taskq_return_and_own'
LANGUAGE C VOLATILE ROWS 10
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval) IS
    'return_tasks, then own_tasks, in one call: a worker''s whole cycle in one round trip and one transaction';
REVOKE ALL ON FUNCTION taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval)
    TO taskq_worker, taskq_admin;
