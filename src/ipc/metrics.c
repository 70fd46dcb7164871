/*-------------------------------------------------------------------------
 *
 * metrics.c
 *	  The counters and histograms of taskq.metrics(): per database and
 *	  action, since the server started, in a shared hash table of fixed
 *	  size made at postmaster start (taskq.max_metric_actions entries).
 *
 * The hot paths (insert, claim, return, expiry, cancel, re-drive) only add
 * to a backend-local table keyed by (subtransaction level, action): a hash
 * and a compare, no lock, no shared memory.  The commit callback adds each
 * of its entries to the shared table, one entry update per action, and a
 * rollback drops them: a subtransaction's abort drops its level's entries,
 * its commit merges them into its parent's, so a counter says what
 * committed.  A prepared transaction's work is not counted.  Nothing in the
 * commit callback may fail (an error after commit is a PANIC): it
 * allocates nothing, and a shared table that is full counts the action
 * under the database's overflow entry (action "") instead, and counts that
 * it did (taskq_metrics_overflows); with no room even for that entry (more
 * databases than the reserve) the counts are dropped and counted so too.
 *
 * Locking: the shared table's LWLock is taken shared to find an entry and
 * exclusive to add one; entries are never removed (a restart resets them),
 * so an entry found stays valid after the lock is released, and its values
 * change under its own spinlock, held for a few additions.  A reader copies
 * each entry under its spinlock, so a histogram's buckets, sum and count
 * agree with each other.
 *
 * Why here, not in a table: a counter row per action would make every
 * claim and return of an action update (and lock) the same row, and
 * serialize its workers; shared memory costs a spinlock per commit and
 * action.  The price, documented: a restart resets the counters, as
 * Prometheus allows of a counter.
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
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "common/limits.h"
#include "common/plan.h"
#include "common/settings.h"
#include "ipc/metrics.h"
#include "ipc/shmem.h"

const double taskq_metric_bounds[TASKQ_H_BOUNDS] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600
};
const char *const taskq_metric_bound_labels[TASKQ_H_BOUNDS] = {
	"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10",
	"30", "60", "300", "900", "3600"
};

/* ----------
 * Shared memory
 * ----------
 */
typedef struct SharedKey
{
	Oid			dboid;
	char		action[TASKQ_MAX_ACTION_LEN + 1];	/* zero-padded */
} SharedKey;

typedef struct SharedEntry
{
	SharedKey	key;
	slock_t		mutex;
	TaskqMetricValues v;
} SharedEntry;

typedef struct MetricsShared
{
	LWLock	   *lock;
	int			named;			/* entries of actions (not overflow entries) */
	pg_atomic_uint64 overflows;
} MetricsShared;

static MetricsShared *metrics_shared = NULL;
static HTAB *metrics_hash = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* the actions' entries, and one overflow entry per database */
static long
table_size(void)
{
	return (long) taskq_max_metric_actions + TASKQ_MAX_DATABASES;
}

static void
metrics_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(MetricsShared)) +
						   hash_estimate_size(table_size(), sizeof(SharedEntry)));
	RequestNamedLWLockTranche("taskq_metrics", 1);
}

static void
metrics_shmem_startup(void)
{
	bool		found;
	HASHCTL		info;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	metrics_shared = ShmemInitStruct("taskq metrics", sizeof(MetricsShared), &found);
	if (!found)
	{
		metrics_shared->lock = &(GetNamedLWLockTranche("taskq_metrics"))[0].lock;
		metrics_shared->named = 0;
		pg_atomic_init_u64(&metrics_shared->overflows, 0);
	}
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(SharedKey);
	info.entrysize = sizeof(SharedEntry);
	metrics_hash = ShmemInitHash("taskq metrics table", table_size(), table_size(),
								 &info, HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
	LWLockRelease(AddinShmemInitLock);
}

bool
taskq_metrics_available(void)
{
	return metrics_hash != NULL;
}

/*
 * The shared entry of (dboid, action), added if missing; the database's
 * overflow entry when the table has no room for the action; NULL when not
 * even that.  Called after commit: allocates nothing, raises nothing.
 */
static SharedEntry *
shared_entry(Oid dboid, const char *action, int len)
{
	SharedKey	key;
	uint32		h;
	SharedEntry *e;
	bool		found;

	memset(&key, 0, sizeof(key));
	key.dboid = dboid;
	memcpy(key.action, action, len);
	h = get_hash_value(metrics_hash, &key);

	LWLockAcquire(metrics_shared->lock, LW_SHARED);
	e = hash_search_with_hash_value(metrics_hash, &key, h, HASH_FIND, NULL);
	LWLockRelease(metrics_shared->lock);
	if (e != NULL)
		return e;

	LWLockAcquire(metrics_shared->lock, LW_EXCLUSIVE);
	e = hash_search_with_hash_value(metrics_hash, &key, h, HASH_FIND, NULL);
	if (e == NULL && len > 0 && metrics_shared->named < taskq_max_metric_actions)
	{
		e = hash_search_with_hash_value(metrics_hash, &key, h, HASH_ENTER_NULL, &found);
		if (e != NULL && !found)
		{
			SpinLockInit(&e->mutex);
			memset(&e->v, 0, sizeof(e->v));
			metrics_shared->named++;
		}
	}
	if (e == NULL)
	{
		/* no room: the database's overflow entry */
		pg_atomic_fetch_add_u64(&metrics_shared->overflows, 1);
		memset(key.action, 0, sizeof(key.action));
		e = hash_search_with_hash_value(metrics_hash, &key,
										get_hash_value(metrics_hash, &key),
										HASH_ENTER_NULL, &found);
		if (e != NULL && !found)
		{
			SpinLockInit(&e->mutex);
			memset(&e->v, 0, sizeof(e->v));
		}
	}
	LWLockRelease(metrics_shared->lock);
	return e;
}

static void
shared_add(SharedEntry *e, const TaskqMetricValues *v)
{
	SpinLockAcquire(&e->mutex);
	for (int c = 0; c < TASKQ_M_COUNTERS; c++)
		e->v.counters[c] += v->counters[c];
	for (int h = 0; h < TASKQ_H_COUNT; h++)
	{
		for (int b = 0; b <= TASKQ_H_BOUNDS; b++)
			e->v.buckets[h][b] += v->buckets[h][b];
		e->v.sums[h] += v->sums[h];
	}
	SpinLockRelease(&e->mutex);
}

/* This database's entries, copied (palloc'd); *n of them. */
TaskqMetricAction *
taskq_metrics_read(Oid dboid, int *n)
{
	HASH_SEQ_STATUS seq;
	SharedEntry *e;
	TaskqMetricAction *out;
	int			max;

	*n = 0;
	if (metrics_hash == NULL)
		return NULL;
	LWLockAcquire(metrics_shared->lock, LW_SHARED);
	max = hash_get_num_entries(metrics_hash);
	out = palloc(sizeof(TaskqMetricAction) * Max(max, 1));
	hash_seq_init(&seq, metrics_hash);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (e->key.dboid != dboid || *n >= max)
			continue;
		out[*n].action = pstrdup(e->key.action);
		SpinLockAcquire(&e->mutex);
		out[*n].v = e->v;
		SpinLockRelease(&e->mutex);
		(*n)++;
	}
	LWLockRelease(metrics_shared->lock);
	return out;
}

int64
taskq_metrics_overflows(void)
{
	if (metrics_shared == NULL)
		return 0;
	return (int64) pg_atomic_read_u64(&metrics_shared->overflows);
}

/* ----------
 * The current transaction's notes, per (subtransaction level, action)
 * ----------
 */
typedef struct LocalEntry
{
	int			next;			/* next in its hash chain, or -1 */
	int			level;
	uint32		hash;
	int			len;
	char		action[TASKQ_MAX_ACTION_LEN + 1];
	TaskqMetricValues v;
} LocalEntry;

#define LOCAL_MIN_ENTRIES 16
#define LOCAL_KEEP_ENTRIES 1024 /* larger tables are freed after the commit */

static LocalEntry *ents = NULL;
static int	nents = 0;
static int	maxents = 0;
static int *heads = NULL;
static int	nheads = 0;
static int	last_entry = -1;	/* the entry found last: most calls ask again */
static int	max_level = 0;

static void
link_entry(int i)
{
	int			b = ents[i].hash % nheads;

	ents[i].next = heads[b];
	heads[b] = i;
}

static void
relink_all(void)
{
	for (int b = 0; b < nheads; b++)
		heads[b] = -1;
	for (int i = 0; i < nents; i++)
		link_entry(i);
}

static int
find_entry(int level, uint32 hash, const char *action, int len)
{
	for (int i = heads[hash % nheads]; i >= 0; i = ents[i].next)
		if (ents[i].hash == hash && ents[i].level == level && ents[i].len == len &&
			memcmp(ents[i].action, action, len) == 0)
			return i;
	return -1;
}

static TaskqMetricValues *
local_values(const char *action, int len)
{
	int			level = GetCurrentTransactionNestLevel();
	uint32		hash;
	int			i;
	LocalEntry *e;

	if (len < 0)
		len = strlen(action);
	len = Min(len, TASKQ_MAX_ACTION_LEN);
	if (last_entry >= 0)
	{
		e = &ents[last_entry];
		if (e->level == level && e->len == len && memcmp(e->action, action, len) == 0)
			return &e->v;
	}
	hash = hash_bytes((const unsigned char *) action, len);
	if (ents == NULL)
	{
		maxents = LOCAL_MIN_ENTRIES;
		nheads = LOCAL_MIN_ENTRIES;
		ents = MemoryContextAlloc(TopMemoryContext, sizeof(LocalEntry) * maxents);
		heads = MemoryContextAlloc(TopMemoryContext, sizeof(int) * nheads);
		relink_all();
	}
	i = find_entry(level, hash, action, len);
	if (i < 0)
	{
		if (nents == maxents)
		{
			maxents *= 2;
			ents = repalloc(ents, sizeof(LocalEntry) * maxents);
		}
		if (nents >= nheads)
		{
			nheads *= 2;
			heads = repalloc(heads, sizeof(int) * nheads);
			relink_all();
		}
		i = nents++;
		e = &ents[i];
		e->level = level;
		e->hash = hash;
		e->len = len;
		memcpy(e->action, action, len);
		e->action[len] = '\0';
		memset(&e->v, 0, sizeof(e->v));
		link_entry(i);
		max_level = Max(max_level, level);
	}
	last_entry = i;
	return &ents[i].v;
}

/* The current transaction did n of counter c to tasks of action. */
void
taskq_metric_count(const char *action, int len, TaskqMetricCounter c, int64 n)
{
	if (metrics_hash == NULL || n <= 0)
		return;
	local_values(action, len)->counters[c] += n;
}

/* One of counter c to the action in column col of row row of the last SPI result. */
void
taskq_metric_count_result(int row, int col, TaskqMetricCounter c)
{
	bool		isnull;
	Datum		d;
	text	   *t;

	if (metrics_hash == NULL)
		return;
	d = taskq_get_datum(row, col, &isnull);
	if (isnull)
		return;
	t = DatumGetTextPP(d);
	local_values(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t))->counters[c]++;
}

/* One observation of histogram h of action: from -> to (clamped at 0). */
void
taskq_metric_observe(const char *action, int len, TaskqMetricHistogram h,
					 TimestampTz from, TimestampTz to)
{
	TaskqMetricValues *v;
	double		seconds;
	int			b = 0;

	if (metrics_hash == NULL)
		return;
	seconds = to > from ? (double) (to - from) / USECS_PER_SEC : 0.0;
	while (b < TASKQ_H_BOUNDS && seconds > taskq_metric_bounds[b])
		b++;
	v = local_values(action, len);
	v->buckets[h][b]++;
	v->sums[h] += seconds;
}

static void
add_values(TaskqMetricValues *to, const TaskqMetricValues *from)
{
	for (int c = 0; c < TASKQ_M_COUNTERS; c++)
		to->counters[c] += from->counters[c];
	for (int h = 0; h < TASKQ_H_COUNT; h++)
	{
		for (int b = 0; b <= TASKQ_H_BOUNDS; b++)
			to->buckets[h][b] += from->buckets[h][b];
		to->sums[h] += from->sums[h];
	}
}

/*
 * The subtransaction at level ends: its entries (and any deeper) are
 * merged into its parent's level (commit) or dropped (abort).
 */
static void
end_level(int level, bool commit)
{
	int			keep = 0;

	if (nents == 0 || max_level < level)
		return;
	for (int b = 0; b < nheads; b++)
		heads[b] = -1;
	max_level = 0;
	for (int i = 0; i < nents; i++)
	{
		int			j;

		if (ents[i].level >= level)
		{
			if (!commit)
				continue;
			ents[i].level = level - 1;
		}
		j = find_entry(ents[i].level, ents[i].hash, ents[i].action, ents[i].len);
		if (j >= 0)
		{
			add_values(&ents[j].v, &ents[i].v);
			continue;
		}
		if (keep != i)
			ents[keep] = ents[i];
		link_entry(keep);
		max_level = Max(max_level, ents[keep].level);
		keep++;
	}
	nents = keep;
	last_entry = -1;
}

/* The transaction ended: forget its notes (and a large table). */
static void
reset_local(void)
{
	last_entry = -1;
	max_level = 0;
	if (nents == 0)
		return;
	nents = 0;
	if (maxents > LOCAL_KEEP_ENTRIES)
	{
		pfree(ents);
		pfree(heads);
		ents = NULL;
		heads = NULL;
		maxents = nheads = 0;
		return;
	}
	relink_all();
}

static void
metrics_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			for (int i = 0; i < nents; i++)
			{
				SharedEntry *e = shared_entry(MyDatabaseId, ents[i].action, ents[i].len);

				if (e != NULL)
					shared_add(e, &ents[i].v);
			}
			reset_local();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			reset_local();
			break;
		default:
			break;
	}
}

static void
metrics_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_COMMIT_SUB)
		end_level(GetCurrentTransactionNestLevel(), true);
	else if (event == SUBXACT_EVENT_ABORT_SUB)
		end_level(GetCurrentTransactionNestLevel(), false);
}

/*
 * From _PG_init: with shared_preload_libraries, ask for the shared table;
 * in every process, the callbacks (which do nothing without the table).
 */
void
taskq_metrics_init(bool preloaded)
{
	if (preloaded)
	{
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = metrics_shmem_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = metrics_shmem_startup;
	}
	RegisterXactCallback(metrics_xact_callback, NULL);
	RegisterSubXactCallback(metrics_subxact_callback, NULL);
}
