/*-------------------------------------------------------------------------
 *
 * claim_rows.c
 *	  Where this backend's claims put their rows (id -> TID), for the
 *	  completion.
 *
 * A worker returns what it claimed, usually on the same connection.  The
 * claim knows where each new row version went; the completion would look
 * it up again by id, a descent of the primary key.  So the claims remember
 * (id, TID) for the completion, which fetches the version at that TID and
 * takes it if the snapshot sees it and its id is the one returned: the
 * primary key is unique, so that is the version the lookup would have
 * found.  A TID that no longer holds it (updated since, the claim rolled
 * back, the page pruned and reused, the table rewritten) fails one of the
 * two checks, and the completion looks the id up as before.  Backend-local:
 * no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "common/direct_write.h"
#include "common/local_table.h"
#include "queue/queue_internal.h"
#include "queue/tasks_rel.h"

#define CLAIMED_ID_LEN	64		/* longer ids are not remembered */
#define CLAIMED_MAX		4096	/* then the table starts over */

typedef struct ClaimedRow
{
	char		id[CLAIMED_ID_LEN];
	Oid			relid;
	ItemPointerData tid;
} ClaimedRow;

static HTAB *claimed_rows = NULL;

void
taskq_remember_claimed(TaskqRel *d, Datum id, ItemPointer tid)
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
bool
taskq_fetch_claimed(TaskqRel *d, const char *id, BlockNumber *nblocks)
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
	return taskq_text_matches(taskq_rel_old(d, d->col->id, &isnull), id) && !isnull;
}
