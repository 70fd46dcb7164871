/*-------------------------------------------------------------------------
 *
 * signal.c
 *	  Signals: every change of a successor's count of unfinished predecessors
 *	  (num_signals), and the deferred signals the background worker folds.
 *
 * Signals are counted on the successor row: num_signals is decremented once
 * for every predecessor that finishes, completed or aborted, so it always
 * equals the number of unfinished predecessors.  A successor whose count
 * reaches zero while pending becomes ready (it enters the ready index); if
 * it is spontaneous the queue completes it on the spot.
 *
 * The completion itself, the hottest update here, is in complete.c (with the
 * UPDATE below as its fallback).
 *
 * Locking: the returned task's row is locked first; successors are then
 * locked one at a time, in id order (within a task's successor list, or
 * across a whole return_tasks batch, which also folds the signals one join
 * gets from many members into one update), so that two completions
 * signalling the same joins take their locks in the same order.  The walk
 * is iterative (a work list), so a long chain of spontaneous tasks cannot
 * exhaust the stack.
 *
 * A join row is the only row concurrent completions of its predecessors
 * contend on, and each would hold it until its commit's WAL flush: a wide
 * group would complete one member per flush.  So, while the database's
 * background worker runs, a completion that finds its successor's row
 * locked does not wait: it records the signal in taskq.deferred_signals,
 * and the worker adds it to the count within milliseconds
 * (taskq_fold_deferred_signals).  Signals to a wide join (more than
 * WIDE_JOIN predecessors) always take that way: the worker adds them a
 * thousand at a time.  num_signals then counts the predecessors whose
 * signal has not been added yet: exact again once the deferred ones are
 * folded, and never below the number of unfinished predecessors, so a task
 * is never ready early.
 *
 * Trigger rules are decided here too, where the counts change: every
 * signal also counts the predecessor's outcome (num_completed, num_failed),
 * and the successor's rule ("trigger") reads the new counts in the same
 * statement.  all_success: an abort aborts it (the cascade), the last
 * signal makes it ready.  all_done: the last signal, whatever the
 * outcomes.  one_failed and one_success: the first abort, or the first
 * completion, makes it ready at once (num_signals set to 0, and left at 0
 * by every later signal: it is released once); the last signal without
 * such an outcome ends it aborted with status "skipped", which cascades
 * like any abort.  So a deferred signal folded by the worker, an abort of
 * the cascade and a new edge all decide alike.  A task without
 * predecessors is ready whatever its rule.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "common/local_table.h"
#include "common/pg_compat.h"
#include "common/plan.h"
#include "common/settings.h"
#include "ipc/metrics.h"
#include "ipc/wakeup.h"
#include "common/args.h"
#include "queue/queue_internal.h"

static const char *const trigger_labels[TASKQ_TRIGGER_COUNT] = {
	[TASKQ_ALL_SUCCESS] = "all_success",
	[TASKQ_ALL_DONE] = "all_done",
	[TASKQ_ONE_FAILED] = "one_failed",
	[TASKQ_ONE_SUCCESS] = "one_success",
};

const char *
taskq_trigger_label(TaskqTrigger rule)
{
	Assert(rule >= 0 && rule < TASKQ_TRIGGER_COUNT);
	return trigger_labels[rule];
}

/* The rule of a label of taskq.trigger_rule; false if there is none. */
bool
taskq_trigger_from_label(const char *label, TaskqTrigger *rule)
{
	for (int r = 0; r < TASKQ_TRIGGER_COUNT; r++)
		if (strcmp(trigger_labels[r], label) == 0)
		{
			*rule = (TaskqTrigger) r;
			return true;
		}
	return false;
}

/*
 * The new num_signals of a task t that k more predecessors completed: 0 for
 * a task its rule released (one_success now or before, one_failed before),
 * else k less.  And the new counts, returned with the row.
 */
#define COMPLETED_SET(k) \
	"num_completed = t.num_completed OPERATOR(pg_catalog.+) " k "," \
	" num_signals = CASE WHEN t.\"trigger\" OPERATOR(pg_catalog.=) 'one_success'::taskq.trigger_rule" \
	"                      OR (t.\"trigger\" OPERATOR(pg_catalog.=) 'one_failed'::taskq.trigger_rule" \
	"                          AND t.num_failed OPERATOR(pg_catalog.>) 0)" \
	"                    THEN 0 ELSE t.num_signals OPERATOR(pg_catalog.-) " k " END"
#define COMPLETED_RETURNING \
	"t.num_signals, t.status_code::text, t.spontaneous, t.action," \
	" t.\"trigger\"::text, t.num_completed, t.num_failed"

/* $2 predecessors completed: $2 signals less. */
static TaskqPlan signal_plan = {
	"UPDATE taskq.tasks AS t"
	"   SET " COMPLETED_SET("$2")
	" WHERE t.id OPERATOR(pg_catalog.=) $1"
	" RETURNING " COMPLETED_RETURNING,
	2, {TEXTOID, INT4OID}
};

/*
 * The same, unless another transaction holds the row or the task waits for
 * more than WIDE_JOIN predecessors: then the signals are deferred, added to
 * this backend's counter for the task in taskq.deferred_signals (if the
 * task still exists), and the last column says so.  A wide join's signals
 * always go to the worker, which adds up to a thousand counters in one
 * update each: its row is not rewritten once per member.  No row back: the
 * task is gone.
 */
#define WIDE_JOIN 64
static TaskqPlan signal_or_defer_plan = {
	"WITH s AS ("
	"  UPDATE taskq.tasks AS t"
	"     SET " COMPLETED_SET("$2")
	"   WHERE t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
	"     SELECT l.ctid FROM taskq.tasks AS l WHERE l.id OPERATOR(pg_catalog.=) $1"
	"        AND l.total_dependencies OPERATOR(pg_catalog.<=) 64"
	"        FOR UPDATE SKIP LOCKED))"
	"  RETURNING t.num_signals, t.status_code::text AS code, t.spontaneous, t.action,"
	"            t.\"trigger\"::text AS rule, t.num_completed, t.num_failed),"
	" w AS ("
	"  SELECT e.total_dependencies OPERATOR(pg_catalog.>) 64 AS wide"
	"    FROM taskq.tasks AS e WHERE e.id OPERATOR(pg_catalog.=) $1),"
	" d AS ("
	"  INSERT INTO taskq.deferred_signals AS ds (task_id, stripe, signals)"
	"  SELECT $1, $3, $2 FROM w WHERE NOT EXISTS (SELECT FROM s)"
	"  ON CONFLICT ON CONSTRAINT deferred_signals_pkey"
	"  DO UPDATE SET signals = ds.signals OPERATOR(pg_catalog.+) excluded.signals"
	"  RETURNING 1)"
	" SELECT s.num_signals, s.code, s.spontaneous, s.action, s.rule, s.num_completed,"
	"        s.num_failed, false, false FROM s"
	" UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, true, (SELECT w.wide FROM w)"
	"   FROM d",
	3, {TEXTOID, INT4OID, INT4OID}
};

/*
 * A join known to be wide: add to this backend's counter straight away
 * (the common case: an update, HOT, written directly by signal_counter.c;
 * this statement where that path does not apply), else create it.
 * Whether the task still exists is the worker's to find out.
 */
static TaskqPlan add_to_counter_plan = {
	"UPDATE taskq.deferred_signals"
	"   SET signals = signals OPERATOR(pg_catalog.+) $2"
	" WHERE task_id OPERATOR(pg_catalog.=) $1 AND stripe OPERATOR(pg_catalog.=) $3",
	3, {TEXTOID, INT4OID, INT4OID}
};

static TaskqPlan new_counter_plan = {
	"INSERT INTO taskq.deferred_signals AS ds (task_id, stripe, signals)"
	" VALUES ($1, $3, $2)"
	" ON CONFLICT ON CONSTRAINT deferred_signals_pkey"
	" DO UPDATE SET signals = ds.signals OPERATOR(pg_catalog.+) excluded.signals",
	3, {TEXTOID, INT4OID, INT4OID}
};

/*
 * The ids of wide joins this backend met.  A task's total_dependencies
 * never shrinks, and deferring the signals of a task that is not wide
 * (an id used again) is still right, only slower: the cache needs no
 * invalidation.  It is emptied when it grows past WIDE_CACHE_SIZE.
 */
#define WIDE_CACHE_SIZE 1024
static HTAB *wide_joins = NULL;

static bool
known_wide(const char *id)
{
	return taskq_local_find(wide_joins, TASKQ_MAX_ID_LEN + 1, id) != NULL;
}

static void
remember_wide(const char *id)
{
	bool		found;

	(void) taskq_local_enter(&wide_joins, "taskq wide joins", TASKQ_MAX_ID_LEN + 1,
							 TASKQ_MAX_ID_LEN + 1, WIDE_CACHE_SIZE, id, &found);
}

/*
 * The worker: take the counters that have signals (a counter a completion
 * is adding to right now is left for the next time), leaving them at 0.
 */
static TaskqPlan take_deferred_plan = {
	"UPDATE taskq.deferred_signals AS d SET signals = 0"
	"  FROM (SELECT c.ctid, c.signals FROM taskq.deferred_signals AS c"
	"         WHERE c.signals OPERATOR(pg_catalog.>) 0"
	"         LIMIT 1000 FOR UPDATE SKIP LOCKED) AS o"
	" WHERE d.ctid OPERATOR(pg_catalog.=) o.ctid"
	" RETURNING d.task_id, o.signals",
	0, {0}
};

/* The worker, now and then: drop the counters at 0 nobody is adding to. */
static TaskqPlan drop_empty_deferred_plan = {
	"DELETE FROM taskq.deferred_signals AS d"
	" WHERE d.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
	"   SELECT c.ctid FROM taskq.deferred_signals AS c"
	"    WHERE c.signals OPERATOR(pg_catalog.=) 0 FOR UPDATE SKIP LOCKED))",
	0, {0}
};

/*
 * The worker: add them.  A count lower than the signals would be a bug
 * (or a task deleted and inserted again under the same id before its
 * deferred signals were added): the update is skipped and a warning
 * logged, rather than the worker failing on the check constraint forever.
 */
static TaskqPlan fold_signal_plan = {
	"UPDATE taskq.tasks AS t"
	"   SET " COMPLETED_SET("$2")
	" WHERE t.id OPERATOR(pg_catalog.=) $1"
	"   AND CASE WHEN t.\"trigger\" OPERATOR(pg_catalog.>=) 'one_failed'::taskq.trigger_rule"
	"            THEN t.total_dependencies OPERATOR(pg_catalog.-) t.num_completed"
	"                 OPERATOR(pg_catalog.-) t.num_failed"
	"            ELSE t.num_signals END OPERATOR(pg_catalog.>=) $2"
	" RETURNING " COMPLETED_RETURNING,
	2, {TEXTOID, INT4OID}
};

static TaskqPlan task_exists_plan = {
	"SELECT 1 FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

StaticAssertDecl(WIDE_JOIN == 64, "WIDE_JOIN is spelt out in signal_or_defer_plan");

StaticAssertDecl(TASKQ_FOLD_BATCH == 1000, "TASKQ_FOLD_BATCH is spelt out in take_deferred_plan");

/* True while the worker folds: it waits for locked rows, never defers. */
static bool folding = false;


/*
 * Has this database's taskq the table (0.2 on)?  A database not yet
 * updated from 0.1 keeps waiting for locked joins, as 0.1 did.
 */
static bool
deferral_installed(void)
{
	Oid			nsp = get_namespace_oid("taskq", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("deferred_signals", nsp));
}

/*
 * A predecessor aborted: one signal less, one more abort counted, and the
 * successor's fate decided from its counts before the update (the locking
 * subquery reads them): an all_success successor not yet finished is
 * aborted (the cascade, status $2); a pending one_success successor that no
 * predecessor completed and for which this was the last signal is skipped
 * (aborted, status "skipped").  Otherwise its num_signals drops by one, or
 * to 0 for a one_failed task (released now, or before) and a one_success
 * task released before.  Returned: the fate, the successors, the status
 * and num_signals before and after, spontaneous, action.
 */
static TaskqPlan signal_abort_plan = {
	"UPDATE taskq.tasks AS t"
	"   SET num_failed = t.num_failed OPERATOR(pg_catalog.+) 1,"
	"       num_signals = CASE WHEN t.\"trigger\" OPERATOR(pg_catalog.=) 'one_failed'::taskq.trigger_rule"
	"                            OR (t.\"trigger\" OPERATOR(pg_catalog.=) 'one_success'::taskq.trigger_rule"
	"                                AND t.num_completed OPERATOR(pg_catalog.>) 0)"
	"                          THEN 0 ELSE t.num_signals OPERATOR(pg_catalog.-) 1 END,"
	"       status_code = CASE WHEN o.fate IS NOT NULL THEN 'aborted'::taskq.status ELSE t.status_code END,"
	"       status = CASE WHEN o.fate OPERATOR(pg_catalog.=) 's' THEN 'skipped'"
	"                     WHEN o.fate OPERATOR(pg_catalog.=) 'a' THEN $2 ELSE t.status END,"
	"       finished_at = CASE WHEN o.fate IS NOT NULL THEN pg_catalog.now() ELSE t.finished_at END,"
	"       action_deadline = CASE WHEN o.fate IS NOT NULL THEN NULL ELSE t.action_deadline END"
	"  FROM (SELECT p.id, p.status_code AS code, p.num_signals AS old_signals,"
	"               CASE WHEN p.status_code OPERATOR(pg_catalog.>=) 'completed'::taskq.status THEN NULL"
	"                    WHEN p.\"trigger\" OPERATOR(pg_catalog.=) 'all_success'::taskq.trigger_rule THEN 'a'"
	"                    WHEN p.\"trigger\" OPERATOR(pg_catalog.=) 'one_success'::taskq.trigger_rule"
	"                     AND p.status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status"
	"                     AND p.num_completed OPERATOR(pg_catalog.=) 0"
	"                     AND p.num_signals OPERATOR(pg_catalog.<=) 1 THEN 's'"
	"                    ELSE NULL END AS fate"
	"          FROM taskq.tasks AS p WHERE p.id OPERATOR(pg_catalog.=) $1 FOR UPDATE) AS o"
	" WHERE t.id OPERATOR(pg_catalog.=) o.id"
	" RETURNING o.fate, t.to_signal_after, o.code::text, o.old_signals, t.num_signals,"
	"           t.spontaneous, t.action",
	2, {TEXTOID, TEXTOID}
};

/*
 * The work a signal leaves: a spontaneous task to complete (pred NULL), or
 * an aborted (or skipped) task's abort to signal to a successor.  One work
 * list, worked through iteratively, so that long chains of spontaneous,
 * skipped or cascaded tasks cannot exhaust the stack.
 */
typedef struct SignalWork
{
	char	   *pred;			/* the aborted predecessor, or NULL */
	char	   *succ;
} SignalWork;

static void
add_work(List **work, const char *pred, const char *succ)
{
	SignalWork *w = palloc(sizeof(SignalWork));

	w->pred = pred ? pstrdup(pred) : NULL;
	w->succ = pstrdup(succ);
	*work = lappend(*work, w);
}

/* Task id ended aborted here: its successors each get an abort signal. */
static void
add_abort_work(List **work, const char *id, List *succs)
{
	ListCell   *lc;

	foreach(lc, succs)
		add_work(work, id, lfirst(lc));
}

/*
 * A pending task whose rule can no longer be met: aborted with status
 * "skipped" (its row is locked: the signal just updated it), its
 * successors told.
 */
static void
skip_task(const char *id, List **work)
{
	add_abort_work(work, id, taskq_finish_row(id, TASKQ_ABORTED, "skipped"));
}

/* ----------
 * Legacy statements, for a database whose extension is not updated to 0.5
 * yet (no rules, no counters): every task is all_success, and the rows
 * they return have the same columns, so the decisions below are the same.
 * plan_for picks them (queue.h: taskq_schema_at_least_0_5).  They go when
 * updates from 0.4 are no longer supported.
 * ----------
 */
#define LEGACY_COMPLETED_RETURNING \
	"num_signals, status_code::text, spontaneous, action, 'all_success'::text, 0, 0"

static TaskqPlan legacy_signal_plan = {
	"UPDATE taskq.tasks"
	"   SET num_signals = num_signals OPERATOR(pg_catalog.-) $2"
	" WHERE id OPERATOR(pg_catalog.=) $1"
	" RETURNING " LEGACY_COMPLETED_RETURNING,
	2, {TEXTOID, INT4OID}
};

static TaskqPlan legacy_signal_or_defer_plan = {
	"WITH s AS ("
	"  UPDATE taskq.tasks AS t"
	"     SET num_signals = t.num_signals OPERATOR(pg_catalog.-) $2"
	"   WHERE t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
	"     SELECT l.ctid FROM taskq.tasks AS l WHERE l.id OPERATOR(pg_catalog.=) $1"
	"        AND l.total_dependencies OPERATOR(pg_catalog.<=) 64"
	"        FOR UPDATE SKIP LOCKED))"
	"  RETURNING t.num_signals, t.status_code::text AS code, t.spontaneous, t.action),"
	" w AS ("
	"  SELECT e.total_dependencies OPERATOR(pg_catalog.>) 64 AS wide"
	"    FROM taskq.tasks AS e WHERE e.id OPERATOR(pg_catalog.=) $1),"
	" d AS ("
	"  INSERT INTO taskq.deferred_signals AS ds (task_id, stripe, signals)"
	"  SELECT $1, $3, $2 FROM w WHERE NOT EXISTS (SELECT FROM s)"
	"  ON CONFLICT ON CONSTRAINT deferred_signals_pkey"
	"  DO UPDATE SET signals = ds.signals OPERATOR(pg_catalog.+) excluded.signals"
	"  RETURNING 1)"
	" SELECT s.num_signals, s.code, s.spontaneous, s.action, 'all_success'::text, 0, 0,"
	"        false, false FROM s"
	" UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, true, (SELECT w.wide FROM w)"
	"   FROM d",
	3, {TEXTOID, INT4OID, INT4OID}
};

static TaskqPlan legacy_fold_signal_plan = {
	"UPDATE taskq.tasks"
	"   SET num_signals = num_signals OPERATOR(pg_catalog.-) $2"
	" WHERE id OPERATOR(pg_catalog.=) $1 AND num_signals OPERATOR(pg_catalog.>=) $2"
	" RETURNING " LEGACY_COMPLETED_RETURNING,
	2, {TEXTOID, INT4OID}
};

static TaskqPlan legacy_signal_abort_plan = {
	"UPDATE taskq.tasks AS t"
	"   SET num_signals = t.num_signals OPERATOR(pg_catalog.-) 1,"
	"       status_code = CASE WHEN o.fate IS NOT NULL THEN 'aborted'::taskq.status ELSE t.status_code END,"
	"       status = CASE WHEN o.fate IS NOT NULL THEN $2 ELSE t.status END,"
	"       finished_at = CASE WHEN o.fate IS NOT NULL THEN pg_catalog.now() ELSE t.finished_at END,"
	"       action_deadline = CASE WHEN o.fate IS NOT NULL THEN NULL ELSE t.action_deadline END"
	"  FROM (SELECT p.id, p.status_code AS code, p.num_signals AS old_signals,"
	"               CASE WHEN p.status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status"
	"                    THEN 'a' END AS fate"
	"          FROM taskq.tasks AS p WHERE p.id OPERATOR(pg_catalog.=) $1 FOR UPDATE) AS o"
	" WHERE t.id OPERATOR(pg_catalog.=) o.id"
	" RETURNING o.fate, t.to_signal_after, o.code::text, o.old_signals, t.num_signals,"
	"           t.spontaneous, t.action",
	2, {TEXTOID, TEXTOID}
};

static TaskqPlan legacy_wait_again_plan = {
	"UPDATE taskq.tasks SET num_signals = num_signals OPERATOR(pg_catalog.+) 1"
	" WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

#define LEGACY_ADD_EDGES_SET \
	"   SET num_signals = t.num_signals OPERATOR(pg_catalog.+) $2," \
	"       total_dependencies = t.total_dependencies OPERATOR(pg_catalog.+) $2"

static TaskqPlan legacy_add_edges_plan = {
	"UPDATE taskq.tasks AS t" LEGACY_ADD_EDGES_SET
	" WHERE t.id OPERATOR(pg_catalog.=) $1",
	2, {TEXTOID, INT4OID}
};

static TaskqPlan legacy_add_edges_unstarted_plan = {
	"UPDATE taskq.tasks AS t" LEGACY_ADD_EDGES_SET
	" WHERE t.id OPERATOR(pg_catalog.=) $1"
	"   AND t.status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status"
	"   AND t.performance_token IS NULL",
	2, {TEXTOID, INT4OID}
};

/*
 * This backend's counter row of a join in taskq.deferred_signals: its
 * stripe, the backend's number (pg_compat.h) counted from 1, as the
 * stripes always were.  Any number distinct among the running backends
 * does: concurrent completions never share a row, the worker adds up a
 * join's rows whatever their stripes, and a later backend of the same
 * number adds to the row (ON CONFLICT) as the earlier one did.
 */
#define MY_STRIPE	(TASKQ_PROC_NUMBER + 1)

/* The statement for this database's schema: with rules, or the legacy one. */
static inline TaskqPlan *
plan_for(TaskqPlan *rules, TaskqPlan *legacy)
{
	return taskq_schema_at_least_0_5() ? rules : legacy;
}

/*
 * Signal one successor k times (see signal_completed); while folding,
 * waiting for its row; otherwise, if may_defer, deferring when the row is
 * locked or the task is a wide join.
 */
static void
signal_task(const char *succ, int32 k, bool may_defer, List **work)
{
	Datum		args[3];
	char	   *code;
	TaskqTrigger rule;

	args[0] = CStringGetTextDatum(succ);
	args[1] = Int32GetDatum(k);
	args[2] = Int32GetDatum(MY_STRIPE);	/* this backend's counter */
	if (folding)
	{
		taskq_execute(plan_for(&fold_signal_plan, &legacy_fold_signal_plan), args, NULL, false, 0);
		if (SPI_processed == 0)
		{
			taskq_execute(&task_exists_plan, args, NULL, false, 0);
			if (SPI_processed > 0)
				ereport(WARNING,
						(errmsg("taskq: dropped %d deferred signals for task \"%s\": it waits for fewer",
								k, succ)));
			return;
		}
	}
	else if (may_defer && known_wide(succ))
	{
		TaskqCounterResult added = taskq_signal_counter_add(succ, MY_STRIPE, k);

		if (added == TASKQ_COUNTER_SQL)
			taskq_execute(&add_to_counter_plan, args, NULL, false, 0);
		if (added == TASKQ_COUNTER_ABSENT ||
			(added == TASKQ_COUNTER_SQL && SPI_processed == 0))
			taskq_execute(&new_counter_plan, args, NULL, false, 0);
		taskq_note_deferred();	/* the worker will add them */
		return;
	}
	else if (may_defer)
	{
		bool		isnull;

		taskq_execute(plan_for(&signal_or_defer_plan, &legacy_signal_or_defer_plan),
					  args, NULL, false, 0);
		if (SPI_processed == 0)
			return;				/* successor gone (retention): nothing to signal */
		if (taskq_get_bool(0, 8, NULL))
		{
			if (taskq_get_bool(0, 9, &isnull))
				remember_wide(succ);
			taskq_note_deferred();	/* the worker will add them */
			return;
		}
	}
	else
	{
		taskq_execute(plan_for(&signal_plan, &legacy_signal_plan), args, NULL, false, 0);
		if (SPI_processed == 0)
			return;				/* successor gone (retention): nothing to signal */
	}
	code = taskq_get_text(0, 2, NULL);
	if (taskq_get_int32(0, 1, NULL) != 0 || strcmp(code, "pending") != 0)
		return;
	/* pending, num_signals 0: did these signals release it, or skip it? */
	if (!taskq_trigger_from_label(taskq_get_text(0, 5, NULL), &rule))
		elog(ERROR, "taskq: unknown trigger rule of task \"%s\"", succ);
	if (rule == TASKQ_ONE_SUCCESS && taskq_get_int32(0, 6, NULL) != k)
		return;					/* released by an earlier completion */
	if (rule == TASKQ_ONE_FAILED)
	{
		if (taskq_get_int32(0, 7, NULL) == 0)
			skip_task(succ, work);	/* every predecessor completed */
		return;					/* else released by an earlier abort */
	}
	if (taskq_get_bool(0, 3, NULL))
		add_work(work, NULL, succ); /* spontaneous join */
	else
		taskq_note_ready(taskq_get_text(0, 4, NULL));
}

/*
 * Signal the successors of completed tasks: one signal less for each time a
 * successor appears in succs (sorted, so repeats are adjacent and each
 * successor is updated once: a batch completing many members of one group
 * writes its join once, not once per member).  A pending successor whose
 * last signal arrived is ready, or, if spontaneous, goes on the work list
 * to be completed by the queue.
 */
void
taskq_signal_completed(List *succs, List **work)
{
	bool		may_defer = taskq_background_worker && !folding && succs != NIL &&
		taskq_worker_running() && deferral_installed();

	for (int i = 0; i < list_length(succs);)
	{
		char	   *succ = list_nth(succs, i);
		int			k = 1;

		while (i + k < list_length(succs) &&
			   strcmp(list_nth(succs, i + k), succ) == 0)
			k++;
		i += k;
		signal_task(succ, k, may_defer, work);
	}
}

/*
 * One abort signal from pred to succ (see signal_abort_plan): the cascade
 * of an abort or a skip, or the release of a task its rule lets run.
 */
static void
signal_abort_one(const char *pred, const char *succ, List **work)
{
	Datum		values[2];
	bool		isnull;

	values[0] = CStringGetTextDatum(succ);
	values[1] = CStringGetTextDatum(psprintf("aborted: predecessor \"%s\" aborted", pred));
	taskq_execute(plan_for(&signal_abort_plan, &legacy_signal_abort_plan), values, NULL, false, 0);
	if (SPI_processed == 0)
		return;					/* gone (retention): nothing to signal */
	(void) taskq_get_datum(0, 1, &isnull);	/* the fate: aborted or skipped */
	if (!isnull)
	{
		/* aborted (the cascade) or skipped: its successors in turn */
		(void) taskq_status_transition(taskq_status_from_label(taskq_get_text(0, 3, NULL)),
									   TASKQ_ABORT, succ);
		taskq_task_finished(succ, TASKQ_ABORTED);
		taskq_metric_count_result(0, 7, TASKQ_M_ABORTED);
		add_abort_work(work, succ, taskq_sort_strings(taskq_get_text_array(0, 2)));
		return;
	}
	/* still pending, and the signal took num_signals to 0: ready now */
	if (strcmp(taskq_get_text(0, 3, NULL), "pending") != 0 ||
		taskq_get_int32(0, 4, NULL) == 0 || taskq_get_int32(0, 5, NULL) != 0)
		return;
	if (taskq_get_bool(0, 6, NULL))
		add_work(work, NULL, succ); /* spontaneous */
	else
		taskq_note_ready(taskq_get_text(0, 7, NULL));
}

/*
 * Work through the work list: complete its spontaneous tasks, signal its
 * aborts, and whatever these lead to, and so on.
 */
void
taskq_complete_spontaneous(List *work)
{
	while (work != NIL)
	{
		SignalWork *w = linitial(work);

		work = list_delete_first(work);
		CHECK_FOR_INTERRUPTS();
		if (w->pred == NULL)
			taskq_signal_completed(taskq_finish_row(w->succ, TASKQ_COMPLETED, NULL), &work);
		else
			signal_abort_one(w->pred, w->succ, &work);
	}
}

typedef struct DeferredCount
{
	char	   *id;
	int32		count;
} DeferredCount;

static int
compare_deferred(const void *a, const void *b)
{
	return strcmp(((const DeferredCount *) a)->id, ((const DeferredCount *) b)->id);
}

/*
 * The background worker: add the signals completions deferred because the
 * successor's row was locked (see the file header), in id order, waiting
 * for rows still locked.  Returns how many deferred rows it took (at most
 * 1000 a call).  Runs inside a transaction with SPI connected.
 */
int
taskq_fold_deferred_signals(void)
{
	uint64		n;
	DeferredCount *dc;
	List	   *work = NIL;

	if (!deferral_installed())
		return 0;
	taskq_execute(&take_deferred_plan, NULL, NULL, false, 0);
	n = SPI_processed;
	if (n == 0)
		return 0;
	dc = palloc(sizeof(DeferredCount) * n);
	for (uint64 r = 0; r < n; r++)
	{
		dc[r].id = taskq_get_text(r, 1, NULL);
		dc[r].count = taskq_get_int32(r, 2, NULL);
	}
	qsort(dc, n, sizeof(DeferredCount), compare_deferred);	/* id order */
	folding = true;
	PG_TRY();
	{
		for (uint64 r = 0; r < n;)
		{
			uint64		first = r;
			int32		k = 0;

			for (; r < n && strcmp(dc[r].id, dc[first].id) == 0; r++)
				k += dc[r].count;
			signal_task(dc[first].id, k, false, &work);
		}
		taskq_complete_spontaneous(work);
	}
	PG_FINALLY();
	{
		folding = false;
	}
	PG_END_TRY();
	return (int) n;
}

/* The worker: drop the counters left at 0 (see take_deferred_plan). */
void
taskq_drop_empty_deferred(void)
{
	if (deferral_installed())
		taskq_execute(&drop_empty_deferred_plan, NULL, NULL, false, 0);
}

/*
 * A task aborted: one abort signal for each of its successors (succs, from
 * taskq_finish_row): every all_success successor not yet finished is
 * aborted too, and so on transitively; the other rules decide as the file
 * header says.  The successor's fate is decided here, where its count
 * changes, in the same statement.
 */
void
taskq_signal_aborted(const char *id, List *succs)
{
	List	   *work = NIL;

	add_abort_work(&work, id, succs);
	taskq_complete_spontaneous(work);
}

/*
 * A re-driven task's successor waits for it again: its abort is no longer
 * counted.  all_success, all_done: one unfinished predecessor more.
 * one_failed: released still if another abort is counted, else its
 * num_signals is its unfinished predecessors again.  one_success: released
 * still if a completion is counted, else one more to wait for.  (A
 * successor that started or finished keeps its course; the counts stay
 * exact for the predecessor's next finish.)
 */
static TaskqPlan wait_again_plan = {
	"UPDATE taskq.tasks AS t"
	"   SET num_failed = pg_catalog.int4larger(t.num_failed OPERATOR(pg_catalog.-) 1, 0),"
	"       num_signals = CASE"
	"         WHEN t.\"trigger\" OPERATOR(pg_catalog.=) 'one_failed'::taskq.trigger_rule"
	"          AND t.num_failed OPERATOR(pg_catalog.>) 1 THEN 0"
	"         WHEN t.\"trigger\" OPERATOR(pg_catalog.=) 'one_success'::taskq.trigger_rule"
	"          AND t.num_completed OPERATOR(pg_catalog.>) 0 THEN 0"
	"         WHEN t.\"trigger\" OPERATOR(pg_catalog.=) 'one_failed'::taskq.trigger_rule"
	"         THEN t.total_dependencies OPERATOR(pg_catalog.-) t.num_completed"
	"              OPERATOR(pg_catalog.-) t.num_failed OPERATOR(pg_catalog.+) 1"
	"         ELSE t.num_signals OPERATOR(pg_catalog.+) 1 END"
	" WHERE t.id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/* The successors (sorted) of a task re-driven: each waits for it again. */
void
taskq_signal_wait_again(List *succs)
{
	ListCell   *lc;

	foreach(lc, succs)
	{
		Datum		s = CStringGetTextDatum(lfirst(lc));

		taskq_execute(plan_for(&wait_again_plan, &legacy_wait_again_plan), &s, NULL, false, 0);
	}
}

/* ----------
 * New edges
 * ----------
 */

/*
 * k more predecessors for stored task id (edges added by add_dependencies
 * or by an insert whose tasks name it as successor): k more signals to
 * wait for, unless its rule released it already.  With unstarted, only if
 * the task has not started (pending, never owned).  False if no row was
 * changed: the task is gone, or started.
 */
#define ADD_EDGES_SET \
	"   SET num_signals = CASE" \
	"         WHEN (t.\"trigger\" OPERATOR(pg_catalog.=) 'one_failed'::taskq.trigger_rule" \
	"               AND t.num_failed OPERATOR(pg_catalog.>) 0)" \
	"           OR (t.\"trigger\" OPERATOR(pg_catalog.=) 'one_success'::taskq.trigger_rule" \
	"               AND t.num_completed OPERATOR(pg_catalog.>) 0) THEN 0" \
	"         ELSE t.num_signals OPERATOR(pg_catalog.+) $2 END," \
	"       total_dependencies = t.total_dependencies OPERATOR(pg_catalog.+) $2"

static TaskqPlan add_edges_plan = {
	"UPDATE taskq.tasks AS t" ADD_EDGES_SET
	" WHERE t.id OPERATOR(pg_catalog.=) $1",
	2, {TEXTOID, INT4OID}
};

static TaskqPlan add_edges_unstarted_plan = {
	"UPDATE taskq.tasks AS t" ADD_EDGES_SET
	" WHERE t.id OPERATOR(pg_catalog.=) $1"
	"   AND t.status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status"
	"   AND t.performance_token IS NULL",
	2, {TEXTOID, INT4OID}
};

bool
taskq_signal_add_edges(const char *id, int32 k, bool unstarted)
{
	Datum		values[2];

	values[0] = CStringGetTextDatum(id);
	values[1] = Int32GetDatum(k);
	taskq_execute(unstarted ?
				  plan_for(&add_edges_unstarted_plan, &legacy_add_edges_unstarted_plan) :
				  plan_for(&add_edges_plan, &legacy_add_edges_plan),
				  values, NULL, false, 0);
	return SPI_processed == 1;
}

/*
 * add_dependencies: stored task run (locked, not started) waits for after,
 * which has already finished with outcome: the edge is counted as added
 * and at once as signalled, so that run's rule decides with it (a
 * completion releases one_success; an abort releases one_failed and counts
 * for all_done; the last outcome a rule cannot use skips run).
 */
void
taskq_signal_finished_edge(const char *after, const char *run, TaskqStatus outcome)
{
	List	   *work = NIL;

	(void) taskq_signal_add_edges(run, 1, false);
	if (outcome == TASKQ_COMPLETED)
		signal_task(run, 1, false, &work);
	else
		add_work(&work, after, run);
	taskq_complete_spontaneous(work);
}
