/*-------------------------------------------------------------------------
 *
 * claim_walk.c
 *	  The claim without the executor: a ready index walked from the shared
 *	  claim start, each ready row updated without waiting.
 *
 * The SQL claim was UPDATE ... WHERE ctid = ANY (SELECT ... FOR UPDATE SKIP
 * LOCKED).  For every task it wrote a tuple lock and then the update: two
 * WAL records and two changes to the same heap page.  Here the update itself
 * is attempted without waiting (table_tuple_update with wait = false): a row
 * another transaction holds comes back as "being modified" and is skipped,
 * exactly what SKIP LOCKED does, and a row we get is updated in one step.
 * A row updated and committed by someone else after our snapshot is skipped
 * too (the SQL claim would follow the update chain; under REPEATABLE READ
 * it would fail with 40001 instead).  Each invisible entry is checked for
 * being dead while the claim start may move (claim_start.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_enum.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "common/int.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "rewrite/rewriteHandler.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "common/settings.h"
#include "ipc/wakeup.h"
#include "queue/claim_start.h"
#include "queue/relation.h"
#include "queue/queue.h"

/* ----------
 * The claim
 * ----------
 */
static const char *const claim_changes[] = {
	"status_code", "num_tries", "actor_id", "action_deadline", "performance_token"
};

/* The ready row as the partial index promises it, and of an action asked for. */
static bool
claimable(TaskqRel *d, bool one_action, List *actions, TimestampTz now)
{
	bool		isnull;
	Datum		status_code = taskq_rel_old(d, d->ready->status_code, &isnull);

	if (isnull || DatumGetObjectId(status_code) != d->ready->pending ||
		DatumGetInt32(taskq_rel_old(d, d->ready->num_signals, &isnull)) != 0 ||
		DatumGetTimestampTz(taskq_rel_old(d, d->col->not_before, &isnull)) > now)
		return false;
	return one_action || actions == NIL ||
		taskq_action_listed(actions, taskq_rel_old(d, d->ready->action, &isnull));
}

/* What one claim is doing: its arguments, its output and its walk. */
typedef struct ClaimWalk
{
	TaskqRel  *d;
	int			limit;
	bool		one_action;
	List	   *actions;
	TimestampTz now;
	Datum		actor;
	Datum		deadline;
	bool		has_deadline;
	Tuplestorestate *out;
	TupleDesc	outdesc;
	int			claimed;
	/* moving the start of later claims (queue/claim_start.c) */
	AttrNumber	nb_key;			/* not_before's index column; priority and seq before it */
	bool		advancing;		/* every entry walked so far was dead */
	bool		passed;			/* ... and there was at least one */
	bool		stopped;		/* advancing ended at an entry not known dead */
	TaskqReadyKey last;			/* the last dead entry passed, or the stop */
	/* ... and once this claim commits (taskq_claim_start_defer) */
	bool		covering;		/* every entry walked was dead or claimed here */
	bool		covered;		/* ... and the walk went past the stop */
	TaskqReadyKey cover_to;		/* the entry after the last one */
	TupleTableSlot *dirtyslot;
	IndexFetchTableData *dirtyfetch;
} ClaimWalk;

/* The index entry's position (priority, seq). */
static TaskqReadyKey
entry_key(ClaimWalk *w, IndexScanDesc scan)
{
	TaskqReadyKey k;
	bool		isnull;

	k.priority = DatumGetInt32(index_getattr(scan->xs_itup, w->nb_key - 2,
											 scan->xs_itupdesc, &isnull));
	k.seq = DatumGetInt64(index_getattr(scan->xs_itup, w->nb_key - 1,
										scan->xs_itupdesc, &isnull));
	return k;
}

/*
 * The entry at tid, invisible to the claim's snapshot: is its row version
 * dead for good?  Yes if the index scan found it dead to everyone (it will
 * mark the entry killed), or if no version in its HOT chain is visible to a
 * dirty snapshot: updated or deleted by a committed transaction, or
 * inserted by an aborted one.  An insert in progress or committed after
 * the snapshot is live, and so is a version whose updater is in progress.
 */
static bool
entry_dead(ClaimWalk *w, IndexScanDesc scan, ItemPointer tid)
{
	SnapshotData dirty;
	bool		call_again = false;
	bool		all_dead = false;
	bool		found;

	if (scan->kill_prior_tuple)
		return true;
	InitDirtySnapshot(dirty);
	if (w->dirtyfetch == NULL)
	{
		w->dirtyfetch = table_index_fetch_begin(w->d->rel);
		w->dirtyslot = table_slot_create(w->d->rel, NULL);
	}
	found = table_index_fetch_tuple(w->dirtyfetch, tid, &dirty, w->dirtyslot,
									&call_again, &all_dead);
	table_index_fetch_reset(w->dirtyfetch);
	return !found;
}

/*
 * The visible row in d->oldslot is being modified: is it only this
 * transaction that holds it?  Then SKIP LOCKED would take it, and an update
 * that waits does not wait for us.  A row locked FOR UPDATE earlier in the
 * transaction has our xid as its xmax; one locked by it from two
 * subtransactions (savepoints, PL/pgSQL exception blocks: the signals of
 * two returns to one join) has a MultiXact, which only a lock that skips
 * can sort out: it succeeds if every other member is gone.
 */
static bool
held_by_us(TaskqRel *d, TM_FailureData *tmfd)
{
	HeapTuple	tuple;
	TM_FailureData lockfd;

	if (TransactionIdIsCurrentTransactionId(tmfd->xmax))
		return true;
	tuple = ExecFetchSlotHeapTuple(d->oldslot, false, NULL);
	if (!(tuple->t_data->t_infomask & HEAP_XMAX_IS_MULTI))
		return false;			/* another claimer has it */
	return table_tuple_lock(d->rel, &d->oldslot->tts_tid, d->snapshot, d->oldslot,
							d->cid, LockTupleNoKeyExclusive, LockWaitSkip, 0,
							&lockfd) == TM_Ok;
}

/*
 * Is the visible row in d->oldslot being updated or locked by another
 * transaction that is still running?  Then the update would only find that
 * out, after forming the new version, taking the page's exclusive lock and
 * comparing the indexed columns of both versions; with many claimers that
 * is most of the rows a claim walks over (each other's).  The header is
 * read without the page lock, as a hint: a holder that ends just after the
 * look is a race the update's own check has too, and a MultiXact (which
 * may be only ours, see held_by_us) is left to the update.
 */
static bool
held_by_another(TaskqRel *d)
{
	HeapTupleHeader h = ExecFetchSlotHeapTuple(d->oldslot, false, NULL)->t_data;
	uint16		infomask = h->t_infomask;
	TransactionId xmax;

	if (infomask & (HEAP_XMAX_INVALID | HEAP_XMAX_COMMITTED | HEAP_XMAX_IS_MULTI))
		return false;
	xmax = HeapTupleHeaderGetRawXmax(h);
	return TransactionIdIsNormal(xmax) &&
		!TransactionIdIsCurrentTransactionId(xmax) &&
		TransactionIdIsInProgress(xmax);
}
/* Claim the visible row in d->oldslot if it is ready and nobody holds it. */
static void
claim_row(ClaimWalk *w)
{
	TaskqRel  *d = w->d;
	pg_uuid_t  *token;
	int32		tries;
	bool		isnull;
	TM_FailureData tmfd;
	TM_Result	result;
	Datum		row[6];
	bool		rownulls[6];

	if (held_by_another(d))
		return;					/* another claimer has it */
	taskq_rel_new_row(d);
	if (!claimable(d, w->one_action, w->actions, w->now))
		return;
	if (pg_add_s32_overflow(DatumGetInt32(taskq_rel_old(d, d->col->num_tries, &isnull)),
							1, &tries))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("task \"%s\" cannot be owned again: its number of tries is at the maximum",
						TextDatumGetCString(taskq_rel_old(d, d->col->id, &isnull)))));
	token = palloc(sizeof(pg_uuid_t));
	taskq_new_token(token);
	/* claimable() found it pending */
	(void) taskq_status_transition(TASKQ_PENDING, TASKQ_CLAIM, "(claimed)");
	taskq_rel_set(d, d->ready->status_code, ObjectIdGetDatum(d->shape->in_progress), false);
	taskq_rel_set(d, d->col->num_tries, Int32GetDatum(tries), false);
	taskq_rel_set(d, d->col->actor_id, w->actor, false);
	taskq_rel_set(d, d->col->performance_token, UUIDPGetDatum(token), false);
	taskq_rel_set(d, d->col->action_deadline, w->deadline, !w->has_deadline);

	result = taskq_rel_update(d, &d->oldslot->tts_tid, false, &tmfd);
	if (result == TM_BeingModified && held_by_us(d, &tmfd))
		result = taskq_rel_update(d, &d->oldslot->tts_tid, true, &tmfd);
	if (result != TM_Ok)
		return;					/* another claimer has it, or had it */
	taskq_claim_start_ready_changed();

	row[0] = taskq_rel_old(d, d->col->id, &rownulls[0]);
	taskq_remember_claimed(d, row[0], &d->newslot->tts_tid);
	row[1] = UUIDPGetDatum(token);
	rownulls[1] = false;
	row[2] = taskq_rel_old(d, d->ready->action, &rownulls[2]);
	row[3] = taskq_rel_old(d, d->col->body, &rownulls[3]);
	row[4] = Int32GetDatum(tries);
	rownulls[4] = false;
	row[5] = w->deadline;
	rownulls[5] = !w->has_deadline;
	tuplestore_putvalues(w->out, w->outdesc, row, rownulls);
	w->claimed++;
}

/*
 * A walk that began at the start may leave its commit a further move of it
 * (taskq_claim_start_defer): over entries that are dead, and rows it claimed,
 * which are dead for good once it commits.  The first entry that is
 * neither ends that; entries before the first live one are the advance's.
 */
static void
extend_cover(ClaimWalk *w, IndexScanDesc scan)
{
	if (!w->covering || w->advancing)
		return;
	w->cover_to = entry_key(w, scan);
	if (w->cover_to.seq == PG_INT64_MAX)
		w->covering = false;	/* no key just after it in this priority */
	else
	{
		w->cover_to.seq++;
		w->covered = true;
	}
}

static void
end_cover(ClaimWalk *w, IndexScanDesc scan)
{
	if (!w->covering)
		return;
	w->covering = false;
	if (w->covered)
		w->cover_to = entry_key(w, scan);
}

/*
 * Walk idx with the given scan keys, claiming until the limit.  While the
 * walk is advancing, each entry invisible to the snapshot is checked for
 * being dead, and the first that is not (or the first visible entry) ends
 * the advance; after that, invisible entries are skipped as index_getnext_slot
 * skips them, and delayed ones without a heap visit.
 */
static void
claim_walk(ClaimWalk *w, Relation idx, ScanKey keys, int nkeys)
{
	TaskqRel  *d = w->d;
	IndexScanDesc scan;
	ItemPointer tid;

	scan = index_beginscan(d->rel, idx, d->snapshot, nkeys, 0);
	scan->xs_want_itup = true;	/* the keys and not_before, without the heap */
	index_rescan(scan, keys, nkeys, NULL, 0);
	while (w->claimed < w->limit &&
		   (tid = index_getnext_tid(scan, ForwardScanDirection)) != NULL)
	{
		bool		isnull;
		bool		delayed;

		CHECK_FOR_INTERRUPTS();
		delayed = DatumGetTimestampTz(index_getattr(scan->xs_itup, w->nb_key,
													scan->xs_itupdesc, &isnull)) > w->now;
		if (delayed && !w->advancing)
		{
			end_cover(w, scan);
			continue;
		}
		if (!index_fetch_heap(scan, d->oldslot))
		{
			if (w->advancing)
			{
				w->last = entry_key(w, scan);
				if (entry_dead(w, scan, tid))
					w->passed = true;
				else
				{
					w->advancing = false;
					w->stopped = true;
					w->covering = false;
				}
			}
			else if (w->covering)
			{
				if (entry_dead(w, scan, tid))
					extend_cover(w, scan);
				else
					end_cover(w, scan);
			}
			continue;
		}
		if (w->advancing)
		{
			w->last = entry_key(w, scan);
			w->advancing = false;
			w->stopped = true;
		}
		if (!delayed)
		{
			int			before = w->claimed;

			claim_row(w);
			if (w->claimed > before)
			{
				extend_cover(w, scan);
				continue;
			}
		}
		end_cover(w, scan);
	}
	index_endscan(scan);
}

/*
 * Claim up to limit ready tasks for actor, of one action (one_action), of
 * the listed actions, or of any (actions NIL and !one_action), with a lease
 * of duration (NULL: none).  Rows go to out in claim order (priority
 * descending, then insertion order): id, token, action, body, num_tries,
 * action_deadline.  now is the claim's moment (what is delayed past it is
 * not ready; the lease runs from it).  Returns the number claimed, or -1 if
 * this path does not apply and the caller must use the SQL claim.
 *
 * The walk starts where the claims of this database start (queue/claim_start.c), in two
 * index scans: the rest of the start's priority from its seq on, then the
 * lower priorities.
 */
int
taskq_claim_direct(const char *actor, int limit, bool one_action, List *actions,
				   Interval *duration, bool writes_noted, TimestampTz now,
				   Tuplestorestate *out, TupleDesc outdesc)
{
	TaskqRel	d;
	Relation	idx;
	ClaimWalk	w;
	TaskqClaimStartScan hs;
	ScanKeyData keys[3];
	int			nkeys = 0;
	AttrNumber	prio_col;

	if (!taskq_rel_open(&d, "own_tasks()", claim_changes, lengthof(claim_changes)))
		return -1;
	/* (action, priority DESC, seq, not_before) or (priority DESC, seq, not_before) */
	idx = taskq_rel_index(&d, one_action ? "tasks_ready_action_idx" : "tasks_ready_idx",
					 one_action ? 4 : 3, NULL);
	if (idx == NULL)
	{
		taskq_rel_close(&d);
		return -1;
	}

	memset(&w, 0, sizeof(w));
	w.d = &d;
	w.limit = limit;
	w.one_action = one_action;
	w.actions = actions;
	w.now = now;
	w.actor = CStringGetTextDatum(actor);
	w.has_deadline = duration != NULL;
	if (duration != NULL)
		w.deadline = DirectFunctionCall2(timestamptz_pl_interval,
										 TimestampTzGetDatum(w.now),
										 IntervalPGetDatum(duration));
	w.out = out;
	w.outdesc = outdesc;
	w.nb_key = one_action ? 4 : 3;
	prio_col = w.nb_key - 2;

	hs.slot = -1;
	hs.valid = false;
	if (d.shape->starts_ok && taskq_shared_claim_start)
		taskq_claim_start_begin(one_action ? linitial(actions) : NULL, &hs);
	w.advancing = hs.slot >= 0 && taskq_claim_start_may_move(writes_noted);
	w.covering = w.advancing;

	if (one_action)
		ScanKeyInit(&keys[nkeys++], 1, BTEqualStrategyNumber, F_TEXTEQ,
					CStringGetTextDatum(linitial(actions)));
	if (!hs.valid)
		claim_walk(&w, idx, keys, nkeys);
	else
	{
		ScanKeyInit(&keys[nkeys], prio_col, BTEqualStrategyNumber, F_INT4EQ,
					Int32GetDatum(hs.start.priority));
		ScanKeyInit(&keys[nkeys + 1], prio_col + 1, BTGreaterEqualStrategyNumber,
					F_INT8GE, Int64GetDatum(hs.start.seq));
		claim_walk(&w, idx, keys, nkeys + 2);
		if (w.claimed < limit)
		{
			/* priority DESC: the lower priorities come after in the index */
			ScanKeyInit(&keys[nkeys], prio_col, BTLessStrategyNumber, F_INT4LT,
						Int32GetDatum(hs.start.priority));
			claim_walk(&w, idx, keys, nkeys + 1);
		}
	}

	if (w.stopped || w.passed)
	{
		/* to the entry that ended the walk, or just past the last dead one */
		if (!w.stopped && w.last.seq < PG_INT64_MAX)
			w.last.seq++;
		if (w.stopped || w.last.seq != PG_INT64_MAX)
			taskq_claim_start_advance(&hs, w.last);
	}
	if (w.covered)
		taskq_claim_start_defer(&hs, w.cover_to);
	if (w.dirtyfetch != NULL)
	{
		table_index_fetch_end(w.dirtyfetch);
		ExecDropSingleTupleTableSlot(w.dirtyslot);
	}
	taskq_rel_close(&d);
	return w.claimed;
}
