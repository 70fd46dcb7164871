--
-- Bad input for every function: NULL arguments, malformed task JSON, empty
-- arrays, over-long identifiers, bad counts and intervals, arrays of
-- different lengths.  Every failed call must leave nothing behind.
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

-- A queue with work in every state, so that a call that wrongly went ahead
-- would change something.
SELECT taskq.insert_tasks($$[{"id": "ready", "action": "a", "to_signal_after": ["blocked"]},
    {"id": "blocked", "action": "a"}, {"id": "owned", "action": "o"}]$$);
SELECT n, id FROM public.own('w', 1, '{o}', '1 hour');
CREATE TEMP TABLE before_tasks AS SELECT * FROM taskq.tasks;
CREATE TEMP TABLE before_tokens AS SELECT * FROM public.tokens;
CREATE FUNCTION pg_temp.unchanged() RETURNS boolean LANGUAGE sql AS $$
    SELECT NOT EXISTS (SELECT * FROM taskq.tasks EXCEPT SELECT * FROM before_tasks)
       AND NOT EXISTS (SELECT * FROM before_tasks EXCEPT SELECT * FROM taskq.tasks)
       AND NOT EXISTS (SELECT * FROM public.tokens EXCEPT SELECT * FROM before_tokens)
$$;

-- insert_tasks and replace_tasks parse tasks the same way: each case is
-- tried with both.
CREATE TEMP TABLE json_cases (n serial, label text, arg text);
INSERT INTO json_cases (label, arg) VALUES
    ('NULL argument', NULL),
    ('an object, not an array', '{"id": "x", "action": "a"}'),
    ('a string', '"x"'),
    ('a number', '1'),
    ('JSON null', 'null'),
    ('element: number', '[1]'),
    ('element: string', '["x"]'),
    ('element: null', '[null]'),
    ('element: array', '[[{"id": "x", "action": "a"}]]'),
    ('second element bad', '[{"id": "x", "action": "a"}, true]'),
    ('empty object', '[{}]'),
    ('missing id', '[{"action": "a"}]'),
    ('missing action', '[{"id": "x"}]'),
    ('id null', '[{"id": null, "action": "a"}]'),
    ('action null', '[{"id": "x", "action": null}]'),
    ('id number', '[{"id": 1, "action": "a"}]'),
    ('id boolean', '[{"id": true, "action": "a"}]'),
    ('id array', '[{"id": ["x"], "action": "a"}]'),
    ('id object', '[{"id": {}, "action": "a"}]'),
    ('action number', '[{"id": "x", "action": 7}]'),
    ('id empty', '[{"id": "", "action": "a"}]'),
    ('action empty', '[{"id": "x", "action": ""}]'),
    ('id 256 bytes', '[{"id": "' || repeat('i', 256) || '", "action": "a"}]'),
    ('id 256 bytes in 128 characters', '[{"id": "' || repeat('é', 128) || '", "action": "a"}]'),
    ('action 256 bytes', '[{"id": "x", "action": "' || repeat('a', 256) || '"}]'),
    ('to_signal_after string', '[{"id": "x", "action": "a", "to_signal_after": "ready"}]'),
    ('to_signal_after object', '[{"id": "x", "action": "a", "to_signal_after": {}}]'),
    ('to_signal_after number element', '[{"id": "x", "action": "a", "to_signal_after": [1]}]'),
    ('to_signal_after null element', '[{"id": "x", "action": "a", "to_signal_after": [null]}]'),
    ('to_signal_after empty id', '[{"id": "x", "action": "a", "to_signal_after": [""]}]'),
    ('to_signal_after 256 bytes', '[{"id": "x", "action": "a", "to_signal_after": ["' || repeat('s', 256) || '"]}]'),
    ('max_tries string', '[{"id": "x", "action": "a", "max_tries": "3"}]'),
    ('max_tries boolean', '[{"id": "x", "action": "a", "max_tries": true}]'),
    ('max_tries 1.5', '[{"id": "x", "action": "a", "max_tries": 1.5}]'),
    ('max_tries 0', '[{"id": "x", "action": "a", "max_tries": 0}]'),
    ('max_tries -1', '[{"id": "x", "action": "a", "max_tries": -1}]'),
    ('max_tries 2^31', '[{"id": "x", "action": "a", "max_tries": 2147483648}]'),
    ('max_tries 1e30', '[{"id": "x", "action": "a", "max_tries": 1e30}]'),
    ('priority string', '[{"id": "x", "action": "a", "priority": "1"}]'),
    ('priority 0.5', '[{"id": "x", "action": "a", "priority": 0.5}]'),
    ('priority 1.0', '[{"id": "x", "action": "a", "priority": 1.0}]'),
    ('priority 2^31', '[{"id": "x", "action": "a", "priority": 2147483648}]'),
    ('priority -2^31-1', '[{"id": "x", "action": "a", "priority": -2147483649}]'),
    ('priority array', '[{"id": "x", "action": "a", "priority": [1]}]'),
    ('not_before number', '[{"id": "x", "action": "a", "not_before": 0}]'),
    ('not_before not a time', '[{"id": "x", "action": "a", "not_before": "soon"}]'),
    ('post_result string', '[{"id": "x", "action": "a", "post_result": "true"}]'),
    ('post_result number', '[{"id": "x", "action": "a", "post_result": 1}]'),
    ('spontaneous string', '[{"id": "x", "action": "a", "spontaneous": "yes"}]'),
    ('status number', '[{"id": "x", "action": "a", "status": 1}]'),
    ('status object', '[{"id": "x", "action": "a", "status": {}}]'),
    ('unknown key', '[{"id": "x", "action": "a", "bogus": 1}]'),
    ('unknown key, null', '[{"id": "x", "action": "a", "bogus": null}]'),
    ('misspelt key', '[{"id": "x", "action": "a", "to_signal_afer": ["ready"]}]'),
    ('key in another case', '[{"id": "x", "action": "a", "Priority": 1}]'),
    ('status_code is not a key', '[{"id": "x", "action": "a", "status_code": "completed"}]'),
    ('valid, then bad', '[{"id": "x1", "action": "a"}, {"id": "x2", "action": "a", "priority": "high"}]');

SELECT c.n, c.label, f.fn,
       expect_error(format('SELECT taskq.%s(%L::jsonb)', f.fn, c.arg)) AS error
  FROM json_cases AS c
 CROSS JOIN (VALUES ('insert_tasks'), ('replace_tasks')) AS f(fn)
 ORDER BY c.n, f.fn;
-- The position and id are in the context line.
SELECT c.label, error_context(format('SELECT taskq.insert_tasks(%L::jsonb)', c.arg)) AS context
  FROM json_cases AS c
 WHERE c.label IN ('second element bad', 'missing id', 'max_tries 0', 'unknown key',
                   'not_before not a time', 'valid, then bad')
 ORDER BY c.n;
-- A body over 1 MiB: 54000.
SELECT expect_error(format('SELECT taskq.insert_tasks(%L::jsonb)',
    jsonb_build_array(jsonb_build_object('id', 'big', 'action', 'a', 'body', repeat('x', 1024 * 1024)))));
SELECT pg_temp.unchanged();

-- Limits that are fine: 255 bytes, extreme priorities, 1e2 is an integer.
SELECT taskq.insert_tasks(jsonb_build_array(
    jsonb_build_object('id', repeat('i', 255), 'action', repeat('a', 255)),
    jsonb_build_object('id', repeat('é', 127) || 'x', 'action', 'a', 'priority', 2147483647),
    jsonb_build_object('id', 'lowest', 'action', 'a', 'priority', -2147483648,
                       'max_tries', 2147483647),
    jsonb_build_object('id', 'body_1mib', 'action', 'a', 'body', repeat('x', 1024 * 1024 - 100))));
SELECT taskq.insert_tasks('[{"id": "hundred", "action": "a", "priority": 1e2}]');
SELECT length(id) AS chars, octet_length(id) AS bytes, octet_length(action) AS action_bytes,
       priority, max_tries
  FROM taskq.tasks WHERE id NOT IN ('ready', 'blocked', 'owned') ORDER BY priority, id;
DELETE FROM taskq.tasks WHERE id NOT IN ('ready', 'blocked', 'owned');
SELECT pg_temp.unchanged();

-- Empty arrays are a no-op returning 0 or nothing.
SELECT taskq.insert_tasks('[]'), taskq.replace_tasks('[]'), taskq.chain('[]'),
       taskq."group"('[]'), taskq.add_dependencies('{}', '{}'),
       taskq.return_tasks('{}', '{}', NULL, '{}');
SELECT count(*) FROM taskq.own_tasks('w', 10, '{}');
SELECT count(*) FROM taskq.extend_ownership('w', '{}', '{}', '1 hour');
SELECT pg_temp.unchanged();

-- own_tasks
SELECT expect_error($$SELECT taskq.own_tasks(NULL, 1, NULL)$$);
SELECT expect_error($$SELECT taskq.own_tasks('', 1, NULL)$$);
SELECT expect_error(format('SELECT taskq.own_tasks(%L, 1, NULL)', repeat('w', 256)));
SELECT expect_error($$SELECT taskq.own_tasks('w', NULL, NULL)$$);
SELECT expect_error($$SELECT taskq.own_tasks('w', -1, NULL)$$);
SELECT expect_error($$SELECT taskq.own_tasks('w', 1, ARRAY['a', NULL])$$);
SELECT expect_error($$SELECT taskq.own_tasks('w', 1, ARRAY[NULL]::text[])$$);
SELECT expect_error($$SELECT taskq.own_tasks('w', 1, ARRAY['a', ''])$$);
SELECT expect_error(format('SELECT taskq.own_tasks(%L, 1, ARRAY[%L])', 'w', repeat('a', 256)));
SELECT expect_error($$SELECT taskq.own_tasks('w', 1, NULL, '0')$$);
SELECT expect_error($$SELECT taskq.own_tasks('w', 1, NULL, '-1 second')$$);
SELECT expect_error($$SELECT taskq.own_tasks('w', 1, NULL, '1 day -25 hours')$$);
-- 255 bytes is fine.
SELECT count(*) FROM taskq.own_tasks(repeat('w', 255), 0, ARRAY[repeat('a', 255)]);
SELECT pg_temp.unchanged();

-- extend_ownership
SELECT token AS tok FROM public.tokens WHERE id = 'owned' \gset
SELECT expect_error(format('SELECT taskq.extend_ownership(NULL, %L, %L, %L)', '{owned}', '{' || :'tok' || '}', '1 hour'));
SELECT expect_error(format('SELECT taskq.extend_ownership(%L, NULL, %L, %L)', 'w', '{' || :'tok' || '}', '1 hour'));
SELECT expect_error(format('SELECT taskq.extend_ownership(%L, %L, NULL, %L)', 'w', '{owned}', '1 hour'));
SELECT expect_error(format('SELECT taskq.extend_ownership(%L, %L, %L, NULL)', 'w', '{owned}', '{' || :'tok' || '}'));
SELECT expect_error(format('SELECT taskq.extend_ownership(%L, %L, %L, %L)', 'w', '{owned,NULL}', '{' || :'tok' || ',' || :'tok' || '}', '1 hour'));
SELECT expect_error(format('SELECT taskq.extend_ownership(%L, %L, %L, %L)', 'w', '{owned,ready}', '{' || :'tok' || ',NULL}', '1 hour'));
SELECT expect_error(format('SELECT taskq.extend_ownership(%L, %L, %L, %L)', 'w', '{owned,ready}', '{' || :'tok' || '}', '1 hour'));
SELECT expect_error(format('SELECT taskq.extend_ownership(%L, %L, %L, %L)', 'w', '{owned}', '{}', '1 hour'));
SELECT expect_error(format('SELECT taskq.extend_ownership(%L, %L, %L, %L)', 'w', '{owned}', '{' || :'tok' || '}', '0'));
SELECT expect_error(format('SELECT taskq.extend_ownership(%L, %L, %L, %L)', 'w', '{owned}', '{' || :'tok' || '}', '-5 minutes'));
SELECT expect_error(format('SELECT taskq.extend_ownership(%L, %L, %L, %L)', '', '{owned}', '{' || :'tok' || '}', '1 hour'));
SELECT expect_error(format('SELECT taskq.extend_ownership(%L, %L, %L, %L)', repeat('w', 256), '{owned}', '{' || :'tok' || '}', '1 hour'));
SELECT expect_error(format('SELECT taskq.extend_ownership(%L, ARRAY[%L], %L, %L)', 'w', '', '{' || :'tok' || '}', '1 hour'));
SELECT expect_error(format('SELECT taskq.extend_ownership(%L, ARRAY[%L], %L, %L)', 'w', repeat('i', 256), '{' || :'tok' || '}', '1 hour'));
SELECT pg_temp.unchanged();

-- return_task
SELECT expect_error(format('SELECT taskq.return_task(NULL, %L, NULL, %L)', :'tok', 'completed'));
SELECT expect_error(format('SELECT taskq.return_task(%L, NULL, NULL, %L)', 'owned', 'completed'));
SELECT expect_error(format('SELECT taskq.return_task(%L, %L, NULL, NULL)', 'owned', :'tok'));
SELECT expect_error(format('SELECT taskq.return_task(%L, %L, NULL, %L)', '', :'tok', 'completed'));
SELECT expect_error(format('SELECT taskq.return_task(%L, %L, NULL, %L)', repeat('i', 256), :'tok', 'completed'));
SELECT expect_error(format('SELECT taskq.return_task(%L, %L, NULL, %L)', 'owned', :'tok', 'done'));
SELECT expect_error(format('SELECT taskq.return_task(%L, %L, NULL, %L)', 'owned', 'not-a-uuid', 'completed'));
SELECT pg_temp.unchanged();

-- return_tasks
SELECT expect_error(format('SELECT taskq.return_tasks(NULL, %L, NULL, %L)', '{' || :'tok' || '}', '{completed}'));
SELECT expect_error(format('SELECT taskq.return_tasks(%L, NULL, NULL, %L)', '{owned}', '{completed}'));
SELECT expect_error(format('SELECT taskq.return_tasks(%L, %L, NULL, NULL)', '{owned}', '{' || :'tok' || '}'));
SELECT expect_error(format('SELECT taskq.return_tasks(%L, %L, NULL, %L)', '{owned,NULL}', '{' || :'tok' || ',' || :'tok' || '}', '{completed,completed}'));
SELECT expect_error(format('SELECT taskq.return_tasks(%L, %L, NULL, %L)', '{owned}', '{NULL}', '{completed}'));
SELECT expect_error(format('SELECT taskq.return_tasks(%L, %L, NULL, %L)', '{owned}', '{' || :'tok' || '}', '{NULL}'));
SELECT expect_error(format('SELECT taskq.return_tasks(%L, %L, NULL, %L)', '{owned,ready}', '{' || :'tok' || '}', '{completed,completed}'));
SELECT expect_error(format('SELECT taskq.return_tasks(%L, %L, NULL, %L)', '{owned}', '{' || :'tok' || '}', '{completed,completed}'));
SELECT expect_error(format('SELECT taskq.return_tasks(%L, %L, %L, %L)', '{owned}', '{' || :'tok' || '}', '{a,b}', '{completed}'));
SELECT expect_error(format('SELECT taskq.return_tasks(%L, %L, %L, %L)', '{owned}', '{' || :'tok' || '}', '{}', '{completed}'));
SELECT expect_error(format('SELECT taskq.return_tasks(%L, %L, NULL, %L)', '{""}', '{' || :'tok' || '}', '{completed}'));
SELECT expect_error(format('SELECT taskq.return_tasks(ARRAY[%L], %L, NULL, %L)', repeat('i', 256), '{' || :'tok' || '}', '{completed}'));
SELECT pg_temp.unchanged();

-- add_dependencies
SELECT expect_error($$SELECT taskq.add_dependencies(NULL, '{ready}')$$);
SELECT expect_error($$SELECT taskq.add_dependencies('{blocked}', NULL)$$);
SELECT expect_error($$SELECT taskq.add_dependencies(NULL, NULL)$$);
SELECT expect_error($$SELECT taskq.add_dependencies('{blocked,NULL}', '{ready,ready}')$$);
SELECT expect_error($$SELECT taskq.add_dependencies('{blocked}', ARRAY[NULL]::text[])$$);
SELECT expect_error($$SELECT taskq.add_dependencies('{blocked}', '{""}')$$);
SELECT expect_error(format('SELECT taskq.add_dependencies(%L, ARRAY[%L])', '{blocked}', repeat('i', 256)));
SELECT expect_error($$SELECT taskq.add_dependencies('{blocked,ready}', '{ready}')$$);
SELECT expect_error($$SELECT taskq.add_dependencies('{}', '{ready}')$$);
SELECT pg_temp.unchanged();

-- wait_for_task
SELECT expect_error($$SELECT taskq.wait_for_task(NULL)$$);
SELECT expect_error($$SELECT taskq.wait_for_task('ready', '-1 ms')$$);
SELECT expect_error($$SELECT taskq.wait_for_task('ghost', '0')$$);

-- Shapes
SELECT expect_error($$SELECT taskq.chain(NULL)$$);
SELECT expect_error($$SELECT taskq.chain('{"id": "x", "action": "a"}')$$);
SELECT expect_error($$SELECT taskq.chain('[1, 2]')$$);
SELECT expect_error($$SELECT taskq.chain('[{"id": "x", "action": "a"}]', ARRAY[NULL]::text[])$$);
SELECT expect_error($$SELECT taskq."group"(NULL)$$);
SELECT expect_error($$SELECT taskq."group"('7')$$);
SELECT expect_error($$SELECT taskq."group"('[{"id": "x"}]')$$);
SELECT expect_error($$SELECT taskq.chord(NULL, '{"id": "j", "action": "j"}')$$);
SELECT expect_error($$SELECT taskq.chord('[]', NULL)$$);
SELECT expect_error($$SELECT taskq.chord('[]', '[{"id": "j", "action": "j"}]')$$);
SELECT expect_error($$SELECT taskq.chord('{}', '{"id": "j", "action": "j"}')$$);
SELECT expect_error($$SELECT taskq.chord('[{"id": "x", "action": "a"}]', '{"id": "j", "action": "j", "max_tries": 0}')$$);
-- chord checks its join on its own, with insert_tasks' parser: for each
-- malformed task object above, the error insert_tasks gives (same SQLSTATE
-- and message), with argument "join" (and the join's id, once known) named
-- in the context line, not the join's place in argument "tasks".  (The
-- join's id clashing with a task's is chord's own error, with a DETAIL.)
CREATE FUNCTION pg_temp.error_detail(cmd text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    detail text;
    ctx text;
BEGIN
    EXECUTE cmd;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    INSERT INTO public.seen_errors VALUES (SQLSTATE, SQLERRM);
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL, ctx = PG_EXCEPTION_CONTEXT;
    ctx := split_part(ctx, E'\n', 1);
    RETURN SQLSTATE || ': ' || SQLERRM
        || CASE WHEN ctx LIKE 'PL/pgSQL %' THEN '' ELSE ' / ' || ctx END
        || CASE WHEN detail <> '' THEN ' / ' || detail ELSE '' END;
END
$$;
SELECT c.n, c.label, e.error,
       split_part(e.error, ' / ', 1)
         = expect_error(format('SELECT taskq.insert_tasks(%L::jsonb)', c.arg)) AS as_insert_tasks
  FROM json_cases AS c,
       LATERAL (SELECT pg_temp.error_detail(format('SELECT taskq.chord(%L, %L)',
                    '[{"id": "h", "action": "h"}]', c.arg::jsonb -> 0)) AS error) AS e
 WHERE jsonb_typeof(c.arg::jsonb) = 'array' AND jsonb_array_length(c.arg::jsonb) = 1
   AND jsonb_typeof(c.arg::jsonb -> 0) = 'object'
 ORDER BY c.n;
SELECT pg_temp.error_detail(format('SELECT taskq.chord(%L, %L)', '[]',
    jsonb_build_object('id', 'big', 'action', 'a', 'body', repeat('x', 1024 * 1024))));
-- The join's id: not one of the tasks', not a stored task's.
SELECT pg_temp.error_detail($$SELECT taskq.chord('[{"id": "x", "action": "a"}, {"id": "y", "action": "a"}]', '{"id": "y", "action": "j"}')$$);
SELECT pg_temp.error_detail($$SELECT taskq.chord('[{"id": "x", "action": "a"}]', '{"id": "ready", "action": "j"}')$$);
-- A bad task is still named by its place in argument "tasks".
SELECT error_context($$SELECT taskq.chord('[{"id": "x", "action": "a"}, {"id": "y"}]', '{"id": "j", "action": "j"}')$$);
SELECT pg_temp.unchanged();
SELECT count(*) AS tasks FROM taskq.tasks;
