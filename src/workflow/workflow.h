/*-------------------------------------------------------------------------
 *
 * workflow.h
 *	  The workflow layer over the queue, as the SQL functions (api/) call
 *	  it: job control of runs (control.c), jobs' progress (jobs.c), runs
 *	  of state machines and sagas, and the seam's set-up (seam.c).
 *
 * Every function here runs SQL and expects SPI to be connected.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_WORKFLOW_H
#define TASKQ_WORKFLOW_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/jsonb.h"
#include "utils/tuplestore.h"
#include "utils/uuid.h"

#include "queue/queue.h"

/* control.c: job control of runs */
extern void taskq_refuse_run_tasks(List *ids, const char *fn);
extern const char *taskq_cancel_run(const char *id);
extern char *taskq_run_redrive(const char *id);
extern bool taskq_is_run(const char *id);

/* jobs.c */
extern char *taskq_job_of_held_task(const char *id, Datum token);
extern int64 taskq_job_add_progress(const char *job, int64 items);
extern void taskq_job_set_item_count(const char *job, int64 count);

/* run.c, run_wait.c */
extern void taskq_check_run_id(const char *id, const char *argname);
extern Datum taskq_wait_run(const char *id, bool has_deadline, TimestampTz deadline,
							bool *isnull);

/* run_timers.c: a run just started must finish within deadline */
extern void taskq_run_set_deadline(const char *id, Interval *deadline);
extern TimestampTz taskq_fire_run_timers(TimestampTz now);

/* machine.c */
extern int32 taskq_define_machine(const char *name, Jsonb *def, bool given, int32 version);
extern char *taskq_start_machine(const char *machine, const char *id, const char *parent,
								 Jsonb *context,
								 Jsonb *debug);
extern char *taskq_machine_transition(const char *task_id, pg_uuid_t *token,
									  const char *event, Jsonb *context, bool *isnull);
extern char *taskq_machine_continue(const char *task_id, pg_uuid_t *token,
									const char *cursor, bool *isnull);
extern void taskq_machine_fan_in_contexts(const char *task_id, pg_uuid_t *token,
										  Tuplestorestate *out, TupleDesc desc);
extern char *taskq_machine_send_event(const char *id, const char *event, Jsonb *context,
									  bool *isnull);
extern char *taskq_machine_redrive(const char *id);
extern char *taskq_machine_migrate(const char *id, int32 version, Jsonb *state_map);

/* saga.c */
extern int32 taskq_define_saga(const char *name, Jsonb *def, bool given, int32 version);
extern char *taskq_start_saga(const char *saga, const char *id, const char *parent,
							  Jsonb *inputs,
							  Jsonb *debug);
extern void taskq_saga_return_step(const char *task_id, pg_uuid_t *token, const char *result,
								   Jsonb *working, const char *error);
extern void taskq_saga_resume(const char *id, Jsonb *working);

/* saga_undo.c */
extern char *taskq_saga_redrive(const char *id);

/* seam.c */
extern void taskq_workflow_init(void);

#endif							/* TASKQ_WORKFLOW_H */
