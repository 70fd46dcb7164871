/*-------------------------------------------------------------------------
 *
 * task_actions.c
 *	  The actions of given tasks, as the per-action limits on workers
 *	  (api/action_limits.c, taskq.action_grants) ask for them: which of a
 *	  list of tasks are of an action outside a set.
 *
 * The limits are the SQL entry points' business; what they read of the
 * task rows is the queue's, so that only the queue names its table.  One
 * statement in the caller's transaction, between its SPI_connect() and
 * SPI_finish(); a read under the statement's snapshot, without a row lock
 * (the return or extension that follows locks its rows itself).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "common/plan.h"
#include "queue/queue.h"


/* Tasks named in $1 whose action is not in $2, in id order. */
static TaskqPlan foreign_tasks_plan = {
	"SELECT t.id FROM taskq.tasks AS t"
	" WHERE t.id OPERATOR(pg_catalog.=) ANY ($1)"
	"   AND t.action OPERATOR(pg_catalog.<>) ALL ($2)"
	" ORDER BY t.id",
	2, {TEXTARRAYOID, TEXTARRAYOID}
};

/*
 * Of ids (C strings), the tasks whose action is none of the nactions
 * actions, as a List of C strings in id order, in the memory context
 * current after the statement (SPI's: the caller copies what it keeps past
 * SPI_finish()).  Unknown ids are left out.
 */
List *
taskq_tasks_not_of_actions(List *ids, char *const *actions, int nactions)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(nactions, 1));
	Datum		values[2];
	List	   *result = NIL;

	for (int i = 0; i < nactions; i++)
		elems[i] = CStringGetTextDatum(actions[i]);
	values[0] = taskq_text_array_datum(ids);
	values[1] = PointerGetDatum(construct_array(elems, nactions, TEXTOID, -1,
												false, TYPALIGN_INT));
	taskq_execute(&foreign_tasks_plan, values, NULL, true, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
		result = lappend(result, taskq_get_text(i, 1, NULL));
	return result;
}
