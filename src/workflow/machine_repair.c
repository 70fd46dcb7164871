/*-------------------------------------------------------------------------
 *
 * machine_repair.c
 *	  State machine runs set going again by hand: redrive_run of a failed
 *	  run (its failed state entered afresh) and migrate_run of a running or
 *	  waiting one to another version of its definition.
 *
 * Each takes the run's lock (taskq_run_get) and changes the run in the
 * calling transaction, as a step's return would: the step in flight (if
 * any) dropped, the state entered, the row written, or none of it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/jsonb.h"

#include "queue/queue.h"
#include "workflow/child.h"
#include "workflow/def_common.h"
#include "workflow/json.h"
#include "workflow/machine_run.h"
#include "workflow/workflow.h"

char *
taskq_machine_redrive(const char *id)
{
	TaskqRun   *run = taskq_machine_run_get(id);
	TaskqMachineRun *mr = taskq_machine_run(run);

	if (run->status != TASKQ_RUN_FAILED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run \"%s\" is %s, not failed", id, taskq_run_status_label(run->status)),
				 errdetail("redrive_run gives a failed state machine another life.")));
	run->error = NULL;
	taskq_run_set_status(run, TASKQ_RUN_RUNNING);
	taskq_machine_enter_state(mr, taskq_machine_current_state(mr), NULL);
	taskq_run_store(run);
	return run->state;
}

char *
taskq_machine_migrate(const char *id, int32 version, Jsonb *state_map)
{
	TaskqRun   *run = taskq_machine_run_get(id);
	TaskqMachineRun *mr;
	char	   *target;
	JsonbValue *mapped;
	int			si;

	if (run->status != TASKQ_RUN_RUNNING && run->status != TASKQ_RUN_WAITING)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run \"%s\" is %s: only a running or waiting run can be migrated",
						id, taskq_run_status_label(run->status))));
	taskq_check_json_object(state_map, "state_map");
	run->def = taskq_definition_version(run->definition, "machine", version, &run->def_xmin);
	run->version = version;		/* the definition the run now names (written below) */
	mapped = taskq_json_key(state_map, run->state);
	target = mapped ? taskq_json_text(mapped) : run->state;
	if (target == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("state_map must map state \"%s\" to a state name", run->state)));
	mr = taskq_machine_run(run);
	si = taskq_machine_state_index(mr->m, target);
	if (si < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("version %d of state machine \"%s\" has no state \"%s\"",
						version, run->definition, target),
				 errhint("Map the run's state to one of that version with state_map.")));
	if (run->step_task)
	{
		TaskqTaskView step;

		if (taskq_task_peek(run->step_task, TASKQ_PEEK_LOCK, &step) &&
			step.code == TASKQ_IN_PROGRESS)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("step \"%s\" of run \"%s\" is owned by a worker", run->step_task, id),
					 errhint("Migrate the run when its step is not in progress.")));
	}
	if (run->fork && taskq_run_is_child_id(run->fork))
		(void) taskq_run_cancel_child(run->id, run->fork);	/* it leaves a child state */
	taskq_machine_drop_step(mr, psprintf("migrated to version %d", version));
	taskq_machine_enter_state(mr, si, NULL);
	taskq_run_store(run);
	return run->state;
}
