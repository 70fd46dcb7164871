/*-------------------------------------------------------------------------
 *
 * queue.h
 *	  The queue core's C API: insert, claim, return, expire, signal, and
 *	  the dependency graph.  The SQL entry points (api/), the workflow
 *	  layer and the background worker use the queue through this header
 *	  only.
 *
 * Every function here runs SQL or writes taskq.tasks and expects to be
 * called inside a transaction, between SPI_connect() and SPI_finish() of
 * the caller.  Errors are raised with ereport and name the task.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_QUEUE_H
#define TASKQ_QUEUE_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/jsonb.h"
#include "utils/relcache.h"
#include "utils/tuplestore.h"
#include "utils/uuid.h"

#include "common/plan.h"
#include "queue/task.h"

/* ----------
 * Insert (insert.c)
 * ----------
 */

/* One task to insert, as insert_tasks' JSON objects give it. */
typedef struct TaskqTaskSpec
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
	char	   *concurrency_key;	/* concurrency key or NULL */
	TaskqTrigger trigger;		/* when it runs after its predecessors */
	int32		num_signals;	/* computed: incoming edges */
	const char *argname;		/* the argument errors name (NULL: "tasks") */
	bool		made_id;		/* id made by taskq (task_id.c): unique */
} TaskqTaskSpec;

typedef enum TaskqInsertMode
{
	TASKQ_INSERT_PLAIN,			/* a stored id is an error */
	TASKQ_INSERT_REPLACE,		/* a stored id that is not owned is replaced */
	TASKQ_INSERT_IF_ABSENT		/* a stored id is left as it is */
} TaskqInsertMode;

/*
 * Insert a batch of tasks, all or none (checked whole first).  afters:
 * stored ids every task of waiting (ids of the batch) also waits for.
 * With TASKQ_INSERT_IF_ABSENT, inserted[i] (one per spec) says whether the
 * i-th task went in.  Returns how many tasks were inserted or replaced.
 */
extern int64 taskq_insert(List *specs, TaskqInsertMode mode, List *afters,
						  List *waiting, bool *inserted);

/* ----------
 * Claim (claim.c, claim_walk.c, claim_start.c, claim_commit.c)
 * ----------
 */

/* What a claim asks for. */
typedef struct TaskqClaimRequest
{
	const char *actor;
	int			max_tasks;
	bool		all_actions;	/* any action; else only those of actions */
	List	   *actions;		/* C strings */
	Interval   *lease;			/* NULL: no deadline given */
	/*
	 * Every write this transaction made before the claim was noted where
	 * the claim start needs it (return_and_own's own return, which ran
	 * in this call): the claim may move the start although the
	 * transaction wrote.
	 */
	bool		writes_noted;
	/* the claim's moment: what is delayed past it is not ready (0: now()) */
	TimestampTz now;
	bool		skip_sweep;		/* leave lease expiry to the worker */
} TaskqClaimRequest;

/*
 * Claim up to req->max_tasks ready tasks, after the lease-expiry sweep.
 * The rows (id, token, action, body, num_tries, action_deadline) go to
 * out, in claim order: priority descending, then insertion order.
 * Returns how many were claimed.
 */
extern int	taskq_claim(const TaskqClaimRequest *req, Tuplestorestate *out,
						TupleDesc outdesc);
extern void taskq_register_claim_callbacks(void);

/*
 * Claim as taskq_claim does; if there is no work, sleep until a commit
 * (or the worker) makes work of the request's actions ready and claim
 * again, until deadline (claim_wait.c).  Needs the shared memory of
 * shared_preload_libraries (55000 without it) and READ COMMITTED (0A000
 * otherwise).  Returns how many were claimed: 0 only after the deadline.
 */
extern int	taskq_claim_wait(const TaskqClaimRequest *req, TimestampTz deadline,
							 Tuplestorestate *out, TupleDesc outdesc);

/* extend_ownership of one task: true if still held and extended. */
extern bool taskq_extend(const char *id, Datum token, const char *actor,
						 Interval *lease);

/* ----------
 * Return (return.c, complete.c)
 * ----------
 */

/* One task a worker returns. */
typedef struct TaskqReturnItem
{
	char	   *id;
	pg_uuid_t  *token;
	char	   *status;			/* human-readable status; NULL keeps it */
	TaskqStatus code;			/* completed, aborted or pending */
	Interval   *retry_delay;	/* pending: NULL takes the retry policy's */
	Jsonb	   *result;			/* stored with the return; NULL keeps the last */
	bool		done;			/* set once returned */
} TaskqReturnItem;

/*
 * Return n tasks, all or none, sorted by id without repeats (the lock
 * order of batch returns).  caller names the SQL function in errors.
 */
extern void taskq_return(TaskqReturnItem *items, int n, const char *caller);

/* Give a held task back unworked: ready at once, the try not counted. */
extern void taskq_release(const char *id, pg_uuid_t *token);

/* The predecessors of a task its owner holds, with their results (results.c). */
extern void taskq_read_predecessor_results(const char *id, pg_uuid_t *token,
									  Tuplestorestate *out, TupleDesc outdesc);

/*
 * The results of tasks "<prefix><first>" .. "<prefix><last>" in that order,
 * one JSON array (null where a task did not complete; NULL for no rows);
 * how many completed, and the number of the first that did not (0: none).
 */
extern Jsonb *taskq_read_range_results(const char *prefix, int32 first, int32 last,
									   int64 *completed, int32 *first_failed);

/* ----------
 * The ends of a task and its signals (lifecycle.c, signal.c, lease.c)
 * ----------
 */
extern void taskq_complete_task(const char *id, const char *status);
extern void taskq_abort_task(const char *id, const char *status);
/* Leases one sweep hands back at most, and deferred signals one fold adds. */
#define TASKQ_SWEEP_BATCH 64
#define TASKQ_FOLD_BATCH 1000

extern int	taskq_sweep_expired(void);

/*
 * Rate limits (flow_limits.c), for the background worker: the actions whose
 * window reopened by now (the claims that left it deleted), and when the
 * next one reopens.
 */
extern List *taskq_flow_reopened(TimestampTz now);
extern bool taskq_flow_next_reopen(TimestampTz *next);

/*
 * Concurrency limits (flow_books.c), for the background worker: wake the
 * claims waiting for slots let go a moment ago and not taken again, list
 * their actions in *woken; returns when to look again (0: nothing owed).
 */
extern TimestampTz taskq_wake_freed_slots(TimestampTz now, List **woken);
extern int	taskq_fold_deferred_signals(void);
extern void taskq_drop_empty_deferred(void);
extern void taskq_redrive_task(const char *id, List *successors);

/*
 * The workflow seam: the tasks one call of the queue finished, with their
 * outcome, handed to the workflow layer in the same transaction, before
 * the call returns.  The queue never calls upward otherwise.
 */
typedef struct TaskqFinished
{
	char	   *id;
	TaskqStatus outcome;		/* completed or aborted */
} TaskqFinished;

typedef void (*taskq_finished_hook_type) (const TaskqFinished *tasks, int n);
extern PGDLLIMPORT taskq_finished_hook_type taskq_finished_hook;
extern void taskq_finished_dispatch(void);

/*
 * The other half of the seam: before a return (or a release: release set,
 * one item, code pending) locks any task row, the workflow layer sees the
 * items, takes the locks of the runs they belong to (workflow locks come
 * before task rows), and may take items over: it marks those done, and the
 * queue returns the others.
 */
typedef void (*taskq_return_hook_type) (TaskqReturnItem *items, int n, bool release);
extern PGDLLIMPORT taskq_return_hook_type taskq_return_hook;

/*
 * And before the expiry sweep locks the rows of tasks whose last try's
 * lease expired (it aborts them, and the finished hook hands them on), the
 * workflow layer sees their ids (those with a workflow key, read without
 * locks) and takes the locks of the runs they belong to: the same order as
 * a return's, so a sweep and a worker's return never wait for each other
 * in opposite orders.
 */
typedef void (*taskq_expiring_hook_type) (char **ids, int n);
extern PGDLLIMPORT taskq_expiring_hook_type taskq_expiring_hook;

/* ----------
 * The dependency graph and workflow locks (graph.c)
 * ----------
 */
extern void taskq_lock_dependency_graph(void);
extern void taskq_lock_workflow(const char *workflow, bool exclusive);
extern bool taskq_try_lock_workflow(const char *workflow);
extern List *taskq_lock_workflows(List *names);
extern void taskq_check_no_cycle_through(const char *id);
extern int64 taskq_add_dependency_pairs(List *afters, List *runs);

/* ----------
 * Claim starts (claim_start.c): set up and forgotten
 * ----------
 */
extern void taskq_claim_start_init(void);
/* flow_books.c: the slot books of limited actions (after the wakeups' callbacks) */
extern void taskq_books_init(void);
/* The current transaction wrote taskq.flow_limits (its trigger, api/cache_triggers.c). */
extern void taskq_books_limits_written(void);
extern void taskq_claim_start_reset(Oid dboid);
/* The rows an SQL statement wrote (the trigger taskq.tasks_written()). */
extern void taskq_flow_rows_written(Relation rel, Tuplestorestate *oldtable);
extern void taskq_claim_start_rows_written(Relation rel, Tuplestorestate *oldtable,
										   Tuplestorestate *newtable);
/* The rows an SQL statement deleted: their attempts go too (attempts.c). */
extern void taskq_attempts_tasks_deleted(Relation rel, Tuplestorestate *oldtable);

/* Waiting for a task to finish (wait.c) */
extern Datum taskq_wait_until_done(TaskqPlan *look, const char *key,
									const char *what, const char *fn, bool has_deadline,
									TimestampTz deadline, bool *isnull);
extern Datum taskq_wait_task(const char *id, bool has_deadline, TimestampTz deadline,
							 bool *isnull);

/*
 * Is this database's taskq schema at least 0.5 (the task columns of
 * trigger rules and results, the runs)?  (queue/tasks_shape.c)
 *
 * The legacy statements.  A new library runs in databases whose extension
 * is not updated yet (ALTER EXTENSION taskq UPDATE is per database, after
 * the restart that loaded the library).  For a schema older than 0.5 the
 * queue runs a legacy form of each statement that reads the columns 0.5
 * added, chosen by this function: the signals (signal.c), the completion
 * (complete.c), edges to stored tasks (insert.c, graph.c) and the
 * worker's retention (maintenance.c); the claim leaves claimed_at (0.6)
 * unwritten where the column is missing.  Each is marked "legacy" where it
 * is declared.  They all go together when updates from 0.4 are no longer
 * supported: the update scripts from 0.1-0.4 are removed in the same change.
 */
extern bool taskq_schema_at_least_0_5(void);

/* Performance tokens (token.c) */
extern void taskq_new_token(pg_uuid_t *token);

/* Task ids taskq makes: version-7 UUIDs as text (task_id.c) */
#define TASKQ_TASK_ID_LEN 36
extern void taskq_new_task_id(char *buf);

/* ----------
 * Maintenance (maintenance.c): the background worker's statements on the
 * task rows, and the actions of tasks for the per-action limits
 * (task_actions.c)
 * ----------
 */
#define TASKQ_RETENTION_BATCH 500
extern List *taskq_ready_actions(void);
extern List *taskq_came_due_actions(TimestampTz since, TimestampTz until);
extern void taskq_next_deadlines(TimestampTz now, TimestampTz *lease, bool *has_lease,
								 TimestampTz *delay, bool *has_delay);
extern uint64 taskq_delete_finished(TimestampTz cutoff);
extern bool taskq_oldest_finished(TimestampTz *finished_at);
extern List *taskq_tasks_not_of_actions(List *ids, char *const *actions, int nactions);

/* The gauges of taskq.metrics() written into taskq.metric_gauges (gauges.c). */
extern bool taskq_gauges_installed(void);
extern uint64 taskq_refresh_gauges(void);

/* ----------
 * A task as the workflow layer sees it (task_view.c)
 *
 * The workflow layer never reads or writes taskq.tasks itself: it asks
 * here, and compares statuses as TaskqStatus, never as labels.
 * ----------
 */

/* A task held by its owner, locked (taskq_lock_held_task). */
typedef struct TaskqHeld
{
	TaskqStatus code;
	int32		num_tries;
	bool		has_max_tries;
	int32		max_tries;
	bool		cancelled;		/* cancelled while owned: its return aborts it */
	char	   *action;
	TimestampTz claimed_at;		/* its last claim (0: unknown), for the metrics */
} TaskqHeld;

/*
 * Lock task id and check that token is its owner's (42704, TQ001); the
 * row's status and tries into *out.  The returns' and the workflow layer's
 * token checks.
 */
extern void taskq_lock_held_task(const char *id, pg_uuid_t *token, TaskqHeld *out);

/* A task's row, read (taskq_task_peek) or locked (taskq_task_lock_views). */
typedef struct TaskqTaskView
{
	char	   *id;
	TaskqStatus code;
	char	   *status;			/* human-readable status, or NULL */
	int32		num_tries;
	bool		has_max_tries;
	int32		max_tries;
	bool		cancelled;
	bool		owned;			/* in progress under a live lease */
	char	   *workflow;		/* workflow key, or NULL */
	bool		has_token;
	pg_uuid_t	token;			/* the last owner's performance token */
	char	   *action;
	Jsonb	   *body;			/* only with TASKQ_PEEK_BODY, else NULL */
} TaskqTaskView;

/* What taskq_task_peek does besides reading the row. */
#define TASKQ_PEEK_LOCK		0x01	/* lock the row (FOR UPDATE) */
#define TASKQ_PEEK_BODY		0x02	/* read its body too */
#define TASKQ_PEEK_READ_ONLY 0x04	/* in the caller's snapshot (SPI read-only) */

/* Task id into *out; false if there is no such task. */
extern bool taskq_task_peek(const char *id, int flags, TaskqTaskView *out);

/*
 * Lock the tasks of ids (FOR UPDATE, in id order, the lock order of task
 * rows): the rows found, in id order, their count in *n.
 */
extern TaskqTaskView *taskq_task_lock_views(List *ids, int *n);

/*
 * The tasks of ids (locked by the caller) that are in progress end on
 * their current try: a retry, a release or an expired lease aborts them.
 */
extern void taskq_tasks_last_try(List *ids);

/* ----------
 * Cancellation and re-drive (cancel.c)
 * ----------
 */

/*
 * Cancel the tasks of ids (sorted, distinct): an owned one is marked and
 * aborted by its owner's return, another is aborted at once with the
 * cascade.  Unknown ids and finished tasks are skipped.  Returns how many
 * were cancelled.  The tasks it finished are dispatched by the caller's
 * call (taskq_finished_dispatch).
 */
extern int64 taskq_cancel_ids(List *ids, const char *why);

/*
 * cancel_tasks and cancel_workflow for a key that is no run: cancel, then
 * hand the finished tasks to the seam.  The workflow key is recorded in
 * taskq.cancelled_workflows: a task inserted with it later is cancelled.
 */
extern int64 taskq_cancel_tasks_dispatch(List *ids, const char *why);
extern int64 taskq_cancel_workflow_key(const char *workflow);

/*
 * A join's unfinished predecessors of preds (sorted) no longer signal it:
 * their edges to it are taken away and its counts lowered by as many, so
 * that cancelling them does not rewrite the join's row once each (a map
 * state's items, before their cancel).
 */
extern void taskq_detach_join(const char *join, List *preds);

/* redrive_tasks: aborted tasks outside cancelled workflows, pending again. */
extern int64 taskq_redrive_ids(List *ids);

/* ----------
 * Retry policies (retry_policy.c)
 * ----------
 */

/* A retry policy's JSON checked (22023 naming argname). */
extern void taskq_check_retry_policy(Jsonb *policy, const char *argname);

#endif							/* TASKQ_QUEUE_H */
