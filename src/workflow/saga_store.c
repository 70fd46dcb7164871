/*-------------------------------------------------------------------------
 *
 * saga_store.c
 *	  A saga run as stored: the run's row (the columns a saga uses) and its
 *	  steps' rows in taskq.saga_steps, read into a TaskqSagaRun in one statement
 *	  and written back in one; and the tasks of the dos and undos a piece
 *	  of work made ready, inserted when it is done.
 *
 * taskq.saga_steps holds, per run and started step, its current do task
 * and undo task and their states (saga.c's banner has the states); the
 * working map is the run's context.  No foreign key ties the steps to the
 * run: retention and purge_finished delete them with it.
 *
 * Locking: the caller holds the run's lock (run.c), so nothing else reads
 * or writes these rows meanwhile; the statements take no lock of their own
 * beyond the rows they write.  The statements find rows by key at any size
 * of the tables (taskq's statements are planned without sequential scans,
 * common/plan.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"

#include "common/plan.h"
#include "queue/queue.h"
#include "workflow/def_common.h"
#include "workflow/json.h"
#include "workflow/saga_run.h"

static const char *const do_labels[] = {NULL, "ready", "succeeded", "failed", "skipped"};
static const char *const undo_labels[] = {NULL, "ready", "succeeded", "failed", "none"};

static TaskqPlan steps_plan = {
	"SELECT step, do_task, do_state, undo_task, undo_state FROM taskq.saga_steps"
	" WHERE run OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/*
 * return_step's one read: the run, the xmin of its definition's row (for
 * the parsed definitions kept by definitions.c) and its steps (as arrays,
 * in the order of the primary key), in one statement.
 */
static TaskqPlan fetch_plan = {
	"SELECT r.kind, r.definition, r.version, r.status, r.context, r.inputs, r.error,"
	"       r.debug, r.visits, r.faults,"
	"       (SELECT d.xmin FROM taskq.definitions AS d"
	"         WHERE d.name OPERATOR(pg_catalog.=) r.definition"
	"           AND d.version OPERATOR(pg_catalog.=) r.version),"
	"       s.steps, s.do_tasks, s.do_states, s.undo_tasks, s.undo_states, r.parent"
	"  FROM taskq.runs AS r"
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

static void *
parse_saga(Jsonb *def)
{
	return taskq_saga_parse(def, false);
}

TaskqSagaRun *
taskq_saga_new(TaskqRun *run)
{
	TaskqSagaRun *sr = palloc0(sizeof(TaskqSagaRun));

	sr->run = run;
	sr->d = taskq_definition_parsed(run, parse_saga);
	sr->st = palloc0(sizeof(TaskqStepState) * sr->d->nsteps);
	return sr;
}

/* Record one row of taskq.saga_steps in sr. */
static void
saga_load_step(TaskqSagaRun *sr, const char *step, char *do_task, const char *do_state,
			   char *undo_task, const char *undo_state)
{
	int			i = taskq_saga_step_index(sr->d, step);
	TaskqStepState *s;

	if (i < 0)
		return;
	s = &sr->st[i];
	s->do_task = do_task;
	s->do_state = label_index(do_labels, lengthof(do_labels), do_state);
	s->undo_task = undo_task;
	s->undo_state = label_index(undo_labels, lengthof(undo_labels), undo_state);
}

/* The steps of a run fetched by the seam (run.c). */
TaskqSagaRun *
taskq_saga_load(TaskqRun *run)
{
	TaskqSagaRun *sr = taskq_saga_new(run);
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
TaskqSagaRun *
taskq_saga_fetch(const char *id)
{
	Datum		arg = CStringGetTextDatum(id);
	TaskqRun   *run;
	TaskqSagaRun *sr;
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
	run->def_xmin = DatumGetTransactionId(taskq_get_datum(0, 11, NULL));
	run->parent = taskq_get_text(0, 17, NULL);
	n = get_texts(12, &cols[0]);
	for (int c = 1; c < 5; c++)
		(void) get_texts(13 + c - 1, &cols[c]);
	sr = taskq_saga_new(run);
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
void
taskq_saga_finish(TaskqSagaRun *sr)
{
	TaskqRun   *run = sr->run;
	int			n = sr->d->nsteps;
	const char **cols[5];
	int			m = 0;
	Datum		values[12];
	char		nulls[12];
	bool		ended;

	if (sr->specs != NIL)
	{
		(void) taskq_insert(sr->specs, TASKQ_INSERT_PLAIN, NIL, NIL, NULL);
		sr->specs = NIL;
	}
	for (int c = 0; c < 5; c++)
		cols[c] = palloc(sizeof(char *) * n);
	for (int i = 0; i < n; i++)
	{
		TaskqStepState *s = &sr->st[i];

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
	ended = run->finish_now;
	taskq_execute(&save_plan, values, nulls, false, 0);
	run->finish_now = false;
	if (ended)
		taskq_run_ended(run);	/* children, parent: run_child.c */
}

/* ----------
 * Step tasks
 * ----------
 */



/* The body of a do or undo task of step i. */
static Jsonb *
step_body(TaskqSagaRun *sr, int i, bool undo)
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
char *
taskq_saga_add_step_task(TaskqSagaRun *sr, int i, bool undo)
{
	TaskqSagaDef *d = sr->d;
	TaskqSagaStep *s = &d->steps[i];
	TaskqTaskSpec *spec;

	if (!undo && s->child_name)
		return taskq_saga_child_start(sr, i);	/* a child step: its run's id */
	spec = palloc0(sizeof(TaskqTaskSpec));
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
