/*-------------------------------------------------------------------------
 *
 * claim_start_trigger.c
 *	  taskq.tasks_written(): the statement triggers through which SQL writes of
 *	  taskq.tasks keep the claims' start right; the rows are read by
 *	  claim_start.c (taskq_claim_start_rows_written).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "queue/queue.h"

/*
 * taskq.tasks_written(): AFTER INSERT, UPDATE and DELETE trigger, for each
 * statement, over its transition tables: a ready old row marks the
 * transaction (its claims then move no start), a ready new row lowers the
 * starts.
 */
PG_FUNCTION_INFO_V1(taskq_tasks_written);

Datum
taskq_tasks_written(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_STATEMENT(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"%s\" must be fired AFTER ... FOR EACH STATEMENT",
						"taskq.tasks_written")));
	taskq_claim_start_rows_written(trigdata->tg_relation, trigdata->tg_oldtable,
								   trigdata->tg_newtable);
	/* held tasks changed: the slot books of limited actions may be told */
	taskq_flow_rows_written(trigdata->tg_relation, trigdata->tg_oldtable);
	/* rows deleted: their attempts go with them */
	if (TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
		taskq_attempts_tasks_deleted(trigdata->tg_relation, trigdata->tg_oldtable);
	return PointerGetDatum(NULL);
}
