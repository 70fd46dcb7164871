/*-------------------------------------------------------------------------
 *
 * acl.h
 *	  Per-action limits on workers (taskq.action_grants) and the role the
 *	  background workers run as (taskq.worker_role); see acl.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_ACL_H
#define TASKQ_ACL_H

#include "postgres.h"

#include "nodes/pg_list.h"

extern char *taskq_worker_role;

extern void taskq_acl_define_settings(void);

/* own_tasks: narrow the actions asked for to those the session may claim */
extern bool taskq_acl_limit_actions(List **actions, bool any);

/* extend_ownership: tasks of other actions get a token no task has */
extern void taskq_acl_mask_tokens(List *ids, Datum *tokens);

/* return_task(s): 42501 for a task of an action the session may not handle */
extern void taskq_acl_check_return(List *ids);

/* launcher: the worker role's oid, or InvalidOid for the bootstrap superuser */
extern bool taskq_worker_role_lookup(Oid *roleid);
extern bool taskq_worker_role_may_connect(Oid roleid, Oid dboid);

#endif							/* TASKQ_ACL_H */
