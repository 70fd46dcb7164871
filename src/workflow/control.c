/*-------------------------------------------------------------------------
 *
 * control.c
 *	  Job control of runs: cancel_run (and cancel_workflow of a run's key),
 *	  handed to the run's kind, redrive_run handed to the machine's or the
 *	  saga's code, and the refusal of the queue's calls that
 *	  change tasks one by one (cancel_tasks, replace_tasks, redrive_tasks,
 *	  add_dependencies) to change the steps of runs.  Cancelling plain
 *	  tasks and workflow keys is the queue's (queue/cancel.c).
 *
 * Locking: a run's lock (run.c) before any task row of the run.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "common/plan.h"
#include "queue/queue.h"
#include "workflow/run.h"
#include "workflow/seam.h"
#include "workflow/workflow.h"

static TaskqPlan runs_of_plan = {
	"SELECT id FROM taskq.runs WHERE id OPERATOR(pg_catalog.=) ANY ($1) ORDER BY id LIMIT 1",
	1, {TEXTARRAYOID}
};

/*
 * The core's calls that change tasks one by one (cancel_tasks,
 * replace_tasks, redrive_tasks, add_dependencies) leave the steps of runs
 * alone: 55000 naming the run.
 */
void
taskq_refuse_run_tasks(List *ids, const char *fn)
{
	List	   *runs = NIL;
	ListCell   *lc;
	Datum		arg;

	foreach(lc, ids)
	{
		char	   *run = taskq_run_of_task(lfirst(lc));

		if (run)
			runs = lappend(runs, run);
	}
	if (runs == NIL)
		return;
	arg = taskq_text_array_datum(runs);
	taskq_execute(&runs_of_plan, &arg, NULL, false, 0);
	if (SPI_processed > 0)
	{
		char	   *run = taskq_get_text(0, 1, NULL);

		foreach(lc, ids)
			if (strncmp(lfirst(lc), run, strlen(run)) == 0 &&
				((char *) lfirst(lc))[strlen(run)] == '/')
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("task \"%s\" is a step of run \"%s\"", (char *) lfirst(lc), run),
						 errhint("%s does not change the steps of runs: use cancel_run, redrive_run or migrate_run.", fn)));
	}
}

/* cancel_run (any kind): the new status. */
const char *
taskq_cancel_run(const char *id)
{
	TaskqRun   *run = taskq_run_get(id);

	return taskq_workflow_kind(run->kind)->cancel(run);
}

/*
 * redrive_run (any kind): a machine's new state (machine.c), a saga's
 * status (saga_undo.c).
 */
char *
taskq_run_redrive(const char *id)
{
	TaskqRun   *run = taskq_run_get(id);

	if (strcmp(run->kind, "saga") == 0)
		return taskq_saga_redrive(id);
	return taskq_machine_redrive(id);
}

/*
 * The run a workflow key names, for cancel_workflow (which cancels a run
 * as cancel_run does): true if there is one.
 */
bool
taskq_is_run(const char *id)
{
	TaskqRun   *run;

	taskq_run_lock(id);
	run = taskq_run_fetch(id);
	return run != NULL;
}
