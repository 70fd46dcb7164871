/*-------------------------------------------------------------------------
 *
 * action_limits.h
 *	  Per-action limits on workers (taskq.action_grants), applied by the
 *	  SQL entry points before they call the queue (action_limits.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_ACTION_LIMITS_H
#define TASKQ_ACTION_LIMITS_H

#include "nodes/pg_list.h"

/* own_tasks: narrow the actions asked for to those the session may claim */
extern bool taskq_acl_limit_actions(List **actions, bool any);

/* extend_ownership: tasks of other actions get a token no task has */
extern void taskq_acl_mask_tokens(List *ids, Datum *tokens);

/* return_task(s): 42501 for a task of an action the session may not handle */
extern void taskq_acl_check_return(List *ids);

#endif							/* TASKQ_ACTION_LIMITS_H */
