/*-------------------------------------------------------------------------
 *
 * cron.h
 *	  Cron expressions of schedules: parsed, and their next tick after an
 *	  instant in a time zone (cron.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_CRON_H
#define TASKQ_CRON_H

#include "datatype/timestamp.h"
#include "pgtime.h"

typedef struct TaskqCron
{
	int			every_seconds;	/* 'N seconds': N (1-59); 0: the fields below */
	uint64		minutes;		/* bit m: minute m (0-59) */
	uint32		hours;			/* bit h: hour h (0-23) */
	uint32		days;			/* bit d: day of month d (1-31) */
	uint32		months;			/* bit m: month m (1-12) */
	uint32		weekdays;		/* bit d: day of week d (0-6, 0 Sunday) */
	bool		days_star;		/* day of month unrestricted (starts with '*') */
	bool		weekdays_star;	/* day of week likewise */
} TaskqCron;

/* Parse a cron expression (22023 naming the field and the bad value). */
extern void taskq_cron_parse(const char *expr, TaskqCron *out);

/* A time zone by name (22023 if unknown). */
extern pg_tz *taskq_cron_time_zone(const char *name);

/*
 * The first tick strictly after "after"; false if there is none within
 * the years searched (a day that never comes, such as 30 February).
 */
extern bool taskq_cron_next(const TaskqCron *cron, pg_tz *tz, TimestampTz after,
							TimestampTz *next);

/* "<name>/<tick as ISO 8601 UTC>": the id of the task of a tick */
extern char *taskq_cron_tick_id(const char *name, TimestampTz tick);

#endif							/* TASKQ_CRON_H */
