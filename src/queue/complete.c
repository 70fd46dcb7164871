/*-------------------------------------------------------------------------
 *
 * complete.c
 *	  The completion of held tasks: each row found where this backend's claim
 *	  wrote it or by its primary key, its token checked, the row updated (or
 *	  deleted with taskq.retention = 0); and the same as one SQL statement, the
 *	  fallback when the direct path does not apply.  A result given with the
 *	  return is written in the same row version (taskq.tasks.result).
 *
 * The completion does what UPDATE ... FROM unnest(ids, tokens) did, row by
 * row in id order (the lock order of batch returns): it waits for a row
 * another transaction holds, and if that transaction updated it, it locks
 * the newest version and checks that one again, as READ COMMITTED's
 * EvalPlanQual does (under REPEATABLE READ it fails with 40001, as the
 * UPDATE did).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/timestamp.h"

#include "common/pg_compat.h"
#include "common/plan.h"
#include "common/settings.h"
#include "ipc/metrics.h"
#include "queue/claim_start.h"
#include "queue/queue_internal.h"
#include "queue/tasks_rel.h"

/*
 * Complete the tasks still held with these tokens, in the order of the
 * arrays (sorted by id, so rows are locked in id order by the nested loop
 * over them): the fallback of complete.c's direct completion.
 */
#define COMPLETE_HELD_BATCH_SQL(returning) \
	"UPDATE taskq.tasks AS t" \
	"   SET status_code = 'completed', status = COALESCE(r.status, t.status)," \
	"       finished_at = pg_catalog.now(), action_deadline = NULL," \
	"       result = COALESCE(r.result, t.result)" \
	"  FROM ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::uuid[])," \
	"                  pg_catalog.unnest($3::text[]), pg_catalog.unnest($4::jsonb[]))" \
	"       AS r(id, token, status, result)" \
	" WHERE t.id OPERATOR(pg_catalog.=) r.id" \
	"   AND t.performance_token OPERATOR(pg_catalog.=) r.token" \
	"   AND t.status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status" \
	"   AND NOT t.cancelled" \
	" RETURNING t.id, t.to_signal_after, t.action" returning

static TaskqPlan complete_held_batch_plan = {
	COMPLETE_HELD_BATCH_SQL(""),
	4, {TEXTARRAYOID, UUIDARRAYOID, TEXTARRAYOID, JSONBARRAYOID}
};

/* The same with the claim time of each task (0.6), for the metrics. */
static TaskqPlan complete_held_batch_timed_plan = {
	COMPLETE_HELD_BATCH_SQL(", t.claimed_at"),
	4, {TEXTARRAYOID, UUIDARRAYOID, TEXTARRAYOID, JSONBARRAYOID}
};

/*
 * With taskq.retention = 0: delete the held tasks that nobody keeps (see
 * delete_on_completion), before complete_held_batch_plan
 * completes the others.
 */
#define DELETE_HELD_BATCH_SQL(returning) \
	"DELETE FROM taskq.tasks AS t" \
	"  USING ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::uuid[])," \
	"                   pg_catalog.unnest($4::jsonb[])) AS r(id, token, result)" \
	" WHERE t.id OPERATOR(pg_catalog.=) r.id" \
	"   AND t.performance_token OPERATOR(pg_catalog.=) r.token" \
	"   AND t.status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status" \
	"   AND NOT t.cancelled AND NOT t.post_result AND t.workflow IS NULL" \
	"   AND (COALESCE(r.result, t.result) IS NULL OR t.to_signal_after IS NULL)" \
	" RETURNING t.id, t.to_signal_after, t.action" returning

static TaskqPlan delete_held_batch_plan = {
	DELETE_HELD_BATCH_SQL(""),
	4, {TEXTARRAYOID, UUIDARRAYOID, TEXTARRAYOID, JSONBARRAYOID}
};

static TaskqPlan delete_held_batch_timed_plan = {
	DELETE_HELD_BATCH_SQL(", t.claimed_at"),
	4, {TEXTARRAYOID, UUIDARRAYOID, TEXTARRAYOID, JSONBARRAYOID}
};

/*
 * Legacy statements, the same for an extension not updated to 0.5 yet: no
 * results (queue.h: taskq_schema_at_least_0_5).  They go when updates from
 * 0.4 are no longer supported.
 */
static TaskqPlan complete_held_batch_plain_plan = {
	"UPDATE taskq.tasks AS t"
	"   SET status_code = 'completed', status = COALESCE(r.status, t.status),"
	"       finished_at = pg_catalog.now(), action_deadline = NULL"
	"  FROM ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::uuid[]),"
	"                  pg_catalog.unnest($3::text[])) AS r(id, token, status)"
	" WHERE t.id OPERATOR(pg_catalog.=) r.id"
	"   AND t.performance_token OPERATOR(pg_catalog.=) r.token"
	"   AND t.status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status"
	"   AND NOT t.cancelled"
	" RETURNING t.id, t.to_signal_after, t.action",
	3, {TEXTARRAYOID, UUIDARRAYOID, TEXTARRAYOID}
};

static TaskqPlan delete_held_batch_plain_plan = {
	"DELETE FROM taskq.tasks AS t"
	"  USING ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::uuid[])) AS r(id, token)"
	" WHERE t.id OPERATOR(pg_catalog.=) r.id"
	"   AND t.performance_token OPERATOR(pg_catalog.=) r.token"
	"   AND t.status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status"
	"   AND NOT t.cancelled AND NOT t.post_result AND t.workflow IS NULL"
	" RETURNING t.id, t.to_signal_after, t.action",
	2, {TEXTARRAYOID, UUIDARRAYOID}
};

/* ----------
 * The completion
 * ----------
 */
static const char *const complete_changes[] = {
	"status_code", "status", "finished_at", "action_deadline", "result"
};

/* Still held with this token: unfinished, not cancelled. */
static bool
held_with(TaskqRel *d, pg_uuid_t *token)
{
	bool		isnull;
	Datum		v;

	slot_getallattrs(d->oldslot);
	v = taskq_rel_old(d, d->col->performance_token, &isnull);
	if (isnull || memcmp(DatumGetUUIDP(v), token, UUID_LEN) != 0)
		return false;
	v = taskq_rel_old(d, d->ready->status_code, &isnull);
	if (isnull || (DatumGetObjectId(v) != d->ready->pending && DatumGetObjectId(v) != d->shape->in_progress))
		return false;
	return !DatumGetBool(taskq_rel_old(d, d->col->cancelled, &isnull));
}

/*
 * With taskq.retention = 0 nobody keeps a completed task, unless a caller
 * means to wait for its result (post_result), its workflow's job counts
 * it, or it has a result (given now or before) that its successors may
 * read: its completion deletes it instead of writing a finished version.
 */
static bool
delete_on_completion(TaskqRel *d, Jsonb *result)
{
	bool		isnull;

	if (taskq_retention != 0 || DatumGetBool(taskq_rel_old(d, d->col->post_result, &isnull)))
		return false;
	(void) taskq_rel_old(d, d->col->to_signal_after, &isnull);
	if (!isnull && d->col->result != InvalidAttrNumber)
	{
		bool		no_result;

		(void) taskq_rel_old(d, d->col->result, &no_result);
		if (result != NULL || !no_result)
			return false;
	}
	(void) taskq_rel_old(d, d->col->workflow, &isnull);
	return isnull;
}

/*
 * The completion of the row in d.oldslot, for the metrics: its action, and
 * its run from its claim (ipc/metrics.c).
 */
static void
note_completed_metrics(TaskqRel *d, TimestampTz now)
{
	bool		isnull;
	text	   *action;
	Datum		claimed;

	if (!taskq_metrics_available())
		return;
	action = DatumGetTextPP(taskq_rel_old(d, d->ready->action, &isnull));
	taskq_metric_count(VARDATA_ANY(action), VARSIZE_ANY_EXHDR(action), TASKQ_M_COMPLETED, 1);
	if (d->col->claimed_at == InvalidAttrNumber)
		return;
	claimed = taskq_rel_old(d, d->col->claimed_at, &isnull);
	if (!isnull)
		taskq_metric_observe(VARDATA_ANY(action), VARSIZE_ANY_EXHDR(action),
							 TASKQ_H_RUN, DatumGetTimestampTz(claimed), now);
}

/*
 * For caller (the SQL function, named in errors): complete the n tasks
 * (sorted by id, without repeats, none done yet) that are still held with
 * their tokens: status_code completed, status set where given (NULL:
 * kept), finished_at now, no deadline, the result where given; or
 * deleted, if nobody keeps it (delete_on_completion).  A task completed
 * gets item->done and its successors then (succs, a List of C strings).
 * Returns how many were completed, or -1 if this path does not apply and
 * the caller must use the SQL statement.
 */
int
taskq_complete_direct(const char *caller, TaskqCompletion *tasks, int n)
{
	TaskqRel	d;
	Relation	pkey;
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	int			ndone = 0;
	BlockNumber nblocks = InvalidBlockNumber;
	bool		limits = taskq_flow_maybe_limited();

	/* the action's name is copied only for those who read it */
	bool		named = limits || taskq_policy_attempts_possible();

	if (!taskq_rel_open(&d, caller, complete_changes, lengthof(complete_changes)))
		return -1;
	pkey = taskq_rel_index(&d, "tasks_pkey", 1, NULL);
	if (pkey == NULL)
	{
		taskq_rel_close(&d);
		return -1;
	}

	for (int i = 0; i < n; i++)
	{
		ScanKeyData key;
		IndexScanDesc scan;
		bool		found;
		bool		isnull;
		TM_FailureData tmfd;
		TM_Result	result;
		ItemPointerData tid;
		TaskqReturnItem *item = tasks[i].item;

		CHECK_FOR_INTERRUPTS();
		Assert(!item->done);
		tasks[i].succs = NIL;
		tasks[i].deleted = false;
		found = taskq_fetch_claimed(&d, item->id, &nblocks);
		if (!found)
		{
			ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(item->id));
			scan = taskq_index_beginscan(d.rel, pkey, d.snapshot, 1, 0);
			index_rescan(scan, &key, 1, NULL, 0);
			found = index_getnext_slot(scan, ForwardScanDirection, d.oldslot);
			index_endscan(scan);
		}

		for (;;)
		{
			if (!found || !held_with(&d, item->token))
				break;
			tid = d.oldslot->tts_tid;
			tasks[i].deleted = delete_on_completion(&d, item->result);
			if (tasks[i].deleted)
				result = table_tuple_delete(d.rel, &tid, d.cid, d.snapshot,
											InvalidSnapshot, true, &tmfd, false);
			else
			{
				taskq_rel_new_row(&d);
				/* held_with() found it pending or in progress */
				(void) taskq_status_transition(TASKQ_IN_PROGRESS, TASKQ_COMPLETE, item->id);
				taskq_rel_set(&d, d.ready->status_code, ObjectIdGetDatum(d.shape->completed), false);
				if (item->status != NULL)
					taskq_rel_set(&d, d.col->status, CStringGetTextDatum(item->status), false);
				taskq_rel_set(&d, d.col->finished_at, TimestampTzGetDatum(now), false);
				taskq_rel_set(&d, d.col->action_deadline, (Datum) 0, true);
				if (item->result != NULL && d.col->result != InvalidAttrNumber)
					taskq_rel_set(&d, d.col->result, JsonbPGetDatum(item->result), false);
				result = taskq_rel_update(&d, &tid, true, &tmfd);
			}
			if (result == TM_Ok)
			{
				Datum		s = taskq_rel_old(&d, d.col->to_signal_after, &isnull);
				bool		status_null;

				/* a pending task held since a lease expiry: its ready version is gone */
				if (DatumGetObjectId(taskq_rel_old(&d, d.ready->status_code, &status_null)) == d.ready->pending)
					taskq_claim_start_ready_changed();

				item->done = true;
				tasks[i].succs = isnull ? NIL : taskq_text_array_list(s);
				if (named)
					tasks[i].action = TextDatumGetCString(taskq_rel_old(&d, d.ready->action,
																		&status_null));
				note_completed_metrics(&d, now);
				ndone++;
				break;
			}
			if (result != TM_Updated)
				break;			/* deleted meanwhile: not held */
			if (IsolationUsesXactSnapshot())
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("could not serialize access due to concurrent update")));
			/* READ COMMITTED: lock the newest version and look at it again */
			result = table_tuple_lock(d.rel, &tid, d.snapshot, d.oldslot, d.cid,
									  LockTupleExclusive, LockWaitBlock,
									  TUPLE_LOCK_FLAG_FIND_LAST_VERSION, &tmfd);
			found = result == TM_Ok;
		}
	}
	taskq_rel_close(&d);
	if (limits)
		for (int i = 0; i < n; i++)
			if (tasks[i].item->done)
				taskq_flow_freed(tasks[i].action, tasks[i].item->id, false);	/* slots let go (flow_limits.c) */
	return ndone;
}
/*
 * The rows (id, to_signal_after, action[, claimed_at: timed]) the last
 * statement finished (deleted: it deleted them): done, succs, action;
 * counted in the metrics, with the run time when timed; the slots they
 * held let go (flow_limits.c).
 */
static void
note_held_done(TaskqCompletion *tasks, int n, bool deleted, bool timed, bool limits)
{
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	bool		counted = taskq_metrics_available();
	List	   *freed = NIL;	/* id, action of each */

	for (uint64 r = 0; r < SPI_processed; r++)
	{
		char	   *id = taskq_get_text(r, 1, NULL);

		if (counted)
		{
			bool		isnull = true;
			char	   *action = taskq_get_text(r, 3, NULL);
			Datum		claimed = timed ? taskq_get_datum(r, 4, &isnull) : (Datum) 0;

			taskq_metric_count(action, -1, TASKQ_M_COMPLETED, 1);
			if (!isnull)
				taskq_metric_observe(action, -1, TASKQ_H_RUN,
									 DatumGetTimestampTz(claimed), now);
		}
		if (limits)
			freed = lappend(lappend(freed, id), taskq_get_text(r, 3, NULL));

		for (int i = 0; i < n; i++)
			if (!tasks[i].item->done && strcmp(tasks[i].item->id, id) == 0)
			{
				tasks[i].item->done = true;
				tasks[i].succs = taskq_get_text_array(r, 2);
				tasks[i].action = taskq_get_text(r, 3, NULL);
				tasks[i].deleted = deleted;
				break;
			}
	}
	for (int i = 0; i < list_length(freed); i += 2)
		taskq_flow_freed(list_nth(freed, i + 1), list_nth(freed, i), false);
}

/*
 * What taskq_complete_direct does, as one UPDATE (and with retention 0 a
 * DELETE before it): for the SQL fallback.
 */
void
taskq_complete_sql(TaskqCompletion *tasks, int n)
{
	Datum	   *tokdatums = palloc(sizeof(Datum) * n);
	Datum	   *stdatums = palloc(sizeof(Datum) * n);
	bool	   *snulls = palloc(sizeof(bool) * n);
	Datum	   *resdatums = palloc(sizeof(Datum) * n);
	bool	   *rnulls = palloc(sizeof(bool) * n);
	List	   *idlist = NIL;
	int			dims[1] = {n};
	int			lbs[1] = {1};
	Datum		values[4];
	bool		has_results = taskq_schema_at_least_0_5();	/* the column result exists */
	bool		timed = has_results && taskq_metrics_available() &&
		taskq_claimed_at_installed();
	bool		limits = taskq_flow_maybe_limited();	/* before any statement's rows are read */

	for (int i = 0; i < n; i++)
	{
		TaskqReturnItem *item = tasks[i].item;

		Assert(!item->done);
		idlist = lappend(idlist, item->id);
		tokdatums[i] = UUIDPGetDatum(item->token);
		snulls[i] = item->status == NULL;
		stdatums[i] = snulls[i] ? (Datum) 0 : CStringGetTextDatum(item->status);
		rnulls[i] = item->result == NULL;
		resdatums[i] = rnulls[i] ? (Datum) 0 : JsonbPGetDatum(item->result);
		tasks[i].succs = NIL;
		tasks[i].deleted = false;
	}
	values[0] = taskq_text_array_datum(idlist);
	values[1] = PointerGetDatum(construct_array(tokdatums, n, UUIDOID, UUID_LEN,
												false, TYPALIGN_CHAR));
	values[2] = PointerGetDatum(construct_md_array(stdatums, snulls, 1, dims, lbs,
												   TEXTOID, -1, false, TYPALIGN_INT));
	values[3] = PointerGetDatum(construct_md_array(resdatums, rnulls, 1, dims, lbs,
												   JSONBOID, -1, false, TYPALIGN_INT));
	if (taskq_retention == 0)
	{
		taskq_execute(timed ? &delete_held_batch_timed_plan :
					  has_results ? &delete_held_batch_plan : &delete_held_batch_plain_plan,
					  values, NULL, false, 0);
		note_held_done(tasks, n, true, timed, limits);
	}
	taskq_execute(timed ? &complete_held_batch_timed_plan :
				  has_results ? &complete_held_batch_plan : &complete_held_batch_plain_plan,
				  values, NULL, false, 0);
	note_held_done(tasks, n, false, timed, limits);
}
