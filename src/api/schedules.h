/*-------------------------------------------------------------------------
 *
 * schedules.h
 *	  The task object of a schedule made into the queue's TaskqTaskSpec
 *	  (schedules.c); the module entry hands it to the background worker,
 *	  which fires the schedules (worker/schedules.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_API_SCHEDULES_H
#define TASKQ_API_SCHEDULES_H

#include "queue/queue.h"

extern TaskqTaskSpec *taskq_schedule_task(Jsonb *task, const char *id);

#endif							/* TASKQ_API_SCHEDULES_H */
