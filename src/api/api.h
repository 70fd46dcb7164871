/*-------------------------------------------------------------------------
 *
 * api.h
 *	  Helpers the SQL entry points share: their arguments turned into the
 *	  queue's C structs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_API_H
#define TASKQ_API_H

#include "fmgr.h"
#include "utils/jsonb.h"

#include "queue/queue.h"

/* return.c: a taskq.status argument */
extern TaskqStatus taskq_status_code_arg(Datum d);
extern bool taskq_timeout_arg(FunctionCallInfo fcinfo, int argno, TimestampTz *deadline);

/* return.c, own.c: return_tasks' and own_tasks' arguments, parsed */
extern TaskqReturnItem *taskq_return_args(FunctionCallInfo fcinfo, int first,
										  int results_arg, int *n);
extern Jsonb *taskq_result_arg(Datum d, const char *argname, const char *id);
extern void taskq_claim_args(FunctionCallInfo fcinfo, int first, TaskqClaimRequest *req);

/* machines.c: the debug argument of start_machine and start_saga */
extern void taskq_check_debug_allowed(void);

/* sql_values.c: optional arguments, text results made under SPI */
extern Jsonb *taskq_jsonb_arg(FunctionCallInfo fcinfo, int argno);
extern char *taskq_opt_text_arg(FunctionCallInfo fcinfo, int argno);
extern char *taskq_copy_out(MemoryContext cxt, const char *s);
extern Datum taskq_text_or_null(FunctionCallInfo fcinfo, const char *s);

#endif							/* TASKQ_API_H */
