/*-------------------------------------------------------------------------
 *
 * db.c
 *	  taskq-worker's one database connection: connect, LISTEN taskq, claim
 *	  (own_tasks), returns with the next claim (return_and_own), heartbeats
 *	  (extend_ownership), single returns (return_task), releases
 *	  (release_task), the workflow calls (transition, continue_machine,
 *	  fan_in_contexts, return_step), and the workers registry
 *	  (worker_heartbeat, worker_stopped).
 *
 * Every call is a short blocking libpq call; the frequent ones are prepared
 * statements, the workflow calls are not (the worker also runs against
 * versions of the extension without them).  A call that finds the
 * connection broken marks it lost (db_connected() turns false) and main.c
 * reconnects with backoff; any other error is logged and the call reports
 * failure.
 *
 * return_and_own is all or none: cycle.c falls back to return_task one by
 * one (so that a return refused with TQ001 refuses only its task) and
 * own_tasks when it fails.  Results (--result) go as return_task's result
 * and return_and_own's results, which taskq has since 0.5; against an
 * older extension the worker says so once and returns without them.  A claim's rows also say whether each task is a
 * workflow step, read from its body by the query (claims.c), so that
 * the worker needs no JSON parser for bodies.  Where own_tasks has the
 * argument wait (0.5), claims without returns wait in the server on a
 * second connection (claims.c) and this one does not LISTEN.
 *
 *-------------------------------------------------------------------------
 */
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

static PGconn *conn;
static bool have_release_task;
static bool have_return_and_own;
static bool have_results;		/* return_task's result, return_and_own's results */
static bool results_missing_logged;

/*
 * The one call that may be in flight while the loop goes on: a
 * return_and_own sent with db_return_and_own_send().  Any other call first
 * waits for its answer (async_drain), which then waits in async_res until
 * db_return_and_own_result() hands it over.
 */
static bool async_sent;			/* sent, answer not handed over yet */
static bool async_reading;		/* its results not all read yet */
static PGresult *async_res;
static int64_t async_sent_ms;

static void
async_drain(void)
{
	PGresult   *r;

	if (!async_reading || conn == NULL)
		return;
	while ((r = PQgetResult(conn)) != NULL)
	{
		if (async_res == NULL)
			async_res = r;
		else
			PQclear(r);
	}
	async_reading = false;
}

bool
db_connected(void)
{
	return conn != NULL && PQstatus(conn) == CONNECTION_OK;
}

int
db_socket(void)
{
	return conn != NULL ? PQsocket(conn) : -1;
}

void
db_disconnect(void)
{
	if (conn != NULL)
		PQfinish(conn);
	conn = NULL;
	async_reading = false;
	if (async_res != NULL)
		PQclear(async_res);
	async_res = NULL;
	/* async_sent stays: the caller learns that the call was lost */
}

/* The error of res (or of the connection) on one line, without the "ERROR:  " prefix. */
static void
error_text(PGresult *res, char *buf, size_t len)
{
	const char *msg = res != NULL ? PQresultErrorMessage(res) : "";
	const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	size_t		n;

	if (msg == NULL || *msg == '\0')
		msg = PQerrorMessage(conn);
	if (strncmp(msg, "ERROR:  ", 8) == 0)
		msg += 8;
	if (state != NULL)
		snprintf(buf, len, "%s: %s", state, msg);
	else
		snprintf(buf, len, "%s", msg);
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = ' ';
	n = strlen(buf);
	while (n > 0 && buf[n - 1] == ' ')
		buf[--n] = '\0';
}

/*
 * res failed: true if the connection is gone (it is then dropped), false
 * for an error of the statement (its text in err).
 */
static bool
failed(PGresult *res, const char *what, char *err, size_t errlen)
{
	char		buf[1024];

	error_text(res, buf, sizeof(buf));
	if (err != NULL)
		snprintf(err, errlen, "%s", buf);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		log_msg("connection lost during %s: %s", what, buf);
		db_disconnect();
		return true;
	}
	if (res != NULL && shard_unavailable(PQresultErrorField(res, PG_DIAG_SQLSTATE)))
	{
		/* read-only after a failover, shutting down, ...: connect again */
		log_msg("database unavailable during %s: %s; reconnecting", what, buf);
		db_disconnect();
		return true;
	}
	if (err == NULL)
		log_msg("%s failed: %s", what, buf);
	return false;
}

static bool
prepare(const char *name, const char *sql)
{
	PGresult   *res;
	bool		ok;

	async_drain();
	res = PQprepare(conn, name, sql, 0, NULL);
	ok = PQresultStatus(res) == PGRES_COMMAND_OK;

	if (!ok)
		failed(res, name, NULL, 0);
	PQclear(res);
	return ok;
}

bool
db_connect(void)
{
	const char *const keys[] = {"connect_timeout", "fallback_application_name", "user",
	"dbname", NULL};
	const char *const values[] = {"10", "taskq-worker", opts.default_user, opts.conninfo, NULL};
	PGresult   *res;

	db_disconnect();
	conn = PQconnectdbParams(keys, values, 1);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		char		buf[1024];

		error_text(NULL, buf, sizeof(buf));
		log_msg("cannot connect: %s", buf);
		db_disconnect();
		return false;
	}

	/* own_tasks' wait (0.5): the waiting claim; its concurrency_key (0.6) */
	res = PQexec(conn, "SELECT coalesce(bool_or(p.pronargs = 5), false),"
				 " coalesce(bool_or('concurrency_key' = ANY (p.proargnames)), false)"
				 " FROM pg_catalog.pg_proc AS p WHERE p.oid = pg_catalog.to_regproc('taskq.own_tasks')");
	claims_server(PQresultStatus(res) == PGRES_TUPLES_OK && strcmp(PQgetvalue(res, 0, 0), "t") == 0,
				  PQresultStatus(res) == PGRES_TUPLES_OK && strcmp(PQgetvalue(res, 0, 1), "t") == 0);
	PQclear(res);
	res = claim_wait_on() ? NULL : PQexec(conn, "LISTEN taskq");
	if (res != NULL && PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		failed(res, "LISTEN taskq", NULL, 0);
		PQclear(res);
		db_disconnect();
		return false;
	}
	PQclear(res);

	/* release_task (0.5) gives a task back without counting a try. */
	res = PQexec(conn, "SELECT pg_catalog.to_regprocedure('taskq.release_task(text,uuid)') IS NOT NULL");
	have_release_task = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
		strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);

	/* return_and_own (0.3) returns and claims in one call */
	res = PQexec(conn, "SELECT pg_catalog.to_regproc('taskq.return_and_own') IS NOT NULL");
	have_return_and_own = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
		strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);

	/* return_task's result and return_and_own's results (0.5) */
	res = PQexec(conn, "SELECT pg_catalog.to_regprocedure("
				 "'taskq.return_task(text,uuid,text,taskq.status,interval,jsonb)') IS NOT NULL");
	have_results = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
		strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	if (!have_results && !results_missing_logged)
	{
		for (int i = 0; i < opts.nruns; i++)
			if (opts.runs[i].result)
			{
				log_msg("return_task has no result (taskq before 0.5): the tasks of --result "
						"actions are returned without their results");
				results_missing_logged = true;
				break;
			}
	}

	if (!prepare("own",
				 claims_sql("taskq.own_tasks($1, $2::integer, $3::text[], $4::interval) AS t")) ||
		!prepare("extend",
				 "SELECT id, owned FROM taskq.extend_ownership($1, $2::text[], $3::uuid[], $4::interval)") ||
		(have_results &&
		 !prepare("return",
				  "SELECT taskq.return_task($1, $2::uuid, $3, $4::taskq.status, NULL, $5::jsonb)")) ||
		(!have_results &&
		 !prepare("return",
				  "SELECT taskq.return_task($1, $2::uuid, $3, $4::taskq.status)")) ||
		(have_release_task &&
		 !prepare("release", "SELECT taskq.release_task($1, $2::uuid)")) ||
		(have_return_and_own && have_results &&
		 !prepare("return_and_own",
				  claims_sql("taskq.return_and_own($1::text[], $2::uuid[], $3::text[], $4::taskq.status[],"
							 " $5, $6::integer, $7::text[], $8::interval, $9::jsonb[]) AS t"))) ||
		(have_return_and_own && !have_results &&
		 !prepare("return_and_own",
				  claims_sql("taskq.return_and_own($1::text[], $2::uuid[], $3::text[], $4::taskq.status[],"
							 " $5, $6::integer, $7::text[], $8::interval) AS t"))))
	{
		db_disconnect();
		return false;
	}
	log_msg("connected as actor %s; release_task %s; %s", opts.actor,
			have_release_task ? "available" : "missing (tasks are given back with return_task 'pending')",
			claim_wait_on() ? "claims wait in the server" : "LISTEN taskq and poll");
	return true;
}

/*
 * Notifications libpq has read already (also those that came in during
 * another call's result): *wakeup is set when one names one of our actions
 * (or has no payload).
 */
void
db_notifications(bool *wakeup)
{
	PGnotify   *n;

	if (conn == NULL)
		return;
	while ((n = PQnotifies(conn)) != NULL)
	{
		if (n->extra == NULL || *n->extra == '\0' || find_run(n->extra) != NULL)
			*wakeup = true;
		PQfreemem(n);
	}
}

/*
 * Read what arrived on the connection, then its notifications (above).
 * False if the connection is lost.
 */
bool
db_consume(bool *wakeup)
{
	if (conn == NULL)
		return false;
	if (!PQconsumeInput(conn) || PQstatus(conn) != CONNECTION_OK)
	{
		char		buf[1024];

		error_text(NULL, buf, sizeof(buf));
		log_msg("connection lost: %s", buf);
		db_disconnect();
		return false;
	}
	db_notifications(wakeup);
	return true;
}

/* A PostgreSQL array literal of strings (a NULL item: NULL). */
static char *
array_literal(const char *const *items, int n)
{
	size_t		len = 3;
	char	   *s;
	char	   *p;

	for (int i = 0; i < n; i++)
		len += items[i] != NULL ? 2 * strlen(items[i]) + 3 : 5;
	s = malloc(len);
	if (s == NULL)
		return NULL;
	p = s;
	*p++ = '{';
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			*p++ = ',';
		if (items[i] == NULL)
		{
			memcpy(p, "NULL", 4);
			p += 4;
			continue;
		}
		*p++ = '"';
		for (const char *q = items[i]; *q; q++)
		{
			if (*q == '"' || *q == '\\')
				*p++ = '\\';
			*p++ = *q;
		}
		*p++ = '"';
	}
	*p++ = '}';
	*p = '\0';
	return s;
}

/* Our actions as an array literal (malloc'd). */
static char *
actions_literal(void)
{
	const char *actions[1000];
	char	   *arr;

	for (int i = 0; i < opts.nruns && i < 1000; i++)
		actions[i] = opts.runs[i].action;
	arr = array_literal(actions, opts.nruns < 1000 ? opts.nruns : 1000);
	if (arr == NULL)
	{
		log_msg("out of memory");
		exit(1);
	}
	return arr;
}

static void
lease_interval(char *buf, size_t len)
{
	snprintf(buf, len, "%lld milliseconds", (long long) opts.lease_ms);
}

/* A column's value copied, or NULL (claims.c reads claims with it too). */
char *
db_value_or_null(PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NULL : xstrdup(PQgetvalue(res, row, col));
}

/* The rows of a claim (claims.c); a failure on a lost connection drops it. */
static int
claimed(PGresult *res, const char *what, int64_t sent_ms, Claimed **out,
		char *err, size_t errlen)
{
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		failed(res, what, err, errlen);
		PQclear(res);
		return -1;
	}
	return claims_rows(res, what, sent_ms, out, err, errlen);
}

/*
 * Claim up to max tasks of our actions with our lease.  Returns how many
 * (in *out), or -1 on error (the connection may be lost).
 */
int
db_claim(int max, Claimed **out)
{
	char	   *arr = actions_literal();
	char		maxbuf[16];
	char		lease[64];
	const char *params[4];
	int64_t		sent = now_ms();
	PGresult   *res;

	snprintf(maxbuf, sizeof(maxbuf), "%d", max);
	lease_interval(lease, sizeof(lease));
	params[0] = opts.actor;
	params[1] = maxbuf;
	params[2] = arr;
	params[3] = lease;
	async_drain();
	res = PQexecPrepared(conn, "own", 4, params, NULL, NULL, 0);
	free(arr);
	return claimed(res, "own_tasks", sent, out, NULL, 0);
}

bool
db_has_return_and_own(void)
{
	return conn != NULL && have_return_and_own;
}

/*
 * Send return_and_own: nret returns and a claim of up to max tasks, in one
 * call (all or none), without waiting for the answer (main.c's loop goes
 * on; db_return_and_own_result() tells when it came).  results: one per
 * return (NULL items: none), or NULL when no return has one.  False if it
 * could not be sent (the connection may be lost; err says why).
 */
bool
db_return_and_own_send(const char *const *ids, const char *const *tokens,
					   const char *const *statuses, const char *const *codes,
					   const char *const *results, int nret, int max,
					   char *err, size_t errlen)
{
	char	   *arrs[6] = {NULL};
	char		maxbuf[16];
	char		lease[64];
	const char *params[9];
	int			ok;

	if (conn == NULL)
	{
		snprintf(err, errlen, "not connected");
		return false;
	}
	async_drain();
	arrs[0] = array_literal(ids, nret);
	arrs[1] = array_literal(tokens, nret);
	arrs[2] = array_literal(statuses, nret);
	arrs[3] = array_literal(codes, nret);
	arrs[4] = actions_literal();
	if (results != NULL && have_results)
		arrs[5] = array_literal(results, nret);
	snprintf(maxbuf, sizeof(maxbuf), "%d", max);
	lease_interval(lease, sizeof(lease));
	params[0] = arrs[0];
	params[1] = arrs[1];
	params[2] = arrs[2];
	params[3] = arrs[3];
	params[4] = opts.actor;
	params[5] = maxbuf;
	params[6] = arrs[4];
	params[7] = lease;
	params[8] = arrs[5];
	async_sent_ms = now_ms();
	ok = PQsendQueryPrepared(conn, "return_and_own", have_results ? 9 : 8, params,
							 NULL, NULL, 0);
	for (int i = 0; i < 6; i++)
		free(arrs[i]);
	if (!ok)
	{
		failed(NULL, "return_and_own", err, errlen);
		return false;
	}
	async_sent = true;
	async_reading = true;
	return true;
}

bool
db_return_and_own_busy(void)
{
	return async_sent;
}

/*
 * The answer of the return_and_own in flight: -2 if it has not come yet;
 * else how many tasks were claimed (in *out), or -1 with the error in err
 * (nothing returned, nothing claimed; the connection may be lost).
 */
int
db_return_and_own_result(Claimed **out, char *err, size_t errlen)
{
	PGresult   *res;

	*out = NULL;
	if (!async_sent)
		return -2;
	if (async_reading && conn != NULL)
	{
		if (!PQconsumeInput(conn))
		{
			async_sent = false;
			failed(NULL, "return_and_own", err, errlen);
			return -1;
		}
		if (PQisBusy(conn))
			return -2;
		async_drain();
	}
	async_sent = false;
	res = async_res;
	async_res = NULL;
	if (res == NULL)
	{
		snprintf(err, errlen, "connection lost");
		if (conn != NULL && PQstatus(conn) != CONNECTION_OK)
			db_disconnect();
		return -1;
	}
	return claimed(res, "return_and_own", async_sent_ms, out, err, errlen);
}

/*
 * Heartbeat for n tasks in one call: owned[i] tells whether due[i] is still
 * ours.  False on error (the connection may be lost; the caller tries again).
 */
bool
db_extend(Child **due, int n, bool *owned)
{
	const char **ids = calloc(n, sizeof(char *));
	const char **tokens = calloc(n, sizeof(char *));
	char	   *id_arr;
	char	   *tok_arr;
	char		lease[64];
	const char *params[4];
	PGresult   *res;
	bool		ok;

	if (ids == NULL || tokens == NULL)
	{
		log_msg("out of memory");
		exit(1);
	}
	for (int i = 0; i < n; i++)
	{
		ids[i] = due[i]->id;
		tokens[i] = due[i]->token;
	}
	id_arr = array_literal(ids, n);
	tok_arr = array_literal(tokens, n);
	lease_interval(lease, sizeof(lease));
	params[0] = opts.actor;
	params[1] = id_arr;
	params[2] = tok_arr;
	params[3] = lease;
	async_drain();
	res = PQexecPrepared(conn, "extend", 4, params, NULL, NULL, 0);
	free(id_arr);
	free(tok_arr);
	free(ids);
	free(tokens);
	ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == n;
	if (ok)
	{
		for (int i = 0; i < n; i++)
			owned[i] = strcmp(PQgetvalue(res, i, 1), "t") == 0;
	}
	else if (PQresultStatus(res) == PGRES_TUPLES_OK)
		log_msg("extend_ownership answered %d rows for %d tasks", PQntuples(res), n);
	else
		failed(res, "extend_ownership", NULL, 0);
	PQclear(res);
	return ok;
}

static bool
exec_void(const char *stmt, int nparams, const char *const *params, char *err, size_t errlen)
{
	PGresult   *res;
	bool		ok;

	async_drain();
	res = PQexecPrepared(conn, stmt, nparams, params, NULL, NULL, 0);
	ok = PQresultStatus(res) == PGRES_TUPLES_OK;

	if (!ok)
		failed(res, stmt, err, errlen);
	PQclear(res);
	return ok;
}

/*
 * return_task(id, token, status, code, result); result NULL: none (also
 * against a taskq without results).  False with the error in err.
 */
bool
db_return(const char *id, const char *token, const char *status,
		  const char *code, const char *result, char *err, size_t errlen)
{
	const char *params[5] = {id, token, status, code, result};

	if (conn == NULL)
	{
		snprintf(err, errlen, "not connected");
		return false;
	}
	return exec_void("return", have_results ? 5 : 4, params, err, errlen);
}

/*
 * Give a task back without counting a try: release_task when the extension
 * has it, else return_task(..., 'released', 'pending'), which lets the
 * retry policy apply.
 */
bool
db_release(const char *id, const char *token, char *err, size_t errlen)
{
	const char *params[2] = {id, token};

	if (conn == NULL)
	{
		snprintf(err, errlen, "not connected");
		return false;
	}
	if (have_release_task)
		return exec_void("release", 2, params, err, errlen);
	return db_return(id, token, "released", "pending", NULL, err, errlen);
}

/*
 * A statement of a workflow call, not prepared: the worker also runs
 * against versions of the extension without these functions, and steps
 * are rarer than plain returns.  The first column of the first row, if
 * any, in *value (malloc'd; NULL for SQL NULL); also the second in
 * *value2.  False with the error in err.
 */
bool
db_exec_params(const char *sql, int nparams, const char *const *params,
			char **value, char **value2, char *err, size_t errlen)
{
	PGresult   *res;
	bool		ok;

	if (value != NULL)
		*value = NULL;
	if (value2 != NULL)
		*value2 = NULL;
	if (conn == NULL)
	{
		snprintf(err, errlen, "not connected");
		return false;
	}
	async_drain();
	res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
	ok = PQresultStatus(res) == PGRES_TUPLES_OK;
	if (!ok)
		failed(res, "workflow call", err, errlen);
	else if (PQntuples(res) > 0)
	{
		if (value != NULL && PQnfields(res) > 0)
			*value = db_value_or_null(res, 0, 0);
		if (value2 != NULL && PQnfields(res) > 1)
			*value2 = db_value_or_null(res, 0, 1);
	}
	PQclear(res);
	return ok;
}

/*
 * A fan-in batch's body with the batch's instances added, in arrival order:
 * "fan_in_contexts": [{"run": ..., "context": ...}, ...] (fan_in_contexts).
 */
bool
db_fan_in_body(const char *id, const char *token, const char *body,
			   char **new_body, char *err, size_t errlen)
{
	const char *params[3] = {id, token, body};

	if (!db_exec_params("SELECT ($3::jsonb || pg_catalog.jsonb_build_object('fan_in_contexts', "
					 "coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object("
					 "'run', f.run, 'context', f.context) ORDER BY f.n) "
					 "FROM taskq.fan_in_contexts($1, $2::uuid) WITH ORDINALITY AS f(run, context, n)), "
					 "'[]'::jsonb)))::text",
					 3, params, new_body, NULL, err, errlen))
		return false;
	if (*new_body == NULL)
	{
		snprintf(err, errlen, "fan_in_contexts answered nothing");
		return false;
	}
	return true;
}

/*
 * transition(id, token, event, context); with fork, continue_machine(id,
 * token, cursor) first, in the same statement (so in one transaction: a
 * failed transition forks nothing).  *next_state: the state the run went
 * to (NULL: the run ended); *fork_run: the run forked, if any.
 */
bool
db_transition(const char *id, const char *token, const char *event,
			  const char *context, bool fork, const char *cursor,
			  char **next_state, char **fork_run, char *err, size_t errlen)
{
	const char *params[5] = {id, token, event, context, cursor};

	if (!fork)
		return db_exec_params("SELECT taskq.transition($1, $2::uuid, $3, $4::jsonb)",
						   4, params, next_state, NULL, err, errlen);
	return db_exec_params("WITH c AS MATERIALIZED "
					   "(SELECT taskq.continue_machine($1, $2::uuid, $5) AS fork) "
					   "SELECT taskq.transition($1, $2::uuid, $3, $4::jsonb), c.fork FROM c",
					   5, params, next_state, fork_run, err, errlen);
}

/* return_step(id, token, result, working, error). */
bool
db_return_step(const char *id, const char *token, const char *result,
			   const char *working, const char *error, char *err, size_t errlen)
{
	const char *params[5] = {id, token, result, working, error};

	return db_exec_params("SELECT taskq.return_step($1, $2::uuid, $3, $4::jsonb, $5)",
					   5, params, NULL, NULL, err, errlen);
}

/*
 * The workers registry (taskq 0.6): worker_heartbeat(worker_id, info) with
 * this worker's actor, host, pid, version, actions, concurrency and
 * heartbeat interval; worker_stopped(worker_id) at a clean exit.  Not
 * prepared: older versions of the extension have neither function.
 * Returns REGISTRY_OK, REGISTRY_MISSING (42883: the function does not
 * exist), REGISTRY_DENIED (42501: the role may not call it) or
 * REGISTRY_FAILED (err says why; the connection may be lost).
 */
int
db_worker_heartbeat(const char *worker_id, const char *host, int64_t interval_ms,
					char *err, size_t errlen)
{
	char	   *actions_arr;
	char		pid[32];
	char		concurrency[32];
	char		interval[64];
	const char *params[8];
	PGresult   *res;
	int			rc;

	if (conn == NULL)
	{
		snprintf(err, errlen, "not connected");
		return REGISTRY_FAILED;
	}
	actions_arr = actions_literal();
	snprintf(pid, sizeof(pid), "%ld", (long) getpid());
	snprintf(concurrency, sizeof(concurrency), "%d", opts.concurrency);
	snprintf(interval, sizeof(interval), "%.3f", interval_ms / 1000.0);
	params[0] = worker_id;
	params[1] = opts.actor;
	params[2] = host;
	params[3] = pid;
	params[4] = "taskq-worker " TASKQ_WORKER_VERSION;
	params[5] = actions_arr;
	params[6] = concurrency;
	params[7] = interval;
	async_drain();
	res = PQexecParams(conn,
					   "SELECT taskq.worker_heartbeat($1, pg_catalog.jsonb_build_object("
					   "'actor', $2::text, 'host', $3::text, 'pid', $4::integer, "
					   "'version', $5::text, 'actions', $6::text[], "
					   "'concurrency', $7::integer, 'heartbeat_interval', $8::numeric))",
					   8, NULL, params, NULL, NULL, 0);
	free(actions_arr);
	if (PQresultStatus(res) == PGRES_TUPLES_OK)
		rc = REGISTRY_OK;
	else
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		rc = state == NULL ? REGISTRY_FAILED :
			strcmp(state, "42883") == 0 ? REGISTRY_MISSING :
			strcmp(state, "42501") == 0 ? REGISTRY_DENIED : REGISTRY_FAILED;
		failed(res, "worker_heartbeat", err, errlen);
	}
	PQclear(res);
	return rc;
}

/* worker_stopped(worker_id); false with the error in err. */
bool
db_worker_stopped(const char *worker_id, char *err, size_t errlen)
{
	const char *params[1] = {worker_id};

	return db_exec_params("SELECT taskq.worker_stopped($1)", 1, params, NULL, NULL, err, errlen);
}
