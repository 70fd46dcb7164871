/*-------------------------------------------------------------------------
 *
 * jobs.c
 *	  SQL faces of jobs: report_progress and set_job_item_count.  The
 *	  workflow layer (workflow/jobs.c) does the work.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"

#include "common/args.h"
#include "queue/queue.h"
#include "workflow/workflow.h"
#include "api/action_limits.h"

PG_FUNCTION_INFO_V1(taskq_report_progress);
PG_FUNCTION_INFO_V1(taskq_set_job_item_count);

/*
 * report_progress(id text, token uuid, items bigint DEFAULT 1) returns bigint
 */
Datum
taskq_report_progress(PG_FUNCTION_ARGS)
{
	char	   *id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	int64		items;
	char	   *job;
	int64		total;

	taskq_require_arg(fcinfo, 1, "token");
	taskq_require_arg(fcinfo, 2, "items");
	items = PG_GETARG_INT64(2);
	if (items < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"items\" must not be negative")));

	taskq_acl_check_return(list_make1(pstrdup(id)));	/* limited workers */
	SPI_connect();
	job = taskq_job_of_held_task(id, PG_GETARG_DATUM(1));
	total = taskq_job_add_progress(job, items);
	SPI_finish();
	PG_RETURN_INT64(total);
}

/*
 * set_job_item_count(id text, token uuid, item_count int) returns void
 */
Datum
taskq_set_job_item_count(PG_FUNCTION_ARGS)
{
	char	   *id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	int32		count;
	char	   *job;

	taskq_require_arg(fcinfo, 1, "token");
	taskq_require_arg(fcinfo, 2, "item_count");
	count = PG_GETARG_INT32(2);
	if (count < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"item_count\" must not be negative")));

	taskq_acl_check_return(list_make1(pstrdup(id)));	/* limited workers */
	SPI_connect();
	job = taskq_job_of_held_task(id, PG_GETARG_DATUM(1));
	taskq_job_set_item_count(job, count);
	SPI_finish();
	PG_RETURN_VOID();
}
