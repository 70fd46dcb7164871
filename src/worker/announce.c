/*-------------------------------------------------------------------------
 *
 * announce.c
 *	  The worker's side of announcements: take the actions producers
 *	  marked in the database's slot, and send at most one
 *	  NOTIFY taskq, '<action>' per action per taskq.notify_interval (and
 *	  likewise NOTIFY taskq_progress, '<job>' per job that reported progress).
 *
 * Throttling is leading-edge: the first announcement of an action goes out
 * at once, later ones within the interval are merged into one sent when
 * the interval ends.  The payload is the action name only.  A missed
 * notification costs only latency: workers also find work by polling.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/async.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/local_table.h"
#include "common/settings.h"
#include "ipc/shmem.h"
#include "queue/queue.h"
#include "worker/worker.h"


typedef struct ActionEntry
{
	char		name[TASKQ_NOTIFY_NAME_LEN];	/* hash key: kind byte + name */
	TimestampTz last_sent;
	bool		pending;
} ActionEntry;

static HTAB *actions = NULL;

/* Mark an announcement, "<kind><name>" (see ipc/shmem.h), to be sent. */
static void
mark_entry(const char *entry)
{
	ActionEntry *e;
	bool		found;

	e = taskq_local_enter(&actions, "taskq announced actions", TASKQ_NOTIFY_NAME_LEN,
						  sizeof(ActionEntry), 0, entry, &found);
	if (e == NULL)
		return;
	if (!found)
		e->last_sent = 0;
	e->pending = true;
}

/* An action has new ready work: NOTIFY taskq, '<action>'. */
void
taskq_notify_mark(const char *action)
{
	char		entry[TASKQ_NOTIFY_NAME_LEN];

	if (strlen(action) + 2 > TASKQ_NOTIFY_NAME_LEN)
		return;
	entry[0] = 'a';
	strlcpy(entry + 1, action, TASKQ_NOTIFY_NAME_LEN - 1);
	mark_entry(entry);
}

/*
 * Take the announcements producers left in this database's slot into the
 * local table.  Returns true if the slot overflowed (then every action with
 * ready work must be announced: taskq_notify_collect does it).  Needs no
 * transaction; names are copied out under the lock into a fixed buffer.
 */
bool
taskq_notify_take(void)
{
	static char names[TASKQ_PENDING_ACTIONS][TASKQ_NOTIFY_NAME_LEN];
	TaskqDbSlot *slot;
	int			n = 0;
	bool		overflow = false;

	LWLockAcquire(taskq_shared->lock, LW_EXCLUSIVE);
	slot = taskq_find_db_slot(MyDatabaseId);
	if (slot != NULL)
	{
		n = slot->npending;
		memcpy(names, slot->pending, sizeof(names[0]) * n);
		overflow = slot->pending_overflow;
		slot->npending = 0;
		slot->pending_overflow = false;
	}
	LWLockRelease(taskq_shared->lock);

	for (int i = 0; i < n; i++)
		mark_entry(names[i]);
	return overflow;
}

/*
 * Take the producers' announcements; with overflow (or at start, all =
 * true) announce every action that has ready work.  Runs inside a
 * transaction with SPI connected.
 */
void
taskq_notify_collect(bool all)
{
	if (taskq_notify_take())
		all = true;
	if (all)
	{
		ListCell   *lc;

		foreach(lc, taskq_ready_actions())
			taskq_notify_mark(lfirst(lc));
	}
}

/* Is an announcement due now (so that sending needs a transaction)? */
bool
taskq_notify_due_now(void)
{
	HASH_SEQ_STATUS seq;
	ActionEntry *e;
	TimestampTz now = GetCurrentTimestamp();

	if (actions == NULL)
		return false;
	hash_seq_init(&seq, actions);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (e->pending &&
			(e->last_sent == 0 ||
			 TimestampTzPlusMilliseconds(e->last_sent, taskq_notify_interval) <= now))
		{
			hash_seq_term(&seq);
			return true;
		}
	return false;
}

/*
 * Queue a NOTIFY (sent at commit) for each marked action whose interval
 * has passed; with send false (outside a transaction), only look.  Returns
 * when the next one not sent is due, or 0 if none.
 */
TimestampTz
taskq_notify_send_due(bool send)
{
	HASH_SEQ_STATUS seq;
	ActionEntry *e;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz next = 0;

	if (actions == NULL)
		return 0;
	hash_seq_init(&seq, actions);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		TimestampTz due;

		if (!e->pending)
			continue;
		due = TimestampTzPlusMilliseconds(e->last_sent, taskq_notify_interval);
		if (e->last_sent == 0)
			due = now;
		if (due <= now && send)
		{
			Async_Notify(e->name[0] == 'j' ? "taskq_progress" : "taskq", e->name + 1);
			e->last_sent = now;
			e->pending = false;
		}
		else if (next == 0 || due < next)
			next = due;
	}
	return next;
}
