/*
 * bench/machines.c — the state-machine workloads of bench/run.sh
 * (WORKLOADS=machines), each against its plain-task counterpart measured
 * in the same run.  bench/run.sh sets up the tables and the definitions
 * (untimed) and calls:
 *
 *   machines step  --clients N --tasks T   T machine steps: own_tasks of a
 *       step, then transition(id, token, 'next') creating the next visit of
 *       a looping state (two calls, each its own transaction), over the
 *       runs run.sh started
 *   machines succ  --clients N --tasks T   T plain tasks: own_tasks, then
 *       return_task + insert_tasks of one successor (with the claimed body)
 *       in one statement (two calls, as step)
 *   machines drain --clients N --tasks T   a plain drain of T tasks, one
 *       per row of bench.rows: own_tasks, then return_task with the row's
 *       UPDATE (its "email": sent = sent + 1) in the same statement
 *   machines cont  --clients N --tasks T [--chunk K]   a continuation over
 *       the T rows of bench.rows, K rows per instance (1: one instance per
 *       row): one client forks the next instance
 *       (continue_machine, committed without waiting for the WAL flush: a
 *       fork a crash loses is made again by the step's retry) and claims it
 *       in the same transaction (two prepared statements in one pipeline),
 *       and hands each step to N - 1 clients that UPDATE its K rows and
 *       transition it (NULL: the instance ends) in one statement
 *   machines fanin --clients N --tasks T   T instances run state A
 *       (transition 'go' into the fan-in state F, window run.sh chose) by N
 *       clients, while one more client, waiting in own_tasks, claims each
 *       batch task when it becomes ready, counts its instances with
 *       fan_in_contexts and transitions it: arrivals per second, the
 *       batches, and how long after its window's end each batch task was
 *       claimed (the server's clock_timestamp() at the claim less the
 *       task's not_before); a second extra client counts and ends the
 *       batches it hands over
 *
 * Each prints one line of key=value pairs.  Connections from the libpq
 * environment (PGHOST, PGPORT, ...).
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
#include <unistd.h>

#include <libpq-fe.h>

#include "common.h"

static int	nclients = 1;
static long ntasks = 1000;
static long chunk = 1;			/* cont: rows per instance */
static const char *mode;
static atomic_long done;
static atomic_long empty_claims;
static pthread_barrier_t start_barrier;
static double t_start;

static void
start_together(void)
{
	pthread_barrier_wait(&start_barrier);
}

/* ---- step, succ, drain: claim one, finish it (two calls) ---- */

static void *
loop_thread(void *arg)
{
	long		me = (long) arg;
	PGconn	   *conn = connect_db();
	char		actor[32];
	const char *action = strcmp(mode, "step") == 0 ? "{mstep}" :
		strcmp(mode, "succ") == 0 ? "{succ}" : "{work}";
	long		k = 0;

	snprintf(actor, sizeof(actor), "bench-%ld", me);
	prepare(conn, "own",
			"SELECT id, token, body::text FROM taskq.own_tasks($1, 1, $2::text[], '60 s')");
	prepare(conn, "step", "SELECT taskq.transition($1, $2::uuid, 'next')");
	prepare(conn, "succ",
			"SELECT taskq.return_task($1, $2::uuid, 'next', 'completed'),"
			"       taskq.insert_tasks(pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object("
			"           'id', $3::text, 'action', 'succ', 'body', $4::jsonb)))");
	if (strcmp(mode, "drain") == 0)
		prepare(conn, "drain",
				"WITH sent AS (UPDATE bench.rows SET sent = sent + 1"
				"               WHERE id = pg_catalog.substr($1, 2)::int)"
				" SELECT taskq.return_task($1, $2::uuid, NULL, 'completed')");
	start_together();
	while (atomic_load(&done) < ntasks)
	{
		const char *p[4] = {actor, action};
		PGresult   *res = exec_prepared(conn, "own", 2, p);
		char		next[64];

		if (PQntuples(res) == 0)
		{
			PQclear(res);
			atomic_fetch_add(&empty_claims, 1);
			usleep(200);
			continue;
		}
		p[0] = PQgetvalue(res, 0, 0);
		p[1] = PQgetvalue(res, 0, 1);
		snprintf(next, sizeof(next), "s%ld-%ld", me, ++k);
		p[2] = next;
		p[3] = PQgetvalue(res, 0, 2);
		PQclear(exec_prepared(conn, mode, strcmp(mode, "succ") == 0 ? 4 : 2, p));
		PQclear(res);
		atomic_fetch_add(&done, 1);
	}
	PQfinish(conn);
	return NULL;
}

/* ---- cont: one forker, N - 1 finishers ---- */

typedef struct Step
{
	char		id[80];
	char		token[40];
	long		cursor;
} Step;

static Step *handoff;
static long handoff_in,
			handoff_out;
static pthread_mutex_t handoff_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t handoff_cond = PTHREAD_COND_INITIALIZER;

static void
hand_off(const char *id, const char *token, long cursor)
{
	pthread_mutex_lock(&handoff_lock);
	handoff[handoff_in].cursor = cursor;
	snprintf(handoff[handoff_in].id, sizeof(handoff[0].id), "%s", id);
	snprintf(handoff[handoff_in].token, sizeof(handoff[0].token), "%s", token);
	handoff_in++;
	pthread_cond_signal(&handoff_cond);
	pthread_mutex_unlock(&handoff_lock);
}

/* the next result of a pipeline, which must succeed, and its NULL after it */
static PGresult *
pipeline_result(PGconn *conn, const char *what)
{
	PGresult   *res = PQgetResult(conn);
	PGresult   *end;

	if (res == NULL || (PQresultStatus(res) != PGRES_TUPLES_OK &&
						PQresultStatus(res) != PGRES_COMMAND_OK))
		die(what, conn, res);
	end = PQgetResult(conn);
	if (end != NULL)
		die(what, conn, end);
	return res;
}

/* the sync that ends a pipeline's transaction */
static void
pipeline_sync(PGconn *conn)
{
	PGresult   *res = PQgetResult(conn);

	if (res == NULL || PQresultStatus(res) != PGRES_PIPELINE_SYNC)
		die("sync", conn, res);
	PQclear(res);
}

/* own_tasks of the forker alone, in pipeline mode */
static PGresult *
pipelined_own(PGconn *conn)
{
	PGresult   *res;

	if (!PQsendQueryPrepared(conn, "own", 0, NULL, NULL, NULL, 0) ||
		!PQpipelineSync(conn))
		die("send", conn, NULL);
	res = pipeline_result(conn, "own");
	pipeline_sync(conn);
	return res;
}

static void *
forker_thread(void *arg)
{
	PGconn	   *conn = connect_db();
	PGresult   *res;
	char		id[80],
				token[40];
	long		cursor;

	(void) arg;
	prepare(conn, "own",
			"SELECT id, token, coalesce(body->>'cursor', '0') FROM taskq.own_tasks('forker', 1, '{cont}', '60 s')");
	prepare(conn, "fork", "SELECT taskq.continue_machine($1, $2::uuid, $3)");
	/* the forks commit without waiting for the WAL flush */
	exec_sql(conn, "SET synchronous_commit = off");
	if (!PQenterPipelineMode(conn))
		die("pipeline", conn, NULL);
	start_together();
	for (;;)
	{
		res = pipelined_own(conn);
		if (PQntuples(res) == 1)
			break;
		PQclear(res);
		usleep(100);
	}
	snprintf(id, sizeof(id), "%s", PQgetvalue(res, 0, 0));
	snprintf(token, sizeof(token), "%s", PQgetvalue(res, 0, 1));
	cursor = atol(PQgetvalue(res, 0, 2));
	PQclear(res);
	while (cursor + chunk < ntasks)
	{
		char		next[24];
		const char *p[3] = {id, token, next};
		PGresult   *own;

		/*
		 * Fork the next row and claim it: two prepared statements in one
		 * pipeline, one round trip, one implicit transaction ended by the
		 * sync.
		 */
		snprintf(next, sizeof(next), "%ld", cursor + chunk);
		if (!PQsendQueryPrepared(conn, "fork", 3, p, NULL, NULL, 0) ||
			!PQsendQueryPrepared(conn, "own", 0, NULL, NULL, NULL, 0) ||
			!PQpipelineSync(conn))
			die("send", conn, NULL);
		res = pipeline_result(conn, "fork");
		PQclear(res);
		own = pipeline_result(conn, "own");
		pipeline_sync(conn);
		hand_off(id, token, cursor);
		while (PQntuples(own) == 0)
		{
			PQclear(own);
			atomic_fetch_add(&empty_claims, 1);
			usleep(100);
			own = pipelined_own(conn);
		}
		snprintf(id, sizeof(id), "%s", PQgetvalue(own, 0, 0));
		snprintf(token, sizeof(token), "%s", PQgetvalue(own, 0, 1));
		cursor = atol(PQgetvalue(own, 0, 2));
		PQclear(own);
	}
	hand_off(id, token, cursor);
	PQfinish(conn);
	return NULL;
}

static void *
finisher_thread(void *arg)
{
	PGconn	   *conn = connect_db();

	(void) arg;
	prepare(conn, "end",
			"WITH sent AS (UPDATE bench.rows SET sent = sent + 1"
			"               WHERE id >= $3::int AND id < $3::int + $4::int)"
			" SELECT taskq.transition($1, $2::uuid, NULL)");
	start_together();
	for (;;)
	{
		Step		s;
		char		cur[24],
					k[24];
		const char *p[4] = {NULL, NULL, cur, k};
		long		rows;

		pthread_mutex_lock(&handoff_lock);
		while (handoff_out == handoff_in && atomic_load(&done) < ntasks)
			pthread_cond_wait(&handoff_cond, &handoff_lock);
		if (handoff_out == handoff_in)
		{
			pthread_mutex_unlock(&handoff_lock);
			break;
		}
		s = handoff[handoff_out++];
		pthread_mutex_unlock(&handoff_lock);
		p[0] = s.id;
		p[1] = s.token;
		snprintf(cur, sizeof(cur), "%ld", s.cursor);
		snprintf(k, sizeof(k), "%ld", chunk);
		PQclear(exec_prepared(conn, "end", 4, p));
		rows = s.cursor + chunk <= ntasks ? chunk : ntasks - s.cursor;
		if (atomic_fetch_add(&done, rows) + rows >= ntasks)
		{
			pthread_mutex_lock(&handoff_lock);
			pthread_cond_broadcast(&handoff_cond);
			pthread_mutex_unlock(&handoff_lock);
		}
	}
	PQfinish(conn);
	return NULL;
}

/* ---- fanin: N arrival clients, one batch client waiting in own_tasks ---- */

static atomic_long arrivals;
static double t_arrivals_done;
static double lat_ms[100000];
static long nbatches;

static void *
arrival_thread(void *arg)
{
	long		me = (long) arg;
	PGconn	   *conn = connect_db();
	char		actor[32];

	snprintf(actor, sizeof(actor), "arrive-%ld", me);
	prepare(conn, "own", "SELECT id, token FROM taskq.own_tasks($1, 1, '{fa}', '60 s')");
	prepare(conn, "go", "SELECT taskq.transition($1, $2::uuid, 'go')");
	start_together();
	for (;;)
	{
		const char *p[2] = {actor};
		PGresult   *res = exec_prepared(conn, "own", 1, p);

		if (PQntuples(res) == 0)
		{
			PQclear(res);
			break;				/* every instance was started before: none left */
		}
		p[0] = PQgetvalue(res, 0, 0);
		p[1] = PQgetvalue(res, 0, 1);
		PQclear(exec_prepared(conn, "go", 2, p));
		PQclear(res);
		if (atomic_fetch_add(&arrivals, 1) + 1 == ntasks)
			t_arrivals_done = now_s();
	}
	PQfinish(conn);
	return NULL;
}

/*
 * The batch client: waits for each batch task inside the database
 * (own_tasks with a wait: the background worker wakes the claim when the
 * window's not_before comes) and hands it to the counting client, so that
 * counting and ending a batch of hundreds of instances never delays the
 * claim of the next one.
 */
static atomic_long counted_a;

static void *
batch_thread(void *arg)
{
	PGconn	   *conn = connect_db();
	PGresult   *res;

	(void) arg;
	prepare(conn, "own",
			"SELECT o.id, o.token,"
			"       extract(epoch FROM clock_timestamp() - t.not_before) * 1000"
			"  FROM taskq.own_tasks('batcher', 10, '{ff}', '60 s', wait => '0.2 s') AS o"
			"  JOIN taskq.tasks AS t ON t.id = o.id");
	start_together();
	while (atomic_load(&counted_a) < ntasks)
	{
		res = exec_prepared(conn, "own", 0, NULL);
		for (int i = 0; i < PQntuples(res); i++)
		{
			if (nbatches < (long) (sizeof(lat_ms) / sizeof(lat_ms[0])))
				lat_ms[nbatches] = atof(PQgetvalue(res, i, 2));
			nbatches++;
			hand_off(PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), 0);
		}
		PQclear(res);
	}
	PQfinish(conn);
	return NULL;
}

static void *
count_thread(void *arg)
{
	PGconn	   *conn = connect_db();

	(void) arg;
	prepare(conn, "count", "SELECT count(*) FROM taskq.fan_in_contexts($1, $2::uuid)");
	prepare(conn, "end", "SELECT taskq.transition($1, $2::uuid, NULL)");
	start_together();
	while (atomic_load(&counted_a) < ntasks)
	{
		Step		s;
		const char *p[2];
		PGresult   *c;
		struct timespec until;

		pthread_mutex_lock(&handoff_lock);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		if (handoff_out == handoff_in)
			pthread_cond_timedwait(&handoff_cond, &handoff_lock, &until);
		if (handoff_out == handoff_in)
		{
			pthread_mutex_unlock(&handoff_lock);
			continue;
		}
		s = handoff[handoff_out++];
		pthread_mutex_unlock(&handoff_lock);
		p[0] = s.id;
		p[1] = s.token;
		c = exec_prepared(conn, "count", 2, p);
		atomic_fetch_add(&counted_a, atol(PQgetvalue(c, 0, 0)));
		PQclear(c);
		PQclear(exec_prepared(conn, "end", 2, p));
	}
	PQfinish(conn);
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t  *th;
	int			nthreads;
	double		secs;

	if (argc < 2)
	{
		fprintf(stderr, "usage: machines step|succ|drain|cont|fanin --clients N --tasks T [--chunk K]\n");
		return 2;
	}
	mode = argv[1];
	for (int i = 2; i + 1 < argc; i += 2)
	{
		if (strcmp(argv[i], "--clients") == 0)
			nclients = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--tasks") == 0)
			ntasks = atol(argv[i + 1]);
		else if (strcmp(argv[i], "--chunk") == 0)
			chunk = atol(argv[i + 1]);
	}
	nthreads = nclients + (strcmp(mode, "fanin") == 0 ? 2 : 0);
	th = calloc(nthreads, sizeof(pthread_t));
	pthread_barrier_init(&start_barrier, NULL, nthreads + 1);
	if (strcmp(mode, "cont") == 0)
	{
		if (nclients < 2)
		{
			fprintf(stderr, "machines: cont needs 2 clients or more\n");
			return 2;
		}
		handoff = calloc(ntasks, sizeof(Step));
		pthread_create(&th[0], NULL, forker_thread, NULL);
		for (long i = 1; i < nclients; i++)
			pthread_create(&th[i], NULL, finisher_thread, (void *) i);
	}
	else if (strcmp(mode, "fanin") == 0)
	{
		handoff = calloc(ntasks, sizeof(Step));
		for (long i = 0; i < nclients; i++)
			pthread_create(&th[i], NULL, arrival_thread, (void *) i);
		pthread_create(&th[nclients], NULL, batch_thread, NULL);
		pthread_create(&th[nclients + 1], NULL, count_thread, NULL);
	}
	else
		for (long i = 0; i < nclients; i++)
			pthread_create(&th[i], NULL, loop_thread, (void *) i);
	pthread_barrier_wait(&start_barrier);
	t_start = now_s();
	if (strcmp(mode, "fanin") == 0)
	{
		long		n;

		for (int i = 0; i < nclients; i++)
			pthread_join(th[i], NULL);
		secs = t_arrivals_done - t_start;
		pthread_join(th[nclients], NULL);
		pthread_join(th[nclients + 1], NULL);
		n = nbatches < 100000 ? nbatches : 100000;
		qsort(lat_ms, n, sizeof(double), compare_double);
		printf("workload=fanin clients=%d instances=%ld arrivals=%ld seconds=%.3f rate=%.0f batches=%ld counted=%ld"
			   " ready_p50_ms=%.2f ready_p95_ms=%.2f ready_max_ms=%.2f ready_min_ms=%.2f\n",
			   nclients, ntasks, atomic_load(&arrivals), secs, atomic_load(&arrivals) / secs, nbatches,
			   atomic_load(&counted_a), n ? lat_ms[n / 2] : NAN, n ? lat_ms[(long) (n * 0.95)] : NAN,
			   n ? lat_ms[n - 1] : NAN, n ? lat_ms[0] : NAN);
		return 0;
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	secs = now_s() - t_start;
	printf("workload=%s clients=%d tasks=%ld seconds=%.3f rate=%.0f empty_claims=%ld\n",
		   mode, nclients, atomic_load(&done), secs, atomic_load(&done) / secs,
		   atomic_load(&empty_claims));
	return 0;
}
