/*-------------------------------------------------------------------------
 *
 * lifecycle.c
 *	  The life of one task: its statuses and the transitions between them
 *	  (task.h lists the edges; docs/design.md draws them), the end of a
 *	  task (completed or aborted), and the tasks one call of the queue
 *	  finished, handed to the workflow layer through the seam.
 *
 * taskq_status_transition() is the transition table: every path that
 * changes a task's status_code asks it first, with the status it found
 * under the row's lock, so that a transition the table does not have is
 * an internal error caught in development (an Assert), never a silent
 * change.  Where the caller's argument asks for the impossible (returning
 * a task as in_progress, re-driving one that is not aborted) the API layer
 * or the path reports it to the user with its own SQLSTATE first.
 *
 * The single-task writes of status_code are here: the end of a task
 * (completed or aborted; its statement's WHERE clause is the check),
 * another try, a release, a longer lease, a re-drive.  Three
 * hot or set-based paths write it where they run, each checking the
 * status it starts from in the same statement or under the same buffer
 * lock, and each naming its transition: the claim (claim_walk.c, and the
 * SQL claim in claim.c: pending -> in_progress), the completion of held
 * tasks (complete.c: -> completed), the expiry sweep (lease.c:
 * in_progress -> pending), and the abort cascade (signal.c, where a
 * successor's fate is decided with its count).
 *
 * The tasks a call finished are collected in backend-local memory as they
 * end (taskq_task_finished) and handed to taskq_finished_hook, at most
 * once each, when the call's queue work is done (taskq_finished_dispatch),
 * inside the same transaction: a workflow step's bookkeeping commits or
 * rolls back with the return that finished it.  An error drops the
 * collected tasks with the transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/args.h"
#include "common/pg_compat.h"
#include "common/plan.h"
#include "ipc/metrics.h"
#include "ipc/wakeup.h"
#include "queue/queue_internal.h"

taskq_finished_hook_type taskq_finished_hook = NULL;

static const char *const status_labels[TASKQ_STATUS_COUNT] = {
	[TASKQ_PENDING] = "pending",
	[TASKQ_IN_PROGRESS] = "in_progress",
	[TASKQ_COMPLETED] = "completed",
	[TASKQ_ABORTED] = "aborted",
};

/*
 * The transition table: for each way a status changes, the statuses it
 * may start from (a bit per status) and the status it ends in.
 */
#define FROM(s) (1 << (s))
static const struct
{
	int			from;
	TaskqStatus to;
} transitions[] = {
	[TASKQ_CLAIM] = {FROM(TASKQ_PENDING), TASKQ_IN_PROGRESS},
	[TASKQ_EXTEND] = {FROM(TASKQ_IN_PROGRESS) | FROM(TASKQ_PENDING), TASKQ_IN_PROGRESS},
	[TASKQ_EXPIRE] = {FROM(TASKQ_IN_PROGRESS), TASKQ_PENDING},
	[TASKQ_RETRY] = {FROM(TASKQ_IN_PROGRESS) | FROM(TASKQ_PENDING), TASKQ_PENDING},
	[TASKQ_COMPLETE] = {FROM(TASKQ_IN_PROGRESS) | FROM(TASKQ_PENDING), TASKQ_COMPLETED},
	[TASKQ_ABORT] = {FROM(TASKQ_IN_PROGRESS) | FROM(TASKQ_PENDING), TASKQ_ABORTED},
	[TASKQ_REDRIVE] = {FROM(TASKQ_ABORTED), TASKQ_PENDING},
	[TASKQ_RELEASE] = {FROM(TASKQ_IN_PROGRESS) | FROM(TASKQ_PENDING), TASKQ_PENDING},
};

const char *
taskq_status_label(TaskqStatus status)
{
	Assert(status >= 0 && status < TASKQ_STATUS_COUNT);
	return status_labels[status];
}

/* The status of a label of taskq.status (as status_code::text reads it). */
TaskqStatus
taskq_status_from_label(const char *label)
{
	for (int s = 0; s < TASKQ_STATUS_COUNT; s++)
		if (strcmp(status_labels[s], label) == 0)
			return (TaskqStatus) s;
	elog(ERROR, "taskq: unknown task status \"%s\"", label);
	pg_unreachable();
}

bool
taskq_status_finished(TaskqStatus status)
{
	return status == TASKQ_COMPLETED || status == TASKQ_ABORTED;
}

/*
 * The status task id reaches from status from by the transition how.  A
 * transition the table does not allow is a bug in the caller, which must
 * have checked the status under the row's lock: it fails an assertion in
 * builds with assertions, and is reported as an internal error otherwise
 * rather than written.
 */
TaskqStatus
taskq_status_transition(TaskqStatus from, TaskqTransition how, const char *id)
{
	Assert(how >= 0 && how < lengthof(transitions));
	if ((transitions[how].from & FROM(from)) == 0)
	{
		Assert(false);
		elog(ERROR, "taskq: task \"%s\" cannot change from %s by transition %d",
			 id, taskq_status_label(from), (int) how);
	}
	return transitions[how].to;
}

/* ----------
 * The end of a task
 * ----------
 */

/*
 * End one task: set its final state and hand back its successors.  The
 * caller locked the row and found it unfinished; the WHERE clause is the
 * transition's check (pending or in_progress -> completed or aborted),
 * derived from the row rather than read again.
 */
static TaskqPlan finish_plan = {
	"UPDATE taskq.tasks"
	"   SET status_code = $2::taskq.status, status = COALESCE($3, status),"
	"       finished_at = pg_catalog.now(), action_deadline = NULL"
	" WHERE id OPERATOR(pg_catalog.=) $1"
	"   AND status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status"
	" RETURNING to_signal_after, action",
	3, {TEXTOID, TEXTOID, TEXTOID}
};

/*
 * Set the final state of one task (code: completed or aborted; its row
 * already locked and checked by the caller) and return its successors,
 * sorted.
 */
List *
taskq_finish_row(const char *id, TaskqStatus code, const char *status)
{
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	List	   *succs;
	char	   *action;

	Assert(taskq_status_finished(code));
	values[0] = CStringGetTextDatum(id);
	values[1] = CStringGetTextDatum(taskq_status_label(code));
	if (status)
		values[2] = CStringGetTextDatum(status);
	else
		nulls[2] = 'n';
	taskq_execute(&finish_plan, values, nulls, false, 0);
	if (SPI_processed != 1)
		elog(ERROR, "taskq: task \"%s\" vanished or finished while finishing it", id);
	succs = taskq_sort_strings(taskq_get_text_array(0, 1));
	action = taskq_get_text(0, 2, NULL);
	taskq_metric_count(action, -1,
					   code == TASKQ_COMPLETED ? TASKQ_M_COMPLETED : TASKQ_M_ABORTED, 1);
	taskq_task_finished(id, code);
	taskq_flow_freed(action, id, false);	/* its slot, if it held one (flow_limits.c) */
	return succs;
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

	taskq_signal_completed(taskq_finish_row(id, TASKQ_COMPLETED, status), &work);
	taskq_complete_spontaneous(work);
}

/*
 * Abort a task (row locked and checked by the caller) and every task that
 * transitively depends on it.
 */
void
taskq_abort_task(const char *id, const char *status)
{
	taskq_signal_aborted(id, taskq_finish_row(id, TASKQ_ABORTED, status));
}

/* ----------
 * The workflow seam
 * ----------
 */
static TaskqFinished *finished = NULL;
static int	nfinished = 0;
static int	maxfinished = 0;
static LocalTransactionId finished_lxid = InvalidLocalTransactionId;

/*
 * Task id has ended with outcome in this transaction: wake its waiters at
 * commit, and keep it for the workflow hook (only while one is set).
 */
void
taskq_task_finished(const char *id, TaskqStatus outcome)
{
	taskq_note_finished(id);
	if (taskq_finished_hook == NULL)
		return;
	if (finished_lxid != TASKQ_MY_LXID)
	{
		nfinished = 0;			/* left by a call that failed */
		finished_lxid = TASKQ_MY_LXID;
	}
	if (nfinished == maxfinished)
	{
		maxfinished = Max(64, maxfinished * 2);
		finished = finished == NULL ?
			MemoryContextAlloc(TopMemoryContext, sizeof(TaskqFinished) * maxfinished) :
			repalloc(finished, sizeof(TaskqFinished) * maxfinished);
	}
	finished[nfinished].id = MemoryContextStrdup(CurTransactionContext, id);
	finished[nfinished].outcome = outcome;
	nfinished++;
}

/*
 * Hand the tasks finished since the last call to the workflow hook, in the
 * caller's transaction and SPI connection.  Every SQL entry point that can
 * finish a task calls it when its queue work is done.  The hook may finish
 * more tasks (through the queue), which are handed over in turn.
 */
void
taskq_finished_dispatch(void)
{
	while (taskq_finished_hook != NULL && nfinished > 0 &&
		   finished_lxid == TASKQ_MY_LXID)
	{
		int			n = nfinished;
		TaskqFinished *batch = palloc(sizeof(TaskqFinished) * n);

		memcpy(batch, finished, sizeof(TaskqFinished) * n);
		nfinished = 0;
		taskq_finished_hook(batch, n);
	}
}

/* ----------
 * Re-drive
 * ----------
 */
static TaskqPlan redrive_plan = {
	"UPDATE taskq.tasks"
	"   SET status_code = 'pending', status = 'redriven', num_tries = 0,"
	"       actor_id = NULL, performance_token = NULL, action_deadline = NULL,"
	"       finished_at = NULL, cancelled = false, not_before = pg_catalog.now()"
	" WHERE id OPERATOR(pg_catalog.=) $1"
	" RETURNING num_signals, action",
	1, {TEXTOID}
};

/*
 * Give an aborted task (its row locked and checked by the caller) another
 * life: pending again with no tries used.  It becomes an unfinished
 * predecessor again, so each of its successors waits for it once more
 * (signal.c), which keeps the signal counts exact.
 */
void
taskq_redrive_task(const char *id, List *successors)
{
	Datum		a = CStringGetTextDatum(id);

	(void) taskq_status_transition(TASKQ_ABORTED, TASKQ_REDRIVE, id);
	taskq_execute(&redrive_plan, &a, NULL, false, 0);
	taskq_metric_count_result(0, 2, TASKQ_M_REDRIVEN);
	if (taskq_get_int32(0, 1, NULL) == 0)
		taskq_note_ready(taskq_get_text(0, 2, NULL));
	taskq_signal_wait_again(taskq_sort_strings(successors));
}

/* ----------
 * Another try, and a longer lease
 * ----------
 */
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
	" RETURNING t.not_before OPERATOR(pg_catalog.<=) pg_catalog.now(), t.action,"
	"           t.not_before",
	3, {TEXTOID, TEXTOID, INTERVALOID}
};

/*
 * Give task id (found in status cur under its row lock, still held by the
 * returning worker) back for another try, after retry_delay or, if NULL,
 * the delay its retry policy (or its action's) sets for the tries it used.
 * status, if not NULL, is its new human-readable status.
 */
void
taskq_task_retry(const char *id, TaskqStatus cur, const char *status,
				 Interval *retry_delay)
{
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};

	(void) taskq_status_transition(cur, TASKQ_RETRY, id);
	values[0] = CStringGetTextDatum(id);
	if (status)
		values[1] = CStringGetTextDatum(status);
	else
		nulls[1] = 'n';
	if (retry_delay)
		values[2] = IntervalPGetDatum(retry_delay);
	else
		nulls[2] = 'n';
	taskq_execute(&retry_plan, values, nulls, false, 0);
	taskq_metric_count_result(0, 2, TASKQ_M_RETRIED);
	if (taskq_get_bool(0, 1, NULL))
	{
		char	   *action = taskq_get_text(0, 2, NULL);

		taskq_note_ready(action);	/* no delay: ready now */
		taskq_flow_freed(action, id, true);
	}
	else
	{
		bool		isnull;
		Datum		nb = taskq_get_datum(0, 3, &isnull);
		char	   *action = taskq_get_text(0, 2, NULL);

		if (!isnull)
			taskq_note_due(DatumGetTimestampTz(nb));	/* the worker wakes for it */
		taskq_flow_freed(action, id, false);	/* its slot, if it held one (flow_limits.c) */
	}
}

static TaskqPlan extend_plan = {
	"UPDATE taskq.tasks"
	"   SET status_code = 'in_progress',"
	"       action_deadline = pg_catalog.now() OPERATOR(pg_catalog.+) $4"
	" WHERE id OPERATOR(pg_catalog.=) $1"
	"   AND performance_token OPERATOR(pg_catalog.=) $2"
	"   AND actor_id OPERATOR(pg_catalog.=) $3"
	"   AND status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status"
	"   AND NOT cancelled"
	" RETURNING action",
	4, {TEXTOID, UUIDOID, TEXTOID, INTERVALOID}
};

/* The action and key of the task extend_plan would extend, if its lease expired. */
static TaskqPlan extend_expired_plan = {
	"SELECT action, concurrency_key FROM taskq.tasks"
	" WHERE id OPERATOR(pg_catalog.=) $1"
	"   AND performance_token OPERATOR(pg_catalog.=) $2"
	"   AND actor_id OPERATOR(pg_catalog.=) $3"
	"   AND NOT cancelled"
	"   AND (status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status"
	"        OR (status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status"
	"            AND action_deadline OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()))",
	3, {TEXTOID, UUIDOID, TEXTOID}
};

/*
 * Extend the lease of task id by lease from now, if it is unfinished and
 * still held with token by actor; that includes a lease that expired while
 * nobody else owned the task since.  True if extended.
 */
bool
taskq_extend(const char *id, Datum token, const char *actor, Interval *lease)
{
	Datum		values[4];

	values[0] = CStringGetTextDatum(id);
	values[1] = token;
	values[2] = CStringGetTextDatum(actor);
	values[3] = IntervalPGetDatum(lease);
	if (taskq_flow_maybe_limited())
	{
		/* an expired lease takes a slot again: only under the limits (flow_limits.c) */
		taskq_execute(&extend_expired_plan, values, NULL, true, 0);
		if (SPI_processed == 1)
		{
			bool		nokey;
			char	   *action = taskq_get_text(0, 1, NULL);
			char	   *key = taskq_get_text(0, 2, &nokey);
			Datum		end = DirectFunctionCall2(timestamptz_pl_interval,
												  TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
												  values[3]);

			if (!taskq_flow_extend_ok(action, nokey ? NULL : key, id, DatumGetTimestampTz(end)))
				return false;
		}
	}
	taskq_execute(&extend_plan, values, NULL, false, 0);
	if (SPI_processed != 1)
		return false;
	/* a lease that had expired: its attempt is held again (attempts.c) */
	if (taskq_policy_attempts_possible())
		taskq_attempt_reopen(id, taskq_get_text(0, 1, NULL));
	return true;
}

/*
 * Back to pending, ready at once, the try not counted: the owner gives the
 * task back unworked (release_task).
 */
static TaskqPlan release_plan = {
	"UPDATE taskq.tasks AS t"
	"   SET status_code = 'pending', num_tries = t.num_tries OPERATOR(pg_catalog.-) 1,"
	"       actor_id = NULL, performance_token = NULL, action_deadline = NULL,"
	"       not_before = pg_catalog.now()"
	" WHERE t.id OPERATOR(pg_catalog.=) $1"
	" RETURNING t.num_signals, t.action",
	1, {TEXTOID}
};

/* Release task id (found in status cur under its row lock, held by the caller). */
void
taskq_task_release(const char *id, TaskqStatus cur)
{
	Datum		a = CStringGetTextDatum(id);
	bool		ready;

	(void) taskq_status_transition(cur, TASKQ_RELEASE, id);
	taskq_execute(&release_plan, &a, NULL, false, 0);
	taskq_metric_count_result(0, 2, TASKQ_M_RELEASED);
	ready = taskq_get_int32(0, 1, NULL) == 0;
	if (ready)
		taskq_note_ready(taskq_get_text(0, 2, NULL));
	taskq_flow_freed(taskq_get_text(0, 2, NULL), id, ready);	/* its slot (flow_limits.c) */
}
