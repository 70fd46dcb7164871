/*-------------------------------------------------------------------------
 *
 * definitions.c
 *	  Definitions of state machines and sagas (taskq.definitions): their
 *	  versions, stored and read, and their parsed form (a TaskqMachineDef or a
 *	  TaskqSagaDef) kept per backend for the steps of the runs that name them.
 *
 * A definition is stored once per version and no taskq function changes it
 * afterwards; an admin may still update, delete or truncate the table by
 * hand.  So the parsed form of (name, version) is kept together with the
 * xmin of the row it was parsed from, and a run reads that xmin with its
 * row (run.c, saga_store.c): a row changed or made again has another xmin,
 * and the definition is parsed anew.  Rows written by the current
 * transaction are not kept (it may change them again under the same xmin).
 * A step then reads neither the definition's JSON nor parses it.
 *
 * A caller may name the version to store (a definition broadcast to
 * several databases converges): stored under exactly that number when it
 * is the next one, a no-op when the same definition is stored under it.
 *
 * Locking: storing a version takes the workflow lock of the definition's
 * name (queue/graph.c), which serializes versions of one name; the rows
 * are read with a snapshot taken after the lock.  The cache
 * is backend-local: no locking.  A parsed form that the cache drops (a
 * changed row, a full cache) may still be in use by the caller that holds
 * it, so its memory is handed to the current transaction and freed at its
 * end.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "common/plan.h"
#include "queue/queue.h"
#include "workflow/def_common.h"
#include "workflow/run.h"

static TaskqPlan latest_plan = {
	"SELECT version, kind, definition, xmin FROM taskq.definitions"
	" WHERE name OPERATOR(pg_catalog.=) $1 ORDER BY version DESC LIMIT 1",
	1, {TEXTOID}
};

static TaskqPlan version_plan = {
	"SELECT version, kind, definition, xmin FROM taskq.definitions"
	" WHERE name OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, INT4OID}
};

static TaskqPlan store_definition_plan = {
	"INSERT INTO taskq.definitions (name, version, kind, definition)"
	" VALUES ($1, $2, $3, $4)",
	4, {TEXTOID, INT4OID, TEXTOID, JSONBOID}
};

const char *
taskq_kind_noun(const char *kind)
{
	return strcmp(kind, "machine") == 0 ? "state machine" : "saga";
}

/* The row found by latest_plan or version_plan is of kind (42809 if not). */
static void
check_kind(const char *name, const char *kind)
{
	char	   *found = taskq_get_text(0, 2, NULL);

	if (strcmp(found, kind) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a %s, not a %s", name, taskq_kind_noun(found),
						taskq_kind_noun(kind)),
				 errdetail("State machines and sagas share one namespace of names.")));
}

static Jsonb *found_definition(TransactionId *xmin);

/*
 * A version given by the caller up to the latest: true if the same
 * definition is stored under it (a no-op), 55000 if another one is; false
 * if none is (deleted by hand).
 */
static bool
stored_already(const char *name, const char *kind, Jsonb *def, int32 version)
{
	Datum		args[2];

	args[0] = CStringGetTextDatum(name);
	args[1] = Int32GetDatum(version);
	taskq_execute_latest(&version_plan, args, NULL, false);
	if (SPI_processed == 0)
		return false;
	if (DatumGetBool(DirectFunctionCall2(jsonb_eq, JsonbPGetDatum(found_definition(NULL)),
										 JsonbPGetDatum(def))))
		return true;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("version %d of %s \"%s\" is stored with another definition",
					version, taskq_kind_noun(kind), name),
			 errdetail("A version stores one definition; the same definition again is a no-op.")));
	return false;				/* keep compiler quiet */
}

/*
 * Store def (validated) as the next version of name, or, given, under
 * exactly that version: the same definition stored under it already is a
 * no-op that returns it; another one, or a version other than the latest
 * + 1, 55000.  42809 if name is a definition of the other kind.
 * Definitions of one name are serialized by a lock on the name, and read
 * with a snapshot taken after it: of two calls at once the second sees
 * what the first stored.
 */
int32
taskq_definition_store(const char *name, const char *kind, Jsonb *def, bool given,
					   int32 version)
{
	Datum		values[4];
	int32		latest = 0;

	taskq_lock_workflow(psprintf("taskq definition %s", name), true);
	values[0] = CStringGetTextDatum(name);
	taskq_execute_latest(&latest_plan, values, NULL, false);
	if (SPI_processed > 0)
	{
		check_kind(name, kind);
		latest = taskq_get_int32(0, 1, NULL);
	}
	if (!given)
		version = latest + 1;
	else if (version >= 1 && version <= latest && stored_already(name, kind, def, version))
		return version;
	else if (version != latest + 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("version %d of %s \"%s\" is not its next version", version,
						taskq_kind_noun(kind), name),
				 errdetail("Its latest version is %d: a version given is stored only as %d.",
						   latest, latest + 1)));
	values[1] = Int32GetDatum(version);
	values[2] = CStringGetTextDatum(kind);
	values[3] = JsonbPGetDatum(def);
	taskq_execute(&store_definition_plan, values, NULL, false, 0);
	return version;
}

/* The definition of the row latest_plan or version_plan found, and its xmin. */
static Jsonb *
found_definition(TransactionId *xmin)
{
	if (xmin)
		*xmin = DatumGetTransactionId(taskq_get_datum(0, 4, NULL));
	return DatumGetJsonbPCopy(taskq_get_datum(0, 3, NULL));
}

/* The latest version of definition name of kind: 42704, 42809. */
Jsonb *
taskq_definition_latest(const char *name, const char *kind, int32 *version,
						TransactionId *xmin)
{
	Datum		arg = CStringGetTextDatum(name);

	taskq_execute(&latest_plan, &arg, NULL, false, 0);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("%s \"%s\" does not exist", taskq_kind_noun(kind), name)));
	check_kind(name, kind);
	*version = taskq_get_int32(0, 1, NULL);
	return found_definition(xmin);
}

/* Version version of definition name of kind: 42704, 42809. */
Jsonb *
taskq_definition_version(const char *name, const char *kind, int32 version,
						 TransactionId *xmin)
{
	Datum		args[2];

	args[0] = CStringGetTextDatum(name);
	args[1] = Int32GetDatum(version);
	taskq_execute(&version_plan, args, NULL, false, 0);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("%s \"%s\" has no version %d", taskq_kind_noun(kind), name, version)));
	check_kind(name, kind);
	return found_definition(xmin);
}

/* ----------
 * Parsed definitions, kept per backend
 * ----------
 */

/* Definition names are at most 63 bytes (def_common.c). */
typedef struct DefKey
{
	char		name[64];
	int32		version;
} DefKey;

typedef struct DefEntry
{
	DefKey		key;
	TransactionId xmin;			/* of the row it was parsed from */
	TaskqDefParser parse;		/* which kind's parser made it */
	void	   *parsed;
	MemoryContext cxt;			/* holds parsed and the JSON it points into */
} DefEntry;

#define DEF_CACHE_MAX 256

static HTAB *def_cache = NULL;
static MemoryContext def_cache_cxt = NULL;

/* Free cxt at the end of the transaction: a caller may still use it. */
static void
free_later(MemoryContext cxt)
{
	MemoryContextSetParent(cxt, TopTransactionContext);
}

static void
def_cache_make(void)
{
	HASHCTL		ctl;

	if (def_cache != NULL && hash_get_num_entries(def_cache) < DEF_CACHE_MAX)
		return;
	if (def_cache_cxt != NULL)
		free_later(def_cache_cxt);
	def_cache_cxt = AllocSetContextCreate(TopMemoryContext, "taskq definitions",
										  ALLOCSET_DEFAULT_SIZES);
	ctl.keysize = sizeof(DefKey);
	ctl.entrysize = sizeof(DefEntry);
	ctl.hcxt = def_cache_cxt;
	def_cache = hash_create("taskq definitions", 64, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/*
 * The parsed form of run's definition (its name and version), as parse
 * makes it from the JSON: from the cache when the run's row named the same
 * row of taskq.definitions (run->def_xmin); else parsed from run->def,
 * read first if the run came without it.  The result is read-only and
 * lives at least until the end of the transaction.
 */
void *
taskq_definition_parsed(TaskqRun *run, TaskqDefParser parse)
{
	DefKey		key;
	DefEntry   *e = NULL;
	bool		found;
	MemoryContext cxt,
				old;
	void	   *parsed;

	memset(&key, 0, sizeof(key));
	if (strlen(run->definition) < sizeof(key.name))
	{
		strlcpy(key.name, run->definition, sizeof(key.name));
		key.version = run->version;
		if (def_cache != NULL && TransactionIdIsNormal(run->def_xmin))
			e = hash_search(def_cache, &key, HASH_FIND, NULL);
		if (e != NULL && e->xmin == run->def_xmin && e->parse == parse)
			return e->parsed;
	}
	if (run->def == NULL)
		run->def = taskq_definition_version(run->definition, run->kind, run->version,
											&run->def_xmin);
	if (key.name[0] == '\0' || !TransactionIdIsNormal(run->def_xmin) ||
		TransactionIdIsCurrentTransactionId(run->def_xmin))
		return parse(run->def);

	def_cache_make();
	cxt = AllocSetContextCreate(def_cache_cxt, "taskq definition", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		parsed = parse(DatumGetJsonbPCopy(JsonbPGetDatum(run->def)));
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	e = hash_search(def_cache, &key, HASH_ENTER, &found);
	if (found)
		free_later(e->cxt);
	e->xmin = run->def_xmin;
	e->parse = parse;
	e->parsed = parsed;
	e->cxt = cxt;
	return parsed;
}
