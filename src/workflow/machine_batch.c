/*-------------------------------------------------------------------------
 *
 * machine_batch.c
 *	  Fan-in batches of state machines as stored: the open batch of each
 *	  fan-in state (taskq.fan_in_open) and the instances of each batch in
 *	  arrival order (taskq.fan_in_members).  machine.c decides when an
 *	  instance joins, when a batch closes and how it ends; this file keeps
 *	  the rows.
 *
 * Locking: an arrival reads the open-batch row of its state and the batch
 * task's status (the queue's view, queue/task_view.c) without locking
 * either; if the batch is open it share-locks that row, as long as it
 * still names the batch, and joins.  Arrivals into one state so hold
 * share locks side by side and wait for each other nowhere: before, each
 * locked the row for update and the arrivals took turns there, one
 * commit at a time (about 200 arrivals/s against 500-900 machine
 * steps/s).  What must wait for the arrivals in flight takes a lock that
 * conflicts with theirs: closing a batch deletes its row, and opening a
 * new batch (its task claimed, or no row yet) writes the row; so a batch
 * named by the row no longer, for whichever reason, has all its
 * instances committed.  No transaction writes the row while it holds a
 * share lock of it, so none waits for a lock it would make another wait
 * for: an arrival that opens a batch saw it closed before it locked
 * anything (it then locks the row for update: a second opener waits for
 * the first and joins its batch; without a row, the openers take turns on
 * a lock of the state instead), and a transaction that joined a batch already (a
 * return of several steps) joins it again, claimed or not -- its share
 * lock keeps the batch's closer waiting, so the closer reads it too.  A
 * claim is never kept waiting by arrivals.  The caller holds the run's
 * lock (workflow/run.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "common/plan.h"
#include "ipc/wakeup.h"
#include "queue/queue.h"
#include "workflow/machine_batch.h"
#include "workflow/run.h"

static TaskqPlan open_batch_plan = {
	"SELECT batch FROM taskq.fan_in_open"
	" WHERE machine OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2"
	"   AND state OPERATOR(pg_catalog.=) $3",
	3, {TEXTOID, INT4OID, TEXTOID}
};

static TaskqPlan lock_open_plan = {
	"SELECT batch FROM taskq.fan_in_open"
	" WHERE machine OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2"
	"   AND state OPERATOR(pg_catalog.=) $3 FOR UPDATE",
	3, {TEXTOID, INT4OID, TEXTOID}
};

static TaskqPlan share_batch_plan = {
	"SELECT 1 FROM taskq.fan_in_open"
	" WHERE machine OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2"
	"   AND state OPERATOR(pg_catalog.=) $3 AND batch OPERATOR(pg_catalog.=) $4 FOR SHARE",
	4, {TEXTOID, INT4OID, TEXTOID, TEXTOID}
};

static TaskqPlan set_open_batch_plan = {
	"INSERT INTO taskq.fan_in_open (machine, version, state, batch) VALUES ($1, $2, $3, $4)"
	" ON CONFLICT (machine, version, state) DO UPDATE SET batch = excluded.batch",
	4, {TEXTOID, INT4OID, TEXTOID, TEXTOID}
};

static TaskqPlan join_batch_plan = {
	"INSERT INTO taskq.fan_in_members (batch, run) VALUES ($1, $2)",
	2, {TEXTOID, TEXTOID}
};

static TaskqPlan members_plan = {
	"SELECT m.run FROM taskq.fan_in_members AS m"
	" WHERE m.batch OPERATOR(pg_catalog.=) $1 ORDER BY m.arrival",
	1, {TEXTOID}
};

static TaskqPlan end_members_plan = {
	"UPDATE taskq.runs SET status = $2, error = $3, step_task = NULL,"
	"       finished_at = pg_catalog.now()"
	" WHERE id OPERATOR(pg_catalog.=) ANY ($1)"
	"   AND status OPERATOR(pg_catalog.=) 'running'"
	" RETURNING id, parent, context",
	3, {TEXTARRAYOID, TEXTOID, TEXTOID}
};

static TaskqPlan close_batch_plan = {
	"DELETE FROM taskq.fan_in_open WHERE batch OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static TaskqPlan forget_batch_plan = {
	"WITH o AS (DELETE FROM taskq.fan_in_open WHERE batch OPERATOR(pg_catalog.=) $1)"
	" DELETE FROM taskq.fan_in_members WHERE batch OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static TaskqPlan leave_batch_plan = {
	"DELETE FROM taskq.fan_in_members WHERE run OPERATOR(pg_catalog.=) $1"
	" RETURNING batch, NOT EXISTS (SELECT 1 FROM taskq.fan_in_members AS o"
	"   WHERE o.batch OPERATOR(pg_catalog.=) fan_in_members.batch"
	"     AND o.run OPERATOR(pg_catalog.<>) $1)",
	1, {TEXTOID}
};

static TaskqPlan contexts_plan = {
	"SELECT m.run, r.context FROM taskq.fan_in_members AS m"
	"  JOIN taskq.runs AS r ON r.id OPERATOR(pg_catalog.=) m.run"
	" WHERE m.batch OPERATOR(pg_catalog.=) $1 ORDER BY m.arrival",
	1, {TEXTOID}
};

/*
 * The batches this transaction share-locked the open-batch row of (in
 * TopTransactionContext, forgotten with it).
 */
static List *locked_batches = NIL;

static void
forget_locked_batches(void *arg)
{
	locked_batches = NIL;
}

static void
note_locked_batch(const char *batch)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

	if (locked_batches == NIL)
	{
		MemoryContextCallback *cb = palloc(sizeof(MemoryContextCallback));

		cb->func = forget_locked_batches;
		cb->arg = NULL;
		MemoryContextRegisterResetCallback(TopTransactionContext, cb);
	}
	locked_batches = lappend(locked_batches, pstrdup(batch));
	MemoryContextSwitchTo(old);
}

static bool
locked_already(const char *batch)
{
	ListCell   *lc;

	foreach(lc, locked_batches)
		if (strcmp((char *) lfirst(lc), batch) == 0)
			return true;
	return false;
}

/* The batch's task was never claimed (pending, no try used). */
static bool
batch_task_open(const char *batch)
{
	TaskqTaskView task;

	return taskq_task_peek(batch, 0, &task) && task.code == TASKQ_PENDING &&
		task.num_tries == 0;
}

/*
 * No open-batch row: the arrivals that find none take turns on a lock of
 * the state (a workflow lock, to the end of the transaction), so that the
 * first opens the batch and the others, reading again, join it.
 */
static bool
first_arrival(const char *machine, int32 version, const char *state)
{
	taskq_lock_workflow(psprintf("taskq fan-in %s %d %s", machine, version, state), true);
	return true;
}

/*
 * The open batch of (machine, version, state), its row locked, if its task
 * was never claimed; else NULL (the caller opens a new one).  The row and
 * the task are read without locks; an open batch's row is share-locked
 * only if it still names that batch: else (closed or replaced meanwhile)
 * it is read again.  A batch read open whose task is claimed before the
 * lock is joined still: its closer, which deletes the row, waits for the
 * lock.  So is a batch whose row this transaction share-locked before (see
 * the banner); taking the lock again then waits for nothing (a
 * subtransaction that took it and rolled back took it along: then it is
 * taken anew).  A closed batch's row is locked for update, which waits for
 * the arrivals in flight and for other openers: if one of those opened a
 * batch meanwhile, it is joined (with that lock), so the arrivals that
 * find a batch claimed at the same moment do not each open one.  Without a
 * row (no batch yet, or the last one closed), see first_arrival.
 */
char *
taskq_batch_open(const char *machine, int32 version, const char *state)
{
	Datum		args[4];
	char	   *candidate;
	char	   *now;
	bool		first = false;

	args[0] = CStringGetTextDatum(machine);
	args[1] = Int32GetDatum(version);
	args[2] = CStringGetTextDatum(state);
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		taskq_execute_latest(&open_batch_plan, args, NULL, false);
		if (SPI_processed != 1)
		{
			if (first)
				return NULL;
			first = first_arrival(machine, version, state);
			continue;
		}
		candidate = taskq_get_text(0, 1, NULL);
		if (locked_already(candidate) || batch_task_open(candidate))
		{
			args[3] = CStringGetTextDatum(candidate);
			taskq_execute_latest(&share_batch_plan, args, NULL, false);
			if (SPI_processed != 1)
				continue;
			if (!locked_already(candidate))
				note_locked_batch(candidate);
			return candidate;
		}
		taskq_execute_latest(&lock_open_plan, args, NULL, false);
		if (SPI_processed != 1)
		{
			if (first)
				return NULL;
			first = first_arrival(machine, version, state);
			continue;
		}
		now = taskq_get_text(0, 1, NULL);
		if (strcmp(now, candidate) != 0 && batch_task_open(now))
			return now;
		return NULL;
	}
}

/* batch is the open batch of (machine, version, state) from now on. */
void
taskq_batch_set_open(const char *machine, int32 version, const char *state,
					 const char *batch)
{
	Datum		args[4];

	args[0] = CStringGetTextDatum(machine);
	args[1] = Int32GetDatum(version);
	args[2] = CStringGetTextDatum(state);
	args[3] = CStringGetTextDatum(batch);
	taskq_execute(&set_open_batch_plan, args, NULL, false, 0);
}

/* Run joins batch, after those already in it. */
void
taskq_batch_join(const char *batch, const char *run)
{
	Datum		args[2];

	args[0] = CStringGetTextDatum(batch);
	args[1] = CStringGetTextDatum(run);
	taskq_execute(&join_batch_plan, args, NULL, false, 0);
}

/* The runs in batch, in arrival order. */
List *
taskq_batch_members(const char *batch)
{
	Datum		a = CStringGetTextDatum(batch);
	List	   *runs = NIL;

	taskq_execute(&members_plan, &a, NULL, false, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
		runs = lappend(runs, taskq_get_text(i, 1, NULL));
	return runs;
}

/* The batch takes no more arrivals (its task was handed out once). */
void
taskq_batch_close(const char *batch)
{
	Datum		a = CStringGetTextDatum(batch);

	taskq_execute(&close_batch_plan, &a, NULL, false, 0);
}

/* The batch is over: its rows go. */
void
taskq_batch_forget(const char *batch)
{
	Datum		a = CStringGetTextDatum(batch);

	taskq_execute(&forget_batch_plan, &a, NULL, false, 0);
}

/*
 * End the runs of a batch (but the one going on) as merged or failed, and
 * wake their waiters at commit.  A child run among them ends as every run
 * does (taskq_run_ended: its parent moves, its children are cancelled if
 * it failed): its lock, with its ancestors' first, is taken before its row
 * is written, and before the caller forgets the batch's rows, so that a
 * parent's cancel, which holds those locks and then leaves the batch, is
 * waited for rather than waiting for this transaction.  Runs that are not
 * children pay nothing more than the statement.
 */
void
taskq_batch_end_members(List *runs, const char *status, const char *error)
{
	Datum		args[3];
	char		nulls[3] = {' ', ' ', ' '};
	List	   *ended = NIL;
	ListCell   *lc;

	if (runs == NIL)
		return;
	foreach(lc, runs)
		if (taskq_run_is_child_id(lfirst(lc)))
			taskq_run_lock(lfirst(lc));
	args[0] = taskq_text_array_datum(runs);
	args[1] = CStringGetTextDatum(status);
	if (error)
		args[2] = CStringGetTextDatum(error);
	else
		nulls[2] = 'n';
	taskq_execute(&end_members_plan, args, nulls, false, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *id = taskq_get_text(i, 1, NULL);
		char	   *parent = taskq_get_text(i, 2, NULL);
		TaskqRun   *run;
		bool		isnull;
		Datum		context;

		taskq_note_finished(id);
		if (parent == NULL || !taskq_run_is_child_id(id))
			continue;
		context = taskq_get_datum(i, 3, &isnull);
		run = palloc0(sizeof(TaskqRun));
		run->id = id;
		run->kind = "machine";
		run->parent = parent;
		run->status = taskq_run_status_from_label(status);
		run->context = isnull ? NULL : DatumGetJsonbPCopy(context);
		run->error = error ? pstrdup(error) : NULL;
		ended = lappend(ended, run);
	}
	/* after the statement's rows are read: the end runs statements of its own */
	foreach(lc, ended)
		taskq_run_ended(lfirst(lc));
}

/*
 * Take run out of its batch: the batch, or NULL if it was in none; *last
 * says whether nobody else is left in it.
 */
char *
taskq_batch_leave(const char *run, bool *last)
{
	Datum		a = CStringGetTextDatum(run);

	taskq_execute(&leave_batch_plan, &a, NULL, false, 0);
	if (SPI_processed == 0)
		return NULL;
	*last = taskq_get_bool(0, 2, NULL);
	return taskq_get_text(0, 1, NULL);
}

/* The instances of batch with their contexts, in arrival order, into out. */
void
taskq_batch_contexts(const char *batch, Tuplestorestate *out, TupleDesc desc)
{
	Datum		a = CStringGetTextDatum(batch);

	taskq_execute(&contexts_plan, &a, NULL, false, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		values[2];
		bool		nulls[2];

		values[0] = taskq_get_datum(i, 1, &nulls[0]);
		values[1] = taskq_get_datum(i, 2, &nulls[1]);
		tuplestore_putvalues(out, desc, values, nulls);
	}
}
