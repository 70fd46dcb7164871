-- test/pgtap/contract.sql: the behaviour the README promises (with the
-- corners fixed in docs/semantics.md), as a client sees it.
--
-- Everything runs in one transaction, so now() is constant: a lease of
-- max_duration d ends exactly at now() + d.  Time is never waited for: an
-- expired lease is made by back-dating action_deadline, a passed delay by
-- back-dating not_before.  Each section uses its own action names, so the
-- claims of one section never see the tasks of another.
BEGIN;
SELECT plan(175);
-- Claims without max_duration here check the 0.x rule, no deadline
-- (taskq.default_lease = 0); the default lease is checked in sql/own.sql.
SET LOCAL taskq.default_lease = 0;

-- Claims are recorded in order, so tests can use the tokens own_tasks handed out.
CREATE TEMP TABLE claimed (
    n serial, actor text, id text, token uuid, action text, body jsonb,
    num_tries integer, action_deadline timestamptz
);
CREATE FUNCTION pg_temp.own(p_actor text, p_max integer, p_actions text[],
                            p_duration interval DEFAULT NULL)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM taskq.own_tasks(p_actor, p_max, p_actions, p_duration) LOOP
        INSERT INTO claimed (actor, id, token, action, body, num_tries, action_deadline)
        VALUES (p_actor, r.id, r.token, r.action, r.body, r.num_tries, r.action_deadline);
        RETURN NEXT r.id;
    END LOOP;
END
$$;
-- The token of the latest claim of a task.
CREATE FUNCTION pg_temp.tok(p_id text) RETURNS uuid LANGUAGE sql AS $$
    SELECT c.token FROM claimed c WHERE c.id = p_id ORDER BY c.n DESC LIMIT 1
$$;
-- Return a task with the token of its latest claim.
CREATE FUNCTION pg_temp.ret(p_id text, p_code taskq.status, p_status text DEFAULT NULL)
RETURNS void LANGUAGE sql AS $$
    SELECT taskq.return_task(p_id, pg_temp.tok(p_id), p_status, p_code)
$$;
-- Make a lease expire without waiting.
CREATE FUNCTION pg_temp.expire(p_id text) RETURNS integer LANGUAGE sql AS $$
    WITH u AS (UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = p_id RETURNING 1)
    SELECT count(*)::integer FROM u
$$;

-- ================================================================ insert_tasks
SELECT is(taskq.insert_tasks($$[
        {"id": "i1", "action": "ins"},
        {"id": "i2", "action": "ins", "body": {"k": [1, "two"]}, "priority": 3,
         "max_tries": 2, "post_result": true}
    ]$$), 2::bigint, 'insert_tasks returns the number of tasks inserted');
SELECT is(taskq.insert_tasks('[]'), 0::bigint, 'insert_tasks of an empty array returns 0');
SELECT results_eq(
    $$SELECT id COLLATE "default", action COLLATE "default", body, status_code, num_tries, max_tries, num_signals,
             total_dependencies, priority, post_result, actor_id, performance_token,
             action_deadline, finished_at
        FROM taskq.tasks WHERE id IN ('i1', 'i2') ORDER BY id$$,
    $$VALUES ('i1'::text, 'ins'::text, NULL::jsonb, 'pending'::taskq.status, 0, NULL::integer, 0,
              0, 0, false, NULL::text, NULL::uuid, NULL::timestamptz, NULL::timestamptz),
             ('i2', 'ins', '{"k": [1, "two"]}', 'pending', 0, 2, 0,
              0, 3, true, NULL, NULL, NULL, NULL)$$,
    'inserted tasks are pending, unowned, with the given body, priority, max_tries, post_result');
SELECT ok((SELECT created_at IS NOT NULL AND not_before <= now() FROM taskq.tasks WHERE id = 'i1'),
    'created_at is set and not_before defaults to no delay');
SELECT lives_ok($$SELECT taskq.insert_tasks('[{"id": "i3", "action": "ins", "not_before": "2999-01-01T00:00:00Z"}]')$$,
    'not_before can be given');
SELECT is((SELECT not_before FROM taskq.tasks WHERE id = 'i3'), '2999-01-01T00:00:00Z'::timestamptz,
    'not_before is stored');

-- duplicates: the whole call fails, 23505, the message names the id
SELECT throws_ok($$SELECT taskq.insert_tasks('[{"id": "d1", "action": "ins"}, {"id": "d1", "action": "ins"}]')$$,
    '23505', 'task "d1" appears more than once in argument "tasks"',
    'a duplicate id within the batch: 23505 naming the id');
SELECT throws_ok($$SELECT taskq.insert_tasks('[{"id": "d2", "action": "ins"}, {"id": "i1", "action": "ins"}]')$$,
    '23505', 'task "i1" already exists',
    'an id already stored: 23505 naming the id');
SELECT is((SELECT count(*) FROM taskq.tasks WHERE id IN ('d1', 'd2')), 0::bigint,
    'a failed insert_tasks inserts none of its tasks');
SELECT is((SELECT action FROM taskq.tasks WHERE id = 'i1'), 'ins',
    'a failed insert_tasks leaves the stored task alone');

-- malformed input
SELECT throws_ok($$SELECT taskq.insert_tasks('[{"id": "m1"}]')$$, '22023', NULL, 'missing action: 22023');
SELECT throws_ok($$SELECT taskq.insert_tasks('[{"action": "ins"}]')$$, '22023', NULL, 'missing id: 22023');
SELECT throws_ok($$SELECT taskq.insert_tasks('[{"id": "m2", "action": "ins", "colour": "red"}]')$$, '22023', NULL,
    'unknown key: 22023');
SELECT throws_ok($$SELECT taskq.insert_tasks('{"id": "m3", "action": "ins"}')$$, '22023', NULL, 'not an array: 22023');
SELECT throws_ok($$SELECT taskq.insert_tasks('[{"id": 4, "action": "ins"}]')$$, '22023', NULL, 'id not a string: 22023');
SELECT throws_ok($$SELECT taskq.insert_tasks('[{"id": "m5", "action": "ins", "max_tries": 0}]')$$, '22023', NULL,
    'max_tries 0: 22023');
SELECT throws_ok($$SELECT taskq.insert_tasks(NULL)$$, '22004', NULL, 'NULL argument: 22004');

-- edges given with to_signal_after
SELECT is(taskq.insert_tasks($$[
        {"id": "p1", "action": "ins", "to_signal_after": ["s1"]},
        {"id": "s1", "action": "ins"}
    ]$$), 2::bigint, 'to_signal_after may name a task of the same batch');
SELECT results_eq($$SELECT to_signal_after COLLATE "default" FROM taskq.tasks WHERE id = 'p1'$$,
    $$VALUES (ARRAY['s1']::text[])$$, 'the predecessor lists its successor');
SELECT results_eq($$SELECT num_signals, total_dependencies FROM taskq.tasks WHERE id = 's1'$$,
    $$VALUES (1, 1)$$, 'the successor waits for one predecessor');
SELECT is(taskq.insert_tasks('[{"id": "p2", "action": "ins", "to_signal_after": ["s1"]}]'), 1::bigint,
    'to_signal_after may name a stored task that has not started');
SELECT results_eq($$SELECT num_signals, total_dependencies FROM taskq.tasks WHERE id = 's1'$$,
    $$VALUES (2, 2)$$, 'the stored successor now waits for two predecessors');
SELECT throws_ok($$SELECT taskq.insert_tasks('[{"id": "e1", "action": "ins", "to_signal_after": ["nope"]}]')$$,
    '23503', 'task "nope" named in to_signal_after of task "e1" does not exist',
    'to_signal_after naming an unknown task: 23503 naming the id');
SELECT throws_ok($$SELECT taskq.insert_tasks('[
        {"id": "cy1", "action": "ins", "to_signal_after": ["cy2"]},
        {"id": "cy2", "action": "ins", "to_signal_after": ["cy1"]}]')$$,
    '22023', NULL, 'a cycle within the batch: 22023');
SELECT throws_ok($$SELECT taskq.insert_tasks('[{"id": "cy3", "action": "ins", "to_signal_after": ["cy3"]}]')$$,
    '22023', NULL, 'a task signalling itself: 22023');
SELECT is((SELECT num_signals FROM taskq.tasks WHERE id = 's1'), 2,
    'failed inserts added no signal');

-- ================================================================ own_tasks
SELECT is(taskq.insert_tasks($$[
        {"id": "o1", "action": "own", "body": {"n": 1}},
        {"id": "o2", "action": "own", "priority": 5},
        {"id": "o3", "action": "own"},
        {"id": "o4", "action": "own", "priority": 5},
        {"id": "ob", "action": "own", "priority": 100},
        {"id": "od", "action": "own", "priority": 100, "not_before": "2999-01-01T00:00:00Z"},
        {"id": "ox", "action": "own-other", "priority": 100},
        {"id": "oy", "action": "own-third"}
    ]$$), 8::bigint, 'tasks to claim are inserted');
SELECT is(taskq.insert_tasks('[{"id": "o5", "action": "own", "priority": -1, "to_signal_after": ["ob"]}]'), 1::bigint,
    'a task of lower priority, inserted later, blocks ob');

SELECT results_eq($$SELECT * FROM pg_temp.own('w1', 2, ARRAY['own'], '5 minutes')$$,
    ARRAY['o2', 'o4'], 'own_tasks: highest priority first, then insertion order, at most max_tasks');
SELECT results_eq($$SELECT * FROM pg_temp.own('w1', 10, ARRAY['own'])$$,
    ARRAY['o1', 'o3', 'o5'], 'own_tasks skips blocked and delayed tasks; equal priority in insertion order');
SELECT results_eq(
    $$SELECT id COLLATE "default", status_code, num_tries, actor_id, action_deadline, performance_token = pg_temp.tok(id)
        FROM taskq.tasks WHERE id IN ('o1', 'o2') ORDER BY id$$,
    $$VALUES ('o1'::text, 'in_progress'::taskq.status, 1, 'w1'::text, NULL::timestamptz, true),
             ('o2', 'in_progress', 1, 'w1', now() + interval '5 minutes', true)$$,
    'a claim: in progress, num_tries + 1, actor set, token stored, deadline = now() + max_duration (NULL without)');
SELECT results_eq($$SELECT action, body, num_tries, action_deadline FROM claimed WHERE id IN ('o1', 'o2') ORDER BY id$$,
    $$VALUES ('own'::text, '{"n": 1}'::jsonb, 1, NULL::timestamptz),
             ('own', NULL, 1, now() + interval '5 minutes')$$,
    'own_tasks returns action, body, num_tries and action_deadline of each claimed task');
SELECT is((SELECT count(DISTINCT token) FROM claimed WHERE token IS NOT NULL), (SELECT count(*) FROM claimed),
    'every claim gets its own token');
SELECT is_empty($$SELECT * FROM pg_temp.own('w2', 10, ARRAY['own'])$$,
    'a task in progress (with or without a deadline) is not claimed again');
SELECT results_eq($$SELECT * FROM pg_temp.own('w2', 10, ARRAY['own-third', 'own-other', 'no-such-action'])$$,
    ARRAY['ox', 'oy'], 'own_tasks claims only the given actions');
SELECT is(taskq.insert_tasks('[{"id": "oany", "action": "own-any", "priority": 1000}]'), 1::bigint,
    'a task of another action is inserted');
SELECT results_eq($$SELECT * FROM pg_temp.own('w2', 1, NULL)$$, ARRAY['oany'],
    'actions NULL claims any action');
SELECT lives_ok($$UPDATE taskq.tasks SET not_before = now() - interval '1 second' WHERE id = 'od'$$,
    'the delay of od is back-dated');
SELECT results_eq($$SELECT * FROM pg_temp.own('w2', 10, ARRAY['own'])$$, ARRAY['od'],
    'a delayed task is claimed once not_before has passed');
SELECT is_empty($$SELECT * FROM taskq.own_tasks('w2', 10, '{}')$$, 'an empty actions array claims nothing');
SELECT is(taskq.insert_tasks('[{"id": "oz", "action": "own"}]'), 1::bigint, 'one more ready task');
SELECT is_empty($$SELECT * FROM taskq.own_tasks('w2', 0, ARRAY['own'])$$, 'max_tasks 0 claims nothing');
SELECT is((SELECT status_code FROM taskq.tasks WHERE id = 'oz'), 'pending', 'and the ready task is left alone');
SELECT throws_ok($$SELECT * FROM taskq.own_tasks('w2', -1, ARRAY['own'])$$, '22023', NULL, 'negative max_tasks: 22023');
SELECT throws_ok($$SELECT * FROM taskq.own_tasks('w2', 1, ARRAY['own'], '0 seconds')$$, '22023', NULL,
    'zero max_duration: 22023');
SELECT throws_ok($$SELECT * FROM taskq.own_tasks('w2', 1, ARRAY['own'], '-1 minute')$$, '22023', NULL,
    'negative max_duration: 22023');
SELECT throws_ok($$SELECT * FROM taskq.own_tasks(NULL, 1, ARRAY['own'])$$, '22004', NULL, 'NULL actor: 22004');
SELECT throws_ok($$SELECT * FROM taskq.own_tasks('', 1, ARRAY['own'])$$, '22023', NULL, 'empty actor: 22023');
SELECT is((SELECT status_code FROM taskq.tasks WHERE id = 'oz'), 'pending', 'refused claims claimed nothing');

-- ================================================================ extend_ownership
SELECT is(taskq.insert_tasks('[{"id": "e1", "action": "ext"}, {"id": "e2", "action": "ext"}, {"id": "e3", "action": "ext"}]'),
    3::bigint, 'tasks to extend are inserted');
SELECT results_eq($$SELECT * FROM pg_temp.own('w1', 3, ARRAY['ext'], '1 minute')$$, ARRAY['e1', 'e2', 'e3'],
    'they are claimed with a one-minute lease');
SELECT lives_ok($$SELECT pg_temp.ret('e3', 'completed')$$, 'e3 is completed');
SELECT results_eq(
    $$SELECT id COLLATE "default", owned FROM taskq.extend_ownership('w1',
          ARRAY['e2', 'unknown', 'e1', 'e1', 'e3'],
          ARRAY[pg_temp.tok('e2'), pg_temp.tok('e2'), pg_temp.tok('e2'), pg_temp.tok('e1'), pg_temp.tok('e3')],
          '10 minutes')$$,
    $$VALUES ('e2'::text, true), ('unknown', false), ('e1', false), ('e1', true), ('e3', false)$$,
    'extend_ownership: one row per task in input order; false for an unknown id, a wrong token, a finished task');
SELECT is((SELECT action_deadline FROM taskq.tasks WHERE id = 'e2'), now() + interval '10 minutes',
    'an extended lease ends at now() + max_duration');
SELECT results_eq(
    $$SELECT id COLLATE "default", owned FROM taskq.extend_ownership('w2', ARRAY['e1'], ARRAY[pg_temp.tok('e1')], '1 hour')$$,
    $$VALUES ('e1'::text, false)$$, 'another actor cannot extend the lease, even with the token');
SELECT is((SELECT action_deadline FROM taskq.tasks WHERE id = 'e1'), now() + interval '10 minutes',
    'a refused extension leaves the deadline alone');
SELECT throws_ok($$SELECT * FROM taskq.extend_ownership('w1', ARRAY['e1', 'e2'], ARRAY[pg_temp.tok('e1')], '1 minute')$$,
    '2202E', NULL, 'ids and tokens of different lengths: 2202E');
SELECT throws_ok($$SELECT * FROM taskq.extend_ownership('w1', ARRAY['e1'], ARRAY[pg_temp.tok('e1')], '0 seconds')$$,
    '22023', NULL, 'zero max_duration: 22023');

-- ================================================================ return_task
SELECT is(taskq.insert_tasks($$[
        {"id": "r1", "action": "ret", "to_signal_after": ["r2"]},
        {"id": "r2", "action": "ret2"},
        {"id": "ra", "action": "ret", "to_signal_after": ["rj"]},
        {"id": "rb", "action": "ret", "to_signal_after": ["rj"]},
        {"id": "rj", "action": "ret2"}
    ]$$), 5::bigint, 'tasks to return are inserted');
SELECT results_eq($$SELECT * FROM pg_temp.own('w1', 10, ARRAY['ret', 'ret2'], '1 minute')$$,
    ARRAY['r1', 'ra', 'rb'], 'only the tasks without predecessors are ready');
SELECT lives_ok($$SELECT pg_temp.ret('r1', 'completed', 'all good')$$, 'the owner returns r1 as completed');
SELECT results_eq(
    $$SELECT status_code, status, finished_at, action_deadline FROM taskq.tasks WHERE id = 'r1'$$,
    $$VALUES ('completed'::taskq.status, 'all good'::text, now(), NULL::timestamptz)$$,
    'completed: status set, finished_at set, lease cleared');
SELECT is((SELECT num_signals FROM taskq.tasks WHERE id = 'r2'), 0, 'completed: the successor is signalled');
SELECT results_eq($$SELECT * FROM pg_temp.own('w1', 10, ARRAY['ret2'], '1 minute')$$, ARRAY['r2'],
    'a successor whose signals all arrived is ready');
SELECT lives_ok($$SELECT pg_temp.ret('ra', 'completed')$$, 'one of two predecessors completes');
SELECT is((SELECT num_signals FROM taskq.tasks WHERE id = 'rj'), 1, 'the join still waits for one predecessor');
SELECT is_empty($$SELECT * FROM pg_temp.own('w1', 10, ARRAY['ret2'])$$, 'and is not ready');
SELECT lives_ok($$SELECT pg_temp.ret('rb', 'completed')$$, 'the other predecessor completes');
SELECT results_eq($$SELECT * FROM pg_temp.own('w1', 10, ARRAY['ret2'])$$, ARRAY['rj'],
    'the join is ready once every predecessor completed');

SELECT lives_ok($$SELECT pg_temp.ret('r1', 'completed')$$,
    'the same return repeated after the task finished: a no-op');
SELECT throws_ok($$SELECT pg_temp.ret('r1', 'aborted')$$, '55000', 'task "r1" is already completed',
    'another return of a finished task: 55000 naming the id');
SELECT throws_ok($$SELECT pg_temp.ret('r2', 'in_progress')$$, '22023', NULL, 'returning as in_progress: 22023');
SELECT throws_ok($$SELECT taskq.return_task('nope', gen_random_uuid(), NULL, 'completed')$$,
    '42704', 'task "nope" does not exist', 'returning an unknown task: 42704 naming the id');
SELECT throws_ok($$SELECT taskq.return_task('r2', gen_random_uuid(), NULL, 'completed')$$,
    'TQ001', 'invalid performance token for task "r2"', 'a wrong token: TQ001 naming the id');
SELECT is((SELECT status_code FROM taskq.tasks WHERE id = 'r2'), 'in_progress', 'refused returns change nothing');

-- aborted: the abort cascades to every transitive successor
SELECT is(taskq.insert_tasks($$[
        {"id": "ca", "action": "abt", "to_signal_after": ["cb"]},
        {"id": "cb", "action": "abt", "to_signal_after": ["cc"]},
        {"id": "cc", "action": "abt"},
        {"id": "cd", "action": "abt"}
    ]$$), 4::bigint, 'a chain to abort is inserted');
SELECT results_eq($$SELECT * FROM pg_temp.own('w1', 10, ARRAY['abt'])$$, ARRAY['ca', 'cd'], 'its head is claimed');
SELECT lives_ok($$SELECT pg_temp.ret('ca', 'aborted', 'broken')$$, 'the head is returned as aborted');
SELECT results_eq(
    $$SELECT id COLLATE "default", status_code, status, finished_at IS NOT NULL FROM taskq.tasks
       WHERE id IN ('ca', 'cb', 'cc', 'cd') ORDER BY id$$,
    $$VALUES ('ca'::text, 'aborted'::taskq.status, 'broken'::text, true),
             ('cb', 'aborted', 'aborted: predecessor "ca" aborted', true),
             ('cc', 'aborted', 'aborted: predecessor "cb" aborted', true),
             ('cd', 'in_progress', NULL, false)$$,
    'aborted: every task that transitively depends on it is aborted, naming its predecessor; others untouched');

-- pending: back for another try, or aborted when max_tries is reached
SELECT is(taskq.insert_tasks($$[
        {"id": "rp", "action": "pnd", "status": "queued"},
        {"id": "rm", "action": "pnd", "max_tries": 2, "to_signal_after": ["rms"]},
        {"id": "rms", "action": "pnd2"}
    ]$$), 3::bigint, 'tasks to retry are inserted');
SELECT results_eq($$SELECT * FROM pg_temp.own('w1', 10, ARRAY['pnd'], '1 minute')$$, ARRAY['rp', 'rm'],
    'they are claimed');
SELECT lives_ok($$SELECT pg_temp.ret('rp', 'pending', 'retry later')$$, 'rp is given back');
SELECT results_eq(
    $$SELECT status_code, status, num_tries, actor_id, performance_token, action_deadline, finished_at
        FROM taskq.tasks WHERE id = 'rp'$$,
    $$VALUES ('pending'::taskq.status, 'retry later'::text, 1, NULL::text, NULL::uuid, NULL::timestamptz,
              NULL::timestamptz)$$,
    'pending: back to pending, unowned, num_tries kept');
SELECT lives_ok($$SELECT pg_temp.ret('rm', 'pending')$$, 'rm is given back after its first of two tries');
SELECT results_eq($$SELECT * FROM pg_temp.own('w2', 10, ARRAY['pnd'])$$, ARRAY['rp', 'rm'],
    'tasks given back are claimed again, in insertion order');
SELECT is((SELECT num_tries FROM taskq.tasks WHERE id = 'rm'), 2, 'second try counted');
SELECT lives_ok($$SELECT pg_temp.ret('rm', 'pending')$$, 'rm is given back after its last try');
SELECT results_eq(
    $$SELECT id COLLATE "default", status_code, status FROM taskq.tasks WHERE id IN ('rm', 'rms') ORDER BY id$$,
    $$VALUES ('rm'::text, 'aborted'::taskq.status, 'aborted: all 2 tries used'::text),
             ('rms', 'aborted', 'aborted: predecessor "rm" aborted')$$,
    'pending with max_tries reached: aborted instead, with the cascade');
SELECT lives_ok($$SELECT pg_temp.ret('rp', 'completed', NULL)$$, 'rp completes with a NULL status');
SELECT is((SELECT status FROM taskq.tasks WHERE id = 'rp'), 'retry later', 'a NULL status keeps the status text');

-- return_tasks (documented addition): many at once, all or none
SELECT is(taskq.insert_tasks('[{"id": "rt1", "action": "rts"}, {"id": "rt2", "action": "rts"}]'), 2::bigint,
    'tasks to return together are inserted');
SELECT results_eq($$SELECT * FROM pg_temp.own('w1', 10, ARRAY['rts'])$$, ARRAY['rt1', 'rt2'], 'and claimed');
SELECT throws_ok(
    $$SELECT taskq.return_tasks(ARRAY['rt1', 'rt2'], ARRAY[pg_temp.tok('rt1'), gen_random_uuid()],
                                NULL, ARRAY['completed', 'completed']::taskq.status[])$$,
    'TQ001', 'invalid performance token for task "rt2"', 'return_tasks: one wrong token fails the whole call');
SELECT is((SELECT status_code FROM taskq.tasks WHERE id = 'rt1'), 'in_progress', 'and returns nothing');
SELECT is(taskq.return_tasks(ARRAY['rt2', 'rt1'], ARRAY[pg_temp.tok('rt2'), pg_temp.tok('rt1')],
                             ARRAY['b', 'a'], ARRAY['aborted', 'completed']::taskq.status[]),
    2::bigint, 'return_tasks returns the number of tasks returned');
SELECT results_eq($$SELECT id COLLATE "default", status_code, status FROM taskq.tasks WHERE id IN ('rt1', 'rt2') ORDER BY id$$,
    $$VALUES ('rt1'::text, 'completed'::taskq.status, 'a'::text), ('rt2', 'aborted', 'b')$$,
    'each task gets its own status and status code');

-- ================================================================ leases: expiry and the invalid token
SELECT is(taskq.insert_tasks($$[
        {"id": "l1", "action": "lease"},
        {"id": "l2", "action": "lease2"},
        {"id": "l3", "action": "lease3"},
        {"id": "l4", "action": "lease4", "max_tries": 1, "to_signal_after": ["l4s"]},
        {"id": "l4s", "action": "lease4s"}
    ]$$), 5::bigint, 'tasks with leases are inserted');
SELECT results_eq($$SELECT * FROM pg_temp.own('w1', 10, ARRAY['lease', 'lease2', 'lease3', 'lease4'], '1 minute')$$,
    ARRAY['l1', 'l2', 'l3', 'l4'], 'w1 owns them with a one-minute lease');
CREATE TEMP TABLE w1_tokens AS SELECT id COLLATE "default", token FROM claimed WHERE actor = 'w1' AND id IN ('l1', 'l2', 'l3', 'l4');
SELECT is_empty($$SELECT * FROM pg_temp.own('w2', 10, ARRAY['lease'], '1 minute')$$,
    'a lease that has not expired is not claimed');
SELECT is(pg_temp.expire('l1'), 1, 'the lease of l1 is back-dated');
SELECT results_eq($$SELECT * FROM pg_temp.own('w2', 10, ARRAY['lease'], '1 minute')$$, ARRAY['l1'],
    'an expired lease is claimed by another actor');
SELECT results_eq(
    $$SELECT actor_id, num_tries, performance_token = pg_temp.tok('l1'),
             performance_token <> (SELECT token FROM w1_tokens WHERE id = 'l1')
        FROM taskq.tasks WHERE id = 'l1'$$,
    $$VALUES ('w2'::text, 2, true, true)$$, 'the new owner has a new token; num_tries counts both claims');
SELECT throws_ok(
    $$SELECT taskq.return_task('l1', (SELECT token FROM w1_tokens WHERE id = 'l1'), 'late', 'completed')$$,
    'TQ001', 'invalid performance token for task "l1"',
    'the old owner''s stale token is refused with TQ001 naming the id');
SELECT results_eq(
    $$SELECT id COLLATE "default", owned FROM taskq.extend_ownership('w1', ARRAY['l1'],
          ARRAY[(SELECT token FROM w1_tokens WHERE id = 'l1')], '1 minute')$$,
    $$VALUES ('l1'::text, false)$$, 'the old owner cannot extend it either');
SELECT lives_ok($$SELECT pg_temp.ret('l1', 'completed', 'done by w2')$$, 'the new owner returns it');
SELECT is((SELECT status FROM taskq.tasks WHERE id = 'l1'), 'done by w2', 'with its own status');

SELECT is(pg_temp.expire('l2'), 1, 'the lease of l2 is back-dated');
SELECT lives_ok($$SELECT taskq.return_task('l2', (SELECT token FROM w1_tokens WHERE id = 'l2'), 'late', 'completed')$$,
    'a late owner may return its expired task while nobody else owned it');
SELECT is((SELECT status_code FROM taskq.tasks WHERE id = 'l2'), 'completed', 'the late return counts');

SELECT is(pg_temp.expire('l3'), 1, 'the lease of l3 is back-dated');
SELECT is_empty($$SELECT * FROM pg_temp.own('w2', 10, ARRAY['no-such-action'])$$,
    'a claim of another action (which sweeps expired leases) claims nothing');
SELECT results_eq(
    $$SELECT id COLLATE "default", owned FROM taskq.extend_ownership('w1', ARRAY['l3'],
          ARRAY[(SELECT token FROM w1_tokens WHERE id = 'l3')], '1 minute')$$,
    $$VALUES ('l3'::text, true)$$, 'the late owner may extend an expired lease nobody else owned');
SELECT results_eq($$SELECT status_code, action_deadline FROM taskq.tasks WHERE id = 'l3'$$,
    $$VALUES ('in_progress'::taskq.status, now() + interval '1 minute')$$,
    'the extended task is in progress with a fresh deadline');
SELECT lives_ok($$SELECT taskq.return_task('l3', (SELECT token FROM w1_tokens WHERE id = 'l3'), NULL, 'completed')$$,
    'and returns it');

SELECT is(pg_temp.expire('l4'), 1, 'the lease of l4 is back-dated');
SELECT is_empty($$SELECT * FROM pg_temp.own('w2', 10, ARRAY['lease4'])$$,
    'a lease that expires on the last try is not handed out again');
SELECT results_eq(
    $$SELECT id COLLATE "default", status_code, status FROM taskq.tasks WHERE id IN ('l4', 'l4s') ORDER BY id$$,
    $$VALUES ('l4'::text, 'aborted'::taskq.status, 'aborted: lease expired on the last of 1 tries'::text),
             ('l4s', 'aborted', 'aborted: predecessor "l4" aborted')$$,
    'it is aborted, with the cascade');

-- ================================================================ wait_for_task
SELECT results_eq($$SELECT id COLLATE "default", status_code, status FROM taskq.wait_for_task('r1')$$,
    $$VALUES ('r1'::text, 'completed'::taskq.status, 'all good'::text)$$,
    'wait_for_task on a completed task returns its row at once');
SELECT is(taskq.wait_for_task('cc', '1 second'), (SELECT t FROM taskq.tasks AS t WHERE t.id = 'cc'),
    'wait_for_task on an aborted task returns the whole taskq.tasks row');
SELECT ok(taskq.wait_for_task('i1', '10 ms') IS NULL, 'wait_for_task on a pending task returns NULL after the timeout');
SELECT ok(taskq.wait_for_task('cd', '10 ms') IS NULL, 'wait_for_task on a task in progress returns NULL after the timeout');
SELECT ok(taskq.wait_for_task('i1', '0 seconds') IS NULL, 'a zero timeout does not wait');
SELECT throws_ok($$SELECT taskq.wait_for_task('nope', '10 ms')$$, '42704', 'task "nope" does not exist',
    'wait_for_task on an unknown task: 42704 naming the id');
SELECT throws_ok($$SELECT taskq.wait_for_task('i1', '-1 second')$$, '22023', NULL, 'negative timeout: 22023');

-- ================================================================ add_dependencies
SELECT is(taskq.insert_tasks($$[
        {"id": "da", "action": "dep"}, {"id": "db", "action": "dep"}, {"id": "dc", "action": "dep"},
        {"id": "dd", "action": "dep"}, {"id": "de", "action": "dep2"}, {"id": "df", "action": "dep2"},
        {"id": "dg", "action": "dep2"}, {"id": "dh", "action": "dep2"}, {"id": "di", "action": "dep2"}
    ]$$), 9::bigint, 'tasks to link are inserted');
SELECT is(taskq.add_dependencies(ARRAY['da'], ARRAY['db']), 1::bigint, 'add_dependencies returns the number added');
SELECT results_eq($$SELECT num_signals, total_dependencies FROM taskq.tasks WHERE id = 'db'$$,
    $$VALUES (1, 1)$$, 'the run task waits for the after task');
SELECT results_eq($$SELECT to_signal_after COLLATE "default" FROM taskq.tasks WHERE id = 'da'$$, $$VALUES (ARRAY['db']::text[])$$,
    'the after task lists the run task as successor');
SELECT results_eq($$SELECT * FROM pg_temp.own('w1', 10, ARRAY['dep'])$$, ARRAY['da', 'dc', 'dd'],
    'the run task is not ready');
SELECT lives_ok($$SELECT pg_temp.ret('dd', 'completed')$$, 'dd completes');
SELECT throws_ok($$SELECT taskq.add_dependencies(ARRAY['df'], ARRAY['dc'])$$, '55000',
    'task "dc" has already started', 'a run task in progress: 55000 naming it');
SELECT throws_ok($$SELECT taskq.add_dependencies(ARRAY['df'], ARRAY['dd'])$$, '55000',
    'task "dd" has already finished', 'a finished run task: 55000 naming it');
SELECT throws_ok($$SELECT taskq.insert_tasks('[{"id": "dx", "action": "dep2", "to_signal_after": ["dc"]}]')$$,
    '55000', NULL, 'insert_tasks: to_signal_after naming a started task: 55000');
SELECT is(taskq.add_dependencies(ARRAY['dd'], ARRAY['de']), 0::bigint,
    'an after task that completed is already satisfied: nothing added');
SELECT is((SELECT num_signals FROM taskq.tasks WHERE id = 'de'), 0, 'and the run task stays ready');
SELECT is(taskq.add_dependencies(ARRAY['df', 'dg'], ARRAY['dg', 'dh']), 2::bigint, 'a chain df -> dg -> dh');
SELECT throws_ok($$SELECT taskq.add_dependencies(ARRAY['dh'], ARRAY['df'])$$, '22023', NULL,
    'a dependency closing a cycle: 22023');
SELECT throws_ok($$SELECT taskq.add_dependencies(ARRAY['di'], ARRAY['di'])$$, '22023', NULL,
    'a task waiting for itself: 22023');
SELECT throws_ok($$SELECT taskq.add_dependencies(ARRAY['nope'], ARRAY['di'])$$, '23503',
    'task "nope" named in argument "after_ids" does not exist', 'an unknown after task: 23503 naming it');
SELECT throws_ok($$SELECT taskq.add_dependencies(ARRAY['di'], ARRAY['nope'])$$, '23503',
    'task "nope" named in argument "run_ids" does not exist', 'an unknown run task: 23503 naming it');
SELECT throws_ok($$SELECT taskq.add_dependencies(ARRAY['dh', 'df'], ARRAY['di', 'nope'])$$, '23503', NULL,
    'one bad pair fails the whole call');
SELECT throws_ok($$SELECT taskq.add_dependencies(ARRAY['dh', 'df'], ARRAY['di'])$$, '2202E', NULL,
    'arrays of different lengths: 2202E');
SELECT results_eq(
    $$SELECT id COLLATE "default", num_signals, to_signal_after COLLATE "default" FROM taskq.tasks WHERE id IN ('df', 'dh', 'di') ORDER BY id$$,
    $$VALUES ('df'::text, 0, ARRAY['dg']::text[]), ('dh', 1, NULL), ('di', 0, NULL)$$,
    'refused calls added no dependency');
SELECT throws_ok($$SELECT taskq.add_dependencies(ARRAY['cb'], ARRAY['di'])$$, '55000',
    'task "di" cannot wait for task "cb", which was aborted', 'an aborted after task: 55000');
SELECT lives_ok($$SELECT pg_temp.ret('da', 'completed')$$, 'the after task completes');
SELECT results_eq($$SELECT * FROM pg_temp.own('w1', 10, ARRAY['dep'])$$, ARRAY['db'],
    'the run task is ready once its after task completed');

-- ================================================================ replace_tasks
SELECT is(taskq.insert_tasks($$[
        {"id": "h1", "action": "rep", "body": {"v": 1}},
        {"id": "h2", "action": "rep"},
        {"id": "h3", "action": "rep"},
        {"id": "hp", "action": "rep2", "to_signal_after": ["hs"]},
        {"id": "hs", "action": "rep3"},
        {"id": "ho", "action": "rep3", "to_signal_after": ["hq"]},
        {"id": "hq", "action": "rep3"}
    ]$$), 7::bigint, 'tasks to replace are inserted');
SELECT results_eq($$SELECT * FROM pg_temp.own('w1', 2, ARRAY['rep'], '1 minute')$$, ARRAY['h1', 'h2'],
    'two of them are claimed');
SELECT lives_ok($$SELECT pg_temp.ret('h2', 'completed')$$, 'h2 completes');
SELECT throws_ok($$SELECT taskq.replace_tasks('[{"id": "hnew", "action": "rep"}, {"id": "h1", "action": "rep"}]')$$,
    '55000', 'task "h1" is in progress and cannot be replaced', 'replacing a task in progress: 55000 naming it');
SELECT is((SELECT count(*) FROM taskq.tasks WHERE id = 'hnew'), 0::bigint, 'and the whole call failed');
SELECT is(taskq.replace_tasks($$[
        {"id": "h2", "action": "rep", "body": {"v": 2}},
        {"id": "h3", "action": "rep", "body": {"v": 3}},
        {"id": "hnew", "action": "rep"}
    ]$$), 3::bigint, 'replace_tasks returns the number of tasks inserted, new ids included');
SELECT results_eq(
    $$SELECT id COLLATE "default", body, status_code, num_tries, finished_at, performance_token FROM taskq.tasks
       WHERE id IN ('h2', 'h3', 'hnew') ORDER BY id$$,
    $$VALUES ('h2'::text, '{"v": 2}'::jsonb, 'pending'::taskq.status, 0, NULL::timestamptz, NULL::uuid),
             ('h3', '{"v": 3}', 'pending', 0, NULL, NULL),
             ('hnew', NULL, 'pending', 0, NULL, NULL)$$,
    'replaced tasks (finished or pending) start afresh');
SELECT throws_ok($$SELECT taskq.replace_tasks('[{"id": "h9", "action": "rep"}, {"id": "h9", "action": "rep"}]')$$,
    '23505', 'task "h9" appears more than once in argument "tasks"', 'a duplicate within the batch: 23505');
SELECT is(taskq.replace_tasks('[{"id": "hs", "action": "rep3", "body": "new"}]'), 1::bigint,
    'a task with an unfinished predecessor is replaced');
SELECT results_eq($$SELECT body, num_signals FROM taskq.tasks WHERE id = 'hs'$$,
    $$VALUES ('"new"'::jsonb, 1)$$, 'the new task keeps waiting for the old one''s predecessor');
SELECT is(taskq.replace_tasks('[{"id": "ho", "action": "rep3"}]'), 1::bigint,
    'a task with a successor is replaced');
SELECT is((SELECT status_code FROM taskq.tasks WHERE id = 'hq'), 'aborted',
    'the old task''s successor is aborted (as though the old task aborted)');
SELECT results_eq($$SELECT * FROM pg_temp.own('w1', 10, ARRAY['rep2', 'rep3'], '1 minute')$$, ARRAY['hp', 'ho'],
    'the replacement of ho is ready; hs still waits');
SELECT lives_ok($$SELECT pg_temp.ret('hp', 'completed')$$, 'the predecessor of hs completes');
SELECT results_eq($$SELECT * FROM pg_temp.own('w1', 10, ARRAY['rep3'])$$, ARRAY['hs'],
    'its signal reaches the replacement');
SELECT is(pg_temp.expire('h1'), 1, 'the lease of h1 is back-dated');
SELECT is(taskq.replace_tasks('[{"id": "h1", "action": "rep", "body": {"v": 11}}]'), 1::bigint,
    'a task whose lease expired may be replaced');
SELECT results_eq($$SELECT status_code, body, performance_token FROM taskq.tasks WHERE id = 'h1'$$,
    $$VALUES ('pending'::taskq.status, '{"v": 11}'::jsonb, NULL::uuid)$$, 'and starts afresh');
SELECT is(taskq.insert_tasks('[{"id": "ka", "action": "rep4", "to_signal_after": ["kb"]}, {"id": "kb", "action": "rep4"}]'),
    2::bigint, 'ka -> kb is inserted');
SELECT throws_ok($$SELECT taskq.replace_tasks('[{"id": "kb", "action": "rep4", "to_signal_after": ["ka"]}]')$$,
    '22023', NULL, 'replace_tasks: a cycle closed through the inherited edges: 22023');
SELECT results_eq($$SELECT num_signals, to_signal_after COLLATE "default" FROM taskq.tasks WHERE id IN ('ka', 'kb') ORDER BY id$$,
    $$VALUES (0, ARRAY['kb']::text[]), (1, NULL)$$, 'and nothing changed');

-- ================================================================ monitoring views
SELECT is(taskq.insert_tasks($$[
        {"id": "vi", "action": "vw", "priority": 9},
        {"id": "vx", "action": "vw", "priority": 9},
        {"id": "vc", "action": "vw", "priority": 9},
        {"id": "va", "action": "vw", "priority": 9}
    ]$$), 4::bigint, 'tasks to monitor are inserted');
SELECT results_eq($$SELECT * FROM pg_temp.own('wv', 4, ARRAY['vw'], '1 hour')$$, ARRAY['vi', 'vx', 'vc', 'va'],
    'and claimed');
SELECT lives_ok($$SELECT pg_temp.ret('vc', 'completed')$$, 'vc is returned completed');
SELECT lives_ok($$SELECT pg_temp.ret('va', 'aborted')$$, 'va is returned aborted');
SELECT is(pg_temp.expire('vx'), 1, 'the lease of vx is back-dated');
SELECT is(taskq.insert_tasks(jsonb_build_array(
        jsonb_build_object('id', 'vr1', 'action', 'vw', 'not_before', now() - interval '1 hour'),
        jsonb_build_object('id', 'vr2', 'action', 'vw', 'to_signal_after', jsonb_build_array('vb')),
        jsonb_build_object('id', 'vb', 'action', 'vw'),
        jsonb_build_object('id', 'vd', 'action', 'vw', 'not_before', now() + interval '1 hour'))),
    4::bigint, 'ready, blocked and delayed tasks are inserted');
SELECT results_eq(
    $$SELECT ready, blocked, delayed, in_progress, lease_expired, completed, aborted, oldest_ready_age
        FROM taskq.action_stats WHERE action = 'vw'$$,
    $$VALUES (2::bigint, 1::bigint, 1::bigint, 1::bigint, 1::bigint, 1::bigint, 1::bigint, interval '1 hour')$$,
    'action_stats counts each state of an action and the age of the oldest ready task');
SELECT results_eq(
    $$SELECT id COLLATE "default", actor_id, num_tries, action_deadline, time_left, lease_expired
        FROM taskq.tasks_in_progress WHERE action = 'vw' ORDER BY id$$,
    $$VALUES ('vi'::text, 'wv'::text, 1, now() + interval '1 hour', interval '1 hour', false),
             ('vx', 'wv', 1, now() - interval '1 second', interval '-1 second', true)$$,
    'tasks_in_progress lists the tasks in progress with actor, deadline, time left');

SELECT * FROM finish();
ROLLBACK;
