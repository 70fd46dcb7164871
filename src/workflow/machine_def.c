/*-------------------------------------------------------------------------
 *
 * machine_def.c
 *	  A state machine's definition: its JSON parsed into C, and checked
 *	  whole when define_machine stores it (every error names the state or
 *	  event, SQLSTATE 22023).
 *
 * A stored definition was checked when it was stored and never changes,
 * so the steps parse it without the checks.  What every kind's definition
 * checks alike (names, keys, integers, retry policies) is def_common.c's.
 * No locking: pure functions.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/float.h"

#include "workflow/def_common.h"
#include "workflow/json.h"
#include "workflow/machine_def.h"
#include "workflow/run.h"

static char *
req_string(JsonbValue *v, const char *key, const char *state)
{
	char	   *s = taskq_json_text(v);

	if (s == NULL)
		taskq_def_bad(psprintf("key \"%s\" of state \"%s\" must be a string", key, state), NULL);
	return s;
}

static bool
opt_bool(JsonbContainer *obj, const char *key, const char *state, bool check)
{
	JsonbValue *v = taskq_json_container_key(obj, key);

	if (v == NULL || v->type == jbvNull)
		return false;
	if (v->type != jbvBool)
	{
		if (check)
			taskq_def_bad(psprintf("key \"%s\" of state \"%s\" must be true or false", key, state), NULL);
		return false;
	}
	return v->val.boolean;
}

static Jsonb *
opt_retry(JsonbContainer *obj, const char *where, bool check)
{
	return taskq_def_opt_retry(obj, "retry", where, check);
}

static const char *const state_keys[] = {
	"name", "action", "initial", "final", "transitions", "continuation",
	"fan_in", "max_tries", "retry", "priority", "child", "timeout", "on_timeout", "map", NULL
};
static const char *const map_keys[] = {"items", "action", "max_parallel", NULL};
static const char *const machine_keys[] = {"states", "max_tries", "retry", NULL};
static const char *const transition_keys[] = {"event", "to", "after", NULL};

static void
parse_transitions(JsonbValue *v, TaskqMachineState *s, bool check)
{
	JsonbIterator *it;
	JsonbValue	elem;
	JsonbIteratorToken tok;
	int			cap = 4;

	s->transitions = palloc(sizeof(TaskqMachineTransition) * cap);
	if (v == NULL || v->type == jbvNull)
		return;
	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
	{
		if (check)
			taskq_def_bad(psprintf("key \"transitions\" of state \"%s\" must be an array", s->name), NULL);
		return;
	}
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
	{
		TaskqMachineTransition *t;
		char	   *where;

		if (tok != WJB_ELEM)
			continue;
		if (elem.type != jbvBinary || !JsonContainerIsObject(elem.val.binary.data))
			taskq_def_bad(psprintf("each transition of state \"%s\" must be an object", s->name), NULL);
		where = psprintf("a transition of state \"%s\"", s->name);
		if (check)
			taskq_def_check_keys(elem.val.binary.data, transition_keys, where);
		if (s->ntransitions == cap)
		{
			cap *= 2;
			s->transitions = repalloc(s->transitions, sizeof(TaskqMachineTransition) * cap);
		}
		t = &s->transitions[s->ntransitions++];
		t->event = taskq_json_text(taskq_json_container_key(elem.val.binary.data, "event"));
		t->to = taskq_json_text(taskq_json_container_key(elem.val.binary.data, "to"));
		t->to_index = -1;
		t->after = taskq_def_opt_interval(elem.val.binary.data, "after", !check ? NULL :
										  psprintf("transition \"%s\" of state \"%s\"",
												   t->event ? t->event : "(none)", s->name), check);
		if (check)
		{
			if (t->event == NULL)
				taskq_def_bad(psprintf("a transition of state \"%s\" has no \"event\" string", s->name), NULL);
			if (t->to == NULL)
				taskq_def_bad(psprintf("transition \"%s\" of state \"%s\" has no \"to\" string",
							 t->event, s->name), NULL);
			taskq_check_definition_name(t->event, "event",
										psprintf("In state \"%s\".", s->name));
			for (int i = 0; i < s->ntransitions - 1; i++)
				if (strcmp(s->transitions[i].event, t->event) == 0)
					taskq_def_bad(psprintf("state \"%s\" has two transitions on event \"%s\"",
								 s->name, t->event), NULL);
		}
	}
}

/*
 * A child state: action null, no continuation, fan-in or final; it leaves
 * only on its child's end, so child_succeeded is required and no other
 * event than child_succeeded and child_failed may move it.
 */
static void
check_child_state(TaskqMachineState *s)
{
	const char *hint = "A child state has action null and moves on child_succeeded or child_failed.";

	if (s->action != NULL)
		taskq_def_bad(psprintf("child state \"%s\" must have action null", s->name), hint);
	if (s->map_action != NULL)
		taskq_def_bad(psprintf("state \"%s\" cannot be both a child and a map state", s->name), hint);
	if (s->continuation || s->fan_in > 0 || s->final)
		taskq_def_bad(psprintf("child state \"%s\" cannot be a continuation, fan-in or final state",
							   s->name), hint);
	if (taskq_machine_find_transition(s, "child_succeeded") == NULL)
		taskq_def_bad(psprintf("child state \"%s\" has no transition on event \"child_succeeded\"",
							   s->name), hint);
	for (int i = 0; i < s->ntransitions; i++)
		if (strcmp(s->transitions[i].event, "child_succeeded") != 0 &&
			strcmp(s->transitions[i].event, "child_failed") != 0)
			taskq_def_bad(psprintf("child state \"%s\" cannot move on event \"%s\"",
								   s->name, s->transitions[i].event), hint);
}

/*
 * A map state's "map": {"items", "action", "max_parallel"}; its state has
 * action null, leaves with "mapped" (required) or "map_failed" only, and is
 * neither final, a continuation nor a fan-in state.
 */
static void
parse_map(JsonbContainer *obj, TaskqMachineState *s, bool check)
{
	JsonbValue *v = taskq_json_container_key(obj, "map");
	JsonbContainer *map;
	char	   *where = psprintf("key \"map\" of state \"%s\"", s->name);

	if (v == NULL || v->type == jbvNull)
		return;
	if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		taskq_def_bad(psprintf("%s must be an object", where), NULL);
	map = v->val.binary.data;
	if (check)
		taskq_def_check_keys(map, map_keys, where);
	v = taskq_json_container_key(map, "items");
	s->map_items = v ? taskq_json_text(v) : NULL;
	if (check && (s->map_items == NULL || s->map_items[0] == '\0'))
		taskq_def_bad(psprintf("%s needs \"items\", the context key of an array", where), NULL);
	v = taskq_json_container_key(map, "action");
	s->map_action = v ? taskq_json_text(v) : NULL;
	if (check && (s->map_action == NULL || strlen(s->map_action) == 0 ||
				  strlen(s->map_action) > TASKQ_MAX_ACTION_LEN))
		taskq_def_bad(psprintf("%s needs \"action\", a string of 1 to %d bytes", where,
					 TASKQ_MAX_ACTION_LEN), NULL);
	(void) taskq_def_opt_int(map, "max_parallel", where, &s->map_max_parallel, true, check);
	if (!check)
		return;
	if (s->action != NULL)
		taskq_def_bad(psprintf("map state \"%s\" must have action null", s->name),
			"Its items are tasks of the map's own action.");
	if (s->final || s->continuation || s->fan_in > 0)
		taskq_def_bad(psprintf("map state \"%s\" cannot be final, a continuation or a fan-in state",
					 s->name), NULL);
	if (taskq_machine_find_transition(s, TASKQ_MAP_MAPPED) == NULL)
		taskq_def_bad(psprintf("map state \"%s\" needs a transition on event \"mapped\"", s->name), NULL);
	for (int i = 0; i < s->ntransitions; i++)
		if (strcmp(s->transitions[i].event, TASKQ_MAP_MAPPED) != 0 &&
			strcmp(s->transitions[i].event, TASKQ_MAP_FAILED) != 0)
			taskq_def_bad(psprintf("map state \"%s\" moves on \"mapped\" and \"map_failed\" only, not on \"%s\"",
						 s->name, s->transitions[i].event), NULL);
}

static void
parse_state(JsonbContainer *obj, TaskqMachineState *s, int index, bool check)
{
	JsonbValue *v;
	char	   *where;

	v = taskq_json_container_key(obj, "name");
	if (check && (v == NULL || v->type != jbvString))
		taskq_def_bad(psprintf("state %d of the machine has no \"name\" string", index + 1), NULL);
	s->name = taskq_json_text(v);
	if (check)
	{
		taskq_check_definition_name(s->name, "state", NULL);
		taskq_def_check_keys(obj, state_keys, psprintf("state \"%s\"", s->name));
	}
	where = psprintf("state \"%s\"", s->name);

	v = taskq_json_container_key(obj, "action");
	if (check && v == NULL)
		taskq_def_bad(psprintf("state \"%s\" has no \"action\"", s->name),
			"Give the action workers claim, or null for a state that waits for send_event.");
	s->action = (v == NULL || v->type == jbvNull) ? NULL : req_string(v, "action", s->name);
	if (check && s->action && (strlen(s->action) == 0 || strlen(s->action) > TASKQ_MAX_ACTION_LEN))
		taskq_def_bad(psprintf("action of state \"%s\" must be 1 to %d bytes long", s->name,
					 TASKQ_MAX_ACTION_LEN), NULL);
	s->initial = opt_bool(obj, "initial", s->name, check);
	s->final = opt_bool(obj, "final", s->name, check);
	s->continuation = opt_bool(obj, "continuation", s->name, check);
	s->fan_in = 0;
	v = taskq_json_container_key(obj, "fan_in");
	if (v != NULL && v->type != jbvNull)
	{
		if (v->type != jbvNumeric)
			taskq_def_bad(psprintf("key \"fan_in\" of state \"%s\" must be a number of seconds", s->name), NULL);
		s->fan_in = DatumGetFloat8(DirectFunctionCall1(numeric_float8,
													   NumericGetDatum(v->val.numeric)));
		if (check && !(s->fan_in > 0 && s->fan_in <= 86400.0 * 365))
			taskq_def_bad(psprintf("key \"fan_in\" of state \"%s\" must be a number of seconds greater than zero",
						 s->name), NULL);
	}
	s->has_max_tries = taskq_def_opt_int(obj, "max_tries", where, &s->max_tries, true, check);
	s->retry = opt_retry(obj, where, check);
	s->priority = 0;
	(void) taskq_def_opt_int(obj, "priority", where, &s->priority, false, check);
	parse_transitions(taskq_json_container_key(obj, "transitions"), s, check);
	taskq_machine_parse_timeout(obj, s, check);
	parse_map(obj, s, check);

	/* a child state: it starts a child run and moves when that run ends */
	if (taskq_def_opt_child(obj, where, &s->child_kind, &s->child_name, check) && check)
		check_child_state(s);
	if (check && s->action == NULL && s->child_name == NULL && s->map_action == NULL)
	{
		if (s->continuation)
			taskq_def_bad(psprintf("waiting state \"%s\" cannot be a continuation", s->name),
				"A state with action null has no worker to continue it.");
		if (s->fan_in > 0)
			taskq_def_bad(psprintf("waiting state \"%s\" cannot be a fan-in state", s->name), NULL);
		if (s->final)
			taskq_def_bad(psprintf("waiting state \"%s\" cannot be final", s->name),
				"A state with action null leaves only by an event.");
	}
	if (check && !s->final && s->ntransitions == 0)
		taskq_def_bad(psprintf("state \"%s\" is not final and has no transitions", s->name), NULL);
}

int
taskq_machine_state_index(TaskqMachineDef *m, const char *name)
{
	for (int i = 0; i < m->nstates; i++)
		if (strcmp(m->states[i].name, name) == 0)
			return i;
	return -1;
}

TaskqMachineTransition *
taskq_machine_find_transition(TaskqMachineState *s, const char *event)
{
	for (int i = 0; i < s->ntransitions; i++)
		if (strcmp(s->transitions[i].event, event) == 0)
			return &s->transitions[i];
	return NULL;
}

/*
 * Parse a machine's JSON; with check, every rule of a definition is
 * checked (22023 naming the state or event).
 */
TaskqMachineDef *
taskq_machine_parse(Jsonb *def, bool check)
{
	TaskqMachineDef *m = palloc0(sizeof(TaskqMachineDef));
	JsonbValue *states;
	JsonbIterator *it;
	JsonbValue	elem;
	JsonbIteratorToken tok;
	int			cap = 8;
	int			ninitial = 0,
				nfinal = 0;

	if (check)
	{
		if (!JB_ROOT_IS_OBJECT(def) || JB_ROOT_IS_SCALAR(def))
			taskq_def_bad("a state machine definition must be a JSON object", NULL);
		taskq_def_check_keys(&def->root, machine_keys, "the machine");
	}
	m->has_max_tries = taskq_def_opt_int(&def->root, "max_tries", "the machine", &m->max_tries, true, check);
	m->retry = opt_retry(&def->root, "the machine", check);
	states = taskq_json_key(def, "states");
	if (states == NULL || states->type != jbvBinary ||
		!JsonContainerIsArray(states->val.binary.data))
		taskq_def_bad("a state machine definition needs \"states\", an array of states", NULL);

	m->states = palloc0(sizeof(TaskqMachineState) * cap);
	it = JsonbIteratorInit(states->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM)
			continue;
		if (elem.type != jbvBinary || !JsonContainerIsObject(elem.val.binary.data))
			taskq_def_bad(psprintf("state %d of the machine must be an object", m->nstates + 1), NULL);
		if (m->nstates == cap)
		{
			cap *= 2;
			m->states = repalloc(m->states, sizeof(TaskqMachineState) * cap);
		}
		memset(&m->states[m->nstates], 0, sizeof(TaskqMachineState));
		parse_state(elem.val.binary.data, &m->states[m->nstates], m->nstates, check);
		if (check)
			for (int i = 0; i < m->nstates; i++)
				if (strcmp(m->states[i].name, m->states[m->nstates].name) == 0)
					taskq_def_bad(psprintf("state \"%s\" is defined twice", m->states[i].name), NULL);
		if (m->states[m->nstates].initial)
		{
			m->initial = m->nstates;
			ninitial++;
		}
		nfinal += m->states[m->nstates].final;
		m->nstates++;
	}

	for (int i = 0; i < m->nstates; i++)
		for (int t = 0; t < m->states[i].ntransitions; t++)
		{
			TaskqMachineTransition *tr = &m->states[i].transitions[t];

			tr->to_index = taskq_machine_state_index(m, tr->to);
			if (check && tr->to_index < 0)
				taskq_def_bad(psprintf("transition \"%s\" of state \"%s\" goes to unknown state \"%s\"",
							 tr->event, m->states[i].name, tr->to), NULL);
		}

	if (!check)
		return m;
	if (m->nstates == 0)
		taskq_def_bad("a state machine needs at least one state", NULL);
	if (ninitial != 1)
		taskq_def_bad(psprintf("a state machine needs exactly one initial state, not %d", ninitial), NULL);
	if (nfinal == 0)
		taskq_def_bad("a state machine needs at least one final state", NULL);
	taskq_machine_check_timers(m);

	/* every state reachable from the initial one */
	{
		bool	   *seen = palloc0(sizeof(bool) * m->nstates);
		int		   *stack = palloc(sizeof(int) * m->nstates);
		int			top = 0;

		seen[m->initial] = true;
		stack[top++] = m->initial;
		while (top > 0)
		{
			TaskqMachineState *s = &m->states[stack[--top]];

			for (int t = 0; t < s->ntransitions; t++)
				if (!seen[s->transitions[t].to_index])
				{
					seen[s->transitions[t].to_index] = true;
					stack[top++] = s->transitions[t].to_index;
				}
		}
		for (int i = 0; i < m->nstates; i++)
			if (!seen[i])
				taskq_def_bad(psprintf("state \"%s\" cannot be reached from initial state \"%s\"",
							 m->states[i].name, m->states[m->initial].name), NULL);
	}
	return m;
}
