/*-------------------------------------------------------------------------
 *
 * cancel.h
 *	  Inside the queue: the cancelled workflow keys, as the paths that make
 *	  tasks of a workflow runnable (graph.c's taskq_lock_workflows) ask for
 *	  them (cancel.c).  The rest of cancel.c is queue.h's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_CANCEL_H
#define TASKQ_CANCEL_H

#include "nodes/pg_list.h"

extern List *taskq_cancelled_workflows(List *names);

#endif							/* TASKQ_CANCEL_H */
