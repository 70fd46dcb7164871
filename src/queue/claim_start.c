/*-------------------------------------------------------------------------
 *
 * claim_start.c
 *	  Where claims start in the ready index: past the dead entries at the
 *	  head of each action's entries.
 *
 * A claimed or finished task leaves its old entry at the head of the ready
 * index until VACUUM removes it (its row version is dead, or soon will be).
 * Every claim walked all of them from the first entry on: with autovacuum's
 * default naptime of a minute, a busy queue piles up a minute of claims
 * there, and each claim pays for all of them.
 *
 * So the claims of a database share, per action, a start key in shared
 * memory: a position in that action's entries of tasks_ready_action_idx.
 * The invariant: every entry before start points at a row version that was
 * updated or deleted by a committed transaction, or inserted by an aborted
 * one.  Such a version is dead for good, and a claim could never take it.
 *
 *	- A claim moves start forward only over entries it found so
 *	  (claim_walk.c: invisible to its snapshot and to a dirty snapshot).  It
 *	  stops at the first entry that is live for anyone, or delayed but not
 *	  known dead, and never moves start in a transaction that changed a
 *	  ready row version itself (its own updates look dead to a dirty
 *	  snapshot, but may roll back): claims, completions of tasks held while
 *	  pending, and SQL updates and deletes (the triggers, over the old rows)
 *	  note it, taskq_claim_start_may_move() asks.  A claim that did move it,
 *	  and went on over dead entries and rows it claimed itself only, moves
 *	  it past them when it commits (taskq_claim_start_defer).
 *	- A writer that adds a ready entry (a pending row with no unfinished
 *	  predecessor) lowers start to that entry's key if it is before it, and
 *	  logs the key, after the entry is in the index and before it commits:
 *	  the direct insert (insert_rows.c, through taskq_ready_batch_flush), and
 *	  for every SQL statement the tasks_ready_hint triggers (statement
 *	  level, over the new rows).  They run at the end of the statement,
 *	  before its commit.
 *	- A claim that walked while such an entry was added may have read that
 *	  index page before the entry arrived; it moves start no further than
 *	  the keys logged since it began (the ring of the last
 *	  TASKQ_CLAIM_START_WRITES; if more came, it does not move start at
 *	  all).
 *
 * A write that fires no trigger (logical replication's apply worker, or an
 * admin who disabled the triggers) is not seen; the background worker
 * forgets its database's starts every second, so such a task waits at most
 * that long.  Without shared_preload_libraries there is no shared memory,
 * and every claim walks from the first entry, as before.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "common/pg_compat.h"
#include "common/settings.h"
#include "queue/claim_start.h"
#include "queue/queue.h"
#include "queue/tasks_rel.h"

#define TASKQ_CLAIM_START_SLOTS		64	/* where claims start: (database, action) pairs */
#define TASKQ_CLAIM_START_WRITES		16	/* recent ready-entry writes a claim checks */

/*
 * Where the claims of one database start in the entries of one action:
 * every entry before start is known to point at a row version that no claim
 * can take (the file header says why that stays true).
 * writes counts the ready entries written (their keys in wlog, a ring), so
 * that a claim that walked while they were written does not move start past
 * them.
 */
typedef struct TaskqClaimStartSlot
{
	Oid			dboid;			/* InvalidOid: free slot */
	char		action[NAMEDATALEN];
	bool		valid;			/* false: start at the beginning */
	TaskqReadyKey start;
	uint64		gen;			/* changes when the slot is reset or reused */
	uint64		writes;
	TaskqReadyKey wlog[TASKQ_CLAIM_START_WRITES];
	uint64		last_used;		/* for reuse of the least recently used */
} TaskqClaimStartSlot;

/* The claim starts of every database, in shared memory of their own. */
typedef struct TaskqClaimStarts
{
	LWLock	   *lock;			/* protects every slot and clock */
	uint64		clock;
	TaskqClaimStartSlot slots[TASKQ_CLAIM_START_SLOTS];
} TaskqClaimStarts;

static TaskqClaimStarts *starts = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
claim_start_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(TaskqClaimStarts)));
	RequestNamedLWLockTranche("taskq claim starts", 1);
}

static void
claim_start_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	starts = ShmemInitStruct("taskq claim starts", sizeof(TaskqClaimStarts), &found);
	if (!found)
	{
		memset(starts, 0, sizeof(TaskqClaimStarts));
		starts->lock = &(GetNamedLWLockTranche("taskq claim starts"))[0].lock;
	}
	LWLockRelease(AddinShmemInitLock);
}

static void claim_start_xact_callback(XactEvent event, void *arg);
static void claim_start_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
								  SubTransactionId parentSubid, void *arg);

/*
 * Called once from _PG_init: the shared memory when preloaded (without it
 * every claim walks from the first entry), and the commit callbacks of
 * taskq_claim_start_defer.
 */
void
taskq_claim_start_init(void)
{
	if (process_shared_preload_libraries_in_progress)
	{
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = claim_start_shmem_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = claim_start_shmem_startup;
	}
	RegisterXactCallback(claim_start_xact_callback, NULL);
	RegisterSubXactCallback(claim_start_subxact_callback, NULL);
}

/* Is there a shared start to note writes in? */
bool
taskq_claim_start_available(void)
{
	return starts != NULL;
}

/* The transaction that changed a ready row version (claimed, completed, updated or deleted it). */
static LocalTransactionId ready_changed_lxid = InvalidLocalTransactionId;

void
taskq_claim_start_ready_changed(void)
{
	ready_changed_lxid = TASKQ_MY_LXID;
}

bool
taskq_claim_start_ready_changed_here(void)
{
	return ready_changed_lxid == TASKQ_MY_LXID;
}

/*
 * May a claim now move the start?  Not in a transaction that changed a
 * ready row version: its own updates look dead to a dirty snapshot, and may
 * still roll back.  A transaction that wrote before the claim began is
 * trusted only when the caller says every earlier write was noted
 * (writes_noted: return_and_own's own return): an SQL statement's changes are noted
 * when its triggers fire, at its end, which may be after a claim it calls.
 */
bool
taskq_claim_start_may_move(bool writes_noted)
{
	if (ready_changed_lxid == TASKQ_MY_LXID)
		return false;
	return !TransactionIdIsValid(GetTopTransactionIdIfAny()) || writes_noted;
}


/* s is the slot of dboid's action */
static bool
slot_is(TaskqClaimStartSlot *s, Oid dboid, const char *action, int len)
{
	return s->dboid == dboid && strlen(s->action) == len &&
		memcmp(s->action, action, len) == 0;
}

/*
 * Begin a claim's walk of action's entries of the ready index: where to
 * start, and what to check when moving the start.  hs->slot is -1 if there
 * is no shared memory or the action's name is too long for a slot.
 */
void
taskq_claim_start_begin(const char *action, TaskqClaimStartScan *hs)
{
	int			len = strlen(action);
	TaskqClaimStartSlot *found = NULL;
	TaskqClaimStartSlot *victim = NULL;

	hs->slot = -1;
	hs->valid = false;
	if (starts == NULL || len >= NAMEDATALEN || !OidIsValid(MyDatabaseId))
		return;

	LWLockAcquire(starts->lock, LW_EXCLUSIVE);
	for (int i = 0; i < TASKQ_CLAIM_START_SLOTS; i++)
	{
		TaskqClaimStartSlot *s = &starts->slots[i];

		if (slot_is(s, MyDatabaseId, action, len))
		{
			found = s;
			break;
		}
		if (victim == NULL || !OidIsValid(s->dboid) ||
			(OidIsValid(victim->dboid) && s->last_used < victim->last_used))
			victim = s;
	}
	if (found == NULL)
	{
		/* a claim holding the old identity sees gen change and moves nothing */
		found = victim;
		found->dboid = MyDatabaseId;
		memcpy(found->action, action, len);
		found->action[len] = '\0';
		found->valid = false;
		found->gen++;
		found->writes = 0;
	}
	found->last_used = ++starts->clock;
	hs->slot = found - starts->slots;
	hs->gen = found->gen;
	hs->writes = found->writes;
	hs->valid = found->valid;
	hs->start = found->start;
	LWLockRelease(starts->lock);
}

/*
 * The claim begun with hs found every entry from its start up to (not
 * including) to dead: move the start there, unless the slot was reset or
 * reused since, or a ready entry written meanwhile is before to.
 */
void
taskq_claim_start_advance(TaskqClaimStartScan *hs, TaskqReadyKey to)
{
	TaskqClaimStartSlot *s;

	/* the walk stopped where it began (the usual case): nothing to move */
	if (hs->slot < 0 || (hs->valid && !taskq_ready_key_before(hs->start, to)))
		return;
	s = &starts->slots[hs->slot];
	LWLockAcquire(starts->lock, LW_EXCLUSIVE);
	if (s->gen == hs->gen && s->writes - hs->writes <= TASKQ_CLAIM_START_WRITES)
	{
		for (uint64 w = hs->writes + 1; w <= s->writes; w++)
			if (taskq_ready_key_before(s->wlog[w % TASKQ_CLAIM_START_WRITES], to))
				to = s->wlog[w % TASKQ_CLAIM_START_WRITES];
		if (!s->valid || taskq_ready_key_before(s->start, to))
		{
			s->start = to;
			s->valid = true;
		}
	}
	LWLockRelease(starts->lock);
}

/*
 * The advance a claim leaves for its commit.  A claim that walked from the
 * start over dead entries and then only over rows it claimed itself (one
 * worker's claim, which follows its own previous claim's rows) knows that
 * once it commits, every entry up to its last claimed one is dead for good:
 * the next claim need not walk over them.  Until then they may roll back, so
 * the move waits for XACT_EVENT_COMMIT, which comes after the commit is
 * visible to all; any subtransaction's abort (it may have undone the
 * claims), an abort or PREPARE drops it.  Writes of ready entries since the
 * claim began limit it as they do taskq_claim_start_advance.
 */
#define TASKQ_DEFERRED_STARTS 8	/* actions of one claim whose start moves at commit */

static int	ndeferred = 0;
static TaskqClaimStartScan deferred_scan[TASKQ_DEFERRED_STARTS];
static TaskqReadyKey deferred_to[TASKQ_DEFERRED_STARTS];

void
taskq_claim_start_defer(TaskqClaimStartScan *hs, TaskqReadyKey to)
{
	if (hs->slot < 0 || ndeferred == TASKQ_DEFERRED_STARTS)
		return;
	for (int i = 0; i < ndeferred; i++)
		if (deferred_scan[i].slot == hs->slot)
			return;				/* one per action and transaction: the first claim's */
	deferred_scan[ndeferred] = *hs;
	deferred_to[ndeferred] = to;
	ndeferred++;
}

static void
claim_start_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
			if (starts != NULL)
				for (int i = 0; i < ndeferred; i++)
					taskq_claim_start_advance(&deferred_scan[i], deferred_to[i]);
			ndeferred = 0;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			ndeferred = 0;
			break;
		default:
			break;				/* the PRE_ events: the outcome is not known yet */
	}
}

static void
claim_start_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		ndeferred = 0;
}

/* Forget where the claims of a database start (the worker, every second). */
void
taskq_claim_start_reset(Oid dboid)
{
	if (starts == NULL)
		return;
	LWLockAcquire(starts->lock, LW_EXCLUSIVE);
	for (int i = 0; i < TASKQ_CLAIM_START_SLOTS; i++)
	{
		TaskqClaimStartSlot *s = &starts->slots[i];

		if (s->dboid == dboid && s->valid)
		{
			s->valid = false;
			s->gen++;
		}
	}
	LWLockRelease(starts->lock);
}

/* ----------
 * Writers: the ready entries a statement added, lowest key per action
 * ----------
 */
void
taskq_ready_batch_init(TaskqReadyBatch *b)
{
	b->any = false;
	b->nactions = 0;
	b->overflow = false;
}

static void
ready_batch_add(TaskqReadyBatch *b, text *action, int32 priority, int64 seq)
{
	TaskqReadyKey k = {priority, seq};
	const char *name = VARDATA_ANY(action);
	int			len = VARSIZE_ANY_EXHDR(action);
	int			i;

	if (starts == NULL)
		return;
	if (!b->any || taskq_ready_key_before(k, b->anymin))
		b->anymin = k;
	b->any = true;
	if (len >= NAMEDATALEN)
		return;					/* no slot can hold it */
	for (i = 0; i < b->nactions; i++)
		if (b->len[i] == len && memcmp(b->action[i], name, len) == 0)
			break;
	if (i == b->nactions)
	{
		if (i == TASKQ_READY_BATCH_ACTIONS)
		{
			b->overflow = true; /* every action's slot gets anymin */
			return;
		}
		memcpy(b->action[i], name, len);
		b->len[i] = len;
		b->min[i] = k;
		b->nactions++;
	}
	else if (taskq_ready_key_before(k, b->min[i]))
		b->min[i] = k;
}

/* Lower and log, in every slot of this database that the batch touches. */
void
taskq_ready_batch_flush(TaskqReadyBatch *b)
{
	if (starts == NULL || !b->any)
		return;
	LWLockAcquire(starts->lock, LW_EXCLUSIVE);
	for (int i = 0; i < TASKQ_CLAIM_START_SLOTS; i++)
	{
		TaskqClaimStartSlot *s = &starts->slots[i];
		bool		touched = false;
		TaskqReadyKey k = b->anymin;

		if (s->dboid != MyDatabaseId)
			continue;
		if (b->overflow)
			touched = true;
		else
			for (int a = 0; a < b->nactions; a++)
				if (slot_is(s, MyDatabaseId, b->action[a], b->len[a]))
				{
					k = b->min[a];
					touched = true;
					break;
				}
		if (!touched)
			continue;
		s->writes++;
		s->wlog[s->writes % TASKQ_CLAIM_START_WRITES] = k;
		if (s->valid && taskq_ready_key_before(k, s->start))
			s->start = k;
	}
	LWLockRelease(starts->lock);
}

/* If the row in slot is ready, note its entry's key in b. */
void
taskq_ready_batch_note(TaskqReadyBatch *b, TupleTableSlot *slot, const TaskqReadyCols *c)
{
	bool		n1,
				n2,
				n3;
	Datum		action,
				priority,
				seq;

	if (starts == NULL || !taskq_row_ready(slot, c))
		return;
	action = slot_getattr(slot, c->action, &n1);
	priority = slot_getattr(slot, c->priority, &n2);
	seq = slot_getattr(slot, c->seq, &n3);
	if (n1 || n2 || n3)
	{
		/* cannot happen (NOT NULL); if it did, lower every start fully */
		b->any = b->overflow = true;
		b->anymin.priority = PG_INT32_MAX;
		b->anymin.seq = PG_INT64_MIN;
	}
	else
		ready_batch_add(b, DatumGetTextPP(action), DatumGetInt32(priority), DatumGetInt64(seq));
}

/*
 * The rows an SQL statement wrote to taskq.tasks (the transition tables of
 * taskq.tasks_written()): a ready old row marks the transaction (its claims
 * then move no start), a ready new row lowers the starts.
 */
void
taskq_claim_start_rows_written(Relation rel, Tuplestorestate *oldtable,
							   Tuplestorestate *newtable)
{
	TupleDesc	desc;
	TupleTableSlot *slot;
	TaskqReadyCols c;
	TaskqReadyBatch b;

	if (!taskq_claim_start_available())
		return;

	desc = RelationGetDescr(rel);
	if (!taskq_ready_cols(desc, &c))
	{
		/* not the table the claims walk: forget every start, to be safe */
		taskq_claim_start_reset(MyDatabaseId);
		return;
	}

	slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	if (oldtable != NULL && !taskq_claim_start_ready_changed_here())
	{
		tuplestore_rescan(oldtable);
		while (tuplestore_gettupleslot(oldtable, true, false, slot))
			if (taskq_row_ready(slot, &c))
			{
				taskq_claim_start_ready_changed();
				break;
			}
	}

	taskq_ready_batch_init(&b);
	if (newtable != NULL)
	{
		tuplestore_rescan(newtable);
		while (tuplestore_gettupleslot(newtable, true, false, slot))
			taskq_ready_batch_note(&b, slot, &c);
	}
	ExecDropSingleTupleTableSlot(slot);
	taskq_ready_batch_flush(&b);
}
