--
-- Setup shared by the whole suite (every file runs in the one database
-- contrib_regression, in sorted order, so later files see what this one
-- defines).  Also checks what CREATE EXTENSION installed.
--

-- Errors are shown as "SQLSTATE: message", without unstable details, and
-- every error caught is logged so that zz_summary can show that no
-- internal error (class XX) ever appeared.
CREATE TABLE public.seen_errors (sqlstate text NOT NULL, message text NOT NULL);

CREATE FUNCTION public.expect_error(cmd text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE cmd;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    INSERT INTO public.seen_errors VALUES (SQLSTATE, SQLERRM);
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;

-- The innermost context line of the error a command raises (the task named
-- by insert_tasks' errors).
CREATE FUNCTION public.error_context(cmd text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    ctx text;
BEGIN
    EXECUTE cmd;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    INSERT INTO public.seen_errors VALUES (SQLSTATE, SQLERRM);
    GET STACKED DIAGNOSTICS ctx = PG_EXCEPTION_CONTEXT;
    RETURN SQLSTATE || ' / ' || split_part(ctx, E'\n', 1);
END
$$;

-- The last token handed out for each task, kept by public.own() so that
-- tests can return tasks without printing tokens.
CREATE TABLE public.tokens (id text PRIMARY KEY, token uuid NOT NULL);

-- own_tasks, printing what is stable: claim order, id, action, body,
-- num_tries, whether the token is fresh and the one stored, and where the
-- deadline is.
CREATE FUNCTION public.own(p_actor text, p_max int, p_actions text[] DEFAULT NULL,
                           p_duration interval DEFAULT NULL)
RETURNS TABLE (n bigint, id text, action text, body jsonb, num_tries int,
               fresh_token boolean, deadline text)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    prev uuid;
BEGIN
    FOR r IN SELECT o.*
               FROM taskq.own_tasks(p_actor, p_max, p_actions, p_duration)
                    WITH ORDINALITY AS o
              ORDER BY o.ordinality
    LOOP
        SELECT k.token INTO prev FROM public.tokens AS k WHERE k.id = r.id;
        INSERT INTO public.tokens AS k VALUES (r.id, r.token)
            ON CONFLICT ON CONSTRAINT tokens_pkey DO UPDATE SET token = EXCLUDED.token;
        n := r.ordinality;
        id := r.id;
        action := r.action;
        body := r.body;
        num_tries := r.num_tries;
        fresh_token := r.token IS NOT NULL AND r.token IS DISTINCT FROM prev
            AND r.token = (SELECT t.performance_token FROM taskq.tasks AS t
                            WHERE t.id = r.id);
        deadline := CASE WHEN r.action_deadline IS NULL THEN 'none'
                         WHEN r.action_deadline > now() THEN 'future'
                         ELSE 'past' END;
        RETURN NEXT;
    END LOOP;
END
$$;

-- return_task with the last token own() saw for the task.
CREATE FUNCTION public.ret(p_id text, p_code taskq.status, p_status text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM taskq.return_task(p_id, (SELECT k.token FROM public.tokens AS k WHERE k.id = p_id),
                              p_status, p_code);
    RETURN 'returned';
END
$$;

-- The stored tasks, without anything time- or random-dependent.
CREATE VIEW public.tq AS
SELECT id, action, status_code, status, num_tries, max_tries, num_signals,
       total_dependencies AS deps, to_signal_after AS succ, actor_id,
       performance_token IS NOT NULL AS has_token,
       CASE WHEN action_deadline IS NULL THEN 'none'
            WHEN action_deadline > now() THEN 'future' ELSE 'past' END AS deadline,
       finished_at IS NOT NULL AS finished
  FROM taskq.tasks
 ORDER BY id;

-- What CREATE EXTENSION installed.
SELECT extname, extversion, extrelocatable, extnamespace::regnamespace
  FROM pg_extension WHERE extname = 'taskq';

-- The task table and its sequence are configuration tables: pg_dump dumps
-- their contents.
SELECT c::regclass AS extconfig, cond
  FROM pg_extension AS e,
       unnest(e.extconfig, e.extcondition) AS u(c, cond)
 WHERE e.extname = 'taskq'
 ORDER BY c::regclass::text COLLATE "C";

-- Every function of the API, with its signature and result (functions added
-- later are not listed here).
SELECT p.proname, pg_get_function_arguments(p.oid) AS arguments,
       pg_get_function_result(p.oid) AS result
  FROM pg_proc AS p
 WHERE p.pronamespace = 'taskq'::regnamespace
   AND p.proname IN ('insert_tasks', 'replace_tasks', 'own_tasks', 'extend_ownership',
                     'return_task', 'return_tasks', 'add_dependencies',
                     'wait_for_task', 'chain', 'group', 'chord')
 ORDER BY p.proname;

-- The columns of taskq.tasks that the contract names, and ours (seq,
-- spontaneous).
SELECT attname, format_type(atttypid, atttypmod) AS type, attnotnull
  FROM pg_attribute
 WHERE attrelid = 'taskq.tasks'::regclass AND attnum > 0 AND NOT attisdropped
   AND attname IN ('id', 'action', 'body', 'status_code', 'status', 'num_tries',
                   'max_tries', 'num_signals', 'total_dependencies',
                   'to_signal_after', 'actor_id', 'action_deadline',
                   'performance_token', 'post_result', 'priority', 'not_before',
                   'created_at', 'finished_at', 'seq', 'spontaneous')
 ORDER BY attnum;

SELECT enum_range(NULL::taskq.status);

-- The views.
SELECT c.relname, array_agg(a.attname ORDER BY a.attnum) AS columns
  FROM pg_class AS c JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0
 WHERE c.relnamespace = 'taskq'::regnamespace
   AND c.relname IN ('action_stats', 'tasks_in_progress')
 GROUP BY c.relname ORDER BY c.relname;

-- The library is preloaded (wait_for_task needs its shared memory).
SELECT current_setting('shared_preload_libraries') ~ 'taskq' AS preloaded;

SELECT count(*) AS tasks FROM taskq.tasks;
