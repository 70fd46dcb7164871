-- the hand-written queue keyed by the caller's random text ids: 1,000 rows per statement
INSERT INTO bench.baseline_text (id, body) SELECT gen_random_uuid()::text, '{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb FROM generate_series(1, 1000);
