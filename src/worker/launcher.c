/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The launcher: one background worker per cluster that starts a taskq
 *	  worker for each database.
 *
 * The launcher connects to no database; it reads pg_database and keeps one
 * slot per connectable database in shared memory.  A worker started where
 * the extension is not installed exits at once and the slot is not tried
 * again for a minute, unless a transaction there notes ready work (the
 * commit callback sets the launcher's latch), which is how a database that
 * just created the extension gets its worker within moments.  A worker that
 * fails is restarted by the postmaster after WORKER_RESTART_SECONDS; one
 * that exits cleanly is started again by the launcher when needed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "common/settings.h"
#include "ipc/shmem.h"
#include "queue/queue.h"
#include "worker/worker.h"

#define LAUNCHER_NAPTIME_MS		10000
#define WORKER_RESTART_SECONDS	5

PGDLLEXPORT void taskq_launcher_main(Datum main_arg);


/* The launcher's handles of the workers it registered, by slot. */
static BackgroundWorkerHandle *handles[TASKQ_MAX_DATABASES];

/* A background worker of ours: function and type, restarted after a crash. */
static void
init_worker(BackgroundWorker *worker, const char *function, const char *type)
{
	memset(worker, 0, sizeof(*worker));
	worker->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker->bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker->bgw_restart_time = WORKER_RESTART_SECONDS;
	strlcpy(worker->bgw_library_name, "taskq", BGW_MAXLEN);
	strlcpy(worker->bgw_function_name, function, BGW_MAXLEN);
	strlcpy(worker->bgw_name, type, BGW_MAXLEN);
	strlcpy(worker->bgw_type, type, BGW_MAXLEN);
}

/* Register the launcher; called from _PG_init at preload. */
void
taskq_register_launcher(void)
{
	BackgroundWorker worker;

	init_worker(&worker, "taskq_launcher_main", "taskq launcher");
	RegisterBackgroundWorker(&worker);
}

static void
launcher_detach(int code, Datum arg)
{
	LWLockAcquire(taskq_shared->lock, LW_EXCLUSIVE);
	if (taskq_shared->launcher_pid == MyProcPid)
	{
		taskq_shared->launcher_pid = 0;
		taskq_shared->launcher_latch = NULL;
	}
	LWLockRelease(taskq_shared->lock);
}

/*
 * The connectable, non-template databases that the workers' role may
 * connect to; *role is that role (worker/role.c).  None when taskq.worker_role
 * names a role that cannot be used.
 */
static List *
list_databases(Oid *role)
{
	List	   *result = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	MemoryContext outer = CurrentMemoryContext;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	if (!taskq_worker_role_lookup(role))
	{
		CommitTransactionCommand();
		return NIL;
	}
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);

		if (db->datallowconn && !db->datistemplate &&
			taskq_worker_role_may_connect(*role, db->oid))
		{
			MemoryContext old = MemoryContextSwitchTo(outer);

			result = lappend_oid(result, db->oid);
			MemoryContextSwitchTo(old);
		}
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return result;
}

static BackgroundWorkerHandle *
start_worker(Oid dboid, Oid role)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *h;

	init_worker(&worker, "taskq_worker_main", "taskq worker");
	snprintf(worker.bgw_name, BGW_MAXLEN, "taskq worker for database %u", dboid);
	worker.bgw_main_arg = ObjectIdGetDatum(dboid);
	memcpy(worker.bgw_extra, &role, sizeof(Oid));	/* taskq.worker_role */
	worker.bgw_notify_pid = MyProcPid;

	if (!RegisterDynamicBackgroundWorker(&worker, &h))
		return NULL;
	return h;
}

/*
 * Bring the slots in line with pg_database, stop the workers of paused
 * databases, and start missing workers.
 */
static void
launcher_scan(void)
{
	Oid			role;
	List	   *dbs = list_databases(&role);
	TimestampTz now = GetCurrentTimestamp();
	static bool warned = false;
	ListCell   *lc;

	LWLockAcquire(taskq_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < TASKQ_MAX_DATABASES; i++)
	{
		TaskqDbSlot *slot = &taskq_shared->dbs[i];
		pid_t		pid;

		if (slot->dboid == InvalidOid)
			continue;
		if (handles[i] != NULL &&
			GetBackgroundWorkerPid(handles[i], &pid) == BGWH_STOPPED)
		{
			pfree(handles[i]);
			handles[i] = NULL;
		}
		/* paused, or the database is gone: stop it, not to be restarted */
		if (handles[i] != NULL &&
			(slot->paused || !list_member_oid(dbs, slot->dboid)))
			TerminateBackgroundWorker(handles[i]);
		slot->has_worker = handles[i] != NULL;
		/* Forget databases that are gone once their worker stopped. */
		if (!list_member_oid(dbs, slot->dboid) && handles[i] == NULL &&
			slot->worker_pid == 0)
			memset(slot, 0, sizeof(TaskqDbSlot));
	}

	foreach(lc, dbs)
	{
		Oid			dboid = lfirst_oid(lc);
		TaskqDbSlot *slot = taskq_find_db_slot(dboid);
		int			i;

		if (slot == NULL)
		{
			slot = taskq_find_db_slot(InvalidOid);
			if (slot == NULL)
				continue;		/* more databases than slots */
			memset(slot, 0, sizeof(TaskqDbSlot));
			slot->dboid = dboid;
		}
		i = slot - taskq_shared->dbs;
		if (slot->paused || handles[i] != NULL || slot->worker_pid != 0 ||
			now < slot->retry_after)
			continue;

		/* registering only talks to the postmaster: fine under the lock */
		handles[i] = start_worker(dboid, role);
		slot->has_worker = handles[i] != NULL;
		if (handles[i] == NULL)
		{
			if (!warned)
				ereport(WARNING,
						(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
						 errmsg("taskq could not start a worker for database %u", dboid),
						 errhint("Raise max_worker_processes.")));
			warned = true;
			break;
		}
	}
	LWLockRelease(taskq_shared->lock);
	list_free(dbs);
}

void
taskq_launcher_main(Datum main_arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("taskq launcher");

	LWLockAcquire(taskq_shared->lock, LW_EXCLUSIVE);
	taskq_shared->launcher_pid = MyProcPid;
	taskq_shared->launcher_latch = MyLatch;
	LWLockRelease(taskq_shared->lock);
	on_shmem_exit(launcher_detach, (Datum) 0);

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		pgstat_report_activity(STATE_RUNNING, "taskq: starting database workers");
		launcher_scan();
		pgstat_report_activity(STATE_IDLE, NULL);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 LAUNCHER_NAPTIME_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
