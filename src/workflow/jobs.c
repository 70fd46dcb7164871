/*-------------------------------------------------------------------------
 *
 * jobs.c
 *	  Jobs: the progress a task's owner reports for its workflow's job.
 *	  The task is the queue's (its view, queue/task_view.c); the job's row
 *	  in taskq.jobs is this file's.  No lock on the task: its owner asks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/uuid.h"

#include "common/plan.h"
#include "ipc/wakeup.h"
#include "queue/queue.h"
#include "workflow/workflow.h"

/* Is there a job with this id? */
static TaskqPlan job_exists_plan = {
	"SELECT 1 FROM taskq.jobs WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static TaskqPlan add_progress_plan = {
	"UPDATE taskq.jobs"
	"   SET item_progress = item_progress OPERATOR(pg_catalog.+) $2,"
	"       updated_at = pg_catalog.now()"
	" WHERE id OPERATOR(pg_catalog.=) $1"
	" RETURNING item_progress",
	2, {TEXTOID, INT8OID}
};

static TaskqPlan set_count_plan = {
	"UPDATE taskq.jobs SET item_count = $2, updated_at = pg_catalog.now()"
	" WHERE id OPERATOR(pg_catalog.=) $1",
	2, {TEXTOID, INT4OID}
};

/*
 * The job of task id, which the caller must own with token: the same checks
 * and errors as return_task (42704, TQ001, 55000), then 55000 if the task is
 * not part of a job.
 */
char *
taskq_job_of_held_task(const char *id, Datum token)
{
	TaskqTaskView task;
	Datum		arg;

	if (!taskq_task_peek(id, TASKQ_PEEK_READ_ONLY, &task))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("task \"%s\" does not exist", id)));
	if (!task.has_token ||
		memcmp(&task.token, DatumGetUUIDP(token), sizeof(pg_uuid_t)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_TASKQ_INVALID_TOKEN),
				 errmsg("invalid performance token for task \"%s\"", id),
				 errhint("A worker holding a stale token must drop the task.")));
	if (taskq_status_finished(task.code))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("task \"%s\" is already %s", id, taskq_status_label(task.code))));
	if (task.cancelled)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("task \"%s\" was cancelled", id)));
	if (task.workflow != NULL)
	{
		arg = CStringGetTextDatum(task.workflow);
		taskq_execute(&job_exists_plan, &arg, NULL, true, 0);
	}
	if (task.workflow == NULL || SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("task \"%s\" is not part of a job", id),
				 errhint("Create the job with taskq.create_job; its tasks carry its id as their workflow key.")));
	return task.workflow;
}

/* Add items to the progress of job; returns its new progress. */
int64
taskq_job_add_progress(const char *job, int64 items)
{
	Datum		values[2];

	values[0] = CStringGetTextDatum(job);
	values[1] = Int64GetDatum(items);
	taskq_execute(&add_progress_plan, values, NULL, false, 0);
	taskq_note_progress(job);
	return DatumGetInt64(taskq_get_datum(0, 1, NULL));
}

/* Set the number of items of job. */
void
taskq_job_set_item_count(const char *job, int64 count)
{
	Datum		values[2];

	values[0] = CStringGetTextDatum(job);
	values[1] = Int32GetDatum((int32) count);
	taskq_execute(&set_count_plan, values, NULL, false, 0);
	taskq_note_progress(job);
}
