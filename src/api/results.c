/*-------------------------------------------------------------------------
 *
 * results.c
 *	  SQL face of predecessor_results: arguments checked, the caller's
 *	  per-action limits applied as for return_task; the queue
 *	  (queue/results.c) reads the rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "common/args.h"
#include "queue/queue.h"
#include "api/action_limits.h"

PG_FUNCTION_INFO_V1(taskq_predecessor_results);

/*
 * predecessor_results(id text, token uuid)
 *	 RETURNS TABLE (id text, status_code taskq.status, status text, result jsonb)
 */
Datum
taskq_predecessor_results(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	pg_uuid_t  *token;

	taskq_require_arg(fcinfo, 1, "token");
	token = PG_GETARG_UUID_P(1);
	taskq_acl_check_return(list_make1(id));	/* action_limits.c: limited workers */
	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	taskq_read_predecessor_results(id, token, rsinfo->setResult, rsinfo->setDesc);
	SPI_finish();
	return (Datum) 0;
}
