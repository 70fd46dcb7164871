/*-------------------------------------------------------------------------
 *
 * taskq.c
 *	  Module entry: _PG_init.
 *
 * Loaded through shared_preload_libraries, taskq sets up its shared memory
 * (wait_for_task's condition variables).  Loaded on demand by a backend, the
 * queue works the same except for wait_for_task, which then refuses with a
 * hint.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "taskq.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	if (IsBinaryUpgrade)
		return;

	MarkGUCPrefixReserved("taskq");

	if (process_shared_preload_libraries_in_progress)
		taskq_shmem_init_hooks();

	taskq_register_xact_callbacks();
}
