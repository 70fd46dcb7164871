/*-------------------------------------------------------------------------
 *
 * tasks_shape.c
 *	  What every direct path (claim walk, completion, insert) needs to know
 *	  of taskq.tasks before it writes a row, kept per backend: whether the
 *	  direct paths apply to the table as it is, its columns and status
 *	  labels, its indexes' IndexInfos with the partial indexes' predicates
 *	  ready to evaluate, and from its first direct insert the insert's
 *	  column defaults, CHECK constraints and row slots (insert_exprs.c).
 *	  Also which schema version the table is (the 0.5 columns or not).
 *	  tasks_rel.c opens the table through this shape; nothing here calls
 *	  tasks_rel.c.
 *
 * Opening the table found all of it again for each call: about thirty
 * column lookups by name, three label lookups, the triggers read, and
 * ExecOpenIndices' BuildIndexInfo for each of the eight indexes (which
 * copies each partial index's predicate), whose predicates
 * ExecInsertIndexTuples then planned and initialized once per call.  For a
 * one-task call that was several times the row's own insert or update.
 *
 * No locking: the cache is backend-local, and only read after the table is
 * opened with its lock (which takes the invalidations sent before).  A
 * relcache invalidation of the table or of one of its indexes (ALTER
 * TABLE, CREATE or DROP INDEX, a trigger, the index becoming ready during
 * CREATE INDEX CONCURRENTLY, DROP EXTENSION) marks it stale; it is built
 * again at the next open, never while a path runs.  Each call gets its own
 * copy of each IndexInfo (an index access method may keep per-call state
 * in it).
 *
 * A call opens an index, with RowExclusiveLock as ExecOpenIndices would,
 * only when it reads it or a row goes into it (its predicate holds for the
 * row): an insert of a task that is neither delayed nor in a workflow
 * touches three of the eight, and opening and closing the other five cost
 * an enqueue of one task about 4 µs.  An index left closed needs no lock:
 * whatever would change or drop it (DROP INDEX, REINDEX, ALTER INDEX, their
 * CONCURRENTLY forms) takes a lock on the table that conflicts with the
 * RowExclusiveLock the call holds, or waits for the transactions that hold
 * one, and its relcache invalidation reaches the shape when the table is
 * next locked.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "common/direct_write.h"
#include "queue/queue.h"
#include "queue/queue_internal.h"
#include "queue/tasks_rel.h"

static TaskqRelShape *shape = NULL;
static bool shape_stale = false;
static bool building = false;
static List *retired = NIL;		/* contexts of replaced shapes, freed at transaction end */

static void
shape_invalidate(Datum arg, Oid relid)
{
	if (building)
	{
		/* what was read may be older or newer: use it once, build it again next time */
		shape_stale = true;
		return;
	}
	if (shape == NULL || shape_stale)
		return;
	if (relid == InvalidOid || relid == shape->relid)
		shape_stale = true;
	for (int i = 0; !shape_stale && i < shape->nindexes; i++)
		if (relid == shape->index_oids[i])
			shape_stale = true;
}

/*
 * A replaced shape may still be in use by a path that opened the table
 * before a nested one (a completion inserting successors) found it stale:
 * its memory goes when the transaction ends, which no path outlives.
 */
static void
shape_xact_end(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (retired == NIL)
		return;
	foreach(lc, retired)
		MemoryContextDelete((MemoryContext) lfirst(lc));
	list_free(retired);
	retired = NIL;
}

/* The OID of taskq.tasks_written(), looked up again when it seems to change. */
static Oid
written_fn(bool again)
{
	static Oid	fn = InvalidOid;

	if (!OidIsValid(fn) || again)
		fn = LookupFuncName(list_make2(makeString("taskq"), makeString("tasks_written")),
							0, NULL, true);
	return fn;
}

/*
 * The triggers of taskq.tasks are only the install script's, which this
 * path needs not fire: tasks_ready_hint_insert, _update and _delete,
 * statement triggers of taskq.tasks_written() over the changed rows.
 * *starts_ok: all three are there and enabled ALWAYS, so every SQL statement
 * that adds a ready entry lowers the claims' start, and one that changes a
 * ready row is noted for its transaction (queue/claim_start.c); if not,
 * claims walk from the first entry.
 */
static bool
triggers_ours(Relation rel, bool *starts_ok)
{
	TriggerDesc *td = rel->trigdesc;
	bool		ins = false,
				upd = false,
				del = false;

	*starts_ok = false;
	if (td == NULL)
		return true;
	for (int i = 0; i < td->numtriggers; i++)
	{
		Trigger    *t = &td->triggers[i];

		if (t->tgfoid != written_fn(false) && t->tgfoid != written_fn(true))
			return false;
		/* only ALWAYS fires in every session, whatever its replication role */
		if (t->tgenabled != TRIGGER_FIRES_ALWAYS || TRIGGER_FOR_ROW(t->tgtype) ||
			!TRIGGER_FOR_AFTER(t->tgtype) || t->tgnattr != 0 || t->tgqual != NULL)
			continue;
		ins |= TRIGGER_FOR_INSERT(t->tgtype) && t->tgnewtable != NULL;
		upd |= TRIGGER_FOR_UPDATE(t->tgtype) && t->tgnewtable != NULL && t->tgoldtable != NULL;
		del |= TRIGGER_FOR_DELETE(t->tgtype) && t->tgoldtable != NULL;
	}
	*starts_ok = ins && upd && del;
	return true;
}

/* The columns besides the ready ones (taskq_ready_cols); false if one is missing. */
bool
taskq_task_columns(TupleDesc desc, TaskqTaskColumns *c)
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
	/* the queue wait of a claim (ipc/metrics.c) runs from it: none, none measured */
	c->created_at = taskq_typed_column(desc, "created_at", TIMESTAMPTZOID);
	/* none before 0.6: no task has a key */
	c->concurrency_key = taskq_typed_column(desc, "concurrency_key", TEXTOID);
	return c->post_result && c->workflow && c->id && c->body && c->status &&
		c->num_tries && c->to_signal_after && c->actor_id &&
		c->action_deadline && c->performance_token && c->not_before &&
		c->finished_at && c->cancelled;
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
 * Is this database's taskq schema at least 0.5 (its type trigger_rule, and
 * with it the task columns of trigger rules and results, and the runs)?
 * Until ALTER EXTENSION taskq UPDATE runs, the library keeps to the older
 * tables with its legacy statements: every task is all_success and no
 * result is stored.  The check and those statements go when updates from
 * 0.4 are no longer supported.
 */
bool
taskq_schema_at_least_0_5(void)
{
	Oid			nsp = get_namespace_oid("taskq", true);

	return OidIsValid(nsp) &&
		OidIsValid(GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
								   CStringGetDatum("trigger_rule"), ObjectIdGetDatum(nsp)));
}

/* This database's taskq.tasks, or InvalidOid if it has none. */
Oid
taskq_tasks_relid(void)
{
	Oid			nsp = get_namespace_oid("taskq", true);

	return OidIsValid(nsp) ? get_relname_relid("tasks", nsp) : InvalidOid;
}

/*
 * Has this database's taskq.tasks the column claimed_at (0.6)?  Until
 * ALTER EXTENSION taskq UPDATE adds it, claims do not record their time.
 */
bool
taskq_claimed_at_installed(void)
{
	Oid			rel = taskq_tasks_relid();

	return OidIsValid(rel) && get_attnum(rel, "claimed_at") != InvalidAttrNumber;
}

/* Does the direct path apply to the table as it is?  Fills the columns and labels. */
static bool
shape_applies(Relation rel, TaskqRelShape *s)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Oid			status_type;

	/* heap: held_by_us and held_by_another read the row's header */
	if (rel->rd_rel->relam != HEAP_TABLE_AM_OID ||
		!triggers_ours(rel, &s->starts_ok) || rel->rd_rel->relrowsecurity ||
		!taskq_task_columns(desc, &s->col) || !taskq_ready_cols(desc, &s->ready))
		return false;
	status_type = TupleDescAttr(desc, s->ready.status_code - 1)->atttypid;
	s->in_progress = taskq_enum_label(status_type, "in_progress");
	s->completed = taskq_enum_label(status_type, "completed");
	return OidIsValid(s->ready.pending) && OidIsValid(s->in_progress) &&
		OidIsValid(s->completed);
}

/* The indexes, as ExecOpenIndices would find them, with their predicates prepared. */
static void
shape_indexes(Relation rel, TaskqRelShape *s)
{
	List	   *oids = RelationGetIndexList(rel);
	ListCell   *lc;
	int			i = 0;

	s->nindexes = list_length(oids);
	s->index_oids = palloc(sizeof(Oid) * Max(s->nindexes, 1));
	s->index_names = palloc(sizeof(char *) * Max(s->nindexes, 1));
	s->infos = palloc(sizeof(IndexInfo *) * Max(s->nindexes, 1));
	foreach(lc, oids)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		IndexInfo  *ii = BuildIndexInfo(idx);

		if (ii->ii_Predicate != NIL)
			ii->ii_PredicateState =
				ExecInitQual((List *) expression_planner((Expr *) copyObject(ii->ii_Predicate)),
							 NULL);
		s->index_oids[i] = lfirst_oid(lc);
		s->index_names[i] = pstrdup(RelationGetRelationName(idx));
		s->infos[i++] = ii;
		/* what tasks_rel.c's entries leave to ExecInsertIndexTuples */
		if (ii->ii_ExclusionOps != NULL || (ii->ii_Unique && !idx->rd_index->indimmediate))
			s->checked_entries = true;
		index_close(idx, AccessShareLock);
	}
	list_free(oids);
}

/* The position of the index called name among the shape's, or -1. */
int
taskq_rel_shape_find(const TaskqRelShape *s, const char *name)
{
	for (int i = 0; i < s->nindexes; i++)
		if (strcmp(s->index_names[i], name) == 0)
			return i;
	return -1;
}

/*
 * The shape of rel (taskq.tasks, opened by the caller), built again if an
 * invalidation came since it was kept.
 */
TaskqRelShape *
taskq_rel_shape(Relation rel)
{
	static bool registered = false;
	MemoryContext cxt,
				old;
	TaskqRelShape *s;

	if (shape != NULL && !shape_stale && shape->relid == RelationGetRelid(rel) &&
		shape->natts == RelationGetDescr(rel)->natts)
		return shape;
	if (!registered)
	{
		CacheRegisterRelcacheCallback(shape_invalidate, (Datum) 0);
		RegisterXactCallback(shape_xact_end, NULL);
		registered = true;
	}
	if (shape != NULL)
	{
		old = MemoryContextSwitchTo(TopMemoryContext);
		retired = lappend(retired, shape->cxt);
		MemoryContextSwitchTo(old);
		shape = NULL;
	}
	cxt = AllocSetContextCreate(CacheMemoryContext, "taskq table shape",
								ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	s = palloc0(sizeof(TaskqRelShape));
	s->cxt = cxt;
	s->relid = RelationGetRelid(rel);
	s->natts = RelationGetDescr(rel)->natts;
	shape_stale = false;
	building = true;
	PG_TRY();
	{
		s->applies = shape_applies(rel, s);
		if (s->applies)
			shape_indexes(rel, s);
	}
	PG_CATCH();
	{
		building = false;
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	building = false;
	MemoryContextSwitchTo(old);
	shape = s;
	return s;
}

/*
 * The columns an update changes, as RangeTblEntry.updatedCols has them, kept
 * per list of names (the callers' lists are static arrays).
 */
Bitmapset *
taskq_rel_shape_updated(TaskqRelShape *w, Relation rel,
						const char *const *changed, int nchanged)
{
	Bitmapset  *updated = NULL;
	MemoryContext old;

	if (changed == NULL || nchanged == 0)
		return NULL;
	for (int i = 0; i < w->nupdated; i++)
		if (w->updated_names[i] == changed)
			return bms_copy(w->updated[i]);
	for (int i = 0; i < nchanged; i++)
	{
		AttrNumber	a = taskq_column(RelationGetDescr(rel), changed[i]);

		/* a column of a later version than the table's is not changed */
		if (a != InvalidAttrNumber)
			updated = bms_add_member(updated, a - FirstLowInvalidHeapAttributeNumber);
	}
	if (w->nupdated < TASKQ_SHAPE_UPDATES)
	{
		old = MemoryContextSwitchTo(w->cxt);
		w->updated_names[w->nupdated] = changed;
		w->updated[w->nupdated++] = bms_copy(updated);
		MemoryContextSwitchTo(old);
	}
	return updated;
}

/*
 * Give rri rel's indexes, as ExecOpenIndices does, each with a copy of its
 * kept IndexInfo, but none opened yet (taskq_rel_shape_index opens one).
 * ExecInsertIndexTuples passes over those left closed;
 * taskq_rel_shape_close_indexes closes the others.
 */
void
taskq_rel_shape_indexes(const TaskqRelShape *s, ResultRelInfo *rri)
{
	int			n = s->nindexes;

	rri->ri_NumIndices = n;
	if (n == 0)
		return;
	rri->ri_IndexRelationDescs = palloc0(sizeof(Relation) * n);
	rri->ri_IndexRelationInfo = palloc(sizeof(IndexInfo *) * n);
	for (int i = 0; i < n; i++)
	{
		IndexInfo  *ii = palloc(sizeof(IndexInfo));

		memcpy(ii, s->infos[i], sizeof(IndexInfo));
		ii->ii_AmCache = NULL;
		ii->ii_Context = CurrentMemoryContext;
		ii->ii_ExpressionsState = NIL;
		rri->ri_IndexRelationInfo[i] = ii;
	}
}

/* The i-th index of rri, opened now if it was not yet. */
Relation
taskq_rel_shape_index(const TaskqRelShape *s, ResultRelInfo *rri, int i)
{
	if (rri->ri_IndexRelationDescs[i] == NULL)
		rri->ri_IndexRelationDescs[i] = index_open(s->index_oids[i], RowExclusiveLock);
	return rri->ri_IndexRelationDescs[i];
}

/*
 * Close the indexes of rri that were opened, as ExecCloseIndices does.
 * Up to 17 it passed over those left closed; from 18 it takes every one
 * as open (an Assert only), so it is given only the opened ones, moved to
 * the front of rri's arrays.  It is the last use of rri's indexes.
 */
void
taskq_rel_shape_close_indexes(ResultRelInfo *rri)
{
	int			n = 0;

	for (int i = 0; i < rri->ri_NumIndices; i++)
	{
		if (rri->ri_IndexRelationDescs[i] == NULL)
			continue;
		rri->ri_IndexRelationDescs[n] = rri->ri_IndexRelationDescs[i];
		rri->ri_IndexRelationInfo[n++] = rri->ri_IndexRelationInfo[i];
	}
	rri->ri_NumIndices = n;
	ExecCloseIndices(rri);
}
