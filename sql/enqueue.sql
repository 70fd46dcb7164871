--
-- enqueue and enqueue_many: tasks of one action from typed arguments;
-- ids made by taskq (version-7 UUIDs, increasing) or given; the options;
-- the same duplicate errors as insert_tasks; nothing is written on error.
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

-- One task, every option left out: the id is made, the body is kept.
SELECT taskq.enqueue('mail', '{"to": "a@example.com"}') AS id \gset e_
SELECT :'e_id' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' AS uuid_v7,
       :'e_id'::uuid IS NOT NULL AS casts_to_uuid;
SELECT action, body, status_code, max_tries, priority, num_signals, to_signal_after,
       workflow, "trigger", not_before = created_at AS ready_now
  FROM taskq.tasks WHERE id = :'e_id';

-- The time part is the insertion time, to the millisecond.
SELECT abs(extract(epoch FROM created_at) * 1000
           - ('x' || translate(substr(:'e_id', 1, 13), '-', ''))::bit(48)::bigint) < 1000
           AS time_ordered
  FROM taskq.tasks WHERE id = :'e_id';

-- No body, and every option given.
SELECT taskq.enqueue('mail', NULL, 'mail-7', priority => 5,
                     not_before => '2030-01-01 00:00+00', max_tries => 3,
                     workflow => 'site-7');
SELECT id, body, priority, not_before = '2030-01-01 00:00+00' AS delayed, max_tries, workflow
  FROM taskq.tasks WHERE id = 'mail-7';

-- NULL options take their defaults; max_tries NULL takes the action's policy.
SELECT taskq.set_action_policy('polled', max_tries => 4);
SELECT taskq.enqueue('polled', NULL, 'pol-1', NULL, NULL, NULL, NULL);
SELECT id, priority, max_tries, not_before = created_at AS ready_now, workflow
  FROM taskq.tasks WHERE id = 'pol-1';

-- Many: one task per body, the ids in the order of the bodies, strictly
-- increasing when made; a NULL body is no body.
SELECT taskq.enqueue_many('bulk', ARRAY['{"n": 1}', NULL, '{"n": 3}']::jsonb[]) AS ids \gset m_
SELECT cardinality(:'m_ids'::text[]) AS n,
       (:'m_ids'::text[])[1] < (:'m_ids'::text[])[2]
       AND (:'m_ids'::text[])[2] < (:'m_ids'::text[])[3] AS increasing;
SELECT t.body, o.n
  FROM unnest(:'m_ids'::text[]) WITH ORDINALITY AS o(id, n)
  JOIN taskq.tasks AS t ON t.id = o.id ORDER BY o.n;
-- ...and they are claimed in that order
SELECT n, body FROM public.own('w', 3, '{bulk}', '1 hour') ORDER BY n;

-- Given ids, with NULLs where taskq makes them; the options apply to all.
SELECT taskq.enqueue_many('bulk', ARRAY['{}', '{}']::jsonb[], ARRAY['given-1', NULL],
                          priority => 2, workflow => 'w-9') AS ids \gset g_
SELECT (:'g_ids'::text[])[1] AS first, (:'g_ids'::text[])[2] <> 'given-1' AS second_made;
SELECT count(*) AS tasks, min(priority) AS priority, min(workflow) AS workflow
  FROM taskq.tasks WHERE id = ANY (:'g_ids'::text[]);

-- An empty array inserts nothing.
SELECT taskq.enqueue_many('bulk', '{}');

-- Errors: nothing of the call remains.
SELECT count(*) AS before FROM taskq.tasks \gset
SELECT expect_error($$SELECT taskq.enqueue(NULL, '{}')$$);
SELECT expect_error($$SELECT taskq.enqueue('', '{}')$$);
SELECT expect_error($$SELECT taskq.enqueue(repeat('a', 256), '{}')$$);
SELECT expect_error($$SELECT taskq.enqueue('mail', '{}', '')$$);
SELECT expect_error($$SELECT taskq.enqueue('mail', '{}', repeat('i', 256))$$);
SELECT expect_error($$SELECT taskq.enqueue('mail', '{}', 'mail-7')$$);
SELECT expect_error($$SELECT taskq.enqueue('mail', '{}', max_tries => 0)$$);
SELECT expect_error($$SELECT taskq.enqueue('mail', '{}', workflow => '')$$);
SELECT expect_error($$SELECT taskq.enqueue('mail', jsonb_build_object('b', repeat('b', 1100000)))$$);
SELECT expect_error($$SELECT taskq.enqueue_many('bulk', NULL)$$);
SELECT expect_error($$SELECT taskq.enqueue_many('bulk', ARRAY['{}', '{}']::jsonb[], ARRAY['x'])$$);
SELECT expect_error($$SELECT taskq.enqueue_many('bulk', ARRAY['{}', '{}']::jsonb[], ARRAY['dup', 'dup'])$$);
SELECT expect_error($$SELECT taskq.enqueue_many('bulk', ARRAY['{}', '{}']::jsonb[], ARRAY['new-1', 'given-1'])$$);
SELECT expect_error($$SELECT taskq.enqueue_many('bulk', ARRAY['{}', '{}']::jsonb[], ARRAY['new-1', ''])$$);
SELECT expect_error($$SELECT taskq.enqueue_many('bulk',
    ARRAY['{}', jsonb_build_object('b', repeat('b', 1100000))])$$);
SELECT count(*) = :before AS nothing_written FROM taskq.tasks;

DELETE FROM taskq.tasks;
DELETE FROM taskq.action_policies;
DELETE FROM public.tokens;
