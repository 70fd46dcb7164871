/*-------------------------------------------------------------------------
 *
 * utility_hook.c
 *	  The utility hook that stops a database's worker while DROP DATABASE,
 *	  ALTER DATABASE RENAME or CREATE DATABASE ... TEMPLATE needs the
 *	  database to itself; it also counts the sessions that LISTEN for
 *	  taskq's announcements (ipc/wakeup.c sends none while there are none).
 *
 * Those commands need the database with no other connections.  The hook
 * marks the slot paused and sets the launcher's latch (the launcher
 * terminates the worker with its handle, so the postmaster does not
 * restart it), waits up to 5 s for the worker to leave, runs the command,
 * and unpauses the slot whatever the outcome.  Locking: the slot is
 * changed under the shared-memory lock.
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

#include "ipc/shmem.h"
#include "ipc/wakeup.h"
#include "queue/queue.h"
#include "worker/worker.h"

#define PAUSE_WAIT_MS			5000	/* how long a command waits for the worker to leave */

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

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

	/* a session that listens for announcements: producers have them sent */
	if (taskq_shared != NULL && IsA(pstmt->utilityStmt, ListenStmt))
	{
		const char *channel = ((ListenStmt *) pstmt->utilityStmt)->conditionname;

		if (strcmp(channel, "taskq") == 0 || strcmp(channel, "taskq_progress") == 0)
			taskq_note_listener();	/* ipc/wakeup.c */
	}
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
	 * tasks (queue/claim_start.c) or re-enabled them after writes they missed: claims
	 * walk from the first entry again.
	 */
	if (IsA(pstmt->utilityStmt, AlterTableStmt) || IsA(pstmt->utilityStmt, CreateTrigStmt) ||
		IsA(pstmt->utilityStmt, DropStmt) || IsA(pstmt->utilityStmt, RenameStmt) ||
		IsA(pstmt->utilityStmt, AlterExtensionStmt) ||
		IsA(pstmt->utilityStmt, CreateExtensionStmt))
		taskq_claim_start_reset(MyDatabaseId);
}

void
taskq_install_utility_hook(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = taskq_ProcessUtility;
}
