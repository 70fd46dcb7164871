/*-------------------------------------------------------------------------
 *
 * control.c
 *	  Control of tasks from outside the worker loop: cancel tasks or a
 *	  whole workflow (the status-driven abort), and re-drive aborted tasks
 *	  (dead letters).
 *
 * Cancelling aborts at once, with the cascade, what nobody owns (pending,
 * blocked, or an expired lease); a task owned under a live lease is marked
 * cancelled instead: extend_ownership then says not owned, and whatever its
 * worker returns, it ends aborted — a late return never resurrects it.
 *
 * A cancelled workflow is remembered: a task inserted later with its key
 * is aborted at insert.  Inserts take the workflow's lock shared and
 * cancel_workflow takes it exclusively, so the seed's race (a deletion
 * finishing while a creation task still inserts follow-ups) cannot leave a
 * task that runs after its workflow was cancelled.
 *
 * Lock order: workflow locks (in name order), then the dependency-graph
 * lock (redrive), then task rows in id order.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"

#include "taskq.h"

PG_FUNCTION_INFO_V1(taskq_cancel_tasks);
PG_FUNCTION_INFO_V1(taskq_cancel_workflow);
PG_FUNCTION_INFO_V1(taskq_redrive_tasks);

/* Advisory lock class of workflow locks: ("task", hash of the key). */
#define WORKFLOW_LOCK_KEY1 0x7461736B

static TaskqPlan lock_for_cancel_plan = {
	"SELECT id, status_code::text, " TASKQ_SQL_OWNED
	"  FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) ANY ($1)"
	" ORDER BY id FOR UPDATE",
	1, {TEXTARRAYOID}
};

static TaskqPlan state_plan = {
	"SELECT status_code::text FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static TaskqPlan mark_cancelled_plan = {
	"UPDATE taskq.tasks SET cancelled = true WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static TaskqPlan record_workflow_plan = {
	"INSERT INTO taskq.cancelled_workflows (workflow) VALUES ($1)"
	" ON CONFLICT (workflow) DO NOTHING",
	1, {TEXTOID}
};

static TaskqPlan workflow_tasks_plan = {
	"SELECT id FROM taskq.tasks"
	" WHERE workflow OPERATOR(pg_catalog.=) $1"
	"   AND status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status"
	"   AND NOT cancelled",
	1, {TEXTOID}
};

static TaskqPlan cancelled_workflows_plan = {
	"SELECT workflow FROM taskq.cancelled_workflows"
	" WHERE workflow OPERATOR(pg_catalog.=) ANY ($1)",
	1, {TEXTARRAYOID}
};

/* The workflows of tasks (a task's workflow never changes: no lock). */
static TaskqPlan workflows_of_plan = {
	"SELECT DISTINCT workflow FROM taskq.tasks"
	" WHERE id OPERATOR(pg_catalog.=) ANY ($1) AND workflow IS NOT NULL",
	1, {TEXTARRAYOID}
};

static TaskqPlan lock_for_redrive_plan = {
	"SELECT t.id, t.status_code::text, t.to_signal_after, t.workflow"
	"  FROM taskq.tasks AS t WHERE t.id OPERATOR(pg_catalog.=) ANY ($1)"
	" ORDER BY t.id FOR UPDATE",
	1, {TEXTARRAYOID}
};

static TaskqPlan redrive_plan = {
	"UPDATE taskq.tasks"
	"   SET status_code = 'pending', status = 'redriven', num_tries = 0,"
	"       actor_id = NULL, performance_token = NULL, action_deadline = NULL,"
	"       finished_at = NULL, cancelled = false, not_before = pg_catalog.now()"
	" WHERE id OPERATOR(pg_catalog.=) $1"
	" RETURNING num_signals, action",
	1, {TEXTOID}
};

static TaskqPlan wait_again_plan = {
	"UPDATE taskq.tasks SET num_signals = num_signals OPERATOR(pg_catalog.+) 1"
	" WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

void
taskq_lock_workflow(const char *workflow, bool exclusive)
{
	LOCKTAG		tag;
	uint32		h = hash_bytes((const unsigned char *) workflow, strlen(workflow));

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, WORKFLOW_LOCK_KEY1, h, 2);
	(void) LockAcquire(&tag, exclusive ? ExclusiveLock : ShareLock, false, false);
}

/*
 * Take the workflow locks of what is about to make tasks of these workflows
 * runnable (insert, redrive) — shared, in name order, before any row lock —
 * and return those of the workflows that were cancelled.  Under these locks
 * cancel_workflow, which takes them exclusively, either sees the tasks or
 * is seen: a task of a cancelled workflow never runs, however the two race.
 * The check reads with the latest snapshot: in REPEATABLE READ the
 * transaction's may predate a cancellation that committed before we got
 * the locks.
 */
List *
taskq_lock_workflows(List *names)
{
	List	   *sorted = NIL;
	List	   *cancelled = NIL;
	ListCell   *lc;
	Datum		arg;

	foreach(lc, names)
		if (!taskq_string_member(sorted, lfirst(lc)))
			sorted = lappend(sorted, lfirst(lc));
	if (sorted == NIL)
		return NIL;
	list_sort(sorted, taskq_compare_strings_lc);
	foreach(lc, sorted)
		taskq_lock_workflow(lfirst(lc), false);

	arg = taskq_text_array_datum(sorted);
	PushActiveSnapshot(GetLatestSnapshot());
	taskq_execute(&cancelled_workflows_plan, &arg, NULL, true, 0);
	PopActiveSnapshot();
	for (uint64 i = 0; i < SPI_processed; i++)
		cancelled = lappend(cancelled, taskq_get_text(i, 1, NULL));
	return cancelled;
}

/*
 * Cancel the named tasks (sorted, distinct); unknown ids and finished tasks
 * are skipped.  Returns how many were cancelled.
 */
static int64
cancel_ids(List *ids, const char *why)
{
	Datum		arg;
	int			n;
	char	  **rid;
	bool	   *owned;
	char	  **code;
	int64		count = 0;

	if (ids == NIL)
		return 0;
	arg = taskq_text_array_datum(ids);
	taskq_execute(&lock_for_cancel_plan, &arg, NULL, false, 0);
	n = SPI_processed;
	rid = palloc(sizeof(char *) * Max(n, 1));
	code = palloc(sizeof(char *) * Max(n, 1));
	owned = palloc(sizeof(bool) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		rid[i] = taskq_get_text(i, 1, NULL);
		code[i] = taskq_get_text(i, 2, NULL);
		owned[i] = taskq_get_bool(i, 3, NULL);
	}
	for (int i = 0; i < n; i++)
	{
		Datum		a = CStringGetTextDatum(rid[i]);

		/* an earlier cancellation's cascade may have reached it */
		if (strcmp(code[i], "completed") == 0 || strcmp(code[i], "aborted") == 0)
			continue;
		if (owned[i])
			taskq_execute(&mark_cancelled_plan, &a, NULL, false, 0);
		else
		{
			/* an earlier one's cascade may have aborted it by now */
			taskq_execute(&state_plan, &a, NULL, false, 0);
			if (strcmp(taskq_get_text(0, 1, NULL), "aborted") == 0)
				continue;
			taskq_abort_task(rid[i], why);
		}
		count++;
	}
	return count;
}

/*
 * cancel_tasks(ids text[]) returns bigint
 */
Datum
taskq_cancel_tasks(PG_FUNCTION_ARGS)
{
	List	   *ids = taskq_text_array_arg(fcinfo, 0, "ids", TASKQ_MAX_ID_LEN);
	int64		count;

	if (ids == NIL)
		PG_RETURN_INT64(0);
	list_sort(ids, taskq_compare_strings_lc);
	SPI_connect();
	count = cancel_ids(ids, "cancelled");
	SPI_finish();
	PG_RETURN_INT64(count);
}

/*
 * cancel_workflow(workflow text) returns bigint
 *
 * Cancel every unfinished task of the workflow and every task inserted
 * with its key from now on.
 */
Datum
taskq_cancel_workflow(PG_FUNCTION_ARGS)
{
	char	   *workflow = taskq_text_arg(fcinfo, 0, "workflow", TASKQ_MAX_ID_LEN);
	Datum		arg = CStringGetTextDatum(workflow);
	List	   *ids = NIL;
	int64		count;

	SPI_connect();
	taskq_lock_workflow(workflow, true);
	taskq_execute(&record_workflow_plan, &arg, NULL, false, 0);
	taskq_execute(&workflow_tasks_plan, &arg, NULL, false, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
		ids = lappend(ids, taskq_get_text(i, 1, NULL));

	/*
	 * In REPEATABLE READ the transaction's snapshot may predate tasks of the
	 * workflow inserted (or re-driven) before we got its lock: cancelling
	 * without them would let them run, so fail as PostgreSQL does.
	 */
	if (IsolationUsesXactSnapshot())
	{
		PushActiveSnapshot(GetLatestSnapshot());
		taskq_execute(&workflow_tasks_plan, &arg, NULL, true, 0);
		PopActiveSnapshot();
		for (uint64 i = 0; i < SPI_processed; i++)
			if (!taskq_string_member(ids, taskq_get_text(i, 1, NULL)))
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("could not serialize access due to concurrent insert into workflow \"%s\"",
								workflow)));
	}
	if (ids != NIL)
		list_sort(ids, taskq_compare_strings_lc);
	count = cancel_ids(ids, psprintf("cancelled: workflow \"%s\" was cancelled", workflow));
	SPI_finish();
	PG_RETURN_INT64(count);
}

/*
 * redrive_tasks(ids text[]) returns bigint
 *
 * Give aborted tasks another life: pending again with no tries used.  Each
 * becomes an unfinished predecessor again, so every task it names in
 * to_signal_after waits for it once more (num_signals + 1), which keeps
 * the signal count exact; re-drive those too for them to run.
 */
Datum
taskq_redrive_tasks(PG_FUNCTION_ARGS)
{
	List	   *ids = taskq_text_array_arg(fcinfo, 0, "ids", TASKQ_MAX_ID_LEN);
	Datum		arg;
	int			n;
	char	  **rid;
	List	  **succs;
	List	   *workflows = NIL;
	List	   *cancelled;

	if (ids == NIL)
		PG_RETURN_INT64(0);
	list_sort(ids, taskq_compare_strings_lc);
	for (int i = 1; i < list_length(ids); i++)
		if (strcmp(list_nth(ids, i - 1), list_nth(ids, i)) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("task \"%s\" appears more than once in argument \"ids\"",
							(char *) list_nth(ids, i))));

	SPI_connect();
	arg = taskq_text_array_datum(ids);
	taskq_execute(&workflows_of_plan, &arg, NULL, true, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
		workflows = lappend(workflows, taskq_get_text(i, 1, NULL));
	cancelled = taskq_lock_workflows(workflows);
	taskq_lock_dependency_graph();
	taskq_execute(&lock_for_redrive_plan, &arg, NULL, false, 0);
	n = SPI_processed;
	if (n < list_length(ids))
	{
		ListCell   *lc;
		int			j = 0;

		foreach(lc, ids)
		{
			if (j >= n || strcmp(taskq_get_text(j, 1, NULL), lfirst(lc)) != 0)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_OBJECT),
						 errmsg("task \"%s\" does not exist", (char *) lfirst(lc))));
			j++;
		}
	}
	rid = palloc(sizeof(char *) * n);
	succs = palloc(sizeof(List *) * n);
	for (int i = 0; i < n; i++)
	{
		char	   *code = taskq_get_text(i, 2, NULL);
		char	   *workflow;

		rid[i] = taskq_get_text(i, 1, NULL);
		if (strcmp(code, "aborted") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("task \"%s\" is %s, not aborted", rid[i], code),
					 errdetail("Only aborted tasks can be re-driven.")));
		workflow = taskq_get_text(i, 4, NULL);
		if (workflow && taskq_string_member(cancelled, workflow))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("task \"%s\" belongs to a cancelled workflow", rid[i])));
		succs[i] = taskq_get_text_array(i, 3);
	}
	for (int i = 0; i < n; i++)
	{
		Datum		a = CStringGetTextDatum(rid[i]);
		ListCell   *lc;

		taskq_execute(&redrive_plan, &a, NULL, false, 0);
		if (taskq_get_int32(0, 1, NULL) == 0)
			taskq_note_ready(taskq_get_text(0, 2, NULL));
		list_sort(succs[i], taskq_compare_strings_lc);
		foreach(lc, succs[i])
		{
			Datum		s = CStringGetTextDatum(lfirst(lc));

			taskq_execute(&wait_again_plan, &s, NULL, false, 0);
		}
	}
	SPI_finish();
	PG_RETURN_INT64(n);
}
