/*-------------------------------------------------------------------------
 *
 * sagas.c
 *	  SQL faces of sagas: define_saga, start_saga, return_step and
 *	  resume_run.  The workflow layer (workflow/saga.c) does the work.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "common/args.h"
#include "workflow/workflow.h"
#include "api/action_limits.h"
#include "api/api.h"

PG_FUNCTION_INFO_V1(taskq_define_saga_sql);
PG_FUNCTION_INFO_V1(taskq_start_saga_sql);
PG_FUNCTION_INFO_V1(taskq_return_step);
PG_FUNCTION_INFO_V1(taskq_resume_run);

#define MAX_NAME_ARG 63


/*
 * define_saga(name text, definition jsonb, version int DEFAULT NULL)
 * returns int
 */
Datum
taskq_define_saga_sql(PG_FUNCTION_ARGS)
{
	char	   *name = taskq_text_arg(fcinfo, 0, "name", MAX_NAME_ARG);
	bool		given = PG_NARGS() > 2 && !PG_ARGISNULL(2);
	int32		version;

	taskq_require_arg(fcinfo, 1, "definition");
	SPI_connect();
	version = taskq_define_saga(name, PG_GETARG_JSONB_P(1), given,
								given ? PG_GETARG_INT32(2) : 0);
	SPI_finish();
	PG_RETURN_INT32(version);
}

/*
 * start_saga(saga text, id text, inputs jsonb DEFAULT '{}',
 *			  debug jsonb DEFAULT NULL, deadline interval DEFAULT NULL)
 *			  returns text
 */
Datum
taskq_start_saga_sql(PG_FUNCTION_ARGS)
{
	char	   *saga = taskq_text_arg(fcinfo, 0, "saga", MAX_NAME_ARG);
	char	   *id = taskq_text_arg(fcinfo, 1, "id", TASKQ_MAX_ID_LEN);
	Jsonb	   *debug = taskq_jsonb_arg(fcinfo, 3);

	taskq_require_arg(fcinfo, 2, "inputs");
	if (debug)
		taskq_check_debug_allowed();
	SPI_connect();
	(void) taskq_start_saga(saga, id, NULL, PG_GETARG_JSONB_P(2), debug);
	if (PG_NARGS() > 4 && !PG_ARGISNULL(4))
		taskq_run_set_deadline(id, PG_GETARG_INTERVAL_P(4));
	SPI_finish();
	PG_RETURN_TEXT_P(cstring_to_text(id));
}

/*
 * return_step(id text, token uuid, result text, working jsonb DEFAULT NULL,
 *			   error text DEFAULT NULL) returns void
 */
Datum
taskq_return_step(PG_FUNCTION_ARGS)
{
	char	   *id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	char	   *result;
	char	   *error = taskq_opt_text_arg(fcinfo, 4);

	taskq_require_arg(fcinfo, 1, "token");
	taskq_require_arg(fcinfo, 2, "result");
	result = text_to_cstring(PG_GETARG_TEXT_PP(2));	/* unknown: 22023 */
	taskq_acl_check_return(list_make1(id));	/* limited workers */
	SPI_connect();
	taskq_saga_return_step(id, PG_GETARG_UUID_P(1), result, taskq_jsonb_arg(fcinfo, 3), error);
	SPI_finish();
	PG_RETURN_VOID();
}

/* resume_run(id text, working jsonb DEFAULT NULL) returns void */
Datum
taskq_resume_run(PG_FUNCTION_ARGS)
{
	char	   *id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);

	SPI_connect();
	taskq_saga_resume(id, taskq_jsonb_arg(fcinfo, 1));
	SPI_finish();
	PG_RETURN_VOID();
}
