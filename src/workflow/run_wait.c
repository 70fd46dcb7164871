/*-------------------------------------------------------------------------
 *
 * run_wait.c
 *	  Waiting for a run: sleep until it is finished or waiting, without
 *	  polling (wait_for_run).
 *
 * The queue's waiter (queue/wait.c) sleeps on the condition variable of the
 * run id's hash slot, which the transaction that finishes the run (or makes
 * it wait) broadcasts after it commits (taskq_run_set_status notes it).  No
 * lock is taken.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"

#include "common/plan.h"
#include "queue/queue.h"
#include "workflow/run.h"

static TaskqPlan look_plan = {
	"SELECT r, r.status OPERATOR(pg_catalog.<>) ALL (ARRAY['running', 'undoing'])"
	"  FROM taskq.runs AS r WHERE r.id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/*
 * Wait until run id is finished or waiting, or until deadline if
 * has_deadline: its row (a taskq.runs composite), or NULL with *isnull set
 * after the deadline or if the run was deleted meanwhile (queue/wait.c).
 */
Datum
taskq_wait_run(const char *id, bool has_deadline, TimestampTz deadline, bool *isnull)
{
	return taskq_wait_until_done(&look_plan, id, "run", "wait_for_run",
								 has_deadline, deadline, isnull);
}
