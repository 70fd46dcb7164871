-- one task per transaction through the typed form: taskq makes the id, a ~100-byte body
SELECT taskq.enqueue('work', '{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb);
