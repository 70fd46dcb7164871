/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  Every taskq.* setting: its variable, its default and its definition.
 *
 * Defined once from _PG_init, whether taskq is preloaded or loaded by a
 * backend on first use; the settings that only the postmaster can apply
 * (taskq.background_worker, taskq.worker_role) take effect only when it
 * is preloaded.  The README's Settings section lists them all.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "miscadmin.h"
#include "utils/guc.h"

#include "common/settings.h"

int			taskq_notify_interval = 1;	/* ms */
int			taskq_worker_naptime = 1000;	/* ms */
int			taskq_retention = 7 * 24 * 3600;	/* s; -1 keeps forever */
int			taskq_worker_retention = 24 * 3600;	/* s; -1 keeps forever */
int			taskq_default_lease = 300;	/* s; 0: no deadline */
bool		taskq_background_worker = true;
bool		taskq_async_claims = true;
bool		taskq_shared_claim_start = true;
bool		taskq_announce_progress = false;
char	   *taskq_worker_role = NULL;
int			taskq_metrics_interval = 5;	/* s; 0: gauges not refreshed */
int			taskq_max_metric_actions = 1000;

void
taskq_define_settings(void)
{
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
	DefineCustomIntVariable("taskq.worker_retention",
							"How long a row of taskq.workers is kept after its worker was last seen.",
							"The background worker deletes the rows of workers that stopped heartbeating for this long; -1 keeps them until worker_stopped.",
							&taskq_worker_retention,
							24 * 3600, -1, INT_MAX,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("taskq.default_lease",
							"Lease of a claim that gives no max_duration.",
							"own_tasks and return_and_own with max_duration NULL lease each task for this long; 0 leases without a deadline (a task is held until it is returned).",
							&taskq_default_lease,
							300, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("taskq.async_claims",
							 "Lets a transaction that wrote only claims commit without waiting for the WAL flush.",
							 "A claim lost in a server crash only means the task is handed out again; returns stay durable.",
							 &taskq_async_claims,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("taskq.shared_claim_start",
							 "Starts claims past the dead entries at the head of the ready index.",
							 "The claims of a database share the start in shared memory; off: this session's claims walk from the first entry and move no start.",
							 &taskq_shared_claim_start,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("taskq.announce_progress",
							 "Announces job progress with NOTIFY taskq_progress, '<job id>'.",
							 "Off by default: every LISTENer of the database sees the payload, and job ids may reveal data; ready work is announced by action name only.",
							 &taskq_announce_progress,
							 false,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("taskq.metrics_interval",
							"How often the background worker refreshes the gauges of taskq.metrics().",
							"It counts the ready, delayed, blocked and in-progress tasks of each action into taskq.metric_gauges; 0 stops the refresh.",
							&taskq_metrics_interval,
							5, 0, 24 * 3600,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);

	/*
	 * The settings only the postmaster applies exist only when taskq is
	 * preloaded: PostgreSQL refuses to define them later (FATAL), and a
	 * backend that loads taskq on demand has no background workers anyway.
	 */
	if (process_shared_preload_libraries_in_progress)
	{
		DefineCustomBoolVariable("taskq.background_worker",
								 "Starts the taskq background workers.",
								 "Without them, own_tasks still expires leases and workers find work by polling.",
								 &taskq_background_worker,
								 true,
								 PGC_POSTMASTER, 0,
								 NULL, NULL, NULL);
		DefineCustomStringVariable("taskq.worker_role",
								   "Role the taskq background workers run as.",
								   "Empty: the bootstrap superuser.  The role needs LOGIN and membership in taskq_admin.",
								   &taskq_worker_role,
								   "",
								   PGC_POSTMASTER, 0,
								   NULL, NULL, NULL);
		DefineCustomIntVariable("taskq.max_metric_actions",
								"Actions per server whose counters taskq.metrics() keeps in shared memory.",
								"Counts of further actions go to one overflow entry per database (action \"\").",
								&taskq_max_metric_actions,
								1000, 0, 1000000,
								PGC_POSTMASTER, 0,
								NULL, NULL, NULL);
	}
	MarkGUCPrefixReserved("taskq");
}
