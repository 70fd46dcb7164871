/*-------------------------------------------------------------------------
 *
 * row_insert.c
 *	  The insert of a batch of rows without the executor: written a page at a
 *	  time (table_multi_insert, as COPY does), their index entries added, the
 *	  primary key checked as entries go in.
 *
 * Locking: RowExclusiveLock on the table, as an INSERT; a possible repeat
 * of a stored id is checked as a deferred unique constraint does, which
 * waits for a concurrent inserter of the same id.
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

#include "queue/claim_start.h"
#include "queue/relation.h"
#include "queue/queue.h"


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
id_stored(TaskqRel *d, Relation pkey, IndexInfo *pkinfo, Datum id, ItemPointer tid)
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
 * take their defaults, and so does a NULL not_before (insert.c's INSERT has
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
	TaskqRel	d;
	int			natts;
	int		   *given;			/* per attribute: index into names, or -1 */
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

	*stored = -1;
	if (!taskq_rel_open(&d, "INSERT", NULL, 0))
		return false;
	pkey = taskq_rel_index(&d, "tasks_pkey", 1, &pkinfo);
	for (int c = 0; c < ncols; c++)
		if (strcmp(names[c], "id") == 0)
			id_col = c;
	if (pkey == NULL || !pkinfo->ii_Unique || id_col < 0)
	{
		taskq_rel_close(&d);
		return false;
	}
	repeat_rows = palloc(sizeof(int) * n);
	repeat_tids = palloc(sizeof(ItemPointerData) * n);
	taskq_ready_batch_init(&ready);
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
			taskq_rel_close(&d);
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
			taskq_ready_batch_note(&ready, slots[j], &d.ready);	/* claim_start.c */
		}
		done += k;
	}
	for (int r = 0; r < nrepeats && *stored < 0; r++)
		if (id_stored(&d, pkey, pkinfo, cols[id_col][repeat_rows[r]], &repeat_tids[r]))
			*stored = repeat_rows[r];
	/* the entries are in the indexes: now the claims may start before them */
	taskq_ready_batch_flush(&ready);

	for (int k = 0; k < Min(n, INSERT_CHUNK); k++)
		ExecDropSingleTupleTableSlot(slots[k]);
	taskq_rel_close(&d);
	return true;
}
