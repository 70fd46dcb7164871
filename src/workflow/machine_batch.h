/*-------------------------------------------------------------------------
 *
 * machine_batch.h
 *	  Fan-in batches of state machines as stored (machine_batch.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_MACHINE_BATCH_H
#define TASKQ_MACHINE_BATCH_H

#include "access/tupdesc.h"
#include "nodes/pg_list.h"
#include "utils/tuplestore.h"

extern char *taskq_batch_open(const char *machine, int32 version, const char *state);
extern void taskq_batch_set_open(const char *machine, int32 version, const char *state,
								 const char *batch);
extern void taskq_batch_join(const char *batch, const char *run);
extern List *taskq_batch_members(const char *batch);
extern void taskq_batch_close(const char *batch);
extern void taskq_batch_forget(const char *batch);
extern void taskq_batch_end_members(List *runs, const char *status, const char *error);
extern char *taskq_batch_leave(const char *run, bool *last);
extern void taskq_batch_contexts(const char *batch, Tuplestorestate *out, TupleDesc desc);

#endif							/* TASKQ_MACHINE_BATCH_H */
