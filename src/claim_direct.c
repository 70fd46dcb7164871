/*-------------------------------------------------------------------------
 *
 * claim_direct.c
 *	  The claim without the executor: walk a ready index, update each ready
 *	  row in place of locking it first, insert the new index entries, and
 *	  hand out fresh performance tokens.
 *
 * The SQL claim (claim.c) is UPDATE ... WHERE ctid = ANY (SELECT ... FOR
 * UPDATE SKIP LOCKED).  For every task it writes a tuple lock and then the
 * update: two WAL records and two changes to the same heap page.  Here the
 * update itself is attempted without waiting (table_tuple_update with
 * wait = false): a row another transaction holds comes back as "being
 * modified" and is skipped, exactly what SKIP LOCKED does, and a row we
 * get is updated in one step.  A row updated and committed by someone else
 * after our snapshot is skipped too (the SQL claim would follow the update
 * chain; under REPEATABLE READ it would fail with 40001 instead).
 *
 * gen_random_uuid() asks OpenSSL for 16 bytes per call, which costs about
 * as much as the rest of a claimed row's CPU; tokens are drawn here from a
 * per-process buffer filled by pg_strong_random() a kilobyte at a time.
 * They stay version-4 UUIDs from the same strong source.
 *
 * The SQL claim remains the fallback: if taskq.tasks has triggers or row
 * security (an admin added them; this path would bypass them), or its
 * ready indexes are not as the install script made them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/sysattr.h"
#include "access/relscan.h"
#include "access/stratnum.h"
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
#include "parser/parsetree.h"
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
 * The claim
 * ----------
 */

/* Columns of taskq.tasks the claim reads or writes (attribute numbers). */
typedef struct TaskColumns
{
	AttrNumber	id,
				action,
				body,
				status_code,
				num_tries,
				num_signals,
				actor_id,
				action_deadline,
				performance_token,
				not_before;
} TaskColumns;

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
	c->num_tries = column(desc, "num_tries");
	c->num_signals = column(desc, "num_signals");
	c->actor_id = column(desc, "actor_id");
	c->action_deadline = column(desc, "action_deadline");
	c->performance_token = column(desc, "performance_token");
	c->not_before = column(desc, "not_before");
	return c->id && c->action && c->body && c->status_code && c->num_tries &&
		c->num_signals && c->actor_id && c->action_deadline &&
		c->performance_token && c->not_before;
}

static Oid
enum_label(Oid enumtype, const char *label)
{
	return GetSysCacheOid2(ENUMTYPOIDNAME, Anum_pg_enum_oid,
						   ObjectIdGetDatum(enumtype), CStringGetDatum(label));
}

/*
 * The ready index the claim walks: (action, priority DESC, seq, not_before)
 * for one action, (priority DESC, seq, not_before) otherwise.  NULL if it is
 * not there as the install script made it.
 */
static Relation
ready_index(ResultRelInfo *rri, bool one_action, int16 *not_before_key)
{
	const char *name = one_action ? "tasks_ready_action_idx" : "tasks_ready_idx";
	int			nkeys = one_action ? 4 : 3;

	for (int i = 0; i < rri->ri_NumIndices; i++)
	{
		Relation	idx = rri->ri_IndexRelationDescs[i];

		if (strcmp(RelationGetRelationName(idx), name) == 0 &&
			idx->rd_rel->relam == BTREE_AM_OID &&
			IndexRelationGetNumberOfKeyAttributes(idx) == nkeys)
		{
			*not_before_key = nkeys;
			return idx;
		}
	}
	return NULL;
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
	Oid			nsp = get_namespace_oid("taskq", true);
	Oid			relid;
	Relation	rel;
	TupleDesc	desc;
	TaskColumns col;
	Oid			status_type;
	Oid			pending,
				in_progress;
	EState	   *estate;
	ResultRelInfo *rri;
	RangeTblEntry *rte;
	Relation	idx;
	int16		nb_key;
	ScanKeyData keys[2];
	int			nkeys = 0;
	IndexScanDesc scan;
	Snapshot	snapshot;
	TupleTableSlot *oldslot;
	TupleTableSlot *newslot;
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	Datum		actor_datum;
	Datum		deadline = (Datum) 0;
	CommandId	cid;
	int			claimed = 0;
	AttrNumber	changed[5];

	if (!OidIsValid(nsp) || !OidIsValid(relid = get_relname_relid("tasks", nsp)))
		return -1;

	/* As the UPDATE would: no claims in a read-only transaction or on a standby. */
	PreventCommandIfReadOnly("own_tasks()");

	rel = table_open(relid, RowExclusiveLock);
	desc = RelationGetDescr(rel);
	if (rel->trigdesc != NULL || rel->rd_rel->relrowsecurity ||
		!find_columns(desc, &col))
	{
		table_close(rel, RowExclusiveLock);
		return -1;
	}
	status_type = TupleDescAttr(desc, col.status_code - 1)->atttypid;
	changed[0] = col.status_code;
	changed[1] = col.num_tries;
	changed[2] = col.actor_id;
	changed[3] = col.action_deadline;
	changed[4] = col.performance_token;
	pending = enum_label(status_type, "pending");
	in_progress = enum_label(status_type, "in_progress");

	/* An executor state for the index insertions, as replication's apply does. */
	estate = CreateExecutorState();
	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_RELATION;
	rte->relid = relid;
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	/* what the claim changes: tells the indexes which entries are new keys */
	for (int i = 0; i < lengthof(changed); i++)
		rte->updatedCols = bms_add_member(rte->updatedCols,
										  changed[i] - FirstLowInvalidHeapAttributeNumber);
	ExecInitRangeTable(estate, list_make1(rte));
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, false);

	idx = ready_index(rri, one_action, &nb_key);
	if (idx == NULL || !OidIsValid(pending) || !OidIsValid(in_progress))
	{
		ExecCloseIndices(rri);
		FreeExecutorState(estate);
		table_close(rel, RowExclusiveLock);
		return -1;
	}

	if (one_action)
		ScanKeyInit(&keys[nkeys++], 1, BTEqualStrategyNumber, F_TEXTEQ,
					CStringGetTextDatum(linitial(actions)));
	/* delayed tasks are skipped inside the index */
	ScanKeyInit(&keys[nkeys++], nb_key, BTLessEqualStrategyNumber,
				F_TIMESTAMPTZ_LE, TimestampTzGetDatum(now));

	actor_datum = CStringGetTextDatum(actor);
	if (duration != NULL)
		deadline = DirectFunctionCall2(timestamptz_pl_interval,
									   TimestampTzGetDatum(now),
									   IntervalPGetDatum(duration));

	/* See what the expiry sweep just did, with a snapshot of this moment. */
	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	PushActiveSnapshot(snapshot);
	cid = GetCurrentCommandId(true);
	estate->es_output_cid = cid;
	estate->es_snapshot = snapshot;

	oldslot = table_slot_create(rel, NULL);
	newslot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	scan = index_beginscan(rel, idx, snapshot, nkeys, 0);
	index_rescan(scan, keys, nkeys, NULL, 0);

	while (claimed < limit && index_getnext_slot(scan, ForwardScanDirection, oldslot))
	{
		Datum	   *values = newslot->tts_values;
		bool	   *nulls = newslot->tts_isnull;
		pg_uuid_t  *token;
		int32		tries;
		TM_FailureData tmfd;
		LockTupleMode lockmode;
		bool		update_indexes;
		TM_Result	result;
		Datum		out_values[6];
		bool		out_nulls[6];

		CHECK_FOR_INTERRUPTS();
		slot_getallattrs(oldslot);
		/* The partial index says so; the row we see must agree. */
		if (oldslot->tts_isnull[col.status_code - 1] ||
			DatumGetObjectId(oldslot->tts_values[col.status_code - 1]) != pending ||
			DatumGetInt32(oldslot->tts_values[col.num_signals - 1]) != 0 ||
			DatumGetTimestampTz(oldslot->tts_values[col.not_before - 1]) > now)
			continue;
		if (!one_action && actions != NIL &&
			!action_listed(actions, oldslot->tts_values[col.action - 1]))
			continue;

		ExecClearTuple(newslot);
		memcpy(values, oldslot->tts_values, sizeof(Datum) * desc->natts);
		memcpy(nulls, oldslot->tts_isnull, sizeof(bool) * desc->natts);
		if (pg_add_s32_overflow(DatumGetInt32(values[col.num_tries - 1]), 1, &tries))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("task \"%s\" cannot be owned again: its number of tries is at the maximum",
							TextDatumGetCString(values[col.id - 1]))));
		token = palloc(sizeof(pg_uuid_t));
		taskq_new_token(token);
		values[col.status_code - 1] = ObjectIdGetDatum(in_progress);
		values[col.num_tries - 1] = Int32GetDatum(tries);
		values[col.actor_id - 1] = actor_datum;
		nulls[col.actor_id - 1] = false;
		values[col.performance_token - 1] = UUIDPGetDatum(token);
		nulls[col.performance_token - 1] = false;
		values[col.action_deadline - 1] = deadline;
		nulls[col.action_deadline - 1] = duration == NULL;
		ExecStoreVirtualTuple(newslot);

		result = table_tuple_update(rel, &oldslot->tts_tid, newslot, cid,
									snapshot, InvalidSnapshot, false,
									&tmfd, &lockmode, &update_indexes);
		/*
		 * Locked by this very transaction (FOR UPDATE earlier in it): SKIP
		 * LOCKED would take it, and waiting for ourselves does not wait.
		 */
		if (result == TM_BeingModified && TransactionIdIsCurrentTransactionId(tmfd.xmax))
			result = table_tuple_update(rel, &oldslot->tts_tid, newslot, cid,
										snapshot, InvalidSnapshot, true,
										&tmfd, &lockmode, &update_indexes);
		if (result != TM_Ok)
			continue;			/* another claimer has it, or had it */

		if (update_indexes)
			list_free(ExecInsertIndexTuples(rri, newslot, estate, true, false,
											NULL, NIL));

		out_values[0] = values[col.id - 1];
		out_values[1] = values[col.performance_token - 1];
		out_values[2] = values[col.action - 1];
		out_values[3] = values[col.body - 1];
		out_values[4] = values[col.num_tries - 1];
		out_values[5] = values[col.action_deadline - 1];
		out_nulls[0] = nulls[col.id - 1];
		out_nulls[1] = false;
		out_nulls[2] = nulls[col.action - 1];
		out_nulls[3] = nulls[col.body - 1];
		out_nulls[4] = false;
		out_nulls[5] = nulls[col.action_deadline - 1];
		tuplestore_putvalues(out, outdesc, out_values, out_nulls);
		claimed++;
		ResetPerTupleExprContext(estate);
	}

	index_endscan(scan);
	ExecDropSingleTupleTableSlot(oldslot);
	ExecDropSingleTupleTableSlot(newslot);
	PopActiveSnapshot();
	UnregisterSnapshot(snapshot);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	table_close(rel, RowExclusiveLock);

	/* Later commands of this transaction see the claims. */
	CommandCounterIncrement();
	return claimed;
}
