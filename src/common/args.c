/*-------------------------------------------------------------------------
 *
 * args.c
 *	  Checks of the arguments SQL functions are given, and small helpers for
 *	  lists of C strings.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "common/args.h"
#include "common/limits.h"

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

/* Sort a list of C strings bytewise, in place; returns the list. */
List *
taskq_sort_strings(List *strings)
{
	if (list_length(strings) > 1)
		list_sort(strings, taskq_compare_strings_lc);
	return strings;
}
