/*
 * taskq 0.4 -> 0.5: release_task; own_tasks gains wait (a claim that
 * sleeps until work is ready); an error in chord's join names argument "join".  The
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

-- own_tasks gains wait: a claim that sleeps until work of its actions is ready.
DROP FUNCTION taskq.own_tasks(text, integer, text[], interval);

CREATE FUNCTION taskq.own_tasks(actor text, max_tasks integer, actions text[],
                                max_duration interval DEFAULT NULL,
                                wait interval DEFAULT NULL)
RETURNS TABLE (id text, token uuid, action text, body jsonb, num_tries integer,
               action_deadline timestamptz)
AS 'MODULE_PATHNAME', 'taskq_own_tasks'
LANGUAGE C VOLATILE ROWS 10
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION taskq.own_tasks(text, integer, text[], interval, interval) IS
    'claim up to max_tasks ready tasks of the given actions (NULL: any) for actor; with wait, sleep until there are some or the wait passes';
REVOKE ALL ON FUNCTION taskq.own_tasks(text, integer, text[], interval, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.own_tasks(text, integer, text[], interval, interval) TO taskq_worker, taskq_admin;
