-- one task per transaction, a random text id, a ~100-byte body
SELECT taskq.insert_tasks(pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object('id', gen_random_uuid()::text, 'action', 'work', 'body', '{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb)));
