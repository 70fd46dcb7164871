/*-------------------------------------------------------------------------
 *
 * run_timers.c
 *	  The timers of runs (taskq.run_timers): a waiting state's timeout
 *	  (machine_timers.c sets it) and a run's deadline (start_machine's and
 *	  start_saga's last argument), fired by the background worker through
 *	  taskq_fire_timers_hook; and the end of a run whose deadline passed.
 *
 * A timer is a row, written in the transaction that starts the run or
 * enters the waiting state, with the run's lock held: a crash loses it
 * with that transaction or keeps it with it, and the worker fires what the
 * rows say after a restart.  A run has at most one timer of each kind (its
 * primary key): a new visit of a waiting state replaces the timeout of the
 * last one.  Rows are not deleted when their run moves on or finishes
 * (that would cost every transition and every end a statement): a row
 * whose run left the state, finished or was deleted is deleted when it
 * comes due, having fired nothing.  The worker's retention of runs deletes
 * the timers of the runs it deletes with them.
 *
 * The worker reads the timers due through run_timers_due_idx (only its
 * first entries: a thousand runs waiting with timeouts cost nothing until
 * they come due), a batch at a time, each in a subtransaction of the
 * worker's transaction: it takes the run's lock without waiting (a run
 * whose lock a caller holds is looked at again LOCKED_RETRY_MS later),
 * then reads the row again with a snapshot of this moment: deleted, or due
 * later (a new visit's), it fires nothing.  Otherwise the row is deleted
 * and the run, fetched under that lock, moves on as the timer says, or not
 * at all if it already left that state or finished.  Because an event, a
 * step's return and cancel_run all take the same lock and change the run
 * in the transaction that holds it, exactly one of them and the timer
 * moves the run.  A timer whose firing fails (an error of the state it
 * moves into) is deleted after a warning, and a waiting run whose timeout
 * failed so fails with that error; a lock conflict or deadlock leaves the
 * row for the next look.
 *
 * A deadline fails the run with error "deadline exceeded" (machine.c and
 * saga.c say how: a machine's step is cancelled, a saga undoes); the end
 * of a run that fails cancels its running child runs (run_child.c).  Its
 * continuation forks are runs of their own and go on.
 *
 * Locking: the run's lock (run.c), taken without waiting, before anything
 * else of the run, and for a child run its ancestors' before it, as
 * taskq_run_lock takes them (taskq_run_try_lock): a timer of a child does
 * not hold the child's lock while it waits for its parent's, which a
 * cancel of the parent holds while it waits for the child's.  The timer
 * row is written only under it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "common/plan.h"
#include "ipc/wakeup.h"
#include "queue/queue.h"
#include "workflow/timers.h"
#include "workflow/workflow.h"

/* timers fired per transaction before the worker comes back at once */
#define TIMER_BATCH			100
/* a due timer whose run a caller holds locked is looked at again so soon */
#define LOCKED_RETRY_MS		100

static TaskqPlan set_plan = {
	"INSERT INTO taskq.run_timers AS t (run_id, kind, state, due_at)"
	" VALUES ($1, $2, $3, $4)"
	" ON CONFLICT (run_id, kind) DO UPDATE SET state = EXCLUDED.state, due_at = EXCLUDED.due_at",
	4, {TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID}
};

static TaskqPlan deadline_plan = {
	"UPDATE taskq.runs AS r"
	"   SET deadline = pg_catalog.now() OPERATOR(pg_catalog.+) $2"
	" WHERE r.id OPERATOR(pg_catalog.=) $1"
	" RETURNING r.deadline, r.finished_at IS NULL",
	2, {TEXTOID, INTERVALOID}
};

static TaskqPlan due_plan = {
	"SELECT t.run_id, t.kind, t.due_at FROM taskq.run_timers AS t"
	" WHERE t.due_at OPERATOR(pg_catalog.<=) $1"
	" ORDER BY t.due_at LIMIT 100",
	1, {TIMESTAMPTZOID}
};

static TaskqPlan earliest_plan = {
	"SELECT t.due_at FROM taskq.run_timers AS t ORDER BY t.due_at LIMIT 1",
	0, {InvalidOid}
};

static TaskqPlan recheck_plan = {
	"SELECT t.state, t.due_at, r.deadline FROM taskq.run_timers AS t"
	"  LEFT JOIN taskq.runs AS r ON r.id OPERATOR(pg_catalog.=) t.run_id"
	" WHERE t.run_id OPERATOR(pg_catalog.=) $1 AND t.kind OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, TEXTOID}
};

static TaskqPlan delete_plan = {
	"DELETE FROM taskq.run_timers AS t"
	" WHERE t.run_id OPERATOR(pg_catalog.=) $1 AND t.kind OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, TEXTOID}
};

/* ----------
 * Setting timers
 * ----------
 */

/*
 * The run's timer of this kind is due_at (its lock held): replaces the one
 * it had.  The commit wakes the worker if that is earlier than it planned
 * to look.
 */
void
taskq_run_timer_set(const char *run_id, const char *kind, const char *state,
					TimestampTz due_at)
{
	Datum		args[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	args[0] = CStringGetTextDatum(run_id);
	args[1] = CStringGetTextDatum(kind);
	if (state)
		args[2] = CStringGetTextDatum(state);
	else
		nulls[2] = 'n';
	args[3] = TimestampTzGetDatum(due_at);
	taskq_execute(&set_plan, args, nulls, false, 0);
	taskq_note_due(due_at);
}

/*
 * The run just started (its lock held) must finish within deadline: its
 * column deadline and its timer.  A positive interval (22023).
 */
void
taskq_run_set_deadline(const char *id, Interval *deadline)
{
	Interval	zero;
	Datum		args[2];
	bool		isnull;
	TimestampTz at;

	memset(&zero, 0, sizeof(zero));
	if (DatumGetBool(DirectFunctionCall2(interval_le, IntervalPGetDatum(deadline),
										 IntervalPGetDatum(&zero))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"deadline\" must be a positive interval")));
	args[0] = CStringGetTextDatum(id);
	args[1] = IntervalPGetDatum(deadline);
	taskq_execute(&deadline_plan, args, NULL, false, 0);
	if (SPI_processed == 0)
		return;
	at = DatumGetTimestampTz(taskq_get_datum(0, 1, &isnull));
	if (isnull || TIMESTAMP_NOT_FINITE(at))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"deadline\" must be a finite interval")));
	if (taskq_get_bool(0, 2, NULL))
		taskq_run_timer_set(id, "deadline", NULL, at);
}

/* ----------
 * Deadlines
 * ----------
 */

/*
 * The run's deadline passed: it fails (its kind says how); its running
 * children are cancelled by the end of the run (run_child.c).
 */
static void
deadline_exceeded(TaskqRun *run)
{
	if (strcmp(run->kind, "machine") == 0)
		taskq_machine_deadline(run);
	else
		taskq_saga_deadline(run);
}

/* ----------
 * Firing (the background worker)
 * ----------
 */
typedef struct DueTimer
{
	char	   *run_id;
	char	   *kind;
	TimestampTz due_at;
} DueTimer;

/*
 * Fire one timer (in the caller's subtransaction).  Returns false if its
 * run was locked: look again soon.
 */
static bool
fire_one(const DueTimer *t, TimestampTz now)
{
	Datum		args[2];
	bool		isnull;
	char	   *state;
	TimestampTz due_at;
	TimestampTz deadline;
	bool		no_deadline;
	TaskqRun   *run;

	if (!taskq_run_try_lock(t->run_id))
		return false;
	args[0] = CStringGetTextDatum(t->run_id);
	args[1] = CStringGetTextDatum(t->kind);
	taskq_execute_latest(&recheck_plan, args, NULL, true);
	if (SPI_processed == 0)
		return true;			/* fired or replaced meanwhile */
	state = taskq_get_text(0, 1, NULL);
	due_at = DatumGetTimestampTz(taskq_get_datum(0, 2, &isnull));
	deadline = DatumGetTimestampTz(taskq_get_datum(0, 3, &no_deadline));
	if (due_at > now)
		return true;			/* a new visit's timer */
	if (strcmp(t->kind, "deadline") == 0 && !no_deadline && deadline > now)
	{
		/* the run's deadline is later (a row edited by hand): wait for it */
		taskq_run_timer_set(t->run_id, "deadline", NULL, deadline);
		return true;
	}
	taskq_execute(&delete_plan, args, NULL, false, 0);
	run = taskq_run_fetch(t->run_id);
	if (run == NULL || taskq_run_status_finished(run->status))
		return true;			/* stale: the run ended */
	if (strcmp(t->kind, "timeout") == 0)
		taskq_machine_timeout_fire(run, state, due_at);
	else if (!no_deadline)
		deadline_exceeded(run);
	taskq_finished_dispatch();	/* the steps it cancelled, in this subtransaction */
	return true;
}

/* A lock conflict or deadlock: the timer is looked at again, not dropped. */
static bool
transient(int sqlerrcode)
{
	return ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_TRANSACTION_ROLLBACK ||
		sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE;
}

/*
 * A timeout failed to move its run (the state it enters refused it): the
 * run, if it still waits there, fails with that error.
 */
static void
timeout_failed(const DueTimer *t, const char *message)
{
	TaskqRun   *run;

	if (!taskq_run_try_lock(t->run_id))
		return;
	run = taskq_run_fetch(t->run_id);
	if (run == NULL || run->status != TASKQ_RUN_WAITING)
		return;
	run->error = psprintf("state \"%s\": timeout: %s", run->state, message);
	taskq_run_set_status(run, TASKQ_RUN_FAILED);
	taskq_run_store(run);
}

/*
 * Fire one timer in a subtransaction; an error is a warning (see the
 * banner).  Returns false if the timer is to be looked at again soon.
 */
static bool
fire_in_subxact(const DueTimer *t, TimestampTz now)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	bool		done = true;
	ErrorData  *edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		done = fire_one(t, now);
		/* not fired (a lock held): the ancestors' locks it took go too */
		if (done)
			ReleaseCurrentSubTransaction();
		else
			RollbackAndReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	if (edata == NULL)
		return done;
	if (transient(edata->sqlerrcode))
		return false;
	ereport(WARNING,
			(errcode(edata->sqlerrcode),
			 errmsg("taskq could not fire the %s of run \"%s\": %s",
					t->kind, t->run_id, edata->message),
			 errdetail("The timer is deleted.")));

	/* the second try only deletes the timer (and fails a waiting run) */
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		Datum		args[2];

		args[0] = CStringGetTextDatum(t->run_id);
		args[1] = CStringGetTextDatum(t->kind);
		if (strcmp(t->kind, "timeout") == 0)
			timeout_failed(t, edata->message);
		taskq_execute(&delete_plan, args, NULL, false, 0);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		done = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return done;
}

/*
 * Fire the timers due at now, in the caller's transaction (SPI connected,
 * the background worker's).  Returns when to look again: the earliest
 * due_at, now for a full batch, a little later for a timer whose run was
 * locked; 0 if there is no timer (or the schema has none yet).
 */
TimestampTz
taskq_fire_run_timers(TimestampTz now)
{
	Datum		arg = TimestampTzGetDatum(now);
	DueTimer   *due;
	int			n;
	bool		isnull;
	bool		retry = false;
	TimestampTz earliest;

	/* the table came with 0.6: until the update, no timers */
	if (!OidIsValid(get_relname_relid("run_timers", get_namespace_oid("taskq", false))))
		return 0;

	taskq_execute(&due_plan, &arg, NULL, true, 0);
	n = (int) SPI_processed;
	due = palloc(sizeof(DueTimer) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		due[i].run_id = taskq_get_text(i, 1, NULL);
		due[i].kind = taskq_get_text(i, 2, NULL);
		due[i].due_at = DatumGetTimestampTz(taskq_get_datum(i, 3, &isnull));
	}
	for (int i = 0; i < n; i++)
		retry |= !fire_in_subxact(&due[i], now);
	if (retry)
		return TimestampTzPlusMilliseconds(now, LOCKED_RETRY_MS);
	if (n == TIMER_BATCH)
		return now;				/* more may be due */

	taskq_execute_latest(&earliest_plan, NULL, NULL, true);
	if (SPI_processed == 0)
		return 0;
	earliest = DatumGetTimestampTz(taskq_get_datum(0, 1, &isnull));
	if (earliest <= now)		/* due, but its run was locked */
		return TimestampTzPlusMilliseconds(now, LOCKED_RETRY_MS);
	return earliest;
}
