/*-------------------------------------------------------------------------
 *
 * plan.h
 *	  Statements prepared once per backend and kept, and readers of their
 *	  results (plan.c).
 *
 * Every function here that runs SQL expects to be called between
 * SPI_connect() and SPI_finish() of the calling entry point.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_PLAN_H
#define TASKQ_PLAN_H

#include "executor/spi.h"
#include "nodes/pg_list.h"

#define TASKQ_PLAN_MAX_ARGS 16

typedef struct TaskqPlan
{
	const char *sql;
	int			nargs;
	Oid			argtypes[TASKQ_PLAN_MAX_ARGS];
	SPIPlanPtr	plan;			/* NULL until first use */
	bool		generic;		/* always the generic plan (see taskq_execute) */
} TaskqPlan;

extern void taskq_plan_init(void);
extern int	taskq_execute(TaskqPlan *plan, Datum *values, const char *nulls,
						  bool read_only, long tcount);
extern int	taskq_execute_latest(TaskqPlan *plan, Datum *values, const char *nulls,
								 bool read_only);
extern char *taskq_get_text(int row, int col, bool *isnull);
extern int32 taskq_get_int32(int row, int col, bool *isnull);
extern bool taskq_get_bool(int row, int col, bool *isnull);
extern Datum taskq_get_datum(int row, int col, bool *isnull);
extern List *taskq_get_text_array(int row, int col);
extern List *taskq_text_array_list(Datum d);
extern Datum taskq_text_array_datum(List *strings);

#endif							/* TASKQ_PLAN_H */
