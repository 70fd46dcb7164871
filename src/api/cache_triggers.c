/*-------------------------------------------------------------------------
 *
 * cache_triggers.c
 *	  The triggers through which a write of one of taskq's settings tables
 *	  reaches what every session keeps of it: taskq._action_grants_changed()
 *	  on taskq.action_grants (the per-action limits of workers,
 *	  action_limits.c) and taskq.action_policies_written() on
 *	  taskq.action_policies (the actions' default max_tries,
 *	  queue/action_policy.c), and taskq.flow_limits_written() on
 *	  taskq.flow_limits (which actions have concurrency limits,
 *	  queue/flow_limits.c).
 *
 * Each table has a row trigger and a TRUNCATE trigger, enabled ALWAYS: a
 * statement trigger would not fire in logical replication's apply worker,
 * nor an ordinary one under session_replication_role = replica.  Each
 * sends a relcache invalidation of its table, which the sessions'
 * relcache callbacks turn into dropping what they kept: other sessions when
 * the writing transaction commits, this one at its next command (and again
 * if the transaction rolls back).  No locking of its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/rel.h"

#include "common/direct_write.h"
#include "ipc/wakeup.h"
#include "queue/queue.h"

PG_FUNCTION_INFO_V1(taskq_action_grants_changed);
PG_FUNCTION_INFO_V1(taskq_action_policies_written);
PG_FUNCTION_INFO_V1(taskq_flow_limits_written);

/* The trigger's table changed: every session drops what it kept of it. */
static Datum
table_written(FunctionCallInfo fcinfo, const char *name)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s must be called as a trigger", name)));
	CacheInvalidateRelcache(trigdata->tg_relation);
	return PointerGetDatum(NULL);
}

/*
 * taskq._action_grants_changed(): on taskq.action_grants, for each row
 * inserted, updated or deleted, and for each TRUNCATE.
 */
Datum
taskq_action_grants_changed(PG_FUNCTION_ARGS)
{
	return table_written(fcinfo, "taskq._action_grants_changed()");
}

/*
 * taskq.action_policies_written(): on taskq.action_policies, for each row
 * inserted, updated or deleted, and for each TRUNCATE.
 */
Datum
taskq_action_policies_written(PG_FUNCTION_ARGS)
{
	return table_written(fcinfo, "taskq.action_policies_written()");
}

/* The action of a row of taskq.flow_limits: its claims waiting may find room now. */
static void
wake_action(Relation rel, HeapTuple tuple)
{
	AttrNumber	att = taskq_column(RelationGetDescr(rel), "action");
	bool		isnull;
	Datum		d;

	if (tuple == NULL || att == InvalidAttrNumber)
		return;
	d = heap_getattr(tuple, att, RelationGetDescr(rel), &isnull);
	if (!isnull)
		taskq_note_ready(TextDatumGetCString(d));
}

/*
 * taskq.flow_limits_written(): on taskq.flow_limits, for each row
 * inserted, updated or deleted, and for each TRUNCATE.  A row's action is
 * also announced when the writing transaction commits, as work made ready:
 * a limit raised or removed lets its waiting claims look again at once.
 */
Datum
taskq_flow_limits_written(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (CALLED_AS_TRIGGER(fcinfo))
		taskq_books_limits_written();	/* kept limits are out of date at the commit */
	if (CALLED_AS_TRIGGER(fcinfo) && TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
	{
		wake_action(trigdata->tg_relation, trigdata->tg_trigtuple);
		if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
			wake_action(trigdata->tg_relation, trigdata->tg_newtuple);
	}
	return table_written(fcinfo, "taskq.flow_limits_written()");
}
