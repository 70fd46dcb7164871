--
-- Child runs: machine child states and saga child steps, their checks at
-- define time, the parent's move when a child ends (success, failure, its
-- own cancel), cancel of a parent, sagas in undo, nesting, migrate and
-- redrive of a parent.
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
-- child ids come from the sequence of forks: a fixed start, restored at the end
CREATE TEMP TABLE saved_seq AS SELECT last_value, is_called FROM taskq.fork_seq;
SELECT setval('taskq.fork_seq', 100, false) IS NOT NULL AS seq_set;

CREATE FUNCTION pg_temp.tok(p_id text) RETURNS uuid
LANGUAGE sql AS $$ SELECT k.token FROM public.tokens AS k WHERE k.id = p_id $$;
CREATE FUNCTION pg_temp.tr(p_id text, p_event text, p_ctx jsonb DEFAULT NULL) RETURNS text
LANGUAGE sql AS $$ SELECT taskq.transition(p_id, pg_temp.tok(p_id), p_event, p_ctx) $$;
CREATE FUNCTION pg_temp.rs(p_id text, p_result text, p_working jsonb DEFAULT NULL) RETURNS text
LANGUAGE sql AS $$ SELECT taskq.return_step(p_id, pg_temp.tok(p_id), p_result, p_working)::text $$;
-- claim the one ready task of an action: its id
CREATE FUNCTION pg_temp.take(p_action text) RETURNS text
LANGUAGE sql AS $$ SELECT o.id FROM public.own('w', 1, ARRAY[p_action]) AS o $$;
CREATE FUNCTION pg_temp.runs(p_root text)
RETURNS TABLE (id text, kind text, status text, state text, parent text, context jsonb, error text)
LANGUAGE sql AS $$
    SELECT r.id, r.kind, r.status, r.state, r.parent, r.context, r.error FROM taskq.runs AS r
     WHERE r.id = p_root OR r.id LIKE p_root || '/%' ORDER BY r.created_at, r.id
$$;

-- ---------------------------------------------------------------
-- Definitions: a child state or step is checked whole (22023)
-- ---------------------------------------------------------------
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "C", "action": "a", "initial": true, "child": {"machine": "k"},
     "transitions": [{"event": "child_succeeded", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS child_with_action;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "C", "action": null, "initial": true, "child": {"machine": "k"},
     "transitions": [{"event": "child_failed", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS no_child_succeeded;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "C", "action": null, "initial": true, "child": {"machine": "k"},
     "transitions": [{"event": "child_succeeded", "to": "F"}, {"event": "poke", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS other_event;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "C", "action": null, "initial": true, "final": true, "child": {"machine": "k"},
     "transitions": [{"event": "child_succeeded", "to": "C"}]}]}')$$) AS child_final;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "C", "action": null, "initial": true, "continuation": true, "child": {"machine": "k"},
     "transitions": [{"event": "child_succeeded", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS child_continuation;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "C", "action": null, "initial": true, "child": "k",
     "transitions": [{"event": "child_succeeded", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS child_not_object;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "C", "action": null, "initial": true, "child": {"machine": "k", "saga": "s"},
     "transitions": [{"event": "child_succeeded", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS child_both_kinds;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "C", "action": null, "initial": true, "child": {},
     "transitions": [{"event": "child_succeeded", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS child_no_kind;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "C", "action": null, "initial": true, "child": {"machine": 7},
     "transitions": [{"event": "child_succeeded", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS child_name_not_string;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "C", "action": null, "initial": true, "child": {"machine": ""},
     "transitions": [{"event": "child_succeeded", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS child_empty_name;
SELECT public.expect_error($$SELECT taskq.define_machine('bad', '{"states": [
    {"name": "C", "action": null, "initial": true, "child": {"machine": "k", "version": 2},
     "transitions": [{"event": "child_succeeded", "to": "F"}]},
    {"name": "F", "action": "f", "final": true}]}')$$) AS child_unknown_key;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [
    {"name": "a", "do": "x", "child": {"machine": "k"}}]}')$$) AS step_do_and_child;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [
    {"name": "a", "child": {"workflow": "k"}}]}')$$) AS step_child_unknown_key;
SELECT public.expect_error($$SELECT taskq.define_saga('bad', '{"steps": [{"name": "a"}]}')$$) AS step_neither;
SELECT count(*) AS stored FROM taskq.definitions WHERE name = 'bad';

-- The definitions the runs below use
SELECT taskq.define_machine('cr_kid', '{"states": [
    {"name": "K1", "action": "k1", "initial": true, "transitions": [{"event": "ok", "to": "K2"}]},
    {"name": "K2", "action": "k2", "final": true}]}') AS kid;
SELECT taskq.define_machine('cr_parent', '{"states": [
    {"name": "A", "action": "pa", "initial": true, "transitions": [{"event": "go", "to": "C"}]},
    {"name": "C", "action": null, "child": {"machine": "cr_kid"},
     "transitions": [{"event": "child_succeeded", "to": "W"}, {"event": "child_failed", "to": "Oops"}]},
    {"name": "W", "action": null, "transitions": [{"event": "poke", "to": "Z"}]},
    {"name": "Oops", "action": "oops", "final": true},
    {"name": "Z", "action": "pz", "final": true}]}') AS parent;
-- without child_failed: a failed child fails the parent
SELECT taskq.define_machine('cr_strict', '{"states": [
    {"name": "C", "action": null, "initial": true, "child": {"machine": "cr_kid"},
     "transitions": [{"event": "child_succeeded", "to": "Z"}]},
    {"name": "Z", "action": "sz", "final": true}]}') AS strict;
SELECT taskq.define_saga('cr_ksaga', '{"steps": [{"name": "one", "do": "ks1", "undo": "ku1"}]}') AS ksaga;
SELECT taskq.define_machine('cr_of_saga', '{"states": [
    {"name": "C", "action": null, "initial": true, "child": {"saga": "cr_ksaga"},
     "transitions": [{"event": "child_succeeded", "to": "Z"}, {"event": "child_failed", "to": "Z"}]},
    {"name": "Z", "action": "oz", "final": true}]}') AS of_saga;
SELECT taskq.define_saga('cr_psaga', '{"steps": [
    {"name": "a", "child": {"machine": "cr_kid"}, "undo": "ua"},
    {"name": "b", "do": "bdo", "after": ["a"]}]}') AS psaga;
-- a machine whose child state starts a machine with a child state of its own
SELECT taskq.define_machine('cr_middle', '{"states": [
    {"name": "M", "action": null, "initial": true, "child": {"machine": "cr_kid"},
     "transitions": [{"event": "child_succeeded", "to": "MZ"}]},
    {"name": "MZ", "action": "mz", "final": true}]}') AS middle;
SELECT taskq.define_machine('cr_top', '{"states": [
    {"name": "T", "action": null, "initial": true, "child": {"machine": "cr_middle"},
     "transitions": [{"event": "child_succeeded", "to": "TZ"}, {"event": "child_failed", "to": "TZ"}]},
    {"name": "TZ", "action": "tz", "final": true}]}') AS top;

-- ---------------------------------------------------------------
-- A machine child of a machine: it starts with the parent's context;
-- the parent stays running, keeps events, moves with the outcome
-- ---------------------------------------------------------------
SELECT taskq.start_machine('cr_parent', 'crp1', '{"order": 1}');
SELECT s.id AS step, pg_temp.tr(s.id, 'go', '{"order": 2}') AS next FROM (SELECT pg_temp.take('pa') AS id) AS s;
SELECT * FROM pg_temp.runs('crp1');
SELECT public.expect_error($$SELECT taskq.send_event('crp1', 'child_succeeded')$$) AS send_child_succeeded;
SELECT public.expect_error($$SELECT taskq.send_event('crp1', 'child_failed')$$) AS send_child_failed;
SELECT taskq.send_event('crp1', 'poke') AS kept;     -- kept, as between states
SELECT s.id AS step, pg_temp.tr(s.id, 'ok', '{"shipped": true}') AS next FROM (SELECT pg_temp.take('k1') AS id) AS s;
SELECT * FROM pg_temp.runs('crp1');
-- the child's last step ends it: the parent moves in the same transaction,
-- enters W, which takes the kept event at once
SELECT s.id AS step, pg_temp.tr(s.id, NULL) AS next FROM (SELECT pg_temp.take('k2') AS id) AS s;
SELECT * FROM pg_temp.runs('crp1');

-- ---------------------------------------------------------------
-- Failures: with child_failed the parent moves; without, it fails
-- ---------------------------------------------------------------
SELECT taskq.start_machine('cr_parent', 'crp2', '{}');
SELECT s.id AS step, pg_temp.tr(s.id, 'go') AS next FROM (SELECT pg_temp.take('pa') AS id) AS s;
SELECT s.id AS step, public.ret(s.id, 'aborted', 'no stock') AS ret FROM (SELECT pg_temp.take('k1') AS id) AS s;
SELECT * FROM pg_temp.runs('crp2');
SELECT taskq.start_machine('cr_strict', 'crp3', '{}');
SELECT s.id AS step, public.ret(s.id, 'aborted', 'broken') AS ret FROM (SELECT pg_temp.take('k1') AS id) AS s;
SELECT * FROM pg_temp.runs('crp3');
-- redrive of the parent enters its child state again: a new child
SELECT taskq.redrive_run('crp3') AS redriven;
SELECT * FROM pg_temp.runs('crp3');
SELECT taskq.cancel_run('crp3') AS cancelled;
SELECT id, status FROM taskq.runs WHERE id LIKE 'crp3%' ORDER BY id;

-- ---------------------------------------------------------------
-- Cancel both ways
-- ---------------------------------------------------------------
-- the parent's cancel cancels its child, which reports nothing
SELECT taskq.start_machine('cr_strict', 'crp4', '{}');
SELECT taskq.cancel_run('crp4') AS cancelled;
SELECT * FROM pg_temp.runs('crp4');
SELECT id, status_code, status FROM taskq.tasks WHERE workflow LIKE 'crp4%' ORDER BY id;
-- the child's own cancel is a failure the parent hears of
SELECT taskq.start_machine('cr_parent', 'crp5', '{}');
SELECT s.id AS step, pg_temp.tr(s.id, 'go') AS next FROM (SELECT pg_temp.take('pa') AS id) AS s;
SELECT taskq.cancel_run(id) AS cancelled FROM taskq.runs WHERE parent = 'crp5';
SELECT * FROM pg_temp.runs('crp5');
-- a finished child cannot be cancelled again
SELECT public.expect_error(format('SELECT taskq.cancel_run(%L)', id)) AS cancel_again
  FROM taskq.runs WHERE parent = 'crp5';

-- ---------------------------------------------------------------
-- A saga child of a machine: inputs = the parent's context
-- ---------------------------------------------------------------
SELECT taskq.start_machine('cr_of_saga', 'crp6', '{"amount": 5}');
SELECT * FROM pg_temp.runs('crp6');
SELECT s.id AS step, pg_temp.rs(s.id, 'success', '{"charged": 5}') AS ret FROM (SELECT pg_temp.take('ks1') AS id) AS s;
SELECT * FROM pg_temp.runs('crp6');
SELECT id, inputs FROM taskq.runs WHERE parent = 'crp6';
-- a child saga that fails (undone: failed) moves its parent with child_failed
SELECT taskq.start_machine('cr_of_saga', 'crp7', '{}');
SELECT s.id AS step, pg_temp.rs(s.id, 'fatal') AS ret FROM (SELECT pg_temp.take('ks1') AS id) AS s;
SELECT * FROM pg_temp.runs('crp7');    -- the child undoes first
SELECT s.id AS step, pg_temp.rs(s.id, 'success') AS ret FROM (SELECT pg_temp.take('ku1') AS id) AS s;
SELECT * FROM pg_temp.runs('crp7');

-- ---------------------------------------------------------------
-- A machine child in a saga step: done when the child succeeds (its
-- context merged into the working map), fatal when it does not
-- ---------------------------------------------------------------
SELECT taskq.start_saga('cr_psaga', 'crs1', '{"customer": "c1"}');
SELECT * FROM pg_temp.runs('crs1');
SELECT step, do_task, do_state FROM taskq.saga_steps WHERE run = 'crs1' ORDER BY step;
SELECT s.id AS step, pg_temp.tr(s.id, 'ok', '{"picked": 3}') AS next FROM (SELECT pg_temp.take('k1') AS id) AS s;
SELECT s.id AS step, pg_temp.tr(s.id, NULL) AS next FROM (SELECT pg_temp.take('k2') AS id) AS s;
SELECT * FROM pg_temp.runs('crs1');
SELECT step, do_task, do_state FROM taskq.saga_steps WHERE run = 'crs1' ORDER BY step;
-- step b fails: the child step's undo is a plain undo task
SELECT s.id AS step, pg_temp.rs(s.id, 'fatal') AS ret FROM (SELECT pg_temp.take('bdo') AS id) AS s;
SELECT step, do_task, do_state, undo_task, undo_state FROM taskq.saga_steps WHERE run = 'crs1' ORDER BY step;
SELECT s.id AS step, pg_temp.rs(s.id, 'success') AS ret FROM (SELECT pg_temp.take('ua') AS id) AS s;
SELECT id, status, error FROM taskq.runs WHERE id = 'crs1';
-- a child that fails fails the step (fatal): the saga undoes
SELECT taskq.start_saga('cr_psaga', 'crs2', '{}');
SELECT s.id AS step, public.ret(s.id, 'aborted', 'no') AS ret FROM (SELECT pg_temp.take('k1') AS id) AS s;
SELECT * FROM pg_temp.runs('crs2');
SELECT step, do_task, do_state, undo_task, undo_state FROM taskq.saga_steps WHERE run = 'crs2' ORDER BY step;
SELECT s.id AS step, pg_temp.rs(s.id, 'success') AS ret FROM (SELECT pg_temp.take('ua') AS id) AS s;
SELECT id, status FROM taskq.runs WHERE id = 'crs2';
-- cancel_run of a saga with a running child: the child is cancelled, the
-- step counts as failed, its undo runs, the saga ends cancelled
SELECT taskq.start_saga('cr_psaga', 'crs3', '{}');
SELECT taskq.cancel_run('crs3') AS cancelled;
SELECT * FROM pg_temp.runs('crs3');
SELECT step, do_task, do_state, undo_task, undo_state FROM taskq.saga_steps WHERE run = 'crs3' ORDER BY step;
SELECT s.id AS step, pg_temp.rs(s.id, 'success') AS ret FROM (SELECT pg_temp.take('ua') AS id) AS s;
SELECT id, status FROM taskq.runs WHERE id = 'crs3';

-- ---------------------------------------------------------------
-- Nesting: ids stay "<root>/k<n>"; the innermost end moves the chain
-- ---------------------------------------------------------------
SELECT taskq.start_machine('cr_top', 'crn1', '{"depth": 0}');
SELECT * FROM pg_temp.runs('crn1');
SELECT s.id AS step, pg_temp.tr(s.id, 'ok') AS next FROM (SELECT pg_temp.take('k1') AS id) AS s;
SELECT s.id AS step, pg_temp.tr(s.id, NULL) AS next FROM (SELECT pg_temp.take('k2') AS id) AS s;
SELECT * FROM pg_temp.runs('crn1');
SELECT s.id AS step, pg_temp.tr(s.id, NULL) AS next FROM (SELECT pg_temp.take('mz') AS id) AS s;
SELECT id, status, state, context->'child'->>'run' AS child, context->'child'->>'status' AS child_status
  FROM taskq.runs WHERE id = 'crn1';
-- cancel of the root cancels the whole chain below it
SELECT taskq.start_machine('cr_top', 'crn2', '{}');
SELECT taskq.cancel_run('crn2') AS cancelled;
SELECT * FROM pg_temp.runs('crn2');
SELECT id, status_code, status FROM taskq.tasks WHERE workflow LIKE 'crn2%' ORDER BY id;
-- a grandchild's failure travels up as child_failed
SELECT taskq.start_machine('cr_top', 'crn3', '{}');
SELECT s.id AS step, public.ret(s.id, 'aborted', 'deep') AS ret FROM (SELECT pg_temp.take('k1') AS id) AS s;
SELECT * FROM pg_temp.runs('crn3');

-- ---------------------------------------------------------------
-- migrate_run out of a child state cancels the child
-- ---------------------------------------------------------------
SELECT taskq.start_machine('cr_parent', 'crp8', '{}');
SELECT s.id AS step, pg_temp.tr(s.id, 'go') AS next FROM (SELECT pg_temp.take('pa') AS id) AS s;
SELECT taskq.migrate_run('crp8', 1, '{"C": "Z"}') AS migrated;
SELECT * FROM pg_temp.runs('crp8');

-- ---------------------------------------------------------------
-- Graphs: a child state names its definition; a run's child state and a
-- saga's child step show their child runs
-- ---------------------------------------------------------------
-- (the live figures left out)
SELECT regexp_replace(taskq.definition_graph('cr_parent'), '\\nnow [^"]*', '', 'g') AS graph;
SELECT regexp_replace(taskq.definition_graph('cr_psaga', 'mermaid'), ' · now [^"]*', '', 'g') AS graph;
SELECT taskq.start_machine('cr_parent', 'crg1', '{}');
SELECT s.id AS step, pg_temp.tr(s.id, 'go') AS next FROM (SELECT pg_temp.take('pa') AS id) AS s;
SELECT taskq.run_graph('crg1');
SELECT taskq.run_graph('crs1', 'mermaid');

-- a child definition that does not exist: 42704 from the call that enters
-- the state, and nothing changes
SELECT taskq.define_machine('cr_orphan', '{"states": [
    {"name": "C", "action": null, "initial": true, "child": {"saga": "cr_nothing"},
     "transitions": [{"event": "child_succeeded", "to": "Z"}]},
    {"name": "Z", "action": "oz", "final": true}]}') AS orphan;
SELECT public.expect_error($$SELECT taskq.start_machine('cr_orphan', 'cro1', '{}')$$) AS no_child_definition;
SELECT count(*) AS runs FROM taskq.runs WHERE id LIKE 'cro1%';

-- the parent's column names where a child came from
SELECT count(*) AS children, count(*) FILTER (WHERE id ~ '^[^/]+/k[0-9]+$') AS child_ids
  FROM taskq.runs WHERE parent IS NOT NULL AND id LIKE 'cr%';

-- ---------------------------------------------------------------
-- A child that ends from a fan-in batch ends as every run does: the
-- batch's first instance succeeds, the others end merged (a success for
-- their parents), an aborted batch fails them all; each parent moves once
-- ---------------------------------------------------------------
SELECT taskq.define_machine('cr_fkid', '{"states": [
    {"name": "F", "action": "fk", "initial": true, "final": true, "fan_in": 60}]}') AS fan_in_kid;
SELECT taskq.define_machine('cr_fparent', '{"states": [
    {"name": "C", "action": null, "initial": true, "child": {"machine": "cr_fkid"},
     "transitions": [{"event": "child_succeeded", "to": "Ok"}, {"event": "child_failed", "to": "Bad"}]},
    {"name": "Ok", "action": "fok", "final": true},
    {"name": "Bad", "action": "fbad", "final": true}]}') AS fan_in_parent;
SELECT taskq.start_machine('cr_fparent', 'crf1', '{"n": 1}'), taskq.start_machine('cr_fparent', 'crf2', '{"n": 2}');
SELECT count(DISTINCT m.batch) AS batches, count(*) AS instances FROM taskq.fan_in_members AS m
  WHERE m.run LIKE 'crf%';
UPDATE taskq.tasks SET not_before = now() WHERE action = 'fk';
SELECT s.id ~ '^crf1/k[0-9]+/1$' AS batch_of_first, pg_temp.tr(s.id, NULL, '{"sum": 3}') AS next
  FROM (SELECT pg_temp.take('fk') AS id) AS s;
SELECT * FROM pg_temp.runs('crf1');
SELECT * FROM pg_temp.runs('crf2');
SELECT workflow, count(*) AS moves FROM taskq.tasks WHERE action IN ('fok', 'fbad')
 GROUP BY workflow ORDER BY workflow;
-- an aborted batch fails every instance: each parent moves on child_failed
SELECT taskq.start_machine('cr_fparent', 'crf3', '{}'), taskq.start_machine('cr_fparent', 'crf4', '{}');
UPDATE taskq.tasks SET not_before = now() WHERE action = 'fk' AND status_code = 'pending';
SELECT s.id ~ '^crf3/k[0-9]+/1$' AS batch_of_first, public.ret(s.id, 'aborted', 'broken') AS ret
  FROM (SELECT pg_temp.take('fk') AS id) AS s;
SELECT id, status, state, context->'child'->>'status' AS child_status, error
  FROM taskq.runs WHERE id LIKE 'crf3%' OR id LIKE 'crf4%' ORDER BY created_at, id;
SELECT workflow, action, count(*) AS moves FROM taskq.tasks WHERE action IN ('fok', 'fbad')
 GROUP BY workflow, action ORDER BY workflow;
SELECT count(*) AS members_left FROM taskq.fan_in_members WHERE run LIKE 'crf%';

-- clean up: the runs, their tasks, the sequence of forks as it was
DELETE FROM taskq.saga_steps WHERE run LIKE 'cr%';
DELETE FROM taskq.runs WHERE id LIKE 'cr%';
DELETE FROM taskq.tasks;
DELETE FROM taskq.definitions WHERE name LIKE 'cr\_%';
SELECT setval('taskq.fork_seq', s.last_value, s.is_called) IS NOT NULL AS seq_restored FROM saved_seq AS s;
