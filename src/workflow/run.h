/*-------------------------------------------------------------------------
 *
 * run.h
 *	  Runs, the layer state machines and sagas share (run.c): the run row,
 *	  its status and their one transition function, its lock, its step
 *	  tasks' ids, and the kinds that the seam (seam.c) hands returned and
 *	  finished steps to; definitions, their versions and their parsed form
 *	  (definitions.c).
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
extern TaskqRun *taskq_run_get(const char *id);
extern void taskq_run_insert(TaskqRun *run);
extern void taskq_run_store(TaskqRun *run);

/* The same without the executor, for the table as installed (run_row.c). */
extern bool taskq_run_row_fetch(const char *id, TaskqRun **out);
extern bool taskq_run_row_store(TaskqRun *run);
extern void taskq_run_set_status(TaskqRun *run, TaskqRunStatus to);
extern char *taskq_run_next_task_id(TaskqRun *run);
extern char *taskq_run_root(const char *id);

/* Definitions: a new version of name, or the one a run names (definitions.c). */
extern int32 taskq_definition_store(const char *name, const char *kind, Jsonb *def);
extern Jsonb *taskq_definition_latest(const char *name, const char *kind,
									  int32 *version, TransactionId *xmin);
extern Jsonb *taskq_definition_version(const char *name, const char *kind,
									   int32 version, TransactionId *xmin);
extern const char *taskq_kind_noun(const char *kind);

/* A kind's parser of its definitions; its result is kept per backend. */
typedef void *(*TaskqDefParser) (Jsonb *def);
extern void *taskq_definition_parsed(TaskqRun *run, TaskqDefParser parse);

/* JSON of definitions and contexts */
extern JsonbValue *taskq_json_key(Jsonb *obj, const char *key);
extern JsonbValue *taskq_json_container_key(JsonbContainer *obj, const char *key);
extern char *taskq_json_text(JsonbValue *v);
extern Jsonb *taskq_json_value_jsonb(JsonbValue *v);
extern void taskq_check_json_object(Jsonb *j, const char *argname);

/* The queue's return and release of a step, not handed back to the kind. */
extern void taskq_step_return(const char *id, pg_uuid_t *token, const char *status,
							  TaskqStatus code, Interval *delay, const char *caller);
extern void taskq_step_release(const char *id, pg_uuid_t *token);

/* Building step bodies */
extern void taskq_json_push_key(JsonbParseState **st, const char *key);
extern void taskq_json_push_text(JsonbParseState **st, const char *key, const char *val);
extern void taskq_json_push_jsonb(JsonbParseState **st, const char *key, Jsonb *j);

/* The debug settings of a run (fault injection). */
extern bool taskq_run_debug_flag(TaskqRun *run, const char *key);
extern char *taskq_run_debug_fault(TaskqRun *run, const char *key, const char *step);
extern bool taskq_run_fault_done(TaskqRun *run, const char *key, const char *step);
extern void taskq_run_fault_mark(TaskqRun *run, const char *key, const char *step);
extern void taskq_check_debug(Jsonb *debug, const char *kind);

/*
 * A workflow kind: what the seam calls for the steps of its runs.  The run
 * is locked and fetched.
 */
typedef struct TaskqWorkflowKind
{
	const char *name;
	/*
	 * A step task of run is returned (release: given back unworked) by a
	 * worker through the queue's return functions: handle it and return
	 * true, or return false to let the queue return it as a plain task.
	 */
	bool		(*step_returned) (TaskqRun *run, TaskqReturnItem *item, bool release);
	/* The queue finished a task of run (any path: return, expiry, cancel). */
	void		(*step_finished) (TaskqRun *run, const TaskqFinished *task);
	/* cancel_run: returns the new status. */
	const char *(*cancel) (TaskqRun *run);
} TaskqWorkflowKind;

extern void taskq_workflow_register_kind(const TaskqWorkflowKind *kind);
extern const TaskqWorkflowKind *taskq_workflow_kind(const char *name);
extern void taskq_workflow_direct(bool on);

/* machine.c, saga.c */
extern void taskq_machine_init(void);
extern void taskq_saga_init(void);

#endif							/* TASKQ_RUN_H */
