-- taskq: one task per transaction, the id made by taskq
SELECT taskq.enqueue('a', '{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb);
