-- taskq: 1,000 tasks per call, the ids made by taskq
SELECT taskq.enqueue_many('a', array_fill('{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb, ARRAY[1000]));
