/*-------------------------------------------------------------------------
 *
 * run_wait.c
 *	  Waiting for a run: sleep until it is finished or waiting, without
 *	  polling (wait_for_run).
 *
 * The waiter sleeps on the condition variable of the run id's hash slot,
 * which the transaction that finishes the run (or makes it wait) broadcasts
 * after it commits (taskq_run_set_status notes it; ipc/wakeup.c).  As in
 * queue/wait.c, it prepares to sleep before each look, and looks with the
 * latest snapshot.  No lock is taken.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "common/plan.h"
#include "ipc/wakeup.h"
#include "workflow/run.h"

/* Look again at least this often even without a wakeup. */
#define WAIT_RECHECK_MS 10000

static TaskqPlan look_plan = {
	"SELECT r, r.status OPERATOR(pg_catalog.<>) ALL (ARRAY['running', 'undoing'])"
	"  FROM taskq.runs AS r WHERE r.id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/*
 * Wait until run id is finished or waiting, or until deadline if
 * has_deadline: its row (a taskq.runs composite, in the caller's memory
 * context), or NULL with *isnull set after the deadline or if the run was
 * deleted meanwhile.  Unknown id: 42704.  A run that is finished or
 * waiting already is returned at once, with or without shared memory; to
 * sleep, the shared memory of shared_preload_libraries is needed (55000).
 */
Datum
taskq_wait_run(const char *id, bool has_deadline, TimestampTz deadline, bool *isnull)
{
	ConditionVariable *cv = NULL;
	Datum		arg = CStringGetTextDatum(id);
	Datum		result = (Datum) 0;
	bool		found_row = false;

	*isnull = true;
	SPI_connect();
	for (;;)
	{
		bool		rownull;
		long		sleep_ms = WAIT_RECHECK_MS;

		if (cv)
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
						 errmsg("run \"%s\" does not exist", id)));
			break;				/* deleted while we waited */
		}
		found_row = true;
		if (taskq_get_bool(0, 2, NULL))
		{
			ConditionVariableCancelSleep();
			result = SPI_datumTransfer(taskq_get_datum(0, 1, &rownull), false, -1);
			*isnull = false;
			break;
		}
		if (cv == NULL)
		{
			if (!taskq_shmem_available())
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("taskq.wait_for_run requires taskq to be loaded via shared_preload_libraries to wait"),
						 errdetail("Run \"%s\" is %s.", id, "still running"),
						 errhint("Add taskq to shared_preload_libraries in postgresql.conf and restart the server.")));
			cv = taskq_finish_cv(id);
			continue;			/* prepare to sleep, then look again */
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
	return result;
}
