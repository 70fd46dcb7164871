-- the hand-written queue: one row per transaction (bigserial id, two indexes)
INSERT INTO bench.baseline (body) VALUES ('{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb);
