/*-------------------------------------------------------------------------
 *
 * metrics.h
 *	  Counters and histograms per database and action since the server
 *	  started, in shared memory, bumped when a transaction commits
 *	  (metrics.c).
 *
 * The queue notes what a transaction did (taskq_metric_count,
 * taskq_metric_observe) in backend-local memory; the commit adds it to
 * the shared table, a rollback (of the transaction or of a
 * subtransaction) drops it.  Without shared memory (taskq not preloaded)
 * nothing is noted.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_METRICS_H
#define TASKQ_METRICS_H

#include "datatype/timestamp.h"

/* The counters of an action, in the order metrics() lists them. */
typedef enum TaskqMetricCounter
{
	TASKQ_M_INSERTED,
	TASKQ_M_CLAIMED,
	TASKQ_M_COMPLETED,
	TASKQ_M_ABORTED,
	TASKQ_M_RETRIED,
	TASKQ_M_RELEASED,
	TASKQ_M_EXPIRED,
	TASKQ_M_CANCELLED,
	TASKQ_M_REDRIVEN
} TaskqMetricCounter;

#define TASKQ_M_COUNTERS (TASKQ_M_REDRIVEN + 1)

/* The histograms of an action. */
typedef enum TaskqMetricHistogram
{
	TASKQ_H_QUEUE_WAIT,			/* ready -> claimed */
	TASKQ_H_RUN					/* claimed -> returned */
} TaskqMetricHistogram;

#define TASKQ_H_COUNT (TASKQ_H_RUN + 1)

/* Upper bounds (seconds) of the buckets; one more bucket is +Inf. */
#define TASKQ_H_BOUNDS 16
extern const double taskq_metric_bounds[TASKQ_H_BOUNDS];
extern const char *const taskq_metric_bound_labels[TASKQ_H_BOUNDS];

typedef struct TaskqMetricValues
{
	int64		counters[TASKQ_M_COUNTERS];
	int64		buckets[TASKQ_H_COUNT][TASKQ_H_BOUNDS + 1];	/* not cumulative */
	double		sums[TASKQ_H_COUNT];
} TaskqMetricValues;

/* One action's values as a reader copied them. */
typedef struct TaskqMetricAction
{
	char	   *action;			/* "": actions past the table's size */
	TaskqMetricValues v;
} TaskqMetricAction;

/* The hot paths: note what the current transaction did (len -1: strlen). */
extern void taskq_metric_count(const char *action, int len, TaskqMetricCounter c, int64 n);
extern void taskq_metric_count_result(int row, int col, TaskqMetricCounter c);
extern void taskq_metric_observe(const char *action, int len, TaskqMetricHistogram h,
								 TimestampTz from, TimestampTz to);

/* Readers: this database's actions (palloc'd), and how often one overflowed. */
extern TaskqMetricAction *taskq_metrics_read(Oid dboid, int *n);
extern int64 taskq_metrics_overflows(void);
extern bool taskq_metrics_available(void);

/* From _PG_init: shared memory (if preloaded) and the transaction callbacks. */
extern void taskq_metrics_init(bool preloaded);

#endif							/* TASKQ_METRICS_H */
