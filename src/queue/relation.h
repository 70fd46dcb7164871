/*-------------------------------------------------------------------------
 *
 * relation.h
 *	  taskq.tasks as the queue's direct paths see it (relation.c), and the
 *	  queue's functions shared between its own files.  Besides queue/, only
 *	  the direct paths of the layers above include it (workflow/run_row.c,
 *	  api/claim_start_trigger.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_RELATION_H
#define TASKQ_RELATION_H

#include "access/skey.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "nodes/execnodes.h"
#include "utils/rel.h"
#include "utils/builtins.h"
#include "utils/snapshot.h"

#include "queue/queue.h"

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
typedef struct TaskColumns
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
				claimed_at;
} TaskColumns;

#define TASKQ_SHAPE_UPDATES 4

/*
 * taskq.tasks as the direct paths need it, kept per backend until a
 * relcache invalidation (rel_shape.c).
 */
typedef struct TaskqRelShape
{
	MemoryContext cxt;			/* holds all of it */
	Oid			relid;
	int			natts;
	bool		applies;		/* false: the callers run their SQL */
	bool		starts_ok;		/* the tasks_ready_hint triggers note SQL writes */
	TaskColumns col;
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
	struct InsertExprs *insert; /* made at the first direct insert (insert_exprs.c) */
} TaskqRelShape;

typedef struct TaskqRel
{
	TaskqRelShape *shape;		/* what is kept of the table (rel_shape.c) */
	Relation	rel;
	TupleDesc	desc;
	const TaskColumns *col;		/* the shape's */
	const TaskqReadyCols *ready;	/* the shape's: status_code, num_signals, action, ...; pending */
	EState	   *estate;
	ResultRelInfo *rri;
	Bitmapset  *updated;		/* the columns updates change (as updatedCols), or NULL */
	Snapshot	snapshot;
	CommandId	cid;
	TupleTableSlot *oldslot;	/* the row as found */
	TupleTableSlot *newslot;	/* the row as written */
} TaskqRel;



/* relation.c */
extern AttrNumber taskq_column(TupleDesc desc, const char *name);
extern AttrNumber taskq_typed_column(TupleDesc desc, const char *name, Oid type);
extern bool taskq_table_plain(Relation rel, const char *const *checks);
extern bool taskq_unique_btree_on(Oid indexid, Oid relid, int n, const AttrNumber *cols);
extern bool taskq_fetch_by_key(Relation rel, Relation idx, Snapshot snap, int n,
							   ScanKeyData *keys, TupleTableSlot *slot);
extern Oid	taskq_enum_label(Oid enumtype, const char *label);
extern bool taskq_claimed_at_installed(void);
extern bool taskq_ready_cols(TupleDesc desc, TaskqReadyCols *c);
extern bool taskq_row_ready(TupleTableSlot *slot, const TaskqReadyCols *c);
extern bool taskq_task_columns(TupleDesc desc, TaskColumns *c);
extern EState *taskq_index_state(Relation rel, Bitmapset *updated, ResultRelInfo **rri);
extern bool taskq_rel_open(TaskqRel *d, const char *what, const char *const *changed, int nchanged);
extern void taskq_rel_close(TaskqRel *d);
extern Relation taskq_rel_index(TaskqRel *d, const char *name, int nkeys, IndexInfo **info);
extern void taskq_rel_index_entries(TaskqRel *d, TupleTableSlot *slot, bool update,
									bool *repeat);
extern TM_Result taskq_rel_update(TaskqRel *d, ItemPointer tid, bool wait, TM_FailureData *tmfd);

/* signal_counter.c */
typedef enum TaskqCounterResult
{
	TASKQ_COUNTER_ADDED,		/* the signals are in the counter */
	TASKQ_COUNTER_ABSENT,		/* no counter: the caller creates it */
	TASKQ_COUNTER_SQL			/* the caller runs its UPDATE */
} TaskqCounterResult;

extern TaskqCounterResult taskq_signal_counter_add(const char *id, int32 stripe, int32 k);

/* rel_shape.c */
extern TaskqRelShape *taskq_rel_shape(Relation rel);
extern Bitmapset *taskq_rel_shape_updated(TaskqRelShape *s, Relation rel,
										  const char *const *changed, int nchanged);
extern void taskq_rel_shape_indexes(const TaskqRelShape *s, ResultRelInfo *rri);
extern Relation taskq_rel_shape_index(const TaskqRelShape *s, ResultRelInfo *rri, int i);

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

/* Is the text datum d the C string s? */
static inline bool
taskq_text_matches(Datum d, const char *s)
{
	text	   *t = DatumGetTextPP(d);
	size_t		len = VARSIZE_ANY_EXHDR(t);

	return len == strlen(s) && memcmp(VARDATA_ANY(t), s, len) == 0;
}

/* The value of a column of the row as found. */
static inline Datum
taskq_rel_old(TaskqRel *d, AttrNumber att, bool *isnull)
{
	*isnull = d->oldslot->tts_isnull[att - 1];
	return d->oldslot->tts_values[att - 1];
}

/* claimed_rows.c: where this backend's claims wrote their rows */
extern void taskq_remember_claimed(TaskqRel *d, Datum id, ItemPointer tid);
extern bool taskq_fetch_claimed(TaskqRel *d, const char *id, BlockNumber *nblocks);

/* claim_walk.c, complete.c, row_insert.c: the direct paths; -1 or false: not applicable */
extern int	taskq_claim_direct(const char *actor, int limit, List *actions,
							   Interval *duration, bool writes_noted, TimestampTz now,
							   Tuplestorestate *out, TupleDesc outdesc);
extern int	taskq_complete_direct(const char *caller, int n, char **ids,
								  pg_uuid_t **tokens, char **statuses,
								  Jsonb **results, bool *done, List **succs);
extern void taskq_complete_sql(int n, char **ids, pg_uuid_t **tokens, char **statuses,
							   Jsonb **results, bool *done, List **succs);
extern void taskq_insert_rows(List *specs, const int32 *inherited, bool if_absent);

/* action_policy.c: the actions' default max_tries, kept per session */
extern List *taskq_policy_max_tries(List *specs, List **tries);
extern bool taskq_insert_direct(int n, int ncols, const char *const *names,
								Datum **cols, bool **nulls, int *stored);

/* claim_commit.c: the commit rule of transactions that wrote only claims */
extern bool taskq_wrote_only_claims(void);
extern void taskq_note_claim_written(bool only_claims);

/* lifecycle.c: the end of one task, and the tasks a call finished */
extern List *taskq_finish_row(const char *id, TaskqStatus code, const char *status);
extern void taskq_task_finished(const char *id, TaskqStatus outcome);
extern void taskq_task_release(const char *id, TaskqStatus cur);
extern void taskq_task_retry(const char *id, TaskqStatus cur, const char *status,
							 Interval *retry_delay);

/* signal.c: successors told that their predecessors completed */
extern void taskq_signal_completed(List *succs, List **work);
extern void taskq_complete_spontaneous(List *work);
extern void taskq_signal_aborted(const char *id, List *succs);
extern void taskq_signal_wait_again(List *succs);
extern bool taskq_signal_add_edges(const char *id, int32 k, bool unstarted);
extern void taskq_signal_finished_edge(const char *after, const char *run,
									   TaskqStatus outcome);

#endif							/* TASKQ_RELATION_H */
