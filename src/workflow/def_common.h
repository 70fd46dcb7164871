/*-------------------------------------------------------------------------
 *
 * def_common.h
 *	  Definitions as every workflow kind has them: stored in versions,
 *	  read, and their parsed form kept per backend (definitions.c); the
 *	  checks their parsers share (def_common.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_DEF_COMMON_H
#define TASKQ_DEF_COMMON_H

#include "utils/jsonb.h"

#include "common/pg_compat.h"
#include "workflow/run.h"

/* Definitions: a new version of name, or the one a run names (definitions.c). */
/* A definition refused (22023), with a message and detail composed by the caller. */
extern TASKQ_NORETURN void taskq_def_bad(const char *msg, const char *detail);

extern int32 taskq_definition_store(const char *name, const char *kind, Jsonb *def,
									 bool given, int32 version);
extern Jsonb *taskq_definition_latest(const char *name, const char *kind,
									  int32 *version, TransactionId *xmin);
extern Jsonb *taskq_definition_version(const char *name, const char *kind,
									   int32 version, TransactionId *xmin);
extern const char *taskq_kind_noun(const char *kind);

/* A kind's parser of its definitions; its result is kept per backend. */
typedef void *(*TaskqDefParser) (Jsonb *def);
extern void *taskq_definition_parsed(TaskqRun *run, TaskqDefParser parse);

/* The checks of a kind's parser: 22023 naming where, with check (def_common.c). */
extern bool taskq_def_opt_int(JsonbContainer *obj, const char *key, const char *where,
							  int32 *out, bool positive, bool check);
extern Jsonb *taskq_def_opt_retry(JsonbContainer *obj, const char *key, const char *where,
								  bool check);
extern void taskq_def_check_keys(JsonbContainer *obj, const char *const *known,
								 const char *where);
extern void taskq_check_definition_name(const char *name, const char *what,
										const char *where);
extern bool taskq_def_opt_child(JsonbContainer *obj, const char *where, char **kind,
								char **name, bool check);

#endif							/* TASKQ_DEF_COMMON_H */
