/*-------------------------------------------------------------------------
 *
 * lease.c
 *	  Leases: the expiry sweep, run by own_tasks before it claims and by the
 *	  background worker.  (extend_ownership's extension of a lease is a
 *	  single task's status change: lifecycle.c.)
 *
 * A task in progress whose deadline passed goes back to pending with its
 * token kept, so the late owner may still return or extend it until
 * somebody else owns it (which replaces the token); if its tries are used
 * up it is aborted with the cascade instead.  Rows are taken with FOR
 * UPDATE SKIP LOCKED: a sweep never waits for a row another transaction
 * holds; the next sweep finds it.  Before it locks the rows it will abort,
 * the workflow layer locks the runs of those that are steps
 * (taskq_expiring_hook): run locks come before task rows, as in a return.
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
#include "ipc/metrics.h"
#include "ipc/wakeup.h"
#include "queue/queue_internal.h"


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
	" RETURNING t.action, t.id",
	0, {0}
};

static TaskqPlan expired_exhausted_plan = {
	"SELECT e.id, e.num_tries, e.cancelled, e.action FROM taskq.tasks AS e"
	" WHERE e.status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status"
	"   AND e.action_deadline OPERATOR(pg_catalog.<=) pg_catalog.now()"
	"   AND (e.num_tries OPERATOR(pg_catalog.>=) e.max_tries OR e.cancelled)"
	" ORDER BY e.action_deadline LIMIT 64 FOR UPDATE SKIP LOCKED",
	0, {0}
};

/* the tasks expired_exhausted_plan is about to lock that have a workflow key */
static TaskqPlan expired_exhausted_keyed_plan = {
	"SELECT e.id FROM taskq.tasks AS e"
	" WHERE e.status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status"
	"   AND e.action_deadline OPERATOR(pg_catalog.<=) pg_catalog.now()"
	"   AND (e.num_tries OPERATOR(pg_catalog.>=) e.max_tries OR e.cancelled)"
	"   AND e.workflow IS NOT NULL"
	" ORDER BY e.action_deadline LIMIT 64",
	0, {0}
};

taskq_expiring_hook_type taskq_expiring_hook = NULL;

StaticAssertDecl(TASKQ_SWEEP_BATCH == 64, "TASKQ_SWEEP_BATCH is spelt out in the sweep plans");

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
	{
		taskq_note_ready(taskq_get_text(i, 1, NULL));
		taskq_metric_count_result(i, 1, TASKQ_M_EXPIRED);
	}
	if (handled > 0 && taskq_policy_attempts_possible())
	{
		int			n = handled;
		char	  **ids = palloc(sizeof(char *) * n);
		char	  **actions = palloc(sizeof(char *) * n);

		for (int i = 0; i < n; i++)
		{
			actions[i] = taskq_get_text(i, 1, NULL);
			ids[i] = taskq_get_text(i, 2, NULL);
		}
		/* their attempts ended expired (a late owner's return may still end them) */
		for (int i = 0; i < n; i++)
			taskq_attempt_end(ids[i], actions[i], "expired", NULL, NULL, false);
	}

	/* the workflow layer's locks come before the rows (queue.h) */
	if (taskq_expiring_hook != NULL)
	{
		taskq_execute(&expired_exhausted_keyed_plan, NULL, NULL, false, 0);
		if (SPI_processed > 0)
		{
			int			n = (int) SPI_processed;
			char	  **ids = palloc(sizeof(char *) * n);

			for (int i = 0; i < n; i++)
				ids[i] = taskq_get_text(i, 1, NULL);
			taskq_expiring_hook(ids, n);
		}
	}
	taskq_execute(&expired_exhausted_plan, NULL, NULL, false, 0);
	if (SPI_processed > 0)
	{
		uint64		n = SPI_processed;
		char	  **ids = palloc(sizeof(char *) * n);
		char	  **why = palloc(sizeof(char *) * n);
		char	  **actions = palloc(sizeof(char *) * n);

		for (uint64 i = 0; i < n; i++)
		{
			ids[i] = taskq_get_text(i, 1, NULL);
			taskq_metric_count_result(i, 4, TASKQ_M_EXPIRED);
			why[i] = taskq_get_bool(i, 3, NULL) ? "cancelled" :
				psprintf("aborted: lease expired on the last of %d tries",
						 taskq_get_int32(i, 2, NULL));
		}
		for (uint64 i = 0; i < n; i++)
			actions[i] = taskq_get_text(i, 4, NULL);
		for (uint64 i = 0; i < n; i++)
		{
			/* a task cancelled while owned ends because it was cancelled */
			taskq_attempt_end(ids[i], actions[i],
							  strcmp(why[i], "cancelled") == 0 ? "cancelled" : "expired",
							  NULL, NULL, false);
			taskq_abort_task(ids[i], why[i]);
		}
		handled += n;
	}
	return handled;
}
