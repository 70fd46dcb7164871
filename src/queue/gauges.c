/*-------------------------------------------------------------------------
 *
 * gauges.c
 *	  The gauges of taskq.metrics() counted from the task rows: per action,
 *	  the tasks ready, delayed, blocked and in progress, and the age of the
 *	  oldest ready one, written into taskq.metric_gauges, which a scrape
 *	  reads instead of counting taskq.tasks.
 *
 * The background worker calls taskq_refresh_gauges every
 * taskq.metrics_interval, in a transaction of its own, between its
 * SPI_connect() and SPI_finish(); the worker then adds the rows that are
 * its own (the workers registry's).  The refresh replaces every row of the
 * table; a scrape sees the last committed refresh whole.  Each count walks
 * a partial index: the ready index (ready and delayed: the pending tasks
 * with no predecessor left, split by not_before), the lease index (in
 * progress) and the blocked index (pending with predecessors left), so it
 * costs the size of those sets, never the finished tasks'.  It takes no lock
 * but the table's: a refresh never waits for a claim or a return.
 *
 * The oldest ready task's age runs from its not_before, as in the view
 * taskq.action_stats: the ready index holds it, so that the counts of
 * ready and delayed tasks and that age are one scan of the index, without
 * the rows where the visibility map allows (an index-only scan).  Counting
 * still costs the size of the sets: about a second per million ready tasks
 * on a small machine, which is why the worker spaces its refreshes by ten
 * times the last one's duration at least (worker/loop.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "utils/lsyscache.h"

#include "common/plan.h"
#include "queue/queue.h"

static TaskqPlan clear_plan = {
	"DELETE FROM taskq.metric_gauges",
	0, {0}
};

#define PENDING "t.status_code OPERATOR(pg_catalog.=) 'pending'::taskq.status"

static TaskqPlan refresh_plan = {
	"WITH r AS ("
	"  SELECT t.action,"
	"         pg_catalog.count(*) FILTER (WHERE t.not_before OPERATOR(pg_catalog.<=) pg_catalog.now()) AS ready,"
	"         pg_catalog.count(*) FILTER (WHERE t.not_before OPERATOR(pg_catalog.>) pg_catalog.now()) AS delayed,"
	"         pg_catalog.min(t.not_before)"
	"           FILTER (WHERE t.not_before OPERATOR(pg_catalog.<=) pg_catalog.now()) AS oldest"
	"    FROM taskq.tasks AS t"
	"   WHERE " PENDING " AND t.num_signals OPERATOR(pg_catalog.=) 0"
	"   GROUP BY t.action),"
	" b AS ("
	"  SELECT t.action, pg_catalog.count(*) AS n FROM taskq.tasks AS t"
	"   WHERE " PENDING " AND t.num_signals OPERATOR(pg_catalog.>) 0"
	"   GROUP BY t.action),"
	" p AS ("
	"  SELECT t.action, pg_catalog.count(*) AS n FROM taskq.tasks AS t"
	"   WHERE t.status_code OPERATOR(pg_catalog.=) 'in_progress'::taskq.status"
	"   GROUP BY t.action)"
	" INSERT INTO taskq.metric_gauges (name, action, value, refreshed_at)"
	" SELECT g.name, g.action, g.value, pg_catalog.now() FROM ("
	"  SELECT 'taskq_tasks_ready' AS name, r.action, r.ready::pg_catalog.float8 AS value FROM r"
	"  UNION ALL SELECT 'taskq_tasks_delayed', r.action, r.delayed::pg_catalog.float8 FROM r"
	"  UNION ALL SELECT 'taskq_oldest_ready_age_seconds', r.action,"
	"         COALESCE(pg_catalog.date_part('epoch', pg_catalog.now() OPERATOR(pg_catalog.-) r.oldest), 0)"
	"    FROM r"
	"  UNION ALL SELECT 'taskq_tasks_blocked', b.action, b.n::pg_catalog.float8 FROM b"
	"  UNION ALL SELECT 'taskq_tasks_in_progress', p.action, p.n::pg_catalog.float8 FROM p) AS g"
	" WHERE g.value OPERATOR(pg_catalog.<>) 0",
	0, {0}
};

/*
 * Does this database's schema have taskq.metric_gauges (0.6)?  Until
 * ALTER EXTENSION taskq UPDATE makes it, nothing is refreshed.
 */
bool
taskq_gauges_installed(void)
{
	Oid			nsp = get_namespace_oid("taskq", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("metric_gauges", nsp));
}

/*
 * Replace the rows of taskq.metric_gauges with the counts of the task
 * rows now (the caller checked taskq_gauges_installed).  Returns the
 * number of rows written.
 */
uint64
taskq_refresh_gauges(void)
{
	taskq_execute(&clear_plan, NULL, NULL, false, 0);
	taskq_execute(&refresh_plan, NULL, NULL, false, 0);
	return SPI_processed;
}
