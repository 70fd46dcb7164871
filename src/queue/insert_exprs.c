/*-------------------------------------------------------------------------
 *
 * insert_exprs.c
 *	  What the direct insert of task rows (row_insert.c) keeps with the
 *	  table's shape (rel_shape.c): the planned column defaults and CHECK
 *	  constraints, their states ready to evaluate, and the row slots.
 *	  Building them for each call cost more than writing the rows of a
 *	  small batch.
 *
 * No locking: they are backend-local, and live and die with the shape
 * (made at its first direct insert; a relcache invalidation of the table,
 * such as ALTER TABLE or DROP EXTENSION, replaces the shape, never while
 * an insert runs).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteHandler.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "queue/insert_exprs.h"

/*
 * The expressions of taskq.tasks as its kept shape (rel_shape.c) has them,
 * made at the shape's first direct insert in its memory: a relcache
 * invalidation that replaces the shape replaces them with it.
 */
InsertExprs *
taskq_insert_exprs(TaskqRelShape *shape, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TupleConstr *constr = desc->constr;
	MemoryContext old;

	if (shape->insert != NULL)
		return shape->insert;
	old = MemoryContextSwitchTo(shape->cxt);
	{
		InsertExprs *e = palloc0(sizeof(InsertExprs));

		e->cxt = shape->cxt;
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
		shape->insert = e;
	}
	MemoryContextSwitchTo(old);
	return shape->insert;
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
		MemoryContext old = MemoryContextSwitchTo(ie->cxt);

		for (int k = ie->nslots; k < n; k++)
			ie->slots[k] = MakeSingleTupleTableSlot(ie->desc, table_slot_callbacks(rel));
		ie->nslots = n;
		MemoryContextSwitchTo(old);
	}
	return ie->slots;
}
