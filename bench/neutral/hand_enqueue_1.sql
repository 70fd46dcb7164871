-- the bigserial table: one job per transaction
INSERT INTO neutral.jobs (body) VALUES ('{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb);
