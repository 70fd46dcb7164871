/*-------------------------------------------------------------------------
 *
 * claim.c
 *	  The claim path: own_tasks' engine.  It runs the lease-expiry sweep, then
 *	  the claim walk (claim_walk.c), or, when the direct path does not apply
 *	  (an admin put triggers or row security on taskq.tasks), the SQL claim
 *	  here: ready rows selected with LIMIT and FOR UPDATE SKIP LOCKED and
 *	  updated by ctid in the same statement.
 *
 * Concurrent claimers never wait for each other and never get the same
 * task, and the cost depends on the number of rows claimed, not on how many
 * tasks are blocked, delayed, in progress or finished (the ready index is
 * partial).  The SQL claim of several actions, or of any, sorts their ready
 * rows: only the claim walk merges the actions' parts of the index.  SQL plans are cached per (kind, limit): with LIMIT as a
 * parameter a generic plan assumes a tenth of the table is wanted and may
 * prefer a sequential scan on a deep queue, so the limit is a constant in
 * each cached plan.
 *
 * When an action of the claim has a concurrency limit, the limiter
 * (flow_limits.c) is taken before either claim reads a row, and the SQL
 * claim is another: the ready rows are read in claim order through a
 * cursor, FOR UPDATE SKIP LOCKED, each one's action and key asked whether
 * they are under their limits, and those let through updated by ctid.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

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

#include "common/plan.h"
#include "common/settings.h"
#include "ipc/metrics.h"
#include "queue/queue_internal.h"

/* Claim plans cached per kind and limit; beyond this, plans are one-shot. */
#define CLAIM_PLAN_SLOTS 32

typedef enum ClaimKind
{
	CLAIM_ONE_ACTION,
	CLAIM_ACTIONS,
	CLAIM_ANY
} ClaimKind;

typedef struct ClaimPlanSlot
{
	ClaimKind	kind;
	int			limit;
	bool		stamped;		/* sets claimed_at (0.6) */
	TaskqPlan	plan;
} ClaimPlanSlot;

static ClaimPlanSlot claim_plans[CLAIM_PLAN_SLOTS];
static int	n_claim_plans = 0;

static const char *const claim_filter[] = {
	[CLAIM_ONE_ACTION] = "c.action OPERATOR(pg_catalog.=) $4 AND ",
	[CLAIM_ACTIONS] = "c.action OPERATOR(pg_catalog.=) ANY ($4) AND ",
	[CLAIM_ANY] = "",
};

/*
 * stamped: the table has claimed_at (0.6), set to the claim's moment, from
 * which the lease runs too, and concurrency_key (0.6 too), returned tenth;
 * an extension not updated yet has no such columns.
 */
static TaskqPlan *
claim_plan(ClaimKind kind, int limit, bool stamped)
{
	static TaskqPlan oneshot;
	TaskqPlan  *plan = NULL;
	char	   *sql;

	for (int i = 0; i < n_claim_plans; i++)
		if (claim_plans[i].kind == kind && claim_plans[i].limit == limit &&
			claim_plans[i].stamped == stamped)
			return &claim_plans[i].plan;

	sql = MemoryContextStrdup(TopMemoryContext, psprintf(
		"UPDATE taskq.tasks AS t"
		"   SET status_code = 'in_progress',"
		"       num_tries = t.num_tries OPERATOR(pg_catalog.+) 1,"
		"       actor_id = $1,"
		"       performance_token = pg_catalog.gen_random_uuid(),"
		"       action_deadline = $3 OPERATOR(pg_catalog.+) $2%s"
		" WHERE t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
		"   SELECT c.ctid FROM taskq.tasks AS c"
		"    WHERE %sc.status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status"
		"      AND c.num_signals OPERATOR(pg_catalog.=) 0"
		"      AND c.not_before OPERATOR(pg_catalog.<=) $3"
		"    ORDER BY c.priority DESC, c.seq"
		"    LIMIT %d FOR UPDATE SKIP LOCKED))"
		" RETURNING t.id, t.performance_token, t.action, t.body, t.num_tries,"
		"           t.action_deadline, t.priority, t.seq,"
		"           GREATEST(t.not_before, t.created_at)%s",
		stamped ? ", claimed_at = $3" : "", claim_filter[kind], limit,
		stamped ? ", t.concurrency_key" : ""));

	if (n_claim_plans < CLAIM_PLAN_SLOTS)
	{
		claim_plans[n_claim_plans].kind = kind;
		claim_plans[n_claim_plans].limit = limit;
		claim_plans[n_claim_plans].stamped = stamped;
		plan = &claim_plans[n_claim_plans++].plan;
	}
	else
	{
		/* Rare: many distinct limits.  Plan without keeping. */
		if (oneshot.plan)
		{
			SPI_freeplan(oneshot.plan);
			oneshot.plan = NULL;
		}
		plan = &oneshot;
	}
	plan->sql = sql;
	plan->nargs = kind == CLAIM_ANY ? 3 : 4;
	plan->argtypes[0] = TEXTOID;
	plan->argtypes[1] = INTERVALOID;
	plan->argtypes[2] = TIMESTAMPTZOID;
	plan->argtypes[3] = kind == CLAIM_ONE_ACTION ? TEXTOID : TEXTARRAYOID;
	plan->plan = NULL;
	return plan;
}

/*
 * Row i of the SQL claim, for the metrics: its action, and its wait from
 * the moment it was ready (a lease that expired is not seen here: its
 * deadline is overwritten, so the wait runs from not_before).
 */
static void
note_claim_metrics(uint64 i, TimestampTz now)
{
	bool		isnull;
	text	   *action;
	Datum		ready;

	if (!taskq_metrics_available())
		return;
	action = DatumGetTextPP(taskq_get_datum(i, 3, &isnull));
	ready = taskq_get_datum(i, 9, &isnull);
	taskq_metric_count(VARDATA_ANY(action), VARSIZE_ANY_EXHDR(action), TASKQ_M_CLAIMED, 1);
	if (!isnull)
		taskq_metric_observe(VARDATA_ANY(action), VARSIZE_ANY_EXHDR(action),
							 TASKQ_H_QUEUE_WAIT, DatumGetTimestampTz(ready), now);
}

/* The ready rows in claim order, for the claim with limits (a cursor). */
static SPIPlanPtr
limited_select_plan(ClaimKind kind)
{
	static SPIPlanPtr plans[3];
	Oid			argtypes[2] = {TIMESTAMPTZOID,
	kind == CLAIM_ONE_ACTION ? TEXTOID : TEXTARRAYOID};

	if (plans[kind] == NULL)
	{
		char	   *sql = psprintf(
			"SELECT c.ctid, c.action, c.concurrency_key, c.id FROM taskq.tasks AS c"
			" WHERE %sc.status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status"
			"   AND c.num_signals OPERATOR(pg_catalog.=) 0"
			"   AND c.not_before OPERATOR(pg_catalog.<=) $1"
			" ORDER BY c.priority DESC, c.seq FOR UPDATE SKIP LOCKED",
			kind == CLAIM_ONE_ACTION ? "c.action OPERATOR(pg_catalog.=) $2 AND " :
			kind == CLAIM_ACTIONS ? "c.action OPERATOR(pg_catalog.=) ANY ($2) AND " : "");
		SPIPlanPtr	p = SPI_prepare_cursor(sql, kind == CLAIM_ANY ? 1 : 2, argtypes,
										   CURSOR_OPT_FAST_PLAN);

		if (p == NULL)
			elog(ERROR, "taskq: SPI_prepare_cursor failed: %s",
				 SPI_result_code_string(SPI_result));
		SPI_keepplan(p);
		plans[kind] = p;
	}
	return plans[kind];
}

/* The rows at these ctids (locked by the cursor) claimed. */
static TaskqPlan limited_update_plan = {
	"UPDATE taskq.tasks AS t"
	"   SET status_code = 'in_progress',"
	"       num_tries = t.num_tries OPERATOR(pg_catalog.+) 1,"
	"       actor_id = $1,"
	"       performance_token = pg_catalog.gen_random_uuid(),"
	"       action_deadline = $3 OPERATOR(pg_catalog.+) $2, claimed_at = $3"
	" WHERE t.ctid OPERATOR(pg_catalog.=) ANY ($4)"
	" RETURNING t.id, t.performance_token, t.action, t.body, t.num_tries,"
	"           t.action_deadline, t.priority, t.seq,"
	"           GREATEST(t.not_before, t.created_at), t.concurrency_key",
	4, {TEXTOID, INTERVALOID, TIMESTAMPTZOID, TIDARRAYOID}
};

/*
 * Are all of the claim's actions at their limit in all?  (A claim of any
 * action may always find another.)
 */
static bool
all_full(const TaskqClaimRequest *req, TaskqFlow *flow)
{
	ListCell   *lc;

	if (req->all_actions)
		return false;
	foreach(lc, req->actions)
		if (!taskq_flow_action_full(flow, lfirst(lc)))
			return false;
	return true;
}

/*
 * The SQL claim with limits: the ready rows read in claim order, each
 * taken if its action and key are under their limits, then updated; the
 * update's rows are left in SPI_tuptable.  values/nulls: the claim plan's.
 */
static void
claim_limited_sql(const TaskqClaimRequest *req, ClaimKind kind, TaskqFlow *flow,
				  Datum *values, char *nulls)
{
	Datum		args[2];
	Portal		portal;
	ItemPointerData *tids = palloc(sizeof(ItemPointerData) * req->max_tasks);
	Datum	   *tid_datums;
	int			n = 0;

	args[0] = values[2];
	args[1] = values[3];
	portal = SPI_cursor_open(NULL, limited_select_plan(kind), args, NULL, false);
	while (n < req->max_tasks && !all_full(req, flow))
	{
		/* rows are locked as they are fetched: no more than may be taken */
		SPI_cursor_fetch(portal, true, req->max_tasks - n);
		if (SPI_processed == 0)
			break;
		for (uint64 r = 0; r < SPI_processed && n < req->max_tasks; r++)
		{
			bool		isnull;
			ItemPointer tid = (ItemPointer) DatumGetPointer(taskq_get_datum(r, 1, &isnull));
			char	   *action = taskq_get_text(r, 2, NULL);
			char	   *key = taskq_get_text(r, 3, &isnull);

			if (taskq_flow_take(flow, action, isnull ? NULL : key, taskq_get_text(r, 4, NULL)))
				tids[n++] = *tid;
		}
	}
	SPI_cursor_close(portal);

	tid_datums = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
		tid_datums[i] = PointerGetDatum(&tids[i]);
	values[3] = PointerGetDatum(construct_array(tid_datums, n, TIDOID, sizeof(ItemPointerData),
												false, TYPALIGN_SHORT));
	nulls[3] = ' ';
	taskq_execute(&limited_update_plan, values, nulls, false, 0);
}

typedef struct ClaimedRow
{
	int32		priority;
	int64		seq;
	Datum		values[7];		/* own_tasks' columns (0.5: the first six) */
	bool		nulls[7];
} ClaimedRow;

static int
compare_claimed(const void *a, const void *b)
{
	const ClaimedRow *x = a;
	const ClaimedRow *y = b;

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	return x->seq < y->seq ? -1 : (x->seq > y->seq ? 1 : 0);
}

/*
 * Claim up to req->max_tasks ready tasks for req->actor (queue.h): first
 * the lease-expiry sweep, then the claim walk (claim_walk.c), or the SQL
 * claim if that path does not apply.  A transaction that wrote nothing
 * but these claims commits without waiting for the WAL flush
 * (claim_commit.c).
 */
int
taskq_claim(const TaskqClaimRequest *req, Tuplestorestate *out, TupleDesc outdesc)
{
	ClaimKind	kind;
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	ClaimedRow *rows;
	uint64		n;
	bool		isnull;
	bool		only_claims;
	int			direct;
	Interval	default_lease;
	TaskqFlow  *flow;
	TaskqClaimRequest r = *req;

	/* no lease given: taskq.default_lease (0: no deadline) */
	if (r.lease == NULL && taskq_default_lease > 0)
	{
		memset(&default_lease, 0, sizeof(default_lease));
		default_lease.time = (int64) taskq_default_lease * USECS_PER_SEC;
		r.lease = &default_lease;
	}
	if (r.now == 0)
		r.now = GetCurrentTransactionStartTimestamp();
	req = &r;

	if (req->all_actions)
		kind = CLAIM_ANY;
	else
		kind = list_length(req->actions) == 1 ? CLAIM_ONE_ACTION : CLAIM_ACTIONS;

	/* Nothing asked for: no work at all. */
	if (req->max_tasks == 0 || (kind == CLAIM_ACTIONS && req->actions == NIL))
		return 0;

	/* the sweep's writes count as the claim's: a lost one is done again */
	only_claims = !IsTransactionBlock() && taskq_wrote_only_claims();
	if (!req->skip_sweep)
		taskq_sweep_expired();

	/* the attempts of actions that keep them are the claim's writes too */
	taskq_attempts_claim_begin();
	/* the limiter of limited actions (NULL, at the cost of a flag, if none) */
	flow = taskq_flow_begin(req->actions, req->all_actions);
	if (flow != NULL && req->lease != NULL)
		taskq_flow_lease(flow, DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
																	   TimestampTzGetDatum(req->now),
																	   IntervalPGetDatum(req->lease))));

	direct = taskq_claim_direct(req, flow, out, outdesc);
	if (direct >= 0)
	{
		taskq_flow_end(flow);
		taskq_attempts_claimed(req->actor, req->now);
		if (direct > 0)
			taskq_note_claim_written(only_claims);
		taskq_finished_dispatch();	/* the sweep's aborts */
		return direct;
	}

	values[0] = CStringGetTextDatum(req->actor);
	if (req->lease == NULL)
		nulls[1] = 'n';
	else
		values[1] = IntervalPGetDatum(req->lease);
	values[2] = TimestampTzGetDatum(req->now);
	if (kind == CLAIM_ONE_ACTION)
		values[3] = CStringGetTextDatum(linitial(req->actions));
	else if (kind == CLAIM_ACTIONS)
		values[3] = taskq_text_array_datum(req->actions);
	if (flow != NULL)
		claim_limited_sql(req, kind, flow, values, nulls);
	else
		taskq_execute(claim_plan(kind, req->max_tasks, taskq_claimed_at_installed()),
					  values, nulls, false, 0);

	n = SPI_processed;
	rows = palloc(sizeof(ClaimedRow) * Max(n, 1));
	for (uint64 i = 0; i < n; i++)
	{
		for (int c = 0; c < 6; c++)
			rows[i].values[c] = taskq_get_datum(i, c + 1, &rows[i].nulls[c]);
		/* concurrency_key, where the plan returns it and the caller wants it */
		rows[i].nulls[6] = true;
		if (outdesc->natts > 6 && SPI_tuptable->tupdesc->natts >= 10)
			rows[i].values[6] = taskq_get_datum(i, 10, &rows[i].nulls[6]);
		rows[i].priority = taskq_get_int32(i, 7, NULL);
		rows[i].seq = DatumGetInt64(taskq_get_datum(i, 8, &isnull));
		note_claim_metrics(i, req->now);
	}
	taskq_flow_end(flow);		/* runs SQL: after the claim's rows were read */
	if (n > 1)
		qsort(rows, n, sizeof(ClaimedRow), compare_claimed);
	for (uint64 i = 0; i < n; i++)
	{
		tuplestore_putvalues(out, outdesc, rows[i].values, rows[i].nulls);
		/* id, action, num_tries */
		taskq_attempts_note_claim(rows[i].values[0], rows[i].values[2],
								  DatumGetInt32(rows[i].values[4]));
	}
	taskq_attempts_claimed(req->actor, req->now);
	if (n > 0)
		taskq_note_claim_written(only_claims);
	taskq_finished_dispatch();	/* the sweep's aborts */
	return (int) n;
}
