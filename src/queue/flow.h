/*-------------------------------------------------------------------------
 *
 * flow.h
 *	  What the files of flow control share (flow_kept.c, flow_limits.c):
 *	  an action's limits as kept per session.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_FLOW_H
#define TASKQ_FLOW_H

#include "datatype/timestamp.h"
#include "utils/hsearch.h"

#include "common/limits.h"
#include "queue/queue_internal.h"

typedef struct FlowLimit
{
	char		action[TASKQ_MAX_ACTION_LEN + 1];	/* key */
	bool		has_max;
	int32		max_running;
	bool		has_per_key;
	int32		max_per_key;
	bool		has_rate;
	int32		rate_max;
	Interval	rate_per;
	bool		rate_by_key;
	TransactionId version;		/* the xmin of its row, read under the locks */
	TaskqBook  *book;			/* its slot book, once looked up (flow_books.c) */
	bool		book_looked;
} FlowLimit;

extern HTAB *taskq_flow_limits(void);
extern FlowLimit *taskq_flow_limit_of(HTAB *limits, const char *action);
extern TaskqBook *taskq_flow_limit_book(FlowLimit *l, bool create);

#endif							/* TASKQ_FLOW_H */
