/*-------------------------------------------------------------------------
 *
 * run.c
 *	  Runs: one execution of a state machine or a saga, a row of
 *	  taskq.runs.  Here: the run's status and its one transition function,
 *	  the run lock, reading and writing the row, and the ids of its step
 *	  tasks.  The JSON helpers are json.c's, the debug settings debug.c's,
 *	  the queue's return of a step seam.c's.
 *
 * Locking: every workflow call takes its run's lock first — the workflow
 * lock of the run id (queue/graph.c), exclusive, until the transaction
 * ends — and only then any task row of the run.  A step task carries the
 * run id as its workflow key and its id is "<run id>/<n>", so the return
 * path finds the run from the task id without reading the task.  Inserting
 * a step task takes the same workflow lock shared, which the lock already
 * held covers.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"

#include "common/args.h"
#include "common/plan.h"
#include "ipc/wakeup.h"
#include "queue/queue.h"
#include "workflow/run.h"

/* ----------
 * Status
 * ----------
 */
static const char *const run_status_labels[TASKQ_RUN_STATUS_COUNT] = {
	"running", "waiting", "undoing", "succeeded", "failed", "dismal",
	"cancelled", "merged"
};

const char *
taskq_run_status_label(TaskqRunStatus status)
{
	return run_status_labels[status];
}

TaskqRunStatus
taskq_run_status_from_label(const char *label)
{
	for (int s = 0; s < TASKQ_RUN_STATUS_COUNT; s++)
		if (strcmp(run_status_labels[s], label) == 0)
			return (TaskqRunStatus) s;
	elog(ERROR, "taskq: unknown run status \"%s\"", label);
	return TASKQ_RUN_RUNNING;	/* keep compiler quiet */
}

bool
taskq_run_status_finished(TaskqRunStatus status)
{
	return status >= TASKQ_RUN_SUCCEEDED;
}

/*
 * The moves of a run's status: rows from, columns to.  A finished run
 * moves no more, except a failed machine that redrive_run gives another
 * life, and a dismal saga whose undo redrive_run continues.
 */
#define R TASKQ_RUN_RUNNING
static const bool run_moves[TASKQ_RUN_STATUS_COUNT][TASKQ_RUN_STATUS_COUNT] = {
	/* to: run  wait   undo   succ   fail   dism   canc   merg */
	[TASKQ_RUN_RUNNING] = {true, true, true, true, true, false, true, true},
	[TASKQ_RUN_WAITING] = {true, false, true, true, true, false, true, false},
	[TASKQ_RUN_UNDOING] = {false, false, false, false, true, true, true, false},
	[TASKQ_RUN_SUCCEEDED] = {false},
	[TASKQ_RUN_FAILED] = {true, false, false, false, false, false, false, false},
	[TASKQ_RUN_DISMAL] = {false, false, true, false, false, false, false, false},
	[TASKQ_RUN_CANCELLED] = {false},
	[TASKQ_RUN_MERGED] = {false},
};
#undef R

/*
 * The one place a run's status changes: check the move, note the end for
 * wait_for_run (waiters wake when the transaction commits; a waiting run
 * wakes them too), and let taskq_run_store write finished_at.
 */
void
taskq_run_set_status(TaskqRun *run, TaskqRunStatus to)
{
	if (run->status == to)
		return;
	if (!run_moves[run->status][to])
		elog(ERROR, "taskq: run \"%s\" cannot move from %s to %s",
			 run->id, taskq_run_status_label(run->status), taskq_run_status_label(to));
	run->status = to;
	run->finish_now = taskq_run_status_finished(to);
	if (run->finish_now || to == TASKQ_RUN_WAITING)
		taskq_note_finished(run->id);
}

/* ----------
 * Ids
 * ----------
 */

/* A caller's run id: 1-200 bytes, no '/' (22023), no NUL. */
void
taskq_check_run_id(const char *id, const char *argname)
{
	size_t		len = strlen(id);

	if (len == 0 || len > TASKQ_MAX_RUN_ID_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be 1 to %d bytes long", argname,
						TASKQ_MAX_RUN_ID_LEN)));
	if (strchr(id, '/') != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("run id \"%s\" must not contain \"/\"", id),
				 errdetail("The ids of a run's step tasks and forks are made of its id, \"/\" and a number.")));
}

/* The run a step task belongs to: its id up to the last '/', or NULL. */
char *
taskq_run_of_task(const char *task_id)
{
	const char *slash = strrchr(task_id, '/');

	if (slash == NULL || slash == task_id)
		return NULL;
	return pnstrdup(task_id, slash - task_id);
}

/* The root of a run: its id up to the first '/'. */
char *
taskq_run_root(const char *id)
{
	const char *slash = strchr(id, '/');

	return slash ? pnstrdup(id, slash - id) : pstrdup(id);
}

/* The id of the run's next step task: "<run id>/<n>". */
char *
taskq_run_next_task_id(TaskqRun *run)
{
	run->visits++;
	return psprintf("%s/%d", run->id, run->visits);
}

/*
 * Is task_id a task "<run id>/<n>" of the running run numbered past its
 * current step?  Such a task is no step: only a map state's items are made
 * after the step task of their visit (machine_map.c).  Read from the row
 * without the run's lock, so the seam lets them by unlocked.
 */
bool
taskq_run_task_past_step(TaskqRun *run, const char *task_id)
{
	size_t		len = strlen(run->id);
	const char *step;

	if (run->status != TASKQ_RUN_RUNNING || run->step_task == NULL ||
		strncmp(task_id, run->id, len) != 0 || task_id[len] != '/' ||
		strncmp(run->step_task, run->id, len) != 0 || run->step_task[len] != '/')
		return false;
	task_id += len + 1;
	step = run->step_task + len + 1;
	/* both decimal numbers without leading zeros: longer is larger */
	if (strspn(task_id, "0123456789") != strlen(task_id) ||
		strspn(step, "0123456789") != strlen(step))
		return false;
	return strlen(task_id) > strlen(step) ||
		(strlen(task_id) == strlen(step) && strcmp(task_id, step) > 0);
}

/* ----------
 * The row
 * ----------
 */
void
taskq_run_lock(const char *id)
{
	if (taskq_run_is_child_id(id))
		taskq_run_lock_parent(id);	/* ancestors first (run_child.c) */
	taskq_lock_workflow(id, true);
}

static TaskqPlan fetch_plan = {
	"SELECT r.kind, r.definition, r.version, r.status, r.state, r.context,"
	"       r.inputs, r.parent, r.error, r.debug, r.step_task, r.visits,"
	"       r.fork, r.events, r.faults,"
	"       (SELECT d.xmin FROM taskq.definitions AS d"
	"         WHERE d.name OPERATOR(pg_catalog.=) r.definition"
	"           AND d.version OPERATOR(pg_catalog.=) r.version)"
	"  FROM taskq.runs AS r"
	" WHERE r.id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static Jsonb *
get_jsonb(int col)
{
	bool		isnull;
	Datum		d = taskq_get_datum(0, col, &isnull);

	return isnull ? NULL : DatumGetJsonbPCopy(d);
}

/* The run with this id (the caller holds its lock), or NULL. */
TaskqRun *
taskq_run_fetch(const char *id)
{
	Datum		arg;
	TaskqRun   *run;

	if (taskq_run_row_fetch(id, &run))
		return run;
	arg = CStringGetTextDatum(id);
	taskq_execute(&fetch_plan, &arg, NULL, false, 0);
	if (SPI_processed == 0)
		return NULL;
	run = palloc0(sizeof(TaskqRun));
	run->id = pstrdup(id);
	run->kind = taskq_get_text(0, 1, NULL);
	run->definition = taskq_get_text(0, 2, NULL);
	run->version = taskq_get_int32(0, 3, NULL);
	run->status = taskq_run_status_from_label(taskq_get_text(0, 4, NULL));
	run->state = taskq_get_text(0, 5, NULL);
	run->context = get_jsonb(6);
	run->inputs = get_jsonb(7);
	run->parent = taskq_get_text(0, 8, NULL);
	run->error = taskq_get_text(0, 9, NULL);
	run->debug = get_jsonb(10);
	run->step_task = taskq_get_text(0, 11, NULL);
	run->visits = taskq_get_int32(0, 12, NULL);
	run->fork = taskq_get_text(0, 13, NULL);
	run->events = get_jsonb(14);
	run->faults = get_jsonb(15);
	run->def_xmin = DatumGetTransactionId(taskq_get_datum(0, 16, NULL));
	return run;
}

static TaskqPlan peek_plan = {
	"SELECT status, step_task FROM taskq.runs WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/*
 * The status and step task of the run with this id (the other fields
 * zero), or NULL: read without its lock, for the seam's look at the run of
 * a task (seam.c).
 */
TaskqRun *
taskq_run_peek(const char *id)
{
	Datum		arg;
	TaskqRun   *run;

	if (taskq_run_row_peek(id, &run))
		return run;
	arg = CStringGetTextDatum(id);
	taskq_execute(&peek_plan, &arg, NULL, false, 0);
	if (SPI_processed == 0)
		return NULL;
	run = palloc0(sizeof(TaskqRun));
	run->id = pstrdup(id);
	run->status = taskq_run_status_from_label(taskq_get_text(0, 1, NULL));
	run->step_task = taskq_get_text(0, 2, NULL);
	return run;
}

/* Lock and fetch the run with this id: 42704 if there is none. */
TaskqRun *
taskq_run_get(const char *id)
{
	TaskqRun   *run;

	taskq_run_lock(id);
	run = taskq_run_fetch(id);
	if (run == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("run \"%s\" does not exist", id)));
	return run;
}

static TaskqPlan clash_plan = {
	"SELECT 1 FROM taskq.runs WHERE id OPERATOR(pg_catalog.=) $1"
	" UNION ALL SELECT 1 FROM taskq.jobs WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static TaskqPlan insert_plan = {
	"INSERT INTO taskq.runs (id, kind, definition, version, status, state,"
	"                        context, inputs, parent, debug, step_task, visits)"
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
	" ON CONFLICT (id) DO NOTHING",
	12, {TEXTOID, TEXTOID, TEXTOID, INT4OID, TEXTOID, TEXTOID, JSONBOID,
	JSONBOID, TEXTOID, JSONBOID, TEXTOID, INT4OID}
};

#define SET_TEXT(i, s) \
	do { if (s) values[i] = CStringGetTextDatum(s); else nulls[i] = 'n'; } while (0)
#define SET_JSONB(i, j) \
	do { if (j) values[i] = JsonbPGetDatum(j); else nulls[i] = 'n'; } while (0)

/*
 * Insert a new run (its lock held by the caller): 23505 if a run or a job
 * has its id (they share the namespace of workflow keys).
 */
void
taskq_run_insert(TaskqRun *run)
{
	Datum		values[12];
	char		nulls[12];
	Datum		arg = CStringGetTextDatum(run->id);

	taskq_execute(&clash_plan, &arg, NULL, false, 0);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("run \"%s\" already exists", run->id),
				 errdetail("A run or a job has this id: they share the namespace of workflow keys.")));
	memset(nulls, ' ', sizeof(nulls));
	values[0] = arg;
	values[1] = CStringGetTextDatum(run->kind);
	values[2] = CStringGetTextDatum(run->definition);
	values[3] = Int32GetDatum(run->version);
	values[4] = CStringGetTextDatum(taskq_run_status_label(run->status));
	SET_TEXT(5, run->state);
	values[6] = JsonbPGetDatum(run->context);
	SET_JSONB(7, run->inputs);
	SET_TEXT(8, run->parent);
	SET_JSONB(9, run->debug);
	SET_TEXT(10, run->step_task);
	values[11] = Int32GetDatum(run->visits);
	taskq_execute(&insert_plan, values, nulls, false, 0);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("run \"%s\" already exists", run->id)));
}

static TaskqPlan store_plan = {
	"UPDATE taskq.runs"
	"   SET status = $2, state = $3, context = $4, error = $5, step_task = $6,"
	"       visits = $7, fork = $8, events = $9, faults = $10, version = $11,"
	"       finished_at = CASE WHEN $12 THEN pg_catalog.now()"
	"                          WHEN $2 OPERATOR(pg_catalog.=) ANY (ARRAY['running', 'waiting', 'undoing'])"
	"                          THEN NULL ELSE finished_at END"
	" WHERE id OPERATOR(pg_catalog.=) $1",
	12, {TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID, TEXTOID, INT4OID,
	TEXTOID, JSONBOID, JSONBOID, INT4OID, BOOLOID}
};

/* Write back what a step changed of the run (its lock held). */
void
taskq_run_store(TaskqRun *run)
{
	Datum		values[12];
	char		nulls[12];
	bool		ended = run->finish_now;

	if (taskq_run_row_store(run))
	{
		if (ended)
			taskq_run_ended(run);	/* children, parent: run_child.c */
		return;
	}
	memset(nulls, ' ', sizeof(nulls));
	values[0] = CStringGetTextDatum(run->id);
	values[1] = CStringGetTextDatum(taskq_run_status_label(run->status));
	SET_TEXT(2, run->state);
	values[3] = JsonbPGetDatum(run->context);
	SET_TEXT(4, run->error);
	SET_TEXT(5, run->step_task);
	values[6] = Int32GetDatum(run->visits);
	SET_TEXT(7, run->fork);
	SET_JSONB(8, run->events);
	SET_JSONB(9, run->faults);
	values[10] = Int32GetDatum(run->version);
	values[11] = BoolGetDatum(run->finish_now);
	taskq_execute(&store_plan, values, nulls, false, 0);
	run->finish_now = false;
	if (ended)
		taskq_run_ended(run);
}
