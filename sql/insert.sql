--
-- insert_tasks: keys, defaults, batch edges, edges to stored tasks,
-- duplicates, unknown and started successors, cycles, spontaneous tasks,
-- claim order, not_before.
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

-- An empty array inserts nothing and returns 0.
SELECT taskq.insert_tasks('[]');
SELECT count(*) FROM taskq.tasks;

-- The minimal task: every optional column takes its default.
SELECT taskq.insert_tasks('[{"id": "min", "action": "a"}]');
SELECT id, action, body, status_code, status, num_tries, max_tries, num_signals,
       total_dependencies, to_signal_after, actor_id, action_deadline,
       performance_token, post_result, priority, spontaneous, finished_at,
       not_before = created_at AS not_before_is_insertion_time,
       created_at <= now() AS created_before_now
  FROM taskq.tasks WHERE id = 'min';

-- Every key given.
SELECT taskq.insert_tasks($$[{"id": "all", "action": "a",
    "body": {"k": [1, 2, {"n": null}]}, "max_tries": 3, "priority": -7,
    "not_before": "2001-02-03T04:05:06Z", "post_result": true,
    "spontaneous": false, "status": "queued by test", "to_signal_after": []}]$$);
SELECT id, action, body, status_code, status, max_tries, priority, post_result,
       spontaneous, to_signal_after, num_signals,
       not_before = '2001-02-03 04:05:06+00' AS not_before_kept
  FROM taskq.tasks WHERE id = 'all';

-- A key given as JSON null takes its default; a JSON null body is no body.
SELECT taskq.insert_tasks($$[{"id": "nulls", "action": "a", "body": null,
    "to_signal_after": null, "max_tries": null, "priority": null,
    "not_before": null, "post_result": null, "spontaneous": null,
    "status": null}]$$);
SELECT id, body IS NULL AS no_body, status, max_tries, priority, post_result,
       spontaneous, to_signal_after, not_before = created_at AS not_before_default
  FROM taskq.tasks WHERE id = 'nulls';

-- Bodies of every JSON type are kept as given.
SELECT taskq.insert_tasks($$[{"id": "b1", "action": "a", "body": "text"},
    {"id": "b2", "action": "a", "body": 12.5}, {"id": "b3", "action": "a", "body": true},
    {"id": "b4", "action": "a", "body": [1, "x"]}, {"id": "b5", "action": "a", "body": {}}]$$);
SELECT id, body, jsonb_typeof(body) FROM taskq.tasks WHERE id LIKE 'b_' ORDER BY id;

-- Edges within a batch: a diamond; an edge named twice counts twice.
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks($$[
    {"id": "d", "action": "a"},
    {"id": "b", "action": "a", "to_signal_after": ["d"]},
    {"id": "c", "action": "a", "to_signal_after": ["d"]},
    {"id": "a", "action": "a", "to_signal_after": ["b", "c"]},
    {"id": "twice", "action": "a", "to_signal_after": ["e", "e"]},
    {"id": "e", "action": "a"}]$$);
SELECT id, num_signals, deps, succ FROM public.tq;

-- Edges to stored tasks that have not started: counted on the stored task.
SELECT taskq.insert_tasks($$[{"id": "p1", "action": "a", "to_signal_after": ["d", "e"]},
    {"id": "p2", "action": "a", "to_signal_after": ["e"]}]$$);
SELECT id, num_signals, deps, succ FROM public.tq WHERE id IN ('d', 'e', 'p1', 'p2');

-- Ids that need quoting in an array literal travel intact.
SELECT taskq.insert_tasks($$[{"id": "NULL", "action": "a"},
    {"id": "q\"uote", "action": "a"}, {"id": "back\\slash", "action": "a"},
    {"id": "x,y {z}", "action": "a"}, {"id": " sp ", "action": "a"},
    {"id": "ünï", "action": "a"},
    {"id": "odd", "action": "a",
     "to_signal_after": ["NULL", "q\"uote", "back\\slash", "x,y {z}", " sp ", "ünï"]}]$$);
SELECT to_signal_after, array_length(to_signal_after, 1) AS n,
       to_signal_after[1] IS NOT NULL AS first_is_string
  FROM taskq.tasks WHERE id = 'odd';
SELECT id, num_signals FROM taskq.tasks
 WHERE id IN ('NULL', 'q"uote', 'back\slash', 'x,y {z}', ' sp ', 'ünï') ORDER BY id;

-- A successor that is neither in the batch nor stored: 23503, nothing added.
SELECT count(*) AS before FROM taskq.tasks \gset
SELECT expect_error($$SELECT taskq.insert_tasks('[{"id": "n1", "action": "a"},
    {"id": "n2", "action": "a", "to_signal_after": ["n1", "ghost"]}]')$$);
SELECT count(*) = :before AS unchanged,
       count(*) FILTER (WHERE id IN ('n1', 'n2')) AS batch_rows
  FROM taskq.tasks;

-- Duplicate ids, in the batch or stored: 23505 naming the id.
SELECT expect_error($$SELECT taskq.insert_tasks('[{"id": "u1", "action": "a"},
    {"id": "u2", "action": "a"}, {"id": "u1", "action": "b"}]')$$);
SELECT expect_error($$SELECT taskq.insert_tasks('[{"id": "u1", "action": "a"},
    {"id": "d", "action": "a"}]')$$);
-- ... even when an edge to a stored task would be counted first.
SELECT expect_error($$SELECT taskq.insert_tasks('[{"id": "u3", "action": "a", "to_signal_after": ["e"]},
    {"id": "p1", "action": "a"}]')$$);
SELECT count(*) = :before AS unchanged FROM taskq.tasks;
SELECT id, num_signals, deps FROM public.tq WHERE id = 'e';

-- Cycles among the batch's edges: 22023, nothing added.
SELECT expect_error($$SELECT taskq.insert_tasks('[{"id": "c1", "action": "a", "to_signal_after": ["c1"]}]')$$);
SELECT expect_error($$SELECT taskq.insert_tasks('[{"id": "c1", "action": "a", "to_signal_after": ["c2"]},
    {"id": "c2", "action": "a", "to_signal_after": ["c1"]}]')$$);
SELECT expect_error($$SELECT taskq.insert_tasks('[{"id": "c0", "action": "a", "to_signal_after": ["c1"]},
    {"id": "c1", "action": "a", "to_signal_after": ["c2", "d"]},
    {"id": "c2", "action": "a", "to_signal_after": ["c3"]},
    {"id": "c3", "action": "a", "to_signal_after": ["c1"]}]')$$);
SELECT count(*) = :before AS unchanged FROM taskq.tasks;
SELECT id, num_signals FROM public.tq WHERE id = 'd';

-- Errors name the task by position and id in a context line.
SELECT error_context($$SELECT taskq.insert_tasks('[{"id": "ok", "action": "a"},
    {"id": "bad", "action": "a", "priority": "high"}]')$$);
SELECT error_context($$SELECT taskq.insert_tasks('[{"id": "ok", "action": "a"}, {"action": "a"}]')$$);
SELECT error_context($$SELECT taskq.insert_tasks('[{"id": "ok", "action": "a"}, 7]')$$);

-- Successors that started or finished: 55000, nothing added.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[{"id": "run", "action": "s"}, {"id": "done", "action": "s"},
    {"id": "retried", "action": "s"}]$$);
SELECT id FROM public.own('w', 3, '{s}');
SELECT ret('done', 'completed');
SELECT ret('retried', 'pending');
SELECT expect_error($$SELECT taskq.insert_tasks('[{"id": "n", "action": "a", "to_signal_after": ["run"]}]')$$);
SELECT expect_error($$SELECT taskq.insert_tasks('[{"id": "n", "action": "a", "to_signal_after": ["done"]}]')$$);
SELECT count(*) AS tasks FROM taskq.tasks;
SELECT id, status_code, num_signals, deps FROM public.tq;
-- A task given back for another try has not started: it may be a successor.
SELECT taskq.insert_tasks('[{"id": "n", "action": "a", "to_signal_after": ["retried"]}]');
SELECT id, status_code, num_signals, deps, has_token FROM public.tq WHERE id = 'retried';

-- Spontaneous tasks: completed by the queue as soon as nothing is awaited.
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[
    {"id": "s1", "action": "j", "spontaneous": true, "to_signal_after": ["s2"]},
    {"id": "s2", "action": "j", "spontaneous": true, "to_signal_after": ["w1"]},
    {"id": "w1", "action": "w"},
    {"id": "w0", "action": "w", "to_signal_after": ["s3"]},
    {"id": "s3", "action": "j", "spontaneous": true, "to_signal_after": ["w2"]},
    {"id": "w2", "action": "w"},
    {"id": "lone", "action": "j", "spontaneous": true, "status": "kept"}]$$);
SELECT id, status_code, status, num_signals, deps, finished, num_tries, actor_id FROM public.tq;
-- A spontaneous task pointing at a stored task signals it at insert.
SELECT taskq.insert_tasks('[{"id": "w3", "action": "w"}]');
SELECT taskq.insert_tasks('[{"id": "s4", "action": "j", "spontaneous": true, "to_signal_after": ["w3"]}]');
SELECT id, status_code, num_signals, deps FROM public.tq WHERE id IN ('s4', 'w3');
-- The spontaneous join completes when its last predecessor completes, and
-- signals its own successors in the same transaction.
SELECT n, id FROM public.own('w', 10, '{w}');
SELECT ret('w0', 'completed');
SELECT id, status_code, num_signals FROM public.tq WHERE id IN ('w0', 's3', 'w2');
SELECT n, id FROM public.own('w', 10, '{w}');

-- Claim order: priority descending, then insertion order (across batches).
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[{"id": "o1", "action": "o"},
    {"id": "o2", "action": "o", "priority": 5}, {"id": "o3", "action": "o", "priority": -1},
    {"id": "o4", "action": "o", "priority": 5}, {"id": "o5", "action": "o"}]$$);
SELECT taskq.insert_tasks($$[{"id": "o0", "action": "o", "priority": 5},
    {"id": "o6", "action": "o"}]$$);
SELECT n, id FROM public.own('w', 3, '{o}');
SELECT n, id FROM public.own('w', 10, '{o}');

-- not_before: a task whose not_before is in the future is not claimable
-- until then; one in the past is.
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks($$[{"id": "later", "action": "nb", "not_before": "2999-01-01T00:00:00Z"},
    {"id": "past", "action": "nb", "not_before": "2000-01-01T00:00:00+02"},
    {"id": "then", "action": "nb", "not_before": "2999-01-01 00:00:00", "priority": 9}]$$);
SELECT n, id FROM public.own('w', 10, '{nb}');
SELECT n, id FROM public.own('w', 10, '{nb}');
UPDATE taskq.tasks SET not_before = now() - interval '1 second' WHERE id = 'later';
SELECT n, id FROM public.own('w', 10, '{nb}');
SELECT id, status_code FROM public.tq;

-- A larger batch, with a chain of edges through it.
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks(jsonb_agg(jsonb_build_object('id', 'big' || i, 'action', 'big',
           'to_signal_after', CASE WHEN i < 2000 THEN jsonb_build_array('big' || (i + 1)) ELSE '[]' END)))
  FROM generate_series(1, 2000) AS i;
SELECT count(*), sum(num_signals), count(*) FILTER (WHERE num_signals = 0) AS ready
  FROM taskq.tasks;
SELECT n, id FROM public.own('w', 5, '{big}');

-- Batches of up to 16 and of more take different paths (insert.c): both
-- report a stored duplicate by id and position and insert nothing, and both
-- give tasks without max_tries their action's policy.
SELECT taskq.set_action_policy('pol', 4);
SELECT expect_error($$SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id',
           CASE WHEN i = 17 THEN 'big5' ELSE 'dup' || i END, 'action', 'pol'))
  FROM generate_series(1, 20) AS i))$$);
SELECT expect_error($$SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id',
           CASE WHEN i = 3 THEN 'big5' ELSE 'dup' || i END, 'action', 'pol'))
  FROM generate_series(1, 4) AS i))$$);
SELECT count(*) FROM taskq.tasks WHERE id LIKE 'dup%';
-- A large batch repeating an id that an earlier statement of the same
-- transaction inserted: reported by id and position too.
BEGIN;
SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'tx' || i, 'action', 'pol'))
  FROM generate_series(1, 20) AS i));
SELECT expect_error($$SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id',
           CASE WHEN i = 18 THEN 'tx7' ELSE 'ty' || i END, 'action', 'pol'))
  FROM generate_series(1, 20) AS i))$$);
ROLLBACK;
SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'l' || i, 'action',
           CASE WHEN i % 2 = 0 THEN 'pol' ELSE 'nopol' END)
           || CASE WHEN i = 4 THEN '{"max_tries": 9}'::jsonb ELSE '{}' END)
  FROM generate_series(1, 20) AS i));
SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 's' || i, 'action',
           CASE WHEN i % 2 = 0 THEN 'pol' ELSE 'nopol' END)
           || CASE WHEN i = 4 THEN '{"max_tries": 9}'::jsonb ELSE '{}' END)
  FROM generate_series(1, 4) AS i));
SELECT left(id, 1) AS batch, action, max_tries, count(*)
  FROM taskq.tasks WHERE action IN ('pol', 'nopol')
 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
DELETE FROM taskq.action_policies WHERE action = 'pol';
