/*-------------------------------------------------------------------------
 *
 * child.h
 *	  Child runs: a machine's child state or a saga's child step starts a
 *	  run of another definition whose end moves its parent (run_child.c:
 *	  ids, start, lock order, end, cancel; machine_child.c: the machine's
 *	  side; saga_child.c: the saga's side).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_CHILD_H
#define TASKQ_CHILD_H

#include "utils/jsonb.h"

#include "workflow/machine_def.h"
#include "workflow/run.h"

/* run_child.c */
extern char *taskq_child_start(TaskqRun *parent, const char *kind, const char *name,
							   Jsonb *input);
extern void taskq_run_cancel_children(TaskqRun *run);
extern bool taskq_run_cancel_child(const char *parent, const char *child);
extern Jsonb *taskq_child_outcome(TaskqRun *child);
extern bool taskq_child_succeeded(TaskqRun *child);

/* machine_child.c */
extern void taskq_machine_child_enter(TaskqRun *run, TaskqMachineState *s);
extern bool taskq_machine_child_outcome(TaskqRun *run, TaskqMachineState *s,
										TaskqRun *child, const char **event);
extern void taskq_machine_check_sent_event(TaskqRun *run, const char *event);

/* machine.c and saga.c: the kinds' side (their starts: workflow.h) */
extern void taskq_machine_child_ended(TaskqRun *run, TaskqRun *child);
extern void taskq_saga_child_ended(TaskqRun *run, TaskqRun *child);	/* saga_child.c */

#endif							/* TASKQ_CHILD_H */
