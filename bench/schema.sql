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

-- baseline_text: the same queue keyed by the caller's random text id, as
-- taskq's tasks are (a bigserial for the order of the pending index): a
-- reference for the enqueue workloads, to tell the cost of the id from
-- taskq's own.
CREATE TABLE bench.baseline_text (LIKE bench.baseline INCLUDING DEFAULTS);
ALTER TABLE bench.baseline_text
    ALTER COLUMN id DROP DEFAULT,
    ALTER COLUMN id TYPE text COLLATE "C",
    ADD PRIMARY KEY (id),
    ADD COLUMN seq bigserial;
CREATE INDEX baseline_text_pending_idx ON bench.baseline_text (seq) WHERE status = 'pending';

CREATE TABLE bench.floor (
    id          bigserial PRIMARY KEY,
    body        jsonb,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- bound: the least that any leased queue which keeps its finished rows can
-- do, for the drain workload.  The claim is a plain SELECT: it writes
-- nothing (as if leases were kept in memory) and never meets another
-- claimer, because client k reads only the rows of part k (bench/run.sh
-- prefills part = row number modulo the number of clients).  The completion
-- is one UPDATE by id that marks the rows done, as any queue whose finished
-- tasks stay readable must.  Two indexes: how to find ready rows and how to
-- find a row by id.
CREATE TABLE bench.bound (
    id          bigserial PRIMARY KEY,
    part        int NOT NULL,
    seq         bigint NOT NULL,    -- order within the part
    body        jsonb,
    status      text NOT NULL DEFAULT 'pending',
    finished_at timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bound_ready_idx ON bench.bound (part, seq) WHERE status = 'pending';
