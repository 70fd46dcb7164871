/*
 * taskq_proxy install script: taskq's calls on a proxy database, routed to
 * shard databases through PL/Proxy.
 *
 * The Makefile copies this file to taskq_proxy--<version>.sql.  The
 * extension is SQL only: it needs PL/Proxy (requires = 'plproxy'), not
 * taskq's library, so a proxy database runs on any server with plproxy.
 * Each shard is an ordinary database with CREATE EXTENSION taskq; the
 * partitions are PL/Proxy's cluster "taskq", configured the SQL/MED way:
 *
 *   CREATE SERVER taskq FOREIGN DATA WRAPPER plproxy
 *     OPTIONS (p0 'host=... dbname=s0', p1 '...', p2 '...', p3 '...');
 *   CREATE USER MAPPING FOR PUBLIC SERVER taskq;
 *   GRANT USAGE ON FOREIGN SERVER taskq TO taskq_producer, ...;
 *
 * What it owns:
 *   - schema taskq_proxy: route(), partition_of(), partitions(),
 *     check_definitions(), action_stats_total, and the internals: the
 *     PL/Proxy functions (_name) that run one call on one partition, the
 *     helpers that split arrays per partition and turn PL/Proxy's errors
 *     into the shard's or into 08006;
 *   - schema taskq: every public function of taskq under its own name and
 *     arguments, so that a client moves from a shard to the proxy by its
 *     connection string alone, and the monitoring views with a column
 *     "partition" in front.
 *
 * Routing (docs/scaling.md): a task lives on the partition of its id's
 * route, the id before its first "/" (PL/Proxy's RUN ON hashtext(route)
 * picks hash & (partitions - 1)).  Calls that name a task, run, job,
 * workflow or schedule go to its partition; calls that take arrays of ids
 * are split per partition, each part committed on its own; claims ask the
 * partitions in turn from a random one and skip one that cannot be
 * reached; settings and definitions are broadcast.  Batches and edges
 * stay inside one route (0A000 otherwise), checked here before anything
 * is sent.
 *
 * Locking: none here.  Every remote call runs in its own transaction on
 * its shard (PL/Proxy commits each call there): a ROLLBACK on the proxy
 * undoes nothing on the shards, and the shard's own locks decide.
 *
 * Privileges: the functions are SECURITY INVOKER, because PL/Proxy
 * connects to the shards as the calling user: a shard's grants decide
 * what a caller may do, the proxy's only who may call (the same four
 * roles, with the same rights as on a shard).  Nothing for PUBLIC.
 *
 * Rules for this script: those of taskq's (no CREATE OR REPLACE, every
 * name schema-qualified, pg_catalog operators spelled out in views).
 */

\echo Use "CREATE EXTENSION taskq_proxy" to load this file. \quit

CREATE SCHEMA taskq;
COMMENT ON SCHEMA taskq IS 'taskq through the proxy: the functions and views of a shard, routed to the partitions';
CREATE SCHEMA taskq_proxy;
COMMENT ON SCHEMA taskq_proxy IS 'taskq_proxy: routing, partitions and the internals of the proxy';
REVOKE ALL ON SCHEMA taskq, taskq_proxy FROM PUBLIC;

/*
 * The roles, as taskq makes them (cluster-wide: a proxy database and a
 * shard on one server share them): created when missing, used when they
 * carry taskq's mark, refused otherwise.
 */
DO $roles$
DECLARE
    r record;
    note text;
BEGIN
    FOR r IN SELECT v.name, v.job
               FROM (VALUES ('taskq_producer', 'enqueue tasks, add dependencies, wait for tasks'),
                            ('taskq_worker', 'claim tasks, extend leases, return tasks'),
                            ('taskq_admin', 'everything: every function, the tables, per-action limits, settings'),
                            ('taskq_monitor', 'read the monitoring views')) AS v(name, job)
    LOOP
        SELECT pg_catalog.shobj_description(a.oid, 'pg_authid') INTO note
          FROM pg_catalog.pg_roles AS a
         WHERE a.rolname OPERATOR(pg_catalog.=) r.name;
        IF NOT FOUND THEN
            EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r.name);
            EXECUTE pg_catalog.format('COMMENT ON ROLE %I IS %L', r.name,
                                      'taskq role: ' OPERATOR(pg_catalog.||) r.job);
        ELSIF note IS NULL OR NOT pg_catalog.starts_with(note, 'taskq role: ') THEN
            RAISE EXCEPTION 'role "%" already exists and is not a taskq role', r.name
                USING ERRCODE = 'duplicate_object',
                      DETAIL = 'CREATE EXTENSION taskq_proxy grants privileges to roles taskq_producer, taskq_worker, taskq_admin and taskq_monitor, and uses an existing one only if its comment starts with "taskq role: ".',
                      HINT = pg_catalog.format('Drop or rename role %I, or, if it is meant for taskq, mark it: COMMENT ON ROLE %I IS %L.',
                                               r.name, r.name, 'taskq role: ' OPERATOR(pg_catalog.||) r.job);
        END IF;
    END LOOP;
END
$roles$;
GRANT USAGE ON SCHEMA taskq, taskq_proxy TO taskq_producer, taskq_worker, taskq_admin, taskq_monitor;

/*
 * ---------------------------------------------------------------------
 * Types: a shard's, under the same names where arguments use them (their
 * values travel as text), and the rows that calls return.
 * ---------------------------------------------------------------------
 */
CREATE TYPE taskq.status AS ENUM ('pending', 'in_progress', 'completed', 'aborted');
CREATE TYPE taskq.trigger_rule AS ENUM ('all_success', 'all_done', 'one_failed', 'one_success');

-- The row of wait_for_task (a shard's taskq.tasks).
CREATE TYPE taskq_proxy.task AS (
    id text, action text, body jsonb, status_code taskq.status, status text, num_tries integer,
    max_tries integer, num_signals integer, total_dependencies integer, to_signal_after text[],
    actor_id text, action_deadline timestamptz, performance_token uuid, post_result boolean,
    priority integer, not_before timestamptz, created_at timestamptz, finished_at timestamptz,
    seq bigint, spontaneous boolean, retry jsonb, workflow text, cancelled boolean,
    trigger taskq.trigger_rule, num_completed integer, num_failed integer, result jsonb,
    claimed_at timestamptz, concurrency_key text);
-- The row of wait_for_run (a shard's taskq.runs).
CREATE TYPE taskq_proxy.run AS (
    id text, kind text, definition text, version integer, status text, state text, context jsonb,
    inputs jsonb, parent text, error text, debug jsonb, created_at timestamptz,
    finished_at timestamptz, step_task text, visits integer, fork text, events jsonb,
    faults jsonb, deadline timestamptz);
-- The row of job_state (a shard's taskq.job_states).
CREATE TYPE taskq_proxy.job_state AS (
    id text, state text, item_count integer, item_progress bigint, created_at timestamptz,
    updated_at timestamptz);
-- The row of task_attempts (a shard's taskq.attempts).
CREATE TYPE taskq_proxy.attempt AS (
    task_id text, try integer, actor text, claimed_at timestamptz, finished_at timestamptz,
    outcome text, status text, result jsonb);
-- A claimed task (own_tasks, return_and_own).
CREATE TYPE taskq_proxy.claim AS (
    id text, token uuid, action text, body jsonb, num_tries integer, action_deadline timestamptz,
    concurrency_key text);

/*
 * ---------------------------------------------------------------------
 * Routing and partitions
 * ---------------------------------------------------------------------
 */
CREATE FUNCTION taskq_proxy.route(id text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN pg_catalog.split_part(id, '/', 1);
COMMENT ON FUNCTION taskq_proxy.route(text) IS
    'the route of an id: the part before its first "/", or all of it; a task lives on its route''s partition';

-- The hash PL/Proxy's RUN ON takes (hash & (partitions - 1) picks the
-- partition); a NULL id goes to partition 0, whose shard then refuses it.
CREATE FUNCTION taskq_proxy._route_hash(id text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN COALESCE(pg_catalog.hashtext(taskq_proxy.route(id)), 0);

-- The partitions' options of the foreign server taskq, as SQL (cheap: every
-- claim and split call reads them); _connstrs refuses an unconfigured proxy.
CREATE FUNCTION taskq_proxy._options() RETURNS TABLE (partition integer, connstr text)
    LANGUAGE sql STABLE
AS $$
    SELECT pg_catalog.substr(o.name, 2)::integer, o.value
      FROM pg_catalog.pg_foreign_server AS s,
           LATERAL pg_catalog.pg_options_to_table(s.srvoptions) AS o(name, value)
     WHERE s.srvname OPERATOR(pg_catalog.=) 'taskq'
       AND o.name OPERATOR(pg_catalog.~) '^p[0-9]+$'
     ORDER BY 1
$$;

CREATE FUNCTION taskq_proxy._not_configured() RETURNS integer
    LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'the partitions of taskq are not configured'
        USING ERRCODE = 'undefined_object',
              HINT = 'Create the foreign server taskq of the PL/Proxy wrapper, with options p0, p1, ... naming each shard: CREATE SERVER taskq FOREIGN DATA WRAPPER plproxy OPTIONS (p0 ''dbname=...'', ...).';
END
$$;

-- PL/pgSQL, not SQL: a PL/pgSQL function keeps its plan for the session,
-- where an SQL function that cannot be inlined (this one aggregates) is
-- planned again at every call, which cost every claim through the proxy a
-- tenth of a millisecond.
CREATE FUNCTION taskq_proxy._count() RETURNS integer
    LANGUAGE plpgsql STABLE
AS $$
DECLARE
    n integer;
BEGIN
    SELECT pg_catalog.count(*)::integer INTO n FROM taskq_proxy._options();
    IF n OPERATOR(pg_catalog.>) 0 THEN
        RETURN n;
    END IF;
    RETURN taskq_proxy._not_configured();
END
$$;

CREATE FUNCTION taskq_proxy._connstrs() RETURNS TABLE (partition integer, connstr text)
    LANGUAGE sql STABLE
AS $$
    SELECT o.partition, o.connstr FROM taskq_proxy._options() AS o
     WHERE taskq_proxy._count() OPERATOR(pg_catalog.>) 0
$$;

CREATE FUNCTION taskq_proxy.partitions() RETURNS TABLE (partition integer, connstr text)
    LANGUAGE sql STABLE
AS $$
    -- password=... (quoted or not) and the password of a URI's user info
    SELECT c.partition,
           pg_catalog.regexp_replace(
               pg_catalog.regexp_replace(c.connstr, '\s*\mpassword\s*=\s*(''([^''\\]|\\.)*''|\S+)', '', 'g'),
               '(postgres(ql)?://[^:@/]*):[^@/]*@', '\1@', 'g')
      FROM taskq_proxy._connstrs() AS c
$$;
COMMENT ON FUNCTION taskq_proxy.partitions() IS
    'the partitions of cluster taskq: number and connection string, passwords removed';


CREATE FUNCTION taskq_proxy.partition_of(id text) RETURNS integer
    LANGUAGE sql STABLE STRICT
    RETURN taskq_proxy._route_hash(id) OPERATOR(pg_catalog.&) (taskq_proxy._count() OPERATOR(pg_catalog.-) 1);
COMMENT ON FUNCTION taskq_proxy.partition_of(text) IS
    'the partition that holds the task, run or job of this id: hashtext(route(id)) & (partitions - 1)';

-- The partition a call went to: that of its id, 0 for a NULL id.
CREATE FUNCTION taskq_proxy._partition_of(id text) RETURNS integer
    LANGUAGE sql STABLE
    RETURN COALESCE(taskq_proxy.partition_of(id), 0);

/*
 * ---------------------------------------------------------------------
 * Errors.  A shard's error reaches the caller as the shard raised it:
 * PL/Proxy prefixes the message ("taskq.return_task(6): [s1] REMOTE
 * ERROR: ...") and the detail and hint; they are taken off.  PL/Proxy's
 * own failures to reach a partition (connection, lost connection, query
 * timeout) are XX000: they become 08006 naming the partition, so that
 * clients retry by SQLSTATE.  Called from the handlers, with what GET
 * STACKED DIAGNOSTICS gave; committed lists the partitions that an
 * earlier part of a split call committed.
 * ---------------------------------------------------------------------
 */
CREATE FUNCTION taskq_proxy._raise(part integer, state text, message text, detail text,
                                   hint text, committed integer[] DEFAULT NULL) RETURNS void
    LANGUAGE plpgsql
AS $$
DECLARE
    m text[];
BEGIN
    IF state OPERATOR(pg_catalog.=) 'XX000' AND message LIKE 'PL/Proxy function %' THEN
        detail := pg_catalog.format('partition %s: %s', part, message);
        hint := 'Retry the call when the partition is back: repeated returns, inserts with the same ids and waits are safe.';
        message := pg_catalog.format('partition %s of cluster taskq cannot be reached', part);
        state := '08006';
    ELSE
        m := pg_catalog.regexp_match(message, '^\S+\(\d+\): \[[^]]*\] REMOTE [A-Z]+: (.*)$', 's');
        IF m IS NOT NULL THEN
            message := m[1];
            detail := pg_catalog.regexp_replace(detail, '^Remote detail: ', '');
            hint := pg_catalog.regexp_replace(hint, '^Remote hint: ', '');
        END IF;
    END IF;
    IF committed IS NOT NULL AND pg_catalog.cardinality(committed) OPERATOR(pg_catalog.>) 0 THEN
        detail := pg_catalog.concat_ws(E'\n', NULLIF(detail, ''),
                      pg_catalog.format('The parts of this call on partitions %s committed; partition %s failed.',
                                        pg_catalog.array_to_string(committed, ', '), part));
    END IF;
    detail := COALESCE(detail, '');
    hint := COALESCE(hint, '');
    IF detail OPERATOR(pg_catalog.=) '' AND hint OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION USING ERRCODE = state, MESSAGE = message;
    ELSIF hint OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION USING ERRCODE = state, MESSAGE = message, DETAIL = detail;
    ELSIF detail OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION USING ERRCODE = state, MESSAGE = message, HINT = hint;
    ELSE
        RAISE EXCEPTION USING ERRCODE = state, MESSAGE = message, DETAIL = detail, HINT = hint;
    END IF;
END
$$;

-- Whether a claim may skip the partition: it is down, failing over,
-- read-only after a failover, or out of connections (never a caller's error).
CREATE FUNCTION taskq_proxy._skippable(state text, message text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    RETURN (state OPERATOR(pg_catalog.=) 'XX000' AND message LIKE 'PL/Proxy function %')
        OR state LIKE '08%'
        OR state OPERATOR(pg_catalog.=) ANY (ARRAY['57P01', '57P02', '57P03', '53300', '25006']);

/*
 * ---------------------------------------------------------------------
 * Splitting arrays per partition.  _parts gives each partition the
 * positions of its ids (in order); _pick takes those elements of an
 * argument array.  An array whose length differs from the ids' (or NULL
 * ids) is not split: the whole call goes to one partition, whose shard
 * refuses it as it would without the proxy.
 * ---------------------------------------------------------------------
 */
CREATE FUNCTION taskq_proxy._parts(ids text[])
    RETURNS TABLE (partition integer, idx integer[])
    LANGUAGE plpgsql STABLE
AS $$
DECLARE
    n integer;
BEGIN
    IF ids IS NULL OR pg_catalog.cardinality(ids) OPERATOR(pg_catalog.=) 0 THEN
        RETURN QUERY SELECT 0, NULL::integer[];
        RETURN;
    END IF;
    -- partition_of per id, with the partitions counted once (a NULL id: 0)
    n := taskq_proxy._count();
    RETURN QUERY
        SELECT taskq_proxy._route_hash(u.id) OPERATOR(pg_catalog.&) (n OPERATOR(pg_catalog.-) 1),
               pg_catalog.array_agg(u.o::integer ORDER BY u.o)
          FROM pg_catalog.unnest(ids) WITH ORDINALITY AS u(id, o)
         GROUP BY 1 ORDER BY 1;
END
$$;

CREATE FUNCTION taskq_proxy._pick(a anyarray, idx integer[]) RETURNS anyarray
    LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN a IS NULL OR idx IS NULL THEN a
                ELSE (SELECT pg_catalog.array_agg(a[u.i] ORDER BY u.o)
                        FROM pg_catalog.unnest(idx) WITH ORDINALITY AS u(i, o)) END
$$;

-- Whether arrays of one call line up with its ids (split only then).
CREATE FUNCTION taskq_proxy._aligned(ids text[], lengths integer[]) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    RETURN ids IS NOT NULL
       AND NOT EXISTS (SELECT FROM pg_catalog.unnest(lengths) AS l(n)
                        WHERE l.n IS NOT NULL AND l.n OPERATOR(pg_catalog.<>) pg_catalog.cardinality(ids));

-- A new task id: a version-7 UUID (time-ordered, as a shard makes them),
-- under the route of the workflow when the task has one.
CREATE FUNCTION taskq_proxy._new_id(workflow text) RETURNS text
    LANGUAGE sql VOLATILE
    RETURN COALESCE(taskq_proxy.route(workflow) OPERATOR(pg_catalog.||) '/', '') OPERATOR(pg_catalog.||)
           pg_catalog.encode(
               pg_catalog.set_bit(pg_catalog.set_bit(
                   -- (OVERLAY is syntax: it cannot be schema-qualified)
                   OVERLAY(pg_catalog.uuid_send(pg_catalog.gen_random_uuid())
                       PLACING pg_catalog.substr(pg_catalog.int8send(
                           pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) OPERATOR(pg_catalog.*) 1000)::bigint),
                           3)
                       FROM 1 FOR 6),
                   52, 1), 53, 1), 'hex')::uuid::text;

/*
 * The route of a batch of task objects (insert_tasks and the shapes),
 * with the ids outside it that it names (after_ids, a chord's join):
 * every id, workflow and to_signal_after of one route, or 0A000 naming
 * two that differ.  A task whose workflow has another route than its id:
 * 22023.  NULL when the batch names no id (it is empty or malformed: the
 * shard then refuses or returns 0).
 */
CREATE FUNCTION taskq_proxy._batch_route(tasks jsonb, others text[] DEFAULT NULL) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    t jsonb;
    r text;
    first_id text;
    id text;
    w text;
    s text;
    edge boolean;
BEGIN
    IF pg_catalog.jsonb_typeof(tasks) OPERATOR(pg_catalog.=) 'object' THEN
        tasks := pg_catalog.jsonb_build_array(tasks);
    END IF;
    IF pg_catalog.jsonb_typeof(tasks) IS DISTINCT FROM 'array' THEN
        RETURN taskq_proxy.route(others[1]);
    END IF;
    FOR t IN SELECT e FROM pg_catalog.jsonb_array_elements(tasks) AS a(e) LOOP
        CONTINUE WHEN pg_catalog.jsonb_typeof(t) IS DISTINCT FROM 'object';
        id := t OPERATOR(pg_catalog.->>) 'id';
        w := CASE WHEN pg_catalog.jsonb_typeof(t OPERATOR(pg_catalog.->) 'workflow') OPERATOR(pg_catalog.=) 'string'
                  THEN t OPERATOR(pg_catalog.->>) 'workflow' END;
        IF id IS NOT NULL AND w IS NOT NULL
           AND taskq_proxy.route(w) OPERATOR(pg_catalog.<>) taskq_proxy.route(id) THEN
            RAISE EXCEPTION 'task "%" and its workflow "%" have different routes', id, w
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = pg_catalog.format('Route "%s" of the id, route "%s" of the workflow: the tasks of a workflow live on the partition of its route.',
                                                 taskq_proxy.route(id), taskq_proxy.route(w)),
                      HINT = pg_catalog.format('Give the task an id under the workflow''s route, such as "%s/...".', taskq_proxy.route(w));
        END IF;
        CONTINUE WHEN id IS NULL;
        IF r IS NULL THEN
            r := taskq_proxy.route(id);
            first_id := id;
        ELSIF taskq_proxy.route(id) OPERATOR(pg_catalog.<>) r THEN
            RAISE EXCEPTION 'batch spans routes: task "%" has route "%", task "%" route "%"',
                            first_id, r, id, taskq_proxy.route(id)
                USING ERRCODE = 'feature_not_supported',
                      DETAIL = 'A batch is inserted atomically on one shard only when all its tasks share one route (the id before its first "/").',
                      HINT = pg_catalog.format('Give the tasks ids under one route, such as "%s/...", or insert them in one call per route.', r);
        END IF;
        IF pg_catalog.jsonb_typeof(t OPERATOR(pg_catalog.->) 'to_signal_after') OPERATOR(pg_catalog.=) 'array' THEN
            FOR s IN SELECT x FROM pg_catalog.jsonb_array_elements_text(t OPERATOR(pg_catalog.->) 'to_signal_after') AS b(x) LOOP
                CONTINUE WHEN s IS NULL OR taskq_proxy.route(s) OPERATOR(pg_catalog.=) r;
                PERFORM taskq_proxy._cross_route(id, s);
            END LOOP;
        END IF;
    END LOOP;
    FOREACH s IN ARRAY COALESCE(others, '{}') LOOP
        CONTINUE WHEN s IS NULL;
        IF r IS NULL THEN
            r := taskq_proxy.route(s);
            first_id := s;
        ELSIF taskq_proxy.route(s) OPERATOR(pg_catalog.<>) r THEN
            PERFORM taskq_proxy._cross_route(s, first_id);
        END IF;
    END LOOP;
    RETURN r;
END
$$;

-- An edge between two routes: 0A000 naming both ids and routes.
CREATE FUNCTION taskq_proxy._cross_route(a text, b text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    RAISE EXCEPTION 'dependency between task "%" (route "%") and task "%" (route "%") crosses routes',
                    a, taskq_proxy.route(a), b, taskq_proxy.route(b)
        USING ERRCODE = 'feature_not_supported',
              DETAIL = 'Tasks of different routes may live on different shards; an edge never crosses routes.',
              HINT = 'Give both ids one route, "<key>/...", or signal across workflows with send_event.';
END
$$;

/*
 * ---------------------------------------------------------------------
 * One call on one partition (PL/Proxy).  Routed by an id: RUN ON the
 * hash of its route, TARGET the shard's function of the same arguments.
 * Addressed to a partition (the parts of a split call, claims, the
 * broadcasts done one partition at a time so that an error names it):
 * RUN ON the partition number.
 * ---------------------------------------------------------------------
 */
CREATE FUNCTION taskq_proxy._enqueue(action text, body jsonb, id text, priority integer,
                                     not_before timestamptz, max_tries integer, workflow text,
                                     concurrency_key text) RETURNS text
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.enqueue; $$;
CREATE FUNCTION taskq_proxy._insert_tasks(part integer, tasks jsonb) RETURNS bigint
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT taskq.insert_tasks(tasks) AS _insert_tasks; $$;
CREATE FUNCTION taskq_proxy._insert_tasks_if_absent(part integer, tasks jsonb)
    RETURNS TABLE (id text, inserted boolean)
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT r.id, r.inserted FROM taskq.insert_tasks_if_absent(tasks) AS r; $$;
CREATE FUNCTION taskq_proxy._replace_tasks(part integer, tasks jsonb) RETURNS bigint
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT taskq.replace_tasks(tasks) AS _replace_tasks; $$;
CREATE FUNCTION taskq_proxy._chain(part integer, tasks jsonb, after_ids text[]) RETURNS bigint
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT taskq.chain(tasks, after_ids) AS _chain; $$;
CREATE FUNCTION taskq_proxy._group(part integer, tasks jsonb, after_ids text[]) RETURNS bigint
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT taskq."group"(tasks, after_ids) AS _group; $$;
CREATE FUNCTION taskq_proxy._chord(part integer, tasks jsonb, join_task jsonb, after_ids text[]) RETURNS bigint
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT taskq.chord(tasks, join_task, after_ids) AS _chord; $$;
CREATE FUNCTION taskq_proxy._add_dependencies(part integer, after_ids text[], run_ids text[]) RETURNS bigint
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT taskq.add_dependencies(after_ids, run_ids) AS _add_dependencies; $$;
CREATE FUNCTION taskq_proxy._create_job(id text, tasks jsonb, item_count integer) RETURNS bigint
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.create_job; $$;
CREATE FUNCTION taskq_proxy._cancel_tasks(part integer, ids text[]) RETURNS bigint
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT taskq.cancel_tasks(ids) AS _cancel_tasks; $$;
CREATE FUNCTION taskq_proxy._redrive_tasks(part integer, ids text[]) RETURNS bigint
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT taskq.redrive_tasks(ids) AS _redrive_tasks; $$;
CREATE FUNCTION taskq_proxy._cancel_workflow(workflow text) RETURNS bigint
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(workflow); TARGET taskq.cancel_workflow; $$;
CREATE FUNCTION taskq_proxy._task_graph(workflow text, format text) RETURNS text
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(workflow); TARGET taskq.task_graph; $$;
CREATE FUNCTION taskq_proxy._wait_for_task(id text, timeout interval) RETURNS taskq_proxy.task
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.wait_for_task; $$;
CREATE FUNCTION taskq_proxy._task_attempts(id text) RETURNS SETOF taskq_proxy.attempt
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.task_attempts; $$;
CREATE FUNCTION taskq_proxy._job_state(id text) RETURNS taskq_proxy.job_state
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.job_state; $$;

-- Workers
CREATE FUNCTION taskq_proxy._own_tasks(part integer, actor text, max_tasks integer, actions text[],
                                       max_duration interval) RETURNS SETOF taskq_proxy.claim
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part;
    SELECT r.id, r.token, r.action, r.body, r.num_tries, r.action_deadline, r.concurrency_key
      FROM taskq.own_tasks(actor, max_tasks, actions, max_duration) AS r; $$;
CREATE FUNCTION taskq_proxy._return_and_own(part integer, ids text[], tokens uuid[], statuses text[],
                                            status_codes taskq.status[], actor text, max_tasks integer,
                                            actions text[], max_duration interval, results jsonb[])
    RETURNS SETOF taskq_proxy.claim
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part;
    SELECT r.id, r.token, r.action, r.body, r.num_tries, r.action_deadline, r.concurrency_key
      FROM taskq.return_and_own(ids, tokens, statuses, status_codes, actor, max_tasks, actions,
                                max_duration, results) AS r; $$;
CREATE FUNCTION taskq_proxy._return_tasks(part integer, ids text[], tokens uuid[], statuses text[],
                                          status_codes taskq.status[], results jsonb[]) RETURNS bigint
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part;
    SELECT taskq.return_tasks(ids, tokens, statuses, status_codes, results) AS _return_tasks; $$;
CREATE FUNCTION taskq_proxy._extend_ownership(part integer, actor text, ids text[], tokens uuid[],
                                              max_duration interval) RETURNS TABLE (id text, owned boolean)
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part;
    SELECT r.id, r.owned FROM taskq.extend_ownership(actor, ids, tokens, max_duration) AS r; $$;
CREATE FUNCTION taskq_proxy._return_task(id text, token uuid, status text, status_code taskq.status,
                                         retry_delay interval, result jsonb) RETURNS void
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.return_task; $$;
CREATE FUNCTION taskq_proxy._release_task(id text, token uuid) RETURNS void
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.release_task; $$;
CREATE FUNCTION taskq_proxy._report_progress(id text, token uuid, items bigint) RETURNS bigint
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.report_progress; $$;
CREATE FUNCTION taskq_proxy._set_job_item_count(id text, token uuid, item_count integer) RETURNS void
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.set_job_item_count; $$;
CREATE FUNCTION taskq_proxy._predecessor_results(id text, token uuid)
    RETURNS TABLE (id text, status_code taskq.status, status text, result jsonb)
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.predecessor_results; $$;
CREATE FUNCTION taskq_proxy._worker_heartbeat(part integer, worker_id text, info jsonb) RETURNS void
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT taskq.worker_heartbeat(worker_id, info) AS _worker_heartbeat; $$;
CREATE FUNCTION taskq_proxy._worker_stopped(part integer, worker_id text) RETURNS void
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT taskq.worker_stopped(worker_id) AS _worker_stopped; $$;

-- Runs
CREATE FUNCTION taskq_proxy._start_machine(machine text, id text, context jsonb, debug jsonb, deadline interval) RETURNS text
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.start_machine; $$;
CREATE FUNCTION taskq_proxy._start_saga(saga text, id text, inputs jsonb, debug jsonb, deadline interval) RETURNS text
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.start_saga; $$;
CREATE FUNCTION taskq_proxy._transition(id text, token uuid, event text, context jsonb) RETURNS text
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.transition; $$;
CREATE FUNCTION taskq_proxy._continue_machine(id text, token uuid, cursor text) RETURNS text
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.continue_machine; $$;
CREATE FUNCTION taskq_proxy._fan_in_contexts(id text, token uuid) RETURNS TABLE (run text, context jsonb)
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.fan_in_contexts; $$;
CREATE FUNCTION taskq_proxy._send_event(run text, event text, context jsonb) RETURNS text
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(run); TARGET taskq.send_event; $$;
CREATE FUNCTION taskq_proxy._return_step(id text, token uuid, result text, working jsonb, error text) RETURNS void
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.return_step; $$;
CREATE FUNCTION taskq_proxy._resume_run(id text, working jsonb) RETURNS void
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.resume_run; $$;
CREATE FUNCTION taskq_proxy._cancel_run(id text) RETURNS text
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.cancel_run; $$;
CREATE FUNCTION taskq_proxy._redrive_run(id text) RETURNS text
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.redrive_run; $$;
CREATE FUNCTION taskq_proxy._migrate_run(id text, version integer, state_map jsonb) RETURNS text
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.migrate_run; $$;
CREATE FUNCTION taskq_proxy._wait_for_run(id text, timeout interval) RETURNS taskq_proxy.run
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.wait_for_run; $$;
CREATE FUNCTION taskq_proxy._run_steps(id text)
    RETURNS TABLE (seq integer, step text, direction text, task_id text, status_code taskq.status,
                   outcome text, num_tries integer, started_at timestamptz, finished_at timestamptz,
                   error text)
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.run_steps; $$;
CREATE FUNCTION taskq_proxy._run_graph(id text, format text) RETURNS text
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(id); TARGET taskq.run_graph; $$;

-- Settings, definitions and schedules
CREATE FUNCTION taskq_proxy._set_action_policy(part integer, action text, max_tries integer, retry jsonb,
                                               keep_attempts boolean) RETURNS void
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part;
    SELECT taskq.set_action_policy(action, max_tries, retry, keep_attempts) AS _set_action_policy; $$;
CREATE FUNCTION taskq_proxy._set_concurrency_limit(part integer, action text, max_running integer,
                                                   max_running_per_key integer) RETURNS void
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part;
    SELECT taskq.set_concurrency_limit(action, max_running, max_running_per_key) AS _set_concurrency_limit; $$;
CREATE FUNCTION taskq_proxy._set_rate_limit(part integer, action text, max integer, per interval,
                                            by_key boolean) RETURNS void
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part;
    SELECT taskq.set_rate_limit(action, max, per, by_key) AS _set_rate_limit; $$;
CREATE FUNCTION taskq_proxy._clear_limits(part integer, action text) RETURNS void
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT taskq.clear_limits(action) AS _clear_limits; $$;
CREATE FUNCTION taskq_proxy._purge_finished(part integer, older_than interval) RETURNS bigint
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT taskq.purge_finished(older_than) AS _purge_finished; $$;
CREATE FUNCTION taskq_proxy._define(part integer, kind text, name text, definition jsonb, version integer) RETURNS integer
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part;
    SELECT CASE kind WHEN 'machine' THEN taskq.define_machine(name, definition, version)
                     ELSE taskq.define_saga(name, definition, version) END AS _define; $$;
CREATE FUNCTION taskq_proxy._definitions(part integer, name text)
    RETURNS TABLE (partition integer, name text, version integer, kind text, definition jsonb)
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part;
    SELECT part::integer AS partition, d.name, d.version, d.kind, d.definition
      FROM taskq.definitions AS d WHERE name IS NULL OR d.name = name; $$;
CREATE FUNCTION taskq_proxy._definition_graph(part integer, name text, format text, version integer) RETURNS text
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part;
    SELECT taskq.definition_graph(name, format, version) AS _definition_graph; $$;
CREATE FUNCTION taskq_proxy._schedule(name text, cron text, task jsonb, time_zone text, catch_up text) RETURNS void
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(name); TARGET taskq.schedule; $$;
CREATE FUNCTION taskq_proxy._unschedule(name text) RETURNS boolean
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON taskq_proxy._route_hash(name); TARGET taskq.unschedule; $$;
CREATE FUNCTION taskq_proxy._metrics(part integer) RETURNS TABLE (name text, labels jsonb, kind text, value double precision)
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part;
    SELECT m.name, m.labels, m.kind, m.value FROM taskq.metrics() AS m; $$;
CREATE FUNCTION taskq_proxy._metrics_text(part integer) RETURNS text
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT taskq.metrics_text() AS _metrics_text; $$;
CREATE FUNCTION taskq_proxy._enqueue_many(part integer, action text, bodies jsonb[], ids text[], priority integer,
                                          not_before timestamptz, max_tries integer, workflow text,
                                          concurrency_key text) RETURNS SETOF text
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part;
    SELECT pg_catalog.unnest(taskq.enqueue_many(action, bodies, ids, priority, not_before, max_tries,
                                                workflow, concurrency_key)) AS _enqueue_many; $$;

/*
 * ---------------------------------------------------------------------
 * The functions of schema taskq, as on a shard.  Each catches what its
 * partition raised and hands it to _raise (the shard's error as the shard
 * raised it, or 08006 for a partition out of reach).
 * ---------------------------------------------------------------------
 */

-- The proxy's lease when a claim gives none: its own session's
-- taskq.default_lease (session settings are not forwarded), when set and
-- positive; else NULL, the shard's.  One expression without a subquery, so
-- that the caller's plan takes it in (inlined) instead of planning it anew
-- at every call.
CREATE FUNCTION taskq_proxy._lease(max_duration interval) RETURNS interval
    LANGUAGE sql STABLE
    RETURN COALESCE(max_duration,
                    NULLIF(GREATEST(NULLIF(pg_catalog.current_setting('taskq.default_lease', true), '')::interval,
                                    '0'::interval),
                           '0'::interval));

CREATE FUNCTION taskq.enqueue(action text, body jsonb DEFAULT NULL::jsonb, id text DEFAULT NULL::text,
                              priority integer DEFAULT 0, not_before timestamptz DEFAULT NULL::timestamptz,
                              max_tries integer DEFAULT NULL::integer, workflow text DEFAULT NULL::text,
                              concurrency_key text DEFAULT NULL::text)
    RETURNS text LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    IF id IS NULL THEN
        id := taskq_proxy._new_id(workflow);
    ELSIF workflow IS NOT NULL THEN
        PERFORM taskq_proxy._batch_route(pg_catalog.jsonb_build_object('id', id, 'workflow', workflow));
    END IF;
    RETURN taskq_proxy._enqueue(action, body, id, priority, not_before, max_tries, workflow, concurrency_key);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text) IS
    'insert one task on the partition of its id''s route (made here when NULL: a UUID, under the workflow''s route when there is one); returns its id';

CREATE FUNCTION taskq.enqueue_many(action text, bodies jsonb[], ids text[] DEFAULT NULL::text[],
                                   priority integer DEFAULT 0, not_before timestamptz DEFAULT NULL::timestamptz,
                                   max_tries integer DEFAULT NULL::integer, workflow text DEFAULT NULL::text,
                                   concurrency_key text DEFAULT NULL::text)
    RETURNS text[] LANGUAGE plpgsql
AS $$
DECLARE
    s text; m text; d text; h text;
    made text[];
    part record;
    done integer[] := '{}';
    p integer := 0;
BEGIN
    IF action IS NULL OR bodies IS NULL
       OR (ids IS NOT NULL AND pg_catalog.cardinality(ids) OPERATOR(pg_catalog.<>) pg_catalog.cardinality(bodies)) THEN
        -- refused as a shard refuses it
        RETURN ARRAY(SELECT taskq_proxy._enqueue_many(0, action, bodies, ids, priority, not_before, max_tries,
                                                      workflow, concurrency_key));
    END IF;
    made := ARRAY(SELECT COALESCE(ids[i], taskq_proxy._new_id(workflow))
                    FROM pg_catalog.generate_subscripts(bodies, 1) AS g(i) ORDER BY i);
    IF workflow IS NOT NULL AND ids IS NOT NULL THEN
        PERFORM taskq_proxy._batch_route(pg_catalog.jsonb_build_object('id', i, 'workflow', workflow))
           FROM pg_catalog.unnest(ids) AS u(i) WHERE i IS NOT NULL;
    END IF;
    FOR part IN SELECT * FROM taskq_proxy._parts(made) LOOP
        p := part.partition;
        PERFORM taskq_proxy._insert_tasks_if_absent(p,
            (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                        'id', made[i], 'action', action, 'body', bodies[i], 'priority', priority,
                        'not_before', not_before, 'max_tries', max_tries, 'workflow', workflow,
                        'concurrency_key', concurrency_key)) ORDER BY i)
               FROM pg_catalog.unnest(part.idx) AS u(i)));
        done := done OPERATOR(pg_catalog.||) p;
    END LOOP;
    RAISE NOTICE 'enqueue_many committed on partitions %', pg_catalog.array_to_string(done, ', ');
    RETURN made;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(p, s, m, d, h, done);
END
$$;
COMMENT ON FUNCTION taskq.enqueue_many(text, jsonb[], text[], integer, timestamptz, integer, text, text) IS
    'insert tasks of one action, split per partition (each part atomic and inserted if absent, so a repeat with the same ids completes the call); returns their ids in argument order';

CREATE FUNCTION taskq.insert_tasks(tasks jsonb) RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; p integer := 0;
BEGIN
    p := taskq_proxy._partition_of(taskq_proxy._batch_route(tasks));
    RETURN taskq_proxy._insert_tasks(p, tasks);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(p, s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.insert_tasks(jsonb) IS
    'insert a batch of tasks of one route (0A000 otherwise), atomically on its partition';

CREATE FUNCTION taskq.insert_tasks_if_absent(tasks jsonb) RETURNS TABLE (id text, inserted boolean) LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; p integer := 0;
BEGIN
    p := taskq_proxy._partition_of(taskq_proxy._batch_route(tasks));
    RETURN QUERY SELECT * FROM taskq_proxy._insert_tasks_if_absent(p, tasks);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(p, s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.insert_tasks_if_absent(jsonb) IS
    'insert the tasks of a batch of one route whose ids are not stored yet, atomically on its partition; says which were inserted';

CREATE FUNCTION taskq.replace_tasks(tasks jsonb) RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; p integer := 0;
BEGIN
    p := taskq_proxy._partition_of(taskq_proxy._batch_route(tasks));
    RETURN taskq_proxy._replace_tasks(p, tasks);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(p, s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.replace_tasks(jsonb) IS
    'replace a batch of tasks of one route, atomically on its partition';

CREATE FUNCTION taskq.chain(tasks jsonb, after_ids text[] DEFAULT NULL::text[]) RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; p integer := 0;
BEGIN
    p := taskq_proxy._partition_of(taskq_proxy._batch_route(tasks, after_ids));
    RETURN taskq_proxy._chain(p, tasks, after_ids);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(p, s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.chain(jsonb, text[]) IS
    'insert tasks of one route that run one after another (the first after every after_ids), on their partition';

CREATE FUNCTION taskq."group"(tasks jsonb, after_ids text[] DEFAULT NULL::text[]) RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; p integer := 0;
BEGIN
    p := taskq_proxy._partition_of(taskq_proxy._batch_route(tasks, after_ids));
    RETURN taskq_proxy._group(p, tasks, after_ids);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(p, s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq."group"(jsonb, text[]) IS
    'insert parallel tasks of one route, each after every after_ids, on their partition';

CREATE FUNCTION taskq.chord(tasks jsonb, "join" jsonb, after_ids text[] DEFAULT NULL::text[]) RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; p integer := 0;
BEGIN
    p := taskq_proxy._partition_of(taskq_proxy._batch_route(
             CASE WHEN pg_catalog.jsonb_typeof(tasks) OPERATOR(pg_catalog.=) 'array'
                       AND pg_catalog.jsonb_typeof("join") OPERATOR(pg_catalog.=) 'object'
                  THEN tasks OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_array("join") ELSE tasks END,
             after_ids));
    RETURN taskq_proxy._chord(p, tasks, "join", after_ids);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(p, s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.chord(jsonb, jsonb, text[]) IS
    'insert a group of one route and a join task that waits for all of them, on their partition';

CREATE FUNCTION taskq.create_job(id text, tasks jsonb DEFAULT '[]'::jsonb, item_count integer DEFAULT NULL::integer)
    RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    -- the job's tasks get its id as their workflow: their ids must share its route
    IF pg_catalog.jsonb_typeof(tasks) OPERATOR(pg_catalog.=) 'array' AND id IS NOT NULL THEN
        PERFORM taskq_proxy._batch_route(
            (SELECT pg_catalog.jsonb_agg(CASE WHEN pg_catalog.jsonb_typeof(e) OPERATOR(pg_catalog.=) 'object'
                                              THEN e OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('workflow', id)
                                              ELSE e END)
               FROM pg_catalog.jsonb_array_elements(tasks) AS a(e)),
            ARRAY[id]);
    END IF;
    RETURN taskq_proxy._create_job(id, tasks, item_count);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.create_job(text, jsonb, integer) IS
    'create a job and insert its first tasks (their workflow key is the job''s id, their ids under its route); returns the tasks inserted (routed by id)';

CREATE FUNCTION taskq.add_dependencies(after_ids text[], run_ids text[]) RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE
    s text; m text; d text; h text;
    part record;
    total bigint := 0;
    done integer[] := '{}';
    p integer := 0;
BEGIN
    IF NOT taskq_proxy._aligned(run_ids, ARRAY[pg_catalog.cardinality(after_ids)]) OR after_ids IS NULL THEN
        p := taskq_proxy._partition_of(run_ids[1]);
        RETURN taskq_proxy._add_dependencies(p, after_ids, run_ids);
    END IF;
    PERFORM taskq_proxy._cross_route(after_ids[i], run_ids[i])
       FROM pg_catalog.generate_subscripts(run_ids, 1) AS g(i)
      WHERE taskq_proxy.route(after_ids[i]) OPERATOR(pg_catalog.<>) taskq_proxy.route(run_ids[i]);
    FOR part IN SELECT * FROM taskq_proxy._parts(run_ids) LOOP
        p := part.partition;
        total := total OPERATOR(pg_catalog.+)
                 taskq_proxy._add_dependencies(p, taskq_proxy._pick(after_ids, part.idx),
                                               taskq_proxy._pick(run_ids, part.idx));
        done := done OPERATOR(pg_catalog.||) p;
    END LOOP;
    RETURN total;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(p, s, m, d, h, done);
END
$$;
COMMENT ON FUNCTION taskq.add_dependencies(text[], text[]) IS
    'make each run_ids[i] wait for after_ids[i] (one route each pair), split per partition: each part atomic';

/*
 * Calls that take arrays of ids: split per partition, each part one call
 * (atomic there), the sum returned.  A part that fails leaves the parts
 * before it committed: the error's detail names them.
 */
CREATE FUNCTION taskq.cancel_tasks(ids text[]) RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; part record; total bigint := 0; done integer[] := '{}'; p integer := 0;
BEGIN
    FOR part IN SELECT * FROM taskq_proxy._parts(ids) LOOP
        p := part.partition;
        total := total OPERATOR(pg_catalog.+) taskq_proxy._cancel_tasks(p, taskq_proxy._pick(ids, part.idx));
        done := done OPERATOR(pg_catalog.||) p;
    END LOOP;
    RETURN total;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(p, s, m, d, h, done);
END
$$;
COMMENT ON FUNCTION taskq.cancel_tasks(text[]) IS
    'cancel tasks, split per partition (each part atomic): abort those nobody owns, mark those owned so that they end aborted';

CREATE FUNCTION taskq.redrive_tasks(ids text[]) RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; part record; total bigint := 0; done integer[] := '{}'; p integer := 0;
BEGIN
    FOR part IN SELECT * FROM taskq_proxy._parts(ids) LOOP
        p := part.partition;
        total := total OPERATOR(pg_catalog.+) taskq_proxy._redrive_tasks(p, taskq_proxy._pick(ids, part.idx));
        done := done OPERATOR(pg_catalog.||) p;
    END LOOP;
    RETURN total;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(p, s, m, d, h, done);
END
$$;
COMMENT ON FUNCTION taskq.redrive_tasks(text[]) IS
    'return aborted tasks to pending with fresh tries, split per partition (each part atomic)';

CREATE FUNCTION taskq.return_tasks(ids text[], tokens uuid[], statuses text[], status_codes taskq.status[],
                                   results jsonb[] DEFAULT NULL::jsonb[]) RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; part record; total bigint := 0; done integer[] := '{}'; p integer := 0;
BEGIN
    IF NOT taskq_proxy._aligned(ids, ARRAY[pg_catalog.cardinality(tokens), pg_catalog.cardinality(statuses),
                                           pg_catalog.cardinality(status_codes), pg_catalog.cardinality(results)]) THEN
        p := taskq_proxy._partition_of(ids[1]);
        RETURN taskq_proxy._return_tasks(p, ids, tokens, statuses, status_codes, results);
    END IF;
    FOR part IN SELECT * FROM taskq_proxy._parts(ids) LOOP
        p := part.partition;
        total := total OPERATOR(pg_catalog.+)
                 taskq_proxy._return_tasks(p, taskq_proxy._pick(ids, part.idx), taskq_proxy._pick(tokens, part.idx),
                                           taskq_proxy._pick(statuses, part.idx), taskq_proxy._pick(status_codes, part.idx),
                                           taskq_proxy._pick(results, part.idx));
        done := done OPERATOR(pg_catalog.||) p;
    END LOOP;
    RETURN total;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(p, s, m, d, h, done);
END
$$;
COMMENT ON FUNCTION taskq.return_tasks(text[], uuid[], text[], taskq.status[], jsonb[]) IS
    'return several owned tasks, split per partition (each part atomic; a repeat is safe: returned tasks are left alone); returns how many were returned';

CREATE FUNCTION taskq.extend_ownership(actor text, ids text[], tokens uuid[], max_duration interval)
    RETURNS TABLE (id text, owned boolean) LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; part record; done integer[] := '{}'; p integer := 0;
BEGIN
    IF NOT taskq_proxy._aligned(ids, ARRAY[pg_catalog.cardinality(tokens)]) THEN
        p := taskq_proxy._partition_of(ids[1]);
        RETURN QUERY SELECT * FROM taskq_proxy._extend_ownership(p, actor, ids, tokens, max_duration);
        RETURN;
    END IF;
    FOR part IN SELECT * FROM taskq_proxy._parts(ids) LOOP
        p := part.partition;
        RETURN QUERY SELECT * FROM taskq_proxy._extend_ownership(p, actor, taskq_proxy._pick(ids, part.idx),
                                                                 taskq_proxy._pick(tokens, part.idx), max_duration);
        done := done OPERATOR(pg_catalog.||) p;
    END LOOP;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(p, s, m, d, h, done);
END
$$;
COMMENT ON FUNCTION taskq.extend_ownership(text, text[], uuid[], interval) IS
    'extend the leases of owned tasks, split per partition; says for each whether it is still owned';

/*
 * Claims.  own_tasks asks the partitions in turn, from a random one, until
 * it has max_tasks or asked each once.  A partition that cannot be
 * reached (or is read-only, failing over, out of connections) is skipped
 * with a WARNING: the claims made on the others are returned, never lost.
 * Any other error is the caller's and is raised.
 */
CREATE FUNCTION taskq_proxy._claim_from(first integer, actor text, max_tasks integer, actions text[],
                                        max_duration interval, got integer, asks integer, n integer)
    RETURNS SETOF taskq_proxy.claim LANGUAGE plpgsql
AS $$
DECLARE
    s text; m text; d text; h text;
    k integer;
    p integer;
    c bigint;
BEGIN
    FOR k IN 0 .. asks OPERATOR(pg_catalog.-) 1 LOOP
        EXIT WHEN got OPERATOR(pg_catalog.>=) max_tasks AND k OPERATOR(pg_catalog.>) 0;
        p := (first OPERATOR(pg_catalog.+) k) OPERATOR(pg_catalog.%) n;
        BEGIN
            RETURN QUERY SELECT * FROM taskq_proxy._own_tasks(p, actor, max_tasks OPERATOR(pg_catalog.-) got,
                                                              actions, max_duration);
            GET DIAGNOSTICS c = ROW_COUNT;
            got := got OPERATOR(pg_catalog.+) c::integer;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
            IF NOT taskq_proxy._skippable(s, m) THEN
                PERFORM taskq_proxy._raise(p, s, m, d, h);
            END IF;
            RAISE WARNING 'skipping partition % of cluster taskq: %', p, m USING ERRCODE = s;
        END;
    END LOOP;
END
$$;

CREATE FUNCTION taskq.own_tasks(actor text, max_tasks integer, actions text[],
                                max_duration interval DEFAULT NULL::interval, wait interval DEFAULT NULL::interval)
    RETURNS TABLE (id text, token uuid, action text, body jsonb, num_tries integer,
                   action_deadline timestamptz, concurrency_key text)
    LANGUAGE plpgsql
AS $$
DECLARE
    n integer;
BEGIN
    IF wait IS NOT NULL THEN
        RAISE EXCEPTION 'own_tasks with wait is not supported through the proxy'
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'A waiting claim sleeps in one database until work arrives there; the proxy spans several.',
                  HINT = 'Run a worker per shard with the waiting claim (taskq-worker and the Python library take several shard connection strings), or claim through the proxy without wait.';
    END IF;
    n := taskq_proxy._count();
    RETURN QUERY SELECT * FROM taskq_proxy._claim_from(
        pg_catalog.floor(pg_catalog.random() OPERATOR(pg_catalog.*) n)::integer, actor, max_tasks, actions,
        taskq_proxy._lease(max_duration), 0, n, n);
END
$$;
COMMENT ON FUNCTION taskq.own_tasks(text, integer, text[], interval, interval) IS
    'claim up to max_tasks ready tasks of the given actions (NULL: any) for actor from the partitions in turn, skipping one that cannot be reached; wait is refused through the proxy';

CREATE FUNCTION taskq.return_and_own(ids text[], tokens uuid[], statuses text[], status_codes taskq.status[],
                                     actor text, max_tasks integer, actions text[],
                                     max_duration interval DEFAULT NULL::interval, results jsonb[] DEFAULT NULL::jsonb[])
    RETURNS TABLE (id text, token uuid, action text, body jsonb, num_tries integer,
                   action_deadline timestamptz, concurrency_key text)
    LANGUAGE plpgsql
AS $$
DECLARE
    s text; m text; d text; h text;
    p integer;
    c bigint;
    n integer := taskq_proxy._count();
BEGIN
    max_duration := taskq_proxy._lease(max_duration);
    IF ids IS NULL OR pg_catalog.cardinality(ids) OPERATOR(pg_catalog.=) 0 THEN
        p := pg_catalog.floor(pg_catalog.random() OPERATOR(pg_catalog.*) n)::integer;
    ELSE
        p := taskq_proxy._partition_of(ids[1]);
    END IF;
    IF ids IS NOT NULL AND pg_catalog.cardinality(ids) OPERATOR(pg_catalog.>) 0
       AND EXISTS (SELECT FROM pg_catalog.unnest(ids) AS u(i)
                    WHERE taskq_proxy._route_hash(u.i) OPERATOR(pg_catalog.&) (n OPERATOR(pg_catalog.-) 1)
                          OPERATOR(pg_catalog.<>) p) THEN
        -- ids of several partitions: returned as return_tasks returns them (not atomic), then claims
        PERFORM taskq.return_tasks(ids, tokens, statuses, status_codes, results);
        RETURN QUERY SELECT * FROM taskq_proxy._claim_from(p, actor, max_tasks, actions, max_duration, 0, n, n);
        RETURN;
    END IF;
    -- one partition: returns and a claim there in one call, then the other partitions
    BEGIN
        RETURN QUERY SELECT * FROM taskq_proxy._return_and_own(p, ids, tokens, statuses, status_codes, actor,
                                                               max_tasks, actions, max_duration, results);
        GET DIAGNOSTICS c = ROW_COUNT;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
        PERFORM taskq_proxy._raise(p, s, m, d, h);
    END;
    IF c OPERATOR(pg_catalog.<) max_tasks AND n OPERATOR(pg_catalog.>) 1 THEN
        RETURN QUERY SELECT * FROM taskq_proxy._claim_from((p OPERATOR(pg_catalog.+) 1) OPERATOR(pg_catalog.%) n, actor,
                                                           max_tasks, actions, max_duration, c::integer,
                                                           n OPERATOR(pg_catalog.-) 1, n);
    END IF;
END
$$;
COMMENT ON FUNCTION taskq.return_and_own(text[], uuid[], text[], taskq.status[], text, integer, text[], interval, jsonb[]) IS
    'return owned tasks and claim more: ids of one partition in one call there, then claims from the others; ids of several are returned per partition first (not atomic)';

CREATE FUNCTION taskq_proxy._predecessors(id text, token uuid)
    RETURNS SETOF record LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN QUERY SELECT * FROM taskq_proxy._predecessor_results(id, token);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
-- SQL, not PL/pgSQL: the argument id and the result column id share a name.
CREATE FUNCTION taskq.predecessor_results(id text, token uuid)
    RETURNS TABLE (id text, status_code taskq.status, status text, result jsonb) LANGUAGE sql
AS $$
    SELECT * FROM taskq_proxy._predecessors($1, $2) AS r(id text, status_code taskq.status, status text, result jsonb)
$$;
COMMENT ON FUNCTION taskq.predecessor_results(text, uuid) IS
    'the results of the task''s finished predecessors, for the worker owning it (routed by id)';

/*
 * Calls made on every partition, one after the other: settings, so that
 * the first refusal (a bad argument) stops the call before any partition
 * changed, and a partition out of reach is named with those that took the
 * change (each call is idempotent: repeating it converges); and the
 * workers registry, since a worker claiming through the proxy may hold
 * tasks on every partition: there a partition out of reach is skipped
 * with a WARNING (the next beat reaches it).  fn is the PL/Proxy function
 * (partition first), args the rest of its arguments as literals (format's
 * %L); returns the sum of the results (purge_finished's counts).
 */
CREATE FUNCTION taskq_proxy._broadcast(fn text, args text, skip boolean DEFAULT false) RETURNS bigint
    LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; p integer := 0; done integer[] := '{}'; r text; total bigint := 0;
BEGIN
    FOR p IN SELECT c.partition FROM taskq_proxy._connstrs() AS c LOOP
        BEGIN
            EXECUTE pg_catalog.format('SELECT (taskq_proxy.%I($1, %s))::text', fn, args) INTO r USING p;
            total := total OPERATOR(pg_catalog.+) COALESCE(NULLIF(r, '')::bigint, 0);
            done := done OPERATOR(pg_catalog.||) p;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
            IF NOT (skip AND taskq_proxy._skippable(s, m)) THEN
                PERFORM taskq_proxy._raise(p, s, m, d, h, done);
            END IF;
            RAISE WARNING 'skipping partition % of cluster taskq: %', p, m USING ERRCODE = s;
        END;
    END LOOP;
    RETURN total;
END
$$;

CREATE FUNCTION taskq.worker_heartbeat(worker_id text, info jsonb DEFAULT '{}'::jsonb) RETURNS void LANGUAGE sql
BEGIN ATOMIC
    SELECT taskq_proxy._broadcast('_worker_heartbeat', pg_catalog.format('%L::text, %L::jsonb', worker_id, info), true);
END;
COMMENT ON FUNCTION taskq.worker_heartbeat(text, jsonb) IS
    'record that the worker is alive, on every partition (one that cannot be reached is skipped with a warning)';

CREATE FUNCTION taskq.worker_stopped(worker_id text) RETURNS void LANGUAGE sql
BEGIN ATOMIC
    SELECT taskq_proxy._broadcast('_worker_stopped', pg_catalog.format('%L::text', worker_id), true);
END;
COMMENT ON FUNCTION taskq.worker_stopped(text) IS
    'remove the worker from the registry of every partition (one that cannot be reached is skipped with a warning)';

CREATE FUNCTION taskq.set_action_policy(action text, max_tries integer DEFAULT NULL::integer,
                                        retry jsonb DEFAULT NULL::jsonb, keep_attempts boolean DEFAULT false)
    RETURNS void LANGUAGE sql
BEGIN ATOMIC
    SELECT taskq_proxy._broadcast('_set_action_policy',
        pg_catalog.format('%L::text, %L::integer, %L::jsonb, %L::boolean', action, max_tries, retry, keep_attempts));
END;
COMMENT ON FUNCTION taskq.set_action_policy(text, integer, jsonb, boolean) IS
    'set the retry policy of an action on every partition';

CREATE FUNCTION taskq.set_concurrency_limit(action text, max_running integer DEFAULT NULL::integer,
                                            max_running_per_key integer DEFAULT NULL::integer)
    RETURNS void LANGUAGE sql
BEGIN ATOMIC
    SELECT taskq_proxy._broadcast('_set_concurrency_limit',
        pg_catalog.format('%L::text, %L::integer, %L::integer', action, max_running, max_running_per_key));
END;
COMMENT ON FUNCTION taskq.set_concurrency_limit(text, integer, integer) IS
    'set an action''s concurrency limits on every partition (each partition counts its own running tasks)';

CREATE FUNCTION taskq.set_rate_limit(action text, max integer, per interval, by_key boolean DEFAULT false)
    RETURNS void LANGUAGE sql
BEGIN ATOMIC
    SELECT taskq_proxy._broadcast('_set_rate_limit',
        pg_catalog.format('%L::text, %L::integer, %L::interval, %L::boolean', action, max, per, by_key));
END;
COMMENT ON FUNCTION taskq.set_rate_limit(text, integer, interval, boolean) IS
    'set an action''s rate limit on every partition (each partition counts its own claims)';

CREATE FUNCTION taskq.clear_limits(action text) RETURNS void LANGUAGE sql
BEGIN ATOMIC
    SELECT taskq_proxy._broadcast('_clear_limits', pg_catalog.format('%L::text', action));
END;
COMMENT ON FUNCTION taskq.clear_limits(text) IS
    'remove an action''s concurrency and rate limits on every partition';

CREATE FUNCTION taskq.purge_finished(older_than interval DEFAULT '00:00:00'::interval) RETURNS bigint LANGUAGE sql
    RETURN taskq_proxy._broadcast('_purge_finished', pg_catalog.format('%L::interval', older_than));
COMMENT ON FUNCTION taskq.purge_finished(interval) IS
    'delete finished tasks older than the interval on every partition; returns how many';

/*
 * Definitions: broadcast with an explicit version, so that every partition
 * holds the same definition under the same number.  Without a version:
 * one that some partition already holds with this definition (a repeat
 * of a broadcast that failed half-way), else the highest of any
 * partition plus one.
 */
CREATE FUNCTION taskq_proxy._define_all(kind text, name text, definition jsonb, version integer) RETURNS integer
    LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; p integer := 0; done integer[] := '{}'; v integer;
BEGIN
    IF version IS NULL AND name IS NOT NULL AND definition IS NOT NULL THEN
        SELECT COALESCE(pg_catalog.max(x.version) FILTER (WHERE x.definition OPERATOR(pg_catalog.=) $3),
                        pg_catalog.max(x.version) OPERATOR(pg_catalog.+) 1, 1)
          INTO version
          FROM taskq_proxy._each_definitions($2) AS x;
    END IF;
    FOR p IN SELECT c.partition FROM taskq_proxy._connstrs() AS c LOOP
        v := taskq_proxy._define(p, kind, name, definition, version);
        done := done OPERATOR(pg_catalog.||) p;
    END LOOP;
    RETURN v;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(p, s, m, d, h, done);
END
$$;

CREATE FUNCTION taskq.define_machine(name text, definition jsonb, version integer DEFAULT NULL::integer)
    RETURNS integer LANGUAGE sql
    RETURN taskq_proxy._define_all('machine', name, definition, version);
COMMENT ON FUNCTION taskq.define_machine(text, jsonb, integer) IS
    'store a state machine definition on every partition under one version; returns it';

CREATE FUNCTION taskq.define_saga(name text, definition jsonb, version integer DEFAULT NULL::integer)
    RETURNS integer LANGUAGE sql
    RETURN taskq_proxy._define_all('saga', name, definition, version);
COMMENT ON FUNCTION taskq.define_saga(text, jsonb, integer) IS
    'store a saga definition on every partition under one version; returns it';

CREATE FUNCTION taskq.definition_graph(name text, format text DEFAULT 'dot'::text, version integer DEFAULT NULL::integer)
    RETURNS text LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._definition_graph(0, name, format, version);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(0, s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.definition_graph(text, text, integer) IS
    'draw a definition (dot or mermaid), as partition 0 holds it';

/*
 * ---------------------------------------------------------------------
 * Reading every partition: monitoring, metrics, definitions.  One
 * partition after the other, each row with its partition; a partition
 * that cannot be reached fails the query with its number (monitoring must
 * not lie by omission).  _each runs the PL/Proxy function named for each
 * partition; the row type comes from its second argument.
 * ---------------------------------------------------------------------
 */
CREATE FUNCTION taskq_proxy._each(fn text, rowtype anyelement) RETURNS SETOF anyelement LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; p integer;
BEGIN
    FOR p IN SELECT c.partition FROM taskq_proxy._connstrs() AS c LOOP
        BEGIN
            RETURN QUERY EXECUTE pg_catalog.format('SELECT * FROM taskq_proxy.%I($1)', fn) USING p;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
            PERFORM taskq_proxy._raise(p, s, m, d, h);
        END;
    END LOOP;
END
$$;

CREATE FUNCTION taskq_proxy._each_definitions(of_name text)
    RETURNS TABLE (partition integer, name text, version integer, kind text, definition jsonb)
    LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; p integer;
BEGIN
    FOR p IN SELECT c.partition FROM taskq_proxy._connstrs() AS c LOOP
        BEGIN
            RETURN QUERY SELECT * FROM taskq_proxy._definitions(p, $1);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
            PERFORM taskq_proxy._raise(p, s, m, d, h);
        END;
    END LOOP;
END
$$;

CREATE FUNCTION taskq_proxy.check_definitions()
    RETURNS TABLE (name text, version integer, kind text, missing_on integer[], differs_on integer[])
    LANGUAGE sql
AS $$
    -- each version whose definition is not the same on every partition:
    -- the partitions that lack it, and those whose definition differs
    -- from partition 0's (or the lowest partition's that holds it)
    WITH d AS (SELECT * FROM taskq_proxy._each_definitions(NULL)),
         parts AS (SELECT c.partition FROM taskq_proxy._connstrs() AS c),
         ref AS (SELECT DISTINCT ON (d.name, d.version) d.name, d.version, d.kind, d.definition
                   FROM d ORDER BY d.name, d.version, d.partition)
    SELECT r.name, r.version, r.kind,
           ARRAY(SELECT p.partition FROM parts AS p
                  WHERE NOT EXISTS (SELECT FROM d WHERE d.partition OPERATOR(pg_catalog.=) p.partition
                                       AND d.name OPERATOR(pg_catalog.=) r.name
                                       AND d.version OPERATOR(pg_catalog.=) r.version)
                  ORDER BY 1),
           ARRAY(SELECT d.partition FROM d
                  WHERE d.name OPERATOR(pg_catalog.=) r.name AND d.version OPERATOR(pg_catalog.=) r.version
                    AND (d.definition OPERATOR(pg_catalog.<>) r.definition OR d.kind OPERATOR(pg_catalog.<>) r.kind)
                  ORDER BY 1)
      FROM ref AS r
     WHERE EXISTS (SELECT FROM parts AS p
                    WHERE NOT EXISTS (SELECT FROM d WHERE d.partition OPERATOR(pg_catalog.=) p.partition
                                         AND d.name OPERATOR(pg_catalog.=) r.name
                                         AND d.version OPERATOR(pg_catalog.=) r.version
                                         AND d.kind OPERATOR(pg_catalog.=) r.kind
                                         AND d.definition OPERATOR(pg_catalog.=) r.definition))
     ORDER BY r.name, r.version
$$;
COMMENT ON FUNCTION taskq_proxy.check_definitions() IS
    'the definition versions that differ between partitions: where each is missing, where it differs; empty when all agree';

-- metrics(): every partition's, with its number among the labels.
CREATE FUNCTION taskq.metrics() RETURNS TABLE (name text, labels jsonb, kind text, value double precision)
    LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; p integer;
BEGIN
    FOR p IN SELECT c.partition FROM taskq_proxy._connstrs() AS c LOOP
        BEGIN
            RETURN QUERY SELECT x.name, x.labels OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('partition', p::text),
                                x.kind, x.value
                           FROM taskq_proxy._metrics(p) AS x;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
            PERFORM taskq_proxy._raise(p, s, m, d, h);
        END;
    END LOOP;
END
$$;
COMMENT ON FUNCTION taskq.metrics() IS
    'the metrics of every partition, each with label partition';

/*
 * metrics_text(): the Prometheus text of every partition in one exposition,
 * each sample with label partition="N" first, each family's HELP and TYPE
 * once and its samples together (the format wants a family contiguous).
 * A shard's text is HELP, TYPE, then samples, family after family; a
 * sample line is name, optional {labels}, value.
 */
CREATE FUNCTION taskq.metrics_text() RETURNS text LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text; p integer; texts text[] := '{}';
BEGIN
    FOR p IN SELECT c.partition FROM taskq_proxy._connstrs() AS c LOOP
        BEGIN
            texts := texts OPERATOR(pg_catalog.||) taskq_proxy._metrics_text(p);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
            PERFORM taskq_proxy._raise(p, s, m, d, h);
        END;
    END LOOP;
    RETURN (
        WITH lines AS (
            SELECT t.o::integer OPERATOR(pg_catalog.-) 1 AS part, l.n, l.line,
                   (pg_catalog.regexp_match(l.line, '^# (?:HELP|TYPE) (\S+)'))[1] AS head
              FROM pg_catalog.unnest(texts) WITH ORDINALITY AS t(txt, o),
                   LATERAL pg_catalog.regexp_split_to_table(t.txt, E'\n') WITH ORDINALITY AS l(line, n)
             WHERE l.line OPERATOR(pg_catalog.<>) ''),
        fam AS (
            -- each line's family: the name of the last HELP or TYPE line at or before it
            SELECT lines.*, pg_catalog.max(lines.head) OVER (PARTITION BY lines.part, g) AS family
              FROM (SELECT lines.*, pg_catalog.count(lines.head) OVER (PARTITION BY lines.part ORDER BY lines.n) AS g
                      FROM lines) AS lines),
        ord AS (
            SELECT fam.family, pg_catalog.min(fam.part OPERATOR(pg_catalog.*) 1000000 OPERATOR(pg_catalog.+) fam.n) AS first
              FROM fam GROUP BY fam.family),
        out AS (
            -- HELP and TYPE once (the first partition's), then every partition's samples
            SELECT ord.first, 0 AS part, fam.n, fam.line
              FROM fam JOIN ord ON ord.family OPERATOR(pg_catalog.=) fam.family
             WHERE fam.head IS NOT NULL
               AND fam.part OPERATOR(pg_catalog.=) (ord.first OPERATOR(pg_catalog./) 1000000)
            UNION ALL
            SELECT ord.first, fam.part OPERATOR(pg_catalog.+) 1, fam.n,
                   pg_catalog.regexp_replace(fam.line, '^([^{ ]+)(\{)?',
                       '\1{partition="' OPERATOR(pg_catalog.||) fam.part OPERATOR(pg_catalog.||) '"'
                       OPERATOR(pg_catalog.||) CASE WHEN fam.line ~ '^[^{ ]+\{' THEN ',' ELSE '}' END)
              FROM fam JOIN ord ON ord.family OPERATOR(pg_catalog.=) fam.family
             WHERE fam.head IS NULL AND fam.line !~ '^#')
        SELECT pg_catalog.string_agg(out.line, E'\n' ORDER BY out.first, out.part, out.n) OPERATOR(pg_catalog.||) E'\n'
          FROM out);
END
$$;
COMMENT ON FUNCTION taskq.metrics_text() IS
    'the metrics of every partition in the Prometheus text format, each sample labelled partition';

/*
 * ---------------------------------------------------------------------
 * Calls routed by the id, run, workflow or schedule they name: one call
 * on its partition.
 * ---------------------------------------------------------------------
 */
CREATE FUNCTION taskq.cancel_workflow(workflow text)
    RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._cancel_workflow(workflow);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(workflow), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.cancel_workflow(text) IS
    'cancel every unfinished task of the workflow, and every task inserted with its key from now on (routed by workflow)';

CREATE FUNCTION taskq.task_graph(workflow text, format text DEFAULT 'dot'::text)
    RETURNS text LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._task_graph(workflow, format);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(workflow), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.task_graph(text, text) IS
    'the tasks of a workflow key and their edges, in DOT or Mermaid: tasks coloured by state, edges labelled with the successor''s trigger rule (routed by workflow)';

CREATE FUNCTION taskq.wait_for_task(id text, timeout interval DEFAULT NULL::interval)
    RETURNS taskq_proxy.task LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._wait_for_task(id, timeout);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.wait_for_task(text, interval) IS
    'wait until the task is completed or aborted and return it; NULL after timeout (routed by id)';

CREATE FUNCTION taskq.task_attempts(id text)
    RETURNS SETOF taskq_proxy.attempt LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN QUERY SELECT * FROM taskq_proxy._task_attempts(id);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.task_attempts(text) IS
    'the attempts of a task whose action keeps them, in try order (empty when it keeps none) (routed by id)';

CREATE FUNCTION taskq.job_state(id text)
    RETURNS taskq_proxy.job_state LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._job_state(id);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.job_state(text) IS
    'one job''s state (waiting, running, completed, aborted) and item counters, for a page to poll (routed by id)';

CREATE FUNCTION taskq.return_task(id text, token uuid, status text, status_code taskq.status, retry_delay interval DEFAULT NULL::interval, result jsonb DEFAULT NULL::jsonb)
    RETURNS void LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    PERFORM taskq_proxy._return_task(id, token, status, status_code, retry_delay, result);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.return_task(text, uuid, text, taskq.status, interval, jsonb) IS
    'return an owned task as completed, aborted or pending (retry, after retry_delay or its backoff), with its result (routed by id)';

CREATE FUNCTION taskq.release_task(id text, token uuid)
    RETURNS void LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    PERFORM taskq_proxy._release_task(id, token);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.release_task(text, uuid) IS
    'give an owned task back, ready again at once, without counting the try (a worker shutting down) (routed by id)';

CREATE FUNCTION taskq.report_progress(id text, token uuid, items bigint DEFAULT 1)
    RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._report_progress(id, token, items);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.report_progress(text, uuid, bigint) IS
    'add items done to the job of a task the caller owns (token-checked); returns the job''s progress (routed by id)';

CREATE FUNCTION taskq.set_job_item_count(id text, token uuid, item_count integer)
    RETURNS void LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    PERFORM taskq_proxy._set_job_item_count(id, token, item_count);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.set_job_item_count(text, uuid, integer) IS
    'set the item count of the job of a task the caller owns (token-checked), once the fan-out is known (routed by id)';

CREATE FUNCTION taskq.start_machine(machine text, id text, context jsonb DEFAULT '{}'::jsonb, debug jsonb DEFAULT NULL::jsonb, deadline interval DEFAULT NULL::interval)
    RETURNS text LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._start_machine(machine, id, context, debug, deadline);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.start_machine(text, text, jsonb, jsonb, interval) IS
    'start a run of the latest version of a state machine in its initial state (failing at its deadline if given); returns the run id (routed by id)';

CREATE FUNCTION taskq.start_saga(saga text, id text, inputs jsonb DEFAULT '{}'::jsonb, debug jsonb DEFAULT NULL::jsonb, deadline interval DEFAULT NULL::interval)
    RETURNS text LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._start_saga(saga, id, inputs, debug, deadline);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.start_saga(text, text, jsonb, jsonb, interval) IS
    'start a run of the latest version of a saga: the steps with no predecessor become ready (undone at its deadline if given); returns the run id (routed by id)';

CREATE FUNCTION taskq.transition(id text, token uuid, event text, context jsonb DEFAULT NULL::jsonb)
    RETURNS text LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._transition(id, token, event, context);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.transition(text, uuid, text, jsonb) IS
    'finish an owned machine step with an event (NULL in a final state ends the run); returns the next state (routed by id)';

CREATE FUNCTION taskq.continue_machine(id text, token uuid, cursor text)
    RETURNS text LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._continue_machine(id, token, cursor);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.continue_machine(text, uuid, text) IS
    'fork the run of an owned continuation step for the next cursor; returns the new run id (routed by id)';

CREATE FUNCTION taskq.fan_in_contexts(id text, token uuid)
    RETURNS TABLE (run text, context jsonb) LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN QUERY SELECT * FROM taskq_proxy._fan_in_contexts(id, token);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.fan_in_contexts(text, uuid) IS
    'the instances of an owned fan-in batch and their contexts, in arrival order (routed by id)';

CREATE FUNCTION taskq.send_event(run text, event text, context jsonb DEFAULT NULL::jsonb)
    RETURNS text LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._send_event(run, event, context);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(run), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.send_event(text, text, jsonb) IS
    'move a run in a waiting state on an event, or keep the event until it reaches one; returns the next state (routed by run)';

CREATE FUNCTION taskq.return_step(id text, token uuid, result text, working jsonb DEFAULT NULL::jsonb, error text DEFAULT NULL::text)
    RETURNS void LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    PERFORM taskq_proxy._return_step(id, token, result, working, error);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.return_step(text, uuid, text, jsonb, text) IS
    'finish an owned saga step (do or undo): success, retry, fatal, wait or rerun, merging working into the working map (routed by id)';

CREATE FUNCTION taskq.resume_run(id text, working jsonb DEFAULT NULL::jsonb)
    RETURNS void LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    PERFORM taskq_proxy._resume_run(id, working);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.resume_run(text, jsonb) IS
    'let a waiting saga go on, merging working into its working map (routed by id)';

CREATE FUNCTION taskq.cancel_run(id text)
    RETURNS text LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._cancel_run(id);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.cancel_run(text) IS
    'cancel a run: a machine (and its forks) stops; a saga compensates; returns the new status (routed by id)';

CREATE FUNCTION taskq.redrive_run(id text)
    RETURNS text LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._redrive_run(id);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.redrive_run(text) IS
    'give a failed state machine run another life from the state that failed (returns its state), or continue the undo of a dismal saga (returns its status) (routed by id)';

CREATE FUNCTION taskq.migrate_run(id text, version integer, state_map jsonb DEFAULT '{}'::jsonb)
    RETURNS text LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._migrate_run(id, version, state_map);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.migrate_run(text, integer, jsonb) IS
    'move a running or waiting machine run to another version of its machine; returns its state (routed by id)';

CREATE FUNCTION taskq.wait_for_run(id text, timeout interval DEFAULT NULL::interval)
    RETURNS taskq_proxy.run LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._wait_for_run(id, timeout);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.wait_for_run(text, interval) IS
    'wait until the run is finished or waiting and return its row; NULL after timeout (routed by id)';

CREATE FUNCTION taskq.run_steps(id text)
    RETURNS TABLE (seq integer, step text, direction text, task_id text, status_code taskq.status, outcome text, num_tries integer, started_at timestamptz, finished_at timestamptz, error text) LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN QUERY SELECT * FROM taskq_proxy._run_steps(id);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.run_steps(text) IS
    'the history of a run: one row per visit of a state or do/undo of a step, in order (routed by id)';

CREATE FUNCTION taskq.run_graph(id text, format text DEFAULT 'dot'::text)
    RETURNS text LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._run_graph(id, format);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(id), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.run_graph(text, text) IS
    'one run as a DOT or Mermaid graph: the path a machine took, or a saga''s steps coloured by do and undo (routed by id)';

CREATE FUNCTION taskq.schedule(name text, cron text, task jsonb, time_zone text DEFAULT 'UTC'::text, catch_up text DEFAULT 'latest'::text)
    RETURNS void LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    PERFORM taskq_proxy._schedule(name, cron, task, time_zone, catch_up);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(name), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.schedule(text, text, jsonb, text, text) IS
    'create the schedule of this name, or replace it: the background worker inserts the task once per tick of the cron expression in the time zone, with id "<name>/<tick>"; catch_up (latest, all, none) says which missed ticks it inserts (routed by name)';

CREATE FUNCTION taskq.unschedule(name text)
    RETURNS boolean LANGUAGE plpgsql
AS $$
DECLARE s text; m text; d text; h text;
BEGIN
    RETURN taskq_proxy._unschedule(name);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    PERFORM taskq_proxy._raise(taskq_proxy._partition_of(name), s, m, d, h);
END
$$;
COMMENT ON FUNCTION taskq.unschedule(text) IS
    'remove the schedule of this name (its tasks already inserted stay); whether there was one (routed by name)';


/*
 * ---------------------------------------------------------------------
 * Monitoring: a shard's views and the tables monitors read, every
 * partition's rows with the column partition in front.
 * ---------------------------------------------------------------------
 */
CREATE TYPE taskq_proxy.action_stats AS (partition integer, action text, ready bigint, blocked bigint, delayed bigint, in_progress bigint, lease_expired bigint, completed bigint, aborted bigint, skipped bigint, oldest_ready_age interval);
CREATE FUNCTION taskq_proxy._v_action_stats(part integer) RETURNS SETOF taskq_proxy.action_stats
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT part::integer AS partition, v.* FROM taskq.action_stats AS v; $$;
CREATE VIEW taskq.action_stats AS SELECT e.* FROM taskq_proxy._each('_v_action_stats', NULL::taskq_proxy.action_stats) AS e;
COMMENT ON VIEW taskq.action_stats IS 'per action: tasks ready, blocked on dependencies, delayed, in progress, with an expired lease, completed, aborted, skipped by a trigger rule, and how long the oldest ready task has waited; every partition''s, each row with its partition';
REVOKE ALL ON taskq.action_stats FROM PUBLIC;
GRANT SELECT ON taskq.action_stats TO taskq_monitor, taskq_admin;

CREATE TYPE taskq_proxy.attempts AS (partition integer, task_id text, try integer, actor text, claimed_at timestamptz, finished_at timestamptz, outcome text, status text, result jsonb);
CREATE FUNCTION taskq_proxy._v_attempts(part integer) RETURNS SETOF taskq_proxy.attempts
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT part::integer AS partition, v.* FROM taskq.attempts AS v; $$;
CREATE VIEW taskq.attempts AS SELECT e.* FROM taskq_proxy._each('_v_attempts', NULL::taskq_proxy.attempts) AS e;
COMMENT ON VIEW taskq.attempts IS 'one row per claim of a task whose action keeps attempts (taskq.set_action_policy): who held it, when, and how the claim ended; every partition''s, each row with its partition';
REVOKE ALL ON taskq.attempts FROM PUBLIC;
GRANT SELECT ON taskq.attempts TO taskq_monitor, taskq_admin;

CREATE TYPE taskq_proxy.dead_letters AS (partition integer, id text, action text, status text, num_tries integer, max_tries integer, workflow text, cancelled boolean, finished_at timestamptz);
CREATE FUNCTION taskq_proxy._v_dead_letters(part integer) RETURNS SETOF taskq_proxy.dead_letters
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT part::integer AS partition, v.* FROM taskq.dead_letters AS v; $$;
CREATE VIEW taskq.dead_letters AS SELECT e.* FROM taskq_proxy._each('_v_dead_letters', NULL::taskq_proxy.dead_letters) AS e;
COMMENT ON VIEW taskq.dead_letters IS 'aborted tasks (not those a trigger rule skipped) with their last status and tries; re-drive them with taskq.redrive_tasks; every partition''s, each row with its partition';
REVOKE ALL ON taskq.dead_letters FROM PUBLIC;
GRANT SELECT ON taskq.dead_letters TO taskq_monitor, taskq_admin;

CREATE TYPE taskq_proxy.job_states AS (partition integer, id text, state text, item_count integer, item_progress bigint, created_at timestamptz, updated_at timestamptz);
CREATE FUNCTION taskq_proxy._v_job_states(part integer) RETURNS SETOF taskq_proxy.job_states
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT part::integer AS partition, v.* FROM taskq.job_states AS v; $$;
CREATE VIEW taskq.job_states AS SELECT e.* FROM taskq_proxy._each('_v_job_states', NULL::taskq_proxy.job_states) AS e;
COMMENT ON VIEW taskq.job_states IS 'each job''s state (waiting, running, completed, aborted) and item counters, for a page to poll; every partition''s, each row with its partition';
REVOKE ALL ON taskq.job_states FROM PUBLIC;
GRANT SELECT ON taskq.job_states TO taskq_producer, taskq_monitor, taskq_admin;

CREATE TYPE taskq_proxy.limits AS (partition integer, action text, max_running integer, max_running_per_key integer, rate_max integer, rate_per interval, by_key boolean, running integer, window_claims integer);
CREATE FUNCTION taskq_proxy._v_limits(part integer) RETURNS SETOF taskq_proxy.limits
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT part::integer AS partition, v.* FROM taskq.limits AS v; $$;
CREATE VIEW taskq.limits AS SELECT e.* FROM taskq_proxy._each('_v_limits', NULL::taskq_proxy.limits) AS e;
COMMENT ON VIEW taskq.limits IS 'the actions with limits: concurrency and rate, how many of their tasks hold a slot now, and their claims in the current window; every partition''s, each row with its partition';
REVOKE ALL ON taskq.limits FROM PUBLIC;
GRANT SELECT ON taskq.limits TO taskq_monitor, taskq_admin;

CREATE TYPE taskq_proxy.run_timers AS (partition integer, run_id text, kind text, state text, due_at timestamptz);
CREATE FUNCTION taskq_proxy._v_run_timers(part integer) RETURNS SETOF taskq_proxy.run_timers
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT part::integer AS partition, v.* FROM taskq.run_timers AS v; $$;
CREATE VIEW taskq.run_timers AS SELECT e.* FROM taskq_proxy._each('_v_run_timers', NULL::taskq_proxy.run_timers) AS e;
COMMENT ON VIEW taskq.run_timers IS 'timers of runs: waiting states'' timeouts and runs'' deadlines, fired by the background worker; every partition''s, each row with its partition';
REVOKE ALL ON taskq.run_timers FROM PUBLIC;
GRANT SELECT ON taskq.run_timers TO taskq_monitor, taskq_admin;

CREATE TYPE taskq_proxy.runs AS (partition integer, id text, kind text, definition text, version integer, status text, state text, context jsonb, inputs jsonb, parent text, error text, debug jsonb, created_at timestamptz, finished_at timestamptz, step_task text, visits integer, fork text, events jsonb, faults jsonb, deadline timestamptz);
CREATE FUNCTION taskq_proxy._v_runs(part integer) RETURNS SETOF taskq_proxy.runs
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT part::integer AS partition, v.* FROM taskq.runs AS v; $$;
CREATE VIEW taskq.runs AS SELECT e.* FROM taskq_proxy._each('_v_runs', NULL::taskq_proxy.runs) AS e;
COMMENT ON VIEW taskq.runs IS 'one row per run of a state machine or saga; every partition''s, each row with its partition';
REVOKE ALL ON taskq.runs FROM PUBLIC;
GRANT SELECT ON taskq.runs TO taskq_admin;

CREATE TYPE taskq_proxy.saga_steps AS (partition integer, run text, step text, do_task text, do_state text, undo_task text, undo_state text);
CREATE FUNCTION taskq_proxy._v_saga_steps(part integer) RETURNS SETOF taskq_proxy.saga_steps
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT part::integer AS partition, v.* FROM taskq.saga_steps AS v; $$;
CREATE VIEW taskq.saga_steps AS SELECT e.* FROM taskq_proxy._each('_v_saga_steps', NULL::taskq_proxy.saga_steps) AS e;
COMMENT ON VIEW taskq.saga_steps IS 'the started steps of each saga run: current do and undo task and their states; every partition''s, each row with its partition';
REVOKE ALL ON taskq.saga_steps FROM PUBLIC;
GRANT SELECT ON taskq.saga_steps TO taskq_monitor, taskq_admin;

CREATE TYPE taskq_proxy.schedules AS (partition integer, name text, cron text, time_zone text, task jsonb, catch_up text, last_tick timestamptz, next_tick timestamptz);
CREATE FUNCTION taskq_proxy._v_schedules(part integer) RETURNS SETOF taskq_proxy.schedules
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT part::integer AS partition, v.* FROM taskq.schedules AS v; $$;
CREATE VIEW taskq.schedules AS SELECT e.* FROM taskq_proxy._each('_v_schedules', NULL::taskq_proxy.schedules) AS e;
COMMENT ON VIEW taskq.schedules IS 'the schedules: cron expression, time zone, task, catch_up, the last tick handled and the next one; every partition''s, each row with its partition';
REVOKE ALL ON taskq.schedules FROM PUBLIC;
GRANT SELECT ON taskq.schedules TO taskq_monitor, taskq_admin;

CREATE TYPE taskq_proxy.state_stats AS (partition integer, definition text, kind text, version integer, state text, in_state bigint, entered bigint, succeeded bigint, failed_tries bigint, avg_seconds numeric, p95_seconds numeric);
CREATE FUNCTION taskq_proxy._v_state_stats(part integer) RETURNS SETOF taskq_proxy.state_stats
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT part::integer AS partition, v.* FROM taskq.state_stats AS v; $$;
CREATE VIEW taskq.state_stats AS SELECT e.* FROM taskq_proxy._each('_v_state_stats', NULL::taskq_proxy.state_stats) AS e;
COMMENT ON VIEW taskq.state_stats IS 'per state of a machine or step of a saga and version: runs in it now, visits, successes, failed tries, seconds; every partition''s, each row with its partition';
REVOKE ALL ON taskq.state_stats FROM PUBLIC;
GRANT SELECT ON taskq.state_stats TO taskq_monitor, taskq_admin;

CREATE TYPE taskq_proxy.tasks AS (partition integer, id text, action text, body jsonb, status_code taskq.status, status text, num_tries integer, max_tries integer, num_signals integer, total_dependencies integer, to_signal_after text[], actor_id text, action_deadline timestamptz, performance_token uuid, post_result boolean, priority integer, not_before timestamptz, created_at timestamptz, finished_at timestamptz, seq bigint, spontaneous boolean, retry jsonb, workflow text, cancelled boolean, trigger taskq.trigger_rule, num_completed integer, num_failed integer, result jsonb, claimed_at timestamptz, concurrency_key text);
CREATE FUNCTION taskq_proxy._v_tasks(part integer) RETURNS SETOF taskq_proxy.tasks
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT part::integer AS partition, v.* FROM taskq.tasks AS v; $$;
CREATE VIEW taskq.tasks AS SELECT e.* FROM taskq_proxy._each('_v_tasks', NULL::taskq_proxy.tasks) AS e;
COMMENT ON VIEW taskq.tasks IS 'one row per task of the queue; every partition''s, each row with its partition';
REVOKE ALL ON taskq.tasks FROM PUBLIC;
GRANT SELECT ON taskq.tasks TO taskq_admin;

CREATE TYPE taskq_proxy.tasks_in_progress AS (partition integer, id text, action text, actor_id text, num_tries integer, max_tries integer, action_deadline timestamptz, time_left interval, lease_expired boolean);
CREATE FUNCTION taskq_proxy._v_tasks_in_progress(part integer) RETURNS SETOF taskq_proxy.tasks_in_progress
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT part::integer AS partition, v.* FROM taskq.tasks_in_progress AS v; $$;
CREATE VIEW taskq.tasks_in_progress AS SELECT e.* FROM taskq_proxy._each('_v_tasks_in_progress', NULL::taskq_proxy.tasks_in_progress) AS e;
COMMENT ON VIEW taskq.tasks_in_progress IS 'tasks owned by a worker, with actor, deadline and time left (negative: lease expired); every partition''s, each row with its partition';
REVOKE ALL ON taskq.tasks_in_progress FROM PUBLIC;
GRANT SELECT ON taskq.tasks_in_progress TO taskq_monitor, taskq_admin;

CREATE TYPE taskq_proxy.workers AS (partition integer, worker_id text, actor text, host text, pid integer, version text, actions text[], concurrency integer, started_at timestamptz, last_seen timestamptz, in_progress integer, stale boolean);
CREATE FUNCTION taskq_proxy._v_workers(part integer) RETURNS SETOF taskq_proxy.workers
    LANGUAGE plproxy AS $$ CLUSTER 'taskq'; RUN ON part; SELECT part::integer AS partition, v.* FROM taskq.workers AS v; $$;
CREATE VIEW taskq.workers AS SELECT e.* FROM taskq_proxy._each('_v_workers', NULL::taskq_proxy.workers) AS e;
COMMENT ON VIEW taskq.workers IS 'the workers that heartbeat: who they are, since when, last seen, the tasks their actor holds, and whether they are stale (not seen for three heartbeat intervals); every partition''s, each row with its partition';
REVOKE ALL ON taskq.workers FROM PUBLIC;
GRANT SELECT ON taskq.workers TO taskq_monitor, taskq_admin;


CREATE VIEW taskq_proxy.action_stats_total AS
    SELECT s.action,
           pg_catalog.sum(s.ready)::pg_catalog.int8 AS ready, pg_catalog.sum(s.blocked)::pg_catalog.int8 AS blocked,
           pg_catalog.sum(s.delayed)::pg_catalog.int8 AS delayed, pg_catalog.sum(s.in_progress)::pg_catalog.int8 AS in_progress,
           pg_catalog.sum(s.lease_expired)::pg_catalog.int8 AS lease_expired, pg_catalog.sum(s.completed)::pg_catalog.int8 AS completed,
           pg_catalog.sum(s.aborted)::pg_catalog.int8 AS aborted, pg_catalog.sum(s.skipped)::pg_catalog.int8 AS skipped,
           pg_catalog.max(s.oldest_ready_age) AS oldest_ready_age
      FROM taskq.action_stats AS s
     GROUP BY s.action;
COMMENT ON VIEW taskq_proxy.action_stats_total IS 'taskq.action_stats summed over the partitions: one row per action';
REVOKE ALL ON taskq_proxy.action_stats_total FROM PUBLIC;
GRANT SELECT ON taskq_proxy.action_stats_total TO taskq_monitor, taskq_admin;

/*
 * ---------------------------------------------------------------------
 * Privileges: each function of schema taskq to the roles that may call it
 * on a shard; the internals, which only reach a shard as the caller, to
 * all four roles.
 * ---------------------------------------------------------------------
 */
REVOKE ALL ON FUNCTION taskq.add_dependencies(after_ids text[], run_ids text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.add_dependencies(after_ids text[], run_ids text[]) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.cancel_run(id text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.cancel_run(id text) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.cancel_tasks(ids text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.cancel_tasks(ids text[]) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.cancel_workflow(workflow text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.cancel_workflow(workflow text) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.chain(tasks jsonb, after_ids text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.chain(tasks jsonb, after_ids text[]) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.chord(tasks jsonb, "join" jsonb, after_ids text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.chord(tasks jsonb, "join" jsonb, after_ids text[]) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.clear_limits(action text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.clear_limits(action text) TO taskq_admin;
REVOKE ALL ON FUNCTION taskq.continue_machine(id text, token uuid, cursor text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.continue_machine(id text, token uuid, cursor text) TO taskq_worker, taskq_admin;
REVOKE ALL ON FUNCTION taskq.create_job(id text, tasks jsonb, item_count integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.create_job(id text, tasks jsonb, item_count integer) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.define_machine(name text, definition jsonb, version integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.define_machine(name text, definition jsonb, version integer) TO taskq_admin;
REVOKE ALL ON FUNCTION taskq.define_saga(name text, definition jsonb, version integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.define_saga(name text, definition jsonb, version integer) TO taskq_admin;
REVOKE ALL ON FUNCTION taskq.definition_graph(name text, format text, version integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.definition_graph(name text, format text, version integer) TO taskq_producer, taskq_monitor, taskq_admin;
REVOKE ALL ON FUNCTION taskq.enqueue_many(action text, bodies jsonb[], ids text[], priority integer, not_before timestamp with time zone, max_tries integer, workflow text, concurrency_key text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.enqueue_many(action text, bodies jsonb[], ids text[], priority integer, not_before timestamp with time zone, max_tries integer, workflow text, concurrency_key text) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.enqueue(action text, body jsonb, id text, priority integer, not_before timestamp with time zone, max_tries integer, workflow text, concurrency_key text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.enqueue(action text, body jsonb, id text, priority integer, not_before timestamp with time zone, max_tries integer, workflow text, concurrency_key text) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.extend_ownership(actor text, ids text[], tokens uuid[], max_duration interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.extend_ownership(actor text, ids text[], tokens uuid[], max_duration interval) TO taskq_worker, taskq_admin;
REVOKE ALL ON FUNCTION taskq.fan_in_contexts(id text, token uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.fan_in_contexts(id text, token uuid) TO taskq_worker, taskq_admin;
REVOKE ALL ON FUNCTION taskq."group"(tasks jsonb, after_ids text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq."group"(tasks jsonb, after_ids text[]) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.insert_tasks_if_absent(tasks jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.insert_tasks_if_absent(tasks jsonb) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.insert_tasks(tasks jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.insert_tasks(tasks jsonb) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.job_state(id text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.job_state(id text) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.metrics_text() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.metrics_text() TO taskq_monitor, taskq_admin;
REVOKE ALL ON FUNCTION taskq.metrics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.metrics() TO taskq_monitor, taskq_admin;
REVOKE ALL ON FUNCTION taskq.migrate_run(id text, version integer, state_map jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.migrate_run(id text, version integer, state_map jsonb) TO taskq_admin;
REVOKE ALL ON FUNCTION taskq.own_tasks(actor text, max_tasks integer, actions text[], max_duration interval, wait interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.own_tasks(actor text, max_tasks integer, actions text[], max_duration interval, wait interval) TO taskq_worker, taskq_admin;
REVOKE ALL ON FUNCTION taskq.predecessor_results(id text, token uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.predecessor_results(id text, token uuid) TO taskq_worker, taskq_admin;
REVOKE ALL ON FUNCTION taskq.purge_finished(older_than interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.purge_finished(older_than interval) TO taskq_admin;
REVOKE ALL ON FUNCTION taskq.redrive_run(id text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.redrive_run(id text) TO taskq_admin;
REVOKE ALL ON FUNCTION taskq.redrive_tasks(ids text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.redrive_tasks(ids text[]) TO taskq_admin;
REVOKE ALL ON FUNCTION taskq.release_task(id text, token uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.release_task(id text, token uuid) TO taskq_worker, taskq_admin;
REVOKE ALL ON FUNCTION taskq.replace_tasks(tasks jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.replace_tasks(tasks jsonb) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.report_progress(id text, token uuid, items bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.report_progress(id text, token uuid, items bigint) TO taskq_worker, taskq_admin;
REVOKE ALL ON FUNCTION taskq.resume_run(id text, working jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.resume_run(id text, working jsonb) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.return_and_own(ids text[], tokens uuid[], statuses text[], status_codes taskq.status[], actor text, max_tasks integer, actions text[], max_duration interval, results jsonb[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.return_and_own(ids text[], tokens uuid[], statuses text[], status_codes taskq.status[], actor text, max_tasks integer, actions text[], max_duration interval, results jsonb[]) TO taskq_worker, taskq_admin;
REVOKE ALL ON FUNCTION taskq.return_step(id text, token uuid, result text, working jsonb, error text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.return_step(id text, token uuid, result text, working jsonb, error text) TO taskq_worker, taskq_admin;
REVOKE ALL ON FUNCTION taskq.return_tasks(ids text[], tokens uuid[], statuses text[], status_codes taskq.status[], results jsonb[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.return_tasks(ids text[], tokens uuid[], statuses text[], status_codes taskq.status[], results jsonb[]) TO taskq_worker, taskq_admin;
REVOKE ALL ON FUNCTION taskq.return_task(id text, token uuid, status text, status_code taskq.status, retry_delay interval, result jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.return_task(id text, token uuid, status text, status_code taskq.status, retry_delay interval, result jsonb) TO taskq_worker, taskq_admin;
REVOKE ALL ON FUNCTION taskq.run_graph(id text, format text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.run_graph(id text, format text) TO taskq_producer, taskq_monitor, taskq_admin;
REVOKE ALL ON FUNCTION taskq.run_steps(id text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.run_steps(id text) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.schedule(name text, cron text, task jsonb, time_zone text, catch_up text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.schedule(name text, cron text, task jsonb, time_zone text, catch_up text) TO taskq_admin;
REVOKE ALL ON FUNCTION taskq.send_event(run text, event text, context jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.send_event(run text, event text, context jsonb) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.set_action_policy(action text, max_tries integer, retry jsonb, keep_attempts boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.set_action_policy(action text, max_tries integer, retry jsonb, keep_attempts boolean) TO taskq_admin;
REVOKE ALL ON FUNCTION taskq.set_concurrency_limit(action text, max_running integer, max_running_per_key integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.set_concurrency_limit(action text, max_running integer, max_running_per_key integer) TO taskq_admin;
REVOKE ALL ON FUNCTION taskq.set_job_item_count(id text, token uuid, item_count integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.set_job_item_count(id text, token uuid, item_count integer) TO taskq_worker, taskq_admin;
REVOKE ALL ON FUNCTION taskq.set_rate_limit(action text, max integer, per interval, by_key boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.set_rate_limit(action text, max integer, per interval, by_key boolean) TO taskq_admin;
REVOKE ALL ON FUNCTION taskq.start_machine(machine text, id text, context jsonb, debug jsonb, deadline interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.start_machine(machine text, id text, context jsonb, debug jsonb, deadline interval) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.start_saga(saga text, id text, inputs jsonb, debug jsonb, deadline interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.start_saga(saga text, id text, inputs jsonb, debug jsonb, deadline interval) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.task_attempts(id text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.task_attempts(id text) TO taskq_producer, taskq_worker, taskq_monitor, taskq_admin;
REVOKE ALL ON FUNCTION taskq.task_graph(workflow text, format text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.task_graph(workflow text, format text) TO taskq_producer, taskq_monitor, taskq_admin;
REVOKE ALL ON FUNCTION taskq.transition(id text, token uuid, event text, context jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.transition(id text, token uuid, event text, context jsonb) TO taskq_worker, taskq_admin;
REVOKE ALL ON FUNCTION taskq.unschedule(name text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.unschedule(name text) TO taskq_admin;
REVOKE ALL ON FUNCTION taskq.wait_for_run(id text, timeout interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.wait_for_run(id text, timeout interval) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.wait_for_task(id text, timeout interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.wait_for_task(id text, timeout interval) TO taskq_producer, taskq_admin;
REVOKE ALL ON FUNCTION taskq.worker_heartbeat(worker_id text, info jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.worker_heartbeat(worker_id text, info jsonb) TO taskq_worker, taskq_admin;
REVOKE ALL ON FUNCTION taskq.worker_stopped(worker_id text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskq.worker_stopped(worker_id text) TO taskq_worker, taskq_admin;
DO $grants$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_catalog.pg_proc AS p
              WHERE p.pronamespace OPERATOR(pg_catalog.=) 'taskq_proxy'::regnamespace LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO taskq_producer, taskq_worker, taskq_monitor, taskq_admin', f);
    END LOOP;
END
$grants$;
REVOKE ALL ON FUNCTION taskq_proxy.check_definitions() FROM taskq_producer, taskq_worker, taskq_monitor;

-- What each internal object is (every object of the script has a comment).
COMMENT ON TYPE taskq.status IS 'the status code of a task, as on a shard';
COMMENT ON TYPE taskq.trigger_rule IS 'when a task with predecessors becomes ready, as on a shard';
COMMENT ON TYPE taskq_proxy.task IS 'a task as wait_for_task returns it';
COMMENT ON TYPE taskq_proxy.run IS 'a run as wait_for_run returns it';
COMMENT ON TYPE taskq_proxy.job_state IS 'a job as job_state returns it';
COMMENT ON TYPE taskq_proxy.attempt IS 'an attempt as task_attempts returns it';
COMMENT ON TYPE taskq_proxy.claim IS 'a claimed task as own_tasks returns it';
COMMENT ON FUNCTION taskq_proxy._route_hash(text) IS 'the hash PL/Proxys RUN ON takes for an id: hashtext of its route (0 for NULL)';
COMMENT ON FUNCTION taskq_proxy._connstrs() IS 'the partitions of cluster taskq as the foreign server taskq names them';
COMMENT ON FUNCTION taskq_proxy._count() IS 'the number of partitions';
COMMENT ON FUNCTION taskq_proxy._options() IS 'the partitions the options of the foreign server taskq name';
COMMENT ON FUNCTION taskq_proxy._not_configured() IS 'raise 42704: the foreign server taskq is missing or names no partition';
COMMENT ON FUNCTION taskq_proxy._partition_of(text) IS 'the partition of an id, 0 for NULL (where a call went)';
COMMENT ON FUNCTION taskq_proxy._raise(integer, text, text, text, text, integer[]) IS 'raise what a partition raised: the shards error as the shard raised it, or 08006 for a partition out of reach';
COMMENT ON FUNCTION taskq_proxy._skippable(text, text) IS 'whether a claim may skip a partition that raised this (down, failing over, read-only, out of connections)';
COMMENT ON FUNCTION taskq_proxy._parts(text[]) IS 'the positions of the ids of each partition, for a call split per partition';
COMMENT ON FUNCTION taskq_proxy._pick(anyarray, integer[]) IS 'the elements of an array at the given positions';
COMMENT ON FUNCTION taskq_proxy._aligned(text[], integer[]) IS 'whether the arrays of a call have as many elements as its ids';
COMMENT ON FUNCTION taskq_proxy._new_id(text) IS 'a new task id: a version-7 UUID, under the workflows route when there is one';
COMMENT ON FUNCTION taskq_proxy._batch_route(jsonb, text[]) IS 'the route of a batch of task objects, or 0A000 / 22023 when it spans routes';
COMMENT ON FUNCTION taskq_proxy._cross_route(text, text) IS 'raise 0A000 for an edge between two routes';
COMMENT ON FUNCTION taskq_proxy._enqueue(text, jsonb, text, integer, timestamptz, integer, text, text) IS 'taskq.enqueue on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._insert_tasks(integer, jsonb) IS 'taskq.insert_tasks on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._insert_tasks_if_absent(integer, jsonb) IS 'taskq.insert_tasks_if_absent on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._replace_tasks(integer, jsonb) IS 'taskq.replace_tasks on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._chain(integer, jsonb, text[]) IS 'taskq.chain on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._group(integer, jsonb, text[]) IS 'taskq.group on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._chord(integer, jsonb, jsonb, text[]) IS 'taskq.chord on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._add_dependencies(integer, text[], text[]) IS 'taskq.add_dependencies on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._create_job(text, jsonb, integer) IS 'taskq.create_job on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._cancel_tasks(integer, text[]) IS 'taskq.cancel_tasks on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._redrive_tasks(integer, text[]) IS 'taskq.redrive_tasks on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._cancel_workflow(text) IS 'taskq.cancel_workflow on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._task_graph(text, text) IS 'taskq.task_graph on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._wait_for_task(text, interval) IS 'taskq.wait_for_task on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._task_attempts(text) IS 'taskq.task_attempts on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._job_state(text) IS 'taskq.job_state on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._own_tasks(integer, text, integer, text[], interval) IS 'taskq.own_tasks on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._return_and_own(integer, text[], uuid[], text[], taskq.status[], text, integer, text[], interval, jsonb[]) IS 'taskq.return_and_own on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._return_tasks(integer, text[], uuid[], text[], taskq.status[], jsonb[]) IS 'taskq.return_tasks on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._extend_ownership(integer, text, text[], uuid[], interval) IS 'taskq.extend_ownership on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._return_task(text, uuid, text, taskq.status, interval, jsonb) IS 'taskq.return_task on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._release_task(text, uuid) IS 'taskq.release_task on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._report_progress(text, uuid, bigint) IS 'taskq.report_progress on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._set_job_item_count(text, uuid, integer) IS 'taskq.set_job_item_count on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._predecessor_results(text, uuid) IS 'taskq.predecessor_results on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._worker_heartbeat(integer, text, jsonb) IS 'taskq.worker_heartbeat on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._worker_stopped(integer, text) IS 'taskq.worker_stopped on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._start_machine(text, text, jsonb, jsonb, interval) IS 'taskq.start_machine on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._start_saga(text, text, jsonb, jsonb, interval) IS 'taskq.start_saga on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._transition(text, uuid, text, jsonb) IS 'taskq.transition on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._continue_machine(text, uuid, text) IS 'taskq.continue_machine on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._fan_in_contexts(text, uuid) IS 'taskq.fan_in_contexts on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._send_event(text, text, jsonb) IS 'taskq.send_event on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._return_step(text, uuid, text, jsonb, text) IS 'taskq.return_step on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._resume_run(text, jsonb) IS 'taskq.resume_run on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._cancel_run(text) IS 'taskq.cancel_run on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._redrive_run(text) IS 'taskq.redrive_run on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._migrate_run(text, integer, jsonb) IS 'taskq.migrate_run on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._wait_for_run(text, interval) IS 'taskq.wait_for_run on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._run_steps(text) IS 'taskq.run_steps on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._run_graph(text, text) IS 'taskq.run_graph on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._set_action_policy(integer, text, integer, jsonb, boolean) IS 'taskq.set_action_policy on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._set_concurrency_limit(integer, text, integer, integer) IS 'taskq.set_concurrency_limit on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._set_rate_limit(integer, text, integer, interval, boolean) IS 'taskq.set_rate_limit on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._clear_limits(integer, text) IS 'taskq.clear_limits on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._purge_finished(integer, interval) IS 'taskq.purge_finished on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._define(integer, text, text, jsonb, integer) IS 'define_machine or define_saga on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._definitions(integer, text) IS 'the definitions of a name (NULL: all) on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._definition_graph(integer, text, text, integer) IS 'taskq.definition_graph on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._schedule(text, text, jsonb, text, text) IS 'taskq.schedule on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._unschedule(text) IS 'taskq.unschedule on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._metrics(integer) IS 'taskq.metrics on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._metrics_text(integer) IS 'taskq.metrics_text on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._enqueue_many(integer, text, jsonb[], text[], integer, timestamptz, integer, text, text) IS 'taskq.enqueue_many on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._lease(interval) IS 'the lease a claim through the proxy asks for: its own, or the sessions taskq.default_lease';
COMMENT ON FUNCTION taskq_proxy._claim_from(integer, text, integer, text[], interval, integer, integer, integer) IS 'claim from the partitions in turn, skipping one out of reach';
COMMENT ON FUNCTION taskq_proxy._predecessors(text, uuid) IS 'predecessor_results on the tasks partition, errors as the shard raised them';
COMMENT ON FUNCTION taskq_proxy._define_all(text, text, jsonb, integer) IS 'broadcast a definition under one version';
COMMENT ON FUNCTION taskq_proxy._each(text, anyelement) IS 'the rows of a PL/Proxy reader on every partition in turn';
COMMENT ON FUNCTION taskq_proxy._each_definitions(text) IS 'the definitions of a name (NULL: all) on every partition';
COMMENT ON TYPE taskq_proxy.action_stats IS 'a row of taskq.action_stats with its partition';
COMMENT ON FUNCTION taskq_proxy._v_action_stats(integer) IS 'the rows of taskq.action_stats on one partition (PL/Proxy)';
COMMENT ON TYPE taskq_proxy.attempts IS 'a row of taskq.attempts with its partition';
COMMENT ON FUNCTION taskq_proxy._v_attempts(integer) IS 'the rows of taskq.attempts on one partition (PL/Proxy)';
COMMENT ON TYPE taskq_proxy.dead_letters IS 'a row of taskq.dead_letters with its partition';
COMMENT ON FUNCTION taskq_proxy._v_dead_letters(integer) IS 'the rows of taskq.dead_letters on one partition (PL/Proxy)';
COMMENT ON TYPE taskq_proxy.job_states IS 'a row of taskq.job_states with its partition';
COMMENT ON FUNCTION taskq_proxy._v_job_states(integer) IS 'the rows of taskq.job_states on one partition (PL/Proxy)';
COMMENT ON TYPE taskq_proxy.limits IS 'a row of taskq.limits with its partition';
COMMENT ON FUNCTION taskq_proxy._v_limits(integer) IS 'the rows of taskq.limits on one partition (PL/Proxy)';
COMMENT ON TYPE taskq_proxy.run_timers IS 'a row of taskq.run_timers with its partition';
COMMENT ON FUNCTION taskq_proxy._v_run_timers(integer) IS 'the rows of taskq.run_timers on one partition (PL/Proxy)';
COMMENT ON TYPE taskq_proxy.runs IS 'a row of taskq.runs with its partition';
COMMENT ON FUNCTION taskq_proxy._v_runs(integer) IS 'the rows of taskq.runs on one partition (PL/Proxy)';
COMMENT ON TYPE taskq_proxy.saga_steps IS 'a row of taskq.saga_steps with its partition';
COMMENT ON FUNCTION taskq_proxy._v_saga_steps(integer) IS 'the rows of taskq.saga_steps on one partition (PL/Proxy)';
COMMENT ON TYPE taskq_proxy.schedules IS 'a row of taskq.schedules with its partition';
COMMENT ON FUNCTION taskq_proxy._v_schedules(integer) IS 'the rows of taskq.schedules on one partition (PL/Proxy)';
COMMENT ON TYPE taskq_proxy.state_stats IS 'a row of taskq.state_stats with its partition';
COMMENT ON FUNCTION taskq_proxy._v_state_stats(integer) IS 'the rows of taskq.state_stats on one partition (PL/Proxy)';
COMMENT ON TYPE taskq_proxy.tasks IS 'a row of taskq.tasks with its partition';
COMMENT ON FUNCTION taskq_proxy._v_tasks(integer) IS 'the rows of taskq.tasks on one partition (PL/Proxy)';
COMMENT ON TYPE taskq_proxy.tasks_in_progress IS 'a row of taskq.tasks_in_progress with its partition';
COMMENT ON FUNCTION taskq_proxy._v_tasks_in_progress(integer) IS 'the rows of taskq.tasks_in_progress on one partition (PL/Proxy)';
COMMENT ON TYPE taskq_proxy.workers IS 'a row of taskq.workers with its partition';
COMMENT ON FUNCTION taskq_proxy._v_workers(integer) IS 'the rows of taskq.workers on one partition (PL/Proxy)';
COMMENT ON FUNCTION taskq_proxy._broadcast(text, text, boolean) IS 'a call on every partition in turn (settings, the workers registry); the sum of its results';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA taskq, taskq_proxy FROM PUBLIC;
