/*-------------------------------------------------------------------------
 *
 * schedules.c
 *	  The checks of schedule(): name, cron expression, time zone, task
 *	  object and catch_up, and the first tick (taskq._schedule_next, which
 *	  the install script's schedule() calls before it stores the row); the
 *	  next tick of an expression for tests (taskq._cron_next); and the task
 *	  object of a schedule made into a TaskqTaskSpec with a tick's id, the
 *	  same parse as insert_tasks' (task_input.c), at schedule() time and at
 *	  each tick (the background worker reaches it through a hook that the
 *	  module entry sets: worker/ is below api/).
 *
 * No locks, no tables: schedule() writes its row in SQL; the wakeup of the
 * database's background worker for the first tick is noted here and sent
 * when the transaction commits (ipc/wakeup.c), which also starts a worker
 * where none runs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "common/args.h"
#include "common/cron.h"
#include "common/json_read.h"
#include "ipc/wakeup.h"
#include "api/schedules.h"
#include "api/task_input.h"

#define SCHEDULE_MAX_NAME_LEN 200

PG_FUNCTION_INFO_V1(taskq_schedule_next);
PG_FUNCTION_INFO_V1(taskq_cron_next_sql);

/* The task object with "id" first, then its own keys. */
static Jsonb *
with_id(Jsonb *task, const char *id)
{
	JsonbParseState *st = NULL;
	JsonbIterator *it;
	JsonbIteratorToken tok;
	JsonbValue	v;
	JsonbValue *res;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	v.type = jbvString;
	v.val.string.val = "id";
	v.val.string.len = 2;
	pushJsonbValue(&st, WJB_KEY, &v);
	v.val.string.val = (char *) id;
	v.val.string.len = strlen(id);
	pushJsonbValue(&st, WJB_VALUE, &v);
	it = JsonbIteratorInit(&task->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		if (tok == WJB_KEY || tok == WJB_VALUE)
			pushJsonbValue(&st, tok, &v);
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}

/*
 * A schedule's task object as the task of the tick whose id is given:
 * insert_tasks' checks, errors naming argument "task".
 */
TaskqTaskSpec *
taskq_schedule_task(Jsonb *task, const char *id)
{
	return taskq_parse_task(with_id(task, id), "task");
}

/* The keys a schedule's task must not have: each tick sets or refuses them. */
static void
check_task_keys(Jsonb *task)
{
	static const char *const refused[] = {"id", "not_before", "to_signal_after"};

	if (!JB_ROOT_IS_OBJECT(task))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"task\" must be a JSON task object")));
	for (int i = 0; i < lengthof(refused); i++)
		if (getKeyJsonValueFromContainer(&task->root, refused[i], strlen(refused[i]),
										 NULL) != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the task of a schedule must not have key \"%s\"", refused[i]),
					 errdetail("Each tick inserts the task with id \"<name>/<tick>\" and not_before the tick, without successors.")));
}

/*
 * _schedule_next(name text, cron text, task jsonb, time_zone text,
 * catch_up text) returns timestamptz
 *
 * Every check of schedule() (22004 for NULL, 22023 for a bad value), then
 * the first tick after now(); the database's background worker is woken
 * for it when the transaction commits.
 */
Datum
taskq_schedule_next(PG_FUNCTION_ARGS)
{
	static const char *const argnames[] = {"name", "cron", "task", "time_zone", "catch_up"};
	char	   *name;
	char	   *cron_text;
	Jsonb	   *task;
	char	   *zone;
	char	   *catch_up;
	TaskqCron	cron;
	pg_tz	   *tz;
	TimestampTz next;

	for (int i = 0; i < lengthof(argnames); i++)
		taskq_require_arg(fcinfo, i, argnames[i]);
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	cron_text = text_to_cstring(PG_GETARG_TEXT_PP(1));
	task = PG_GETARG_JSONB_P(2);
	zone = text_to_cstring(PG_GETARG_TEXT_PP(3));
	catch_up = text_to_cstring(PG_GETARG_TEXT_PP(4));

	if (name[0] == '\0' || strlen(name) > SCHEDULE_MAX_NAME_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"name\" must be 1 to %d bytes long",
						SCHEDULE_MAX_NAME_LEN),
				 errdetail("This one has %zu.", strlen(name))));
	taskq_cron_parse(cron_text, &cron);
	tz = taskq_cron_time_zone(zone);
	if (strcmp(catch_up, "latest") != 0 && strcmp(catch_up, "all") != 0 &&
		strcmp(catch_up, "none") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"catch_up\" must be latest, all or none")));
	check_task_keys(task);
	if (!taskq_cron_next(&cron, tz, GetCurrentTransactionStartTimestamp(), &next))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cron expression \"%s\" never fires", cron_text),
				 errdetail("No time in the next nine years matches it.")));
	/* the checks of insert_tasks, on the task of the first tick */
	(void) taskq_schedule_task(task, taskq_cron_tick_id(name, next));

	taskq_note_due(next);
	PG_RETURN_TIMESTAMPTZ(next);
}

/*
 * _cron_next(cron text, time_zone text, after timestamptz) returns
 * timestamptz: the first tick of the expression after "after" (NULL if
 * none within nine years).  For tests.
 */
Datum
taskq_cron_next_sql(PG_FUNCTION_ARGS)
{
	TaskqCron	cron;
	pg_tz	   *tz;
	TimestampTz next;

	taskq_require_arg(fcinfo, 0, "cron");
	taskq_require_arg(fcinfo, 1, "time_zone");
	taskq_require_arg(fcinfo, 2, "after");
	if (TIMESTAMP_NOT_FINITE(PG_GETARG_TIMESTAMPTZ(2)))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("argument \"after\" must be finite")));
	taskq_cron_parse(text_to_cstring(PG_GETARG_TEXT_PP(0)), &cron);
	tz = taskq_cron_time_zone(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	if (!taskq_cron_next(&cron, tz, PG_GETARG_TIMESTAMPTZ(2), &next))
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(next);
}
