/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  Layout of taskq's shared memory (only with shared_preload_libraries).
 *
 * TaskqShared->lock protects the database slots; the condition variables
 * need no lock.  finish_cv wakes wait_for_task; ready_cv and any_ready_cv
 * wake claims that wait for work (queue/claim_wait.c): a claim of one
 * action sleeps on the slot of (database, action), any other on its
 * database's slot of any_ready_cv, and a commit that made work ready wakes
 * one more claim of the first than it made tasks ready and every claim of
 * the second (ipc/wakeup.c).  ready_waiters says who sleeps in each slot
 * of ready_cv, under its own spinlock.  (The claims' starts have shared memory of their own:
 * queue/claim_start.c.)  A slot belongs to one database: the launcher fills dboid
 * and the worker handle, the worker publishes its latch, producers add the
 * actions that got ready work at commit, and the worker takes them.
 * listeners (under the same lock) counts, per database, the sessions that
 * listen for announcements (ipc/wakeup.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_SHMEM_H
#define TASKQ_SHMEM_H

#include "postmaster/bgworker.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/spin.h"

#include "datatype/timestamp.h"

#define TASKQ_FINISH_SLOTS		64	/* wait_for_task condition variables */
#define TASKQ_READY_SLOTS		64	/* waiting claims of one action */
#define TASKQ_ANY_READY_SLOTS	16	/* waiting claims of several or any actions */
#define TASKQ_MAX_DATABASES		64	/* databases with a worker */
#define TASKQ_PENDING_ACTIONS	32	/* distinct actions awaiting NOTIFY */
#define TASKQ_NOTIFY_NAME_LEN	258 /* kind byte + a name of up to 255 bytes + NUL */
#define TASKQ_LISTEN_DATABASES	64	/* databases whose sessions LISTEN for taskq */

typedef struct TaskqDbSlot
{
	Oid			dboid;			/* InvalidOid: free slot */
	bool		has_worker;		/* launcher registered a worker (it keeps the handle) */
	pid_t		worker_pid;		/* set by the worker while it runs */
	Latch	   *worker_latch;	/* likewise */
	bool		paused;			/* DROP/RENAME DATABASE in progress */
	TimestampTz retry_after;	/* no extension here: don't start before */
	/*
	 * Announcements not yet sent, each a kind byte and a name: 'a' + action
	 * (new ready work, channel taskq), 'j' + job (progress, channel
	 * taskq_progress).
	 */
	int			npending;
	bool		pending_overflow;	/* too many: announce every ready action */
	bool		signals_deferred;	/* taskq.deferred_signals has rows to fold */
	/*
	 * The earliest not_before a producer committed since the worker last
	 * looked (0: none): the worker wakes for it, so that a delayed task is
	 * ready for a waiting claim when its time comes, not at the next nap.
	 */
	TimestampTz next_due;
	char		pending[TASKQ_PENDING_ACTIONS][TASKQ_NOTIFY_NAME_LEN];
} TaskqDbSlot;

/*
 * Sessions of a database that ran LISTEN taskq or LISTEN taskq_progress
 * (counted once per session, until it exits): without any, nobody hears an
 * announcement, and producers do not wake the worker to send one.
 */
typedef struct TaskqListeners
{
	Oid			dboid;			/* InvalidOid (or count 0): free */
	int			count;
} TaskqListeners;

/*
 * Who waits in a slot of ready_cv: the claims of one (database, action), by
 * a 64-bit hash of both, or (mixed) of several, which must all be woken.
 */
typedef struct TaskqReadyWaiters
{
	slock_t		mutex;
	int			count;			/* claims registered in the slot */
	uint64		key;			/* their (database, action), if not mixed */
	bool		mixed;
} TaskqReadyWaiters;

typedef struct TaskqSharedState
{
	LWLock	   *lock;
	Latch	   *launcher_latch;
	pid_t		launcher_pid;
	TaskqDbSlot dbs[TASKQ_MAX_DATABASES];
	ConditionVariable finish_cv[TASKQ_FINISH_SLOTS];
	ConditionVariable ready_cv[TASKQ_READY_SLOTS];
	TaskqReadyWaiters ready_waiters[TASKQ_READY_SLOTS];
	ConditionVariable any_ready_cv[TASKQ_ANY_READY_SLOTS];
	TaskqListeners listeners[TASKQ_LISTEN_DATABASES];
	bool		listeners_overflow; /* more databases: announce everywhere */
} TaskqSharedState;

extern TaskqSharedState *taskq_shared;

/* Called from _PG_init while shared_preload_libraries is processed. */
extern void taskq_shmem_init_hooks(void);

/* Is taskq's shared memory there (taskq preloaded)? */
extern bool taskq_shmem_available(void);

/* The slot of a database, or NULL; caller holds taskq_shared->lock. */
extern TaskqDbSlot *taskq_find_db_slot(Oid dboid);

#endif							/* TASKQ_SHMEM_H */
