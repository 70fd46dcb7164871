-- one task per transaction through the typed form with a random text id, a ~100-byte body
SELECT taskq.enqueue('work', '{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb, gen_random_uuid()::text);
