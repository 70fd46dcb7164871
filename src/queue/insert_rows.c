/*-------------------------------------------------------------------------
 *
 * insert_rows.c
 *	  The rows of a checked batch written without the executor, a page at
 *	  a time (table_multi_insert, as COPY does), index entries added and the
 *	  primary key checked as entries go in, or with an INSERT over unnest()
 *	  of column arrays where that path does not apply;
 *	  insert_tasks_if_absent's with one INSERT ... ON CONFLICT DO NOTHING.
 *	  A stored duplicate is reported by id and batch position.  The trigger
 *	  rule is written by the INSERT only when a task of the batch has
 *	  another than all_success (else the column's default), so that a
 *	  database not updated to 0.5 still takes plain batches.
 *
 * Locking: RowExclusiveLock on the table, as an INSERT; a possible repeat
 * of a stored id is checked as a deferred unique constraint does, which
 * waits for a concurrent inserter of the same id.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/timestamp.h"
#include "utils/jsonb.h"
#include "utils/array.h"
#include "lib/stringinfo.h"
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
#include "catalog/pg_opfamily.h"
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
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "common/args.h"
#include "common/direct_write.h"
#include "common/pg_compat.h"
#include "common/plan.h"
#include "queue/claim_start.h"
#include "queue/insert_exprs.h"
#include "queue/tasks_rel.h"
#include "queue/queue_internal.h"



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
id_stored(TaskqRel *d, Relation pkey, IndexInfo *pkinfo, Datum id, ItemPointer tid)
{
	ScanKeyData key;
	IndexScanDesc scan;
	bool		found;
	bool		isnull = false;

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_TEXTEQ, id);
	scan = taskq_index_beginscan(d->rel, pkey, d->snapshot, 1, 0);
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
 * take their defaults, and so does a NULL not_before (insert.c's INSERT has
 * COALESCE(not_before, now()), the column's default).  The rows are written
 * a page at a time (table_multi_insert, as COPY does: one WAL record per
 * page rather than per row), then their index entries are added.  The
 * primary key is checked without a lookup of its own first: *stored is the
 * first row whose id is stored already (the caller reports it, and the
 * error undoes the insert), or -1.  False if this path does not apply and
 * the caller must run the INSERT.
 */
static bool
insert_direct(int n, int ncols, const char *const *names, Datum **cols,
			  bool **nulls, int *stored)
{
	TaskqRel	d;
	int			natts;
	const int  *given;			/* per attribute: index into names, or -1 */
	ExprState **defaults;		/* per attribute: its default, if used */
	AttrNumber	not_before;
	TupleTableSlot **slots;
	ExprContext *econtext;
	int			done = 0;
	TaskqReadyBatch ready;
	int			id_col = -1;
	Relation	pkey;
	IndexInfo  *pkinfo = NULL;
	int			nrepeats = 0;	/* rows whose id may repeat a stored one */
	int		   *repeat_rows;
	ItemPointerData *repeat_tids;
	TaskqInsertExprs *ie;
	TaskqInsertColumns *ic;

	*stored = -1;
	if (!taskq_rel_open(&d, "INSERT", NULL, 0))
		return false;
	pkey = taskq_rel_index(&d, "tasks_pkey", 1, &pkinfo);
	ie = taskq_insert_exprs(d.shape, d.rel);
	ic = taskq_insert_columns(ie, &d, names, ncols);
	/* the index add_entry checks as an arbiter (tasks_rel.c) is the one looked up here */
	if (pkey == NULL || !pkey->rd_index->indisprimary || !ic->applies)
	{
		taskq_rel_close(&d);
		return false;
	}
	id_col = ic->id_col;
	given = ic->given;
	defaults = ic->defaults;
	repeat_rows = palloc(sizeof(int) * n);
	repeat_tids = palloc(sizeof(ItemPointerData) * n);
	taskq_ready_batch_init(&ready);
	natts = d.desc->natts;
	not_before = d.col->not_before;
	/* the CHECK constraints as ExecConstraints would build them, kept */
	if (ie->ncheck > 0)
		taskq_set_check_exprs(d.rri, ie->check_states);

	econtext = GetPerTupleExprContext(d.estate);
	/*
	 * The slots are kept with the expressions: making a thousand of them for
	 * each call cost a fifth of a large batch's insert.  They hold no buffer
	 * pins; the rows they hold are freed as they are cleared.
	 */
	slots = taskq_insert_slots(ie, d.rel, Min(n, INSERT_CHUNK));

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

			taskq_rel_index_entries(&d, slots[j], false, &repeat);
			ResetPerTupleExprContext(d.estate);
			if (repeat)
			{
				repeat_rows[nrepeats] = done + j;
				repeat_tids[nrepeats++] = slots[j]->tts_tid;
			}
			taskq_ready_batch_note(&ready, slots[j], d.ready);	/* claim_start.c */
		}
		done += k;
	}
	for (int r = 0; r < nrepeats && *stored < 0; r++)
		if (id_stored(&d, pkey, pkinfo, cols[id_col][repeat_rows[r]], &repeat_tids[r]))
			*stored = repeat_rows[r];
	/* the entries are in the indexes: now the claims may start before them */
	taskq_ready_batch_flush(&ready);

	for (int k = 0; k < Min(n, INSERT_CHUNK); k++)
		ExecClearTuple(slots[k]);
	taskq_rel_close(&d);
	return true;
}

/* ----------
 * The rows of a checked batch, direct or with an INSERT
 * ----------
 */

/*
 * The rows, one per element of the column arrays.  The arrays are unnested
 * in the select list, not in FROM: ROWS FROM (unnest(..), ...) would first
 * copy every column of every row into a tuplestore, which cost more than
 * the insert itself.  Two forms (see taskq_insert_rows): for insert_tasks
 * and replace_tasks, the tries of actions with a policy filled in
 * beforehand and the rows written by insert_direct (a plain INSERT
 * if that path does not apply); for insert_tasks_if_absent, one statement
 * that looks the policy up and leaves out the stored ids.  (Small batches
 * took the one statement too, until the direct path was found to cost a
 * third of it for one task: no plan to start, no ON CONFLICT's speculative
 * insertion, no statement trigger with its transition table.)
 */
#define INSERT_SQL(max_tries, conflict, rule_col, rule_val, key_unnest) \
	"INSERT INTO taskq.tasks AS t (id, action, body, status, max_tries," \
	"       num_signals, total_dependencies, to_signal_after, post_result," \
	"       priority, not_before, spontaneous, retry, workflow" rule_col ")" \
	" SELECT u.id, u.action, u.body, u.status, " max_tries "," \
	"        u.num_signals, u.num_signals, u.succ::text[], u.post_result, u.priority," \
	"        COALESCE(u.not_before, pg_catalog.now()), u.spontaneous, u.retry, u.workflow" \
	rule_val \
	"   FROM (SELECT pg_catalog.unnest($1::text[]) AS id," \
	"                pg_catalog.unnest($2::text[]) AS action," \
	"                pg_catalog.unnest($3::jsonb[]) AS body," \
	"                pg_catalog.unnest($4::text[]) AS status," \
	"                pg_catalog.unnest($5::integer[]) AS max_tries," \
	"                pg_catalog.unnest($6::integer[]) AS num_signals," \
	"                pg_catalog.unnest($7::text[]) AS succ," \
	"                pg_catalog.unnest($8::boolean[]) AS post_result," \
	"                pg_catalog.unnest($9::integer[]) AS priority," \
	"                pg_catalog.unnest($10::timestamptz[]) AS not_before," \
	"                pg_catalog.unnest($11::boolean[]) AS spontaneous," \
	"                pg_catalog.unnest($12::jsonb[]) AS retry," \
	"                pg_catalog.unnest($13::text[]) AS workflow," \
	"                pg_catalog.unnest($14::text[]) AS rule" key_unnest ") AS u" \
	conflict

#define INSERT_ARGTYPES \
	{TEXTARRAYOID, TEXTARRAYOID, JSONBARRAYOID, TEXTARRAYOID, \
	 INT4ARRAYOID, INT4ARRAYOID, TEXTARRAYOID, BOOLARRAYOID, \
	 INT4ARRAYOID, TIMESTAMPTZARRAYOID, BOOLARRAYOID, JSONBARRAYOID, \
	 TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID}


/*
 * Each in two forms: with the trigger rule, for a batch where a task has
 * another rule than all_success, and without it (the column's default),
 * so that a database whose extension is not updated yet (no column
 * "trigger") still takes batches of plain tasks.
 */
#define RULE_COL ", \"trigger\""
#define RULE_VAL ", COALESCE(u.rule, 'all_success')::taskq.trigger_rule"
/* and a batch with a concurrency key: the rules and the keys */
#define KEY_COL RULE_COL ", concurrency_key"
#define KEY_VAL RULE_VAL ", u.ckey"
#define KEY_UNNEST ", pg_catalog.unnest($15::text[]) AS ckey"
#define SMALL_TRIES "COALESCE(u.max_tries, (SELECT p.max_tries FROM taskq.action_policies AS p" \
	" WHERE p.action OPERATOR(pg_catalog.=) u.action))"
#define SMALL_CONFLICT " ON CONFLICT (id) DO NOTHING RETURNING t.id"

static TaskqPlan insert_plan = {INSERT_SQL("u.max_tries", "", "", "", ""), 14, INSERT_ARGTYPES, NULL, true};
static TaskqPlan insert_rules_plan = {
	INSERT_SQL("u.max_tries", "", RULE_COL, RULE_VAL, ""), 14, INSERT_ARGTYPES, NULL, true
};
static TaskqPlan insert_keys_plan = {
	INSERT_SQL("u.max_tries", "", KEY_COL, KEY_VAL, KEY_UNNEST), 15, INSERT_ARGTYPES, NULL, true
};

static TaskqPlan insert_small_plan = {
	INSERT_SQL(SMALL_TRIES, SMALL_CONFLICT, "", "", ""), 14, INSERT_ARGTYPES, NULL, true
};
static TaskqPlan insert_small_rules_plan = {
	INSERT_SQL(SMALL_TRIES, SMALL_CONFLICT, RULE_COL, RULE_VAL, ""), 14, INSERT_ARGTYPES, NULL, true
};
static TaskqPlan insert_small_keys_plan = {
	INSERT_SQL(SMALL_TRIES, SMALL_CONFLICT, KEY_COL, KEY_VAL, KEY_UNNEST), 15, INSERT_ARGTYPES, NULL, true
};

/* Which of these ids are stored (see stored_among). */
static TaskqPlan stored_ids_plan = {
	"SELECT id FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) ANY ($1)",
	1, {TEXTARRAYOID}
};

/* A text[] literal, every element quoted: {"a","b\\"c"}. */
static char *
array_literal(List *strings)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	foreach(lc, strings)
	{
		if (lc != list_head(strings))
			appendStringInfoChar(&buf, ',');
		appendStringInfoChar(&buf, '"');
		for (const char *p = lfirst(lc); *p; p++)
		{
			if (*p == '"' || *p == '\\')
				appendStringInfoChar(&buf, '\\');
			appendStringInfoChar(&buf, *p);
		}
		appendStringInfoChar(&buf, '"');
	}
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

/* Fail on the first task of the batch whose id is among the stored ones. */
static void
report_stored_duplicate(List *specs, List *stored)
{
	ListCell   *lc;

	foreach(lc, specs)
	{
		TaskqTaskSpec *s = lfirst(lc);

		if (taskq_string_member(stored, s->id))
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("task \"%s\" already exists", s->id),
					 errdetail("Task %d of argument \"%s\" has the id of a stored task.",
							   s->index, s->argname ? s->argname : "tasks"),
					 errhint("Use taskq.replace_tasks to replace a task that is not in progress.")));
	}
}

/* Which ids of this text[] are stored. */
static List *
stored_among(Datum ids)
{
	List	   *stored = NIL;

	taskq_execute(&stored_ids_plan, &ids, NULL, false, 0);
	for (uint64 r = 0; r < SPI_processed; r++)
		stored = lappend(stored, taskq_get_text(r, 1, NULL));
	return stored;
}

/*
 * The INSERT wrote fewer rows than asked, and not because of a stored
 * duplicate: only a BEFORE INSERT trigger that an admin put on taskq.tasks,
 * returning NULL, does that.
 */
static void
report_skipped_rows(int n, uint64 written)
{
	ereport(ERROR,
			(errcode(ERRCODE_TRIGGERED_ACTION_EXCEPTION),
			 errmsg("could not insert %d of %d tasks", n - (int) written, n),
			 errdetail("A trigger on taskq.tasks skipped them.")));
}

/* The INSERT's parameters: one array per column, in INSERT_SQL's order. */
#define NCOLS 15
#define COL_ID 0
#define COL_SUCC 6
#define COL_TRIGGER 13
#define COL_KEY 14
static const Oid col_types[NCOLS] = {TEXTOID, TEXTOID, JSONBOID, TEXTOID, INT4OID,
	INT4OID, TEXTOID, BOOLOID, INT4OID, TIMESTAMPTZOID, BOOLOID, JSONBOID, TEXTOID,
TEXTOID, TEXTOID};
static const int16 col_lens[NCOLS] = {-1, -1, -1, -1, 4, 4, -1, 1, 4, 8, 1, -1, -1, -1, -1};
static const bool col_byval[NCOLS] = {false, false, false, false, true, true, false,
	true, true, FLOAT8PASSBYVAL, true, false, false, false, false};
static const char col_align[NCOLS] = {TYPALIGN_INT, TYPALIGN_INT, TYPALIGN_INT,
	TYPALIGN_INT, TYPALIGN_INT, TYPALIGN_INT, TYPALIGN_INT, TYPALIGN_CHAR,
	TYPALIGN_INT, TYPALIGN_DOUBLE, TYPALIGN_CHAR, TYPALIGN_INT, TYPALIGN_INT,
TYPALIGN_INT, TYPALIGN_INT};

/* Column c of the n rows as an array, a parameter of the INSERT. */
static Datum
column_array(int c, Datum *col, bool *nulls, int n)
{
	int			dims[1] = {n};
	int			lbs[1] = {1};

	return PointerGetDatum(construct_md_array(col, nulls, 1, dims, lbs, col_types[c],
											  col_lens[c], col_byval[c], col_align[c]));
}

/* The batch as column arrays: cols[c][i] and nulls[c][i] are row i's column c. */
typedef struct BatchColumns
{
	int			n;
	bool		keys;			/* a task has a concurrency key */
	Datum	   *cols[NCOLS];
	bool	   *nulls[NCOLS];
} BatchColumns;

/*
 * The batch's rows as column arrays.  The successors of a row are a text[]
 * for the direct path, an array literal (one text, cast in the statement)
 * for the small INSERT.
 */
static void
fill_columns(BatchColumns *bc, List *specs, const int32 *inherited, bool small,
			 List *policy_actions, List *policy_tries)
{
	ListCell   *lc;
	int			i = 0;

	bc->n = list_length(specs);
	bc->keys = false;
	for (int c = 0; c < NCOLS; c++)
	{
		bc->cols[c] = palloc0(sizeof(Datum) * bc->n);
		bc->nulls[c] = palloc0(sizeof(bool) * bc->n);
	}
	foreach(lc, specs)
	{
		TaskqTaskSpec *s = lfirst(lc);
		Datum	  **cols = bc->cols;
		bool	  **nulls = bc->nulls;

		cols[0][i] = CStringGetTextDatum(s->id);
		cols[1][i] = CStringGetTextDatum(s->action);
		if (s->body)
			cols[2][i] = JsonbPGetDatum(s->body);
		else
			nulls[2][i] = true;
		if (s->status)
			cols[3][i] = CStringGetTextDatum(s->status);
		else
			nulls[3][i] = true;
		nulls[4][i] = true;
		if (s->has_max_tries)
		{
			cols[4][i] = Int32GetDatum(s->max_tries);
			nulls[4][i] = false;
		}
		else
		{
			ListCell   *pa,
					   *pt;

			forboth(pa, policy_actions, pt, policy_tries)
				if (strcmp(lfirst(pa), s->action) == 0)
				{
					cols[4][i] = Int32GetDatum(lfirst_int(pt));
					nulls[4][i] = false;
					break;
				}
		}
		cols[5][i] = Int32GetDatum(s->num_signals + inherited[i]);
		if (s->successors == NIL)
			nulls[COL_SUCC][i] = true;
		else if (small)
			cols[COL_SUCC][i] = CStringGetTextDatum(array_literal(s->successors));
		else
			cols[COL_SUCC][i] = taskq_text_array_datum(s->successors);
		cols[7][i] = BoolGetDatum(s->post_result);
		cols[8][i] = Int32GetDatum(s->priority);
		if (s->has_not_before)
			cols[9][i] = TimestampTzGetDatum(s->not_before);
		else
			nulls[9][i] = true;
		cols[10][i] = BoolGetDatum(s->spontaneous);
		if (s->retry)
			cols[11][i] = JsonbPGetDatum(s->retry);
		else
			nulls[11][i] = true;
		if (s->workflow)
			cols[12][i] = CStringGetTextDatum(s->workflow);
		else
			nulls[12][i] = true;
		/* the rule by its label (the direct path turns it into the enum's OID) */
		cols[COL_TRIGGER][i] = CStringGetTextDatum(taskq_trigger_label(s->trigger));
		bc->keys |= s->concurrency_key != NULL;
		if (s->concurrency_key)
			cols[COL_KEY][i] = CStringGetTextDatum(s->concurrency_key);
		else
			nulls[COL_KEY][i] = true;
		i++;
	}
}

/* Every column as an array, the arguments of the INSERT statements. */
static void
column_arrays(BatchColumns *bc, Datum *values)
{
	/* the keys only for a batch with keys (the forms without them have 14 parameters) */
	for (int c = 0; c < (bc->keys ? NCOLS : COL_KEY); c++)
		values[c] = column_array(c, bc->cols[c], bc->nulls[c], bc->n);
}

/*
 * insert_tasks_if_absent: one statement that looks the policy up and leaves
 * out stored duplicates, which are then reported.
 */
static void
insert_small(List *specs, BatchColumns *bc, bool if_absent, bool rules, bool keys)
{
	Datum		values[NCOLS];
	List	   *inserted = NIL;
	List	   *missing = NIL;
	uint64		written;
	ListCell   *lc;

	column_arrays(bc, values);
	taskq_execute(keys ? &insert_small_keys_plan :
				  rules ? &insert_small_rules_plan : &insert_small_plan, values, NULL, false, 0);
	if (SPI_processed == (uint64) bc->n)
		return;

	/*
	 * insert_tasks_if_absent locked the stored ones and left them out: a
	 * conflict there is a concurrent insert of the same id.
	 */
	if (if_absent)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not insert tasks: another transaction inserted one of the same ids at the same time"),
				 errhint("Retry the call.")));
	/* Left out: a stored duplicate, or a row an admin's trigger skipped. */
	written = SPI_processed;
	for (uint64 r = 0; r < written; r++)
		inserted = lappend(inserted, taskq_get_text(r, 1, NULL));
	foreach(lc, specs)
	{
		TaskqTaskSpec *s = lfirst(lc);

		if (!taskq_string_member(inserted, s->id))
			missing = lappend(missing, s->id);
	}
	report_stored_duplicate(specs, stored_among(taskq_text_array_datum(missing)));
	report_skipped_rows(bc->n, written);
}

/* The OIDs of taskq.trigger_rule's labels, by rule; false if one is missing. */
static bool
trigger_rule_oids(Oid *oids)
{
	Oid			nsp = get_namespace_oid("taskq", true);
	Oid			typid;

	if (!OidIsValid(nsp))
		return false;
	typid = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
							CStringGetDatum("trigger_rule"), ObjectIdGetDatum(nsp));
	if (!OidIsValid(typid))
		return false;
	for (int r = 0; r < TASKQ_TRIGGER_COUNT; r++)
		if (!OidIsValid(oids[r] = taskq_enum_label(typid, taskq_trigger_label((TaskqTrigger) r))))
			return false;
	return true;
}

/*
 * A batch written a page at a time, its primary key entries checked
 * as they go in (insert_rows.c), and a stored duplicate reported by id and
 * batch position.  False if that path does not apply.
 */
static bool
insert_large_direct(List *specs, BatchColumns *bc, bool rules, bool keys)
{
	/* total_dependencies starts equal to num_signals (cols[5]) */
	static const char *const names[] = {"id", "action", "body", "status",
		"max_tries", "num_signals", "total_dependencies", "to_signal_after",
		"post_result", "priority", "not_before", "spontaneous", "retry",
	"workflow", "trigger", "concurrency_key"};
	Datum	  **c = bc->cols;
	bool	  **z = bc->nulls;
	Datum	   *rule_datums = palloc(sizeof(Datum) * Max(bc->n, 1));
	Datum	   *dcols[lengthof(names)] = {c[0], c[1], c[2], c[3], c[4], c[5], c[5],
	c[6], c[7], c[8], c[9], c[10], c[11], c[12], rule_datums, c[COL_KEY]};
	bool	   *dnulls[lengthof(names)] = {z[0], z[1], z[2], z[3], z[4], z[5], z[5],
	z[6], z[7], z[8], z[9], z[10], z[11], z[12], z[COL_TRIGGER], z[COL_KEY]};
	int			stored;
	Oid			rule_oids[TASKQ_TRIGGER_COUNT];
	ListCell   *lc;
	int			i = 0;

	/* the rules as values of taskq.trigger_rule; none: the column's default */
	if (rules)
	{
		if (!trigger_rule_oids(rule_oids))
			return false;
		foreach(lc, specs)
			rule_datums[i++] = ObjectIdGetDatum(rule_oids[((TaskqTaskSpec *) lfirst(lc))->trigger]);
	}

	/* the key column only for a batch with keys, the rules then too */
	if (!insert_direct(bc->n, lengthof(names) - (keys ? 0 : rules ? 1 : 2), names, dcols, dnulls,
					   &stored))
		return false;
	if (stored >= 0)
		report_stored_duplicate(specs, list_make1(((TaskqTaskSpec *) list_nth(specs, stored))->id));
	return true;
}

/*
 * A batch with the INSERT, when the direct path does not apply: a
 * stored duplicate is looked for first, so that it is reported by id and
 * batch position.  (A plain INSERT is much cheaper than ON CONFLICT, which
 * takes a speculative-insertion lock and writes a second WAL record per
 * row.)  Only an insert of the same id racing this one between the look and
 * the insert gets the unique index's own error: the same SQLSTATE, 23505,
 * with the id in its detail.
 */
static void
insert_large_sql(List *specs, BatchColumns *bc, bool rules, bool keys)
{
	Datum		values[NCOLS];
	ListCell   *lc;
	int			i = 0;

	report_stored_duplicate(specs, stored_among(column_array(COL_ID, bc->cols[COL_ID],
															 bc->nulls[COL_ID], bc->n)));
	/* successors as array literals, every column as an array */
	foreach(lc, specs)
	{
		TaskqTaskSpec *s = lfirst(lc);

		if (s->successors != NIL)
			bc->cols[COL_SUCC][i] = CStringGetTextDatum(array_literal(s->successors));
		i++;
	}
	column_arrays(bc, values);
	taskq_execute(keys ? &insert_keys_plan : rules ? &insert_rules_plan : &insert_plan,
				  values, NULL, false, 0);
	if (SPI_processed != (uint64) bc->n)
		report_skipped_rows(bc->n, SPI_processed);
}

/*
 * Insert every row of a batch insert.c checked (inherited[i]: the live edges
 * the i-th task takes over from a task it replaces): a page at a time
 * (insert_direct), or with the INSERT if that path does not apply;
 * insert_tasks_if_absent's in one statement.
 */
void
taskq_insert_rows(List *specs, const int32 *inherited, bool if_absent)
{
	BatchColumns bc;
	bool		small = if_absent;
	List	   *policy_actions = NIL;
	List	   *policy_tries = NIL;
	bool		rules = false;
	bool		keys = false;
	ListCell   *lc;

	foreach(lc, specs)
	{
		rules |= ((TaskqTaskSpec *) lfirst(lc))->trigger != TASKQ_ALL_SUCCESS;
		keys |= ((TaskqTaskSpec *) lfirst(lc))->concurrency_key != NULL;
	}
	rules |= keys;				/* the keys' forms write the rules too */
	if (!small)
		policy_actions = taskq_policy_max_tries(specs, &policy_tries);	/* action_policy.c */
	fill_columns(&bc, specs, inherited, small, policy_actions, policy_tries);
	if (small)
		insert_small(specs, &bc, if_absent, rules, keys);
	else if (!insert_large_direct(specs, &bc, rules, keys))
		insert_large_sql(specs, &bc, rules, keys);
}

