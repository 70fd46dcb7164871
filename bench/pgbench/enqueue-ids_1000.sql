-- 1,000 tasks per call through the typed form with random text ids, ~100-byte bodies
SELECT taskq.enqueue_many('work', pg_catalog.array_agg('{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb), pg_catalog.array_agg(gen_random_uuid()::text)) FROM generate_series(1, 1000);
