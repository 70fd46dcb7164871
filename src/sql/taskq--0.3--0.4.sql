/*
 * taskq 0.3 -> 0.4: the triggers that keep the claims' start in the ready
 * indexes right (src/hint.c).  Claims start past the dead entries at the
 * head of a ready index; every SQL statement that writes a ready task
 * moves that start back before it, and one that changes or deletes a ready
 * task keeps its transaction's claims from moving the start, in these
 * statement triggers over the changed rows.  The direct paths (claim, completion, batch insert) fire no
 * triggers and do the same themselves.
 * Same rules as the install script (test/static/install_scripts.sh).
 */
\echo Use "ALTER EXTENSION taskq UPDATE TO '0.4'" to load this file. \quit

CREATE FUNCTION taskq.tasks_written()
RETURNS trigger
AS 'MODULE_PATHNAME', 'taskq_tasks_written'
LANGUAGE C;
COMMENT ON FUNCTION taskq.tasks_written() IS
    'trigger: ready tasks a statement wrote move the claims'' start in the ready indexes back before them';
REVOKE ALL ON FUNCTION taskq.tasks_written() FROM PUBLIC;

CREATE TRIGGER tasks_ready_hint_insert AFTER INSERT ON taskq.tasks
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION taskq.tasks_written();
CREATE TRIGGER tasks_ready_hint_update AFTER UPDATE ON taskq.tasks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION taskq.tasks_written();
CREATE TRIGGER tasks_ready_hint_delete AFTER DELETE ON taskq.tasks
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION taskq.tasks_written();
-- also in sessions with session_replication_role = replica (pg_restore, replication tools)
ALTER TABLE taskq.tasks ENABLE ALWAYS TRIGGER tasks_ready_hint_insert;
ALTER TABLE taskq.tasks ENABLE ALWAYS TRIGGER tasks_ready_hint_update;
ALTER TABLE taskq.tasks ENABLE ALWAYS TRIGGER tasks_ready_hint_delete;
