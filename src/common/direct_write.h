/*-------------------------------------------------------------------------
 *
 * direct_write.h
 *	  What the direct writes of every layer share (direct_write.c): a
 *	  table's columns found by name and type, the checks that a table is
 *	  as the install script made it, the fetch of a row by its unique key,
 *	  and an executor state for adding index entries as an UPDATE or
 *	  INSERT adds them.  The queue's direct paths on taskq.tasks
 *	  (queue/tasks_rel.h), the run rows (workflow/run_row.c) and the
 *	  signal counters (queue/signal_counter.c) are built on it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_DIRECT_WRITE_H
#define TASKQ_DIRECT_WRITE_H

#include "access/skey.h"
#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "nodes/bitmapset.h"
#include "nodes/execnodes.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

extern AttrNumber taskq_column(TupleDesc desc, const char *name);
extern AttrNumber taskq_typed_column(TupleDesc desc, const char *name, Oid type);
extern Oid	taskq_enum_label(Oid enumtype, const char *label);
extern bool taskq_table_plain(Relation rel, const char *const *checks);
extern bool taskq_triggers_tell(Relation rel, const char *function);
extern bool taskq_unique_btree_on(Oid indexid, Oid relid, int n, const AttrNumber *cols);
extern bool taskq_fetch_by_key(Relation rel, Relation idx, Snapshot snap, int n,
							   ScanKeyData *keys, TupleTableSlot *slot);
extern EState *taskq_direct_estate(Relation rel, Bitmapset *updated, ResultRelInfo **rri);
extern EState *taskq_index_state(Relation rel, Bitmapset *updated, ResultRelInfo **rri);

/* Is the text datum d the C string s? */
static inline bool
taskq_text_matches(Datum d, const char *s)
{
	text	   *t = DatumGetTextPP(d);
	size_t		len = VARSIZE_ANY_EXHDR(t);

	return len == strlen(s) && memcmp(VARDATA_ANY(t), s, len) == 0;
}

#endif							/* TASKQ_DIRECT_WRITE_H */
