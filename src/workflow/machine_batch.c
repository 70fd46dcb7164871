/*-------------------------------------------------------------------------
 *
 * machine_batch.c
 *	  Fan-in batches of state machines as stored: the open batch of each
 *	  fan-in state (taskq.fan_in_open) and the instances of each batch in
 *	  arrival order (taskq.fan_in_members).  machine.c decides when an
 *	  instance joins, when a batch closes and how it ends; this file keeps
 *	  the rows.
 *
 * Locking: an arrival locks the open-batch row of its state (arrivals into
 * one state take turns there) and reads the batch task's status (the
 * queue's view, queue/task_view.c) without locking the task's row, so a
 * claim is never kept waiting by arrivals.  Closing a batch deletes that row, which waits for arrivals in flight;
 * the caller holds the run's lock (workflow/run.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "common/plan.h"
#include "ipc/wakeup.h"
#include "queue/queue.h"
#include "workflow/machine_batch.h"

static TaskqPlan open_batch_plan = {
	"SELECT batch FROM taskq.fan_in_open"
	" WHERE machine OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2"
	"   AND state OPERATOR(pg_catalog.=) $3 FOR UPDATE",
	3, {TEXTOID, INT4OID, TEXTOID}
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
	" RETURNING id",
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
 * The open batch of (machine, version, state), its row locked, if its task
 * was never claimed; else NULL (the caller opens a new one).
 */
char *
taskq_batch_open(const char *machine, int32 version, const char *state)
{
	Datum		args[3];
	char	   *candidate;
	TaskqTaskView task;

	args[0] = CStringGetTextDatum(machine);
	args[1] = Int32GetDatum(version);
	args[2] = CStringGetTextDatum(state);
	taskq_execute(&open_batch_plan, args, NULL, false, 0);
	if (SPI_processed != 1)
		return NULL;
	candidate = taskq_get_text(0, 1, NULL);
	if (taskq_task_peek(candidate, 0, &task) &&
		task.code == TASKQ_PENDING && task.num_tries == 0)
		return candidate;
	return NULL;
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
 * wake their waiters at commit.
 */
void
taskq_batch_end_members(List *runs, const char *status, const char *error)
{
	Datum		args[3];
	char		nulls[3] = {' ', ' ', ' '};

	if (runs == NIL)
		return;
	args[0] = taskq_text_array_datum(runs);
	args[1] = CStringGetTextDatum(status);
	if (error)
		args[2] = CStringGetTextDatum(error);
	else
		nulls[2] = 'n';
	taskq_execute(&end_members_plan, args, nulls, false, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
		taskq_note_finished(taskq_get_text(i, 1, NULL));
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
