/*-------------------------------------------------------------------------
 *
 * debug.c
 *	  The debug settings of a run (start_machine's and start_saga's debug
 *	  argument): checked when the run starts, and the fault injection they
 *	  ask for (restart_each_step, fail_at_steps, ...), each fault injected
 *	  once per run and step and noted in the run's faults.
 *
 * No locking of its own: the caller holds the run's lock (run.c), and the
 * faults are written with the run (taskq_run_store).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"

#include "workflow/debug.h"
#include "workflow/def_common.h"
#include "workflow/json.h"

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
