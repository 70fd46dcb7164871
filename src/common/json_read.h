/*-------------------------------------------------------------------------
 *
 * json_read.h
 *	  Reading the JSON objects callers pass (task objects, retry policies):
 *	  the names of JSON types for error messages, and the keys of an
 *	  object iterated one by one (json_read.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_JSON_READ_H
#define TASKQ_JSON_READ_H

#include "utils/jsonb.h"

/* The JSON type of v as a message names it: "string", "number", "object", ... */
extern const char *taskq_json_type_name(JsonbValue *v);

/* A JSON string value as a palloc'd C string (v must be a string). */
extern char *taskq_json_string(JsonbValue *v);

/*
 * The next key of the object being iterated (palloc'd), with its value in
 * *val; NULL at the end.
 */
extern char *taskq_json_next_key(JsonbIterator **it, JsonbValue *val);

#endif							/* TASKQ_JSON_READ_H */
