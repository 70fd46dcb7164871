/*-------------------------------------------------------------------------
 *
 * direct_write.c
 *	  The kit of the direct writes (the paths that read and write a table's
 *	  rows without the executor): columns by name and type, enum labels,
 *	  whether a table is a plain heap with only its own CHECK constraints,
 *	  whether an index is the unique btree a path looks rows up by, the
 *	  fetch of a row by that key, and the executor state under which new
 *	  rows' and versions' index entries are added.
 *
 * Each direct path checks with these, once per backend and again after a
 * relcache invalidation, that its table is still as the install script
 * made it; otherwise it runs its SQL.  What is generic lives here, so that
 * the queue's paths on taskq.tasks (queue/tasks_rel.c), the signal
 * counters (queue/signal_counter.c) and the run rows
 * (workflow/run_row.c) check the same things the same way.
 *
 * Locking: none of its own.  taskq_unique_btree_on opens the index with
 * AccessShareLock for the look; the callers open and lock their tables.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "catalog/pg_am.h"
#include "catalog/pg_enum.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "common/direct_write.h"
#include "common/pg_compat.h"

/* The attribute number of a column, or InvalidAttrNumber. */
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

/* The OID of an enum type's label, or InvalidOid. */
Oid
taskq_enum_label(Oid enumtype, const char *label)
{
	return GetSysCacheOid2(ENUMTYPOIDNAME, Anum_pg_enum_oid,
						   ObjectIdGetDatum(enumtype), CStringGetDatum(label));
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
	IndexScanDesc scan = taskq_index_beginscan(rel, idx, snap, n, 0);
	bool		found;

	index_rescan(scan, keys, n, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);
	return found;
}

/*
 * An executor state and a result relation of rel, for adding the index
 * entries of new versions as an UPDATE or INSERT adds them, its indexes
 * not yet given: the caller opens them (ExecOpenIndices, or the kept shape
 * of taskq.tasks, queue/tasks_shape.c).  updated: the columns an update
 * changes (attribute numbers offset as in updatedCols: pg_compat.h),
 * which tell the indexes which new entries repeat a key.
 * ExecCloseIndices and FreeExecutorState undo it.
 */
EState *
taskq_direct_estate(Relation rel, Bitmapset *updated, ResultRelInfo **rri)
{
	EState	   *estate = CreateExecutorState();
	RangeTblEntry *rte = makeNode(RangeTblEntry);

	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(rel);
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	taskq_init_range_table(estate, rte, updated);
	*rri = makeNode(ResultRelInfo);
	InitResultRelInfo(*rri, rel, 1, NULL, 0);
	return estate;
}

/* The same with rel's indexes opened, as ExecOpenIndices opens them. */
EState *
taskq_index_state(Relation rel, Bitmapset *updated, ResultRelInfo **rri)
{
	EState	   *estate = taskq_direct_estate(rel, updated, rri);

	ExecOpenIndices(*rri, false);
	return estate;
}

/*
 * Are the triggers of rel that call taskq.<function>() there and enabled
 * ALWAYS, unconditional, for each row inserted, updated or deleted and for
 * TRUNCATE?  Only then do the invalidations they send tell of every write
 * of a settings table whose rows a session keeps (action_policy.c,
 * flow_limits.c), in replicas' sessions and logical replication's apply
 * worker too.
 */
bool
taskq_triggers_tell(Relation rel, const char *function)
{
	TriggerDesc *td = rel->trigdesc;
	const int16 all = TRIGGER_TYPE_INSERT | TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE |
		TRIGGER_TYPE_TRUNCATE;
	int16		kinds = 0;
	Oid			fn;

	if (td == NULL)
		return false;
	fn = LookupFuncName(list_make2(makeString("taskq"), makeString(pstrdup(function))),
						0, NULL, true);
	for (int i = 0; i < td->numtriggers; i++)
	{
		Trigger    *t = &td->triggers[i];

		if (t->tgfoid != fn || t->tgenabled != TRIGGER_FIRES_ALWAYS || t->tgqual != NULL ||
			t->tgnattr != 0)
			continue;
		if (TRIGGER_FOR_ROW(t->tgtype))
			kinds |= t->tgtype & (TRIGGER_TYPE_INSERT | TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE);
		else
			kinds |= t->tgtype & TRIGGER_TYPE_TRUNCATE;
	}
	return kinds == all;
}
