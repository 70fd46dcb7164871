/*-------------------------------------------------------------------------
 *
 * machine_run.h
 *	  A state machine's run as the machine files work on it: the run and
 *	  its parsed definition, and what of machine.c the others call
 *	  (machine_repair.c: redrive and migrate).
 *
 * Every function here expects the run's lock held (run.c) and SPI
 * connected.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_MACHINE_RUN_H
#define TASKQ_MACHINE_RUN_H

#include "workflow/machine_def.h"
#include "workflow/run.h"

typedef struct TaskqMachineRun
{
	TaskqRun   *run;
	TaskqMachineDef *m;
	const Interval *after;		/* the entering transition's "after" */
} TaskqMachineRun;

/* machine.c */
extern TaskqMachineRun *taskq_machine_run(TaskqRun *run);
extern TaskqRun *taskq_machine_run_get(const char *id);
extern int	taskq_machine_current_state(TaskqMachineRun *mr);
extern void taskq_machine_enter_state(TaskqMachineRun *mr, int si, const char *cursor);
extern void taskq_machine_drop_step(TaskqMachineRun *mr, const char *why);

#endif							/* TASKQ_MACHINE_RUN_H */
