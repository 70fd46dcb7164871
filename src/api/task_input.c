/*-------------------------------------------------------------------------
 *
 * task_input.c
 *	  Parse and check the JSON array of task objects that insert_tasks and
 *	  replace_tasks take, into TaskSpecs.
 *
 * Every key is checked for its JSON type and range, unknown keys are
 * refused (a misspelt "to_signal_after" must not silently drop an edge),
 * and every error names the task by position and id through an error
 * context line.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "common/args.h"
#include "common/json_read.h"
#include "api/task_input.h"

typedef struct ParseContext
{
	const char *argname;
	int			index;			/* 0: none yet; -1: the argument is one task */
	const char *id;
} ParseContext;

static void
parse_error_context(void *arg)
{
	ParseContext *pc = (ParseContext *) arg;

	if (pc->index == 0)
		return;
	if (pc->index < 0)
	{
		if (pc->id)
			errcontext("task \"%s\" of argument \"%s\"", pc->id, pc->argname);
		else
			errcontext("the task of argument \"%s\"", pc->argname);
		return;
	}
	if (pc->id)
		errcontext("task %d (id \"%s\") of argument \"%s\"",
				   pc->index, pc->id, pc->argname);
	else
		errcontext("task %d of argument \"%s\"", pc->index, pc->argname);
}

static void
wrong_type(const char *key, const char *expected, JsonbValue *v)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("key \"%s\" must be %s, not %s", key, expected,
					taskq_json_type_name(v))));
}

/* A JSON string used as an identifier: non-empty, bounded. */
static char *
json_identifier(const char *key, JsonbValue *v, int maxlen)
{
	if (v->type != jbvString)
		wrong_type(key, "a string", v);
	if (v->val.string.len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key \"%s\" must not be an empty string", key)));
	if (v->val.string.len > maxlen)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
				 errmsg("value of key \"%s\" is too long", key),
				 errdetail("It is at most %d bytes; this one has %d.",
						   maxlen, v->val.string.len)));
	return taskq_json_string(v);
}

/* A JSON number that must be a whole number within int4. */
static int32
json_int32(const char *key, JsonbValue *v)
{
	char	   *s;
	char	   *end;
	long		val;

	if (v->type != jbvNumeric)
		wrong_type(key, "an integer", v);
	s = DatumGetCString(DirectFunctionCall1(numeric_out,
											NumericGetDatum(v->val.numeric)));
	errno = 0;
	val = strtol(s, &end, 10);
	if (*end != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key \"%s\" must be an integer, not %s", key, s)));
	if (errno == ERANGE || val < PG_INT32_MIN || val > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("value %s of key \"%s\" is out of range for type integer",
						s, key)));
	return (int32) val;
}

static bool
json_bool(const char *key, JsonbValue *v)
{
	if (v->type != jbvBool)
		wrong_type(key, "a boolean", v);
	return v->val.boolean;
}

/* to_signal_after: an array of task ids. */
static List *
json_id_list(const char *key, JsonbValue *v)
{
	JsonbIterator *it;
	JsonbValue	elem;
	JsonbIteratorToken tok;
	List	   *result = NIL;

	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data) ||
		JsonContainerIsScalar(v->val.binary.data))
		wrong_type(key, "an array of task ids", v);

	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM)
			continue;
		if (elem.type != jbvString)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("key \"%s\" must be an array of task ids, but it holds a %s",
							key, taskq_json_type_name(&elem))));
		result = lappend(result, json_identifier(key, &elem, TASKQ_MAX_ID_LEN));
	}
	return result;
}

static TimestampTz
json_timestamptz(const char *key, JsonbValue *v)
{
	char	   *s;

	if (v->type != jbvString)
		wrong_type(key, "a timestamp string", v);
	s = taskq_json_string(v);
	return DatumGetTimestampTz(DirectFunctionCall3(timestamptz_in,
												   CStringGetDatum(s),
												   ObjectIdGetDatum(InvalidOid),
												   Int32GetDatum(-1)));
}

static Jsonb *
json_body(JsonbValue *v)
{
	Jsonb	   *body;

	if (v->type == jbvNull)
		return NULL;
	body = JsonbValueToJsonb(v);
	if (VARSIZE(body) > TASKQ_MAX_BODY_SIZE)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("body is too large"),
				 errdetail("A body is at most %d bytes in jsonb form; this one has %zu.",
						   TASKQ_MAX_BODY_SIZE, (size_t) VARSIZE(body))));
	return body;
}

/* Fill spec from one task object; pc->id is set once the id is known. */
static void
parse_task_object(JsonbContainer *obj, TaskqTaskSpec *spec, ParseContext *pc)
{
	JsonbIterator *it = JsonbIteratorInit(obj);
	char	   *key;
	JsonbValue	val;
	JsonbValue *idval;

	/* Look the id up first so every later error can name it. */
	idval = getKeyJsonValueFromContainer(obj, "id", 2, NULL);
	if (idval == NULL || idval->type == jbvNull)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key \"id\" is required")));
	spec->id = json_identifier("id", idval, TASKQ_MAX_ID_LEN);
	pc->id = spec->id;

	while ((key = taskq_json_next_key(&it, &val)) != NULL)
	{
		if (strcmp(key, "id") == 0)
			continue;
		if (strcmp(key, "action") == 0)
		{
			if (val.type == jbvNull)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("key \"action\" is required")));
			spec->action = json_identifier(key, &val, TASKQ_MAX_ACTION_LEN);
		}
		else if (strcmp(key, "body") == 0)
			spec->body = json_body(&val);
		else if (val.type == jbvNull &&
				 (strcmp(key, "to_signal_after") == 0 ||
				  strcmp(key, "max_tries") == 0 ||
				  strcmp(key, "priority") == 0 ||
				  strcmp(key, "not_before") == 0 ||
				  strcmp(key, "post_result") == 0 ||
				  strcmp(key, "spontaneous") == 0 ||
				  strcmp(key, "trigger") == 0 ||
				  strcmp(key, "status") == 0))
			continue;			/* a known key: null means the default */
		else if (strcmp(key, "to_signal_after") == 0)
			spec->successors = json_id_list(key, &val);
		else if (strcmp(key, "max_tries") == 0)
		{
			spec->max_tries = json_int32(key, &val);
			spec->has_max_tries = true;
			if (spec->max_tries < 1)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("key \"max_tries\" must be at least 1, or null for unlimited tries")));
		}
		else if (strcmp(key, "priority") == 0)
			spec->priority = json_int32(key, &val);
		else if (strcmp(key, "not_before") == 0)
		{
			spec->not_before = json_timestamptz(key, &val);
			spec->has_not_before = true;
		}
		else if (strcmp(key, "post_result") == 0)
			spec->post_result = json_bool(key, &val);
		else if (strcmp(key, "spontaneous") == 0)
			spec->spontaneous = json_bool(key, &val);
		else if (strcmp(key, "retry") == 0)
		{
			if (val.type != jbvBinary || !JsonContainerIsObject(val.val.binary.data))
				wrong_type(key, "an object", &val);
			spec->retry = JsonbValueToJsonb(&val);
			taskq_check_retry_policy(spec->retry, "retry");
		}
		else if (strcmp(key, "workflow") == 0)
			spec->workflow = json_identifier(key, &val, TASKQ_MAX_ID_LEN);
		else if (strcmp(key, "concurrency_key") == 0)
		{
			if (val.type != jbvString)
				wrong_type(key, "a string", &val);
			if (val.val.string.len == 0 || val.val.string.len > TASKQ_MAX_CONCURRENCY_KEY_LEN)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("key \"concurrency_key\" must be 1 to %d bytes long",
								TASKQ_MAX_CONCURRENCY_KEY_LEN),
						 errdetail("This one has %d.", val.val.string.len)));
			spec->concurrency_key = taskq_json_string(&val);
		}
		else if (strcmp(key, "status") == 0)
		{
			if (val.type != jbvString)
				wrong_type(key, "a string", &val);
			spec->status = taskq_json_string(&val);
		}
		else if (strcmp(key, "trigger") == 0)
		{
			char	   *rule;

			if (val.type != jbvString)
				wrong_type(key, "a string", &val);
			rule = taskq_json_string(&val);
			if (!taskq_trigger_from_label(rule, &spec->trigger))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("unknown trigger rule \"%s\"", rule),
						 errhint("The trigger rules are all_success, all_done, one_failed and one_success.")));
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unrecognized key \"%s\"", key),
					 errhint("The keys of a task are id, action, body, to_signal_after, max_tries, priority, not_before, post_result, spontaneous, retry, workflow, concurrency_key, status and trigger.")));
	}

	if (spec->action == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key \"action\" is required")));
}

/*
 * One task object given as an argument of its own (chord's join): the same
 * checks as each element of insert_tasks' array, errors naming the argument.
 */
TaskqTaskSpec *
taskq_parse_task(Jsonb *task, const char *argname)
{
	ParseContext pc = {argname, -1, NULL};
	ErrorContextCallback errcb;
	TaskqTaskSpec *spec;

	if (!JB_ROOT_IS_OBJECT(task))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be a JSON task object", argname)));
	errcb.callback = parse_error_context;
	errcb.arg = &pc;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	spec = palloc0(sizeof(TaskqTaskSpec));
	spec->index = 1;
	parse_task_object(&task->root, spec, &pc);
	error_context_stack = errcb.previous;
	return spec;
}

/*
 * Parse the tasks argument: a JSON array of task objects.  An empty array
 * gives NIL.
 */
List *
taskq_parse_tasks(Jsonb *tasks, const char *argname)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	List	   *result = NIL;
	ParseContext pc = {argname, 0, NULL};
	ErrorContextCallback errcb;

	if (!JB_ROOT_IS_ARRAY(tasks) || JB_ROOT_IS_SCALAR(tasks))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be a JSON array of task objects",
						argname)));

	errcb.callback = parse_error_context;
	errcb.arg = &pc;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;

	it = JsonbIteratorInit(&tasks->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		TaskqTaskSpec *spec;

		if (tok != WJB_ELEM)
			continue;
		pc.index++;
		pc.id = NULL;
		if (v.type != jbvBinary || !JsonContainerIsObject(v.val.binary.data))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a task must be a JSON object, not %s",
							taskq_json_type_name(&v))));
		spec = palloc0(sizeof(TaskqTaskSpec));
		spec->index = pc.index;
		parse_task_object(v.val.binary.data, spec, &pc);
		result = lappend(result, spec);
	}

	error_context_stack = errcb.previous;
	return result;
}

PG_FUNCTION_INFO_V1(taskq_check_retry);

/*
 * _check_retry(retry jsonb) returns void: for set_action_policy; the queue's
 * check (queue/retry_policy.c).
 */
Datum
taskq_check_retry(PG_FUNCTION_ARGS)
{
	if (!PG_ARGISNULL(0))
		taskq_check_retry_policy(PG_GETARG_JSONB_P(0), "retry");
	PG_RETURN_VOID();
}

/*
 * _check_task(task jsonb, argname text) returns void: the checks of
 * taskq_parse_task, for the shapes' SQL (chord's join).
 */
PG_FUNCTION_INFO_V1(taskq_check_task);

Datum
taskq_check_task(PG_FUNCTION_ARGS)
{
	char	   *argname;

	taskq_require_arg(fcinfo, 1, "argname");
	argname = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", argname)));
	(void) taskq_parse_task(PG_GETARG_JSONB_P(0), argname);
	PG_RETURN_VOID();
}
