/*-------------------------------------------------------------------------
 *
 * local_table.c
 *	  Backend-local hash tables keyed by short strings, made on first use
 *	  and kept for the life of the backend.
 *
 * Several paths remember small facts between calls, keyed by a task id or
 * an action's name: the worker's announcements (worker/announce.c), the wide joins
 * this backend met (queue/signal.c), where its claims wrote their rows (the direct paths).
 * Each is a hint or a to-do list that the backend may start over at any
 * time, so a table past its bound is simply emptied rather than evicted
 * entry by entry.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "common/local_table.h"

/*
 * The entry for key (a NUL-terminated string) in *table, entered if new
 * (*found says which); NULL if key does not fit in keysize.  The table is
 * made on first use; with max > 0 it is emptied first when it holds max
 * entries.
 */
void *
taskq_local_enter(HTAB **table, const char *name, Size keysize, Size entrysize,
				  long max, const char *key, bool *found)
{
	if (strlen(key) >= keysize)
		return NULL;
	if (*table != NULL && max > 0 && hash_get_num_entries(*table) >= max)
	{
		hash_destroy(*table);
		*table = NULL;
	}
	if (*table == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = keysize;
		ctl.entrysize = entrysize;
		ctl.hcxt = TopMemoryContext;
		*table = hash_create(name, 64, &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	return hash_search(*table, key, HASH_ENTER, found);
}

/* Search table (which may not be made yet) for key with action. */
static void *
local_search(HTAB *table, Size keysize, const char *key, HASHACTION action)
{
	if (table == NULL || strlen(key) >= keysize)
		return NULL;
	return hash_search(table, key, action, NULL);
}

/* The entry for key in table, or NULL. */
void *
taskq_local_find(HTAB *table, Size keysize, const char *key)
{
	return local_search(table, keysize, key, HASH_FIND);
}

/*
 * Remove the entry for key from table, copying it to *out (entrysize
 * bytes); false if there is none.  For facts used once: the table then
 * holds only what is still to be used, and stays small.
 */
bool
taskq_local_take(HTAB *table, Size keysize, const char *key, void *out, Size entrysize)
{
	/* a removed entry stays readable until the table's next insert */
	void	   *entry = local_search(table, keysize, key, HASH_REMOVE);

	if (entry == NULL)
		return false;
	memcpy(out, entry, entrysize);
	return true;
}
