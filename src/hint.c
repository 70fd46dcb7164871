/*-------------------------------------------------------------------------
 *
 * hint.c
 *	  Where claims start in the ready indexes: past the dead entries at
 *	  their head.
 *
 * A claimed or finished task leaves its old entry at the head of the ready
 * index until VACUUM removes it (its row version is dead, or soon will be).
 * Every claim walked all of them from the first entry on: with autovacuum's
 * default naptime of a minute, a busy queue piles up a minute of claims
 * there, and each claim pays for all of them.
 *
 * So the claims of a database share, per ready index (per action for
 * tasks_ready_action_idx), a start key in shared memory.  The invariant:
 * every entry before start points at a row version that was updated or
 * deleted by a committed transaction, or inserted by an aborted one.  Such
 * a version is dead for good, and a claim could never take it.
 *
 *	- A claim moves start forward only over entries it found so (direct.c:
 *	  invisible to its snapshot and to a dirty snapshot).  It stops at the
 *	  first entry that is live for anyone, or delayed but not known dead,
 *	  and never moves start in a transaction that changed a ready row
 *	  version itself (its own updates look dead to a dirty snapshot, but
 *	  may roll back): claims, completions of tasks held while pending, and
 *	  SQL updates and deletes (the triggers, over the old rows) note it,
 *	  taskq_hint_may_move() asks.  A claim that did move it, and went on
 *	  over dead entries and rows it claimed itself only, moves it past
 *	  them when it commits (taskq_hint_defer).
 *	- A writer that adds a ready entry (a pending row with no unfinished
 *	  predecessor) lowers start to that entry's key if it is before it, and
 *	  logs the key, after the entry is in the index and before it commits:
 *	  direct.c's batch insert, and for every SQL statement the
 *	  tasks_ready_hint triggers (statement level, over the new rows).
 *	  They run at the end of the statement, before its commit.
 *	- A claim that walked while such an entry was added may have read that
 *	  index page before the entry arrived; it moves start no further than
 *	  the keys logged since it began (the ring of the last
 *	  TASKQ_HINT_WRITES; if more came, it does not move start at all).
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

#include "shmem.h"
#include "taskq.h"

bool		taskq_shared_claim_start = true;	/* taskq.shared_claim_start */

/* The transaction that changed a ready row version (claimed, completed, updated or deleted it). */
static LocalTransactionId ready_changed_lxid = InvalidLocalTransactionId;

void
taskq_hint_ready_changed(void)
{
	ready_changed_lxid = MyProc->lxid;
}

bool
taskq_hint_ready_changed_here(void)
{
	return ready_changed_lxid == MyProc->lxid;
}

/* The transaction of a return_and_own that began without an xid, while it runs. */
static LocalTransactionId clean_cycle_lxid = InvalidLocalTransactionId;

/*
 * return_and_own around its two parts: the writes of its return are all
 * noted (the completion itself, the triggers at the end of each statement
 * it runs), so its claim may move the start unless they changed a ready row.
 */
void
taskq_hint_cycle(bool begin)
{
	if (begin && !TransactionIdIsValid(GetTopTransactionIdIfAny()))
		clean_cycle_lxid = MyProc->lxid;
	else
		clean_cycle_lxid = InvalidLocalTransactionId;
}

/*
 * May a claim now move the start?  Not in a transaction that changed a
 * ready row version: its own updates look dead to a dirty snapshot, and may
 * still roll back.  A transaction that wrote before the claim began is
 * trusted only inside return_and_own: an SQL statement's changes are noted
 * when its triggers fire, at its end, which may be after a claim it calls.
 */
bool
taskq_hint_may_move(void)
{
	if (ready_changed_lxid == MyProc->lxid)
		return false;
	return !TransactionIdIsValid(GetTopTransactionIdIfAny()) ||
		clean_cycle_lxid == MyProc->lxid;
}

/* a is before b in a ready index */
static inline bool
key_before(TaskqReadyKey a, TaskqReadyKey b)
{
	return a.priority > b.priority || (a.priority == b.priority && a.seq < b.seq);
}

/* s is the slot of dboid's index of all actions (action NULL) or of action */
static bool
slot_is(TaskqHintSlot *s, Oid dboid, const char *action, int len)
{
	if (s->dboid != dboid || s->all_actions != (action == NULL))
		return false;
	return action == NULL || (strlen(s->action) == len && memcmp(s->action, action, len) == 0);
}

/*
 * Begin a claim's walk of the ready index of action (NULL: of all actions):
 * where to start, and what to check when moving the start.  hs->slot is -1
 * if there is no shared memory or the action's name is too long for a slot.
 */
void
taskq_hint_begin(const char *action, TaskqHintScan *hs)
{
	int			len = action ? strlen(action) : 0;
	TaskqHintSlot *found = NULL;
	TaskqHintSlot *victim = NULL;

	hs->slot = -1;
	hs->valid = false;
	if (taskq_shared == NULL || len >= NAMEDATALEN || !OidIsValid(MyDatabaseId))
		return;

	LWLockAcquire(taskq_shared->hint_lock, LW_EXCLUSIVE);
	for (int i = 0; i < TASKQ_HINT_SLOTS; i++)
	{
		TaskqHintSlot *s = &taskq_shared->hints[i];

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
		found->all_actions = action == NULL;
		memcpy(found->action, action ? action : "", len);
		found->action[len] = '\0';
		found->valid = false;
		found->gen++;
		found->writes = 0;
	}
	found->last_used = ++taskq_shared->hint_clock;
	hs->slot = found - taskq_shared->hints;
	hs->gen = found->gen;
	hs->writes = found->writes;
	hs->valid = found->valid;
	hs->start = found->start;
	LWLockRelease(taskq_shared->hint_lock);
}

/*
 * The claim begun with hs found every entry from its start up to (not
 * including) to dead: move the start there, unless the slot was reset or
 * reused since, or a ready entry written meanwhile is before to.
 */
void
taskq_hint_advance(TaskqHintScan *hs, TaskqReadyKey to)
{
	TaskqHintSlot *s;

	/* the walk stopped where it began (the usual case): nothing to move */
	if (hs->slot < 0 || (hs->valid && !key_before(hs->start, to)))
		return;
	s = &taskq_shared->hints[hs->slot];
	LWLockAcquire(taskq_shared->hint_lock, LW_EXCLUSIVE);
	if (s->gen == hs->gen && s->writes - hs->writes <= TASKQ_HINT_WRITES)
	{
		for (uint64 w = hs->writes + 1; w <= s->writes; w++)
			if (key_before(s->wlog[w % TASKQ_HINT_WRITES], to))
				to = s->wlog[w % TASKQ_HINT_WRITES];
		if (!s->valid || key_before(s->start, to))
		{
			s->start = to;
			s->valid = true;
		}
	}
	LWLockRelease(taskq_shared->hint_lock);
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
 * claim began limit it as they do taskq_hint_advance.
 */
static bool deferred = false;
static TaskqHintScan deferred_scan;
static TaskqReadyKey deferred_to;

void
taskq_hint_defer(TaskqHintScan *hs, TaskqReadyKey to)
{
	if (hs->slot < 0 || deferred)
		return;					/* one per transaction: the first claim's */
	deferred_scan = *hs;
	deferred_to = to;
	deferred = true;
}

static void
hint_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
			if (deferred && taskq_shared != NULL)
				taskq_hint_advance(&deferred_scan, deferred_to);
			deferred = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			deferred = false;
			break;
		default:
			break;				/* the PRE_ events: the outcome is not known yet */
	}
}

static void
hint_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		deferred = false;
}

void
taskq_hint_register_callbacks(void)
{
	RegisterXactCallback(hint_xact_callback, NULL);
	RegisterSubXactCallback(hint_subxact_callback, NULL);
}

/* Forget where the claims of a database start (the worker, every second). */
void
taskq_hint_reset(Oid dboid)
{
	if (taskq_shared == NULL)
		return;
	LWLockAcquire(taskq_shared->hint_lock, LW_EXCLUSIVE);
	for (int i = 0; i < TASKQ_HINT_SLOTS; i++)
	{
		TaskqHintSlot *s = &taskq_shared->hints[i];

		if (s->dboid == dboid && s->valid)
		{
			s->valid = false;
			s->gen++;
		}
	}
	LWLockRelease(taskq_shared->hint_lock);
}

/* ----------
 * Writers: the ready entries a statement added, lowest key per action
 * ----------
 */
void
taskq_hint_batch_init(TaskqHintBatch *b)
{
	b->any = false;
	b->nactions = 0;
	b->overflow = false;
}

static void
hint_note(TaskqHintBatch *b, text *action, int32 priority, int64 seq)
{
	TaskqReadyKey k = {priority, seq};
	const char *name = VARDATA_ANY(action);
	int			len = VARSIZE_ANY_EXHDR(action);
	int			i;

	if (taskq_shared == NULL)
		return;
	if (!b->any || key_before(k, b->anymin))
		b->anymin = k;
	b->any = true;
	if (len >= NAMEDATALEN)
		return;					/* no slot can hold it */
	for (i = 0; i < b->nactions; i++)
		if (b->len[i] == len && memcmp(b->action[i], name, len) == 0)
			break;
	if (i == b->nactions)
	{
		if (i == TASKQ_HINT_BATCH_ACTIONS)
		{
			b->overflow = true; /* every action's slot gets anymin */
			return;
		}
		memcpy(b->action[i], name, len);
		b->len[i] = len;
		b->min[i] = k;
		b->nactions++;
	}
	else if (key_before(k, b->min[i]))
		b->min[i] = k;
}

/* Lower and log, in every slot of this database that the batch touches. */
void
taskq_hint_flush(TaskqHintBatch *b)
{
	if (taskq_shared == NULL || !b->any)
		return;
	LWLockAcquire(taskq_shared->hint_lock, LW_EXCLUSIVE);
	for (int i = 0; i < TASKQ_HINT_SLOTS; i++)
	{
		TaskqHintSlot *s = &taskq_shared->hints[i];
		bool		touched = false;
		TaskqReadyKey k = b->anymin;

		if (s->dboid != MyDatabaseId)
			continue;
		if (s->all_actions || b->overflow)
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
		s->wlog[s->writes % TASKQ_HINT_WRITES] = k;
		if (s->valid && key_before(k, s->start))
			s->start = k;
	}
	LWLockRelease(taskq_shared->hint_lock);
}

/* The ready columns of a table like taskq.tasks; false if one is missing. */
bool
taskq_ready_cols(TupleDesc desc, TaskqReadyCols *c)
{
	c->status_code = taskq_column(desc, "status_code");
	c->num_signals = taskq_column(desc, "num_signals");
	c->action = taskq_column(desc, "action");
	c->priority = taskq_column(desc, "priority");
	c->seq = taskq_column(desc, "seq");
	if (!c->status_code || !c->num_signals || !c->action || !c->priority || !c->seq)
		return false;
	c->pending = taskq_enum_label(TupleDescAttr(desc, c->status_code - 1)->atttypid, "pending");
	return true;
}

/*
 * Is the row in slot ready (pending with no unfinished predecessor)?  NULL
 * columns cannot happen (NOT NULL); if they did, say yes, to be safe.
 */
bool
taskq_row_ready(TupleTableSlot *slot, const TaskqReadyCols *c)
{
	bool		n1,
				n2;
	Datum		status = slot_getattr(slot, c->status_code, &n1);
	Datum		signals = slot_getattr(slot, c->num_signals, &n2);

	return n1 || n2 || (DatumGetObjectId(status) == c->pending && DatumGetInt32(signals) == 0);
}

/* If the row in slot is ready, note its entry's key in b. */
void
taskq_hint_note_row(TaskqHintBatch *b, TupleTableSlot *slot, const TaskqReadyCols *c)
{
	bool		n1,
				n2,
				n3;
	Datum		action,
				priority,
				seq;

	if (taskq_shared == NULL || !taskq_row_ready(slot, c))
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
		hint_note(b, DatumGetTextPP(action), DatumGetInt32(priority), DatumGetInt64(seq));
}

/*
 * taskq.tasks_written(): AFTER INSERT, UPDATE and DELETE trigger, for each
 * statement, over its transition tables: a ready old row marks the
 * transaction (its claims then move no start), a ready new row lowers the
 * starts.
 */
PG_FUNCTION_INFO_V1(taskq_tasks_written);

Datum
taskq_tasks_written(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	desc;
	TupleTableSlot *slot;
	TaskqReadyCols c;
	TaskqHintBatch b;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_STATEMENT(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"%s\" must be fired AFTER ... FOR EACH STATEMENT",
						"taskq.tasks_written")));
	if (taskq_shared == NULL)
		return PointerGetDatum(NULL);

	desc = RelationGetDescr(trigdata->tg_relation);
	if (!taskq_ready_cols(desc, &c))
	{
		/* not the table the claims walk: forget every start, to be safe */
		taskq_hint_reset(MyDatabaseId);
		return PointerGetDatum(NULL);
	}

	slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	if (trigdata->tg_oldtable != NULL && !taskq_hint_ready_changed_here())
	{
		tuplestore_rescan(trigdata->tg_oldtable);
		while (tuplestore_gettupleslot(trigdata->tg_oldtable, true, false, slot))
			if (taskq_row_ready(slot, &c))
			{
				taskq_hint_ready_changed();
				break;
			}
	}

	taskq_hint_batch_init(&b);
	if (trigdata->tg_newtable != NULL)
	{
		tuplestore_rescan(trigdata->tg_newtable);
		while (tuplestore_gettupleslot(trigdata->tg_newtable, true, false, slot))
			taskq_hint_note_row(&b, slot, &c);
	}
	ExecDropSingleTupleTableSlot(slot);
	taskq_hint_flush(&b);
	return PointerGetDatum(NULL);
}
