/*-------------------------------------------------------------------------
 *
 * task_input.h
 *	  The JSON task objects of insert_tasks and replace_tasks, parsed and
 *	  checked into the queue's TaskqTaskSpec (task_input.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_TASK_INPUT_H
#define TASKQ_TASK_INPUT_H

#include "queue/queue.h"

extern List *taskq_parse_tasks(Jsonb *tasks, const char *argname);
extern TaskqTaskSpec *taskq_parse_task(Jsonb *task, const char *argname);

#endif							/* TASKQ_TASK_INPUT_H */
