/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  The background processes: the launcher (launcher.c), the
 *	  per-database worker (loop.c), its announcements (announce.c), the
 *	  role it runs as (role.c), the schedules it fires (schedules.c) and
 *	  the utility hook that steps it aside for DROP DATABASE and friends
 *	  (utility_hook.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_WORKER_H
#define TASKQ_WORKER_H

#include "datatype/timestamp.h"

#include "queue/queue.h"

/* launcher.c */
extern void taskq_register_launcher(void);

/* utility_hook.c */
extern void taskq_install_utility_hook(void);

/* announce.c: the worker's coalesced NOTIFYs */
extern void taskq_notify_mark(const char *action);
extern void taskq_notify_collect(bool all);
extern bool taskq_notify_take(void);
extern bool taskq_notify_due_now(void);
extern TimestampTz taskq_notify_send_due(bool send);

/* role.c: the worker role's oid, or InvalidOid for the bootstrap superuser */
extern bool taskq_worker_role_lookup(Oid *roleid);
extern bool taskq_worker_role_may_connect(Oid roleid, Oid dboid);

/*
 * schedules.c: fire the schedules due at "now" (in the caller's
 * transaction); returns when the next tick is due (0: no schedule).
 */
extern TimestampTz taskq_fire_schedules(TimestampTz now);

/*
 * A schedule's task object made into a task spec with the given id: set by
 * the module entry to api/'s parse (the one insert_tasks uses), which the
 * worker may not include.  NULL: schedules do not fire.
 */
typedef TaskqTaskSpec *(*taskq_schedule_task_hook_type) (Jsonb *task, const char *id);
extern PGDLLIMPORT taskq_schedule_task_hook_type taskq_schedule_task_hook;

/*
 * The timers of runs (taskq.run_timers) due at "now" fired in the caller's
 * transaction; returns when the next is due (0: none).  Set by the module
 * entry to the workflow layer's, which the worker may not include.  NULL:
 * timers do not fire.
 */
typedef TimestampTz (*taskq_fire_timers_hook_type) (TimestampTz now);
extern PGDLLIMPORT taskq_fire_timers_hook_type taskq_fire_timers_hook;

#endif							/* TASKQ_WORKER_H */
