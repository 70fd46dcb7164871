--
-- Roles and privileges: what PUBLIC and each taskq role may do, checked
-- from the catalogs and by calling every function as every role (allowed,
-- or 42501); the public functions work for their roles without any table
-- privilege (SECURITY DEFINER); per-action limits on workers.
--
DELETE FROM taskq.tasks;
DELETE FROM taskq.action_grants;

-- Login roles for the test, one per taskq role, one with no taskq role.
-- regress_copier works only on action copy; regress_pool_member belongs to
-- a pool limited to action zip.
CREATE ROLE regress_producer LOGIN IN ROLE taskq_producer;
CREATE ROLE regress_worker LOGIN IN ROLE taskq_worker;
CREATE ROLE regress_admin LOGIN IN ROLE taskq_admin;
CREATE ROLE regress_monitor LOGIN IN ROLE taskq_monitor;
CREATE ROLE regress_nobody LOGIN;
CREATE ROLE regress_copier LOGIN IN ROLE taskq_worker;
CREATE ROLE regress_zip_pool NOLOGIN IN ROLE taskq_worker;
CREATE ROLE regress_pool_member LOGIN IN ROLE regress_zip_pool;

-- Run a command as a role (SET SESSION AUTHORIZATION: the session user
-- changes, as for a login); 'ok' or 'SQLSTATE: message'.  Errors are
-- logged for zz_summary.
CREATE FUNCTION public.as_role(r text, cmd text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    res text := 'ok';
    st text;
    msg text;
BEGIN
    EXECUTE pg_catalog.format('SET SESSION AUTHORIZATION %I', r);
    BEGIN
        EXECUTE cmd;
    EXCEPTION WHEN OTHERS THEN
        st := SQLSTATE;
        msg := SQLERRM;
    END;
    RESET SESSION AUTHORIZATION;
    IF st IS NOT NULL THEN
        INSERT INTO public.seen_errors VALUES (st, msg);
        res := st || ': ' || msg;
    END IF;
    RETURN res;
END
$$;

-- ------------------------------------------------------------ the roles
-- NOLOGIN, no attributes, marked as taskq's (the install script uses an
-- existing role of these names only with that mark).
SELECT rolname, rolcanlogin, rolsuper, rolcreaterole, rolcreatedb, rolinherit,
       rolreplication, rolbypassrls,
       starts_with(shobj_description(oid, 'pg_authid'), 'taskq role: ') AS marked
  FROM pg_roles WHERE rolname LIKE 'taskq\_%' ORDER BY rolname;

-- The schema is the extension's own (dropped with it), not PUBLIC's.
SELECT n.nspname, d.deptype, has_schema_privilege('regress_nobody', n.oid, 'USAGE') AS public_usage
  FROM pg_namespace AS n
  JOIN pg_depend AS d ON d.classid = 'pg_namespace'::regclass AND d.objid = n.oid
                     AND d.refclassid = 'pg_extension'::regclass
 WHERE n.nspname = 'taskq';

-- ------------------------------------------------------------ PUBLIC
-- Nothing in schema taskq is granted to PUBLIC: no function (their default
-- EXECUTE is revoked), table, view or sequence.  (Types keep PostgreSQL's
-- default USAGE; without USAGE on the schema PUBLIC cannot name them.)
WITH acls AS (
    SELECT 'function ' || p.oid::regprocedure AS object,
           coalesce(p.proacl, acldefault('f', p.proowner)) AS acl
      FROM pg_proc AS p WHERE p.pronamespace = 'taskq'::regnamespace
    UNION ALL
    SELECT 'relation ' || c.oid::regclass,
           coalesce(c.relacl, acldefault((CASE WHEN c.relkind = 'S' THEN 's' ELSE 'r' END)::"char", c.relowner))
      FROM pg_class AS c WHERE c.relnamespace = 'taskq'::regnamespace AND c.relkind IN ('r', 'v', 'S', 'm', 'p', 'f')
    UNION ALL
    SELECT 'schema taskq', coalesce(n.nspacl, acldefault('n', n.nspowner))
      FROM pg_namespace AS n WHERE n.nspname = 'taskq')
SELECT a.object, x.privilege_type
  FROM acls AS a, aclexplode(a.acl) AS x
 WHERE x.grantee = 0
 ORDER BY 1, 2;

-- ------------------------------------------------------------ functions
-- Every function: SECURITY DEFINER or not, its pinned search_path, and the
-- taskq roles that may EXECUTE it (PUBLIC: as a role with no taskq role).
SELECT p.oid::regprocedure AS function,
       p.prosecdef AS definer,
       array_to_string(p.proconfig, ' ') AS config,
       concat_ws(' ',
           CASE WHEN has_function_privilege('taskq_producer', p.oid, 'EXECUTE') THEN 'producer' END,
           CASE WHEN has_function_privilege('taskq_worker', p.oid, 'EXECUTE') THEN 'worker' END,
           CASE WHEN has_function_privilege('taskq_admin', p.oid, 'EXECUTE') THEN 'admin' END,
           CASE WHEN has_function_privilege('taskq_monitor', p.oid, 'EXECUTE') THEN 'monitor' END,
           CASE WHEN has_function_privilege('regress_nobody', p.oid, 'EXECUTE') THEN 'PUBLIC' END)
           AS executable_by
  FROM pg_proc AS p
 WHERE p.pronamespace = 'taskq'::regnamespace
 ORDER BY p.proname COLLATE "C", 1::text COLLATE "C";

-- Every SECURITY DEFINER function pins search_path to pg_catalog, pg_temp.
SELECT count(*) AS definer_functions,
       count(*) FILTER (WHERE p.proconfig IS DISTINCT FROM '{"search_path=pg_catalog, pg_temp"}')
           AS without_pinned_search_path
  FROM pg_proc AS p
 WHERE p.pronamespace = 'taskq'::regnamespace AND p.prosecdef;

-- ------------------------------------------------------------ relations
-- Privileges per relation and role: S select, I insert, U update, D delete,
-- T truncate, R references, G trigger ('-': none).  Nobody but the owner
-- gets TRIGGER or REFERENCES: a trigger on taskq.tasks would run inside the
-- SECURITY DEFINER functions as their owner.
SELECT c.oid::regclass AS relation, r.role,
       concat(CASE WHEN has_table_privilege(r.role, c.oid, 'SELECT') THEN 'S' ELSE '-' END,
              CASE WHEN c.relkind = 'S' THEN '-----'
                   ELSE concat(
                       CASE WHEN has_table_privilege(r.role, c.oid, 'INSERT') THEN 'I' ELSE '-' END,
                       CASE WHEN has_table_privilege(r.role, c.oid, 'UPDATE') THEN 'U' ELSE '-' END,
                       CASE WHEN has_table_privilege(r.role, c.oid, 'DELETE') THEN 'D' ELSE '-' END,
                       CASE WHEN has_table_privilege(r.role, c.oid, 'TRUNCATE') THEN 'T' ELSE '-' END,
                       CASE WHEN has_table_privilege(r.role, c.oid, 'REFERENCES') THEN 'R' ELSE '-' END) END,
              CASE WHEN c.relkind <> 'S' AND has_table_privilege(r.role, c.oid, 'TRIGGER') THEN 'G' ELSE '-' END,
              CASE WHEN c.relkind = 'S' AND has_sequence_privilege(r.role, c.oid, 'USAGE') THEN ' usage' END)
           AS privileges
  FROM pg_class AS c,
       (VALUES ('taskq_producer'), ('taskq_worker'), ('taskq_admin'), ('taskq_monitor'),
               ('regress_nobody')) AS r(role)
 WHERE c.relnamespace = 'taskq'::regnamespace AND c.relkind IN ('r', 'v', 'S')
 ORDER BY c.relname COLLATE "C", r.role COLLATE "C";

-- Settings admins may change with ALTER SYSTEM (then a reload applies them).
SELECT s.name, has_parameter_privilege('taskq_admin', s.name, 'ALTER SYSTEM') AS admin
  FROM (VALUES ('taskq.notify_interval'), ('taskq.worker_naptime'), ('taskq.retention'),
               ('taskq.worker_retention'), ('taskq.metrics_interval'),
               ('taskq.worker_role'), ('taskq.background_worker')) AS s(name)
 ORDER BY 1;

-- ------------------------------------------------------------ every function as every role
-- Each function of schema taskq called with NULL arguments (nothing
-- happens: every one refuses NULL) by each role: 'denied' is 42501,
-- anything else means the call was let in.  New functions show up here
-- by themselves.
CREATE TEMP TABLE call_matrix AS
SELECT p.proname::text AS function, r.role,
       CASE WHEN split_part(public.as_role(r.role,
                 pg_catalog.format('SELECT %s(%s)', p.oid::regproc,
                     (SELECT string_agg('NULL::' || format_type(t, NULL), ', ' ORDER BY o)
                        FROM unnest(p.proargtypes) WITH ORDINALITY AS a(t, o)))), ':', 1) = '42501'
            THEN 'denied' ELSE 'allowed' END AS outcome
  FROM pg_proc AS p,
       (VALUES ('regress_producer'), ('regress_worker'), ('regress_admin'),
               ('regress_monitor'), ('regress_nobody')) AS r(role)
 WHERE p.pronamespace = 'taskq'::regnamespace;

SELECT function,
       max(outcome) FILTER (WHERE role = 'regress_producer') AS producer,
       max(outcome) FILTER (WHERE role = 'regress_worker') AS worker,
       max(outcome) FILTER (WHERE role = 'regress_admin') AS admin,
       max(outcome) FILTER (WHERE role = 'regress_monitor') AS monitor,
       max(outcome) FILTER (WHERE role = 'regress_nobody') AS nobody
  FROM call_matrix GROUP BY function ORDER BY function COLLATE "C";

-- Every relation read by every role.
SELECT c.relname AS relation,
       max(split_part(public.as_role(r.role, 'SELECT 1 FROM ' || c.oid::regclass || ' LIMIT 0'), ':', 1))
           FILTER (WHERE r.role = 'regress_producer') AS producer,
       max(split_part(public.as_role(r.role, 'SELECT 1 FROM ' || c.oid::regclass || ' LIMIT 0'), ':', 1))
           FILTER (WHERE r.role = 'regress_worker') AS worker,
       max(split_part(public.as_role(r.role, 'SELECT 1 FROM ' || c.oid::regclass || ' LIMIT 0'), ':', 1))
           FILTER (WHERE r.role = 'regress_admin') AS admin,
       max(split_part(public.as_role(r.role, 'SELECT 1 FROM ' || c.oid::regclass || ' LIMIT 0'), ':', 1))
           FILTER (WHERE r.role = 'regress_monitor') AS monitor,
       max(split_part(public.as_role(r.role, 'SELECT 1 FROM ' || c.oid::regclass || ' LIMIT 0'), ':', 1))
           FILTER (WHERE r.role = 'regress_nobody') AS nobody
  FROM pg_class AS c,
       (VALUES ('regress_producer'), ('regress_worker'), ('regress_admin'),
               ('regress_monitor'), ('regress_nobody')) AS r(role)
 WHERE c.relnamespace = 'taskq'::regnamespace AND c.relkind IN ('r', 'v')
 GROUP BY c.relname ORDER BY c.relname COLLATE "C";

-- ------------------------------------------------------------ the API works with these rights only
-- (the functions are SECURITY DEFINER: no role has rights on taskq.tasks
-- but the admin)
SET SESSION AUTHORIZATION regress_producer;
SELECT taskq.insert_tasks('[{"id": "p1", "action": "copy", "to_signal_after": ["p3"]},
                            {"id": "p2", "action": "mail"},
                            {"id": "p3", "action": "zip"}]') AS inserted;
SELECT taskq.chain('[{"id": "c1", "action": "copy"}, {"id": "c2", "action": "mail"}]') AS chained;
SELECT taskq.add_dependencies('{c2}', '{p3}') AS added;
SELECT taskq.replace_tasks('[{"id": "p2", "action": "mail", "priority": 5}]') AS replaced;
SELECT taskq.enqueue('mail', '{}', 'p4') AS enqueued;
SELECT cardinality(taskq.enqueue_many('mail', ARRAY['{}', '{}']::jsonb[])) AS enqueued_many;
SELECT taskq.wait_for_task('p1', '0 s') IS NULL AS p1_not_finished;
RESET SESSION AUTHORIZATION;

-- (the copies keep their attempts, which every role but nobody may read)
SELECT taskq.set_action_policy('copy', NULL, NULL, true) AS keeps_attempts;
SET SESSION AUTHORIZATION regress_worker;
SELECT id, action FROM taskq.own_tasks('w', 1, '{copy}', '1 hour') \gset w_
RESET SESSION AUTHORIZATION;
-- (tokens are read by the superuser here; workers get them from own_tasks)
SELECT performance_token AS w_token FROM taskq.tasks WHERE id = :'w_id' \gset
SET SESSION AUTHORIZATION regress_worker;
SELECT id, owned FROM taskq.extend_ownership('w', ARRAY[:'w_id'], ARRAY[:'w_token']::uuid[], '1 hour');
SELECT taskq.return_task(:'w_id', :'w_token', 'copied', 'completed') AS returned;
SELECT taskq.worker_heartbeat('w-1', '{"actor": "w", "pid": 1}') AS heartbeat;
SELECT taskq.worker_heartbeat('w-2') AS heartbeat;
SELECT taskq.worker_stopped('w-2') AS stopped;
RESET SESSION AUTHORIZATION;

SET SESSION AUTHORIZATION regress_monitor;
SELECT action, ready, blocked, in_progress, completed FROM taskq.action_stats ORDER BY action;
SELECT count(*) AS in_progress FROM taskq.tasks_in_progress;
SELECT worker_id, actor, pid, in_progress, stale FROM taskq.workers;
SELECT try, actor, outcome, status FROM taskq.task_attempts(:'w_id');
SELECT task_id = :'w_id' AS same_task, outcome FROM taskq.attempts;
RESET SESSION AUTHORIZATION;
SELECT public.as_role('regress_producer', $$SELECT count(*) FROM taskq.task_attempts('$$ || :'w_id' || $$')$$) AS producer_reads_attempts;
SELECT public.as_role('regress_worker', $$SELECT count(*) FROM taskq.task_attempts('$$ || :'w_id' || $$')$$) AS worker_reads_attempts;
SELECT public.as_role('regress_worker', $$SELECT * FROM taskq.attempts$$) AS worker_reads_attempts_table;
SELECT public.as_role('regress_nobody', $$SELECT count(*) FROM taskq.task_attempts('$$ || :'w_id' || $$')$$) AS nobody_reads_attempts;
SELECT public.as_role('regress_monitor', $$SELECT taskq.worker_heartbeat('m-1')$$) AS monitor_heartbeats;
-- limits: set by the admin, read by the monitor
SET SESSION AUTHORIZATION regress_admin;
SELECT taskq.set_concurrency_limit('zip', 2, 1) AS limit_set;
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_monitor;
SELECT action, max_running, max_running_per_key, running FROM taskq.limits;
RESET SESSION AUTHORIZATION;
SELECT public.as_role('regress_producer', $$SELECT taskq.set_concurrency_limit('zip', 1)$$) AS producer_sets_limit;
SELECT public.as_role('regress_worker', $$SELECT taskq.clear_limits('zip')$$) AS worker_clears_limits;
SELECT public.as_role('regress_worker', $$SELECT * FROM taskq.limits$$) AS worker_reads_limits;
SET SESSION AUTHORIZATION regress_admin;
SELECT taskq.clear_limits('zip') AS limits_cleared;
RESET SESSION AUTHORIZATION;
SELECT public.as_role('regress_worker', $$SELECT * FROM taskq.workers$$) AS worker_reads_workers;
SELECT public.as_role('regress_worker', $$SELECT * FROM taskq.worker_registry$$) AS worker_reads_registry;
DELETE FROM taskq.worker_registry;
-- Schedules: admins schedule and unschedule; monitors and admins read the view.
SELECT public.as_role('regress_admin', $$SELECT taskq.schedule('s-1', '@daily', '{"action": "copy"}')$$) AS admin_schedules;
SET SESSION AUTHORIZATION regress_monitor;
SELECT name, cron, time_zone, task, catch_up, last_tick FROM taskq.schedules;
RESET SESSION AUTHORIZATION;
SELECT public.as_role('regress_producer', $$SELECT taskq.schedule('s-2', '@daily', '{"action": "copy"}')$$) AS producer_schedules;
SELECT public.as_role('regress_monitor', $$SELECT taskq.unschedule('s-1')$$) AS monitor_unschedules;
SELECT public.as_role('regress_worker', $$SELECT * FROM taskq.schedules$$) AS worker_reads_schedules;
SELECT public.as_role('regress_monitor', $$SELECT * FROM taskq.schedule_registry$$) AS monitor_reads_schedule_registry;
SELECT public.as_role('regress_admin', $$SELECT taskq.unschedule('s-1')$$) AS admin_unschedules;
SELECT count(*) AS schedules_left FROM taskq.schedules;

SET SESSION AUTHORIZATION regress_producer;
SELECT status_code FROM taskq.wait_for_task(:'w_id', '1 s');
RESET SESSION AUTHORIZATION;

-- What each role may not do.
SELECT public.as_role('regress_producer', $$SELECT * FROM taskq.own_tasks('p', 1, NULL)$$) AS producer_owns;
SELECT public.as_role('regress_producer', $$SELECT * FROM taskq.action_stats$$) AS producer_monitors;
SELECT public.as_role('regress_producer', $$UPDATE taskq.tasks SET priority = 9$$) AS producer_updates;
SELECT public.as_role('regress_worker', $$SELECT taskq.insert_tasks('[{"id": "x", "action": "copy"}]')$$) AS worker_inserts;
SELECT public.as_role('regress_worker', $$SELECT * FROM taskq.tasks$$) AS worker_reads_tasks;
SELECT public.as_role('regress_worker', $$SELECT taskq.wait_for_task('p1', '0 s')$$) AS worker_waits;
SELECT public.as_role('regress_monitor', $$SELECT * FROM taskq.own_tasks('m', 1, NULL)$$) AS monitor_owns;
SELECT public.as_role('regress_monitor', $$SELECT body FROM taskq.tasks$$) AS monitor_reads_bodies;
SELECT public.as_role('regress_nobody', $$SELECT * FROM taskq.action_stats$$) AS nobody_monitors;
SELECT public.as_role('regress_nobody', $$SELECT taskq.insert_tasks('[]')$$) AS nobody_inserts;
SELECT public.as_role('regress_admin', $$CREATE TRIGGER t BEFORE UPDATE ON taskq.tasks
    FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()$$) AS admin_adds_trigger;
SELECT public.as_role('regress_admin', $$CREATE FUNCTION taskq.f() RETURNS int LANGUAGE sql AS 'SELECT 1'$$) AS admin_creates_in_schema;

-- The admin does everything: every function, the tables, purge.
SET SESSION AUTHORIZATION regress_admin;
SELECT taskq.insert_tasks('[{"id": "a1", "action": "copy"}]') AS inserted;
SELECT count(*) AS owned FROM taskq.own_tasks('admin', 1, '{copy}');
SELECT count(*) AS tasks FROM taskq.tasks;
UPDATE taskq.tasks SET priority = 1 WHERE id = 'a1';
SELECT taskq.purge_finished('0 s') AS purged;
INSERT INTO taskq.action_grants VALUES ('regress_copier', 'copy');
SELECT role, action FROM taskq.action_grants;
RESET SESSION AUTHORIZATION;

-- ------------------------------------------------------------ per-action limits
-- regress_copier: rows for itself (copy).  regress_pool_member: rows for
-- a role it belongs to (zip).  Both are workers; the superuser, the
-- admin and regress_worker have no limit.
DELETE FROM taskq.tasks;
INSERT INTO taskq.action_grants VALUES ('regress_zip_pool', 'zip');
SELECT taskq.insert_tasks('[{"id": "copy-1", "action": "copy"}, {"id": "copy-2", "action": "copy"},
                            {"id": "mail-1", "action": "mail"}, {"id": "zip-1", "action": "zip"},
                            {"id": "mail-2", "action": "mail"}]');

-- own_tasks filters: any action means its own; other actions give nothing.
SET SESSION AUTHORIZATION regress_copier;
SELECT id FROM taskq.own_tasks('copier', 10, '{mail}', '1 hour');
SELECT id FROM taskq.own_tasks('copier', 10, '{mail,copy}', '1 hour');
SELECT id FROM taskq.own_tasks('copier', 10, NULL, '1 hour');
-- SET ROLE to the unlimited group lifts nothing: the login is limited.
SET ROLE taskq_worker;
SELECT current_user, count(*) AS owned FROM taskq.own_tasks('copier', 10, '{mail}', '1 hour');
RESET ROLE;
RESET SESSION AUTHORIZATION;

SET SESSION AUTHORIZATION regress_pool_member;
SELECT id FROM taskq.own_tasks('pool', 10, NULL, '1 hour');
RESET SESSION AUTHORIZATION;

SET SESSION AUTHORIZATION regress_worker;
SELECT id FROM taskq.own_tasks('w', 1, '{mail}', '1 hour');
RESET SESSION AUTHORIZATION;
SELECT performance_token AS mail_token FROM taskq.tasks WHERE id = 'mail-1' \gset
SELECT performance_token AS copy_token FROM taskq.tasks WHERE id = 'copy-1' \gset

-- extend: another action's task is not extended (owned false), even with
-- its token and actor; return: refused with 42501, all or none.
SET SESSION AUTHORIZATION regress_copier;
SELECT id, owned FROM taskq.extend_ownership('w', ARRAY['mail-1'], ARRAY[:'mail_token']::uuid[], '2 hours');
SELECT id, owned FROM taskq.extend_ownership('copier', ARRAY['copy-1', 'mail-1'],
    ARRAY[:'copy_token', :'mail_token']::uuid[], '2 hours');
RESET SESSION AUTHORIZATION;
SELECT public.as_role('regress_copier', $$SELECT taskq.return_task('mail-1', '$$ || :'mail_token' || $$', NULL, 'completed')$$) AS return_other;
SELECT public.as_role('regress_copier', $$SELECT taskq.release_task('mail-1', '$$ || :'mail_token' || $$')$$) AS release_other;
SELECT public.as_role('regress_copier', $$SELECT taskq.return_tasks('{copy-1,mail-1}', '{$$ || :'copy_token' || ',' || :'mail_token' || $$}', NULL, '{completed,completed}')$$) AS return_batch;
SELECT public.as_role('regress_copier', $$SELECT taskq.return_task('no-such-task', '$$ || :'mail_token' || $$', NULL, 'completed')$$) AS return_unknown;
SELECT id, status_code, action_deadline > now() + interval '90 minutes' AS extended
  FROM taskq.tasks WHERE id IN ('copy-1', 'mail-1') ORDER BY id;
-- its own action: returned
SELECT public.as_role('regress_copier', $$SELECT taskq.return_task('copy-1', '$$ || :'copy_token' || $$', NULL, 'completed')$$) AS return_own;

-- Changing the limits takes effect at once, in this session and others.
CREATE EXTENSION dblink;
SELECT dblink_connect('copier', format('dbname=%s port=%s host=%s user=regress_copier',
    current_database(), current_setting('port'),
    split_part(current_setting('unix_socket_directories'), ',', 1)));
SELECT taskq.insert_tasks('[{"id": "mail-3", "action": "mail"}, {"id": "copy-3", "action": "copy"}]');
SELECT * FROM dblink('copier', $$SELECT string_agg(id, ',' ORDER BY id) FROM taskq.own_tasks('copier', 10, '{mail,copy}', '1 hour')$$) AS t(owned text);
INSERT INTO taskq.action_grants VALUES ('regress_copier', 'mail');
SELECT * FROM dblink('copier', $$SELECT string_agg(id, ',' ORDER BY id) FROM taskq.own_tasks('copier', 10, '{mail,copy}', '1 hour')$$) AS t(owned text);
DELETE FROM taskq.action_grants WHERE role = 'regress_copier'::regrole;
SELECT taskq.insert_tasks('[{"id": "zip-2", "action": "zip"}]');
SELECT * FROM dblink('copier', $$SELECT string_agg(id, ',' ORDER BY id) FROM taskq.own_tasks('copier', 10, NULL, '1 hour')$$) AS t(owned text);
-- ... and role membership: joining the zip pool limits it again.
GRANT regress_zip_pool TO regress_copier;
SELECT taskq.insert_tasks('[{"id": "zip-3", "action": "zip"}, {"id": "mail-4", "action": "mail"}]');
SELECT * FROM dblink('copier', $$SELECT string_agg(id, ',' ORDER BY id) FROM taskq.own_tasks('copier', 10, NULL, '1 hour')$$) AS t(owned text);
-- ... and a grant written under session_replication_role = replica (pg_restore, replication tools)
SELECT taskq.insert_tasks('[{"id": "fax-1", "action": "fax"}]');
SELECT * FROM dblink('copier', $$SELECT string_agg(id, ',' ORDER BY id) FROM taskq.own_tasks('copier', 10, '{fax}', '1 hour')$$) AS t(owned text);
SET session_replication_role = replica;
INSERT INTO taskq.action_grants VALUES ('regress_copier', 'fax');
RESET session_replication_role;
SELECT * FROM dblink('copier', $$SELECT string_agg(id, ',' ORDER BY id) FROM taskq.own_tasks('copier', 10, '{fax}', '1 hour')$$) AS t(owned text);
DELETE FROM taskq.action_grants WHERE role = 'regress_copier'::regrole;
SELECT dblink_disconnect('copier');
DROP EXTENSION dblink;

-- Admins are never limited, even with rows.
INSERT INTO taskq.action_grants VALUES ('regress_admin', 'copy');
SET SESSION AUTHORIZATION regress_admin;
SELECT id FROM taskq.own_tasks('admin', 10, '{mail}', '1 hour');
RESET SESSION AUTHORIZATION;

-- Limits are checked: an action name must be 1 to 255 bytes.
SELECT public.expect_error($$INSERT INTO taskq.action_grants VALUES ('regress_copier', '')$$);
SELECT public.expect_error($$INSERT INTO taskq.action_grants VALUES ('regress_copier', repeat('a', 256))$$);

-- ------------------------------------------------------------ sagas
-- Producers start, resume and cancel; only admins define and inject
-- faults; workers return steps, limited by action_grants.
SELECT taskq.define_saga('sec-saga', '{"steps": [{"name": "a", "do": "copy", "undo": "zip"},
                                                 {"name": "b", "do": "mail"}]}');
SELECT public.as_role('regress_producer', $$SELECT taskq.define_saga('sec-saga', '{"steps": [{"name": "a", "do": "copy"}]}')$$) AS producer_defines;
SELECT public.as_role('regress_producer', $$SELECT taskq.start_saga('sec-saga', 'sec-1', '{}', '{"restart_each_step": true}')$$) AS producer_debug;
SELECT public.as_role('regress_admin', $$SELECT taskq.start_saga('sec-saga', 'sec-0', '{}', '{"restart_each_step": true}')$$) AS admin_debug;
SELECT public.as_role('regress_producer', $$SELECT taskq.start_saga('sec-saga', 'sec-1')$$) AS producer_starts;
SELECT public.as_role('regress_worker', $$SELECT taskq.start_saga('sec-saga', 'sec-2')$$) AS worker_starts;
SELECT id FROM taskq.own_tasks('w', 100, '{copy}', '1 hour') WHERE id = 'sec-1/1';
SELECT performance_token AS sec_token FROM taskq.tasks WHERE id = 'sec-1/1' \gset
INSERT INTO taskq.action_grants VALUES ('regress_copier', 'mail');
SELECT public.as_role('regress_copier', $$SELECT taskq.return_step('sec-1/1', '$$ || :'sec_token' || $$', 'success')$$) AS limited_worker_returns;
SELECT public.as_role('regress_producer', $$SELECT taskq.return_step('sec-1/1', '$$ || :'sec_token' || $$', 'success')$$) AS producer_returns;
SELECT public.as_role('regress_worker', $$SELECT taskq.return_step('sec-1/1', '$$ || :'sec_token' || $$', 'wait')$$) AS worker_returns;
SELECT public.as_role('regress_worker', $$SELECT taskq.resume_run('sec-1')$$) AS worker_resumes;
SELECT public.as_role('regress_producer', $$SELECT taskq.resume_run('sec-1')$$) AS producer_resumes;
SELECT public.as_role('regress_producer', $$SELECT taskq.cancel_run('sec-1')$$) AS producer_cancels;
SELECT public.as_role('regress_monitor', $$SELECT count(*) FROM taskq.saga_steps$$) AS monitor_reads_steps;
-- a monitor browses tasks and runs by their columns, not their data or tokens
SELECT public.as_role('regress_monitor', $$SELECT id || ' ' || status_code FROM taskq.tasks WHERE id = 'sec-1/1'$$) AS monitor_reads_task;
SELECT public.as_role('regress_monitor', $$SELECT body FROM taskq.tasks LIMIT 1$$) AS monitor_reads_body;
SELECT public.as_role('regress_monitor', $$SELECT performance_token FROM taskq.tasks LIMIT 1$$) AS monitor_reads_token;
SELECT public.as_role('regress_monitor', $$SELECT context FROM taskq.runs LIMIT 1$$) AS monitor_reads_context;
SELECT public.as_role('regress_monitor', $$SELECT left(taskq.run_graph('sec-1', 'mermaid'), 12)$$) AS monitor_draws_run;
SELECT id, status FROM taskq.runs WHERE id LIKE 'sec-%' ORDER BY id;
DELETE FROM taskq.action_grants;

-- ------------------------------------------------------------ clean up
SELECT taskq.set_action_policy('copy', NULL, NULL, false) AS cleared;
DELETE FROM taskq.action_grants;
DELETE FROM taskq.tasks;
DROP TABLE call_matrix;
DROP FUNCTION public.as_role(text, text);
DROP ROLE regress_producer, regress_worker, regress_admin, regress_monitor, regress_nobody,
          regress_copier, regress_pool_member, regress_zip_pool;
