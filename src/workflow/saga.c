/*-------------------------------------------------------------------------
 *
 * saga.c
 *	  Sagas: runs of steps that each have a do and an undo, over a DAG
 *	  ("after").  Steps whose predecessors are done run, in parallel where
 *	  the DAG allows; when a step fails the saga switches to undoing: no
 *	  new do starts, the steps in progress finish, and every started step
 *	  is undone once, in reverse topological order (independent branches
 *	  in parallel).  An undo that gives up is a dismal failure.
 *
 * Each do and undo of a step is an ordinary task "<run id>/<n>", created
 * ready in the transaction that makes the step (or its undo) ready; none
 * is made in advance.  taskq.saga_steps holds, per run and started step,
 * its current do task and undo task and their states; the working map is
 * the run's context.  Every change happens here, with the run's lock held
 * (run.c) before any task row: in the transaction of the step's return
 * (return_step, or a plain return through the seam), of the queue's end of
 * a step (expiry, through the finished hook), of start_saga, resume_run or
 * cancel_run.  A section that works on a run marks it busy: the tasks its
 * own queue calls finish come back through the finished hook, and are
 * already recorded (the hook leaves them alone); a later dispatch of them
 * finds them no longer current in saga_steps.
 *
 * Here: the returns of steps (return_step, the seam's plain returns and
 * finished tasks), doing (which steps become ready), fault injection, the
 * busy sections and the SQL functions' work.  The run as stored and the
 * step tasks are saga_store.c's; the switch to undoing, the undo schedule
 * and dismal failure are saga_undo.c's (saga_run.h is what they share).
 *
 * Step states (saga_steps.do_state): ready (its task exists, unfinished),
 * succeeded, failed (its do may have half-run: it is undone), skipped
 * (aborted at the switch before anybody claimed it: nothing to undo).
 * undo_state: NULL (not yet), ready, succeeded, failed (dismal), none (the
 * step has no undo).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"

#include "common/plan.h"
#include "queue/queue.h"
#include "workflow/child.h"
#include "workflow/debug.h"
#include "workflow/def_common.h"
#include "workflow/json.h"
#include "workflow/run.h"
#include "workflow/saga_def.h"
#include "workflow/saga_run.h"
#include "workflow/seam.h"
#include "workflow/timers.h"
#include "workflow/workflow.h"

/* What a step's worker (or the queue on its behalf) says. */
typedef enum SagaResult
{
	RESULT_SUCCESS,
	RESULT_RETRY,
	RESULT_FATAL,
	RESULT_WAIT,
	RESULT_RERUN,
	RESULT_RELEASE				/* given back unworked (release_task) */
} SagaResult;

static const char *const result_names[] = {
	"success", "retry", "fatal", "wait", "rerun", "release"
};

/* The run a section of this file is working on (see the banner). */
static const char *busy_run = NULL;

/* ----------
 * Doing
 * ----------
 */
static void
merge_working(TaskqRun *run, Jsonb *working)
{
	if (working == NULL)
		return;
	run->context = DatumGetJsonbP(DirectFunctionCall2(jsonb_concat,
													  JsonbPGetDatum(run->context),
													  JsonbPGetDatum(working)));
}

static bool
all_succeeded(TaskqSagaRun *sr)
{
	for (int i = 0; i < sr->d->nsteps; i++)
		if (sr->st[i].do_state != DO_SUCCEEDED)
			return false;
	return true;
}

/*
 * A running saga: every step not started whose "after" are done (all, or
 * one with one_success) becomes ready; all steps done: succeeded.
 */
static void
make_ready(TaskqSagaRun *sr)
{
	TaskqSagaDef *d = sr->d;

	if (sr->run->status != TASKQ_RUN_RUNNING)
		return;
	for (int i = 0; i < d->nsteps; i++)
	{
		TaskqSagaStep *s = &d->steps[i];
		int			done = 0;

		if (sr->st[i].do_state != DO_NONE)
			continue;
		for (int a = 0; a < s->nafter; a++)
			done += sr->st[s->after[a]].do_state == DO_SUCCEEDED;
		if (s->one_success ? (s->nafter > 0 && done == 0) : done < s->nafter)
			continue;
		sr->st[i].do_task = taskq_saga_add_step_task(sr, i, false);
		sr->st[i].do_state = DO_READY;
		sr->st[i].dirty = true;
	}
	if (all_succeeded(sr))
		taskq_run_set_status(sr->run, TASKQ_RUN_SUCCEEDED);
}

/* Step i failed (its do state recorded): the saga switches to undo. */
static void
fail_run(TaskqSagaRun *sr, int i, const char *error)
{
	sr->run->error = psprintf("step \"%s\": %s", sr->d->steps[i].name, error);
	taskq_saga_switch_to_undo(sr);
}

/* ----------
 * Results of steps
 * ----------
 */

/* The step whose current do or undo task is task_id (*undo says which), or -1. */
static int
find_task(TaskqSagaRun *sr, const char *task_id, bool *undo)
{
	for (int i = 0; i < sr->d->nsteps; i++)
	{
		TaskqStepState *s = &sr->st[i];

		if (s->do_task && strcmp(s->do_task, task_id) == 0)
		{
			*undo = false;
			return i;
		}
		if (s->undo_task && strcmp(s->undo_task, task_id) == 0)
		{
			*undo = true;
			return i;
		}
	}
	return -1;
}

static TaskqStatus
result_code(SagaResult r)
{
	switch (r)
	{
		case RESULT_SUCCESS:
		case RESULT_WAIT:
		case RESULT_RERUN:
			return TASKQ_COMPLETED;
		case RESULT_RETRY:
		case RESULT_RELEASE:
			return TASKQ_PENDING;
		case RESULT_FATAL:
			break;
	}
	return TASKQ_ABORTED;
}

/*
 * A return_step of a task that is no longer current (finished): the same
 * return repeated is a no-op, another result 55000.
 */
static void
repeated_result(TaskqSagaRun *sr, const char *task_id, pg_uuid_t *token, SagaResult result,
				const char *caller)
{
	TaskqTaskView task;
	char	   *status;

	taskq_step_return(task_id, token, result_names[result], result_code(result), NULL, caller);
	if (!taskq_task_peek(task_id, 0, &task))
		return;
	status = task.status;
	if (task.code == TASKQ_COMPLETED && status &&
		(strcmp(status, "success") == 0 || strcmp(status, "wait") == 0 ||
		 strcmp(status, "rerun") == 0) &&
		strcmp(status, result_names[result]) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("step task \"%s\" of run \"%s\" already returned \"%s\"",
						task_id, sr->run->id, status),
				 errdetail("A return_step repeated with the same token and result succeeds; another result does not.")));
}

/* What the worker said of a step, as it travels through the code below. */
typedef struct StepReturn
{
	const char *task_id;
	pg_uuid_t  *token;
	SagaResult	result;
	Jsonb	   *working;
	const char *error;			/* failure text, or status text of a plain return */
	Interval   *delay;
	const char *caller;
	int32		num_tries;
	bool		has_max_tries;
	int32		max_tries;
} StepReturn;

static bool
exhausted(StepReturn *r)
{
	return r->has_max_tries && r->num_tries >= r->max_tries;
}

static const char *
failure_text(StepReturn *r)
{
	if (r->error)
		return r->error;
	if (r->result == RESULT_RETRY && exhausted(r))
		return psprintf("all %d tries used", r->max_tries);
	return result_names[r->result];
}

/* A successful finish discarded by restart_each_step: true if it was. */
static bool
restart_fault(TaskqSagaRun *sr, StepReturn *r)
{
	if (!taskq_run_debug_flag(sr->run, "restart_each_step") ||
		taskq_run_fault_done(sr->run, "restart", r->task_id))
		return false;
	taskq_run_fault_mark(sr->run, "restart", r->task_id);
	taskq_step_release(r->task_id, r->token);
	return true;
}

/* A fault of key (fail_at_steps, undo_fail_at_steps) turns a success into a failure. */
static void
failure_fault(TaskqSagaRun *sr, StepReturn *r, const char *key, const char *step)
{
	char	   *fault = taskq_run_debug_fault(sr->run, key, step);

	if (fault == NULL || taskq_run_fault_done(sr->run, key, step))
		return;
	taskq_run_fault_mark(sr->run, key, step);
	r->result = strcmp(fault, "fatal") == 0 ? RESULT_FATAL : RESULT_RETRY;
	if (r->result == RESULT_RETRY)
		r->working = NULL;
	r->error = psprintf("%s: injected by %s", fault, key);
}

/* The do of step i returned. */
static void
do_returned(TaskqSagaRun *sr, int i, StepReturn *r)
{
	TaskqRun   *run = sr->run;
	TaskqStepState *s = &sr->st[i];
	const char *name = sr->d->steps[i].name;
	bool		success;

	s->dirty = true;
	if (run->status != TASKQ_RUN_RUNNING && run->status != TASKQ_RUN_WAITING)
	{
		/* after the switch: it finished late; a failure is not retried */
		if (r->result == RESULT_SUCCESS || r->result == RESULT_WAIT ||
			r->result == RESULT_RERUN)
		{
			merge_working(run, r->working);
			s->do_state = DO_SUCCEEDED;
			taskq_step_return(r->task_id, r->token, r->error ? r->error : result_names[r->result],
						 TASKQ_COMPLETED, NULL, r->caller);
		}
		else
		{
			s->do_state = DO_FAILED;
			taskq_step_return(r->task_id, r->token,
						 r->result == RESULT_RELEASE ? "released after the switch to undo" :
						 failure_text(r), TASKQ_ABORTED, NULL, r->caller);
		}
		taskq_saga_schedule_undo(sr);
		return;
	}

	success = r->result == RESULT_SUCCESS || r->result == RESULT_WAIT ||
		r->result == RESULT_RERUN;
	if (success)
	{
		if (restart_fault(sr, r))
			return;
		failure_fault(sr, r, "fail_at_steps", name);
	}
	if ((r->result == RESULT_SUCCESS || r->result == RESULT_WAIT) &&
		taskq_run_debug_flag(run, "last_step_failure") &&
		!taskq_run_fault_done(run, "last_step_failure", name))
	{
		bool		last = true;

		for (int j = 0; j < sr->d->nsteps; j++)
			if (j != i && sr->st[j].do_state != DO_SUCCEEDED)
				last = false;
		if (last)
		{
			taskq_run_fault_mark(run, "last_step_failure", name);
			r->result = RESULT_FATAL;
			r->error = "fatal: injected by last_step_failure";
		}
	}
	if (r->result == RESULT_RETRY && exhausted(r))
	{
		s->do_state = DO_FAILED;
		taskq_step_return(r->task_id, r->token, failure_text(r), TASKQ_ABORTED, NULL, r->caller);
		fail_run(sr, i, failure_text(r));
		return;
	}

	switch (r->result)
	{
		case RESULT_SUCCESS:
		case RESULT_WAIT:
			merge_working(run, r->working);
			s->do_state = DO_SUCCEEDED;
			taskq_step_return(r->task_id, r->token, r->error ? r->error : result_names[r->result],
						 TASKQ_COMPLETED, NULL, r->caller);
			if (r->result == RESULT_WAIT)
				taskq_run_set_status(run, TASKQ_RUN_WAITING);
			make_ready(sr);
			break;
		case RESULT_RERUN:
			merge_working(run, r->working);
			taskq_step_return(r->task_id, r->token, "rerun", TASKQ_COMPLETED, NULL, r->caller);
			s->do_task = taskq_saga_add_step_task(sr, i, false);
			break;
		case RESULT_RETRY:
			taskq_step_return(r->task_id, r->token, r->error ? r->error : "retry", TASKQ_PENDING,
						 r->delay, r->caller);
			break;
		case RESULT_FATAL:
			merge_working(run, r->working);
			s->do_state = DO_FAILED;
			taskq_step_return(r->task_id, r->token, failure_text(r), TASKQ_ABORTED, NULL, r->caller);
			fail_run(sr, i, failure_text(r));
			break;
		case RESULT_RELEASE:
			elog(ERROR, "taskq: release of a saga step reached the saga");
	}
}

/* The undo of step i returned. */
static void
undo_returned(TaskqSagaRun *sr, int i, StepReturn *r)
{
	TaskqRun   *run = sr->run;
	TaskqStepState *s = &sr->st[i];
	const char *name = sr->d->steps[i].name;

	if (r->result == RESULT_WAIT || r->result == RESULT_RERUN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the undo of step \"%s\" of run \"%s\" cannot return \"%s\"",
						name, run->id, result_names[r->result]),
				 errhint("An undo step returns success, retry or fatal.")));
	s->dirty = true;
	if (run->status != TASKQ_RUN_UNDOING)
	{
		/* dismal: the late return is recorded, nothing follows */
		if (r->result == RESULT_SUCCESS)
		{
			merge_working(run, r->working);
			s->undo_state = UNDO_SUCCEEDED;
			taskq_step_return(r->task_id, r->token, r->error ? r->error : "success",
						 TASKQ_COMPLETED, NULL, r->caller);
		}
		else
		{
			s->undo_state = UNDO_FAILED;
			taskq_step_return(r->task_id, r->token, failure_text(r), TASKQ_ABORTED, NULL, r->caller);
		}
		return;
	}
	if (r->result == RESULT_SUCCESS)
	{
		if (restart_fault(sr, r))
			return;
		failure_fault(sr, r, "undo_fail_at_steps", name);
	}
	if (r->result == RESULT_SUCCESS)
	{
		merge_working(run, r->working);
		s->undo_state = UNDO_SUCCEEDED;
		taskq_step_return(r->task_id, r->token, r->error ? r->error : "success",
					 TASKQ_COMPLETED, NULL, r->caller);
		taskq_saga_schedule_undo(sr);
	}
	else if (r->result == RESULT_RETRY && !exhausted(r))
		taskq_step_return(r->task_id, r->token, r->error ? r->error : "retry", TASKQ_PENDING,
					 r->delay, r->caller);
	else
	{
		s->undo_state = UNDO_FAILED;
		taskq_step_return(r->task_id, r->token, failure_text(r), TASKQ_ABORTED, NULL, r->caller);
		taskq_saga_dismal(sr, i, failure_text(r));
	}
}

/*
 * A step task of the (locked) saga run returned: token-checked, then to
 * the do or the undo.  A task that is not current is a repeat.
 */
static void
step_returned(TaskqSagaRun *sr, StepReturn *r)
{
	bool		undo;
	int			i = find_task(sr, r->task_id, &undo);
	TaskqHeld	held;

	if (i < 0 || (undo ? sr->st[i].undo_state != UNDO_READY :
				  sr->st[i].do_state != DO_READY))
	{
		repeated_result(sr, r->task_id, r->token, r->result, r->caller);
		return;
	}
	/*
	 * A current do or undo is unfinished, and a success without fault
	 * injection needs nothing of its task's row: its completion checks the
	 * token (a stale one fails the call before it commits anything).  The
	 * other results lock the task first and read its tries.
	 */
	if (r->result != RESULT_SUCCESS || sr->run->debug != NULL)
	{
		taskq_lock_held_task(r->task_id, r->token, &held);
		r->num_tries = held.num_tries;
		r->max_tries = held.max_tries;
		r->has_max_tries = held.has_max_tries;
		if (taskq_status_finished(held.code))
		{
			repeated_result(sr, r->task_id, r->token, r->result, r->caller);
			return;
		}
	}
	if (undo)
		undo_returned(sr, i, r);
	else
		do_returned(sr, i, r);
	taskq_saga_finish(sr);
}

/* ----------
 * Busy sections
 * ----------
 */
typedef void (*saga_work) (void *arg);

static void
busy_call(const char *run_id, saga_work fn, void *arg)
{
	const char *prev = busy_run;

	busy_run = run_id;
	PG_TRY();
	{
		fn(arg);
	}
	PG_FINALLY();
	{
		busy_run = prev;
	}
	PG_END_TRY();
}

typedef struct ReturnCall
{
	TaskqSagaRun *sr;
	StepReturn *r;
} ReturnCall;

static void
return_work(void *arg)
{
	ReturnCall *c = arg;

	step_returned(c->sr, c->r);
}

/* ----------
 * The kind's hooks (seam.c)
 * ----------
 */

/*
 * A worker returns a step through the queue's return functions: completed
 * is success, pending retry, aborted fatal (error = the status text).  A
 * release of a running saga's do, or of an undo while undoing, is the
 * queue's; after the switch a released do counts as failed.
 */
static bool
saga_step_returned(TaskqRun *run, TaskqReturnItem *item, bool release)
{
	TaskqSagaRun *sr = taskq_saga_load(run);
	bool		undo;
	int			i = find_task(sr, item->id, &undo);
	StepReturn	r = {0};
	ReturnCall	c = {sr, &r};

	if (i < 0 || (undo ? sr->st[i].undo_state != UNDO_READY :
				  sr->st[i].do_state != DO_READY))
		return false;			/* not current: the queue says what it is */
	if (release)
	{
		if (undo ? run->status == TASKQ_RUN_UNDOING :
			(run->status == TASKQ_RUN_RUNNING || run->status == TASKQ_RUN_WAITING))
			return false;
		r.result = RESULT_RELEASE;
	}
	else if (item->code == TASKQ_COMPLETED)
		r.result = RESULT_SUCCESS;
	else if (item->code == TASKQ_PENDING)
		r.result = RESULT_RETRY;
	else if (item->code == TASKQ_ABORTED)
		r.result = RESULT_FATAL;
	else
		return false;			/* in_progress: the queue's error */
	r.task_id = item->id;
	r.token = item->token;
	r.error = item->status;
	if (r.error == NULL && r.result == RESULT_FATAL)
		r.error = "aborted";
	r.delay = item->retry_delay;
	r.caller = release ? "release_task" : "return_task";
	busy_call(run->id, return_work, &c);
	return true;
}

typedef struct FinishedCall
{
	TaskqSagaRun *sr;
	const TaskqFinished *task;
	const char *error;			/* a child step's: why its run failed */
} FinishedCall;

static void
finished_work(void *arg)
{
	FinishedCall *c = arg;
	TaskqSagaRun *sr = c->sr;
	TaskqRun   *run = sr->run;
	bool		undo;
	int			i = find_task(sr, c->task->id, &undo);
	TaskqStepState *s;
	bool		ok = c->task->outcome == TASKQ_COMPLETED;
	char	   *error = NULL;
	TaskqTaskView view;

	if (i < 0)
		return;
	s = &sr->st[i];
	if (undo ? s->undo_state != UNDO_READY : s->do_state != DO_READY)
		return;					/* recorded already */
	if (c->error)
		error = pstrdup(c->error);
	else if (taskq_task_peek(c->task->id, 0, &view))
		error = view.status;
	if (error == NULL)
		error = ok ? "completed" : "aborted";
	s->dirty = true;
	if (undo)
	{
		s->undo_state = ok ? UNDO_SUCCEEDED : UNDO_FAILED;
		if (run->status == TASKQ_RUN_UNDOING)
		{
			if (ok)
				taskq_saga_schedule_undo(sr);
			else
				taskq_saga_dismal(sr, i, error);
		}
	}
	else
	{
		s->do_state = ok ? DO_SUCCEEDED : DO_FAILED;
		if (run->status == TASKQ_RUN_RUNNING || run->status == TASKQ_RUN_WAITING)
		{
			if (ok)
				make_ready(sr);
			else
				fail_run(sr, i, error);
		}
		else
			taskq_saga_schedule_undo(sr);
	}
	taskq_saga_finish(sr);
}

/*
 * The queue finished a step task by itself (a lease that expired on the
 * last try): a do that failed fails the saga, an undo that failed is
 * dismal.  Tasks this file finished itself were recorded already.
 */
static void
saga_step_finished(TaskqRun *run, const TaskqFinished *task)
{
	FinishedCall c;

	if (busy_run != NULL && strcmp(busy_run, run->id) == 0)
		return;
	c.sr = taskq_saga_load(run);
	c.task = task;
	c.error = NULL;
	busy_call(run->id, finished_work, &c);
}

/* The run of a child step ended (saga_child.c): as a do that finished. */
void
taskq_saga_child_finished(TaskqRun *run, const TaskqFinished *task, const char *error)
{
	FinishedCall c = {taskq_saga_load(run), task, error};

	busy_call(run->id, finished_work, &c);
}

static void
cancel_work(void *arg)
{
	TaskqSagaRun *sr = arg;

	sr->run->error = "cancelled";
	taskq_saga_switch_to_undo(sr);
	taskq_saga_finish(sr);
}

/* cancel_run of a saga: it compensates, and ends cancelled when undone. */
static const char *
saga_cancel(TaskqRun *run)
{
	TaskqSagaRun *sr;

	if (taskq_run_status_finished(run->status) || run->status == TASKQ_RUN_UNDOING)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run \"%s\" is already %s", run->id,
						taskq_run_status_label(run->status))));
	sr = taskq_saga_load(run);
	busy_call(run->id, cancel_work, sr);
	return taskq_run_status_label(run->status);
}

/* The run's deadline passed (run_timers.c): it undoes as a fatal step makes it. */
static void
deadline_work(void *arg)
{
	TaskqSagaRun *sr = arg;

	sr->run->error = "deadline exceeded";
	taskq_saga_switch_to_undo(sr);
	taskq_saga_finish(sr);
}

void
taskq_saga_deadline(TaskqRun *run)
{
	if (!taskq_run_status_finished(run->status) && run->status != TASKQ_RUN_UNDOING)
		busy_call(run->id, deadline_work, taskq_saga_load(run));
}

static const TaskqWorkflowKind saga_kind = {
	"saga", saga_step_returned, saga_step_finished, saga_cancel
};

void
taskq_saga_init(void)
{
	taskq_workflow_register_kind(&saga_kind);
}

/* ----------
 * The SQL functions' work
 * ----------
 */
int32
taskq_define_saga(const char *name, Jsonb *def, bool given, int32 version)
{
	taskq_check_definition_name(name, "saga", NULL);
	(void) taskq_saga_parse(def, true);
	return taskq_definition_store(name, "saga", def, given, version);
}

/* The step names of a debug setting (fail_at_steps...) must be the saga's. */
static void
check_debug_steps(Jsonb *debug, TaskqSagaDef *d, const char *key)
{
	JsonbValue *map = taskq_json_key(debug, key);
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (map == NULL || map->type != jbvBinary)
		return;
	it = JsonbIteratorInit(map->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *step;

		if (tok != WJB_KEY)
			continue;
		step = pnstrdup(v.val.string.val, v.val.string.len);
		if (taskq_saga_step_index(d, step) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("debug setting \"%s\" names unknown step \"%s\"", key, step)));
	}
}

/*
 * Steps of an earlier run with the same id, deleted by hand (retention and
 * purge_finished delete a run's steps with it; there is no foreign key).
 */
static TaskqPlan stale_steps_plan = {
	"DELETE FROM taskq.saga_steps WHERE run OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static void
start_work(void *arg)
{
	TaskqSagaRun *sr = arg;
	Datum		a;

	taskq_run_insert(sr->run);
	a = CStringGetTextDatum(sr->run->id);
	taskq_execute(&stale_steps_plan, &a, NULL, false, 0);
	make_ready(sr);
	taskq_saga_finish(sr);
}

/* Start a run; a child run (of parent) has an id made by run_child.c. */
char *
taskq_start_saga(const char *saga, const char *id, const char *parent, Jsonb *inputs,
				 Jsonb *debug)
{
	TaskqRun   *run = palloc0(sizeof(TaskqRun));
	TaskqSagaRun *sr;

	if (parent == NULL)
		taskq_check_run_id(id, "id");
	taskq_check_json_object(inputs, "inputs");
	if (debug)
		taskq_check_debug(debug, "saga");
	run->id = pstrdup(id);
	run->kind = "saga";
	run->definition = pstrdup(saga);
	run->def = taskq_definition_latest(saga, "saga", &run->version, &run->def_xmin);
	run->status = TASKQ_RUN_RUNNING;
	run->context = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")));
	run->inputs = inputs;
	run->parent = parent ? pstrdup(parent) : NULL;
	run->debug = debug;
	sr = taskq_saga_new(run);
	if (debug)
	{
		check_debug_steps(debug, sr->d, "fail_at_steps");
		check_debug_steps(debug, sr->d, "undo_fail_at_steps");
	}
	taskq_run_lock(id);
	busy_call(id, start_work, sr);
	return run->id;
}

static void
not_a_step(const char *task_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("task \"%s\" is not a step of a saga", task_id),
			 errhint("return_step takes a task a worker owns for a do or undo of a saga's step.")));
}

static SagaResult
parse_result(const char *result)
{
	for (int r = RESULT_SUCCESS; r <= RESULT_RERUN; r++)
		if (strcmp(result, result_names[r]) == 0)
			return (SagaResult) r;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown step result \"%s\"", result),
			 errhint("A step returns success, retry, fatal, wait or rerun.")));
	return RESULT_FATAL;		/* keep compiler quiet */
}

void
taskq_saga_return_step(const char *task_id, pg_uuid_t *token, const char *result,
					   Jsonb *working, const char *error)
{
	char	   *id;
	StepReturn	r = {0};
	ReturnCall	c;

	r.result = parse_result(result);
	if (working)
		taskq_check_json_object(working, "working");
	id = taskq_run_of_task(task_id);
	if (id == NULL)
		not_a_step(task_id);
	taskq_run_lock(id);
	c.sr = taskq_saga_fetch(id);
	if (c.sr == NULL)
		not_a_step(task_id);
	r.task_id = task_id;
	r.token = token;
	r.working = working;
	r.error = error;
	r.caller = "return_step";
	c.r = &r;
	busy_call(id, return_work, &c);
}

typedef struct ResumeCall
{
	TaskqSagaRun *sr;
	Jsonb	   *working;
} ResumeCall;

static void
resume_work(void *arg)
{
	ResumeCall *c = arg;

	merge_working(c->sr->run, c->working);
	taskq_run_set_status(c->sr->run, TASKQ_RUN_RUNNING);
	make_ready(c->sr);
	taskq_saga_finish(c->sr);
}

void
taskq_saga_resume(const char *id, Jsonb *working)
{
	TaskqRun   *run;
	ResumeCall	c;

	if (working)
		taskq_check_json_object(working, "working");
	run = taskq_run_get(id);
	if (strcmp(run->kind, "saga") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run \"%s\" is a state machine, not a saga", id),
				 errhint("A state machine in a waiting state moves on send_event.")));
	if (run->status != TASKQ_RUN_WAITING)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run \"%s\" is %s, not waiting", id, taskq_run_status_label(run->status))));
	c.sr = taskq_saga_load(run);
	c.working = working;
	busy_call(id, resume_work, &c);
}
