/*-------------------------------------------------------------------------
 *
 * tasks_rel.h
 *	  taskq.tasks as the queue's direct paths see it: its shape kept per
 *	  backend (tasks_shape.c) and the table opened for writes without the
 *	  executor (tasks_rel.c).  tasks_rel.c uses the shape, never the
 *	  reverse.  Included by the queue's direct paths (claim walk, claim
 *	  rows, completion, insert rows, insert exprs, claim starts, the lease
 *	  probe) and by api/claim_start_trigger.c, which reads the ready
 *	  columns.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_TASKS_REL_H
#define TASKQ_TASKS_REL_H

#include "access/tableam.h"
#include "executor/executor.h"
#include "nodes/execnodes.h"
#include "utils/rel.h"
#include "utils/snapshot.h"

/* The columns of taskq.tasks that say whether a row is ready, and its key. */
typedef struct TaskqReadyCols
{
	AttrNumber	status_code,
				num_signals,
				action,
				priority,
				seq;
	Oid			pending;		/* the label's OID */
} TaskqReadyCols;

/* ----------
 * taskq.tasks opened for direct updates
 * ----------
 */

/* Columns of taskq.tasks read or written here (attribute numbers). */
typedef struct TaskqTaskColumns
{
	AttrNumber	id,
				body,
				status,
				num_tries,
				to_signal_after,
				actor_id,
				action_deadline,
				performance_token,
				not_before,
				finished_at,
				cancelled,
				post_result,
				workflow,
				result,
				claimed_at,
				created_at,
				concurrency_key;
} TaskqTaskColumns;

#define TASKQ_SHAPE_UPDATES 4

/*
 * taskq.tasks as the direct paths need it, kept per backend until a
 * relcache invalidation (tasks_shape.c).
 */
typedef struct TaskqRelShape
{
	MemoryContext cxt;			/* holds all of it */
	Oid			relid;
	int			natts;
	bool		applies;		/* false: the callers run their SQL */
	bool		starts_ok;		/* the tasks_ready_hint triggers note SQL writes */
	TaskqTaskColumns col;
	TaskqReadyCols ready;
	Oid			in_progress,
				completed;
	int			nindexes;		/* as RelationGetIndexList has them */
	Oid		   *index_oids;
	char	  **index_names;
	IndexInfo **infos;			/* with the predicates' states made */
	bool		checked_entries;	/* an exclusion constraint or a deferred unique index */
	int			nupdated;		/* updatedCols per list of changed columns */
	const char *const *updated_names[TASKQ_SHAPE_UPDATES];
	Bitmapset  *updated[TASKQ_SHAPE_UPDATES];
	struct TaskqInsertExprs *insert; /* made at the first direct insert (insert_exprs.c) */
} TaskqRelShape;

typedef struct TaskqRel
{
	TaskqRelShape *shape;		/* what is kept of the table (tasks_shape.c) */
	Relation	rel;
	TupleDesc	desc;
	const TaskqTaskColumns *col;		/* the shape's */
	const TaskqReadyCols *ready;	/* the shape's: status_code, num_signals, action, ...; pending */
	EState	   *estate;
	ResultRelInfo *rri;
	Bitmapset  *updated;		/* the columns updates change (as updatedCols), or NULL */
	Snapshot	snapshot;
	CommandId	cid;
	TupleTableSlot *oldslot;	/* the row as found */
	TupleTableSlot *newslot;	/* the row as written */
} TaskqRel;



/* tasks_shape.c: the kept shape, and the columns it found */
extern Oid	taskq_tasks_relid(void);
extern TaskqRelShape *taskq_rel_shape(Relation rel);
extern int	taskq_rel_shape_find(const TaskqRelShape *s, const char *name);
extern Bitmapset *taskq_rel_shape_updated(TaskqRelShape *s, Relation rel,
										  const char *const *changed, int nchanged);
extern void taskq_rel_shape_indexes(const TaskqRelShape *s, ResultRelInfo *rri);
extern Relation taskq_rel_shape_index(const TaskqRelShape *s, ResultRelInfo *rri, int i);
extern void taskq_rel_shape_close_indexes(ResultRelInfo *rri);
extern bool taskq_task_columns(TupleDesc desc, TaskqTaskColumns *c);
extern bool taskq_ready_cols(TupleDesc desc, TaskqReadyCols *c);

/* tasks_rel.c: the table opened, its rows written, which rows are ready */
extern bool taskq_rel_open(TaskqRel *d, const char *what, const char *const *changed, int nchanged);
extern void taskq_rel_close(TaskqRel *d);
extern Relation taskq_rel_index(TaskqRel *d, const char *name, int nkeys, IndexInfo **info);
extern void taskq_rel_index_entries(TaskqRel *d, TupleTableSlot *slot, bool update,
									bool *repeat);
extern TM_Result taskq_rel_update(TaskqRel *d, ItemPointer tid, bool wait, TM_FailureData *tmfd);
extern bool taskq_row_ready(TupleTableSlot *slot, const TaskqReadyCols *c);

/*
 * The small helpers of the direct paths' row loops, inline as they were
 * when the paths shared one file.
 */

/* Start the new version of the row as found: every column copied. */
static inline void
taskq_rel_new_row(TaskqRel *d)
{
	slot_getallattrs(d->oldslot);
	ExecClearTuple(d->newslot);
	memcpy(d->newslot->tts_values, d->oldslot->tts_values, sizeof(Datum) * d->desc->natts);
	memcpy(d->newslot->tts_isnull, d->oldslot->tts_isnull, sizeof(bool) * d->desc->natts);
}

/* Set a column of the new version. */
static inline void
taskq_rel_set(TaskqRel *d, AttrNumber att, Datum value, bool isnull)
{
	d->newslot->tts_values[att - 1] = value;
	d->newslot->tts_isnull[att - 1] = isnull;
}

/* The value of a column of the row as found. */
static inline Datum
taskq_rel_old(TaskqRel *d, AttrNumber att, bool *isnull)
{
	*isnull = d->oldslot->tts_isnull[att - 1];
	return d->oldslot->tts_values[att - 1];
}

#endif							/* TASKQ_TASKS_REL_H */
