-- test/pgtap/schema.sql: the objects of the public contract (the README's function reference)
-- exist with the names, types and signatures clients code against.
-- taskq.tasks is tested as a relation (table or view): the task model allows the
-- storage to be split, with taskq.tasks a view.
BEGIN;
SELECT plan(138);

-- ------------------------------------------------------------ schema, enum
SELECT has_schema('taskq', 'schema taskq exists');
SELECT has_enum('taskq', 'status', 'enum taskq.status exists');
SELECT enum_has_labels('taskq', 'status',
    ARRAY['pending', 'in_progress', 'completed', 'aborted'],
    'taskq.status has exactly pending, in_progress, completed, aborted, in that order');

-- ------------------------------------------------------------ taskq.tasks
SELECT has_relation('taskq', 'tasks', 'relation taskq.tasks exists');

SELECT has_column('taskq', 'tasks', 'id', 'tasks.id exists');
SELECT col_type_is('taskq', 'tasks', 'id', 'pg_catalog', 'text', 'tasks.id is text');
SELECT has_column('taskq', 'tasks', 'action', 'tasks.action exists');
SELECT col_type_is('taskq', 'tasks', 'action', 'pg_catalog', 'text', 'tasks.action is text');
SELECT has_column('taskq', 'tasks', 'body', 'tasks.body exists');
SELECT col_type_is('taskq', 'tasks', 'body', 'pg_catalog', 'jsonb', 'tasks.body is jsonb');
SELECT has_column('taskq', 'tasks', 'status_code', 'tasks.status_code exists');
SELECT col_type_is('taskq', 'tasks', 'status_code', 'taskq', 'status', 'tasks.status_code is taskq.status');
SELECT has_column('taskq', 'tasks', 'status', 'tasks.status exists');
SELECT col_type_is('taskq', 'tasks', 'status', 'pg_catalog', 'text', 'tasks.status is text');
SELECT has_column('taskq', 'tasks', 'num_tries', 'tasks.num_tries exists');
SELECT col_type_is('taskq', 'tasks', 'num_tries', 'pg_catalog', 'integer', 'tasks.num_tries is integer');
SELECT has_column('taskq', 'tasks', 'max_tries', 'tasks.max_tries exists');
SELECT col_type_is('taskq', 'tasks', 'max_tries', 'pg_catalog', 'integer', 'tasks.max_tries is integer');
SELECT has_column('taskq', 'tasks', 'num_signals', 'tasks.num_signals exists');
SELECT col_type_is('taskq', 'tasks', 'num_signals', 'pg_catalog', 'integer', 'tasks.num_signals is integer');
SELECT has_column('taskq', 'tasks', 'total_dependencies', 'tasks.total_dependencies exists');
SELECT col_type_is('taskq', 'tasks', 'total_dependencies', 'pg_catalog', 'integer', 'tasks.total_dependencies is integer');
SELECT has_column('taskq', 'tasks', 'to_signal_after', 'tasks.to_signal_after exists');
SELECT col_type_is('taskq', 'tasks', 'to_signal_after', 'pg_catalog', 'text[]', 'tasks.to_signal_after is text[]');
SELECT has_column('taskq', 'tasks', 'actor_id', 'tasks.actor_id exists');
SELECT col_type_is('taskq', 'tasks', 'actor_id', 'pg_catalog', 'text', 'tasks.actor_id is text');
SELECT has_column('taskq', 'tasks', 'action_deadline', 'tasks.action_deadline exists');
SELECT col_type_is('taskq', 'tasks', 'action_deadline', 'pg_catalog', 'timestamp with time zone', 'tasks.action_deadline is timestamptz');
SELECT has_column('taskq', 'tasks', 'performance_token', 'tasks.performance_token exists');
SELECT col_type_is('taskq', 'tasks', 'performance_token', 'pg_catalog', 'uuid', 'tasks.performance_token is uuid');
SELECT has_column('taskq', 'tasks', 'post_result', 'tasks.post_result exists');
SELECT col_type_is('taskq', 'tasks', 'post_result', 'pg_catalog', 'boolean', 'tasks.post_result is boolean');
SELECT has_column('taskq', 'tasks', 'priority', 'tasks.priority exists');
SELECT col_type_is('taskq', 'tasks', 'priority', 'pg_catalog', 'integer', 'tasks.priority is integer');
SELECT has_column('taskq', 'tasks', 'not_before', 'tasks.not_before exists');
SELECT col_type_is('taskq', 'tasks', 'not_before', 'pg_catalog', 'timestamp with time zone', 'tasks.not_before is timestamptz');
SELECT has_column('taskq', 'tasks', 'created_at', 'tasks.created_at exists');
SELECT col_type_is('taskq', 'tasks', 'created_at', 'pg_catalog', 'timestamp with time zone', 'tasks.created_at is timestamptz');
SELECT has_column('taskq', 'tasks', 'finished_at', 'tasks.finished_at exists');
SELECT col_type_is('taskq', 'tasks', 'finished_at', 'pg_catalog', 'timestamp with time zone', 'tasks.finished_at is timestamptz');
-- when the last try was claimed (0.6): run_steps and state_stats count from it
SELECT has_column('taskq', 'tasks', 'claimed_at', 'tasks.claimed_at exists');
SELECT col_type_is('taskq', 'tasks', 'claimed_at', 'pg_catalog', 'timestamp with time zone', 'tasks.claimed_at is timestamptz');

-- id is unique (the task model: "unique, caller-chosen")
SELECT ok(EXISTS (
    SELECT 1 FROM pg_catalog.pg_index i
      JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
     WHERE i.indrelid = 'taskq.tasks'::regclass AND i.indisunique
       AND i.indnkeyatts = 1 AND a.attname = 'id'),
    'taskq.tasks.id has a unique index');

-- the ready index: every key but a task's own versions is unique, so no deduplication
SELECT is((SELECT reloptions FROM pg_catalog.pg_class
            WHERE oid = 'taskq.tasks_ready_action_idx'::pg_catalog.regclass),
          ARRAY['deduplicate_items=off'],
          'tasks_ready_action_idx does not deduplicate');

-- pg_dump keeps the tasks of the queue
SELECT ok('taskq.tasks'::regclass = ANY (
    SELECT pg_catalog.unnest(e.extconfig) FROM pg_catalog.pg_extension e WHERE e.extname = 'taskq'),
    'taskq.tasks is registered with pg_extension_config_dump');

-- ------------------------------------------------------------ functions
-- Each: signature, return type, argument names (callers may use named notation).

SELECT has_function('taskq', 'insert_tasks', ARRAY['jsonb'], 'insert_tasks(jsonb) exists');
SELECT function_returns('taskq', 'insert_tasks', ARRAY['jsonb'], 'bigint', 'insert_tasks returns bigint');
SELECT is(pg_catalog.pg_get_function_arguments('taskq.insert_tasks(jsonb)'::regprocedure),
    'tasks jsonb', 'insert_tasks argument names');

SELECT has_function('taskq', 'replace_tasks', ARRAY['jsonb'], 'replace_tasks(jsonb) exists');
SELECT function_returns('taskq', 'replace_tasks', ARRAY['jsonb'], 'bigint', 'replace_tasks returns bigint');
SELECT is(pg_catalog.pg_get_function_arguments('taskq.replace_tasks(jsonb)'::regprocedure),
    'tasks jsonb', 'replace_tasks argument names');

SELECT has_function('taskq', 'own_tasks', ARRAY['text', 'integer', 'text[]', 'interval', 'interval'],
    'own_tasks(text, integer, text[], interval, interval) exists');
SELECT function_returns('taskq', 'own_tasks', ARRAY['text', 'integer', 'text[]', 'interval', 'interval'],
    'setof record', 'own_tasks returns a set');
SELECT is(pg_catalog.pg_get_function_arguments('taskq.own_tasks(text, integer, text[], interval, interval)'::regprocedure),
    'actor text, max_tasks integer, actions text[], max_duration interval DEFAULT NULL::interval, wait interval DEFAULT NULL::interval',
    'own_tasks argument names, max_duration and wait default to NULL');
SELECT is(pg_catalog.pg_get_function_result('taskq.own_tasks(text, integer, text[], interval, interval)'::regprocedure),
    'TABLE(id text, token uuid, action text, body jsonb, num_tries integer, action_deadline timestamp with time zone, concurrency_key text)',
    'own_tasks result columns');

SELECT has_function('taskq', 'extend_ownership', ARRAY['text', 'text[]', 'uuid[]', 'interval'],
    'extend_ownership(text, text[], uuid[], interval) exists');
SELECT function_returns('taskq', 'extend_ownership', ARRAY['text', 'text[]', 'uuid[]', 'interval'],
    'setof record', 'extend_ownership returns a set');
SELECT is(pg_catalog.pg_get_function_arguments('taskq.extend_ownership(text, text[], uuid[], interval)'::regprocedure),
    'actor text, ids text[], tokens uuid[], max_duration interval',
    'extend_ownership argument names');
SELECT is(pg_catalog.pg_get_function_result('taskq.extend_ownership(text, text[], uuid[], interval)'::regprocedure),
    'TABLE(id text, owned boolean)',
    'extend_ownership result columns');

-- The contract's four arguments, plus an optional retry_delay and result
-- (additions with defaults, so a four-argument call still resolves to it).
SELECT has_function('taskq', 'return_task', ARRAY['text', 'uuid', 'text', 'taskq.status', 'interval', 'jsonb'],
    'return_task(text, uuid, text, taskq.status, interval, jsonb) exists');
SELECT function_returns('taskq', 'return_task', ARRAY['text', 'uuid', 'text', 'taskq.status', 'interval', 'jsonb'],
    'void', 'return_task returns void');
SELECT is(pg_catalog.pg_get_function_arguments('taskq.return_task(text, uuid, text, taskq.status, interval, jsonb)'::regprocedure),
    'id text, token uuid, status text, status_code taskq.status, retry_delay interval DEFAULT NULL::interval, result jsonb DEFAULT NULL::jsonb',
    'return_task argument names');

SELECT has_function('taskq', 'wait_for_task', ARRAY['text', 'interval'],
    'wait_for_task(text, interval) exists');
SELECT function_returns('taskq', 'wait_for_task', ARRAY['text', 'interval'],
    'taskq.tasks', 'wait_for_task returns a taskq.tasks row');
SELECT is(pg_catalog.pg_get_function_arguments('taskq.wait_for_task(text, interval)'::regprocedure),
    'id text, timeout interval DEFAULT NULL::interval',
    'wait_for_task argument names, timeout defaults to NULL');

SELECT has_function('taskq', 'add_dependencies', ARRAY['text[]', 'text[]'],
    'add_dependencies(text[], text[]) exists');
SELECT function_returns('taskq', 'add_dependencies', ARRAY['text[]', 'text[]'],
    'bigint', 'add_dependencies returns bigint');
SELECT is(pg_catalog.pg_get_function_arguments('taskq.add_dependencies(text[], text[])'::regprocedure),
    'after_ids text[], run_ids text[]',
    'add_dependencies argument names');

-- Documented additions (docs/semantics.md): batch return and the shapes.
SELECT has_function('taskq', 'return_tasks', ARRAY['text[]', 'uuid[]', 'text[]', 'taskq.status[]', 'jsonb[]'],
    'return_tasks(text[], uuid[], text[], taskq.status[], jsonb[]) exists');
SELECT function_returns('taskq', 'return_tasks', ARRAY['text[]', 'uuid[]', 'text[]', 'taskq.status[]', 'jsonb[]'],
    'bigint', 'return_tasks returns bigint');
SELECT has_function('taskq', 'chain', ARRAY['jsonb', 'text[]'], 'chain(jsonb, text[]) exists');
SELECT function_returns('taskq', 'chain', ARRAY['jsonb', 'text[]'], 'bigint', 'chain returns bigint');
SELECT has_function('taskq', 'group', ARRAY['jsonb', 'text[]'], 'group(jsonb, text[]) exists');
SELECT function_returns('taskq', 'group', ARRAY['jsonb', 'text[]'], 'bigint', 'group returns bigint');
SELECT has_function('taskq', 'chord', ARRAY['jsonb', 'jsonb', 'text[]'], 'chord(jsonb, jsonb, text[]) exists');
SELECT function_returns('taskq', 'chord', ARRAY['jsonb', 'jsonb', 'text[]'], 'bigint', 'chord returns bigint');

-- ------------------------------------------------------------ monitoring views
SELECT has_view('taskq', 'action_stats', 'view taskq.action_stats exists');
SELECT has_column('taskq', 'action_stats', 'action', 'action_stats.action exists');
SELECT has_column('taskq', 'action_stats', 'ready', 'action_stats.ready exists');
SELECT has_column('taskq', 'action_stats', 'blocked', 'action_stats.blocked exists');
SELECT has_column('taskq', 'action_stats', 'delayed', 'action_stats.delayed exists');
SELECT has_column('taskq', 'action_stats', 'in_progress', 'action_stats.in_progress exists');
SELECT has_column('taskq', 'action_stats', 'lease_expired', 'action_stats.lease_expired exists');
SELECT has_column('taskq', 'action_stats', 'completed', 'action_stats.completed exists');
SELECT has_column('taskq', 'action_stats', 'aborted', 'action_stats.aborted exists');
SELECT has_column('taskq', 'action_stats', 'oldest_ready_age', 'action_stats.oldest_ready_age exists');
SELECT col_type_is('taskq', 'action_stats', 'oldest_ready_age', 'pg_catalog', 'interval',
    'action_stats.oldest_ready_age is an interval');

SELECT has_view('taskq', 'tasks_in_progress', 'view taskq.tasks_in_progress exists');
SELECT has_column('taskq', 'tasks_in_progress', 'id', 'tasks_in_progress.id exists');
SELECT has_column('taskq', 'tasks_in_progress', 'action', 'tasks_in_progress.action exists');
SELECT has_column('taskq', 'tasks_in_progress', 'actor_id', 'tasks_in_progress.actor_id exists');
SELECT has_column('taskq', 'tasks_in_progress', 'num_tries', 'tasks_in_progress.num_tries exists');
SELECT has_column('taskq', 'tasks_in_progress', 'max_tries', 'tasks_in_progress.max_tries exists');
SELECT has_column('taskq', 'tasks_in_progress', 'action_deadline', 'tasks_in_progress.action_deadline exists');
SELECT has_column('taskq', 'tasks_in_progress', 'time_left', 'tasks_in_progress.time_left exists');
SELECT col_type_is('taskq', 'tasks_in_progress', 'time_left', 'pg_catalog', 'interval',
    'tasks_in_progress.time_left is an interval');
SELECT has_column('taskq', 'tasks_in_progress', 'lease_expired', 'tasks_in_progress.lease_expired exists');

-- ------------------------------------------------------------ workers registry
SELECT has_function('taskq', 'worker_heartbeat', ARRAY['text', 'jsonb'],
    'worker_heartbeat(text, jsonb) exists');
SELECT is(pg_catalog.pg_get_function_arguments('taskq.worker_heartbeat(text, jsonb)'::regprocedure),
    'worker_id text, info jsonb DEFAULT ''{}''::jsonb',
    'worker_heartbeat argument names, info defaults to {}');
SELECT function_returns('taskq', 'worker_heartbeat', ARRAY['text', 'jsonb'], 'void',
    'worker_heartbeat returns void');
SELECT has_function('taskq', 'worker_stopped', ARRAY['text'], 'worker_stopped(text) exists');
SELECT function_returns('taskq', 'worker_stopped', ARRAY['text'], 'void',
    'worker_stopped returns void');
SELECT has_view('taskq', 'workers', 'view taskq.workers exists');
SELECT is((SELECT pg_catalog.string_agg(a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod),
                                        ', ' ORDER BY a.attnum)
             FROM pg_catalog.pg_attribute AS a
            WHERE a.attrelid = 'taskq.workers'::regclass AND a.attnum > 0),
    'worker_id text, actor text, host text, pid integer, version text, actions text[], '
    'concurrency integer, started_at timestamp with time zone, last_seen timestamp with time zone, '
    'in_progress integer, stale boolean',
    'taskq.workers has its columns, in order, with their types');
SELECT ok(has_function_privilege('taskq_worker', 'taskq.worker_heartbeat(text, jsonb)', 'EXECUTE')
          AND has_function_privilege('taskq_worker', 'taskq.worker_stopped(text)', 'EXECUTE')
          AND NOT has_function_privilege('taskq_producer', 'taskq.worker_heartbeat(text, jsonb)', 'EXECUTE')
          AND NOT has_function_privilege('taskq_monitor', 'taskq.worker_stopped(text)', 'EXECUTE'),
    'workers (and admins) heartbeat and stop; producers and monitors do not');
SELECT ok(has_table_privilege('taskq_monitor', 'taskq.workers', 'SELECT')
          AND NOT has_table_privilege('taskq_worker', 'taskq.workers', 'SELECT')
          AND NOT has_table_privilege('taskq_monitor', 'taskq.worker_registry', 'SELECT'),
    'monitors read taskq.workers, not its table');

-- ------------------------------------------------------------ schedules
SELECT has_function('taskq', 'schedule', ARRAY['text', 'text', 'jsonb', 'text', 'text'],
    'schedule(text, text, jsonb, text, text) exists');
SELECT is(pg_catalog.pg_get_function_arguments('taskq.schedule(text, text, jsonb, text, text)'::regprocedure),
    'name text, cron text, task jsonb, time_zone text DEFAULT ''UTC''::text, catch_up text DEFAULT ''latest''::text',
    'schedule argument names, time_zone defaults to UTC, catch_up to latest');
SELECT function_returns('taskq', 'schedule', ARRAY['text', 'text', 'jsonb', 'text', 'text'], 'void',
    'schedule returns void');
SELECT function_returns('taskq', 'unschedule', ARRAY['text'], 'boolean',
    'unschedule(text) returns boolean');
SELECT is((SELECT pg_catalog.string_agg(a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod),
                                        ', ' ORDER BY a.attnum)
             FROM pg_catalog.pg_attribute AS a
            WHERE a.attrelid = 'taskq.schedules'::regclass AND a.attnum > 0),
    'name text, cron text, time_zone text, task jsonb, catch_up text, '
    'last_tick timestamp with time zone, next_tick timestamp with time zone',
    'taskq.schedules has its columns, in order, with their types');
SELECT ok(has_function_privilege('taskq_admin', 'taskq.schedule(text, text, jsonb, text, text)', 'EXECUTE')
          AND has_function_privilege('taskq_admin', 'taskq.unschedule(text)', 'EXECUTE')
          AND NOT has_function_privilege('taskq_producer', 'taskq.schedule(text, text, jsonb, text, text)', 'EXECUTE')
          AND NOT has_function_privilege('taskq_worker', 'taskq.unschedule(text)', 'EXECUTE')
          AND NOT has_function_privilege('taskq_monitor', 'taskq.schedule(text, text, jsonb, text, text)', 'EXECUTE'),
    'only admins schedule and unschedule');
SELECT ok(has_table_privilege('taskq_monitor', 'taskq.schedules', 'SELECT')
          AND has_table_privilege('taskq_admin', 'taskq.schedules', 'SELECT')
          AND NOT has_table_privilege('taskq_worker', 'taskq.schedules', 'SELECT')
          AND NOT has_table_privilege('taskq_monitor', 'taskq.schedule_registry', 'SELECT'),
    'monitors and admins read taskq.schedules, monitors not its table');
-- ------------------------------------------------------------ attempt history
SELECT has_function('taskq', 'set_action_policy', ARRAY['text', 'integer', 'jsonb', 'boolean'],
    'set_action_policy(text, integer, jsonb, boolean) exists');
SELECT is(pg_catalog.pg_get_function_arguments('taskq.set_action_policy(text, integer, jsonb, boolean)'::regprocedure),
    'action text, max_tries integer DEFAULT NULL::integer, retry jsonb DEFAULT NULL::jsonb, keep_attempts boolean DEFAULT false',
    'set_action_policy argument names, keep_attempts defaults to false');
SELECT hasnt_function('taskq', 'set_action_policy', ARRAY['text', 'integer', 'jsonb'],
    'the three-argument set_action_policy is gone');
SELECT has_table('taskq', 'attempts', 'table taskq.attempts exists');
SELECT is((SELECT pg_catalog.string_agg(a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod),
                                        ', ' ORDER BY a.attnum)
             FROM pg_catalog.pg_attribute AS a
            WHERE a.attrelid = 'taskq.attempts'::regclass AND a.attnum > 0 AND NOT a.attisdropped),
    'task_id text, try integer, actor text, claimed_at timestamp with time zone, '
    'finished_at timestamp with time zone, outcome text, status text, result jsonb',
    'taskq.attempts has its columns, in order, with their types');
SELECT function_returns('taskq', 'task_attempts', ARRAY['text'], 'setof taskq.attempts',
    'task_attempts(text) returns setof taskq.attempts');
-- ------------------------------------------------------------ metrics
SELECT has_function('taskq', 'metrics', ARRAY[]::text[], 'metrics() exists');
SELECT is(pg_catalog.pg_get_function_result('taskq.metrics()'::regprocedure),
    'TABLE(name text, labels jsonb, kind text, value double precision)',
    'metrics() returns (name, labels, kind, value)');
SELECT function_returns('taskq', 'metrics_text', ARRAY[]::text[], 'text',
    'metrics_text() returns text');
SELECT ok(has_function_privilege('taskq_monitor', 'taskq.metrics()', 'EXECUTE')
          AND has_function_privilege('taskq_monitor', 'taskq.metrics_text()', 'EXECUTE')
          AND NOT has_function_privilege('taskq_worker', 'taskq.metrics()', 'EXECUTE')
          AND NOT has_function_privilege('taskq_producer', 'taskq.metrics_text()', 'EXECUTE'),
    'monitors (and admins) read the metrics; producers and workers do not');
-- ------------------------------------------------------------ concurrency limits
SELECT has_column('taskq', 'tasks', 'concurrency_key', 'tasks.concurrency_key exists');
SELECT is((SELECT max(attnum) FROM pg_catalog.pg_attribute
            WHERE attrelid = 'taskq.tasks'::regclass AND NOT attisdropped),
          (SELECT attnum FROM pg_catalog.pg_attribute
            WHERE attrelid = 'taskq.tasks'::regclass AND attname = 'concurrency_key'),
    'concurrency_key is the last column of taskq.tasks');
SELECT function_returns('taskq', 'set_concurrency_limit', ARRAY['text', 'integer', 'integer'], 'void',
    'set_concurrency_limit(text, integer, integer) returns void');
SELECT function_returns('taskq', 'clear_limits', ARRAY['text'], 'void',
    'clear_limits(text) returns void');
SELECT function_returns('taskq', 'set_rate_limit', ARRAY['text', 'integer', 'interval', 'boolean'], 'void',
    'set_rate_limit(text, integer, interval, boolean) returns void');
SELECT is(pg_catalog.pg_get_function_arguments('taskq.set_rate_limit(text, integer, interval, boolean)'::regprocedure),
    'action text, max integer, per interval, by_key boolean DEFAULT false',
    'set_rate_limit argument names, by_key defaults to false');
SELECT is((SELECT pg_catalog.string_agg(a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod),
                                        ', ' ORDER BY a.attnum)
             FROM pg_catalog.pg_attribute AS a
            WHERE a.attrelid = 'taskq.limits'::regclass AND a.attnum > 0),
    'action text, max_running integer, max_running_per_key integer, rate_max integer, '
    'rate_per interval, by_key boolean, running integer, window_claims integer',
    'taskq.limits has its columns, in order, with their types');
SELECT ok(has_function_privilege('taskq_admin', 'taskq.set_concurrency_limit(text, integer, integer)', 'EXECUTE')
          AND NOT has_function_privilege('taskq_worker', 'taskq.clear_limits(text)', 'EXECUTE')
          AND has_table_privilege('taskq_monitor', 'taskq.limits', 'SELECT')
          AND NOT has_table_privilege('taskq_monitor', 'taskq.flow_limits', 'SELECT'),
    'admins set limits; monitors read taskq.limits, not its table');

-- ------------------------------------------------------------ timers of runs
SELECT has_column('taskq', 'runs', 'deadline', 'runs.deadline exists');
SELECT col_type_is('taskq', 'runs', 'deadline', 'timestamp with time zone', 'runs.deadline is timestamptz');
SELECT has_table('taskq', 'run_timers', 'table taskq.run_timers exists');
SELECT is(pg_catalog.pg_get_function_arguments('taskq.start_machine(text, text, jsonb, jsonb, interval)'::regprocedure),
    'machine text, id text, context jsonb DEFAULT ''{}''::jsonb, debug jsonb DEFAULT NULL::jsonb, deadline interval DEFAULT NULL::interval',
    'start_machine takes deadline last, NULL by default');
SELECT is(pg_catalog.pg_get_function_arguments('taskq.start_saga(text, text, jsonb, jsonb, interval)'::regprocedure),
    'saga text, id text, inputs jsonb DEFAULT ''{}''::jsonb, debug jsonb DEFAULT NULL::jsonb, deadline interval DEFAULT NULL::interval',
    'start_saga takes deadline last, NULL by default');

-- ------------------------------------------------------------ dedicated SQLSTATE
-- The invalid-token SQLSTATE is TQ001 (class TQ, documented); contract.sql
-- proves when it is raised.  Here: a never-owned task refuses any token with it.
SELECT lives_ok($$SELECT taskq.insert_tasks('[{"id": "schema-probe", "action": "probe"}]')$$,
    'a probe task can be inserted');
SELECT throws_ok($$SELECT taskq.return_task('schema-probe', gen_random_uuid(), NULL, 'completed')$$,
    'TQ001', 'invalid performance token for task "schema-probe"',
    'returning a never-owned task raises TQ001 naming the id');

SELECT * FROM finish();
ROLLBACK;
