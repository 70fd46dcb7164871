/*
 * driver.c — taskq benchmark driver (libpq, one thread and connection per
 * client).
 *
 *   driver SYSTEM WORKLOAD [options]
 *     SYSTEM    taskq | baseline | floor   (baseline and floor: bench/schema.sql)
 *     WORKLOAD  enqueue   insert --tasks tasks from --clients clients,
 *                         --batch tasks per transaction
 *               drain     claim --per-claim tasks and complete them until the
 *                         queue is empty (taskq: own_tasks + return_task(s);
 *                         baseline: UPDATE..SKIP LOCKED + UPDATE by token;
 *                         floor: DELETE..SKIP LOCKED)
 *               latency   taskq only: a producer at --rate tasks/s for
 *                         --seconds, --clients workers waiting on LISTEN taskq;
 *                         enqueue->claim from database timestamps
 *   options: --clients N --tasks N --batch N --per-claim N --rate N
 *            --seconds N --action NAME --prefix ID_PREFIX
 *   The connection comes from the usual PG* environment variables.
 *
 * Prints one line of key=value pairs; bench/run.sh turns them into tables.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include <libpq-fe.h>

typedef struct Options
{
	const char *system;
	const char *workload;
	int			clients;
	long		tasks;
	int			batch;
	int			per_claim;
	int			rate;
	int			seconds;
	const char *action;
	const char *prefix;
} Options;

static Options opt = {NULL, NULL, 4, 100000, 1, 1, 300, 20, "work", "e"};

static atomic_long next_task;	/* enqueue: tasks handed out so far */
static atomic_long done_tasks;	/* drain: tasks completed */
static atomic_int producer_done;

/* latency samples, milliseconds */
static double *samples;
static atomic_long nsamples;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
die(const char *what, PGconn *conn, PGresult *res)
{
	fprintf(stderr, "driver: %s: %s", what,
			res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
	exit(1);
}

static PGconn *
connect_db(void)
{
	PGconn	   *conn = PQconnectdb("");

	if (PQstatus(conn) != CONNECTION_OK)
		die("connect", conn, NULL);
	return conn;
}

static void
prepare(PGconn *conn, const char *name, const char *sql)
{
	PGresult   *res = PQprepare(conn, name, sql, 0, NULL);

	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		die(name, conn, res);
	PQclear(res);
}

static PGresult *
exec_prepared(PGconn *conn, const char *name, int n, const char *const *params)
{
	PGresult   *res = PQexecPrepared(conn, name, n, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);

	if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK)
		die(name, conn, res);
	return res;
}

static const char *BODY = "\"payload\": \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123\"";

/* ---- enqueue ---- */

static void *
enqueue_thread(void *arg)
{
	int			me = (int) (long) arg;
	PGconn	   *conn = connect_db();
	char	   *buf = malloc((size_t) opt.batch * 256 + 64);
	int			taskq = strcmp(opt.system, "taskq") == 0;

	if (taskq)
		prepare(conn, "enq", "SELECT taskq.insert_tasks($1::jsonb)");
	else
		prepare(conn, "enq", strcmp(opt.system, "baseline") == 0 ?
				"INSERT INTO bench.baseline (body) SELECT pg_catalog.jsonb_array_elements($1::jsonb)" :
				"INSERT INTO bench.floor (body) SELECT pg_catalog.jsonb_array_elements($1::jsonb)");

	for (;;)
	{
		long		first = atomic_fetch_add(&next_task, opt.batch);
		long		n = opt.batch;
		char	   *p = buf;
		const char *params[1];

		if (first >= opt.tasks)
			break;
		if (first + n > opt.tasks)
			n = opt.tasks - first;
		*p++ = '[';
		for (long i = 0; i < n; i++)
		{
			if (i > 0)
				*p++ = ',';
			if (taskq)
				p += sprintf(p, "{\"id\": \"%s%d-%ld\", \"action\": \"%s\", \"body\": {%s}}",
							 opt.prefix, me, first + i, opt.action, BODY);
			else
				p += sprintf(p, "{%s}", BODY);
		}
		*p++ = ']';
		*p = '\0';
		params[0] = buf;
		PQclear(exec_prepared(conn, "enq", 1, params));
	}
	PQfinish(conn);
	free(buf);
	return NULL;
}

/* ---- drain ---- */

/* Append v to the array literal arr, which is "{}" or "{...}". */
static void
append_array_elem(char *arr, const char *v)
{
	size_t		len = strlen(arr) - 1;	/* drop the closing brace */

	if (len > 1)
		arr[len++] = ',';
	sprintf(arr + len, "\"%s\"}", v);
}

static void *
drain_thread(void *arg)
{
	int			me = (int) (long) arg;
	PGconn	   *conn = connect_db();
	char		actor[32];
	char		limit[16];
	size_t		cap = (size_t) opt.per_claim * 80 + 16;
	char	   *ids = malloc(cap);
	char	   *tokens = malloc(cap);
	char	   *codes = malloc((size_t) opt.per_claim * 12 + 16);

	snprintf(actor, sizeof(actor), "w%d", me);
	snprintf(limit, sizeof(limit), "%d", opt.per_claim);
	if (strcmp(opt.system, "taskq") == 0)
	{
		char		sql[256];

		snprintf(sql, sizeof(sql),
				 "SELECT id, token FROM taskq.own_tasks($1, $2::int, '{%s}', '5 minutes')",
				 opt.action);
		prepare(conn, "claim", sql);
		prepare(conn, "done1", "SELECT taskq.return_task($1, $2::uuid, NULL, 'completed')");
		prepare(conn, "doneN", "SELECT taskq.return_tasks($1::text[], $2::uuid[], NULL, $3::taskq.status[])");
	}
	else if (strcmp(opt.system, "baseline") == 0)
	{
		prepare(conn, "claim",
				"UPDATE bench.baseline SET status = 'running', token = gen_random_uuid(), locked_at = now()"
				" WHERE id IN (SELECT id FROM bench.baseline WHERE status = 'pending'"
				"              ORDER BY id FOR UPDATE SKIP LOCKED LIMIT $2::int)"
				" RETURNING id, token, $1::text");
		prepare(conn, "doneN",
				"UPDATE bench.baseline AS b SET status = 'done'"
				"  FROM unnest($1::bigint[], $2::uuid[]) AS u(id, token)"
				" WHERE b.id = u.id AND b.token = u.token");
	}
	else
		prepare(conn, "claim",
				"DELETE FROM bench.floor WHERE id IN (SELECT id FROM bench.floor"
				" ORDER BY id FOR UPDATE SKIP LOCKED LIMIT $2::int) RETURNING id, body, $1::text");

	for (;;)
	{
		const char *params[3] = {actor, limit, NULL};
		PGresult   *res = exec_prepared(conn, "claim", 2, params);
		int			n = PQntuples(res);

		if (n == 0)
		{
			PQclear(res);
			break;
		}
		if (strcmp(opt.system, "floor") != 0)
		{
			if (n == 1 && strcmp(opt.system, "taskq") == 0)
			{
				params[0] = PQgetvalue(res, 0, 0);
				params[1] = PQgetvalue(res, 0, 1);
				PQclear(exec_prepared(conn, "done1", 2, params));
			}
			else
			{
				strcpy(ids, "{}");
				strcpy(tokens, "{}");
				strcpy(codes, "{}");
				for (int i = 0; i < n; i++)
				{
					append_array_elem(ids, PQgetvalue(res, i, 0));
					append_array_elem(tokens, PQgetvalue(res, i, 1));
					append_array_elem(codes, "completed");
				}
				params[0] = ids;
				params[1] = tokens;
				params[2] = codes;
				PQclear(exec_prepared(conn, "doneN",
									  strcmp(opt.system, "taskq") == 0 ? 3 : 2, params));
			}
		}
		atomic_fetch_add(&done_tasks, n);
		PQclear(res);
	}
	PQfinish(conn);
	free(ids);
	free(tokens);
	free(codes);
	return NULL;
}

/* ---- latency ---- */

static void *
producer_thread(void *arg )
{
	PGconn	   *conn = connect_db();
	double		start = now_s();
	long		total = (long) opt.rate * opt.seconds;

	(void) arg;
	char		buf[512];

	prepare(conn, "enq", "SELECT taskq.insert_tasks($1::jsonb)");
	for (long i = 0; i < total; i++)
	{
		double		due = start + (double) i / opt.rate;
		double		wait = due - now_s();
		const char *params[1] = {buf};

		if (wait > 0)
		{
			struct timespec ts = {(time_t) wait, (long) ((wait - (time_t) wait) * 1e9)};

			nanosleep(&ts, NULL);
		}
		snprintf(buf, sizeof(buf),
				 "[{\"id\": \"%s-%ld\", \"action\": \"%s\", \"body\": {%s}}]",
				 opt.prefix, i, opt.action, BODY);
		PQclear(exec_prepared(conn, "enq", 1, params));
	}
	atomic_store(&producer_done, 1);
	PQfinish(conn);
	return NULL;
}

static void *
listener_thread(void *arg)
{
	int			me = (int) (long) arg;
	PGconn	   *conn = connect_db();
	char		actor[32];
	char		sql[512];
	PGresult   *res;

	snprintf(actor, sizeof(actor), "l%d", me);
	res = PQexec(conn, "LISTEN taskq");
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		die("listen", conn, res);
	PQclear(res);
	snprintf(sql, sizeof(sql),
			 "SELECT o.id, o.token,"
			 "       extract(epoch FROM clock_timestamp() - t.created_at) * 1000"
			 "  FROM taskq.own_tasks($1, 10, '{%s}', '1 minute') AS o"
			 "  JOIN taskq.tasks AS t ON t.id = o.id", opt.action);
	prepare(conn, "claim", sql);
	prepare(conn, "done1", "SELECT taskq.return_task($1, $2::uuid, NULL, 'completed')");

	for (;;)
	{
		const char *params[2] = {actor, NULL};
		int			n;

		res = exec_prepared(conn, "claim", 1, params);
		n = PQntuples(res);
		for (int i = 0; i < n; i++)
		{
			long		k = atomic_fetch_add(&nsamples, 1);
			const char *p2[2] = {PQgetvalue(res, i, 0), PQgetvalue(res, i, 1)};

			samples[k] = atof(PQgetvalue(res, i, 2));
			PQclear(exec_prepared(conn, "done1", 2, p2));
		}
		PQclear(res);
		if (n > 0)
			continue;
		if (atomic_load(&producer_done))
			break;

		/* idle: wait for a notification (or 100 ms, then poll anyway) */
		{
			int			sock = PQsocket(conn);
			fd_set		fds;
			struct timeval tv = {0, 100000};
			PGnotify   *note;

			FD_ZERO(&fds);
			FD_SET(sock, &fds);
			if (select(sock + 1, &fds, NULL, NULL, &tv) < 0 && errno != EINTR)
				die("select", conn, NULL);
			PQconsumeInput(conn);
			while ((note = PQnotifies(conn)) != NULL)
				PQfreemem(note);
		}
	}
	PQfinish(conn);
	return NULL;
}

static int
compare_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static double
percentile(double *v, long n, double p)
{
	long		k;

	if (n == 0)
		return NAN;
	k = (long) ceil(p / 100.0 * n) - 1;
	if (k < 0)
		k = 0;
	return v[k];
}

int
main(int argc, char **argv)
{
	pthread_t  *threads;
	double		start,
				elapsed;

	if (argc < 3)
	{
		fprintf(stderr, "usage: driver taskq|baseline|floor enqueue|drain|latency [options]\n");
		return 2;
	}
	opt.system = argv[1];
	opt.workload = argv[2];
	for (int i = 3; i + 1 < argc; i += 2)
	{
		const char *k = argv[i],
				   *v = argv[i + 1];

		if (strcmp(k, "--clients") == 0)
			opt.clients = atoi(v);
		else if (strcmp(k, "--tasks") == 0)
			opt.tasks = atol(v);
		else if (strcmp(k, "--batch") == 0)
			opt.batch = atoi(v);
		else if (strcmp(k, "--per-claim") == 0)
			opt.per_claim = atoi(v);
		else if (strcmp(k, "--rate") == 0)
			opt.rate = atoi(v);
		else if (strcmp(k, "--seconds") == 0)
			opt.seconds = atoi(v);
		else if (strcmp(k, "--action") == 0)
			opt.action = v;
		else if (strcmp(k, "--prefix") == 0)
			opt.prefix = v;
		else
		{
			fprintf(stderr, "driver: unknown option %s\n", k);
			return 2;
		}
	}

	threads = calloc(opt.clients + 1, sizeof(pthread_t));
	start = now_s();
	if (strcmp(opt.workload, "enqueue") == 0 || strcmp(opt.workload, "drain") == 0)
	{
		void	   *(*fn) (void *) = opt.workload[0] == 'e' ? enqueue_thread : drain_thread;

		for (long i = 0; i < opt.clients; i++)
			pthread_create(&threads[i], NULL, fn, (void *) i);
		for (int i = 0; i < opt.clients; i++)
			pthread_join(threads[i], NULL);
		elapsed = now_s() - start;
		{
			long		n = opt.workload[0] == 'e' ? opt.tasks : atomic_load(&done_tasks);

			printf("system=%s workload=%s clients=%d batch=%d per_claim=%d tasks=%ld seconds=%.3f rate=%.0f\n",
				   opt.system, opt.workload, opt.clients, opt.batch, opt.per_claim,
				   n, elapsed, n / elapsed);
		}
	}
	else if (strcmp(opt.workload, "latency") == 0)
	{
		long		n;

		samples = calloc((size_t) opt.rate * opt.seconds + 16, sizeof(double));
		for (long i = 0; i < opt.clients; i++)
			pthread_create(&threads[i], NULL, listener_thread, (void *) i);
		pthread_create(&threads[opt.clients], NULL, producer_thread, NULL);
		for (int i = 0; i <= opt.clients; i++)
			pthread_join(threads[i], NULL);
		n = atomic_load(&nsamples);
		qsort(samples, n, sizeof(double), compare_double);
		printf("system=%s workload=latency clients=%d rate=%d seconds=%d tasks=%ld p50_ms=%.2f p95_ms=%.2f p99_ms=%.2f\n",
			   opt.system, opt.clients, opt.rate, opt.seconds, n,
			   percentile(samples, n, 50), percentile(samples, n, 95),
			   percentile(samples, n, 99));
	}
	else
	{
		fprintf(stderr, "driver: unknown workload %s\n", opt.workload);
		return 2;
	}
	return 0;
}
