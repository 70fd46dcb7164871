/*-------------------------------------------------------------------------
 *
 * retry_policy.c
 *	  A task's retry policy checked: the JSON object of "retry" (delay,
 *	  factor, max_delay, jitter) that the queue's backoff reads when a task
 *	  goes back for another try.
 *
 * The queue owns the shape of the policy, so the check lives here and is
 * called in C by every layer that takes one: the task objects of
 * insert_tasks (api/task_input.c), the SQL check of set_action_policy
 * (api/task_input.c's taskq._check_retry), and the retry policies of
 * workflow definitions (workflow/def_common.c).  Pure functions: no SQL,
 * no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "common/json_read.h"
#include "queue/queue.h"

/* An interval given as a JSON string, not negative. */
static Interval *
policy_interval(const char *argname, const char *key, JsonbValue *v)
{
	Interval   *i;
	Interval	zero = {0};

	if (v->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key \"%s\" of \"%s\" must be an interval string, not %s",
						key, argname, taskq_json_type_name(v))));
	i = DatumGetIntervalP(DirectFunctionCall3(interval_in,
											  CStringGetDatum(taskq_json_string(v)),
											  ObjectIdGetDatum(InvalidOid),
											  Int32GetDatum(-1)));
	if (DatumGetBool(DirectFunctionCall2(interval_lt, IntervalPGetDatum(i),
										 IntervalPGetDatum(&zero))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key \"%s\" of \"%s\" must not be negative", key, argname)));
	return i;
}

static double
policy_number(const char *argname, const char *key, JsonbValue *v,
			  double min, double max)
{
	double		d;

	if (v->type != jbvNumeric)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key \"%s\" of \"%s\" must be a number, not %s",
						key, argname, taskq_json_type_name(v))));
	d = DatumGetFloat8(DirectFunctionCall1(numeric_float8,
										   NumericGetDatum(v->val.numeric)));
	if (d < min || d > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key \"%s\" of \"%s\" must be between %g and %g", key,
						argname, min, max)));
	return d;
}

/*
 * Check a retry policy: an object with "delay" (required), "factor" (1 to
 * 100), "max_delay" (not below delay) and "jitter" (0 to 1).
 */
void
taskq_check_retry_policy(Jsonb *policy, const char *argname)
{
	JsonbIterator *it;
	char	   *key;
	JsonbValue	val;
	Interval   *delay = NULL;
	Interval   *max_delay = NULL;

	if (!JB_ROOT_IS_OBJECT(policy))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" must be a JSON object", argname)));
	it = JsonbIteratorInit(&policy->root);
	while ((key = taskq_json_next_key(&it, &val)) != NULL)
	{
		if (strcmp(key, "delay") == 0)
			delay = policy_interval(argname, key, &val);
		else if (strcmp(key, "max_delay") == 0)
			max_delay = policy_interval(argname, key, &val);
		else if (strcmp(key, "factor") == 0)
			(void) policy_number(argname, key, &val, 1, 100);
		else if (strcmp(key, "jitter") == 0)
			(void) policy_number(argname, key, &val, 0, 1);
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unrecognized key \"%s\" in \"%s\"", key, argname),
					 errhint("A retry policy has the keys delay, factor, max_delay and jitter.")));
	}
	if (delay == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key \"delay\" of \"%s\" is required", argname)));
	if (max_delay != NULL &&
		DatumGetBool(DirectFunctionCall2(interval_lt, IntervalPGetDatum(max_delay),
										 IntervalPGetDatum(delay))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key \"max_delay\" of \"%s\" must not be less than \"delay\"",
						argname)));
}
