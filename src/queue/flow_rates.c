/*-------------------------------------------------------------------------
 *
 * flow_rates.c
 *	  The log of rate limits (taskq.flow_claims): the claims of a
 *	  rate-limited action written and the rows that left the window pruned,
 *	  by the claim (flow_limits.c decides what it may take); the windows
 *	  that reopened, for the background worker to announce.
 *
 * Locking: a claim writes the log under the action's limiter lock, held
 * to its commit (flow_limits.c); the claims and the worker delete rows
 * that left the window with SKIP LOCKED, so neither waits for the other.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "common/args.h"
#include "common/plan.h"
#include "ipc/wakeup.h"
#include "queue/queue_internal.h"

/* The claims of rate-limited actions logged, at the claim's clock time. */
static TaskqPlan log_plan = {
	"INSERT INTO taskq.flow_claims (action, key, claimed_at)"
	" SELECT $1, k, $3 FROM pg_catalog.unnest($2::text[]) AS k",
	3, {TEXTOID, TEXTARRAYOID, TIMESTAMPTZOID}, NULL, true
};

/* Claims that left the window; rows the worker is deleting are skipped. */
static TaskqPlan prune_plan = {
	"DELETE FROM taskq.flow_claims WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
	"  SELECT ctid FROM taskq.flow_claims"
	"   WHERE action OPERATOR(pg_catalog.=) $1 AND claimed_at OPERATOR(pg_catalog.<=) $2"
	"   FOR UPDATE SKIP LOCKED))",
	2, {TEXTOID, TIMESTAMPTZOID}, NULL, true
};

/*
 * Log the claims of action at the claim's clock time at (keys: the key of
 * each, NULL for none; the action's limiter lock held to the end of the
 * transaction), delete those that left the window of length per (rows the
 * worker is deleting are skipped, never waited for), and have the worker
 * wake when the window reopens.
 */
void
taskq_flow_log_claims(const char *action, List *keys, TimestampTz at, Interval *per)
{
	Datum		prune_args[2];
	Datum		args[3];
	int			n = list_length(keys);
	Datum	   *values = palloc(sizeof(Datum) * Max(n, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(n, 1));
	int			dims[1] = {n};
	int			lbs[1] = {1};
	ListCell   *lc;

	foreach(lc, keys)
	{
		int			i = foreach_current_index(lc);

		nulls[i] = lfirst(lc) == NULL;
		values[i] = nulls[i] ? (Datum) 0 : CStringGetTextDatum(lfirst(lc));
	}
	args[0] = CStringGetTextDatum(action);
	args[1] = PointerGetDatum(construct_md_array(values, nulls, 1, dims, lbs, TEXTOID, -1,
												 false, TYPALIGN_INT));
	args[2] = TimestampTzGetDatum(at);
	taskq_execute(&log_plan, args, NULL, false, 0);
	prune_args[0] = args[0];
	prune_args[1] = DirectFunctionCall2(timestamptz_mi_interval, args[2], IntervalPGetDatum(per));
	taskq_execute_latest(&prune_plan, prune_args, NULL, false);
	taskq_note_due(DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval, args[2],
														   IntervalPGetDatum(per))));
}


/* ----------
 * Rate windows that reopen, for the background worker
 * ----------
 */
/* rows a claim is deleting are skipped: the worker never waits for a claim */
static TaskqPlan reopened_plan = {
	"DELETE FROM taskq.flow_claims AS d WHERE d.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
	"  SELECT c.ctid FROM taskq.flow_claims AS c JOIN taskq.flow_limits AS f"
	"      ON f.action OPERATOR(pg_catalog.=) c.action"
	"   WHERE c.claimed_at OPERATOR(pg_catalog.<=) ($1 OPERATOR(pg_catalog.-) f.rate_per)"
	"   FOR UPDATE OF c SKIP LOCKED))"
	" RETURNING d.action",
	1, {TIMESTAMPTZOID}
};

static TaskqPlan next_reopen_plan = {
	"SELECT pg_catalog.min(c.claimed_at OPERATOR(pg_catalog.+) f.rate_per)"
	"  FROM taskq.flow_claims AS c JOIN taskq.flow_limits AS f"
	"    ON f.action OPERATOR(pg_catalog.=) c.action",
	0, {0}
};

/* Has this database the rate limits' log (0.6)? */
static bool
claims_installed(void)
{
	Oid			nsp = get_namespace_oid("taskq", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("flow_claims", nsp));
}

/*
 * The actions whose rate window reopened by now: their claims that left
 * the window are deleted, and each action named once (for the worker to
 * announce and wake its waiting claims).
 */
List *
taskq_flow_reopened(TimestampTz now)
{
	List	   *actions = NIL;
	Datum		arg = TimestampTzGetDatum(now);

	if (!claims_installed())
		return NIL;
	taskq_execute(&reopened_plan, &arg, NULL, false, 0);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		char	   *action = taskq_get_text(r, 1, NULL);

		if (!taskq_string_member(actions, action))
			actions = lappend(actions, action);
	}
	return actions;
}

/* When the next rate window reopens (false: no claim is in a window). */
bool
taskq_flow_next_reopen(TimestampTz *next)
{
	bool		isnull;
	Datum		d;

	if (!claims_installed())
		return false;
	taskq_execute(&next_reopen_plan, NULL, NULL, true, 0);
	d = taskq_get_datum(0, 1, &isnull);
	if (isnull)
		return false;
	*next = DatumGetTimestampTz(d);
	return true;
}
