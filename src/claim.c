/*-------------------------------------------------------------------------
 *
 * claim.c
 *	  own_tasks (the claim path), the lease-expiry sweep it runs first, and
 *	  extend_ownership.
 *
 * The claim walks a ready index and updates each ready row without waiting
 * for it (direct.c): concurrent claimers never wait for each other and
 * never get the same task, and the cost depends on the number of rows
 * claimed, not on how many tasks are blocked, delayed, in progress or
 * finished (the ready indexes are partial).  The SQL claim here, which
 * selects ready rows with LIMIT and FOR UPDATE SKIP LOCKED and updates them
 * by ctid in the same statement, is its fallback: when an admin put
 * triggers or row security on taskq.tasks, which the direct path would
 * bypass.
 *
 * Plans are cached per (kind, limit): with LIMIT as a parameter a generic
 * plan assumes a tenth of the table is wanted and may prefer a sequential
 * scan on a deep queue, so the limit is a constant in each cached plan.
 *
 * Expiry: a task in progress whose deadline passed goes back to pending
 * with its token kept, so the late owner may still return or extend it
 * until somebody else owns it (which replaces the token); if its tries are
 * used up it is aborted with the cascade instead.  The background worker
 * does the same sweep; here it keeps the queue moving without it.
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

#include "acl.h"
#include "taskq.h"

PG_FUNCTION_INFO_V1(taskq_own_tasks);
PG_FUNCTION_INFO_V1(taskq_extend_ownership);

/* How many expired leases one own_tasks call handles at most. */
#define SWEEP_BATCH 64

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
	TaskqPlan	plan;
} ClaimPlanSlot;

static ClaimPlanSlot claim_plans[CLAIM_PLAN_SLOTS];
static int	n_claim_plans = 0;

static const char *const claim_filter[] = {
	[CLAIM_ONE_ACTION] = "c.action OPERATOR(pg_catalog.=) $3 AND ",
	[CLAIM_ACTIONS] = "c.action OPERATOR(pg_catalog.=) ANY ($3) AND ",
	[CLAIM_ANY] = "",
};

static TaskqPlan expired_probe_plan = {
	"SELECT 1 FROM taskq.tasks"
	" WHERE status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status"
	"   AND action_deadline OPERATOR(pg_catalog.<=) pg_catalog.now() LIMIT 1",
	0, {0}
};

static TaskqPlan expired_requeue_plan = {
	"UPDATE taskq.tasks AS t SET status_code = 'pending'"
	" WHERE t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
	"   SELECT e.ctid FROM taskq.tasks AS e"
	"    WHERE e.status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status"
	"      AND e.action_deadline OPERATOR(pg_catalog.<=) pg_catalog.now()"
	"      AND (e.max_tries IS NULL OR e.num_tries OPERATOR(pg_catalog.<) e.max_tries)"
	"      AND NOT e.cancelled"
	"    ORDER BY e.action_deadline LIMIT 64 FOR UPDATE SKIP LOCKED))"
	" RETURNING t.action",
	0, {0}
};

static TaskqPlan expired_exhausted_plan = {
	"SELECT e.id, e.num_tries, e.cancelled FROM taskq.tasks AS e"
	" WHERE e.status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status"
	"   AND e.action_deadline OPERATOR(pg_catalog.<=) pg_catalog.now()"
	"   AND (e.num_tries OPERATOR(pg_catalog.>=) e.max_tries OR e.cancelled)"
	" ORDER BY e.action_deadline LIMIT 64 FOR UPDATE SKIP LOCKED",
	0, {0}
};

static TaskqPlan extend_plan = {
	"UPDATE taskq.tasks"
	"   SET status_code = 'in_progress',"
	"       action_deadline = pg_catalog.now() OPERATOR(pg_catalog.+) $4"
	" WHERE id OPERATOR(pg_catalog.=) $1"
	"   AND performance_token OPERATOR(pg_catalog.=) $2"
	"   AND actor_id OPERATOR(pg_catalog.=) $3"
	"   AND status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status"
	"   AND NOT cancelled",
	4, {TEXTOID, UUIDOID, TEXTOID, INTERVALOID}
};

StaticAssertDecl(SWEEP_BATCH == 64, "SWEEP_BATCH is spelt out in the sweep plans");

/*
 * Hand expired leases back: requeue those with tries left, abort (with the
 * cascade) those on their last try.  Cheap when nothing expired: one probe
 * of the head of the lease index.  Returns how many leases it handled.
 */
int
taskq_sweep_expired(void)
{
	int			handled;

	taskq_execute(&expired_probe_plan, NULL, NULL, true, 1);
	if (SPI_processed == 0)
		return 0;

	taskq_execute(&expired_requeue_plan, NULL, NULL, false, 0);
	handled = SPI_processed;
	for (uint64 i = 0; i < SPI_processed; i++)
		taskq_note_ready(taskq_get_text(i, 1, NULL));

	taskq_execute(&expired_exhausted_plan, NULL, NULL, false, 0);
	if (SPI_processed > 0)
	{
		uint64		n = SPI_processed;
		char	  **ids = palloc(sizeof(char *) * n);
		char	  **why = palloc(sizeof(char *) * n);

		for (uint64 i = 0; i < n; i++)
		{
			ids[i] = taskq_get_text(i, 1, NULL);
			why[i] = taskq_get_bool(i, 3, NULL) ? "cancelled" :
				psprintf("aborted: lease expired on the last of %d tries",
						 taskq_get_int32(i, 2, NULL));
		}
		for (uint64 i = 0; i < n; i++)
			taskq_abort_task(ids[i], why[i]);
		handled += n;
	}
	return handled;
}

static TaskqPlan *
claim_plan(ClaimKind kind, int limit)
{
	static TaskqPlan oneshot;
	TaskqPlan  *plan = NULL;
	char	   *sql;

	for (int i = 0; i < n_claim_plans; i++)
		if (claim_plans[i].kind == kind && claim_plans[i].limit == limit)
			return &claim_plans[i].plan;

	sql = MemoryContextStrdup(TopMemoryContext, psprintf(
		"UPDATE taskq.tasks AS t"
		"   SET status_code = 'in_progress',"
		"       num_tries = t.num_tries OPERATOR(pg_catalog.+) 1,"
		"       actor_id = $1,"
		"       performance_token = pg_catalog.gen_random_uuid(),"
		"       action_deadline = pg_catalog.now() OPERATOR(pg_catalog.+) $2"
		" WHERE t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
		"   SELECT c.ctid FROM taskq.tasks AS c"
		"    WHERE %sc.status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status"
		"      AND c.num_signals OPERATOR(pg_catalog.=) 0"
		"      AND c.not_before OPERATOR(pg_catalog.<=) pg_catalog.now()"
		"    ORDER BY c.priority DESC, c.seq"
		"    LIMIT %d FOR UPDATE SKIP LOCKED))"
		" RETURNING t.id, t.performance_token, t.action, t.body, t.num_tries,"
		"           t.action_deadline, t.priority, t.seq",
		claim_filter[kind], limit));

	if (n_claim_plans < CLAIM_PLAN_SLOTS)
	{
		claim_plans[n_claim_plans].kind = kind;
		claim_plans[n_claim_plans].limit = limit;
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
	plan->nargs = kind == CLAIM_ANY ? 2 : 3;
	plan->argtypes[0] = TEXTOID;
	plan->argtypes[1] = INTERVALOID;
	plan->argtypes[2] = kind == CLAIM_ONE_ACTION ? TEXTOID : TEXTARRAYOID;
	plan->plan = NULL;
	return plan;
}

/* A lease length given by the caller must be positive. */
static void
check_duration(Interval *d, const char *argname)
{
	Interval	zero = {0};

	if (DatumGetBool(DirectFunctionCall2(interval_le, IntervalPGetDatum(d),
										 IntervalPGetDatum(&zero))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be a positive interval", argname),
				 errdetail("It is %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(d))))));
}

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
static bool
wrote_only_claims(void)
{
	if (!TransactionIdIsValid(GetTopTransactionIdIfAny()))
		return true;
	return claims_only_lxid == MyProc->lxid && claims_only_end == XactLastRecEnd;
}

/* After a claim that wrote rows; only_claims is wrote_only_claims() before it. */
static void
note_claim_written(bool only_claims)
{
	if (only_claims)
	{
		claims_only_lxid = MyProc->lxid;
		claims_only_end = XactLastRecEnd;
	}
	else
		claims_only_lxid = InvalidLocalTransactionId;
}

static void
claims_only_xact_callback(XactEvent event, void *arg)
{
	if (claims_only_lxid != MyProc->lxid)
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

typedef struct ClaimedRow
{
	int32		priority;
	int64		seq;
	Datum		values[6];
	bool		nulls[6];
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
 * own_tasks(actor text, max_tasks int, actions text[],
 *			 max_duration interval DEFAULT NULL)
 *	 RETURNS TABLE (id, token, action, body, num_tries, action_deadline)
 *
 * Rows come back in claim order: priority descending, then insertion order.
 */
Datum
taskq_own_tasks(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *actor;
	int32		max_tasks;
	List	   *actions = NIL;
	ClaimKind	kind = CLAIM_ANY;
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	ClaimedRow *rows;
	uint64		n;
	bool		isnull;
	bool		limited;
	bool		only_claims;
	int			direct;

	actor = taskq_text_arg(fcinfo, 0, "actor", TASKQ_MAX_ACTOR_LEN);
	taskq_require_arg(fcinfo, 1, "max_tasks");
	max_tasks = PG_GETARG_INT32(1);
	if (max_tasks < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"max_tasks\" must not be negative"),
				 errdetail("It is %d.", max_tasks)));
	if (!PG_ARGISNULL(2))
	{
		actions = taskq_text_array_arg(fcinfo, 2, "actions", TASKQ_MAX_ACTION_LEN);
		kind = list_length(actions) == 1 ? CLAIM_ONE_ACTION : CLAIM_ACTIONS;
	}
	/* A worker limited to some actions claims only those (acl.c). */
	if ((limited = taskq_acl_limit_actions(&actions, PG_ARGISNULL(2))))
		kind = list_length(actions) == 1 ? CLAIM_ONE_ACTION : CLAIM_ACTIONS;
	if (!PG_ARGISNULL(3))
		check_duration(PG_GETARG_INTERVAL_P(3), "max_duration");

	InitMaterializedSRF(fcinfo, 0);

	/* Nothing asked for: an empty result, and no work at all. */
	if (max_tasks == 0 || (kind == CLAIM_ACTIONS && actions == NIL))
		return (Datum) 0;

	/* the sweep's writes count as the claim's: a lost one is done again */
	only_claims = !IsTransactionBlock() && wrote_only_claims();
	SPI_connect();
	taskq_sweep_expired();

	/* direct.c; the SQL claim below if that path does not apply */
	direct = taskq_claim_direct(actor, max_tasks, kind == CLAIM_ONE_ACTION,
								kind == CLAIM_ANY ? NIL : actions,
								PG_ARGISNULL(3) ? NULL : PG_GETARG_INTERVAL_P(3),
								rsinfo->setResult, rsinfo->setDesc);
	if (direct >= 0)
	{
		if (direct > 0)
			note_claim_written(only_claims);
		SPI_finish();
		return (Datum) 0;
	}

	values[0] = CStringGetTextDatum(actor);
	if (PG_ARGISNULL(3))
		nulls[1] = 'n';
	else
		values[1] = PG_GETARG_DATUM(3);
	if (kind == CLAIM_ONE_ACTION)
		values[2] = CStringGetTextDatum(linitial(actions));
	else if (kind == CLAIM_ACTIONS)
		values[2] = limited ? taskq_text_array_datum(actions) : PG_GETARG_DATUM(2);
	taskq_execute(claim_plan(kind, max_tasks), values, nulls, false, 0);

	n = SPI_processed;
	if (n > 0)
		note_claim_written(only_claims);
	rows = palloc(sizeof(ClaimedRow) * Max(n, 1));
	for (uint64 i = 0; i < n; i++)
	{
		for (int c = 0; c < 6; c++)
			rows[i].values[c] = taskq_get_datum(i, c + 1, &rows[i].nulls[c]);
		rows[i].priority = taskq_get_int32(i, 7, NULL);
		rows[i].seq = DatumGetInt64(taskq_get_datum(i, 8, &isnull));
	}
	if (n > 1)
		qsort(rows, n, sizeof(ClaimedRow), compare_claimed);
	for (uint64 i = 0; i < n; i++)
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
							 rows[i].values, rows[i].nulls);

	SPI_finish();
	return (Datum) 0;
}

/*
 * extend_ownership(actor text, ids text[], tokens uuid[], max_duration interval)
 *	 RETURNS TABLE (id text, owned boolean)
 *
 * One row per task, in argument order.  A lease is extended while the task
 * is unfinished and still held with this token by this actor; that includes
 * a lease that expired while nobody else owned the task since.
 */
Datum
taskq_extend_ownership(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *actor;
	List	   *ids;
	Datum	   *tokens;
	bool	   *tnulls;
	int			ntokens;
	ListCell   *lc;
	int			i = 0;

	actor = taskq_text_arg(fcinfo, 0, "actor", TASKQ_MAX_ACTOR_LEN);
	ids = taskq_text_array_arg(fcinfo, 1, "ids", TASKQ_MAX_ID_LEN);
	taskq_require_arg(fcinfo, 2, "tokens");
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(2), UUIDOID, UUID_LEN, false,
					  TYPALIGN_CHAR, &tokens, &tnulls, &ntokens);
	if (ntokens != list_length(ids))
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("arrays \"ids\" and \"tokens\" must have the same length"),
				 errdetail("\"ids\" has %d elements and \"tokens\" %d.",
						   list_length(ids), ntokens)));
	for (i = 0; i < ntokens; i++)
		if (tnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"tokens\" must not contain null elements")));
	taskq_require_arg(fcinfo, 3, "max_duration");
	check_duration(PG_GETARG_INTERVAL_P(3), "max_duration");
	taskq_acl_mask_tokens(ids, tokens);	/* acl.c: tasks of other actions */

	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	i = 0;
	foreach(lc, ids)
	{
		Datum		values[4];
		Datum		out[2];
		bool		outnulls[2] = {false, false};

		values[0] = CStringGetTextDatum(lfirst(lc));
		values[1] = tokens[i++];
		values[2] = CStringGetTextDatum(actor);
		values[3] = PG_GETARG_DATUM(3);
		taskq_execute(&extend_plan, values, NULL, false, 0);
		out[0] = values[0];
		out[1] = BoolGetDatum(SPI_processed == 1);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, outnulls);
	}
	SPI_finish();
	return (Datum) 0;
}
