--
-- Map states of state machines: the "map" key and its checks, a task per
-- element of a context array, max_parallel, results in item order,
-- "mapped" / "map_failed", the calls that refuse items, cancel, the
-- 1 MiB bound on the gathered results.
--
-- (other files' tasks and runs are left as they are: the actions here are
-- this file's own, and it deletes what it made at the end)
CREATE FUNCTION pg_temp.tok(p_id text) RETURNS uuid
LANGUAGE sql AS $$ SELECT k.token FROM public.tokens AS k WHERE k.id = p_id $$;
CREATE FUNCTION pg_temp.run(p_id text)
RETURNS TABLE (status text, state text, context jsonb, step_task text, error text)
LANGUAGE sql AS $$
    SELECT r.status, r.state, r.context, r.step_task, r.error FROM taskq.runs AS r WHERE r.id = p_id
$$;
-- an item completed with a result
CREATE FUNCTION pg_temp.done(p_id text, p_result jsonb) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM taskq.return_task(p_id, pg_temp.tok(p_id), NULL, 'completed', NULL, p_result);
    RETURN 'done';
END
$$;
CREATE FUNCTION pg_temp.tasks(p_run text)
RETURNS TABLE (id text, action text, status_code taskq.status, status text, num_signals int,
               deps int, succ text[], spontaneous boolean, "trigger" text, workflow text)
LANGUAGE sql AS $$
    SELECT t.id, t.action, t.status_code, t.status, t.num_signals, t.total_dependencies,
           t.to_signal_after, t.spontaneous, t."trigger"::text, t.workflow
      FROM taskq.tasks AS t WHERE t.workflow = p_run
     ORDER BY length(t.id), t.id
$$;

-- ---------------------------------------------------------------
-- Definitions (22023 naming the state)
-- ---------------------------------------------------------------
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "M", "action": null, "initial": true, "map": [], "transitions": [{"event": "mapped", "to": "E"}]},
    {"name": "E", "action": "map_e", "final": true}]}')$$) AS map_not_object;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "M", "action": null, "initial": true, "map": {"action": "mapit"}, "transitions": [{"event": "mapped", "to": "E"}]},
    {"name": "E", "action": "map_e", "final": true}]}')$$) AS no_items;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "M", "action": null, "initial": true, "map": {"items": 3, "action": "mapit"}, "transitions": [{"event": "mapped", "to": "E"}]},
    {"name": "E", "action": "map_e", "final": true}]}')$$) AS items_not_string;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "M", "action": null, "initial": true, "map": {"items": "xs"}, "transitions": [{"event": "mapped", "to": "E"}]},
    {"name": "E", "action": "map_e", "final": true}]}')$$) AS no_action;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "M", "action": null, "initial": true, "map": {"items": "xs", "action": ""}, "transitions": [{"event": "mapped", "to": "E"}]},
    {"name": "E", "action": "map_e", "final": true}]}')$$) AS empty_action;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "M", "action": null, "initial": true, "map": {"items": "xs", "action": "mapit", "max_parallel": 0}, "transitions": [{"event": "mapped", "to": "E"}]},
    {"name": "E", "action": "map_e", "final": true}]}')$$) AS max_parallel_zero;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "M", "action": null, "initial": true, "map": {"items": "xs", "action": "mapit", "max_parallel": "2"}, "transitions": [{"event": "mapped", "to": "E"}]},
    {"name": "E", "action": "map_e", "final": true}]}')$$) AS max_parallel_text;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "M", "action": null, "initial": true, "map": {"items": "xs", "action": "mapit", "size": 2}, "transitions": [{"event": "mapped", "to": "E"}]},
    {"name": "E", "action": "map_e", "final": true}]}')$$) AS unknown_map_key;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "M", "action": "m", "initial": true, "map": {"items": "xs", "action": "mapit"}, "transitions": [{"event": "mapped", "to": "E"}]},
    {"name": "E", "action": "map_e", "final": true}]}')$$) AS own_action;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "M", "action": null, "initial": true, "map": {"items": "xs", "action": "mapit"}, "transitions": [{"event": "map_failed", "to": "E"}]},
    {"name": "E", "action": "map_e", "final": true}]}')$$) AS no_mapped;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "M", "action": null, "initial": true, "map": {"items": "xs", "action": "mapit"},
     "transitions": [{"event": "mapped", "to": "E"}, {"event": "go", "to": "E"}]},
    {"name": "E", "action": "map_e", "final": true}]}')$$) AS other_event;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "M", "action": null, "initial": true, "final": true, "map": {"items": "xs", "action": "mapit"},
     "transitions": [{"event": "mapped", "to": "E"}]},
    {"name": "E", "action": "map_e", "final": true}]}')$$) AS final_map;
SELECT count(*) AS bad_defined FROM taskq.definitions WHERE name = 'bad';

SELECT taskq.define_machine('mp', '{"states": [
    {"name": "M", "action": null, "initial": true, "map": {"items": "xs", "action": "mapit", "max_parallel": null},
     "max_tries": 2, "retry": {"delay": "0 s"},
     "transitions": [{"event": "mapped", "to": "E"}, {"event": "map_failed", "to": "F"}]},
    {"name": "E", "action": "map_e", "final": true},
    {"name": "F", "action": "map_f", "final": true}]}') AS mp_version;
-- without map_failed; entered by a step's transition; window of 2
SELECT taskq.define_machine('mp2', '{"states": [
    {"name": "A", "action": "map_a", "initial": true, "transitions": [{"event": "go", "to": "M"}]},
    {"name": "M", "action": null, "map": {"items": "xs", "action": "mapit2", "max_parallel": 2}, "max_tries": 1,
     "transitions": [{"event": "mapped", "to": "E"}]},
    {"name": "E", "action": "map_e", "final": true}]}') AS mp2_version;

-- ---------------------------------------------------------------
-- Entering: no array is the entering call's 22023, nothing changes
-- ---------------------------------------------------------------
SELECT public.expect_error($$SELECT taskq.start_machine('mp', 'r0', '{}')$$) AS start_no_items;
SELECT public.expect_error($$SELECT taskq.start_machine('mp', 'r0', '{"xs": {"a": 1}}')$$) AS start_not_array;
SELECT count(*) AS runs, (SELECT count(*) FROM taskq.tasks WHERE workflow = 'r0') AS tasks FROM taskq.runs WHERE id = 'r0';

-- an empty array moves with "mapped" and [] at once
SELECT taskq.start_machine('mp', 'r-empty', '{"xs": [], "k": 1}');
SELECT * FROM pg_temp.run('r-empty');
SELECT id FROM taskq.tasks WHERE workflow = 'r-empty' ORDER BY id;

-- ---------------------------------------------------------------
-- Items: ids from the run's counter, bodies, the hidden join
-- ---------------------------------------------------------------
SELECT taskq.start_machine('mp', 'r1', '{"xs": ["a", {"b": 2}, 3], "k": "v"}');
SELECT status, state, step_task FROM pg_temp.run('r1');
SELECT * FROM pg_temp.tasks('r1');
SELECT id, body FROM taskq.tasks WHERE workflow = 'r1' AND id <> 'r1/1' ORDER BY id;
SELECT n, id, body->'index' AS index FROM public.own('w', 10, ARRAY['mapit']) ORDER BY id;

-- the run's events of its map state cannot be sent
SELECT public.expect_error($$SELECT taskq.send_event('r1', 'mapped')$$) AS send_mapped;
SELECT public.expect_error($$SELECT taskq.send_event('r1', 'map_failed')$$) AS send_map_failed;

-- items are not steps (55000, naming the run)
SELECT public.expect_error($$SELECT taskq.transition('r1/2', pg_temp.tok('r1/2'), 'mapped')$$) AS transition_item;
SELECT public.expect_error($$SELECT taskq.continue_machine('r1/2', pg_temp.tok('r1/2'), 'c')$$) AS continue_item;
SELECT public.expect_error($$SELECT taskq.return_step('r1/2', pg_temp.tok('r1/2'), 'success')$$) AS return_step_item;
SELECT public.expect_error($$SELECT taskq.cancel_tasks(ARRAY['r1/2'])$$) AS cancel_item;
SELECT public.expect_error($$SELECT taskq.redrive_tasks(ARRAY['r1/2'])$$) AS redrive_item;
SELECT public.expect_error($$SELECT taskq.replace_tasks('[{"id": "r1/3", "action": "mapit"}]')$$) AS replace_item;
SELECT public.expect_error($$SELECT taskq.add_dependencies(ARRAY['r1/2'], ARRAY['r1/3'])$$) AS add_dep_item;
SELECT public.expect_error($$SELECT taskq.cancel_tasks(ARRAY['r1/1'])$$) AS cancel_join;

-- plain returns finish items; a retry is the state's policy (max_tries 2)
SELECT pg_temp.done('r1/3', '{"r": "b"}');
SELECT public.ret('r1/2', 'pending', 'flaky');
SELECT status, state FROM pg_temp.run('r1');
SELECT n, id FROM public.own('w', 10, ARRAY['mapit']);
SELECT pg_temp.done('r1/2', '"a!"');
SELECT status, state FROM pg_temp.run('r1');
-- the last item moves the run, the results in item order
SELECT pg_temp.done('r1/4', '[3]');
SELECT * FROM pg_temp.run('r1');
SELECT id, status_code FROM taskq.tasks WHERE id = 'r1/1';
SELECT public.expect_error($$SELECT taskq.transition('r1/2', pg_temp.tok('r1/2'), 'mapped')$$) AS transition_finished_item;

-- ---------------------------------------------------------------
-- A failed item: "map_failed" with null for it; without map_failed the
-- run fails
-- ---------------------------------------------------------------
SELECT taskq.start_machine('mp', 'r2', '{"xs": [1, 2]}');
SELECT count(*) FROM public.own('w', 10, ARRAY['mapit']);
SELECT public.ret('r2/2', 'aborted', 'broken');
SELECT status, state FROM pg_temp.run('r2');
SELECT pg_temp.done('r2/3', '"two"');
SELECT status, state, context->'results' AS results, step_task FROM pg_temp.run('r2');

SELECT taskq.start_machine('mp2', 'r3', '{"xs": [10, 20, 30, 40, 50]}');
SELECT count(*) FROM public.own('w', 10, ARRAY['map_a']);
-- a step's transition into the map: no array is its 22023, the step still owned
SELECT public.expect_error($$SELECT taskq.transition('r3/1', pg_temp.tok('r3/1'), 'go', '{"xs": "no"}')$$) AS transition_no_array;
SELECT status, state, step_task FROM pg_temp.run('r3');
SELECT taskq.transition('r3/1', pg_temp.tok('r3/1'), 'go');
-- max_parallel 2: two ready, the rest wait for the item two before them
SELECT id, status_code, num_signals, succ FROM pg_temp.tasks('r3') WHERE id <> 'r3/1';
SELECT n, id FROM public.own('w', 10, ARRAY['mapit2']);
SELECT pg_temp.done('r3/3', '1');
SELECT n, id FROM public.own('w', 10, ARRAY['mapit2']);
SELECT public.ret('r3/4', 'aborted', 'bad item');
SELECT n, id FROM public.own('w', 10, ARRAY['mapit2']);
SELECT pg_temp.done('r3/5', '3');
SELECT pg_temp.done('r3/6', '4');
SELECT n, id FROM public.own('w', 10, ARRAY['mapit2']);
SELECT pg_temp.done('r3/7', '5');
SELECT status, state, error, step_task FROM pg_temp.run('r3');

-- ---------------------------------------------------------------
-- cancel_run cancels the items; a cancelled owned item aborts on return
-- ---------------------------------------------------------------
SELECT taskq.start_machine('mp', 'r4', '{"xs": [1, 2, 3]}');
SELECT count(*) FROM public.own('w', 1, ARRAY['mapit']);
SELECT taskq.cancel_run('r4');
SELECT status, state, step_task FROM pg_temp.run('r4');
-- the items were detached from the join before their cancel: it waits for none
SELECT id, status_code, status, num_signals, deps, succ FROM pg_temp.tasks('r4');
SELECT public.ret('r4/2', 'completed');
SELECT id, status_code FROM taskq.tasks WHERE id = 'r4/2';
SELECT status FROM pg_temp.run('r4');

-- ---------------------------------------------------------------
-- Results past 1 MiB of context: the run fails, the item's return stands
-- ---------------------------------------------------------------
SELECT taskq.start_machine('mp', 'r5', '{"xs": [1, 2]}');
SELECT count(*) FROM public.own('w', 10, ARRAY['mapit']);
SELECT pg_temp.done('r5/2', to_jsonb(repeat('x', 600000)));
SELECT pg_temp.done('r5/3', to_jsonb(repeat('y', 600000)));
SELECT status, error, context ? 'results' AS has_results FROM pg_temp.run('r5');
SELECT id, status_code FROM pg_temp.tasks('r5');

-- redrive_run of the failed map run enters the map again (new items)
SELECT taskq.redrive_run('r5');
SELECT status, state, step_task FROM pg_temp.run('r5');
SELECT taskq.cancel_run('r5');

-- ---------------------------------------------------------------
-- Graphs: a map state's line, its items by status in run_graph (its items
-- and join drawn as no steps)
-- ---------------------------------------------------------------
SELECT taskq.define_machine('mpg', '{"states": [
    {"name": "A", "action": "map_a", "initial": true, "transitions": [{"event": "go", "to": "M"}]},
    {"name": "M", "action": null, "map": {"items": "xs", "action": "mapitg", "max_parallel": 2},
     "transitions": [{"event": "mapped", "to": "E"}, {"event": "map_failed", "to": "W"}]},
    {"name": "W", "action": null, "transitions": [{"event": "x", "to": "E"}]},
    {"name": "E", "action": "map_e", "final": true}]}');
SELECT taskq.definition_graph('mpg');
SELECT taskq.start_machine('mpg', 'g1', '{"xs": [1, 2, 3]}');
SELECT count(*) FROM public.own('w', 1, ARRAY['map_a']);
SELECT taskq.transition('g1/1', pg_temp.tok('g1/1'), 'go');
SELECT count(*) FROM public.own('w', 1, ARRAY['mapitg']);
SELECT pg_temp.done('g1/3', '1');
SELECT taskq.run_graph('g1');
SELECT taskq.run_graph('g1', 'mermaid');
-- statistics: a visit of a map state counts once, whatever its items
SELECT state, in_state, entered, succeeded, failed_tries
  FROM taskq.state_stats WHERE definition = 'mpg' ORDER BY state;
SELECT taskq.cancel_run('g1');
-- an initial map state: the edge out of it is drawn, its visit counted once
SELECT taskq.define_machine('mpi', '{"states": [
    {"name": "M", "action": null, "initial": true, "map": {"items": "xs", "action": "mapiti"},
     "transitions": [{"event": "mapped", "to": "E"}]},
    {"name": "E", "action": "map_e", "final": true}]}');
SELECT taskq.start_machine('mpi', 'gi1', '{"xs": [1, 2, 3]}');
SELECT count(*) FROM public.own('w', 3, ARRAY['mapiti']);
SELECT pg_temp.done(id, '1') FROM taskq.tasks WHERE workflow = 'gi1' AND body ? 'index' ORDER BY id;
SELECT status, state FROM pg_temp.run('gi1');
SELECT taskq.run_graph('gi1');
SELECT state, in_state, entered, succeeded, failed_tries
  FROM taskq.state_stats WHERE definition = 'mpi' ORDER BY state;
SELECT taskq.cancel_run('gi1');

DELETE FROM public.tokens AS k USING taskq.tasks AS t
 WHERE k.id = t.id AND t.workflow IN (SELECT id FROM taskq.runs WHERE definition IN ('mp', 'mp2', 'mpg', 'mpi'));
DELETE FROM taskq.tasks WHERE workflow IN (SELECT id FROM taskq.runs WHERE definition IN ('mp', 'mp2', 'mpg', 'mpi'));
DELETE FROM taskq.runs WHERE definition IN ('mp', 'mp2', 'mpg', 'mpi');
DELETE FROM taskq.definitions WHERE name IN ('mp', 'mp2', 'mpg', 'mpi');
