-- taskq: 1,000 tasks per call through insert_tasks' JSON, random text ids
SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', gen_random_uuid()::text, 'action', 'a', 'body', '{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb)) FROM generate_series(1, 1000)));
