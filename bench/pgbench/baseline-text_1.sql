-- the hand-written queue keyed by the caller's random text id: one row per transaction
INSERT INTO bench.baseline_text (id, body) VALUES (gen_random_uuid()::text, '{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'::jsonb);
