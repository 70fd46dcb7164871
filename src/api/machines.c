/*-------------------------------------------------------------------------
 *
 * machines.c
 *	  SQL faces of state machines: define_machine, start_machine,
 *	  transition, continue_machine, fan_in_contexts, send_event,
 *	  redrive_run and migrate_run.  The workflow layer
 *	  (workflow/machine.c) does the work.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "common/args.h"
#include "workflow/workflow.h"
#include "api/action_limits.h"
#include "api/api.h"

PG_FUNCTION_INFO_V1(taskq_define_machine_sql);
PG_FUNCTION_INFO_V1(taskq_start_machine_sql);
PG_FUNCTION_INFO_V1(taskq_transition);
PG_FUNCTION_INFO_V1(taskq_continue_machine);
PG_FUNCTION_INFO_V1(taskq_fan_in_contexts);
PG_FUNCTION_INFO_V1(taskq_send_event);
PG_FUNCTION_INFO_V1(taskq_redrive_run);
PG_FUNCTION_INFO_V1(taskq_migrate_run);

#define MAX_NAME_ARG 63

/*
 * define_machine(name text, definition jsonb, version int DEFAULT NULL)
 * returns int
 */
Datum
taskq_define_machine_sql(PG_FUNCTION_ARGS)
{
	char	   *name = taskq_text_arg(fcinfo, 0, "name", MAX_NAME_ARG);
	bool		given = PG_NARGS() > 2 && !PG_ARGISNULL(2);
	int32		version;

	taskq_require_arg(fcinfo, 1, "definition");
	SPI_connect();
	version = taskq_define_machine(name, PG_GETARG_JSONB_P(1), given,
								   given ? PG_GETARG_INT32(2) : 0);
	SPI_finish();
	PG_RETURN_INT32(version);
}

/* The debug argument of a start: members of taskq_admin only (42501). */
void
taskq_check_debug_allowed(void)
{
	Oid			admin = get_role_oid("taskq_admin", true);

	Oid			caller = GetOuterUserId();	/* not the SECURITY DEFINER owner */

	if (!superuser_arg(caller) && !(OidIsValid(admin) && has_privs_of_role(caller, admin)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to start a run with debug settings"),
				 errdetail("Only members of taskq_admin may inject faults.")));
}

/*
 * start_machine(machine text, id text, context jsonb DEFAULT '{}',
 *				 debug jsonb DEFAULT NULL, deadline interval DEFAULT NULL)
 *				 returns text
 */
Datum
taskq_start_machine_sql(PG_FUNCTION_ARGS)
{
	char	   *machine = taskq_text_arg(fcinfo, 0, "machine", MAX_NAME_ARG);
	char	   *id = taskq_text_arg(fcinfo, 1, "id", TASKQ_MAX_ID_LEN);
	Jsonb	   *debug = taskq_jsonb_arg(fcinfo, 3);

	taskq_require_arg(fcinfo, 2, "context");
	if (debug)
		taskq_check_debug_allowed();
	SPI_connect();
	(void) taskq_start_machine(machine, id, NULL, PG_GETARG_JSONB_P(2), debug);
	if (PG_NARGS() > 4 && !PG_ARGISNULL(4))
		taskq_run_set_deadline(id, PG_GETARG_INTERVAL_P(4));
	SPI_finish();
	PG_RETURN_TEXT_P(cstring_to_text(id));
}

/*
 * transition(id text, token uuid, event text, context jsonb DEFAULT NULL)
 * returns text
 */
Datum
taskq_transition(PG_FUNCTION_ARGS)
{
	char	   *id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	char	   *event = taskq_opt_text_arg(fcinfo, 2);
	MemoryContext cxt = CurrentMemoryContext;
	bool		isnull;
	char	   *next;

	taskq_require_arg(fcinfo, 1, "token");
	taskq_acl_check_return(list_make1(id));	/* limited workers */
	SPI_connect();
	next = taskq_machine_transition(id, PG_GETARG_UUID_P(1), event, taskq_jsonb_arg(fcinfo, 3),
									&isnull);
	next = taskq_copy_out(cxt, isnull ? NULL : next);
	SPI_finish();
	return taskq_text_or_null(fcinfo, next);
}

/* continue_machine(id text, token uuid, cursor text) returns text */
Datum
taskq_continue_machine(PG_FUNCTION_ARGS)
{
	char	   *id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	char	   *cursor = taskq_opt_text_arg(fcinfo, 2);
	MemoryContext cxt = CurrentMemoryContext;
	bool		isnull;
	char	   *fork;

	taskq_require_arg(fcinfo, 1, "token");
	taskq_acl_check_return(list_make1(id));
	SPI_connect();
	fork = taskq_machine_continue(id, PG_GETARG_UUID_P(1), cursor, &isnull);
	fork = taskq_copy_out(cxt, isnull ? NULL : fork);
	SPI_finish();
	return taskq_text_or_null(fcinfo, fork);
}

/*
 * fan_in_contexts(id text, token uuid) returns table (run text, context jsonb)
 */
Datum
taskq_fan_in_contexts(PG_FUNCTION_ARGS)
{
	char	   *id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	taskq_require_arg(fcinfo, 1, "token");
	taskq_acl_check_return(list_make1(id));
	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	taskq_machine_fan_in_contexts(id, PG_GETARG_UUID_P(1), rsinfo->setResult,
								  rsinfo->setDesc);
	SPI_finish();
	return (Datum) 0;
}

/* send_event(run text, event text, context jsonb DEFAULT NULL) returns text */
Datum
taskq_send_event(PG_FUNCTION_ARGS)
{
	char	   *run = taskq_text_arg(fcinfo, 0, "run", TASKQ_MAX_ID_LEN);
	char	   *event = taskq_text_arg(fcinfo, 1, "event", MAX_NAME_ARG);
	MemoryContext cxt = CurrentMemoryContext;
	bool		isnull;
	char	   *next;

	SPI_connect();
	next = taskq_machine_send_event(run, event, taskq_jsonb_arg(fcinfo, 2), &isnull);
	next = taskq_copy_out(cxt, isnull ? NULL : next);
	SPI_finish();
	return taskq_text_or_null(fcinfo, next);
}

/* redrive_run(id text) returns text: a machine's state, a saga's status */
Datum
taskq_redrive_run(PG_FUNCTION_ARGS)
{
	char	   *id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	MemoryContext cxt = CurrentMemoryContext;
	char	   *state;

	SPI_connect();
	state = taskq_copy_out(cxt, taskq_run_redrive(id));
	SPI_finish();
	return taskq_text_or_null(fcinfo, state);
}

/* migrate_run(id text, version int, state_map jsonb DEFAULT '{}') returns text */
Datum
taskq_migrate_run(PG_FUNCTION_ARGS)
{
	char	   *id = taskq_text_arg(fcinfo, 0, "id", TASKQ_MAX_ID_LEN);
	MemoryContext cxt = CurrentMemoryContext;
	char	   *state;

	taskq_require_arg(fcinfo, 1, "version");
	taskq_require_arg(fcinfo, 2, "state_map");
	SPI_connect();
	state = taskq_copy_out(cxt, taskq_machine_migrate(id, PG_GETARG_INT32(1),
													  PG_GETARG_JSONB_P(2)));
	SPI_finish();
	return taskq_text_or_null(fcinfo, state);
}
