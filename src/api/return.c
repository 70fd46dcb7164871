/*-------------------------------------------------------------------------
 *
 * return.c
 *	  SQL faces of returning: return_task, return_tasks and release_task.  Arguments are
 *	  checked and turned into the queue's TaskqReturnItem; the queue
 *	  (queue/return.c) does the rest.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "common/args.h"
#include "queue/queue.h"
#include "api/action_limits.h"
#include "api/api.h"

PG_FUNCTION_INFO_V1(taskq_return_task);
PG_FUNCTION_INFO_V1(taskq_return_tasks);
PG_FUNCTION_INFO_V1(taskq_release_task);

/* A status_code argument: the enum's label, as the queue's status. */
TaskqStatus
taskq_status_code_arg(Datum d)
{
	return taskq_status_from_label(DatumGetCString(DirectFunctionCall1(enum_out, d)));
}

/*
 * A result argument (or element): at most TASKQ_MAX_RESULT_SIZE bytes in
 * jsonb form.
 */
Jsonb *
taskq_result_arg(Datum d, const char *argname, const char *id)
{
	Jsonb	   *result = DatumGetJsonbP(d);

	if (VARSIZE(result) > TASKQ_MAX_RESULT_SIZE)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("argument \"%s\" is too large for task \"%s\"", argname, id),
				 errdetail("A result is at most %d bytes in jsonb form; this one has %zu.",
						   TASKQ_MAX_RESULT_SIZE, (size_t) VARSIZE(result))));
	return result;
}

/*
 * return_task(id text, token uuid, status text, status_code taskq.status,
 *			   retry_delay interval DEFAULT NULL, result jsonb DEFAULT NULL)
 */
Datum
taskq_return_task(PG_FUNCTION_ARGS)
{
	char	   *id;
	pg_uuid_t  *token;
	char	   *status = NULL;
	TaskqStatus code;
	Interval   *retry_delay = NULL;
	TaskqReturnItem item;

	id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	taskq_require_arg(fcinfo, 1, "token");
	token = PG_GETARG_UUID_P(1);
	if (!PG_ARGISNULL(2))
		status = text_to_cstring(PG_GETARG_TEXT_PP(2));
	taskq_require_arg(fcinfo, 3, "status_code");
	code = taskq_status_code_arg(PG_GETARG_DATUM(3));

	taskq_acl_check_return(list_make1(id));	/* action_limits.c: limited workers */
	if (PG_NARGS() > 4 && !PG_ARGISNULL(4))
	{
		Interval	zero = {0};

		retry_delay = PG_GETARG_INTERVAL_P(4);
		if (code != TASKQ_PENDING)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"retry_delay\" applies only to a task returned as pending"),
					 errdetail("Task \"%s\" is returned as %s.", id, taskq_status_label(code))));
		if (DatumGetBool(DirectFunctionCall2(interval_lt, IntervalPGetDatum(retry_delay),
											 IntervalPGetDatum(&zero))))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"retry_delay\" must not be negative")));
	}

	item.id = id;
	item.token = token;
	item.status = status;
	item.code = code;
	item.retry_delay = retry_delay;
	item.result = NULL;
	if (PG_NARGS() > 5 && !PG_ARGISNULL(5))
		item.result = taskq_result_arg(PG_GETARG_DATUM(5), "result", id);
	SPI_connect();
	taskq_return(&item, 1, "return_task()");
	SPI_finish();
	PG_RETURN_VOID();
}

static int
compare_return_items(const void *a, const void *b)
{
	return strcmp(((const TaskqReturnItem *) a)->id, ((const TaskqReturnItem *) b)->id);
}

/*
 * return_tasks(ids text[], tokens uuid[], statuses text[],
 *				status_codes taskq.status[], results jsonb[]) returns bigint
 *
 * The arguments of return_tasks (from argument first on, and results at
 * results_arg: return_and_own has them too), checked, as the queue's items
 * in id order, so that
 * concurrent batch returns lock rows in one order; the session's
 * per-action limits are checked too.  statuses may be NULL (no status
 * text).
 */
TaskqReturnItem *
taskq_return_args(FunctionCallInfo fcinfo, int first, int results_arg, int *nitems)
{
	Datum	   *results = NULL;
	bool	   *rnulls = NULL;
	int			nresults = 0;
	List	   *ids;
	Datum	   *tokens,
			   *statuses = NULL,
			   *codes;
	bool	   *tnulls,
			   *snulls = NULL,
			   *cnulls;
	int			ntokens,
				nstatuses = 0,
				ncodes;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	TaskqReturnItem *items;
	int			n,
				i;
	ListCell   *lc;

	ids = taskq_text_array_arg(fcinfo, first, "ids", TASKQ_MAX_ID_LEN);
	taskq_require_arg(fcinfo, first + 1, "tokens");
	taskq_require_arg(fcinfo, first + 3, "status_codes");
	n = list_length(ids);

	deconstruct_array(PG_GETARG_ARRAYTYPE_P(first + 1), UUIDOID, UUID_LEN, false,
					  TYPALIGN_CHAR, &tokens, &tnulls, &ntokens);
	if (!PG_ARGISNULL(first + 2))
		deconstruct_array(PG_GETARG_ARRAYTYPE_P(first + 2), TEXTOID, -1, false,
						  TYPALIGN_INT, &statuses, &snulls, &nstatuses);
	{
		ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(first + 3);

		get_typlenbyvalalign(ARR_ELEMTYPE(arr), &typlen, &typbyval, &typalign);
		deconstruct_array(arr, ARR_ELEMTYPE(arr), typlen, typbyval, typalign,
						  &codes, &cnulls, &ncodes);
	}
	if (PG_NARGS() > results_arg && !PG_ARGISNULL(results_arg))
	{
		deconstruct_array(PG_GETARG_ARRAYTYPE_P(results_arg), JSONBOID, -1, false,
						  TYPALIGN_INT, &results, &rnulls, &nresults);
		if (nresults != n)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("arrays \"ids\" and \"results\" must have the same length"),
					 errdetail("\"ids\" has %d elements, \"results\" %d.", n, nresults)));
	}
	if (ntokens != n || ncodes != n || (statuses && nstatuses != n))
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("arrays \"ids\", \"tokens\", \"statuses\" and \"status_codes\" must have the same length"),
				 errdetail("\"ids\" has %d elements, \"tokens\" %d, \"statuses\" %d, \"status_codes\" %d.",
						   n, ntokens, statuses ? nstatuses : n, ncodes)));

	items = palloc0(sizeof(TaskqReturnItem) * Max(n, 1));
	i = 0;
	foreach(lc, ids)
	{
		if (tnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"tokens\" must not contain null elements")));
		if (cnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"status_codes\" must not contain null elements")));
		items[i].id = lfirst(lc);
		items[i].token = DatumGetUUIDP(tokens[i]);
		items[i].status = (statuses && !snulls[i]) ?
			TextDatumGetCString(statuses[i]) : NULL;
		items[i].code = taskq_status_code_arg(codes[i]);
		items[i].result = (results && !rnulls[i]) ?
			taskq_result_arg(results[i], "results", items[i].id) : NULL;
		i++;
	}
	qsort(items, n, sizeof(TaskqReturnItem), compare_return_items);
	for (i = 1; i < n; i++)
		if (strcmp(items[i - 1].id, items[i].id) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("task \"%s\" appears more than once in argument \"ids\"",
							items[i].id)));

	taskq_acl_check_return(ids);	/* action_limits.c: limited workers */
	*nitems = n;
	return items;
}

/*
 * return_tasks(ids text[], tokens uuid[], statuses text[],
 *				status_codes taskq.status[], results jsonb[] DEFAULT NULL)
 *	 returns bigint
 *
 * All or none.
 */
Datum
taskq_return_tasks(PG_FUNCTION_ARGS)
{
	int			n;
	TaskqReturnItem *items = taskq_return_args(fcinfo, 0, 4, &n);

	SPI_connect();
	taskq_return(items, n, "return_tasks()");
	SPI_finish();
	PG_RETURN_INT64(n);
}

/*
 * release_task(id text, token uuid) returns void
 */
Datum
taskq_release_task(PG_FUNCTION_ARGS)
{
	char	   *id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	pg_uuid_t  *token;

	taskq_require_arg(fcinfo, 1, "token");
	token = PG_GETARG_UUID_P(1);
	taskq_acl_check_return(list_make1(id));	/* action_limits.c: limited workers */
	SPI_connect();
	taskq_release(id, token);
	SPI_finish();
	PG_RETURN_VOID();
}
