/*-------------------------------------------------------------------------
 *
 * queue_internal.h
 *	  What the queue's files call of each other and nobody else does: the
 *	  direct paths' entry points, the ends of a task, the signals to
 *	  successors, the commit rule of claims.  Each heading names the file
 *	  that defines what is under it.  Only queue/ includes this header:
 *	  the layers above use queue.h, and through the hooks declared there
 *	  the queue tells the workflow layer what it finished.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_QUEUE_INTERNAL_H
#define TASKQ_QUEUE_INTERNAL_H

#include "storage/block.h"
#include "storage/itemptr.h"

#include "queue/queue.h"

struct TaskqRel;

/* claim_walk.c: the claim without the executor */

/*
 * Claim as req asks (its lease and moment already filled in by
 * taskq_claim); -1 if this path does not apply and the caller must run
 * the SQL claim.
 */
struct TaskqFlow;
extern int	taskq_claim_direct(const TaskqClaimRequest *req, struct TaskqFlow *flow,
							   Tuplestorestate *out, TupleDesc outdesc);

/* task_view.c: a task's token checked as a plan just read it */
extern void taskq_check_read_token(const char *id, int tokcol, pg_uuid_t *token,
								   const char *detail);

/* tasks_shape.c: whether the table has claimed_at (0.6), for the SQL claim */
extern bool taskq_claimed_at_installed(void);

/* claim_rows.c: where this backend's claims wrote their rows */
extern void taskq_remember_claimed(struct TaskqRel *d, Datum id, ItemPointer tid);
extern bool taskq_fetch_claimed(struct TaskqRel *d, const char *id, BlockNumber *nblocks);

/* claim_commit.c: the commit rule of transactions that wrote only claims */
extern bool taskq_wrote_only_claims(void);
extern void taskq_note_claim_written(bool only_claims);

/* complete.c: the completion of held tasks */

/*
 * One task to complete: the returned item (its id, token, status and
 * result), whose done the completion sets, and the successors it had.
 */
typedef struct TaskqCompletion
{
	TaskqReturnItem *item;
	List	   *succs;			/* when done: to_signal_after, as C strings */
	char	   *action;			/* when done, and limits or attempts may need it: its action */
	bool		deleted;		/* when done: deleted (taskq.retention = 0) */
} TaskqCompletion;

/* -1 from the direct path: it does not apply, the caller runs the SQL */
extern int	taskq_complete_direct(const char *caller, TaskqCompletion *tasks, int n);
extern void taskq_complete_sql(TaskqCompletion *tasks, int n);

/* insert_rows.c: a checked batch's rows written */
extern void taskq_insert_rows(List *specs, const int32 *inherited, bool if_absent);

/* flow_limits.c: concurrency limits, the limiter of a claim */
typedef struct TaskqFlow TaskqFlow;
extern TaskqFlow *taskq_flow_begin(List *actions, bool all_actions);
extern bool taskq_flow_action_full(TaskqFlow *f, const char *action);
extern bool taskq_flow_take(TaskqFlow *f, const char *action, const char *key,
							const char *id);
extern void taskq_flow_untake(TaskqFlow *f, const char *action, const char *key,
							  const char *id);
extern void taskq_flow_end(TaskqFlow *f);
extern bool taskq_flow_maybe_limited(void);
extern void taskq_flow_freed(const char *action, const char *id, bool woken);
extern bool taskq_flow_extend_ok(const char *action, const char *key, const char *id,
								 TimestampTz end);
extern void taskq_flow_lease(TaskqFlow *f, TimestampTz end);

/* flow_rates.c: the log of rate limits */
extern void taskq_flow_log_claims(const char *action, List *keys, TimestampTz at,
								  Interval *per);

/* flow_books.c: the slot books of actions limited by max_running alone */
#define TASKQ_BOOKS			64	/* books in the server */
#define TASKQ_BOOK_SLOTS	128 /* entries of a book: running tasks it can hold */
#define TASKQ_SLOT_GRACE_MS	5	/* a slot let go is its holder's to take again this long */
#define TASKQ_SLOT_LATE_MS	100 /* ... unless the worker has not come for it this long */
typedef struct TaskqBook TaskqBook;
extern uint64 taskq_books_limits_changes(void);
extern uint64 taskq_book_task(const char *id);
extern TaskqBook *taskq_book_of(const char *action, bool create);
typedef enum TaskqBookState
{
	TASKQ_BOOK_ROOM,			/* a slot may be reserved */
	TASKQ_BOOK_FULL,			/* none, and the book is exact enough */
	TASKQ_BOOK_STALE			/* count the rows again */
} TaskqBookState;
extern uint64 taskq_book_key(const char *key);
extern TaskqBookState taskq_book_state(TaskqBook *b, TransactionId version, int32 max,
									   int32 per_key, TimestampTz now);
extern bool taskq_book_reserve(TaskqBook *b, TransactionId version, int32 max, int32 per_key,
							   uint64 task, uint64 key, TimestampTz ends);
extern void taskq_book_note_written(TaskqBook *b, const char *id);
extern void taskq_book_unreserve(TaskqBook *b, uint64 task);
extern void taskq_book_bind(TaskqBook *b);
extern void taskq_book_free_at_commit(TaskqBook *b, const char *id, bool worker_wakes);
extern uint64 taskq_book_rebuild_begin(TaskqBook *b);
extern bool taskq_book_overflowed(TaskqBook *b, TransactionId version, TimestampTz now);
extern int	taskq_book_rebuild_end(TaskqBook *b, uint64 mark, TransactionId version,
								   const uint64 *tasks, const uint64 *keys,
								   const TimestampTz *ends, int n, bool install,
								   bool *installed);

/* action_policy.c: the actions' policies, kept per session */
extern List *taskq_policy_max_tries(List *specs, List **tries);
extern bool taskq_policy_keeps_attempts(const char *action);
extern bool taskq_policy_attempts_possible(void);

/* attempts.c: the history of attempts, for the actions that keep it */
extern void taskq_attempts_claim_begin(void);
extern void taskq_attempts_note_claim(Datum id, Datum action, int32 tries);
extern void taskq_attempts_claimed(const char *actor, TimestampTz at);
extern void taskq_attempt_end(const char *id, const char *action, const char *outcome,
							  const char *status, Jsonb *result, bool late);
extern void taskq_attempt_end_unknown_action(const char *id, const char *outcome);
extern void taskq_attempt_reopen(const char *id, const char *action);
extern void taskq_attempts_delete(List *ids);

/* lifecycle.c: the end of one task, and the tasks a call finished */
extern List *taskq_finish_row(const char *id, TaskqStatus code, const char *status);
extern void taskq_task_finished(const char *id, TaskqStatus outcome);
extern void taskq_task_release(const char *id, TaskqStatus cur);
extern void taskq_task_retry(const char *id, TaskqStatus cur, const char *status,
							 Interval *retry_delay);

/* signal.c: successors told that their predecessors finished */
extern void taskq_signal_completed(List *succs, List **work);
extern void taskq_complete_spontaneous(List *work);
extern void taskq_signal_aborted(const char *id, List *succs);
extern void taskq_signal_wait_again(List *succs);
extern bool taskq_signal_add_edges(const char *id, int32 k, bool unstarted);
extern void taskq_signal_finished_edge(const char *after, const char *run,
									   TaskqStatus outcome);

/* signal_counter.c: a join's deferred signals added to without the executor */
typedef enum TaskqCounterResult
{
	TASKQ_COUNTER_ADDED,		/* the signals are in the counter */
	TASKQ_COUNTER_ABSENT,		/* no counter: the caller creates it */
	TASKQ_COUNTER_SQL			/* the caller runs its UPDATE */
} TaskqCounterResult;

extern TaskqCounterResult taskq_signal_counter_add(const char *id, int32 stripe, int32 k);

#endif							/* TASKQ_QUEUE_INTERNAL_H */
