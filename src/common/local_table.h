/*-------------------------------------------------------------------------
 *
 * local_table.h
 *	  Backend-local hash tables keyed by short strings, emptied past a
 *	  bound (local_table.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_LOCAL_TABLE_H
#define TASKQ_LOCAL_TABLE_H

#include "utils/hsearch.h"

extern void *taskq_local_enter(HTAB **table, const char *name, Size keysize,
							   Size entrysize, long max, const char *key, bool *found);
extern void *taskq_local_find(HTAB *table, Size keysize, const char *key);
extern bool taskq_local_take(HTAB *table, Size keysize, const char *key,
							 void *out, Size entrysize);

#endif							/* TASKQ_LOCAL_TABLE_H */
