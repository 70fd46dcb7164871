/*-------------------------------------------------------------------------
 *
 * saga_undo.c
 *	  Undoing a saga: the switch from doing to undoing, the undo schedule
 *	  (reverse topological order over the saga's DAG, independent branches
 *	  in parallel), the dismal failure that ends it when an undo gives
 *	  up, and redrive_run of a dismal saga, which continues it.
 *
 * At the switch no new do starts: a ready do that nobody claimed is
 * aborted (skipped), one in progress finishes on its last try.  Then the
 * undo of each finished started step becomes ready once every started
 * step that comes after it (the definition's reachability, saga_def.c) is
 * undone; a step without undo is undone at once.  When nothing is left to
 * undo the run ends failed (cancelled, for cancel_run).
 *
 * Locking: the caller holds the run's lock (run.c), taken before any task
 * row; the switch then locks the run's ready do tasks in id order
 * (taskq_task_lock_views), as every path that locks several task rows
 * does, and puts those in progress on their last try
 * (taskq_tasks_last_try).  The undo tasks are made by
 * taskq_saga_add_step_task and inserted with the run's other changes by
 * taskq_saga_finish (saga_store.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/async.h"

#include "common/plan.h"
#include "queue/queue.h"
#include "workflow/debug.h"
#include "workflow/saga_run.h"
#include "workflow/seam.h"
#include "workflow/workflow.h"

/*
 * The switch from doing to undoing (run->error set): the working map is
 * stored with the run by saga_finish; a ready do that nobody claimed is
 * aborted (skipped; if it was tried before, or its first finish discarded
 * by restart_each_step, it counts as started); one in progress finishes,
 * on its last try (a retry, a release or an expired lease ends it).
 */
void
taskq_saga_switch_to_undo(TaskqSagaRun *sr)
{
	TaskqRun   *run = sr->run;
	List	   *ready = NIL;
	TaskqTaskView *rows;
	int			n;

	taskq_run_set_status(run, TASKQ_RUN_UNDOING);
	taskq_saga_stop_children(sr);	/* child steps: their runs cancelled */
	for (int i = 0; i < sr->d->nsteps; i++)
		if (sr->st[i].do_state == DO_READY && sr->d->steps[i].child_name == NULL)
			ready = lappend(ready, sr->st[i].do_task);
	if (ready != NIL)
	{
		rows = taskq_task_lock_views(ready, &n);
		for (int r = 0; r < n; r++)
		{
			TaskqTaskView *row = &rows[r];
			int			i;

			for (i = 0; i < sr->d->nsteps; i++)
				if (sr->st[i].do_state == DO_READY && strcmp(sr->st[i].do_task, row->id) == 0)
					break;
			if (i == sr->d->nsteps)
				continue;
			if (row->code == TASKQ_PENDING)
			{
				bool		tried = row->num_tries > 0 ||
					taskq_run_fault_done(run, "restart", row->id);

				taskq_abort_task(row->id, "skipped");
				sr->st[i].do_state = tried ? DO_FAILED : DO_SKIPPED;
				sr->st[i].dirty = true;
			}
			else if (taskq_status_finished(row->code))
			{
				sr->st[i].do_state = row->code == TASKQ_COMPLETED ? DO_SUCCEEDED : DO_FAILED;
				sr->st[i].dirty = true;
			}
		}
		taskq_tasks_last_try(ready);
	}
	taskq_saga_schedule_undo(sr);
}

static bool
undone(TaskqStepState *s)
{
	return s->undo_state == UNDO_SUCCEEDED || s->undo_state == UNDO_NOTHING;
}

static bool
started(TaskqStepState *s)
{
	return s->do_state == DO_READY || s->do_state == DO_SUCCEEDED || s->do_state == DO_FAILED;
}

/*
 * An undoing saga: the undo of each finished started step becomes ready
 * once every started step that comes after it is undone (a step without
 * undo is undone at once).  Nothing left to undo: failed (or cancelled).
 */
void
taskq_saga_schedule_undo(TaskqSagaRun *sr)
{
	TaskqSagaDef *d = sr->d;
	int			n = d->nsteps;
	bool		changed = true;

	if (sr->run->status != TASKQ_RUN_UNDOING)
		return;
	while (changed)
	{
		changed = false;
		for (int i = 0; i < n; i++)
		{
			TaskqStepState *s = &sr->st[i];
			bool		eligible = true;

			if (s->undo_state != UNDO_NOT_YET ||
				(s->do_state != DO_SUCCEEDED && s->do_state != DO_FAILED))
				continue;
			for (int j = 0; j < n && eligible; j++)
				if (d->reach[i * n + j] && started(&sr->st[j]) && !undone(&sr->st[j]))
					eligible = false;
			if (!eligible)
				continue;
			s->dirty = true;
			if (d->steps[i].undo_action == NULL)
			{
				s->undo_state = UNDO_NOTHING;
				changed = true;
			}
			else
			{
				s->undo_task = taskq_saga_add_step_task(sr, i, true);
				s->undo_state = UNDO_READY;
			}
		}
	}
	for (int i = 0; i < n; i++)
		if (started(&sr->st[i]) && !undone(&sr->st[i]))
			return;
	taskq_run_set_status(sr->run, strcmp(sr->run->error, "cancelled") == 0 ?
						 TASKQ_RUN_CANCELLED : TASKQ_RUN_FAILED);
}

/*
 * The undo of step i gave up: dismal failure.  No further undo starts; the
 * server log says so, and the run id is notified on taskq_dismal.
 */
void
taskq_saga_dismal(TaskqSagaRun *sr, int i, const char *error)
{
	TaskqRun   *run = sr->run;
	const char *step = sr->d->steps[i].name;

	run->error = psprintf("%s; undo of step \"%s\": %s", run->error ? run->error : "failed",
						  step, error);
	taskq_run_set_status(run, TASKQ_RUN_DISMAL);
	ereport(WARNING,
			(errmsg("DISMAL FAILURE %s: the undo of step \"%s\" of saga \"%s\" gave up: %s",
					run->id, step, run->definition, error),
			 errdetail("Saga run \"%s\" is left partly undone; it needs repair by hand.",
					   run->id)));
	Async_Notify("taskq_dismal", run->id);
}

/*
 * The run's error before it went dismal: taskq_saga_dismal appended
 * "; undo of step "<step>": <error>" for the first undo that gave up (a
 * step whose undo_state is failed); later failures appended nothing.
 */
static char *
error_before_dismal(TaskqSagaRun *sr)
{
	const char *error = sr->run->error;
	const char *cut = NULL;

	if (error == NULL)
		return NULL;
	for (int i = 0; i < sr->d->nsteps; i++)
	{
		const char *p;

		if (sr->st[i].undo_state != UNDO_FAILED)
			continue;
		p = strstr(error, psprintf("; undo of step \"%s\": ", sr->d->steps[i].name));
		if (p != NULL && (cut == NULL || p < cut))
			cut = p;
	}
	return cut ? pnstrdup(error, cut - error) : pstrdup(error);
}

/*
 * redrive_run of a saga: a dismal one undoes again from where its undo
 * gave up (see the banner); its status.  Any other: 55000.
 */
char *
taskq_saga_redrive(const char *id)
{
	TaskqSagaRun *sr = taskq_saga_fetch(id);
	TaskqRun   *run;

	if (sr == NULL)
		elog(ERROR, "taskq: saga run \"%s\" vanished", id);
	run = sr->run;
	if (run->status == TASKQ_RUN_FAILED || run->status == TASKQ_RUN_CANCELLED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("saga run \"%s\" is %s and fully undone", id,
						taskq_run_status_label(run->status)),
				 errhint("Start a new run.")));
	if (run->status != TASKQ_RUN_DISMAL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("saga run \"%s\" is %s, not dismal", id,
						taskq_run_status_label(run->status)),
				 errdetail("redrive_run continues the undo of a dismal saga.")));
	run->error = error_before_dismal(sr);
	for (int i = 0; i < sr->d->nsteps; i++)
		if (sr->st[i].undo_state == UNDO_FAILED)
		{
			sr->st[i].undo_state = UNDO_NOT_YET;
			sr->st[i].dirty = true;
		}
	taskq_run_set_status(run, TASKQ_RUN_UNDOING);
	taskq_saga_schedule_undo(sr);
	taskq_saga_finish(sr);
	return pstrdup(taskq_run_status_label(run->status));
}
