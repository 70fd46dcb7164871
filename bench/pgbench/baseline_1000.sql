-- the hand-written queue: 1,000 rows per statement
INSERT INTO bench.baseline (body) SELECT '{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb FROM generate_series(1, 1000);
