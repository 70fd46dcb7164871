--
-- Concurrency limits: set_concurrency_limit, clear_limits, the view
-- taskq.limits, the tasks' concurrency_key; claims that skip what is at its
-- limit without blocking the rest (the claim walk and the SQL claim alike),
-- 0 lets nothing start, a lowered limit, and extend_ownership of an expired
-- lease.
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

-- ---------------------------------------------------------------
-- Arguments
-- ---------------------------------------------------------------
SELECT public.expect_error($$SELECT taskq.set_concurrency_limit(NULL, 1)$$);
SELECT public.expect_error($$SELECT taskq.set_concurrency_limit('', 1)$$);
SELECT public.expect_error($$SELECT taskq.set_concurrency_limit(repeat('a', 256), 1)$$);
SELECT public.expect_error($$SELECT taskq.set_concurrency_limit('fl', -1)$$);
SELECT public.expect_error($$SELECT taskq.set_concurrency_limit('fl', 1, -1)$$);
SELECT public.expect_error($$SELECT taskq.clear_limits(NULL)$$);
SELECT count(*) AS nothing_stored FROM taskq.flow_limits;

-- Set, replace (both values), NULL for both removes the row.
SELECT taskq.set_concurrency_limit('fl', 2);
SELECT * FROM taskq.limits;
SELECT taskq.set_concurrency_limit('fl', max_running_per_key => 1);
SELECT * FROM taskq.limits;
SELECT taskq.set_concurrency_limit('fl', NULL, NULL);
SELECT count(*) AS removed FROM taskq.limits;
SELECT taskq.set_concurrency_limit('fl', 3, 1);
SELECT taskq.clear_limits('fl');
SELECT taskq.clear_limits('never-limited');
SELECT count(*) AS cleared FROM taskq.limits;

-- ---------------------------------------------------------------
-- concurrency_key as input
-- ---------------------------------------------------------------
SELECT public.expect_error($$SELECT taskq.insert_tasks('[{"id": "k0", "action": "fl", "concurrency_key": 7}]')$$);
SELECT public.expect_error($$SELECT taskq.insert_tasks('[{"id": "k0", "action": "fl", "concurrency_key": ""}]')$$);
SELECT public.expect_error($$SELECT taskq.insert_tasks('[{"id": "k0", "action": "fl", "concurrency_key": null}]')$$);
SELECT public.expect_error(format($$SELECT taskq.insert_tasks('[{"id": "k0", "action": "fl", "concurrency_key": "%s"}]')$$, repeat('k', 201)));
SELECT public.expect_error($$SELECT taskq.enqueue('fl', concurrency_key => '')$$);
SELECT public.expect_error(format($$SELECT taskq.enqueue('fl', concurrency_key => '%s')$$, repeat('k', 201)));
SELECT public.expect_error(format($$SELECT taskq.enqueue_many('fl', ARRAY[NULL]::jsonb[], concurrency_key => '%s')$$, repeat('k', 201)));
SELECT count(*) AS none_inserted FROM taskq.tasks;
-- 200 bytes is fine; each insert form stores the key
SELECT taskq.insert_tasks(format('[{"id": "k1", "action": "fl", "concurrency_key": "%s"}, {"id": "k2", "action": "fl"}]', repeat('k', 200))::jsonb);
SELECT taskq.insert_tasks_if_absent('[{"id": "k3", "action": "fl", "concurrency_key": "b"}]');
SELECT taskq.replace_tasks('[{"id": "k2", "action": "fl", "concurrency_key": "c"}]');
SELECT taskq.enqueue('fl', NULL, 'k4', concurrency_key => 'd');
SELECT taskq.enqueue_many('fl', ARRAY[NULL, NULL]::jsonb[], ARRAY['k5', 'k6'], concurrency_key => 'e');
SELECT taskq.enqueue('fl', NULL, 'k7');
SELECT id, length(concurrency_key) AS key_len, left(concurrency_key, 3) AS key FROM taskq.tasks ORDER BY id;
DELETE FROM taskq.tasks;

-- ---------------------------------------------------------------
-- Claims: per key, no head-of-line blocking; in all; none
-- ---------------------------------------------------------------
SELECT taskq.set_concurrency_limit('hol', 3, 1);
SELECT taskq.insert_tasks('[
    {"id": "a1", "action": "hol", "concurrency_key": "A", "priority": 9},
    {"id": "a2", "action": "hol", "concurrency_key": "A", "priority": 8},
    {"id": "a3", "action": "hol", "concurrency_key": "A", "priority": 7},
    {"id": "b1", "action": "hol", "concurrency_key": "B"},
    {"id": "b2", "action": "hol", "concurrency_key": "B"},
    {"id": "n1", "action": "hol"},
    {"id": "n2", "action": "hol"},
    {"id": "free1", "action": "free"}]');
-- one of A (a2, a3 skipped), one of B, one without a key: 3 in all
SELECT n, id FROM public.own('w', 10, '{hol}');
SELECT running FROM taskq.limits WHERE action = 'hol';
-- at its limit: nothing more of it; an unlimited action in the same claim still is
SELECT n, id FROM public.own('w', 10, '{hol,free}');
SELECT n, id FROM public.own('w', 10, NULL);
-- a return frees a slot of its key: the next of A, not B's
SELECT public.ret('a1', 'completed');
SELECT n, id FROM public.own('w', 10, '{hol}');
-- a release frees it too
SELECT taskq.release_task('b1', (SELECT token FROM public.tokens WHERE id = 'b1'));
SELECT n, id FROM public.own('w', 10, '{hol}');
SELECT id, status_code FROM taskq.tasks WHERE status_code = 'in_progress' ORDER BY id;

-- 0: nothing starts; lowering below what runs lets nothing new start
SELECT taskq.set_concurrency_limit('hol', 0);
SELECT public.ret('a2', 'completed');
SELECT n, id FROM public.own('w', 10, '{hol}');
SELECT taskq.set_concurrency_limit('hol', 1);
SELECT running FROM taskq.limits WHERE action = 'hol';
SELECT n, id FROM public.own('w', 10, '{hol}');
SELECT public.ret('b1', 'completed');
SELECT n, id FROM public.own('w', 10, '{hol}');
SELECT public.ret('n1', 'completed');
SELECT n, id FROM public.own('w', 10, '{hol}');
-- no limit: the rest at once
SELECT taskq.clear_limits('hol');
SELECT n, id FROM public.own('w', 10, '{hol}');
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

-- ---------------------------------------------------------------
-- The same through the SQL claim (an admin's trigger on taskq.tasks
-- turns the claim walk off)
-- ---------------------------------------------------------------
CREATE FUNCTION pg_temp.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
SELECT taskq.set_concurrency_limit('hol', 3, 1);
SELECT taskq.insert_tasks('[
    {"id": "a1", "action": "hol", "concurrency_key": "A", "priority": 9},
    {"id": "a2", "action": "hol", "concurrency_key": "A", "priority": 8},
    {"id": "b1", "action": "hol", "concurrency_key": "B"},
    {"id": "b2", "action": "hol", "concurrency_key": "B"},
    {"id": "n1", "action": "hol"},
    {"id": "n2", "action": "hol"},
    {"id": "free1", "action": "free"}]');
BEGIN;
CREATE TRIGGER fl_noop BEFORE UPDATE ON taskq.tasks FOR EACH ROW EXECUTE FUNCTION pg_temp.noop();
SELECT n, id FROM public.own('w', 10, '{hol}');
SELECT n, id FROM public.own('w', 10, NULL);
SELECT running FROM taskq.limits WHERE action = 'hol';
SELECT public.ret('a1', 'completed');
SELECT n, id FROM public.own('w', 10, '{hol,free}');
ROLLBACK;
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

-- ---------------------------------------------------------------
-- Expiry: a lease whose deadline passed holds no slot, swept or not;
-- extend_ownership of it answers false while the action is at its limit
-- ---------------------------------------------------------------
SELECT taskq.set_concurrency_limit('hol', 1);
SELECT taskq.insert_tasks('[{"id": "e1", "action": "hol"}]');
SELECT n, id FROM public.own('w', 10, '{hol}', '1 hour');
-- the lease of e1 ends (back-dated), not yet swept: its slot is free
UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE id = 'e1';
SELECT running FROM taskq.limits WHERE action = 'hol';
-- extending it takes the free slot back
SELECT id, owned FROM taskq.extend_ownership('w', '{e1}',
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'e1')], '1 hour');
SELECT running FROM taskq.limits WHERE action = 'hol';
-- it ends again; the sweep hands it back and e2 (first in claim order) takes the slot
UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE id = 'e1';
SELECT taskq.insert_tasks('[{"id": "e2", "action": "hol", "priority": 5}]');
SELECT n, id FROM public.own('w', 10, '{hol}', '1 hour');
SELECT id, status_code FROM taskq.tasks ORDER BY id;
-- e1 is not owned by anybody else, but its action is at its limit
SELECT id, owned FROM taskq.extend_ownership('w', '{e1}',
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'e1')], '1 hour');
SELECT public.ret('e2', 'completed');
SELECT id, owned FROM taskq.extend_ownership('w', '{e1}',
    ARRAY[(SELECT token FROM public.tokens WHERE id = 'e1')], '1 hour');
SELECT id, status_code FROM taskq.tasks ORDER BY id;
SELECT running FROM taskq.limits WHERE action = 'hol';
SELECT taskq.clear_limits('hol');
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

-- ---------------------------------------------------------------
-- Rate limits
-- ---------------------------------------------------------------
SELECT public.expect_error($$SELECT taskq.set_rate_limit(NULL, 1, '1 s')$$);
SELECT public.expect_error($$SELECT taskq.set_rate_limit('rt', 0, '1 s')$$);
SELECT public.expect_error($$SELECT taskq.set_rate_limit('rt', NULL, '1 s')$$);
SELECT public.expect_error($$SELECT taskq.set_rate_limit('rt', 1, '0 s')$$);
SELECT public.expect_error($$SELECT taskq.set_rate_limit('rt', 1, '-1 s')$$);
SELECT public.expect_error($$SELECT taskq.set_rate_limit('rt', 1, NULL)$$);
SELECT public.expect_error($$SELECT taskq.set_rate_limit('rt', 1, '1 s', NULL)$$);
SELECT count(*) AS nothing_stored FROM taskq.flow_limits;
-- set, replaced; a concurrency limit of the same action is kept apart
SELECT taskq.set_rate_limit('rt', 5, '1 min', true);
SELECT taskq.set_concurrency_limit('rt', 7);
SELECT taskq.set_rate_limit('rt', 2, '1 hour');
SELECT * FROM taskq.limits;
SELECT taskq.set_concurrency_limit('rt', NULL);
SELECT action, max_running, rate_max, rate_per, by_key FROM taskq.limits;

-- two claims per hour: the third waits for the window, even with nothing running
SELECT taskq.insert_tasks('[{"id": "r1", "action": "rt"}, {"id": "r2", "action": "rt"},
                            {"id": "r3", "action": "rt"}, {"id": "r4", "action": "rt"},
                            {"id": "free2", "action": "free"}]');
SELECT n, id FROM public.own('w', 10, '{rt}');
SELECT public.ret('r1', 'completed');
-- a released claim still counts
SELECT taskq.release_task('r2', (SELECT token FROM public.tokens WHERE id = 'r2'));
SELECT n, id FROM public.own('w', 10, '{rt,free}');
SELECT running, window_claims FROM taskq.limits WHERE action = 'rt';
-- the window passes (the claims back-dated): two more
UPDATE taskq.flow_claims SET claimed_at = claimed_at - interval '1 hour' WHERE action = 'rt';
SELECT running, window_claims FROM taskq.limits WHERE action = 'rt';
SELECT n, id FROM public.own('w', 10, '{rt}');
SELECT count(*) AS left_the_window_deleted FROM taskq.flow_claims
 WHERE action = 'rt' AND claimed_at < now() - interval '30 min';
-- the SQL claim counts alike
UPDATE taskq.flow_claims SET claimed_at = claimed_at - interval '1 hour' WHERE action = 'rt';
SELECT taskq.insert_tasks('[{"id": "r5", "action": "rt"}, {"id": "r6", "action": "rt"},
                            {"id": "r7", "action": "rt"}]');
BEGIN;
CREATE TRIGGER fl_noop BEFORE UPDATE ON taskq.tasks FOR EACH ROW EXECUTE FUNCTION pg_temp.noop();
SELECT n, id FROM public.own('w', 10, '{rt}');
SELECT n, id FROM public.own('w', 10, NULL);
ROLLBACK;
-- clear_limits removes both kinds and the claims logged
SELECT taskq.clear_limits('rt');
SELECT count(*) AS no_limits, (SELECT count(*) FROM taskq.flow_claims) AS no_claims FROM taskq.limits;
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

-- by key: one claim per key and hour; tasks without a key share one window
SELECT taskq.set_rate_limit('rk', 1, '1 hour', by_key => true);
SELECT taskq.insert_tasks('[{"id": "ka1", "action": "rk", "concurrency_key": "A", "priority": 9},
                            {"id": "ka2", "action": "rk", "concurrency_key": "A", "priority": 9},
                            {"id": "kb1", "action": "rk", "concurrency_key": "B"},
                            {"id": "kn1", "action": "rk"}, {"id": "kn2", "action": "rk"}]');
SELECT n, id FROM public.own('w', 10, '{rk}');
SELECT n, id FROM public.own('w', 10, '{rk}');
SELECT key, count(*) FROM taskq.flow_claims GROUP BY key ORDER BY key;
-- with a concurrency limit too: both hold
SELECT taskq.set_concurrency_limit('rk', 1);
UPDATE taskq.flow_claims SET claimed_at = claimed_at - interval '1 hour';
SELECT n, id FROM public.own('w', 10, '{rk}');
SELECT public.ret('ka1', 'completed'), public.ret('kb1', 'completed'), public.ret('kn1', 'completed');
SELECT n, id FROM public.own('w', 10, '{rk}');
SELECT running, window_claims FROM taskq.limits WHERE action = 'rk';
SELECT taskq.clear_limits('rk');
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;
