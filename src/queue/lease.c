/*-------------------------------------------------------------------------
 *
 * lease.c
 * Leases: the expiry sweep, run by own_tasks before it claims and by the
 * background worker, and extend_ownership's extension of a lease.
 *
 * A task in progress whose deadline passed goes back to pending with its
 * token kept, so the late owner may still return or extend it until
 * somebody else owns it (which replaces the token); if its tries are used
 * up it is aborted with the cascade instead.  Rows are taken with FOR
 * UPDATE SKIP LOCKED: a sweep never waits for a row another transaction
 * holds; the next sweep finds it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "common/plan.h"
#include "ipc/wakeup.h"
#include "queue/queue.h"


static TaskqPlan expired_probe_plan = {
	"SELECT 1 FROM taskq.tasks"
	" WHERE status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status"
	"   AND action_deadline OPERATOR(pg_catalog.<=) pg_catalog.now() LIMIT 1",
	0, {0}
};

static TaskqPlan expired_requeue_plan = {
	"UPDATE taskq.tasks AS t SET status_code = 'pending'"
	" WHERE t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
	"   SELECT e.ctid FROM taskq.tasks AS e"
	"    WHERE e.status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status"
	"      AND e.action_deadline OPERATOR(pg_catalog.<=) pg_catalog.now()"
	"      AND (e.max_tries IS NULL OR e.num_tries OPERATOR(pg_catalog.<) e.max_tries)"
	"      AND NOT e.cancelled"
	"    ORDER BY e.action_deadline LIMIT 64 FOR UPDATE SKIP LOCKED))"
	" RETURNING t.action",
	0, {0}
};

static TaskqPlan expired_exhausted_plan = {
	"SELECT e.id, e.num_tries, e.cancelled FROM taskq.tasks AS e"
	" WHERE e.status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status"
	"   AND e.action_deadline OPERATOR(pg_catalog.<=) pg_catalog.now()"
	"   AND (e.num_tries OPERATOR(pg_catalog.>=) e.max_tries OR e.cancelled)"
	" ORDER BY e.action_deadline LIMIT 64 FOR UPDATE SKIP LOCKED",
	0, {0}
};

StaticAssertDecl(TASKQ_SWEEP_BATCH == 64, "TASKQ_SWEEP_BATCH is spelt out in the sweep plans");

static TaskqPlan extend_plan = {
	"UPDATE taskq.tasks"
	"   SET status_code = 'in_progress',"
	"       action_deadline = pg_catalog.now() OPERATOR(pg_catalog.+) $4"
	" WHERE id OPERATOR(pg_catalog.=) $1"
	"   AND performance_token OPERATOR(pg_catalog.=) $2"
	"   AND actor_id OPERATOR(pg_catalog.=) $3"
	"   AND status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status"
	"   AND NOT cancelled",
	4, {TEXTOID, UUIDOID, TEXTOID, INTERVALOID}
};

/*
 * Hand expired leases back: requeue those with tries left, abort (with the
 * cascade) those on their last try.  Cheap when nothing expired: one probe
 * of the head of the lease index.  Returns how many leases it handled.
 */
int
taskq_sweep_expired(void)
{
	int			handled;

	taskq_execute(&expired_probe_plan, NULL, NULL, true, 1);
	if (SPI_processed == 0)
		return 0;

	taskq_execute(&expired_requeue_plan, NULL, NULL, false, 0);
	handled = SPI_processed;
	for (uint64 i = 0; i < SPI_processed; i++)
		taskq_note_ready(taskq_get_text(i, 1, NULL));

	taskq_execute(&expired_exhausted_plan, NULL, NULL, false, 0);
	if (SPI_processed > 0)
	{
		uint64		n = SPI_processed;
		char	  **ids = palloc(sizeof(char *) * n);
		char	  **why = palloc(sizeof(char *) * n);

		for (uint64 i = 0; i < n; i++)
		{
			ids[i] = taskq_get_text(i, 1, NULL);
			why[i] = taskq_get_bool(i, 3, NULL) ? "cancelled" :
				psprintf("aborted: lease expired on the last of %d tries",
						 taskq_get_int32(i, 2, NULL));
		}
		for (uint64 i = 0; i < n; i++)
			taskq_abort_task(ids[i], why[i]);
		handled += n;
	}
	return handled;
}

/*
 * Extend the lease of task id by lease from now, if it is unfinished and
 * still held with token by actor; that includes a lease that expired while
 * nobody else owned the task since.  True if extended.
 */
bool
taskq_extend(const char *id, Datum token, const char *actor, Interval *lease)
{
	Datum		values[4];

	values[0] = CStringGetTextDatum(id);
	values[1] = token;
	values[2] = CStringGetTextDatum(actor);
	values[3] = IntervalPGetDatum(lease);
	taskq_execute(&extend_plan, values, NULL, false, 0);
	return SPI_processed == 1;
}
