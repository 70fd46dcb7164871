/*-------------------------------------------------------------------------
 *
 * results.c
 *	  What a task's predecessors produced: the id, outcome, status text
 *	  and result of each direct predecessor, for the owner of the task.
 *
 * A return stores its result in the task's row (return.c, complete.c);
 * this file reads those of a task's predecessors.  Predecessors are the
 * tasks that name it in to_signal_after, found through the GIN index
 * tasks_successors_idx.  Only the task's owner reads them: the caller's
 * token must be the task's performance token (the last one, also after
 * the task finished).  Locking: none; the rows are read with the
 * statement's snapshot, so a predecessor's completion that committed
 * before the successor was claimed is seen with its result.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/uuid.h"

#include "common/plan.h"
#include "queue/queue.h"
#include "queue/queue_internal.h"

static TaskqPlan token_plan = {
	"SELECT performance_token FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/* One row per direct predecessor, in id order; unfinished: no result. */
static TaskqPlan predecessors_plan = {
	"SELECT p.id, p.status_code, p.status,"
	"       CASE WHEN p.status_code OPERATOR(pg_catalog.>=) 'completed'::taskq.status"
	"            THEN p.result END"
	"  FROM taskq.tasks AS p"
	" WHERE p.to_signal_after OPERATOR(pg_catalog.@>) ARRAY[$1]::text[]"
	" ORDER BY p.id",
	1, {TEXTOID}
};

/*
 * The predecessors of task id, whose owner holds token, into out (columns
 * id, status_code, status, result).  42704 for an unknown id, TQ001 for
 * another token.
 */
void
taskq_read_predecessor_results(const char *id, pg_uuid_t *token, Tuplestorestate *out,
						  TupleDesc outdesc)
{
	Datum		arg = CStringGetTextDatum(id);

	taskq_execute(&token_plan, &arg, NULL, true, 1);
	taskq_check_read_token(id, 1, token,
						   "Only the task's owner reads its predecessors' results, with the token its claim gave.");

	taskq_execute(&predecessors_plan, &arg, NULL, true, 0);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		Datum		values[4];
		bool		nulls[4];

		for (int c = 0; c < 4; c++)
			values[c] = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc,
									  c + 1, &nulls[c]);
		tuplestore_putvalues(out, outdesc, values, nulls);
	}
}

/*
 * The results of the tasks "<prefix><first>" .. "<prefix><last>", in that
 * order, as one JSON array (null for a task not completed), with how many
 * completed and the number of the first that did not: a map state's items
 * gathered when the last finished, in one statement.  No locking: the
 * tasks are finished, read with the statement's snapshot.
 */
static TaskqPlan range_results_plan = {
	"SELECT pg_catalog.jsonb_agg(CASE WHEN t.status_code OPERATOR(pg_catalog.=) 'completed'::taskq.status"
	"                                 THEN t.result END ORDER BY g.n),"
	"       pg_catalog.count(*) FILTER (WHERE t.status_code OPERATOR(pg_catalog.=) 'completed'::taskq.status),"
	"       pg_catalog.min(g.n) FILTER (WHERE t.status_code IS DISTINCT FROM 'completed'::taskq.status)"
	"  FROM pg_catalog.generate_series($2, $3) AS g(n)"
	"  LEFT JOIN taskq.tasks AS t"
	"    ON t.id OPERATOR(pg_catalog.=) ($1 OPERATOR(pg_catalog.||) g.n::text)",
	3, {TEXTOID, INT4OID, INT4OID}
};

Jsonb *
taskq_read_range_results(const char *prefix, int32 first, int32 last, int64 *completed,
						 int32 *first_failed)
{
	Datum		args[3];
	bool		isnull;
	Datum		d;
	Jsonb	   *results;

	args[0] = CStringGetTextDatum(prefix);
	args[1] = Int32GetDatum(first);
	args[2] = Int32GetDatum(last);
	taskq_execute(&range_results_plan, args, NULL, false, 1);	/* sees this call's returns */
	d = taskq_get_datum(0, 1, &isnull);
	results = isnull ? NULL : DatumGetJsonbPCopy(d);
	d = taskq_get_datum(0, 2, &isnull);
	*completed = isnull ? 0 : DatumGetInt64(d);
	d = taskq_get_datum(0, 3, &isnull);
	*first_failed = isnull ? 0 : DatumGetInt32(d);
	return results;
}
