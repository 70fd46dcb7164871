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
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_enum.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "common/int.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "rewrite/rewriteHandler.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
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
				body,
				status,
				num_tries,
				to_signal_after,
				actor_id,
				action_deadline,
				performance_token,
				not_before,
				finished_at,
				cancelled,
				post_result,
				workflow;
} TaskColumns;

typedef struct DirectRel
{
	Relation	rel;
	TupleDesc	desc;
	TaskColumns col;
	TaskqReadyCols ready;		/* status_code, num_signals, action, ...; pending */
	Oid			in_progress,
				completed;
	EState	   *estate;
	ResultRelInfo *rri;
	Snapshot	snapshot;
	CommandId	cid;
	bool		hints_ok;		/* the tasks_ready_hint triggers note SQL writes */
	TupleTableSlot *oldslot;	/* the row as found */
	TupleTableSlot *newslot;	/* the row as written */
} DirectRel;

/* The attribute number of a column of taskq.tasks, or InvalidAttrNumber. */
AttrNumber
taskq_column(TupleDesc desc, const char *name)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return att->attnum;
	}
	return InvalidAttrNumber;
}

/* The columns besides the ready ones (taskq_ready_cols, hint.c); false if one is missing. */
static bool
find_columns(TupleDesc desc, TaskColumns *c)
{
	c->id = taskq_column(desc, "id");
	c->body = taskq_column(desc, "body");
	c->status = taskq_column(desc, "status");
	c->num_tries = taskq_column(desc, "num_tries");
	c->to_signal_after = taskq_column(desc, "to_signal_after");
	c->actor_id = taskq_column(desc, "actor_id");
	c->action_deadline = taskq_column(desc, "action_deadline");
	c->performance_token = taskq_column(desc, "performance_token");
	c->not_before = taskq_column(desc, "not_before");
	c->finished_at = taskq_column(desc, "finished_at");
	c->cancelled = taskq_column(desc, "cancelled");
	c->post_result = taskq_column(desc, "post_result");
	c->workflow = taskq_column(desc, "workflow");
	return c->post_result && c->workflow && c->id && c->body && c->status &&
		c->num_tries && c->to_signal_after && c->actor_id &&
		c->action_deadline && c->performance_token && c->not_before &&
		c->finished_at && c->cancelled;
}

/* The OID of an enum type's label, or InvalidOid. */
Oid
taskq_enum_label(Oid enumtype, const char *label)
{
	return GetSysCacheOid2(ENUMTYPOIDNAME, Anum_pg_enum_oid,
						   ObjectIdGetDatum(enumtype), CStringGetDatum(label));
}

/* The OID of taskq.tasks_written(), looked up again when it seems to change. */
static Oid
written_fn(bool again)
{
	static Oid	fn = InvalidOid;

	if (!OidIsValid(fn) || again)
		fn = LookupFuncName(list_make2(makeString("taskq"), makeString("tasks_written")),
							0, NULL, true);
	return fn;
}

/*
 * The triggers of taskq.tasks are only the install script's, which this
 * path needs not fire: tasks_ready_hint_insert, _update and _delete,
 * statement triggers of taskq.tasks_written() over the changed rows.
 * *hints_ok: all three are there and enabled ALWAYS, so every SQL statement
 * that adds a ready entry lowers the claims' start, and one that changes a
 * ready row is noted for its transaction (hint.c); if not, claims walk from
 * the first entry.
 */
static bool
triggers_ours(Relation rel, bool *hints_ok)
{
	TriggerDesc *td = rel->trigdesc;
	bool		ins = false,
				upd = false,
				del = false;

	*hints_ok = false;
	if (td == NULL)
		return true;
	for (int i = 0; i < td->numtriggers; i++)
	{
		Trigger    *t = &td->triggers[i];

		if (t->tgfoid != written_fn(false) && t->tgfoid != written_fn(true))
			return false;
		/* only ALWAYS fires in every session, whatever its replication role */
		if (t->tgenabled != TRIGGER_FIRES_ALWAYS || TRIGGER_FOR_ROW(t->tgtype) ||
			!TRIGGER_FOR_AFTER(t->tgtype) || t->tgnattr != 0 || t->tgqual != NULL)
			continue;
		ins |= TRIGGER_FOR_INSERT(t->tgtype) && t->tgnewtable != NULL;
		upd |= TRIGGER_FOR_UPDATE(t->tgtype) && t->tgnewtable != NULL && t->tgoldtable != NULL;
		del |= TRIGGER_FOR_DELETE(t->tgtype) && t->tgoldtable != NULL;
	}
	*hints_ok = ins && upd && del;
	return true;
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
	/* heap: held_by_us and held_by_another read the row's header */
	if (d->rel->rd_rel->relam != HEAP_TABLE_AM_OID ||
		!triggers_ours(d->rel, &d->hints_ok) || d->rel->rd_rel->relrowsecurity ||
		!find_columns(d->desc, &d->col) || !taskq_ready_cols(d->desc, &d->ready))
	{
		table_close(d->rel, RowExclusiveLock);
		return false;
	}
	status_type = TupleDescAttr(d->desc, d->ready.status_code - 1)->atttypid;
	d->in_progress = taskq_enum_label(status_type, "in_progress");
	d->completed = taskq_enum_label(status_type, "completed");
	if (!OidIsValid(d->ready.pending) || !OidIsValid(d->in_progress) || !OidIsValid(d->completed))
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
										  taskq_column(d->desc, changed[i]) -
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

/*
 * An index of taskq.tasks by name, if it is a btree with nkeys key columns;
 * its IndexInfo in *info, if info is given.
 */
static Relation
find_index(DirectRel *d, const char *name, int nkeys, IndexInfo **info)
{
	for (int i = 0; i < d->rri->ri_NumIndices; i++)
	{
		Relation	idx = d->rri->ri_IndexRelationDescs[i];

		if (strcmp(RelationGetRelationName(idx), name) == 0 &&
			idx->rd_rel->relam == BTREE_AM_OID &&
			IndexRelationGetNumberOfKeyAttributes(idx) == nkeys)
		{
			if (info != NULL)
				*info = d->rri->ri_IndexRelationInfo[i];
			return idx;
		}
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
	Datum		status_code = old_value(d, d->ready.status_code, &isnull);

	if (isnull || DatumGetObjectId(status_code) != d->ready.pending ||
		DatumGetInt32(old_value(d, d->ready.num_signals, &isnull)) != 0 ||
		DatumGetTimestampTz(old_value(d, d->col.not_before, &isnull)) > now)
		return false;
	return one_action || actions == NIL ||
		action_listed(actions, old_value(d, d->ready.action, &isnull));
}

/* What one claim is doing: its arguments, its output and its walk. */
typedef struct ClaimWalk
{
	DirectRel  *d;
	int			limit;
	bool		one_action;
	List	   *actions;
	TimestampTz now;
	Datum		actor;
	Datum		deadline;
	bool		has_deadline;
	Tuplestorestate *out;
	TupleDesc	outdesc;
	int			claimed;
	/* moving the start of later claims (hint.c) */
	AttrNumber	nb_key;			/* not_before's index column; priority and seq before it */
	bool		advancing;		/* every entry walked so far was dead */
	bool		passed;			/* ... and there was at least one */
	bool		stopped;		/* advancing ended at an entry not known dead */
	TaskqReadyKey last;			/* the last dead entry passed, or the stop */
	/* ... and once this claim commits (taskq_hint_defer) */
	bool		covering;		/* every entry walked was dead or claimed here */
	bool		covered;		/* ... and the walk went past the stop */
	TaskqReadyKey cover_to;		/* the entry after the last one */
	TupleTableSlot *dirtyslot;
	IndexFetchTableData *dirtyfetch;
} ClaimWalk;

/* The index entry's position (priority, seq). */
static TaskqReadyKey
entry_key(ClaimWalk *w, IndexScanDesc scan)
{
	TaskqReadyKey k;
	bool		isnull;

	k.priority = DatumGetInt32(index_getattr(scan->xs_itup, w->nb_key - 2,
											 scan->xs_itupdesc, &isnull));
	k.seq = DatumGetInt64(index_getattr(scan->xs_itup, w->nb_key - 1,
										scan->xs_itupdesc, &isnull));
	return k;
}

/*
 * The entry at tid, invisible to the claim's snapshot: is its row version
 * dead for good?  Yes if the index scan found it dead to everyone (it will
 * mark the entry killed), or if no version in its HOT chain is visible to a
 * dirty snapshot: updated or deleted by a committed transaction, or
 * inserted by an aborted one.  An insert in progress or committed after
 * the snapshot is live, and so is a version whose updater is in progress.
 */
static bool
entry_dead(ClaimWalk *w, IndexScanDesc scan, ItemPointer tid)
{
	SnapshotData dirty;
	bool		call_again = false;
	bool		all_dead = false;
	bool		found;

	if (scan->kill_prior_tuple)
		return true;
	InitDirtySnapshot(dirty);
	if (w->dirtyfetch == NULL)
	{
		w->dirtyfetch = table_index_fetch_begin(w->d->rel);
		w->dirtyslot = table_slot_create(w->d->rel, NULL);
	}
	found = table_index_fetch_tuple(w->dirtyfetch, tid, &dirty, w->dirtyslot,
									&call_again, &all_dead);
	table_index_fetch_reset(w->dirtyfetch);
	return !found;
}

/*
 * The visible row in d->oldslot is being modified: is it only this
 * transaction that holds it?  Then SKIP LOCKED would take it, and an update
 * that waits does not wait for us.  A row locked FOR UPDATE earlier in the
 * transaction has our xid as its xmax; one locked by it from two
 * subtransactions (savepoints, PL/pgSQL exception blocks: the signals of
 * two returns to one join) has a MultiXact, which only a lock that skips
 * can sort out: it succeeds if every other member is gone.
 */
static bool
held_by_us(DirectRel *d, TM_FailureData *tmfd)
{
	HeapTuple	tuple;
	TM_FailureData lockfd;

	if (TransactionIdIsCurrentTransactionId(tmfd->xmax))
		return true;
	tuple = ExecFetchSlotHeapTuple(d->oldslot, false, NULL);
	if (!(tuple->t_data->t_infomask & HEAP_XMAX_IS_MULTI))
		return false;			/* another claimer has it */
	return table_tuple_lock(d->rel, &d->oldslot->tts_tid, d->snapshot, d->oldslot,
							d->cid, LockTupleNoKeyExclusive, LockWaitSkip, 0,
							&lockfd) == TM_Ok;
}

/*
 * Is the visible row in d->oldslot being updated or locked by another
 * transaction that is still running?  Then the update would only find that
 * out, after forming the new version, taking the page's exclusive lock and
 * comparing the indexed columns of both versions; with many claimers that
 * is most of the rows a claim walks over (each other's).  The header is
 * read without the page lock, as a hint: a holder that ends just after the
 * look is a race the update's own check has too, and a MultiXact (which
 * may be only ours, see held_by_us) is left to the update.
 */
static bool
held_by_another(DirectRel *d)
{
	HeapTupleHeader h = ExecFetchSlotHeapTuple(d->oldslot, false, NULL)->t_data;
	uint16		infomask = h->t_infomask;
	TransactionId xmax;

	if (infomask & (HEAP_XMAX_INVALID | HEAP_XMAX_COMMITTED | HEAP_XMAX_IS_MULTI))
		return false;
	xmax = HeapTupleHeaderGetRawXmax(h);
	return TransactionIdIsNormal(xmax) &&
		!TransactionIdIsCurrentTransactionId(xmax) &&
		TransactionIdIsInProgress(xmax);
}

/* ----------
 * Where this backend's claims put their rows
 *
 * A worker returns what it claimed, usually on the same connection.  The
 * claim knows where each new row version went; the completion would look
 * it up again by id, a descent of the primary key.  So the claims remember
 * (id, TID) for the completion, which fetches the version at that TID and
 * takes it if the snapshot sees it and its id is the one returned: the
 * primary key is unique, so that is the version the lookup would have
 * found.  A TID that no longer holds it (updated since, the claim rolled
 * back, the page pruned and reused, the table rewritten) fails one of the
 * two checks, and the completion looks the id up as before.
 * ----------
 */
#define CLAIMED_ID_LEN	64		/* longer ids are not remembered */
#define CLAIMED_MAX		4096	/* then the table starts over */

typedef struct ClaimedRow
{
	char		id[CLAIMED_ID_LEN];
	Oid			relid;
	ItemPointerData tid;
} ClaimedRow;

static HTAB *claimed_rows = NULL;

static void
remember_claimed(DirectRel *d, Datum id, ItemPointer tid)
{
	text	   *t = DatumGetTextPP(id);
	int			len = VARSIZE_ANY_EXHDR(t);
	char		key[CLAIMED_ID_LEN];
	ClaimedRow *row;
	bool		found;

	if (len >= CLAIMED_ID_LEN || !ItemPointerIsValid(tid))
		return;
	memcpy(key, VARDATA_ANY(t), len);
	key[len] = '\0';
	row = taskq_local_enter(&claimed_rows, "taskq claimed rows", CLAIMED_ID_LEN,
							sizeof(ClaimedRow), CLAIMED_MAX, key, &found);
	row->relid = RelationGetRelid(d->rel);
	row->tid = *tid;
}

/*
 * Fetch into d->oldslot the version of task id this backend's claim wrote,
 * if the snapshot sees it; false if it is not known or not there.  The id
 * is forgotten either way: a worker returns a task once, so the table holds
 * only the tasks still out (a few cache lines, not a growing table of
 * misses), and a second look, after a rollback say, uses the primary key.
 * *nblocks is the table's size (InvalidBlockNumber: not taken yet), taken
 * at the first remembered id under the lock that keeps VACUUM from
 * truncating the table: a TID past it is not read.
 */
static bool
fetch_claimed(DirectRel *d, const char *id, BlockNumber *nblocks)
{
	ClaimedRow	row;
	ItemPointerData tid;
	bool		isnull;

	if (!taskq_local_take(claimed_rows, CLAIMED_ID_LEN, id, &row, sizeof(row)) ||
		row.relid != RelationGetRelid(d->rel))
		return false;
	if (*nblocks == InvalidBlockNumber)
		*nblocks = RelationGetNumberOfBlocks(d->rel);
	tid = row.tid;
	if (ItemPointerGetBlockNumber(&tid) >= *nblocks ||
		!table_tuple_fetch_row_version(d->rel, &tid, d->snapshot, d->oldslot))
		return false;
	slot_getallattrs(d->oldslot);
	return text_matches(old_value(d, d->col.id, &isnull), id) && !isnull;
}

/* Claim the visible row in d->oldslot if it is ready and nobody holds it. */
static void
claim_row(ClaimWalk *w)
{
	DirectRel  *d = w->d;
	pg_uuid_t  *token;
	int32		tries;
	bool		isnull;
	TM_FailureData tmfd;
	TM_Result	result;
	Datum		row[6];
	bool		rownulls[6];

	if (held_by_another(d))
		return;					/* another claimer has it */
	begin_new_row(d);
	if (!claimable(d, w->one_action, w->actions, w->now))
		return;
	if (pg_add_s32_overflow(DatumGetInt32(old_value(d, d->col.num_tries, &isnull)),
							1, &tries))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("task \"%s\" cannot be owned again: its number of tries is at the maximum",
						TextDatumGetCString(old_value(d, d->col.id, &isnull)))));
	token = palloc(sizeof(pg_uuid_t));
	taskq_new_token(token);
	set_column(d, d->ready.status_code, ObjectIdGetDatum(d->in_progress), false);
	set_column(d, d->col.num_tries, Int32GetDatum(tries), false);
	set_column(d, d->col.actor_id, w->actor, false);
	set_column(d, d->col.performance_token, UUIDPGetDatum(token), false);
	set_column(d, d->col.action_deadline, w->deadline, !w->has_deadline);

	result = update_row(d, &d->oldslot->tts_tid, false, &tmfd);
	if (result == TM_BeingModified && held_by_us(d, &tmfd))
		result = update_row(d, &d->oldslot->tts_tid, true, &tmfd);
	if (result != TM_Ok)
		return;					/* another claimer has it, or had it */
	taskq_hint_ready_changed();

	row[0] = old_value(d, d->col.id, &rownulls[0]);
	remember_claimed(d, row[0], &d->newslot->tts_tid);
	row[1] = UUIDPGetDatum(token);
	rownulls[1] = false;
	row[2] = old_value(d, d->ready.action, &rownulls[2]);
	row[3] = old_value(d, d->col.body, &rownulls[3]);
	row[4] = Int32GetDatum(tries);
	rownulls[4] = false;
	row[5] = w->deadline;
	rownulls[5] = !w->has_deadline;
	tuplestore_putvalues(w->out, w->outdesc, row, rownulls);
	w->claimed++;
}

/*
 * A walk that began at the start may leave its commit a further move of it
 * (taskq_hint_defer): over entries that are dead, and rows it claimed,
 * which are dead for good once it commits.  The first entry that is
 * neither ends that; entries before the first live one are the advance's.
 */
static void
extend_cover(ClaimWalk *w, IndexScanDesc scan)
{
	if (!w->covering || w->advancing)
		return;
	w->cover_to = entry_key(w, scan);
	if (w->cover_to.seq == PG_INT64_MAX)
		w->covering = false;	/* no key just after it in this priority */
	else
	{
		w->cover_to.seq++;
		w->covered = true;
	}
}

static void
end_cover(ClaimWalk *w, IndexScanDesc scan)
{
	if (!w->covering)
		return;
	w->covering = false;
	if (w->covered)
		w->cover_to = entry_key(w, scan);
}

/*
 * Walk idx with the given scan keys, claiming until the limit.  While the
 * walk is advancing, each entry invisible to the snapshot is checked for
 * being dead, and the first that is not (or the first visible entry) ends
 * the advance; after that, invisible entries are skipped as index_getnext_slot
 * skips them, and delayed ones without a heap visit.
 */
static void
claim_walk(ClaimWalk *w, Relation idx, ScanKey keys, int nkeys)
{
	DirectRel  *d = w->d;
	IndexScanDesc scan;
	ItemPointer tid;

	scan = index_beginscan(d->rel, idx, d->snapshot, nkeys, 0);
	scan->xs_want_itup = true;	/* the keys and not_before, without the heap */
	index_rescan(scan, keys, nkeys, NULL, 0);
	while (w->claimed < w->limit &&
		   (tid = index_getnext_tid(scan, ForwardScanDirection)) != NULL)
	{
		bool		isnull;
		bool		delayed;

		CHECK_FOR_INTERRUPTS();
		delayed = DatumGetTimestampTz(index_getattr(scan->xs_itup, w->nb_key,
													scan->xs_itupdesc, &isnull)) > w->now;
		if (delayed && !w->advancing)
		{
			end_cover(w, scan);
			continue;
		}
		if (!index_fetch_heap(scan, d->oldslot))
		{
			if (w->advancing)
			{
				w->last = entry_key(w, scan);
				if (entry_dead(w, scan, tid))
					w->passed = true;
				else
				{
					w->advancing = false;
					w->stopped = true;
					w->covering = false;
				}
			}
			else if (w->covering)
			{
				if (entry_dead(w, scan, tid))
					extend_cover(w, scan);
				else
					end_cover(w, scan);
			}
			continue;
		}
		if (w->advancing)
		{
			w->last = entry_key(w, scan);
			w->advancing = false;
			w->stopped = true;
		}
		if (!delayed)
		{
			int			before = w->claimed;

			claim_row(w);
			if (w->claimed > before)
			{
				extend_cover(w, scan);
				continue;
			}
		}
		end_cover(w, scan);
	}
	index_endscan(scan);
}

/*
 * Claim up to limit ready tasks for actor, of one action (one_action), of
 * the listed actions, or of any (actions NIL and !one_action), with a lease
 * of duration (NULL: none).  Rows go to out in claim order (priority
 * descending, then insertion order): id, token, action, body, num_tries,
 * action_deadline.  Returns the number claimed, or -1 if this path does not
 * apply and the caller must use the SQL claim.
 *
 * The walk starts where the claims of this database start (hint.c), in two
 * index scans: the rest of the start's priority from its seq on, then the
 * lower priorities.
 */
int
taskq_claim_direct(const char *actor, int limit, bool one_action, List *actions,
				   Interval *duration, Tuplestorestate *out, TupleDesc outdesc)
{
	DirectRel	d;
	Relation	idx;
	ClaimWalk	w;
	TaskqHintScan hs;
	ScanKeyData keys[3];
	int			nkeys = 0;
	AttrNumber	prio_col;

	if (!direct_open(&d, "own_tasks()", claim_changes, lengthof(claim_changes)))
		return -1;
	/* (action, priority DESC, seq, not_before) or (priority DESC, seq, not_before) */
	idx = find_index(&d, one_action ? "tasks_ready_action_idx" : "tasks_ready_idx",
					 one_action ? 4 : 3, NULL);
	if (idx == NULL)
	{
		direct_close(&d);
		return -1;
	}

	memset(&w, 0, sizeof(w));
	w.d = &d;
	w.limit = limit;
	w.one_action = one_action;
	w.actions = actions;
	w.now = GetCurrentTransactionStartTimestamp();
	w.actor = CStringGetTextDatum(actor);
	w.has_deadline = duration != NULL;
	if (duration != NULL)
		w.deadline = DirectFunctionCall2(timestamptz_pl_interval,
										 TimestampTzGetDatum(w.now),
										 IntervalPGetDatum(duration));
	w.out = out;
	w.outdesc = outdesc;
	w.nb_key = one_action ? 4 : 3;
	prio_col = w.nb_key - 2;

	hs.slot = -1;
	hs.valid = false;
	if (d.hints_ok && taskq_shared_claim_start)
		taskq_hint_begin(one_action ? linitial(actions) : NULL, &hs);
	w.advancing = hs.slot >= 0 && taskq_hint_may_move();
	w.covering = w.advancing;

	if (one_action)
		ScanKeyInit(&keys[nkeys++], 1, BTEqualStrategyNumber, F_TEXTEQ,
					CStringGetTextDatum(linitial(actions)));
	if (!hs.valid)
		claim_walk(&w, idx, keys, nkeys);
	else
	{
		ScanKeyInit(&keys[nkeys], prio_col, BTEqualStrategyNumber, F_INT4EQ,
					Int32GetDatum(hs.start.priority));
		ScanKeyInit(&keys[nkeys + 1], prio_col + 1, BTGreaterEqualStrategyNumber,
					F_INT8GE, Int64GetDatum(hs.start.seq));
		claim_walk(&w, idx, keys, nkeys + 2);
		if (w.claimed < limit)
		{
			/* priority DESC: the lower priorities come after in the index */
			ScanKeyInit(&keys[nkeys], prio_col, BTLessStrategyNumber, F_INT4LT,
						Int32GetDatum(hs.start.priority));
			claim_walk(&w, idx, keys, nkeys + 1);
		}
	}

	if (w.stopped || w.passed)
	{
		/* to the entry that ended the walk, or just past the last dead one */
		if (!w.stopped && w.last.seq < PG_INT64_MAX)
			w.last.seq++;
		if (w.stopped || w.last.seq != PG_INT64_MAX)
			taskq_hint_advance(&hs, w.last);
	}
	if (w.covered)
		taskq_hint_defer(&hs, w.cover_to);
	if (w.dirtyfetch != NULL)
	{
		table_index_fetch_end(w.dirtyfetch);
		ExecDropSingleTupleTableSlot(w.dirtyslot);
	}
	direct_close(&d);
	return w.claimed;
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
	v = old_value(d, d->ready.status_code, &isnull);
	if (isnull || (DatumGetObjectId(v) != d->ready.pending && DatumGetObjectId(v) != d->in_progress))
		return false;
	return !DatumGetBool(old_value(d, d->col.cancelled, &isnull));
}

/*
 * With taskq.retention = 0 nobody keeps a completed task, unless a caller
 * means to wait for its result (post_result) or its workflow's job counts
 * it: its completion deletes it instead of writing a finished version.
 */
static bool
delete_on_completion(DirectRel *d)
{
	bool		isnull;

	if (taskq_retention != 0 || DatumGetBool(old_value(d, d->col.post_result, &isnull)))
		return false;
	(void) old_value(d, d->col.workflow, &isnull);
	return isnull;
}

/*
 * For caller (the SQL function, named in errors): complete the n tasks (ids
 * sorted, without repeats) that are still held
 * with their tokens: status_code completed, status set where given (NULL:
 * kept), finished_at now, no deadline; or deleted, if nobody keeps it
 * (delete_on_completion).  done[i] says whether task i was
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
	BlockNumber nblocks = InvalidBlockNumber;

	if (!direct_open(&d, caller, complete_changes, lengthof(complete_changes)))
		return -1;
	pkey = find_index(&d, "tasks_pkey", 1, NULL);
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
		found = fetch_claimed(&d, ids[i], &nblocks);
		if (!found)
		{
			ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(ids[i]));
			scan = index_beginscan(d.rel, pkey, d.snapshot, 1, 0);
			index_rescan(scan, &key, 1, NULL, 0);
			found = index_getnext_slot(scan, ForwardScanDirection, d.oldslot);
			index_endscan(scan);
		}

		for (;;)
		{
			if (!found || !held_with(&d, tokens[i]))
				break;
			tid = d.oldslot->tts_tid;
			if (delete_on_completion(&d))
				result = table_tuple_delete(d.rel, &tid, d.cid, d.snapshot,
											InvalidSnapshot, true, &tmfd, false);
			else
			{
				begin_new_row(&d);
				set_column(&d, d.ready.status_code, ObjectIdGetDatum(d.completed), false);
				if (statuses[i] != NULL)
					set_column(&d, d.col.status, CStringGetTextDatum(statuses[i]), false);
				set_column(&d, d.col.finished_at, TimestampTzGetDatum(now), false);
				set_column(&d, d.col.action_deadline, (Datum) 0, true);
				result = update_row(&d, &tid, true, &tmfd);
			}
			if (result == TM_Ok)
			{
				Datum		s = old_value(&d, d.col.to_signal_after, &isnull);
				bool		status_null;

				/* a pending task held since a lease expiry: its ready version is gone */
				if (DatumGetObjectId(old_value(&d, d.ready.status_code, &status_null)) == d.ready.pending)
					taskq_hint_ready_changed();

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
 * A row whose primary key entry may repeat a stored id (the insert checked
 * the key UNIQUE_CHECK_PARTIAL, as ON CONFLICT's speculative insert does):
 * is the id stored, as this call's snapshot sees the table (rows of earlier
 * commands of the transaction included, the rows this call wrote not)?
 * If not, the other entry is an insert in progress, or one committed after
 * the snapshot: check the entry again as a deferred unique constraint does
 * (UNIQUE_CHECK_EXISTING), which waits for that transaction and raises the
 * primary key's own 23505 if it committed.
 */
static bool
id_stored(DirectRel *d, Relation pkey, IndexInfo *pkinfo, Datum id, ItemPointer tid)
{
	ScanKeyData key;
	IndexScanDesc scan;
	bool		found;
	bool		isnull = false;

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_TEXTEQ, id);
	scan = index_beginscan(d->rel, pkey, d->snapshot, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, d->oldslot);
	index_endscan(scan);
	if (!found)
		(void) index_insert(pkey, &id, &isnull, tid, d->rel, UNIQUE_CHECK_EXISTING,
							false, pkinfo);
	return found;
}

/*
 * Insert n rows into taskq.tasks, given as column arrays: cols[c][i] and
 * nulls[c][i] are row i's value of column names[c].  The columns not named
 * take their defaults, and so does a NULL not_before (insert.c's INSERT had
 * COALESCE(not_before, now()), the column's default).  The rows are written
 * a page at a time (table_multi_insert, as COPY does: one WAL record per
 * page rather than per row), then their index entries are added.  The
 * primary key is checked without a lookup of its own first: *stored is the
 * first row whose id is stored already (the caller reports it, and the
 * error undoes the insert), or -1.  False if this path does not apply and
 * the caller must run the INSERT.
 */
bool
taskq_insert_direct(int n, int ncols, const char *const *names, Datum **cols,
					bool **nulls, int *stored)
{
	DirectRel	d;
	int			natts;
	int		   *given;			/* per attribute: index into names, or -1 */
	ExprState **defaults;		/* per attribute: its default, if used */
	AttrNumber	not_before;
	TupleTableSlot **slots;
	ExprContext *econtext;
	int			done = 0;
	TaskqHintBatch ready;
	int			id_col = -1;
	Relation	pkey;
	IndexInfo  *pkinfo = NULL;
	int			nrepeats = 0;	/* rows whose id may repeat a stored one */
	int		   *repeat_rows;
	ItemPointerData *repeat_tids;

	*stored = -1;
	if (!direct_open(&d, "INSERT", NULL, 0))
		return false;
	pkey = find_index(&d, "tasks_pkey", 1, &pkinfo);
	for (int c = 0; c < ncols; c++)
		if (strcmp(names[c], "id") == 0)
			id_col = c;
	if (pkey == NULL || !pkinfo->ii_Unique || id_col < 0)
	{
		direct_close(&d);
		return false;
	}
	repeat_rows = palloc(sizeof(int) * n);
	repeat_tids = palloc(sizeof(ItemPointerData) * n);
	taskq_hint_batch_init(&ready);
	natts = d.desc->natts;
	given = palloc(sizeof(int) * natts);
	defaults = palloc0(sizeof(ExprState *) * natts);
	for (int a = 0; a < natts; a++)
		given[a] = -1;
	for (int c = 0; c < ncols; c++)
	{
		AttrNumber	att = taskq_column(d.desc, names[c]);

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
			bool		repeat = false;

			list_free(ExecInsertIndexTuples(d.rri, slots[j], d.estate, false, true,
											&repeat, NIL));
			ResetPerTupleExprContext(d.estate);
			if (repeat)
			{
				repeat_rows[nrepeats] = done + j;
				repeat_tids[nrepeats++] = slots[j]->tts_tid;
			}
			taskq_hint_note_row(&ready, slots[j], &d.ready);	/* hint.c */
		}
		done += k;
	}
	for (int r = 0; r < nrepeats && *stored < 0; r++)
		if (id_stored(&d, pkey, pkinfo, cols[id_col][repeat_rows[r]], &repeat_tids[r]))
			*stored = repeat_rows[r];
	/* the entries are in the indexes: now the claims may start before them */
	taskq_hint_flush(&ready);

	for (int k = 0; k < Min(n, INSERT_CHUNK); k++)
		ExecDropSingleTupleTableSlot(slots[k]);
	direct_close(&d);
	return true;
}
