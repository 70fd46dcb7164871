/*-------------------------------------------------------------------------
 *
 * jobs.c
 *	  Progress of jobs (the job-progress seed): report_progress and
 *	  set_job_item_count, called by a worker for a task it owns.
 *
 * A job is the workflow of its tasks plus item counters in taskq.jobs; its
 * state is derived from the tasks (view taskq.job_states), so only these
 * calls write the job row.  Each is one atomic UPDATE of that row, so any
 * number of workers may report at once and the total stays exact; they
 * queue on the job row only for the moment of the update until commit.
 * Progress is announced on channel taskq_progress by the background
 * worker, coalesced per job like ready work.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "acl.h"
#include "taskq.h"

PG_FUNCTION_INFO_V1(taskq_report_progress);
PG_FUNCTION_INFO_V1(taskq_set_job_item_count);

/* The caller's task: its job, if the token still holds it. */
static TaskqPlan held_task_plan = {
	"SELECT t.status_code::text, t.performance_token OPERATOR(pg_catalog.=) $2,"
	"       t.cancelled, t.workflow,"
	"       EXISTS (SELECT 1 FROM taskq.jobs AS j WHERE j.id OPERATOR(pg_catalog.=) t.workflow)"
	"  FROM taskq.tasks AS t WHERE t.id OPERATOR(pg_catalog.=) $1",
	2, {TEXTOID, UUIDOID}
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
static char *
job_of_held_task(const char *id, Datum token)
{
	Datum		values[2];
	bool		isnull;
	char	   *code;
	char	   *job;

	taskq_acl_check_return(list_make1(pstrdup(id)));
	values[0] = CStringGetTextDatum(id);
	values[1] = token;
	taskq_execute(&held_task_plan, values, NULL, true, 0);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("task \"%s\" does not exist", id)));
	code = taskq_get_text(0, 1, NULL);
	if (!taskq_get_bool(0, 2, &isnull) || isnull)
		ereport(ERROR,
				(errcode(ERRCODE_TASKQ_INVALID_TOKEN),
				 errmsg("invalid performance token for task \"%s\"", id),
				 errhint("A worker holding a stale token must drop the task.")));
	if (strcmp(code, "completed") == 0 || strcmp(code, "aborted") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("task \"%s\" is already %s", id, code)));
	if (taskq_get_bool(0, 3, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("task \"%s\" was cancelled", id)));
	job = taskq_get_text(0, 4, &isnull);
	if (isnull || !taskq_get_bool(0, 5, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("task \"%s\" is not part of a job", id),
				 errhint("Create the job with taskq.create_job; its tasks carry its id as their workflow key.")));
	return job;
}

/*
 * report_progress(id text, token uuid, items bigint DEFAULT 1) returns bigint
 */
Datum
taskq_report_progress(PG_FUNCTION_ARGS)
{
	char	   *id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	int64		items;
	char	   *job;
	Datum		values[2];
	int64		total;

	taskq_require_arg(fcinfo, 1, "token");
	taskq_require_arg(fcinfo, 2, "items");
	items = PG_GETARG_INT64(2);
	if (items < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"items\" must not be negative")));

	SPI_connect();
	job = job_of_held_task(id, PG_GETARG_DATUM(1));
	values[0] = CStringGetTextDatum(job);
	values[1] = Int64GetDatum(items);
	taskq_execute(&add_progress_plan, values, NULL, false, 0);
	total = DatumGetInt64(taskq_get_datum(0, 1, NULL));
	taskq_note_progress(job);
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
	Datum		values[2];

	taskq_require_arg(fcinfo, 1, "token");
	taskq_require_arg(fcinfo, 2, "item_count");
	count = PG_GETARG_INT32(2);
	if (count < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"item_count\" must not be negative")));

	SPI_connect();
	job = job_of_held_task(id, PG_GETARG_DATUM(1));
	values[0] = CStringGetTextDatum(job);
	values[1] = Int32GetDatum(count);
	taskq_execute(&set_count_plan, values, NULL, false, 0);
	taskq_note_progress(job);
	SPI_finish();
	PG_RETURN_VOID();
}
