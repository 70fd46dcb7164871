/*-------------------------------------------------------------------------
 *
 * run_row.c
 *	  The run's row of taskq.runs read and written without the executor.
 *	  A step reads its run once and writes it back once; as SQL statements
 *	  through SPI those two were a sixth of a machine step's time, about
 *	  what the queue spends claiming the step.
 *
 * Locking: the caller holds the run's lock (run.c), so no other workflow
 * call reads or writes the row meanwhile.  The row is found through
 * runs_pkey with a snapshot taken as a statement's would be (after a
 * command counter increment, so that this transaction's earlier changes
 * are seen).  The update is table_tuple_update: kept on its page (HOT)
 * when no indexed column changed and the page has room, else followed by
 * the new version's index entries, added as an UPDATE adds them.  Should
 * the row have changed all the same (an admin's UPDATE by hand, committed
 * after our snapshot), the update fails as an UPDATE in REPEATABLE READ
 * does, with 40001.
 *
 * Only for the table the install script made: a heap without row security
 * or triggers, with its columns and primary keys.  Otherwise these say
 * false and run.c runs its SQL.  What was checked is kept per backend and
 * checked again after a relcache invalidation of either table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "common/direct_write.h"
#include "common/pg_compat.h"
#include "workflow/run.h"

/* The columns of taskq.runs, in the order of run_col_names. */
enum
{
	RC_ID, RC_KIND, RC_DEFINITION, RC_VERSION, RC_STATUS, RC_STATE, RC_CONTEXT,
	RC_INPUTS, RC_PARENT, RC_ERROR, RC_DEBUG, RC_FINISHED_AT, RC_STEP_TASK,
	RC_VISITS, RC_FORK, RC_EVENTS, RC_FAULTS, RC_COUNT
};

static const char *const run_col_names[RC_COUNT] = {
	"id", "kind", "definition", "version", "status", "state", "context",
	"inputs", "parent", "error", "debug", "finished_at", "step_task",
	"visits", "fork", "events", "faults"
};

static const Oid run_col_types[RC_COUNT] = {
	TEXTOID, TEXTOID, TEXTOID, INT4OID, TEXTOID, TEXTOID, JSONBOID,
	JSONBOID, TEXTOID, TEXTOID, JSONBOID, TIMESTAMPTZOID, TEXTOID,
	INT4OID, TEXTOID, JSONBOID, JSONBOID
};

/* What was checked of the two tables, per backend. */
typedef struct RunTables
{
	bool		valid;			/* checked since the last invalidation */
	bool		usable;			/* as the install script made them */
	Oid			runs;
	Oid			runs_pkey;
	Oid			definitions;
	Oid			definitions_pkey;
	AttrNumber	col[RC_COUNT];
} RunTables;

static RunTables tables;
static bool callback_registered = false;

static void
tables_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == tables.runs || relid == tables.definitions ||
		relid == tables.runs_pkey || relid == tables.definitions_pkey)
		tables.valid = false;
}

/* The CHECK constraints of the install script, which the values written here always satisfy. */
static const char *const run_checks[] = {
	"runs_kind_check", "runs_status_check", "definitions_kind_check",
	"definitions_version_check", NULL
};

/* Check the tables once per invalidation; false if these paths do not apply. */
static bool
run_tables(void)
{
	Oid			nsp;
	Relation	rel;
	AttrNumber	def_cols[2];

	if (tables.valid)
		return tables.usable;
	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(tables_invalidate, (Datum) 0);
		callback_registered = true;
	}
	memset(&tables, 0, sizeof(tables));
	tables.valid = true;
	nsp = get_namespace_oid("taskq", true);
	if (!OidIsValid(nsp))
		return false;
	tables.runs = get_relname_relid("runs", nsp);
	tables.runs_pkey = get_relname_relid("runs_pkey", nsp);
	tables.definitions = get_relname_relid("definitions", nsp);
	tables.definitions_pkey = get_relname_relid("definitions_pkey", nsp);
	if (!OidIsValid(tables.runs) || !OidIsValid(tables.definitions))
		return false;

	rel = table_open(tables.runs, AccessShareLock);
	tables.usable = taskq_table_plain(rel, run_checks);
	for (int c = 0; tables.usable && c < RC_COUNT; c++)
	{
		tables.col[c] = taskq_typed_column(RelationGetDescr(rel), run_col_names[c],
										   run_col_types[c]);
		tables.usable = tables.col[c] != InvalidAttrNumber;
	}
	table_close(rel, AccessShareLock);
	if (!tables.usable ||
		!taskq_unique_btree_on(tables.runs_pkey, tables.runs, 1, &tables.col[RC_ID]))
		return tables.usable = false;

	rel = table_open(tables.definitions, AccessShareLock);
	tables.usable = taskq_table_plain(rel, run_checks);
	def_cols[0] = taskq_column(RelationGetDescr(rel), "name");
	def_cols[1] = taskq_column(RelationGetDescr(rel), "version");
	table_close(rel, AccessShareLock);
	if (!tables.usable || def_cols[0] != 1 || def_cols[1] != 2 ||
		!taskq_unique_btree_on(tables.definitions_pkey, tables.definitions, 2, def_cols))
		return tables.usable = false;
	return true;
}

static char *
slot_text(TupleTableSlot *slot, int c)
{
	bool		isnull;
	Datum		d = slot_getattr(slot, tables.col[c], &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

static Jsonb *
slot_jsonb(TupleTableSlot *slot, int c)
{
	bool		isnull;
	Datum		d = slot_getattr(slot, tables.col[c], &isnull);

	return isnull ? NULL : DatumGetJsonbPCopy(d);
}

/*
 * Read the run with this id (the caller holds its lock) into *out, NULL if
 * there is none, with the xmin of its definition's row (invalid if that
 * row is gone).  False if this path does not apply.
 */
bool
taskq_run_row_fetch(const char *id, TaskqRun **out)
{
	Relation	rel;
	Relation	idx;
	Snapshot	snap;
	TupleTableSlot *slot;
	ScanKeyData key[2];
	TaskqRun   *run = NULL;

	if (!run_tables())
		return false;

	CommandCounterIncrement();
	snap = RegisterSnapshot(GetTransactionSnapshot());
	rel = table_open(tables.runs, AccessShareLock);
	idx = index_open(tables.runs_pkey, AccessShareLock);
	slot = table_slot_create(rel, NULL);
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(id));
	key[0].sk_collation = idx->rd_indcollation[0];
	if (taskq_fetch_by_key(rel, idx, snap, 1, key, slot))
	{
		bool		isnull;

		run = palloc0(sizeof(TaskqRun));
		run->id = pstrdup(id);
		run->kind = slot_text(slot, RC_KIND);
		run->definition = slot_text(slot, RC_DEFINITION);
		run->version = DatumGetInt32(slot_getattr(slot, tables.col[RC_VERSION], &isnull));
		run->status = taskq_run_status_from_label(slot_text(slot, RC_STATUS));
		run->state = slot_text(slot, RC_STATE);
		run->context = slot_jsonb(slot, RC_CONTEXT);
		run->inputs = slot_jsonb(slot, RC_INPUTS);
		run->parent = slot_text(slot, RC_PARENT);
		run->error = slot_text(slot, RC_ERROR);
		run->debug = slot_jsonb(slot, RC_DEBUG);
		run->step_task = slot_text(slot, RC_STEP_TASK);
		run->visits = DatumGetInt32(slot_getattr(slot, tables.col[RC_VISITS], &isnull));
		run->fork = slot_text(slot, RC_FORK);
		run->events = slot_jsonb(slot, RC_EVENTS);
		run->faults = slot_jsonb(slot, RC_FAULTS);
	}
	ExecDropSingleTupleTableSlot(slot);
	index_close(idx, AccessShareLock);
	table_close(rel, AccessShareLock);

	if (run != NULL)
	{
		/* the definition's row: its xmin tells definitions.c whether it changed */
		rel = table_open(tables.definitions, AccessShareLock);
		idx = index_open(tables.definitions_pkey, AccessShareLock);
		slot = table_slot_create(rel, NULL);
		ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_TEXTEQ,
					CStringGetTextDatum(run->definition));
		key[0].sk_collation = idx->rd_indcollation[0];
		ScanKeyInit(&key[1], 2, BTEqualStrategyNumber, F_INT4EQ,
					Int32GetDatum(run->version));
		if (taskq_fetch_by_key(rel, idx, snap, 2, key, slot))
		{
			bool		should_free;
			HeapTuple	tup = ExecFetchSlotHeapTuple(slot, false, &should_free);

			run->def_xmin = HeapTupleHeaderGetRawXmin(tup->t_data);
			if (should_free)
				heap_freetuple(tup);
		}
		ExecDropSingleTupleTableSlot(slot);
		index_close(idx, AccessShareLock);
		table_close(rel, AccessShareLock);
	}
	UnregisterSnapshot(snap);
	*out = run;
	return true;
}

/*
 * The status and step task of the run with this id into *out (its other
 * fields zero), NULL if there is none: read without the run's lock and
 * without the run's JSON, which a map's context makes large.  The seam's
 * look at the run of each task it is handed (seam.c).  False if this path
 * does not apply.
 */
bool
taskq_run_row_peek(const char *id, TaskqRun **out)
{
	Relation	rel;
	Relation	idx;
	Snapshot	snap;
	TupleTableSlot *slot;
	ScanKeyData key;
	TaskqRun   *run = NULL;

	if (!run_tables())
		return false;

	CommandCounterIncrement();
	snap = RegisterSnapshot(GetTransactionSnapshot());
	rel = table_open(tables.runs, AccessShareLock);
	idx = index_open(tables.runs_pkey, AccessShareLock);
	slot = table_slot_create(rel, NULL);
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(id));
	key.sk_collation = idx->rd_indcollation[0];
	if (taskq_fetch_by_key(rel, idx, snap, 1, &key, slot))
	{
		run = palloc0(sizeof(TaskqRun));
		run->id = pstrdup(id);
		run->status = taskq_run_status_from_label(slot_text(slot, RC_STATUS));
		run->step_task = slot_text(slot, RC_STEP_TASK);
	}
	ExecDropSingleTupleTableSlot(slot);
	index_close(idx, AccessShareLock);
	table_close(rel, AccessShareLock);
	UnregisterSnapshot(snap);
	*out = run;
	return true;
}

/* Column c of a new version: a value, a text or NULL, a jsonb or NULL. */
static void
set_datum(Datum *values, bool *nulls, int c, Datum d)
{
	values[tables.col[c] - 1] = d;
	nulls[tables.col[c] - 1] = false;
}

static void
set_text(Datum *values, bool *nulls, int c, const char *s)
{
	if (s != NULL)
		set_datum(values, nulls, c, CStringGetTextDatum(s));
	else
		nulls[tables.col[c] - 1] = true;
}

static void
set_jsonb(Datum *values, bool *nulls, int c, Jsonb *j)
{
	if (j != NULL)
		set_datum(values, nulls, c, JsonbPGetDatum(j));
	else
		nulls[tables.col[c] - 1] = true;
}

/*
 * Write the run's changing columns back (status, state, context, error,
 * step_task, visits, fork, events, faults, version; finished_at as
 * taskq_run_store's SQL sets it).  False if this path does not apply; an
 * error (42704) if the row is gone.
 */
bool
taskq_run_row_store(TaskqRun *run)
{
	Relation	rel;
	Relation	idx;
	Snapshot	snap;
	TupleTableSlot *oldslot;
	TupleTableSlot *newslot;
	ScanKeyData key;
	TupleDesc	desc;
	Datum	   *values;
	bool	   *nulls;
	bool		unfinished = run->status == TASKQ_RUN_RUNNING ||
		run->status == TASKQ_RUN_WAITING || run->status == TASKQ_RUN_UNDOING;
	TM_Result	result;
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	TaskqIndexUpdate indexes;
	CommandId	cid;

	if (!run_tables())
		return false;

	PreventCommandIfReadOnly("UPDATE");
	CommandCounterIncrement();
	snap = RegisterSnapshot(GetTransactionSnapshot());
	cid = GetCurrentCommandId(true);
	rel = table_open(tables.runs, RowExclusiveLock);
	desc = RelationGetDescr(rel);
	idx = index_open(tables.runs_pkey, AccessShareLock);
	oldslot = table_slot_create(rel, NULL);
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(run->id));
	key.sk_collation = idx->rd_indcollation[0];
	if (!taskq_fetch_by_key(rel, idx, snap, 1, &key, oldslot))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("run \"%s\" does not exist", run->id)));
	index_close(idx, AccessShareLock);

	/* the new version: the old one's columns, the run's changing ones over them */
	slot_getallattrs(oldslot);
	newslot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	ExecClearTuple(newslot);
	values = newslot->tts_values;
	nulls = newslot->tts_isnull;
	memcpy(values, oldslot->tts_values, sizeof(Datum) * desc->natts);
	memcpy(nulls, oldslot->tts_isnull, sizeof(bool) * desc->natts);
	set_text(values, nulls, RC_STATUS, taskq_run_status_label(run->status));
	set_text(values, nulls, RC_STATE, run->state);
	if (run->context != NULL)	/* NOT NULL: never cleared */
		set_datum(values, nulls, RC_CONTEXT, JsonbPGetDatum(run->context));
	set_text(values, nulls, RC_ERROR, run->error);
	set_text(values, nulls, RC_STEP_TASK, run->step_task);
	set_datum(values, nulls, RC_VISITS, Int32GetDatum(run->visits));
	set_text(values, nulls, RC_FORK, run->fork);
	set_jsonb(values, nulls, RC_EVENTS, run->events);
	set_jsonb(values, nulls, RC_FAULTS, run->faults);
	set_datum(values, nulls, RC_VERSION, Int32GetDatum(run->version));
	if (run->finish_now)
		set_datum(values, nulls, RC_FINISHED_AT,
				  TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()));
	else if (unfinished)
		nulls[tables.col[RC_FINISHED_AT] - 1] = true;
	ExecStoreVirtualTuple(newslot);

	result = taskq_tuple_update(rel, &oldslot->tts_tid, newslot, cid, snap,
								InvalidSnapshot, true, &tmfd, &lockmode, &indexes);
	if (result != TM_Ok)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("run \"%s\" was changed by another transaction", run->id),
				 errhint("Retry the call.")));
	if (indexes != TASKQ_INDEXES_NONE)
	{
		/* as an UPDATE does: each index whose key or predicate holds the new version */
		Bitmapset  *updated = NULL;
		ResultRelInfo *rri;
		EState	   *estate;

		for (int c = 0; c < RC_COUNT; c++)
			if (c != RC_ID && c != RC_KIND && c != RC_DEFINITION && c != RC_INPUTS &&
				c != RC_PARENT && c != RC_DEBUG)
				updated = bms_add_member(updated, tables.col[c] - FirstLowInvalidHeapAttributeNumber);
		estate = taskq_index_state(rel, updated, &rri);
		estate->es_output_cid = cid;
		estate->es_snapshot = snap;
		list_free(taskq_insert_index_tuples(rri, newslot, estate, true, false, NULL, NIL,
											indexes));
		ExecCloseIndices(rri);
		FreeExecutorState(estate);
	}
	ExecDropSingleTupleTableSlot(newslot);
	ExecDropSingleTupleTableSlot(oldslot);
	table_close(rel, RowExclusiveLock);
	UnregisterSnapshot(snap);
	/* later commands of this transaction see the new version */
	CommandCounterIncrement();
	run->finish_now = false;
	return true;
}
