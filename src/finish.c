/*-------------------------------------------------------------------------
 *
 * finish.c
 *	  return_task and return_tasks, and the engine every path uses to end a
 *	  task: complete it and signal its successors, or abort it and cascade
 *	  the abort to every transitive successor.
 *
 * Signals are counted on the successor row: num_signals is decremented once
 * for every predecessor that finishes, completed or aborted, so it always
 * equals the number of unfinished predecessors.  A successor whose count
 * reaches zero while pending becomes ready (it enters the ready index); if
 * it is spontaneous the queue completes it on the spot.
 *
 * The completion itself, the hottest update here, is in direct.c (with the
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

#include "acl.h"
#include "taskq.h"

PG_FUNCTION_INFO_V1(taskq_return_task);
PG_FUNCTION_INFO_V1(taskq_return_tasks);

/* End one task: set its final state and hand back its successors. */
static TaskqPlan finish_plan = {
	"UPDATE taskq.tasks"
	"   SET status_code = $2::taskq.status, status = COALESCE($3, status),"
	"       finished_at = pg_catalog.now(), action_deadline = NULL"
	" WHERE id OPERATOR(pg_catalog.=) $1"
	" RETURNING to_signal_after",
	3, {TEXTOID, TEXTOID, TEXTOID}
};

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
	"  FROM (SELECT p.id, p.status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status AS unfinished"
	"          FROM taskq.tasks AS p WHERE p.id OPERATOR(pg_catalog.=) $1 FOR UPDATE) AS o"
	" WHERE t.id OPERATOR(pg_catalog.=) o.id"
	" RETURNING o.unfinished, t.to_signal_after",
	2, {TEXTOID, TEXTOID}
};

/*
 * Complete the tasks still held with these tokens, in the order of the
 * arrays (sorted by id, so rows are locked in id order by the nested loop
 * over them): the fallback of direct.c's completion.
 */
static TaskqPlan complete_held_batch_plan = {
	"UPDATE taskq.tasks AS t"
	"   SET status_code = 'completed', status = COALESCE(r.status, t.status),"
	"       finished_at = pg_catalog.now(), action_deadline = NULL"
	"  FROM ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::uuid[]),"
	"                  pg_catalog.unnest($3::text[])) AS r(id, token, status)"
	" WHERE t.id OPERATOR(pg_catalog.=) r.id"
	"   AND t.performance_token OPERATOR(pg_catalog.=) r.token"
	"   AND t.status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status"
	"   AND NOT t.cancelled"
	" RETURNING t.id, t.to_signal_after",
	3, {TEXTARRAYOID, UUIDARRAYOID, TEXTARRAYOID}
};

/*
 * With taskq.retention = 0: delete the held tasks that nobody keeps (see
 * direct.c's delete_on_completion), before complete_held_batch_plan
 * completes the others.
 */
static TaskqPlan delete_held_batch_plan = {
	"DELETE FROM taskq.tasks AS t"
	"  USING ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::uuid[])) AS r(id, token)"
	" WHERE t.id OPERATOR(pg_catalog.=) r.id"
	"   AND t.performance_token OPERATOR(pg_catalog.=) r.token"
	"   AND t.status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status"
	"   AND NOT t.cancelled AND NOT t.post_result AND t.workflow IS NULL"
	" RETURNING t.id, t.to_signal_after",
	2, {TEXTARRAYOID, UUIDARRAYOID}
};

/* The returned task, locked. */
static TaskqPlan lock_plan = {
	"SELECT status_code::text, performance_token, actor_id, num_tries, max_tries, action,"
	"       cancelled"
	"  FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) $1 FOR UPDATE",
	1, {TEXTOID}
};

/*
 * Give the task back for another try, after the given delay or the one its
 * retry policy (or its action's) sets for the tries it used.
 */
static TaskqPlan retry_plan = {
	"UPDATE taskq.tasks AS t"
	"   SET status_code = 'pending', status = COALESCE($2, t.status),"
	"       actor_id = NULL, performance_token = NULL, action_deadline = NULL,"
	"       not_before = pg_catalog.now() OPERATOR(pg_catalog.+) COALESCE($3,"
	"           taskq._backoff(COALESCE(t.retry,"
	"                                   (SELECT p.retry FROM taskq.action_policies AS p"
	"                                     WHERE p.action OPERATOR(pg_catalog.=) t.action)),"
	"                          t.num_tries))"
	" WHERE t.id OPERATOR(pg_catalog.=) $1"
	" RETURNING t.not_before OPERATOR(pg_catalog.<=) pg_catalog.now()",
	3, {TEXTOID, TEXTOID, INTERVALOID}
};

/* Sort a list of C strings bytewise, in place; returns the list. */
static List *
sort_ids(List *ids)
{
	if (list_length(ids) > 1)
		list_sort(ids, taskq_compare_strings_lc);
	return ids;
}

/*
 * Set the final state of one task and return its successors, sorted.
 */
static List *
finish_row(const char *id, const char *code, const char *status)
{
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};

	values[0] = CStringGetTextDatum(id);
	values[1] = CStringGetTextDatum(code);
	if (status)
		values[2] = CStringGetTextDatum(status);
	else
		nulls[2] = 'n';
	taskq_execute(&finish_plan, values, nulls, false, 0);
	if (SPI_processed != 1)
		elog(ERROR, "taskq: task \"%s\" vanished while finishing it", id);
	taskq_note_finished(id);
	return sort_ids(taskq_get_text_array(0, 1));
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
static void
signal_completed(List *succs, List **work)
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
static void
complete_spontaneous(List *work)
{
	while (work != NIL)
	{
		char	   *cur = linitial(work);

		work = list_delete_first(work);
		signal_completed(finish_row(cur, "completed", NULL), &work);
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
		complete_spontaneous(work);
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
 * Complete a task (its row already locked and checked by the caller) and
 * signal its successors; spontaneous successors whose last signal arrives
 * are completed too, and so on.
 */
void
taskq_complete_task(const char *id, const char *status)
{
	List	   *work = NIL;

	signal_completed(finish_row(id, "completed", status), &work);
	complete_spontaneous(work);
}

/* The rows (id, to_signal_after) the last statement finished: done, succs. */
static void
note_held_done(int n, char **ids, bool *done, List **succs)
{
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		char	   *id = taskq_get_text(r, 1, NULL);

		for (int i = 0; i < n; i++)
			if (!done[i] && strcmp(ids[i], id) == 0)
			{
				done[i] = true;
				succs[i] = taskq_get_text_array(r, 2);
				break;
			}
	}
}

/*
 * What taskq_complete_direct does, as one UPDATE (and with retention 0 a
 * DELETE before it): for the SQL fallback.
 */
static void
complete_held_sql(int n, char **ids, pg_uuid_t **tokens, char **statuses,
				  bool *done, List **succs)
{
	Datum	   *tokdatums = palloc(sizeof(Datum) * n);
	Datum	   *stdatums = palloc(sizeof(Datum) * n);
	bool	   *snulls = palloc(sizeof(bool) * n);
	List	   *idlist = NIL;
	int			dims[1] = {n};
	int			lbs[1] = {1};
	Datum		values[3];

	for (int i = 0; i < n; i++)
	{
		idlist = lappend(idlist, ids[i]);
		tokdatums[i] = UUIDPGetDatum(tokens[i]);
		snulls[i] = statuses[i] == NULL;
		stdatums[i] = snulls[i] ? (Datum) 0 : CStringGetTextDatum(statuses[i]);
		done[i] = false;
		succs[i] = NIL;
	}
	values[0] = taskq_text_array_datum(idlist);
	values[1] = PointerGetDatum(construct_array(tokdatums, n, UUIDOID, UUID_LEN,
												false, TYPALIGN_CHAR));
	values[2] = PointerGetDatum(construct_md_array(stdatums, snulls, 1, dims, lbs,
												   TEXTOID, -1, false, TYPALIGN_INT));
	if (taskq_retention == 0)
	{
		taskq_execute(&delete_held_batch_plan, values, NULL, false, 0);
		note_held_done(n, ids, done, succs);
	}
	taskq_execute(&complete_held_batch_plan, values, NULL, false, 0);
	note_held_done(n, ids, done, succs);
}

/*
 * Abort a task (row locked and checked by the caller) and every task that
 * transitively depends on it.
 */
void
taskq_abort_task(const char *id, const char *status)
{
	List	   *work = NIL;
	ListCell   *lc;
	List	   *succs = finish_row(id, "aborted", status);

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
		taskq_note_finished(succ);
		succs = sort_ids(taskq_get_text_array(0, 2));
		foreach(lc, succs)
			work = lappend(work, list_make2(succ, lfirst(lc)));
	}
}

/* One task of a return_task or return_tasks call. */
typedef struct ReturnItem
{
	char	   *id;
	pg_uuid_t  *token;
	char	   *status;
	char	   *code;
} ReturnItem;

static void complete_held_batch(ReturnItem *items, int n, const char *caller);

/*
 * Return one owned task; the body of return_task and of each element of
 * return_tasks.
 */
static void
return_one(const char *id, pg_uuid_t *token, const char *status,
		   const char *code, Interval *retry_delay)
{
	Datum		arg = CStringGetTextDatum(id);
	bool		isnull = false;
	bool		gone;
	char	   *cur = NULL;
	Datum		cur_token = (Datum) 0;

	if (strcmp(code, "in_progress") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot return task \"%s\" as in_progress", id),
				 errhint("Return it as completed, aborted or pending.")));

	taskq_execute(&lock_plan, &arg, NULL, false, 0);
	/* with taskq.retention = 0 a missing task may be one completed and deleted */
	gone = SPI_processed == 0;
	if (gone && taskq_retention != 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("task \"%s\" does not exist", id)));
	if (!gone)
	{
		cur = taskq_get_text(0, 1, NULL);
		cur_token = taskq_get_datum(0, 2, &isnull);
	}
	if (gone || isnull ||
		memcmp(DatumGetUUIDP(cur_token), token, sizeof(pg_uuid_t)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_TASKQ_INVALID_TOKEN),
				 errmsg("invalid performance token for task \"%s\"", id),
				 gone ?
				 errdetail("No task has this id: with taskq.retention = 0 a task is deleted when it is completed, so it was completed already, or it never existed.") :
				 errdetail("The task is no longer owned with this token: its lease expired and another worker owned it, or it was returned already."),
				 errhint("A worker holding a stale token must drop the task.")));
	if (strcmp(cur, "completed") == 0 || strcmp(cur, "aborted") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("task \"%s\" is already %s", id, cur)));

	/* Cancelled while owned: whatever the worker says, it ends here. */
	if (taskq_get_bool(0, 7, NULL))
	{
		taskq_abort_task(id, "cancelled");
		return;
	}

	/*
	 * The token matches and the task is unfinished: it is in progress, or
	 * its lease expired and nobody owned it since (the late owner may still
	 * return it).
	 */
	if (strcmp(code, "completed") == 0)
		taskq_complete_task(id, status);
	else if (strcmp(code, "aborted") == 0)
		taskq_abort_task(id, status);
	else
	{
		bool		max_null;
		int32		num_tries = taskq_get_int32(0, 4, NULL);
		int32		max_tries = taskq_get_int32(0, 5, &max_null);

		if (!max_null && num_tries >= max_tries)
			taskq_abort_task(id, status ? status :
							 psprintf("aborted: all %d tries used", max_tries));
		else
		{
			Datum		values[3];
			char		nulls[3] = {' ', ' ', ' '};
			char	   *action = taskq_get_text(0, 6, NULL);

			values[0] = arg;
			if (status)
				values[1] = CStringGetTextDatum(status);
			else
				nulls[1] = 'n';
			if (retry_delay)
				values[2] = IntervalPGetDatum(retry_delay);
			else
				nulls[2] = 'n';
			taskq_execute(&retry_plan, values, nulls, false, 0);
			if (taskq_get_bool(0, 1, NULL))
				taskq_note_ready(action);	/* no delay: ready now */
		}
	}
}

/* The status_code argument as a C string (the enum's label). */
static char *
status_code_arg(Datum d)
{
	return DatumGetCString(DirectFunctionCall1(enum_out, d));
}

/*
 * return_task(id text, token uuid, status text, status_code taskq.status,
 *			   retry_delay interval DEFAULT NULL)
 */
Datum
taskq_return_task(PG_FUNCTION_ARGS)
{
	char	   *id;
	pg_uuid_t  *token;
	char	   *status = NULL;
	char	   *code;
	Interval   *retry_delay = NULL;

	id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	taskq_require_arg(fcinfo, 1, "token");
	token = PG_GETARG_UUID_P(1);
	if (!PG_ARGISNULL(2))
		status = text_to_cstring(PG_GETARG_TEXT_PP(2));
	taskq_require_arg(fcinfo, 3, "status_code");
	code = status_code_arg(PG_GETARG_DATUM(3));

	taskq_acl_check_return(list_make1(id));	/* acl.c: limited workers */
	if (PG_NARGS() > 4 && !PG_ARGISNULL(4))
	{
		Interval	zero = {0};

		retry_delay = PG_GETARG_INTERVAL_P(4);
		if (strcmp(code, "pending") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"retry_delay\" applies only to a task returned as pending"),
					 errdetail("Task \"%s\" is returned as %s.", id, code)));
		if (DatumGetBool(DirectFunctionCall2(interval_lt, IntervalPGetDatum(retry_delay),
											 IntervalPGetDatum(&zero))))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"retry_delay\" must not be negative")));
	}

	SPI_connect();
	{
		ReturnItem	item = {id, token, status, code};

		/* the common case, a completion, as a batch of one */
		complete_held_batch(&item, 1, "return_task()");
		if (item.code != NULL)
			return_one(id, token, status, code, retry_delay);
	}
	SPI_finish();
	PG_RETURN_VOID();
}


static int
compare_return_items(const void *a, const void *b)
{
	return strcmp(((const ReturnItem *) a)->id, ((const ReturnItem *) b)->id);
}

/*
 * Complete the items (sorted by id) returned as completed and still held
 * with their tokens, all at once (direct.c, or one UPDATE if that path does
 * not apply), and mark them done (code NULL).  Those not held go through
 * return_one, which says why (and the call fails), or aborts a task
 * cancelled while it was owned.  caller names the SQL function in errors.
 * Checks run only for a task not held: completing one that is costs one
 * row update.
 */
static void
complete_held_batch(ReturnItem *items, int n, const char *caller)
{
	char	  **ids = palloc(sizeof(char *) * Max(n, 1));
	pg_uuid_t **tokens = palloc(sizeof(pg_uuid_t *) * Max(n, 1));
	char	  **statuses = palloc(sizeof(char *) * Max(n, 1));
	bool	   *done = palloc(sizeof(bool) * Max(n, 1));
	List	  **succs = palloc(sizeof(List *) * Max(n, 1));
	int		   *item_of = palloc(sizeof(int) * Max(n, 1));
	int			m = 0;
	List	   *work = NIL;
	List	   *all_succs = NIL;

	for (int i = 0; i < n; i++)
	{
		if (strcmp(items[i].code, "completed") != 0)
			continue;
		ids[m] = items[i].id;
		tokens[m] = items[i].token;
		statuses[m] = items[i].status;
		item_of[m++] = i;
	}
	if (m == 0)
		return;
	if (taskq_complete_direct(caller, m, ids, tokens, statuses, done, succs) < 0)
		complete_held_sql(m, ids, tokens, statuses, done, succs);

	for (int k = 0; k < m; k++)
		if (done[k])
		{
			taskq_note_finished(ids[k]);
			all_succs = list_concat(all_succs, succs[k]);
			items[item_of[k]].code = NULL;
		}
	signal_completed(sort_ids(all_succs), &work);
	complete_spontaneous(work);
	for (int k = 0; k < m; k++)
		if (!done[k])
		{
			ReturnItem *it = &items[item_of[k]];

			return_one(it->id, it->token, it->status, it->code, NULL);
			it->code = NULL;
		}
}

/*
 * return_tasks(ids text[], tokens uuid[], statuses text[],
 *				status_codes taskq.status[]) returns bigint
 *
 * All or none; tasks are returned in id order so that concurrent batch
 * returns lock rows in one order.  statuses may be NULL (no status text).
 */
Datum
taskq_return_tasks(PG_FUNCTION_ARGS)
{
	List	   *ids;
	Datum	   *tokens,
			   *statuses = NULL,
			   *codes;
	bool	   *tnulls,
			   *snulls = NULL,
			   *cnulls;
	int			ntokens,
				nstatuses = 0,
				ncodes;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	ReturnItem *items;
	int			n,
				i;
	ListCell   *lc;

	ids = taskq_text_array_arg(fcinfo, 0, "ids", TASKQ_MAX_ID_LEN);
	taskq_require_arg(fcinfo, 1, "tokens");
	taskq_require_arg(fcinfo, 3, "status_codes");
	n = list_length(ids);

	deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), UUIDOID, UUID_LEN, false,
					  TYPALIGN_CHAR, &tokens, &tnulls, &ntokens);
	if (!PG_ARGISNULL(2))
		deconstruct_array(PG_GETARG_ARRAYTYPE_P(2), TEXTOID, -1, false,
						  TYPALIGN_INT, &statuses, &snulls, &nstatuses);
	{
		ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(3);

		get_typlenbyvalalign(ARR_ELEMTYPE(arr), &typlen, &typbyval, &typalign);
		deconstruct_array(arr, ARR_ELEMTYPE(arr), typlen, typbyval, typalign,
						  &codes, &cnulls, &ncodes);
	}
	if (ntokens != n || ncodes != n || (statuses && nstatuses != n))
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("arrays \"ids\", \"tokens\", \"statuses\" and \"status_codes\" must have the same length"),
				 errdetail("\"ids\" has %d elements, \"tokens\" %d, \"statuses\" %d, \"status_codes\" %d.",
						   n, ntokens, statuses ? nstatuses : n, ncodes)));

	items = palloc(sizeof(ReturnItem) * Max(n, 1));
	i = 0;
	foreach(lc, ids)
	{
		if (tnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"tokens\" must not contain null elements")));
		if (cnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"status_codes\" must not contain null elements")));
		items[i].id = lfirst(lc);
		items[i].token = DatumGetUUIDP(tokens[i]);
		items[i].status = (statuses && !snulls[i]) ?
			TextDatumGetCString(statuses[i]) : NULL;
		items[i].code = status_code_arg(codes[i]);
		i++;
	}
	qsort(items, n, sizeof(ReturnItem), compare_return_items);
	for (i = 1; i < n; i++)
		if (strcmp(items[i - 1].id, items[i].id) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("task \"%s\" appears more than once in argument \"ids\"",
							items[i].id)));

	taskq_acl_check_return(ids);	/* acl.c: limited workers */
	SPI_connect();
	complete_held_batch(items, n, "return_tasks()");
	for (i = 0; i < n; i++)
		if (items[i].code != NULL)
			return_one(items[i].id, items[i].token, items[i].status, items[i].code, NULL);
	SPI_finish();
	PG_RETURN_INT64(n);
}
