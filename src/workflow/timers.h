/*-------------------------------------------------------------------------
 *
 * timers.h
 *	  Time in runs: a machine transition's "after", a waiting state's
 *	  "timeout" and "on_timeout" (machine_timers.c), and the timers of
 *	  runs in taskq.run_timers that the background worker fires, with a
 *	  run's deadline (run_timers.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_TIMERS_H
#define TASKQ_TIMERS_H

#include "datatype/timestamp.h"
#include "utils/jsonb.h"

#include "workflow/machine_def.h"
#include "workflow/run.h"
#include "workflow/workflow.h"

/* machine_timers.c: the definition's keys are declared in machine_def.h */

/* machine_timers.c: runs */
extern TimestampTz taskq_machine_after_time(const Interval *after);
extern void taskq_machine_timeout_set(TaskqRun *run, TaskqMachineState *s);
extern void taskq_machine_timeout_fire(TaskqRun *run, const char *state, TimestampTz due);

/* run_timers.c */
extern void taskq_run_timer_set(const char *run_id, const char *kind, const char *state,
								TimestampTz due_at);

/* the kinds' end of a run whose deadline passed (machine.c, saga.c) */
extern void taskq_machine_deadline(TaskqRun *run);
extern void taskq_saga_deadline(TaskqRun *run);

#endif							/* TASKQ_TIMERS_H */
