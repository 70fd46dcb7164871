/*-------------------------------------------------------------------------
 *
 * debug.h
 *	  The debug settings of a run and the fault injection they ask for
 *	  (debug.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_DEBUG_H
#define TASKQ_DEBUG_H

#include "utils/jsonb.h"

#include "workflow/run.h"

extern bool taskq_run_debug_flag(TaskqRun *run, const char *key);
extern char *taskq_run_debug_fault(TaskqRun *run, const char *key, const char *step);
extern bool taskq_run_fault_done(TaskqRun *run, const char *key, const char *step);
extern void taskq_run_fault_mark(TaskqRun *run, const char *key, const char *step);
extern void taskq_check_debug(Jsonb *debug, const char *kind);

#endif							/* TASKQ_DEBUG_H */
