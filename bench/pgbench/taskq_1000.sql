-- 1,000 tasks per call, random text ids, ~100-byte bodies
SELECT taskq.insert_tasks((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('id', gen_random_uuid()::text, 'action', 'work', 'body', '{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb)) FROM generate_series(1, 1000)));
