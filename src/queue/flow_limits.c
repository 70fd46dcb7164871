/*-------------------------------------------------------------------------
 *
 * flow_limits.c
 *	  Concurrency and rate limits per action (taskq.set_concurrency_limit,
 *	  taskq.set_rate_limit): the limiter a claim of a limited action goes
 *	  through (flow_kept.c says which are); the wake when one of
 *	  their tasks lets go of its slot or a rate window reopens; the rule for
 *	  extending an expired lease.
 *
 * What counts as running is read from the task rows, never from a counter
 * alone: a task of the action holds a slot while it is in progress and its
 * lease deadline (if any) is after the clock.  An action with concurrency
 * limits and no rate limit (max_running at most TASKQ_BOOK_SLOTS, as many
 * running) is claimed through its slot book (flow_books.c), which never
 * counts fewer tasks than the rows: a claim reserves an entry there without
 * any lock, and only a claim that finds it stale (or made for other
 * limits) counts the rows, as below, and rebuilds it.  A claim of any other
 * limited action takes the action's limiter lock (an advisory lock of the
 * transaction, ("lmt", hash of the action)), exclusive, and then counts
 * those tasks, in all and per concurrency_key, from the entries of the
 * partial index tasks_running_idx, each row read under a dirty snapshot:
 * committed, or written by a transaction still in progress (an action
 * limited only per key counts a key when its claim first meets it).  The walk
 * (claim_walk.c) or the SQL claim (claim.c) then asks before each row
 * whether its action and key are under their limits, and counts what it
 * takes.  The claim lets go of the lock when its rows are written, not at
 * its commit: the next claim counts them as running already (they are in
 * the index, in progress), and if the claim rolls back they are dead and
 * count for nothing.  So at no moment do more tasks hold a lease than the
 * limits allow: a return, release or expiry only lowers the count (a
 * return counts until it commits), and the only other way into a lease,
 * extending one that expired, takes the same lock and holds it to its
 * commit (taskq_flow_extend_ok), as does a claim of a rate-limited action
 * (the rate's log below is read with committed rows only).  Holding the
 * lock to the commit made every claim of the action queue behind the
 * previous one's commit; a statement that re-read the limits cost a claim
 * a tenth of its CPU, so they are fetched by key (refresh_limits).  A
 * claim that waits (claim_wait.c) never holds the lock while it sleeps.
 *
 * Rates are an exact sliding log: a row per claim in taskq.flow_claims,
 * written in the claim's transaction with the claim's clock time, read
 * under the limiter lock after it is taken (GetCurrentTimestamp: the next
 * holder of the lock reads a later clock, so the log is in claim order).  A
 * claim takes a task only if fewer than rate_max claims of its window (the
 * action, or with rate_by_key its key) lie in the rate_per before that
 * time: no window of that length ever holds more.  Rows that left their
 * window are deleted by a claim that took a task of the action (it holds
 * the lock to its end; a claim that took nothing only read) and by the
 * background worker, which a claim tells (taskq_note_due) to wake when the
 * window reopens, to announce the action; both skip rows the other holds.
 *
 * Lock order: limiter locks in action name order, before any task row the
 * claim takes; task rows are then only tried without waiting, so a claim
 * never waits for a row while it holds a limiter lock.  Returns take no
 * limiter lock.
 *
 * With no limits at all, a claim, return or expiry pays one look at a
 * flag (flow_kept.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "common/args.h"
#include "common/direct_write.h"
#include "common/limits.h"
#include "common/pg_compat.h"
#include "common/plan.h"
#include "ipc/wakeup.h"
#include "queue/flow.h"
#include "queue/queue_internal.h"

/* The advisory lock of an action's limiter: key1 "lmt\0", key2 its hash. */
#define FLOW_LOCK_CLASS 0x6C6D7400


/* ----------
 * The limiter of a claim
 * ----------
 */

/* the running tasks and the claims in the window of one key */
typedef struct KeyCount
{
	char		key[TASKQ_MAX_CONCURRENCY_KEY_LEN + 1];
	int32		running;
	int32		window;
} KeyCount;

typedef struct FlowAction
{
	FlowLimit	limit;
	LOCKTAG		tag;
	int32		running;		/* in all */
	int32		window;			/* claims in the rate window, in all */
	int32		window_nokey;	/* ... of tasks without a key */
	HTAB	   *keys;			/* KeyCount per key */
	int			taken;			/* claimed by this claim */
	bool		lazy;			/* only a limit per key: each key counted when met */
	List	   *taken_keys;		/* rate-limited: the key of each (NULL: none) */
	TaskqBook  *book;			/* its slot book, if it has one */
	bool		by_book;		/* its slots taken in the book, not counted */
	bool		locked;			/* its limiter lock taken */
	bool		blocked;		/* claims in flight of unknown keys: take nothing */
} FlowAction;

struct TaskqFlow
{
	int			n;
	FlowAction *actions;		/* in name order */
	bool		claims;			/* a claim (else an extension: no rate counted) */
	TimestampTz at;				/* the claim's clock time, under the locks */
	TimestampTz now;			/* its clock time when it began */
	TimestampTz lease_end;		/* the deadline of the leases it gives (DT_NOEND: none) */
	/* what count_running reads, opened once (taskq_flow_end closes it) */
	Relation	rel;			/* taskq.tasks, NULL until opened */
	Relation	idx;			/* tasks_running_idx */
	TupleTableSlot *slot;
	AttrNumber	deadline_col;
	AttrNumber	key_col;
	AttrNumber	id_col;
	SnapshotData dirty;
	/* the tasks count_rows found, hashed, their keys and deadlines, while a book is rebuilt */
	bool		collect;
	uint64	   *tasks;
	uint64	   *keys;
	TimestampTz *ends;
	int			ntasks;
	int			maxtasks;
};

static int
compare_names(const void *a, const void *b)
{
	return strcmp(((const FlowAction *) a)->limit.action,
				  ((const FlowAction *) b)->limit.action);
}

static FlowAction *
flow_find(TaskqFlow *f, const char *action)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->actions[i].limit.action, action) == 0)
			return &f->actions[i];
	return NULL;
}

static int32 count_rows(TaskqFlow *f, FlowAction *a, const char *key);

/*
 * The counts of key (NULL: none) of a, made if need be: an action limited
 * only per key counts a key's running tasks when its claim first meets it.
 */
static KeyCount *
key_count(TaskqFlow *f, FlowAction *a, const char *key)
{
	KeyCount   *k;
	bool		found;

	if (key == NULL || strlen(key) > TASKQ_MAX_CONCURRENCY_KEY_LEN)
		return NULL;
	k = hash_search(a->keys, key, HASH_ENTER, &found);
	if (!found)
	{
		k->running = a->lazy ? count_rows(f, a, key) : 0;
		k->window = 0;
	}
	return k;
}

/* Where the window of a rate-limited action that ends at f->at begins. */
static Datum
window_start(TaskqFlow *f, FlowAction *a)
{
	return DirectFunctionCall2(timestamptz_mi_interval, TimestampTzGetDatum(f->at),
							   IntervalPGetDatum(&a->limit.rate_per));
}

/*
 * The claims of a rate-limited action in its window, which ends at f->at
 * (under its lock), in all and per key.  Only read: a claim that takes
 * nothing lets go of the lock and must hold no row of the log.
 */
static void
count_window(TaskqFlow *f, FlowAction *a)
{
	static TaskqPlan window_plan = {
		"SELECT key, pg_catalog.count(*)::pg_catalog.int4 FROM taskq.flow_claims"
		" WHERE action OPERATOR(pg_catalog.=) $1 AND claimed_at OPERATOR(pg_catalog.>) $2"
		" GROUP BY key",
		2, {TEXTOID, TIMESTAMPTZOID}, NULL, true
	};
	Datum		args[2];

	args[0] = CStringGetTextDatum(a->limit.action);
	args[1] = window_start(f, a);
	taskq_execute_latest(&window_plan, args, NULL, true);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		bool		nokey;
		char	   *key = taskq_get_text(r, 1, &nokey);
		int32		n = taskq_get_int32(r, 2, NULL);
		KeyCount   *k = nokey ? NULL : key_count(f, a, key);

		a->window += n;
		if (k != NULL)
			k->window = n;
		else if (nokey)
			a->window_nokey = n;
	}
}

/* A limit's column of the row in slot into *l (its action aside). */
static void
read_limit_slot(TupleTableSlot *slot, const AttrNumber *cols, FlowLimit *l)
{
	bool		isnull;
	Datum		d;

	d = slot_getattr(slot, cols[0], &isnull);
	l->has_max = !isnull;
	l->max_running = isnull ? 0 : DatumGetInt32(d);
	d = slot_getattr(slot, cols[1], &isnull);
	l->has_per_key = !isnull;
	l->max_per_key = isnull ? 0 : DatumGetInt32(d);
	d = slot_getattr(slot, cols[2], &isnull);
	l->has_rate = !isnull;
	l->rate_max = isnull ? 0 : DatumGetInt32(d);
	if (l->has_rate)
	{
		l->rate_per = *DatumGetIntervalP(slot_getattr(slot, cols[3], &isnull));
		l->rate_by_key = DatumGetBool(slot_getattr(slot, cols[4], &isnull));
	}
}

/*
 * The limits of f's actions read again, under their locks, with a snapshot
 * of this moment: what a session keeps only says which actions may be
 * limited.  A claim woken by the commit of a raised or removed limit runs
 * before that commit's invalidation reaches it (the commit's callbacks wake
 * it first), and must see the new limits.  An action without a row is
 * limited no more.  Each row is fetched through the table's primary key:
 * a statement cost a limited claim a tenth of its CPU (its executor's start
 * and end, for a row or two).
 */
static void
refresh_limits(TaskqFlow *f)
{
	Oid			nsp = get_namespace_oid("taskq", false);
	Relation	rel = table_open(get_relname_relid("flow_limits", nsp), AccessShareLock);
	Relation	idx = index_open(get_relname_relid("flow_limits_pkey", nsp), AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	AttrNumber	cols[5];
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	Snapshot	snap = RegisterSnapshot(GetLatestSnapshot());

	cols[0] = taskq_column(desc, "max_running");
	cols[1] = taskq_column(desc, "max_running_per_key");
	cols[2] = taskq_column(desc, "rate_max");
	cols[3] = taskq_column(desc, "rate_per");
	cols[4] = taskq_column(desc, "rate_by_key");
	for (int i = 0; i < f->n; i++)
	{
		FlowLimit  *l = &f->actions[i].limit;
		ScanKeyData key;

		ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_TEXTEQ,
					CStringGetTextDatum(l->action));
		key.sk_collation = C_COLLATION_OID;
		l->has_max = l->has_per_key = l->has_rate = false;
		l->version = InvalidTransactionId;
		if (taskq_fetch_by_key(rel, idx, snap, 1, &key, slot))
		{
			bool		isnull;

			read_limit_slot(slot, cols, l);
			l->version = DatumGetTransactionId(slot_getsysattr(slot,
															   MinTransactionIdAttributeNumber,
															   &isnull));
		}
	}
	UnregisterSnapshot(snap);
	ExecDropSingleTupleTableSlot(slot);
	index_close(idx, AccessShareLock);
	table_close(rel, AccessShareLock);
}

/*
 * What runs of action a (with key: of that key only), under its lock: the
 * entries of tasks_running_idx (in progress) whose row is alive under a
 * dirty snapshot -- committed, or written by a transaction still in
 * progress -- and whose lease has not passed at this clock time.  So the
 * claims of a transaction that let go of the lock before its commit are
 * counted, and so is a task whose return has not committed yet; a claim
 * that aborts later was counted for nothing (its slot stays free), which
 * errs on the safe side.  Without key, a's running tasks in all and per
 * key are added up; returns how many ran.
 */
static int32
count_rows(TaskqFlow *f, FlowAction *a, const char *key)
{
	TimestampTz now = GetCurrentTimestamp();
	IndexScanDesc scan;
	ScanKeyData skeys[2];
	int32		n = 0;

	if (f->rel == NULL)
	{
		Oid			nsp = get_namespace_oid("taskq", false);

		f->rel = table_open(get_relname_relid("tasks", nsp), AccessShareLock);
		f->idx = index_open(get_relname_relid("tasks_running_idx", nsp), AccessShareLock);
		f->slot = table_slot_create(f->rel, NULL);
		f->deadline_col = taskq_column(RelationGetDescr(f->rel), "action_deadline");
		f->key_col = taskq_column(RelationGetDescr(f->rel), "concurrency_key");
		f->id_col = taskq_column(RelationGetDescr(f->rel), "id");
		InitDirtySnapshot(f->dirty);
	}
	ScanKeyInit(&skeys[0], 1, BTEqualStrategyNumber, F_TEXTEQ,
				CStringGetTextDatum(a->limit.action));
	skeys[0].sk_collation = C_COLLATION_OID;
	if (key != NULL)
	{
		ScanKeyInit(&skeys[1], 2, BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(key));
		skeys[1].sk_collation = C_COLLATION_OID;
	}
	scan = taskq_index_beginscan(f->rel, f->idx, &f->dirty, key ? 2 : 1, 0);
	index_rescan(scan, skeys, key ? 2 : 1, NULL, 0);
	while (index_getnext_slot(scan, ForwardScanDirection, f->slot))
	{
		bool		isnull;
		Datum		d = slot_getattr(f->slot, f->deadline_col, &isnull);

		if (!isnull && DatumGetTimestampTz(d) <= now)
			continue;			/* its lease passed: its slot is free */
		n++;
		if (f->collect)
		{
			if (f->ntasks == f->maxtasks)
			{
				f->maxtasks = Max(16, f->maxtasks * 2);
				f->tasks = f->tasks ? repalloc(f->tasks, sizeof(uint64) * f->maxtasks) :
					palloc(sizeof(uint64) * f->maxtasks);
				f->ends = f->ends ? repalloc(f->ends, sizeof(TimestampTz) * f->maxtasks) :
					palloc(sizeof(TimestampTz) * f->maxtasks);
				f->keys = f->keys ? repalloc(f->keys, sizeof(uint64) * f->maxtasks) :
					palloc(sizeof(uint64) * f->maxtasks);
			}
			d = slot_getattr(f->slot, f->key_col, &isnull);
			f->keys[f->ntasks] = taskq_book_key(isnull ? NULL : TextDatumGetCString(d));
			d = slot_getattr(f->slot, f->deadline_col, &isnull);
			f->ends[f->ntasks] = isnull ? DT_NOEND : DatumGetTimestampTz(d);
			d = slot_getattr(f->slot, f->id_col, &isnull);
			f->tasks[f->ntasks++] = taskq_book_task(TextDatumGetCString(d));
		}
		if (key != NULL)
			continue;
		a->running++;
		d = slot_getattr(f->slot, f->key_col, &isnull);
		if (!isnull)
		{
			KeyCount   *k = key_count(f, a, TextDatumGetCString(d));

			if (k != NULL)
				k->running++;
		}
	}
	index_endscan(scan);
	return n;
}

/* May claims of an action with limits l take its slots in a book? */
static bool
bookable(const FlowLimit *l)
{
	return !l->has_rate && (l->has_max || l->has_per_key) &&
		(!l->has_max || l->max_running <= TASKQ_BOOK_SLOTS);
}

/* The state of a's book for a claim at now. */
static TaskqBookState
book_state(FlowAction *a, TimestampTz now)
{
	return taskq_book_state(a->book, a->limit.version,
							a->limit.has_max ? a->limit.max_running : -1,
							a->limit.has_per_key ? a->limit.max_per_key : -1, now);
}

/*
 * Count what runs of a locked action a.  An action limited only per key
 * (no max_running, no rate) waits until its claim meets each key: a claim
 * of one task then reads the few rows of one key, not every running task
 * of the action.  An action with a book has it rebuilt from the count
 * (flow_books.c), and goes by it if it may and the count fits; else what
 * the book has in flight (claims that may not have written their rows)
 * is counted too, or, where keys matter, the claim takes none of it.
 */
static void
count_locked(TaskqFlow *f, FlowAction *a)
{
	uint64		mark = 0;
	int			inflight;
	TimestampTz now = GetCurrentTimestamp();
	bool		book = bookable(&a->limit) &&
		!(a->book != NULL && taskq_book_overflowed(a->book, a->limit.version, now));

	/* a book is rebuilt from every running task of the action */
	a->lazy = a->limit.has_per_key && !a->limit.has_max && !a->limit.has_rate &&
		!(a->book != NULL && book);
	/* another claim may have counted it while this one waited for the lock */
	if (a->book != NULL && book && book_state(a, now) != TASKQ_BOOK_STALE)
	{
		a->by_book = true;
		return;
	}
	if (a->book != NULL)
		mark = taskq_book_rebuild_begin(a->book);
	f->collect = a->book != NULL && book;
	f->ntasks = 0;
	if (!a->lazy)
		(void) count_rows(f, a, NULL);
	f->collect = false;
	if (a->book == NULL)
		return;
	inflight = taskq_book_rebuild_end(a->book, mark, a->limit.version, f->tasks, f->keys,
									  f->ends, f->ntasks, book, &a->by_book);
	if (a->by_book || inflight == 0)
		return;
	if (a->limit.has_per_key)
		a->blocked = true;		/* their keys are not known */
	else
		a->running += inflight;
}

/*
 * The limiter of a claim (claims: else an extension of an expired lease)
 * of these actions (all_actions: of any): NULL if none of them is limited,
 * the common case, at the cost of a flag.  An action with concurrency
 * limits and no rate limit, whose book is for the limits read now and not
 * stale, is claimed by its book, without a lock; a stale one is rebuilt
 * under the lock (flow_books.c says when).  The others' locks are taken,
 * in name order, their limits read again under them and their running
 * tasks counted.
 * Called before the claim reads the ready rows.
 */
static TaskqFlow *
flow_begin(List *actions, bool all_actions, bool claims)
{
	HTAB	   *limits = taskq_flow_limits();
	TaskqFlow  *f;
	ListCell   *lc;
	int			max;
	bool		any_locked = false;

	if (limits == NULL)
		return NULL;
	f = palloc0(sizeof(TaskqFlow));
	f->claims = claims;
	f->now = GetCurrentTimestamp();
	f->lease_end = DT_NOEND;
	max = all_actions ? (int) hash_get_num_entries(limits) : list_length(actions);
	f->actions = palloc0(sizeof(FlowAction) * Max(max, 1));
	if (all_actions)
	{
		HASH_SEQ_STATUS seq;
		FlowLimit  *l;

		hash_seq_init(&seq, limits);
		while ((l = hash_seq_search(&seq)) != NULL)
			f->actions[f->n++].limit = *l;
	}
	else
		foreach(lc, actions)
		{
			FlowLimit  *l = taskq_flow_limit_of(limits, lfirst(lc));

			if (l != NULL && flow_find(f, l->action) == NULL)
				f->actions[f->n++].limit = *l;
		}
	if (f->n == 0)
		return NULL;
	/* the kept limits are those last committed (flow_kept.c): read again under a lock */
	qsort(f->actions, f->n, sizeof(FlowAction), compare_names);
	for (int i = 0; i < f->n; i++)
	{
		FlowAction *a = &f->actions[i];
		FlowLimit  *kl = taskq_flow_limit_of(limits, a->limit.action);
		HASHCTL		ctl;

		/* made by the first claim that may use it (a book is never given up) */
		a->book = kl != NULL ? taskq_flow_limit_book(kl, bookable(&a->limit)) : NULL;
		if (claims && a->book != NULL && bookable(&a->limit) &&
			!taskq_book_overflowed(a->book, a->limit.version, f->now) &&
			book_state(a, f->now) != TASKQ_BOOK_STALE)
		{
			a->by_book = true;
			continue;
		}
		SET_LOCKTAG_ADVISORY(a->tag, MyDatabaseId, FLOW_LOCK_CLASS,
							 hash_bytes((const unsigned char *) a->limit.action,
										strlen(a->limit.action)), 2);
		(void) LockAcquire(&a->tag, ExclusiveLock, false, false);
		a->locked = any_locked = true;
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = TASKQ_MAX_CONCURRENCY_KEY_LEN + 1;
		ctl.entrysize = sizeof(KeyCount);
		ctl.hcxt = CurrentMemoryContext;
		a->keys = hash_create("taskq running per key", 16, &ctl,
							  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	if (!any_locked)
		return f;
	refresh_limits(f);			/* under the locks */
	for (int i = 0; i < f->n; i++)
		if (f->actions[i].locked)
			count_locked(f, &f->actions[i]);
	f->at = GetCurrentTimestamp();	/* the claims' clock time, under the locks */
	for (int i = 0; i < f->n; i++)
		if (f->actions[i].locked && f->actions[i].limit.has_rate)
			count_window(f, &f->actions[i]);
	return f;
}

TaskqFlow *
taskq_flow_begin(List *actions, bool all_actions)
{
	return flow_begin(actions, all_actions, true);
}

/* The deadline of the leases the claim gives (DT_NOEND: none), for books. */
void
taskq_flow_lease(TaskqFlow *f, TimestampTz end)
{
	if (f != NULL)
		f->lease_end = end;
}

/* Is the action at a limit in all (no task of it may be taken)? */
bool
taskq_flow_action_full(TaskqFlow *f, const char *action)
{
	FlowAction *a = f ? flow_find(f, action) : NULL;

	if (a == NULL)
		return false;
	if (a->by_book)
		return book_state(a, f->now) != TASKQ_BOOK_ROOM;
	if (a->blocked || (a->limit.has_max && a->running >= a->limit.max_running))
		return true;
	return f->claims && a->limit.has_rate && !a->limit.rate_by_key &&
		a->window >= a->limit.rate_max;
}

/*
 * May task id of action with key (NULL: none) be taken now?  If so, it is
 * counted as taken: the caller takes it, or calls taskq_flow_untake.
 */
bool
taskq_flow_take(TaskqFlow *f, const char *action, const char *key, const char *id)
{
	FlowAction *a = f ? flow_find(f, action) : NULL;
	KeyCount   *k;
	bool		rate;

	if (a == NULL)
		return true;			/* not limited */
	if (a->by_book)
	{
		if (key != NULL && strlen(key) > TASKQ_MAX_CONCURRENCY_KEY_LEN)
			return false;		/* not a key taskq wrote */
		if (!taskq_book_reserve(a->book, a->limit.version,
								a->limit.has_max ? a->limit.max_running : -1,
								a->limit.has_per_key ? a->limit.max_per_key : -1,
								taskq_book_task(id), taskq_book_key(key), f->lease_end))
			return false;
		a->taken++;
		return true;
	}
	if (a->blocked)
		return false;
	if (key != NULL && strlen(key) > TASKQ_MAX_CONCURRENCY_KEY_LEN)
		return false;			/* not a key taskq wrote */
	k = key_count(f, a, key);
	if (a->limit.has_max && a->running >= a->limit.max_running)
		return false;
	if (k != NULL && a->limit.has_per_key && k->running >= a->limit.max_per_key)
		return false;
	rate = f->claims && a->limit.has_rate;
	if (rate)
	{
		int32		in_window = !a->limit.rate_by_key ? a->window :
			k != NULL ? k->window : a->window_nokey;

		if (in_window >= a->limit.rate_max)
			return false;
	}
	a->running++;
	if (k != NULL)
		k->running++;
	if (rate)
	{
		a->window++;
		if (k != NULL)
			k->window++;
		else
			a->window_nokey++;
		a->taken_keys = lappend(a->taken_keys, key ? pstrdup(key) : NULL);
	}
	a->taken++;
	return true;
}

/* The task taskq_flow_take let through last was not taken after all. */
void
taskq_flow_untake(TaskqFlow *f, const char *action, const char *key, const char *id)
{
	FlowAction *a = f ? flow_find(f, action) : NULL;
	KeyCount   *k;

	if (a == NULL)
		return;
	if (a->by_book)
	{
		taskq_book_unreserve(a->book, taskq_book_task(id));
		a->taken--;
		return;
	}
	k = key_count(f, a, key);
	a->running--;
	a->taken--;
	if (k != NULL)
		k->running--;
	if (f->claims && a->limit.has_rate)
	{
		a->window--;
		if (k != NULL)
			k->window--;
		else
			a->window_nokey--;
		a->taken_keys = list_truncate(a->taken_keys, list_length(a->taken_keys) - 1);
	}
}

/*
 * The claim is done, its rows written: its entries in books are bound (a
 * rebuild's count would now see their rows); the claims of rate-limited
 * actions are logged, and those locks held to the end of the transaction,
 * so that the next claim reads the log with them.  The other locks are let
 * go: the next claim counts the rows this one wrote as running before they
 * commit (count_rows' dirty snapshot).  An extension keeps its lock to its
 * end: the row it extends counts only once it commits (and its entry in a
 * book is bound before that row is written: no rebuild may run between).
 * Runs SQL: the caller has read its own statement's rows.
 */
void
taskq_flow_end(TaskqFlow *f)
{
	if (f == NULL)
		return;
	if (f->rel != NULL)
	{
		ExecDropSingleTupleTableSlot(f->slot);
		index_close(f->idx, AccessShareLock);
		table_close(f->rel, AccessShareLock);
		f->rel = NULL;
	}
	for (int i = 0; i < f->n; i++)
	{
		FlowAction *a = &f->actions[i];

		if (a->by_book && a->taken > 0)
			taskq_book_bind(a->book);
		if (!a->locked)
			continue;
		if (a->taken > 0 && f->claims && a->limit.has_rate)
			taskq_flow_log_claims(a->limit.action, a->taken_keys, f->at, &a->limit.rate_per);
		else if (a->taken == 0 || f->claims)
			LockRelease(&a->tag, ExclusiveLock, false);
	}
}

/* ----------
 * Slots let go, and leases extended
 * ----------
 */

/*
 * Task id of action left its lease (returned, released, retried, ended):
 * if the action is limited, its entry in the action's book goes when this
 * transaction commits, and unless the caller wakes claims of the action
 * anyway (woken: the task is ready again), one waiting claim of it is
 * woken for the slot (no task became ready: one slot came free).
 *
 * Whoever lets a slot of max_running go is nearly always a worker that
 * claims again at once, and takes it back before a claim woken at the
 * commit gets a CPU: that claim looked, found the action full and slept
 * again, two context switches per task for nothing (a tenth of a limited
 * drain's rate).  So for an action limited by max_running alone, whose
 * book tells whether the slot is still free, the wake is left to the
 * background worker, which makes it TASKQ_SLOT_GRACE_MS after the commit
 * if nobody took the slot meanwhile (flow_books.c), and the action is
 * announced then.  With a per-key limit the slot is a key's, which the
 * next claim of the worker that let it go need not want: woken at once.
 */
void
taskq_flow_freed(const char *action, const char *id, bool woken)
{
	FlowLimit  *l;
	TaskqBook  *book;
	bool		worker_wakes;

	if (!taskq_flow_maybe_limited())
		return;					/* known: no limits at all */
	l = taskq_flow_limit_of(taskq_flow_limits(), action);
	if (l == NULL)
		return;
	book = taskq_flow_limit_book(l, false);
	worker_wakes = book != NULL && !woken && l->has_max && !l->has_per_key && !l->has_rate;
	if (book != NULL)
		taskq_book_free_at_commit(book, id, worker_wakes);
	if (!woken && !worker_wakes)
		taskq_note_ready_tasks(action, 0);
}

/*
 * May an expired lease of a task of action with key be extended?  Only if
 * the action and key are under their limits (the task itself no longer
 * counts).  The limiter lock is then held to the end of the transaction,
 * as a claim's.
 */
bool
taskq_flow_extend_ok(const char *action, const char *key, const char *id, TimestampTz end)
{
	TaskqFlow  *f;
	bool		ok;

	/* an extension is no claim: the rate does not count it, and it locks */
	f = flow_begin(list_make1(pstrdup(action)), false, false);
	if (f == NULL)
		return true;
	f->lease_end = end;
	ok = taskq_flow_take(f, action, key, id);
	taskq_flow_end(f);
	return ok;
}
