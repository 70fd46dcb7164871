/*-------------------------------------------------------------------------
 *
 * workflow.h
 *	  The workflow layer over the queue: job control (control.c), jobs'
 *	  progress (jobs.c), and the seam through which the queue hands it the
 *	  tasks each call finished (seam.c).
 *
 * Every function here runs SQL and expects SPI to be connected.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_WORKFLOW_H
#define TASKQ_WORKFLOW_H

#include "nodes/pg_list.h"

#include "queue/queue.h"

/* control.c */
extern int64 taskq_cancel_ids(List *ids, const char *why);
extern int64 taskq_cancel_workflow_key(const char *workflow);
extern int64 taskq_redrive_ids(List *ids);

/* jobs.c */
extern char *taskq_job_of_held_task(const char *id, Datum token);
extern int64 taskq_job_add_progress(const char *job, int64 items);
extern void taskq_job_set_item_count(const char *job, int64 count);

/* seam.c */
extern void taskq_workflow_init(void);
extern void taskq_workflow_register(const char *name,
									 taskq_finished_hook_type on_finished);

#endif							/* TASKQ_WORKFLOW_H */
