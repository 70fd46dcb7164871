/*-------------------------------------------------------------------------
 *
 * maintenance.c
 *	  The background worker's statements on taskq.tasks: the actions with
 *	  ready work or whose delayed tasks came due (for its announcements),
 *	  the next lease deadline and not_before (for its sleep), and the
 *	  deletion of finished tasks past taskq.retention.
 *
 * The worker (worker/loop.c, worker/announce.c) decides when each runs and
 * what follows from the answer; the statements live here so that only the
 * queue names its table.  Each is one statement in the caller's
 * transaction, between its SPI_connect() and SPI_finish(), and takes no
 * lock of its own but the deletion's: FOR UPDATE SKIP LOCKED, so that the
 * worker never waits for a row a returning owner or a claim holds (the
 * next round finds it).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/timestamp.h"

#include "common/plan.h"
#include "queue/queue.h"


/* Every action with ready work: a loose index scan of the ready index. */
static TaskqPlan ready_actions_plan = {
	"WITH RECURSIVE a(action) AS ("
	"  (SELECT t.action FROM taskq.tasks AS t"
	"    WHERE t.status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status"
	"      AND t.num_signals OPERATOR(pg_catalog.=) 0"
	"    ORDER BY t.action LIMIT 1)"
	"  UNION ALL"
	"  SELECT (SELECT t.action FROM taskq.tasks AS t"
	"           WHERE t.action OPERATOR(pg_catalog.>) a.action"
	"             AND t.status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status"
	"             AND t.num_signals OPERATOR(pg_catalog.=) 0"
	"           ORDER BY t.action LIMIT 1)"
	"    FROM a WHERE a.action IS NOT NULL)"
	" SELECT action FROM a WHERE action IS NOT NULL",
	0, {0}
};

/*
 * Delayed tasks whose time came since the last look (a task that was never
 * delayed was announced by its producer).
 */
static TaskqPlan came_due_plan = {
	"SELECT DISTINCT action FROM taskq.tasks"
	" WHERE status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status"
	"   AND num_signals OPERATOR(pg_catalog.=) 0"
	"   AND not_before OPERATOR(pg_catalog.>) created_at"
	"   AND not_before OPERATOR(pg_catalog.>) $1"
	"   AND not_before OPERATOR(pg_catalog.<=) $2",
	2, {TIMESTAMPTZOID, TIMESTAMPTZOID}
};

/* The next lease deadline and the next not_before still ahead. */
static TaskqPlan next_deadlines_plan = {
	"SELECT (SELECT pg_catalog.min(action_deadline) FROM taskq.tasks"
	"         WHERE status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status),"
	"       (SELECT pg_catalog.min(not_before) FROM taskq.tasks"
	"         WHERE status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status"
	"           AND num_signals OPERATOR(pg_catalog.=) 0"
	"           AND not_before OPERATOR(pg_catalog.>) created_at"
	"           AND not_before OPERATOR(pg_catalog.>) $1)",
	1, {TIMESTAMPTZOID}
};

/*
 * Finished tasks past retention that no unfinished predecessor still
 * names (num_signals = 0, and for a task its trigger rule released early,
 * every predecessor counted), no unfinished run still owns, and, if they
 * have a result, no unfinished successor may still read; oldest first (as
 * taskq.purge_finished).
 */
static TaskqPlan retention_plan = {
	"DELETE FROM taskq.tasks AS t"
	" WHERE t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
	"   SELECT f.ctid FROM taskq.tasks AS f"
	"    WHERE f.status_code OPERATOR(pg_catalog.>=) 'completed'::taskq.status"
	"      AND f.finished_at OPERATOR(pg_catalog.<) $1"
	"      AND f.num_signals OPERATOR(pg_catalog.=) 0"
	"      AND NOT EXISTS (SELECT 1 FROM taskq.runs AS r"
	"                       WHERE r.id OPERATOR(pg_catalog.=) f.workflow"
	"                         AND r.finished_at IS NULL)"
	"      AND (f.\"trigger\" OPERATOR(pg_catalog.<) 'one_failed'::taskq.trigger_rule"
	"           OR f.num_completed OPERATOR(pg_catalog.+) f.num_failed"
	"              OPERATOR(pg_catalog.>=) f.total_dependencies)"
	"      AND (f.result IS NULL OR f.to_signal_after IS NULL"
	"           OR NOT EXISTS (SELECT FROM taskq.tasks AS s"
	"                           WHERE s.id OPERATOR(pg_catalog.=) ANY (f.to_signal_after)"
	"                             AND s.status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status))"
	"    ORDER BY f.finished_at LIMIT 500 FOR UPDATE SKIP LOCKED))",
	1, {TIMESTAMPTZOID}
};

/*
 * The same for a database whose extension is not updated to 0.5 yet
 * (taskq_schema_at_least_0_5): a legacy statement, which goes when updates
 * from 0.4 are no longer supported.
 */
static TaskqPlan legacy_retention_plan = {
	"DELETE FROM taskq.tasks AS t"
	" WHERE t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
	"   SELECT f.ctid FROM taskq.tasks AS f"
	"    WHERE f.status_code OPERATOR(pg_catalog.>=) 'completed'::taskq.status"
	"      AND f.finished_at OPERATOR(pg_catalog.<) $1"
	"      AND f.num_signals OPERATOR(pg_catalog.=) 0"
	"    ORDER BY f.finished_at LIMIT 500 FOR UPDATE SKIP LOCKED))",
	1, {TIMESTAMPTZOID}
};

static TaskqPlan oldest_finished_plan = {
	"SELECT pg_catalog.min(finished_at) FROM taskq.tasks"
	" WHERE status_code OPERATOR(pg_catalog.>=) 'completed'::taskq.status",
	0, {0}
};

StaticAssertDecl(TASKQ_RETENTION_BATCH == 500,
				 "TASKQ_RETENTION_BATCH is spelt out in retention_plan and legacy_retention_plan");

/* The first column of each row of the last statement, as C strings. */
static List *
text_column(void)
{
	List	   *result = NIL;

	for (uint64 i = 0; i < SPI_processed; i++)
		result = lappend(result, taskq_get_text(i, 1, NULL));
	return result;
}

/* Every action that has ready work (pending, no signal awaited). */
List *
taskq_ready_actions(void)
{
	taskq_execute(&ready_actions_plan, NULL, NULL, true, 0);
	return text_column();
}

/*
 * The actions of delayed tasks that became ready in (since, until]: their
 * not_before came, and no commit announced them.
 */
List *
taskq_came_due_actions(TimestampTz since, TimestampTz until)
{
	Datum		values[2];

	values[0] = TimestampTzGetDatum(since);
	values[1] = TimestampTzGetDatum(until);
	taskq_execute(&came_due_plan, values, NULL, true, 0);
	return text_column();
}

/*
 * The earliest lease deadline of a task in progress (*has_lease false if
 * none), and the earliest not_before after now of a delayed ready task
 * (*has_delay false if none).
 */
void
taskq_next_deadlines(TimestampTz now, TimestampTz *lease, bool *has_lease,
					 TimestampTz *delay, bool *has_delay)
{
	Datum		arg = TimestampTzGetDatum(now);
	Datum		d;
	bool		isnull;

	taskq_execute(&next_deadlines_plan, &arg, NULL, true, 0);
	d = taskq_get_datum(0, 1, &isnull);
	*has_lease = !isnull;
	*lease = isnull ? 0 : DatumGetTimestampTz(d);
	d = taskq_get_datum(0, 2, &isnull);
	*has_delay = !isnull;
	*delay = isnull ? 0 : DatumGetTimestampTz(d);
}

/*
 * Delete up to TASKQ_RETENTION_BATCH finished tasks that finished before
 * cutoff, oldest first, skipping rows others hold; returns how many.
 */
uint64
taskq_delete_finished(TimestampTz cutoff)
{
	Datum		arg = TimestampTzGetDatum(cutoff);

	taskq_execute(taskq_schema_at_least_0_5() ? &retention_plan : &legacy_retention_plan,
				  &arg, NULL, false, 0);
	return SPI_processed;
}

/* When the oldest finished task finished; false if there is none. */
bool
taskq_oldest_finished(TimestampTz *finished_at)
{
	Datum		d;
	bool		isnull;

	taskq_execute(&oldest_finished_plan, NULL, NULL, true, 0);
	d = taskq_get_datum(0, 1, &isnull);
	*finished_at = isnull ? 0 : DatumGetTimestampTz(d);
	return !isnull;
}
