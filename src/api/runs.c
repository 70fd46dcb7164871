/*-------------------------------------------------------------------------
 *
 * runs.c
 *	  SQL faces of runs of any kind: wait_for_run and cancel_run.  The
 *	  workflow layer (workflow/run_wait.c, the kinds' cancel) does the work.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "common/args.h"
#include "workflow/workflow.h"
#include "api/api.h"

PG_FUNCTION_INFO_V1(taskq_wait_for_run);
PG_FUNCTION_INFO_V1(taskq_cancel_run_sql);

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
