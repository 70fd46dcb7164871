/*-------------------------------------------------------------------------
 *
 * json.h
 *	  The JSON the workflow layer reads and builds (json.c): keys of
 *	  definitions, contexts and debug settings, argument checks, and the
 *	  bodies of step tasks.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_WF_JSON_H
#define TASKQ_WF_JSON_H

#include "utils/jsonb.h"

/* Reading */
extern JsonbValue *taskq_json_key(Jsonb *obj, const char *key);
extern JsonbValue *taskq_json_container_key(JsonbContainer *obj, const char *key);
extern char *taskq_json_text(JsonbValue *v);
extern Jsonb *taskq_json_value_jsonb(JsonbValue *v);
extern void taskq_check_json_object(Jsonb *j, const char *argname);

/* Building step bodies */
extern void taskq_json_push_key(JsonbParseState **st, const char *key);
extern void taskq_json_push_text(JsonbParseState **st, const char *key, const char *val);
extern void taskq_json_push_jsonb(JsonbParseState **st, const char *key, Jsonb *j);

#endif							/* TASKQ_WF_JSON_H */
