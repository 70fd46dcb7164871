--
-- Where claims start (src/hint.c): past the dead entries at the head of a
-- ready index.  Every statement here commits by itself, so each claim may
-- move the start; each case below is one where a start left too far ahead
-- would lose a task, or hand tasks out of order.
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

SELECT taskq.insert_tasks($$[
    {"id": "s1", "action": "s"}, {"id": "s2", "action": "s"},
    {"id": "s3", "action": "s"}, {"id": "s4", "action": "s"},
    {"id": "t1", "action": "t"}]$$);
-- s1 and s2, then s3 and s4: the second claim walks past the first's
-- entries, dead once it committed; a third finds nothing of s, and leaves
-- the start of s behind s4.
SELECT n, id FROM public.own('a', 2, '{s}');
SELECT n, id FROM public.own('a', 2, '{s}');
SELECT n, id FROM public.own('a', 2, '{s}');
-- The same for the index of all actions (t1 is the only live entry).
SELECT n, id FROM public.own('a', 1, NULL);
SELECT n, id FROM public.own('a', 1, NULL);

-- Returned for a retry (SQL update, the trigger): s3 is ready again, its
-- entry before the start; the next claim, of s or of any action, takes it.
SELECT public.ret('s3', 'pending');
SELECT n, id, num_tries FROM public.own('a', 2, '{s}');
SELECT public.ret('s3', 'pending');
SELECT n, id, num_tries FROM public.own('a', 2, NULL);

-- A higher priority sorts before the start: inserted one at a time (SQL
-- insert) or in a batch of more than 16 (the direct insert, no trigger),
-- each with a higher priority than the last.
SELECT taskq.insert_tasks($$[{"id": "hi", "action": "s", "priority": 5}]$$);
SELECT n, id FROM public.own('a', 5, '{s}');
SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object(
    'id', 'b' || g, 'action', 's', 'priority', 7)) FROM generate_series(1, 20) g));
SELECT count(*) AS claimed, min(id) AS first, bool_and(id LIKE 'b%') AS all_b
  FROM public.own('a', 50, NULL);

-- Lower priority, same action, inserted after the start moved past
-- everything: still found (the walk goes on to lower priorities).
SELECT taskq.insert_tasks($$[{"id": "lo", "action": "s", "priority": -5}]$$);
SELECT n, id FROM public.own('a', 5, '{s}');

-- A delayed task is live: the start stops at it, and it is claimed once
-- its time comes (here an admin's UPDATE brings the time forward).
SELECT taskq.insert_tasks($$[{"id": "late", "action": "s", "not_before": "2999-01-01"}]$$);
SELECT n, id FROM public.own('a', 5, '{s}');
UPDATE taskq.tasks SET not_before = now() - interval '1 minute' WHERE id = 'late';
SELECT n, id FROM public.own('a', 5, '{s}');

-- A lease that expires: the sweep run by the claim requeues it, and the
-- same claim takes it, though its entry is before the start.
SELECT taskq.insert_tasks($$[{"id": "ex", "action": "s"}]$$);
SELECT n, id FROM public.own('a', 1, '{s}', '1 minute');
SELECT n, id FROM public.own('a', 1, '{s}');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = 'ex';
SELECT n, id, num_tries FROM public.own('a', 1, '{s}');

-- A claim rolled back: its tasks are claimed next.
SELECT taskq.insert_tasks($$[{"id": "r1", "action": "s"}, {"id": "r2", "action": "s"}]$$);
BEGIN;
SELECT n, id FROM public.own('a', 2, '{s}');
ROLLBACK;
SELECT n, id FROM public.own('a', 1, '{s}');
-- Two claims in one transaction: the second sees the first one's rows as
-- updated, but must not move the start past them, since they roll back.
BEGIN;
SELECT n, id FROM public.own('a', 1, '{s}');
SELECT n, id FROM public.own('a', 1, '{s}');
ROLLBACK;
SELECT n, id FROM public.own('a', 5, '{s}');

-- A claim that walked from the start over nothing but its own rows moves
-- the start past them when it commits (taskq_hint_defer), not before: here
-- the claim is undone before the commit, in a savepoint, in a PL/pgSQL
-- exception block, and by a retry of one of its tasks in the same
-- transaction.  Each time the tasks must be claimed next.
SELECT n, id FROM public.own('a', 5, '{s}');
SELECT taskq.insert_tasks($$[{"id": "d1", "action": "s"}, {"id": "d2", "action": "s"},
                             {"id": "d3", "action": "s"}]$$);
BEGIN;
SAVEPOINT sp;
SELECT n, id FROM public.own('a', 2, '{s}');
ROLLBACK TO sp;
COMMIT;
SELECT n, id FROM public.own('a', 1, '{s}');
DO $$
BEGIN
    PERFORM taskq.own_tasks('a', 2, ARRAY['s']);
    RAISE EXCEPTION 'undo the claim';
EXCEPTION WHEN raise_exception THEN
    NULL;
END $$;
SELECT n, id FROM public.own('a', 1, '{s}');
BEGIN;
SELECT n, id FROM public.own('a', 5, '{s}');
SELECT public.ret('d3', 'pending');
COMMIT;
SELECT n, id, num_tries FROM public.own('a', 5, '{s}');

-- With a trigger disabled, claims walk from the first entry; DDL on the
-- table forgets the start, so writes it missed are found after it too.
ALTER TABLE taskq.tasks DISABLE TRIGGER tasks_ready_hint_update;
SELECT public.ret('r1', 'pending');
SELECT n, id FROM public.own('a', 5, '{s}');
SELECT public.ret('r1', 'pending');
ALTER TABLE taskq.tasks ENABLE ALWAYS TRIGGER tasks_ready_hint_update;
SELECT n, id FROM public.own('a', 5, '{s}');

-- Enabled for origin sessions only, the trigger does not fire in a session
-- with session_replication_role = replica (as logical replication tools
-- and pg_restore set it): claims then do not move the start, and walk from
-- the first entry, so such a write is found too.
ALTER TABLE taskq.tasks ENABLE TRIGGER tasks_ready_hint_update;
SELECT n, id FROM public.own('a', 5, '{s}');
SELECT n, id FROM public.own('a', 5, '{s}');
SET session_replication_role = replica;
SELECT public.ret('r1', 'pending');
RESET session_replication_role;
SELECT n, id FROM public.own('a', 5, '{s}');
ALTER TABLE taskq.tasks ENABLE ALWAYS TRIGGER tasks_ready_hint_update;

-- return_and_own may move the start though its return wrote first, unless
-- the return changed a ready row: here it completes x1, which a lease
-- expiry put back to pending (the late owner keeps its token), and the
-- transaction then rolls back.  x1 must be claimed next.
SELECT taskq.insert_tasks($$[{"id": "x1", "action": "x"}, {"id": "x2", "action": "x"},
                             {"id": "x3", "action": "x"}]$$);
SELECT n, id FROM public.own('a', 1, '{x}', '1 minute');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = 'x1';
SELECT n, id FROM public.own('a', 1, '{nothing}');
SELECT id, status_code, performance_token IS NOT NULL AS has_token FROM taskq.tasks WHERE id = 'x1';
BEGIN;
SELECT id FROM taskq.return_and_own(ARRAY['x1'],
    ARRAY[(SELECT performance_token FROM taskq.tasks WHERE id = 'x1')], NULL,
    ARRAY['completed']::taskq.status[], 'a', 1, ARRAY['x']);
ROLLBACK;
SELECT n, id FROM public.own('a', 5, '{x}');
-- The usual cycle: it returns x1..x3 and claims what is left, moving the start.
SELECT taskq.insert_tasks($$[{"id": "x4", "action": "x"}]$$);
SELECT id FROM taskq.return_and_own(ARRAY['x1', 'x2', 'x3'],
    ARRAY(SELECT k.token FROM public.tokens AS k WHERE k.id IN ('x1', 'x2', 'x3') ORDER BY k.id),
    NULL, ARRAY['completed', 'completed', 'completed']::taskq.status[], 'a', 5, ARRAY['x']);
SELECT n, id FROM public.own('a', 5, '{x}');

-- taskq.shared_claim_start = off: this session walks from the first entry.
SELECT taskq.insert_tasks($$[{"id": "o1", "action": "s", "priority": 99}]$$);
SET taskq.shared_claim_start = off;
SELECT n, id FROM public.own('a', 5, '{s}');
RESET taskq.shared_claim_start;

-- Nothing is left pending.
SELECT count(*) FILTER (WHERE status_code = 'pending') AS pending FROM taskq.tasks;
