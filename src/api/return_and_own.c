/*-------------------------------------------------------------------------
 *
 * return_and_own.c
 *	  return_and_own: a worker's return of the tasks it held and its claim
 *	  of the next ones, in one call and one transaction.
 *
 * A worker that calls return_tasks and then own_tasks pays two round trips
 * and two transactions per cycle; with one task per claim that overhead is
 * most of the cost of a task.  return_and_own is exactly return_tasks
 * followed by own_tasks in the caller's transaction, through the queue's
 * C API: the returns are all or none, and a failed return claims nothing.
 * The transaction wrote a return, so it commits as the session says
 * (queue/claim_commit.c), which also makes the new claims durable.  Its
 * claim may move the claims' start past dead entries (queue/claim_start.c)
 * even though its transaction wrote the return: every write of that return
 * was noted where the start needs it, which the claim request says.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"

#include "queue/queue.h"
#include "api/api.h"

PG_FUNCTION_INFO_V1(taskq_return_and_own);

/*
 * return_and_own(ids text[], tokens uuid[], statuses text[],
 *				  status_codes taskq.status[], actor text, max_tasks int,
 *				  actions text[], max_duration interval DEFAULT NULL,
 *				  results jsonb[] DEFAULT NULL)
 *	 RETURNS TABLE (id, token, action, body, num_tries, action_deadline,
 *					concurrency_key)
 *
 * The first four arguments and the last are return_tasks', the rest own_tasks'; each
 * part reports bad arguments by the names it shares with this function.
 */
Datum
taskq_return_and_own(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		clean = !TransactionIdIsValid(GetTopTransactionIdIfAny());
	TaskqReturnItem *items;
	int			n;
	TaskqClaimRequest req;

	items = taskq_return_args(fcinfo, 0, 8, &n);
	SPI_connect();
	taskq_return(items, n, "return_tasks()");
	SPI_finish();

	taskq_claim_args(fcinfo, 4, &req);
	req.writes_noted = clean;
	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	(void) taskq_claim(&req, rsinfo->setResult, rsinfo->setDesc);
	SPI_finish();
	return (Datum) 0;
}
