/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  Every taskq.* setting, defined in one place (settings.c) and read
 *	  where it applies.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_SETTINGS_H
#define TASKQ_SETTINGS_H

extern int	taskq_notify_interval;	/* ms between NOTIFYs of one action */
extern bool taskq_background_worker;
extern bool taskq_async_claims;
extern bool taskq_announce_progress;
extern bool taskq_shared_claim_start;
extern int	taskq_worker_naptime;	/* ms */
extern int	taskq_retention;
extern int	taskq_worker_retention;	/* s; -1 keeps forever */
extern int	taskq_default_lease;	/* s; 0: no deadline */		/* s; -1 keeps forever, 0 deletes at once */
extern char *taskq_worker_role;
extern int	taskq_metrics_interval;	/* s; 0: gauges not refreshed */
extern int	taskq_max_metric_actions;

extern void taskq_define_settings(void);

#endif							/* TASKQ_SETTINGS_H */
