/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  taskq's shared memory: requested at preload, laid out in ipc/shmem.h.
 *
 * Locking: none here beyond AddinShmemInitLock while the memory is made;
 * shmem.h says which lock guards which part.  This file knows nothing of
 * what the parts are used for (ipc/wakeup.c and the queue's waits use
 * them), so that the layout is one-way: wakeup.c includes shmem.h, never
 * the reverse.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"

#include "ipc/shmem.h"

TaskqSharedState *taskq_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
taskq_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(TaskqSharedState)));
	RequestNamedLWLockTranche("taskq", 1);
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
		memset(taskq_shared, 0, sizeof(TaskqSharedState));
		taskq_shared->lock = &(GetNamedLWLockTranche("taskq"))[0].lock;
		for (int i = 0; i < TASKQ_FINISH_SLOTS; i++)
			ConditionVariableInit(&taskq_shared->finish_cv[i]);
		for (int i = 0; i < TASKQ_READY_SLOTS; i++)
		{
			ConditionVariableInit(&taskq_shared->ready_cv[i]);
			SpinLockInit(&taskq_shared->ready_waiters[i].mutex);
		}
		for (int i = 0; i < TASKQ_ANY_READY_SLOTS; i++)
			ConditionVariableInit(&taskq_shared->any_ready_cv[i]);
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

TaskqDbSlot *
taskq_find_db_slot(Oid dboid)
{
	for (int i = 0; i < TASKQ_MAX_DATABASES; i++)
		if (taskq_shared->dbs[i].dboid == dboid)
			return &taskq_shared->dbs[i];
	return NULL;
}
