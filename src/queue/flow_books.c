/*-------------------------------------------------------------------------
 *
 * flow_books.c
 *	  The slot books of actions with concurrency limits (max_running,
 *	  max_running_per_key) and no rate limit: in shared memory, an entry
 *	  (task, key) for each task that may hold one of the action's slots, so
 *	  that a claim takes a slot under a spinlock instead of the action's
 *	  limiter lock and a count of its running rows
 *	  (flow_limits.c, which decides when a book is used).
 *
 * A book may count more tasks than hold a slot, never fewer.  Each way in
 * and out keeps that:
 *	- a claim reserves an entry before it writes the task's row (refused
 *	  when the book holds max_running entries), and marks it bound once its
 *	  rows are written (taskq_book_bind); a claim that does not take the
 *	  task removes it, and a transaction that aborts removes every entry it
 *	  made, after its rows died;
 *	- a transaction that ends a lease (a return, a release, a retry) marks
 *	  the task's entry as ending when it does (no later claim of the task
 *	  can have one yet: the task is claimable only once this commits), and
 *	  removes the entry it marked after it commits, when the row no longer
 *	  counts (an abort unmarks it);
 *	- what ends a lease any other way (an expiry, an abort of a savepoint,
 *	  a path that does not tell) leaves its entry behind: too many, never
 *	  too few.  A claim that finds the book full and stale (taskq_book_state:
 *	  a deadline in it passed, an SQL statement changed a task it holds and
 *	  its transaction told no end, a savepoint rolled back, or a second since
 *	  the last count) rebuilds it from the rows under the action's limiter
 *	  lock (flow_limits.c counts them with a dirty snapshot); one that finds
 *	  it full and not stale takes nothing without a lock, and a waiting one
 *	  sleeps.  A rebuild's entries become the tasks the rows say run, plus
 *	  every entry not yet bound or bound after the count began (the count
 *	  may have missed their rows).  An entry bound before the count began
 *	  has its row in the index before the count began, so the count sees it
 *	  if it still runs.  Rebuilds never overlap (the limiter lock), and an
 *	  extension of an expired lease, which reserves before its row is
 *	  written, holds that lock to its commit, so no rebuild runs between.
 * A book is for one version of the action's limits (the xmin of its row in
 * taskq.flow_limits): a claim that reads another version rebuilds it,
 * because claims made while the action had no such limit reserved nothing.
 *
 * A slot of an action limited by max_running alone that a commit lets go
 * is not announced by that commit: the session that let it go nearly
 * always claims again at once and takes it back.  The book notes when
 * (freed_at) and the commit sets the worker's latch; the worker wakes one
 * waiting claim per slot still free TASKQ_SLOT_GRACE_MS later
 * (taskq_wake_freed_slots).  With no worker running, or one that has not
 * come for the book's slots in TASKQ_SLOT_LATE_MS (a long step of its
 * own), the commit wakes a claim itself.
 *
 * Books live until the server stops (a crash restarts shared memory, and
 * the first claim rebuilds them from the rows); there are TASKQ_BOOKS of
 * them for the whole server, of TASKQ_BOOK_SLOTS entries: an action beyond
 * them, or with a higher limit, is counted from its rows on each claim.
 *
 * Locking: the table's LWLock, shared to find a book and exclusive to add
 * one; each book's spinlock for its entries (a few hundred instructions at
 * most: never a call that may fail or sleep).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/limits.h"
#include "common/pg_compat.h"
#include "ipc/wakeup.h"
#include "queue/queue_internal.h"

typedef struct BookEntry
{
	uint64		task;			/* hash of the task's id */
	uint64		key;			/* hash of its concurrency_key; 0: none */
	uint64		reserved;		/* the book's reservation number when made */
	uint64		bound;			/* ... when its row was written; 0: not yet */
	int32		owner;			/* the claim's backend, until its commit; -1: none */
	uint32		tag;			/* ... and its transaction there */
	int32		ender;			/* the backend ending its lease, until then; -1: none */
	uint32		ender_tag;		/* ... and its transaction there */
	TimestampTz ends;			/* its lease's deadline as claimed (DT_NOEND: none) */
} BookEntry;

struct TaskqBook
{
	slock_t		mutex;
	Oid			dboid;			/* InvalidOid: unused */
	char		action[TASKQ_MAX_ACTION_LEN + 1];
	TransactionId version;		/* the limits' row it is for; invalid: none yet */
	uint64		next;			/* reservation and binding numbers */
	bool		dirty;			/* a lease may have ended untold: count when full */
	TransactionId overflow;		/* the version whose running tasks did not fit */
	TimestampTz counted_at;		/* when the rows were last counted into it */
	int32		max;			/* max_running the last claim went by (-1: none) */
	TimestampTz freed_at;		/* a slot let go, its wake left to the worker, since; 0: none */
	int			n;
	BookEntry	entries[TASKQ_BOOK_SLOTS];
};

typedef struct BookTable
{
	LWLock	   *lock;
	pg_atomic_uint64 limits_changes;	/* commits that wrote taskq.flow_limits */
	TaskqBook	books[TASKQ_BOOKS];
} BookTable;

static BookTable *table = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* what this backend's transaction did to books, for its end */
typedef struct BookFree
{
	TaskqBook  *book;
	uint64		task;
	bool		worker_wakes;	/* the worker wakes a claim for the slot, if still free */
} BookFree;

static uint32 my_tag = 1;		/* this backend's transaction, for its entries */
static List *touched = NIL;		/* books this transaction reserved in */
static List *frees = NIL;		/* BookFree, applied at commit */
static List *written = NIL;		/* BookFree: held tasks an SQL statement changed */
static bool limits_written = false; /* this transaction wrote taskq.flow_limits */

static void
books_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(BookTable)));
	RequestNamedLWLockTranche("taskq slot books", 1);
}

static void
books_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	table = ShmemInitStruct("taskq slot books", sizeof(BookTable), &found);
	if (!found)
	{
		memset(table, 0, sizeof(BookTable));
		table->lock = &(GetNamedLWLockTranche("taskq slot books"))[0].lock;
		pg_atomic_init_u64(&table->limits_changes, 0);
		for (int i = 0; i < TASKQ_BOOKS; i++)
			SpinLockInit(&table->books[i].mutex);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Does e count against the claims of this transaction?  Not if this
 * transaction is ending its lease: its own claims may take the slot (if it
 * commits, the lease ends; if it aborts, so do those claims).
 */
static inline bool
counts(const BookEntry *e)
{
	return !(e->ender == TASKQ_PROC_NUMBER && e->ender_tag == my_tag);
}

/* The entries of b that count for this transaction (under its mutex). */
static int
counted(TaskqBook *b)
{
	int			n = 0;

	for (int i = 0; i < b->n; i++)
		n += counts(&b->entries[i]);
	return n;
}

/* Remove entry i of b (under its mutex). */
static inline void
drop_entry(TaskqBook *b, int i)
{
	b->entries[i] = b->entries[--b->n];
}

/*
 * The worker: wake the claims waiting for slots let go in this database's
 * books at least TASKQ_SLOT_GRACE_MS ago and still free (whoever let them
 * go did not take them again), one per free slot; the actions woken are
 * appended to *woken.  Returns when to look again (0: nothing left to
 * wake).
 */
TimestampTz
taskq_wake_freed_slots(TimestampTz now, List **woken)
{
	TimestampTz next = 0;
	int			wake[TASKQ_BOOKS];
	int			room[TASKQ_BOOKS];
	int			nwake = 0;

	if (table == NULL)
		return 0;
	LWLockAcquire(table->lock, LW_SHARED);
	for (int i = 0; i < TASKQ_BOOKS; i++)
	{
		TaskqBook  *b = &table->books[i];
		TimestampTz due = 0;
		int			free_slots = 0;

		/* freed_at is read without the mutex first: most books owe nothing */
		if (b->dboid != MyDatabaseId || b->freed_at == 0)
			continue;
		SpinLockAcquire(&b->mutex);
		if (b->freed_at != 0)
		{
			due = TimestampTzPlusMilliseconds(b->freed_at, TASKQ_SLOT_GRACE_MS);
			if (due <= now)
			{
				b->freed_at = 0;
				free_slots = b->max < 0 ? 1 : b->max - b->n;
			}
		}
		SpinLockRelease(&b->mutex);
		if (due > now)
			next = next == 0 ? due : Min(next, due);
		else if (free_slots > 0)
		{
			wake[nwake] = i;
			room[nwake++] = free_slots;
		}
	}
	LWLockRelease(table->lock);
	/* a book's action never changes once it is made */
	for (int k = 0; k < nwake; k++)
	{
		taskq_wake_ready_some(table->books[wake[k]].action, room[k]);
		*woken = lappend(*woken, pstrdup(table->books[wake[k]].action));
	}
	return next;
}

/* What a slot let go asks of the commit that let it go (slot_owed). */
typedef enum SlotOwed
{
	SLOT_OWED_TOLD,				/* the worker was told of b's slots already */
	SLOT_OWED_NEW,				/* the first b owes: tell the worker */
	SLOT_OWED_NOW				/* wake a claim now: the worker is late (busy, stopped),
								 * or the book held no entry of the task */
} SlotOwed;

/*
 * A slot of b was let go at now, its wake left to the worker (under b's
 * mutex).  A worker that has not come for b's slots within TASKQ_SLOT_LATE_MS
 * is in a long step of its own, or gone: until it comes, each slot
 * let go wakes a claim at once, as a slot of other limits does.
 */
static SlotOwed
slot_owed(TaskqBook *b, TimestampTz now)
{
	if (b->freed_at == 0)
	{
		b->freed_at = now;
		return SLOT_OWED_NEW;
	}
	if (now - b->freed_at >= TASKQ_SLOT_LATE_MS * (int64) 1000)
		return SLOT_OWED_NOW;
	return SLOT_OWED_TOLD;
}

/*
 * A slot of b was let go and the worker not told yet: tell it, and it
 * wakes a waiting claim if the slot is still free TASKQ_SLOT_GRACE_MS
 * later (taskq_wake_freed_slots).  With no worker running, or one that is
 * late, one is woken now.
 */
static void
slot_left(TaskqBook *b, SlotOwed owed)
{
	if (owed == SLOT_OWED_NEW)
	{
		if (taskq_wake_worker())
			return;
		SpinLockAcquire(&b->mutex);
		b->freed_at = 0;
		SpinLockRelease(&b->mutex);
	}
	taskq_wake_ready_some(b->action, 1);
}

/*
 * The end of a transaction: at its commit, the entries of leases it ended
 * are removed (their rows no longer count) and its own entries are no
 * longer its; at its abort, the entries it made are removed (their rows
 * died).  Called after the transaction's end is visible to others.
 */
static void
books_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;
	SlotOwed	owed = SLOT_OWED_TOLD;
	TimestampTz now = 0;
	bool		commit = event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT;
	bool		aborted = event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT;

	/* a prepared transaction keeps its entries: too many, never too few */
	if (!commit && !aborted && event != XACT_EVENT_PREPARE)
		return;
	/* (a prepared one counts now: a session that reads its limits early reads the old) */
	if (limits_written && !aborted && table != NULL)
		pg_atomic_fetch_add_u64(&table->limits_changes, 1);
	limits_written = false;
	/* the entries this transaction marked as ending: removed, or unmarked */
	foreach(lc, frees)
	{
		BookFree   *f = lfirst(lc);
		TaskqBook  *b = f->book;

		if (f->worker_wakes && now == 0)
			now = GetCurrentTimestamp();
		/* no entry of the task (a count left it out): wake as other limits do */
		if (commit && f->worker_wakes)
			owed = SLOT_OWED_NOW;
		SpinLockAcquire(&b->mutex);
		for (int i = 0; i < b->n; i++)
		{
			BookEntry  *e = &b->entries[i];

			if (e->ender == TASKQ_PROC_NUMBER && e->ender_tag == my_tag && e->task == f->task)
			{
				if (commit)
				{
					drop_entry(b, i);
					if (f->worker_wakes)
						owed = slot_owed(b, now);
				}
				else
				{
					e->ender = -1;
					if (event == XACT_EVENT_PREPARE)
						b->dirty = true;	/* its end commits elsewhere */
				}
				break;
			}
		}
		SpinLockRelease(&b->mutex);
		if (owed != SLOT_OWED_TOLD)
			slot_left(b, owed);
		owed = SLOT_OWED_TOLD;
	}
	/* a held task an SQL statement changed, and no lease end told: count again */
	if (commit)
		foreach(lc, written)
		{
			BookFree   *w = lfirst(lc);
			ListCell   *fc;
			bool		told = false;

			foreach(fc, frees)
			{
				BookFree   *f = lfirst(fc);

				told |= f->book == w->book && f->task == w->task;
			}
			if (!told)
			{
				SpinLockAcquire(&w->book->mutex);
				w->book->dirty = true;
				SpinLockRelease(&w->book->mutex);
			}
		}
	foreach(lc, touched)
	{
		TaskqBook  *b = lfirst(lc);

		SpinLockAcquire(&b->mutex);
		if (event == XACT_EVENT_PREPARE)
			b->dirty = true;	/* its entries stay to the prepared end */
		for (int i = b->n - 1; i >= 0; i--)
		{
			BookEntry  *e = &b->entries[i];

			if (e->owner != TASKQ_PROC_NUMBER || e->tag != my_tag)
				continue;
			if (aborted)
				drop_entry(b, i);
			else
				e->owner = -1;
		}
		SpinLockRelease(&b->mutex);
	}
	/* the lists lived in the transaction's memory, which goes now */
	touched = NIL;
	frees = NIL;
	written = NIL;
	my_tag++;
}

/*
 * A savepoint rolled back: the entries its claims made stay, for rows that
 * died; the next claim that finds the book full counts the rows again.
 */
static void
books_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	foreach(lc, touched)
	{
		TaskqBook  *b = lfirst(lc);

		SpinLockAcquire(&b->mutex);
		b->dirty = true;
		SpinLockRelease(&b->mutex);
	}
}

/* Called once from _PG_init: shared memory only when preloaded. */
void
taskq_books_init(void)
{
	if (process_shared_preload_libraries_in_progress)
	{
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = books_shmem_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = books_shmem_startup;
	}
	RegisterXactCallback(books_xact_callback, NULL);
	RegisterSubXactCallback(books_subxact_callback, NULL);
}

/*
 * This transaction wrote taskq.flow_limits: when it commits, before it
 * wakes any waiting claim, every session's kept limits are out of date
 * (taskq_books_limits_changes), before their relcache invalidation, which
 * comes later, reaches them.
 */
void
taskq_books_limits_written(void)
{
	limits_written = true;
}

/* How many commits wrote taskq.flow_limits since the server started (0 without books). */
uint64
taskq_books_limits_changes(void)
{
	return table != NULL ? pg_atomic_read_u64(&table->limits_changes) : 0;
}

/* The hash a book keeps of a task's id. */
uint64
taskq_book_task(const char *id)
{
	return hash_bytes_extended((const unsigned char *) id, strlen(id), 0);
}

/* The hash a book keeps of a concurrency key (NULL: none, 0). */
uint64
taskq_book_key(const char *key)
{
	uint64		h;

	if (key == NULL)
		return 0;
	h = hash_bytes_extended((const unsigned char *) key, strlen(key), 1);
	return h == 0 ? 1 : h;
}

/*
 * The book of action in this database; with create, made if there is room
 * (an unused one, valid for no version yet).  NULL: no book (none, no
 * room, or no shared memory).
 */
TaskqBook *
taskq_book_of(const char *action, bool create)
{
	TaskqBook  *found = NULL;

	if (table == NULL || strlen(action) > TASKQ_MAX_ACTION_LEN)
		return NULL;
	LWLockAcquire(table->lock, create ? LW_EXCLUSIVE : LW_SHARED);
	for (int i = 0; i < TASKQ_BOOKS && found == NULL; i++)
	{
		TaskqBook  *b = &table->books[i];

		if (b->dboid == MyDatabaseId && strcmp(b->action, action) == 0)
			found = b;
		else if (create && !OidIsValid(b->dboid))
		{
			SpinLockAcquire(&b->mutex);
			b->dboid = MyDatabaseId;
			strlcpy(b->action, action, sizeof(b->action));
			b->version = InvalidTransactionId;
			b->max = -1;
			b->freed_at = 0;
			b->n = 0;
			SpinLockRelease(&b->mutex);
			found = b;
		}
	}
	LWLockRelease(table->lock);
	return found;
}

/*
 * What b says for a claim at now, under this version of its limits: room,
 * full, or stale: to be counted again from the rows (it is for another
 * version, or it is full and a lease may have ended without telling it: a
 * deadline in it passed, a statement changed a task it holds, a savepoint
 * rolled back, or the last count is a second old, for ways out of a lease
 * that do not tell).
 */
TaskqBookState
taskq_book_state(TaskqBook *b, TransactionId version, int32 max, int32 per_key,
				 TimestampTz now)
{
	TaskqBookState state = TASKQ_BOOK_ROOM;

	SpinLockAcquire(&b->mutex);
	if (b->version != version || b->n >= TASKQ_BOOK_SLOTS)
		state = TASKQ_BOOK_STALE;
	else
	{
		bool		full = max >= 0 && counted(b) >= max;

		/* a book of keys may be full for a key: it is looked at always */
		if (full || per_key >= 0)
		{
			bool		stale = b->dirty || now - b->counted_at >= USECS_PER_SEC;

			for (int i = 0; i < b->n && !stale; i++)
				stale = b->entries[i].ends <= now;
			if (stale)
				state = TASKQ_BOOK_STALE;
			else if (full)
				state = TASKQ_BOOK_FULL;
		}
	}
	SpinLockRelease(&b->mutex);
	return state;
}

/*
 * Reserve an entry for the task (its id's hash) if b is for this version
 * and holds fewer than max.  The entry is this transaction's until it ends.
 */
bool
taskq_book_reserve(TaskqBook *b, TransactionId version, int32 max, int32 per_key,
				   uint64 task, uint64 key, TimestampTz ends)
{
	bool		ok;
	int32		of_key = 0;

	if (!list_member_ptr(touched, b))
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		touched = lappend(touched, b);
		MemoryContextSwitchTo(old);
	}
	SpinLockAcquire(&b->mutex);
	b->max = max;
	ok = b->version == version && b->n < TASKQ_BOOK_SLOTS && (max < 0 || counted(b) < max);
	if (ok && per_key >= 0 && key != 0)
	{
		for (int i = 0; i < b->n; i++)
			of_key += b->entries[i].key == key && counts(&b->entries[i]);
		ok = of_key < per_key;
	}
	if (ok)
	{
		BookEntry  *e = &b->entries[b->n++];

		e->task = task;
		e->key = key;
		e->reserved = ++b->next;
		e->bound = 0;
		e->owner = TASKQ_PROC_NUMBER;
		e->tag = my_tag;
		e->ender = -1;
		e->ends = ends;
	}
	SpinLockRelease(&b->mutex);
	return ok;
}

/* The task this transaction reserved last in b was not taken after all. */
void
taskq_book_unreserve(TaskqBook *b, uint64 task)
{
	SpinLockAcquire(&b->mutex);
	for (int i = b->n - 1; i >= 0; i--)
	{
		BookEntry  *e = &b->entries[i];

		if (e->task == task && e->bound == 0 &&
			e->owner == TASKQ_PROC_NUMBER && e->tag == my_tag)
		{
			drop_entry(b, i);
			break;
		}
	}
	SpinLockRelease(&b->mutex);
}

/* The rows of this transaction's reservations in b are written. */
void
taskq_book_bind(TaskqBook *b)
{
	SpinLockAcquire(&b->mutex);
	for (int i = 0; i < b->n; i++)
	{
		BookEntry  *e = &b->entries[i];

		if (e->bound == 0 && e->owner == TASKQ_PROC_NUMBER && e->tag == my_tag)
			e->bound = ++b->next;
	}
	SpinLockRelease(&b->mutex);
}

/*
 * This transaction ends the lease of task id, which b may hold: its entry
 * is marked as ending now, and removed when the transaction commits.
 */
void
taskq_book_free_at_commit(TaskqBook *b, const char *id, bool worker_wakes)
{
	MemoryContext old;
	BookFree   *f;

	old = MemoryContextSwitchTo(TopTransactionContext);
	f = palloc(sizeof(BookFree));
	f->book = b;
	f->task = taskq_book_task(id);
	f->worker_wakes = worker_wakes;
	frees = lappend(frees, f);
	MemoryContextSwitchTo(old);
	SpinLockAcquire(&b->mutex);
	for (int i = 0; i < b->n; i++)
	{
		BookEntry  *e = &b->entries[i];

		if (e->task == f->task && e->ender == -1)
		{
			e->ender = TASKQ_PROC_NUMBER;
			e->ender_tag = my_tag;
			break;
		}
	}
	SpinLockRelease(&b->mutex);
}

/*
 * An SQL statement of this transaction changed task id, which held a lease
 * of b's action: unless the transaction tells the lease's end
 * (taskq_book_free_at_commit), b is counted again when next found full.
 */
void
taskq_book_note_written(TaskqBook *b, const char *id)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	BookFree   *w = palloc(sizeof(BookFree));

	w->book = b;
	w->task = taskq_book_task(id);
	written = lappend(written, w);
	MemoryContextSwitchTo(old);
}

/*
 * A count of b's action begins (under the action's limiter lock): its
 * mark, a number of its own (never 0, which an entry not bound has).
 */
uint64
taskq_book_rebuild_begin(TaskqBook *b)
{
	uint64		mark;

	SpinLockAcquire(&b->mutex);
	mark = ++b->next;
	SpinLockRelease(&b->mutex);
	return mark;
}

/*
 * The count of b's action that began at mark ends, with the tasks counted
 * (n hashes).  Returns how many entries the count may have missed: those
 * not bound before it began (claims in flight, or whose rows it may not
 * have seen).  Those are kept, and so is every entry of a task whose lease
 * a transaction is ending (the count may have seen its row before or after
 * that end, or a later claim's: its entries stay as they are, and its end
 * removes its own).  With install, b's entries become the tasks counted plus
 * those, for this version of the limits, if they fit (*installed).
 * Otherwise b is for no version: until a count installs it again, no claim
 * reserves in it, and each counts the rows plus what b still has in flight.
 */
/* Has b an entry of task whose lease is ending (under b's mutex)? */
static bool
ending(TaskqBook *b, uint64 task)
{
	for (int i = 0; i < b->n; i++)
		if (b->entries[i].task == task && b->entries[i].ender != -1)
			return true;
	return false;
}

/* Does the count that began at mark keep entry e (under b's mutex)? */
static bool
keeps(TaskqBook *b, BookEntry *e, uint64 mark)
{
	return e->bound == 0 || e->bound > mark || ending(b, e->task);
}

int
taskq_book_rebuild_end(TaskqBook *b, uint64 mark, TransactionId version, const uint64 *tasks,
					   const uint64 *keys, const TimestampTz *ends, int n, bool install,
					   bool *installed)
{
	int			kept = 0;
	int			inflight = 0;
	bool		keep[TASKQ_BOOK_SLOTS];

	SpinLockAcquire(&b->mutex);
	for (int i = 0; i < b->n; i++)
	{
		BookEntry  *e = &b->entries[i];

		keep[i] = keeps(b, e, mark);
		kept += keep[i];
		inflight += e->bound == 0 || e->bound > mark;
	}
	*installed = install && kept + n <= TASKQ_BOOK_SLOTS;
	if (*installed)
	{
		int			m = 0;

		for (int i = 0; i < b->n; i++)
			if (keep[i])
				b->entries[m++] = b->entries[i];
		b->n = m;
		for (int i = 0; i < n; i++)
		{
			BookEntry  *e;

			if (ending(b, tasks[i]))
				continue;		/* its entries stay as they are */
			e = &b->entries[b->n++];
			e->task = tasks[i];
			e->key = keys[i];
			e->reserved = mark;
			e->bound = mark;
			e->owner = -1;
			e->tag = 0;
			e->ender = -1;
			e->ends = ends[i];
		}
		b->version = version;
		b->dirty = false;
		b->counted_at = GetCurrentTimestamp();
	}
	else
	{
		/* every entry stays (they may be leases still held): none is reserved */
		b->version = InvalidTransactionId;
		if (install)
		{
			/* too many run: claims count the rows for a second */
			b->overflow = version;
			b->counted_at = GetCurrentTimestamp();
		}
	}
	SpinLockRelease(&b->mutex);
	return inflight;
}

/*
 * Did the running tasks of this version of b's limits not fit in it, less
 * than a second ago?  Claims then count the rows, as without a book.
 */
bool
taskq_book_overflowed(TaskqBook *b, TransactionId version, TimestampTz now)
{
	bool		over;

	SpinLockAcquire(&b->mutex);
	over = b->overflow == version && now - b->counted_at < USECS_PER_SEC;
	SpinLockRelease(&b->mutex);
	return over;
}
