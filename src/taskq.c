/*-------------------------------------------------------------------------
 *
 * taskq.c
 *	  Module entry: _PG_init and the taskq.* settings.
 *
 * Loaded through shared_preload_libraries, taskq sets up its shared memory
 * (wakeups, database slots), registers the launcher of the background
 * workers and a utility hook that steps the workers aside for DROP
 * DATABASE and friends.  Loaded on demand by a backend, the queue works the
 * same without the workers (own_tasks expires leases itself, workers poll)
 * except for wait_for_task, which then refuses with a hint.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "acl.h"
#include "taskq.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

bool		taskq_background_worker = true;
bool		taskq_async_claims = true;
bool		taskq_announce_progress = false;

void
_PG_init(void)
{
	if (IsBinaryUpgrade)
		return;

	DefineCustomIntVariable("taskq.notify_interval",
							"Shortest time between two notifications for the same action.",
							"The background worker sends NOTIFY taskq, '<action>' at once for new ready work, then at most once per interval per action.",
							&taskq_notify_interval,
							1, 0, 60 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("taskq.worker_naptime",
							"Longest time the background worker sleeps between two looks at the queue.",
							"It wakes earlier for the next lease deadline, delayed task or notification it knows of, and when a transaction makes work ready.",
							&taskq_worker_naptime,
							1000, 10, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("taskq.retention",
							"How long finished tasks are kept before the background worker deletes them.",
							"-1 keeps them forever; 0 also makes the return that completes a task delete it, unless post_result is set or it belongs to a workflow.",
							&taskq_retention,
							7 * 24 * 3600, -1, INT_MAX,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("taskq.background_worker",
							 "Starts the taskq background workers.",
							 "Without them, own_tasks still expires leases and workers find work by polling.",
							 &taskq_background_worker,
							 true,
							 PGC_POSTMASTER, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("taskq.async_claims",
							 "Lets a transaction that wrote only claims commit without waiting for the WAL flush.",
							 "A claim lost in a server crash only means the task is handed out again; returns stay durable.",
							 &taskq_async_claims,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("taskq.shared_claim_start",
							 "Starts claims past the dead entries at the head of the ready indexes.",
							 "The claims of a database share the start in shared memory; off: this session's claims walk from the first entry and move no start.",
							 &taskq_shared_claim_start,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	taskq_acl_define_settings();	/* taskq.worker_role */
	DefineCustomBoolVariable("taskq.announce_progress",
							 "Announces job progress with NOTIFY taskq_progress, '<job id>'.",
							 "Off by default: every LISTENer of the database sees the payload, and job ids may reveal data; ready work is announced by action name only.",
							 &taskq_announce_progress,
							 false,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	MarkGUCPrefixReserved("taskq");

	if (process_shared_preload_libraries_in_progress)
	{
		taskq_shmem_init_hooks();
		if (taskq_background_worker)
			taskq_register_launcher();
	}
	taskq_install_utility_hook();
	taskq_register_xact_callbacks();
	taskq_hint_register_callbacks();
	taskq_register_claim_callbacks();
}
