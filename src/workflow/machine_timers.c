/*-------------------------------------------------------------------------
 *
 * machine_timers.c
 *	  Time in state machines: a transition's "after" (the next state's
 *	  task is inserted with not_before that much after the transition) and
 *	  a waiting state's "timeout" / "on_timeout" (the run moves on
 *	  on_timeout as though send_event had been called, its context with
 *	  the key "timeout" over it, unless an event moved it first).  The
 *	  definition's keys are parsed and checked here for machine_def.c; the
 *	  run's side is called by machine.c.
 *
 * A delayed task is an ordinary task with not_before: the queue's delayed
 * tasks, its waiting claims and the worker's sleep already handle it, and
 * the run shows the new state at once.  A timeout is a row of
 * taskq.run_timers (run_timers.c), written in the transaction that enters
 * the waiting state: a later visit of the same state replaces it (one
 * timeout per run), and the worker fires it only if, under the run's lock,
 * the row is still due and the run still waits in that state, so exactly
 * one of the timeout and an event moves the run.
 *
 * Locking: the caller holds the run's lock (run.c); the timer row is
 * written under it.  No locking of its own otherwise: pure functions.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "workflow/def_common.h"
#include "workflow/json.h"
#include "workflow/timers.h"
#include "workflow/workflow.h"

/* ----------
 * Definitions
 * ----------
 */

/*
 * interval_in, in a subtransaction: NULL (after the error is flushed) if it
 * refused, or if the interval is not positive or takes the clock past the
 * end of time.
 */
static Interval *
interval_or_null(const char *text)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	Interval   *result = NULL;
	Interval	zero;

	memset(&zero, 0, sizeof(zero));
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		result = DatumGetIntervalP(DirectFunctionCall3(interval_in, CStringGetDatum(text),
													   ObjectIdGetDatum(InvalidOid),
													   Int32GetDatum(-1)));
		if (DatumGetBool(DirectFunctionCall2(interval_le, IntervalPGetDatum(result),
											 IntervalPGetDatum(&zero))) ||
			TIMESTAMP_NOT_FINITE(taskq_machine_after_time(result)))
			result = NULL;
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		result = NULL;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return result;
}

/*
 * The interval under key of obj (a string such as "5 minutes"), or NULL if
 * absent or null; with check, 22023 naming where unless it is a positive
 * interval.  A stored definition was checked: it parses without the
 * subtransaction.
 */
Interval *
taskq_def_opt_interval(JsonbContainer *obj, const char *key, const char *where, bool check)
{
	JsonbValue *v = taskq_json_container_key(obj, key);
	Interval   *i;

	if (v == NULL || v->type == jbvNull)
		return NULL;
	if (v->type != jbvString)
	{
		if (check)
			taskq_def_bad(psprintf("key \"%s\" of %s must be an interval string such as \"5 minutes\"",
								   key, where), NULL);
		return NULL;
	}
	if (!check)
		return DatumGetIntervalP(DirectFunctionCall3(interval_in,
													 CStringGetDatum(taskq_json_text(v)),
													 ObjectIdGetDatum(InvalidOid),
													 Int32GetDatum(-1)));
	i = interval_or_null(taskq_json_text(v));
	if (i == NULL)
		taskq_def_bad(psprintf("key \"%s\" of %s must be a positive interval, not \"%s\"",
							   key, where, taskq_json_text(v)), NULL);
	return i;
}

/* A state's "timeout" and "on_timeout" (checked whole by check_timers). */
void
taskq_machine_parse_timeout(JsonbContainer *obj, TaskqMachineState *s, bool check)
{
	JsonbValue *v;

	s->timeout = taskq_def_opt_interval(obj, "timeout", psprintf("state \"%s\"", s->name), check);
	v = taskq_json_container_key(obj, "on_timeout");
	s->on_timeout = (v == NULL || v->type == jbvNull) ? NULL : taskq_json_text(v);
	if (check && v != NULL && v->type != jbvNull && v->type != jbvString)
		taskq_def_bad(psprintf("key \"on_timeout\" of state \"%s\" must be an event name", s->name),
					  NULL);
}

void
taskq_machine_no_after_into(TaskqMachineDef *m, int si, const char *what)
{
	for (int i = 0; i < m->nstates; i++)
		for (int t = 0; t < m->states[i].ntransitions; t++)
		{
			TaskqMachineTransition *tr = &m->states[i].transitions[t];

			if (tr->to_index == si && tr->after != NULL)
				taskq_def_bad(psprintf("transition \"%s\" of state \"%s\" has \"after\", but goes into %s \"%s\"",
									   tr->event, m->states[i].name, what, m->states[si].name),
							  "\"after\" delays the next state's task: only a state with an action of its own has one.");
		}
}

/*
 * The rules of the timer keys over the whole machine (its transitions'
 * targets resolved): "after" only into a state with a task of its own
 * (not a waiting, child, map or fan-in state);
 * "timeout" and "on_timeout" both or neither, only in a waiting state,
 * on_timeout one of its events.
 */
void
taskq_machine_check_timers(TaskqMachineDef *m)
{
	for (int i = 0; i < m->nstates; i++)
	{
		TaskqMachineState *s = &m->states[i];

		bool		waits = s->action == NULL && s->child_name == NULL && s->map_action == NULL;

		if (s->child_name != NULL)
			taskq_machine_no_after_into(m, i, "child state");
		else if (s->map_action != NULL)
			taskq_machine_no_after_into(m, i, "map state");
		else if (s->action == NULL)
			taskq_machine_no_after_into(m, i, "waiting state");
		else if (s->fan_in > 0)
			taskq_machine_no_after_into(m, i, "fan-in state");
		if ((s->timeout == NULL) != (s->on_timeout == NULL))
			taskq_def_bad(psprintf("state \"%s\" must have both \"timeout\" and \"on_timeout\", or neither",
								   s->name), NULL);
		if (s->timeout == NULL)
			continue;
		if (!waits)
			taskq_def_bad(psprintf("state \"%s\" has a timeout, but is not a waiting state", s->name),
						  "Only a waiting state (action null, no child or map) waits for an event; a step's time is its lease.");
		if (taskq_machine_find_transition(s, s->on_timeout) == NULL)
			taskq_def_bad(psprintf("on_timeout \"%s\" of state \"%s\" is not one of its events",
								   s->on_timeout, s->name), NULL);
	}
}

/* ----------
 * Runs
 * ----------
 */

/* When a task delayed by a transition's "after" becomes ready. */
TimestampTz
taskq_machine_after_time(const Interval *after)
{
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
												   TimestampTzGetDatum(GetCurrentTimestamp()),
												   IntervalPGetDatum(after)));
}

/* The run (locked) waits in state s, which has a timeout: its timer for this visit. */
void
taskq_machine_timeout_set(TaskqRun *run, TaskqMachineState *s)
{
	taskq_run_timer_set(run->id, "timeout", s->name, taskq_machine_after_time(s->timeout));
}

static void *
parse_machine(Jsonb *def)
{
	return taskq_machine_parse(def, false);
}

/*
 * The context a fired timeout moves the run with: the run's own, with the
 * key "timeout" = {"state", "after" (the state's timeout, an ISO 8601
 * duration), "due" (when the timer was due, ISO 8601)} over it, as a
 * child's outcome goes under "child".
 */
static Jsonb *
timeout_context(TaskqRun *run, TaskqMachineState *s, TimestampTz due)
{
	JsonbParseState *st = NULL;
	char		buf[MAXDATELEN + 1];
	struct pg_itm itm;
	Jsonb	   *one;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	taskq_json_push_key(&st, "timeout");
	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	taskq_json_push_text(&st, "state", s->name);
	/* ISO 8601, as "due" is: the same text whatever the session's styles */
	interval2itm(*s->timeout, &itm);
	EncodeInterval(&itm, INTSTYLE_ISO_8601, buf);
	taskq_json_push_text(&st, "after", pstrdup(buf));	/* kept until the end */
	taskq_json_push_text(&st, "due",
						 pstrdup(JsonEncodeDateTime(buf, TimestampTzGetDatum(due),
													TIMESTAMPTZOID, NULL)));
	pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	one = JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_OBJECT, NULL));
	return DatumGetJsonbP(DirectFunctionCall2(jsonb_concat, JsonbPGetDatum(run->context),
											  JsonbPGetDatum(one)));
}

/*
 * The timeout of the run's visit of state, due at due, came (run_timers.c,
 * the run locked, its row fetched with that lock): if the run still waits
 * there, it moves on on_timeout as send_event would move it, with the
 * timeout under the context key "timeout".
 */
void
taskq_machine_timeout_fire(TaskqRun *run, const char *state, TimestampTz due)
{
	TaskqMachineDef *m;
	int			si;
	bool		isnull;

	if (strcmp(run->kind, "machine") != 0 || run->status != TASKQ_RUN_WAITING ||
		run->state == NULL || strcmp(run->state, state) != 0)
		return;					/* stale: the run moved on */
	m = taskq_definition_parsed(run, parse_machine);
	si = taskq_machine_state_index(m, state);
	if (si < 0 || m->states[si].on_timeout == NULL)
		return;					/* migrated to a version without it */
	/* copied: send_event may parse the definition again, in place of m */
	(void) taskq_machine_send_event(run->id, pstrdup(m->states[si].on_timeout),
									timeout_context(run, &m->states[si], due), &isnull);
}
