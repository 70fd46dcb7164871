/*-------------------------------------------------------------------------
 *
 * json.c
 *	  The JSON the workflow layer reads and builds: keys of definitions,
 *	  contexts and debug settings read, the argument checks of JSON
 *	  objects, and the bodies of step tasks built.
 *
 * No locking: pure functions over palloc'd JSON.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/jsonb.h"

#include "workflow/json.h"

/* ----------
 * Reading
 * ----------
 */
JsonbValue *
taskq_json_container_key(JsonbContainer *obj, const char *key)
{
	if (!JsonContainerIsObject(obj))
		return NULL;
	return getKeyJsonValueFromContainer(obj, key, strlen(key), NULL);
}

/* Value of key in object obj, or NULL (also for a JSON null). */
JsonbValue *
taskq_json_key(Jsonb *obj, const char *key)
{
	JsonbValue *v;

	if (obj == NULL)
		return NULL;
	v = taskq_json_container_key(&obj->root, key);
	if (v != NULL && v->type == jbvNull)
		return NULL;
	return v;
}

/* A JSON string as a C string; NULL for NULL or another type. */
char *
taskq_json_text(JsonbValue *v)
{
	if (v == NULL || v->type != jbvString)
		return NULL;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

Jsonb *
taskq_json_value_jsonb(JsonbValue *v)
{
	return JsonbValueToJsonb(v);
}

/* Argument argname must be a JSON object (22023). */
void
taskq_check_json_object(Jsonb *j, const char *argname)
{
	if (!JB_ROOT_IS_OBJECT(j) || JB_ROOT_IS_SCALAR(j))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be a JSON object", argname)));
}

/* ----------
 * Building step bodies
 * ----------
 */
void
taskq_json_push_key(JsonbParseState **st, const char *key)
{
	JsonbValue	k;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	pushJsonbValue(st, WJB_KEY, &k);
}

/* "key": val (a JSON string, or null for NULL) */
void
taskq_json_push_text(JsonbParseState **st, const char *key, const char *val)
{
	JsonbValue	v;

	taskq_json_push_key(st, key);
	if (val == NULL)
		v.type = jbvNull;
	else
	{
		v.type = jbvString;
		v.val.string.val = (char *) val;
		v.val.string.len = strlen(val);
	}
	pushJsonbValue(st, WJB_VALUE, &v);
}

/* "key": j (null for NULL); with key NULL, j as an array element */
void
taskq_json_push_jsonb(JsonbParseState **st, const char *key, Jsonb *j)
{
	JsonbValue	v;

	if (key)
		taskq_json_push_key(st, key);
	if (j == NULL)
		v.type = jbvNull;
	else
	{
		v.type = jbvBinary;
		v.val.binary.data = &j->root;
		v.val.binary.len = VARSIZE(j) - VARHDRSZ;
	}
	pushJsonbValue(st, key ? WJB_VALUE : WJB_ELEM, &v);
}
