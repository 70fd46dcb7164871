/*-------------------------------------------------------------------------
 *
 * dependencies.c
 *	  SQL face of add_dependencies; the queue's graph (queue/graph.c) adds
 *	  the edges under the dependency-graph lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"

#include "common/args.h"
#include "queue/queue.h"
#include "workflow/workflow.h"

PG_FUNCTION_INFO_V1(taskq_add_dependencies);

/*
 * add_dependencies(after_ids text[], run_ids text[]) returns bigint
 *
 * Each run_ids[i] waits for after_ids[i].  Every run task must exist and not
 * have started; an after task that completed already satisfies the
 * dependency (nothing is added), one that aborted is refused.  A dependency
 * that exists already is not added again.  Returns the number of
 * dependencies added.
 */
Datum
taskq_add_dependencies(PG_FUNCTION_ARGS)
{
	List	   *afters;
	List	   *runs;
	int64		added;

	afters = taskq_text_array_arg(fcinfo, 0, "after_ids", TASKQ_MAX_ID_LEN);
	runs = taskq_text_array_arg(fcinfo, 1, "run_ids", TASKQ_MAX_ID_LEN);
	if (list_length(afters) != list_length(runs))
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("arrays \"after_ids\" and \"run_ids\" must have the same length"),
				 errdetail("\"after_ids\" has %d elements and \"run_ids\" %d.",
						   list_length(afters), list_length(runs))));
	if (afters == NIL)
		PG_RETURN_INT64(0);

	SPI_connect();
	taskq_refuse_run_tasks(runs, "add_dependencies");
	taskq_refuse_run_tasks(afters, "add_dependencies");
	added = taskq_add_dependency_pairs(afters, runs);
	SPI_finish();
	PG_RETURN_INT64(added);
}
