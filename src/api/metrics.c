/*-------------------------------------------------------------------------
 *
 * metrics.c
 *	  SQL face of taskq.metrics() and taskq.metrics_text(): the counters
 *	  and histograms of shared memory (ipc/metrics.c) and the gauges the
 *	  background worker last wrote (taskq.metric_gauges), as rows in
 *	  Prometheus' names, or as its text exposition format.
 *
 * Every action known from any source gets every counter, histogram and
 * gauge, 0 where nothing happened: the actions of the shared counters,
 * of the gauges' rows (the actions with unfinished tasks when they were
 * last counted) and of the tables that name actions (action_sources:
 * one line each).  A scrape reads shared memory and small tables, never
 * taskq.tasks, so its cost does not grow with the queue.  Locking: the
 * shared table's lock, shared, while its entries are copied
 * (ipc/metrics.c); the tables are read in the caller's snapshot.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/plan.h"
#include "ipc/metrics.h"

PG_FUNCTION_INFO_V1(taskq_metrics);
PG_FUNCTION_INFO_V1(taskq_metrics_text);

/*
 * The tables that name actions besides the tasks: every action they name
 * appears in the metrics, with zeros until something happens to it.
 */
static const char *const action_sources[] = {
	"SELECT g.action FROM taskq.metric_gauges AS g WHERE g.action OPERATOR(pg_catalog.<>) ''",
	"SELECT p.action FROM taskq.action_policies AS p",
	"SELECT f.action FROM taskq.flow_limits AS f",
};

typedef enum MetricKind
{
	KIND_COUNTER,
	KIND_GAUGE,
	KIND_HISTOGRAM
} MetricKind;

static const char *const kind_names[] = {"counter", "gauge", "histogram"};

typedef struct Family
{
	const char *name;
	MetricKind	kind;
	const char *help;
} Family;

/* The counters, in TaskqMetricCounter's order. */
static const Family counter_families[TASKQ_M_COUNTERS] = {
	{"taskq_tasks_inserted_total", KIND_COUNTER, "Tasks inserted, since the server started."},
	{"taskq_tasks_claimed_total", KIND_COUNTER, "Tries claimed by workers."},
	{"taskq_tasks_completed_total", KIND_COUNTER, "Tasks that ended completed."},
	{"taskq_tasks_aborted_total", KIND_COUNTER, "Tasks that ended aborted (dead letters): returned aborted, out of tries, cancelled, or by the abort of a predecessor."},
	{"taskq_tasks_retried_total", KIND_COUNTER, "Tries returned pending, for another try."},
	{"taskq_tasks_released_total", KIND_COUNTER, "Tries released unworked."},
	{"taskq_tasks_expired_total", KIND_COUNTER, "Leases that expired."},
	{"taskq_tasks_cancelled_total", KIND_COUNTER, "Tasks cancelled."},
	{"taskq_tasks_redriven_total", KIND_COUNTER, "Aborted tasks re-driven."},
};

static const Family histogram_families[TASKQ_H_COUNT] = {
	{"taskq_queue_wait_seconds", KIND_HISTOGRAM, "Seconds from a task being ready to its claim."},
	{"taskq_run_seconds", KIND_HISTOGRAM, "Seconds from a claim to its return by the worker."},
};

/* The gauges per action, by their names in taskq.metric_gauges. */
#define ACTION_GAUGES 5
static const Family action_gauge_families[ACTION_GAUGES] = {
	{"taskq_tasks_ready", KIND_GAUGE, "Tasks ready to be claimed, at the last refresh."},
	{"taskq_tasks_delayed", KIND_GAUGE, "Pending tasks whose not_before is to come, at the last refresh."},
	{"taskq_tasks_blocked", KIND_GAUGE, "Pending tasks waiting for predecessors, at the last refresh."},
	{"taskq_tasks_in_progress", KIND_GAUGE, "Tasks claimed and not returned, at the last refresh."},
	{"taskq_oldest_ready_age_seconds", KIND_GAUGE, "Seconds the oldest ready task had been ready, at the last refresh."},
};

/* The gauges without an action (action '' in taskq.metric_gauges). */
#define GLOBAL_GAUGES 2
static const Family global_gauge_families[GLOBAL_GAUGES] = {
	{"taskq_workers_live", KIND_GAUGE, "Workers that heartbeat (taskq.workers, not stale), at the last refresh."},
	{"taskq_workers_stale", KIND_GAUGE, "Workers not seen for three heartbeat intervals, at the last refresh."},
};

static const Family age_family = {
	"taskq_gauges_age_seconds", KIND_GAUGE,
	"Seconds since the background worker last refreshed the gauges."
};
static const Family overflow_family = {
	"taskq_metric_actions_overflow_total", KIND_COUNTER,
	"Times an action's counts went to action=\"\" because taskq.max_metric_actions actions have counters already (server-wide)."
};

/* One sample. */
typedef struct Sample
{
	const Family *family;
	const char *suffix;			/* "", "_bucket", "_sum", "_count" */
	const char *action;			/* NULL: no action label */
	const char *le;				/* NULL: no le label */
	double		value;
} Sample;

typedef struct Samples
{
	Sample	   *items;
	int			n;
	int			max;
} Samples;

static void
add(Samples *s, const Family *f, const char *suffix, const char *action, const char *le,
	double value)
{
	if (s->n == s->max)
	{
		s->max = Max(256, s->max * 2);
		s->items = s->items == NULL ? palloc(sizeof(Sample) * s->max) :
			repalloc(s->items, sizeof(Sample) * s->max);
	}
	s->items[s->n].family = f;
	s->items[s->n].suffix = suffix;
	s->items[s->n].action = action;
	s->items[s->n].le = le;
	s->items[s->n].value = value;
	s->n++;
}

static int
compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

typedef struct GaugeRow
{
	char	   *name;
	char	   *action;
	double		value;
} GaugeRow;

static int
compare_gauges(const void *a, const void *b)
{
	const GaugeRow *x = a;
	const GaugeRow *y = b;
	int			c = strcmp(x->name, y->name);

	return c != 0 ? c : strcmp(x->action, y->action);
}

/* The value of gauge name of action in rows, sorted (0 if none). */
static double
gauge_value(GaugeRow *rows, int n, const char *name, const char *action)
{
	GaugeRow	key = {(char *) name, (char *) action, 0};
	GaugeRow   *found = bsearch(&key, rows, n, sizeof(GaugeRow), compare_gauges);

	return found != NULL ? found->value : 0;
}

static int
compare_counted(const void *a, const void *b)
{
	return strcmp(((const TaskqMetricAction *) a)->action,
				  ((const TaskqMetricAction *) b)->action);
}

/*
 * Every sample, family by family (the order of the text format), each
 * family's actions in byte order.  Runs SPI: the caller connected.
 */
static Samples
collect(void)
{
	static TaskqPlan gauges_plan = {
		"SELECT g.name, g.action, g.value,"
		"       pg_catalog.date_part('epoch', pg_catalog.now() OPERATOR(pg_catalog.-)"
		"                            pg_catalog.max(g.refreshed_at) OVER ())"
		"  FROM taskq.metric_gauges AS g",
		0, {0}
	};
	static TaskqPlan actions_plan = {NULL, 0, {0}};
	Samples		s = {NULL, 0, 0};
	int			ncounted;
	TaskqMetricAction *counted = taskq_metrics_read(MyDatabaseId, &ncounted);
	TaskqMetricAction zero;
	GaugeRow   *gauges;
	int			ngauges;
	bool		has_age = false;
	double		age = 0;
	char	  **actions;
	int			nactions = 0;
	TaskqMetricAction **values;

	/* the gauges' rows */
	taskq_execute(&gauges_plan, NULL, NULL, true, 0);
	ngauges = (int) SPI_processed;
	gauges = palloc(sizeof(GaugeRow) * Max(ngauges, 1));
	for (int i = 0; i < ngauges; i++)
	{
		bool		isnull;

		gauges[i].name = taskq_get_text(i, 1, NULL);
		gauges[i].action = taskq_get_text(i, 2, NULL);
		gauges[i].value = DatumGetFloat8(taskq_get_datum(i, 3, &isnull));
		age = DatumGetFloat8(taskq_get_datum(i, 4, &isnull));
		has_age = true;
	}
	if (ngauges > 1)
		qsort(gauges, ngauges, sizeof(GaugeRow), compare_gauges);
	if (ncounted > 1)
		qsort(counted, ncounted, sizeof(TaskqMetricAction), compare_counted);

	/* the actions: counted, and named by a source */
	if (actions_plan.sql == NULL)
	{
		StringInfoData sql;

		initStringInfo(&sql);
		appendStringInfoString(&sql, "SELECT a.action FROM (");
		for (int i = 0; i < lengthof(action_sources); i++)
			appendStringInfo(&sql, "%s%s", i > 0 ? " UNION " : "", action_sources[i]);
		appendStringInfoString(&sql, ") AS a(action)");
		actions_plan.sql = MemoryContextStrdup(TopMemoryContext, sql.data);
	}
	taskq_execute(&actions_plan, NULL, NULL, true, 0);
	actions = palloc(sizeof(char *) * (SPI_processed + ncounted + 1));
	for (uint64 i = 0; i < SPI_processed; i++)
		actions[nactions++] = taskq_get_text(i, 1, NULL);
	for (int i = 0; i < ncounted; i++)
		actions[nactions++] = counted[i].action;
	qsort(actions, nactions, sizeof(char *), compare_strings);
	{
		int			k = 0;

		for (int i = 0; i < nactions; i++)
			if (k == 0 || strcmp(actions[k - 1], actions[i]) != 0)
				actions[k++] = actions[i];
		nactions = k;
	}
	memset(&zero, 0, sizeof(zero));
	values = palloc(sizeof(TaskqMetricAction *) * Max(nactions, 1));
	for (int i = 0; i < nactions; i++)
	{
		TaskqMetricAction key;
		TaskqMetricAction *found;

		key.action = actions[i];
		found = ncounted == 0 ? NULL :
			bsearch(&key, counted, ncounted, sizeof(TaskqMetricAction), compare_counted);
		values[i] = found != NULL ? found : &zero;
	}

	for (int c = 0; c < TASKQ_M_COUNTERS; c++)
		for (int i = 0; i < nactions; i++)
			add(&s, &counter_families[c], "", actions[i], NULL,
				(double) values[i]->v.counters[c]);
	for (int h = 0; h < TASKQ_H_COUNT; h++)
		for (int i = 0; i < nactions; i++)
		{
			int64		cumulative = 0;

			for (int b = 0; b <= TASKQ_H_BOUNDS; b++)
			{
				cumulative += values[i]->v.buckets[h][b];
				add(&s, &histogram_families[h], "_bucket", actions[i],
					b < TASKQ_H_BOUNDS ? taskq_metric_bound_labels[b] : "+Inf",
					(double) cumulative);
			}
			add(&s, &histogram_families[h], "_sum", actions[i], NULL, values[i]->v.sums[h]);
			add(&s, &histogram_families[h], "_count", actions[i], NULL, (double) cumulative);
		}
	for (int g = 0; g < ACTION_GAUGES; g++)
		for (int i = 0; i < nactions; i++)
			add(&s, &action_gauge_families[g], "", actions[i], NULL,
				gauge_value(gauges, ngauges, action_gauge_families[g].name, actions[i]));
	for (int g = 0; g < GLOBAL_GAUGES; g++)
		add(&s, &global_gauge_families[g], "", NULL, NULL,
			gauge_value(gauges, ngauges, global_gauge_families[g].name, ""));
	if (has_age)
		add(&s, &age_family, "", NULL, NULL, age);
	add(&s, &overflow_family, "", NULL, NULL, (double) taskq_metrics_overflows());
	return s;
}

/* The labels of a sample as a JSON object. */
static Datum
labels_jsonb(const Sample *x)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	if (x->action != NULL)
	{
		appendStringInfoString(&buf, "\"action\": ");
		escape_json(&buf, x->action);
	}
	if (x->le != NULL)
	{
		appendStringInfo(&buf, "%s\"le\": ", x->action != NULL ? ", " : "");
		escape_json(&buf, x->le);
	}
	appendStringInfoChar(&buf, '}');
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
}

/*
 * taskq.metrics()
 *	 RETURNS TABLE (name text, labels jsonb, kind text, value double precision)
 */
Datum
taskq_metrics(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Samples		s;

	MemoryContext row_context;
	MemoryContext old;

	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	s = collect();
	/* each row's values are made in a context of their own, reset after it */
	row_context = AllocSetContextCreate(CurrentMemoryContext, "taskq metrics row",
										ALLOCSET_SMALL_SIZES);
	for (int i = 0; i < s.n; i++)
	{
		Sample	   *x = &s.items[i];
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};

		old = MemoryContextSwitchTo(row_context);
		values[0] = CStringGetTextDatum(psprintf("%s%s", x->family->name, x->suffix));
		values[1] = labels_jsonb(x);
		values[2] = CStringGetTextDatum(kind_names[x->family->kind]);
		values[3] = Float8GetDatum(x->value);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		MemoryContextSwitchTo(old);
		MemoryContextReset(row_context);
	}
	SPI_finish();
	return (Datum) 0;
}

/* A label value escaped as the text format wants: \\, \" and \n. */
static void
append_label_value(StringInfo buf, const char *v)
{
	appendStringInfoChar(buf, '"');
	for (const char *p = v; *p; p++)
	{
		if (*p == '\\')
			appendStringInfoString(buf, "\\\\");
		else if (*p == '"')
			appendStringInfoString(buf, "\\\"");
		else if (*p == '\n')
			appendStringInfoString(buf, "\\n");
		else
			appendStringInfoChar(buf, *p);
	}
	appendStringInfoChar(buf, '"');
}

static void
append_value(StringInfo buf, double v)
{
	if (isnan(v))
		appendStringInfoString(buf, "NaN");
	else if (isinf(v))
		appendStringInfoString(buf, v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 9007199254740992.0)
		appendStringInfo(buf, "%.0f", v);
	else
		appendStringInfo(buf, "%.17g", v);
}

/* taskq.metrics_text() RETURNS text: the text exposition format (0.0.4). */
Datum
taskq_metrics_text(PG_FUNCTION_ARGS)
{
	StringInfoData buf;
	Samples		s;
	const Family *family = NULL;
	MemoryContext caller = CurrentMemoryContext;
	text	   *result;

	SPI_connect();
	s = collect();
	initStringInfo(&buf);
	for (int i = 0; i < s.n; i++)
	{
		Sample	   *x = &s.items[i];

		if (x->family != family)
		{
			family = x->family;
			appendStringInfo(&buf, "# HELP %s ", family->name);
			/* the help text escapes \ and newline */
			for (const char *p = family->help; *p; p++)
			{
				if (*p == '\\')
					appendStringInfoString(&buf, "\\\\");
				else if (*p == '\n')
					appendStringInfoString(&buf, "\\n");
				else
					appendStringInfoChar(&buf, *p);
			}
			appendStringInfo(&buf, "\n# TYPE %s %s\n", family->name, kind_names[family->kind]);
		}
		appendStringInfo(&buf, "%s%s", family->name, x->suffix);
		if (x->action != NULL || x->le != NULL)
		{
			appendStringInfoChar(&buf, '{');
			if (x->action != NULL)
			{
				appendStringInfoString(&buf, "action=");
				append_label_value(&buf, x->action);
			}
			if (x->le != NULL)
			{
				appendStringInfoString(&buf, x->action != NULL ? ",le=" : "le=");
				append_label_value(&buf, x->le);
			}
			appendStringInfoChar(&buf, '}');
		}
		appendStringInfoChar(&buf, ' ');
		append_value(&buf, x->value);
		appendStringInfoChar(&buf, '\n');
	}
	/* SPI_finish frees what was made since SPI_connect */
	MemoryContextSwitchTo(caller);
	result = cstring_to_text_with_len(buf.data, buf.len);
	SPI_finish();
	PG_RETURN_TEXT_P(result);
}
