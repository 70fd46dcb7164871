/*-------------------------------------------------------------------------
 *
 * signal_counter.c
 *	  A backend's counter of deferred signals for a join (its row of
 *	  taskq.deferred_signals) added to without the executor.
 *
 * Every member of a wide join that completes adds its signal to its
 * backend's counter for the join (signal.c).  As an UPDATE through SPI
 * that cost as much as the member's completion itself: the executor's
 * start and end of a one-row statement.  Here the row is found through
 * deferred_signals_pkey with a snapshot taken as a statement's would be
 * (after a command counter increment) and updated with
 * table_tuple_update, on its page (HOT: no indexed column changes, and the
 * table keeps half of each page free) or followed by its index entries as
 * an UPDATE adds them.
 *
 * Locking: RowExclusiveLock on the table, as an UPDATE.  The update does
 * not wait.  Whatever is not the plain case — the row held by another
 * transaction (the background worker taking the counter, which skips a
 * counter being added to), changed since the snapshot, or a sum past
 * int4 — is left to the caller's UPDATE, which waits, follows the newest
 * version in READ COMMITTED, fails with 40001 in REPEATABLE READ and
 * raises the overflow's error, exactly as before.  So this path only ever
 * does what the statement would have done.
 *
 * Only for the table the install script made: a heap without row
 * security, triggers or generated columns, whose only CHECK constraint is
 * signals >= 0 (which old + k keeps for k > 0), with its columns and
 * primary key.  What was checked is kept per backend and checked again
 * after a relcache invalidation of the table or its primary key.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "common/direct_write.h"
#include "common/pg_compat.h"
#include "queue/queue_internal.h"

/* What was checked of taskq.deferred_signals, per backend. */
typedef struct CounterTable
{
	bool		valid;			/* checked since the last invalidation */
	bool		usable;			/* as the install script made it */
	Oid			rel;
	Oid			pkey;
	AttrNumber	task_id;
	AttrNumber	stripe;
	AttrNumber	signals;
} CounterTable;

static CounterTable counter;

/* signals >= 0, which old + k keeps for k > 0 */
static const char *const counter_checks[] = {"deferred_signals_signals_check", NULL};
static bool callback_registered = false;

static void
counter_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == counter.rel || relid == counter.pkey)
		counter.valid = false;
}

/* Check the table once per invalidation; false if this path does not apply. */
static bool
counter_table(void)
{
	Oid			nsp;
	Relation	rel;
	AttrNumber	key[2];

	if (counter.valid)
		return counter.usable;
	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(counter_invalidate, (Datum) 0);
		callback_registered = true;
	}
	memset(&counter, 0, sizeof(counter));
	counter.valid = true;
	nsp = get_namespace_oid("taskq", true);
	if (!OidIsValid(nsp))
		return false;
	counter.rel = get_relname_relid("deferred_signals", nsp);
	counter.pkey = get_relname_relid("deferred_signals_pkey", nsp);
	if (!OidIsValid(counter.rel))
		return false;

	rel = table_open(counter.rel, AccessShareLock);
	counter.task_id = taskq_typed_column(RelationGetDescr(rel), "task_id", TEXTOID);
	counter.stripe = taskq_typed_column(RelationGetDescr(rel), "stripe", INT4OID);
	counter.signals = taskq_typed_column(RelationGetDescr(rel), "signals", INT4OID);
	counter.usable = taskq_table_plain(rel, counter_checks) &&
		counter.task_id != InvalidAttrNumber && counter.stripe != InvalidAttrNumber &&
		counter.signals != InvalidAttrNumber;
	table_close(rel, AccessShareLock);
	key[0] = counter.task_id;
	key[1] = counter.stripe;
	if (counter.usable)
		counter.usable = taskq_unique_btree_on(counter.pkey, counter.rel, 2, key);
	return counter.usable;
}

/*
 * Add k (> 0) signals to this backend's counter (stripe) for the task id.
 * TASKQ_COUNTER_ADDED: done; TASKQ_COUNTER_ABSENT: the snapshot sees no
 * such counter, the caller creates it; TASKQ_COUNTER_SQL: the caller runs
 * its UPDATE (this path does not apply, or the row is not in the plain
 * case).
 */
TaskqCounterResult
taskq_signal_counter_add(const char *id, int32 stripe, int32 k)
{
	Relation	rel;
	Relation	idx;
	Snapshot	snap;
	TupleTableSlot *oldslot;
	TupleTableSlot *newslot = NULL;
	ScanKeyData keys[2];
	TupleDesc	desc;
	CommandId	cid;
	TaskqCounterResult out = TASKQ_COUNTER_SQL;
	bool		isnull;
	int32		sum;

	Assert(k > 0);
	if (!counter_table())
		return TASKQ_COUNTER_SQL;

	PreventCommandIfReadOnly("UPDATE");
	CommandCounterIncrement();
	snap = RegisterSnapshot(GetTransactionSnapshot());
	cid = GetCurrentCommandId(true);
	rel = table_open(counter.rel, RowExclusiveLock);
	desc = RelationGetDescr(rel);
	idx = index_open(counter.pkey, AccessShareLock);
	oldslot = table_slot_create(rel, NULL);
	ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(id));
	keys[0].sk_collation = idx->rd_indcollation[0];
	ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(stripe));
	if (!taskq_fetch_by_key(rel, idx, snap, 2, keys, oldslot))
		out = TASKQ_COUNTER_ABSENT;
	else if (!pg_add_s32_overflow(DatumGetInt32(slot_getattr(oldslot, counter.signals, &isnull)),
								  k, &sum) && !isnull)
	{
		TM_Result	result;
		TM_FailureData tmfd;
		LockTupleMode lockmode;
		TaskqIndexUpdate indexes;

		slot_getallattrs(oldslot);
		newslot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
		ExecClearTuple(newslot);
		memcpy(newslot->tts_values, oldslot->tts_values, sizeof(Datum) * desc->natts);
		memcpy(newslot->tts_isnull, oldslot->tts_isnull, sizeof(bool) * desc->natts);
		newslot->tts_values[counter.signals - 1] = Int32GetDatum(sum);
		ExecStoreVirtualTuple(newslot);
		result = taskq_tuple_update(rel, &oldslot->tts_tid, newslot, cid, snap,
									InvalidSnapshot, false, &tmfd, &lockmode, &indexes);
		if (result == TM_Ok)
		{
			out = TASKQ_COUNTER_ADDED;
			if (indexes != TASKQ_INDEXES_NONE)
			{
				/* as an UPDATE does: each index of the table gets the new version */
				Bitmapset  *updated = bms_make_singleton(counter.signals -
														 FirstLowInvalidHeapAttributeNumber);
				ResultRelInfo *rri;
				EState	   *estate = taskq_index_state(rel, updated, &rri);

				estate->es_output_cid = cid;
				estate->es_snapshot = snap;
				list_free(taskq_insert_index_tuples(rri, newslot, estate, true, false, NULL, NIL,
													indexes));
				ExecCloseIndices(rri);
				FreeExecutorState(estate);
			}
		}
	}
	index_close(idx, AccessShareLock);
	if (newslot)
		ExecDropSingleTupleTableSlot(newslot);
	ExecDropSingleTupleTableSlot(oldslot);
	table_close(rel, RowExclusiveLock);
	UnregisterSnapshot(snap);
	/* later commands of this transaction see the new version */
	if (out == TASKQ_COUNTER_ADDED)
		CommandCounterIncrement();
	return out;
}
