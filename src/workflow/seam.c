/*-------------------------------------------------------------------------
 *
 * seam.c
 *	  The seam between the queue and the workflow layer.  The queue calls
 *	  two hooks, in the caller's transaction: taskq_return_hook before a
 *	  return or release locks any task row (queue/return.c), and
 *	  taskq_finished_hook with the tasks each of its calls finished
 *	  (queue/lifecycle.c).  Here both find the run a task belongs to and
 *	  hand the task to the kind of that run (state machines, sagas).
 *
 * To tell a step from a plain task, a hook reads of the task's run only
 * its status and step task, without the run's lock (taskq_run_peek): a
 * map state's items, tasks numbered past their run's step, then pass by
 * as plain tasks do, whatever the size of the run's context; a step's run
 * is locked and read whole once.  (A look at each item's run that read
 * the run whole, its context with the map's array, cost an item's return
 * three times a plain task's.)
 *
 * A workflow step is an ordinary task "<run id>/<n>".  A worker that
 * returns it with return_task, return_tasks or return_and_own reaches its
 * kind through the return hook, which takes the locks of the runs first
 * (the lock order: run, then task rows); an expiry, a cancel or an abort
 * reaches it through the finished hook, before the queue's call returns.
 * Either way the kind writes its bookkeeping through the queue's C API in
 * that transaction: it commits or rolls back with the step, exactly once.
 * (The finished hook takes the run's lock after the queue locked the task
 * row only where nothing can wait for that row under the run's lock: the
 * expiry sweep locks the runs of the steps it will abort before their rows
 * (taskq_expiring_hook), and a cancel of a step comes from its kind, which
 * holds the run's lock already.  The exception is a map state's join,
 * completed by the return of its last item, a plain task whose return
 * does not lock the run: see machine_map.c.)
 *
 * A kind's own calls into the queue (taskq_step_return, taskq_step_release)
 * pass the return hook by, and the finished hook leaves the completions
 * they make to the kind, which moves its run on itself.  So do the calls a
 * hook makes into a kind: each runs through direct(), the one place the
 * seam's depth changes (backend-local, back to where it was on an error).
 * No locking of its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/args.h"
#include "queue/queue.h"
#include "workflow/run.h"
#include "workflow/seam.h"
#include "workflow/workflow.h"

#define MAX_WORKFLOW_KINDS 8

static const TaskqWorkflowKind *kinds[MAX_WORKFLOW_KINDS];
static int	nkinds = 0;
/* How deep the calls of kinds into the queue are nested (direct()). */
static int	direct_depth = 0;

typedef void (*direct_work) (void *arg);

/*
 * Run fn(arg) as a kind's own work: the queue calls it makes do not come
 * back to the kind as returns, nor as completions.
 */
static void
direct(direct_work fn, void *arg)
{
	direct_depth++;
	PG_TRY();
	{
		fn(arg);
	}
	PG_FINALLY();
	{
		direct_depth--;
	}
	PG_END_TRY();
}

const TaskqWorkflowKind *
taskq_workflow_kind(const char *name)
{
	for (int k = 0; k < nkinds; k++)
		if (strcmp(kinds[k]->name, name) == 0)
			return kinds[k];
	elog(ERROR, "taskq: unknown workflow kind \"%s\"", name);
	return NULL;				/* keep compiler quiet */
}

/* The last run the hooks read without its lock (maybe_step). */
typedef struct Peeked
{
	const char *id;				/* NULL: none read yet */
	TaskqRun   *run;			/* NULL: no such run */
} Peeked;

/*
 * Is task_id, a task of run id, one of its steps, as far as the run's row
 * read without its lock says?  A task numbered past the run's current step
 * is a map item, a plain task: its run is neither locked nor read whole
 * for it (see taskq_run_task_past_step).  No such run: no step.  The tasks
 * a call hands over come sorted, those of one run side by side: the run is
 * read once for them (p).
 */
static bool
maybe_step(Peeked *p, const char *id, const char *task_id)
{
	if (p->id == NULL || strcmp(p->id, id) != 0)
	{
		p->run = taskq_run_peek(id);
		p->id = id;
	}
	return p->run != NULL && !taskq_run_task_past_step(p->run, task_id);
}

/* A step handed to its kind (the hooks' work under direct()). */
typedef struct StepCall
{
	TaskqRun   *run;
	TaskqReturnItem *item;		/* returned: the item, else NULL */
	bool		release;
	bool		taken;			/* returned: the kind took it */
	const TaskqFinished *task;	/* finished: the task */
} StepCall;

static void
step_work(void *arg)
{
	StepCall   *c = arg;
	const TaskqWorkflowKind *kind = taskq_workflow_kind(c->run->kind);

	if (c->item)
		c->taken = kind->step_returned(c->run, c->item, c->release);
	else
		kind->step_finished(c->run, c->task);
}

/*
 * Lock the runs of the items that are steps, in id order (each with its
 * ancestors first, taskq_run_lock): the runs locked.
 */
static List *
lock_step_runs(TaskqReturnItem *items, int n)
{
	List	   *runs = NIL;
	Peeked		peeked = {0};
	ListCell   *lc;

	for (int i = 0; i < n; i++)
	{
		char	   *run = taskq_run_of_task(items[i].id);

		if (run && !taskq_string_member(runs, run) && taskq_schema_at_least_0_5() &&
			maybe_step(&peeked, run, items[i].id))
			runs = lappend(runs, run);
	}
	if (runs == NIL)
		return NIL;				/* no steps, or a schema from before runs */
	runs = taskq_sort_strings(runs);
	foreach(lc, runs)
		taskq_run_lock(lfirst(lc));
	return runs;
}

/*
 * Return hook: lock the runs of the returned items that are steps (in id
 * order, before any task row), then hand each step to its kind.
 */
static void
workflow_returned(TaskqReturnItem *items, int n, bool release)
{
	List	   *runs;

	if (direct_depth > 0)
		return;
	runs = lock_step_runs(items, n);
	if (runs == NIL)
		return;

	for (int i = 0; i < n; i++)
	{
		char	   *id = taskq_run_of_task(items[i].id);
		StepCall	c = {0};

		if (id == NULL || !taskq_string_member(runs, id))
			continue;
		c.run = taskq_run_fetch(id);
		if (c.run == NULL)
			continue;
		c.item = &items[i];
		c.release = release;
		direct(step_work, &c);
		if (c.taken)
			items[i].done = true;
	}
}

/*
 * Expiring hook: the expiry sweep is about to lock and abort these tasks
 * (their last try's lease expired): the runs of those that are steps are
 * locked first, as a return locks them, so the finished hook's lock below
 * is held already and a sweep and a worker's return of the same run take
 * the run's lock and the task's row in the same order.
 */
static void
workflow_expiring(char **ids, int n)
{
	TaskqReturnItem *items = palloc0(sizeof(TaskqReturnItem) * n);

	for (int i = 0; i < n; i++)
		items[i].id = ids[i];
	(void) lock_step_runs(items, n);
}

/* Finished hook: each finished task that is a step goes to its kind. */
static void
workflow_finished(const TaskqFinished *tasks, int n)
{
	Peeked		peeked = {0};

	for (int i = 0; i < n; i++)
	{
		char	   *id;
		StepCall	c = {0};

		/* a kind's own completion of a step: the kind moves the run on */
		if (direct_depth > 0 && tasks[i].outcome == TASKQ_COMPLETED)
			continue;
		id = taskq_run_of_task(tasks[i].id);
		if (id == NULL || !taskq_schema_at_least_0_5())
			continue;
		/* a map item (read without the lock, as the return hook does) */
		if (!maybe_step(&peeked, id, tasks[i].id))
			continue;
		taskq_run_lock(id);
		c.run = taskq_run_fetch(id);
		if (c.run == NULL)
			continue;
		c.task = &tasks[i];
		direct(step_work, &c);
		peeked.id = NULL;		/* the kind may have moved the run */
	}
}

/* ----------
 * A kind's own return and release of a step
 * ----------
 */
typedef struct ReturnCall
{
	TaskqReturnItem item;
	const char *caller;			/* NULL: a release */
} ReturnCall;

static void
return_work(void *arg)
{
	ReturnCall *c = arg;

	if (c->caller)
		taskq_return(&c->item, 1, c->caller);
	else
		taskq_release(c->item.id, c->item.token);
}

void
taskq_step_return(const char *id, pg_uuid_t *token, const char *status, TaskqStatus code,
				  Interval *delay, const char *caller)
{
	ReturnCall	c = {.item = {.id = (char *) id, .token = token, .status = (char *) status,
		.code = code, .retry_delay = delay}, .caller = caller};

	direct(return_work, &c);
}

void
taskq_step_release(const char *id, pg_uuid_t *token)
{
	ReturnCall	c = {.item = {.id = (char *) id, .token = token}, .caller = NULL};

	direct(return_work, &c);
}

/* Register a workflow kind (from taskq_workflow_init). */
void
taskq_workflow_register_kind(const TaskqWorkflowKind *kind)
{
	if (nkinds == MAX_WORKFLOW_KINDS)
		elog(ERROR, "taskq: too many workflow kinds (at most %d)", MAX_WORKFLOW_KINDS);
	kinds[nkinds++] = kind;
	taskq_finished_hook = workflow_finished;
	taskq_return_hook = workflow_returned;
	taskq_expiring_hook = workflow_expiring;
}

/* Called once from _PG_init: the workflow kinds register here. */
void
taskq_workflow_init(void)
{
	taskq_machine_init();
	taskq_saga_init();
}
