/*-------------------------------------------------------------------------
 *
 * claim_start.h
 *	  Where claims start in the ready index (claim_start.c): the start
 *	  key shared by a database's claims, moved forward by claims over dead
 *	  entries and back by every writer of a ready entry.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_CLAIM_START_H
#define TASKQ_CLAIM_START_H

#include "executor/tuptable.h"
#include "fmgr.h"

#include "queue/tasks_rel.h"

/* A position in a ready index, in its order: priority descending, then seq. */
typedef struct TaskqReadyKey
{
	int32		priority;
	int64		seq;
} TaskqReadyKey;

/* a is before b in the ready index (within one action) */
static inline bool
taskq_ready_key_before(TaskqReadyKey a, TaskqReadyKey b)
{
	return a.priority > b.priority || (a.priority == b.priority && a.seq < b.seq);
}

/* A claim's view of its start, from taskq_claim_start_begin. */
typedef struct TaskqClaimStartScan
{
	int			slot;			/* -1: no shared start; walk from the first entry */
	uint64		gen;
	uint64		writes;
	bool		valid;			/* false: walk from the first entry */
	TaskqReadyKey start;
} TaskqClaimStartScan;

#define TASKQ_READY_BATCH_ACTIONS 8

/* The ready entries one statement wrote: lowest key per action, and overall. */
typedef struct TaskqReadyBatch
{
	bool		any;
	TaskqReadyKey anymin;
	bool		overflow;		/* more actions than fit: lower them all */
	int			nactions;
	int			len[TASKQ_READY_BATCH_ACTIONS];
	char		action[TASKQ_READY_BATCH_ACTIONS][NAMEDATALEN];
	TaskqReadyKey min[TASKQ_READY_BATCH_ACTIONS];
} TaskqReadyBatch;

extern void taskq_claim_start_begin(const char *action, TaskqClaimStartScan *hs);
extern void taskq_claim_start_advance(TaskqClaimStartScan *hs, TaskqReadyKey to);
extern void taskq_claim_start_defer(TaskqClaimStartScan *hs, TaskqReadyKey to);
extern void taskq_claim_start_ready_changed(void);
extern bool taskq_claim_start_ready_changed_here(void);
extern bool taskq_claim_start_may_move(bool writes_noted);
extern void taskq_ready_batch_init(TaskqReadyBatch *b);
extern void taskq_ready_batch_note(TaskqReadyBatch *b, TupleTableSlot *slot,
								const TaskqReadyCols *c);
extern void taskq_ready_batch_flush(TaskqReadyBatch *b);
extern bool taskq_claim_start_available(void);

#endif							/* TASKQ_CLAIM_START_H */
