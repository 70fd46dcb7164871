/*
 * taskq 0.4 -> 0.5: release_task; an error in chord's join names argument "join".  The
 * join is inserted in one batch after the tasks, so insert_tasks named it
 * the last task of argument "tasks"; chord now checks the join on its own
 * first (taskq._check_task) and its id against the tasks and the stored
 * tasks.  chord is dropped and created again: an update script never
 * replaces an object in place.
 * Same rules as the install script (test/static/install_scripts.sh); the
 * objects are as in taskq.sql, word for word.
 */
\echo Use "ALTER EXTENSION taskq UPDATE TO '0.5'" to load this file. \quit

-- The checks insert_tasks makes on each task object, made on an argument
-- that holds one task object (chord's join) before it joins a batch: an
-- error then says which argument it is in (in its DETAIL), where
-- insert_tasks would name the task's place in argument "tasks".  The
-- messages are insert_tasks' own; keep the two in step.
CREATE FUNCTION taskq._check_task(task jsonb, argname text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    task_id text;
    k text;
    v jsonb;
    kind text;
    n text;
    e jsonb;
    s text;
    idents jsonb;
    has_action boolean := false;
    err_state text;
    err_msg text;
    err_detail text;
    err_hint text;
BEGIN
    IF task IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null', argname
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.jsonb_typeof(task) OPERATOR(pg_catalog.<>) 'object' THEN
        RAISE EXCEPTION 'argument "%" must be a JSON task object', argname
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    BEGIN
        -- The id first, then every other key in the object's order.
        FOR k, v IN SELECT 'id', task OPERATOR(pg_catalog.->) 'id'
                    UNION ALL
                    SELECT x.key, x.value FROM pg_catalog.jsonb_each(task) AS x
                     WHERE x.key OPERATOR(pg_catalog.<>) 'id'
        LOOP
            kind := COALESCE(pg_catalog.jsonb_typeof(v), 'null');
            idents := NULL;
            IF k OPERATOR(pg_catalog.=) 'id' THEN
                IF kind OPERATOR(pg_catalog.=) 'null' THEN
                    RAISE EXCEPTION 'key "id" is required'
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                idents := pg_catalog.jsonb_build_array(v);
            ELSIF kind OPERATOR(pg_catalog.=) 'null'
                  AND k OPERATOR(pg_catalog.=) ANY ('{to_signal_after,max_tries,priority,not_before,post_result,spontaneous,status}'::text[]) THEN
                CONTINUE;           -- a known key: null means the default
            ELSIF k OPERATOR(pg_catalog.=) 'action' THEN
                IF kind OPERATOR(pg_catalog.=) 'null' THEN
                    RAISE EXCEPTION 'key "action" is required'
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                has_action := true;
                idents := pg_catalog.jsonb_build_array(v);
            ELSIF k OPERATOR(pg_catalog.=) 'body' THEN
                IF kind OPERATOR(pg_catalog.<>) 'null'
                   AND pg_catalog.pg_column_size(v) OPERATOR(pg_catalog.>) 1048576 THEN
                    RAISE EXCEPTION 'body is too large'
                        USING ERRCODE = 'program_limit_exceeded',
                              DETAIL = pg_catalog.format('A body is at most %s bytes in jsonb form; this one has %s.',
                                                         1048576, pg_catalog.pg_column_size(v));
                END IF;
            ELSIF k OPERATOR(pg_catalog.=) 'to_signal_after' THEN
                IF kind OPERATOR(pg_catalog.<>) 'array' THEN
                    RAISE EXCEPTION 'key "%" must be an array of task ids, not %', k, kind
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                idents := v;
            ELSIF k OPERATOR(pg_catalog.=) ANY ('{max_tries,priority}'::text[]) THEN
                IF kind OPERATOR(pg_catalog.<>) 'number' THEN
                    RAISE EXCEPTION 'key "%" must be an integer, not %', k, kind
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                n := v::text;
                IF n OPERATOR(pg_catalog.!~) '^-?[0-9]+$' THEN
                    RAISE EXCEPTION 'key "%" must be an integer, not %', k, n
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                IF n::numeric NOT BETWEEN -2147483648 AND 2147483647 THEN
                    RAISE EXCEPTION 'value % of key "%" is out of range for type integer', n, k
                        USING ERRCODE = 'numeric_value_out_of_range';
                END IF;
                IF k OPERATOR(pg_catalog.=) 'max_tries' AND n::numeric OPERATOR(pg_catalog.<) 1 THEN
                    RAISE EXCEPTION 'key "max_tries" must be at least 1, or null for unlimited tries'
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
            ELSIF k OPERATOR(pg_catalog.=) 'not_before' THEN
                IF kind OPERATOR(pg_catalog.<>) 'string' THEN
                    RAISE EXCEPTION 'key "%" must be a timestamp string, not %', k, kind
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                PERFORM (v OPERATOR(pg_catalog.#>>) '{}')::timestamptz;
            ELSIF k OPERATOR(pg_catalog.=) ANY ('{post_result,spontaneous}'::text[]) THEN
                IF kind OPERATOR(pg_catalog.<>) 'boolean' THEN
                    RAISE EXCEPTION 'key "%" must be a boolean, not %', k, kind
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
            ELSIF k OPERATOR(pg_catalog.=) 'retry' THEN
                IF kind OPERATOR(pg_catalog.<>) 'object' THEN
                    RAISE EXCEPTION 'key "%" must be an object, not %', k, kind
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                PERFORM taskq._check_retry(v);
            ELSIF k OPERATOR(pg_catalog.=) 'workflow' THEN
                idents := pg_catalog.jsonb_build_array(v);
            ELSIF k OPERATOR(pg_catalog.=) 'status' THEN
                IF kind OPERATOR(pg_catalog.<>) 'string' THEN
                    RAISE EXCEPTION 'key "%" must be a string, not %', k, kind
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
            ELSE
                RAISE EXCEPTION 'unrecognized key "%"', k
                    USING ERRCODE = 'invalid_parameter_value',
                          HINT = 'The keys of a task are id, action, body, to_signal_after, max_tries, priority, not_before, post_result, spontaneous, retry, workflow and status.';
            END IF;
            -- Identifiers (id, action, workflow, the ids of to_signal_after):
            -- non-empty strings of at most 255 bytes.
            FOR e IN SELECT x.value FROM pg_catalog.jsonb_array_elements(idents) AS x LOOP
                IF pg_catalog.jsonb_typeof(e) OPERATOR(pg_catalog.<>) 'string' THEN
                    IF k OPERATOR(pg_catalog.=) 'to_signal_after' THEN
                        RAISE EXCEPTION 'key "%" must be an array of task ids, but it holds a %',
                                        k, pg_catalog.jsonb_typeof(e)
                            USING ERRCODE = 'invalid_parameter_value';
                    END IF;
                    RAISE EXCEPTION 'key "%" must be a string, not %', k, pg_catalog.jsonb_typeof(e)
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                s := e OPERATOR(pg_catalog.#>>) '{}';
                IF s OPERATOR(pg_catalog.=) '' THEN
                    RAISE EXCEPTION 'key "%" must not be an empty string', k
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                IF pg_catalog.octet_length(s) OPERATOR(pg_catalog.>) 255 THEN
                    RAISE EXCEPTION 'value of key "%" is too long', k
                        USING ERRCODE = 'string_data_right_truncation',
                              DETAIL = pg_catalog.format('It is at most 255 bytes; this one has %s.',
                                                         pg_catalog.octet_length(s));
                END IF;
            END LOOP;
            IF k OPERATOR(pg_catalog.=) 'id' THEN
                task_id := s;
            END IF;
        END LOOP;
        IF NOT has_action THEN
            RAISE EXCEPTION 'key "action" is required'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    EXCEPTION WHEN OTHERS THEN
        -- The error as insert_tasks gives it, with the argument named.
        GET STACKED DIAGNOSTICS err_state = RETURNED_SQLSTATE, err_msg = MESSAGE_TEXT,
                                err_detail = PG_EXCEPTION_DETAIL, err_hint = PG_EXCEPTION_HINT;
        err_detail := pg_catalog.concat_ws(' ',
            pg_catalog.format('In argument "%s"%s.', argname,
                              CASE WHEN task_id IS NULL THEN ''
                                   ELSE pg_catalog.format(' (task "%s")', task_id) END),
            NULLIF(err_detail, ''));
        IF err_hint OPERATOR(pg_catalog.=) '' THEN
            RAISE EXCEPTION USING ERRCODE = err_state, MESSAGE = err_msg, DETAIL = err_detail;
        END IF;
        RAISE EXCEPTION USING ERRCODE = err_state, MESSAGE = err_msg, DETAIL = err_detail,
                              HINT = err_hint;
    END;
END
$$;
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
