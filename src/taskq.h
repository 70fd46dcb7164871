/*-------------------------------------------------------------------------
 *
 * taskq.h
 *	  Declarations shared by the taskq modules: limits, SQLSTATEs, the
 *	  prepared-plan cache, task input parsing, the finish engine (complete,
 *	  abort, signal, cascade), the dependency-graph lock and the wakeups
 *	  sent after commit.
 *
 * Every function here that runs SQL expects to be called between
 * SPI_connect() and SPI_finish() of the calling entry point.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_H
#define TASKQ_H

#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "nodes/pg_list.h"
#include "storage/condition_variable.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/tuplestore.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

/* Documented limits on identifiers (bytes) and bodies. */
#define TASKQ_MAX_ID_LEN		255
#define TASKQ_MAX_ACTION_LEN	255
#define TASKQ_MAX_ACTOR_LEN		255
#define TASKQ_MAX_BODY_SIZE		(1024 * 1024)

/*
 * taskq's own SQLSTATEs (class TQ), listed in the README.  Everything else
 * uses a standard code.
 */
#define ERRCODE_TASKQ_INVALID_TOKEN		MAKE_SQLSTATE('T','Q','0','0','1')

/*
 * SQL: the task is owned under a live lease (in progress, deadline not
 * passed).  An expired lease is not owned: anyone may claim, replace or
 * cancel the task.
 */
#define TASKQ_SQL_OWNED \
	"(status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status" \
	" AND (action_deadline IS NULL" \
	"      OR action_deadline OPERATOR(pg_catalog.>) pg_catalog.now()))"

/* ----------
 * direct.c: the claim and the completion without the executor, and
 * performance tokens.
 * ----------
 */
extern void taskq_new_token(pg_uuid_t *token);
extern int	taskq_claim_direct(const char *actor, int limit, bool one_action,
							   List *actions, Interval *duration,
							   Tuplestorestate *out, TupleDesc outdesc);
extern bool taskq_insert_direct(int n, int ncols, const char *const *names,
								Datum **cols, bool **nulls, int *stored);
extern int	taskq_complete_direct(const char *caller, int n, char **ids,
								  pg_uuid_t **tokens, char **statuses,
								  bool *done, List **succs);

/* ----------
 * spi_util.c: statements prepared once per backend and kept.
 * ----------
 */
#define TASKQ_PLAN_MAX_ARGS 16

typedef struct TaskqPlan
{
	const char *sql;
	int			nargs;
	Oid			argtypes[TASKQ_PLAN_MAX_ARGS];
	SPIPlanPtr	plan;			/* NULL until first use */
	bool		generic;		/* always the generic plan (see taskq_execute) */
} TaskqPlan;

extern int	taskq_execute(TaskqPlan *plan, Datum *values, const char *nulls,
						  bool read_only, long tcount);
extern char *taskq_get_text(int row, int col, bool *isnull);
extern int32 taskq_get_int32(int row, int col, bool *isnull);
extern bool taskq_get_bool(int row, int col, bool *isnull);
extern Datum taskq_get_datum(int row, int col, bool *isnull);
extern List *taskq_get_text_array(int row, int col);
extern List *taskq_text_array_list(Datum d);
extern Datum taskq_text_array_datum(List *strings);
extern void taskq_check_id(const char *id, const char *argname);
extern char *taskq_text_arg(FunctionCallInfo fcinfo, int argno,
							const char *argname, int maxlen);
extern void taskq_require_arg(FunctionCallInfo fcinfo, int argno,
							  const char *argname);
extern List *taskq_text_array_arg(FunctionCallInfo fcinfo, int argno,
								  const char *argname, int maxlen);
extern int	taskq_compare_strings(const void *a, const void *b);
extern int	taskq_compare_strings_lc(const ListCell *a, const ListCell *b);
extern bool taskq_string_member(List *strings, const char *s);

/* ----------
 * task_input.c: one task object of insert_tasks / replace_tasks.
 * ----------
 */
typedef struct TaskSpec
{
	int			index;			/* 1-based position in the argument */
	char	   *id;
	char	   *action;
	Jsonb	   *body;			/* NULL for no body */
	char	   *status;			/* initial human-readable status or NULL */
	List	   *successors;		/* to_signal_after, as char * */
	bool		has_max_tries;
	int32		max_tries;
	int32		priority;
	bool		has_not_before;
	TimestampTz not_before;
	bool		post_result;
	bool		spontaneous;
	Jsonb	   *retry;			/* retry policy or NULL */
	char	   *workflow;		/* workflow key or NULL */
	int32		num_signals;	/* computed: incoming edges */
} TaskSpec;

extern List *taskq_parse_tasks(Jsonb *tasks, const char *argname);
extern void taskq_check_retry_policy(Jsonb *policy, const char *argname);

/* ----------
 * finish.c: the life-cycle engine shared by every path that ends a task.
 * ----------
 */
extern void taskq_complete_task(const char *id, const char *status);
extern void taskq_abort_task(const char *id, const char *status);
extern int	taskq_sweep_expired(void);
extern int	taskq_fold_deferred_signals(void);
extern void taskq_drop_empty_deferred(void);

/* ----------
 * claim.c and finish.c: the SQL entry points return_and_own (cycle.c) is
 * made of, and the commit rule for transactions that wrote only claims.
 * ----------
 */
extern Datum taskq_own_tasks(PG_FUNCTION_ARGS);
extern Datum taskq_return_tasks(PG_FUNCTION_ARGS);
extern void taskq_register_claim_callbacks(void);

/* ----------
 * deps.c: the lock that serialises changes to edges between stored tasks,
 * and the cycle check run under it.
 * ----------
 */
extern void taskq_lock_dependency_graph(void);
extern void taskq_lock_workflow(const char *workflow, bool exclusive);
extern List *taskq_lock_workflows(List *names);
extern void taskq_check_no_cycle_through(const char *id);
extern int64 taskq_add_dependency_pairs(List *afters, List *runs);

/* ----------
 * shmem.c, wakeup.c, notify.c, worker.c, launcher.c: shared state, the
 * wakeups sent at commit, and the background workers.
 * ----------
 */
extern int	taskq_notify_interval;
extern bool taskq_background_worker;
extern bool taskq_async_claims;
extern bool taskq_announce_progress;
extern int	taskq_worker_naptime;
extern int	taskq_retention;
extern void taskq_register_launcher(void);
extern void taskq_install_utility_hook(void);
extern void taskq_notify_mark(const char *action);
extern void taskq_notify_collect(bool all);
extern bool taskq_notify_take(void);
extern bool taskq_notify_due_now(void);
extern TimestampTz taskq_notify_send_due(bool send);
extern void taskq_shmem_init_hooks(void);
extern bool taskq_shmem_available(void);
extern void taskq_note_finished(const char *id);
extern void taskq_note_ready(const char *action);
extern void taskq_note_progress(const char *job);
extern void taskq_note_deferred(void);
extern bool taskq_deferred_take(bool clear);
extern bool taskq_worker_running(void);
extern void taskq_register_xact_callbacks(void);
extern ConditionVariable *taskq_finish_cv(const char *id);

/* local_table.c: backend-local hash tables keyed by short strings */
extern void *taskq_local_enter(HTAB **table, const char *name, Size keysize,
							   Size entrysize, long max, const char *key, bool *found);
extern void *taskq_local_find(HTAB *table, Size keysize, const char *key);
extern bool taskq_local_take(HTAB *table, Size keysize, const char *key,
							 void *out, Size entrysize);

/* ----------
 * hint.c: where claims start in the ready indexes (past dead entries).
 * ----------
 */
/* A position in a ready index, in its order: priority descending, then seq. */
typedef struct TaskqReadyKey
{
	int32		priority;
	int64		seq;
} TaskqReadyKey;

/* A claim's view of its start, from taskq_hint_begin. */
typedef struct TaskqHintScan
{
	int			slot;			/* -1: no shared start; walk from the first entry */
	uint64		gen;
	uint64		writes;
	bool		valid;			/* false: walk from the first entry */
	TaskqReadyKey start;
} TaskqHintScan;

#define TASKQ_HINT_BATCH_ACTIONS 8

/* The ready entries one statement wrote: lowest key overall and per action. */
typedef struct TaskqHintBatch
{
	bool		any;
	TaskqReadyKey anymin;
	bool		overflow;		/* more actions than fit: lower them all */
	int			nactions;
	int			len[TASKQ_HINT_BATCH_ACTIONS];
	char		action[TASKQ_HINT_BATCH_ACTIONS][NAMEDATALEN];
	TaskqReadyKey min[TASKQ_HINT_BATCH_ACTIONS];
} TaskqHintBatch;

extern bool taskq_shared_claim_start;
extern AttrNumber taskq_column(TupleDesc desc, const char *name);
extern Oid	taskq_enum_label(Oid enumtype, const char *label);
extern void taskq_hint_begin(const char *action, TaskqHintScan *hs);
extern void taskq_hint_advance(TaskqHintScan *hs, TaskqReadyKey to);
extern void taskq_hint_defer(TaskqHintScan *hs, TaskqReadyKey to);
extern void taskq_hint_register_callbacks(void);
extern void taskq_hint_reset(Oid dboid);
extern void taskq_hint_ready_changed(void);
extern bool taskq_hint_ready_changed_here(void);
extern void taskq_hint_cycle(bool begin);
extern bool taskq_hint_may_move(void);
extern void taskq_hint_batch_init(TaskqHintBatch *b);
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

extern bool taskq_ready_cols(TupleDesc desc, TaskqReadyCols *c);
extern bool taskq_row_ready(TupleTableSlot *slot, const TaskqReadyCols *c);
extern void taskq_hint_note_row(TaskqHintBatch *b, TupleTableSlot *slot,
								const TaskqReadyCols *c);
extern void taskq_hint_flush(TaskqHintBatch *b);
extern Datum taskq_tasks_written(PG_FUNCTION_ARGS);

#endif							/* TASKQ_H */
