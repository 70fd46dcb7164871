/*-------------------------------------------------------------------------
 *
 * machine_map.c
 *	  Map states: a state with "map": {"items", "action", "max_parallel"}
 *	  fans out into one task per element of a context array and moves the
 *	  run on "mapped" (or "map_failed") with the items' results in item
 *	  order when the last item finished.
 *
 * Entering the state inserts, in one batch of the queue (taskq_insert), a
 * hidden join task "<run>/<j>" and the items "<run>/<j+1>" ..
 * "<run>/<j+N>" (the run's own task counter, advanced once by N).  Every
 * item names the join as its successor; the join is spontaneous with the
 * trigger rule all_done, so the queue completes it when its last
 * predecessor finished, completed or aborted, in the transaction of that
 * finish (or the worker's fold of deferred signals: a join of more than
 * 64 items takes its signals that way, so no item's completion waits for
 * another's on the join's row).  The join is the run's step_task; its
 * completion reaches machine.c through the seam's finished hook, which
 * gathers the results here (one statement over the item range, in item
 * order) and moves the run.  Exactly one completion of the join exists,
 * so the run moves once however the last items race.
 *
 * max_parallel = k: item i+k waits for item i (an edge, trigger rule
 * all_done).  Each chain i, i+k, i+2k, ... has at most one item ready or
 * in progress, and there are k chains, so at most k items are claimable
 * or held at any moment; the release of the next is decided in the
 * transaction that finishes the previous (the queue's signal), so racing
 * workers cannot exceed it.  A sliding window over the queue's own edges:
 * no limiter lock, no counter row.
 *
 * Items are plain tasks: a worker completes or aborts them with the
 * queue's returns, and the seam passes them by without the run's lock,
 * having read of the run only its status and step task, never the context
 * with the array (taskq_run_task_past_step: a task of a running run
 * numbered past its current step).  transition, continue_machine and the calls that change
 * tasks one by one refuse them (55000).  Cancel and migrate cancel the
 * unfinished items with the join (taskq_map_unfinished), the items
 * detached from the join first: their aborts then signal only the next
 * item of their chain, not the join's row once each.
 *
 * Locking: the run's lock, held by the caller (machine.c), for entry,
 * gathering and cancel; nothing of its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"

#include "common/limits.h"
#include "common/pg_compat.h"
#include "queue/queue.h"
#include "workflow/json.h"
#include "workflow/machine_map.h"

/* The transaction whose map entries fail the run instead of the call. */
static LocalTransactionId soft_lxid = InvalidLocalTransactionId;

/*
 * Entries of map states from here on in this transaction are not a
 * caller's (a finished hook moving the run): a context without the array
 * fails the run instead of the call.  Returns whether it was on.
 */
bool
taskq_map_soft_entry(bool on)
{
	bool		was = (soft_lxid == TASKQ_MY_LXID);

	soft_lxid = on ? TASKQ_MY_LXID : InvalidLocalTransactionId;
	return was;
}

/* The number after the last '/' of a task id, or -1. */
static int64
task_number(const char *task_id)
{
	const char *slash = strrchr(task_id, '/');
	char	   *end;
	int64		n;

	if (slash == NULL || slash[1] < '0' || slash[1] > '9')
		return -1;
	errno = 0;
	n = strtoll(slash + 1, &end, 10);
	return (*end != '\0' || errno != 0) ? -1 : n;
}

/* The map state the (running) run is in, or NULL. */
static TaskqMachineState *
map_state(TaskqRun *run, TaskqMachineDef *m)
{
	int			si;

	if (run->status != TASKQ_RUN_RUNNING || run->step_task == NULL || run->state == NULL)
		return NULL;
	si = taskq_machine_state_index(m, run->state);
	return (si >= 0 && m->states[si].map_action != NULL) ? &m->states[si] : NULL;
}

/* The items array of the run's context, or NULL. */
static JsonbValue *
items_of(TaskqRun *run, TaskqMachineState *s)
{
	JsonbValue *v = taskq_json_key(run->context, s->map_items);

	if (v == NULL || v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		return NULL;
	return v;
}

static int32
item_count(TaskqRun *run, TaskqMachineState *s)
{
	JsonbValue *v = items_of(run, s);

	return v ? (int32) JsonContainerSize(v->val.binary.data) : 0;
}

/* Is task_id an item of the map state the run is in? */
bool
taskq_map_is_item(TaskqRun *run, TaskqMachineDef *m, const char *task_id)
{
	TaskqMachineState *s = map_state(run, m);

	return s != NULL && taskq_run_task_past_step(run, task_id);
}

/* Is task_id the join of the map state the run is in? */
bool
taskq_map_is_join(TaskqRun *run, TaskqMachineDef *m, const char *task_id)
{
	return map_state(run, m) != NULL && strcmp(run->step_task, task_id) == 0;
}

void
taskq_map_refuse_item(TaskqRun *run, const char *state, const char *task_id, const char *fn)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("task \"%s\" is an item of map state \"%s\" of run \"%s\", not a step",
					task_id, state ? state : "(none)", run->id),
			 errhint("%s does not take map items: return them with return_task and a result.", fn)));
}

/* send_event of a map state's own events: 22023. */
void
taskq_map_check_event(TaskqMachineDef *m, const char *event)
{
	if (event == NULL)
		return;
	for (int i = 0; i < m->nstates; i++)
		if (m->states[i].map_action != NULL &&
			taskq_machine_find_transition(&m->states[i], event) != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("event \"%s\" of map state \"%s\" cannot be sent",
							event, m->states[i].name),
					 errdetail("A map state moves when its last item finished.")));
}

static void
push_int(JsonbParseState **st, const char *key, int64 n)
{
	JsonbValue	v;

	taskq_json_push_key(st, key);
	v.type = jbvNumeric;
	v.val.numeric = DatumGetNumeric(DirectFunctionCall1(int8_numeric, Int64GetDatum(n)));
	pushJsonbValue(st, WJB_VALUE, &v);
}

/* The run fails with error (a map entered or ended by no caller). */
static void
fail_run(TaskqRun *run, const char *error)
{
	run->error = pstrdup(error);
	run->step_task = NULL;
	taskq_run_set_status(run, TASKQ_RUN_FAILED);
}

/* A task spec of the state's tries, retry and priority. */
static TaskqTaskSpec *
new_spec(TaskqRun *run, TaskqMachineDef *m, TaskqMachineState *s, int index, int64 n)
{
	TaskqTaskSpec *spec = palloc0(sizeof(TaskqTaskSpec));

	spec->index = index;
	spec->id = psprintf("%s/" INT64_FORMAT, run->id, n);
	spec->action = s->map_action;
	if (s->has_max_tries || m->has_max_tries)
	{
		spec->has_max_tries = true;
		spec->max_tries = s->has_max_tries ? s->max_tries : m->max_tries;
	}
	spec->retry = s->retry ? s->retry : m->retry;
	spec->priority = s->priority;
	spec->workflow = run->id;
	spec->post_result = true;	/* kept with retention 0 while the run lives */
	spec->trigger = TASKQ_ALL_DONE;
	return spec;
}

/*
 * The run (locked, running) enters map state s: the join and an item per
 * element in one insert.  No array under the items key: 22023 to the
 * caller, or the run fails where no caller entered the state.
 */
TaskqMapEntry
taskq_map_enter(TaskqRun *run, TaskqMachineDef *m, TaskqMachineState *s)
{
	JsonbValue *items = items_of(run, s);
	int32		n;
	int64		j;
	Jsonb	   *rest;
	List	   *specs = NIL;
	TaskqTaskSpec *join;
	JsonbIterator *it;
	JsonbValue	elem;
	JsonbIteratorToken tok;
	int64		i = 0;

	run->step_task = NULL;
	if (items == NULL)
	{
		char	   *msg = psprintf("context key \"%s\" of run \"%s\" is not an array, which map state \"%s\" needs",
								   s->map_items, run->id, s->name);

		if (TASKQ_IS_BACKGROUND_WORKER || soft_lxid == TASKQ_MY_LXID)
		{
			fail_run(run, psprintf("state \"%s\": %s", s->name, msg));
			return TASKQ_MAP_RUN_FAILED;
		}
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s", msg)));
	}
	n = (int32) JsonContainerSize(items->val.binary.data);
	if (n == 0)
	{
		JsonbParseState *st = NULL;

		pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
		taskq_json_push_key(&st, "results");
		pushJsonbValue(&st, WJB_BEGIN_ARRAY, NULL);
		pushJsonbValue(&st, WJB_END_ARRAY, NULL);
		run->context = DatumGetJsonbP(DirectFunctionCall2(jsonb_concat, JsonbPGetDatum(run->context),
														  JsonbPGetDatum(JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_OBJECT, NULL)))));
		return TASKQ_MAP_EMPTY;
	}
	j = (int64) run->visits + 1;
	if (j + n > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("run \"%s\" has made too many tasks for a map of %d items", run->id, n)));
	run->visits = (int32) (j + n);
	run->step_task = psprintf("%s/" INT64_FORMAT, run->id, j);

	join = new_spec(run, m, s, 1, j);
	join->spontaneous = true;	/* completed by the queue when the last item finished */
	join->post_result = false;
	{
		JsonbParseState *st = NULL;

		pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
		taskq_json_push_text(&st, "run", run->id);
		taskq_json_push_text(&st, "state", s->name);
		push_int(&st, "map_items", n);
		join->body = JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_OBJECT, NULL));
	}
	specs = lappend(specs, join);

	/* the context each item sees: the run's, without the array itself */
	rest = DatumGetJsonbP(DirectFunctionCall2(jsonb_delete, JsonbPGetDatum(run->context),
											  CStringGetTextDatum(s->map_items)));
	it = JsonbIteratorInit(items->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
	{
		JsonbParseState *st = NULL;
		TaskqTaskSpec *spec;

		if (tok != WJB_ELEM)
			continue;
		spec = new_spec(run, m, s, (int) i + 2, j + 1 + i);
		pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
		taskq_json_push_text(&st, "run", run->id);
		taskq_json_push_text(&st, "state", s->name);
		push_int(&st, "index", i);
		taskq_json_push_key(&st, "item");
		pushJsonbValue(&st, WJB_VALUE, &elem);
		taskq_json_push_jsonb(&st, "context", rest);
		spec->body = JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_OBJECT, NULL));
		spec->successors = list_make1(join->id);
		if (s->map_max_parallel > 0 && i + s->map_max_parallel < n)
			spec->successors = lappend(spec->successors,
									   psprintf("%s/" INT64_FORMAT, run->id,
												j + 1 + i + s->map_max_parallel));
		specs = lappend(specs, spec);
		i++;
	}
	(void) taskq_insert(specs, TASKQ_INSERT_PLAIN, NIL, NIL, NULL);
	return TASKQ_MAP_STARTED;
}

/*
 * The join of the map state the run is in finished: the results gathered
 * in item order into the context's "results".  Returns the event to move
 * with, or NULL when the run failed (a failed item and no "map_failed",
 * or results too large).
 */
const char *
taskq_map_gather(TaskqRun *run, TaskqMachineState *s)
{
	int64		j = task_number(run->step_task);
	int32		n = item_count(run, s);
	int64		completed = 0;
	int32		first_failed = 0;
	Jsonb	   *results;
	Jsonb	   *context;
	JsonbParseState *st = NULL;

	results = taskq_read_range_results(psprintf("%s/", run->id), (int32) j + 1, (int32) (j + n),
									   &completed, &first_failed);
	if (completed < n && taskq_machine_find_transition(s, TASKQ_MAP_FAILED) == NULL)
	{
		char	   *item = psprintf("%s/%d", run->id, first_failed);
		TaskqTaskView view;
		const char *error = "aborted";

		if (taskq_task_peek(item, 0, &view) && view.status)
			error = view.status;
		fail_run(run, psprintf("state \"%s\": item \"%s\": %s", s->name, item, error));
		return NULL;
	}
	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	taskq_json_push_jsonb(&st, "results", results);
	context = DatumGetJsonbP(DirectFunctionCall2(jsonb_concat, JsonbPGetDatum(run->context),
												 JsonbPGetDatum(JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_OBJECT, NULL)))));
	if (VARSIZE(context) > TASKQ_MAX_BODY_SIZE)
	{
		fail_run(run, "map results too large");
		return NULL;
	}
	run->context = context;
	return completed == n ? TASKQ_MAP_MAPPED : TASKQ_MAP_FAILED;
}

static int
id_cmp(const ListCell *a, const ListCell *b)
{
	return strcmp(lfirst(a), lfirst(b));
}

/*
 * The tasks of the map state the run is in (its items and join), sorted,
 * for cancel_run and migrate_run to cancel (the queue skips the finished
 * ones); NIL if the run is in no map.  The unfinished items are detached
 * from the join first (taskq_detach_join), so that their aborts do not
 * rewrite its row once each.  The run's status may have changed already.
 */
List *
taskq_map_unfinished(TaskqRun *run, TaskqMachineDef *m)
{
	int			si = run->state ? taskq_machine_state_index(m, run->state) : -1;
	List	   *ids = NIL;
	int64		j;
	int32		n;

	if (si < 0 || m->states[si].map_action == NULL || run->step_task == NULL)
		return NIL;
	j = task_number(run->step_task);
	n = item_count(run, &m->states[si]);
	for (int64 i = 1; i <= n; i++)
		ids = lappend(ids, psprintf("%s/" INT64_FORMAT, run->id, j + i));
	list_sort(ids, id_cmp);
	taskq_detach_join(run->step_task, ids);
	ids = lappend(ids, run->step_task);
	list_sort(ids, id_cmp);
	return ids;
}
