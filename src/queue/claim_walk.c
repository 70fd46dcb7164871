/*-------------------------------------------------------------------------
 *
 * claim_walk.c
 *	  The claim without the executor: each asked action's entries of the
 *	  ready index walked from that action's claim start, the walks merged in
 *	  claim order, each ready row updated without waiting.
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
 * There is one ready index, (action, priority DESC, seq, not_before): a
 * claim of several actions walks each action's part of it and takes the
 * next entry in claim order from whichever walk has it, so it never steps
 * over the ready tasks of actions it did not ask for.  A claim of any
 * action first finds the actions that have entries, one index descent
 * each; it costs a descent per such action more than a claim of one.  A
 * second index over all actions, which that claim used to walk, would cost
 * every enqueue an index entry.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
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
#include "storage/predicate.h"
#include "storage/procarray.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "common/pg_compat.h"
#include "common/settings.h"
#include "ipc/metrics.h"
#include "ipc/wakeup.h"
#include "queue/claim_start.h"
#include "queue/tasks_rel.h"
#include "queue/queue_internal.h"

/* ----------
 * The claim
 * ----------
 */
static const char *const claim_changes[] = {
	"status_code", "num_tries", "actor_id", "action_deadline", "performance_token",
	"claimed_at"				/* none before 0.6: left out of the set */
};

/* The key columns of tasks_ready_action_idx: (action, priority DESC, seq, not_before) */
#define READY_ACTION	1
#define READY_PRIORITY	2
#define READY_SEQ		3
#define READY_NOT_BEFORE 4

/* The ready row as the partial index promises it. */
static bool
claimable(TaskqRel *d, TimestampTz now)
{
	bool		isnull;
	Datum		status_code = taskq_rel_old(d, d->ready->status_code, &isnull);

	return !isnull && DatumGetObjectId(status_code) == d->ready->pending &&
		DatumGetInt32(taskq_rel_old(d, d->ready->num_signals, &isnull)) == 0 &&
		DatumGetTimestampTz(taskq_rel_old(d, d->col->not_before, &isnull)) <= now;
}

/*
 * One action's part of a claim: its entries of the ready index, walked from
 * the action's claim start in two index scans (the rest of the start's
 * priority from its seq on, then the lower priorities; one scan of all its
 * entries if it has no start), and what the walk found for moving that
 * start.  The walk stands at an entry it has read but not yet handled, so
 * that the claim can take the walk whose entry comes first.  Until it is
 * opened, bound is a position no entry of the walk comes before (its start,
 * or the action's first entry): a claim of several actions opens a walk
 * only when no other has an entry before its bound, so that a claim of one
 * task pays for the scans of the actions it may take from, not of all.
 */
typedef struct ClaimStream
{
	const char *action;
	bool		started;		/* its claim start taken */
	bool		opened;
	bool		bounded;		/* bound holds (else the walk is opened at once) */
	TaskqReadyKey bound;
	IndexScanDesc scan;
	bool		lower;			/* in its last scan */
	ItemPointer tid;			/* the entry it stands at; NULL: walked to the end */
	TaskqReadyKey key;			/* ... and its position */
	TaskqClaimStartScan hs;
	/* moving the start of later claims (queue/claim_start.c) */
	bool		advancing;		/* every entry walked so far was dead */
	bool		passed;			/* ... and there was at least one */
	bool		stopped;		/* advancing ended at an entry not known dead */
	TaskqReadyKey last;			/* the last dead entry passed, or the stop */
	/* ... and once this claim commits (taskq_claim_start_defer) */
	bool		covering;		/* every entry walked was dead or claimed here */
	bool		covered;		/* ... and the walk went past the stop */
	TaskqReadyKey cover_to;		/* the entry after the last one */
} ClaimStream;

/* What one claim is doing: its arguments, its output and its walks. */
typedef struct ClaimWalk
{
	TaskqRel  *d;
	Relation	idx;			/* tasks_ready_action_idx */
	int			limit;
	TimestampTz now;
	bool		use_starts;		/* from shared claim starts (claim_start.c) */
	bool		may_move;		/* ... which the walks may move */
	Datum		actor;
	Datum		deadline;
	bool		has_deadline;
	Tuplestorestate *out;
	TupleDesc	outdesc;
	TaskqFlow  *flow;			/* the limiter, if an action is limited */
	int			claimed;
	TupleTableSlot *dirtyslot;
	IndexFetchTableData *dirtyfetch;
} ClaimWalk;

/* The position (priority, seq) of the entry the scan returned last. */
static TaskqReadyKey
entry_key(IndexScanDesc scan)
{
	TaskqReadyKey k;
	bool		isnull;

	k.priority = DatumGetInt32(index_getattr(scan->xs_itup, READY_PRIORITY,
											 scan->xs_itupdesc, &isnull));
	k.seq = DatumGetInt64(index_getattr(scan->xs_itup, READY_SEQ,
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
/*
 * The claim of the row in d->oldslot, for the metrics: its action, and its
 * wait from the moment it was ready (ipc/metrics.c).
 */
static void
note_claim_metrics(ClaimWalk *w, TaskqRel *d)
{
	bool		isnull;
	text	   *action;
	TimestampTz ready;
	Datum		v;

	if (!taskq_metrics_available())
		return;
	action = DatumGetTextPP(taskq_rel_old(d, d->ready->action, &isnull));
	ready = DatumGetTimestampTz(taskq_rel_old(d, d->col->not_before, &isnull));

	if (d->col->created_at != InvalidAttrNumber)
	{
		v = taskq_rel_old(d, d->col->created_at, &isnull);
		if (!isnull)
			ready = Max(ready, DatumGetTimestampTz(v));
	}
	/* a lease that expired: ready again at its deadline */
	v = taskq_rel_old(d, d->col->action_deadline, &isnull);
	if (!isnull)
		ready = Max(ready, DatumGetTimestampTz(v));
	taskq_metric_count(VARDATA_ANY(action), VARSIZE_ANY_EXHDR(action), TASKQ_M_CLAIMED, 1);
	taskq_metric_observe(VARDATA_ANY(action), VARSIZE_ANY_EXHDR(action),
						 TASKQ_H_QUEUE_WAIT, ready, w->now);
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
	Datum		row[7];
	bool		rownulls[7];
	char	   *action = NULL;
	char	   *key = NULL;
	char	   *id = NULL;

	if (held_by_another(d))
		return;					/* another claimer has it */
	taskq_rel_new_row(d);
	if (!claimable(d, w->now))
		return;
	if (w->flow != NULL)
	{
		/* a limited action: its task only if it and its key are under their limits */
		action = TextDatumGetCString(taskq_rel_old(d, d->ready->action, &isnull));
		if (d->col->concurrency_key != InvalidAttrNumber)
		{
			Datum		k = taskq_rel_old(d, d->col->concurrency_key, &isnull);

			key = isnull ? NULL : TextDatumGetCString(k);
		}
		id = TextDatumGetCString(taskq_rel_old(d, d->col->id, &isnull));
		if (!taskq_flow_take(w->flow, action, key, id))
			return;
	}
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
	/* the claim's moment, which the lease runs from (no column before 0.6) */
	if (d->col->claimed_at != InvalidAttrNumber)
		taskq_rel_set(d, d->col->claimed_at, TimestampTzGetDatum(w->now), false);

	result = taskq_rel_update(d, &d->oldslot->tts_tid, false, &tmfd);
	if (result == TM_BeingModified && held_by_us(d, &tmfd))
		result = taskq_rel_update(d, &d->oldslot->tts_tid, true, &tmfd);
	if (result != TM_Ok)
	{
		if (w->flow != NULL)
			taskq_flow_untake(w->flow, action, key, id);
		return;					/* another claimer has it, or had it */
	}
	taskq_claim_start_ready_changed();
	note_claim_metrics(w, d);

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
	/* concurrency_key: a result of 0.6's own_tasks (0.5's has six columns) */
	rownulls[6] = true;
	if (w->outdesc->natts > 6 && d->col->concurrency_key != InvalidAttrNumber)
		row[6] = taskq_rel_old(d, d->col->concurrency_key, &rownulls[6]);
	tuplestore_putvalues(w->out, w->outdesc, row, rownulls);
	taskq_attempts_note_claim(row[0], row[2], tries);	/* attempts.c: if any are kept */
	w->claimed++;
}

/*
 * A walk that began at the start may leave its commit a further move of it
 * (taskq_claim_start_defer): over entries that are dead, and rows it claimed,
 * which are dead for good once it commits.  The first entry that is
 * neither ends that; entries before the first live one are the advance's.
 */
static void
extend_cover(ClaimStream *s)
{
	if (!s->covering || s->advancing)
		return;
	s->cover_to = s->key;
	if (s->cover_to.seq == PG_INT64_MAX)
		s->covering = false;	/* no key just after it in this priority */
	else
	{
		s->cover_to.seq++;
		s->covered = true;
	}
}

static void
end_cover(ClaimStream *s)
{
	if (!s->covering)
		return;
	s->covering = false;
	if (s->covered)
		s->cover_to = s->key;
}

/* Begin an index scan of the stream's action with nkeys of its keys. */
static void
stream_scan(ClaimWalk *w, ClaimStream *s, ScanKey keys, int nkeys)
{
	s->scan = taskq_index_beginscan(w->d->rel, w->idx, w->d->snapshot, nkeys, 0);
	s->scan->xs_want_itup = true;	/* the keys and not_before, without the heap */
	index_rescan(s->scan, keys, nkeys, NULL, 0);
}

static void
action_key(ScanKey key, const char *action)
{
	ScanKeyInit(key, READY_ACTION, BTEqualStrategyNumber, F_TEXTEQ,
				CStringGetTextDatum(action));
}

/* Go to the stream's next entry; past its first scan's last, to the lower priorities. */
static void
stream_next(ClaimWalk *w, ClaimStream *s)
{
	ScanKeyData keys[2];

	while ((s->tid = index_getnext_tid(s->scan, ForwardScanDirection)) == NULL &&
		   !s->lower)
	{
		/* priority DESC: the lower priorities come after in the index */
		index_endscan(s->scan);
		action_key(&keys[0], s->action);
		ScanKeyInit(&keys[1], READY_PRIORITY, BTLessStrategyNumber, F_INT4LT,
					Int32GetDatum(s->hs.start.priority));
		stream_scan(w, s, keys, 2);
		s->lower = true;
	}
	if (s->tid != NULL)
		s->key = entry_key(s->scan);
}

/* Take the action's claim start, if the claim uses one, before its walk reads the index. */
static void
stream_start(ClaimWalk *w, ClaimStream *s)
{
	s->started = true;
	s->hs.slot = -1;
	s->hs.valid = false;
	if (w->use_starts)
		taskq_claim_start_begin(s->action, &s->hs);
	s->advancing = s->hs.slot >= 0 && w->may_move;
	s->covering = s->advancing;
}

/*
 * Prepare the walk of action's entries.  first, if not NULL, is the
 * position of the action's first entry (a claim of any action found it):
 * that bounds the walk, which takes its start when it is opened.  Else the
 * walk takes its start now, and the start bounds it.
 */
static void
stream_prepare(ClaimWalk *w, ClaimStream *s, const char *action, TaskqReadyKey *first)
{
	memset(s, 0, sizeof(ClaimStream));
	s->action = action;
	if (first != NULL)
	{
		s->bounded = true;
		s->bound = *first;
		return;
	}
	stream_start(w, s);
	if (s->hs.valid)
	{
		s->bounded = true;
		s->bound = s->hs.start;
	}
}

/*
 * Open the walk: its first index scan, and its first entry.  The start
 * (taken now, or when prepared) comes before the walk reads the index, so
 * that a ready entry written meanwhile is logged in it (claim_start.c).
 */
static void
stream_open(ClaimWalk *w, ClaimStream *s)
{
	ScanKeyData keys[3];

	if (!s->started)
		stream_start(w, s);
	s->opened = true;
	action_key(&keys[0], s->action);
	if (!s->hs.valid)
	{
		stream_scan(w, s, keys, 1);
		s->lower = true;
	}
	else
	{
		ScanKeyInit(&keys[1], READY_PRIORITY, BTEqualStrategyNumber, F_INT4EQ,
					Int32GetDatum(s->hs.start.priority));
		ScanKeyInit(&keys[2], READY_SEQ, BTGreaterEqualStrategyNumber, F_INT8GE,
					Int64GetDatum(s->hs.start.seq));
		stream_scan(w, s, keys, 3);
	}
	stream_next(w, s);
}

/*
 * Handle the entry the stream stands at, claiming its row if it is ready.
 * While the walk is advancing, an entry invisible to the snapshot is
 * checked for being dead, and the first that is not (or the first visible
 * entry) ends the advance; after that, invisible entries are skipped as
 * index_getnext_slot skips them, and delayed ones without a heap visit.
 */
static void
stream_step(ClaimWalk *w, ClaimStream *s)
{
	TaskqRel  *d = w->d;
	bool		isnull;
	bool		delayed;

	CHECK_FOR_INTERRUPTS();
	delayed = DatumGetTimestampTz(index_getattr(s->scan->xs_itup, READY_NOT_BEFORE,
												s->scan->xs_itupdesc, &isnull)) > w->now;
	if (delayed && !s->advancing)
	{
		end_cover(s);
		return;
	}
	if (!index_fetch_heap(s->scan, d->oldslot))
	{
		if (s->advancing)
		{
			s->last = s->key;
			if (entry_dead(w, s->scan, s->tid))
				s->passed = true;
			else
			{
				s->advancing = false;
				s->stopped = true;
				s->covering = false;
			}
		}
		else if (s->covering)
		{
			if (entry_dead(w, s->scan, s->tid))
				extend_cover(s);
			else
				end_cover(s);
		}
		return;
	}
	if (s->advancing)
	{
		s->last = s->key;
		s->advancing = false;
		s->stopped = true;
	}
	if (!delayed)
	{
		int			before = w->claimed;

		claim_row(w);
		if (w->claimed > before)
		{
			extend_cover(s);
			return;
		}
	}
	end_cover(s);
}

/* End the walk: move the action's start as far as it found, now and at commit. */
static void
stream_end(ClaimStream *s)
{
	if (!s->opened)
		return;
	if (s->stopped || s->passed)
	{
		/* to the entry that ended the walk, or just past the last dead one */
		if (!s->stopped && s->last.seq < PG_INT64_MAX)
			s->last.seq++;
		if (s->stopped || s->last.seq != PG_INT64_MAX)
			taskq_claim_start_advance(&s->hs, s->last);
	}
	if (s->covered)
		taskq_claim_start_defer(&s->hs, s->cover_to);
	index_endscan(s->scan);
}

/*
 * The first entry of the ready index whose action is after the given one
 * (NULL: the first entry of all), read through the btree itself: the
 * index scan API would read the whole leaf page from there, copying each
 * tuple, where only one entry is wanted.  Entries marked dead are passed
 * over; others may be dead too, which is fine (the claim's walk of that
 * action passes them).  The leaf pages read are predicate-locked, as an
 * index scan does, for serializable transactions.  Returns false if there
 * is none; else the entry's action and position.
 */
static bool
entry_after(ClaimWalk *w, const char *after, char **action, TaskqReadyKey *key)
{
	Relation	idx = w->idx;
	BTScanInsert skey;
	BTStack		stack;
	Buffer		buf;
	bool		found = false;
	bool		first_page = true;

	skey = _bt_mkscankey(idx, NULL);
	_bt_metaversion(idx, &skey->heapkeyspace, &skey->allequalimage);
	skey->keysz = 1;			/* the action alone */
	skey->nextkey = after != NULL;	/* after it, or at '' or after */
	skey->scankeys[0].sk_flags &= ~SK_ISNULL;
	skey->scankeys[0].sk_argument = CStringGetTextDatum(after ? after : "");

	stack = taskq_bt_search(idx, w->d->rel, skey, &buf, BT_READ, w->d->snapshot);
	_bt_freestack(stack);
	if (!BufferIsValid(buf))
	{
		PredicateLockRelation(idx, w->d->snapshot);	/* an empty index */
		return false;
	}
	for (;;)
	{
		Page		page = BufferGetPage(buf);
		BTPageOpaque opaque = BTPageGetOpaque(page);

		if (!P_IGNORE(opaque))
		{
			OffsetNumber off = P_FIRSTDATAKEY(opaque);
			OffsetNumber maxoff = PageGetMaxOffsetNumber(page);

			PredicateLockPage(idx, BufferGetBlockNumber(buf), w->d->snapshot);
			if (first_page)
			{
				/* the first item past the key (nextkey) or at it or past */
				OffsetNumber high = maxoff + 1;
				int32		cmpval = skey->nextkey ? 0 : 1;

				while (high > off)
				{
					OffsetNumber mid = off + ((high - off) / 2);

					if (_bt_compare(idx, skey, page, mid) >= cmpval)
						off = mid + 1;
					else
						high = mid;
				}
			}
			for (; off <= maxoff; off++)
			{
				IndexTuple	itup;
				bool		isnull;

				if (ItemIdIsDead(PageGetItemId(page, off)))
					continue;
				itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, off));
				*action = TextDatumGetCString(index_getattr(itup, READY_ACTION,
															RelationGetDescr(idx), &isnull));
				key->priority = DatumGetInt32(index_getattr(itup, READY_PRIORITY,
															RelationGetDescr(idx), &isnull));
				key->seq = DatumGetInt64(index_getattr(itup, READY_SEQ,
													   RelationGetDescr(idx), &isnull));
				found = true;
				break;
			}
		}
		if (found || P_RIGHTMOST(opaque))
			break;
		/* every item to the right is past the key: _bt_search moved right of it */
		buf = _bt_relandgetbuf(idx, buf, opaque->btpo_next, BT_READ);
		first_page = false;
	}
	_bt_relbuf(idx, buf);
	pfree(skey);
	return found;
}

/*
 * The actions that have entries in the ready index, for a claim of any
 * action, and the position of each one's first entry (in *firsts, a list
 * in the same order): one descent of the btree to the first entry past
 * each action found.  An action whose entries are all dead may count: its
 * walk passes them, and may move its start past them.
 */
static List *
ready_actions(ClaimWalk *w, List **firsts)
{
	List	   *actions = NIL;
	char	   *action = NULL;
	TaskqReadyKey first;

	*firsts = NIL;
	while (entry_after(w, action, &action, &first))
	{
		TaskqReadyKey *k = palloc(sizeof(TaskqReadyKey));

		CHECK_FOR_INTERRUPTS();
		*k = first;
		*firsts = lappend(*firsts, k);
		actions = lappend(actions, action);
	}
	return actions;
}

/* actions without repeats (a claim may list one twice) */
static List *
distinct_actions(List *actions)
{
	List	   *distinct = NIL;
	ListCell   *lc;

	foreach(lc, actions)
	{
		ListCell   *seen;
		bool		repeat = false;

		foreach(seen, distinct)
			if (strcmp(lfirst(seen), lfirst(lc)) == 0)
				repeat = true;
		if (!repeat)
			distinct = lappend(distinct, lfirst(lc));
	}
	return distinct;
}

/*
 * Claim up to req->max_tasks ready tasks for req->actor, of its actions,
 * or of any (all_actions), with a lease of req->lease (NULL: none).  Rows
 * go to out in claim order (priority descending, then insertion order):
 * id, token, action, body, num_tries, action_deadline.  req->now is the
 * claim's moment (what is delayed past it is not ready; the lease runs
 * from it), filled in by taskq_claim as is the default lease.  Returns the
 * number claimed, or -1 if this path does not apply and the caller must
 * use the SQL claim.
 *
 * Each action's entries are walked from where the claims of this database
 * start for that action (queue/claim_start.c); the claim takes the next
 * entry from the walk that has the first in claim order.  flow (NULL: no
 * action of the claim is limited) is the limiter (flow_limits.c): a row of
 * a limited action is taken only if it and its key are under their limits,
 * others are stepped over, and an action at its limit is walked no further.
 */
int
taskq_claim_direct(const TaskqClaimRequest *req, TaskqFlow *flow, Tuplestorestate *out,
				   TupleDesc outdesc)
{
	TaskqRel	d;
	ClaimWalk	w;
	ClaimStream *streams;
	ClaimStream *stepped = NULL;
	List	   *firsts = NIL;
	int			nstreams;
	ListCell   *lc;
	List	   *actions = req->all_actions ? NIL : req->actions;

	if (!taskq_rel_open(&d, "own_tasks()", claim_changes, lengthof(claim_changes)))
		return -1;

	memset(&w, 0, sizeof(w));
	w.d = &d;
	w.idx = taskq_rel_index(&d, "tasks_ready_action_idx", 4, NULL);
	if (w.idx == NULL)
	{
		taskq_rel_close(&d);
		return -1;
	}
	w.limit = req->max_tasks;
	w.now = req->now;
	w.actor = CStringGetTextDatum(req->actor);
	w.has_deadline = req->lease != NULL;
	if (req->lease != NULL)
		w.deadline = DirectFunctionCall2(timestamptz_pl_interval,
										 TimestampTzGetDatum(w.now),
										 IntervalPGetDatum(req->lease));
	w.out = out;
	w.outdesc = outdesc;
	w.flow = flow;

	if (actions == NIL)
		actions = ready_actions(&w, &firsts);
	else if (list_length(actions) > 1)
		actions = distinct_actions(actions);

	w.use_starts = d.shape->starts_ok && taskq_shared_claim_start;
	w.may_move = taskq_claim_start_may_move(req->writes_noted);
	nstreams = list_length(actions);
	streams = palloc(sizeof(ClaimStream) * Max(nstreams, 1));
	foreach(lc, actions)
	{
		int			i = foreach_current_index(lc);

		stream_prepare(&w, &streams[i], lfirst(lc),
					   firsts != NIL ? (TaskqReadyKey *) list_nth(firsts, i) : NULL);
		if (nstreams == 1 || !streams[i].bounded)
			stream_open(&w, &streams[i]);
	}

	/* each time, the walk whose entry (or, unopened, whose bound) comes first */
	while (w.claimed < w.limit)
	{
		ClaimStream *next = NULL;
		TaskqReadyKey next_key = {0, 0};

		if (stepped != NULL)
			stream_next(&w, stepped);
		stepped = NULL;
		for (int i = 0; i < nstreams; i++)
		{
			ClaimStream *s = &streams[i];
			TaskqReadyKey k;

			if (s->opened && s->tid == NULL)
				continue;		/* walked to its end */
			if (flow != NULL && taskq_flow_action_full(flow, s->action))
				continue;		/* at its concurrency limit: nothing more of it */
			k = s->opened ? s->key : s->bound;
			if (next == NULL || taskq_ready_key_before(k, next_key))
			{
				next = s;
				next_key = k;
			}
		}
		if (next == NULL)
			break;
		if (!next->opened)
			stream_open(&w, next);
		else
		{
			stream_step(&w, next);
			stepped = next;
		}
	}

	for (int i = 0; i < nstreams; i++)
		stream_end(&streams[i]);
	if (w.dirtyfetch != NULL)
	{
		table_index_fetch_end(w.dirtyfetch);
		ExecDropSingleTupleTableSlot(w.dirtyslot);
	}
	taskq_rel_close(&d);
	return w.claimed;
}
