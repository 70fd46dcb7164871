/*-------------------------------------------------------------------------
 *
 * claims.c
 *	  taskq-worker's claims: the columns a claim selects and its rows as
 *	  Claimed tasks (for own_tasks and return_and_own, db.c), and the
 *	  waiting claim, own_tasks(..., wait), on a connection of its own.
 *
 * The waiting claim.  Where the server's own_tasks has the argument wait
 * (taskq 0.5), the worker claims for its free slots with a call that sleeps
 * in the server until work of its actions is ready, at most --poll, and
 * is sent again as soon as it answers: no LISTEN, no poll.  It runs on a
 * second connection so that the first stays free for heartbeats, returns
 * and workflow calls while it sleeps; it is sent without waiting for its
 * answer, which main.c's loop reads when the connection's socket is
 * readable (cycle.c places the tasks).  While it is in flight, the claims
 * sent with returns (return_and_own) ask for the room it leaves.  At
 * shutdown it is cancelled (PQcancel) and its answer read: what it claimed
 * all the same is given back with the tasks claimed ahead.  Its connection
 * is then closed, never used again (a cancel request may come late).  If
 * the connection fails, the next waiting claim is sent on a new one a
 * second later (then 2 s, 4 s, ... up to --max-backoff, until one
 * answers); when the main connection is lost it is closed too.  A claim
 * that fails because the database is unavailable (shard_unavailable():
 * read-only after a failover, shutting down) drops the main connection as
 * well, so that the shard's process reconnects with backoff.
 *
 * Single-threaded: called from main.c's loop (through cycle.c) only.
 *
 *-------------------------------------------------------------------------
 */
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#define WAIT_RETRY_MS	1000	/* after a failed waiting claim; doubled up to --max-backoff */

static bool have_wait;			/* own_tasks has wait (0.5) */
static bool have_key;			/* own_tasks returns concurrency_key (0.6) */

static PGconn *wconn;
static bool w_busy;				/* sent, answer not read yet */
static int	w_want;
static int64_t w_sent_ms;
static int64_t w_retry_at;
static int64_t w_backoff = WAIT_RETRY_MS;	/* the next wait after a failure */

/*
 * The columns of a claim (own_tasks and friends, as t): the task, and
 * whether it is a workflow step (its body: a string "run" prefixing the id
 * as "<run>/", and "machine" + "state" or "saga" + "step"), with the step's
 * run, state or step, direction, cursor, whether it is a continuation
 * state (the body has "cursor") and a fan-in batch, then the task's
 * concurrency_key (NULL before 0.6).  Read in fill_claimed().
 */
#define CLAIM_COLUMNS \
	"t.id, t.token, t.action, coalesce(t.body::text, ''), t.num_tries, " \
	"coalesce(to_char(t.action_deadline AT TIME ZONE 'UTC', " \
	"'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), ''), " \
	"CASE WHEN pg_catalog.jsonb_typeof(t.body -> 'run') = 'string' " \
	" AND pg_catalog.starts_with(t.id, (t.body ->> 'run') || '/') THEN " \
	" CASE WHEN pg_catalog.jsonb_typeof(t.body -> 'machine') = 'string' " \
	"  AND pg_catalog.jsonb_typeof(t.body -> 'state') = 'string' THEN 'machine' " \
	" WHEN pg_catalog.jsonb_typeof(t.body -> 'saga') = 'string' " \
	"  AND pg_catalog.jsonb_typeof(t.body -> 'step') = 'string' THEN 'saga' END END, " \
	"t.body ->> 'run', coalesce(t.body ->> 'state', t.body ->> 'step'), " \
	"t.body ->> 'direction', t.body ->> 'cursor', " \
	"coalesce(t.body ? 'cursor', false), " \
	"coalesce(t.body -> 'fan_in' = 'true'::jsonb, false), "

/* What the server has, learnt at each connection (db.c). */
void
claims_server(bool wait, bool key)
{
	have_wait = wait;
	have_key = key;
}

/* "SELECT <the claim's columns> FROM <from>" (a static buffer). */
const char *
claims_sql(const char *from)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf), "SELECT " CLAIM_COLUMNS "%s FROM %s",
			 have_key ? "t.concurrency_key" : "NULL::text", from);
	return buf;
}

/* One row of the claim's columns. */
static void
fill_claimed(Claimed *c, PGresult *res, int i)
{
	const char *kind = PQgetvalue(res, i, 6);

	c->id = xstrdup(PQgetvalue(res, i, 0));
	c->token = xstrdup(PQgetvalue(res, i, 1));
	c->action = xstrdup(PQgetvalue(res, i, 2));
	c->body = xstrdup(PQgetvalue(res, i, 3));
	c->try = atoi(PQgetvalue(res, i, 4));
	c->deadline = xstrdup(PQgetvalue(res, i, 5));
	c->concurrency_key = db_value_or_null(res, i, 13);
	memset(&c->step, 0, sizeof(c->step));
	c->step.kind = strcmp(kind, "machine") == 0 ? STEP_MACHINE :
		strcmp(kind, "saga") == 0 ? STEP_SAGA : STEP_PLAIN;
	if (c->step.kind == STEP_PLAIN)
		return;
	c->step.run = db_value_or_null(res, i, 7);
	c->step.name = db_value_or_null(res, i, 8);
	c->step.direction = db_value_or_null(res, i, 9);
	c->step.cursor = db_value_or_null(res, i, 10);
	c->step.continuation = strcmp(PQgetvalue(res, i, 11), "t") == 0;
	c->step.fan_in = strcmp(PQgetvalue(res, i, 12), "t") == 0;
}

/*
 * The rows of a claim into *out (res is cleared); their count, or -1 with
 * the error in err (else logged as what's failure, unless what is NULL).
 * The main connection's failures are db.c's (which drops it when lost).
 */
int
claims_rows(PGresult *res, const char *what, int64_t sent_ms, Claimed **out,
			char *err, size_t errlen)
{
	int			n;

	*out = NULL;
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
		char		buf[1024];

		snprintf(buf, sizeof(buf), "%s: %s", state ? state : "-", msg ? msg : "no message");
		if (err != NULL)
			snprintf(err, errlen, "%s", buf);
		else if (what != NULL)
			log_msg("%s failed: %s", what, buf);
		PQclear(res);
		return -1;
	}
	n = PQntuples(res);
	if (n > 0)
	{
		*out = calloc(n, sizeof(Claimed));
		if (*out == NULL)
		{
			log_msg("out of memory");
			exit(1);
		}
	}
	for (int i = 0; i < n; i++)
	{
		fill_claimed(&(*out)[i], res, i);
		(*out)[i].claimed_ms = sent_ms;
	}
	PQclear(res);
	return n;
}

/* The strings of one claimed task (not the task itself). */
void
claimed_free_one(Claimed *c)
{
	free(c->id);
	free(c->token);
	free(c->action);
	free(c->body);
	free(c->deadline);
	free(c->concurrency_key);
	step_info_free(&c->step);
	memset(c, 0, sizeof(*c));
}

void
claimed_free(Claimed *c, int n)
{
	for (int i = 0; i < n; i++)
		claimed_free_one(&c[i]);
	free(c);
}

/* ------------------------------------------------------------ waiting claim */

/* Is the waiting claim the way to claim (the server has it)? */
bool
claim_wait_on(void)
{
	return have_wait;
}

bool
claim_wait_busy(void)
{
	return w_busy;
}

/* The tasks the waiting claim in flight asks for (0: none in flight). */
int
claim_wait_want(void)
{
	return w_busy ? w_want : 0;
}

int
claim_wait_socket(void)
{
	return w_busy && wconn != NULL ? PQsocket(wconn) : -1;
}

/* When a failed waiting claim may be sent again (0: now). */
int64_t
claim_wait_retry_at(void)
{
	return w_retry_at;
}

void
claim_wait_close(void)
{
	if (wconn != NULL)
		PQfinish(wconn);
	wconn = NULL;
	w_busy = false;
	w_want = 0;
}

/* The next waiting claim after a failure: 1 s, 2 s, 4 s, ... up to --max-backoff. */
static void
wait_retry_later(void)
{
	w_retry_at = now_ms() + w_backoff;
	w_backoff = w_backoff * 2 > opts.max_backoff_ms ? opts.max_backoff_ms : w_backoff * 2;
}

static void
wait_failed(const char *what)
{
	log_msg("waiting claim: %s: %s", what,
			wconn != NULL ? PQerrorMessage(wconn) : "out of memory");
	claim_wait_close();
	wait_retry_later();
}

/*
 * Send own_tasks(actor, max, actions, lease, wait => --poll) on the
 * waiting claim's connection (opened if need be), without waiting for the
 * answer.  False if it could not be sent (logged; tried again later).
 */
bool
claim_wait_send(int max, int64_t now)
{
	const char *const keys[] = {"connect_timeout", "fallback_application_name", "user",
	"dbname", NULL};
	const char *const values[] = {"10", "taskq-worker", opts.default_user, opts.conninfo, NULL};
	const char *actions[1000];
	char	   *arr;
	char		maxbuf[16];
	char		lease[64];
	char		wait[64];
	const char *params[5];
	int			ok;

	if (w_busy || now < w_retry_at)
		return false;
	if (wconn == NULL)
	{
		wconn = PQconnectdbParams(keys, values, 1);
		if (PQstatus(wconn) != CONNECTION_OK)
		{
			wait_failed("cannot connect");
			return false;
		}
	}
	for (int i = 0; i < opts.nruns && i < 1000; i++)
		actions[i] = opts.runs[i].action;
	/* the actions as an array literal: names hold no quote or backslash, or are escaped */
	{
		size_t		len = 3;
		char	   *p;

		for (int i = 0; i < opts.nruns && i < 1000; i++)
			len += 2 * strlen(actions[i]) + 3;
		arr = p = malloc(len);
		if (arr == NULL)
		{
			log_msg("out of memory");
			exit(1);
		}
		*p++ = '{';
		for (int i = 0; i < opts.nruns && i < 1000; i++)
		{
			if (i > 0)
				*p++ = ',';
			*p++ = '"';
			for (const char *q = actions[i]; *q; q++)
			{
				if (*q == '"' || *q == '\\')
					*p++ = '\\';
				*p++ = *q;
			}
			*p++ = '"';
		}
		*p++ = '}';
		*p = '\0';
	}
	snprintf(maxbuf, sizeof(maxbuf), "%d", max);
	snprintf(lease, sizeof(lease), "%lld milliseconds", (long long) opts.lease_ms);
	snprintf(wait, sizeof(wait), "%lld milliseconds", (long long) opts.poll_ms);
	params[0] = opts.actor;
	params[1] = maxbuf;
	params[2] = arr;
	params[3] = lease;
	params[4] = wait;
	ok = PQsendQueryParams(wconn,
						   claims_sql("taskq.own_tasks($1, $2::integer, $3::text[], $4::interval,"
									  " wait => $5::interval) AS t"),
						   5, NULL, params, NULL, NULL, 0);
	free(arr);
	if (!ok)
	{
		wait_failed("cannot send");
		return false;
	}
	w_busy = true;
	w_want = max;
	w_sent_ms = now;
	w_retry_at = 0;
	return true;
}

/*
 * The whole answer of the claim in flight (blocking), as claims_rows();
 * cancelled: an error is the cancel's, not logged.
 */
static int
take_answer(Claimed **out, bool cancelled)
{
	PGresult   *res;
	PGresult   *r;
	const char *state;
	char		unavailable_state[8] = "";
	bool		unavailable;
	int			n;

	res = PQgetResult(wconn);
	while ((r = PQgetResult(wconn)) != NULL)
		PQclear(r);
	w_busy = false;
	if (res == NULL)
	{
		wait_failed("no answer");
		return -1;
	}
	state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	unavailable = !cancelled && shard_unavailable(state);
	if (unavailable)
		snprintf(unavailable_state, sizeof(unavailable_state), "%s", state);
	n = claims_rows(res, cancelled ? NULL : "waiting claim", w_sent_ms, out, NULL, 0);
	if (n < 0 || PQstatus(wconn) != CONNECTION_OK)
	{
		claim_wait_close();
		wait_retry_later();
		/* read-only after a failover, shutting down, ...: the whole shard reconnects */
		if (unavailable && db_connected())
		{
			log_msg("connection lost: the waiting claim failed with %s (the database is "
					"unavailable); reconnecting", unavailable_state);
			db_disconnect();
		}
	}
	else
		w_backoff = WAIT_RETRY_MS;
	return n;
}

/*
 * The answer of the waiting claim in flight, if it came: -2 if not yet;
 * else how many tasks it claimed (in *out), or -1 (logged; the next one is
 * sent a second later).
 */
int
claim_wait_result(Claimed **out)
{
	*out = NULL;
	if (!w_busy)
		return -2;
	if (!PQconsumeInput(wconn))
	{
		wait_failed("connection lost");
		return -1;
	}
	if (PQisBusy(wconn))
		return -2;
	return take_answer(out, false);
}

/*
 * Shutdown: cancel the waiting claim in flight and read its answer (what it
 * claimed before the cancel came, in *out, to be given back); the
 * connection is closed.  The count, as claim_wait_result().
 */
int
claim_wait_cancel(Claimed **out)
{
	int			n = 0;

	*out = NULL;
	if (w_busy)
	{
		PGcancel   *cancel = PQgetCancel(wconn);
		char		errbuf[256];

		if (cancel != NULL)
		{
			(void) PQcancel(cancel, errbuf, sizeof(errbuf));
			PQfreeCancel(cancel);
		}
		n = take_answer(out, true);
	}
	claim_wait_close();
	return n;
}
