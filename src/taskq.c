/*-------------------------------------------------------------------------
 *
 * taskq.c
 *	  Module entry: _PG_init sets up each layer, bottom up.
 *
 * Loaded through shared_preload_libraries, taskq sets up its shared memory
 * (wakeups, database slots, claim starts, slot books), registers the launcher of the
 * background workers and a utility hook that steps the workers aside for
 * DROP DATABASE and friends.  Loaded on demand by a backend, the queue
 * works the same without the workers (own_tasks expires leases itself,
 * workers poll) except for wait_for_task, which then refuses with a hint.
 *
 * This is the one file that may include every layer (src/README.md).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "common/plan.h"
#include "common/settings.h"
#include "ipc/metrics.h"
#include "ipc/shmem.h"
#include "ipc/wakeup.h"
#include "queue/queue.h"
#include "workflow/workflow.h"
#include "worker/worker.h"
#include "api/schedules.h"
#include "workflow/timers.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	if (IsBinaryUpgrade)
		return;

	taskq_define_settings();
	taskq_plan_init();

	if (process_shared_preload_libraries_in_progress)
	{
		taskq_shmem_init_hooks();
		if (taskq_background_worker)
			taskq_register_launcher();
	}
	taskq_claim_start_init();
	taskq_install_utility_hook();
	taskq_register_xact_callbacks();
	taskq_books_init();			/* its commit callback runs before the wakeups' */
	taskq_metrics_init(process_shared_preload_libraries_in_progress);
	taskq_register_claim_callbacks();
	taskq_workflow_init();
	/* the worker fires schedules with api/'s parse of their task objects */
	taskq_schedule_task_hook = taskq_schedule_task;
	/* and the timers of runs with the workflow layer's */
	taskq_fire_timers_hook = taskq_fire_run_timers;
}
