/*-------------------------------------------------------------------------
 *
 * run_child.c
 *	  Child runs, whatever their kinds: a machine's child state or a saga's
 *	  child step starts a run of another definition ("<root id>/k<n>", n
 *	  from taskq.fork_seq as for continuation forks, so however deep runs
 *	  nest, an id is its root's and one number), with taskq.runs.parent
 *	  naming the run that started it.  When a child ends, its parent moves
 *	  in the same transaction (the kinds' side: machine_child.c and
 *	  saga.c); when a run fails or is cancelled, its running children are
 *	  cancelled (taskq_run_cancel_children, called from the end of every
 *	  run: taskq_run_store, taskq_saga_finish and the end of a fan-in
 *	  batch's other instances, machine_batch.c, call taskq_run_ended).
 *
 * Locking: ancestors first.  A child's end takes its parent's lock, and a
 * parent's cancel takes its children's: so that the two never wait for
 * each other in opposite orders, taskq_run_lock of a child run takes its
 * parent's lock (and so on up to the root) before its own.  The parent of
 * a run never changes after its insert, so it is read without a lock.
 * Every path that locks a run goes through taskq_run_lock, so a child's
 * lock is never held without its parent's.
 *
 * A parent that cancels its children hears nothing from them: it is noted
 * as silenced for the length of the cancel (the cancel's own end of the
 * parent is written by its caller), so their ends leave it as it is.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"

#include "common/plan.h"
#include "queue/queue.h"
#include "workflow/child.h"
#include "workflow/json.h"
#include "workflow/run.h"
#include "workflow/seam.h"
#include "workflow/workflow.h"

/* ----------
 * Ids and locks
 * ----------
 */

/* Is id a child run's ("<root>/k<n>")? */
bool
taskq_run_is_child_id(const char *id)
{
	const char *slash = strrchr(id, '/');

	if (slash == NULL || slash[1] != 'k' || slash[2] == '\0')
		return false;
	for (const char *p = slash + 2; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

static TaskqPlan parent_plan = {
	"SELECT parent FROM taskq.runs WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/* Before a child run's lock: its parent's (and so up to the root). */
void
taskq_run_lock_parent(const char *id)
{
	Datum		arg = CStringGetTextDatum(id);
	char	   *parent;

	/* a snapshot of this moment: the statement's may predate the child */
	taskq_execute_latest(&parent_plan, &arg, NULL, true);
	if (SPI_processed == 0)
		return;					/* a child being inserted: its parent is held */
	parent = taskq_get_text(0, 1, NULL);
	if (parent != NULL)
		taskq_run_lock(parent);
}

/*
 * taskq_run_lock without waiting (the background worker's timers): the
 * ancestors' locks first, then the run's; false as soon as one is held by
 * another transaction (those taken stay to the transaction's end, in the
 * same order, and wait for nothing).
 */
bool
taskq_run_try_lock(const char *id)
{
	if (taskq_run_is_child_id(id))
	{
		Datum		arg = CStringGetTextDatum(id);

		taskq_execute_latest(&parent_plan, &arg, NULL, true);
		if (SPI_processed > 0)
		{
			char	   *parent = taskq_get_text(0, 1, NULL);

			if (parent != NULL && !taskq_run_try_lock(parent))
				return false;
		}
	}
	return taskq_try_lock_workflow(id);
}

/* ----------
 * Start
 * ----------
 */
static TaskqPlan child_seq_plan = {
	"SELECT pg_catalog.nextval('taskq.fork_seq'::pg_catalog.regclass)", 0, {0}
};

/*
 * Start a child of parent (locked): the latest version of the definition
 * kind/name, with input as its context (a machine) or inputs (a saga).
 */
char *
taskq_child_start(TaskqRun *parent, const char *kind, const char *name, Jsonb *input)
{
	char	   *id;
	bool		isnull;

	check_stack_depth();		/* a definition that starts itself at once */
	taskq_execute(&child_seq_plan, NULL, NULL, false, 0);
	id = psprintf("%s/k%s", taskq_run_root(parent->id),
				  DatumGetCString(DirectFunctionCall1(int8out, taskq_get_datum(0, 1, &isnull))));
	if (strcmp(kind, "machine") == 0)
		return taskq_start_machine(name, id, parent->id, input, NULL);
	return taskq_start_saga(name, id, parent->id, input, NULL);
}

/* ----------
 * End
 * ----------
 */

/* The parents that hear nothing from their children now (see the banner). */
#define MAX_SILENCED 64
static const char *silenced[MAX_SILENCED];
static int	nsilenced = 0;

static bool
is_silenced(const char *parent)
{
	for (int i = 0; i < nsilenced; i++)
		if (strcmp(silenced[i], parent) == 0)
			return true;
	return false;
}

/* A child's outcome: {"run", "status", "context", "error"}. */
Jsonb *
taskq_child_outcome(TaskqRun *child)
{
	JsonbParseState *st = NULL;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	taskq_json_push_text(&st, "run", child->id);
	taskq_json_push_text(&st, "status", taskq_run_status_label(child->status));
	taskq_json_push_jsonb(&st, "context", child->context);
	taskq_json_push_text(&st, "error", child->error);
	return JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_OBJECT, NULL));
}

/*
 * Did the child succeed, for its parent?  A machine child merged into
 * another instance by a fan-in batch did: the batch took its work on.
 */
bool
taskq_child_succeeded(TaskqRun *child)
{
	return child->status == TASKQ_RUN_SUCCEEDED || child->status == TASKQ_RUN_MERGED;
}

/*
 * Cancel the running child of parent (its lock held) without its end
 * moving the parent: true if the child has ended (a saga child may be
 * undoing still; its end comes later).
 */
bool
taskq_run_cancel_child(const char *parent, const char *child)
{
	int			depth = nsilenced;
	bool		ended;

	if (depth == MAX_SILENCED)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("child runs of run \"%s\" are nested more than %d deep", parent,
						MAX_SILENCED)));
	silenced[nsilenced++] = parent;
	PG_TRY();
	{
		TaskqRun   *run = taskq_run_get(child);

		if (run->status == TASKQ_RUN_RUNNING || run->status == TASKQ_RUN_WAITING)
			(void) taskq_workflow_kind(run->kind)->cancel(run);
		ended = taskq_run_status_finished(run->status);
	}
	PG_FINALLY();
	{
		nsilenced = depth;
	}
	PG_END_TRY();
	return ended;
}

static TaskqPlan children_plan = {
	"SELECT id FROM taskq.runs WHERE parent OPERATOR(pg_catalog.=) $1"
	"   AND finished_at IS NULL ORDER BY id",
	1, {TEXTOID}
};

/*
 * Cancel the running children of run (locked), which failed or was
 * cancelled: every end of a run that is not a success comes here.
 */
void
taskq_run_cancel_children(TaskqRun *run)
{
	Datum		arg = CStringGetTextDatum(run->id);
	List	   *children = NIL;
	ListCell   *lc;

	taskq_execute(&children_plan, &arg, NULL, false, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *id = taskq_get_text(i, 1, NULL);

		if (taskq_run_is_child_id(id))
			children = lappend(children, id);
	}
	foreach(lc, children)
		(void) taskq_run_cancel_child(run->id, lfirst(lc));
}

/*
 * Run (locked) has just ended and its row is written: its running children
 * are cancelled if it did not succeed, and a child moves its parent.
 */
void
taskq_run_ended(TaskqRun *run)
{
	TaskqRun   *parent;

	if (run->status == TASKQ_RUN_FAILED || run->status == TASKQ_RUN_CANCELLED ||
		run->status == TASKQ_RUN_DISMAL)
		taskq_run_cancel_children(run);
	if (run->parent == NULL || !taskq_run_is_child_id(run->id) || is_silenced(run->parent))
		return;
	taskq_run_lock(run->parent);	/* held already: ancestors first */
	parent = taskq_run_fetch(run->parent);
	if (parent == NULL || taskq_run_status_finished(parent->status))
		return;
	if (strcmp(parent->kind, "machine") == 0)
		taskq_machine_child_ended(parent, run);
	else
		taskq_saga_child_ended(parent, run);
}
