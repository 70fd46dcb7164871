/*-------------------------------------------------------------------------
 *
 * insert.c
 *	  SQL faces of inserting: insert_tasks, replace_tasks,
 *	  insert_tasks_if_absent and the shapes' _insert_after.  The JSON task
 *	  objects become the queue's TaskSpecs (task_input.c); the queue
 *	  (queue/insert.c) checks the batch whole and inserts it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "common/args.h"
#include "queue/queue.h"
#include "workflow/workflow.h"
#include "api/task_input.h"

PG_FUNCTION_INFO_V1(taskq_insert_tasks);
PG_FUNCTION_INFO_V1(taskq_replace_tasks);
PG_FUNCTION_INFO_V1(taskq_insert_after);
PG_FUNCTION_INFO_V1(taskq_insert_tasks_if_absent);

static Datum
insert_or_replace(FunctionCallInfo fcinfo, TaskqInsertMode mode, List *afters,
				  List *waiting)
{
	List	   *specs;
	int64		n;

	taskq_require_arg(fcinfo, 0, "tasks");
	specs = taskq_parse_tasks(PG_GETARG_JSONB_P(0), "tasks");
	if (specs == NIL)
		PG_RETURN_INT64(0);
	SPI_connect();
	if (mode == TASKQ_INSERT_REPLACE)
	{
		List	   *ids = NIL;
		ListCell   *lc;

		foreach(lc, specs)
			ids = lappend(ids, ((TaskqTaskSpec *) lfirst(lc))->id);
		taskq_refuse_run_tasks(ids, "replace_tasks");
	}
	n = taskq_insert(specs, mode, afters, waiting, NULL);
	SPI_finish();
	PG_RETURN_INT64(n);
}

/* insert_tasks(tasks jsonb) returns bigint */
Datum
taskq_insert_tasks(PG_FUNCTION_ARGS)
{
	return insert_or_replace(fcinfo, TASKQ_INSERT_PLAIN, NIL, NIL);
}

/* replace_tasks(tasks jsonb) returns bigint */
Datum
taskq_replace_tasks(PG_FUNCTION_ARGS)
{
	return insert_or_replace(fcinfo, TASKQ_INSERT_REPLACE, NIL, NIL);
}

/*
 * _insert_after(tasks jsonb, after_ids text[], waiting_ids text[])
 * returns bigint
 *
 * insert_tasks for the shapes: each task of waiting_ids (tasks of the
 * batch) also waits for every stored task of after_ids, added before the
 * batch's spontaneous tasks are completed.
 */
Datum
taskq_insert_after(PG_FUNCTION_ARGS)
{
	List	   *afters = NIL;
	List	   *waiting = NIL;

	if (!PG_ARGISNULL(1))
		afters = taskq_text_array_arg(fcinfo, 1, "after_ids", TASKQ_MAX_ID_LEN);
	if (!PG_ARGISNULL(2))
	{
		Datum	   *elems;
		bool	   *elnulls;
		int			n;

		/* ids taken from the batch: insert_tasks itself reports bad ones */
		deconstruct_array(PG_GETARG_ARRAYTYPE_P(2), TEXTOID, -1, false,
						  TYPALIGN_INT, &elems, &elnulls, &n);
		for (int i = 0; i < n; i++)
			if (!elnulls[i])
				waiting = lappend(waiting, TextDatumGetCString(elems[i]));
	}
	return insert_or_replace(fcinfo, TASKQ_INSERT_PLAIN, afters, waiting);
}

/*
 * insert_tasks_if_absent(tasks jsonb) returns table (id text, inserted boolean)
 *
 * The idempotent enqueue: tasks whose id is stored already are left as they
 * are (and reported with inserted = false); the others are inserted as by
 * insert_tasks, all or none.  Edges of the batch into a skipped task follow
 * the rules for stored successors.  Rows come back in argument order.
 */
Datum
taskq_insert_tasks_if_absent(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *specs;
	bool	   *inserted;
	ListCell   *lc;
	int			i = 0;

	taskq_require_arg(fcinfo, 0, "tasks");
	specs = taskq_parse_tasks(PG_GETARG_JSONB_P(0), "tasks");
	InitMaterializedSRF(fcinfo, 0);
	if (specs == NIL)
		return (Datum) 0;
	inserted = palloc(sizeof(bool) * list_length(specs));
	SPI_connect();
	(void) taskq_insert(specs, TASKQ_INSERT_IF_ABSENT, NIL, NIL, inserted);
	SPI_finish();
	foreach(lc, specs)
	{
		TaskqTaskSpec *s = lfirst(lc);
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = CStringGetTextDatum(s->id);
		values[1] = BoolGetDatum(inserted[i++]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
