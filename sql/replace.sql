--
-- replace_tasks: a stored task with a batch id is replaced "as though
-- aborted just before the insert".
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

-- A pending task with successors: aborted with the cascade, then replaced;
-- new ids in the batch are simply inserted.
SELECT taskq.insert_tasks($$[{"id": "x", "action": "old", "body": 1, "to_signal_after": ["y"]},
    {"id": "y", "action": "old", "to_signal_after": ["z"]}, {"id": "z", "action": "old"}]$$);
SELECT taskq.replace_tasks($$[{"id": "x", "action": "new", "body": 2}, {"id": "fresh", "action": "new"}]$$);
SELECT id, action, status_code, status, num_signals, deps, succ FROM public.tq;
SELECT id, body FROM taskq.tasks WHERE id = 'x';
-- A task named by the cascade is finished: it cannot be a successor now.
SELECT expect_error($$SELECT taskq.replace_tasks('[{"id": "x", "action": "new", "to_signal_after": ["y"]}]')$$);
-- ... unless it is replaced in the same batch.
SELECT taskq.replace_tasks($$[{"id": "x", "action": "new", "to_signal_after": ["y"]},
    {"id": "y", "action": "new"}]$$);
SELECT id, action, status_code, status, num_signals, deps, succ FROM public.tq;

-- A finished task is replaced without any abort.
SELECT n, id FROM public.own('w', 10, '{new}');
SELECT ret('fresh', 'completed', 'done once');
SELECT ret('x', 'aborted', 'failed once');
SELECT taskq.replace_tasks($$[{"id": "fresh", "action": "new", "status": "again"},
    {"id": "x", "action": "new"}]$$);
SELECT id, status_code, status, num_tries, num_signals, actor_id, has_token, finished FROM public.tq;

-- An owned task cannot be replaced (lease in the future, or no deadline):
-- 55000 and nothing changes.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[{"id": "busy1", "action": "b"}, {"id": "busy2", "action": "c"},
    {"id": "idle", "action": "i"}]$$);
SELECT n, id FROM public.own('w', 1, '{b}', '1 hour');
SELECT n, id FROM public.own('w', 1, '{c}');
SELECT expect_error($$SELECT taskq.replace_tasks('[{"id": "idle", "action": "i2"}, {"id": "busy1", "action": "b2"}]')$$);
SELECT expect_error($$SELECT taskq.replace_tasks('[{"id": "busy2", "action": "c2"}]')$$);
SELECT id, action, status_code, has_token FROM public.tq;

-- An expired lease may be replaced, in progress past its deadline or
-- requeued by a claim; the late owner's token is then invalid.
UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = 'busy1';
SELECT taskq.replace_tasks('[{"id": "busy1", "action": "b2"}]');
SELECT id, action, status_code, num_tries, has_token FROM public.tq WHERE id = 'busy1';
SELECT expect_error($$SELECT taskq.return_task('busy1', (SELECT token FROM public.tokens WHERE id = 'busy1'), NULL, 'completed')$$);
SELECT n, id FROM public.own('w', 1, '{b2}', '1 hour');
UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = 'busy1';
SELECT n, id FROM public.own('w', 1, '{nothing}');
SELECT id, status_code, has_token FROM public.tq WHERE id = 'busy1';
SELECT taskq.replace_tasks('[{"id": "busy1", "action": "b3"}]');
SELECT id, action, status_code, num_tries, has_token FROM public.tq WHERE id = 'busy1';

-- Inherited edges: unfinished stored predecessors still name the id, so the
-- new task starts with their count plus the batch's edges into it.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[
    {"id": "p1", "action": "p", "to_signal_after": ["t"]},
    {"id": "p2", "action": "p", "to_signal_after": ["t"]},
    {"id": "p3", "action": "p", "to_signal_after": ["t"]},
    {"id": "t", "action": "t"}]$$);
SELECT n, id FROM public.own('w', 10, '{p}');
SELECT ret('p1', 'completed');
SELECT id, num_signals, deps FROM public.tq WHERE id = 't';
SELECT taskq.replace_tasks($$[{"id": "t", "action": "t2"},
    {"id": "p4", "action": "p", "to_signal_after": ["t"]}]$$);
SELECT id, action, status_code, num_signals, deps, succ FROM public.tq;
SELECT ret('p2', 'completed');
SELECT ret('p3', 'completed');
SELECT id, num_signals FROM public.tq WHERE id = 't';
SELECT n, id FROM public.own('w', 10, '{t2}');
SELECT n, id FROM public.own('w', 10, '{p}');
SELECT ret('p4', 'completed');
SELECT n, id FROM public.own('w', 10, '{t2}');

-- An aborted task keeps counting its unfinished predecessors; its
-- replacement inherits them.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[
    {"id": "a1", "action": "a", "to_signal_after": ["j"]},
    {"id": "a2", "action": "a", "to_signal_after": ["j"]},
    {"id": "j", "action": "j"}]$$);
SELECT n, id FROM public.own('w', 10, '{a}');
SELECT ret('a1', 'aborted');
SELECT id, status_code, status, num_signals FROM public.tq;
SELECT taskq.replace_tasks('[{"id": "j", "action": "j"}]');
SELECT id, status_code, status, num_signals, deps FROM public.tq WHERE id = 'j';
SELECT ret('a2', 'completed');
SELECT n, id FROM public.own('w', 10, '{j}');

-- A replaced predecessor and its replaced successor in one batch: the old
-- edge goes with the old predecessor, only the batch's edge counts.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[{"id": "A", "action": "x", "to_signal_after": ["B"]},
    {"id": "B", "action": "x", "to_signal_after": ["C"]}, {"id": "C", "action": "x"}]$$);
SELECT taskq.replace_tasks($$[{"id": "A", "action": "x", "to_signal_after": ["B"]},
    {"id": "B", "action": "x"}]$$);
SELECT id, status_code, status, num_signals, deps, succ FROM public.tq;
SELECT taskq.replace_tasks($$[{"id": "B", "action": "x"}, {"id": "A", "action": "x"}]$$);
SELECT id, status_code, status, num_signals, deps, succ FROM public.tq;
SELECT n, id FROM public.own('w', 10, NULL);

-- A cycle closed through inherited edges: 22023, nothing changes.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[{"id": "pre", "action": "x", "to_signal_after": ["mid"]},
    {"id": "mid", "action": "x", "to_signal_after": ["post"]}, {"id": "post", "action": "x"}]$$);
CREATE TEMP TABLE snap2 AS SELECT * FROM public.tq;
SELECT expect_error($$SELECT taskq.replace_tasks('[{"id": "mid", "action": "x", "to_signal_after": ["pre"]}]')$$);
SELECT expect_error($$SELECT taskq.replace_tasks('[{"id": "post", "action": "x", "to_signal_after": ["pre"]}]')$$);
SELECT expect_error($$SELECT taskq.replace_tasks('[{"id": "mid", "action": "x", "to_signal_after": ["mid"]}]')$$);
-- Duplicates in the batch are still refused.
SELECT expect_error($$SELECT taskq.replace_tasks('[{"id": "mid", "action": "x"}, {"id": "mid", "action": "y"}]')$$);
SELECT NOT EXISTS (SELECT * FROM public.tq EXCEPT SELECT * FROM snap2)
   AND NOT EXISTS (SELECT * FROM snap2 EXCEPT SELECT * FROM public.tq) AS unchanged;
-- Without the cycle it is fine: the replacement of "mid" keeps "pre" as
-- predecessor and may name a new successor.
SELECT taskq.replace_tasks('[{"id": "mid", "action": "x", "to_signal_after": ["post2"]}, {"id": "post2", "action": "x"}]');
SELECT id, status_code, status, num_signals, deps, succ FROM public.tq;

-- Branch-export style: a job is re-submitted with replace_tasks and made to
-- wait for stored work with add_dependencies, in one transaction.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[
    {"id": "copy:1", "action": "copy", "to_signal_after": ["export:main"]},
    {"id": "copy:2", "action": "copy", "to_signal_after": ["export:main"]},
    {"id": "export:main", "action": "export", "to_signal_after": ["done:main"]},
    {"id": "done:main", "action": "done", "spontaneous": true}]$$);
SELECT n, id FROM public.own('w', 10, '{copy}');
SELECT ret('copy:2', 'completed');
SELECT taskq.insert_tasks('[{"id": "copy:3", "action": "copy"}]');
BEGIN;
SELECT taskq.replace_tasks($$[
    {"id": "export:main", "action": "export", "body": {"v": 2}, "to_signal_after": ["done:main"]},
    {"id": "done:main", "action": "done", "spontaneous": true}]$$);
SELECT taskq.add_dependencies('{copy:3,copy:2}', '{export:main,export:main}');
COMMIT;
SELECT id, status_code, status, num_signals, deps, succ FROM public.tq;
SELECT n, id FROM public.own('w', 10, '{copy}');
SELECT ret('copy:1', 'completed');
SELECT ret('copy:3', 'completed');
SELECT n, id, body FROM public.own('w', 10, '{export}');
SELECT ret('export:main', 'completed');
SELECT id, status_code, num_signals, finished FROM public.tq;
