-- Baselines measured in the same run as taskq (bench/run.sh loads this).
--
-- baseline: the hand-written queue people copy from blog posts: one table,
-- a partial index on pending rows, claim = UPDATE ... WHERE id IN (SELECT
-- ... FOR UPDATE SKIP LOCKED LIMIT n) RETURNING, complete = UPDATE by id
-- and token.  floor: DELETE ... SKIP LOCKED RETURNING, the least work a
-- durable pop can do.
DROP SCHEMA IF EXISTS bench CASCADE;
CREATE SCHEMA bench;

CREATE TABLE bench.baseline (
    id          bigserial PRIMARY KEY,
    body        jsonb,
    status      text NOT NULL DEFAULT 'pending',
    token       uuid,
    locked_at   timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX baseline_pending_idx ON bench.baseline (id) WHERE status = 'pending';

CREATE TABLE bench.floor (
    id          bigserial PRIMARY KEY,
    body        jsonb,
    created_at  timestamptz NOT NULL DEFAULT now()
);
