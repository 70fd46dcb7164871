/*-------------------------------------------------------------------------
 *
 * own.c
 *	  SQL faces of the claim path: own_tasks and extend_ownership.  The
 *	  arguments become the queue's TaskqClaimRequest (narrowed to the
 *	  actions the session may handle); the queue (queue/claim.c) claims.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "common/args.h"
#include "queue/queue.h"
#include "api/action_limits.h"
#include "api/api.h"

PG_FUNCTION_INFO_V1(taskq_own_tasks);
PG_FUNCTION_INFO_V1(taskq_extend_ownership);

/* A lease length given by the caller must be positive. */
static void
check_duration(Interval *d, const char *argname)
{
	Interval	zero = {0};

	if (DatumGetBool(DirectFunctionCall2(interval_le, IntervalPGetDatum(d),
										 IntervalPGetDatum(&zero))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be a positive interval", argname),
				 errdetail("It is %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(d))))));
}

/*
 * The arguments of own_tasks (actor, max_tasks, actions, max_duration;
 * from argument first on: return_and_own has them too), checked, as the
 * queue's claim request.  A worker limited to some actions claims only
 * those (action_limits.c).
 */
void
taskq_claim_args(FunctionCallInfo fcinfo, int first, TaskqClaimRequest *req)
{
	memset(req, 0, sizeof(*req));
	req->actor = taskq_text_arg(fcinfo, first, "actor", TASKQ_MAX_ACTOR_LEN);
	taskq_require_arg(fcinfo, first + 1, "max_tasks");
	req->max_tasks = PG_GETARG_INT32(first + 1);
	if (req->max_tasks < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"max_tasks\" must not be negative"),
				 errdetail("It is %d.", req->max_tasks)));
	req->all_actions = PG_ARGISNULL(first + 2);
	if (!req->all_actions)
		req->actions = taskq_text_array_arg(fcinfo, first + 2, "actions",
											TASKQ_MAX_ACTION_LEN);
	if (taskq_acl_limit_actions(&req->actions, req->all_actions))
		req->all_actions = false;
	if (!PG_ARGISNULL(first + 3))
	{
		req->lease = PG_GETARG_INTERVAL_P(first + 3);
		check_duration(req->lease, "max_duration");
	}
}

/*
 * own_tasks(actor text, max_tasks int, actions text[],
 *			 max_duration interval DEFAULT NULL, wait interval DEFAULT NULL)
 *	 RETURNS TABLE (id, token, action, body, num_tries, action_deadline,
 *					concurrency_key)
 *
 * Rows come back in claim order: priority descending, then insertion order.
 * With a positive wait and no ready work, the claim sleeps until work of
 * its actions becomes ready or the wait passes (queue/claim_wait.c); NULL
 * or zero does not wait.
 */
Datum
taskq_own_tasks(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TaskqClaimRequest req;
	Interval   *wait = NULL;

	taskq_claim_args(fcinfo, 0, &req);
	if (PG_NARGS() > 4 && !PG_ARGISNULL(4))
	{
		Interval	zero = {0};

		wait = PG_GETARG_INTERVAL_P(4);
		if (DatumGetBool(DirectFunctionCall2(interval_lt, IntervalPGetDatum(wait),
											 IntervalPGetDatum(&zero))))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"wait\" must not be negative"),
					 errdetail("It is %s.",
							   DatumGetCString(DirectFunctionCall1(interval_out,
																   IntervalPGetDatum(wait))))));
		if (!DatumGetBool(DirectFunctionCall2(interval_gt, IntervalPGetDatum(wait),
											  IntervalPGetDatum(&zero))))
			wait = NULL;		/* zero: no wait */
	}
	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	if (wait == NULL)
		(void) taskq_claim(&req, rsinfo->setResult, rsinfo->setDesc);
	else
	{
		TimestampTz deadline;

		deadline = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
														   TimestampTzGetDatum(GetCurrentTimestamp()),
														   IntervalPGetDatum(wait)));
		(void) taskq_claim_wait(&req, deadline, rsinfo->setResult, rsinfo->setDesc);
	}
	SPI_finish();
	return (Datum) 0;
}

/*
 * extend_ownership(actor text, ids text[], tokens uuid[], max_duration interval)
 *	 RETURNS TABLE (id text, owned boolean)
 *
 * One row per task, in argument order.  A lease is extended while the task
 * is unfinished and still held with this token by this actor; that includes
 * a lease that expired while nobody else owned the task since.
 */
Datum
taskq_extend_ownership(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *actor;
	List	   *ids;
	Datum	   *tokens;
	bool	   *tnulls;
	int			ntokens;
	ListCell   *lc;
	int			i = 0;

	actor = taskq_text_arg(fcinfo, 0, "actor", TASKQ_MAX_ACTOR_LEN);
	ids = taskq_text_array_arg(fcinfo, 1, "ids", TASKQ_MAX_ID_LEN);
	taskq_require_arg(fcinfo, 2, "tokens");
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(2), UUIDOID, UUID_LEN, false,
					  TYPALIGN_CHAR, &tokens, &tnulls, &ntokens);
	if (ntokens != list_length(ids))
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("arrays \"ids\" and \"tokens\" must have the same length"),
				 errdetail("\"ids\" has %d elements and \"tokens\" %d.",
						   list_length(ids), ntokens)));
	for (i = 0; i < ntokens; i++)
		if (tnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"tokens\" must not contain null elements")));
	taskq_require_arg(fcinfo, 3, "max_duration");
	check_duration(PG_GETARG_INTERVAL_P(3), "max_duration");
	taskq_acl_mask_tokens(ids, tokens);	/* action_limits.c: tasks of other actions */

	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	i = 0;
	foreach(lc, ids)
	{
		Datum		out[2];
		bool		outnulls[2] = {false, false};

		out[0] = CStringGetTextDatum(lfirst(lc));
		out[1] = BoolGetDatum(taskq_extend(lfirst(lc), tokens[i++], actor,
										   PG_GETARG_INTERVAL_P(3)));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, outnulls);
	}
	SPI_finish();
	return (Datum) 0;
}
