/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  taskq's shared memory and the wakeups sent when a transaction that
 *	  finished tasks commits.
 *
 * Shared memory exists only when taskq is in shared_preload_libraries.  It
 * holds condition variables that wait_for_task sleeps on, one per hash slot
 * of task ids: a backend that finishes tasks remembers their slots and
 * broadcasts them from its commit callback, which runs after the commit is
 * visible, so a woken waiter that looks again sees the finished row.  A
 * false wakeup (another id in the slot, a rolled-back subtransaction) only
 * costs the waiter one look.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "taskq.h"

#define TASKQ_FINISH_SLOTS 64

typedef struct TaskqSharedState
{
	ConditionVariable finish_cv[TASKQ_FINISH_SLOTS];
} TaskqSharedState;

static TaskqSharedState *taskq_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* Slots of tasks finished by the current transaction. */
static uint64 finished_slots = 0;

static void
taskq_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(TaskqSharedState)));
}

static void
taskq_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	taskq_shared = ShmemInitStruct("taskq", sizeof(TaskqSharedState), &found);
	if (!found)
	{
		for (int i = 0; i < TASKQ_FINISH_SLOTS; i++)
			ConditionVariableInit(&taskq_shared->finish_cv[i]);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Called from _PG_init while shared_preload_libraries is processed. */
void
taskq_shmem_init_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = taskq_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = taskq_shmem_startup;
}

bool
taskq_shmem_available(void)
{
	return taskq_shared != NULL;
}

static int
finish_slot(const char *id)
{
	return hash_bytes((const unsigned char *) id, strlen(id)) % TASKQ_FINISH_SLOTS;
}

ConditionVariable *
taskq_finish_cv(const char *id)
{
	Assert(taskq_shared != NULL);
	return &taskq_shared->finish_cv[finish_slot(id)];
}

/* The current transaction finished this task: wake its waiters at commit. */
void
taskq_note_finished(const char *id)
{
	finished_slots |= UINT64CONST(1) << finish_slot(id);
}

/*
 * The current transaction made work of this action ready.  The background
 * worker's coalesced NOTIFY will take it from here; until it exists workers
 * find new work by calling own_tasks.
 */
void
taskq_note_ready(const char *action)
{
	(void) action;
}

static void
taskq_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (finished_slots != 0 && taskq_shared != NULL)
			{
				for (int i = 0; i < TASKQ_FINISH_SLOTS; i++)
					if (finished_slots & (UINT64CONST(1) << i))
						ConditionVariableBroadcast(&taskq_shared->finish_cv[i]);
			}
			finished_slots = 0;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			finished_slots = 0;
			break;
		default:
			break;
	}
}

void
taskq_register_xact_callbacks(void)
{
	RegisterXactCallback(taskq_xact_callback, NULL);
}
