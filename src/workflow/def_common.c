/*-------------------------------------------------------------------------
 *
 * def_common.c
 *	  What the definitions of every workflow kind (state machines, sagas)
 *	  check alike: names, the keys an object may have, optional integers
 *	  and retry policies.  Every error is SQLSTATE 22023 and names the
 *	  part of the definition.
 *
 * No locking: pure functions.  A retry policy is checked by the queue's own
 * check (queue/retry_policy.c), in a subtransaction so that its error is
 * reported as this definition's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "queue/queue.h"
#include "workflow/def_common.h"
#include "workflow/json.h"

#define MAX_NAME_LEN 63

/*
 * A definition refused (22023): msg and detail are composed by the
 * caller, naming the definition's part, and passed through as they are.
 */
void
taskq_def_bad(const char *msg, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg_internal("%s", msg),
			 detail ? errdetail_internal("%s", detail) : 0));
}

/*
 * A state, step or definition name: 1-63 bytes, no control characters.
 * what: "state", "step"...; where: the definition's part, for the message.
 */
void
taskq_check_definition_name(const char *name, const char *what, const char *where)
{
	size_t		len = strlen(name);

	if (len == 0 || len > MAX_NAME_LEN)
		taskq_def_bad(psprintf("%s name \"%s\" must be 1 to %d bytes long", what, name, MAX_NAME_LEN),
			where);
	for (const unsigned char *p = (const unsigned char *) name; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			taskq_def_bad(psprintf("%s name \"%s\" must not contain control characters", what, name),
				where);
}

bool
taskq_def_opt_int(JsonbContainer *obj, const char *key, const char *where, int32 *out,
		bool positive, bool check)
{
	JsonbValue *v = taskq_json_container_key(obj, key);
	int64		i;

	if (v == NULL || v->type == jbvNull)
		return false;
	if (v->type != jbvNumeric)
	{
		if (check)
			taskq_def_bad(psprintf("key \"%s\" of %s must be an integer", key, where), NULL);
		return false;
	}
	i = DatumGetInt64(DirectFunctionCall1(numeric_int8,
										  NumericGetDatum(v->val.numeric)));
	if (check && (i > PG_INT32_MAX || i < PG_INT32_MIN || (positive && i <= 0) ||
				  !DatumGetBool(DirectFunctionCall2(numeric_eq,
													NumericGetDatum(v->val.numeric),
													DirectFunctionCall1(int8_numeric, Int64GetDatum(i))))))
		taskq_def_bad(psprintf("key \"%s\" of %s must be %s", key, where,
					 positive ? "a positive integer" : "an integer"), NULL);
	*out = (int32) i;
	return true;
}

/*
 * The retry policy under key of obj (NULL if absent or null); with check,
 * 22023 naming where and what the queue's check says.  Sagas use it too.
 */
Jsonb *
taskq_def_opt_retry(JsonbContainer *obj, const char *key, const char *where, bool check)
{
	JsonbValue *v = taskq_json_container_key(obj, key);
	Jsonb	   *j;

	if (v == NULL || v->type == jbvNull)
		return NULL;
	j = JsonbValueToJsonb(v);
	if (check)
	{
		if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
			taskq_def_bad(psprintf("key \"%s\" of %s must be a retry policy object", key, where), NULL);
		/*
		 * The queue's own check says what is wrong; in a subtransaction (an
		 * interval's input function raises its own errors), so that its
		 * error comes back as this definition's, naming the state.
		 */
		{
			MemoryContext cxt = CurrentMemoryContext;
			ResourceOwner owner = CurrentResourceOwner;

			BeginInternalSubTransaction(NULL);
			PG_TRY();
			{
				taskq_check_retry_policy(j, "retry");
				ReleaseCurrentSubTransaction();
			}
			PG_CATCH();
			{
				ErrorData  *e;

				MemoryContextSwitchTo(cxt);
				e = CopyErrorData();
				FlushErrorState();
				RollbackAndReleaseCurrentSubTransaction();
				MemoryContextSwitchTo(cxt);
				CurrentResourceOwner = owner;
				taskq_def_bad(psprintf("%s policy of %s is invalid: %s",
							 strcmp(key, "retry") == 0 ? "retry" : key, where, e->message), NULL);
			}
			PG_END_TRY();
			MemoryContextSwitchTo(cxt);
			CurrentResourceOwner = owner;
		}
	}
	return j;
}

void
taskq_def_check_keys(JsonbContainer *obj, const char *const *known, const char *where)
{
	JsonbIterator *it = JsonbIteratorInit(obj);
	JsonbValue	v;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *key;
		bool		ok = false;

		if (tok != WJB_KEY)
			continue;
		key = pnstrdup(v.val.string.val, v.val.string.len);
		for (int i = 0; known[i]; i++)
			ok |= strcmp(known[i], key) == 0;
		if (!ok)
			taskq_def_bad(psprintf("unknown key \"%s\" in %s", key, where), NULL);
	}
}

/*
 * Key "child" of a machine state or a saga step: {"machine": name} or
 * {"saga": name}.  False if absent (or null); else *kind and *name.
 */
bool
taskq_def_opt_child(JsonbContainer *obj, const char *where, char **kind, char **name,
					bool check)
{
	JsonbValue *v = taskq_json_container_key(obj, "child");
	JsonbValue *m,
			   *s;
	static const char *const child_keys[] = {"machine", "saga", NULL};

	*kind = *name = NULL;
	if (v == NULL || v->type == jbvNull)
		return false;
	if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		taskq_def_bad(psprintf("key \"child\" of %s must be an object", where),
					  "Give {\"machine\": \"<name>\"} or {\"saga\": \"<name>\"}.");
	if (check)
		taskq_def_check_keys(v->val.binary.data, child_keys, psprintf("the child of %s", where));
	m = taskq_json_container_key(v->val.binary.data, "machine");
	s = taskq_json_container_key(v->val.binary.data, "saga");
	if ((m == NULL) == (s == NULL))
		taskq_def_bad(psprintf("key \"child\" of %s must name exactly one machine or saga", where),
					  "Give {\"machine\": \"<name>\"} or {\"saga\": \"<name>\"}.");
	*kind = m ? "machine" : "saga";
	*name = taskq_json_text(m ? m : s);
	if (*name == NULL)
		taskq_def_bad(psprintf("the child of %s must name its %s with a string", where, *kind), NULL);
	if (check)
		taskq_check_definition_name(*name, *kind, psprintf("The child of %s.", where));
	return true;
}
