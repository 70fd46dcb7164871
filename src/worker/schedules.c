/*-------------------------------------------------------------------------
 *
 * schedules.c
 *	  Firing schedules: the one place that decides which ticks of which
 *	  schedules (taskq.schedule_registry) insert their task, and advances
 *	  the schedules past them.
 *
 * The background worker calls taskq_fire_schedules in the transaction of
 * its iteration.  It locks the schedules due (next_tick <= now) in order
 * of next_tick, a batch at a time, skipping rows a schedule() holds (they
 * are looked at again LOCKED_RETRY_MS later), and for each one inserts the
 * task of every tick it decides on, through the queue's insert
 * (taskq_insert, if absent), with id "<name>/<tick as ISO 8601 UTC>" and
 * not_before the tick, and sets last_tick and next_tick, all in that one
 * transaction.  So a tick's task is inserted exactly once: a crash of the
 * worker or of the server before the commit loses the insert and the
 * advance together, and the worker does both again; a standby runs no
 * worker, and after a promotion the schedule rows say what the old
 * primary committed, the ids refusing a second insert of a tick whose row
 * did not advance.
 *
 * The ticks due are next_tick and the ticks after it up to now.  The last
 * of them is the current tick, inserted whatever catch_up says (its next
 * tick has not come: it is late, not missed); the earlier ones were missed
 * (the worker did not insert them by the next tick): catch_up 'all' inserts
 * them too (the CATCH_UP_MAX most recent), 'latest' only the most recent,
 * 'none' none.  Only the ticks kept are computed: the search looks back
 * from now over windows that grow fourfold until it found enough ticks or
 * reached next_tick, so a schedule of '1 seconds' a year behind costs a few
 * thousand steps, not thirty million.
 *
 * A schedule whose task cannot be inserted (a row an admin edited by hand
 * into a bad task object) must not stop the worker: its ticks are inserted
 * in a subtransaction, and on an error the worker logs a warning naming the
 * schedule and advances it all the same (those ticks insert nothing).
 *
 * Locks: the schedule rows of a batch (FOR UPDATE SKIP LOCKED), then the
 * queue's insert takes its own (queue/insert.c); nothing is waited for.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "common/cron.h"
#include "common/plan.h"
#include "queue/queue.h"
#include "worker/worker.h"

/* schedules fired per transaction before the worker comes back at once */
#define SCHEDULE_BATCH		100
/* missed ticks 'all' inserts at most (the most recent) */
#define CATCH_UP_MAX		1000
/* a due schedule that a schedule() holds locked is looked at again so soon */
#define LOCKED_RETRY_MS		100
/* the first window the search for the ticks due looks back over */
#define FIRST_WINDOW_USECS	USECS_PER_HOUR

taskq_schedule_task_hook_type taskq_schedule_task_hook = NULL;

static TaskqPlan due_plan = {
	"SELECT s.name, s.cron, s.time_zone, s.task, s.catch_up, s.next_tick"
	"  FROM taskq.schedule_registry AS s"
	" WHERE s.next_tick OPERATOR(pg_catalog.<=) $1"
	" ORDER BY s.next_tick LIMIT 100"
	"   FOR UPDATE SKIP LOCKED",
	1, {TIMESTAMPTZOID}
};

static TaskqPlan advance_plan = {
	"UPDATE taskq.schedule_registry AS s"
	"   SET last_tick = $2, next_tick = $3"
	" WHERE s.name OPERATOR(pg_catalog.=) $1",
	3, {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID}
};

static TaskqPlan earliest_plan = {
	"SELECT s.next_tick FROM taskq.schedule_registry AS s"
	" WHERE s.next_tick IS NOT NULL"
	" ORDER BY s.next_tick LIMIT 1",
	0, {InvalidOid}
};

typedef struct DueSchedule
{
	char	   *name;
	char	   *cron;
	char	   *time_zone;
	Jsonb	   *task;
	char	   *catch_up;
	TimestampTz next_tick;
} DueSchedule;

/*
 * The ticks of one schedule to insert, ascending, into ticks (room for
 * keep): the last keep of next_tick and the ticks after it up to now.
 * Returns how many.
 */
static int
ticks_due(const TaskqCron *cron, pg_tz *tz, TimestampTz next_tick, TimestampTz now,
		  int keep, TimestampTz *ticks)
{
	int64		window = FIRST_WINDOW_USECS;

	for (;;)
	{
		bool		from_next = now - next_tick <= window;
		TimestampTz t;
		int			n = 0;			/* ticks seen */

		if (from_next)
			t = next_tick;
		else if (!taskq_cron_next(cron, tz, now - window - 1, &t))
			t = DT_NOEND;
		while (t <= now)
		{
			ticks[n % keep] = t;
			n++;
			if (!taskq_cron_next(cron, tz, t, &t))
				break;
		}
		if (n >= keep || from_next)
		{
			int			count = Min(n, keep);
			TimestampTz *sorted = palloc(sizeof(TimestampTz) * Max(count, 1));

			/* the ring holds the last count in order from n - count */
			for (int i = 0; i < count; i++)
				sorted[i] = ticks[(n - count + i) % keep];
			memcpy(ticks, sorted, sizeof(TimestampTz) * count);
			pfree(sorted);
			return count;
		}
		window *= 4;
	}
}

/*
 * Insert the tasks of the given ticks of one schedule, in a subtransaction:
 * false, after a warning, if that failed.
 */
static bool
insert_ticks(const DueSchedule *s, const TimestampTz *ticks, int n)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	bool		ok = true;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcontext);
	PG_TRY();
	{
		List	   *specs = NIL;
		bool	   *inserted = palloc(sizeof(bool) * n);

		for (int i = 0; i < n; i++)
		{
			TaskqTaskSpec *spec;

			spec = taskq_schedule_task_hook(s->task, taskq_cron_tick_id(s->name, ticks[i]));
			spec->index = i + 1;
			spec->has_not_before = true;
			spec->not_before = ticks[i];
			specs = lappend(specs, spec);
		}
		(void) taskq_insert(specs, TASKQ_INSERT_IF_ABSENT, NIL, NIL, inserted);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("taskq could not insert the task of schedule \"%s\": %s",
						s->name, edata->message),
				 errdetail("The schedule moves on to its next tick.")));
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/* Fire one due schedule: insert the ticks decided on, advance the row. */
static void
fire_one(const DueSchedule *s, TimestampTz now)
{
	TaskqCron	cron;
	pg_tz	   *tz;
	int			keep;
	TimestampTz *ticks;
	int			n;
	TimestampTz following;
	bool		has_following;
	Datum		args[3];
	char		nulls[3] = {' ', ' ', ' '};

	/* checked by schedule(); a row edited by hand into nonsense stops here */
	taskq_cron_parse(s->cron, &cron);
	tz = taskq_cron_time_zone(s->time_zone);

	keep = strcmp(s->catch_up, "all") == 0 ? CATCH_UP_MAX + 1 :
		strcmp(s->catch_up, "latest") == 0 ? 2 : 1;
	ticks = palloc(sizeof(TimestampTz) * keep);
	n = ticks_due(&cron, tz, s->next_tick, now, keep, ticks);
	Assert(n >= 1);				/* next_tick itself is due */

	(void) insert_ticks(s, ticks, n);

	has_following = taskq_cron_next(&cron, tz, ticks[n - 1], &following);
	args[0] = CStringGetTextDatum(s->name);
	args[1] = TimestampTzGetDatum(ticks[n - 1]);
	args[2] = has_following ? TimestampTzGetDatum(following) : (Datum) 0;
	if (!has_following)
		nulls[2] = 'n';
	taskq_execute(&advance_plan, args, nulls, false, 0);
	pfree(ticks);
}

/*
 * Fire the schedules due at now, in the caller's transaction (SPI
 * connected).  Returns when to look again: the earliest next_tick, now for
 * a full batch, a little later for a due schedule that was locked; 0 if no
 * schedule has a next tick (or the schema has no schedules yet).
 */
TimestampTz
taskq_fire_schedules(TimestampTz now)
{
	Datum		arg = TimestampTzGetDatum(now);
	DueSchedule *due;
	int			n;
	bool		isnull;
	TimestampTz earliest;

	/* the table came with 0.6: until the update, no schedules */
	if (taskq_schedule_task_hook == NULL ||
		!OidIsValid(get_relname_relid("schedule_registry",
									  get_namespace_oid("taskq", false))))
		return 0;

	taskq_execute(&due_plan, &arg, NULL, false, 0);
	n = (int) SPI_processed;
	due = palloc(sizeof(DueSchedule) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		due[i].name = taskq_get_text(i, 1, &isnull);
		due[i].cron = taskq_get_text(i, 2, &isnull);
		due[i].time_zone = taskq_get_text(i, 3, &isnull);
		due[i].task = DatumGetJsonbPCopy(taskq_get_datum(i, 4, &isnull));
		due[i].catch_up = taskq_get_text(i, 5, &isnull);
		due[i].next_tick = DatumGetTimestampTz(taskq_get_datum(i, 6, &isnull));
	}
	for (int i = 0; i < n; i++)
		fire_one(&due[i], now);
	if (n == SCHEDULE_BATCH)
		return now;				/* more may be due */

	taskq_execute(&earliest_plan, NULL, NULL, false, 0);
	if (SPI_processed == 0)
		return 0;
	earliest = DatumGetTimestampTz(taskq_get_datum(0, 1, &isnull));
	if (earliest <= now)		/* due, but locked by a schedule() */
		return TimestampTzPlusMilliseconds(now, LOCKED_RETRY_MS);
	return earliest;
}
