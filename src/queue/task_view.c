/*-------------------------------------------------------------------------
 *
 * task_view.c
 *	  A task as the layers above the queue see it: a C struct of its row
 *	  (TaskqHeld, TaskqTaskView), its status as a TaskqStatus.  The
 *	  returns' token check (taskq_lock_held_task), the workflow layer's
 *	  looks at its steps and jobs' tasks, and the last try a saga's switch
 *	  to undoing gives the dos in flight.
 *
 * The workflow layer reads and writes taskq.tasks only through these
 * functions (queue.h), so the table's columns and the labels of its
 * statuses stay the queue's.  Locking: taskq_lock_held_task and
 * taskq_task_peek with TASKQ_PEEK_LOCK lock one row (FOR UPDATE);
 * taskq_task_lock_views locks rows in id order, the lock order of task
 * rows.  A plain peek locks nothing and sees the caller's snapshot.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "common/plan.h"
#include "common/settings.h"
#include "ipc/metrics.h"
#include "queue/queue.h"
#include "queue/queue_internal.h"

/* ----------
 * A held task
 * ----------
 */

/* The returned task, locked. */
#define LOCK_HELD_SQL(more) \
	"SELECT status_code::text, performance_token, actor_id, num_tries, max_tries, action," \
	"       cancelled" more \
	"  FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) $1 FOR UPDATE"

static TaskqPlan lock_plan = {LOCK_HELD_SQL(""), 1, {TEXTOID}};

/* The same with its claim's time (0.6), for the metrics' run time. */
static TaskqPlan lock_timed_plan = {LOCK_HELD_SQL(", claimed_at"), 1, {TEXTOID}};

/*
 * The token check of task id as a plan just read it (no row: no such task;
 * column tokcol its performance token): 42704 for an unknown id, unless
 * taskq.retention = 0 may have deleted it completed; TQ001 for another
 * token.  detail says why the token must match (NULL: the returns').
 */
void
taskq_check_read_token(const char *id, int tokcol, pg_uuid_t *token, const char *detail)
{
	bool		gone = SPI_processed == 0;
	bool		isnull = true;
	Datum		cur = (Datum) 0;

	if (gone && taskq_retention != 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("task \"%s\" does not exist", id)));
	if (!gone)
		cur = taskq_get_datum(0, tokcol, &isnull);
	if (gone || isnull || memcmp(DatumGetUUIDP(cur), token, sizeof(pg_uuid_t)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_TASKQ_INVALID_TOKEN),
				 errmsg("invalid performance token for task \"%s\"", id),
				 detail ? errdetail("%s", detail) : gone ?
				 errdetail("No task has this id: with taskq.retention = 0 a task is deleted when it is completed, so it was completed already, or it never existed.") :
				 errdetail("The task is no longer owned with this token: its lease expired and another worker owned it, or it was returned already."),
				 errhint("A worker holding a stale token must drop the task.")));
}

/*
 * Lock task id and check that token is its token (the queue keeps the last
 * owner's token after the task finished, and clears it on another try):
 * 42704 for an unknown id, TQ001 for another token.  The row's status,
 * tries and cancel mark go to *out.
 */
void
taskq_lock_held_task(const char *id, pg_uuid_t *token, TaskqHeld *out)
{
	Datum		arg = CStringGetTextDatum(id);
	bool		isnull = false;

	bool		timed = taskq_metrics_available() && taskq_claimed_at_installed();
	Datum		claimed;

	taskq_execute(timed ? &lock_timed_plan : &lock_plan, &arg, NULL, false, 0);
	taskq_check_read_token(id, 2, token, NULL);
	out->code = taskq_status_from_label(taskq_get_text(0, 1, NULL));
	out->num_tries = taskq_get_int32(0, 4, NULL);
	out->max_tries = taskq_get_int32(0, 5, &isnull);
	out->has_max_tries = !isnull;
	out->cancelled = taskq_get_bool(0, 7, NULL);
	out->action = taskq_get_text(0, 6, NULL);
	out->claimed_at = 0;
	if (timed)
	{
		claimed = taskq_get_datum(0, 8, &isnull);
		if (!isnull)
			out->claimed_at = DatumGetTimestampTz(claimed);
	}
}

/* ----------
 * A task's row read
 * ----------
 */
#define VIEW_COLUMNS \
	"SELECT id, status_code::text, status, num_tries, max_tries, cancelled," \
	"       " TASKQ_SQL_OWNED ", workflow, performance_token, action"

static TaskqPlan peek_plan = {
	VIEW_COLUMNS
	"  FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static TaskqPlan peek_lock_plan = {
	VIEW_COLUMNS
	"  FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) $1 FOR UPDATE",
	1, {TEXTOID}
};

static TaskqPlan peek_body_plan = {
	VIEW_COLUMNS ", body"
	"  FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static TaskqPlan peek_body_lock_plan = {
	VIEW_COLUMNS ", body"
	"  FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) $1 FOR UPDATE",
	1, {TEXTOID}
};

static TaskqPlan lock_views_plan = {
	VIEW_COLUMNS
	"  FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) ANY ($1)"
	" ORDER BY id FOR UPDATE",
	1, {TEXTARRAYOID}
};

/* Row r of a plan of VIEW_COLUMNS (with body: one more column) into *out. */
static void
read_view(uint64 r, bool body, TaskqTaskView *out)
{
	bool		isnull;
	Datum		d;

	memset(out, 0, sizeof(TaskqTaskView));
	out->id = taskq_get_text(r, 1, NULL);
	out->code = taskq_status_from_label(taskq_get_text(r, 2, NULL));
	out->status = taskq_get_text(r, 3, NULL);
	out->num_tries = taskq_get_int32(r, 4, NULL);
	out->max_tries = taskq_get_int32(r, 5, &isnull);
	out->has_max_tries = !isnull;
	out->cancelled = taskq_get_bool(r, 6, NULL);
	out->owned = taskq_get_bool(r, 7, &isnull) && !isnull;
	out->workflow = taskq_get_text(r, 8, NULL);
	d = taskq_get_datum(r, 9, &isnull);
	out->has_token = !isnull;
	if (!isnull)
		memcpy(&out->token, DatumGetUUIDP(d), sizeof(pg_uuid_t));
	out->action = taskq_get_text(r, 10, NULL);
	if (body)
	{
		d = taskq_get_datum(r, 11, &isnull);
		out->body = isnull ? NULL : DatumGetJsonbPCopy(d);
	}
}

/*
 * Task id into *out (flags: TASKQ_PEEK_LOCK, TASKQ_PEEK_BODY,
 * TASKQ_PEEK_READ_ONLY); false if no task has this id.
 */
bool
taskq_task_peek(const char *id, int flags, TaskqTaskView *out)
{
	Datum		arg = CStringGetTextDatum(id);
	TaskqPlan  *plan;
	bool		body = (flags & TASKQ_PEEK_BODY) != 0;

	if (flags & TASKQ_PEEK_LOCK)
		plan = body ? &peek_body_lock_plan : &peek_lock_plan;
	else
		plan = body ? &peek_body_plan : &peek_plan;
	taskq_execute(plan, &arg, NULL, (flags & TASKQ_PEEK_READ_ONLY) != 0, 0);
	if (SPI_processed == 0)
		return false;
	read_view(0, body, out);
	return true;
}

/* Lock the tasks of ids in id order: the rows found, their count in *n. */
TaskqTaskView *
taskq_task_lock_views(List *ids, int *n)
{
	Datum		arg;
	TaskqTaskView *views;

	*n = 0;
	if (ids == NIL)
		return NULL;
	arg = taskq_text_array_datum(ids);
	taskq_execute(&lock_views_plan, &arg, NULL, false, 0);
	*n = (int) SPI_processed;
	views = palloc(sizeof(TaskqTaskView) * Max(*n, 1));
	for (int r = 0; r < *n; r++)
		read_view(r, false, &views[r]);
	return views;
}

/* ----------
 * The last try
 * ----------
 */
static TaskqPlan last_try_plan = {
	"UPDATE taskq.tasks SET max_tries = num_tries"
	" WHERE id OPERATOR(pg_catalog.=) ANY ($1)"
	"   AND status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status",
	1, {TEXTARRAYOID}
};

/*
 * The in-progress tasks of ids (locked by the caller) are on their last
 * try: no tries are left after the current one, so a retry, a release or
 * an expired lease ends them aborted.
 */
void
taskq_tasks_last_try(List *ids)
{
	Datum		arg;

	if (ids == NIL)
		return;
	arg = taskq_text_array_datum(ids);
	taskq_execute(&last_try_plan, &arg, NULL, false, 0);
}
