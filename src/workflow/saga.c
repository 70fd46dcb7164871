/*-------------------------------------------------------------------------
 *
 * saga.c
 *	  Sagas: runs of steps that each have a do and an undo, over a DAG
 *	  ("after").  Steps whose predecessors are done run, in parallel where
 *	  the DAG allows; when a step fails the saga switches to undoing: no
 *	  new do starts, the steps in progress finish, and every started step
 *	  is undone once, in reverse topological order (independent branches
 *	  in parallel).  An undo that gives up is a dismal failure.
 *
 * Each do and undo of a step is an ordinary task "<run id>/<n>", created
 * ready in the transaction that makes the step (or its undo) ready; none
 * is made in advance.  taskq.saga_steps holds, per run and started step,
 * its current do task and undo task and their states; the working map is
 * the run's context.  Every change happens here, with the run's lock held
 * (run.c) before any task row: in the transaction of the step's return
 * (return_step, or a plain return through the seam), of the queue's end of
 * a step (expiry, through the finished hook), of start_saga, resume_run or
 * cancel_run.  A section that works on a run marks it busy: the tasks its
 * own queue calls finish come back through the finished hook, and are
 * already recorded (the hook leaves them alone); a later dispatch of them
 * finds them no longer current in saga_steps.
 *
 * Step states (saga_steps.do_state): ready (its task exists, unfinished),
 * succeeded, failed (its do may have half-run: it is undone), skipped
 * (aborted at the switch before anybody claimed it: nothing to undo).
 * undo_state: NULL (not yet), ready, succeeded, failed (dismal), none (the
 * step has no undo).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/async.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"

#include "common/plan.h"
#include "queue/queue.h"
#include "workflow/machine_def.h"
#include "workflow/run.h"
#include "workflow/saga_def.h"
#include "workflow/workflow.h"

typedef enum DoState
{
	DO_NONE,					/* not started: no row */
	DO_READY,
	DO_SUCCEEDED,
	DO_FAILED,
	DO_SKIPPED
} DoState;

typedef enum UndoState
{
	UNDO_NOT_YET,
	UNDO_READY,
	UNDO_SUCCEEDED,
	UNDO_FAILED,
	UNDO_NOTHING				/* undo: null, counted as undone */
} UndoState;

static const char *const do_labels[] = {NULL, "ready", "succeeded", "failed", "skipped"};
static const char *const undo_labels[] = {NULL, "ready", "succeeded", "failed", "none"};

typedef struct StepState
{
	DoState		do_state;
	UndoState	undo_state;
	char	   *do_task;
	char	   *undo_task;
	bool		dirty;
} StepState;

typedef struct SagaRun
{
	TaskqRun   *run;
	SagaDef    *d;
	StepState  *st;
	List	   *specs;			/* tasks to insert when the work is done */
} SagaRun;

/* What a step's worker (or the queue on its behalf) says. */
typedef enum SagaResult
{
	RESULT_SUCCESS,
	RESULT_RETRY,
	RESULT_FATAL,
	RESULT_WAIT,
	RESULT_RERUN,
	RESULT_RELEASE				/* given back unworked (release_task) */
} SagaResult;

static const char *const result_names[] = {
	"success", "retry", "fatal", "wait", "rerun", "release"
};

/* The run a section of this file is working on (see the banner). */
static const char *busy_run = NULL;

static void switch_to_undo(SagaRun *sr);
static void schedule_undo(SagaRun *sr);

/* ----------
 * Loading and storing
 * ----------
 */
static TaskqPlan steps_plan = {
	"SELECT step, do_task, do_state, undo_task, undo_state FROM taskq.saga_steps"
	" WHERE run OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/*
 * return_step's one read: the run, its definition and its steps (as
 * arrays, in the order of the primary key), in one statement.
 */
static TaskqPlan fetch_plan = {
	"SELECT r.kind, r.definition, r.version, r.status, r.context, r.inputs, r.error,"
	"       r.debug, r.visits, r.faults, d.definition,"
	"       s.steps, s.do_tasks, s.do_states, s.undo_tasks, s.undo_states"
	"  FROM taskq.runs AS r"
	"  JOIN taskq.definitions AS d"
	"    ON d.name OPERATOR(pg_catalog.=) r.definition"
	"   AND d.version OPERATOR(pg_catalog.=) r.version"
	"  CROSS JOIN LATERAL"
	"       (SELECT pg_catalog.array_agg(step) AS steps, pg_catalog.array_agg(do_task) AS do_tasks,"
	"               pg_catalog.array_agg(do_state) AS do_states,"
	"               pg_catalog.array_agg(undo_task) AS undo_tasks,"
	"               pg_catalog.array_agg(undo_state) AS undo_states"
	"          FROM taskq.saga_steps"
	"         WHERE run OPERATOR(pg_catalog.=) r.id) AS s"
	" WHERE r.id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static int
label_index(const char *const *labels, int n, const char *label)
{
	if (label == NULL)
		return 0;
	for (int i = 1; i < n; i++)
		if (strcmp(labels[i], label) == 0)
			return i;
	elog(ERROR, "taskq: unknown saga step state \"%s\"", label);
	return 0;					/* keep compiler quiet */
}

static SagaRun *
saga_new(TaskqRun *run)
{
	SagaRun    *sr = palloc0(sizeof(SagaRun));

	sr->run = run;
	sr->d = taskq_saga_parse(run->def, false);
	sr->st = palloc0(sizeof(StepState) * sr->d->nsteps);
	return sr;
}

/* Record one row of taskq.saga_steps in sr. */
static void
saga_load_step(SagaRun *sr, const char *step, char *do_task, const char *do_state,
			   char *undo_task, const char *undo_state)
{
	int			i = taskq_saga_step_index(sr->d, step);
	StepState  *s;

	if (i < 0)
		return;
	s = &sr->st[i];
	s->do_task = do_task;
	s->do_state = label_index(do_labels, lengthof(do_labels), do_state);
	s->undo_task = undo_task;
	s->undo_state = label_index(undo_labels, lengthof(undo_labels), undo_state);
}

/* The steps of a run fetched by the seam (run.c). */
static SagaRun *
saga_load(TaskqRun *run)
{
	SagaRun    *sr = saga_new(run);
	Datum		a = CStringGetTextDatum(run->id);

	taskq_execute(&steps_plan, &a, NULL, false, 0);
	for (uint64 r = 0; r < SPI_processed; r++)
		saga_load_step(sr, taskq_get_text(r, 1, NULL), taskq_get_text(r, 2, NULL),
					   taskq_get_text(r, 3, NULL), taskq_get_text(r, 4, NULL),
					   taskq_get_text(r, 5, NULL));
	return sr;
}

static Jsonb *
get_jsonb(int col)
{
	bool		isnull;
	Datum		d = taskq_get_datum(0, col, &isnull);

	return isnull ? NULL : DatumGetJsonbPCopy(d);
}

/* The elements of a text[] column of row 0 (NULLs as NULL); their count. */
static int
get_texts(int col, char ***out)
{
	bool		isnull;
	Datum		d = taskq_get_datum(0, col, &isnull);
	Datum	   *elems;
	bool	   *elnulls;
	int			n;

	*out = NULL;
	if (isnull)
		return 0;
	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &elnulls, &n);
	*out = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
		(*out)[i] = elnulls[i] ? NULL : TextDatumGetCString(elems[i]);
	return n;
}

/*
 * The saga run id with its steps (its lock held), or NULL if there is no
 * such run or it is not a saga.  Only the columns a saga uses are read:
 * saga_finish writes no others.
 */
static SagaRun *
saga_fetch(const char *id)
{
	Datum		arg = CStringGetTextDatum(id);
	TaskqRun   *run;
	SagaRun    *sr;
	char	  **cols[5];
	int			n;

	taskq_execute(&fetch_plan, &arg, NULL, false, 0);
	if (SPI_processed == 0 || strcmp(taskq_get_text(0, 1, NULL), "saga") != 0)
		return NULL;
	run = palloc0(sizeof(TaskqRun));
	run->id = pstrdup(id);
	run->kind = "saga";
	run->definition = taskq_get_text(0, 2, NULL);
	run->version = taskq_get_int32(0, 3, NULL);
	run->status = taskq_run_status_from_label(taskq_get_text(0, 4, NULL));
	run->context = get_jsonb(5);
	run->inputs = get_jsonb(6);
	run->error = taskq_get_text(0, 7, NULL);
	run->debug = get_jsonb(8);
	run->visits = taskq_get_int32(0, 9, NULL);
	run->faults = get_jsonb(10);
	run->def = get_jsonb(11);
	n = get_texts(12, &cols[0]);
	for (int c = 1; c < 5; c++)
		(void) get_texts(13 + c - 1, &cols[c]);
	sr = saga_new(run);
	for (int i = 0; i < n; i++)
		saga_load_step(sr, cols[0][i], cols[1][i], cols[2][i], cols[3][i], cols[4][i]);
	return sr;
}

/*
 * The steps that changed and the run, in one statement.  A saga changes
 * only these columns of its run (state, step_task, fork and events are a
 * machine's), so they are all it writes.
 */
static TaskqPlan save_plan = {
	"WITH steps AS ("
	" INSERT INTO taskq.saga_steps AS s (run, step, do_task, do_state, undo_task, undo_state)"
	" SELECT $1, u.step, u.do_task, u.do_state, u.undo_task, u.undo_state"
	"   FROM ROWS FROM (pg_catalog.unnest($2::pg_catalog.text[]),"
	"                   pg_catalog.unnest($3::pg_catalog.text[]),"
	"                   pg_catalog.unnest($4::pg_catalog.text[]),"
	"                   pg_catalog.unnest($5::pg_catalog.text[]),"
	"                   pg_catalog.unnest($6::pg_catalog.text[]))"
	"        AS u(step, do_task, do_state, undo_task, undo_state)"
	" ON CONFLICT (run, step) DO UPDATE"
	"   SET do_task = excluded.do_task, do_state = excluded.do_state,"
	"       undo_task = excluded.undo_task, undo_state = excluded.undo_state)"
	" UPDATE taskq.runs"
	"    SET status = $7, context = $8, error = $9, visits = $10, faults = $11,"
	"        finished_at = CASE WHEN $12 THEN pg_catalog.now()"
	"                           WHEN $7 OPERATOR(pg_catalog.=) ANY (ARRAY['running', 'waiting', 'undoing'])"
	"                           THEN NULL ELSE finished_at END"
	"  WHERE id OPERATOR(pg_catalog.=) $1",
	12, {TEXTOID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
	TEXTOID, JSONBOID, TEXTOID, INT4OID, JSONBOID, BOOLOID}
};

static Datum
text_array(const char **vals, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(n, 1));
	int			dims[1] = {n};
	int			lbs[1] = {1};

	for (int i = 0; i < n; i++)
	{
		nulls[i] = vals[i] == NULL;
		elems[i] = nulls[i] ? (Datum) 0 : CStringGetTextDatum(vals[i]);
	}
	return PointerGetDatum(construct_md_array(elems, nulls, 1, dims, lbs, TEXTOID, -1,
											  false, TYPALIGN_INT));
}

/*
 * The work on the run is done: insert the tasks it made ready, write the
 * steps that changed and the run (one statement).
 */
static void
saga_finish(SagaRun *sr)
{
	TaskqRun   *run = sr->run;
	int			n = sr->d->nsteps;
	const char **cols[5];
	int			m = 0;
	Datum		values[12];
	char		nulls[12];

	if (sr->specs != NIL)
	{
		(void) taskq_insert(sr->specs, TASKQ_INSERT_PLAIN, NIL, NIL, NULL);
		sr->specs = NIL;
	}
	for (int c = 0; c < 5; c++)
		cols[c] = palloc(sizeof(char *) * n);
	for (int i = 0; i < n; i++)
	{
		StepState  *s = &sr->st[i];

		if (!s->dirty)
			continue;
		cols[0][m] = sr->d->steps[i].name;
		cols[1][m] = s->do_task;
		cols[2][m] = do_labels[s->do_state];
		cols[3][m] = s->undo_task;
		cols[4][m] = undo_labels[s->undo_state];
		s->dirty = false;
		m++;
	}
	memset(nulls, ' ', sizeof(nulls));
	values[0] = CStringGetTextDatum(run->id);
	for (int c = 0; c < 5; c++)
		values[c + 1] = text_array(cols[c], m);
	values[6] = CStringGetTextDatum(taskq_run_status_label(run->status));
	values[7] = JsonbPGetDatum(run->context);
	if (run->error)
		values[8] = CStringGetTextDatum(run->error);
	else
		nulls[8] = 'n';
	values[9] = Int32GetDatum(run->visits);
	if (run->faults)
		values[10] = JsonbPGetDatum(run->faults);
	else
		nulls[10] = 'n';
	values[11] = BoolGetDatum(run->finish_now);
	taskq_execute(&save_plan, values, nulls, false, 0);
	run->finish_now = false;
}

/* ----------
 * Step tasks
 * ----------
 */



/* The body of a do or undo task of step i. */
static Jsonb *
step_body(SagaRun *sr, int i, bool undo)
{
	JsonbParseState *st = NULL;
	JsonbValue	v;
	TaskqRun   *run = sr->run;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	taskq_json_push_text(&st, "run", run->id);
	taskq_json_push_text(&st, "saga", run->definition);
	taskq_json_push_key(&st, "version");
	v.type = jbvNumeric;
	v.val.numeric = DatumGetNumeric(DirectFunctionCall1(int4_numeric,
														Int32GetDatum(run->version)));
	pushJsonbValue(&st, WJB_VALUE, &v);
	taskq_json_push_text(&st, "step", sr->d->steps[i].name);
	taskq_json_push_text(&st, "direction", undo ? "undo" : "do");
	taskq_json_push_jsonb(&st, "inputs", run->inputs);
	taskq_json_push_jsonb(&st, "working", run->context);
	if (undo)
		taskq_json_push_text(&st, "error", run->error);
	return JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_OBJECT, NULL));
}

/* A task for the do (or undo) of step i, inserted by saga_finish; its id. */
static char *
add_step_task(SagaRun *sr, int i, bool undo)
{
	SagaDef    *d = sr->d;
	SagaStep   *s = &d->steps[i];
	TaskSpec   *spec = palloc0(sizeof(TaskSpec));

	spec->index = list_length(sr->specs) + 1;
	spec->id = taskq_run_next_task_id(sr->run);
	spec->action = undo ? s->undo_action : s->do_action;
	spec->body = step_body(sr, i, undo);
	if (!undo && (s->has_max_tries || d->has_max_tries))
	{
		spec->has_max_tries = true;
		spec->max_tries = s->has_max_tries ? s->max_tries : d->max_tries;
	}
	if (undo && (s->has_undo_max_tries || d->has_undo_max_tries))
	{
		spec->has_max_tries = true;
		spec->max_tries = s->has_undo_max_tries ? s->undo_max_tries : d->undo_max_tries;
	}
	if (undo)
		spec->retry = s->undo_retry ? s->undo_retry : d->undo_retry;
	else
		spec->retry = s->retry ? s->retry : d->retry;
	spec->workflow = sr->run->id;
	spec->post_result = true;	/* kept with retention 0 while the run lives */
	sr->specs = lappend(sr->specs, spec);
	return spec->id;
}

/* ----------
 * Doing
 * ----------
 */
static void
merge_working(TaskqRun *run, Jsonb *working)
{
	if (working == NULL)
		return;
	run->context = DatumGetJsonbP(DirectFunctionCall2(jsonb_concat,
													  JsonbPGetDatum(run->context),
													  JsonbPGetDatum(working)));
}

static bool
all_succeeded(SagaRun *sr)
{
	for (int i = 0; i < sr->d->nsteps; i++)
		if (sr->st[i].do_state != DO_SUCCEEDED)
			return false;
	return true;
}

/*
 * A running saga: every step not started whose "after" are done (all, or
 * one with one_success) becomes ready; all steps done: succeeded.
 */
static void
make_ready(SagaRun *sr)
{
	SagaDef    *d = sr->d;

	if (sr->run->status != TASKQ_RUN_RUNNING)
		return;
	for (int i = 0; i < d->nsteps; i++)
	{
		SagaStep   *s = &d->steps[i];
		int			done = 0;

		if (sr->st[i].do_state != DO_NONE)
			continue;
		for (int a = 0; a < s->nafter; a++)
			done += sr->st[s->after[a]].do_state == DO_SUCCEEDED;
		if (s->one_success ? (s->nafter > 0 && done == 0) : done < s->nafter)
			continue;
		sr->st[i].do_task = add_step_task(sr, i, false);
		sr->st[i].do_state = DO_READY;
		sr->st[i].dirty = true;
	}
	if (all_succeeded(sr))
		taskq_run_set_status(sr->run, TASKQ_RUN_SUCCEEDED);
}

/* Step i failed (its do state recorded): the saga switches to undo. */
static void
fail_run(SagaRun *sr, int i, const char *error)
{
	sr->run->error = psprintf("step \"%s\": %s", sr->d->steps[i].name, error);
	switch_to_undo(sr);
}

/* ----------
 * Undoing
 * ----------
 */
static TaskqPlan in_flight_plan = {
	"SELECT id, status_code::text, num_tries FROM taskq.tasks"
	" WHERE id OPERATOR(pg_catalog.=) ANY ($1) ORDER BY id FOR UPDATE",
	1, {TEXTARRAYOID}
};

static TaskqPlan last_try_plan = {
	"UPDATE taskq.tasks SET max_tries = num_tries"
	" WHERE id OPERATOR(pg_catalog.=) ANY ($1)"
	"   AND status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status",
	1, {TEXTARRAYOID}
};

/*
 * The switch from doing to undoing (run->error set): the working map is
 * stored with the run by saga_finish; a ready do that nobody claimed is
 * aborted (skipped; if it was tried before, or its first finish discarded
 * by restart_each_step, it counts as started); one in progress finishes,
 * on its last try (a retry, a release or an expired lease ends it).
 */
static void
switch_to_undo(SagaRun *sr)
{
	TaskqRun   *run = sr->run;
	List	   *ready = NIL;
	List	   *rows_id = NIL;
	List	   *rows_status = NIL;
	List	   *rows_tries = NIL;
	ListCell   *l1,
			   *l2,
			   *l3;
	Datum		arg;

	taskq_run_set_status(run, TASKQ_RUN_UNDOING);
	for (int i = 0; i < sr->d->nsteps; i++)
		if (sr->st[i].do_state == DO_READY)
			ready = lappend(ready, sr->st[i].do_task);
	if (ready != NIL)
	{
		arg = taskq_text_array_datum(ready);
		taskq_execute(&in_flight_plan, &arg, NULL, false, 0);
		for (uint64 r = 0; r < SPI_processed; r++)
		{
			rows_id = lappend(rows_id, taskq_get_text(r, 1, NULL));
			rows_status = lappend(rows_status, taskq_get_text(r, 2, NULL));
			rows_tries = lappend_int(rows_tries, taskq_get_int32(r, 3, NULL));
		}
		forthree(l1, rows_id, l2, rows_status, l3, rows_tries)
		{
			char	   *id = lfirst(l1);
			char	   *status = lfirst(l2);
			int			i;

			for (i = 0; i < sr->d->nsteps; i++)
				if (sr->st[i].do_state == DO_READY && strcmp(sr->st[i].do_task, id) == 0)
					break;
			if (i == sr->d->nsteps)
				continue;
			if (strcmp(status, "pending") == 0)
			{
				bool		tried = lfirst_int(l3) > 0 ||
					taskq_run_fault_done(run, "restart", id);

				taskq_abort_task(id, "skipped");
				sr->st[i].do_state = tried ? DO_FAILED : DO_SKIPPED;
				sr->st[i].dirty = true;
			}
			else if (strcmp(status, "completed") == 0 || strcmp(status, "aborted") == 0)
			{
				sr->st[i].do_state = status[0] == 'c' ? DO_SUCCEEDED : DO_FAILED;
				sr->st[i].dirty = true;
			}
		}
		taskq_execute(&last_try_plan, &arg, NULL, false, 0);
	}
	schedule_undo(sr);
}

static bool
undone(StepState *s)
{
	return s->undo_state == UNDO_SUCCEEDED || s->undo_state == UNDO_NOTHING;
}

static bool
started(StepState *s)
{
	return s->do_state == DO_READY || s->do_state == DO_SUCCEEDED || s->do_state == DO_FAILED;
}

/*
 * An undoing saga: the undo of each finished started step becomes ready
 * once every started step that comes after it is undone (a step without
 * undo is undone at once).  Nothing left to undo: failed (or cancelled).
 */
static void
schedule_undo(SagaRun *sr)
{
	SagaDef    *d = sr->d;
	int			n = d->nsteps;
	bool		changed = true;

	if (sr->run->status != TASKQ_RUN_UNDOING)
		return;
	while (changed)
	{
		changed = false;
		for (int i = 0; i < n; i++)
		{
			StepState  *s = &sr->st[i];
			bool		eligible = true;

			if (s->undo_state != UNDO_NOT_YET ||
				(s->do_state != DO_SUCCEEDED && s->do_state != DO_FAILED))
				continue;
			for (int j = 0; j < n && eligible; j++)
				if (d->reach[i * n + j] && started(&sr->st[j]) && !undone(&sr->st[j]))
					eligible = false;
			if (!eligible)
				continue;
			s->dirty = true;
			if (d->steps[i].undo_action == NULL)
			{
				s->undo_state = UNDO_NOTHING;
				changed = true;
			}
			else
			{
				s->undo_task = add_step_task(sr, i, true);
				s->undo_state = UNDO_READY;
			}
		}
	}
	for (int i = 0; i < n; i++)
		if (started(&sr->st[i]) && !undone(&sr->st[i]))
			return;
	taskq_run_set_status(sr->run, strcmp(sr->run->error, "cancelled") == 0 ?
						 TASKQ_RUN_CANCELLED : TASKQ_RUN_FAILED);
}

/*
 * The undo of step i gave up: dismal failure.  No further undo starts; the
 * server log says so, and the run id is notified on taskq_dismal.
 */
static void
dismal(SagaRun *sr, int i, const char *error)
{
	TaskqRun   *run = sr->run;
	const char *step = sr->d->steps[i].name;

	run->error = psprintf("%s; undo of step \"%s\": %s", run->error ? run->error : "failed",
						  step, error);
	taskq_run_set_status(run, TASKQ_RUN_DISMAL);
	ereport(WARNING,
			(errmsg("DISMAL FAILURE %s: the undo of step \"%s\" of saga \"%s\" gave up: %s",
					run->id, step, run->definition, error),
			 errdetail("Saga run \"%s\" is left partly undone; it needs repair by hand.",
					   run->id)));
	Async_Notify("taskq_dismal", run->id);
}

/* ----------
 * Results of steps
 * ----------
 */

/* The step whose current do or undo task is task_id (*undo says which), or -1. */
static int
find_task(SagaRun *sr, const char *task_id, bool *undo)
{
	for (int i = 0; i < sr->d->nsteps; i++)
	{
		StepState  *s = &sr->st[i];

		if (s->do_task && strcmp(s->do_task, task_id) == 0)
		{
			*undo = false;
			return i;
		}
		if (s->undo_task && strcmp(s->undo_task, task_id) == 0)
		{
			*undo = true;
			return i;
		}
	}
	return -1;
}

static TaskqStatus
result_code(SagaResult r)
{
	switch (r)
	{
		case RESULT_SUCCESS:
		case RESULT_WAIT:
		case RESULT_RERUN:
			return TASKQ_COMPLETED;
		case RESULT_RETRY:
		case RESULT_RELEASE:
			return TASKQ_PENDING;
		case RESULT_FATAL:
			break;
	}
	return TASKQ_ABORTED;
}

static TaskqPlan finished_task_plan = {
	"SELECT status_code::text, status FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/*
 * A return_step of a task that is no longer current (finished): the same
 * return repeated is a no-op, another result 55000.
 */
static void
repeated_result(SagaRun *sr, const char *task_id, pg_uuid_t *token, SagaResult result,
				const char *caller)
{
	Datum		a = CStringGetTextDatum(task_id);
	char	   *code;
	char	   *status;

	taskq_step_return(task_id, token, result_names[result], result_code(result), NULL, caller);
	taskq_execute(&finished_task_plan, &a, NULL, false, 0);
	if (SPI_processed == 0)
		return;
	code = taskq_get_text(0, 1, NULL);
	status = taskq_get_text(0, 2, NULL);
	if (strcmp(code, "completed") == 0 && status &&
		(strcmp(status, "success") == 0 || strcmp(status, "wait") == 0 ||
		 strcmp(status, "rerun") == 0) &&
		strcmp(status, result_names[result]) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("step task \"%s\" of run \"%s\" already returned \"%s\"",
						task_id, sr->run->id, status),
				 errdetail("A return_step repeated with the same token and result succeeds; another result does not.")));
}

/* What the worker said of a step, as it travels through the code below. */
typedef struct StepReturn
{
	const char *task_id;
	pg_uuid_t  *token;
	SagaResult	result;
	Jsonb	   *working;
	const char *error;			/* failure text, or status text of a plain return */
	Interval   *delay;
	const char *caller;
	int32		num_tries;
	bool		has_max_tries;
	int32		max_tries;
} StepReturn;

static bool
exhausted(StepReturn *r)
{
	return r->has_max_tries && r->num_tries >= r->max_tries;
}

static const char *
failure_text(StepReturn *r)
{
	if (r->error)
		return r->error;
	if (r->result == RESULT_RETRY && exhausted(r))
		return psprintf("all %d tries used", r->max_tries);
	return result_names[r->result];
}

/* A successful finish discarded by restart_each_step: true if it was. */
static bool
restart_fault(SagaRun *sr, StepReturn *r)
{
	if (!taskq_run_debug_flag(sr->run, "restart_each_step") ||
		taskq_run_fault_done(sr->run, "restart", r->task_id))
		return false;
	taskq_run_fault_mark(sr->run, "restart", r->task_id);
	taskq_step_release(r->task_id, r->token);
	return true;
}

/* A fault of key (fail_at_steps, undo_fail_at_steps) turns a success into a failure. */
static void
failure_fault(SagaRun *sr, StepReturn *r, const char *key, const char *step)
{
	char	   *fault = taskq_run_debug_fault(sr->run, key, step);

	if (fault == NULL || taskq_run_fault_done(sr->run, key, step))
		return;
	taskq_run_fault_mark(sr->run, key, step);
	r->result = strcmp(fault, "fatal") == 0 ? RESULT_FATAL : RESULT_RETRY;
	if (r->result == RESULT_RETRY)
		r->working = NULL;
	r->error = psprintf("%s: injected by %s", fault, key);
}

/* The do of step i returned. */
static void
do_returned(SagaRun *sr, int i, StepReturn *r)
{
	TaskqRun   *run = sr->run;
	StepState  *s = &sr->st[i];
	const char *name = sr->d->steps[i].name;
	bool		success;

	s->dirty = true;
	if (run->status != TASKQ_RUN_RUNNING && run->status != TASKQ_RUN_WAITING)
	{
		/* after the switch: it finished late; a failure is not retried */
		if (r->result == RESULT_SUCCESS || r->result == RESULT_WAIT ||
			r->result == RESULT_RERUN)
		{
			merge_working(run, r->working);
			s->do_state = DO_SUCCEEDED;
			taskq_step_return(r->task_id, r->token, r->error ? r->error : result_names[r->result],
						 TASKQ_COMPLETED, NULL, r->caller);
		}
		else
		{
			s->do_state = DO_FAILED;
			taskq_step_return(r->task_id, r->token,
						 r->result == RESULT_RELEASE ? "released after the switch to undo" :
						 failure_text(r), TASKQ_ABORTED, NULL, r->caller);
		}
		schedule_undo(sr);
		return;
	}

	success = r->result == RESULT_SUCCESS || r->result == RESULT_WAIT ||
		r->result == RESULT_RERUN;
	if (success)
	{
		if (restart_fault(sr, r))
			return;
		failure_fault(sr, r, "fail_at_steps", name);
	}
	if ((r->result == RESULT_SUCCESS || r->result == RESULT_WAIT) &&
		taskq_run_debug_flag(run, "last_step_failure") &&
		!taskq_run_fault_done(run, "last_step_failure", name))
	{
		bool		last = true;

		for (int j = 0; j < sr->d->nsteps; j++)
			if (j != i && sr->st[j].do_state != DO_SUCCEEDED)
				last = false;
		if (last)
		{
			taskq_run_fault_mark(run, "last_step_failure", name);
			r->result = RESULT_FATAL;
			r->error = "fatal: injected by last_step_failure";
		}
	}
	if (r->result == RESULT_RETRY && exhausted(r))
	{
		s->do_state = DO_FAILED;
		taskq_step_return(r->task_id, r->token, failure_text(r), TASKQ_ABORTED, NULL, r->caller);
		fail_run(sr, i, failure_text(r));
		return;
	}

	switch (r->result)
	{
		case RESULT_SUCCESS:
		case RESULT_WAIT:
			merge_working(run, r->working);
			s->do_state = DO_SUCCEEDED;
			taskq_step_return(r->task_id, r->token, r->error ? r->error : result_names[r->result],
						 TASKQ_COMPLETED, NULL, r->caller);
			if (r->result == RESULT_WAIT)
				taskq_run_set_status(run, TASKQ_RUN_WAITING);
			make_ready(sr);
			break;
		case RESULT_RERUN:
			merge_working(run, r->working);
			taskq_step_return(r->task_id, r->token, "rerun", TASKQ_COMPLETED, NULL, r->caller);
			s->do_task = add_step_task(sr, i, false);
			break;
		case RESULT_RETRY:
			taskq_step_return(r->task_id, r->token, r->error ? r->error : "retry", TASKQ_PENDING,
						 r->delay, r->caller);
			break;
		case RESULT_FATAL:
			merge_working(run, r->working);
			s->do_state = DO_FAILED;
			taskq_step_return(r->task_id, r->token, failure_text(r), TASKQ_ABORTED, NULL, r->caller);
			fail_run(sr, i, failure_text(r));
			break;
		case RESULT_RELEASE:
			elog(ERROR, "taskq: release of a saga step reached the saga");
	}
}

/* The undo of step i returned. */
static void
undo_returned(SagaRun *sr, int i, StepReturn *r)
{
	TaskqRun   *run = sr->run;
	StepState  *s = &sr->st[i];
	const char *name = sr->d->steps[i].name;

	if (r->result == RESULT_WAIT || r->result == RESULT_RERUN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the undo of step \"%s\" of run \"%s\" cannot return \"%s\"",
						name, run->id, result_names[r->result]),
				 errhint("An undo step returns success, retry or fatal.")));
	s->dirty = true;
	if (run->status != TASKQ_RUN_UNDOING)
	{
		/* dismal: the late return is recorded, nothing follows */
		if (r->result == RESULT_SUCCESS)
		{
			merge_working(run, r->working);
			s->undo_state = UNDO_SUCCEEDED;
			taskq_step_return(r->task_id, r->token, r->error ? r->error : "success",
						 TASKQ_COMPLETED, NULL, r->caller);
		}
		else
		{
			s->undo_state = UNDO_FAILED;
			taskq_step_return(r->task_id, r->token, failure_text(r), TASKQ_ABORTED, NULL, r->caller);
		}
		return;
	}
	if (r->result == RESULT_SUCCESS)
	{
		if (restart_fault(sr, r))
			return;
		failure_fault(sr, r, "undo_fail_at_steps", name);
	}
	if (r->result == RESULT_SUCCESS)
	{
		merge_working(run, r->working);
		s->undo_state = UNDO_SUCCEEDED;
		taskq_step_return(r->task_id, r->token, r->error ? r->error : "success",
					 TASKQ_COMPLETED, NULL, r->caller);
		schedule_undo(sr);
	}
	else if (r->result == RESULT_RETRY && !exhausted(r))
		taskq_step_return(r->task_id, r->token, r->error ? r->error : "retry", TASKQ_PENDING,
					 r->delay, r->caller);
	else
	{
		s->undo_state = UNDO_FAILED;
		taskq_step_return(r->task_id, r->token, failure_text(r), TASKQ_ABORTED, NULL, r->caller);
		dismal(sr, i, failure_text(r));
	}
}

/*
 * A step task of the (locked) saga run returned: token-checked, then to
 * the do or the undo.  A task that is not current is a repeat.
 */
static void
step_returned(SagaRun *sr, StepReturn *r)
{
	bool		undo;
	int			i = find_task(sr, r->task_id, &undo);
	char	   *cur;
	bool		isnull;

	if (i < 0 || (undo ? sr->st[i].undo_state != UNDO_READY :
				  sr->st[i].do_state != DO_READY))
	{
		repeated_result(sr, r->task_id, r->token, r->result, r->caller);
		return;
	}
	cur = taskq_lock_held_task(r->task_id, r->token);
	r->num_tries = taskq_get_int32(0, 4, NULL);
	r->max_tries = taskq_get_int32(0, 5, &isnull);
	r->has_max_tries = !isnull;
	if (strcmp(cur, "completed") == 0 || strcmp(cur, "aborted") == 0)
	{
		repeated_result(sr, r->task_id, r->token, r->result, r->caller);
		return;
	}
	if (undo)
		undo_returned(sr, i, r);
	else
		do_returned(sr, i, r);
	saga_finish(sr);
}

/* ----------
 * Busy sections
 * ----------
 */
typedef void (*saga_work) (void *arg);

static void
busy_call(const char *run_id, saga_work fn, void *arg)
{
	const char *prev = busy_run;

	busy_run = run_id;
	PG_TRY();
	{
		fn(arg);
	}
	PG_FINALLY();
	{
		busy_run = prev;
	}
	PG_END_TRY();
}

typedef struct ReturnCall
{
	SagaRun    *sr;
	StepReturn *r;
} ReturnCall;

static void
return_work(void *arg)
{
	ReturnCall *c = arg;

	step_returned(c->sr, c->r);
}

/* ----------
 * The kind's hooks (seam.c)
 * ----------
 */

/*
 * A worker returns a step through the queue's return functions: completed
 * is success, pending retry, aborted fatal (error = the status text).  A
 * release of a running saga's do, or of an undo while undoing, is the
 * queue's; after the switch a released do counts as failed.
 */
static bool
saga_step_returned(TaskqRun *run, TaskqReturnItem *item, bool release)
{
	SagaRun    *sr = saga_load(run);
	bool		undo;
	int			i = find_task(sr, item->id, &undo);
	StepReturn	r = {0};
	ReturnCall	c = {sr, &r};

	if (i < 0 || (undo ? sr->st[i].undo_state != UNDO_READY :
				  sr->st[i].do_state != DO_READY))
		return false;			/* not current: the queue says what it is */
	if (release)
	{
		if (undo ? run->status == TASKQ_RUN_UNDOING :
			(run->status == TASKQ_RUN_RUNNING || run->status == TASKQ_RUN_WAITING))
			return false;
		r.result = RESULT_RELEASE;
	}
	else if (item->code == TASKQ_COMPLETED)
		r.result = RESULT_SUCCESS;
	else if (item->code == TASKQ_PENDING)
		r.result = RESULT_RETRY;
	else if (item->code == TASKQ_ABORTED)
		r.result = RESULT_FATAL;
	else
		return false;			/* in_progress: the queue's error */
	r.task_id = item->id;
	r.token = item->token;
	r.error = item->status;
	if (r.error == NULL && r.result == RESULT_FATAL)
		r.error = "aborted";
	r.delay = item->retry_delay;
	r.caller = release ? "release_task" : "return_task";
	busy_call(run->id, return_work, &c);
	return true;
}

static TaskqPlan task_status_plan = {
	"SELECT status FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

typedef struct FinishedCall
{
	SagaRun    *sr;
	const TaskqFinished *task;
} FinishedCall;

static void
finished_work(void *arg)
{
	FinishedCall *c = arg;
	SagaRun    *sr = c->sr;
	TaskqRun   *run = sr->run;
	bool		undo;
	int			i = find_task(sr, c->task->id, &undo);
	StepState  *s;
	bool		ok = c->task->outcome == TASKQ_COMPLETED;
	char	   *error = NULL;
	Datum		a;

	if (i < 0)
		return;
	s = &sr->st[i];
	if (undo ? s->undo_state != UNDO_READY : s->do_state != DO_READY)
		return;					/* recorded already */
	a = CStringGetTextDatum(c->task->id);
	taskq_execute(&task_status_plan, &a, NULL, false, 0);
	if (SPI_processed > 0)
		error = taskq_get_text(0, 1, NULL);
	if (error == NULL)
		error = ok ? "completed" : "aborted";
	s->dirty = true;
	if (undo)
	{
		s->undo_state = ok ? UNDO_SUCCEEDED : UNDO_FAILED;
		if (run->status == TASKQ_RUN_UNDOING)
		{
			if (ok)
				schedule_undo(sr);
			else
				dismal(sr, i, error);
		}
	}
	else
	{
		s->do_state = ok ? DO_SUCCEEDED : DO_FAILED;
		if (run->status == TASKQ_RUN_RUNNING || run->status == TASKQ_RUN_WAITING)
		{
			if (ok)
				make_ready(sr);
			else
				fail_run(sr, i, error);
		}
		else
			schedule_undo(sr);
	}
	saga_finish(sr);
}

/*
 * The queue finished a step task by itself (a lease that expired on the
 * last try): a do that failed fails the saga, an undo that failed is
 * dismal.  Tasks this file finished itself were recorded already.
 */
static void
saga_step_finished(TaskqRun *run, const TaskqFinished *task)
{
	FinishedCall c;

	if (busy_run != NULL && strcmp(busy_run, run->id) == 0)
		return;
	c.sr = saga_load(run);
	c.task = task;
	busy_call(run->id, finished_work, &c);
}

static void
cancel_work(void *arg)
{
	SagaRun    *sr = arg;

	sr->run->error = "cancelled";
	switch_to_undo(sr);
	saga_finish(sr);
}

/* cancel_run of a saga: it compensates, and ends cancelled when undone. */
static const char *
saga_cancel(TaskqRun *run)
{
	SagaRun    *sr;

	if (taskq_run_status_finished(run->status) || run->status == TASKQ_RUN_UNDOING)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run \"%s\" is already %s", run->id,
						taskq_run_status_label(run->status))));
	sr = saga_load(run);
	busy_call(run->id, cancel_work, sr);
	return taskq_run_status_label(run->status);
}

static const TaskqWorkflowKind saga_kind = {
	"saga", saga_step_returned, saga_step_finished, saga_cancel
};

void
taskq_saga_init(void)
{
	taskq_workflow_register_kind(&saga_kind);
}

/* ----------
 * The SQL functions' work
 * ----------
 */
int32
taskq_define_saga(const char *name, Jsonb *def)
{
	taskq_check_definition_name(name, "saga", NULL);
	(void) taskq_saga_parse(def, true);
	return taskq_definition_store(name, "saga", def);
}

/* The step names of a debug setting (fail_at_steps...) must be the saga's. */
static void
check_debug_steps(Jsonb *debug, SagaDef *d, const char *key)
{
	JsonbValue *map = taskq_json_key(debug, key);
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (map == NULL || map->type != jbvBinary)
		return;
	it = JsonbIteratorInit(map->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *step;

		if (tok != WJB_KEY)
			continue;
		step = pnstrdup(v.val.string.val, v.val.string.len);
		if (taskq_saga_step_index(d, step) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("debug setting \"%s\" names unknown step \"%s\"", key, step)));
	}
}

/*
 * Steps of an earlier run with the same id, deleted by hand (retention and
 * purge_finished delete a run's steps with it; there is no foreign key).
 */
static TaskqPlan stale_steps_plan = {
	"DELETE FROM taskq.saga_steps WHERE run OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static void
start_work(void *arg)
{
	SagaRun    *sr = arg;
	Datum		a;

	taskq_run_insert(sr->run);
	a = CStringGetTextDatum(sr->run->id);
	taskq_execute(&stale_steps_plan, &a, NULL, false, 0);
	make_ready(sr);
	saga_finish(sr);
}

char *
taskq_start_saga(const char *saga, const char *id, Jsonb *inputs, Jsonb *debug)
{
	TaskqRun   *run = palloc0(sizeof(TaskqRun));
	SagaRun    *sr = palloc0(sizeof(SagaRun));

	taskq_check_run_id(id, "id");
	taskq_check_json_object(inputs, "inputs");
	if (debug)
		taskq_check_debug(debug, "saga");
	run->id = pstrdup(id);
	run->kind = "saga";
	run->definition = pstrdup(saga);
	run->def = taskq_definition_latest(saga, "saga", &run->version);
	run->status = TASKQ_RUN_RUNNING;
	run->context = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")));
	run->inputs = inputs;
	run->debug = debug;
	sr->run = run;
	sr->d = taskq_saga_parse(run->def, false);
	sr->st = palloc0(sizeof(StepState) * sr->d->nsteps);
	if (debug)
	{
		check_debug_steps(debug, sr->d, "fail_at_steps");
		check_debug_steps(debug, sr->d, "undo_fail_at_steps");
	}
	taskq_run_lock(id);
	busy_call(id, start_work, sr);
	return run->id;
}

static void
not_a_step(const char *task_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("task \"%s\" is not a step of a saga", task_id),
			 errhint("return_step takes a task a worker owns for a do or undo of a saga's step.")));
}

static SagaResult
parse_result(const char *result)
{
	for (int r = RESULT_SUCCESS; r <= RESULT_RERUN; r++)
		if (strcmp(result, result_names[r]) == 0)
			return (SagaResult) r;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown step result \"%s\"", result),
			 errhint("A step returns success, retry, fatal, wait or rerun.")));
	return RESULT_FATAL;		/* keep compiler quiet */
}

void
taskq_saga_return_step(const char *task_id, pg_uuid_t *token, const char *result,
					   Jsonb *working, const char *error)
{
	char	   *id;
	StepReturn	r = {0};
	ReturnCall	c;

	r.result = parse_result(result);
	if (working)
		taskq_check_json_object(working, "working");
	id = taskq_run_of_task(task_id);
	if (id == NULL)
		not_a_step(task_id);
	taskq_run_lock(id);
	c.sr = saga_fetch(id);
	if (c.sr == NULL)
		not_a_step(task_id);
	r.task_id = task_id;
	r.token = token;
	r.working = working;
	r.error = error;
	r.caller = "return_step";
	c.r = &r;
	busy_call(id, return_work, &c);
}

typedef struct ResumeCall
{
	SagaRun    *sr;
	Jsonb	   *working;
} ResumeCall;

static void
resume_work(void *arg)
{
	ResumeCall *c = arg;

	merge_working(c->sr->run, c->working);
	taskq_run_set_status(c->sr->run, TASKQ_RUN_RUNNING);
	make_ready(c->sr);
	saga_finish(c->sr);
}

void
taskq_saga_resume(const char *id, Jsonb *working)
{
	TaskqRun   *run;
	ResumeCall	c;

	if (working)
		taskq_check_json_object(working, "working");
	run = taskq_run_get(id);
	if (strcmp(run->kind, "saga") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run \"%s\" is a state machine, not a saga", id),
				 errhint("A state machine in a waiting state moves on send_event.")));
	if (run->status != TASKQ_RUN_WAITING)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run \"%s\" is %s, not waiting", id, taskq_run_status_label(run->status))));
	c.sr = saga_load(run);
	c.working = working;
	busy_call(id, resume_work, &c);
}
