/*-------------------------------------------------------------------------
 *
 * tasks_rel.c
 *	  taskq.tasks as the direct paths see it: opened for writes
 *	  without the executor, a new row version formed and written with its index
 *	  entries, and which rows are ready.  What it needs to know of the
 *	  table it takes from the kept shape (tasks_shape.c), which never calls
 *	  back here; what other tables' direct writes share with it is in
 *	  common/direct_write.c.
 *
 * The direct paths (claim walk, completion, batch insert) apply only to the
 * table the install script made: no triggers but taskq's own, no row
 * security; otherwise taskq_rel_open says no and the caller runs its SQL
 * fallback.  Locking: the table is opened with RowExclusiveLock, as an
 * UPDATE would; each path locks its rows itself.
 *
 * A new row's or version's index entries are added as an INSERT or UPDATE
 * adds them (add_entry), except that an update does not check the primary
 * key (a unique index without a predicate whose key no direct update
 * changes): the old version, locked by the updating transaction, holds the
 * key; and that no entry says its key is unchanged (add_entry says why).
 * The batch insert checks the primary key as ON CONFLICT checks its
 * arbiter, and looks a possible repeat up itself (insert_rows.c); every
 * other unique index and exclusion constraint fails as an INSERT's does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "common/direct_write.h"
#include "common/pg_compat.h"
#include "queue/tasks_rel.h"

/*
 * Open taskq.tasks, its indexes and an executor state for updates of the
 * given columns, and take a snapshot that sees this transaction's earlier
 * commands.  False (nothing left open) if this path does not apply.
 */
bool
taskq_rel_open(TaskqRel *d, const char *what, const char *const *changed, int nchanged)
{
	Oid			relid = taskq_tasks_relid();
	TaskqRelShape *s;

	if (!OidIsValid(relid))
		return false;

	/* As an UPDATE would: nothing changes in a read-only transaction or on a standby. */
	PreventCommandIfReadOnly(what);

	d->rel = table_open(relid, RowExclusiveLock);
	d->desc = RelationGetDescr(d->rel);
	s = taskq_rel_shape(d->rel);
	if (!s->applies)
	{
		table_close(d->rel, RowExclusiveLock);
		return false;
	}
	d->shape = s;
	d->col = &s->col;
	d->ready = &s->ready;
	d->updated = changed ? taskq_rel_shape_updated(s, d->rel, changed, nchanged) : NULL;
	d->estate = taskq_direct_estate(d->rel, d->updated, &d->rri);
	taskq_rel_shape_indexes(s, d->rri);

	CommandCounterIncrement();
	d->snapshot = RegisterSnapshot(GetTransactionSnapshot());
	PushActiveSnapshot(d->snapshot);
	d->cid = GetCurrentCommandId(true);
	d->estate->es_output_cid = d->cid;
	d->estate->es_snapshot = d->snapshot;
	d->oldslot = table_slot_create(d->rel, NULL);
	d->newslot = MakeSingleTupleTableSlot(d->desc, &TTSOpsVirtual);
	return true;
}

void
taskq_rel_close(TaskqRel *d)
{
	ExecDropSingleTupleTableSlot(d->oldslot);
	ExecDropSingleTupleTableSlot(d->newslot);
	PopActiveSnapshot();
	UnregisterSnapshot(d->snapshot);
	taskq_rel_shape_close_indexes(d->rri);
	FreeExecutorState(d->estate);
	table_close(d->rel, RowExclusiveLock);
	/* Later commands of this transaction see the changes. */
	CommandCounterIncrement();
}

/*
 * An index of taskq.tasks by name, opened, if it is a btree with nkeys key
 * columns; its IndexInfo in *info, if info is given.
 */
Relation
taskq_rel_index(TaskqRel *d, const char *name, int nkeys, IndexInfo **info)
{
	int			i = taskq_rel_shape_find(d->shape, name);
	Relation	idx;

	if (i < 0)
		return NULL;
	idx = taskq_rel_shape_index(d->shape, d->rri, i);
	if (idx->rd_rel->relam != BTREE_AM_OID ||
		IndexRelationGetNumberOfKeyAttributes(idx) != nkeys)
		return NULL;
	if (info != NULL)
		*info = d->rri->ri_IndexRelationInfo[i];
	return idx;
}

/* Does the update (changing the columns in updated) leave the index's key as it was? */
static bool
key_unchanged(const IndexInfo *ii, const Bitmapset *updated)
{
	if (updated == NULL || ii->ii_Expressions != NIL)
		return false;			/* not known */
	for (int k = 0; k < ii->ii_NumIndexKeyAttrs; k++)
	{
		AttrNumber	a = ii->ii_IndexAttrNumbers[k];

		if (a == 0 || bms_is_member(a - FirstLowInvalidHeapAttributeNumber, updated))
			return false;
	}
	return true;
}

/*
 * The entry of a row or new version in index i (open, its predicate true),
 * as ExecInsertIndexTuples adds it, except that for a new version a unique
 * index without a predicate whose key the update leaves as it was is not
 * checked: the old version is in it with that key and this transaction has
 * it locked, so no other row can have the key (an insert of it meanwhile
 * waits for this transaction, then finds the new entry).  The check
 * visited the old version in the heap: the primary key of each claim and
 * completion paid for it.  A partial index is checked: the old version may
 * not have been in it.  With repeat, the primary key's entry is checked as
 * ON CONFLICT's speculative insert checks its arbiter (a conflict sets
 * *repeat instead of failing); every other unique index fails as usual.
 *
 * No entry carries PostgreSQL's hint that it repeats a key the update left
 * as it was (indexUnchanged), which an UPDATE's entries carry: on a full
 * leaf page the hint makes nbtree try a bottom-up deletion, visiting the
 * heap pages of the page's entries for versions dead to everyone, before
 * it deduplicates or splits.  Here that search is nearly always in vain:
 * the version a claim or completion replaces is still live (its updater,
 * this transaction, is running), and the claims of one transaction put
 * their entries on the same few pages one after another, each finding the
 * page full again.  The dead versions of tasks finished earlier are left
 * to deduplication (a task's versions become one posting list) and
 * VACUUM.  One backend draining 100,000 tasks 50 at a time spent a fifth
 * of its CPU in those searches, and the indexes were no smaller for them
 * after the drain, except tasks_running_idx, whose entries die with their
 * task: it holds them until VACUUM (about 1 MB per 100,000 tasks).
 */
static void
add_entry(TaskqRel *d, TupleTableSlot *slot, int i, bool update, bool *repeat)
{
	IndexInfo  *ii = d->rri->ri_IndexRelationInfo[i];
	Relation	idx = d->rri->ri_IndexRelationDescs[i];
	bool		unchanged = update && key_unchanged(ii, d->updated);
	IndexUniqueCheck check;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];

	if (!ii->ii_Unique || (unchanged && ii->ii_Predicate == NIL))
		check = UNIQUE_CHECK_NO;
	else if (repeat != NULL && idx->rd_index->indisprimary)
		check = UNIQUE_CHECK_PARTIAL;
	else
		check = UNIQUE_CHECK_YES;
	FormIndexDatum(ii, slot, d->estate, values, isnull);
	if (!index_insert(idx, values, isnull, &slot->tts_tid, d->rel, check, false, ii) &&
		check == UNIQUE_CHECK_PARTIAL)
		*repeat = true;
}

/*
 * Add the index entries of the row in slot, new (update false) or a new
 * version (update true), opening first the indexes it goes into.  With
 * repeat given, a conflict in the primary key does not fail: *repeat says
 * whether there may be one, for the caller to check; any other unique
 * index fails as an INSERT's does.  The entries are added here
 * (add_entry), each predicate evaluated once; for tables with an exclusion
 * constraint or a deferred unique index (the shape says), they go through
 * ExecInsertIndexTuples, which evaluates the predicates of the indexes
 * opened here again.  indexes: which indexes get the entry (a new row, or
 * an update that was not HOT: all; from 16 a HOT update gives one to the
 * summarizing indexes, pg_compat.h).
 */
static void
add_entries(TaskqRel *d, TupleTableSlot *slot, bool update, TaskqIndexUpdate indexes,
			bool *repeat)
{
	ResultRelInfo *rri = d->rri;
	ExprContext *econtext = GetPerTupleExprContext(d->estate);
	bool		here = !d->shape->checked_entries;

	econtext->ecxt_scantuple = slot;
	for (int i = 0; i < rri->ri_NumIndices; i++)
	{
		IndexInfo  *ii = rri->ri_IndexRelationInfo[i];

		/* an index already open (read, or an earlier row's) is ExecInsertIndexTuples' */
		if (!ii->ii_ReadyForInserts || (rri->ri_IndexRelationDescs[i] != NULL && !here))
			continue;
		/* a HOT update's version goes into the summarizing indexes only */
		if (indexes == TASKQ_INDEXES_SUMMARIZING && !taskq_index_summarizing(ii))
			continue;
		/* the kept shape prepared every predicate */
		if (ii->ii_Predicate != NIL && !ExecQual(ii->ii_PredicateState, econtext))
			continue;
		taskq_rel_shape_index(d->shape, rri, i);
		if (here)
			add_entry(d, slot, i, update, repeat);
	}
	if (here)
		return;
	/* the primary key alone may conflict without failing: the caller checks it */
	list_free(taskq_insert_index_tuples(rri, slot, d->estate, update, repeat != NULL, repeat,
										repeat != NULL ?
										list_make1_oid(taskq_primary_key_index(d->rel)) : NIL,
										indexes));
}

/* The entries of a new row (update false) or a new version's, in every index. */
void
taskq_rel_index_entries(TaskqRel *d, TupleTableSlot *slot, bool update, bool *repeat)
{
	add_entries(d, slot, update, TASKQ_INDEXES_ALL, repeat);
}

/* Write the new version over the old one found at tid; wait or not. */
TM_Result
taskq_rel_update(TaskqRel *d, ItemPointer tid, bool wait, TM_FailureData *tmfd)
{
	LockTupleMode lockmode;
	TaskqIndexUpdate indexes;
	TM_Result	result;

	ExecStoreVirtualTuple(d->newslot);
	result = taskq_tuple_update(d->rel, tid, d->newslot, d->cid, d->snapshot,
								InvalidSnapshot, wait, tmfd, &lockmode, &indexes);
	if (result == TM_Ok && indexes != TASKQ_INDEXES_NONE)
		add_entries(d, d->newslot, true, indexes, NULL);
	ResetPerTupleExprContext(d->estate);
	return result;
}

/*
 * Is the row in slot ready (pending with no unfinished predecessor)?  NULL
 * columns cannot happen (NOT NULL); if they did, say yes, to be safe.
 */
bool
taskq_row_ready(TupleTableSlot *slot, const TaskqReadyCols *c)
{
	bool		n1,
				n2;
	Datum		status = slot_getattr(slot, c->status_code, &n1);
	Datum		signals = slot_getattr(slot, c->num_signals, &n2);

	return n1 || n2 || (DatumGetObjectId(status) == c->pending && DatumGetInt32(signals) == 0);
}

