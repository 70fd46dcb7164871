/*-------------------------------------------------------------------------
 *
 * wait.c
 *	  SQL face of wait_for_task; the queue (queue/wait.c) waits.
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

PG_FUNCTION_INFO_V1(taskq_wait_for_task);

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
	if (!PG_ARGISNULL(1))
	{
		Interval   *timeout = PG_GETARG_INTERVAL_P(1);
		Interval	zero = {0};

		if (DatumGetBool(DirectFunctionCall2(interval_lt,
											 IntervalPGetDatum(timeout),
											 IntervalPGetDatum(&zero))))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"timeout\" must not be negative")));
		deadline = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
														   TimestampTzGetDatum(GetCurrentTimestamp()),
														   IntervalPGetDatum(timeout)));
		has_deadline = true;
	}
	row = taskq_wait_task(id, has_deadline, deadline, &isnull);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(row);
}
