/*-------------------------------------------------------------------------
 *
 * enqueue.c
 *	  SQL faces of the typed enqueue: enqueue (one task) and enqueue_many
 *	  (one task per element of a jsonb[]), for tasks of one action with the
 *	  same options.  The arguments become the queue's TaskSpecs without a
 *	  JSON document to build and parse; ids the caller leaves out are made
 *	  by the queue (queue/task_id.c: time-ordered, so their primary key
 *	  entries go in at the right end of the index).  The queue
 *	  (queue/insert.c) then checks the batch whole and inserts it, as for
 *	  insert_tasks, with the same errors.
 *
 * Locking: as insert_tasks (queue/insert.c, queue/insert_rows.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "common/args.h"
#include "common/limits.h"
#include "queue/queue.h"

PG_FUNCTION_INFO_V1(taskq_enqueue);
PG_FUNCTION_INFO_V1(taskq_enqueue_many);

/* Argument positions, the same in both functions. */
#define ARG_ACTION		0
#define ARG_BODY		1		/* body jsonb, or bodies jsonb[] */
#define ARG_ID			2		/* id text, or ids text[] */
#define ARG_PRIORITY	3
#define ARG_NOT_BEFORE	4
#define ARG_MAX_TRIES	5
#define ARG_WORKFLOW	6
#define ARG_KEY			7		/* concurrency_key */

/* The options every task of the call shares, in a TaskqTaskSpec to copy. */
static void
read_options(FunctionCallInfo fcinfo, TaskqTaskSpec *tmpl)
{
	memset(tmpl, 0, sizeof(TaskqTaskSpec));
	tmpl->action = taskq_text_arg(fcinfo, ARG_ACTION, "action", TASKQ_MAX_ACTION_LEN);
	if (!PG_ARGISNULL(ARG_PRIORITY))
		tmpl->priority = PG_GETARG_INT32(ARG_PRIORITY);
	if (!PG_ARGISNULL(ARG_NOT_BEFORE))
	{
		tmpl->not_before = PG_GETARG_TIMESTAMPTZ(ARG_NOT_BEFORE);
		tmpl->has_not_before = true;
	}
	if (!PG_ARGISNULL(ARG_MAX_TRIES))
	{
		tmpl->max_tries = PG_GETARG_INT32(ARG_MAX_TRIES);
		tmpl->has_max_tries = true;
		if (tmpl->max_tries < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"max_tries\" must be at least 1, or null for the action's policy")));
	}
	if (!PG_ARGISNULL(ARG_WORKFLOW))
		tmpl->workflow = taskq_text_arg(fcinfo, ARG_WORKFLOW, "workflow", TASKQ_MAX_ID_LEN);
	if (PG_NARGS() > ARG_KEY && !PG_ARGISNULL(ARG_KEY))
	{
		char	   *key = text_to_cstring(PG_GETARG_TEXT_PP(ARG_KEY));
		size_t		len = strlen(key);

		if (len == 0 || len > TASKQ_MAX_CONCURRENCY_KEY_LEN)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"concurrency_key\" must be 1 to %d bytes long",
							TASKQ_MAX_CONCURRENCY_KEY_LEN),
					 errdetail("This one has %zu.", len)));
		tmpl->concurrency_key = key;
	}
	tmpl->trigger = TASKQ_ALL_SUCCESS;
}

/* A body as stored: NULL for none; refused if over the documented limit. */
static Jsonb *
checked_body(Datum d, int element)
{
	Jsonb	   *body = DatumGetJsonbP(d);

	if (VARSIZE(body) > TASKQ_MAX_BODY_SIZE)
	{
		if (element > 0)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("element %d of argument \"bodies\" is too large", element),
					 errdetail("A body is at most %d bytes in jsonb form; this one has %zu.",
							   TASKQ_MAX_BODY_SIZE, (size_t) VARSIZE(body))));
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("argument \"body\" is too large"),
				 errdetail("A body is at most %d bytes in jsonb form; this one has %zu.",
						   TASKQ_MAX_BODY_SIZE, (size_t) VARSIZE(body))));
	}
	return body;
}

/* A caller's id: non-empty, at most TASKQ_MAX_ID_LEN bytes. */
static char *
checked_id(Datum d, const char *argname, int element)
{
	char	   *id = TextDatumGetCString(d);
	size_t		len = strlen(id);

	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 element > 0 ?
				 errmsg("element %d of argument \"%s\" must not be an empty string",
						element, argname) :
				 errmsg("argument \"%s\" must not be an empty string", argname),
				 errhint("Pass null to have taskq make the id.")));
	if (len > TASKQ_MAX_ID_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
				 element > 0 ?
				 errmsg("element %d of argument \"%s\" is too long", element, argname) :
				 errmsg("argument \"%s\" is too long", argname),
				 errdetail("A task id is at most %d bytes; this one has %zu.",
						   TASKQ_MAX_ID_LEN, len)));
	return id;
}

/* A new task of the call: the shared options, its own id and body. */
static TaskqTaskSpec *
new_spec(const TaskqTaskSpec *tmpl, int index, char *id, Jsonb *body,
		 const char *argname)
{
	TaskqTaskSpec *s = palloc(sizeof(TaskqTaskSpec));

	memcpy(s, tmpl, sizeof(TaskqTaskSpec));
	s->index = index;
	if (id == NULL)
	{
		id = palloc(TASKQ_TASK_ID_LEN + 1);
		taskq_new_task_id(id);
		s->made_id = true;
	}
	s->id = id;
	s->body = body;
	s->argname = argname;
	return s;
}

static void
insert_specs(List *specs)
{
	SPI_connect();
	(void) taskq_insert(specs, TASKQ_INSERT_PLAIN, NIL, NIL, NULL);
	SPI_finish();
}

/*
 * enqueue(action text, body jsonb DEFAULT NULL, id text DEFAULT NULL,
 *         priority integer DEFAULT 0, not_before timestamptz DEFAULT NULL,
 *         max_tries integer DEFAULT NULL, workflow text DEFAULT NULL,
 *         concurrency_key text DEFAULT NULL)
 * returns text
 *
 * One task; returns its id (the one given, or the one made).
 */
Datum
taskq_enqueue(PG_FUNCTION_ARGS)
{
	TaskqTaskSpec tmpl;
	TaskqTaskSpec *spec;

	read_options(fcinfo, &tmpl);
	spec = new_spec(&tmpl, 1,
					PG_ARGISNULL(ARG_ID) ? NULL :
					checked_id(PG_GETARG_DATUM(ARG_ID), "id", 0),
					PG_ARGISNULL(ARG_BODY) ? NULL :
					checked_body(PG_GETARG_DATUM(ARG_BODY), 0),
					"id");
	insert_specs(list_make1(spec));
	PG_RETURN_TEXT_P(cstring_to_text(spec->id));
}

/*
 * enqueue_many(action text, bodies jsonb[], ids text[] DEFAULT NULL,
 *              priority integer DEFAULT 0, not_before timestamptz DEFAULT NULL,
 *              max_tries integer DEFAULT NULL, workflow text DEFAULT NULL,
 *              concurrency_key text DEFAULT NULL)
 * returns text[]
 *
 * One task per element of bodies (a null element: no body), all or none;
 * ids, if given, has one element per body (a null one: taskq makes it).
 * Returns the ids in the order of bodies.
 */
Datum
taskq_enqueue_many(PG_FUNCTION_ARGS)
{
	TaskqTaskSpec tmpl;
	Datum	   *bodies;
	bool	   *body_nulls;
	int			n;
	Datum	   *ids = NULL;
	bool	   *id_nulls = NULL;
	int			nids = 0;
	List	   *specs = NIL;
	Datum	   *result;

	read_options(fcinfo, &tmpl);
	taskq_require_arg(fcinfo, ARG_BODY, "bodies");
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(ARG_BODY), JSONBOID, -1, false,
					  TYPALIGN_INT, &bodies, &body_nulls, &n);
	if (!PG_ARGISNULL(ARG_ID))
	{
		deconstruct_array(PG_GETARG_ARRAYTYPE_P(ARG_ID), TEXTOID, -1, false,
						  TYPALIGN_INT, &ids, &id_nulls, &nids);
		if (nids != n)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("arrays \"bodies\" and \"ids\" must have the same length"),
					 errdetail("\"bodies\" has %d elements and \"ids\" %d.", n, nids)));
	}
	if (n == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(TEXTOID));

	result = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
	{
		TaskqTaskSpec *s;

		s = new_spec(&tmpl, i + 1,
					 ids == NULL || id_nulls[i] ? NULL : checked_id(ids[i], "ids", i + 1),
					 body_nulls[i] ? NULL : checked_body(bodies[i], i + 1),
					 "ids");
		specs = lappend(specs, s);
		result[i] = CStringGetTextDatum(s->id);
	}
	insert_specs(specs);
	PG_RETURN_ARRAYTYPE_P(construct_array(result, n, TEXTOID, -1, false, TYPALIGN_INT));
}
