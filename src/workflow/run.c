/*-------------------------------------------------------------------------
 *
 * run.c
 *	  Runs: one execution of a state machine or a saga, a row of
 *	  taskq.runs.  Here: the run's status and its one transition function,
 *	  the run lock, reading and writing the row, the ids of its step tasks,
 *	  the debug settings of a run, and what
 *	  the kinds share: the queue's return of a step, step bodies' JSON.
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
 * life.
 */
#define R TASKQ_RUN_RUNNING
static const bool run_moves[TASKQ_RUN_STATUS_COUNT][TASKQ_RUN_STATUS_COUNT] = {
	/* to: run  wait   undo   succ   fail   dism   canc   merg */
	[TASKQ_RUN_RUNNING] = {true, true, true, true, true, false, true, true},
	[TASKQ_RUN_WAITING] = {true, false, true, true, true, false, true, false},
	[TASKQ_RUN_UNDOING] = {false, false, false, false, true, true, true, false},
	[TASKQ_RUN_SUCCEEDED] = {false},
	[TASKQ_RUN_FAILED] = {true, false, false, false, false, false, false, false},
	[TASKQ_RUN_DISMAL] = {false},
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

/* ----------
 * The row
 * ----------
 */
void
taskq_run_lock(const char *id)
{
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

	if (taskq_run_row_store(run))
		return;
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
}

/* ----------
 * JSON
 * ----------
 */
JsonbValue *
taskq_json_container_key(JsonbContainer *obj, const char *key)
{
	if (!JsonContainerIsObject(obj))
		return NULL;
	return getKeyJsonValueFromContainer(obj, key, strlen(key), NULL);
}

/* Value of key in object obj, or NULL (also for a JSON null). */
JsonbValue *
taskq_json_key(Jsonb *obj, const char *key)
{
	JsonbValue *v;

	if (obj == NULL)
		return NULL;
	v = taskq_json_container_key(&obj->root, key);
	if (v != NULL && v->type == jbvNull)
		return NULL;
	return v;
}

/* A JSON string as a C string; NULL for NULL or another type. */
char *
taskq_json_text(JsonbValue *v)
{
	if (v == NULL || v->type != jbvString)
		return NULL;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

Jsonb *
taskq_json_value_jsonb(JsonbValue *v)
{
	return JsonbValueToJsonb(v);
}

/* Argument argname must be a JSON object (22023). */
void
taskq_check_json_object(Jsonb *j, const char *argname)
{
	if (!JB_ROOT_IS_OBJECT(j) || JB_ROOT_IS_SCALAR(j))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be a JSON object", argname)));
}

/* ----------
 * Debug settings (fault injection)
 * ----------
 */

/* Is the boolean debug setting key set to true? */
bool
taskq_run_debug_flag(TaskqRun *run, const char *key)
{
	JsonbValue *v = taskq_json_key(run->debug, key);

	return v != NULL && v->type == jbvBool && v->val.boolean;
}

/* The failure ("retry" or "fatal") debug setting key asks at step, or NULL. */
char *
taskq_run_debug_fault(TaskqRun *run, const char *key, const char *step)
{
	JsonbValue *map = taskq_json_key(run->debug, key);

	if (map == NULL || map->type != jbvBinary)
		return NULL;
	return taskq_json_text(taskq_json_container_key(map->val.binary.data, step));
}

static char *
fault_key(const char *key, const char *step)
{
	return psprintf("%s:%s", key, step);
}

/* Was the fault key at step injected already (once per run and step)? */
bool
taskq_run_fault_done(TaskqRun *run, const char *key, const char *step)
{
	return taskq_json_key(run->faults, fault_key(key, step)) != NULL;
}

/* Note that the fault key at step was injected (stored with the run). */
void
taskq_run_fault_mark(TaskqRun *run, const char *key, const char *step)
{
	JsonbParseState *st = NULL;
	JsonbValue	k,
				v;
	Jsonb	   *one;
	char	   *name = fault_key(key, step);

	k.type = jbvString;
	k.val.string.val = name;
	k.val.string.len = strlen(name);
	v.type = jbvBool;
	v.val.boolean = true;
	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	pushJsonbValue(&st, WJB_KEY, &k);
	pushJsonbValue(&st, WJB_VALUE, &v);
	one = JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_OBJECT, NULL));
	run->faults = run->faults == NULL ? one :
		DatumGetJsonbP(DirectFunctionCall2(jsonb_concat, JsonbPGetDatum(run->faults),
										   JsonbPGetDatum(one)));
}

/*
 * The debug argument of start_machine / start_saga: an object of the
 * settings of its kind, each of the right shape (22023).
 */
void
taskq_check_debug(Jsonb *debug, const char *kind)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	bool		saga = strcmp(kind, "saga") == 0;

	taskq_check_json_object(debug, "debug");
	it = JsonbIteratorInit(&debug->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *key;
		JsonbValue	val;

		if (tok != WJB_KEY)
			continue;
		key = pnstrdup(v.val.string.val, v.val.string.len);
		(void) JsonbIteratorNext(&it, &val, true);
		if (strcmp(key, "restart_each_step") == 0 ||
			(saga && strcmp(key, "last_step_failure") == 0))
		{
			if (val.type != jbvBool)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("debug setting \"%s\" must be true or false", key)));
		}
		else if (strcmp(key, "fail_at_steps") == 0 ||
				 (saga && strcmp(key, "undo_fail_at_steps") == 0))
		{
			JsonbIterator *it2;
			JsonbValue	s;
			JsonbIteratorToken t2;

			if (val.type != jbvBinary || !JsonContainerIsObject(val.val.binary.data))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("debug setting \"%s\" must be an object of step names", key)));
			it2 = JsonbIteratorInit(val.val.binary.data);
			while ((t2 = JsonbIteratorNext(&it2, &s, true)) != WJB_DONE)
			{
				char	   *f;

				if (t2 != WJB_VALUE)
					continue;
				f = taskq_json_text(&s);
				if (f == NULL || (strcmp(f, "retry") != 0 && strcmp(f, "fatal") != 0))
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("debug setting \"%s\" must map each step to \"retry\" or \"fatal\"", key)));
			}
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown debug setting \"%s\" for a %s", key, taskq_kind_noun(kind)),
					 errhint(saga ?
							 "A saga knows restart_each_step, fail_at_steps, undo_fail_at_steps and last_step_failure." :
							 "A state machine knows restart_each_step and fail_at_steps.")));
	}
}

static TaskqPlan runs_of_plan = {
	"SELECT id FROM taskq.runs WHERE id OPERATOR(pg_catalog.=) ANY ($1) ORDER BY id LIMIT 1",
	1, {TEXTARRAYOID}
};

/*
 * The core's calls that change tasks one by one (cancel_tasks,
 * replace_tasks, redrive_tasks, add_dependencies) leave the steps of runs
 * alone: 55000 naming the run.
 */
void
taskq_refuse_run_tasks(List *ids, const char *fn)
{
	List	   *runs = NIL;
	ListCell   *lc;
	Datum		arg;

	foreach(lc, ids)
	{
		char	   *run = taskq_run_of_task(lfirst(lc));

		if (run)
			runs = lappend(runs, run);
	}
	if (runs == NIL)
		return;
	arg = taskq_text_array_datum(runs);
	taskq_execute(&runs_of_plan, &arg, NULL, false, 0);
	if (SPI_processed > 0)
	{
		char	   *run = taskq_get_text(0, 1, NULL);

		foreach(lc, ids)
			if (strncmp(lfirst(lc), run, strlen(run)) == 0 &&
				((char *) lfirst(lc))[strlen(run)] == '/')
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("task \"%s\" is a step of run \"%s\"", (char *) lfirst(lc), run),
						 errhint("%s does not change the steps of runs: use cancel_run, redrive_run or migrate_run.", fn)));
	}
}

/* ----------
 * What the kinds share: the queue's return of a step (not handed back to
 * the seam), and the JSON of step bodies
 * ----------
 */
void
taskq_step_return(const char *id, pg_uuid_t *token, const char *status, TaskqStatus code,
				  Interval *delay, const char *caller)
{
	TaskqReturnItem item = {.id = (char *) id, .token = token, .status = (char *) status,
		.code = code, .retry_delay = delay};

	taskq_workflow_direct(true);
	PG_TRY();
	{
		taskq_return(&item, 1, caller);
	}
	PG_FINALLY();
	{
		taskq_workflow_direct(false);
	}
	PG_END_TRY();
}

void
taskq_step_release(const char *id, pg_uuid_t *token)
{
	taskq_workflow_direct(true);
	PG_TRY();
	{
		taskq_release(id, token);
	}
	PG_FINALLY();
	{
		taskq_workflow_direct(false);
	}
	PG_END_TRY();
}

void
taskq_json_push_key(JsonbParseState **st, const char *key)
{
	JsonbValue	k;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	pushJsonbValue(st, WJB_KEY, &k);
}

/* "key": val (a JSON string, or null for NULL) */
void
taskq_json_push_text(JsonbParseState **st, const char *key, const char *val)
{
	JsonbValue	v;

	taskq_json_push_key(st, key);
	if (val == NULL)
		v.type = jbvNull;
	else
	{
		v.type = jbvString;
		v.val.string.val = (char *) val;
		v.val.string.len = strlen(val);
	}
	pushJsonbValue(st, WJB_VALUE, &v);
}

/* "key": j (null for NULL); with key NULL, j as an array element */
void
taskq_json_push_jsonb(JsonbParseState **st, const char *key, Jsonb *j)
{
	JsonbValue	v;

	if (key)
		taskq_json_push_key(st, key);
	if (j == NULL)
		v.type = jbvNull;
	else
	{
		v.type = jbvBinary;
		v.val.binary.data = &j->root;
		v.val.binary.len = VARSIZE(j) - VARHDRSZ;
	}
	pushJsonbValue(st, key ? WJB_VALUE : WJB_ELEM, &v);
}
