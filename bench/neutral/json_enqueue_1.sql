-- taskq: one task per transaction through insert_tasks' JSON, a random text id
SELECT taskq.insert_tasks(jsonb_build_array(jsonb_build_object('id', gen_random_uuid()::text, 'action', 'a', 'body', '{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb)));
