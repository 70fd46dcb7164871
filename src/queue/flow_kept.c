/*-------------------------------------------------------------------------
 *
 * flow_kept.c
 *	  Which actions have concurrency or rate limits: the rows of
 *	  taskq.flow_limits, kept per session until a relcache invalidation of
 *	  the table, which its triggers send for every write
 *	  (api/cache_triggers.c), as queue/action_policy.c does for policies;
 *	  and what SQL writes of held tasks of such actions tell their slot
 *	  books (flow_books.c).
 *
 * With no limits at all, a claim, return or expiry pays one look at a
 * flag.  If the triggers are missing, nothing is kept and each claim reads
 * the table.  No locks: the kept table is backend-local; what a claim
 * decides is read again under its locks (flow_limits.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"

#include "common/args.h"
#include "common/direct_write.h"
#include "common/limits.h"
#include "common/plan.h"
#include "queue/flow.h"
#include "queue/queue_internal.h"

/* the limits kept, valid while kept_generation == generation */
static HTAB *kept = NULL;
static bool kept_valid = false;
static uint64 generation = 0;
static uint64 kept_generation = 0;
static uint64 kept_shared = 0;	/* the books' count of limit changes when kept */
static Oid	limits_relid = InvalidOid;

/*
 * Until the table is known (an extension not updated to 0.6 has none),
 * any relcache invalidation may be the update that made it.
 */
static void
limits_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == limits_relid || !OidIsValid(limits_relid))
		generation++;
}

static TaskqPlan limits_plan = {
	"SELECT action, max_running, max_running_per_key, rate_max, rate_per, rate_by_key, xmin"
	"  FROM taskq.flow_limits"
	" WHERE max_running IS NOT NULL OR max_running_per_key IS NOT NULL OR rate_max IS NOT NULL",
	0, {0}
};

/* Are taskq.flow_limits' triggers there, enabled ALWAYS, for every kind of write? */
static bool
triggers_tell(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	bool		tell = taskq_triggers_tell(rel, "flow_limits_written");

	table_close(rel, AccessShareLock);
	return tell;
}

/* Row r of limits_plan into *l (its action aside). */
static void
read_limit_row(uint64 r, FlowLimit *l)
{
	bool		isnull;

	l->max_running = taskq_get_int32(r, 2, &isnull);
	l->has_max = !isnull;
	l->max_per_key = taskq_get_int32(r, 3, &isnull);
	l->has_per_key = !isnull;
	l->rate_max = taskq_get_int32(r, 4, &isnull);
	l->has_rate = !isnull;
	if (l->has_rate)
	{
		l->rate_per = *DatumGetIntervalP(taskq_get_datum(r, 5, &isnull));
		l->rate_by_key = taskq_get_bool(r, 6, NULL);
	}
	l->version = DatumGetTransactionId(taskq_get_datum(r, 7, &isnull));
}

/*
 * The limits of every limited action, as a hash table (NULL: none), kept
 * if the triggers tell of every change.  Runs in the caller's SPI
 * connection.
 */
HTAB *
taskq_flow_limits(void)
{
	static bool registered = false;
	Oid			nsp;
	Oid			relid;
	uint64		seen;
	uint64		shared;
	bool		keep;
	HTAB	   *h = NULL;
	HASHCTL		ctl;

	if (!registered)
	{
		CacheRegisterRelcacheCallback(limits_invalidate, (Datum) 0);
		registered = true;
	}
	AcceptInvalidationMessages();
	/*
	 * A change committed and told the books (at its commit, before it wakes
	 * waiting claims) before its invalidation reaches this session.
	 */
	shared = taskq_books_limits_changes();
	if (kept_valid && kept_generation == generation && kept_shared == shared)
		return kept;
	if (kept != NULL)
		hash_destroy(kept);
	kept = NULL;
	kept_valid = false;

	seen = generation;
	nsp = get_namespace_oid("taskq", true);
	relid = OidIsValid(nsp) ? get_relname_relid("flow_limits", nsp) : InvalidOid;
	limits_relid = relid;
	if (!OidIsValid(relid))
	{
		/* an extension not updated to 0.6: no limits, until an invalidation */
		kept_valid = seen == generation;
		kept_generation = seen;
		kept_shared = shared;
		return NULL;
	}
	keep = triggers_tell(relid);

	/* the newest limits, even in a claim that has waited since its statement began */
	taskq_execute_latest(&limits_plan, NULL, NULL, true);
	if (SPI_processed > 0)
	{
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = TASKQ_MAX_ACTION_LEN + 1;
		ctl.entrysize = sizeof(FlowLimit);
		ctl.hcxt = keep ? TopMemoryContext : CurrentMemoryContext;
		h = hash_create("taskq flow limits", Max(SPI_processed, 16), &ctl,
						HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
		for (uint64 r = 0; r < SPI_processed; r++)
		{
			char	   *action = taskq_get_text(r, 1, NULL);
			FlowLimit  *l;

			if (strlen(action) > TASKQ_MAX_ACTION_LEN)
				continue;		/* no task can have it */
			l = hash_search(h, action, HASH_ENTER, NULL);
			read_limit_row(r, l);
			l->book = NULL;
			l->book_looked = false;
		}
	}
	if (keep && seen == generation)
	{
		kept = h;
		kept_valid = true;
		kept_generation = generation;
		kept_shared = shared;
	}
	return h;
}

/* The limits of action, or NULL if it has none. */
FlowLimit *
taskq_flow_limit_of(HTAB *limits, const char *action)
{
	if (limits == NULL || strlen(action) > TASKQ_MAX_ACTION_LEN)
		return NULL;
	return hash_search(limits, action, HASH_FIND, NULL);
}

/*
 * The slot book of a kept action's limits (NULL: none), looked up once
 * while they are kept; with create, made if there is none yet (a claim
 * that may use one, flow_limits.c).
 */
TaskqBook *
taskq_flow_limit_book(FlowLimit *l, bool create)
{
	if (!l->book_looked || (l->book == NULL && create))
	{
		l->book = taskq_book_of(l->action, create);
		l->book_looked = true;
	}
	return l->book;
}

/*
 * Has any action limits?  Read as a claim reads it (in the caller's SPI
 * connection, kept until an invalidation): with none, the paths that let
 * go of slots skip collecting their actions.
 */
bool
taskq_flow_maybe_limited(void)
{
	if (kept_valid && kept_generation == generation)
		return kept != NULL;
	return taskq_flow_limits() != NULL;
}

/*
 * An SQL statement wrote taskq.tasks: each held task it changed (an old
 * row in progress) of an action with a slot book is noted, so that unless
 * its transaction tells the book the lease ended, the book is counted
 * again (flow_books.c).  An admin's UPDATE of a deadline, or a path that
 * ends a lease without telling, is found so.  Costs a flag without limits.
 */
void
taskq_flow_rows_written(Relation rel, Tuplestorestate *oldtable)
{
	TupleDesc	desc = RelationGetDescr(rel);
	AttrNumber	status_col;
	AttrNumber	action_col;
	AttrNumber	id_col;
	TupleTableSlot *slot;
	Oid			in_progress;
	HTAB	   *limits;

	if (oldtable == NULL)
		return;
	if (kept_valid && kept_generation == generation && kept == NULL)
		return;					/* known: no limits at all */
	status_col = taskq_column(desc, "status_code");
	action_col = taskq_column(desc, "action");
	id_col = taskq_column(desc, "id");
	if (!status_col || !action_col || !id_col)
		return;
	/* a trigger: the limits are read in a connection of its own */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "taskq: SPI_connect failed");
	limits = taskq_flow_limits();
	if (limits == NULL)
	{
		SPI_finish();
		return;
	}
	in_progress = taskq_enum_label(TupleDescAttr(desc, status_col - 1)->atttypid, "in_progress");
	slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	tuplestore_rescan(oldtable);
	while (tuplestore_gettupleslot(oldtable, true, false, slot))
	{
		bool		isnull;
		FlowLimit  *l;

		if (DatumGetObjectId(slot_getattr(slot, status_col, &isnull)) != in_progress)
			continue;
		l = taskq_flow_limit_of(limits, TextDatumGetCString(slot_getattr(slot, action_col, &isnull)));
		if (l == NULL)
			continue;
		if (taskq_flow_limit_book(l, false) != NULL)
			taskq_book_note_written(l->book,
									TextDatumGetCString(slot_getattr(slot, id_col, &isnull)));
	}
	ExecDropSingleTupleTableSlot(slot);
	SPI_finish();
}
