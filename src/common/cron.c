/*-------------------------------------------------------------------------
 *
 * cron.c
 *	  Cron expressions of schedules: parsed into sets of minutes, hours,
 *	  days and months, and the next tick after an instant in a time zone.
 *
 * An expression is five fields (minute hour day-of-month month
 * day-of-week), each '*' or a list of values, ranges "a-b" and steps
 * ("a-b/n"; "a/n" from a to the field's end; '*' followed by "/n"), with the names
 * JAN..DEC and SUN..SAT in any case, and 7 for Sunday as 0; or @hourly,
 * @daily, @weekly, @monthly; or 'N seconds' (1-59), ticking at the
 * multiples of N seconds since the Unix epoch.  When both day fields are
 * restricted (neither starts with '*'), a day matches if either does
 * (Vixie cron's rule); otherwise both must.
 *
 * The fields are read as the wall-clock time of the schedule's time zone,
 * through PostgreSQL's own time zone code (pg_localtime and
 * pg_next_dst_boundary, which DetermineTimeZoneOffset uses too): never the
 * C library's, whose zone data may differ from the server's.  A local time
 * that a change of offset skips (spring forward) fires at the first
 * instant after the gap; one that occurs twice (fall back) fires once, at
 * its first occurrence.  The search walks the local calendar day by day
 * from the local time of "after", trying the matching hours and minutes
 * of each matching day in order; local times map to instants in an order
 * that never goes back (a gap maps to its end, a repeated time to its
 * first occurrence), so the first candidate later than "after" is the next
 * tick.  It gives up after CRON_MAX_DAYS (enough for 29 February across a
 * century year that is not a leap year).
 *
 * Pure: no SQL, no shared state, no locks; errors are ereport 22023 naming
 * the field and the bad value.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "common/cron.h"

#define CRON_MAX_LEN	1000
#define CRON_MAX_DAYS	(366 * 9)

typedef struct CronField
{
	const char *name;			/* as errors name it */
	int			min;
	int			max;
	const char *const *names;	/* three-letter names of min.. or NULL */
} CronField;

static const char *const month_names[] = {
	"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC", NULL
};
static const char *const day_names[] = {
	"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", NULL
};

static const CronField cron_fields[5] = {
	{"minute", 0, 59, NULL},
	{"hour", 0, 23, NULL},
	{"day-of-month", 1, 31, NULL},
	{"month", 1, 12, month_names},
	{"day-of-week", 0, 7, day_names},
};

static void
field_error(const CronField *f, const char *value, const char *expr, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid %s field \"%s\" in cron expression \"%s\"",
					f->name, value, expr),
			 errdetail_internal("%s", detail)));
}

/* One value of a field (a number or a name) from s[0..len). */
static int
field_value(const CronField *f, const char *s, int len, const char *elem, const char *expr)
{
	int			v = 0;

	if (len == 0)
		field_error(f, elem, expr, "A value is missing.");
	if (isdigit((unsigned char) s[0]))
	{
		for (int i = 0; i < len; i++)
		{
			if (!isdigit((unsigned char) s[i]))
				field_error(f, elem, expr, psprintf("\"%.*s\" is not a number.", len, s));
			v = v * 10 + (s[i] - '0');
			if (v > 1000)
				break;
		}
		if (v < f->min || v > f->max)
			field_error(f, elem, expr,
						psprintf("%.*s is out of range: the %s is %d to %d.",
								 len, s, f->name, f->min, f->max));
		return v;
	}
	if (f->names != NULL && len == 3)
		for (int i = 0; f->names[i] != NULL; i++)
			if (pg_strncasecmp(s, f->names[i], 3) == 0)
				return f->min + i;
	field_error(f, elem, expr,
				f->names != NULL
				? psprintf("\"%.*s\" is neither a number nor a name of a %s.", len, s,
						   f == &cron_fields[3] ? "month" : "day")
				: psprintf("\"%.*s\" is not a number.", len, s));
	return 0;					/* not reached */
}

/* One field: its values as bits, *star if it starts with '*'. */
static uint64
parse_field(const CronField *f, const char *text, const char *expr, bool *star)
{
	uint64		bits = 0;
	const char *p = text;

	*star = text[0] == '*';
	for (;;)
	{
		const char *end = strchr(p, ',');
		int			elen = end ? (int) (end - p) : (int) strlen(p);
		char	   *elem = pnstrdup(p, elen);
		char	   *slash = strchr(elem, '/');
		char	   *dash;
		int			rlen = slash ? (int) (slash - elem) : elen;
		int			lo;
		int			hi;
		int			step = 1;

		if (elen == 0)
			field_error(f, text, expr, "A list has an empty element.");
		if (slash != NULL)
		{
			const char *s = slash + 1;
			int			slen = strlen(s);

			if (slen == 0)
				field_error(f, elem, expr, "A step is missing after \"/\".");
			step = 0;
			for (int i = 0; i < slen; i++)
			{
				if (!isdigit((unsigned char) s[i]))
					field_error(f, elem, expr, psprintf("The step \"%s\" is not a number.", s));
				step = Min(step * 10 + (s[i] - '0'), 1000);
			}
			if (step < 1)
				field_error(f, elem, expr, "A step must be at least 1.");
		}
		if (rlen == 1 && elem[0] == '*')
		{
			lo = f->min;
			hi = f->max;		/* day-of-week 7 is 0 again */
		}
		else
		{
			dash = memchr(elem, '-', rlen);
			lo = field_value(f, elem, dash ? (int) (dash - elem) : rlen, elem, expr);
			if (dash != NULL)
			{
				hi = field_value(f, dash + 1, rlen - (int) (dash - elem) - 1, elem, expr);
				if (hi < lo)
					field_error(f, elem, expr,
								psprintf("The range %d-%d ends before it starts.", lo, hi));
			}
			else if (slash != NULL)
				hi = f->max;
			else
				hi = lo;
		}
		for (int v = lo; v <= hi; v += step)
			bits |= UINT64CONST(1) << (f->max == 7 && v == 7 ? 0 : v);
		pfree(elem);
		if (end == NULL)
			break;
		p = end + 1;
	}
	return bits;
}

void
taskq_cron_parse(const char *expr, TaskqCron *out)
{
	char	   *copy;
	char	   *fields[5];
	int			n = 0;
	char	   *p;
	uint64		bits[5];
	bool		stars[5];

	memset(out, 0, sizeof(TaskqCron));
	if (strlen(expr) > CRON_MAX_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cron expression is too long"),
				 errdetail("It is at most %d bytes.", CRON_MAX_LEN)));

	/* trimmed copy */
	while (isspace((unsigned char) *expr))
		expr++;
	copy = pstrdup(expr);
	for (int i = strlen(copy) - 1; i >= 0 && isspace((unsigned char) copy[i]); i--)
		copy[i] = '\0';

	if (copy[0] == '@')
	{
		const char *as = NULL;

		if (pg_strcasecmp(copy, "@hourly") == 0)
			as = "0 * * * *";
		else if (pg_strcasecmp(copy, "@daily") == 0)
			as = "0 0 * * *";
		else if (pg_strcasecmp(copy, "@weekly") == 0)
			as = "0 0 * * 0";
		else if (pg_strcasecmp(copy, "@monthly") == 0)
			as = "0 0 1 * *";
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown cron shortcut \"%s\"", copy),
					 errhint("The shortcuts are @hourly, @daily, @weekly and @monthly.")));
		taskq_cron_parse(as, out);
		return;
	}

	if (isdigit((unsigned char) copy[0]))
	{
		int			i = 0;
		int			v = 0;

		for (; isdigit((unsigned char) copy[i]); i++)
			v = Min(v * 10 + (copy[i] - '0'), 1000);
		if (isspace((unsigned char) copy[i]))
		{
			const char *unit = copy + i;

			while (isspace((unsigned char) *unit))
				unit++;
			if (pg_strcasecmp(unit, "seconds") == 0 || pg_strcasecmp(unit, "second") == 0)
			{
				if (v < 1 || v > 59)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("invalid number of seconds \"%.*s\" in cron expression \"%s\"",
									i, copy, copy),
							 errdetail("It is 1 to 59.")));
				out->every_seconds = v;
				return;
			}
		}
	}

	p = copy;
	while (*p != '\0')
	{
		while (isspace((unsigned char) *p))
			*p++ = '\0';
		if (*p == '\0')
			break;
		if (n == 5)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("cron expression \"%s\" has more than five fields", expr),
					 errhint("A cron expression is minute hour day-of-month month day-of-week, @hourly, @daily, @weekly, @monthly, or 'N seconds'.")));
		fields[n++] = p;
		while (*p != '\0' && !isspace((unsigned char) *p))
			p++;
	}
	if (n < 5)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cron expression \"%s\" has %d field%s, not five", expr, n,
						n == 1 ? "" : "s"),
				 errhint("A cron expression is minute hour day-of-month month day-of-week, @hourly, @daily, @weekly, @monthly, or 'N seconds'.")));
	for (int i = 0; i < 5; i++)
		bits[i] = parse_field(&cron_fields[i], fields[i], expr, &stars[i]);
	out->minutes = bits[0];
	out->hours = (uint32) bits[1];
	out->days = (uint32) bits[2];
	out->months = (uint32) bits[3];
	out->weekdays = (uint32) bits[4];
	out->days_star = stars[2];
	out->weekdays_star = stars[4];
	pfree(copy);
}

pg_tz *
taskq_cron_time_zone(const char *name)
{
	pg_tz	   *tz = NULL;

	if (strlen(name) > TZ_STRLEN_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone name is too long"),
				 errdetail("It is at most %d bytes.", TZ_STRLEN_MAX)));
	if (name[0] != '\0')
		tz = pg_tzset(name);
	if (tz == NULL || !pg_tz_acceptable(tz))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone \"%s\" not recognized", name),
				 errhint("A time zone is a name of the IANA database, such as UTC or Europe/Berlin.")));
	return tz;
}

/*
 * The instant of a local wall-clock time (seconds since the Unix epoch as
 * if the time were UTC): before a change of offset with the offset before
 * it, after with the one after; in a gap, the end of the gap; a repeated
 * time, its first occurrence.  As DetermineTimeZoneOffset, the change
 * found is the first one after a day before the time (zones' offsets are
 * under a day, their changes more than two days apart).
 */
static pg_time_t
local_instant(pg_time_t local, pg_tz *tz)
{
	pg_time_t	prec = local - SECS_PER_DAY;
	long int	before_gmtoff;
	long int	after_gmtoff;
	int			before_isdst;
	int			after_isdst;
	pg_time_t	boundary;
	pg_time_t	beforetime;
	pg_time_t	aftertime;
	int			res;

	res = pg_next_dst_boundary(&prec, &before_gmtoff, &before_isdst,
							   &boundary, &after_gmtoff, &after_isdst, tz);
	if (res < 0)
		return local;			/* out of the zone's range: as UTC */
	if (res == 0)
		return local - before_gmtoff;
	beforetime = local - before_gmtoff;
	aftertime = local - after_gmtoff;
	if (beforetime < boundary && aftertime < boundary)
		return beforetime;
	if (beforetime >= boundary && aftertime >= boundary)
		return aftertime;
	if (beforetime < boundary)
		return beforetime;		/* repeated: the first occurrence */
	return boundary;			/* skipped: the first instant after the gap */
}

bool
taskq_cron_next(const TaskqCron *cron, pg_tz *tz, TimestampTz after, TimestampTz *next)
{
	pg_time_t	t;
	struct pg_tm *tm;
	int			jd;
	int			hour0;
	int			minute0;

	if (cron->every_seconds > 0)
	{
		int64		period = (int64) cron->every_seconds * USECS_PER_SEC;
		int64		us = after + (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
		int64		q = us / period;

		if (us % period < 0)
			q--;				/* floor */
		if (after > END_TIMESTAMP - period)
			return false;
		*next = (q + 1) * period - (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
		return true;
	}

	t = timestamptz_to_time_t(after);
	tm = pg_localtime(&t, tz);
	if (tm == NULL || tm->tm_year + 1900 > 294000)
		return false;
	jd = date2j(tm->tm_year + 1900, tm->tm_mon + 1, tm->tm_mday);
	hour0 = tm->tm_hour;
	minute0 = tm->tm_min;

	for (int i = 0; i < CRON_MAX_DAYS; i++, jd++)
	{
		int			y;
		int			m;
		int			d;
		bool		dom;
		bool		dow;

		j2date(jd, &y, &m, &d);
		if (!(cron->months & (((uint32) 1) << m)))
			continue;
		dom = (cron->days & (((uint32) 1) << d)) != 0;
		dow = (cron->weekdays & (((uint32) 1) << j2day(jd))) != 0;
		if (cron->days_star || cron->weekdays_star ? !(dom && dow) : !(dom || dow))
			continue;
		for (int h = i == 0 ? hour0 : 0; h < 24; h++)
		{
			if (!(cron->hours & (((uint32) 1) << h)))
				continue;
			for (int mi = i == 0 && h == hour0 ? minute0 : 0; mi < 60; mi++)
			{
				pg_time_t	local;
				TimestampTz inst;

				if (!(cron->minutes & (UINT64CONST(1) << mi)))
					continue;
				local = (pg_time_t) (jd - UNIX_EPOCH_JDATE) * SECS_PER_DAY +
					h * SECS_PER_HOUR + mi * SECS_PER_MINUTE;
				inst = time_t_to_timestamptz(local_instant(local, tz));
				if (inst > after)
				{
					*next = inst;
					return true;
				}
			}
		}
	}
	return false;
}

/*
 * The id of a schedule's task for a tick: "<name>/<tick as ISO 8601 in
 * UTC>", e.g. "nightly/2026-11-29T02:00:00Z" (ticks are whole seconds).
 */
char *
taskq_cron_tick_id(const char *name, TimestampTz tick)
{
	struct pg_tm tm;
	fsec_t		fsec;

	if (timestamp2tm(tick, NULL, &tm, &fsec, NULL, NULL) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
	return psprintf("%s/%04d-%02d-%02dT%02d:%02d:%02dZ", name,
					tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}
