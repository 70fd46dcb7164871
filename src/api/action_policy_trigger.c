/*-------------------------------------------------------------------------
 *
 * action_policy_trigger.c
 *	  taskq.action_policies_written(): the triggers through which every
 *	  write of taskq.action_policies drops the actions' default max_tries
 *	  that sessions kept (queue/action_policy.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/trigger.h"
#include "fmgr.h"

#include "queue/queue.h"

/*
 * taskq.action_policies_written(): AFTER trigger for each row inserted,
 * updated or deleted, and for each TRUNCATE.
 */
PG_FUNCTION_INFO_V1(taskq_action_policies_written);

Datum
taskq_action_policies_written(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("taskq.action_policies_written() must be called as a trigger")));
	taskq_forget_action_policies(trigdata->tg_relation);
	return PointerGetDatum(NULL);
}
