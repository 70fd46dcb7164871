/*-------------------------------------------------------------------------
 *
 * args.h
 *	  Checks of SQL functions' arguments, and lists of C strings (args.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_ARGS_H
#define TASKQ_ARGS_H

#include "fmgr.h"
#include "nodes/pg_list.h"

extern void taskq_check_id(const char *id, const char *argname);
extern char *taskq_text_arg(FunctionCallInfo fcinfo, int argno,
							const char *argname, int maxlen);
extern void taskq_require_arg(FunctionCallInfo fcinfo, int argno,
							  const char *argname);
extern List *taskq_text_array_arg(FunctionCallInfo fcinfo, int argno,
								  const char *argname, int maxlen);
extern int	taskq_compare_strings(const void *a, const void *b);
extern int	taskq_compare_strings_lc(const ListCell *a, const ListCell *b);
extern bool taskq_string_member(List *strings, const char *s);
extern List *taskq_sort_strings(List *strings);

#endif							/* TASKQ_ARGS_H */
