/*-------------------------------------------------------------------------
 *
 * machine_map.h
 *	  Map states of state machines (machine_map.c): a task per element of
 *	  a context array, at most max_parallel held at once, the results
 *	  gathered in item order when the last finished.  machine.c calls these
 *	  and moves the run itself.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_MACHINE_MAP_H
#define TASKQ_MACHINE_MAP_H

#include "workflow/machine_def.h"
#include "workflow/run.h"

/* What entering a map state did. */
typedef enum TaskqMapEntry
{
	TASKQ_MAP_STARTED,			/* items inserted, the run waits for them */
	TASKQ_MAP_EMPTY,			/* no items: "results" is [], move on "mapped" */
	TASKQ_MAP_RUN_FAILED		/* no array, entered by no caller: the run failed */
} TaskqMapEntry;

extern TaskqMapEntry taskq_map_enter(TaskqRun *run, TaskqMachineDef *m, TaskqMachineState *s);
extern bool taskq_map_is_item(TaskqRun *run, TaskqMachineDef *m, const char *task_id);
extern void taskq_map_refuse_item(TaskqRun *run, const char *state, const char *task_id,
								  const char *fn);
extern bool taskq_map_is_join(TaskqRun *run, TaskqMachineDef *m, const char *task_id);
extern const char *taskq_map_gather(TaskqRun *run, TaskqMachineState *s);
extern List *taskq_map_unfinished(TaskqRun *run, TaskqMachineDef *m);
extern void taskq_map_check_event(TaskqMachineDef *m, const char *event);
extern bool taskq_map_soft_entry(bool on);

#endif							/* TASKQ_MACHINE_MAP_H */
