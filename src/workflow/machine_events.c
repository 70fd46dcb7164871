/*-------------------------------------------------------------------------
 *
 * machine_events.c
 *	  Events sent to a state machine's run before it waits for them
 *	  (send_event): kept with the run (taskq.runs.events) and taken when it
 *	  enters a waiting state that defines them.
 *
 * The caller holds the run's lock (workflow/run.c); these functions only
 * change the run in memory, which the caller stores.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"

#include "workflow/json.h"
#include "workflow/machine_def.h"
#include "workflow/run.h"

/* Does some waiting state of the machine define event? */
bool
taskq_machine_waiting_event(TaskqMachineDef *m, const char *event)
{
	for (int i = 0; i < m->nstates; i++)
		if (m->states[i].action == NULL && m->states[i].child_name == NULL &&
			m->states[i].map_action == NULL &&
			taskq_machine_find_transition(&m->states[i], event))
			return true;
	return false;
}

void
taskq_machine_keep_event(TaskqRun *run, const char *event, Jsonb *context)
{
	JsonbParseState *st = NULL;
	Jsonb	   *one;

	pushJsonbValue(&st, WJB_BEGIN_ARRAY, NULL);
	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	taskq_json_push_text(&st, "event", event);
	taskq_json_push_jsonb(&st, "context", context);
	pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	one = JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_ARRAY, NULL));
	run->events = run->events == NULL ? one :
		DatumGetJsonbP(DirectFunctionCall2(jsonb_concat, JsonbPGetDatum(run->events),
										   JsonbPGetDatum(one)));
}

/*
 * Of the events kept for the run, take the earliest that waiting state s
 * defines and drop the others it defines.  Returns the event's index in
 * the kept list's JSON (its event and context in *event and *context), or
 * false if there was none.
 */
bool
taskq_machine_take_kept_event(TaskqRun *run, TaskqMachineState *s, char **event, Jsonb **context)
{
	JsonbIterator *it;
	JsonbValue	elem;
	JsonbIteratorToken tok;
	JsonbParseState *st = NULL;
	bool		found = false;
	int			kept = 0;

	if (run->events == NULL)
		return false;
	pushJsonbValue(&st, WJB_BEGIN_ARRAY, NULL);
	it = JsonbIteratorInit(&run->events->root);
	while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
	{
		char	   *e;

		if (tok != WJB_ELEM)
			continue;
		e = taskq_json_text(taskq_json_container_key(elem.val.binary.data, "event"));
		if (e && taskq_machine_find_transition(s, e))
		{
			if (!found)
			{
				JsonbValue *c = taskq_json_container_key(elem.val.binary.data, "context");

				*event = e;
				*context = (c == NULL || c->type == jbvNull) ? NULL : JsonbValueToJsonb(c);
				found = true;
			}
			continue;			/* taken, or dropped */
		}
		pushJsonbValue(&st, WJB_ELEM, &elem);
		kept++;
	}
	if (found)
		run->events = kept == 0 ? NULL :
			JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_ARRAY, NULL));
	return found;
}
