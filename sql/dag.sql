--
-- DAGs: trigger rules on dependency edges, results passed to successors,
-- and task graphs.
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

-- Finish a task as a worker would: own it (each task here has an action of
-- its own name), then return it with a status code and a result.
CREATE FUNCTION public.dag_finish(p_id text, p_code taskq.status, p_result jsonb DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    tok uuid;
BEGIN
    SELECT o.token INTO tok FROM taskq.own_tasks('w', 1, ARRAY[p_id]) AS o;
    IF tok IS NULL THEN
        RETURN p_id || ' not ready';
    END IF;
    INSERT INTO public.tokens VALUES (p_id, tok)
        ON CONFLICT ON CONSTRAINT tokens_pkey DO UPDATE SET token = EXCLUDED.token;
    PERFORM taskq.return_task(p_id, tok, NULL, p_code, NULL, p_result);
    RETURN p_id || ' ' || p_code;
END
$$;

-- What a task is now: waiting (pending, predecessors to go), ready,
-- in_progress, completed, aborted, skipped.
CREATE FUNCTION public.dag_state(p_id text) RETURNS text
LANGUAGE sql AS $$
    SELECT CASE WHEN t.status_code = 'aborted' AND t.status = 'skipped' THEN 'skipped'
                WHEN t.status_code = 'pending' AND t.num_signals = 0 THEN 'ready'
                WHEN t.status_code = 'pending' THEN 'waiting'
                ELSE t.status_code::text END
      FROM taskq.tasks AS t WHERE t.id = p_id
$$;

-- One case: predecessors p1..pn (n = length of outcomes) of a join j with
-- the given rule, j followed by k (all_success).  The predecessors finish in
-- order, p1 first, each completed (C) or aborted (A); after each finish the
-- join's state is noted.  Then, if redrive is given, p<redrive> (aborted)
-- is re-driven, j's state noted, p<redrive> finished again with
-- again_outcome, j's state noted.  Returns j's states, and k's at the end.
CREATE FUNCTION public.dag_case(p_rule text, p_outcomes text, p_redrive int DEFAULT NULL,
                                p_again text DEFAULT NULL)
RETURNS TABLE (rule text, outcomes text, states text, k text)
LANGUAGE plpgsql AS $$
DECLARE
    n int := length(p_outcomes);
    tasks jsonb := '[]';
    st text[] := ARRAY[public.dag_state('j')];
BEGIN
    DELETE FROM taskq.tasks;
    FOR i IN 1..n LOOP
        tasks := tasks || jsonb_build_array(jsonb_build_object(
            'id', 'p' || i, 'action', 'p' || i, 'to_signal_after', jsonb_build_array('j')));
    END LOOP;
    tasks := tasks || jsonb_build_array(
        jsonb_build_object('id', 'j', 'action', 'j', 'trigger', p_rule, 'to_signal_after', '["k"]'::jsonb),
        jsonb_build_object('id', 'k', 'action', 'k'));
    PERFORM taskq.insert_tasks(tasks);
    st := ARRAY[public.dag_state('j')];
    FOR i IN 1..n LOOP
        PERFORM public.dag_finish('p' || i, CASE substr(p_outcomes, i, 1)
                                            WHEN 'C' THEN 'completed' ELSE 'aborted' END::taskq.status);
        st := st || public.dag_state('j');
    END LOOP;
    IF p_redrive IS NOT NULL THEN
        PERFORM taskq.redrive_tasks(ARRAY['p' || p_redrive]);
        st := st || ('redrive:' || public.dag_state('j'));
        PERFORM public.dag_finish('p' || p_redrive, CASE p_again WHEN 'C' THEN 'completed'
                                                    ELSE 'aborted' END::taskq.status);
        st := st || public.dag_state('j');
    END IF;
    rule := p_rule;
    outcomes := p_outcomes || COALESCE(' then p' || p_redrive || ' redriven, ' || p_again, '');
    states := array_to_string(st, ' > ');
    k := public.dag_state('k');
    RETURN NEXT;
END
$$;

-- ------------------------------------------------------------ each rule x each order
-- Two predecessors in every order of outcomes, three in the mixed orders.
SELECT c.* FROM unnest(ARRAY['all_success', 'all_done', 'one_failed', 'one_success']) AS r(rule),
                unnest(ARRAY['CC', 'CA', 'AC', 'AA', 'CAC', 'ACA', 'CCA', 'AAC']) AS o(outcomes),
                LATERAL public.dag_case(r.rule, o.outcomes) AS c;

-- A predecessor re-driven afterwards: its abort no longer counts, and the
-- join is decided again by what it has (a join that started or finished
-- keeps its course).
SELECT c.* FROM unnest(ARRAY['all_success', 'all_done', 'one_failed', 'one_success']) AS r(rule),
                (VALUES ('CA', 2, 'C'), ('CA', 2, 'A'), ('AC', 1, 'C'), ('AA', 1, 'C'),
                        ('AA', 2, 'A')) AS o(outcomes, redrive, again),
                LATERAL public.dag_case(r.rule, o.outcomes, o.redrive, o.again) AS c;

-- A skipped one_success join re-driven with its predecessor: it waits for
-- that predecessor again and runs when it completes.
SELECT * FROM public.dag_case('one_success', 'AA');
SELECT taskq.redrive_tasks('{p2,j}');
SELECT public.dag_state('j') AS j_redriven;
SELECT public.dag_finish('p2', 'completed');
SELECT public.dag_state('j') AS j;

-- ------------------------------------------------------------ released once
-- A join released early is ready at once and claimed once; the later
-- finishes change nothing for it, whatever they are.
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks($$[
    {"id": "a", "action": "a", "to_signal_after": ["j"]},
    {"id": "b", "action": "b", "to_signal_after": ["j"]},
    {"id": "c", "action": "c", "to_signal_after": ["j"]},
    {"id": "j", "action": "j", "trigger": "one_success", "to_signal_after": ["k"]},
    {"id": "k", "action": "k"}]$$);
SELECT public.dag_finish('a', 'completed');
SELECT id, status_code, num_signals, num_completed, num_failed FROM taskq.tasks WHERE id = 'j';
SELECT n, id FROM public.own('w', 10, '{j}');
SELECT public.dag_finish('b', 'aborted');
SELECT public.dag_finish('c', 'completed');
SELECT id, status_code, num_signals, num_completed, num_failed FROM taskq.tasks WHERE id = 'j';
SELECT n, id FROM public.own('w', 10, '{j}');
SELECT public.ret('j', 'completed');
SELECT public.dag_state('k') AS k;

-- The same for one_failed, released by the first abort while the others
-- run; a released task given back for another try stays ready.
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks($$[
    {"id": "a", "action": "a", "to_signal_after": ["alert"]},
    {"id": "b", "action": "b", "to_signal_after": ["alert"]},
    {"id": "alert", "action": "alert", "trigger": "one_failed"}]$$);
SELECT public.dag_finish('b', 'aborted');
SELECT n, id FROM public.own('w', 10, '{alert}');
SELECT public.ret('alert', 'pending');
SELECT public.dag_state('alert') AS alert;
SELECT public.dag_finish('a', 'completed');
SELECT id, status_code, num_signals, num_completed, num_failed FROM taskq.tasks WHERE id = 'alert';

-- A task without predecessors runs whatever its rule.
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks($$[{"id": "lone", "action": "x", "trigger": "one_failed"}]$$);
SELECT public.dag_state('lone') AS lone;

-- ------------------------------------------------------------ cascades
-- A skipped task cascades like an abort: to its all_success successors
-- (aborted), and counts as a failure for the others.
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks($$[
    {"id": "a", "action": "a", "to_signal_after": ["alert"]},
    {"id": "alert", "action": "alert", "trigger": "one_failed",
     "to_signal_after": ["after_alert", "cleanup", "on_fail"]},
    {"id": "after_alert", "action": "x"},
    {"id": "cleanup", "action": "x", "trigger": "all_done"},
    {"id": "on_fail", "action": "x", "trigger": "one_failed"}]$$);
SELECT public.dag_finish('a', 'completed');
SELECT id, status_code, status, num_signals, num_completed, num_failed FROM taskq.tasks ORDER BY id;

-- Every abort counts as a failure: a cancel, an exhausted try, a replace.
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks($$[
    {"id": "x1", "action": "x1", "to_signal_after": ["on_fail"]},
    {"id": "x2", "action": "x2", "max_tries": 1, "to_signal_after": ["done"]},
    {"id": "x3", "action": "x3", "to_signal_after": ["done"]},
    {"id": "on_fail", "action": "f", "trigger": "one_failed"},
    {"id": "done", "action": "d", "trigger": "all_done"}]$$);
SELECT taskq.cancel_tasks('{x1}');
SELECT public.dag_finish('x2', 'pending');
SELECT taskq.replace_tasks('[{"id": "x3", "action": "x3"}]');
SELECT id, status_code, status, num_signals, num_completed, num_failed FROM taskq.tasks ORDER BY id;

-- Spontaneous joins follow their rule too.
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks($$[
    {"id": "a", "action": "a", "to_signal_after": ["sj"]},
    {"id": "b", "action": "b", "to_signal_after": ["sj"]},
    {"id": "sj", "action": "s", "spontaneous": true, "trigger": "all_done", "to_signal_after": ["next"]},
    {"id": "next", "action": "n"}]$$);
SELECT public.dag_finish('a', 'aborted');
SELECT public.dag_state('sj') AS sj;
SELECT public.dag_finish('b', 'completed');
SELECT public.dag_state('sj') AS sj, public.dag_state('next') AS next;

-- The shapes take the key: a chord whose join runs whatever its members do.
DELETE FROM taskq.tasks;
SELECT taskq.chord('[{"id": "m1", "action": "m1"}, {"id": "m2", "action": "m2"}]',
                   '{"id": "report", "action": "r", "trigger": "all_done"}');
SELECT taskq.chain('[{"id": "c1", "action": "c1"}, {"id": "c2", "action": "c", "trigger": "one_failed"}]');
SELECT taskq."group"('[{"id": "g1", "action": "g", "trigger": "all_done"}]', '{m1}');
SELECT id, "trigger", num_signals FROM taskq.tasks ORDER BY id;
SELECT public.dag_finish('m1', 'aborted');
SELECT public.dag_finish('m2', 'aborted');
SELECT id, public.dag_state(id) FROM taskq.tasks WHERE id IN ('report', 'g1') ORDER BY id;

-- An unknown rule, a rule of the wrong type: 22023.
SELECT expect_error($$SELECT taskq.insert_tasks('[{"id": "t", "action": "t", "trigger": "sometimes"}]')$$);
SELECT expect_error($$SELECT taskq.insert_tasks('[{"id": "t", "action": "t", "trigger": 1}]')$$);
SELECT error_context($$SELECT taskq.insert_tasks('[{"id": "t", "action": "t"}, {"id": "u", "action": "t", "trigger": "All_Done"}]')$$);
-- null means the default
SELECT taskq.insert_tasks('[{"id": "t", "action": "t", "trigger": null}]');
SELECT "trigger" FROM taskq.tasks WHERE id = 't';

-- A large batch (written a page at a time) keeps each task's rule.
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'big' || i, 'action', 'b',
            'trigger', (ARRAY['all_success', 'all_done', 'one_failed', 'one_success'])[1 + i % 4]))
      FROM generate_series(1, 100) AS i));
SELECT "trigger", count(*) FROM taskq.tasks GROUP BY 1 ORDER BY 1;

-- ------------------------------------------------------------ add_dependencies
-- An after that already finished counts at once by the run task's rule.
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks($$[
    {"id": "ok", "action": "ok"}, {"id": "bad", "action": "bad"}, {"id": "open", "action": "open"},
    {"id": "r_done", "action": "r", "trigger": "all_done"},
    {"id": "r_fail", "action": "r", "trigger": "one_failed"},
    {"id": "r_succ", "action": "r", "trigger": "one_success"},
    {"id": "r_succ2", "action": "r", "trigger": "one_success"},
    {"id": "r_fail2", "action": "r", "trigger": "one_failed"},
    {"id": "r_all", "action": "r"}]$$);
SELECT public.dag_finish('ok', 'completed');
SELECT public.dag_finish('bad', 'aborted');
SELECT taskq.add_dependencies('{bad,open}', '{r_done,r_done}');
SELECT taskq.add_dependencies('{open,bad}', '{r_fail,r_fail}');
SELECT taskq.add_dependencies('{open,ok}', '{r_succ,r_succ}');
SELECT taskq.add_dependencies('{bad}', '{r_succ2}');
SELECT taskq.add_dependencies('{ok}', '{r_fail2}');
SELECT taskq.add_dependencies('{ok}', '{r_all}');
SELECT expect_error($$SELECT taskq.add_dependencies('{bad}', '{r_all}')$$);
SELECT id, public.dag_state(id), num_signals, total_dependencies AS deps, num_completed,
       num_failed FROM taskq.tasks WHERE id LIKE 'r%' ORDER BY id;
SELECT id, to_signal_after FROM taskq.tasks WHERE id IN ('ok', 'bad', 'open') ORDER BY id;

-- ------------------------------------------------------------ results
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
SELECT taskq.insert_tasks($$[
    {"id": "r1", "action": "r1", "to_signal_after": ["join"]},
    {"id": "r2", "action": "r2", "to_signal_after": ["join"]},
    {"id": "r3", "action": "r3", "to_signal_after": ["join"]},
    {"id": "join", "action": "join", "trigger": "all_done"}]$$);
SELECT public.dag_finish('r1', 'completed', '{"rows": 10}');
-- a result given with a retry is kept, and the last one wins; NULL keeps it
SELECT public.dag_finish('r2', 'pending', '{"partial": true}');
SELECT id, status_code, result FROM taskq.tasks WHERE id = 'r2';
SELECT public.dag_finish('r2', 'aborted', '{"error": "disk full"}');
SELECT n, id FROM public.own('w', 1, '{r3}');
SELECT taskq.return_tasks('{r3}', ARRAY[(SELECT token FROM public.tokens WHERE id = 'r3')],
                          '{done}', '{completed}', NULL);
SELECT n, id FROM public.own('w', 1, '{join}');
-- the owner reads each predecessor: id, outcome, status, result
SELECT * FROM taskq.predecessor_results('join', (SELECT token FROM public.tokens WHERE id = 'join'));
-- wait_for_task returns the result with the row
SELECT (taskq.wait_for_task('r1')).result;
-- a stale or unknown token, an unknown task
SELECT expect_error($$SELECT * FROM taskq.predecessor_results('join', '00000000-0000-0000-0000-000000000000')$$);
SELECT expect_error($$SELECT * FROM taskq.predecessor_results('join', NULL)$$);
SELECT expect_error($$SELECT * FROM taskq.predecessor_results('nope', gen_random_uuid())$$);
-- after the join finishes its owner still reads them (the token stays)
SELECT public.ret('join', 'completed');
SELECT count(*) FROM taskq.predecessor_results('join', (SELECT token FROM public.tokens WHERE id = 'join'));
-- unfinished predecessors are listed without a result
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks($$[
    {"id": "q1", "action": "q1", "to_signal_after": ["qj"]},
    {"id": "q2", "action": "q2", "to_signal_after": ["qj"]},
    {"id": "qj", "action": "qj", "trigger": "one_success"}]$$);
SELECT public.dag_finish('q1', 'completed', '"first"');
SELECT n, id FROM public.own('w', 1, '{qj}');
SELECT * FROM taskq.predecessor_results('qj', (SELECT token FROM public.tokens WHERE id = 'qj'));

-- return_tasks and return_and_own take one result per task
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks('[{"id": "m1", "action": "m"}, {"id": "m2", "action": "m"}, {"id": "m3", "action": "m"}]');
SELECT n, id FROM public.own('w', 2, '{m}');
SELECT count(*) FROM taskq.return_and_own('{m1,m2}',
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'm1'), (SELECT token FROM public.tokens WHERE id = 'm2')],
    NULL, '{completed,aborted}', 'w', 1, '{none}', NULL, ARRAY['1', NULL]::jsonb[]);
SELECT id, status_code, result FROM taskq.tasks ORDER BY id;
SELECT expect_error($$SELECT taskq.return_tasks('{m1}', ARRAY[gen_random_uuid()], NULL, '{completed}', ARRAY['1', '2']::jsonb[])$$);
-- at most 1 MiB: 54000
SELECT n, id FROM public.own('w', 1, '{m}');
SELECT expect_error($$SELECT taskq.return_task('m3', (SELECT token FROM public.tokens WHERE id = 'm3'), NULL, 'completed', NULL, jsonb_build_object('b', repeat('b', 1100000)))$$);
SELECT expect_error($$SELECT taskq.return_tasks('{m3}', ARRAY[(SELECT token FROM public.tokens WHERE id = 'm3')], NULL, '{completed}', ARRAY[jsonb_build_object('b', repeat('b', 1100000))])$$);
SELECT status_code, result FROM taskq.tasks WHERE id = 'm3';

-- Retention keeps a finished task with a result while a successor that may
-- read it is unfinished, and a finished task its rule released while a
-- predecessor that names it is unfinished.
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks($$[
    {"id": "src", "action": "src", "to_signal_after": ["sink"]},
    {"id": "slow", "action": "slow", "to_signal_after": ["sink"]},
    {"id": "sink", "action": "sink", "trigger": "one_success"},
    {"id": "plain", "action": "plain", "to_signal_after": ["sink2"]},
    {"id": "sink2", "action": "sink2"}]$$);
SELECT public.dag_finish('src', 'completed', '{"v": 1}');
SELECT public.dag_finish('plain', 'completed');
SELECT taskq.purge_finished();
SELECT id FROM taskq.tasks ORDER BY id;
SELECT public.dag_finish('sink', 'completed');
SELECT taskq.purge_finished();
SELECT id FROM taskq.tasks ORDER BY id;
SELECT public.dag_finish('slow', 'completed');
SELECT public.dag_finish('sink2', 'completed');
SELECT taskq.purge_finished();
SELECT id FROM taskq.tasks ORDER BY id;

-- ------------------------------------------------------------ monitoring
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks($$[
    {"id": "a", "action": "a", "to_signal_after": ["alert"]},
    {"id": "f", "action": "f"},
    {"id": "alert", "action": "alert", "trigger": "one_failed"}]$$);
SELECT public.dag_finish('a', 'completed');
SELECT public.dag_finish('f', 'aborted');
SELECT action, completed, aborted, skipped FROM taskq.action_stats ORDER BY action;
SELECT id, status FROM taskq.dead_letters;

-- ------------------------------------------------------------ task_graph
DELETE FROM taskq.tasks;
SELECT taskq.insert_tasks($$[
    {"id": "extract \"a\"", "action": "x", "workflow": "g 1", "to_signal_after": ["join\\n"]},
    {"id": "b<b>", "action": "x", "workflow": "g 1", "to_signal_after": ["join\\n", "alert#1", "two\nlines"]},
    {"id": "join\\n", "action": "j", "workflow": "g 1", "trigger": "all_done"},
    {"id": "two\nlines", "action": "j", "workflow": "g 1", "trigger": "all_done"},
    {"id": "alert#1", "action": "al", "workflow": "g 1", "trigger": "one_failed"},
    {"id": "elsewhere", "action": "x", "workflow": "other"}]$$);
SELECT n, id FROM public.own('w', 2, '{x}');
SELECT public.ret('extract "a"', 'completed');
SELECT public.ret('b<b>', 'aborted');
SELECT taskq.task_graph('g 1');
SELECT taskq.task_graph('g 1', 'mermaid');
SELECT taskq.task_graph('none');
SELECT expect_error($$SELECT taskq.task_graph('g 1', 'svg')$$);
SELECT expect_error($$SELECT taskq.task_graph(NULL)$$);

DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
