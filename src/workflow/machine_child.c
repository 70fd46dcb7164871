/*-------------------------------------------------------------------------
 *
 * machine_child.c
 *	  A machine's child states: entering one starts a child run (its id is
 *	  kept in the run's "fork", the run the visit started); the run stays
 *	  running there, keeps the events sent meanwhile, and moves on
 *	  child_succeeded or child_failed when the child ends, with the child's
 *	  outcome under the context key "child".  Without a child_failed
 *	  transition a child that did not succeed fails the run.
 *
 * Locking: the run's lock is held by every caller (run.c); a child's end
 * comes here from run_child.c, which took the parent's lock before the
 * child's (ancestors first), in the transaction that ended the child.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"

#include "workflow/child.h"
#include "workflow/json.h"
#include "workflow/machine_def.h"
#include "workflow/run.h"

/* The run enters child state s: its child starts with the run's context. */
void
taskq_machine_child_enter(TaskqRun *run, TaskqMachineState *s)
{
	run->fork = taskq_child_start(run, s->child_kind, s->child_name, run->context);
}

/*
 * The child of run (in state s) ended: the outcome goes into the run's
 * context, and *event is the transition to take -- or false: the child is
 * not the run's current one (nothing changes), or it failed and the state
 * has no child_failed (the run failed, its row written).
 */
bool
taskq_machine_child_outcome(TaskqRun *run, TaskqMachineState *s, TaskqRun *child,
							const char **event)
{
	JsonbParseState *st = NULL;
	Jsonb	   *one;
	bool		ok = taskq_child_succeeded(child);

	if (run->status != TASKQ_RUN_RUNNING || s->child_name == NULL ||
		run->fork == NULL || strcmp(run->fork, child->id) != 0)
		return false;
	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	taskq_json_push_jsonb(&st, "child", taskq_child_outcome(child));
	one = JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_OBJECT, NULL));
	run->context = DatumGetJsonbP(DirectFunctionCall2(jsonb_concat,
													  JsonbPGetDatum(run->context),
													  JsonbPGetDatum(one)));
	*event = ok ? "child_succeeded" : "child_failed";
	if (taskq_machine_find_transition(s, *event) != NULL)
		return true;
	run->error = psprintf("state \"%s\": child run \"%s\" %s%s%s", s->name, child->id,
						  taskq_run_status_label(child->status),
						  child->error ? ": " : "", child->error ? child->error : "");
	taskq_run_set_status(run, TASKQ_RUN_FAILED);
	taskq_run_store(run);
	return false;
}

/* child_succeeded and child_failed come from a child's end only. */
void
taskq_machine_check_sent_event(TaskqRun *run, const char *event)
{
	if (strcmp(event, "child_succeeded") == 0 || strcmp(event, "child_failed") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("event \"%s\" cannot be sent to run \"%s\"", event, run->id),
				 errdetail("A child state moves on it when its child run ends.")));
}
