/*-------------------------------------------------------------------------
 *
 * saga_child.c
 *	  A saga's child steps: a step with "child" instead of "do" starts a
 *	  child run when it becomes ready (the step's do_task names the run),
 *	  with the saga's inputs and its working map over them as the child's
 *	  context or inputs.  The step is done when the child succeeds (its
 *	  final context merged into the working map) and fails (fatal) when it
 *	  does not (taskq_saga_child_ended, called from run_child.c).
 *	  When the saga switches to undo, its running children are cancelled:
 *	  a child that ended so counts as a failed do (its undo, if any, is a
 *	  plain undo task); a saga child undoing still is waited for.
 *
 * Locking: the saga's lock is held by every caller; the children's locks
 * are taken after it (ancestors first: run_child.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"

#include "workflow/child.h"
#include "workflow/saga_run.h"

/* Child step i becomes ready: its run starts; its id. */
char *
taskq_saga_child_start(TaskqSagaRun *sr, int i)
{
	TaskqRun   *run = sr->run;
	TaskqSagaStep *s = &sr->d->steps[i];
	Jsonb	   *input = run->context;

	if (run->inputs)
		input = DatumGetJsonbP(DirectFunctionCall2(jsonb_concat, JsonbPGetDatum(run->inputs),
												   JsonbPGetDatum(run->context)));
	return taskq_child_start(run, s->child_kind, s->child_name, input);
}

/*
 * The run of a child step of the saga run ended (run_child.c): the step
 * finishes as a do would, its child's final context merged into the
 * working map when it succeeded (written only if the step was waiting for
 * that child).
 */
void
taskq_saga_child_ended(TaskqRun *run, TaskqRun *child)
{
	TaskqFinished task = {child->id, TASKQ_COMPLETED};

	if (taskq_child_succeeded(child))
		run->context = DatumGetJsonbP(DirectFunctionCall2(jsonb_concat,
														  JsonbPGetDatum(run->context),
														  JsonbPGetDatum(child->context)));
	else
		task.outcome = TASKQ_ABORTED;
	taskq_saga_child_finished(run, &task,
							  psprintf("child run \"%s\" %s%s%s", child->id,
									   taskq_run_status_label(child->status),
									   child->error ? ": " : "", child->error ? child->error : ""));
}

/* The saga switches to undo: the runs of its running child steps are cancelled. */
void
taskq_saga_stop_children(TaskqSagaRun *sr)
{
	for (int i = 0; i < sr->d->nsteps; i++)
	{
		TaskqStepState *st = &sr->st[i];

		if (sr->d->steps[i].child_name == NULL || st->do_state != DO_READY)
			continue;
		if (taskq_run_cancel_child(sr->run->id, st->do_task))
		{
			st->do_state = DO_FAILED;
			st->dirty = true;
		}
	}
}
