/*-------------------------------------------------------------------------
 *
 * saga_def.c
 *	  A saga's definition: its JSON parsed into C, and checked whole when
 *	  define_saga stores it (every error names the step, SQLSTATE 22023):
 *	  names, actions, "after" lists (default: the previous step), trigger
 *	  rules, the retry rules of do and undo, and that the steps make a DAG.
 *	  The reachability of the DAG is computed here once per parse: the
 *	  undo order (saga.c) asks which steps come after which.
 *
 * A stored definition was checked when it was stored and never changes,
 * so the steps parse it without the checks.  No locking: pure functions
 * (what every kind's definition checks alike, retry policies with the
 * queue's own check, is def_common.c's).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"

#include "common/limits.h"
#include "workflow/def_common.h"
#include "workflow/json.h"
#include "workflow/run.h"
#include "workflow/saga_def.h"

static const char *const saga_keys[] = {
	"steps", "max_tries", "retry", "undo_max_tries", "undo_retry", NULL
};
static const char *const step_keys[] = {
	"name", "do", "undo", "after", "trigger", "max_tries", "retry",
	"undo_max_tries", "undo_retry", "child", NULL
};

int
taskq_saga_step_index(TaskqSagaDef *d, const char *name)
{
	for (int i = 0; i < d->nsteps; i++)
		if (strcmp(d->steps[i].name, name) == 0)
			return i;
	return -1;
}

/* An action of a step: a string of 1 to TASKQ_MAX_ACTION_LEN bytes. */
static char *
step_action(JsonbContainer *obj, const char *key, const char *step, bool required,
			bool check)
{
	JsonbValue *v = taskq_json_container_key(obj, key);
	char	   *s;

	if (v == NULL || v->type == jbvNull)
	{
		if (check && required)
			taskq_def_bad(psprintf("step \"%s\" has no \"%s\" action", step, key), NULL);
		return NULL;
	}
	s = taskq_json_text(v);
	if (check && (s == NULL || strlen(s) == 0 || strlen(s) > TASKQ_MAX_ACTION_LEN))
		taskq_def_bad(psprintf("key \"%s\" of step \"%s\" must be an action name of 1 to %d bytes%s",
					 key, step, TASKQ_MAX_ACTION_LEN, required ? "" : ", or null"), NULL);
	return s;
}

static void
parse_trigger(JsonbContainer *obj, TaskqSagaStep *s, bool check)
{
	JsonbValue *v = taskq_json_container_key(obj, "trigger");
	char	   *t;

	if (v == NULL || v->type == jbvNull)
		return;
	t = taskq_json_text(v);
	if (t && strcmp(t, "one_success") == 0)
		s->one_success = true;
	else if (check && t && (strcmp(t, "all_done") == 0 || strcmp(t, "one_failed") == 0))
		taskq_def_bad(psprintf("trigger \"%s\" of step \"%s\" is not allowed in a saga", t, s->name),
			"A failure switches a saga to undo, so such a step could never run: use all_success or one_success.");
	else if (check && (t == NULL || strcmp(t, "all_success") != 0))
		taskq_def_bad(psprintf("key \"trigger\" of step \"%s\" must be \"all_success\" or \"one_success\"",
					 s->name), NULL);
}

/* The names in "after" (resolved to indexes once every step is known). */
static List *
parse_after(JsonbContainer *obj, TaskqSagaStep *s, int index, bool *given, bool check)
{
	JsonbValue *v = taskq_json_container_key(obj, "after");
	JsonbIterator *it;
	JsonbValue	elem;
	JsonbIteratorToken tok;
	List	   *names = NIL;

	*given = v != NULL && v->type != jbvNull;
	if (!*given)
		return NIL;
	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
	{
		if (check)
			taskq_def_bad(psprintf("key \"after\" of step \"%s\" must be an array of step names", s->name),
				NULL);
		return NIL;
	}
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
	{
		char	   *name;

		if (tok != WJB_ELEM)
			continue;
		name = taskq_json_text(&elem);
		if (name == NULL)
		{
			if (check)
				taskq_def_bad(psprintf("key \"after\" of step \"%s\" must be an array of step names",
							 s->name), NULL);
			continue;
		}
		if (check)
		{
			ListCell   *lc;

			foreach(lc, names)
				if (strcmp(lfirst(lc), name) == 0)
				taskq_def_bad(psprintf("step \"%s\" names step \"%s\" twice in \"after\"", s->name, name),
					NULL);
		}
		names = lappend(names, name);
	}
	(void) index;
	return names;
}

static void
parse_step(JsonbContainer *obj, TaskqSagaStep *s, int index, bool check)
{
	JsonbValue *v = taskq_json_container_key(obj, "name");
	char	   *where;

	if (check && (v == NULL || v->type != jbvString))
		taskq_def_bad(psprintf("step %d of the saga has no \"name\" string", index + 1), NULL);
	s->name = taskq_json_text(v);
	if (check)
	{
		taskq_check_definition_name(s->name, "step", NULL);
		taskq_def_check_keys(obj, step_keys, psprintf("step \"%s\"", s->name));
	}
	where = psprintf("step \"%s\"", s->name);
	/* a child step starts a child run instead of a do task */
	if (taskq_def_opt_child(obj, where, &s->child_kind, &s->child_name, check) &&
		check && taskq_json_container_key(obj, "do") != NULL)
		taskq_def_bad(psprintf("step \"%s\" has both \"do\" and \"child\"", s->name),
					  "A child step's run does its work: it has no do action.");
	s->do_action = step_action(obj, "do", s->name, s->child_name == NULL, check);
	s->undo_action = step_action(obj, "undo", s->name, false, check);
	parse_trigger(obj, s, check);
	s->has_max_tries = taskq_def_opt_int(obj, "max_tries", where, &s->max_tries, true, check);
	s->retry = taskq_def_opt_retry(obj, "retry", where, check);
	s->has_undo_max_tries = taskq_def_opt_int(obj, "undo_max_tries", where,
											  &s->undo_max_tries, true, check);
	s->undo_retry = taskq_def_opt_retry(obj, "undo_retry", where, check);
}

/* The steps must make a DAG: a step that comes after itself is on a cycle. */
static void
check_acyclic(TaskqSagaDef *d)
{
	for (int i = 0; i < d->nsteps; i++)
		if (d->reach[i * d->nsteps + i])
			taskq_def_bad(psprintf("step \"%s\" is on a cycle of \"after\"", d->steps[i].name),
				"The steps of a saga must form a directed acyclic graph.");
}

/* reach[i][j]: j comes after i, directly or through other steps. */
static void
compute_reach(TaskqSagaDef *d)
{
	int			n = d->nsteps;
	int		   *stack = palloc(sizeof(int) * (n + 1));

	d->reach = palloc0(sizeof(bool) * n * n);
	for (int i = 0; i < n; i++)
	{
		bool	   *row = &d->reach[i * n];
		int			top = 0;

		stack[top++] = i;
		while (top > 0)
		{
			int			k = stack[--top];

			for (int j = 0; j < n; j++)
				if (!row[j])
					for (int a = 0; a < d->steps[j].nafter; a++)
						if (d->steps[j].after[a] == k)
						{
							row[j] = true;
							stack[top++] = j;
							break;
						}
		}
	}
}

/*
 * Parse a saga's JSON; with check, every rule of a definition is checked
 * (22023 naming the step).
 */
TaskqSagaDef *
taskq_saga_parse(Jsonb *def, bool check)
{
	TaskqSagaDef *d = palloc0(sizeof(TaskqSagaDef));
	JsonbValue *steps;
	JsonbIterator *it;
	JsonbValue	elem;
	JsonbIteratorToken tok;
	List	  **afters;
	bool	   *given;
	int			cap = 8;

	if (check)
	{
		if (!JB_ROOT_IS_OBJECT(def) || JB_ROOT_IS_SCALAR(def))
			taskq_def_bad("a saga definition must be a JSON object", NULL);
		taskq_def_check_keys(&def->root, saga_keys, "the saga");
	}
	d->has_max_tries = taskq_def_opt_int(&def->root, "max_tries", "the saga",
										 &d->max_tries, true, check);
	d->retry = taskq_def_opt_retry(&def->root, "retry", "the saga", check);
	d->has_undo_max_tries = taskq_def_opt_int(&def->root, "undo_max_tries", "the saga",
											  &d->undo_max_tries, true, check);
	d->undo_retry = taskq_def_opt_retry(&def->root, "undo_retry", "the saga", check);
	steps = taskq_json_key(def, "steps");
	if (steps == NULL || steps->type != jbvBinary ||
		!JsonContainerIsArray(steps->val.binary.data))
		taskq_def_bad("a saga definition needs \"steps\", an array of steps", NULL);

	d->steps = palloc0(sizeof(TaskqSagaStep) * cap);
	afters = palloc0(sizeof(List *) * cap);
	given = palloc0(sizeof(bool) * cap);
	it = JsonbIteratorInit(steps->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
	{
		int			n = d->nsteps;

		if (tok != WJB_ELEM)
			continue;
		if (elem.type != jbvBinary || !JsonContainerIsObject(elem.val.binary.data))
			taskq_def_bad(psprintf("step %d of the saga must be an object", n + 1), NULL);
		if (n == cap)
		{
			cap *= 2;
			d->steps = repalloc(d->steps, sizeof(TaskqSagaStep) * cap);
			afters = repalloc(afters, sizeof(List *) * cap);
			given = repalloc(given, sizeof(bool) * cap);
		}
		memset(&d->steps[n], 0, sizeof(TaskqSagaStep));
		parse_step(elem.val.binary.data, &d->steps[n], n, check);
		afters[n] = parse_after(elem.val.binary.data, &d->steps[n], n, &given[n], check);
		if (check)
			for (int i = 0; i < n; i++)
				if (strcmp(d->steps[i].name, d->steps[n].name) == 0)
					taskq_def_bad(psprintf("step \"%s\" is defined twice", d->steps[i].name), NULL);
		d->nsteps++;
	}
	if (check && d->nsteps == 0)
		taskq_def_bad("a saga needs at least one step", NULL);

	for (int i = 0; i < d->nsteps; i++)
	{
		TaskqSagaStep *s = &d->steps[i];
		ListCell   *lc;

		if (!given[i])
		{
			/* default: the previous step (a linear flight) */
			s->nafter = i > 0 ? 1 : 0;
			s->after = palloc(sizeof(int));
			s->after[0] = i - 1;
			continue;
		}
		s->after = palloc(sizeof(int) * Max(list_length(afters[i]), 1));
		foreach(lc, afters[i])
		{
			int			a = taskq_saga_step_index(d, lfirst(lc));

			if (a < 0)
			{
				if (check)
					taskq_def_bad(psprintf("step \"%s\" comes after unknown step \"%s\"", s->name,
								 (char *) lfirst(lc)), NULL);
				continue;
			}
			s->after[s->nafter++] = a;
		}
	}
	compute_reach(d);
	if (check)
		check_acyclic(d);
	return d;
}
