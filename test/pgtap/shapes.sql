-- test/pgtap/shapes.sql: chain, group and chord (docs/semantics.md, Shapes),
-- built on the insert_tasks contract: edges, readiness, all-or-none, and the
-- spontaneous join that the queue completes by itself.
-- One transaction, time never waited for; each test uses its own actions.
BEGIN;
SELECT plan(62);

CREATE TEMP TABLE claimed (n serial, id text, token uuid);
CREATE FUNCTION pg_temp.own(p_actions text[]) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM taskq.own_tasks('shape-worker', 100, p_actions, '1 minute') LOOP
        INSERT INTO claimed (id, token) VALUES (r.id, r.token);
        RETURN NEXT r.id;
    END LOOP;
END
$$;
CREATE FUNCTION pg_temp.ret(p_id text, p_code taskq.status) RETURNS void LANGUAGE sql AS $$
    SELECT taskq.return_task(p_id,
        (SELECT c.token FROM claimed c WHERE c.id = p_id ORDER BY c.n DESC LIMIT 1), NULL, p_code)
$$;
-- Edges and counters of some tasks, comparable whatever the collation of the columns.
CREATE FUNCTION pg_temp.graph(p_ids text[])
RETURNS TABLE (id text, num_signals integer, total_dependencies integer, to_signal_after text[])
LANGUAGE sql AS $$
    SELECT t.id COLLATE "default", t.num_signals, t.total_dependencies, t.to_signal_after COLLATE "default"
      FROM taskq.tasks t WHERE t.id = ANY (p_ids) ORDER BY t.id
$$;
-- State of some tasks.
CREATE FUNCTION pg_temp.state(p_ids text[])
RETURNS TABLE (id text, status_code taskq.status)
LANGUAGE sql AS $$
    SELECT t.id COLLATE "default", t.status_code FROM taskq.tasks t WHERE t.id = ANY (p_ids) ORDER BY t.id
$$;

-- ================================================================ chain
SELECT is(taskq.chain('[{"id": "sh-c1", "action": "ch"}, {"id": "sh-c2", "action": "ch"}, {"id": "sh-c3", "action": "ch"}]'),
    3::bigint, 'chain returns the number of tasks inserted');
SELECT results_eq($$SELECT * FROM pg_temp.graph(ARRAY['sh-c1', 'sh-c2', 'sh-c3'])$$,
    $$VALUES ('sh-c1'::text, 0, 0, ARRAY['sh-c2']), ('sh-c2', 1, 1, ARRAY['sh-c3']), ('sh-c3', 1, 1, NULL)$$,
    'chain: each task signals the next');
SELECT results_eq($$SELECT * FROM pg_temp.own(ARRAY['ch'])$$, ARRAY['sh-c1'], 'chain: only the first is ready');
SELECT lives_ok($$SELECT pg_temp.ret('sh-c1', 'completed')$$, 'sh-c1 is returned completed');
SELECT results_eq($$SELECT * FROM pg_temp.own(ARRAY['ch'])$$, ARRAY['sh-c2'], 'chain: the second runs after the first');
SELECT lives_ok($$SELECT pg_temp.ret('sh-c2', 'completed')$$, 'sh-c2 is returned completed');
SELECT results_eq($$SELECT * FROM pg_temp.own(ARRAY['ch'])$$, ARRAY['sh-c3'], 'chain: the third runs after the second');

SELECT is(taskq.insert_tasks('[{"id": "sh-cx1", "action": "chx"}, {"id": "sh-cx2", "action": "chx"}]'), 2::bigint,
    'two tasks for a chain to wait for');
SELECT is(taskq.chain('[{"id": "sh-ca", "action": "cha"}, {"id": "sh-cb", "action": "cha"}]', ARRAY['sh-cx1', 'sh-cx2']),
    2::bigint, 'chain after_ids: inserted');
SELECT results_eq($$SELECT * FROM pg_temp.graph(ARRAY['sh-ca', 'sh-cb', 'sh-cx1', 'sh-cx2'])$$,
    $$VALUES ('sh-ca'::text, 2, 2, ARRAY['sh-cb']), ('sh-cb', 1, 1, NULL), ('sh-cx1', 0, 0, ARRAY['sh-ca']), ('sh-cx2', 0, 0, ARRAY['sh-ca'])$$,
    'chain after_ids: the first task waits for every after id');
SELECT results_eq($$SELECT * FROM pg_temp.own(ARRAY['cha', 'chx'])$$, ARRAY['sh-cx1', 'sh-cx2'],
    'chain after_ids: the chain is not ready before its after tasks');
SELECT lives_ok($$SELECT pg_temp.ret('sh-cx1', 'completed')$$, 'sh-cx1 is returned completed');
SELECT is_empty($$SELECT * FROM pg_temp.own(ARRAY['cha'])$$, 'chain after_ids: one after task is not enough');
SELECT lives_ok($$SELECT pg_temp.ret('sh-cx2', 'completed')$$, 'sh-cx2 is returned completed');
SELECT results_eq($$SELECT * FROM pg_temp.own(ARRAY['cha'])$$, ARRAY['sh-ca'],
    'chain after_ids: the first task is ready once every after task completed');

SELECT is(taskq.chain('[]'), 0::bigint, 'chain of nothing inserts nothing');
SELECT throws_ok($$SELECT taskq.chain('[{"id": "sh-cd1", "action": "ch"}, {"id": "sh-c1", "action": "ch"}]')$$,
    '23505', 'task "sh-c1" already exists', 'chain: a stored id fails the whole chain with 23505');
SELECT is((SELECT count(*) FROM taskq.tasks WHERE id = 'sh-cd1'), 0::bigint, 'chain: all or none');

-- ================================================================ group
SELECT is(taskq."group"('[{"id": "sh-g1", "action": "gr"}, {"id": "sh-g2", "action": "gr"}, {"id": "sh-g3", "action": "gr"}]'),
    3::bigint, 'group returns the number of tasks inserted');
SELECT results_eq($$SELECT * FROM pg_temp.graph(ARRAY['sh-g1', 'sh-g2', 'sh-g3'])$$,
    $$VALUES ('sh-g1'::text, 0, 0, NULL::text[]), ('sh-g2', 0, 0, NULL), ('sh-g3', 0, 0, NULL)$$,
    'group: no edges between the tasks');
SELECT results_eq($$SELECT * FROM pg_temp.own(ARRAY['gr'])$$, ARRAY['sh-g1', 'sh-g2', 'sh-g3'], 'group: all ready at once');

SELECT is(taskq.insert_tasks('[{"id": "sh-gx", "action": "grx"}]'), 1::bigint, 'a task for a group to wait for');
SELECT is(taskq."group"('[{"id": "sh-ga", "action": "gra"}, {"id": "sh-gb", "action": "gra"}]', ARRAY['sh-gx']),
    2::bigint, 'group after_ids: inserted');
SELECT results_eq($$SELECT * FROM pg_temp.graph(ARRAY['sh-ga', 'sh-gb', 'sh-gx'])$$,
    $$VALUES ('sh-ga'::text, 1, 1, NULL::text[]), ('sh-gb', 1, 1, NULL), ('sh-gx', 0, 0, ARRAY['sh-ga', 'sh-gb'])$$,
    'group after_ids: each task waits for the after task');
SELECT results_eq($$SELECT * FROM pg_temp.own(ARRAY['gra', 'grx'])$$, ARRAY['sh-gx'],
    'group after_ids: the group waits');
SELECT lives_ok($$SELECT pg_temp.ret('sh-gx', 'completed')$$, 'sh-gx is returned completed');
SELECT results_eq($$SELECT * FROM pg_temp.own(ARRAY['gra'])$$, ARRAY['sh-ga', 'sh-gb'],
    'group after_ids: the whole group is ready once the after task completed');
SELECT throws_ok($$SELECT taskq."group"('[{"id": "sh-gd", "action": "gr"}, {"id": "sh-gd", "action": "gr"}]')$$,
    '23505', 'task "sh-gd" appears more than once in argument "tasks"', 'group: a duplicate id fails with 23505');

-- ================================================================ chord, spontaneous join
SELECT is(taskq.insert_tasks('[{"id": "sh-nx", "action": "cnx"}]'), 1::bigint, 'the successor of a join is stored');
SELECT is(taskq.chord(
        '[{"id": "sh-m1", "action": "chm"}, {"id": "sh-m2", "action": "chm"}, {"id": "sh-m3", "action": "chm"}]',
        '{"id": "sh-j", "action": "cj", "spontaneous": true, "to_signal_after": ["sh-nx"]}'),
    4::bigint, 'chord returns the number of tasks inserted, join included');
SELECT results_eq($$SELECT * FROM pg_temp.graph(ARRAY['sh-j', 'sh-m1', 'sh-m2', 'sh-m3', 'sh-nx'])$$,
    $$VALUES ('sh-j'::text, 3, 3, ARRAY['sh-nx']), ('sh-m1', 0, 0, ARRAY['sh-j']), ('sh-m2', 0, 0, ARRAY['sh-j']),
             ('sh-m3', 0, 0, ARRAY['sh-j']), ('sh-nx', 1, 1, NULL)$$,
    'chord: every member signals the join');
SELECT results_eq($$SELECT * FROM pg_temp.own(ARRAY['chm', 'cj', 'cnx'])$$, ARRAY['sh-m1', 'sh-m2', 'sh-m3'],
    'chord: the members are ready, the join and its successor wait');
SELECT lives_ok($$SELECT pg_temp.ret('sh-m1', 'completed')$$, 'sh-m1 is returned completed');
SELECT lives_ok($$SELECT pg_temp.ret('sh-m2', 'completed')$$, 'sh-m2 is returned completed');
SELECT results_eq($$SELECT status_code, num_signals FROM taskq.tasks WHERE id = 'sh-j'$$,
    $$VALUES ('pending'::taskq.status, 1)$$, 'chord: the join waits for its last member');
SELECT ok(taskq.wait_for_task('sh-j', '10 ms') IS NULL, 'chord: the join is not finished yet');
SELECT lives_ok($$SELECT pg_temp.ret('sh-m3', 'completed')$$, 'sh-m3 is returned completed');
SELECT results_eq(
    $$SELECT status_code, num_signals, num_tries, actor_id, finished_at FROM taskq.tasks WHERE id = 'sh-j'$$,
    $$VALUES ('completed'::taskq.status, 0, 0, NULL::text, now())$$,
    'chord: the spontaneous join completes by itself when the last member completes, never owned');
SELECT is((SELECT (taskq.wait_for_task('sh-j', '1 second')).status_code), 'completed'::taskq.status,
    'chord: wait_for_task on the join returns it completed');
SELECT is((SELECT num_signals FROM taskq.tasks WHERE id = 'sh-nx'), 0, 'chord: the join signalled its successor');
SELECT results_eq($$SELECT * FROM pg_temp.own(ARRAY['cj', 'cnx'])$$, ARRAY['sh-nx'],
    'chord: the successor of the join is ready; the join is never handed out');

-- a spontaneous join without members completes at insert
SELECT is(taskq.chord('[]', '{"id": "sh-ej", "action": "cj", "spontaneous": true}'), 1::bigint,
    'chord without members inserts the join');
SELECT is((SELECT status_code FROM taskq.tasks WHERE id = 'sh-ej'), 'completed'::taskq.status,
    'a spontaneous join with nothing to wait for is completed at once');

-- ================================================================ chord, ordinary join
SELECT is(taskq.chord('[{"id": "sh-n1", "action": "chn"}, {"id": "sh-n2", "action": "chn"}]', '{"id": "sh-k", "action": "ck"}'),
    3::bigint, 'chord with an ordinary join');
SELECT results_eq($$SELECT * FROM pg_temp.own(ARRAY['chn', 'ck'])$$, ARRAY['sh-n1', 'sh-n2'], 'its members are ready');
SELECT lives_ok($$SELECT pg_temp.ret('sh-n1', 'completed')$$, 'sh-n1 is returned completed');
SELECT is_empty($$SELECT * FROM pg_temp.own(ARRAY['ck'])$$, 'the join waits for every member');
SELECT lives_ok($$SELECT pg_temp.ret('sh-n2', 'completed')$$, 'sh-n2 is returned completed');
SELECT results_eq($$SELECT * FROM pg_temp.own(ARRAY['ck'])$$, ARRAY['sh-k'],
    'an ordinary join is ready for a worker once every member completed');

-- ================================================================ chord, a member aborts
SELECT is(taskq.chord('[{"id": "sh-q1", "action": "chq"}, {"id": "sh-q2", "action": "chq"}]',
                      '{"id": "sh-qj", "action": "cqj", "spontaneous": true}'),
    3::bigint, 'a chord whose member will abort');
SELECT results_eq($$SELECT * FROM pg_temp.own(ARRAY['chq'])$$, ARRAY['sh-q1', 'sh-q2'], 'its members are claimed');
SELECT lives_ok($$SELECT pg_temp.ret('sh-q1', 'aborted')$$, 'sh-q1 is returned aborted');
SELECT results_eq($$SELECT status_code, status FROM taskq.tasks WHERE id = 'sh-qj'$$,
    $$VALUES ('aborted'::taskq.status, 'aborted: predecessor "sh-q1" aborted'::text)$$,
    'an aborted member aborts the join');
SELECT lives_ok($$SELECT pg_temp.ret('sh-q2', 'completed')$$, 'sh-q2 is returned completed');
SELECT results_eq($$SELECT * FROM pg_temp.state(ARRAY['sh-q1', 'sh-q2', 'sh-qj'])$$,
    $$VALUES ('sh-q1'::text, 'aborted'::taskq.status), ('sh-q2', 'completed'), ('sh-qj', 'aborted')$$,
    'the other member still completes; the aborted join stays aborted');

-- ================================================================ chord, after_ids and errors
SELECT is(taskq.insert_tasks('[{"id": "sh-ra", "action": "cra"}]'), 1::bigint, 'a task for a chord to wait for');
SELECT is(taskq.chord('[{"id": "sh-r1", "action": "chr"}, {"id": "sh-r2", "action": "chr"}]', '{"id": "sh-rj", "action": "crj"}',
                      ARRAY['sh-ra']),
    3::bigint, 'chord after_ids: inserted');
SELECT results_eq($$SELECT * FROM pg_temp.graph(ARRAY['sh-r1', 'sh-r2', 'sh-ra', 'sh-rj'])$$,
    $$VALUES ('sh-r1'::text, 1, 1, ARRAY['sh-rj']), ('sh-r2', 1, 1, ARRAY['sh-rj']), ('sh-ra', 0, 0, ARRAY['sh-r1', 'sh-r2']),
             ('sh-rj', 2, 2, NULL)$$,
    'chord after_ids: the members wait for the after task, the join for the members');
SELECT throws_ok($$SELECT taskq.chord('[{"id": "sh-z1", "action": "chz"}]', NULL)$$, '22004', NULL,
    'chord: a NULL join: 22004');
SELECT throws_ok($$SELECT taskq.chord('[{"id": "sh-z1", "action": "chz"}]', '["zj"]')$$, '22023', NULL,
    'chord: a join that is not an object: 22023');
SELECT throws_ok($$SELECT taskq.chord('[{"id": "sh-z1", "action": "chz"}, {"id": "sh-z2", "action": "chz"}]',
                                      '{"id": "sh-z1", "action": "chz"}')$$,
    '23505', 'task "sh-z1" appears in both argument "tasks" and argument "join"', 'chord: a join id equal to a member id: 23505');
SELECT is((SELECT count(*) FROM taskq.tasks WHERE id IN ('sh-z1', 'sh-z2')), 0::bigint, 'chord: all or none');

SELECT * FROM finish();
ROLLBACK;
