/*-------------------------------------------------------------------------
 *
 * cancel.c
 *	  Cancelling tasks and workflow keys, and re-driving aborted tasks:
 *	  cancel_tasks, cancel_workflow of a key that is no run, redrive_tasks,
 *	  and the cancel of a step's task a workflow kind makes.
 *
 * A cancelled task that is owned keeps running until its owner returns it
 * (the return then aborts it); one that is not owned is aborted at once,
 * with the cascade.  A cancelled workflow key is recorded in
 * taskq.cancelled_workflows, written and read here only: the insert or
 * re-drive of a task with that key asks taskq_cancelled_workflows under
 * its workflow locks (graph.c).  The calls of the SQL functions hand the
 * tasks they finished to the seam (taskq_finished_dispatch) before they
 * return; a workflow kind's cancel of a step leaves that to the call it
 * runs in.  The tasks are locked and read as task_view.c's views.
 * Locking: workflow locks, then the graph lock, then task rows in id
 * order (graph.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "common/args.h"
#include "common/plan.h"
#include "ipc/metrics.h"
#include "queue/cancel.h"
#include "queue/queue.h"
#include "queue/queue_internal.h"

static TaskqPlan mark_cancelled_plan = {
	"UPDATE taskq.tasks SET cancelled = true WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static TaskqPlan record_workflow_plan = {
	"INSERT INTO taskq.cancelled_workflows (workflow) VALUES ($1)"
	" ON CONFLICT (workflow) DO NOTHING",
	1, {TEXTOID}
};

static TaskqPlan cancelled_workflows_plan = {
	"SELECT workflow FROM taskq.cancelled_workflows"
	" WHERE workflow OPERATOR(pg_catalog.=) ANY ($1)",
	1, {TEXTARRAYOID}, NULL, true
};

static TaskqPlan workflow_tasks_plan = {
	"SELECT id FROM taskq.tasks"
	" WHERE workflow OPERATOR(pg_catalog.=) $1"
	"   AND status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status"
	"   AND NOT cancelled",
	1, {TEXTOID}
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

/*
 * Cancel the named tasks (sorted, distinct); unknown ids and finished tasks
 * are skipped.  Returns how many were cancelled.  The tasks it finished
 * wait for the dispatch of the caller's call.
 */
int64
taskq_cancel_ids(List *ids, const char *why)
{
	int			n;
	TaskqTaskView *tasks = taskq_task_lock_views(ids, &n);
	int64		count = 0;

	for (int i = 0; i < n; i++)
	{
		TaskqTaskView *t = &tasks[i];
		TaskqTaskView now;

		/* an earlier cancellation's cascade may have reached it */
		if (taskq_status_finished(t->code))
			continue;
		if (t->owned)
		{
			Datum		a = CStringGetTextDatum(t->id);

			taskq_execute(&mark_cancelled_plan, &a, NULL, false, 0);
		}
		else
		{
			/* an earlier one's cascade may have aborted it by now */
			if (taskq_task_peek(t->id, 0, &now) && now.code == TASKQ_ABORTED)
				continue;
			/* in progress past its deadline, not swept yet: its attempt ends here */
			if (t->code == TASKQ_IN_PROGRESS)
				taskq_attempt_end_unknown_action(t->id, "cancelled");
			taskq_abort_task(t->id, why);
		}
		taskq_metric_count(t->action, -1, TASKQ_M_CANCELLED, 1);
		count++;
	}
	return count;
}

/*
 * Cancel every unfinished task of the workflow and every task inserted
 * with its key from now on (cancel_workflow of a key that is no run); the
 * tasks it finished are handed to the seam before it returns.
 */
int64
taskq_cancel_workflow_key(const char *workflow)
{
	Datum		arg = CStringGetTextDatum(workflow);
	List	   *ids = NIL;
	int64		count;

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
	count = taskq_cancel_ids(ids, psprintf("cancelled: workflow \"%s\" was cancelled", workflow));
	taskq_finished_dispatch();
	return count;
}

/* cancel_tasks: cancel, then hand the tasks it finished to the seam. */
int64
taskq_cancel_tasks_dispatch(List *ids, const char *why)
{
	int64		count = taskq_cancel_ids(ids, why);

	taskq_finished_dispatch();
	return count;
}

/*
 * Give aborted tasks (ids sorted, distinct) another life (queue.h:
 * taskq_redrive_task); every id must name an aborted task outside a
 * cancelled workflow.
 */
int64
taskq_redrive_ids(List *ids)
{
	Datum		arg;
	int			n;
	char	  **rid;
	List	  **succs;
	List	   *workflows = NIL;
	List	   *cancelled;

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
		if (taskq_status_from_label(code) != TASKQ_ABORTED)
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
		taskq_redrive_task(rid[i], succs[i]);
	return n;
}

/* ----------
 * Cancelled workflow keys, as the insert of a task sees them
 * ----------
 */

/*
 * Whether taskq.cancelled_workflows may hold a row: a table that no
 * cancellation ever wrote to (or that vacuum truncated) has no page, and
 * knowing that costs no query (most databases never cancel a workflow, and
 * every step of a run inserts a task of its workflow).  A cancellation that
 * committed before our workflow locks were granted wrote its page before.
 */
static bool
any_cancelled_workflow(void)
{
	Oid			nsp = get_namespace_oid("taskq", true);
	Oid			relid = OidIsValid(nsp) ? get_relname_relid("cancelled_workflows", nsp) : InvalidOid;
	Relation	rel;
	bool		any;

	if (!OidIsValid(relid))
		return true;			/* the query says what is wrong */
	rel = table_open(relid, AccessShareLock);
	any = !RELKIND_HAS_STORAGE(rel->rd_rel->relkind) || RelationGetNumberOfBlocks(rel) > 0;
	table_close(rel, AccessShareLock);
	return any;
}

/*
 * Those of the workflows names (sorted, distinct; their workflow locks held
 * by the caller, graph.c) that were cancelled.  The check reads with the
 * latest snapshot: in REPEATABLE READ the transaction's may predate a
 * cancellation that committed before the caller got the locks.
 */
List *
taskq_cancelled_workflows(List *names)
{
	List	   *cancelled = NIL;
	Datum		arg;

	if (!any_cancelled_workflow())
		return NIL;
	arg = taskq_text_array_datum(names);
	PushActiveSnapshot(GetLatestSnapshot());
	taskq_execute(&cancelled_workflows_plan, &arg, NULL, true, 0);
	PopActiveSnapshot();
	for (uint64 i = 0; i < SPI_processed; i++)
		cancelled = lappend(cancelled, taskq_get_text(i, 1, NULL));
	return cancelled;
}

/*
 * Detach a join from its unfinished predecessors before they are
 * cancelled (a map state's items, machine_map.c): their edges to it are
 * taken away and its counts lowered by as many, so that their aborts do
 * not each rewrite its row in the cancelling transaction.  preds: the
 * predecessors, sorted; they are locked in id order first (the lock order
 * of task rows), then the join.  The join keeps the edges of the
 * predecessors that finished; it is then cancelled with the rest.
 */
static TaskqPlan detach_preds_plan = {
	"UPDATE taskq.tasks AS t"
	"   SET to_signal_after = pg_catalog.array_remove(t.to_signal_after, $1)"
	" WHERE t.id OPERATOR(pg_catalog.=) ANY ($2)"
	"   AND t.status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status"
	"   AND t.to_signal_after OPERATOR(pg_catalog.@>) ARRAY[$1]",
	2, {TEXTOID, TEXTARRAYOID}
};

static TaskqPlan detach_join_plan = {
	"UPDATE taskq.tasks AS t"
	"   SET num_signals = pg_catalog.int4larger(t.num_signals OPERATOR(pg_catalog.-) $2, 0),"
	"       total_dependencies = t.total_dependencies OPERATOR(pg_catalog.-) $2"
	" WHERE t.id OPERATOR(pg_catalog.=) $1"
	"   AND t.status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status",
	2, {TEXTOID, INT4OID}
};

void
taskq_detach_join(const char *join, List *preds)
{
	Datum		args[2];
	int			n;
	uint64		detached;

	if (preds == NIL)
		return;
	(void) taskq_task_lock_views(preds, &n);
	(void) taskq_task_lock_views(list_make1((char *) join), &n);
	if (n == 0)
		return;
	args[0] = CStringGetTextDatum(join);
	args[1] = taskq_text_array_datum(preds);
	taskq_execute(&detach_preds_plan, args, NULL, false, 0);
	detached = SPI_processed;
	if (detached == 0)
		return;
	args[1] = Int32GetDatum((int32) detached);
	taskq_execute(&detach_join_plan, args, NULL, false, 0);
}
