/*-------------------------------------------------------------------------
 *
 * wakeup.c
 *	  What a transaction tells other processes when it commits: which
 *	  tasks finished (wait_for_task's waiters wake), which actions got
 *	  ready work (the database's worker announces them with NOTIFY), and
 *	  whether it deferred signals for the worker to add (queue/signal.c).
 *	  The same ready actions wake the claims that wait for work of them
 *	  (queue/claim_wait.c), and delayed work tells the worker when to look.
 *
 * The hot paths only note these in backend-local memory.  The commit
 * callback runs after the commit is visible and publishes them: it
 * broadcasts the condition variables of the finished tasks' slots, merges
 * the actions into the database's slot and sets the worker's latch (or the
 * launcher's, if the database has no worker yet); it wakes the claims
 * waiting for the ready actions and every claim of the database waiting
 * for several or any actions, and lowers the slot's next_due to the earliest not_before it
 * committed (waking the worker only if that moved).  Announcements (NOTIFY
 * taskq, taskq_progress) are merged only while some session of the
 * database has run LISTEN on one of those channels (taskq_note_listener,
 * from the utility hook): otherwise nobody would hear them, and waking the
 * worker for each commit cost an enqueue of one task a sixth of its CPU,
 * the worker's transaction besides.  A session counts from its LISTEN to
 * its exit (an UNLISTEN is not followed); a producer that saw no listener
 * committed before the listener's LISTEN, so the listener's first claim,
 * which follows its LISTEN, finds that work.  So producers never
 * NOTIFY themselves and never queue behind the notification lock.  Nothing
 * here may fail: an error after commit would be a PANIC, so the local
 * notes live in fixed arrays and an overflow just widens the announcement.
 *
 * A commit that made c tasks of an action ready wakes c + 1 of the claims
 * waiting for that action, not all of them: with many idle workers each
 * task woke every one, and all but one claimed nothing (16 idle workers
 * took 1.9 ms of CPU per task at 300 tasks/s, 1.3 with c + 1).  One more
 * than c, because ConditionVariableSignal wakes the longest waiting, which
 * need not be the first to get a CPU: with exactly c the claim came about
 * 0.1 ms later at p50 with 16 idle workers; with two racing for a task, as
 * soon as with all.  That is safe only if any claim in the slot can take
 * the work: slots are hashed, so each records (ready_waiters) the
 * (database, action) of its claims, and a slot where claims of two wait is
 * woken whole, as is one where c + 1 is not below the number waiting.  A claim registers before its first look
 * and stays until it returns, so one that registered after the commit
 * looked at the slot looks at the table after that commit.  A woken claim
 * that returns without looking again passes the wake on (claim_wait.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/ipc.h"

#include "common/settings.h"
#include "ipc/shmem.h"
#include "ipc/wakeup.h"

#define LOCAL_READY_ACTIONS 16

/* Notes of the current transaction. */
static uint64 finished_slots = 0;
static int	nready = 0;
static bool ready_overflow = false;
static bool deferred = false;
static TimestampTz due = 0;		/* earliest delayed not_before written */
static char ready[LOCAL_READY_ACTIONS][TASKQ_NOTIFY_NAME_LEN];
static int	ready_tasks[LOCAL_READY_ACTIONS];	/* notes of each ready action */

/* This session counted itself among its database's listeners. */
static bool listener_counted = false;

static int
finish_slot(const char *id)
{
	return hash_bytes((const unsigned char *) id, strlen(id)) % TASKQ_FINISH_SLOTS;
}

ConditionVariable *
taskq_finish_cv(const char *id)
{
	Assert(taskq_shared != NULL);
	return &taskq_shared->finish_cv[finish_slot(id)];
}

/*
 * The slot of ready_cv of (this database, action), and (if key is given)
 * the 64-bit hash of both that the slot is taken from, which tells the
 * claims of different actions in one slot apart.
 */
static int
ready_slot(const char *action, uint64 *key)
{
	uint64		h = hash_bytes_extended((const unsigned char *) action, strlen(action),
										MyDatabaseId);

	if (key != NULL)
		*key = h;
	return h % TASKQ_READY_SLOTS;
}

/*
 * The condition variable a claim that waits for work sleeps on: that of
 * its action in this database, or (action NULL) that of the claims of
 * several or any actions in this database.
 */
ConditionVariable *
taskq_ready_cv(const char *action)
{
	Assert(taskq_shared != NULL);
	if (action == NULL)
		return &taskq_shared->any_ready_cv[MyDatabaseId % TASKQ_ANY_READY_SLOTS];
	return &taskq_shared->ready_cv[ready_slot(action, NULL)];
}

/* The slot this backend's waiting claim registered in, or -1. */
static int	registered_slot = -1;

static void
ready_leave_at_exit(int code, Datum arg)
{
	taskq_ready_leave();
}

/*
 * A claim that waits for work of this one action registers in its slot,
 * before it first looks for work, until taskq_ready_leave (called as it
 * returns, whether with tasks or with an error, and as the process exits).
 */
void
taskq_ready_join(const char *action)
{
	static bool exit_registered = false;
	uint64		key;
	int			i = ready_slot(action, &key);
	TaskqReadyWaiters *w = &taskq_shared->ready_waiters[i];

	if (!exit_registered)
	{
		before_shmem_exit(ready_leave_at_exit, (Datum) 0);
		exit_registered = true;
	}
	taskq_ready_leave();
	SpinLockAcquire(&w->mutex);
	if (w->count == 0)
	{
		w->key = key;
		w->mixed = false;
	}
	else if (w->key != key)
		w->mixed = true;
	w->count++;
	SpinLockRelease(&w->mutex);
	registered_slot = i;
}

void
taskq_ready_leave(void)
{
	TaskqReadyWaiters *w;

	if (registered_slot < 0 || taskq_shared == NULL)
		return;
	w = &taskq_shared->ready_waiters[registered_slot];
	registered_slot = -1;
	SpinLockAcquire(&w->mutex);
	if (--w->count <= 0)
	{
		w->count = 0;
		w->mixed = false;
	}
	SpinLockRelease(&w->mutex);
}

/*
 * Wake n + 1 of the claims waiting for work of this action (n tasks became
 * ready), if every claim in its slot is one; every claim in the slot if
 * claims of another action wait there too; none if only those of another
 * action do.
 */
static void
wake_ready_tasks(const char *action, int n)
{
	uint64		key;
	int			i = ready_slot(action, &key);
	TaskqReadyWaiters *w = &taskq_shared->ready_waiters[i];
	int			count;
	bool		mixed;
	bool		ours;

	SpinLockAcquire(&w->mutex);
	count = w->count;
	mixed = w->mixed;
	ours = w->key == key;
	SpinLockRelease(&w->mutex);
	if (count == 0 || (!mixed && !ours))
		return;
	if (mixed || n + 1 >= count)
		ConditionVariableBroadcast(&taskq_shared->ready_cv[i]);
	else
		for (int k = 0; k <= n; k++)
			ConditionVariableSignal(&taskq_shared->ready_cv[i]);
}

/*
 * Wake the claims waiting for work of this action (NULL: of every action)
 * now: work that became ready with time (a not_before that came), which no
 * commit announces.  The background worker calls it.
 */
void
taskq_wake_ready(const char *action)
{
	if (taskq_shared == NULL)
		return;
	if (action == NULL)
		for (int i = 0; i < TASKQ_READY_SLOTS; i++)
			ConditionVariableBroadcast(&taskq_shared->ready_cv[i]);
	else
		ConditionVariableBroadcast(taskq_ready_cv(action));
	ConditionVariableBroadcast(taskq_ready_cv(NULL));
}

/* The latch of this database's running, unpaused worker, or NULL. */
static Latch *
running_worker_latch(void)
{
	TaskqDbSlot *slot;
	Latch	   *latch = NULL;

	if (taskq_shared == NULL)
		return NULL;
	LWLockAcquire(taskq_shared->lock, LW_SHARED);
	slot = taskq_find_db_slot(MyDatabaseId);
	if (slot != NULL && !slot->paused)
		latch = slot->worker_latch;
	LWLockRelease(taskq_shared->lock);
	return latch;
}

/*
 * Wake n of the claims waiting for work of this action (as a commit that
 * made n - 1 tasks of it ready would), and every claim waiting for several
 * or any actions: n slots of a limited action are free.  The background
 * worker calls it for slots let go and not taken again
 * (queue/flow_books.c).
 */
void
taskq_wake_ready_some(const char *action, int n)
{
	if (taskq_shared == NULL || n <= 0)
		return;
	wake_ready_tasks(action, n - 1);
	ConditionVariableBroadcast(taskq_ready_cv(NULL));
}

/*
 * Set the latch of this database's background worker, at once.  Returns
 * false if it has none running (or it is paused): the caller then does
 * itself what it asked the worker for.
 */
bool
taskq_wake_worker(void)
{
	Latch	   *latch = running_worker_latch();

	if (latch != NULL)
		SetLatch(latch);
	return latch != NULL;
}

/* The current transaction wrote pending work that is ready at this moment. */
void
taskq_note_due(TimestampTz not_before)
{
	if (due == 0 || not_before < due)
		due = not_before;
}

/*
 * The worker: the earliest not_before producers committed since it last
 * took it (0: none), cleared.
 */
TimestampTz
taskq_next_due_take(void)
{
	TaskqDbSlot *slot;
	TimestampTz result = 0;

	LWLockAcquire(taskq_shared->lock, LW_EXCLUSIVE);
	slot = taskq_find_db_slot(MyDatabaseId);
	if (slot != NULL)
	{
		result = slot->next_due;
		slot->next_due = 0;
	}
	LWLockRelease(taskq_shared->lock);
	return result;
}

/* The current transaction finished this task: wake its waiters at commit. */
void
taskq_note_finished(const char *id)
{
	finished_slots |= UINT64CONST(1) << finish_slot(id);
}

/* Remember one announcement ("<kind><name>") for the commit, n times. */
static void
note_announcement(char kind, const char *name, int n)
{
	char		entry[TASKQ_NOTIFY_NAME_LEN];

	if (ready_overflow)
		return;
	if (name == NULL || strlen(name) + 2 > TASKQ_NOTIFY_NAME_LEN)
	{
		ready_overflow = true;
		return;
	}
	entry[0] = kind;
	strlcpy(entry + 1, name, TASKQ_NOTIFY_NAME_LEN - 1);
	for (int i = nready - 1; i >= 0; i--)
		if (strcmp(ready[i], entry) == 0)
		{
			ready_tasks[i] = Min((int64) ready_tasks[i] + n, PG_INT32_MAX);
			return;
		}
	if (nready == LOCAL_READY_ACTIONS)
	{
		ready_overflow = true;
		return;
	}
	ready_tasks[nready] = n;
	strlcpy(ready[nready++], entry, TASKQ_NOTIFY_NAME_LEN);
}

/*
 * The current transaction made a task of this action ready (once per task,
 * or more: an extra note only wakes a claim more); NULL means some action
 * we did not look up (announce all).
 */
void
taskq_note_ready(const char *action)
{
	note_announcement('a', action, 1);
}

/* The same for n tasks of the action. */
void
taskq_note_ready_tasks(const char *action, int n)
{
	note_announcement('a', action, n);
}

/*
 * The current transaction reported progress of this job, to be announced
 * if taskq.announce_progress is on.  (On overflow the
 * worker announces every action with ready work, but no progress: progress
 * announcements are a convenience; the job's row is the truth.)
 */
void
taskq_note_progress(const char *job)
{
	/* job ids may say something about the data: only when asked for */
	if (taskq_announce_progress)
		note_announcement('j', job, 1);
}

/* The current transaction deferred signals: the worker must fold them. */
void
taskq_note_deferred(void)
{
	deferred = true;
}

/*
 * Does this database's background worker run now?  Signals are deferred
 * only then: with no worker to add them a join would wait.  (A worker that
 * dies later is restarted by the postmaster and adds them then.)
 */
bool
taskq_worker_running(void)
{
	return running_worker_latch() != NULL;
}

/*
 * The worker: did a transaction defer signals since the flag was last
 * cleared?  With clear false it only looks: the flag stays set, and
 * committing transactions do not wake the worker again for it.
 */
bool
taskq_deferred_take(bool clear)
{
	TaskqDbSlot *slot;
	bool		result = false;

	LWLockAcquire(taskq_shared->lock, clear ? LW_EXCLUSIVE : LW_SHARED);
	slot = taskq_find_db_slot(MyDatabaseId);
	if (slot != NULL)
	{
		result = slot->signals_deferred;
		if (clear)
			slot->signals_deferred = false;
	}
	LWLockRelease(taskq_shared->lock);
	return result;
}

/* The database's entry in the listener counts; caller holds the lock. */
static TaskqListeners *
find_listeners(Oid dboid)
{
	for (int i = 0; i < TASKQ_LISTEN_DATABASES; i++)
		if (taskq_shared->listeners[i].dboid == dboid &&
			taskq_shared->listeners[i].count > 0)
			return &taskq_shared->listeners[i];
	return NULL;
}

/* Does a session of this database listen for announcements?  Caller holds the lock. */
static bool
heard_here(void)
{
	return taskq_shared->listeners_overflow || find_listeners(MyDatabaseId) != NULL;
}

/* Does any session of this database listen for announcements? */
bool
taskq_database_heard(void)
{
	bool		heard;

	if (taskq_shared == NULL)
		return false;
	LWLockAcquire(taskq_shared->lock, LW_SHARED);
	heard = heard_here();
	LWLockRelease(taskq_shared->lock);
	return heard;
}

static void
listener_exit(int code, Datum arg)
{
	TaskqListeners *l;

	LWLockAcquire(taskq_shared->lock, LW_EXCLUSIVE);
	l = find_listeners(MyDatabaseId);
	if (l != NULL)
		l->count--;
	LWLockRelease(taskq_shared->lock);
}

/*
 * This session runs LISTEN taskq or LISTEN taskq_progress: count it among
 * its database's listeners until it exits, so that producers have the
 * worker announce their work.  Called before the LISTEN runs.
 */
void
taskq_note_listener(void)
{
	TaskqListeners *l;

	if (listener_counted || taskq_shared == NULL || !OidIsValid(MyDatabaseId))
		return;
	LWLockAcquire(taskq_shared->lock, LW_EXCLUSIVE);
	l = find_listeners(MyDatabaseId);
	for (int i = 0; l == NULL && i < TASKQ_LISTEN_DATABASES; i++)
		if (taskq_shared->listeners[i].count == 0)
		{
			l = &taskq_shared->listeners[i];
			l->dboid = MyDatabaseId;
		}
	if (l != NULL)
		l->count++;
	else
		taskq_shared->listeners_overflow = true;	/* stays: announce everywhere */
	LWLockRelease(taskq_shared->lock);
	listener_counted = true;
	if (l != NULL)
		before_shmem_exit(listener_exit, (Datum) 0);
}

/*
 * Merge one action into a slot's pending set; caller holds the lock.
 * Returns true if the set changed (the worker has not yet been told).
 */
static bool
slot_add_pending(TaskqDbSlot *slot, const char *action)
{
	if (slot->pending_overflow)
		return false;
	for (int i = 0; i < slot->npending; i++)
		if (strcmp(slot->pending[i], action) == 0)
			return false;
	if (slot->npending == TASKQ_PENDING_ACTIONS)
		slot->pending_overflow = true;
	else
		strlcpy(slot->pending[slot->npending++], action, TASKQ_NOTIFY_NAME_LEN);
	return true;
}

/*
 * Publish the notes in the database's slot and wake its worker, but only if
 * the slot changed: what is there already was announced to the worker by
 * the transaction that put it there, so a burst of commits for one action
 * costs one wakeup, not one each.
 */
static void
publish_ready(void)
{
	TaskqDbSlot *slot;
	Latch	   *latch = NULL;
	bool		changed = false;

	LWLockAcquire(taskq_shared->lock, LW_EXCLUSIVE);
	slot = taskq_find_db_slot(MyDatabaseId);
	if (slot != NULL)
	{
		bool		heard = heard_here();

		if (heard && ready_overflow && !slot->pending_overflow)
		{
			slot->pending_overflow = true;
			changed = true;
		}
		if (deferred && !slot->signals_deferred)
		{
			slot->signals_deferred = true;
			changed = true;
		}
		for (int i = 0; heard && i < nready; i++)
			changed |= slot_add_pending(slot, ready[i]);
		if (due != 0 && (slot->next_due == 0 || due < slot->next_due))
		{
			slot->next_due = due;
			changed = true;
		}
		latch = slot->worker_latch;
		if (latch == NULL)
		{
			slot->retry_after = 0;	/* taskq is used here: start a worker now */
			changed = true;
		}
	}
	if (latch == NULL)
	{
		latch = taskq_shared->launcher_latch;	/* start a worker here */
		changed = true;
	}
	LWLockRelease(taskq_shared->lock);

	if (latch != NULL && changed)
		SetLatch(latch);
}

static void
reset_notes(void)
{
	finished_slots = 0;
	nready = 0;
	ready_overflow = false;
	deferred = false;
	due = 0;
}

/* Wake the claims waiting for the ready actions, and those waiting for any. */
static void
wake_waiting_claims(void)
{
	bool		any = false;

	if (ready_overflow)
	{
		taskq_wake_ready(NULL);
		return;
	}
	for (int i = 0; i < nready; i++)
		if (ready[i][0] == 'a')
		{
			wake_ready_tasks(ready[i] + 1, ready_tasks[i]);
			any = true;
		}
	if (any)
		ConditionVariableBroadcast(taskq_ready_cv(NULL));
}

static void
taskq_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (taskq_shared != NULL)
			{
				for (int i = 0; i < TASKQ_FINISH_SLOTS; i++)
					if (finished_slots & (UINT64CONST(1) << i))
						ConditionVariableBroadcast(&taskq_shared->finish_cv[i]);
				if (nready > 0 || ready_overflow)
					wake_waiting_claims();
				if (nready > 0 || ready_overflow || deferred || due != 0)
					publish_ready();
			}
			reset_notes();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			/* a prepared transaction's work is found by polling */
			reset_notes();
			break;
		default:
			break;
	}
}

void
taskq_register_xact_callbacks(void)
{
	RegisterXactCallback(taskq_xact_callback, NULL);
}
