/*-------------------------------------------------------------------------
 *
 * task_id.c
 *	  Task ids that taskq makes itself (enqueue, enqueue_many without ids):
 *	  version-7 UUIDs (RFC 9562) in their text form.
 *
 * A version-7 UUID begins with the Unix time in milliseconds, so the ids a
 * database makes sort in about the order they were made: each new primary
 * key entry lands at the right end of tasks_pkey, as a bigserial's does,
 * rather than on a random leaf page (a random id dirties a page per
 * entry, splits pages in the middle, and after each checkpoint writes
 * whole pages to the WAL).  The 12 bits after the version count within a
 * millisecond, so that the ids one backend makes strictly increase (when
 * they run out, the time part moves on by one); the last 62 bits are
 * random, from a per-process pool filled by pg_strong_random() a kilobyte
 * at a time (gen_random_uuid() asks OpenSSL for 16 bytes per call, which
 * cost as much as a row of the insert).  Ids of different backends made
 * in the same millisecond differ in their random bits.
 *
 * No locking: the pool and the last id are backend-local.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/timestamp.h"

#include "queue/queue.h"

#define ID_POOL 1024

static uint8 id_pool[ID_POOL];
static int	id_next = ID_POOL;
static int	id_pid = 0;

/* The time part and counter of the last id this backend made. */
static uint64 last_ms = 0;
static uint32 last_count = 0;

static const char hexdigits[] = "0123456789abcdef";

/* Eight random bytes from the pool. */
static void
random_bytes(uint8 *out)
{
	/* A forked child must not hand out its parent's bytes. */
	if (id_next + 8 > ID_POOL || id_pid != MyProcPid)
	{
		if (!pg_strong_random(id_pool, ID_POOL))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not generate random values")));
		id_next = 0;
		id_pid = MyProcPid;
	}
	memcpy(out, id_pool + id_next, 8);
	id_next += 8;
}

/*
 * A new task id, written to buf (TASKQ_TASK_ID_LEN + 1 bytes): a
 * version-7 UUID as text, lower-case hex with hyphens.
 */
void
taskq_new_task_id(char *buf)
{
	TimestampTz now = GetCurrentTimestamp();
	uint64		ms;
	uint8		b[16];
	int			o = 0;

	/* microseconds since 2000-01-01 to milliseconds since 1970-01-01 */
	ms = (uint64) (now / 1000) +
		(uint64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;
	if (ms > last_ms)
	{
		last_ms = ms;
		last_count = 0;
	}
	else if (++last_count > 0xfff)	/* clock went back or 4096 ids this ms */
	{
		last_ms++;
		last_count = 0;
	}

	b[0] = (uint8) (last_ms >> 40);
	b[1] = (uint8) (last_ms >> 32);
	b[2] = (uint8) (last_ms >> 24);
	b[3] = (uint8) (last_ms >> 16);
	b[4] = (uint8) (last_ms >> 8);
	b[5] = (uint8) last_ms;
	b[6] = 0x70 | (uint8) (last_count >> 8);	/* version 7 */
	b[7] = (uint8) last_count;
	random_bytes(b + 8);
	b[8] = (b[8] & 0x3f) | 0x80;	/* RFC 9562 variant */

	for (int i = 0; i < 16; i++)
	{
		if (i == 4 || i == 6 || i == 8 || i == 10)
			buf[o++] = '-';
		buf[o++] = hexdigits[b[i] >> 4];
		buf[o++] = hexdigits[b[i] & 0x0f];
	}
	buf[o] = '\0';
}
