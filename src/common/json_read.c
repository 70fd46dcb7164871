/*-------------------------------------------------------------------------
 *
 * json_read.c
 *	  Reading the JSON objects callers pass: the task objects of
 *	  insert_tasks (api/task_input.c) and retry policies
 *	  (queue/retry_policy.c) name JSON types in their messages and walk an
 *	  object's keys alike.  Pure functions: no SQL, no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/jsonb.h"

#include "common/json_read.h"

/* The JSON type of v as a message names it. */
const char *
taskq_json_type_name(JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return "null";
		case jbvString:
			return "string";
		case jbvNumeric:
			return "number";
		case jbvBool:
			return "boolean";
		case jbvBinary:
			return JsonContainerIsArray(v->val.binary.data) ? "array" : "object";
		case jbvArray:
			return "array";
		case jbvObject:
			return "object";
		default:
			return "unknown";
	}
}

/* A JSON string value as a palloc'd C string (v must be a string). */
char *
taskq_json_string(JsonbValue *v)
{
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/*
 * The next key of the object being iterated (palloc'd), with its value in
 * *val; NULL at the end.
 */
char *
taskq_json_next_key(JsonbIterator **it, JsonbValue *val)
{
	JsonbValue	k;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(it, &k, true)) != WJB_DONE)
		if (tok == WJB_KEY)
		{
			tok = JsonbIteratorNext(it, val, true);
			Assert(tok == WJB_VALUE);
			return taskq_json_string(&k);
		}
	return NULL;
}
