/*-------------------------------------------------------------------------
 *
 * claim_start_trigger.c
 *	  taskq.tasks_written(): the statement triggers through which SQL writes of
 *	  taskq.tasks keep the claims' start right (claim_start.c).
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

#include "queue/claim_start.h"
#include "queue/queue.h"
#include "queue/tasks_rel.h"

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
	TupleDesc	desc;
	TupleTableSlot *slot;
	TaskqReadyCols c;
	TaskqReadyBatch b;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_STATEMENT(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"%s\" must be fired AFTER ... FOR EACH STATEMENT",
						"taskq.tasks_written")));
	if (!taskq_claim_start_available())
		return PointerGetDatum(NULL);

	desc = RelationGetDescr(trigdata->tg_relation);
	if (!taskq_ready_cols(desc, &c))
	{
		/* not the table the claims walk: forget every start, to be safe */
		taskq_claim_start_reset(MyDatabaseId);
		return PointerGetDatum(NULL);
	}

	slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	if (trigdata->tg_oldtable != NULL && !taskq_claim_start_ready_changed_here())
	{
		tuplestore_rescan(trigdata->tg_oldtable);
		while (tuplestore_gettupleslot(trigdata->tg_oldtable, true, false, slot))
			if (taskq_row_ready(slot, &c))
			{
				taskq_claim_start_ready_changed();
				break;
			}
	}

	taskq_ready_batch_init(&b);
	if (trigdata->tg_newtable != NULL)
	{
		tuplestore_rescan(trigdata->tg_newtable);
		while (tuplestore_gettupleslot(trigdata->tg_newtable, true, false, slot))
			taskq_ready_batch_note(&b, slot, &c);
	}
	ExecDropSingleTupleTableSlot(slot);
	taskq_ready_batch_flush(&b);
	return PointerGetDatum(NULL);
}
