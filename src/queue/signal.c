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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "storage/backendid.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "common/local_table.h"
#include "common/plan.h"
#include "common/settings.h"
#include "ipc/wakeup.h"
#include "common/args.h"
#include "queue/relation.h"

/* $2 predecessors completed: $2 signals less. */
static TaskqPlan signal_plan = {
	"UPDATE taskq.tasks"
	"   SET num_signals = num_signals OPERATOR(pg_catalog.-) $2"
	" WHERE id OPERATOR(pg_catalog.=) $1"
	" RETURNING num_signals, status_code::text, spontaneous, action",
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
	" SELECT s.num_signals, s.code, s.spontaneous, s.action, false, false FROM s"
	" UNION ALL SELECT NULL, NULL, NULL, NULL, true, (SELECT w.wide FROM w) FROM d",
	3, {TEXTOID, INT4OID, INT4OID}
};

/*
 * A join known to be wide: add to this backend's counter straight away
 * (the common case: an update, HOT), else create it.  Whether the task
 * still exists is the worker's to find out.
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
	"UPDATE taskq.tasks"
	"   SET num_signals = num_signals OPERATOR(pg_catalog.-) $2"
	" WHERE id OPERATOR(pg_catalog.=) $1 AND num_signals OPERATOR(pg_catalog.>=) $2"
	" RETURNING num_signals, status_code::text, spontaneous, action",
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
 * A predecessor aborted: one signal less, and the successor is aborted too
 * unless it already finished.  The self-join hands back the state before the
 * update, so we know whether this call is the one that aborted it.
 */
static TaskqPlan signal_abort_plan = {
	"UPDATE taskq.tasks AS t"
	"   SET num_signals = t.num_signals OPERATOR(pg_catalog.-) 1,"
	"       status_code = CASE WHEN o.unfinished THEN 'aborted'::taskq.status ELSE t.status_code END,"
	"       status = CASE WHEN o.unfinished THEN $2 ELSE t.status END,"
	"       finished_at = CASE WHEN o.unfinished THEN pg_catalog.now() ELSE t.finished_at END,"
	"       action_deadline = CASE WHEN o.unfinished THEN NULL ELSE t.action_deadline END"
	"  FROM (SELECT p.id, p.status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status AS unfinished,"
	"               p.status_code AS code"
	"          FROM taskq.tasks AS p WHERE p.id OPERATOR(pg_catalog.=) $1 FOR UPDATE) AS o"
	" WHERE t.id OPERATOR(pg_catalog.=) o.id"
	" RETURNING o.unfinished, t.to_signal_after, o.code::text",
	2, {TEXTOID, TEXTOID}
};
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

	args[0] = CStringGetTextDatum(succ);
	args[1] = Int32GetDatum(k);
	args[2] = Int32GetDatum(MyBackendId);	/* this backend's counter */
	if (folding)
	{
		taskq_execute(&fold_signal_plan, args, NULL, false, 0);
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
		taskq_execute(&add_to_counter_plan, args, NULL, false, 0);
		if (SPI_processed == 0)
			taskq_execute(&new_counter_plan, args, NULL, false, 0);
		taskq_note_deferred();	/* the worker will add them */
		return;
	}
	else if (may_defer)
	{
		bool		isnull;

		taskq_execute(&signal_or_defer_plan, args, NULL, false, 0);
		if (SPI_processed == 0)
			return;				/* successor gone (retention): nothing to signal */
		if (taskq_get_bool(0, 5, NULL))
		{
			if (taskq_get_bool(0, 6, &isnull))
				remember_wide(succ);
			taskq_note_deferred();	/* the worker will add them */
			return;
		}
	}
	else
	{
		taskq_execute(&signal_plan, args, NULL, false, 0);
		if (SPI_processed == 0)
			return;				/* successor gone (retention): nothing to signal */
	}
	code = taskq_get_text(0, 2, NULL);
	if (taskq_get_int32(0, 1, NULL) != 0 || strcmp(code, "pending") != 0)
		return;
	if (taskq_get_bool(0, 3, NULL))
		*work = lappend(*work, pstrdup(succ));	/* spontaneous join */
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

/* Complete the spontaneous tasks of the work list, and theirs, and so on. */
void
taskq_complete_spontaneous(List *work)
{
	while (work != NIL)
	{
		char	   *cur = linitial(work);

		work = list_delete_first(work);
		taskq_signal_completed(taskq_finish_row(cur, TASKQ_COMPLETED, NULL), &work);
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
 * A task aborted: one signal less for each of its successors (succs, from
 * taskq_finish_row), and every successor not yet finished is aborted too,
 * and so on transitively.  The successor's abort is decided here, where
 * its count changes, in the same statement.
 */
void
taskq_signal_aborted(const char *id, List *succs)
{
	List	   *work = NIL;
	ListCell   *lc;

	foreach(lc, succs)
		work = lappend(work, list_make2(pstrdup(id), lfirst(lc)));

	while (work != NIL)
	{
		List	   *edge = linitial(work);
		char	   *pred = linitial(edge);
		char	   *succ = lsecond(edge);
		Datum		values[2];
		char	   *cause;

		work = list_delete_first(work);
		cause = psprintf("aborted: predecessor \"%s\" aborted", pred);
		values[0] = CStringGetTextDatum(succ);
		values[1] = CStringGetTextDatum(cause);
		taskq_execute(&signal_abort_plan, values, NULL, false, 0);
		if (SPI_processed == 0 || !taskq_get_bool(0, 1, NULL))
			continue;			/* gone, or finished before: no cascade */
		(void) taskq_status_transition(taskq_status_from_label(taskq_get_text(0, 3, NULL)),
									   TASKQ_ABORT, succ);
		taskq_task_finished(succ, TASKQ_ABORTED);
		succs = taskq_sort_strings(taskq_get_text_array(0, 2));
		foreach(lc, succs)
			work = lappend(work, list_make2(succ, lfirst(lc)));
	}
}

/* One unfinished predecessor more: a re-driven task's successor waits again. */
static TaskqPlan wait_again_plan = {
	"UPDATE taskq.tasks SET num_signals = num_signals OPERATOR(pg_catalog.+) 1"
	" WHERE id OPERATOR(pg_catalog.=) $1",
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

		taskq_execute(&wait_again_plan, &s, NULL, false, 0);
	}
}

/* ----------
 * New edges
 * ----------
 */

/*
 * k more predecessors for stored task id (edges added by add_dependencies
 * or by an insert whose tasks name it as successor): k more signals to
 * wait for.  With unstarted, only if the task has not started (pending,
 * never owned).  False if no row was changed: the task is gone, or
 * started.
 */
static TaskqPlan add_edges_plan = {
	"UPDATE taskq.tasks"
	"   SET num_signals = num_signals OPERATOR(pg_catalog.+) $2,"
	"       total_dependencies = total_dependencies OPERATOR(pg_catalog.+) $2"
	" WHERE id OPERATOR(pg_catalog.=) $1",
	2, {TEXTOID, INT4OID}
};

static TaskqPlan add_edges_unstarted_plan = {
	"UPDATE taskq.tasks"
	"   SET num_signals = num_signals OPERATOR(pg_catalog.+) $2,"
	"       total_dependencies = total_dependencies OPERATOR(pg_catalog.+) $2"
	" WHERE id OPERATOR(pg_catalog.=) $1"
	"   AND status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status"
	"   AND performance_token IS NULL",
	2, {TEXTOID, INT4OID}
};

bool
taskq_signal_add_edges(const char *id, int32 k, bool unstarted)
{
	Datum		values[2];

	values[0] = CStringGetTextDatum(id);
	values[1] = Int32GetDatum(k);
	taskq_execute(unstarted ? &add_edges_unstarted_plan : &add_edges_plan,
				  values, NULL, false, 0);
	return SPI_processed == 1;
}
