/*-------------------------------------------------------------------------
 *
 * return.c
 *	  Returning tasks: a worker's return of the tasks it owns, completed,
 *	  aborted or pending again, all or none.
 *
 * The completions of a batch go through complete.c at once, in id order
 * (the lock order of batch returns); every other return locks its row,
 * checks the token (taskq_lock_held_task, task_view.c), and completes,
 * aborts (with the cascade) or gives the task back for another try after
 * its retry policy's delay.  A result
 * given with a return is written with it: by the completion itself
 * (complete.c), or, for the other outcomes, to the locked row first.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/args.h"
#include "common/plan.h"
#include "common/settings.h"
#include "ipc/metrics.h"
#include "ipc/wakeup.h"
#include "queue/queue_internal.h"

/* The workflow layer's look at returns before they lock rows (queue.h). */
taskq_return_hook_type taskq_return_hook = NULL;

/* A return's result, stored before the task's other changes. */
static TaskqPlan set_result_plan = {
	"UPDATE taskq.tasks SET result = $2 WHERE id OPERATOR(pg_catalog.=) $1",
	2, {TEXTOID, JSONBOID}
};

/*
 * The task (held, as taskq_lock_held_task read it) finished with outcome
 * final, and its owner returns it again with the same token, asking for
 * code: is this the same return repeated (a worker that lost the
 * acknowledgement of its commit and tries again)?  Yes if it asks for the
 * outcome the task has, or for another try where its tries were used up
 * (the queue aborted it).  Such a return succeeds and changes nothing.  (A
 * status code that the queue cannot tell apart from another worker's
 * return, such as completed on a task a cancel aborted, stays an error.)
 */
static bool
repeated_return(const TaskqHeld *held, TaskqStatus code)
{
	if (code == held->code)
		return true;
	return held->code == TASKQ_ABORTED && code == TASKQ_PENDING &&
		held->has_max_tries && held->num_tries >= held->max_tries;
}

/*
 * Return one owned task; the body of return_task and of each element of
 * return_tasks.
 */
static void
return_one(const char *id, pg_uuid_t *token, const char *status,
		   TaskqStatus code, Interval *retry_delay, Jsonb *result)
{
	TaskqHeld	held;

	if (code == TASKQ_IN_PROGRESS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot return task \"%s\" as in_progress", id),
				 errhint("Return it as completed, aborted or pending.")));

	taskq_lock_held_task(id, token, &held);
	if (taskq_status_finished(held.code))
	{
		const char *cur = taskq_status_label(held.code);

		if (repeated_return(&held, code))
			return;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("task \"%s\" is already %s", id, cur),
				 errdetail("It was returned as %s, or ended so otherwise; a return repeated with the same token and status code succeeds, another status code does not.",
						   cur)));
	}

	/* The result goes with any return (the row is locked and ours). */
	if (result != NULL)
	{
		Datum		values[2];

		values[0] = CStringGetTextDatum(id);
		values[1] = JsonbPGetDatum(result);
		taskq_execute(&set_result_plan, values, NULL, false, 0);
	}

	/* the try ends here, whatever its outcome: its run time */
	if (held.claimed_at != 0)
		taskq_metric_observe(held.action, -1, TASKQ_H_RUN, held.claimed_at,
							 GetCurrentTransactionStartTimestamp());

	/* Cancelled while owned: whatever the worker says, it ends here. */
	if (held.cancelled)
	{
		taskq_attempt_end(id, held.action, "cancelled", status, result, true);
		taskq_abort_task(id, "cancelled");
		return;
	}

	/*
	 * The token matches and the task is unfinished: it is in progress, or
	 * its lease expired and nobody owned it since (the late owner may still
	 * return it, and its attempt, ended expired, ends as returned).
	 */
	if (code == TASKQ_COMPLETED)
	{
		taskq_attempt_end(id, held.action, "completed", status, result, true);
		taskq_complete_task(id, status);
	}
	else if (code == TASKQ_ABORTED ||
			 (held.has_max_tries && held.num_tries >= held.max_tries))
	{
		taskq_attempt_end(id, held.action, "aborted", status, result, true);
		if (code == TASKQ_ABORTED)
			taskq_abort_task(id, status);
		else
			taskq_abort_task(id, status ? status :
							 psprintf("aborted: all %d tries used", held.max_tries));
	}
	else
	{
		taskq_attempt_end(id, held.action, "pending", status, result, true);
		taskq_task_retry(id, held.code, status, retry_delay);
	}
}

/*
 * Complete the items returned as completed and still held with their
 * tokens, all at once (complete.c's direct path, or one UPDATE if that
 * path does not apply), and mark them done.  Those not held go through
 * return_one, which says why (and the call fails), or aborts a task
 * cancelled while it was owned.  Checks run only for a task not held:
 * completing one that is costs one row update.
 */
static void
complete_held_batch(TaskqReturnItem *items, int n, const char *caller)
{
	TaskqCompletion *tasks = palloc(sizeof(TaskqCompletion) * Max(n, 1));
	int			m = 0;
	List	   *work = NIL;
	List	   *all_succs = NIL;

	for (int i = 0; i < n; i++)
	{
		if (items[i].done || items[i].code != TASKQ_COMPLETED)
			continue;
		tasks[m].item = &items[i];
		tasks[m].action = NULL;
		tasks[m].deleted = false;
		tasks[m++].succs = NIL;
	}
	if (m == 0)
		return;
	if (taskq_complete_direct(caller, tasks, m) < 0)
		taskq_complete_sql(tasks, m);

	/* done now: each was not done before */
	for (int k = 0; k < m; k++)
		if (tasks[k].item->done)
		{
			taskq_task_finished(tasks[k].item->id, TASKQ_COMPLETED);
			all_succs = list_concat(all_succs, tasks[k].succs);
		}
	/* their attempts, for the actions that keep them (attempts.c) */
	if (taskq_policy_attempts_possible())
	{
		List	   *deleted = NIL;

		for (int k = 0; k < m; k++)
		{
			TaskqReturnItem *item = tasks[k].item;

			if (!item->done)
				continue;
			if (tasks[k].deleted)
				deleted = lappend(deleted, item->id);
			else
				taskq_attempt_end(item->id, tasks[k].action, "completed", item->status,
								  item->result, true);
		}
		taskq_attempts_delete(deleted);
	}
	taskq_signal_completed(taskq_sort_strings(all_succs), &work);
	taskq_complete_spontaneous(work);
}

/*
 * Return n tasks (sorted by id, without repeats), all or none: the
 * completions of held tasks at once, then each other task on its own, in
 * id order.  caller names the SQL function in errors.
 */
void
taskq_return(TaskqReturnItem *items, int n, const char *caller)
{
#ifdef USE_ASSERT_CHECKING
	for (int i = 1; i < n; i++)
		Assert(strcmp(items[i - 1].id, items[i].id) < 0);
#endif
	for (int i = 0; i < n; i++)
		items[i].done = false;
	if (taskq_return_hook)
		taskq_return_hook(items, n, false);
	complete_held_batch(items, n, caller);
	for (int i = 0; i < n; i++)
		if (!items[i].done)
		{
			return_one(items[i].id, items[i].token, items[i].status,
					   items[i].code, items[i].retry_delay, items[i].result);
			items[i].done = true;
		}
	taskq_finished_dispatch();
}

/*
 * Give task id, held with token, back unworked: pending and ready at once,
 * the try not counted (release_task).  The token rules are return_task's;
 * a task cancelled meanwhile ends aborted (cancelled) instead, and a
 * finished one is an error (55000).
 */
void
taskq_release(const char *id, pg_uuid_t *token)
{
	TaskqHeld	held;

	if (taskq_return_hook)
	{
		TaskqReturnItem item = {.id = (char *) id, .token = token, .code = TASKQ_PENDING};

		taskq_return_hook(&item, 1, true);
		if (item.done)
		{
			taskq_finished_dispatch();
			return;
		}
	}
	taskq_lock_held_task(id, token, &held);

	if (taskq_status_finished(held.code))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("task \"%s\" is already %s", id, taskq_status_label(held.code)),
				 errdetail("Only an unfinished task can be released.")));
	taskq_attempt_end(id, held.action, held.cancelled ? "cancelled" : "released", NULL, NULL,
					  true);
	if (held.cancelled)
		taskq_abort_task(id, "cancelled");
	else
		taskq_task_release(id, held.code);
	taskq_finished_dispatch();
}
