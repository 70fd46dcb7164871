/*-------------------------------------------------------------------------
 *
 * insert_exprs.c
 *	  What the direct insert of task rows (insert_rows.c) keeps with the
 *	  table's shape (tasks_shape.c): the planned column defaults and CHECK
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

#include "common/direct_write.h"
#include "queue/insert_exprs.h"

/*
 * The expressions of taskq.tasks as its kept shape (tasks_shape.c) has them,
 * made at the shape's first direct insert in its memory: a relcache
 * invalidation that replaces the shape replaces them with it.
 */
TaskqInsertExprs *
taskq_insert_exprs(TaskqRelShape *shape, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TupleConstr *constr = desc->constr;
	MemoryContext old;

	if (shape->insert != NULL)
		return shape->insert;
	old = MemoryContextSwitchTo(shape->cxt);
	{
		TaskqInsertExprs *e = palloc0(sizeof(TaskqInsertExprs));

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
taskq_insert_slots(TaskqInsertExprs *ie, Relation rel, int n)
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

/*
 * names (ncols of them) as attributes of the table, kept with the
 * expressions for each list a caller passes (a static array: its address
 * is its identity): looking each name up among the columns cost a call a
 * string comparison per name and column.
 */
TaskqInsertColumns *
taskq_insert_columns(TaskqInsertExprs *ie, const TaskqRel *d, const char *const *names, int ncols)
{
	TaskqInsertColumns *l;
	MemoryContext old;
	AttrNumber	not_before = d->col->not_before;

	for (int i = 0; i < ie->nlists; i++)
		if (ie->lists[i]->names == names && ie->lists[i]->ncols == ncols)
			return ie->lists[i];

	old = MemoryContextSwitchTo(ie->nlists < INSERT_COLUMN_LISTS ? ie->cxt : CurrentMemoryContext);
	l = palloc0(sizeof(TaskqInsertColumns));
	l->names = names;
	l->ncols = ncols;
	l->id_col = -1;
	l->applies = true;
	l->given = palloc(sizeof(int) * ie->natts);
	l->defaults = palloc0(sizeof(ExprState *) * ie->natts);
	for (int a = 0; a < ie->natts; a++)
		l->given[a] = -1;
	for (int c = 0; c < ncols && l->applies; c++)
	{
		AttrNumber	att = taskq_column(d->desc, names[c]);

		if (strcmp(names[c], "id") == 0)
			l->id_col = c;
		if (att == InvalidAttrNumber)
			l->applies = false;
		else
			l->given[att - 1] = c;
	}
	l->applies &= l->id_col >= 0;
	for (int a = 0; a < ie->natts; a++)
	{
		if (TupleDescAttr(d->desc, a)->attisdropped ||
			(l->given[a] >= 0 && a != not_before - 1))
			continue;
		l->defaults[a] = ie->default_states[a];
	}
	if (ie->nlists < INSERT_COLUMN_LISTS)
		ie->lists[ie->nlists++] = l;
	MemoryContextSwitchTo(old);
	return l;
}
