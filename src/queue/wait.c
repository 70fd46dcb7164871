/*-------------------------------------------------------------------------
 *
 * wait.c
 *	  Waiting for a task to finish (and, for the workflow layer, a run):
 *	  sleep until it is completed or aborted, without polling.
 *
 * The waiter sleeps on the condition variable of the task's hash slot,
 * which the finishing transaction broadcasts after it commits
 * (ipc/wakeup.c).  It prepares to sleep before each look at the row, so a
 * broadcast between the look and the sleep is not lost, and it reads the
 * row with the latest snapshot, so the wait works in any isolation level.
 * A long recheck interval guards against a finish that sent no broadcast
 * (a row changed by hand); it is not a polling loop.  No lock is taken.
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
#include "ipc/shmem.h"
#include "ipc/wakeup.h"
#include "queue/queue.h"

/* Look again at least this often even without a wakeup. */
#define WAIT_RECHECK_MS 10000

static TaskqPlan look_plan = {
	"SELECT t, t.status_code OPERATOR(pg_catalog.>=) 'completed'::taskq.status"
	"  FROM taskq.tasks AS t WHERE t.id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/*
 * Wait until the row that look (one text argument: key) returns says it is
 * done (its second column), or until deadline if has_deadline: the row's
 * first column (a composite, in the caller's memory context), or NULL with
 * *isnull set after the deadline or if the row was deleted while waiting.
 * A key look never finds: 42704 naming what ("task", "run").  A row done
 * already is returned at once; to sleep, the shared memory of
 * shared_preload_libraries is needed (55000 naming fn).  The committer
 * broadcasts the condition variable of key's hash slot (ipc/wakeup.c:
 * taskq_note_finished).
 */
Datum
taskq_wait_until_done(TaskqPlan *look, const char *key, const char *what, const char *fn,
					  bool has_deadline, TimestampTz deadline, bool *isnull)
{
	ConditionVariable *cv = NULL;
	Datum		arg = CStringGetTextDatum(key);
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
		taskq_execute(look, &arg, NULL, true, 1);
		PopActiveSnapshot();

		if (SPI_processed == 0)
		{
			ConditionVariableCancelSleep();
			if (!found_row)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_OBJECT),
						 errmsg("%s \"%s\" does not exist", what, key)));
			break;				/* deleted while we waited: no result */
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
						 errmsg("taskq.%s requires taskq to be loaded via shared_preload_libraries to wait", fn),
						 errdetail("The %s \"%s\" is not finished yet.", what, key),
						 errhint("Add taskq to shared_preload_libraries in postgresql.conf and restart the server.")));
			cv = taskq_finish_cv(key);
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

/* wait_for_task: until task id is completed or aborted (its taskq.tasks row). */
Datum
taskq_wait_task(const char *id, bool has_deadline, TimestampTz deadline, bool *isnull)
{
	return taskq_wait_until_done(&look_plan, id, "task", "wait_for_task",
								 has_deadline, deadline, isnull);
}
