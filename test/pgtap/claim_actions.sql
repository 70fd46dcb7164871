-- test/pgtap/claim_actions.sql: claims of several actions and of any action
-- (src/queue/claim_walk.c).  There is one ready index, by action: such a
-- claim walks each action's entries and takes the next task in claim order
-- (priority descending, then insertion order) from whichever walk has it.
-- The claimed rows must be exactly those the order says, each once (an
-- action listed twice included), and the claim must not visit the ready
-- tasks of actions it did not ask for: counted as the rows the transaction
-- fetched from taskq.tasks through an index.
BEGIN;
SELECT plan(13);

\ir include/direct_paths.sql

-- Ahead of everything, 3,000 ready tasks of another action.
SELECT cardinality(taskq.enqueue_many('ca-other', array_fill(NULL::jsonb, ARRAY[3000]), priority => 5));
-- Three actions, priorities mixed, insertion order interleaved.
SELECT taskq.insert_tasks(jsonb_agg(jsonb_build_object(
           'id', 'ca-' || g, 'action', (ARRAY['ca-a', 'ca-b', 'ca-c'])[1 + g % 3],
           'priority', (g * 7) % 4)))
  FROM generate_series(1, 120) g;
-- delayed and blocked tasks of the listed actions are not claimed
SELECT taskq.insert_tasks('[{"id": "ca-later", "action": "ca-a", "priority": 9, "not_before": "2999-01-01"},
                            {"id": "ca-first", "action": "ca-b", "to_signal_after": ["ca-blocked"]},
                            {"id": "ca-blocked", "action": "ca-b", "priority": 9}]');

CREATE FUNCTION pg_temp.fetched() RETURNS bigint LANGUAGE sql AS
$$ SELECT pg_stat_get_xact_tuples_fetched('taskq.tasks'::regclass) $$;

CREATE TEMP TABLE before_claim AS SELECT pg_temp.fetched() AS n;
CREATE TEMP TABLE got AS
SELECT row_number() OVER () AS rn, o.*
  FROM taskq.own_tasks('caw', 30, '{ca-a,ca-b,ca-a}', '1 min') AS o;
SELECT cmp_ok(pg_temp.fetched() - (SELECT n FROM before_claim), '<', 100::bigint,
              'a claim of two actions does not visit the 3,000 ready tasks of another');

SELECT is((SELECT array_agg(id ORDER BY rn) FROM got),
          (SELECT array_agg(id ORDER BY priority DESC, seq) FROM (
               SELECT id, priority, seq FROM taskq.tasks
                WHERE action IN ('ca-a', 'ca-b') AND id NOT IN ('ca-later', 'ca-blocked')
                ORDER BY priority DESC, seq LIMIT 30) AS first),
          'two actions: the first 30 of their ready tasks in claim order');
SELECT is((SELECT count(DISTINCT id) FROM got), 30::bigint,
          'an action listed twice: each task claimed once');

-- the rest of them, past the end of one action's entries
DELETE FROM got;
INSERT INTO got SELECT row_number() OVER (), o.*
  FROM taskq.own_tasks('caw', 1000, '{ca-b,ca-a,ca-none}', '1 min') AS o;
SELECT is((SELECT array_agg(id ORDER BY rn) FROM got),
          (SELECT array_agg(g.id ORDER BY t.priority DESC, t.seq) FROM got g JOIN taskq.tasks t USING (id)),
          'the rest of both in claim order, an action without tasks listed too');
SELECT is((SELECT string_agg(id, ',' ORDER BY id) FROM taskq.tasks
            WHERE action IN ('ca-a', 'ca-b') AND status_code = 'pending'),
          'ca-blocked,ca-later', 'all 51 others claimed: only the delayed and the blocked task are left');
SELECT is((SELECT count(*) FROM got), 51::bigint, 'the rest: 51 tasks');

-- Any action: every action with ready tasks, merged in claim order.
SELECT taskq.enqueue('ca-d', NULL, 'ca-d1', priority => 7);
SELECT taskq.enqueue('AAA', NULL, 'ca-upper', priority => 6);
DELETE FROM got;
INSERT INTO got SELECT row_number() OVER (), o.*
  FROM taskq.own_tasks('caw', 50, NULL, '1 min') AS o;
SELECT is((SELECT array_agg(id ORDER BY rn) FROM got),
          ARRAY['ca-d1', 'ca-upper'] || (SELECT array_agg(id ORDER BY seq) FROM (
               SELECT id, seq FROM taskq.tasks WHERE action = 'ca-other' ORDER BY seq LIMIT 48) AS first),
          'any action: the first 50 ready tasks of all actions in claim order');
DELETE FROM got;
INSERT INTO got SELECT row_number() OVER (), o.*
  FROM taskq.own_tasks('caw', 5000, NULL, '1 min') AS o;
SELECT is((SELECT count(*) FROM got), 2992::bigint,
          'any action: all that is left, 2,952 of one action and 40 of another');
SELECT is((SELECT array_agg(id ORDER BY rn) FROM got),
          (SELECT array_agg(g.id ORDER BY t.priority DESC, t.seq) FROM got g JOIN taskq.tasks t USING (id)),
          'any action: in claim order');
SELECT is((SELECT count(*) FROM taskq.tasks WHERE status_code = 'pending'), 2::bigint,
          'nothing ready is left');
SELECT is((SELECT count(*) FROM taskq.own_tasks('caw', 10, NULL)), 0::bigint,
          'any action with nothing ready: nothing');

-- 400 actions of one task each: every leaf page of the ready index ends
-- with an action's last entry, and the search for the next action goes on
-- on the page to its right.
SELECT taskq.insert_tasks(jsonb_agg(jsonb_build_object(
           'id', 'ca-m' || g, 'action', 'ca-m' || lpad(g::text, 3, '0'), 'priority', g % 2)))
  FROM generate_series(1, 400) g;
DELETE FROM got;
INSERT INTO got SELECT row_number() OVER (), o.*
  FROM taskq.own_tasks('caw', 1000, NULL, '1 min') AS o;
SELECT is((SELECT array_agg(id ORDER BY rn) FROM got),
          (SELECT array_agg('ca-m' || g ORDER BY g % 2 DESC, g) FROM generate_series(1, 400) g),
          'any action over 400 actions of one task each: all of them, in claim order');

SELECT lives_ok('SELECT pg_temp.check_task_indexes()',
                'amcheck: each index of taskq.tasks holds every row it covers');

SELECT * FROM finish();
ROLLBACK;
