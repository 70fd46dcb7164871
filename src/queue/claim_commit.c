/*-------------------------------------------------------------------------
 *
 * claim_commit.c
 *	  Which commits may skip the WAL flush: transactions that wrote only
 *	  claims.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "common/pg_compat.h"
#include "common/settings.h"
#include "queue/queue_internal.h"

/*
 * A transaction that wrote nothing but claims need not wait for the WAL
 * flush at commit: if the server crashes before the flush, the claim is
 * lost, the task is pending again and will be handed out again, and the
 * lost claim's token is refused — what an expired lease means anyway, and
 * at-least-once delivery allows it.  What the worker does next is durable:
 * a return commits synchronously, and a commit's flush covers every earlier
 * commit record, the claim's included.
 *
 * "Nothing but claims" is checked, not assumed: before a claim the
 * transaction must have no transaction id (it wrote nothing) or have
 * written nothing since its last claim; after the claim we note where this
 * transaction's WAL ended, and at pre-commit the commit goes asynchronous
 * only if the transaction's WAL still ends there.  So a statement that also
 * returns or inserts tasks, or a writable CTE around own_tasks, commits as
 * the session says.  (Writes that make no WAL, to temporary or unlogged
 * tables, do not survive a crash anyway.)  A claim inside an explicit
 * transaction block keeps the session's setting, as documented: that is
 * how a caller asks for a durable claim.
 */
static LocalTransactionId claims_only_lxid = InvalidLocalTransactionId;
static XLogRecPtr claims_only_end = InvalidXLogRecPtr;

/* Has this transaction written nothing but claims so far? */
bool
taskq_wrote_only_claims(void)
{
	if (!TransactionIdIsValid(GetTopTransactionIdIfAny()))
		return true;
	return claims_only_lxid == TASKQ_MY_LXID && claims_only_end == XactLastRecEnd;
}

/* After a claim that wrote rows; only_claims is wrote_only_claims() before it. */
void
taskq_note_claim_written(bool only_claims)
{
	if (only_claims)
	{
		claims_only_lxid = TASKQ_MY_LXID;
		claims_only_end = XactLastRecEnd;
	}
	else
		claims_only_lxid = InvalidLocalTransactionId;
}

static void
claims_only_xact_callback(XactEvent event, void *arg)
{
	if (claims_only_lxid != TASKQ_MY_LXID)
		return;
	if (event == XACT_EVENT_PRE_COMMIT && taskq_async_claims &&
		claims_only_end == XactLastRecEnd)
	{
		(void) set_config_option("synchronous_commit", "off",
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL,
								 true, 0, false);
		elog(DEBUG1, "taskq: the transaction wrote only claims: its commit does not wait for the WAL flush");
	}
	if (event != XACT_EVENT_PRE_COMMIT)
		claims_only_lxid = InvalidLocalTransactionId;	/* the end of it */
}

/* Called once from _PG_init. */
void
taskq_register_claim_callbacks(void)
{
	RegisterXactCallback(claims_only_xact_callback, NULL);
}
