/*-------------------------------------------------------------------------
 *
 * log.c
 *	  taskq-worker's log on stderr: one line per task when its child ends
 *	  (id, action, try, outcome, seconds), the children's stderr lines, and
 *	  messages about the connection and signals.
 *
 * Text by default:
 *	  2026-01-01T12:00:00.000Z task id=copy-1 action=copy try=1 outcome=completed exit=0 seconds=0.412
 * --log-format json: one JSON object a line with the same fields
 *	  {"ts":"...","event":"task","id":"copy-1","action":"copy","try":1,...}
 * A worker process of one of several shards (shards.c) adds the field
 * shard, its --dbname's index or its partition, after event.
 * Each line is written with one write(2), so that lines of the worker and
 * its children do not mix within a line.
 *
 *-------------------------------------------------------------------------
 */
#include "worker.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef struct Buf
{
	char		data[8192];
	size_t		len;
} Buf;

static void
buf_add(Buf *b, const char *s, size_t n)
{
	if (n > sizeof(b->data) - 2 - b->len)
		n = sizeof(b->data) - 2 - b->len;
	memcpy(b->data + b->len, s, n);
	b->len += n;
}

static void
buf_str(Buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

static void
buf_printf(Buf *b, const char *fmt,...) __attribute__((format(printf, 2, 3)));

static void
buf_printf(Buf *b, const char *fmt,...)
{
	char		tmp[1024];
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		buf_add(b, tmp, (size_t) n < sizeof(tmp) ? (size_t) n : sizeof(tmp) - 1);
}

/* A JSON string literal. */
static void
buf_json(Buf *b, const char *s)
{
	buf_str(b, "\"");
	for (const unsigned char *p = (const unsigned char *) s; *p; p++)
	{
		if (*p == '"' || *p == '\\')
		{
			char		e[2] = {'\\', (char) *p};

			buf_add(b, e, 2);
		}
		else if (*p < 0x20)
			buf_printf(b, "\\u%04x", *p);
		else
			buf_add(b, (const char *) p, 1);
	}
	buf_str(b, "\"");
}

/* A text value: as is when it is one plain word, else quoted like JSON. */
static void
buf_text(Buf *b, const char *s)
{
	bool		plain = *s != '\0';

	for (const char *p = s; *p; p++)
		if ((unsigned char) *p <= ' ' || *p == '"' || *p == '\\' || *p == '=')
			plain = false;
	if (plain)
		buf_str(b, s);
	else
		buf_json(b, s);
}

static void buf_field(Buf *b, const char *name, const char *value);

static void
buf_start(Buf *b, const char *event)
{
	struct timeval tv;
	struct tm	tm;
	char		ts[40];

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	b->len = 0;
	if (opts.json_log)
	{
		buf_printf(b, "{\"ts\":\"%s.%03dZ\",\"event\":", ts, (int) (tv.tv_usec / 1000));
		buf_json(b, event);
	}
	else
		buf_printf(b, "%s.%03dZ %s", ts, (int) (tv.tv_usec / 1000), event);
	if (opts.shard != NULL)
		buf_field(b, "shard", opts.shard);
}

static void
buf_field(Buf *b, const char *name, const char *value)
{
	if (opts.json_log)
	{
		buf_printf(b, ",\"%s\":", name);
		buf_json(b, value);
	}
	else
	{
		buf_printf(b, " %s=", name);
		buf_text(b, value);
	}
}

static void
buf_number(Buf *b, const char *name, const char *fmt, double v)
{
	char		tmp[64];

	snprintf(tmp, sizeof(tmp), fmt, v);
	if (opts.json_log)
		buf_printf(b, ",\"%s\":%s", name, tmp);
	else
		buf_printf(b, " %s=%s", name, tmp);
}

static void
buf_end(Buf *b)
{
	if (opts.json_log)
		buf_str(b, "}");
	b->data[b->len++] = '\n';
	while (b->len > 0)
	{
		ssize_t		n = write(STDERR_FILENO, b->data, b->len);

		if (n <= 0)
			break;				/* nowhere to log to; nothing to be done */
		memmove(b->data, b->data + n, b->len - n);
		b->len -= n;
	}
}

void
log_msg(const char *fmt,...)
{
	Buf			b;
	char		msg[2048];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	buf_start(&b, "worker");
	if (opts.json_log)
		buf_field(&b, "message", msg);
	else
	{
		buf_str(&b, " ");
		buf_str(&b, msg);
	}
	buf_end(&b);
}

void
log_task(const char *id, const char *action, int try, const char *outcome,
		 const char *exit_text, double seconds, const char *detail)
{
	Buf			b;

	buf_start(&b, "task");
	buf_field(&b, "id", id);
	buf_field(&b, "action", action);
	buf_number(&b, "try", "%.0f", try);
	buf_field(&b, "outcome", outcome);
	buf_field(&b, "exit", exit_text);
	buf_number(&b, "seconds", "%.3f", seconds);
	if (detail != NULL && *detail != '\0')
		buf_field(&b, "detail", detail);
	buf_end(&b);
}

void
log_child_stderr(const char *id, const char *line)
{
	Buf			b;

	buf_start(&b, "stderr");
	buf_field(&b, "id", id);
	buf_field(&b, "line", line);
	buf_end(&b);
}

/* strdup (of "" for NULL), or the worker stops: it cannot go on without its copies. */
char *
xstrdup(const char *s)
{
	char	   *r = strdup(s != NULL ? s : "");

	if (r == NULL)
	{
		log_msg("out of memory");
		exit(1);
	}
	return r;
}
