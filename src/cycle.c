/*-------------------------------------------------------------------------
 *
 * cycle.c
 *	  return_and_own: a worker's return of the tasks it held and its claim
 *	  of the next ones, in one call and one transaction.
 *
 * A worker that calls return_tasks and then own_tasks pays two round trips
 * and two transactions per cycle; with one task per claim that overhead is
 * most of the cost of a task.  return_and_own is exactly return_tasks
 * followed by own_tasks in the caller's transaction: the returns are all
 * or none, and a failed return claims nothing.  The transaction wrote a
 * return, so it commits as the session says (claim.c), which also makes the
 * new claims durable.  Its claim may move the claims' start past dead
 * entries (hint.c) even though its transaction wrote the return.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "taskq.h"

PG_FUNCTION_INFO_V1(taskq_return_and_own);

static Datum return_then_own(FunctionCallInfo fcinfo);

/*
 * return_and_own(ids text[], tokens uuid[], statuses text[],
 *				  status_codes taskq.status[], actor text, max_tasks int,
 *				  actions text[], max_duration interval DEFAULT NULL)
 *	 RETURNS TABLE (id, token, action, body, num_tries, action_deadline)
 *
 * The first four arguments are return_tasks', the rest own_tasks'; each
 * part reports bad arguments by the names it shares with this function.
 */
Datum
taskq_return_and_own(PG_FUNCTION_ARGS)
{
	Datum		result;

	taskq_hint_cycle(true);
	PG_TRY();
	{
		result = return_then_own(fcinfo);
	}
	PG_FINALLY();
	{
		taskq_hint_cycle(false);
	}
	PG_END_TRY();
	return result;
}

static Datum
return_then_own(FunctionCallInfo fcinfo)
{
	LOCAL_FCINFO(part, 4);

	/* return_tasks(ids, tokens, statuses, status_codes) */
	InitFunctionCallInfoData(*part, NULL, 4, PG_GET_COLLATION(), NULL, NULL);
	for (int i = 0; i < 4; i++)
	{
		part->args[i].value = fcinfo->args[i].value;
		part->args[i].isnull = fcinfo->args[i].isnull;
	}
	(void) taskq_return_tasks(part);

	/*
	 * own_tasks(actor, max_tasks, actions, max_duration), whose rows are this
	 * function's: same result type, same materialized result.
	 */
	InitFunctionCallInfoData(*part, fcinfo->flinfo, 4, PG_GET_COLLATION(),
							 fcinfo->context, fcinfo->resultinfo);
	for (int i = 0; i < 4; i++)
	{
		part->args[i].value = fcinfo->args[4 + i].value;
		part->args[i].isnull = fcinfo->args[4 + i].isnull;
	}
	return taskq_own_tasks(part);
}
