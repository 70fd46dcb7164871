/*-------------------------------------------------------------------------
 *
 * steps.c
 *	  Workflow steps: a state machine's step is finished with transition
 *	  (and continue_machine first, for a continuation), a saga's do or undo
 *	  with return_step, from the JSON object its child printed on standard
 *	  output when it exited 0.
 *
 * A task is a step when its body says so (db.c reads that at the claim: a
 * string "run" whose value prefixes the task's id as "<run>/", and a
 * string "machine" and "state", or "saga" and "step").  What the child may
 * print:
 *
 *	  machine  {"event": "ok" | null, "context": {...} | null,
 *			   "continue": "<cursor>" | null}
 *	  saga     {"result": "success" | "retry" | "fatal" | "wait" | "rerun",
 *			   "working": {...} | null, "error": "..." | null}
 *
 * Every key is optional (no event: null, which ends the run in a final
 * state; no context or working: unchanged; no result: success); any other
 * key, a value of the wrong type, or text that is not one JSON object
 * fails the try: the task is returned pending with a status text that
 * says why.  So does an error of the call itself (22023 for an unknown
 * event, ...), logged with its SQLSTATE; if the task is no longer ours
 * (TQ001) that return fails too and nothing is returned.  Blank output
 * keeps the plain return (main.c): the last line of stderr is the event.
 *
 * No state of its own; called from main.c's loop when a step's child ends.
 *
 *-------------------------------------------------------------------------
 */
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *
dup_or_null(const char *s)
{
	char	   *r;

	if (s == NULL)
		return NULL;
	r = strdup(s);
	if (r == NULL)
	{
		log_msg("out of memory");
		exit(1);
	}
	return r;
}

void
step_info_copy(StepInfo *dst, const StepInfo *src)
{
	dst->kind = src->kind;
	dst->run = dup_or_null(src->run);
	dst->name = dup_or_null(src->name);
	dst->direction = dup_or_null(src->direction);
	dst->cursor = dup_or_null(src->cursor);
	dst->continuation = src->continuation;
	dst->fan_in = src->fan_in;
}

void
step_info_free(StepInfo *s)
{
	free(s->run);
	free(s->name);
	free(s->direction);
	free(s->cursor);
	memset(s, 0, sizeof(*s));
}

/* Did the child print nothing but white space? */
bool
step_output_blank(const Child *c)
{
	for (size_t i = 0; i < c->out_len; i++)
		if (c->out_buf[i] != ' ' && c->out_buf[i] != '\t' &&
			c->out_buf[i] != '\n' && c->out_buf[i] != '\r')
			return false;
	return !c->out_over;
}

/* The try failed before or in the call: give the task back pending, why as its status. */
static void
fail_try(Child *c, const char *why, StepOutcome *out)
{
	char		err[1024];

	if (db_return(c->id, c->token, why, "pending", NULL, err, sizeof(err)))
	{
		out->outcome = "pending";
		snprintf(out->detail, sizeof(out->detail), "%s", why);
	}
	else
	{
		out->outcome = "not-returned";
		snprintf(out->detail, sizeof(out->detail), "%s; then return_task: %s", why, err);
	}
}

/* The member called key, or NULL. */
static const JsonMember *
member(const JsonMember *m, int n, const char *key)
{
	for (int i = 0; i < n; i++)
		if (strcmp(m[i].key, key) == 0)
			return &m[i];
	return NULL;
}

/*
 * Check the members against the keys this kind of step takes: types[i] is
 * the one type besides null that keys[i] may have.  False with the reason
 * in why.
 */
static bool
check_members(const JsonMember *m, int n, const char *const *keys, const JsonType *types,
			  const char *what, char *why, size_t whylen)
{
	for (int i = 0; i < n; i++)
	{
		int			k;

		for (k = 0; keys[k] != NULL; k++)
			if (strcmp(m[i].key, keys[k]) == 0)
				break;
		if (keys[k] == NULL)
		{
			snprintf(why, whylen, "standard output: unknown key \"%s\" (%s)", m[i].key, what);
			return false;
		}
		if (m[i].type != JV_NULL && m[i].type != types[k])
		{
			snprintf(why, whylen, "standard output: \"%s\" must be %s or null, not %s",
					 m[i].key, json_type_name(types[k]), json_type_name(m[i].type));
			return false;
		}
	}
	return true;
}

/* The raw JSON text of an object member, NUL-terminated (malloc'd), or NULL. */
static char *
raw_object(const JsonMember *v)
{
	char	   *s;

	if (v == NULL || v->type != JV_OBJECT)
		return NULL;
	s = malloc(v->raw_len + 1);
	if (s == NULL)
	{
		log_msg("out of memory");
		exit(1);
	}
	memcpy(s, v->raw, v->raw_len);
	s[v->raw_len] = '\0';
	return s;
}

static const char *
str_or_null(const JsonMember *v)
{
	return v != NULL && v->type == JV_STRING ? v->str : NULL;
}

static void
finish_machine(Child *c, const JsonMember *m, int n, StepOutcome *out)
{
	static const char *const keys[] = {"event", "context", "continue", NULL};
	static const JsonType types[] = {JV_STRING, JV_OBJECT, JV_STRING};
	char		why[600];
	char		err[1024];
	const JsonMember *ev = member(m, n, "event");
	const JsonMember *cont = member(m, n, "continue");
	const char *event;
	char	   *context;
	char	   *next = NULL;
	char	   *fork = NULL;
	bool		do_fork;

	if (!check_members(m, n, keys, types,
					   "a state machine's step prints \"event\", \"context\", \"continue\"",
					   why, sizeof(why)))
	{
		fail_try(c, why, out);
		return;
	}
	event = str_or_null(ev);
	context = raw_object(member(m, n, "context"));
	do_fork = cont != NULL && cont->type == JV_STRING;
	if (db_transition(c->id, c->token, event, context, do_fork, str_or_null(cont),
					  &next, &fork, err, sizeof(err)))
	{
		out->outcome = "completed";
		snprintf(out->detail, sizeof(out->detail), "event %s%s%s, %s%s%s%s%s",
				 event ? "\"" : "", event ? event : "null", event ? "\"" : "",
				 next ? "next state " : "run ended", next ? next : "",
				 fork ? " (forked run " : "", fork ? fork : "", fork ? ")" : "");
	}
	else if (db_connected())
	{
		log_msg("task %s: transition failed: %s", c->id, err);
		snprintf(why, sizeof(why), "transition failed: %s", err);
		fail_try(c, why, out);
	}
	else
	{
		out->outcome = "not-returned";
		snprintf(out->detail, sizeof(out->detail), "transition: %s", err);
	}
	free(context);
	free(next);
	free(fork);
}

static void
finish_saga(Child *c, const JsonMember *m, int n, StepOutcome *out)
{
	static const char *const keys[] = {"result", "working", "error", NULL};
	static const JsonType types[] = {JV_STRING, JV_OBJECT, JV_STRING};
	char		why[600];
	char		err[1024];
	const char *result;
	char	   *working;

	if (!check_members(m, n, keys, types,
					   "a saga's step prints \"result\", \"working\", \"error\"",
					   why, sizeof(why)))
	{
		fail_try(c, why, out);
		return;
	}
	result = str_or_null(member(m, n, "result"));
	if (result == NULL)
		result = "success";
	working = raw_object(member(m, n, "working"));
	if (db_return_step(c->id, c->token, result, working, str_or_null(member(m, n, "error")),
					   err, sizeof(err)))
	{
		out->outcome = strcmp(result, "retry") == 0 ? "pending" :
			strcmp(result, "fatal") == 0 ? "aborted" : "completed";
		snprintf(out->detail, sizeof(out->detail), "return_step %s", result);
	}
	else if (db_connected())
	{
		log_msg("task %s: return_step failed: %s", c->id, err);
		snprintf(why, sizeof(why), "return_step failed: %s", err);
		fail_try(c, why, out);
	}
	else
	{
		out->outcome = "not-returned";
		snprintf(out->detail, sizeof(out->detail), "return_step: %s", err);
	}
	free(working);
}

/*
 * A step's child exited 0 and printed something: finish the step from it
 * (or fail the try, saying why).
 */
void
step_finish(Child *c, StepOutcome *out)
{
	JsonMember *m;
	int			n;
	char		err[300];
	char		why[400];

	out->outcome = "not-returned";
	out->detail[0] = '\0';
	if (c->out_over)
	{
		snprintf(why, sizeof(why), "standard output larger than %d bytes", TQW_MAX_STDOUT);
		fail_try(c, why, out);
		return;
	}
	n = json_object_members(c->out_buf, c->out_len, &m, err, sizeof(err));
	if (n < 0)
	{
		snprintf(why, sizeof(why), "standard output is not a JSON object: %s", err);
		fail_try(c, why, out);
		return;
	}
	if (c->step.kind == STEP_MACHINE)
		finish_machine(c, m, n, out);
	else
		finish_saga(c, m, n, out);
	json_members_free(m, n);
}
