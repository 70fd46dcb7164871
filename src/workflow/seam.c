/*-------------------------------------------------------------------------
 *
 * seam.c
 *	  The seam between the queue and the workflow layer: the queue hands
 *	  the tasks each of its calls finished, with their outcome, to
 *	  taskq_finished_hook (queue/lifecycle.c), in the same transaction;
 *	  here each workflow kind (state machines, sagas) registers what it
 *	  does with them.
 *
 * A workflow step is an ordinary task.  When its return, expiry, cancel
 * or cascade finishes it, the kind that owns it learns so before the
 * queue's call returns, and writes its bookkeeping (the next state, the
 * undo steps) through the queue's C API in that transaction: it commits
 * or rolls back with the step, exactly once.  The queue never calls the
 * workflow layer any other way.
 *
 * The hook is set only while a kind is registered, so that a queue
 * without workflows pays nothing.  Backend-local: no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "queue/queue.h"
#include "workflow/workflow.h"

#define MAX_WORKFLOW_KINDS 8

static struct
{
	const char *name;
	taskq_finished_hook_type on_finished;
} kinds[MAX_WORKFLOW_KINDS];
static int	nkinds = 0;

/* The hook: every kind sees every batch and picks its own steps. */
static void
workflow_finished(const TaskqFinished *tasks, int n)
{
	for (int k = 0; k < nkinds; k++)
		kinds[k].on_finished(tasks, n);
}

/* Register a workflow kind (from _PG_init, through taskq_workflow_init). */
void
taskq_workflow_register(const char *name, taskq_finished_hook_type on_finished)
{
	if (nkinds == MAX_WORKFLOW_KINDS)
		elog(ERROR, "taskq: too many workflow kinds (at most %d)", MAX_WORKFLOW_KINDS);
	kinds[nkinds].name = name;
	kinds[nkinds].on_finished = on_finished;
	nkinds++;
	taskq_finished_hook = workflow_finished;
}

/* Called once from _PG_init: the workflow kinds register here. */
void
taskq_workflow_init(void)
{
}
