/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The launcher: one background worker per cluster that starts a taskq
 *	  worker for each database, and the utility hook that stops a
 *	  database's worker while DROP DATABASE, ALTER DATABASE RENAME or
 *	  CREATE DATABASE ... TEMPLATE needs the database to itself.
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

#include "acl.h"
#include "shmem.h"
#include "taskq.h"

#define LAUNCHER_NAPTIME_MS		10000
#define WORKER_RESTART_SECONDS	5
#define PAUSE_WAIT_MS			5000

PGDLLEXPORT void taskq_launcher_main(Datum main_arg);

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

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
 * connect to; *role is that role (acl.c).  None when taskq.worker_role
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

/*
 * Stop the worker of a database that a utility command needs to itself,
 * and keep it stopped until unpause_database.  Returns the database's oid,
 * or InvalidOid if there was nothing to stop.
 */
static Oid
pause_database(const char *dbname)
{
	Oid			dboid = get_database_oid(dbname, true);
	TaskqDbSlot *slot;
	Latch	   *launcher;
	TimestampTz give_up;
	bool		signalled = false;

	if (!OidIsValid(dboid))
		return InvalidOid;
	LWLockAcquire(taskq_shared->lock, LW_EXCLUSIVE);
	slot = taskq_find_db_slot(dboid);
	if (slot == NULL)
	{
		LWLockRelease(taskq_shared->lock);
		return InvalidOid;
	}
	slot->paused = true;
	launcher = taskq_shared->launcher_latch;
	LWLockRelease(taskq_shared->lock);

	/* The launcher holds the worker's handle: it stops the worker for good. */
	if (launcher)
		SetLatch(launcher);

	/* Wait for it to leave; the command itself waits too, and says why. */
	give_up = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), PAUSE_WAIT_MS);
	for (;;)
	{
		pid_t		pid;

		LWLockAcquire(taskq_shared->lock, LW_SHARED);
		slot = taskq_find_db_slot(dboid);
		pid = slot ? slot->worker_pid : 0;
		LWLockRelease(taskq_shared->lock);
		if (pid == 0 || GetCurrentTimestamp() >= give_up)
			break;

		/*
		 * A launcher that restarted has no handle of this worker: after a
		 * second, ask the worker itself.  If the postmaster restarts it, it
		 * finds its slot paused and leaves for good.
		 */
		if (!signalled &&
			GetCurrentTimestamp() >= TimestampTzPlusMilliseconds(give_up, 1000 - PAUSE_WAIT_MS))
		{
			kill(pid, SIGTERM);
			signalled = true;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return dboid;
}

/*
 * The database is still there (the command failed, or renamed or copied
 * it): let the launcher start its worker again now.
 */
static void
unpause_database(Oid dboid)
{
	TaskqDbSlot *slot;
	Latch	   *launcher;

	LWLockAcquire(taskq_shared->lock, LW_EXCLUSIVE);
	slot = taskq_find_db_slot(dboid);
	if (slot != NULL)
		slot->paused = false;
	launcher = taskq_shared->launcher_latch;
	LWLockRelease(taskq_shared->lock);
	if (launcher)
		SetLatch(launcher);
}

/* The database a utility statement needs without other connections. */
static const char *
exclusive_database(Node *parsetree)
{
	if (IsA(parsetree, DropdbStmt))
		return ((DropdbStmt *) parsetree)->dbname;
	if (IsA(parsetree, RenameStmt) &&
		((RenameStmt *) parsetree)->renameType == OBJECT_DATABASE)
		return ((RenameStmt *) parsetree)->subname;
	if (IsA(parsetree, CreatedbStmt))
	{
		ListCell   *lc;

		foreach(lc, ((CreatedbStmt *) parsetree)->options)
		{
			DefElem    *opt = lfirst(lc);

			if (strcmp(opt->defname, "template") == 0 && opt->arg != NULL)
				return defGetString(opt);
		}
	}
	return NULL;
}

static void
taskq_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
					 bool readOnlyTree, ProcessUtilityContext context,
					 ParamListInfo params, QueryEnvironment *queryEnv,
					 DestReceiver *dest, QueryCompletion *qc)
{
	const char *dbname = NULL;
	Oid			paused = InvalidOid;

	if (taskq_shared != NULL)
		dbname = exclusive_database(pstmt->utilityStmt);
	if (dbname != NULL)
		paused = pause_database(dbname);

	PG_TRY();
	{
		if (prev_ProcessUtility)
			prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
	}
	PG_CATCH();
	{
		if (OidIsValid(paused))
			unpause_database(paused);
		PG_RE_THROW();
	}
	PG_END_TRY();

	/*
	 * A dropped database's slot stays paused until the launcher forgets it:
	 * a worker the postmaster restarts meanwhile (one we stopped with
	 * SIGTERM because the launcher had no handle of it) then leaves at once
	 * instead of failing to connect to the vanished database.
	 */
	if (OidIsValid(paused) && !IsA(pstmt->utilityStmt, DropdbStmt))
		unpause_database(paused);

	/*
	 * DDL may have disabled the triggers that note SQL writes of ready
	 * tasks (hint.c) or re-enabled them after writes they missed: claims
	 * walk from the first entry again.
	 */
	if (IsA(pstmt->utilityStmt, AlterTableStmt) || IsA(pstmt->utilityStmt, CreateTrigStmt) ||
		IsA(pstmt->utilityStmt, DropStmt) || IsA(pstmt->utilityStmt, RenameStmt) ||
		IsA(pstmt->utilityStmt, AlterExtensionStmt) ||
		IsA(pstmt->utilityStmt, CreateExtensionStmt))
		taskq_hint_reset(MyDatabaseId);
}

void
taskq_install_utility_hook(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = taskq_ProcessUtility;
}
