/*-------------------------------------------------------------------------
 *
 * run.h
 *	  Runs, the layer state machines and sagas share (run.c): the run row,
 *	  its status and their one transition function, its lock, its step
 *	  tasks' ids.  The kinds over runs see the seam in seam.h, their
 *	  definitions in def_common.h, JSON in json.h, debug settings in
 *	  debug.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_RUN_H
#define TASKQ_RUN_H

#include "utils/jsonb.h"

#include "queue/queue.h"
#include "workflow/workflow.h"

/* The values of taskq.runs.status. */
typedef enum TaskqRunStatus
{
	TASKQ_RUN_RUNNING,
	TASKQ_RUN_WAITING,			/* needs send_event or resume_run */
	TASKQ_RUN_UNDOING,			/* a saga compensating */
	TASKQ_RUN_SUCCEEDED,
	TASKQ_RUN_FAILED,
	TASKQ_RUN_DISMAL,			/* a saga whose undo gave up */
	TASKQ_RUN_CANCELLED,
	TASKQ_RUN_MERGED			/* a machine instance joined into another */
} TaskqRunStatus;

#define TASKQ_RUN_STATUS_COUNT (TASKQ_RUN_MERGED + 1)

extern const char *taskq_run_status_label(TaskqRunStatus status);
extern TaskqRunStatus taskq_run_status_from_label(const char *label);
extern bool taskq_run_status_finished(TaskqRunStatus status);

/* A run as its row holds it, with its definition's JSON. */
typedef struct TaskqRun
{
	char	   *id;
	char	   *kind;			/* "machine" or "saga" */
	char	   *definition;
	int32		version;
	TaskqRunStatus status;
	char	   *state;			/* machine: current state */
	Jsonb	   *context;		/* machine context or saga working map */
	Jsonb	   *inputs;			/* saga inputs or NULL */
	char	   *parent;
	char	   *error;
	Jsonb	   *debug;			/* fault injection or NULL */
	char	   *step_task;		/* machine: task of the current visit */
	int32		visits;			/* step tasks made so far */
	char	   *fork;			/* machine: run the current visit forked */
	Jsonb	   *events;			/* machine: kept events (array) or NULL */
	Jsonb	   *faults;			/* debug faults already injected or NULL */
	Jsonb	   *def;			/* the definition (version's JSON), or NULL: not read */
	TransactionId def_xmin;		/* xmin of the definition's row (definitions.c) */
	bool		finish_now;		/* set by taskq_run_set_status: finished_at */
} TaskqRun;

/* Run ids: 1-200 bytes, no '/' in a caller's (forks add them). */
#define TASKQ_MAX_RUN_ID_LEN 200

extern char *taskq_run_of_task(const char *task_id);
extern void taskq_run_lock(const char *id);
extern TaskqRun *taskq_run_fetch(const char *id);
extern TaskqRun *taskq_run_peek(const char *id);
extern TaskqRun *taskq_run_get(const char *id);
extern void taskq_run_insert(TaskqRun *run);
extern void taskq_run_store(TaskqRun *run);

/* The same without the executor, for the table as installed (run_row.c). */
extern bool taskq_run_row_fetch(const char *id, TaskqRun **out);
extern bool taskq_run_row_peek(const char *id, TaskqRun **out);
extern bool taskq_run_row_store(TaskqRun *run);
extern void taskq_run_set_status(TaskqRun *run, TaskqRunStatus to);
extern char *taskq_run_next_task_id(TaskqRun *run);
extern bool taskq_run_task_past_step(TaskqRun *run, const char *task_id);
extern char *taskq_run_root(const char *id);

/* Child runs (run_child.c): their ids, their parent's lock, a run's end. */
extern bool taskq_run_is_child_id(const char *id);
extern void taskq_run_lock_parent(const char *id);
extern bool taskq_run_try_lock(const char *id);
extern void taskq_run_ended(TaskqRun *run);

#endif							/* TASKQ_RUN_H */
