-- the bigserial table: 1,000 jobs per statement
INSERT INTO neutral.jobs (body) SELECT '{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb FROM generate_series(1, 1000);
