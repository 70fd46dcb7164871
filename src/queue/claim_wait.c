/*-------------------------------------------------------------------------
 *
 * claim_wait.c
 *	  A claim that waits for work: own_tasks with a wait.  When there is no
 *	  ready task of its actions, it sleeps on a condition variable until a
 *	  commit makes some ready, then claims again, until its deadline.
 *
 * The sleeper prepares to sleep before each claim, so a commit between the
 * claim that found nothing and the sleep is not lost.  Committing
 * transactions that made work ready broadcast the condition variable of
 * each such action and that of the database's claims of any action
 * (ipc/wakeup.c): an insert, the last signal of a predecessor (also one
 * the worker folds), a retry or release without delay, a redrive, a lease
 * the worker expired.  Work that becomes ready with time (a not_before
 * that comes, a retry delay that passes) has no commit: the background
 * worker wakes at that moment and broadcasts (worker/loop.c).  A commit
 * wakes one more claim waiting for one action than it made tasks of it
 * ready (all of them if claims of another action share the slot), and every
 * claim waiting for several or any actions; a task goes to one of those
 * that look because claims skip rows others hold (claim_walk.c), the
 * others sleep again.  A claim of one action registers in its slot before
 * its first look and leaves when it returns; one woken after its last look
 * passes the wake on as it returns (ipc/wakeup.c has the rule).  A long recheck guards against ready work that sent no
 * broadcast (a prepared transaction, a row changed by hand); it is not a
 * polling loop.
 *
 * Each attempt is a claim of its own moment: the walk's snapshot is taken
 * afresh (READ COMMITTED), and what is delayed is compared with the clock,
 * not with the transaction's start.  A waiting claim never runs the lease
 * sweep: rows it expired and then slept on would stay locked until its
 * transaction ends; the worker expires leases and wakes the waiters.  The
 * condition variables need no lock; nothing here holds one while asleep.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/proc.h"
#include "storage/proclist.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "common/pg_compat.h"
#include "ipc/shmem.h"
#include "ipc/wakeup.h"
#include "queue/queue.h"

/* Claim again at least this often even without a wakeup. */
#define CLAIM_WAIT_RECHECK_MS 10000

/* Claim, sleep on cv while there is nothing, until the deadline. */
static int
claim_or_sleep(TaskqClaimRequest *r, ConditionVariable *cv, TimestampTz deadline,
			   Tuplestorestate *out, TupleDesc outdesc)
{
	int			n;

	for (;;)
	{
		long		left;

		ConditionVariablePrepareToSleep(cv);
		r->now = GetCurrentTimestamp();
		n = taskq_claim(r, out, outdesc);
		if (n > 0)
			break;
		if (r->max_tasks == 0)
			break;				/* nothing asked for: nothing to wait for */
		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (left <= 0)
			break;
		(void) ConditionVariableTimedSleep(cv, Min(left, CLAIM_WAIT_RECHECK_MS),
										   PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
	return n;
}

/*
 * Was this claim woken since its last look (it is no longer in cv's
 * queue, where the look's ConditionVariablePrepareToSleep put it)?
 */
static bool
woken_since_look(ConditionVariable *cv)
{
	bool		queued;

	SpinLockAcquire(&cv->mutex);
	queued = proclist_contains(&cv->wakeup, TASKQ_PROC_NUMBER, cvWaitLink);
	SpinLockRelease(&cv->mutex);
	return !queued;
}

int
taskq_claim_wait(const TaskqClaimRequest *req, TimestampTz deadline,
				 Tuplestorestate *out, TupleDesc outdesc)
{
	TaskqClaimRequest r = *req;
	ConditionVariable *cv;
	volatile bool one_action;
	volatile int n = 0;

	if (!taskq_shmem_available())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("argument \"wait\" of taskq.own_tasks requires taskq to be loaded via shared_preload_libraries"),
				 errhint("Add taskq to shared_preload_libraries in postgresql.conf and restart the server, or call taskq.own_tasks without \"wait\".")));
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("argument \"wait\" of taskq.own_tasks requires the READ COMMITTED isolation level"),
				 errdetail("A transaction with one snapshot cannot see the work a wait is for.")));

	one_action = !r.all_actions && list_length(r.actions) == 1;
	if (one_action)
	{
		cv = taskq_ready_cv(linitial(r.actions));
		taskq_ready_join(linitial(r.actions));	/* before the first look */
	}
	else
		cv = taskq_ready_cv(NULL);
	r.skip_sweep = true;

	PG_TRY();
	{
		n = claim_or_sleep(&r, cv, deadline, out, outdesc);
	}
	PG_FINALLY();
	{
		/*
		 * A commit wakes only some of the claims of one action: a wake
		 * that came after this claim's last look may have been
		 * for work it did not see, so it goes to the next claim waiting
		 * (an error, a deadline, or a look that began before that commit).
		 */
		if (one_action)
		{
			if (woken_since_look(cv))
				ConditionVariableSignal(cv);
			taskq_ready_leave();
		}
		ConditionVariableCancelSleep();
	}
	PG_END_TRY();
	return n;
}
