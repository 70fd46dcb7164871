/*-------------------------------------------------------------------------
 *
 * machine.c
 *	  State machines: runs that move from state to state on the events
 *	  their steps return.  Each visit of a state with an action is a task
 *	  "<run id>/<n>"; a waiting state (action null) has no task and moves
 *	  on send_event; a continuation state forks the run for the next
 *	  chunk; a fan-in state batches the instances that enter it within a
 *	  time window into one task.
 *
 * Every change of a run happens here, in the transaction that finishes its
 * step (transition, or a plain return of the step through the seam), with
 * the run's lock held (run.c): the context is replaced, the step completed
 * and the next state's task inserted together, or none of it.  A step that
 * is retried, expires with tries left or is released leaves the run as it
 * was; one that is aborted (given up, out of tries, cancelled) fails the
 * run, through the finished hook.
 *
 * Fan-in: taskq.fan_in_open names the open batch of each fan-in state; a
 * batch is open while its task was never claimed (pending, no try used).
 * An arrival reads the batch task's status without locking its row and
 * joins the batch under a share lock of the open-batch row (arrivals into
 * one state do not take turns: machine_batch.c), or, when the task was
 * claimed, opens a new one.  The batch is closed -- its open-batch row
 * deleted, which waits for the share locks -- before anything reads or
 * ends its instances (fan_in_contexts, its transition, a release, a
 * restart or an abort): the close waits for the arrivals in flight, so the
 * instances read afterwards are all there will ever be.  An arrival racing
 * with the claim may still join (its worker reads it with the rest); every
 * instance is in exactly one batch.  Arrivals never lock the batch task's
 * row: a claim is not kept waiting (claims skip locked rows) while
 * instances keep arriving, and an arrival waits for nothing a closer holds
 * (the closer holds the task's row and waits for the arrivals' locks).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "common/plan.h"
#include "ipc/wakeup.h"
#include "queue/queue.h"
#include "workflow/child.h"
#include "workflow/debug.h"
#include "workflow/def_common.h"
#include "workflow/json.h"
#include "workflow/machine_batch.h"
#include "workflow/machine_def.h"
#include "workflow/machine_map.h"
#include "workflow/machine_run.h"
#include "workflow/run.h"
#include "workflow/seam.h"
#include "workflow/timers.h"
#include "workflow/workflow.h"

static void enter_by(TaskqMachineRun *mr, TaskqMachineTransition *t);

static void *
parse_machine(Jsonb *def)
{
	return taskq_machine_parse(def, false);
}

TaskqMachineRun *
taskq_machine_run(TaskqRun *run)
{
	TaskqMachineRun *mr = palloc(sizeof(TaskqMachineRun));

	mr->run = run;
	mr->m = taskq_definition_parsed(run, parse_machine);
	mr->after = NULL;
	return mr;
}

int
taskq_machine_current_state(TaskqMachineRun *mr)
{
	int			si = mr->run->state ? taskq_machine_state_index(mr->m, mr->run->state) : -1;

	/* only a hand-edited row of taskq.runs or taskq.definitions gets here */
	if (si < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run \"%s\" is in state \"%s\", which version %d of state machine \"%s\" does not have",
						mr->run->id, mr->run->state ? mr->run->state : "(none)",
						mr->run->version, mr->run->definition),
				 errhint("Move the run to a state of a version with migrate_run.")));
	return si;
}

static void
not_a_step(const char *task_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("task \"%s\" is not the current step of a state machine", task_id),
			 errhint("transition, continue_machine and fan_in_contexts take the task a worker owns for a state of a running machine.")));
}



/* ----------
 * JSON building
 * ----------
 */



/* The body of a step task of state s. */
static Jsonb *
step_body(TaskqMachineRun *mr, TaskqMachineState *s, const char *cursor, bool fan_in)
{
	JsonbParseState *st = NULL;
	JsonbValue	v;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	taskq_json_push_text(&st, "run", mr->run->id);
	taskq_json_push_text(&st, "machine", mr->run->definition);
	taskq_json_push_key(&st, "version");
	v.type = jbvNumeric;
	v.val.numeric = DatumGetNumeric(DirectFunctionCall1(int4_numeric,
														Int32GetDatum(mr->run->version)));
	pushJsonbValue(&st, WJB_VALUE, &v);
	taskq_json_push_text(&st, "state", s->name);
	taskq_json_push_jsonb(&st, "context", mr->run->context);
	if (s->continuation)
		taskq_json_push_text(&st, "cursor", cursor);
	if (fan_in)
	{
		taskq_json_push_key(&st, "fan_in");
		v.type = jbvBool;
		v.val.boolean = true;
		pushJsonbValue(&st, WJB_VALUE, &v);
	}
	return JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_OBJECT, NULL));
}

/* ----------
 * Steps
 * ----------
 */

/* Insert the task of a visit of state si (a fan-in batch: ready later). */
static char *
insert_step(TaskqMachineRun *mr, int si, const char *cursor, bool fan_in)
{
	TaskqMachineState *s = &mr->m->states[si];
	TaskqTaskSpec *spec = palloc0(sizeof(TaskqTaskSpec));

	spec->index = 1;
	spec->id = taskq_run_next_task_id(mr->run);
	spec->action = s->action;
	spec->body = step_body(mr, s, cursor, fan_in);
	if (s->has_max_tries || mr->m->has_max_tries)
	{
		spec->has_max_tries = true;
		spec->max_tries = s->has_max_tries ? s->max_tries : mr->m->max_tries;
	}
	spec->retry = s->retry ? s->retry : mr->m->retry;
	spec->priority = s->priority;
	spec->workflow = mr->run->id;
	spec->post_result = true;	/* kept with retention 0 while the run lives */
	if (fan_in)
	{
		spec->has_not_before = true;
		spec->not_before = GetCurrentTimestamp() + (TimestampTz) (s->fan_in * USECS_PER_SEC);
	}
	else if (mr->after)
	{
		spec->has_not_before = true;
		spec->not_before = taskq_machine_after_time(mr->after);
	}
	(void) taskq_insert(list_make1(spec), TASKQ_INSERT_PLAIN, NIL, NIL, NULL);
	return spec->id;
}





/*
 * The instance enters fan-in state si: it joins the open batch or opens one.
 * The batch task's row is read, not locked (see the banner).
 */
static void
join_fan_in(TaskqMachineRun *mr, int si)
{
	const char *state = mr->m->states[si].name;
	char	   *batch = taskq_batch_open(mr->run->definition, mr->run->version, state);

	if (batch == NULL)
	{
		batch = insert_step(mr, si, NULL, true);
		taskq_batch_set_open(mr->run->definition, mr->run->version, state, batch);
	}
	taskq_batch_join(batch, mr->run->id);
	mr->run->step_task = batch;
}


/*
 * The run enters state si: a waiting state takes a kept event or waits; a
 * fan-in state joins a batch; any other gets a task of its own.
 */
void
taskq_machine_enter_state(TaskqMachineRun *mr, int si, const char *cursor)
{
	TaskqMachineState *s = &mr->m->states[si];
	TaskqRun   *run = mr->run;

	run->state = s->name;
	run->fork = NULL;
	run->step_task = NULL;
	if (s->child_name)
	{
		taskq_run_set_status(run, TASKQ_RUN_RUNNING);
		taskq_machine_child_enter(run, s);	/* machine_child.c */
		return;
	}
	if (s->action == NULL && s->map_action == NULL)
	{
		char	   *event;
		Jsonb	   *context;

		if (taskq_machine_take_kept_event(mr->run, s, &event, &context))
		{
			if (context)
				run->context = context;
			enter_by(mr, taskq_machine_find_transition(s, event));
			return;
		}
		taskq_run_set_status(run, TASKQ_RUN_WAITING);
		if (s->timeout)
			taskq_machine_timeout_set(run, s);
		return;
	}
	taskq_run_set_status(run, TASKQ_RUN_RUNNING);
	if (s->map_action != NULL)
	{
		if (taskq_map_enter(run, mr->m, s) == TASKQ_MAP_EMPTY)
			enter_by(mr, taskq_machine_find_transition(s, TASKQ_MAP_MAPPED));
		return;
	}
	if (s->fan_in > 0)
		join_fan_in(mr, si);
	else
		run->step_task = insert_step(mr, si, cursor, false);
}

/* The run takes transition t: its "after" delays the next state's task. */
static void
enter_by(TaskqMachineRun *mr, TaskqMachineTransition *t)
{
	mr->after = t->after;
	taskq_machine_enter_state(mr, t->to_index, NULL);
	mr->after = NULL;
}

/*
 * A transition of a step that is no longer the run's current one: a
 * worker repeating it after a lost acknowledgement (the queue checks the
 * token and the outcome; a repeat is a no-op), answered as the first was.
 */
static char *
repeated_transition(TaskqMachineRun *mr, const char *task_id, pg_uuid_t *token,
					const char *event, bool *isnull)
{
	TaskqTaskView task;
	char	   *status;
	char	   *state;
	int			si;
	TaskqMachineTransition *t;

	taskq_step_return(task_id, token, event, TASKQ_COMPLETED, NULL, "transition");
	*isnull = true;
	/* was the step's task (a finished one) completed with this event? */
	if (!taskq_task_peek(task_id, TASKQ_PEEK_BODY, &task))
		return NULL;
	if (task.code == TASKQ_ABORTED)
		return NULL;			/* aborted: cancelled while owned, or failed */
	status = task.status;
	state = taskq_json_text(taskq_json_key(task.body, "state"));
	if (taskq_json_key(task.body, "index"))
		taskq_map_refuse_item(mr->run, state, task_id, "transition");	/* a finished item */
	if ((status == NULL) != (event == NULL) || (event && strcmp(status, event) != 0))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("step \"%s\" of run \"%s\" already made transition \"%s\"",
						task_id, mr->run->id, status ? status : "(end)"),
				 errdetail("A transition repeated with the same token and event succeeds; another event does not.")));
	si = state ? taskq_machine_state_index(mr->m, state) : -1;
	if (event == NULL || si < 0 || (t = taskq_machine_find_transition(&mr->m->states[si], event)) == NULL)
		return NULL;
	*isnull = false;
	return t->to;
}

/*
 * Move the run of a finished step on: the batch's other instances merged,
 * the context replaced, the next state entered (or the run ended).
 */
static char *
move_on(TaskqMachineRun *mr, const char *event, Jsonb *context, bool *isnull)
{
	TaskqRun   *run = mr->run;
	TaskqMachineState *s = &mr->m->states[taskq_machine_current_state(mr)];

	if (context)
		run->context = context;
	if (event == NULL)
	{
		taskq_run_set_status(run, TASKQ_RUN_SUCCEEDED);
		run->step_task = NULL;
		taskq_run_store(run);
		*isnull = true;
		return NULL;
	}
	enter_by(mr, taskq_machine_find_transition(s, event));
	taskq_run_store(run);
	*isnull = false;
	return run->state;
}

/* The child of a run in a child state ended (machine_child.c). */
void
taskq_machine_child_ended(TaskqRun *run, TaskqRun *child)
{
	TaskqMachineRun *mr = taskq_machine_run(run);
	const char *event;
	bool		isnull;

	if (taskq_machine_child_outcome(run, &mr->m->states[taskq_machine_current_state(mr)], child, &event))
		(void) move_on(mr, event, NULL, &isnull);
}

/* The event a step returns must be one of its state's (NULL: final). */
static void
check_event(TaskqMachineRun *mr, TaskqMachineState *s, const char *event, const char *task_id)
{
	if (event == NULL && !s->final)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("state \"%s\" of run \"%s\" is not final: its step \"%s\" must name an event",
						s->name, mr->run->id, task_id)));
	if (event != NULL && taskq_machine_find_transition(s, event) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("state \"%s\" has no transition on event \"%s\"", s->name, event),
				 errdetail("Step \"%s\" of run \"%s\" is still owned.", task_id, mr->run->id)));
}

/*
 * The step task_id of the (locked) run finished successfully with event
 * and context (NULL keeps it): transition, or a plain return "completed".
 * Returns the state the run is in next, NULL (*isnull) when it ended.
 */
static char *
machine_step(TaskqRun *run, const char *task_id, pg_uuid_t *token,
			 const char *event, Jsonb *context, const char *caller, bool *isnull)
{
	TaskqMachineRun *mr = taskq_machine_run(run);
	TaskqMachineState *s;
	TaskqHeld	held;
	char	   *fault;
	List	   *members = NIL;

	*isnull = true;
	if (context)
		taskq_check_json_object(context, "context");
	if (taskq_map_is_item(run, mr->m, task_id))
		taskq_map_refuse_item(run, run->state, task_id, caller);
	if (run->step_task == NULL || strcmp(run->step_task, task_id) != 0)
	{
		members = taskq_batch_members(task_id);
		if (members == NIL)
			return repeated_transition(mr, task_id, token, event, isnull);
		if (strcmp(linitial(members), run->id) != 0)
		{
			/*
			 * A batch whose first instance (the task's workflow) was
			 * cancelled: the first instance left in it goes on.
			 */
			run = taskq_run_get(linitial(members));
			mr = taskq_machine_run(run);
		}
	}
	if (members != NIL ||
		(run->status == TASKQ_RUN_RUNNING && mr->m->states[taskq_machine_current_state(mr)].fan_in > 0))
	{
		/* a batch: closed before its instances are read (see the banner) */
		taskq_batch_close(task_id);
		members = taskq_batch_members(task_id);
		if (members != NIL && strcmp(linitial(members), run->id) != 0)
		{
			/*
			 * The run that opened the batch left it (cancel_run): the first
			 * instance still in it goes on in its place.
			 */
			run = taskq_run_get(linitial(members));
			mr = taskq_machine_run(run);
		}
	}
	if (taskq_run_status_finished(run->status) || run->status == TASKQ_RUN_WAITING)
	{
		/* cancelled while owned (the queue aborts it) or a repeat */
		taskq_step_return(task_id, token, event, TASKQ_COMPLETED, NULL, caller);
		return NULL;
	}
	s = &mr->m->states[taskq_machine_current_state(mr)];
	check_event(mr, s, event, task_id);

	/*
	 * The current step of a running run is unfinished: its completion (the
	 * queue's, below) checks the token, and a stale one fails the call
	 * before it commits anything.  The task is locked and checked first only
	 * where work done before the completion depends on the task: a batch,
	 * and fault injection.
	 */
	if (members != NIL || s->fan_in > 0 || run->debug != NULL)
	{
		taskq_lock_held_task(task_id, token, &held);
		if (taskq_status_finished(held.code))
		{
			taskq_step_return(task_id, token, event, TASKQ_COMPLETED, NULL, caller);
			return NULL;
		}
	}

	/* fault injection: the first successful finish is discarded or failed */
	if (taskq_run_debug_flag(run, "restart_each_step") &&
		!taskq_run_fault_done(run, "restart", task_id))
	{
		TaskqMachineTransition *t = event ? taskq_machine_find_transition(s, event) : NULL;

		taskq_run_fault_mark(run, "restart", task_id);
		taskq_run_store(run);
		taskq_batch_close(task_id);
		taskq_step_release(task_id, token);
		*isnull = (t == NULL);
		return t ? t->to : NULL;
	}
	fault = taskq_run_debug_fault(run, "fail_at_steps", s->name);
	if (fault && !taskq_run_fault_done(run, "fail_at_steps", s->name))
	{
		taskq_run_fault_mark(run, "fail_at_steps", s->name);
		taskq_run_store(run);
		taskq_step_return(task_id, token, psprintf("%s: injected by fail_at_steps", fault),
					 strcmp(fault, "fatal") == 0 ? TASKQ_ABORTED : TASKQ_PENDING, NULL, caller);
		return NULL;
	}

	taskq_step_return(task_id, token, event, TASKQ_COMPLETED, NULL, caller);

	if (members != NIL || s->fan_in > 0)
	{
		/* a batch: its first instance goes on, the others are merged */
		if (members == NIL)
			members = taskq_batch_members(task_id);
		taskq_batch_end_members(list_delete_first(members), "merged", NULL);
		taskq_batch_forget(task_id);
	}
	return move_on(mr, event, context, isnull);
}

/* ----------
 * The kind's hooks (seam.c)
 * ----------
 */

/*
 * A worker returns a step through the queue's return functions: a
 * completion is the transition on its status text; the rest is the
 * queue's (the finished hook sees an abort).  A release closes a batch.
 */
static bool
machine_step_returned(TaskqRun *run, TaskqReturnItem *item, bool release)
{
	bool		isnull;

	if (taskq_map_is_item(run, taskq_machine_run(run)->m, item->id))
		return false;			/* a map's item: a plain task */
	if (release)
	{
		taskq_batch_close(item->id);	/* a released batch stays closed */
		return false;
	}
	if (item->code != TASKQ_COMPLETED)
		return false;
	(void) machine_step(run, item->id, item->token, item->status, NULL, "return_task", &isnull);
	return true;
}

/*
 * A step ended aborted (given up, out of tries, lease expired on the last
 * try, cancelled): the run fails, and with a batch every instance in it.
 */
static void
machine_step_finished(TaskqRun *run, const TaskqFinished *task)
{
	List	   *members;
	TaskqTaskView view;
	char	   *error = NULL;
	TaskqMachineRun *mr = taskq_machine_run(run);

	if (taskq_map_is_join(run, mr->m, task->id))
	{
		/* a map's last item finished: the run moves (or fails) */
		bool		was = taskq_map_soft_entry(true);
		const char *event = taskq_map_gather(run, &mr->m->states[taskq_machine_current_state(mr)]);
		bool		isnull;

		if (event)
			(void) move_on(mr, event, NULL, &isnull);
		taskq_run_store(run);
		(void) taskq_map_soft_entry(was);
		return;
	}
	if (task->outcome != TASKQ_ABORTED)
		return;
	if (taskq_task_peek(task->id, 0, &view))
		error = view.status;
	if (error == NULL)
		error = "aborted";
	taskq_batch_close(task->id);		/* if it is a batch: its instances are final */
	members = taskq_batch_members(task->id);
	if (members != NIL)
	{
		taskq_batch_end_members(members, "failed", error);
		taskq_batch_forget(task->id);
		return;
	}
	if (run->status != TASKQ_RUN_RUNNING || run->step_task == NULL ||
		strcmp(run->step_task, task->id) != 0)
		return;
	run->error = psprintf("state \"%s\": %s", run->state, error);
	taskq_run_set_status(run, TASKQ_RUN_FAILED);
	taskq_run_store(run);
}

static TaskqPlan forks_plan = {
	"SELECT id FROM taskq.runs WHERE parent OPERATOR(pg_catalog.=) $1"
	"   AND finished_at IS NULL ORDER BY id",
	1, {TEXTOID}
};


/*
 * Take the run out of its step: leave its fan-in batch (the batch's task
 * is cancelled when nobody is left in it) or cancel its task.  The run's
 * step_task is cleared first, so the finished hook leaves it be.
 */
void
taskq_machine_drop_step(TaskqMachineRun *mr, const char *why)
{
	TaskqRun   *run = mr->run;
	char	   *task = run->step_task;
	List	   *items = taskq_map_unfinished(run, mr->m);	/* with the join */
	char	   *batch;
	bool		last;

	if (task == NULL)
		return;
	run->step_task = NULL;
	taskq_run_store(run);
	batch = taskq_batch_leave(run->id, &last);
	if (batch)
	{
		if (!last)
			return;				/* others are still in the batch */
		/* closed first: an arrival in flight may still have joined it */
		taskq_batch_close(batch);
		if (taskq_batch_members(batch) != NIL)
			return;
		taskq_batch_forget(batch);
		task = batch;
	}
	(void) taskq_cancel_ids(items ? items : list_make1(task), (char *) why);
}

static const char *
machine_cancel(TaskqRun *run)
{
	TaskqMachineRun *mr = taskq_machine_run(run);
	Datum		a = CStringGetTextDatum(run->id);
	List	   *forks = NIL;
	ListCell   *lc;

	if (taskq_run_status_finished(run->status))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run \"%s\" is already %s", run->id,
						taskq_run_status_label(run->status))));
	taskq_run_set_status(run, TASKQ_RUN_CANCELLED);
	taskq_run_store(run);
	taskq_machine_drop_step(mr, "cancelled");

	taskq_execute(&forks_plan, &a, NULL, false, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
		forks = lappend(forks, taskq_get_text(i, 1, NULL));
	foreach(lc, forks)
	{
		TaskqRun   *fork = taskq_run_is_child_id(lfirst(lc)) ? NULL : taskq_run_get(lfirst(lc));

		if (fork && !taskq_run_status_finished(fork->status))	/* children: run_child.c */
			(void) machine_cancel(fork);
	}
	return "cancelled";
}

/* The run's deadline passed (run_timers.c): it fails, its step cancelled. */
void
taskq_machine_deadline(TaskqRun *run)
{
	run->error = "deadline exceeded";
	taskq_run_set_status(run, TASKQ_RUN_FAILED);
	taskq_run_store(run);
	taskq_machine_drop_step(taskq_machine_run(run), "deadline exceeded");
}

static const TaskqWorkflowKind machine_kind = {
	"machine", machine_step_returned, machine_step_finished, machine_cancel
};

void
taskq_machine_init(void)
{
	taskq_workflow_register_kind(&machine_kind);
}

/* ----------
 * The SQL functions' work
 * ----------
 */

/* The (locked) machine run of a step task, or 55000. */
static TaskqRun *
run_of_step(const char *task_id)
{
	char	   *id = taskq_run_of_task(task_id);
	TaskqRun   *run;

	if (id == NULL)
		not_a_step(task_id);
	taskq_run_lock(id);
	run = taskq_run_fetch(id);
	if (run == NULL || strcmp(run->kind, "machine") != 0)
		not_a_step(task_id);
	return run;
}

TaskqRun *
taskq_machine_run_get(const char *id)
{
	TaskqRun   *run = taskq_run_get(id);

	if (strcmp(run->kind, "machine") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run \"%s\" is a saga, not a state machine", id)));
	return run;
}

int32
taskq_define_machine(const char *name, Jsonb *def, bool given, int32 version)
{
	taskq_check_definition_name(name, "machine", NULL);
	(void) taskq_machine_parse(def, true);
	return taskq_definition_store(name, "machine", def, given, version);
}

/* Start a run; a child run (of parent) has an id made by run_child.c. */
char *
taskq_start_machine(const char *machine, const char *id, const char *parent,
					Jsonb *context, Jsonb *debug)
{
	TaskqRun   *run = palloc0(sizeof(TaskqRun));
	TaskqMachineRun *mr;

	if (parent == NULL)
		taskq_check_run_id(id, "id");
	taskq_check_json_object(context, "context");
	if (debug)
		taskq_check_debug(debug, "machine");
	run->id = pstrdup(id);
	run->kind = "machine";
	run->definition = pstrdup(machine);
	run->def = taskq_definition_latest(machine, "machine", &run->version, &run->def_xmin);
	run->status = TASKQ_RUN_RUNNING;
	run->context = context;
	run->parent = parent ? pstrdup(parent) : NULL;
	run->debug = debug;
	mr = taskq_machine_run(run);
	run->state = mr->m->states[mr->m->initial].name;
	taskq_run_lock(id);
	taskq_run_insert(run);
	taskq_machine_enter_state(mr, mr->m->initial, NULL);
	taskq_run_store(run);
	return run->id;
}

char *
taskq_machine_transition(const char *task_id, pg_uuid_t *token, const char *event,
						 Jsonb *context, bool *isnull)
{
	return machine_step(run_of_step(task_id), task_id, token, event, context,
						"transition", isnull);
}

/* The held current step of a running machine (for continue, fan_in). */
static TaskqMachineRun *
held_current_step(const char *task_id, pg_uuid_t *token)
{
	TaskqRun   *run = run_of_step(task_id);
	TaskqMachineRun *mr = taskq_machine_run(run);
	TaskqHeld	held;
	List	   *members = NIL;

	if (run->step_task == NULL || strcmp(run->step_task, task_id) != 0)
	{
		members = taskq_batch_members(task_id);
		if (members == NIL)
			not_a_step(task_id);
	}
	if (members != NIL ||
		(run->status == TASKQ_RUN_RUNNING && mr->m->states[taskq_machine_current_state(mr)].fan_in > 0))
		taskq_batch_close(task_id);	/* a batch: closed before it is read (banner) */
	taskq_lock_held_task(task_id, token, &held);
	if (taskq_status_finished(held.code))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("step \"%s\" of run \"%s\" is already %s", task_id, run->id,
						taskq_status_label(held.code))));
	return mr;
}

static TaskqPlan fork_seq_plan = {
	"SELECT pg_catalog.nextval('taskq.fork_seq'::pg_catalog.regclass)", 0, {0}
};

char *
taskq_machine_continue(const char *task_id, pg_uuid_t *token, const char *cursor,
					   bool *isnull)
{
	TaskqMachineRun *mr = held_current_step(task_id, token);
	TaskqRun   *run = mr->run;
	TaskqMachineState *s = &mr->m->states[taskq_machine_current_state(mr)];
	TaskqRun   *fork;
	TaskqMachineRun *fmr;
	bool		n;

	*isnull = true;
	if (!s->continuation)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("state \"%s\" of run \"%s\" is not a continuation state", s->name, run->id)));
	if (run->fork)
	{
		*isnull = false;
		return run->fork;
	}
	if (cursor == NULL)
		return NULL;

	taskq_execute(&fork_seq_plan, NULL, NULL, false, 0);
	fork = palloc0(sizeof(TaskqRun));
	fork->id = psprintf("%s/c%s", taskq_run_root(run->id),
						DatumGetCString(DirectFunctionCall1(int8out, taskq_get_datum(0, 1, &n))));
	fork->kind = "machine";
	fork->definition = run->definition;
	fork->version = run->version;
	fork->def = run->def;
	fork->def_xmin = run->def_xmin;
	fork->status = TASKQ_RUN_RUNNING;
	fork->state = s->name;
	fork->context = run->context;
	fork->parent = run->id;
	fork->debug = run->debug;
	taskq_run_lock(fork->id);
	taskq_run_insert(fork);
	fmr = taskq_machine_run(fork);
	fork->step_task = insert_step(fmr, taskq_machine_current_state(fmr), cursor, false);
	taskq_run_store(fork);

	run->fork = fork->id;
	taskq_run_store(run);
	*isnull = false;
	return fork->id;
}


/* The instances of a held fan-in batch, in arrival order, into out. */
void
taskq_machine_fan_in_contexts(const char *task_id, pg_uuid_t *token,
							  Tuplestorestate *out, TupleDesc desc)
{
	TaskqMachineRun *mr = held_current_step(task_id, token);
	TaskqMachineState *s = &mr->m->states[taskq_machine_current_state(mr)];

	if (s->fan_in <= 0 && taskq_batch_members(task_id) == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("step \"%s\" of run \"%s\" is not a fan-in batch", task_id, mr->run->id)));
	taskq_batch_contexts(task_id, out, desc);
}



char *
taskq_machine_send_event(const char *id, const char *event, Jsonb *context, bool *isnull)
{
	TaskqRun   *run = taskq_machine_run_get(id);
	TaskqMachineRun *mr = taskq_machine_run(run);

	*isnull = true;
	if (context)
		taskq_check_json_object(context, "context");
	taskq_machine_check_sent_event(run, event);
	if (taskq_run_status_finished(run->status))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run \"%s\" is already %s", id, taskq_run_status_label(run->status))));
	taskq_map_check_event(mr->m, event);
	if (!taskq_machine_waiting_event(mr->m, event))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("no waiting state of state machine \"%s\" has a transition on event \"%s\"",
						run->definition, event)));
	if (run->status == TASKQ_RUN_WAITING)
	{
		TaskqMachineState *s = &mr->m->states[taskq_machine_current_state(mr)];
		TaskqMachineTransition *t = taskq_machine_find_transition(s, event);

		if (t)
		{
			if (context)
				run->context = context;
			enter_by(mr, t);
			taskq_run_store(run);
			*isnull = false;
			return run->state;
		}
	}
	taskq_machine_keep_event(run, event, context);
	taskq_run_store(run);
	return NULL;
}
