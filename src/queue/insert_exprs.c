/*-------------------------------------------------------------------------
 *
 * insert_exprs.c
 *	  What the direct insert of task rows (row_insert.c) keeps per backend
 *	  for taskq.tasks: the planned column defaults and CHECK constraints,
 *	  their states ready to evaluate, and the row slots (the indexes'
 *	  predicates are kept with the table's shape, rel_shape.c).  Building
 *	  them for each call cost more than writing the rows of a small batch.
 *
 * No locking: the cache is backend-local.  A relcache invalidation of the
 * table (ALTER TABLE, DROP EXTENSION) marks it stale, and it is built
 * again at the start of the next insert, never while one runs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteHandler.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "queue/insert_exprs.h"

static MemoryContext exprs_cxt = NULL;
static InsertExprs *exprs = NULL;
static bool exprs_stale = false;
static bool exprs_callback = false;

static void
exprs_invalidate(Datum arg, Oid relid)
{
	if (exprs != NULL && (relid == InvalidOid || relid == exprs->relid))
		exprs_stale = true;
}

InsertExprs *
taskq_insert_exprs(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TupleConstr *constr = desc->constr;
	MemoryContext old;

	if (exprs != NULL && !exprs_stale && exprs->relid == RelationGetRelid(rel) &&
		exprs->natts == desc->natts &&
		exprs->ncheck == (constr ? constr->num_check : 0))
		return exprs;
	if (!exprs_callback)
	{
		CacheRegisterRelcacheCallback(exprs_invalidate, (Datum) 0);
		exprs_callback = true;
	}
	if (exprs_cxt == NULL)
		exprs_cxt = AllocSetContextCreate(CacheMemoryContext, "taskq insert expressions",
										  ALLOCSET_SMALL_SIZES);
	MemoryContextReset(exprs_cxt);
	exprs = NULL;
	exprs_stale = false;
	old = MemoryContextSwitchTo(exprs_cxt);
	{
		InsertExprs *e = palloc0(sizeof(InsertExprs));

		e->relid = RelationGetRelid(rel);
		e->natts = desc->natts;
		e->defaults = palloc0(sizeof(Expr *) * desc->natts);
		for (int a = 0; a < desc->natts; a++)
		{
			Node	   *def;

			if (TupleDescAttr(desc, a)->attisdropped)
				continue;
			def = build_column_default(rel, a + 1);
			if (def != NULL)
				e->defaults[a] = expression_planner((Expr *) def);
		}
		e->desc = CreateTupleDescCopy(desc);
		e->slots = palloc0(sizeof(TupleTableSlot *) * INSERT_CHUNK);
		e->ncheck = constr ? constr->num_check : 0;
		e->checks = palloc0(sizeof(Expr *) * Max(e->ncheck, 1));
		for (int i = 0; i < e->ncheck; i++)
			e->checks[i] = expression_planner(stringToNode(constr->check[i].ccbin));
		e->default_states = palloc0(sizeof(ExprState *) * desc->natts);
		for (int a = 0; a < desc->natts; a++)
			if (e->defaults[a] != NULL)
				e->default_states[a] = ExecInitExpr(e->defaults[a], NULL);
		e->check_states = palloc0(sizeof(ExprState *) * Max(e->ncheck, 1));
		for (int i = 0; i < e->ncheck; i++)
			e->check_states[i] = ExecInitExpr(e->checks[i], NULL);
		exprs = e;
	}
	MemoryContextSwitchTo(old);
	return exprs;
}

/*
 * The first n (at most INSERT_CHUNK) of the kept row slots, made on first
 * use: making a thousand of them for each call cost a fifth of a large
 * batch's insert.  They hold no buffer pins; the rows they hold are freed
 * as they are cleared.
 */
TupleTableSlot **
taskq_insert_slots(InsertExprs *ie, Relation rel, int n)
{
	if (ie->nslots < n)
	{
		MemoryContext old = MemoryContextSwitchTo(exprs_cxt);

		for (int k = ie->nslots; k < n; k++)
			ie->slots[k] = MakeSingleTupleTableSlot(ie->desc, table_slot_callbacks(rel));
		ie->nslots = n;
		MemoryContextSwitchTo(old);
	}
	return ie->slots;
}
