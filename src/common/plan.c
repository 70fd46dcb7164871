/*-------------------------------------------------------------------------
 *
 * plan.c
 *	  The prepared-plan cache, and readers of SPI results.
 *
 * Every statement taskq runs is a TaskqPlan: prepared on first use in a
 * backend and kept with SPI_keepplan, so repeated calls never re-parse or
 * re-plan (the plan cache still re-plans after DDL on taskq.tasks).
 *
 * Every statement here finds rows through an index: by a key, or by the
 * head of a partial index (the ready tasks, the leases, the finished).
 * Its tables start empty and grow (taskq.tasks, taskq.runs, the saga and
 * fan-in tables), and the plan cache keeps the generic plan it made in a
 * backend's first calls, when such a table held a page or two and a
 * sequential scan was the cheapest, until the next ANALYZE of the table:
 * by then every call scans the table whole (the expiry probe of each
 * own_tasks, the token check of each step).  So taskq's statements are
 * planned, whenever the plan cache plans them, with enable_seqscan off:
 * taskq_plan_hook, a planner hook, sets it for the planning of a
 * statement that taskq_execute runs and restores it at once.  A flag
 * costs each call nothing; a GUC set per statement cost more than the
 * probes it planned.
 *
 * A sequential scan that stays in such a plan (a table without a usable
 * index, or one the statement reads whole) carries the planner's
 * disable_cost, which puts the plan far above jit_above_cost: with JIT
 * available, as on a stock server, the executor compiled the statement
 * with LLVM at every execution (the background worker spent a tenth of a
 * core on it while idle).  No statement of taskq is worth compiling, so
 * their plans are made without JIT.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "jit/jit.h"
#include "optimizer/cost.h"
#include "optimizer/planner.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "common/plan.h"


static planner_hook_type prev_planner_hook = NULL;

/* depth of taskq_execute calls under way in this backend */
static int	executing = 0;

/*
 * Plan a statement of taskq_execute without sequential scans (banner).
 * Statements that its executor plans in turn (a function it calls) are
 * planned the same way; user code is never called from these statements.
 */
static PlannedStmt *
taskq_plan_hook(Query *parse, const char *query_string, int cursorOptions,
				ParamListInfo boundParams)
{
	bool		saved = enable_seqscan;
	PlannedStmt *result;

	if (executing > 0)
		enable_seqscan = false;
	PG_TRY();
	{
		if (prev_planner_hook)
			result = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
		else
			result = standard_planner(parse, query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		enable_seqscan = saved;
	}
	PG_END_TRY();
	if (executing > 0)
		result->jitFlags = PGJIT_NONE;
	return result;
}

/* Called once from _PG_init. */
void
taskq_plan_init(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = taskq_plan_hook;
}

/* The statement's plan, prepared the first time this backend runs it. */
static SPIPlanPtr
prepared(TaskqPlan *plan)
{
	if (plan->plan == NULL)
	{
		/*
		 * A plan marked generic never gets custom plans.  That is for
		 * statements with no choice of plan to make (an INSERT from
		 * unnest(), a lookup in a small table), where the plan cache
		 * would otherwise plan afresh on every call whose custom plan
		 * merely looks cheaper: that planning was a fifth of the cost of
		 * a one-task insert_tasks.  Lookups in taskq.tasks keep the
		 * default, custom plans while they are cheaper.
		 */
		SPIPlanPtr	p = SPI_prepare_cursor(plan->sql, plan->nargs, plan->argtypes,
										   plan->generic ? CURSOR_OPT_GENERIC_PLAN : 0);

		if (p == NULL)
			elog(ERROR, "taskq: could not prepare statement: %s",
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(p) != 0)
			elog(ERROR, "taskq: could not keep prepared statement");
		plan->plan = p;
	}
	return plan->plan;
}

/*
 * Run a cached statement, with the snapshot of this moment (latest) or
 * else the transaction's (SPI_execute_plan's rules).
 */
static int
execute(TaskqPlan *plan, Datum *values, const char *nulls, bool read_only, long tcount,
		bool latest)
{
	SPIPlanPtr	p = prepared(plan);
	int			rc;

	executing++;
	PG_TRY();
	{
		if (latest)
		{
			CommandCounterIncrement();	/* this transaction's own writes too */
			rc = SPI_execute_snapshot(p, values, nulls, GetLatestSnapshot(),
									  InvalidSnapshot, read_only, false, tcount);
		}
		else
			rc = SPI_execute_plan(p, values, nulls, read_only, tcount);
	}
	PG_FINALLY();
	{
		executing--;
	}
	PG_END_TRY();
	if (rc < 0)
		elog(ERROR, "taskq: statement failed: %s", SPI_result_code_string(rc));
	return rc;
}

/*
 * Run a cached statement; prepare it first if this backend has not yet.
 */
int
taskq_execute(TaskqPlan *plan, Datum *values, const char *nulls,
			  bool read_only, long tcount)
{
	return execute(plan, values, nulls, read_only, tcount, false);
}

/*
 * The same with a snapshot of this moment, which sees every commit so far
 * and this transaction's own writes: for what a lock just taken protects
 * (a READ COMMITTED statement's snapshot was taken before the lock, a
 * REPEATABLE READ transaction's before it began).
 */
int
taskq_execute_latest(TaskqPlan *plan, Datum *values, const char *nulls, bool read_only)
{
	return execute(plan, values, nulls, read_only, 0, true);
}

/* A column's datum; isnull may be NULL for a column that cannot be null. */
Datum
taskq_get_datum(int row, int col, bool *isnull)
{
	bool		dummy;

	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
						 col, isnull ? isnull : &dummy);
}

/* A text column as a palloc'd C string in the caller's context, or NULL. */
char *
taskq_get_text(int row, int col, bool *isnull)
{
	bool		dummy;
	Datum		d = taskq_get_datum(row, col, isnull ? isnull : &dummy);

	if (isnull ? *isnull : dummy)
		return NULL;
	return TextDatumGetCString(d);
}

int32
taskq_get_int32(int row, int col, bool *isnull)
{
	bool		dummy;
	Datum		d = taskq_get_datum(row, col, isnull ? isnull : &dummy);

	if (isnull ? *isnull : dummy)
		return 0;
	return DatumGetInt32(d);
}

bool
taskq_get_bool(int row, int col, bool *isnull)
{
	bool		dummy;
	Datum		d = taskq_get_datum(row, col, isnull ? isnull : &dummy);

	if (isnull ? *isnull : dummy)
		return false;
	return DatumGetBool(d);
}

/* A text[] column as a List of C strings (NULL elements skipped). */
List *
taskq_get_text_array(int row, int col)
{
	bool		isnull;
	Datum		d = taskq_get_datum(row, col, &isnull);

	return isnull ? NIL : taskq_text_array_list(d);
}

/* The non-null elements of a text[] datum, as a List of C strings. */
List *
taskq_text_array_list(Datum d)
{
	Datum	   *elems;
	bool	   *elnulls;
	int			n;
	List	   *result = NIL;

	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false,
					  TYPALIGN_INT, &elems, &elnulls, &n);
	for (int i = 0; i < n; i++)
		if (!elnulls[i])
			result = lappend(result, TextDatumGetCString(elems[i]));
	return result;
}

/* A List of C strings as a text[] datum; an empty list gives '{}'. */
Datum
taskq_text_array_datum(List *strings)
{
	int			n = list_length(strings);
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, strings)
		elems[i++] = CStringGetTextDatum((char *) lfirst(lc));
	return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false,
										   TYPALIGN_INT));
}

