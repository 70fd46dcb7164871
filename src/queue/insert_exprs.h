/*-------------------------------------------------------------------------
 *
 * insert_exprs.h
 *	  The column defaults, CHECK constraints and row slots of taskq.tasks
 *	  that the direct insert (insert_rows.c) keeps with the table's shape:
 *	  see insert_exprs.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_INSERT_EXPRS_H
#define TASKQ_INSERT_EXPRS_H

#include "executor/executor.h"
#include "utils/relcache.h"

#include "queue/tasks_rel.h"

/* Rows written per table_multi_insert call (COPY buffers as many). */
#define INSERT_CHUNK 1000

/* Column lists kept per shape: the insert's, with and without "trigger". */
#define INSERT_COLUMN_LISTS 4

struct TaskqInsertColumns;

/*
 * The planned column defaults and CHECK constraints of taskq.tasks, kept
 * with its shape: reading them from the catalog's node strings and
 * planning them cost more than writing a row of a small batch.
 */
typedef struct TaskqInsertExprs
{
	MemoryContext cxt;			/* the shape's */
	int			natts;
	Expr	  **defaults;		/* per attribute: planned default, or NULL */
	int			ncheck;
	Expr	  **checks;			/* planned, in the order of constr->check */
	TupleDesc	desc;			/* a copy, for the slots */
	int			nslots;
	TupleTableSlot **slots;		/* INSERT_CHUNK slots, made on first use */
	/*
	 * The same, ready to evaluate (made without a parent plan, so that
	 * every call can use them with its own expression context): per
	 * attribute its default, and the CHECK constraints.  Initializing them
	 * cost a tenth of a one-task insert.
	 */
	ExprState **default_states;
	ExprState **check_states;
	/* the column lists of the callers, as attributes (taskq_insert_columns) */
	int			nlists;
	struct TaskqInsertColumns *lists[INSERT_COLUMN_LISTS];
} TaskqInsertExprs;

/*
 * A caller's list of named columns, mapped onto the table's attributes:
 * per attribute the index of its name in the list (or -1) and the default
 * that fills it (the list's names and a NULL not_before take none).
 */
typedef struct TaskqInsertColumns
{
	const char *const *names;	/* the caller's (static) list */
	int			ncols;
	bool		applies;		/* every name is a column, id among them */
	int			id_col;			/* index of "id" in names */
	int		   *given;
	ExprState **defaults;
} TaskqInsertColumns;

extern TaskqInsertExprs *taskq_insert_exprs(TaskqRelShape *shape, Relation rel);
extern TaskqInsertColumns *taskq_insert_columns(TaskqInsertExprs *ie, const TaskqRel *d,
										   const char *const *names, int ncols);
extern TupleTableSlot **taskq_insert_slots(TaskqInsertExprs *ie, Relation rel, int n);

#endif
