/*-------------------------------------------------------------------------
 *
 * relation.c
 *	  taskq.tasks as the direct paths see it: its columns, opened for writes
 *	  without the executor, a new row version formed and written with its index
 *	  entries, and which rows are ready.
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
 * key.  The batch insert checks the primary key as ON CONFLICT checks its
 * arbiter, and looks a possible repeat up itself (row_insert.c); every
 * other unique index and exclusion constraint fails as an INSERT's does.
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
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_enum.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "common/int.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteHandler.h"
#include "storage/bufmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "queue/relation.h"
#include "queue/claim_start.h"

/* The attribute number of a column of taskq.tasks, or InvalidAttrNumber. */
AttrNumber
taskq_column(TupleDesc desc, const char *name)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return att->attnum;
	}
	return InvalidAttrNumber;
}

/* The same, if the column has this type; else InvalidAttrNumber. */
AttrNumber
taskq_typed_column(TupleDesc desc, const char *name, Oid type)
{
	AttrNumber	a = taskq_column(desc, name);

	return a != InvalidAttrNumber && TupleDescAttr(desc, a - 1)->atttypid == type ?
		a : InvalidAttrNumber;
}

/*
 * A heap without row security, triggers or generated columns, whose CHECK
 * constraints are only those named in checks (NULL-terminated): a table a
 * direct path may write as the install script made it, its own checks
 * kept by the values it writes.
 */
bool
taskq_table_plain(Relation rel, const char *const *checks)
{
	TupleConstr *constr = RelationGetDescr(rel)->constr;

	if (rel->rd_rel->relam != HEAP_TABLE_AM_OID || rel->rd_rel->relrowsecurity ||
		rel->trigdesc != NULL)
		return false;
	if (constr == NULL)
		return true;
	if (constr->has_generated_stored)
		return false;
	for (int i = 0; i < constr->num_check; i++)
	{
		const char *const *c = checks;

		while (*c != NULL && strcmp(constr->check[i].ccname, *c) != 0)
			c++;
		if (*c == NULL)
			return false;
	}
	return true;
}

/*
 * A valid unique btree index of relid on exactly these columns, in this
 * order, without predicate or expressions (the tables the direct paths
 * write besides taskq.tasks check their keys with it).
 */
bool
taskq_unique_btree_on(Oid indexid, Oid relid, int n, const AttrNumber *cols)
{
	Relation	idx;
	bool		ok;

	if (!OidIsValid(indexid))
		return false;
	idx = index_open(indexid, AccessShareLock);
	ok = idx->rd_rel->relam == BTREE_AM_OID && idx->rd_index->indrelid == relid &&
		idx->rd_index->indisunique && idx->rd_index->indisvalid &&
		idx->rd_index->indnatts == n && idx->rd_index->indnkeyatts == n &&
		RelationGetIndexPredicate(idx) == NIL && RelationGetIndexExpressions(idx) == NIL;
	for (int i = 0; ok && i < n; i++)
		ok = idx->rd_index->indkey.values[i] == cols[i];
	index_close(idx, AccessShareLock);
	return ok;
}

/*
 * The visible row of rel whose unique index idx holds these keys, in slot;
 * false if there is none.
 */
bool
taskq_fetch_by_key(Relation rel, Relation idx, Snapshot snap, int n, ScanKeyData *keys,
				   TupleTableSlot *slot)
{
	IndexScanDesc scan = index_beginscan(rel, idx, snap, n, 0);
	bool		found;

	index_rescan(scan, keys, n, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);
	return found;
}

/* The columns besides the ready ones (taskq_ready_cols, queue/claim_start.c); false if one is missing. */
bool
taskq_task_columns(TupleDesc desc, TaskColumns *c)
{
	c->id = taskq_column(desc, "id");
	c->body = taskq_column(desc, "body");
	c->status = taskq_column(desc, "status");
	c->num_tries = taskq_column(desc, "num_tries");
	c->to_signal_after = taskq_column(desc, "to_signal_after");
	c->actor_id = taskq_column(desc, "actor_id");
	c->action_deadline = taskq_column(desc, "action_deadline");
	c->performance_token = taskq_column(desc, "performance_token");
	c->not_before = taskq_column(desc, "not_before");
	c->finished_at = taskq_column(desc, "finished_at");
	c->cancelled = taskq_column(desc, "cancelled");
	c->post_result = taskq_column(desc, "post_result");
	c->workflow = taskq_column(desc, "workflow");
	c->result = taskq_column(desc, "result");	/* none before 0.5: no results */
	/* none before 0.6: claims leave the time unwritten */
	c->claimed_at = taskq_typed_column(desc, "claimed_at", TIMESTAMPTZOID);
	return c->post_result && c->workflow && c->id && c->body && c->status &&
		c->num_tries && c->to_signal_after && c->actor_id &&
		c->action_deadline && c->performance_token && c->not_before &&
		c->finished_at && c->cancelled;
}

/*
 * Has this database's taskq the 0.5 task columns (trigger rules, results)?
 * Until ALTER EXTENSION taskq UPDATE runs, the library keeps to the older
 * table: every task is all_success and no result is stored.
 */
bool
taskq_rules_installed(void)
{
	Oid			nsp = get_namespace_oid("taskq", true);

	return OidIsValid(nsp) &&
		OidIsValid(GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
								   CStringGetDatum("trigger_rule"), ObjectIdGetDatum(nsp)));
}

/*
 * Has this database's taskq.tasks the column claimed_at (0.6)?  Until
 * ALTER EXTENSION taskq UPDATE adds it, claims do not record their time.
 */
bool
taskq_claimed_at_installed(void)
{
	Oid			nsp = get_namespace_oid("taskq", true);
	Oid			rel = OidIsValid(nsp) ? get_relname_relid("tasks", nsp) : InvalidOid;

	return OidIsValid(rel) && get_attnum(rel, "claimed_at") != InvalidAttrNumber;
}

/* The OID of an enum type's label, or InvalidOid. */
Oid
taskq_enum_label(Oid enumtype, const char *label)
{
	return GetSysCacheOid2(ENUMTYPOIDNAME, Anum_pg_enum_oid,
						   ObjectIdGetDatum(enumtype), CStringGetDatum(label));
}

/*
 * An executor state and a result relation with rel's indexes, for adding
 * the index entries of new versions as an UPDATE or INSERT adds them:
 * through the kept shape of taskq.tasks if given (each index opened when
 * first needed), else opened as ExecOpenIndices opens them.  updated: the
 * columns an update changes (attribute numbers offset as in
 * RangeTblEntry.updatedCols), which tell the indexes which new entries
 * repeat a key.  ExecCloseIndices and FreeExecutorState undo it.
 */
static EState *
index_state(Relation rel, const TaskqRelShape *shape, Bitmapset *updated, ResultRelInfo **rri)
{
	EState	   *estate = CreateExecutorState();
	RangeTblEntry *rte = makeNode(RangeTblEntry);

	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(rel);
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	rte->updatedCols = updated;
	ExecInitRangeTable(estate, list_make1(rte));
	*rri = makeNode(ResultRelInfo);
	InitResultRelInfo(*rri, rel, 1, NULL, 0);
	if (shape != NULL)
		taskq_rel_shape_indexes(shape, *rri);
	else
		ExecOpenIndices(*rri, false);
	return estate;
}

/* The same for a table other than taskq.tasks (the run rows of workflow/run_row.c). */
EState *
taskq_index_state(Relation rel, Bitmapset *updated, ResultRelInfo **rri)
{
	return index_state(rel, NULL, updated, rri);
}

/*
 * Open taskq.tasks, its indexes and an executor state for updates of the
 * given columns, and take a snapshot that sees this transaction's earlier
 * commands.  False (nothing left open) if this path does not apply.
 */
bool
taskq_rel_open(TaskqRel *d, const char *what, const char *const *changed, int nchanged)
{
	Oid			nsp = get_namespace_oid("taskq", true);
	Oid			relid;
	TaskqRelShape *s;

	if (!OidIsValid(nsp) || !OidIsValid(relid = get_relname_relid("tasks", nsp)))
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
	d->estate = index_state(d->rel, s, d->updated, &d->rri);

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
	ExecCloseIndices(d->rri);
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
	for (int i = 0; i < d->rri->ri_NumIndices; i++)
	{
		Relation	idx;

		if (strcmp(d->shape->index_names[i], name) != 0)
			continue;
		idx = taskq_rel_shape_index(d->shape, d->rri, i);
		if (idx->rd_rel->relam != BTREE_AM_OID ||
			IndexRelationGetNumberOfKeyAttributes(idx) != nkeys)
			return NULL;
		if (info != NULL)
			*info = d->rri->ri_IndexRelationInfo[i];
		return idx;
	}
	return NULL;
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
 * The hint that the entry repeats a key (bottom-up deletion) is
 * PostgreSQL's.
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
	if (!index_insert(idx, values, isnull, &slot->tts_tid, d->rel, check, unchanged, ii) &&
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
 * opened here again.
 */
void
taskq_rel_index_entries(TaskqRel *d, TupleTableSlot *slot, bool update, bool *repeat)
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
	list_free(ExecInsertIndexTuples(rri, slot, d->estate, update, repeat != NULL, repeat,
									repeat != NULL ?
									list_make1_oid(RelationGetPrimaryKeyIndex(d->rel)) : NIL));
}

/* Write the new version over the old one found at tid; wait or not. */
TM_Result
taskq_rel_update(TaskqRel *d, ItemPointer tid, bool wait, TM_FailureData *tmfd)
{
	LockTupleMode lockmode;
	bool		update_indexes;
	TM_Result	result;

	ExecStoreVirtualTuple(d->newslot);
	result = table_tuple_update(d->rel, tid, d->newslot, d->cid, d->snapshot,
								InvalidSnapshot, wait, tmfd, &lockmode,
								&update_indexes);
	if (result == TM_Ok && update_indexes)
		taskq_rel_index_entries(d, d->newslot, true, NULL);
	ResetPerTupleExprContext(d->estate);
	return result;
}
/* The ready columns of a table like taskq.tasks; false if one is missing. */
bool
taskq_ready_cols(TupleDesc desc, TaskqReadyCols *c)
{
	c->status_code = taskq_column(desc, "status_code");
	c->num_signals = taskq_column(desc, "num_signals");
	c->action = taskq_column(desc, "action");
	c->priority = taskq_column(desc, "priority");
	c->seq = taskq_column(desc, "seq");
	if (!c->status_code || !c->num_signals || !c->action || !c->priority || !c->seq)
		return false;
	c->pending = taskq_enum_label(TupleDescAttr(desc, c->status_code - 1)->atttypid, "pending");
	return true;
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

/* If the row in slot is ready, note its entry's key in b. */
