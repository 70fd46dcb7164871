/*-------------------------------------------------------------------------
 *
 * seam.h
 *	  The seam between the queue and the workflow kinds (seam.c): what a
 *	  kind (state machines, sagas) registers for the steps of its runs, and
 *	  the queue's return of a step that a kind makes itself.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_SEAM_H
#define TASKQ_SEAM_H

#include "queue/queue.h"
#include "workflow/run.h"

/*
 * A workflow kind: what the seam calls for the steps of its runs.  The run
 * is locked and fetched.
 */
typedef struct TaskqWorkflowKind
{
	const char *name;
	/*
	 * A step task of run is returned (release: given back unworked) by a
	 * worker through the queue's return functions: handle it and return
	 * true, or return false to let the queue return it as a plain task.
	 */
	bool		(*step_returned) (TaskqRun *run, TaskqReturnItem *item, bool release);
	/* The queue finished a task of run (any path: return, expiry, cancel). */
	void		(*step_finished) (TaskqRun *run, const TaskqFinished *task);
	/* cancel_run: returns the new status. */
	const char *(*cancel) (TaskqRun *run);
} TaskqWorkflowKind;

extern void taskq_workflow_register_kind(const TaskqWorkflowKind *kind);
extern const TaskqWorkflowKind *taskq_workflow_kind(const char *name);

/*
 * The queue's return and release of a step, made by its kind: not handed
 * back to the kind (the return hook passes it by).
 */
extern void taskq_step_return(const char *id, pg_uuid_t *token, const char *status,
							  TaskqStatus code, Interval *delay, const char *caller);
extern void taskq_step_release(const char *id, pg_uuid_t *token);

/* The kinds, registered from taskq_workflow_init (machine.c, saga.c). */
extern void taskq_machine_init(void);
extern void taskq_saga_init(void);

#endif							/* TASKQ_SEAM_H */
