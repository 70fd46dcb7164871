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
 * worker wakes at that moment and broadcasts (worker/loop.c).  A broadcast
 * wakes every sleeper of its slot; they all claim, and a task goes to one
 * of them because claims skip rows others hold (claim_walk.c), the others
 * sleep again.  A long recheck guards against ready work that sent no
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
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "ipc/wakeup.h"
#include "queue/queue.h"

/* Claim again at least this often even without a wakeup. */
#define CLAIM_WAIT_RECHECK_MS 10000

int
taskq_claim_wait(const TaskqClaimRequest *req, TimestampTz deadline,
				 Tuplestorestate *out, TupleDesc outdesc)
{
	TaskqClaimRequest r = *req;
	ConditionVariable *cv;
	int			n;

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

	if (!r.all_actions && list_length(r.actions) == 1)
		cv = taskq_ready_cv(linitial(r.actions));
	else
		cv = taskq_ready_cv(NULL);
	r.skip_sweep = true;

	for (;;)
	{
		long		left;

		ConditionVariablePrepareToSleep(cv);
		r.now = GetCurrentTimestamp();
		n = taskq_claim(&r, out, outdesc);
		if (n > 0)
			break;
		if (r.max_tasks == 0)
			break;				/* nothing asked for: nothing to wait for */
		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (left <= 0)
			break;
		(void) ConditionVariableTimedSleep(cv, Min(left, CLAIM_WAIT_RECHECK_MS),
										   PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
	ConditionVariableCancelSleep();
	return n;
}
