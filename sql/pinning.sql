--
-- Pinning: a run keeps the version of its definition it started on.  A new
-- version stored while the run goes on changes nothing for it; a run
-- started after takes the new version.  Each version here goes elsewhere,
-- so a run that read the latest version would show it.
--
CREATE FUNCTION pg_temp.tok(p_id text) RETURNS uuid
LANGUAGE sql AS $$ SELECT k.token FROM public.tokens AS k WHERE k.id = p_id $$;

-- ---------------------------------------------------------------
-- A state machine: version 1 goes A -> B, version 2 goes A -> C
-- ---------------------------------------------------------------
SELECT taskq.define_machine('pin-m', '{"states": [
    {"name": "A", "action": "pin-a", "initial": true, "transitions": [{"event": "ok", "to": "B"}]},
    {"name": "B", "action": "pin-b", "final": true}]}') AS v1;
SELECT taskq.start_machine('pin-m', 'pm1');
SELECT taskq.define_machine('pin-m', '{"states": [
    {"name": "A", "action": "pin-a", "initial": true, "transitions": [{"event": "ok", "to": "C"}]},
    {"name": "C", "action": "pin-c", "final": true}]}') AS v2;
SELECT taskq.start_machine('pin-m', 'pm2');
SELECT id, version, state FROM taskq.runs WHERE id IN ('pm1', 'pm2') ORDER BY id;
-- both take the event "ok" in A: each goes where its own version says
SELECT n, id, action FROM public.own('w', 2, '{pin-a}');
SELECT taskq.transition('pm1/1', pg_temp.tok('pm1/1'), 'ok') AS pm1_next;
SELECT taskq.transition('pm2/1', pg_temp.tok('pm2/1'), 'ok') AS pm2_next;
SELECT id, version, state, status FROM taskq.runs WHERE id IN ('pm1', 'pm2') ORDER BY id;
SELECT id, action, body->>'state' AS state FROM taskq.tasks
 WHERE workflow IN ('pm1', 'pm2') AND status_code = 'pending' ORDER BY id;
-- and ends in it
SELECT n, id, action FROM public.own('w', 2, '{pin-b,pin-c}');
SELECT taskq.transition('pm1/2', pg_temp.tok('pm1/2'), NULL) AS pm1_ended;
SELECT taskq.transition('pm2/2', pg_temp.tok('pm2/2'), NULL) AS pm2_ended;
SELECT id, version, state, status FROM taskq.runs WHERE id IN ('pm1', 'pm2') ORDER BY id;

-- ---------------------------------------------------------------
-- A saga: version 1's second step does pin-s-b1, version 2's pin-s-b2
-- ---------------------------------------------------------------
SELECT taskq.define_saga('pin-s', '{"steps": [
    {"name": "first", "do": "pin-s-a"},
    {"name": "second", "do": "pin-s-b1", "after": ["first"]}]}') AS v1;
SELECT taskq.start_saga('pin-s', 'ps1');
SELECT taskq.define_saga('pin-s', '{"steps": [
    {"name": "first", "do": "pin-s-a"},
    {"name": "second", "do": "pin-s-b2", "after": ["first"]}]}') AS v2;
SELECT taskq.start_saga('pin-s', 'ps2');
SELECT id, version, status FROM taskq.runs WHERE id IN ('ps1', 'ps2') ORDER BY id;
SELECT n, id, action FROM public.own('w', 2, '{pin-s-a}');
SELECT taskq.return_step('ps1/1', pg_temp.tok('ps1/1'), 'success');
SELECT taskq.return_step('ps2/1', pg_temp.tok('ps2/1'), 'success');
-- the second step of each run is its own version's
SELECT id, action, body->>'step' AS step FROM taskq.tasks
 WHERE workflow IN ('ps1', 'ps2') AND status_code = 'pending' ORDER BY id;
SELECT n, id, action FROM public.own('w', 2, '{pin-s-b1,pin-s-b2}');
SELECT taskq.return_step('ps1/2', pg_temp.tok('ps1/2'), 'success');
SELECT taskq.return_step('ps2/2', pg_temp.tok('ps2/2'), 'success');
SELECT id, version, status FROM taskq.runs WHERE id IN ('ps1', 'ps2') ORDER BY id;

-- Nothing left for the files after this one.
DELETE FROM taskq.runs WHERE id IN ('pm1', 'pm2', 'ps1', 'ps2');
DELETE FROM taskq.tasks WHERE workflow IN ('pm1', 'pm2', 'ps1', 'ps2');
DELETE FROM taskq.saga_steps WHERE run IN ('ps1', 'ps2');
DELETE FROM taskq.definitions WHERE name IN ('pin-m', 'pin-s');
