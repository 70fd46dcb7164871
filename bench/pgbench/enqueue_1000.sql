-- 1,000 tasks per call through the typed form: taskq makes the ids, ~100-byte bodies
SELECT taskq.enqueue_many('work', (SELECT pg_catalog.array_agg('{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb) FROM generate_series(1, 1000)));
