/*-------------------------------------------------------------------------
 *
 * loop.c
 *	  The per-database background worker: expires leases, adds the
 *	  signals completions deferred past a locked join (queue/signal.c), announces
 *	  delayed tasks whose time came (and wakes the claims waiting for
 *	  them: no commit does), sends the coalesced NOTIFYs, and deletes
 *	  finished tasks past taskq.retention, and the rows of the workers
 *	  registry not seen for taskq.worker_retention; it fires the schedules
 *	  whose tick came (worker/schedules.c) and the timers of runs due
 *	  (taskq_fire_timers_hook: the workflow layer's run_timers.c); every
 *	  taskq.metrics_interval it refreshes the gauges of taskq.metrics()
 *	  (queue/gauges.c, then the registry's counts) in a transaction of
 *	  their own.
 *
 * Each iteration is one transaction for expiry, schedules and
 * announcements and one for retention, run with synchronous_commit off: losing one in a crash
 * only means doing it again, since everything the worker acts on is found
 * from rows (lease deadlines, not_before, next_tick, finished_at), never
 * from memory.
 * It then sleeps until the earliest deadline it knows of (a lease, a
 * not_before, a schedule's next tick, a deferred notification, a retention
 * moment), capped by taskq.worker_naptime, or until a producer sets its
 * latch (schedule() does, for its first tick); a producer that
 * committed a delayed task earlier than that moment lowers it (next_due in
 * the database's slot), so a waiting claim gets the task when it is due.
 *
 * Before touching the tables it checks that the extension exists and
 * locks it against DROP EXTENSION; without it, the worker exits and the
 * launcher starts it again when the database uses taskq.  It is started
 * only once recovery finished, so it never runs on a standby.
 *
 * Its statements on the task rows are the queue's (queue/maintenance.c);
 * those on the runs and saga steps, which it deletes past retention with
 * the tasks, are here, and so is its one statement on the workers registry
 * (taskq.worker_registry, which only the install script's functions
 * otherwise write): the deletion of rows of workers gone silent, at most
 * once per REGISTRY_RETENTION_MS.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "common/plan.h"
#include "common/settings.h"
#include "ipc/shmem.h"
#include "ipc/wakeup.h"
#include "queue/queue.h"
#include "worker/worker.h"


/* Expiry batches per iteration before the worker yields to its sleep. */
#define MAX_SWEEPS_PER_ITERATION 16
/*
 * Finished tasks are deleted up to this late: with a steady stream of
 * completions the next retention moment is always a few ms away, and
 * waking for each would cost two transactions per handful of rows; and a
 * finished task that must stay past its time (an unfinished predecessor
 * still names it, or it was locked) would make that moment lie in the past.
 */
#define RETENTION_SLACK_MS 1000
#define MIN_SLEEP_MS 1
#define LOCKED_RETRY_MS 100
/* Deferred signals are folded at most once per this many ms (they batch). */
#define FOLD_INTERVAL_MS 2
/* how often the registry's rows past taskq.worker_retention are looked for */
#define REGISTRY_RETENTION_MS 1000
/* how often the claims' starts are forgotten (queue/claim_start.c) */
#define CLAIM_START_RESET_MS 1000

PGDLLEXPORT void taskq_worker_main(Datum main_arg);

taskq_fire_timers_hook_type taskq_fire_timers_hook = NULL;

/*
 * Runs (state machines, sagas) finished before the cutoff, as their tasks,
 * and the steps of the sagas among them (taskq.saga_steps has no foreign
 * key to taskq.runs: its checks would cost every saga step a lookup and a
 * row lock of the run).
 */
#define RUNS_GONE \
	"WITH gone AS (" \
	" DELETE FROM taskq.runs AS r" \
	"  WHERE r.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(" \
	"    SELECT f.ctid FROM taskq.runs AS f" \
	"     WHERE f.finished_at OPERATOR(pg_catalog.<) $1" \
	"     ORDER BY f.finished_at LIMIT 500 FOR UPDATE SKIP LOCKED))" \
	"  RETURNING r.id, r.kind)"
#define SAGA_STEPS_GONE \
	" DELETE FROM taskq.saga_steps AS s USING gone" \
	"  WHERE gone.kind OPERATOR(pg_catalog.=) 'saga'" \
	"    AND s.run OPERATOR(pg_catalog.=) gone.id"

static TaskqPlan run_retention_plan = {
	RUNS_GONE SAGA_STEPS_GONE, 1, {TIMESTAMPTZOID}
};

/* The same, with the timers of the runs deleted (taskq.run_timers, 0.6). */
static TaskqPlan run_timers_retention_plan = {
	RUNS_GONE ","
	" timers AS (DELETE FROM taskq.run_timers AS t USING gone"
	"  WHERE t.run_id OPERATOR(pg_catalog.=) gone.id)"
	SAGA_STEPS_GONE, 1, {TIMESTAMPTZOID}
};

/*
 * Rows of the workers registry not seen since the cutoff, oldest first, in
 * batches; a row a heartbeat holds is left for the next round.
 */
static TaskqPlan registry_retention_plan = {
	"DELETE FROM taskq.worker_registry AS w"
	" WHERE w.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
	"   SELECT f.ctid FROM taskq.worker_registry AS f"
	"    WHERE f.last_seen OPERATOR(pg_catalog.<) $1"
	"    ORDER BY f.last_seen LIMIT 500 FOR UPDATE SKIP LOCKED))",
	1, {TIMESTAMPTZOID}
};

/*
 * The workers registry's part of the gauges of taskq.metrics(), after the
 * queue's (queue/gauges.c): how many workers heartbeat, and how many went
 * stale (not seen for three of their intervals, as taskq.workers says).
 */
static TaskqPlan registry_gauges_plan = {
	"INSERT INTO taskq.metric_gauges (name, action, value, refreshed_at)"
	" SELECT v.name, '', v.value, pg_catalog.now()"
	"   FROM (SELECT pg_catalog.count(*) FILTER (WHERE NOT s.stale) AS live,"
	"                pg_catalog.count(*) FILTER (WHERE s.stale) AS stale"
	"           FROM (SELECT (w.heartbeat_interval OPERATOR(pg_catalog.*) 3::pg_catalog.float8)"
	"                        OPERATOR(pg_catalog.+) w.last_seen"
	"                        OPERATOR(pg_catalog.<) pg_catalog.now() AS stale"
	"                   FROM taskq.worker_registry AS w) AS s) AS c,"
	"        LATERAL (VALUES ('taskq_workers_live', c.live::pg_catalog.float8),"
	"                        ('taskq_workers_stale', c.stale::pg_catalog.float8)) AS v(name, value)",
	0, {0}
};

static Oid	worker_dboid = InvalidOid;
static TimestampTz registry_retention_last = 0;

static void
worker_detach(int code, Datum arg)
{
	TaskqDbSlot *slot;

	LWLockAcquire(taskq_shared->lock, LW_EXCLUSIVE);
	slot = taskq_find_db_slot(worker_dboid);
	if (slot != NULL && slot->worker_pid == MyProcPid)
	{
		slot->worker_pid = 0;
		slot->worker_latch = NULL;
	}
	LWLockRelease(taskq_shared->lock);
}

/* Leave for good (exit 0: not restarted); the launcher may start us again. */
static void
worker_exit_quietly(int retry_seconds)
{
	TaskqDbSlot *slot;

	LWLockAcquire(taskq_shared->lock, LW_EXCLUSIVE);
	slot = taskq_find_db_slot(worker_dboid);
	if (slot != NULL)
		slot->retry_after = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														retry_seconds * 1000);
	LWLockRelease(taskq_shared->lock);
	proc_exit(0);
}

static TimestampTz
earliest(TimestampTz a, TimestampTz b)
{
	if (a == 0)
		return b;
	if (b == 0)
		return a;
	return Min(a, b);
}

/*
 * Start a transaction that uses the tables, with SPI connected and a
 * snapshot: the extension must exist, and is locked against DROP
 * EXTENSION until the commit; without it the worker leaves.
 */
static void
begin_worker_xact(void)
{
	Oid			extoid;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	extoid = get_extension_oid("taskq", true);
	if (!OidIsValid(extoid))
	{
		CommitTransactionCommand();
		worker_exit_quietly(60);
	}
	LockDatabaseObject(ExtensionRelationId, extoid, 0, AccessShareLock);
	if (!OidIsValid(get_extension_oid("taskq", true)))
	{
		/* dropped while we waited for the lock */
		CommitTransactionCommand();
		worker_exit_quietly(60);
	}
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
}

static void
end_worker_xact(void)
{
	taskq_finished_dispatch();	/* leases expired, deferred signals folded */
	PopActiveSnapshot();
	SPI_finish();
	CommitTransactionCommand();
}

/*
 * One full iteration (maintenance and announcements); returns the earliest
 * moment maintenance has work again (0: nothing known), and sets *notify_due
 * to when the next deferred announcement is due (0: none).
 */
static TimestampTz
worker_iteration(bool first, TimestampTz *last_due_check, TimestampTz *notify_due)
{
	TimestampTz next = 0;
	TimestampTz now;

	begin_worker_xact();
	now = GetCurrentTransactionStartTimestamp();

	pgstat_report_activity(STATE_RUNNING, "taskq: expiring leases");
	for (int i = 0; i < MAX_SWEEPS_PER_ITERATION; i++)
	{
		if (taskq_sweep_expired() < TASKQ_SWEEP_BATCH)
			break;
		next = now;				/* more may be waiting: come back soon */
	}

	pgstat_report_activity(STATE_RUNNING, "taskq: firing schedules");
	next = earliest(next, taskq_fire_schedules(now));

	if (taskq_fire_timers_hook != NULL)
	{
		pgstat_report_activity(STATE_RUNNING, "taskq: firing timers of runs");
		next = earliest(next, taskq_fire_timers_hook(now));
	}

	pgstat_report_activity(STATE_RUNNING, "taskq: adding deferred signals");
	if (taskq_fold_deferred_signals() == TASKQ_FOLD_BATCH)
		next = now;				/* more may be waiting: come back soon */
	taskq_drop_empty_deferred();

	pgstat_report_activity(STATE_RUNNING, "taskq: announcing ready work");
	{
		ListCell   *lc;

		foreach(lc, taskq_came_due_actions(*last_due_check, now))
		{
			char	   *action = lfirst(lc);

			taskq_notify_mark(action);
			taskq_wake_ready(action);	/* the rows are committed: wake now */
		}
		*last_due_check = now;
		/* rate windows that reopened: their claims may start again */
		foreach(lc, taskq_flow_reopened(now))
		{
			char	   *action = lfirst(lc);

			taskq_notify_mark(action);
			taskq_wake_ready(action);
		}
	}
	taskq_notify_collect(first);
	*notify_due = taskq_notify_send_due(true);

	{
		TimestampTz lease;
		TimestampTz delay;
		bool		has_lease;
		bool		has_delay;

		taskq_next_deadlines(now, &lease, &has_lease, &delay, &has_delay);

		/*
		 * A lease already past its deadline was skipped because its row is
		 * locked (its owner is returning it): look again shortly, not in a
		 * tight loop.
		 */
		if (has_lease)
			next = earliest(next, Max(lease,
									  TimestampTzPlusMilliseconds(now, LOCKED_RETRY_MS)));
		if (has_delay)
			next = earliest(next, delay);
		if (taskq_flow_next_reopen(&delay))
			next = earliest(next, delay);
	}

	end_worker_xact();

	if (taskq_retention >= 0)
	{
		TimestampTz cutoff;
		TimestampTz oldest;
		Datum		arg;

		pgstat_report_activity(STATE_RUNNING, "taskq: deleting finished tasks past retention");
		begin_worker_xact();
		cutoff = TimestampTzPlusMilliseconds(GetCurrentTransactionStartTimestamp(),
											 -(int64) taskq_retention * 1000);
		arg = TimestampTzGetDatum(cutoff);
		if (OidIsValid(get_relname_relid("run_timers", get_namespace_oid("taskq", false))))
			taskq_execute(&run_timers_retention_plan, &arg, NULL, false, 0);
		else if (taskq_schema_at_least_0_5())
			taskq_execute(&run_retention_plan, &arg, NULL, false, 0);
		if (taskq_delete_finished(cutoff) == TASKQ_RETENTION_BATCH)
			next = earliest(next, now);
		else if (taskq_oldest_finished(&oldest))
			next = earliest(next,
							Max(TimestampTzPlusMilliseconds(oldest,
															(int64) taskq_retention * 1000),
								TimestampTzPlusMilliseconds(now, RETENTION_SLACK_MS)));
		end_worker_xact();
	}

	if (taskq_worker_retention >= 0 &&
		(registry_retention_last == 0 ||
		 TimestampDifferenceExceeds(registry_retention_last, now, REGISTRY_RETENTION_MS)))
	{
		pgstat_report_activity(STATE_RUNNING, "taskq: deleting workers not seen past retention");
		begin_worker_xact();
		registry_retention_last = now;
		/* the table came with 0.6: until the update, nothing to delete */
		if (OidIsValid(get_relname_relid("worker_registry",
										 get_namespace_oid("taskq", false))))
		{
			Datum		arg;

			arg = TimestampTzGetDatum(TimestampTzPlusMilliseconds(GetCurrentTransactionStartTimestamp(),
																  -(int64) taskq_worker_retention * 1000));
			taskq_execute(&registry_retention_plan, &arg, NULL, false, 0);
		}
		end_worker_xact();
	}

	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
	return next;
}

/*
 * The light step between maintenance: take the producers' announcements
 * and send those that are due.  Returns false if the producers overflowed
 * the slot: a full iteration must announce every action.
 */
static bool
worker_announce(TimestampTz *notify_due, bool *announce_all)
{
	if (taskq_notify_take())
	{
		*announce_all = true;
		return false;
	}
	if (taskq_notify_due_now())
	{
		pgstat_report_activity(STATE_RUNNING, "taskq: announcing ready work");
		begin_worker_xact();
		*notify_due = taskq_notify_send_due(true);
		end_worker_xact();
		pgstat_report_activity(STATE_IDLE, NULL);
	}
	else
		*notify_due = taskq_notify_send_due(false);
	return true;
}

/*
 * Wake the claims waiting for slots of limited actions that were let go a
 * moment ago and not taken again (queue/flow_books.c), and announce those
 * actions if anyone listens.  Needs no transaction.  Returns when to look
 * again (0: no slot owed).
 */
static TimestampTz
wake_freed_slots(TimestampTz now)
{
	List	   *woken = NIL;
	TimestampTz next = taskq_wake_freed_slots(now, &woken);
	ListCell   *lc;

	if (woken != NIL && taskq_database_heard())
		foreach(lc, woken)
			taskq_notify_mark(lfirst(lc));
	list_free_deep(woken);
	return next;
}

/*
 * The gauges of taskq.metrics(), refreshed in a transaction of their own
 * (the queue's counts, then the registry's), every taskq.metrics_interval.
 */
static void
worker_refresh_gauges(void)
{
	pgstat_report_activity(STATE_RUNNING, "taskq: refreshing the gauges of taskq.metrics()");
	begin_worker_xact();
	/* the table came with 0.6: until the update, nothing to refresh */
	if (taskq_gauges_installed())
	{
		(void) taskq_refresh_gauges();
		taskq_execute(&registry_gauges_plan, NULL, NULL, false, 0);
	}
	end_worker_xact();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * The light step for deferred signals: fold them in a transaction of their
 * own (a full iteration would also look at leases, delays and retention).
 */
static void
worker_fold(void)
{
	pgstat_report_activity(STATE_RUNNING, "taskq: adding deferred signals");
	begin_worker_xact();
	while (taskq_fold_deferred_signals() == TASKQ_FOLD_BATCH)
		CHECK_FOR_INTERRUPTS();
	end_worker_xact();
	pgstat_report_activity(STATE_IDLE, NULL);
}

void
taskq_worker_main(Datum main_arg)
{
	TaskqDbSlot *slot;
	TimestampTz last_due_check;
	TimestampTz next_maintenance;
	TimestampTz notify_due;
	bool		first = true;
	bool		announce_all = false;
	bool		fold_pending = false;
	TimestampTz last_fold = 0;
	TimestampTz last_claim_start_reset = 0;
	TimestampTz next_gauges = 0;
	Oid			role;

	worker_dboid = DatumGetObjectId(main_arg);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/*
	 * Claim the slot before connecting: a worker restarted for a database
	 * being dropped (or gone) leaves for good instead of failing to connect
	 * and being restarted again and again.
	 */
	LWLockAcquire(taskq_shared->lock, LW_EXCLUSIVE);
	slot = taskq_find_db_slot(worker_dboid);
	if (slot == NULL || slot->paused || slot->worker_pid != 0)
	{
		LWLockRelease(taskq_shared->lock);
		proc_exit(0);
	}
	slot->worker_pid = MyProcPid;
	slot->worker_latch = MyLatch;
	LWLockRelease(taskq_shared->lock);
	on_shmem_exit(worker_detach, (Datum) 0);

	/* As taskq.worker_role, resolved by the launcher (InvalidOid: bootstrap superuser). */
	memcpy(&role, MyBgworkerEntry->bgw_extra, sizeof(Oid));
	BackgroundWorkerInitializeConnectionByOid(worker_dboid, role, 0);
	pgstat_report_appname("taskq worker");

	/*
	 * Every name in our SQL is schema-qualified, but type names in casts
	 * still go through search_path: pin it, whatever ALTER ROLE or ALTER
	 * DATABASE set.
	 */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);

	/* Nothing the worker commits needs to wait for a WAL flush. */
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("application_name", "taskq worker", PGC_USERSET, PGC_S_OVERRIDE);

	next_maintenance = 0;
	notify_due = 0;

	/* At start, look back a little for delayed tasks that came due. */
	last_due_check = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), -60 * 1000);

	for (;;)
	{
		TimestampTz now = GetCurrentTimestamp();
		TimestampTz wake;
		TimestampTz fold_at;
		TimestampTz due;
		TimestampTz freed_due;
		bool		wake_for_fold = false;
		long		sleep_ms;

		CHECK_FOR_INTERRUPTS();

		/* a producer committed a delayed task due before our next look */
		due = taskq_next_due_take();
		if (due != 0 && !first && due < next_maintenance)
			next_maintenance = due;
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		/*
		 * Maintenance when due; a producer's wakeup before that only takes
		 * and sends announcements, which costs no transaction unless one is
		 * due: a burst of commits must not cost the worker a full iteration
		 * each.
		 */
		/*
		 * Deferred signals are folded at most once per FOLD_INTERVAL_MS,
		 * so that they batch; until then the flag stays set, and the
		 * completions that defer more do not wake us again.
		 */
		fold_at = TimestampTzPlusMilliseconds(last_fold, FOLD_INTERVAL_MS);
		if (now >= fold_at)
			fold_pending |= taskq_deferred_take(true);
		else
			wake_for_fold = taskq_deferred_take(false);
		/* writes no trigger saw (queue/claim_start.c) wait at most this long */
		if (now >= last_claim_start_reset + CLAIM_START_RESET_MS * (int64) 1000)
		{
			taskq_claim_start_reset(MyDatabaseId);
			last_claim_start_reset = now;
		}
		/* before the announcements, which then include their actions */
		freed_due = wake_freed_slots(now);
		if (first || now >= next_maintenance ||
			!worker_announce(&notify_due, &announce_all))
		{
			TimestampTz cap = TimestampTzPlusMilliseconds(now, taskq_worker_naptime);

			next_maintenance = worker_iteration(first || announce_all,
												&last_due_check, &notify_due);
			announce_all = false;
			next_maintenance = next_maintenance == 0 ? cap : Min(next_maintenance, cap);
			first = false;
			fold_pending = false;	/* the iteration folded */
			last_fold = now;
		}
		else if (fold_pending)
		{
			worker_fold();
			fold_pending = false;
			last_fold = now;
		}

		/*
		 * The gauges every taskq.metrics_interval, but never more than a
		 * tenth of the worker's time: a refresh counts the queue's sets
		 * (a second or so per million ready tasks), during which nothing
		 * else here runs.
		 */
		if (taskq_metrics_interval > 0 && now >= next_gauges)
		{
			worker_refresh_gauges();
			next_gauges = GetCurrentTimestamp();
			next_gauges += Max(taskq_metrics_interval * USECS_PER_SEC,
							   10 * (next_gauges - now));
		}

		/* +1: wake just after the deadline, not just before it */
		wake = earliest(next_maintenance, notify_due);
		if (taskq_metrics_interval > 0)
			wake = earliest(wake, next_gauges);
		if (wake_for_fold)
			wake = earliest(wake, fold_at);
		wake = earliest(wake, freed_due);
		wake_for_fold = false;
		sleep_ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), wake) + 1;
		sleep_ms = Max(Min(sleep_ms, taskq_worker_naptime), MIN_SLEEP_MS);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 sleep_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
