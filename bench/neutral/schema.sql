-- The neutral harness's hand-written queue, as a user writes it first: a
-- bigserial key, a partial index on pending rows; and the floor: a table a
-- pop deletes from.
CREATE SCHEMA neutral;
CREATE TABLE neutral.jobs (
    id           bigserial PRIMARY KEY,
    body         jsonb NOT NULL,
    status       text NOT NULL DEFAULT 'pending',
    token        uuid,
    locked_until timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz
);
CREATE INDEX jobs_pending_idx ON neutral.jobs (id) WHERE status = 'pending';
CREATE TABLE neutral.floor (id bigserial PRIMARY KEY, body jsonb NOT NULL);
