/*-------------------------------------------------------------------------
 *
 * spi_util.c
 *	  The prepared-plan cache and small helpers for reading SPI results and
 *	  checking function arguments.
 *
 * Every statement taskq runs is a TaskqPlan: prepared on first use in a
 * backend and kept with SPI_keepplan, so repeated calls never re-parse or
 * re-plan (the plan cache still re-plans after DDL on taskq.tasks).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "taskq.h"

/*
 * Run a cached statement; prepare it first if this backend has not yet.
 */
int
taskq_execute(TaskqPlan *plan, Datum *values, const char *nulls,
			  bool read_only, long tcount)
{
	int			rc;

	if (plan->plan == NULL)
	{
		/*
		 * A plan marked generic never gets custom plans.  That is for
		 * statements with no choice of plan to make (an INSERT from
		 * unnest(), a lookup in a small table), where the plan cache
		 * would otherwise plan afresh on every call whose custom plan
		 * merely looks cheaper: that planning was a fifth of the cost of
		 * a one-task insert_tasks.  Lookups in taskq.tasks keep the
		 * default: a generic plan made while the table was empty would
		 * scan it sequentially until the next ANALYZE.
		 */
		SPIPlanPtr	p = SPI_prepare_cursor(plan->sql, plan->nargs, plan->argtypes,
										   plan->generic ? CURSOR_OPT_GENERIC_PLAN : 0);

		if (p == NULL)
			elog(ERROR, "taskq: could not prepare statement: %s",
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(p) != 0)
			elog(ERROR, "taskq: could not keep prepared statement");
		plan->plan = p;
	}

	rc = SPI_execute_plan(plan->plan, values, nulls, read_only, tcount);
	if (rc < 0)
		elog(ERROR, "taskq: statement failed: %s", SPI_result_code_string(rc));
	return rc;
}

/* A column's datum; isnull may be NULL for a column that cannot be null. */
Datum
taskq_get_datum(int row, int col, bool *isnull)
{
	bool		dummy;

	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
						 col, isnull ? isnull : &dummy);
}

/* A text column as a palloc'd C string in the caller's context, or NULL. */
char *
taskq_get_text(int row, int col, bool *isnull)
{
	bool		dummy;
	Datum		d = taskq_get_datum(row, col, isnull ? isnull : &dummy);

	if (isnull ? *isnull : dummy)
		return NULL;
	return TextDatumGetCString(d);
}

int32
taskq_get_int32(int row, int col, bool *isnull)
{
	bool		dummy;
	Datum		d = taskq_get_datum(row, col, isnull ? isnull : &dummy);

	if (isnull ? *isnull : dummy)
		return 0;
	return DatumGetInt32(d);
}

bool
taskq_get_bool(int row, int col, bool *isnull)
{
	bool		dummy;
	Datum		d = taskq_get_datum(row, col, isnull ? isnull : &dummy);

	if (isnull ? *isnull : dummy)
		return false;
	return DatumGetBool(d);
}

/* A text[] column as a List of C strings (NULL elements skipped). */
List *
taskq_get_text_array(int row, int col)
{
	bool		isnull;
	Datum		d = taskq_get_datum(row, col, &isnull);

	return isnull ? NIL : taskq_text_array_list(d);
}

/* The non-null elements of a text[] datum, as a List of C strings. */
List *
taskq_text_array_list(Datum d)
{
	Datum	   *elems;
	bool	   *elnulls;
	int			n;
	List	   *result = NIL;

	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false,
					  TYPALIGN_INT, &elems, &elnulls, &n);
	for (int i = 0; i < n; i++)
		if (!elnulls[i])
			result = lappend(result, TextDatumGetCString(elems[i]));
	return result;
}

/* A List of C strings as a text[] datum; an empty list gives '{}'. */
Datum
taskq_text_array_datum(List *strings)
{
	int			n = list_length(strings);
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, strings)
		elems[i++] = CStringGetTextDatum((char *) lfirst(lc));
	return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false,
										   TYPALIGN_INT));
}

/* qsort comparator for an array of C strings, bytewise like COLLATE "C". */
int
taskq_compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* list_sort comparator for a List of C strings. */
int
taskq_compare_strings_lc(const ListCell *a, const ListCell *b)
{
	return strcmp((const char *) lfirst(a), (const char *) lfirst(b));
}

/* Is s one of the C strings of the list? */
bool
taskq_string_member(List *strings, const char *s)
{
	ListCell   *lc;

	foreach(lc, strings)
		if (strcmp(lfirst(lc), s) == 0)
			return true;
	return false;
}

/*
 * Check a task id given by the caller: not empty, not longer than the
 * documented limit.
 */
void
taskq_check_id(const char *id, const char *argname)
{
	size_t		len = strlen(id);

	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("task id in argument \"%s\" must not be empty", argname)));
	if (len > TASKQ_MAX_ID_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
				 errmsg("task id in argument \"%s\" is too long", argname),
				 errdetail("A task id is at most %d bytes; this one has %zu.",
						   TASKQ_MAX_ID_LEN, len)));
}

/* Raise the documented error for a NULL argument. */
void
taskq_require_arg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", argname)));
}

/*
 * A required, non-empty text argument of at most maxlen bytes, as a C
 * string.
 */
char *
taskq_text_arg(FunctionCallInfo fcinfo, int argno, const char *argname,
			   int maxlen)
{
	char	   *s;
	size_t		len;

	taskq_require_arg(fcinfo, argno, argname);
	s = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	len = strlen(s);
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must not be empty", argname)));
	if (len > (size_t) maxlen)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
				 errmsg("argument \"%s\" is too long", argname),
				 errdetail("It is at most %d bytes; this one has %zu.",
						   maxlen, len)));
	return s;
}

/*
 * A required text[] argument as a List of C strings; NULL or empty elements,
 * or elements longer than maxlen bytes, are refused.
 */
List *
taskq_text_array_arg(FunctionCallInfo fcinfo, int argno, const char *argname,
					 int maxlen)
{
	Datum	   *elems;
	bool	   *elnulls;
	int			n;
	List	   *result = NIL;

	taskq_require_arg(fcinfo, argno, argname);
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(argno), TEXTOID, -1, false,
					  TYPALIGN_INT, &elems, &elnulls, &n);
	for (int i = 0; i < n; i++)
	{
		char	   *s;
		size_t		len;

		if (elnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"%s\" must not contain null elements",
							argname)));
		s = TextDatumGetCString(elems[i]);
		len = strlen(s);
		if (len == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"%s\" must not contain empty strings",
							argname)));
		if (len > (size_t) maxlen)
			ereport(ERROR,
					(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
					 errmsg("element %d of argument \"%s\" is too long", i + 1,
							argname),
					 errdetail("It is at most %d bytes; this one has %zu.",
							   maxlen, len)));
		result = lappend(result, s);
	}
	return result;
}
