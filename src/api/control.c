/*-------------------------------------------------------------------------
 *
 * control.c
 *	  SQL faces of job control: cancel_tasks, cancel_workflow and
 *	  redrive_tasks.  The queue cancels and re-drives tasks
 *	  (queue/cancel.c); the workflow layer (workflow/control.c) keeps the
 *	  steps of runs out of it and cancels a run.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"

#include "common/args.h"
#include "queue/queue.h"
#include "workflow/workflow.h"

PG_FUNCTION_INFO_V1(taskq_cancel_tasks);
PG_FUNCTION_INFO_V1(taskq_cancel_workflow);
PG_FUNCTION_INFO_V1(taskq_redrive_tasks);

/*
 * cancel_tasks(ids text[]) returns bigint
 */
Datum
taskq_cancel_tasks(PG_FUNCTION_ARGS)
{
	List	   *ids = taskq_text_array_arg(fcinfo, 0, "ids", TASKQ_MAX_ID_LEN);
	int64		count;

	if (ids == NIL)
		PG_RETURN_INT64(0);
	list_sort(ids, taskq_compare_strings_lc);
	SPI_connect();
	taskq_refuse_run_tasks(ids, "cancel_tasks");
	count = taskq_cancel_tasks_dispatch(ids, "cancelled");
	SPI_finish();
	PG_RETURN_INT64(count);
}

/*
 * cancel_workflow(workflow text) returns bigint
 *
 * Cancel every unfinished task of the workflow and every task inserted
 * with its key from now on.
 */
Datum
taskq_cancel_workflow(PG_FUNCTION_ARGS)
{
	char	   *workflow = taskq_text_arg(fcinfo, 0, "workflow", TASKQ_MAX_ID_LEN);
	int64		count;

	SPI_connect();
	if (taskq_is_run(workflow))
	{
		/* a run's key: the run is cancelled as cancel_run does */
		(void) taskq_cancel_run(workflow);
		taskq_finished_dispatch();
		count = 1;
	}
	else
		count = taskq_cancel_workflow_key(workflow);
	SPI_finish();
	PG_RETURN_INT64(count);
}

/*
 * redrive_tasks(ids text[]) returns bigint
 *
 * Give aborted tasks another life: pending again with no tries used.  Each
 * becomes an unfinished predecessor again, so every task it names in
 * to_signal_after waits for it once more (num_signals + 1), which keeps
 * the signal count exact; re-drive those too for them to run.
 */
Datum
taskq_redrive_tasks(PG_FUNCTION_ARGS)
{
	List	   *ids = taskq_text_array_arg(fcinfo, 0, "ids", TASKQ_MAX_ID_LEN);
	int64		n;

	if (ids == NIL)
		PG_RETURN_INT64(0);
	list_sort(ids, taskq_compare_strings_lc);
	for (int i = 1; i < list_length(ids); i++)
		if (strcmp(list_nth(ids, i - 1), list_nth(ids, i)) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("task \"%s\" appears more than once in argument \"ids\"",
							(char *) list_nth(ids, i))));
	SPI_connect();
	taskq_refuse_run_tasks(ids, "redrive_tasks");
	n = taskq_redrive_ids(ids);
	SPI_finish();
	PG_RETURN_INT64(n);
}
