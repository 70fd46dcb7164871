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
 * Whether anything expired at all is asked of the lease index directly
 * (leases_expired), without SQL: every claim asks first, and as a cached
 * plan run through SPI, the executor's start and end around that one
 * descent of the index were about 5 % of the CPU of a one-task claim and
 * its return (2 % read directly).  It takes only the table's and the
 * index's AccessShareLock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "common/pg_compat.h"
#include "common/plan.h"
#include "ipc/metrics.h"
#include "ipc/wakeup.h"
#include "queue/queue_internal.h"
#include "queue/tasks_rel.h"


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
 * Has a lease expired, as expired_probe_plan asks: a row of taskq.tasks in
 * progress whose action_deadline is not after the transaction's start
 * (now()), visible to the statement's snapshot.  Read from the head of
 * tasks_lease_idx (its first key action_deadline), each entry's row
 * checked itself, so the answer does not rest on the index's predicate.
 * -1 where the table or the index is not as the install script made them:
 * the caller asks SQL.
 */
static int
leases_expired(void)
{
	Oid			relid = taskq_tasks_relid();
	Relation	rel;
	Relation	idx = NULL;
	TaskqRelShape *s;
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	int			found = -1;
	int			i;

	if (!OidIsValid(relid))
		return -1;
	rel = table_open(relid, AccessShareLock);
	s = taskq_rel_shape(rel);
	if (s->applies && (i = taskq_rel_shape_find(s, "tasks_lease_idx")) >= 0)
		idx = index_open(s->index_oids[i], AccessShareLock);
	if (idx != NULL && idx->rd_rel->relam == BTREE_AM_OID &&
		idx->rd_index->indkey.values[0] == s->col.action_deadline)
	{
		Snapshot	snap = ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();
		TupleTableSlot *slot = table_slot_create(rel, NULL);
		IndexScanDesc scan = taskq_index_beginscan(rel, idx, snap, 1, 0);
		ScanKeyData key;

		ScanKeyInit(&key, 1, BTLessEqualStrategyNumber, F_TIMESTAMPTZ_LE,
					TimestampTzGetDatum(now));
		index_rescan(scan, &key, 1, NULL, 0);
		found = 0;
		while (found == 0 && index_getnext_slot(scan, ForwardScanDirection, slot))
		{
			bool		n1,
						n2;
			Datum		status = slot_getattr(slot, s->ready.status_code, &n1);
			Datum		deadline = slot_getattr(slot, s->col.action_deadline, &n2);

			if (!n1 && !n2 && DatumGetObjectId(status) == s->in_progress &&
				DatumGetTimestampTz(deadline) <= now)
				found = 1;
		}
		index_endscan(scan);
		ExecDropSingleTupleTableSlot(slot);
	}
	if (idx != NULL)
		index_close(idx, AccessShareLock);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * Hand expired leases back: requeue those with tries left, abort (with the
 * cascade) those on their last try.  Cheap when nothing expired: one probe
 * of the head of the lease index.  Returns how many leases it handled.
 */
int
taskq_sweep_expired(void)
{
	int			handled;
	int			expired = leases_expired();

	if (expired == 0)
		return 0;
	if (expired < 0)
	{
		taskq_execute(&expired_probe_plan, NULL, NULL, true, 1);
		if (SPI_processed == 0)
			return 0;
	}

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
