/*-------------------------------------------------------------------------
 *
 * pg_compat.h
 *	  Every difference between the PostgreSQL major versions taskq builds
 *	  against (15 to 18), each behind a name for what it does.
 *
 * A call site says what it wants (update a row and learn which index
 * entries its new version needs, add those entries, set up the range
 * table of a direct write, ...); this file alone says how each version
 * spells it.  No other file of src/ tests PG_VERSION_NUM
 * (test/static/compat.sh checks it), so that a new major version is a
 * change of this file and of nothing that reads rows.  Each entry names
 * the version that changed it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_PG_COMPAT_H
#define TASKQ_PG_COMPAT_H

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/relcache.h"

#if PG_VERSION_NUM >= 160000
#include "catalog/pg_database.h"
#endif
#if PG_VERSION_NUM >= 170000
#include "storage/procnumber.h"
#endif

/*
 * Which index entries the new version of an updated row needs.  Up to 15
 * table_tuple_update answers with a bool (all or none: HOT); from 16 a
 * HOT update still gives summarizing indexes (BRIN) an entry.
 */
typedef enum TaskqIndexUpdate
{
	TASKQ_INDEXES_NONE,			/* HOT: no index gets an entry */
	TASKQ_INDEXES_ALL,			/* every index gets one */
	TASKQ_INDEXES_SUMMARIZING	/* HOT, but summarizing indexes get one (16+) */
} TaskqIndexUpdate;

/* table_tuple_update, its answer about index entries as a TaskqIndexUpdate */
static inline TM_Result
taskq_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot, CommandId cid,
				   Snapshot snapshot, Snapshot crosscheck, bool wait,
				   TM_FailureData *tmfd, LockTupleMode *lockmode, TaskqIndexUpdate *indexes)
{
	TM_Result	result;
#if PG_VERSION_NUM >= 160000
	TU_UpdateIndexes u = TU_None;

	result = table_tuple_update(rel, otid, slot, cid, snapshot, crosscheck, wait, tmfd,
								lockmode, &u);
	*indexes = u == TU_All ? TASKQ_INDEXES_ALL :
		u == TU_Summarizing ? TASKQ_INDEXES_SUMMARIZING : TASKQ_INDEXES_NONE;
#else
	bool		u = false;

	result = table_tuple_update(rel, otid, slot, cid, snapshot, crosscheck, wait, tmfd,
								lockmode, &u);
	*indexes = u ? TASKQ_INDEXES_ALL : TASKQ_INDEXES_NONE;
#endif
	if (result != TM_Ok)
		*indexes = TASKQ_INDEXES_NONE;
	return result;
}

/*
 * ExecInsertIndexTuples for a new row (indexes TASKQ_INDEXES_ALL) or the
 * new version of an update (as taskq_tuple_update answered; not NONE).
 * From 16 it takes whether only summarizing indexes get the entry.
 */
static inline List *
taskq_insert_index_tuples(ResultRelInfo *rri, TupleTableSlot *slot, EState *estate,
						  bool update, bool noDupErr, bool *specConflict,
						  List *arbiterIndexes, TaskqIndexUpdate indexes)
{
	Assert(indexes != TASKQ_INDEXES_NONE);
#if PG_VERSION_NUM >= 160000
	return ExecInsertIndexTuples(rri, slot, estate, update, noDupErr, specConflict,
								 arbiterIndexes, indexes == TASKQ_INDEXES_SUMMARIZING);
#else
	Assert(indexes == TASKQ_INDEXES_ALL);
	return ExecInsertIndexTuples(rri, slot, estate, update, noDupErr, specConflict,
								 arbiterIndexes);
#endif
}

/* Is the index summarizing (BRIN: an entry even for a HOT update)?  16+. */
static inline bool
taskq_index_summarizing(const IndexInfo *ii)
{
#if PG_VERSION_NUM >= 160000
	return ii->ii_Summarizing;
#else
	(void) ii;
	return false;
#endif
}

/*
 * The range table of a direct write: the one entry rte (a result relation,
 * range table index 1), whose update changes the columns in updated
 * (attribute numbers offset by FirstLowInvalidHeapAttributeNumber, or
 * NULL).  ExecInsertIndexTuples reads them (ExecGetUpdatedCols) to hint
 * the indexes whose key an update leaves as it was.  Up to 15 they are the
 * entry's updatedCols; from 16 they are its RTEPermissionInfo's, which
 * every result relation must have (an entry without one fails
 * ExecGetUpdatedCols), and ExecInitRangeTable takes the list of them.
 * From 18 it also takes the entries not pruned: this one.
 */
static inline void
taskq_init_range_table(EState *estate, RangeTblEntry *rte, Bitmapset *updated)
{
#if PG_VERSION_NUM >= 160000
	RTEPermissionInfo *perminfo = makeNode(RTEPermissionInfo);

	perminfo->relid = rte->relid;
	perminfo->inh = false;
	perminfo->requiredPerms = updated != NULL ? ACL_UPDATE : ACL_INSERT;
	perminfo->updatedCols = updated;
	rte->perminfoindex = 1;
#if PG_VERSION_NUM >= 180000
	ExecInitRangeTable(estate, list_make1(rte), list_make1(perminfo), bms_make_singleton(1));
#else
	ExecInitRangeTable(estate, list_make1(rte), list_make1(perminfo));
#endif
#else
	rte->updatedCols = updated;
	ExecInitRangeTable(estate, list_make1(rte));
#endif
}

/* index_beginscan without instrumentation (18 added the argument). */
static inline IndexScanDesc
taskq_index_beginscan(Relation heap, Relation index, Snapshot snapshot, int nkeys,
					  int norderbys)
{
#if PG_VERSION_NUM >= 180000
	return index_beginscan(heap, index, snapshot, NULL, nkeys, norderbys);
#else
	return index_beginscan(heap, index, snapshot, nkeys, norderbys);
#endif
}

/*
 * This backend's number, 0-based: the index of its PGPROC, which the
 * proclists of condition variables link by, distinct from every other
 * running backend's, and below MaxBackends for a regular backend or
 * background worker.  Up to 16 it is MyProc->pgprocno; 17 named it
 * MyProcNumber (and dropped MyBackendId, the 1-based slot of the
 * invalidation queue, which counted from 1 and was a different number).
 * Whoever stores it says which base it stores (signal.c's stripes count
 * from 1).
 */
#if PG_VERSION_NUM >= 170000
#define TASKQ_PROC_NUMBER	((int32) MyProcNumber)
#else
#define TASKQ_PROC_NUMBER	((int32) MyProc->pgprocno)
#endif

/* Is this process a background worker?  17 made the flag a backend type. */
#if PG_VERSION_NUM >= 170000
#define TASKQ_IS_BACKGROUND_WORKER	AmBackgroundWorkerProcess()
#else
#define TASKQ_IS_BACKGROUND_WORKER	IsBackgroundWorker
#endif

/* This backend's local transaction id (17 moved it into MyProc->vxid). */
#if PG_VERSION_NUM >= 170000
#define TASKQ_MY_LXID		(MyProc->vxid.lxid)
#else
#define TASKQ_MY_LXID		(MyProc->lxid)
#endif

/*
 * Does this backend hold the lock in exactly this mode?  17 added whether
 * a stronger mode also counts: not here, as before.
 */
static inline bool
taskq_lock_held_by_me(const LOCKTAG *tag, LOCKMODE mode)
{
#if PG_VERSION_NUM >= 170000
	return LockHeldByMe(tag, mode, false);
#else
	return LockHeldByMe(tag, mode);
#endif
}

/*
 * Descend the btree idx to the leaf page where key belongs, read-locked
 * (_bt_search).  16 added the heap relation (for a page split's cleanup;
 * a read takes none); 17 dropped the snapshot, which served only the
 * "snapshot too old" check 17 removed.
 */
static inline BTStack
taskq_bt_search(Relation idx, Relation heap, BTScanInsert key, Buffer *buf, int access,
				Snapshot snapshot)
{
#if PG_VERSION_NUM >= 170000
	(void) snapshot;
	return _bt_search(idx, heap, key, buf, access);
#elif PG_VERSION_NUM >= 160000
	return _bt_search(idx, heap, key, buf, access, snapshot);
#else
	(void) heap;
	return _bt_search(idx, key, buf, access, snapshot);
#endif
}

/*
 * Among the specifiers of a declaration of a function that never returns
 * ("extern TASKQ_NORETURN void f(...)").  18 replaced the attribute after
 * the declarator (pg_attribute_noreturn()) with pg_noreturn among the
 * specifiers; up to 17 the attribute, GCC's and clang's, may stand there
 * too.
 */
#if PG_VERSION_NUM >= 180000
#define TASKQ_NORETURN		pg_noreturn
#else
#define TASKQ_NORETURN		pg_attribute_noreturn()
#endif

/*
 * The primary key index of rel, deferrable or not.  18 added whether a
 * deferrable one counts; up to 17 it did.
 */
static inline Oid
taskq_primary_key_index(Relation rel)
{
#if PG_VERSION_NUM >= 180000
	return RelationGetPrimaryKeyIndex(rel, true);
#else
	return RelationGetPrimaryKeyIndex(rel);
#endif
}

/*
 * Give rri the prepared CHECK constraints ExecConstraints evaluates (one
 * per constraint of the relation's descriptor, in its order), instead of
 * its preparing them anew.  18 renamed the field.
 */
static inline void
taskq_set_check_exprs(ResultRelInfo *rri, ExprState **states)
{
#if PG_VERSION_NUM >= 180000
	rri->ri_CheckConstraintExprs = states;
#else
	rri->ri_ConstraintExprs = states;
#endif
}

/* May the role do mode (ACL_CONNECT, ...) on the database?  16 made it generic. */
static inline AclResult
taskq_database_aclcheck(Oid dboid, Oid roleid, AclMode mode)
{
#if PG_VERSION_NUM >= 160000
	return object_aclcheck(DatabaseRelationId, dboid, roleid, mode);
#else
	return pg_database_aclcheck(dboid, roleid, mode);
#endif
}

#endif							/* TASKQ_PG_COMPAT_H */
