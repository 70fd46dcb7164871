/*-------------------------------------------------------------------------
 *
 * direct.c
 *	  The hottest writes of taskq.tasks without the executor: the claim (a
 *	  ready index walked, each ready row updated without waiting), the
 *	  completion of held tasks (each row found by its primary key, its token
 *	  checked, the row updated) and the insert of a batch (rows written a
 *	  page at a time); and the performance tokens.
 *
 * The SQL claim was UPDATE ... WHERE ctid = ANY (SELECT ... FOR UPDATE SKIP
 * LOCKED).  For every task it wrote a tuple lock and then the update: two
 * WAL records and two changes to the same heap page.  Here the update itself
 * is attempted without waiting (table_tuple_update with wait = false): a row
 * another transaction holds comes back as "being modified" and is skipped,
 * exactly what SKIP LOCKED does, and a row we get is updated in one step.
 * A row updated and committed by someone else after our snapshot is skipped
 * too (the SQL claim would follow the update chain; under REPEATABLE READ
 * it would fail with 40001 instead).
 *
 * The completion does what UPDATE ... FROM unnest(ids, tokens) did, row by
 * row in id order (the lock order of batch returns): it waits for a row
 * another transaction holds, and if that transaction updated it, it locks
 * the newest version and checks that one again, as READ COMMITTED's
 * EvalPlanQual does (under REPEATABLE READ it fails with 40001, as the
 * UPDATE did).
 *
 * Both insert the new index entries themselves, with an executor state
 * made for that, as logical replication's apply worker does.  The SQL
 * statements remain the fallback when taskq.tasks has triggers or row
 * security (an admin added them; this path would bypass them), or is not
 * as the install script made it.
 *
 * gen_random_uuid() asks OpenSSL for 16 bytes per call, which cost about as
 * much as the rest of a claimed row's CPU; tokens are drawn from a
 * per-process pool filled by pg_strong_random() a kilobyte at a time.  They
 * stay version-4 UUIDs from the same strong source.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_enum.h"
#include "common/int.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteHandler.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "taskq.h"

/* ----------
 * Performance tokens
 * ----------
 */
#define TOKEN_POOL (64 * UUID_LEN)

static uint8 token_pool[TOKEN_POOL];
static int	token_next = TOKEN_POOL;
static int	token_pid = 0;

/* A new version-4 UUID from the strong random source. */
void
taskq_new_token(pg_uuid_t *token)
{
	/* A forked child must not hand out its parent's bytes. */
	if (token_next + UUID_LEN > TOKEN_POOL || token_pid != MyProcPid)
	{
		if (!pg_strong_random(token_pool, TOKEN_POOL))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not generate random values")));
		token_next = 0;
		token_pid = MyProcPid;
	}
	memcpy(token->data, token_pool + token_next, UUID_LEN);
	/* wipe what was handed out: the pool holds only unused bytes */
	memset(token_pool + token_next, 0, UUID_LEN);
	token_next += UUID_LEN;
	token->data[6] = (token->data[6] & 0x0f) | 0x40;	/* version 4 */
	token->data[8] = (token->data[8] & 0x3f) | 0x80;	/* RFC 4122 variant */
}

/* ----------
 * taskq.tasks opened for direct updates
 * ----------
 */

/* Columns of taskq.tasks read or written here (attribute numbers). */
typedef struct TaskColumns
{
	AttrNumber	id,
				action,
				body,
				status_code,
				status,
				num_tries,
				num_signals,
				to_signal_after,
				actor_id,
				action_deadline,
				performance_token,
				not_before,
				finished_at,
				cancelled;
} TaskColumns;

typedef struct DirectRel
{
	Relation	rel;
	TupleDesc	desc;
	TaskColumns col;
	Oid			pending,
				in_progress,
				completed;
	EState	   *estate;
	ResultRelInfo *rri;
	Snapshot	snapshot;
	CommandId	cid;
	TupleTableSlot *oldslot;	/* the row as found */
	TupleTableSlot *newslot;	/* the row as written */
} DirectRel;

static AttrNumber
column(TupleDesc desc, const char *name)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return att->attnum;
	}
	return InvalidAttrNumber;
}

static bool
find_columns(TupleDesc desc, TaskColumns *c)
{
	c->id = column(desc, "id");
	c->action = column(desc, "action");
	c->body = column(desc, "body");
	c->status_code = column(desc, "status_code");
	c->status = column(desc, "status");
	c->num_tries = column(desc, "num_tries");
	c->num_signals = column(desc, "num_signals");
	c->to_signal_after = column(desc, "to_signal_after");
	c->actor_id = column(desc, "actor_id");
	c->action_deadline = column(desc, "action_deadline");
	c->performance_token = column(desc, "performance_token");
	c->not_before = column(desc, "not_before");
	c->finished_at = column(desc, "finished_at");
	c->cancelled = column(desc, "cancelled");
	return c->id && c->action && c->body && c->status_code && c->status &&
		c->num_tries && c->num_signals && c->to_signal_after && c->actor_id &&
		c->action_deadline && c->performance_token && c->not_before &&
		c->finished_at && c->cancelled;
}

static Oid
enum_label(Oid enumtype, const char *label)
{
	return GetSysCacheOid2(ENUMTYPOIDNAME, Anum_pg_enum_oid,
						   ObjectIdGetDatum(enumtype), CStringGetDatum(label));
}

/*
 * Open taskq.tasks, its indexes and an executor state for updates of the
 * given columns, and take a snapshot that sees this transaction's earlier
 * commands.  False (nothing left open) if this path does not apply.
 */
static bool
direct_open(DirectRel *d, const char *what, const char *const *changed, int nchanged)
{
	Oid			nsp = get_namespace_oid("taskq", true);
	Oid			relid;
	Oid			status_type;
	RangeTblEntry *rte;

	if (!OidIsValid(nsp) || !OidIsValid(relid = get_relname_relid("tasks", nsp)))
		return false;

	/* As an UPDATE would: nothing changes in a read-only transaction or on a standby. */
	PreventCommandIfReadOnly(what);

	d->rel = table_open(relid, RowExclusiveLock);
	d->desc = RelationGetDescr(d->rel);
	if (d->rel->trigdesc != NULL || d->rel->rd_rel->relrowsecurity ||
		!find_columns(d->desc, &d->col))
	{
		table_close(d->rel, RowExclusiveLock);
		return false;
	}
	status_type = TupleDescAttr(d->desc, d->col.status_code - 1)->atttypid;
	d->pending = enum_label(status_type, "pending");
	d->in_progress = enum_label(status_type, "in_progress");
	d->completed = enum_label(status_type, "completed");
	if (!OidIsValid(d->pending) || !OidIsValid(d->in_progress) || !OidIsValid(d->completed))
	{
		table_close(d->rel, RowExclusiveLock);
		return false;
	}

	d->estate = CreateExecutorState();
	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_RELATION;
	rte->relid = relid;
	rte->relkind = d->rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	/* the changed columns tell the indexes which new entries repeat a key */
	for (int i = 0; changed != NULL && i < nchanged; i++)
		rte->updatedCols = bms_add_member(rte->updatedCols,
										  column(d->desc, changed[i]) -
										  FirstLowInvalidHeapAttributeNumber);
	ExecInitRangeTable(d->estate, list_make1(rte));
	d->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(d->rri, d->rel, 1, NULL, 0);
	ExecOpenIndices(d->rri, false);

	CommandCounterIncrement();
	d->snapshot = RegisterSnapshot(GetTransactionSnapshot());
	PushActiveSnapshot(d->snapshot);
	d->cid = GetCurrentCommandId(true);
	d->estate->es_output_cid = d->cid;
	d->estate->es_snapshot = d->snapshot;
	d->oldslot = table_slot_create(d->rel, NULL);
	d->newslot = MakeSingleTupleTableSlot(d->desc, &TTSOpsVirtual);
	return true;
}

static void
direct_close(DirectRel *d)
{
	ExecDropSingleTupleTableSlot(d->oldslot);
	ExecDropSingleTupleTableSlot(d->newslot);
	PopActiveSnapshot();
	UnregisterSnapshot(d->snapshot);
	ExecCloseIndices(d->rri);
	FreeExecutorState(d->estate);
	table_close(d->rel, RowExclusiveLock);
	/* Later commands of this transaction see the changes. */
	CommandCounterIncrement();
}

/* An index of taskq.tasks by name, if it is a btree with nkeys key columns. */
static Relation
find_index(DirectRel *d, const char *name, int nkeys)
{
	for (int i = 0; i < d->rri->ri_NumIndices; i++)
	{
		Relation	idx = d->rri->ri_IndexRelationDescs[i];

		if (strcmp(RelationGetRelationName(idx), name) == 0 &&
			idx->rd_rel->relam == BTREE_AM_OID &&
			IndexRelationGetNumberOfKeyAttributes(idx) == nkeys)
			return idx;
	}
	return NULL;
}

/* Start the new row version as a copy of the old one. */
static void
begin_new_row(DirectRel *d)
{
	slot_getallattrs(d->oldslot);
	ExecClearTuple(d->newslot);
	memcpy(d->newslot->tts_values, d->oldslot->tts_values, sizeof(Datum) * d->desc->natts);
	memcpy(d->newslot->tts_isnull, d->oldslot->tts_isnull, sizeof(bool) * d->desc->natts);
}

static void
set_column(DirectRel *d, AttrNumber att, Datum value, bool isnull)
{
	d->newslot->tts_values[att - 1] = value;
	d->newslot->tts_isnull[att - 1] = isnull;
}

static inline Datum
old_value(DirectRel *d, AttrNumber att, bool *isnull)
{
	*isnull = d->oldslot->tts_isnull[att - 1];
	return d->oldslot->tts_values[att - 1];
}

/* Write the new version over the old one found at tid; wait or not. */
static TM_Result
update_row(DirectRel *d, ItemPointer tid, bool wait, TM_FailureData *tmfd)
{
	LockTupleMode lockmode;
	bool		update_indexes;
	TM_Result	result;

	ExecStoreVirtualTuple(d->newslot);
	result = table_tuple_update(d->rel, tid, d->newslot, d->cid, d->snapshot,
								InvalidSnapshot, wait, tmfd, &lockmode,
								&update_indexes);
	if (result == TM_Ok && update_indexes)
		list_free(ExecInsertIndexTuples(d->rri, d->newslot, d->estate, true,
										false, NULL, NIL));
	ResetPerTupleExprContext(d->estate);
	return result;
}

static bool
text_matches(Datum d, const char *s)
{
	text	   *t = DatumGetTextPP(d);
	size_t		len = VARSIZE_ANY_EXHDR(t);

	return len == strlen(s) && memcmp(VARDATA_ANY(t), s, len) == 0;
}

static bool
action_listed(List *actions, Datum action)
{
	ListCell   *lc;

	foreach(lc, actions)
		if (text_matches(action, lfirst(lc)))
			return true;
	return false;
}

/* ----------
 * The claim
 * ----------
 */
static const char *const claim_changes[] = {
	"status_code", "num_tries", "actor_id", "action_deadline", "performance_token"
};

/* The ready row as the partial index promises it, and of an action asked for. */
static bool
claimable(DirectRel *d, bool one_action, List *actions, TimestampTz now)
{
	bool		isnull;
	Datum		status_code = old_value(d, d->col.status_code, &isnull);

	if (isnull || DatumGetObjectId(status_code) != d->pending ||
		DatumGetInt32(old_value(d, d->col.num_signals, &isnull)) != 0 ||
		DatumGetTimestampTz(old_value(d, d->col.not_before, &isnull)) > now)
		return false;
	return one_action || actions == NIL ||
		action_listed(actions, old_value(d, d->col.action, &isnull));
}

/*
 * Claim up to limit ready tasks for actor, of one action (one_action), of
 * the listed actions, or of any (actions NIL and !one_action), with a lease
 * of duration (NULL: none).  Rows go to out in claim order (priority
 * descending, then insertion order): id, token, action, body, num_tries,
 * action_deadline.  Returns the number claimed, or -1 if this path does not
 * apply and the caller must use the SQL claim.
 */
int
taskq_claim_direct(const char *actor, int limit, bool one_action, List *actions,
				   Interval *duration, Tuplestorestate *out, TupleDesc outdesc)
{
	DirectRel	d;
	Relation	idx;
	int			nb_key = one_action ? 4 : 3;
	ScanKeyData keys[2];
	int			nkeys = 0;
	IndexScanDesc scan;
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	Datum		actor_datum = CStringGetTextDatum(actor);
	Datum		deadline = (Datum) 0;
	int			claimed = 0;

	if (!direct_open(&d, "own_tasks()", claim_changes, lengthof(claim_changes)))
		return -1;
	/* (action, priority DESC, seq, not_before) or (priority DESC, seq, not_before) */
	idx = find_index(&d, one_action ? "tasks_ready_action_idx" : "tasks_ready_idx", nb_key);
	if (idx == NULL)
	{
		direct_close(&d);
		return -1;
	}

	if (one_action)
		ScanKeyInit(&keys[nkeys++], 1, BTEqualStrategyNumber, F_TEXTEQ,
					CStringGetTextDatum(linitial(actions)));
	/* delayed tasks are skipped inside the index */
	ScanKeyInit(&keys[nkeys++], nb_key, BTLessEqualStrategyNumber,
				F_TIMESTAMPTZ_LE, TimestampTzGetDatum(now));
	if (duration != NULL)
		deadline = DirectFunctionCall2(timestamptz_pl_interval,
									   TimestampTzGetDatum(now),
									   IntervalPGetDatum(duration));

	scan = index_beginscan(d.rel, idx, d.snapshot, nkeys, 0);
	index_rescan(scan, keys, nkeys, NULL, 0);
	while (claimed < limit && index_getnext_slot(scan, ForwardScanDirection, d.oldslot))
	{
		pg_uuid_t  *token;
		int32		tries;
		bool		isnull;
		TM_FailureData tmfd;
		TM_Result	result;
		Datum		row[6];
		bool		rownulls[6];

		CHECK_FOR_INTERRUPTS();
		begin_new_row(&d);
		if (!claimable(&d, one_action, actions, now))
			continue;
		if (pg_add_s32_overflow(DatumGetInt32(old_value(&d, d.col.num_tries, &isnull)),
								1, &tries))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("task \"%s\" cannot be owned again: its number of tries is at the maximum",
							TextDatumGetCString(old_value(&d, d.col.id, &isnull)))));
		token = palloc(sizeof(pg_uuid_t));
		taskq_new_token(token);
		set_column(&d, d.col.status_code, ObjectIdGetDatum(d.in_progress), false);
		set_column(&d, d.col.num_tries, Int32GetDatum(tries), false);
		set_column(&d, d.col.actor_id, actor_datum, false);
		set_column(&d, d.col.performance_token, UUIDPGetDatum(token), false);
		set_column(&d, d.col.action_deadline, deadline, duration == NULL);

		result = update_row(&d, &d.oldslot->tts_tid, false, &tmfd);
		/*
		 * Locked by this very transaction (FOR UPDATE earlier in it): SKIP
		 * LOCKED would take it, and waiting for ourselves does not wait.
		 */
		if (result == TM_BeingModified && TransactionIdIsCurrentTransactionId(tmfd.xmax))
			result = update_row(&d, &d.oldslot->tts_tid, true, &tmfd);
		if (result != TM_Ok)
			continue;			/* another claimer has it, or had it */

		row[0] = old_value(&d, d.col.id, &rownulls[0]);
		row[1] = UUIDPGetDatum(token);
		rownulls[1] = false;
		row[2] = old_value(&d, d.col.action, &rownulls[2]);
		row[3] = old_value(&d, d.col.body, &rownulls[3]);
		row[4] = Int32GetDatum(tries);
		rownulls[4] = false;
		row[5] = deadline;
		rownulls[5] = duration == NULL;
		tuplestore_putvalues(out, outdesc, row, rownulls);
		claimed++;
	}
	index_endscan(scan);
	direct_close(&d);
	return claimed;
}

/* ----------
 * The completion
 * ----------
 */
static const char *const complete_changes[] = {
	"status_code", "status", "finished_at", "action_deadline"
};

/* Still held with this token: unfinished, not cancelled. */
static bool
held_with(DirectRel *d, pg_uuid_t *token)
{
	bool		isnull;
	Datum		v;

	slot_getallattrs(d->oldslot);
	v = old_value(d, d->col.performance_token, &isnull);
	if (isnull || memcmp(DatumGetUUIDP(v), token, UUID_LEN) != 0)
		return false;
	v = old_value(d, d->col.status_code, &isnull);
	if (isnull || (DatumGetObjectId(v) != d->pending && DatumGetObjectId(v) != d->in_progress))
		return false;
	return !DatumGetBool(old_value(d, d->col.cancelled, &isnull));
}

/*
 * For caller (the SQL function, named in errors): complete the n tasks (ids
 * sorted, without repeats) that are still held
 * with their tokens: status_code completed, status set where given (NULL:
 * kept), finished_at now, no deadline.  done[i] says whether task i was
 * completed, succs[i] its successors then (a List of C strings).  Returns
 * how many were completed, or -1 if this path does not apply and the caller
 * must use the SQL statement.
 */
int
taskq_complete_direct(const char *caller, int n, char **ids, pg_uuid_t **tokens,
					  char **statuses, bool *done, List **succs)
{
	DirectRel	d;
	Relation	pkey;
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	int			ndone = 0;

	if (!direct_open(&d, caller, complete_changes, lengthof(complete_changes)))
		return -1;
	pkey = find_index(&d, "tasks_pkey", 1);
	if (pkey == NULL)
	{
		direct_close(&d);
		return -1;
	}

	for (int i = 0; i < n; i++)
	{
		ScanKeyData key;
		IndexScanDesc scan;
		bool		found;
		bool		isnull;
		TM_FailureData tmfd;
		TM_Result	result;
		ItemPointerData tid;

		CHECK_FOR_INTERRUPTS();
		done[i] = false;
		succs[i] = NIL;
		ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(ids[i]));
		scan = index_beginscan(d.rel, pkey, d.snapshot, 1, 0);
		index_rescan(scan, &key, 1, NULL, 0);
		found = index_getnext_slot(scan, ForwardScanDirection, d.oldslot);
		index_endscan(scan);

		for (;;)
		{
			if (!found || !held_with(&d, tokens[i]))
				break;
			begin_new_row(&d);
			set_column(&d, d.col.status_code, ObjectIdGetDatum(d.completed), false);
			if (statuses[i] != NULL)
				set_column(&d, d.col.status, CStringGetTextDatum(statuses[i]), false);
			set_column(&d, d.col.finished_at, TimestampTzGetDatum(now), false);
			set_column(&d, d.col.action_deadline, (Datum) 0, true);
			tid = d.oldslot->tts_tid;
			result = update_row(&d, &tid, true, &tmfd);
			if (result == TM_Ok)
			{
				Datum		s = old_value(&d, d.col.to_signal_after, &isnull);

				done[i] = true;
				succs[i] = isnull ? NIL : taskq_text_array_list(s);
				ndone++;
				break;
			}
			if (result != TM_Updated)
				break;			/* deleted meanwhile: not held */
			if (IsolationUsesXactSnapshot())
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("could not serialize access due to concurrent update")));
			/* READ COMMITTED: lock the newest version and look at it again */
			result = table_tuple_lock(d.rel, &tid, d.snapshot, d.oldslot, d.cid,
									  LockTupleExclusive, LockWaitBlock,
									  TUPLE_LOCK_FLAG_FIND_LAST_VERSION, &tmfd);
			found = result == TM_Ok;
		}
	}
	direct_close(&d);
	return ndone;
}

/* ----------
 * The insert
 * ----------
 */

/* Rows written per table_multi_insert call (COPY buffers as many). */
#define INSERT_CHUNK 1000

/*
 * Insert n rows into taskq.tasks, given as column arrays: cols[c][i] and
 * nulls[c][i] are row i's value of column names[c].  The columns not named
 * take their defaults, and so does a NULL not_before (insert.c's INSERT had
 * COALESCE(not_before, now()), the column's default).  The rows are written
 * a page at a time (table_multi_insert, as COPY does: one WAL record per
 * page rather than per row), then their index entries are added; a
 * duplicate id fails with the primary key's own 23505, as the INSERT did.
 * False if this path does not apply and the caller must run the INSERT.
 */
bool
taskq_insert_direct(int n, int ncols, const char *const *names, Datum **cols,
					bool **nulls)
{
	DirectRel	d;
	int			natts;
	int		   *given;			/* per attribute: index into names, or -1 */
	ExprState **defaults;		/* per attribute: its default, if used */
	AttrNumber	not_before;
	TupleTableSlot **slots;
	ExprContext *econtext;
	int			done = 0;

	if (!direct_open(&d, "INSERT", NULL, 0))
		return false;
	natts = d.desc->natts;
	given = palloc(sizeof(int) * natts);
	defaults = palloc0(sizeof(ExprState *) * natts);
	for (int a = 0; a < natts; a++)
		given[a] = -1;
	for (int c = 0; c < ncols; c++)
	{
		AttrNumber	att = column(d.desc, names[c]);

		if (att == InvalidAttrNumber)
		{
			direct_close(&d);
			return false;
		}
		given[att - 1] = c;
	}
	not_before = d.col.not_before;
	for (int a = 0; a < natts; a++)
	{
		Node	   *def;

		if (TupleDescAttr(d.desc, a)->attisdropped ||
			(given[a] >= 0 && a != not_before - 1))
			continue;
		def = build_column_default(d.rel, a + 1);
		if (def != NULL)
			defaults[a] = ExecPrepareExpr(expression_planner((Expr *) def), d.estate);
	}

	econtext = GetPerTupleExprContext(d.estate);
	slots = palloc(sizeof(TupleTableSlot *) * Min(n, INSERT_CHUNK));
	for (int k = 0; k < Min(n, INSERT_CHUNK); k++)
		slots[k] = table_slot_create(d.rel, NULL);

	while (done < n)
	{
		int			k = Min(n - done, INSERT_CHUNK);

		for (int j = 0; j < k; j++)
		{
			TupleTableSlot *slot = slots[j];
			int			row = done + j;

			CHECK_FOR_INTERRUPTS();
			ExecClearTuple(slot);
			for (int a = 0; a < natts; a++)
			{
				int			c = given[a];

				if (c >= 0 && !(a == not_before - 1 && nulls[c][row]))
				{
					slot->tts_values[a] = cols[c][row];
					slot->tts_isnull[a] = nulls[c][row];
				}
				else if (defaults[a] != NULL)
					slot->tts_values[a] = ExecEvalExprSwitchContext(defaults[a], econtext,
																	&slot->tts_isnull[a]);
				else
				{
					slot->tts_values[a] = (Datum) 0;
					slot->tts_isnull[a] = true;
				}
			}
			ExecStoreVirtualTuple(slot);
			ExecMaterializeSlot(slot);
			ResetPerTupleExprContext(d.estate);
			if (d.rel->rd_att->constr)
				ExecConstraints(d.rri, slot, d.estate);
		}
		table_multi_insert(d.rel, slots, k, d.cid, 0, NULL);
		for (int j = 0; j < k; j++)
		{
			list_free(ExecInsertIndexTuples(d.rri, slots[j], d.estate, false, false,
											NULL, NIL));
			ResetPerTupleExprContext(d.estate);
		}
		done += k;
	}

	for (int k = 0; k < Min(n, INSERT_CHUNK); k++)
		ExecDropSingleTupleTableSlot(slots[k]);
	direct_close(&d);
	return true;
}
