/*
 * taskq 0.1 -> 0.2: completions no longer wait for a join row another
 * transaction holds; they leave the signal in taskq.deferred_signals for
 * the background worker (the C side comes with the new module).  And
 * taskq.tasks is vacuumed sooner.
 * Same rules as the install script (test/static/install_scripts.sh).
 */
\echo Use "ALTER EXTENSION taskq UPDATE TO '0.2'" to load this file. \quit

-- Signals a completion did not add to a join's num_signals because another
-- transaction held the join's row, or the join is wide (more than 64
-- predecessors): the background worker adds them within milliseconds
-- (finish.c).  One counter row per join and backend (stripe = backend id),
-- so completions never wait for each other here, and adding to a counter is
-- a HOT update (fillfactor leaves the room): the table stays a few pages.
CREATE TABLE taskq.deferred_signals (
    task_id         text COLLATE "C" NOT NULL,
    stripe          integer NOT NULL,
    signals         integer NOT NULL CHECK (signals OPERATOR(pg_catalog.>=) 0),
    CONSTRAINT deferred_signals_pkey PRIMARY KEY (task_id, stripe)
) WITH (fillfactor = 50);
COMMENT ON TABLE taskq.deferred_signals IS
    'completions'' signals for joins that were locked or wide, waiting for the background worker to add them to num_signals';
SELECT pg_catalog.pg_extension_config_dump('taskq.deferred_signals', '');

GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON taskq.deferred_signals TO taskq_admin;

-- A queue table turns over fast: each task leaves two dead row versions
-- behind (claim, end) and dead entries at the head of the ready indexes,
-- which every claim must step over until VACUUM removes them.  Vacuum it
-- after 2% of its rows changed, not the default 20%, and at full speed.
ALTER TABLE taskq.tasks SET (autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0);
