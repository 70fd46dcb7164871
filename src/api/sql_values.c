/*-------------------------------------------------------------------------
 *
 * sql_values.c
 *	  Small conversions the SQL faces share: optional arguments, and text
 *	  results made while SPI is connected and returned after SPI_finish.
 *
 * No state, no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "api/api.h"

/* An optional jsonb argument: NULL for SQL NULL. */
Jsonb *
taskq_jsonb_arg(FunctionCallInfo fcinfo, int argno)
{
	return PG_ARGISNULL(argno) ? NULL : PG_GETARG_JSONB_P(argno);
}

/* An optional text argument: NULL for SQL NULL. */
char *
taskq_opt_text_arg(FunctionCallInfo fcinfo, int argno)
{
	return PG_ARGISNULL(argno) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/*
 * s (made in SPI's memory, which SPI_finish frees) copied into cxt, the
 * function's own context; NULL stays NULL.
 */
char *
taskq_copy_out(MemoryContext cxt, const char *s)
{
	return s ? MemoryContextStrdup(cxt, s) : NULL;
}

/* The function's result: s as text, or SQL NULL for NULL. */
Datum
taskq_text_or_null(FunctionCallInfo fcinfo, const char *s)
{
	if (s == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(s));
}
