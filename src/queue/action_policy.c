/*-------------------------------------------------------------------------
 *
 * action_policy.c
 *	  The default max_tries of actions (taskq.set_action_policy), for the
 *	  tasks of a batch that give none, and whether an action keeps the
 *	  history of its attempts (attempts.c): looked up in
 *	  taskq.action_policies once per action, then kept per session until
 *	  the table changes.  Also kept: whether attempt rows can exist at all
 *	  (some policy keeps them, or taskq.attempts has pages), so that the
 *	  claims, returns and deletes of a database that keeps none pay one
 *	  test of a backend-local flag.
 *
 * Looking it up for each call cost a one-task enqueue about 8 µs: the
 * table and its primary key opened and locked, a snapshot, and a descent
 * of an index that usually holds nothing for the action.  So each answer
 * (the action's tries, or that it has none) is kept, and all of them are
 * dropped when taskq.action_policies is written: the triggers of
 * taskq.action_policies_written() (api/cache_triggers.c) -- for each row inserted, updated or
 * deleted, and for each TRUNCATE; enabled ALWAYS, so that they also fire
 * under session_replication_role = replica and in logical replication's
 * apply worker, which fires row triggers only -- send a relcache
 * invalidation of the table for every write: set_action_policy, an admin's
 * INSERT, UPDATE, DELETE, TRUNCATE or COPY.  Other sessions get it when the
 * writing transaction commits, this one at its next command (and again if
 * the transaction rolls back).  If the trigger is missing or not enabled
 * ALWAYS, or the table is not as the install script made it, nothing is
 * kept and each call looks its actions up, as SQL if need be.
 *
 * No locking: the answers are backend-local.  Invalidations are read before
 * each use, so a call sees every policy committed before it began, except
 * during the instant between a writer's commit becoming visible and its
 * invalidation being sent: a call in that instant may use the answer
 * before, as if it had run an instant earlier (the writer's client has
 * not been told of its commit yet).  A lookup during which an invalidation
 * arrived keeps nothing of what it read (the generation count), so an
 * answer read under an older snapshot never outlives the invalidation.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_opfamily.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "common/args.h"
#include "common/direct_write.h"
#include "common/limits.h"
#include "common/local_table.h"
#include "common/pg_compat.h"
#include "common/plan.h"
#include "queue/queue_internal.h"

/* Most answers kept; past it the table starts over (local_table.c). */
#define POLICY_CACHE_MAX 4096

typedef struct PolicyAnswer
{
	char		action[TASKQ_MAX_ACTION_LEN + 1];	/* key */
	bool		has_tries;
	int32		tries;
	bool		keeps;			/* keep_attempts */
} PolicyAnswer;

static HTAB *answers = NULL;
static Oid	policies_relid = InvalidOid;	/* the table the answers came from */
static uint64 generation = 0;	/* invalidations of it seen */
static uint64 answers_generation = 0;	/* the generation the answers were read in */
static bool possible = true;	/* attempt rows can exist (taskq_policy_attempts_possible) */
static bool possible_known = false;
static uint64 possible_generation = 0;	/* the generation it was read in */

static void
policies_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == policies_relid)
	{
		generation++;
	}
}

/* The policies of these actions (the SQL form). */
static TaskqPlan policy_tries_plan = {
	"SELECT action, max_tries, keep_attempts FROM taskq.action_policies"
	" WHERE action OPERATOR(pg_catalog.=) ANY ($1)",
	1, {TEXTARRAYOID}, NULL, true
};

/* The same before the update to 0.6 (no keep_attempts): it goes with updates from 0.5. */
static TaskqPlan legacy_policy_tries_plan = {
	"SELECT action, max_tries, false FROM taskq.action_policies"
	" WHERE action OPERATOR(pg_catalog.=) ANY ($1)",
	1, {TEXTARRAYOID}, NULL, true
};

/*
 * Look actions up in taskq.action_policies through its primary key, with a
 * snapshot of this moment, as a statement of its own would; their answers
 * in out (one per action, in order).  *keep: the answers may be kept.
 * False if the table is not as the install script made it.
 */
static bool
lookup_direct(List *actions, PolicyAnswer *out, bool *keep)
{
	Oid			nsp = get_namespace_oid("taskq", true);
	Oid			relid = OidIsValid(nsp) ? get_relname_relid("action_policies", nsp) : InvalidOid;
	Oid			idxid;
	Relation	rel;
	Relation	idx;
	AttrNumber	tries_att;
	AttrNumber	keeps_att;
	Snapshot	snap;
	TupleTableSlot *slot;
	ListCell   *lc;
	int			i = 0;

	if (!OidIsValid(relid) || !OidIsValid(idxid = get_relname_relid("action_policies_pkey", nsp)))
		return false;
	rel = table_open(relid, AccessShareLock);
	tries_att = taskq_column(RelationGetDescr(rel), "max_tries");
	keeps_att = taskq_column(RelationGetDescr(rel), "keep_attempts");	/* none before 0.6 */
	if (tries_att == InvalidAttrNumber || rel->rd_rel->relrowsecurity ||
		rel->rd_rel->relam != HEAP_TABLE_AM_OID)
	{
		table_close(rel, AccessShareLock);
		return false;
	}
	idx = index_open(idxid, AccessShareLock);
	if (idx->rd_index->indrelid != relid || idx->rd_index->indnatts != 1 ||
		idx->rd_index->indkey.values[0] != taskq_column(RelationGetDescr(rel), "action") ||
		idx->rd_opfamily[0] != TEXT_BTREE_FAM_OID)
	{
		index_close(idx, AccessShareLock);
		table_close(rel, AccessShareLock);
		return false;
	}
	/* the relcache callback now knows which invalidations are this table's */
	policies_relid = relid;
	*keep = taskq_triggers_tell(rel, "action_policies_written");

	snap = RegisterSnapshot(GetTransactionSnapshot());
	slot = table_slot_create(rel, NULL);
	foreach(lc, actions)
	{
		ScanKeyData key;
		IndexScanDesc scan;
		PolicyAnswer *a = &out[i++];

		a->has_tries = false;
		a->keeps = false;
		ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_TEXTEQ,
					CStringGetTextDatum(lfirst(lc)));
		scan = taskq_index_beginscan(rel, idx, snap, 1, 0);
		index_rescan(scan, &key, 1, NULL, 0);
		if (index_getnext_slot(scan, ForwardScanDirection, slot))
		{
			bool		isnull;
			Datum		v = slot_getattr(slot, tries_att, &isnull);

			a->has_tries = !isnull;
			a->tries = isnull ? 0 : DatumGetInt32(v);
			if (keeps_att != InvalidAttrNumber)
			{
				v = slot_getattr(slot, keeps_att, &isnull);
				a->keeps = !isnull && DatumGetBool(v);
			}
		}
		index_endscan(scan);
	}
	ExecDropSingleTupleTableSlot(slot);
	UnregisterSnapshot(snap);
	index_close(idx, AccessShareLock);
	table_close(rel, AccessShareLock);
	return true;
}

/* The same through SQL, for a table not as the install script made it. */
static void
lookup_sql(List *actions, PolicyAnswer *out)
{
	Datum		arg = taskq_text_array_datum(actions);
	ListCell   *lc;
	int			i = 0;
	Oid			nsp = get_namespace_oid("taskq", false);
	Oid			relid = get_relname_relid("action_policies", nsp);

	taskq_execute(get_attnum(relid, "keep_attempts") != InvalidAttrNumber ?
				  &policy_tries_plan : &legacy_policy_tries_plan, &arg, NULL, false, 0);
	foreach(lc, actions)
	{
		out[i].has_tries = false;
		out[i].keeps = false;
		for (uint64 r = 0; r < SPI_processed; r++)
			if (strcmp(taskq_get_text(r, 1, NULL), lfirst(lc)) == 0)
			{
				bool		isnull;

				out[i].tries = taskq_get_int32(r, 2, &isnull);
				out[i].has_tries = !isnull;
				out[i].keeps = taskq_get_bool(r, 3, NULL);
			}
		i++;
	}
}

/* Drop what was kept if an invalidation of the table arrived since. */
static void
policies_accept_invalidations(void)
{
	static bool registered = false;

	if (!registered)
	{
		CacheRegisterRelcacheCallback(policies_invalidate, (Datum) 0);
		registered = true;
	}
	AcceptInvalidationMessages();
	if (answers != NULL && answers_generation != generation)
	{
		hash_destroy(answers);
		answers = NULL;
	}
}

/*
 * The answers for actions (distinct), in order: kept ones from the table of
 * answers, the others looked up (and kept, if they may be).
 */
static PolicyAnswer *
policy_answers(List *actions)
{
	PolicyAnswer *out = palloc(sizeof(PolicyAnswer) * Max(list_length(actions), 1));
	List	   *missing = NIL;
	ListCell   *lc;

	foreach(lc, actions)
	{
		PolicyAnswer *a = taskq_local_find(answers, sizeof(a->action), lfirst(lc));

		if (a != NULL)
			out[foreach_current_index(lc)] = *a;
		else
			missing = lappend(missing, lfirst(lc));
	}

	if (missing != NIL)
	{
		PolicyAnswer *got = palloc(sizeof(PolicyAnswer) * list_length(missing));
		uint64		seen = generation;
		bool		keep = false;
		int			i = 0;

		if (!lookup_direct(missing, got, &keep))
		{
			keep = false;
			lookup_sql(missing, got);
		}
		/* an invalidation while reading: what was read may be out of date already */
		keep &= seen == generation;
		if (keep)
			answers_generation = generation;	/* those kept so far are of it too */
		foreach(lc, missing)
		{
			PolicyAnswer *a = &got[i++];

			if (keep)
			{
				bool		found;
				PolicyAnswer *k = taskq_local_enter(&answers, "taskq action policies",
													sizeof(k->action), sizeof(PolicyAnswer),
													POLICY_CACHE_MAX, lfirst(lc), &found);

				if (k != NULL)
				{
					k->has_tries = a->has_tries;
					k->tries = a->tries;
					k->keeps = a->keeps;
				}
			}
		}
		/* in the order of actions */
		i = 0;
		foreach(lc, actions)
		{
			ListCell   *m;

			foreach(m, missing)
				if (strcmp(lfirst(m), lfirst(lc)) == 0)
				{
					out[foreach_current_index(lc)] = got[foreach_current_index(m)];
					break;
				}
		}
		pfree(got);
	}
	return out;
}

/*
 * The default max_tries of the tasks of specs that give none: the actions
 * with a policy that sets one, and their tries in *tries.
 */
List *
taskq_policy_max_tries(List *specs, List **tries)
{
	List	   *asked = NIL;
	List	   *actions = NIL;
	PolicyAnswer *got;
	ListCell   *lc;

	*tries = NIL;
	policies_accept_invalidations();
	foreach(lc, specs)
	{
		TaskqTaskSpec *s = lfirst(lc);

		if (!s->has_max_tries && !taskq_string_member(asked, s->action))
			asked = lappend(asked, s->action);
	}
	if (asked == NIL)
		return NIL;
	got = policy_answers(asked);
	foreach(lc, asked)
	{
		PolicyAnswer *a = &got[foreach_current_index(lc)];

		if (a->has_tries)
		{
			actions = lappend(actions, lfirst(lc));
			*tries = lappend_int(*tries, a->tries);
		}
	}
	return actions;
}

/* Does action keep the history of its attempts (keep_attempts)? */
bool
taskq_policy_keeps_attempts(const char *action)
{
	PolicyAnswer *a;

	policies_accept_invalidations();
	a = taskq_local_find(answers, sizeof(a->action), action);
	if (a != NULL)
		return a->keeps;
	return policy_answers(list_make1((char *) action))[0].keeps;
}

/*
 * Can rows of taskq.attempts exist: does a policy keep attempts, or has
 * the table pages (rows kept before a policy stopped keeping them)?  Read
 * once per generation of the policies: rows are added only for an action
 * whose policy keeps them, so while none does, none appear.  Without the
 * table (before the update to 0.6): false.  For a table not as the
 * install script made it: true, and callers look each action up.
 */
bool
taskq_policy_attempts_possible(void)
{
	Oid			nsp;
	Oid			relid;
	Oid			attempts;
	uint64		seen;
	bool		any = false;

	policies_accept_invalidations();
	if (possible_known && possible_generation == generation)
		return possible;

	seen = generation;
	nsp = get_namespace_oid("taskq", true);
	relid = OidIsValid(nsp) ? get_relname_relid("action_policies", nsp) : InvalidOid;
	attempts = OidIsValid(nsp) ? get_relname_relid("attempts", nsp) : InvalidOid;
	if (!OidIsValid(relid) || !OidIsValid(attempts))
		any = false;
	else
	{
		Relation	rel = table_open(relid, AccessShareLock);
		AttrNumber	keeps_att = taskq_column(RelationGetDescr(rel), "keep_attempts");

		policies_relid = relid;
		if (keeps_att == InvalidAttrNumber || rel->rd_rel->relrowsecurity ||
			rel->rd_rel->relam != HEAP_TABLE_AM_OID || !taskq_triggers_tell(rel, "action_policies_written"))
			any = true;			/* not as installed: ask each action */
		else
		{
			Snapshot	snap = RegisterSnapshot(GetTransactionSnapshot());
			TableScanDesc scan = table_beginscan(rel, snap, 0, NULL);
			TupleTableSlot *slot = table_slot_create(rel, NULL);

			while (!any && table_scan_getnextslot(scan, ForwardScanDirection, slot))
			{
				bool		isnull;
				Datum		v = slot_getattr(slot, keeps_att, &isnull);

				any = !isnull && DatumGetBool(v);
			}
			ExecDropSingleTupleTableSlot(slot);
			table_endscan(scan);
			UnregisterSnapshot(snap);
		}
		table_close(rel, AccessShareLock);
		if (!any)
		{
			Relation	arel = table_open(attempts, AccessShareLock);

			any = RelationGetNumberOfBlocks(arel) > 0;
			table_close(arel, AccessShareLock);
		}
	}
	/* an invalidation while reading: read again next time */
	possible_known = seen == generation;
	possible_generation = seen;
	possible = any;
	return any;
}
