/*-------------------------------------------------------------------------
 *
 * wait.c
 *	  wait_for_task: sleep until a task is completed or aborted.
 *
 * The waiter sleeps on the condition variable of the task's hash slot,
 * which the finishing transaction broadcasts after it commits (ipc/wakeup.c).
 * It prepares to sleep before each look at the row, so a broadcast between
 * the look and the sleep is not lost, and it reads the row with the latest
 * snapshot, so the wait works in any isolation level.  A long recheck
 * interval guards against a finish that sent no broadcast (a row changed
 * by hand); it is not a polling loop.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/condition_variable.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "common/args.h"
#include "common/plan.h"
#include "common/settings.h"
#include "ipc/wakeup.h"
#include "queue/queue.h"

PG_FUNCTION_INFO_V1(taskq_wait_for_task);

/* Look again at least this often even without a wakeup. */
#define WAIT_RECHECK_MS 10000

static TaskqPlan look_plan = {
	"SELECT t, t.status_code OPERATOR(pg_catalog.>=) 'completed'::taskq.status"
	"  FROM taskq.tasks AS t WHERE t.id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

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
	ConditionVariable *cv;
	Datum		arg;
	Datum		result = (Datum) 0;
	bool		found_row = false;

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
	if (!taskq_shmem_available())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("taskq.wait_for_task requires taskq to be loaded via shared_preload_libraries"),
				 errhint("Add taskq to shared_preload_libraries in postgresql.conf and restart the server.")));

	cv = taskq_finish_cv(id);
	arg = CStringGetTextDatum(id);

	SPI_connect();
	for (;;)
	{
		bool		isnull;
		long		sleep_ms = WAIT_RECHECK_MS;

		ConditionVariablePrepareToSleep(cv);

		PushActiveSnapshot(GetLatestSnapshot());
		taskq_execute(&look_plan, &arg, NULL, true, 1);
		PopActiveSnapshot();

		if (SPI_processed == 0)
		{
			ConditionVariableCancelSleep();
			if (!found_row)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_OBJECT),
						 errmsg("task \"%s\" does not exist", id)));
			break;				/* deleted while we waited: no result */
		}
		found_row = true;
		if (taskq_get_bool(0, 2, NULL))
		{
			ConditionVariableCancelSleep();
			result = SPI_datumTransfer(taskq_get_datum(0, 1, &isnull), false, -1);
			SPI_finish();
			PG_RETURN_DATUM(result);
		}

		if (has_deadline)
		{
			long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
															   deadline);

			if (left <= 0)
			{
				ConditionVariableCancelSleep();
				break;
			}
			sleep_ms = Min(sleep_ms, left);
		}
		(void) ConditionVariableTimedSleep(cv, sleep_ms, PG_WAIT_EXTENSION);
	}
	SPI_finish();
	PG_RETURN_NULL();
}
