/*-------------------------------------------------------------------------
 *
 * runs.c
 *	  SQL faces of runs of any kind: wait_for_run, cancel_run, and the
 *	  internal _fire_timers (the background worker's firing of the timers
 *	  of runs, for tests).  The workflow layer (workflow/run_wait.c, the
 *	  kinds' cancel, workflow/run_timers.c) does the work.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "common/args.h"
#include "workflow/workflow.h"
#include "api/api.h"

PG_FUNCTION_INFO_V1(taskq_wait_for_run);
PG_FUNCTION_INFO_V1(taskq_cancel_run_sql);
PG_FUNCTION_INFO_V1(taskq_fire_timers_sql);

/* wait_for_run(id text, timeout interval DEFAULT NULL) returns taskq.runs */
Datum
taskq_wait_for_run(PG_FUNCTION_ARGS)
{
	char	   *id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	TimestampTz deadline = 0;
	bool		has_deadline = taskq_timeout_arg(fcinfo, 1, &deadline);
	bool		isnull;
	Datum		row;

	row = taskq_wait_run(id, has_deadline, deadline, &isnull);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(row);
}

/* cancel_run(id text) returns text: the new status */
Datum
taskq_cancel_run_sql(PG_FUNCTION_ARGS)
{
	char	   *id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	const char *status;

	SPI_connect();
	status = taskq_cancel_run(id);
	SPI_finish();
	PG_RETURN_TEXT_P(cstring_to_text(status));
}

/*
 * _fire_timers() returns timestamptz: the timers of runs due now fired as
 * the background worker fires them (in this transaction); when to look
 * again (NULL: no timer).
 */
Datum
taskq_fire_timers_sql(PG_FUNCTION_ARGS)
{
	TimestampTz next;

	SPI_connect();
	next = taskq_fire_run_timers(GetCurrentTimestamp());
	SPI_finish();
	if (next == 0)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(next);
}
