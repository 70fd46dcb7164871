/*-------------------------------------------------------------------------
 *
 * seam.c
 *	  The seam between the queue and the workflow layer.  The queue calls
 *	  two hooks, in the caller's transaction: taskq_return_hook before a
 *	  return or release locks any task row (queue/return.c), and
 *	  taskq_finished_hook with the tasks each of its calls finished
 *	  (queue/lifecycle.c).  Here both find the run a task belongs to and
 *	  hand the task to the kind of that run (state machines, sagas).
 *
 * A workflow step is an ordinary task "<run id>/<n>".  A worker that
 * returns it with return_task, return_tasks or return_and_own reaches its
 * kind through the return hook, which takes the locks of the runs first
 * (the lock order: run, then task rows); an expiry, a cancel or an abort
 * reaches it through the finished hook, before the queue's call returns.
 * Either way the kind writes its bookkeeping through the queue's C API in
 * that transaction: it commits or rolls back with the step, exactly once.
 * (The finished hook takes the run's lock after the queue locked the task
 * row; only the background worker's expiry sweep and a cancel get there
 * that way, and a deadlock with a worker's return, were it to happen, is
 * broken by PostgreSQL and retried by the worker loop.)
 *
 * A kind's own calls into the queue (taskq_workflow_direct) pass the
 * return hook by.  Backend-local: no locking of its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "common/args.h"
#include "common/plan.h"
#include "queue/queue.h"
#include "workflow/run.h"
#include "workflow/workflow.h"

#define MAX_WORKFLOW_KINDS 8

static const TaskqWorkflowKind *kinds[MAX_WORKFLOW_KINDS];
static int	nkinds = 0;
static int	direct_depth = 0;

/* A kind's own calls into the queue are not handed back to it. */
void
taskq_workflow_direct(bool on)
{
	direct_depth += on ? 1 : -1;
	Assert(direct_depth >= 0);
}

const TaskqWorkflowKind *
taskq_workflow_kind(const char *name)
{
	for (int k = 0; k < nkinds; k++)
		if (strcmp(kinds[k]->name, name) == 0)
			return kinds[k];
	elog(ERROR, "taskq: unknown workflow kind \"%s\"", name);
	return NULL;				/* keep compiler quiet */
}

static TaskqPlan runs_plan = {
	"SELECT id FROM taskq.runs WHERE id OPERATOR(pg_catalog.=) ANY ($1) ORDER BY id",
	1, {TEXTARRAYOID}
};

/*
 * Return hook: lock the runs of the returned items that are steps (in id
 * order, before any task row), then hand each step to its kind.
 */
static void
workflow_returned(TaskqReturnItem *items, int n, bool release)
{
	List	   *candidates = NIL;
	List	   *runs = NIL;
	Datum		arg;
	ListCell   *lc;

	if (direct_depth > 0)
		return;
	for (int i = 0; i < n; i++)
	{
		char	   *run = taskq_run_of_task(items[i].id);

		if (run && !taskq_string_member(candidates, run))
			candidates = lappend(candidates, run);
	}
	if (candidates == NIL || !taskq_schema_at_least_0_5())
		return;					/* no runs, or a schema from before runs */
	arg = taskq_text_array_datum(candidates);
	taskq_execute(&runs_plan, &arg, NULL, false, 0);
	for (uint64 r = 0; r < SPI_processed; r++)
		runs = lappend(runs, taskq_get_text(r, 1, NULL));
	foreach(lc, runs)
		taskq_run_lock(lfirst(lc));

	for (int i = 0; i < n; i++)
	{
		char	   *id = taskq_run_of_task(items[i].id);
		TaskqRun   *run;
		bool		taken;

		if (id == NULL || !taskq_string_member(runs, id))
			continue;
		run = taskq_run_fetch(id);
		if (run == NULL)
			continue;
		taskq_workflow_direct(true);
		PG_TRY();
		{
			taken = taskq_workflow_kind(run->kind)->step_returned(run, &items[i], release);
		}
		PG_FINALLY();
		{
			taskq_workflow_direct(false);
		}
		PG_END_TRY();
		if (taken)
			items[i].done = true;
	}
}

/* Finished hook: each finished task that is a step goes to its kind. */
static void
workflow_finished(const TaskqFinished *tasks, int n)
{
	for (int i = 0; i < n; i++)
	{
		char	   *id;
		TaskqRun   *run;

		/* a kind's own completion of a step: the kind moves the run on */
		if (direct_depth > 0 && tasks[i].outcome == TASKQ_COMPLETED)
			continue;
		id = taskq_run_of_task(tasks[i].id);
		if (id == NULL || !taskq_schema_at_least_0_5())
			continue;
		taskq_run_lock(id);
		run = taskq_run_fetch(id);
		if (run == NULL)
			continue;
		taskq_workflow_direct(true);
		PG_TRY();
		{
			taskq_workflow_kind(run->kind)->step_finished(run, &tasks[i]);
		}
		PG_FINALLY();
		{
			taskq_workflow_direct(false);
		}
		PG_END_TRY();
	}
}

/* Register a workflow kind (from taskq_workflow_init). */
void
taskq_workflow_register_kind(const TaskqWorkflowKind *kind)
{
	if (nkinds == MAX_WORKFLOW_KINDS)
		elog(ERROR, "taskq: too many workflow kinds (at most %d)", MAX_WORKFLOW_KINDS);
	kinds[nkinds++] = kind;
	taskq_finished_hook = workflow_finished;
	taskq_return_hook = workflow_returned;
}

/* Called once from _PG_init: the workflow kinds register here. */
void
taskq_workflow_init(void)
{
	taskq_machine_init();
	taskq_saga_init();
}
