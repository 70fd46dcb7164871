--
-- Generated bad-input matrix: every public function of schema taskq, every
-- argument, a list of bad values for the argument's type (NULL, empty,
-- oversize, malformed or wrong-typed JSON, unknown ids, negative and huge
-- numbers, invalid intervals, odd or invalid text), the other arguments
-- valid.  Each call runs in a savepoint that is always rolled back, so every
-- call sees the same queue.  Checked for every call: no internal error
-- (class XX), a SQLSTATE from the documented list, a message in
-- PostgreSQL's style, and nothing changed (the tables of tasks and runs are compared with their
-- state before the call).  A function without valid arguments here, or an
-- argument type without bad values, shows up in the summary.
--
DELETE FROM taskq.tasks;
DELETE FROM taskq.action_grants;
DELETE FROM public.tokens;

-- The queue every call sees: m-ready (ready, signals m-blocked), m-blocked,
-- m-owned (in progress, owned by "w"), m-done (completed), m-dead (aborted),
-- m-jt (in progress, the task of job m-job).
SELECT taskq.insert_tasks('[{"id": "m-ready", "action": "m", "to_signal_after": ["m-blocked"]},
                            {"id": "m-blocked", "action": "m"},
                            {"id": "m-owned", "action": "m", "priority": 10},
                            {"id": "m-done", "action": "m", "priority": 9},
                            {"id": "m-dead", "action": "m", "priority": 8}]');
SELECT taskq.create_job('m-job', '[{"id": "m-jt", "action": "m", "priority": 7}]', 5);
SELECT n, id FROM public.own('w', 4, '{m}', '1 hour');
SELECT public.ret('m-done', 'completed');
SELECT public.ret('m-dead', 'aborted');
-- Runs: m-run (its step m-run/1 owned, a continuation state), m-wait
-- (waiting), m-fan (its fan-in batch m-fan/1 owned), m-failed (failed).
SELECT taskq.define_machine('m-mach', '{"states": [
    {"name": "S", "action": "mm", "initial": true, "continuation": true,
     "transitions": [{"event": "go", "to": "W"}, {"event": "stop", "to": "F"}]},
    {"name": "W", "action": null, "transitions": [{"event": "ev", "to": "F"}]},
    {"name": "F", "action": "mf", "final": true}]}');
SELECT taskq.define_machine('m-fanm', '{"states": [
    {"name": "B", "action": "mb", "initial": true, "final": true, "fan_in": 5}]}');
SELECT taskq.start_machine('m-mach', 'm-run'), taskq.start_machine('m-mach', 'm-wait'),
       taskq.start_machine('m-mach', 'm-failed'), taskq.start_machine('m-fanm', 'm-fan');
UPDATE taskq.tasks SET not_before = now() WHERE id = 'm-fan/1';
SELECT n, id FROM public.own('w', 3, '{mm}', '1 hour');
SELECT taskq.transition('m-wait/1', (SELECT performance_token FROM taskq.tasks WHERE id = 'm-wait/1'), 'go');
SELECT public.ret('m-failed/1', 'aborted');
SELECT n, id FROM public.own('w', 1, '{mb}', '1 hour');
-- Sagas: m-srun (its step m-srun/1 owned), m-swait (waiting).
SELECT taskq.define_saga('m-saga', '{"steps": [{"name": "S", "do": "ms", "undo": "mu"},
                                               {"name": "T", "do": "mt"}]}');
SELECT taskq.start_saga('m-saga', 'm-srun'), taskq.start_saga('m-saga', 'm-swait');
SELECT n, id FROM public.own('w', 2, '{ms}', '1 hour');
SELECT taskq.return_step('m-swait/1', (SELECT performance_token FROM taskq.tasks WHERE id = 'm-swait/1'), 'wait');

-- Valid arguments per function, as SQL expressions, in argument order
-- (arguments with defaults may be left out).
CREATE TEMP TABLE m_valid (fn text PRIMARY KEY, args text[]);
INSERT INTO m_valid VALUES
  ('insert_tasks', ARRAY[$$'[{"id": "m-new", "action": "m"}]'$$]),
  ('replace_tasks', ARRAY[$$'[{"id": "m-ready", "action": "m"}]'$$]),
  ('own_tasks', ARRAY[$$'w'$$, '1', $$'{m}'$$, $$'1 hour'$$, $$'10 ms'$$]),
  ('extend_ownership', ARRAY[$$'w'$$, $$'{m-owned}'$$,
       $$ARRAY[(SELECT performance_token FROM taskq.tasks WHERE id = 'm-owned')]$$, $$'1 hour'$$]),
  ('return_task', ARRAY[$$'m-owned'$$,
       $$(SELECT performance_token FROM taskq.tasks WHERE id = 'm-owned')$$, $$'done'$$, $$'completed'$$,
       'NULL', $$'{"rows": 1}'$$]),
  ('release_task', ARRAY[$$'m-owned'$$,
       $$(SELECT performance_token FROM taskq.tasks WHERE id = 'm-owned')$$]),
  ('return_tasks', ARRAY[$$'{m-owned}'$$,
       $$ARRAY[(SELECT performance_token FROM taskq.tasks WHERE id = 'm-owned')]$$, $$'{done}'$$,
       $$'{completed}'$$, $$ARRAY['{"rows": 1}'::jsonb]$$]),
  ('return_and_own', ARRAY[$$'{m-owned}'$$,
       $$ARRAY[(SELECT performance_token FROM taskq.tasks WHERE id = 'm-owned')]$$, $$'{done}'$$,
       $$'{completed}'$$, $$'w'$$, '1', $$'{m}'$$, $$'1 hour'$$, $$ARRAY['{"rows": 1}'::jsonb]$$]),
  ('predecessor_results', ARRAY[$$'m-owned'$$,
       $$(SELECT performance_token FROM taskq.tasks WHERE id = 'm-owned')$$]),
  ('task_graph', ARRAY[$$'m-flow'$$, $$'dot'$$]),
  ('add_dependencies', ARRAY[$$'{m-owned}'$$, $$'{m-ready}'$$]),
  ('wait_for_task', ARRAY[$$'m-done'$$, $$'1 s'$$]),
  ('chain', ARRAY[$$'[{"id": "m-c1", "action": "m"}, {"id": "m-c2", "action": "m"}]'$$, $$'{m-ready}'$$]),
  ('group', ARRAY[$$'[{"id": "m-g1", "action": "m"}, {"id": "m-g2", "action": "m"}]'$$, $$'{m-ready}'$$]),
  ('chord', ARRAY[$$'[{"id": "m-h1", "action": "m"}]'$$, $$'{"id": "m-j", "action": "m"}'$$, $$'{m-ready}'$$]),
  ('purge_finished', ARRAY[$$'1 day'$$]),
  ('insert_tasks_if_absent', ARRAY[$$'[{"id": "m-new", "action": "m"}, {"id": "m-ready", "action": "m"}]'$$]),
  ('enqueue', ARRAY[$$'m'$$, $$'{"k": 1}'$$, $$'m-e1'$$, '1', $$'2030-01-01 00:00+00'$$, '3', $$'m-flow'$$,
       $$'m-key'$$]),
  ('enqueue_many', ARRAY[$$'m'$$, $$ARRAY['{"k": 1}'::jsonb]$$, $$ARRAY['m-e1']$$, '1',
       $$'2030-01-01 00:00+00'$$, '3', $$'m-flow'$$, $$'m-key'$$]),
  ('cancel_tasks', ARRAY[$$'{m-ready}'$$]),
  ('cancel_workflow', ARRAY[$$'m-flow'$$]),
  ('redrive_tasks', ARRAY[$$'{m-dead}'$$]),
  ('set_action_policy', ARRAY[$$'m'$$, '3', $$'{"delay": "1 s"}'$$, 'true']),
  ('set_concurrency_limit', ARRAY[$$'m-limited'$$, '2', '1']),
  ('set_rate_limit', ARRAY[$$'m-limited'$$, '2', $$'1 s'$$, 'true']),
  ('clear_limits', ARRAY[$$'m-limited'$$]),
  ('create_job', ARRAY[$$'m-job2'$$, $$'[{"id": "m-jt2", "action": "m"}]'$$, '3']),
  ('report_progress', ARRAY[$$'m-jt'$$, $$(SELECT performance_token FROM taskq.tasks WHERE id = 'm-jt')$$, '1']),
  ('set_job_item_count', ARRAY[$$'m-jt'$$, $$(SELECT performance_token FROM taskq.tasks WHERE id = 'm-jt')$$, '10']),
  ('job_state', ARRAY[$$'m-job'$$]),
  ('define_machine', ARRAY[$$'m-mach2'$$, $$'{"states": [{"name": "A", "action": "a", "initial": true, "final": true}]}'$$, '1']),
  ('start_machine', ARRAY[$$'m-mach'$$, $$'m-run2'$$, $$'{}'$$, $$'{"restart_each_step": true}'$$,
       $$'1 hour'$$]),
  ('transition', ARRAY[$$'m-run/1'$$, $$(SELECT performance_token FROM taskq.tasks WHERE id = 'm-run/1')$$,
       $$'stop'$$, $$'{"k": 1}'$$]),
  ('continue_machine', ARRAY[$$'m-run/1'$$, $$(SELECT performance_token FROM taskq.tasks WHERE id = 'm-run/1')$$,
       $$'c1'$$]),
  ('fan_in_contexts', ARRAY[$$'m-fan/1'$$, $$(SELECT performance_token FROM taskq.tasks WHERE id = 'm-fan/1')$$]),
  ('send_event', ARRAY[$$'m-wait'$$, $$'ev'$$, $$'{"k": 1}'$$]),
  ('redrive_run', ARRAY[$$'m-failed'$$]),
  ('migrate_run', ARRAY[$$'m-wait'$$, '1', $$'{"W": "W"}'$$]),
  ('wait_for_run', ARRAY[$$'m-wait'$$, $$'1 s'$$]),
  ('cancel_run', ARRAY[$$'m-wait'$$]),
  ('run_steps', ARRAY[$$'m-run'$$]),
  ('task_attempts', ARRAY[$$'m-ready'$$]),
  ('definition_graph', ARRAY[$$'m-mach'$$, $$'mermaid'$$, '1']),
  ('run_graph', ARRAY[$$'m-run'$$, $$'dot'$$]),
  ('define_saga', ARRAY[$$'m-saga2'$$, $$'{"steps": [{"name": "A", "do": "a", "undo": "u"}]}'$$, '1']),
  ('start_saga', ARRAY[$$'m-saga'$$, $$'m-srun2'$$, $$'{"k": 1}'$$, $$'{"restart_each_step": true}'$$,
       $$'1 hour'$$]),
  ('return_step', ARRAY[$$'m-srun/1'$$, $$(SELECT performance_token FROM taskq.tasks WHERE id = 'm-srun/1')$$,
       $$'success'$$, $$'{"k": 1}'$$, $$'e'$$]),
  ('resume_run', ARRAY[$$'m-swait'$$, $$'{"k": 1}'$$]),
  ('worker_heartbeat', ARRAY[$$'m-worker'$$, $$'{"actor": "w", "host": "h", "pid": 1, "version": "v",
       "actions": ["m"], "concurrency": 2, "heartbeat_interval": 10}'$$]),
  ('worker_stopped', ARRAY[$$'m-worker'$$]),
  ('schedule', ARRAY[$$'m-sched'$$, $$'*/5 * * * *'$$, $$'{"action": "m", "priority": 2}'$$,
       $$'Europe/Berlin'$$, $$'all'$$]),
  ('unschedule', ARRAY[$$'m-sched'$$]);

-- Bad values per argument type: (type, kind, expression).
CREATE TEMP TABLE m_bad (type text, ord int, kind text, expr text);
INSERT INTO m_bad (type, kind, expr)
SELECT t.type, v.kind, v.expr
  FROM (VALUES ('text'), ('jsonb'), ('text[]'), ('uuid'), ('uuid[]'), ('integer'),
               ('bigint'), ('interval'), ('taskq.status'), ('taskq.status[]'),
               ('jsonb[]'), ('timestamp with time zone'), ('boolean')) AS t(type),
       LATERAL (VALUES
    -- every type
    ('NULL', 'NULL'),
    ('empty', $$''$$),
    ('malformed', $$'{'$$),
    ('1 MB', $$repeat('x', 1000000)$$)) AS v(kind, expr);
INSERT INTO m_bad (type, kind, expr) VALUES
    ('text', '256 bytes', $$repeat('x', 256)$$),
    ('text', '256 bytes, 128 chars', $$repeat('é', 128)$$),
    ('text', 'unknown id', $$'no-such-task'$$),
    ('text', 'control chars', $$E'a\x01\x1f\x7f'$$),
    ('text', 'bidi, BOM, emoji', $$U&'\202E\FEFF\+01F600'$$),
    ('text', 'invalid UTF-8', $$convert_from('\xc328'::bytea, 'UTF8')$$),
    ('jsonb', 'JSON null', $$'null'$$),
    ('jsonb', 'object', $$'{"id": "m-x", "action": "m"}'$$),
    ('jsonb', 'string', $$'"m-x"'$$),
    ('jsonb', 'number', $$'1'$$),
    ('jsonb', 'empty array', $$'[]'$$),
    ('jsonb', 'array of numbers', $$'[1, 2]'$$),
    ('jsonb', 'second element bad', $$'[{"id": "m-x", "action": "m"}, true]'$$),
    ('jsonb', 'id 256 bytes', $$jsonb_build_array(jsonb_build_object('id', repeat('i', 256), 'action', 'm'))$$),
    ('jsonb', 'action 256 bytes', $$jsonb_build_array(jsonb_build_object('id', 'm-x', 'action', repeat('a', 256)))$$),
    ('jsonb', 'body over 1 MiB', $$jsonb_build_array(jsonb_build_object('id', 'm-x', 'action', 'm', 'body', repeat('b', 1100000)))$$),
    ('jsonb', 'duplicate stored id', $$'[{"id": "m-owned", "action": "m"}]'$$),
    ('jsonb', 'unknown successor', $$'[{"id": "m-x", "action": "m", "to_signal_after": ["no-such-task"]}]'$$),
    ('jsonb', 'max_tries -1', $$'[{"id": "m-x", "action": "m", "max_tries": -1}]'$$),
    ('jsonb', 'max_tries 1e400', $$'[{"id": "m-x", "action": "m", "max_tries": 1e400}]'$$),
    ('jsonb', 'priority string', $$'[{"id": "m-x", "action": "m", "priority": "high"}]'$$),
    ('jsonb', 'not_before garbage', $$'[{"id": "m-x", "action": "m", "not_before": "soonish"}]'$$),
    ('jsonb', 'unknown key', $$'[{"id": "m-x", "action": "m", "owner": "me"}]'$$),
    ('jsonb', 'escaped NUL', $$'["\u0000"]'$$),
    ('jsonb', 'lone surrogate', $$'["\ud800"]'$$),
    ('jsonb', 'nested 100000 deep', $$repeat('[', 100000) || repeat(']', 100000)$$),
    ('text[]', 'empty array', $$'{}'$$),
    ('text[]', 'NULL element', $$'{NULL}'$$),
    ('text[]', 'empty element', $$'{""}'$$),
    ('text[]', '256-byte element', $$ARRAY[repeat('x', 256)]$$),
    ('text[]', 'unknown id', $$'{no-such-task}'$$),
    ('text[]', 'two dimensions', $$'{{m-ready,m-owned},{m-done,m-blocked}}'$$),
    ('text[]', '10000 elements', $$array_fill('m-ready'::text, ARRAY[10000])$$),
    ('uuid', 'unknown', $$'00000000-0000-0000-0000-000000000000'$$),
    ('uuid[]', 'empty array', $$'{}'$$),
    ('uuid[]', 'NULL element', $$'{NULL}'$$),
    ('uuid[]', 'unknown', $$'{00000000-0000-0000-0000-000000000000}'$$),
    ('integer', '-1', '-1'),
    ('integer', '0', '0'),
    ('integer', '2^31-1', '2147483647'),
    ('integer', '2^31', '2147483648'),
    ('integer', '-2^31', '-2147483648'),
    ('bigint', '-1', '-1'),
    ('bigint', '0', '0'),
    ('bigint', '2^63-1', '9223372036854775807'),
    ('bigint', '2^63', '9223372036854775808'),
    ('interval', 'zero', $$'0'$$),
    ('interval', 'negative', $$'-1 s'$$),
    ('interval', 'net negative', $$'1 mon -40 days'$$),
    ('interval', 'past the end of time', $$'300000 years'$$),
    ('interval', 'out of range', $$'1000000000 years'$$),
    ('taskq.status', 'in_progress', $$'in_progress'$$),
    ('taskq.status', 'pending', $$'pending'$$),
    ('taskq.status', 'aborted', $$'aborted'$$),
    ('taskq.status', 'unknown label', $$'done'$$),
    ('taskq.status[]', 'empty array', $$'{}'$$),
    ('taskq.status[]', 'NULL element', $$'{NULL}'$$),
    ('taskq.status[]', 'in_progress', $$'{in_progress}'$$),
    ('taskq.status[]', 'unknown label', $$'{done}'$$),
    ('jsonb[]', 'empty array', $$'{}'$$),
    ('jsonb[]', 'NULL element', $$'{NULL}'$$),
    ('jsonb[]', 'two elements', $$ARRAY['1', '2']::jsonb[]$$),
    ('jsonb[]', 'element over 1 MiB', $$ARRAY[jsonb_build_object('b', repeat('b', 1100000))]$$),
    ('timestamp with time zone', 'infinity', $$'infinity'$$),
    ('timestamp with time zone', '-infinity', $$'-infinity'$$),
    ('timestamp with time zone', 'year 294277', $$'294277-01-01'$$),
    ('timestamp with time zone', 'no time zone', $$'2030-01-01'$$);
UPDATE m_bad SET ord = o.n
  FROM (SELECT ctid, row_number() OVER (PARTITION BY type ORDER BY
            CASE kind WHEN 'NULL' THEN 0 WHEN 'empty' THEN 1 WHEN 'malformed' THEN 2 ELSE 3 END,
            kind COLLATE "C") AS n
          FROM m_bad) AS o
 WHERE o.ctid = m_bad.ctid;

-- The SQLSTATEs the README documents for bad input: taskq's own, and
-- PostgreSQL's for values that are not of the argument's type at all.
CREATE TEMP TABLE m_documented (sqlstate text PRIMARY KEY);
INSERT INTO m_documented VALUES
    ('22004'), ('22023'), ('22001'), ('22003'), ('2202E'), ('23505'), ('23503'),
    ('42704'), ('54000'), ('55000'), ('TQ001'), ('42501'),
    ('22P02'), ('22P05'), ('22007'), ('22008'), ('22015'), ('22021'), ('54001');

-- The public functions and their arguments.
CREATE TEMP TABLE m_args AS
SELECT p.proname::text AS fn, a.o::int AS argno, p.proargnames[a.o] AS argname,
       format_type(a.t, NULL) AS type, p.pronargs AS nargs
  FROM pg_proc AS p, unnest(p.proargtypes) WITH ORDINALITY AS a(t, o)
 WHERE p.pronamespace = 'taskq'::regnamespace AND p.proname !~ '^_';

-- The state every call must leave as it found it.
CREATE FUNCTION pg_temp.m_state() RETURNS text LANGUAGE sql AS $$
    SELECT md5(coalesce((SELECT string_agg(t::text, '|' ORDER BY t.id) FROM taskq.tasks AS t), '')
               || coalesce((SELECT string_agg(r::text, '|' ORDER BY r.id) FROM taskq.runs AS r), ''))
$$;

-- One call, always rolled back: 'ok' or the SQLSTATE; logs errors.
CREATE TEMP TABLE m_result (fn text, argno int, argname text, type text, ord int,
                            kind text, sqlstate text, message text, changed boolean);
CREATE FUNCTION pg_temp.m_call(p_fn text, p_args text[], OUT st text, OUT msg text,
                               OUT changed boolean)
LANGUAGE plpgsql AS $$
DECLARE
    before text := pg_temp.m_state();
    m_types text[] := (SELECT array_agg(a.type ORDER BY a.argno) FROM m_args AS a WHERE a.fn = p_fn);
    call text;
BEGIN
    call := format('SELECT count(*) FROM (SELECT taskq.%I(%s)) AS r', p_fn,
                   (SELECT string_agg(format('(%s)::%s', e, m_types[i]), ', ' ORDER BY i)
                      FROM unnest(p_args) WITH ORDINALITY AS x(e, i)));
    BEGIN
        EXECUTE call;
        RAISE EXCEPTION USING ERRCODE = 'TQ999';     -- roll the call back
    EXCEPTION WHEN OTHERS THEN
        st := SQLSTATE;
        msg := SQLERRM;
    END;
    IF st = 'TQ999' THEN
        st := 'ok';
        msg := NULL;
    ELSE
        INSERT INTO public.seen_errors VALUES (st, msg);
    END IF;
    changed := pg_temp.m_state() IS DISTINCT FROM before;
END
$$;

-- The valid calls themselves succeed.
SELECT v.fn, c.st AS valid_call
  FROM m_valid AS v, pg_temp.m_call(v.fn, v.args) AS c
 WHERE v.fn IN (SELECT a.fn FROM m_args AS a)
 ORDER BY v.fn COLLATE "C";

-- The matrix.
INSERT INTO m_result
SELECT a.fn, a.argno, a.argname, a.type, b.ord, b.kind, c.st, c.msg, c.changed
  FROM m_args AS a
  JOIN m_valid AS v ON v.fn = a.fn
  JOIN m_bad AS b ON b.type = a.type,
       pg_temp.m_call(a.fn, v.args[:a.argno - 1] || b.expr || v.args[a.argno + 1:]) AS c;

-- Functions without valid arguments here, argument types without bad
-- values: both must be empty.
SELECT DISTINCT a.fn AS function_not_covered FROM m_args AS a
 WHERE NOT EXISTS (SELECT 1 FROM m_valid AS v WHERE v.fn = a.fn) ORDER BY 1;
SELECT DISTINCT a.type AS type_not_covered FROM m_args AS a
 WHERE NOT EXISTS (SELECT 1 FROM m_bad AS b WHERE b.type = a.type) ORDER BY 1;

-- The checks.
SELECT count(*) AS calls,
       count(*) FILTER (WHERE sqlstate LIKE 'XX%') AS internal_errors,
       count(*) FILTER (WHERE sqlstate <> 'ok'
                          AND sqlstate NOT IN (SELECT d.sqlstate FROM m_documented AS d)) AS undocumented,
       count(*) FILTER (WHERE changed) AS left_changes,
       count(*) FILTER (WHERE message ~ '^[A-Z][a-z]' OR message ~ '\.$' OR message ~ E'\n')
           AS not_in_postgres_style
  FROM m_result;
SELECT fn, argname, kind, sqlstate, message FROM m_result
 WHERE sqlstate LIKE 'XX%' OR changed
    OR (sqlstate <> 'ok' AND sqlstate NOT IN (SELECT d.sqlstate FROM m_documented AS d))
    OR message ~ '^[A-Z][a-z]' OR message ~ '\.$' OR message ~ E'\n'
 ORDER BY 1, 2, 3;

-- The matrix, one line per argument: kind=outcome in a fixed order.
SELECT fn || '(' || argname || ' ' || type || ')' AS argument,
       string_agg(kind || '=' || sqlstate, ', ' ORDER BY ord) AS outcomes
  FROM m_result
 GROUP BY fn, argno, argname, type
 ORDER BY fn COLLATE "C", argno;

DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
DELETE FROM taskq.runs WHERE kind = 'saga';
