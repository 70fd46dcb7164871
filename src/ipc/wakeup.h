/*-------------------------------------------------------------------------
 *
 * wakeup.h
 *	  What a committing transaction tells other processes (wakeup.c):
 *	  finished tasks wake their waiters, ready actions and deferred
 *	  signals wake the database's background worker.
 *
 * Each note is backend-local until the commit; after the commit is
 * visible, it is published under the shared-memory lock and the
 * sleepers' latches or condition variables are set.  An abort drops it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_WAKEUP_H
#define TASKQ_WAKEUP_H

#include "datatype/timestamp.h"
#include "storage/condition_variable.h"

extern void taskq_note_finished(const char *id);
extern void taskq_note_ready(const char *action);
extern void taskq_note_ready_tasks(const char *action, int n);
extern void taskq_note_progress(const char *job);
extern void taskq_note_deferred(void);
extern void taskq_note_due(TimestampTz not_before);
extern void taskq_note_listener(void);
extern TimestampTz taskq_next_due_take(void);
extern ConditionVariable *taskq_ready_cv(const char *action);
extern void taskq_ready_join(const char *action);
extern void taskq_ready_leave(void);
extern void taskq_wake_ready(const char *action);
extern void taskq_wake_ready_some(const char *action, int n);
extern bool taskq_wake_worker(void);
extern bool taskq_database_heard(void);
extern bool taskq_deferred_take(bool clear);
extern bool taskq_worker_running(void);
extern void taskq_register_xact_callbacks(void);
extern ConditionVariable *taskq_finish_cv(const char *id);

#endif							/* TASKQ_WAKEUP_H */
