/*-------------------------------------------------------------------------
 *
 * wait.c
 *	  SQL face of wait_for_task; the queue (queue/wait.c) waits.  The
 *	  timeout arguments of every wait.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "common/args.h"
#include "queue/queue.h"
#include "api/api.h"

PG_FUNCTION_INFO_V1(taskq_wait_for_task);

/*
 * The deadline of a "timeout" argument (argno): false if it is NULL (no
 * deadline), 22023 if negative.
 */
bool
taskq_timeout_arg(FunctionCallInfo fcinfo, int argno, TimestampTz *deadline)
{
	Interval   *timeout;
	Interval	zero = {0};

	if (PG_ARGISNULL(argno))
		return false;
	timeout = PG_GETARG_INTERVAL_P(argno);
	if (DatumGetBool(DirectFunctionCall2(interval_lt,
										 IntervalPGetDatum(timeout),
										 IntervalPGetDatum(&zero))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"timeout\" must not be negative")));
	*deadline = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
														TimestampTzGetDatum(GetCurrentTimestamp()),
														IntervalPGetDatum(timeout)));
	return true;
}

/*
 * wait_for_task(id text, timeout interval DEFAULT NULL) returns taskq.tasks
 *
 * NULL after timeout; a NULL timeout waits until the task finishes or the
 * statement is cancelled.
 */
Datum
taskq_wait_for_task(PG_FUNCTION_ARGS)
{
	char	   *id;
	TimestampTz deadline = 0;
	bool		has_deadline = false;
	bool		isnull;
	Datum		row;

	id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	has_deadline = taskq_timeout_arg(fcinfo, 1, &deadline);
	row = taskq_wait_task(id, has_deadline, deadline, &isnull);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(row);
}
