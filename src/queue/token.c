/*-------------------------------------------------------------------------
 *
 * token.c
 *	  Performance tokens: the version-4 UUID each claim hands its owner.
 *
 * gen_random_uuid() asks OpenSSL for 16 bytes per call, which cost about as
 * much as the rest of a claimed row's CPU; tokens are drawn from a
 * per-process pool filled by pg_strong_random() a kilobyte at a time.  They
 * stay version-4 UUIDs from the same strong source.  No locking: the pool
 * is backend-local.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_enum.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "common/int.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "rewrite/rewriteHandler.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "queue/queue.h"

#define TOKEN_POOL (64 * UUID_LEN)

static uint8 token_pool[TOKEN_POOL];
static int	token_next = TOKEN_POOL;
static int	token_pid = 0;

/* A new version-4 UUID from the strong random source. */
void
taskq_new_token(pg_uuid_t *token)
{
	/* A forked child must not hand out its parent's bytes. */
	if (token_next + UUID_LEN > TOKEN_POOL || token_pid != MyProcPid)
	{
		if (!pg_strong_random(token_pool, TOKEN_POOL))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not generate random values")));
		token_next = 0;
		token_pid = MyProcPid;
	}
	memcpy(token->data, token_pool + token_next, UUID_LEN);
	/* wipe what was handed out: the pool holds only unused bytes */
	memset(token_pool + token_next, 0, UUID_LEN);
	token_next += UUID_LEN;
	token->data[6] = (token->data[6] & 0x0f) | 0x40;	/* version 4 */
	token->data[8] = (token->data[8] & 0x3f) | 0x80;	/* RFC 4122 variant */
}
