/*-------------------------------------------------------------------------
 *
 * task.h
 *	  A task as every layer knows it: its limits, its status and the
 *	  transitions between statuses, and taskq's own SQLSTATE.
 *
 * The status of a task (taskq.status, column status_code) moves only
 * along the edges that TaskqTransition lists below (drawn once, in
 * docs/design.md, "The life of a task"); taskq_status_transition()
 * (lifecycle.c) is the one function that says which edges exist, and every
 * write of status_code asks it first.
 *
 * release_task takes in_progress back to pending like a retry, but ready at
 * once and without counting the try.
 *
 * A pending task is also completed on the spot when it is spontaneous
 * and its last predecessor finished.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_TASK_H
#define TASKQ_TASK_H

#include "common/limits.h"

/*
 * taskq's own SQLSTATEs (class TQ), listed in the README.  Everything else
 * uses a standard code.
 */
#define ERRCODE_TASKQ_INVALID_TOKEN		MAKE_SQLSTATE('T','Q','0','0','1')

/* The values of taskq.status, in the enum's order. */
typedef enum TaskqStatus
{
	TASKQ_PENDING,
	TASKQ_IN_PROGRESS,
	TASKQ_COMPLETED,
	TASKQ_ABORTED
} TaskqStatus;

#define TASKQ_STATUS_COUNT (TASKQ_ABORTED + 1)

/* The ways a task changes status: the edges of the task's life. */
typedef enum TaskqTransition
{
	TASKQ_CLAIM,				/* pending -> in_progress */
	TASKQ_EXTEND,				/* in_progress (lease expired) -> in_progress */
	TASKQ_EXPIRE,				/* in_progress -> pending */
	TASKQ_RETRY,				/* in_progress -> pending (returned pending) */
	TASKQ_COMPLETE,				/* in_progress or pending -> completed */
	TASKQ_ABORT,				/* pending or in_progress -> aborted */
	TASKQ_REDRIVE,				/* aborted -> pending */
	TASKQ_RELEASE				/* in_progress -> pending, the try not counted */
} TaskqTransition;

/*
 * The values of taskq.trigger_rule, in the enum's order: when a task with
 * predecessors may run (queue/signal.c decides).
 */
typedef enum TaskqTrigger
{
	TASKQ_ALL_SUCCESS,			/* every predecessor completed (the default) */
	TASKQ_ALL_DONE,				/* every predecessor finished, either way */
	TASKQ_ONE_FAILED,			/* one predecessor aborted */
	TASKQ_ONE_SUCCESS			/* one predecessor completed */
} TaskqTrigger;

#define TASKQ_TRIGGER_COUNT (TASKQ_ONE_SUCCESS + 1)

extern const char *taskq_trigger_label(TaskqTrigger rule);
extern bool taskq_trigger_from_label(const char *label, TaskqTrigger *rule);

extern const char *taskq_status_label(TaskqStatus status);
extern TaskqStatus taskq_status_from_label(const char *label);
extern bool taskq_status_finished(TaskqStatus status);
extern TaskqStatus taskq_status_transition(TaskqStatus from, TaskqTransition how,
										   const char *id);

/*
 * SQL: the task is owned under a live lease (in progress, deadline not
 * passed).  An expired lease is not owned: anyone may claim, replace or
 * cancel the task.
 */
#define TASKQ_SQL_OWNED \
	"(status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status" \
	" AND (action_deadline IS NULL" \
	"      OR action_deadline OPERATOR(pg_catalog.>) pg_catalog.now()))"

#endif							/* TASKQ_TASK_H */
