/*-------------------------------------------------------------------------
 *
 * saga_run.h
 *	  A saga run as the saga files work on it: the run, its parsed
 *	  definition and the state of each of its steps (saga.c: returns of
 *	  steps, the kind's hooks, the SQL functions' work; saga_store.c: the
 *	  run and its steps read and written, the tasks of dos and undos;
 *	  saga_undo.c: the switch to undoing and the undo schedule).
 *
 * Every function here expects the run's lock held (run.c) and SPI
 * connected.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_SAGA_RUN_H
#define TASKQ_SAGA_RUN_H

#include "nodes/pg_list.h"

#include "workflow/run.h"
#include "workflow/saga_def.h"

/* Step states (taskq.saga_steps.do_state and undo_state; see saga.c). */
typedef enum TaskqDoState
{
	DO_NONE,					/* not started: no row */
	DO_READY,
	DO_SUCCEEDED,
	DO_FAILED,
	DO_SKIPPED
} TaskqDoState;

typedef enum TaskqUndoState
{
	UNDO_NOT_YET,
	UNDO_READY,
	UNDO_SUCCEEDED,
	UNDO_FAILED,
	UNDO_NOTHING				/* undo: null, counted as undone */
} TaskqUndoState;

typedef struct TaskqStepState
{
	TaskqDoState do_state;
	TaskqUndoState undo_state;
	char	   *do_task;
	char	   *undo_task;
	bool		dirty;			/* to be written by taskq_saga_finish */
} TaskqStepState;

typedef struct TaskqSagaRun
{
	TaskqRun   *run;
	TaskqSagaDef *d;
	TaskqStepState *st;				/* one per step of d */
	List	   *specs;			/* tasks to insert when the work is done */
} TaskqSagaRun;

/* saga_store.c */
extern TaskqSagaRun *taskq_saga_new(TaskqRun *run);
extern TaskqSagaRun *taskq_saga_load(TaskqRun *run);
extern TaskqSagaRun *taskq_saga_fetch(const char *id);
extern void taskq_saga_finish(TaskqSagaRun *sr);
extern char *taskq_saga_add_step_task(TaskqSagaRun *sr, int i, bool undo);

/* saga_undo.c */
extern void taskq_saga_switch_to_undo(TaskqSagaRun *sr);
extern void taskq_saga_schedule_undo(TaskqSagaRun *sr);
extern void taskq_saga_dismal(TaskqSagaRun *sr, int i, const char *error);

/* saga_child.c: child steps */
extern char *taskq_saga_child_start(TaskqSagaRun *sr, int i);
extern void taskq_saga_stop_children(TaskqSagaRun *sr);
extern void taskq_saga_child_finished(TaskqRun *run, const TaskqFinished *task,
									  const char *error);	/* saga.c */

#endif							/* TASKQ_SAGA_RUN_H */
