/*
 * driver.c — taskq benchmark driver (libpq, one thread and connection per
 * client).
 *
 *   driver SYSTEM WORKLOAD [options]
 *     SYSTEM    taskq | cycle | baseline | floor | bound   (the last three:
 *               bench/schema.sql; cycle: taskq with return_and_own)
 *     WORKLOAD  enqueue   insert --tasks tasks from --clients clients,
 *                         --batch tasks per transaction
 *               drain     claim --per-claim tasks and complete them until the
 *                         queue is empty, or until --claims tasks were claimed
 *                         (taskq: own_tasks + return_task(s); baseline:
 *                         UPDATE..SKIP LOCKED + UPDATE by token; floor:
 *                         DELETE..SKIP LOCKED; bound: a claim that writes
 *                         nothing, each client reading only its own rows,
 *                         + UPDATE by id that marks them done); taskq
 *                         with --wait MS: each claim waits in own_tasks
 *                         up to MS for work, an empty claim ends a client
 *                         only when all --tasks are done, and the time runs
 *                         to the last completion (for limited actions,
 *                         whose claims come back empty while slots are full)
 *               latency   taskq only: a producer at --rate tasks/s for
 *                         --seconds, --clients workers waiting on LISTEN taskq
 *                         (with --wait MS: waiting inside own_tasks, no
 *                         LISTEN); enqueue->claim from database timestamps;
 *                         also the insert call's time and the claim's
 *                         moment less the insert's reply (negative: the
 *                         claim came first); --async-producer 1: the
 *                         producer commits with synchronous_commit = off,
 *                         so that the wake-up shows without the flush;
 *                         --producer insert_tasks: the producer's call is
 *                         insert_tasks with a one-task JSON array (default
 *                         enqueue, the one-task call)
 *     taskq only, the depth, fan-in, chain and soak workloads:
 *               depth     rounds of: enqueue --backlog tasks (not timed,
 *                         then VACUUM ANALYZE and CHECKPOINT), drain
 *                         min(--backlog, claims left) of them (timed), until
 *                         --claims tasks were claimed; the rate is over the
 *                         timed parts only.  A big backlog is one round that
 *                         leaves most of it pending; a small one is many.
 *               fanin     taskq.chord of --tasks members (action "member")
 *                         into one join (action "join"), not timed; then
 *                         drain the members (timed).  The client whose
 *                         return completes the last member polls own_tasks
 *                         on the join's action at once: join_ms is from the
 *                         reply to that last return (its commit is done) to
 *                         the reply of the own_tasks that got the join.
 *                         --trigger RULE gives the join a trigger rule:
 *                         all_done drains as above; one_success completes
 *                         one member only (the deciding one) and times the
 *                         join's claim from that return's reply
 *               chain     taskq.chain of --tasks hops (not timed); one
 *                         worker claims and completes hop after hop; the
 *                         next hop must be ownable as soon as the return
 *                         commits (empty claims are counted)
 *               soak      --seconds of steady drain + enqueue: --clients
 *                         workers, one producer adding --batch tasks per
 *                         transaction while fewer than --backlog are
 *                         unfinished (so both sides run flat out and the
 *                         queue stays shallow); throughput per second, size
 *                         of taskq.tasks, dead tuples, and what the rows
 *                         are (open vs finished) after the first --window
 *                         seconds and at the end
 *   options: --clients N --tasks N --batch N --per-claim N --rate N
 *            --seconds N --action NAME --prefix ID_PREFIX --claims N
 *            --backlog N --window N --trigger RULE
 *   The connection comes from the usual PG* environment variables.
 *
 * Prints one line of key=value pairs; bench/run.sh turns them into tables.
 * The soak also prints a progress line per window on stderr.
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
	const char *trigger;		/* fanin: the join's trigger rule (NULL: all_success) */
	long		claims;			/* drain: stop after this many (0: until empty) */
	long		backlog;		/* depth: tasks per round; soak: most unfinished */
	int			window;			/* soak: seconds of the first and last window */
	int			wait;			/* latency: workers wait in own_tasks (ms), not on LISTEN */
	int			async_producer;	/* latency: the producer commits without waiting for the flush */
	const char *producer;		/* latency: "enqueue" or "insert_tasks" */
} Options;

static Options opt = {
	.clients = 4,
	.tasks = 100000,
	.batch = 1,
	.per_claim = 1,
	.rate = 300,
	.seconds = 20,
	.action = "work",
	.producer = "enqueue",
	.prefix = "e",
	.trigger = NULL,
	.claims = 0,
	.backlog = 10000,
	.window = 60,
};

static atomic_long next_task;	/* enqueue: tasks handed out so far */
static atomic_long done_tasks;	/* drain: tasks completed */
static atomic_long claims_taken;	/* drain: claims reserved against opt.claims */
static atomic_int producer_done;
static atomic_int stop_soak;	/* soak: the time is up */

/* fanin: what the client that completed the last member saw */
static double last_done_at;	/* when the last member's return came back */
static double join_ms = -1;
static long join_polls;
static char join_token[64];

/* latency samples, milliseconds */
static double *samples;
static atomic_long nsamples;
/*
 * latency, by task number: when the producer's insert call returned (its
 * commit was done: wall clock), how long that call took (ms), and when a
 * worker's claim got the task (the server's clock_timestamp())
 */
static double *replied_at;
static double *insert_ms;
static double *claimed_at;

/*
 * Before a timed part: statistics and visibility map as after a quiet
 * period, and no checkpoint (with its full-page writes) due in the middle.
 */
static void
settle(PGconn *conn)
{
	exec_sql(conn, "VACUUM ANALYZE taskq.tasks");
	exec_sql(conn, "CHECKPOINT");
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

/*
 * What a client returns next, as array literals: the ids, tokens and
 * status codes ("completed") of the rows of a claim's result.
 */
typedef struct Held
{
	char	   *ids;
	char	   *tokens;
	char	   *codes;
} Held;

static void
held_init(Held *h)
{
	size_t		cap = (size_t) opt.per_claim * 80 + 16;

	h->ids = malloc(cap);
	h->tokens = malloc(cap);
	h->codes = malloc((size_t) opt.per_claim * 12 + 16);
	strcpy(h->ids, "{}");
	strcpy(h->tokens, "{}");
	strcpy(h->codes, "{}");
}

/*
 * The rows of res (id in column 0; with tokens, the token in column 1).
 * Without tokens only the ids are kept (bound: its column 1 is the body).
 */
static void
held_set(Held *h, PGresult *res, int tokens)
{
	strcpy(h->ids, "{}");
	strcpy(h->tokens, "{}");
	strcpy(h->codes, "{}");
	for (int i = 0; i < PQntuples(res); i++)
	{
		append_array_elem(h->ids, PQgetvalue(res, i, 0));
		if (!tokens)
			continue;
		append_array_elem(h->tokens, PQgetvalue(res, i, 1));
		append_array_elem(h->codes, "completed");
	}
}

static void
held_free(Held *h)
{
	free(h->ids);
	free(h->tokens);
	free(h->codes);
}

/*
 * fanin: called by the client whose return completed the last member, right
 * after that return's reply.  Claims the join with back-to-back own_tasks
 * calls and records how long it took and how many calls it needed: one call
 * means the join was ownable as soon as the last completion committed.
 */
static void
claim_join(PGconn *conn, const char *actor)
{
	double		start = now_s();
	const char *params[1] = {actor};

	for (;;)
	{
		PGresult   *res = exec_prepared(conn, "join", 1, params);

		join_polls++;
		if (PQntuples(res) > 0)
		{
			join_ms = (now_s() - start) * 1000;
			snprintf(join_token, sizeof(join_token), "%s", PQgetvalue(res, 0, 1));
			PQclear(res);
			return;
		}
		PQclear(res);
		if (now_s() - start > 30)
		{
			fprintf(stderr, "driver: the join was not ownable 30 s after the last member completed\n");
			exit(1);
		}
	}
}

static void *
drain_thread(void *arg)
{
	int			me = (int) (long) arg;
	PGconn	   *conn = connect_db();
	char		actor[32];
	char		limit[16];
	Held		held;
	char		part[16];
	int			bound = strcmp(opt.system, "bound") == 0;

	held_init(&held);
	snprintf(actor, sizeof(actor), "w%d", me);
	snprintf(part, sizeof(part), "%d", me);
	snprintf(limit, sizeof(limit), "%d", opt.per_claim);
	if (strcmp(opt.system, "taskq") == 0)
	{
		char		sql[256];

		if (opt.wait > 0)
			snprintf(sql, sizeof(sql),
					 "SELECT id, token FROM taskq.own_tasks($1, $2::int, '{%s}', '5 minutes', '%d ms')",
					 opt.action, opt.wait);
		else
			snprintf(sql, sizeof(sql),
					 "SELECT id, token FROM taskq.own_tasks($1, $2::int, '{%s}', '5 minutes')",
					 opt.action);
		prepare(conn, "claim", sql);
		prepare(conn, "done1", "SELECT taskq.return_task($1, $2::uuid, NULL, 'completed')");
		prepare(conn, "doneN", "SELECT taskq.return_tasks($1::text[], $2::uuid[], NULL, $3::taskq.status[])");
		/* prepared now, so that claim_join's timing holds no extra round trip */
		if (strcmp(opt.workload, "fanin") == 0)
			prepare(conn, "join",
					"SELECT id, token FROM taskq.own_tasks($1, 1, '{join}', '5 minutes')");
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
	else if (strcmp(opt.system, "bound") == 0)
	{
		/*
		 * The least that any leased queue which keeps its finished rows can
		 * do: the claim writes nothing (as if leases lived in memory) and
		 * never meets another claimer (client k reads only the rows of part
		 * k, as prefilled by bench/run.sh), and the completion is one UPDATE
		 * that marks the rows done, with a durable commit.
		 */
		prepare(conn, "claim",
				"SELECT id, body, $1::text FROM bench.bound"
				" WHERE part = $3::int AND status = 'pending'"
				" ORDER BY seq LIMIT $2::int");
		prepare(conn, "doneN",
				"UPDATE bench.bound SET status = 'done', finished_at = now()"
				" WHERE id = ANY ($1::bigint[])");
	}
	else
		prepare(conn, "claim",
				"DELETE FROM bench.floor WHERE id IN (SELECT id FROM bench.floor"
				" ORDER BY id FOR UPDATE SKIP LOCKED LIMIT $2::int) RETURNING id, body, $1::text");

	for (;;)
	{
		const char *params[3] = {actor, limit, part};
		PGresult   *res;
		int			want = opt.per_claim;
		int			n;

		if (opt.claims > 0)
		{
			/*
			 * Reserve the claim against the budget first, so that the
			 * workers together claim exactly opt.claims tasks.
			 */
			long		taken = atomic_fetch_add(&claims_taken, want);

			if (taken >= opt.claims)
				break;
			if (taken + want > opt.claims)
				want = (int) (opt.claims - taken);
			snprintf(limit, sizeof(limit), "%d", want);
		}
		if (atomic_load(&stop_soak))
			break;
		res = exec_prepared(conn, "claim", bound ? 3 : 2, params);
		n = PQntuples(res);
		if (opt.claims > 0 && n < want)
			atomic_fetch_sub(&claims_taken, want - n);
		if (n == 0)
		{
			PQclear(res);
			if (opt.wait > 0 && strcmp(opt.workload, "drain") == 0 &&
				atomic_load(&done_tasks) < opt.tasks)
				continue;		/* slots full or work not ready: wait again */
			if (strcmp(opt.workload, "soak") != 0)
				break;
			/* the producer is behind: poll again soon, as a worker would */
			usleep(1000);
			continue;
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
				held_set(&held, res, !bound);
				params[0] = held.ids;
				params[1] = held.tokens;
				params[2] = held.codes;
				PQclear(exec_prepared(conn, "doneN",
									  strcmp(opt.system, "taskq") == 0 ? 3 : bound ? 1 : 2,
									  params));
			}
		}
		PQclear(res);

		/*
		 * The counter moves after the return's reply, i.e. after its commit:
		 * the client that brings it to opt.tasks saw every member committed.
		 */
		if (atomic_fetch_add(&done_tasks, n) + n == opt.tasks)
		{
			last_done_at = now_s();
			if (strcmp(opt.workload, "fanin") == 0)
				claim_join(conn, actor);
		}
	}
	PQfinish(conn);
	held_free(&held);
	return NULL;
}

/*
 * drain, system cycle: taskq's worker loop with return_and_own.  Each call
 * returns the tasks the previous one claimed and claims the next ones: one
 * round trip and one transaction per cycle.  The first call only claims,
 * the last only returns.
 */
static void *
cycle_thread(void *arg)
{
	int			me = (int) (long) arg;
	PGconn	   *conn = connect_db();
	char		actor[32];
	char		limit[16];
	char		sql[320];
	Held		held;
	int			nheld = 0;

	snprintf(actor, sizeof(actor), "w%d", me);
	snprintf(limit, sizeof(limit), "%d", opt.per_claim);
	snprintf(sql, sizeof(sql),
			 "SELECT id, token FROM taskq.return_and_own($3::text[], $4::uuid[], NULL,"
			 " $5::taskq.status[], $1, $2::int, '{%s}', '5 minutes')", opt.action);
	prepare(conn, "cycle", sql);
	held_init(&held);			/* nothing to return yet */
	for (;;)
	{
		const char *params[5] = {actor, limit, held.ids, held.tokens, held.codes};
		PGresult   *res = exec_prepared(conn, "cycle", 5, params);
		int			n = PQntuples(res);

		/* the reply came after the commit: the returns are done */
		atomic_fetch_add(&done_tasks, nheld);
		held_set(&held, res, 1);
		nheld = n;
		PQclear(res);
		if (n == 0)
			break;
	}
	PQfinish(conn);
	held_free(&held);
	return NULL;
}

/* ---- latency ---- */

/* "interval 'N ms'" for a wait of ms milliseconds (a static buffer: one value). */
static const char *
psprintf_ms(int ms)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "interval '%d ms'", ms);
	return buf;
}

static void *
producer_thread(void *arg)
{
	PGconn	   *conn = connect_db();
	double		start = now_s();
	long		total = (long) opt.rate * opt.seconds;
	char		buf[512];

	(void) arg;

	int			json = strcmp(opt.producer, "insert_tasks") == 0;
	char		id[128];

	if (json)
		prepare(conn, "enq", "SELECT taskq.insert_tasks($1::jsonb)");
	else
		prepare(conn, "enq", "SELECT taskq.enqueue($1, $2::jsonb, $3)");
	if (opt.async_producer)
		PQclear(PQexec(conn, "SET synchronous_commit = off"));
	for (long i = 0; i < total; i++)
	{
		double		due = start + (double) i / opt.rate;
		double		wait = due - now_s();

		if (wait > 0)
		{
			struct timespec ts = {(time_t) wait, (long) ((wait - (time_t) wait) * 1e9)};

			nanosleep(&ts, NULL);
		}
		{
			double		sent = wall_s();

			if (json)
			{
				const char *params[1] = {buf};

				snprintf(buf, sizeof(buf),
						 "[{\"id\": \"%s-%ld\", \"action\": \"%s\", \"body\": {\"sent\": %.6f, \"n\": %ld, %s}}]",
						 opt.prefix, i, opt.action, sent, i, BODY);
				PQclear(exec_prepared(conn, "enq", 1, params));
			}
			else
			{
				const char *params[3] = {opt.action, buf, id};

				snprintf(id, sizeof(id), "%s-%ld", opt.prefix, i);
				snprintf(buf, sizeof(buf), "{\"sent\": %.6f, \"n\": %ld, %s}",
						 sent, i, BODY);
				PQclear(exec_prepared(conn, "enq", 3, params));
			}
			replied_at[i] = wall_s();
			insert_ms[i] = (replied_at[i] - sent) * 1000;
		}
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
	if (opt.wait == 0)
	{
		res = PQexec(conn, "LISTEN taskq");
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			die("listen", conn, res);
		PQclear(res);
	}
	/* with --wait, the claim sleeps in the server until work is ready */
	snprintf(sql, sizeof(sql),
			 "SELECT o.id, o.token,"
			 "       (extract(epoch FROM clock_timestamp()) OPERATOR(pg_catalog.-)"
			 "        (o.body OPERATOR(pg_catalog.->>) 'sent')::float8) * 1000,"
			 "       (o.body OPERATOR(pg_catalog.->>) 'n')::bigint,"
			 "       extract(epoch FROM clock_timestamp())::float8"
			 "  FROM taskq.own_tasks($1, 10, '{%s}', '1 minute', %s) AS o", opt.action,
			 opt.wait > 0 ? psprintf_ms(opt.wait) : "NULL");
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

			long		t = atol(PQgetvalue(res, i, 3));

			samples[k] = atof(PQgetvalue(res, i, 2));
			if (t >= 0 && t < (long) opt.rate * opt.seconds)
				claimed_at[t] = atof(PQgetvalue(res, i, 4));
			PQclear(exec_prepared(conn, "done1", 2, p2));
		}
		PQclear(res);
		if (n > 0)
			continue;
		if (atomic_load(&producer_done))
			break;
		if (opt.wait > 0)
			continue;			/* the claim waited in the server */

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

/* ---- workloads 4-7 ---- */

/* Start opt.clients drain threads, wait for them; returns the elapsed time. */
static double
run_drain_threads(void)
{
	pthread_t  *threads = calloc(opt.clients, sizeof(pthread_t));
	double		start = now_s();

	for (long i = 0; i < opt.clients; i++)
		pthread_create(&threads[i], NULL, drain_thread, (void *) i);
	for (int i = 0; i < opt.clients; i++)
		pthread_join(threads[i], NULL);
	free(threads);
	return now_s() - start;
}

/*
 * Enqueue n pending tasks with ids PREFIX-1 ... PREFIX-n, built on the
 * server in batches of 10,000 (enqueue speed is workload 1's business; here
 * it only fills the queue).
 */
static void
fill_queue(PGconn *conn, const char *prefix, long n)
{
	char		body[256];

	snprintf(body, sizeof(body), "{%s}", BODY);
	prepare(conn, "fill",
			"SELECT taskq.insert_tasks((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object("
			"    'id', $1 || '-' || g, 'action', $2::text, 'body', $3::jsonb))"
			"  FROM pg_catalog.generate_series($4::bigint, $5::bigint) AS g))");
	for (long first = 1; first <= n; first += 10000)
	{
		char		lo[24],
					hi[24];
		const char *params[5] = {prefix, opt.action, body, lo, hi};

		snprintf(lo, sizeof(lo), "%ld", first);
		snprintf(hi, sizeof(hi), "%ld", first + 9999 < n ? first + 9999 : n);
		PQclear(exec_prepared(conn, "fill", 5, params));
	}
	exec_sql(conn, "DEALLOCATE fill");
}

/*
 * WAL written so far, and how many full-page images: a deep queue may cost
 * more WAL per task (index pages touched for the first time since the
 * checkpoint), which is where a difference in rate would come from.
 */
static void
wal_so_far(PGconn *conn, double *bytes, double *fpi)
{
	PGresult   *res = PQexec(conn, "SELECT wal_bytes, wal_fpi FROM pg_catalog.pg_stat_wal");

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		die("pg_stat_wal", conn, res);
	*bytes = atof(PQgetvalue(res, 0, 0));
	*fpi = atof(PQgetvalue(res, 0, 1));
	PQclear(res);
}

static void
run_depth(void)
{
	PGconn	   *conn = connect_db();
	long		total = opt.claims;
	long		claimed = 0;
	double		timed = 0;
	double		wal = 0,
				fpi = 0;
	int			rounds = 0;

	while (claimed < total)
	{
		char		prefix[64];
		long		n = opt.backlog < total - claimed ? opt.backlog : total - claimed;
		double		t,
					wal0,
					wal1,
					fpi0,
					fpi1;

		snprintf(prefix, sizeof(prefix), "%s-%d", opt.prefix, rounds);
		fill_queue(conn, prefix, opt.backlog);
		settle(conn);
		opt.claims = n;
		atomic_store(&claims_taken, 0);
		atomic_store(&done_tasks, 0);
		wal_so_far(conn, &wal0, &fpi0);
		t = run_drain_threads();
		wal_so_far(conn, &wal1, &fpi1);
		wal += wal1 - wal0;
		fpi += fpi1 - fpi0;
		if (atomic_load(&done_tasks) != n)
		{
			fprintf(stderr, "driver: depth round %d claimed %ld of %ld\n",
					rounds, atomic_load(&done_tasks), n);
			exit(1);
		}
		timed += t;
		claimed += n;
		rounds++;
	}
	printf("system=taskq workload=depth clients=%d per_claim=%d backlog=%ld claims=%ld rounds=%d seconds=%.3f rate=%.0f wal_bytes_per_task=%.0f fpi_per_task=%.3f\n",
		   opt.clients, opt.per_claim, opt.backlog, claimed, rounds, timed, claimed / timed,
		   wal / claimed, fpi / claimed);
	PQfinish(conn);
}

static void
run_fanin(void)
{
	PGconn	   *conn = connect_db();
	char		body[256];
	char		n[24];
	char		join_id[80];
	double		start,
				elapsed;
	PGresult   *res;

	snprintf(body, sizeof(body), "{%s}", BODY);
	snprintf(n, sizeof(n), "%ld", opt.tasks);
	snprintf(join_id, sizeof(join_id), "%s-join", opt.prefix);
	{
		const char *params[4] = {opt.prefix, body, n, opt.trigger};	/* NULL: no key */

		prepare(conn, "chord",
				"SELECT taskq.chord((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object("
				"    'id', $1 || '-m' || g, 'action', 'member', 'body', $2::jsonb))"
				"  FROM pg_catalog.generate_series(1, $3::bigint) AS g),"
				"  pg_catalog.jsonb_build_object('id', $1 || '-join', 'action', 'join')"
				"  || pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object('trigger', $4::text)))");
		PQclear(exec_prepared(conn, "chord", 4, params));
	}
	settle(conn);

	opt.action = "member";
	start = now_s();
	if (opt.trigger && strcmp(opt.trigger, "one_success") == 0)
	{
		/* the first completion decides: one member, then the join at once */
		const char *actor[1] = {"w0"};
		char		id[80],
					token[64];

		prepare(conn, "one", "SELECT id, token FROM taskq.own_tasks($1, 1, '{member}', '5 minutes')");
		prepare(conn, "join", "SELECT id, token FROM taskq.own_tasks($1, 1, '{join}', '5 minutes')");
		prepare(conn, "done1", "SELECT taskq.return_task($1, $2::uuid, NULL, 'completed')");
		res = exec_prepared(conn, "one", 1, actor);
		snprintf(id, sizeof(id), "%s", PQgetvalue(res, 0, 0));
		snprintf(token, sizeof(token), "%s", PQgetvalue(res, 0, 1));
		PQclear(res);
		{
			const char *params[2] = {id, token};

			PQclear(exec_prepared(conn, "done1", 2, params));
		}
		last_done_at = now_s();
		claim_join(conn, "w0");
		atomic_store(&done_tasks, 1);
		elapsed = last_done_at - start;
	}
	else
		elapsed = run_drain_threads();
	if (join_ms < 0)
	{
		fprintf(stderr, "driver: fanin completed %ld of %ld members\n",
				atomic_load(&done_tasks), opt.tasks);
		exit(1);
	}
	/* the drain ends with the last member's return, not with the join */
	elapsed = last_done_at - start;

	/*
	 * The same interval from database timestamps: the join's claim time
	 * (its deadline less the lease) less the last member's finished_at.
	 * Both are transaction start times, so this also covers the last
	 * return's own work and commit, and the client's round trips.
	 */
	{
		const char *params[2] = {join_id, join_token};

		prepare(conn, "joindb",
				"SELECT pg_catalog.round((extract(epoch FROM j.action_deadline - interval '5 minutes'"
				"        - (SELECT pg_catalog.max(m.finished_at) FROM taskq.tasks AS m"
				"            WHERE m.action = 'member' AND m.status_code = 'completed')) * 1000)::numeric, 2)"
				"  FROM taskq.tasks AS j WHERE j.id = $1");
		res = exec_prepared(conn, "joindb", 1, params);
		printf("system=taskq workload=fanin clients=%d per_claim=%d tasks=%ld seconds=%.3f rate=%.0f join_ms=%.2f join_polls=%ld join_db_ms=%s\n",
			   opt.clients, opt.per_claim, opt.tasks, elapsed, opt.tasks / elapsed,
			   join_ms, join_polls, PQgetvalue(res, 0, 0));
		PQclear(res);
		prepare(conn, "joindone", "SELECT taskq.return_task($1, $2::uuid, NULL, 'completed')");
		PQclear(exec_prepared(conn, "joindone", 2, params));
	}
	PQfinish(conn);
}

static void
run_chain(void)
{
	PGconn	   *conn = connect_db();
	char		body[256];
	char		n[24];
	long		hops = 0,
				empty = 0;
	double		start,
				elapsed;

	snprintf(body, sizeof(body), "{%s}", BODY);
	snprintf(n, sizeof(n), "%ld", opt.tasks);
	{
		const char *params[3] = {opt.prefix, body, n};

		prepare(conn, "chain",
				"SELECT taskq.chain((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object("
				"    'id', $1 || '-h' || g, 'action', 'hop', 'body', $2::jsonb) ORDER BY g)"
				"  FROM pg_catalog.generate_series(1, $3::bigint) AS g))");
		PQclear(exec_prepared(conn, "chain", 3, params));
	}
	settle(conn);
	prepare(conn, "claim", "SELECT id, token FROM taskq.own_tasks('c0', 1, '{hop}', '5 minutes')");
	prepare(conn, "done1", "SELECT taskq.return_task($1, $2::uuid, NULL, 'completed')");

	start = now_s();
	while (hops < opt.tasks)
	{
		PGresult   *res = exec_prepared(conn, "claim", 0, NULL);

		if (PQntuples(res) == 0)
		{
			/* hop k+1 was not ownable right after hop k's return: count it */
			PQclear(res);
			if (++empty > 1000000)
			{
				fprintf(stderr, "driver: chain stuck after %ld hops\n", hops);
				exit(1);
			}
			continue;
		}
		{
			const char *params[2] = {PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1)};

			PQclear(exec_prepared(conn, "done1", 2, params));
		}
		PQclear(res);
		hops++;
	}
	elapsed = now_s() - start;
	printf("system=taskq workload=chain hops=%ld seconds=%.3f ms_per_hop=%.3f empty_claims=%ld\n",
		   hops, elapsed, elapsed * 1000 / hops, empty);
	PQfinish(conn);
}

/* soak: one producer, opt.batch tasks per transaction, at most opt.backlog unfinished */
static void *
soak_producer(void *arg)
{
	PGconn	   *conn = connect_db();
	char	   *buf = malloc((size_t) opt.batch * 256 + 64);
	long		inserted = 0;

	(void) arg;
	prepare(conn, "enq", "SELECT taskq.insert_tasks($1::jsonb)");
	while (!atomic_load(&stop_soak))
	{
		char	   *p = buf;
		const char *params[1] = {buf};

		if (inserted + opt.batch - atomic_load(&done_tasks) > opt.backlog)
		{
			usleep(1000);
			continue;
		}
		*p++ = '[';
		for (int i = 0; i < opt.batch; i++)
			p += sprintf(p, "%s{\"id\": \"%s-%ld\", \"action\": \"%s\", \"body\": {%s}}",
						 i > 0 ? "," : "", opt.prefix, inserted + i, opt.action, BODY);
		*p++ = ']';
		*p = '\0';
		PQclear(exec_prepared(conn, "enq", 1, params));
		inserted += opt.batch;
	}
	PQfinish(conn);
	free(buf);
	return NULL;
}

typedef struct SoakSize
{
	double		total,			/* bytes: heap + indexes + TOAST */
				heap,
				index;
	long		dead,			/* n_dead_tup */
				vacuums,		/* vacuums and autovacuums of taskq.tasks */
				deleted;		/* n_tup_del: what retention removed */
	/* the rows themselves (a scan; only at the two points compared) */
	long		open_rows,		/* pending or in progress */
				finished_rows;	/* completed or aborted, kept for retention */
	double		open_bytes,
				finished_bytes;
} SoakSize;

static void
soak_size(PGconn *conn, SoakSize *sz, int rows)
{
	PGresult   *res;

	res = PQexec(conn,
				 "SELECT pg_catalog.pg_total_relation_size(s.relid), pg_catalog.pg_relation_size(s.relid),"
				 "       pg_catalog.pg_indexes_size(s.relid), s.n_dead_tup,"
				 "       s.vacuum_count + s.autovacuum_count, s.n_tup_del"
				 "  FROM pg_catalog.pg_stat_user_tables AS s"
				 " WHERE s.relid = 'taskq.tasks'::pg_catalog.regclass");
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		die("size", conn, res);
	sz->total = atof(PQgetvalue(res, 0, 0));
	sz->heap = atof(PQgetvalue(res, 0, 1));
	sz->index = atof(PQgetvalue(res, 0, 2));
	sz->dead = atol(PQgetvalue(res, 0, 3));
	sz->vacuums = atol(PQgetvalue(res, 0, 4));
	sz->deleted = atol(PQgetvalue(res, 0, 5));
	PQclear(res);
	if (!rows)
		return;
	res = PQexec(conn,
				 "SELECT pg_catalog.count(*) FILTER (WHERE t.status_code < 'completed'),"
				 "       COALESCE(pg_catalog.sum(pg_catalog.pg_column_size(t.*)) FILTER (WHERE t.status_code < 'completed'), 0),"
				 "       pg_catalog.count(*) FILTER (WHERE t.status_code >= 'completed'),"
				 "       COALESCE(pg_catalog.sum(pg_catalog.pg_column_size(t.*)) FILTER (WHERE t.status_code >= 'completed'), 0)"
				 "  FROM taskq.tasks AS t");
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		die("rows", conn, res);
	sz->open_rows = atol(PQgetvalue(res, 0, 0));
	sz->open_bytes = atof(PQgetvalue(res, 0, 1));
	sz->finished_rows = atol(PQgetvalue(res, 0, 2));
	sz->finished_bytes = atof(PQgetvalue(res, 0, 3));
	PQclear(res);
}

#define MB(x) ((x) / 1048576.0)

static void
run_soak(void)
{
	PGconn	   *conn = connect_db();
	pthread_t  *threads = calloc(opt.clients + 1, sizeof(pthread_t));
	long	   *done = calloc(opt.seconds + 1, sizeof(long));	/* done[k]: completed after k s */
	int			w = opt.window;
	SoakSize	base = {0},		/* before the soak: the counters are cumulative */
				first = {0},
				end = {0},
				cur = {0};
	char		retention[64];
	char		trajectory[4096] = "";
	size_t		tlen = 0;
	double		start;
	PGresult   *res;

	if (w < 1 || w * 2 > opt.seconds)
	{
		fprintf(stderr, "driver: the soak needs --seconds of at least twice --window\n");
		exit(2);
	}
	res = PQexec(conn, "SHOW taskq.retention");
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		die("retention", conn, res);
	snprintf(retention, sizeof(retention), "%s", PQgetvalue(res, 0, 0));
	PQclear(res);

	soak_size(conn, &base, 0);
	start = now_s();
	for (long i = 0; i < opt.clients; i++)
		pthread_create(&threads[i], NULL, drain_thread, (void *) i);
	pthread_create(&threads[opt.clients], NULL, soak_producer, NULL);

	/* one sample of the completion counter per second, on the second */
	for (int k = 1; k <= opt.seconds; k++)
	{
		double		wait = start + k - now_s();

		if (wait > 0)
			usleep((useconds_t) (wait * 1e6));
		done[k] = atomic_load(&done_tasks);
		if (k % w != 0 && k != opt.seconds)
			continue;
		soak_size(conn, &cur, k == w || k == opt.seconds);
		cur.vacuums -= base.vacuums;
		cur.deleted -= base.deleted;
		if (k == w)
			first = cur;
		if (k == opt.seconds)
			end = cur;
		fprintf(stderr, "  soak t=%ds: %.0f tasks/s over the last %d s, size %.1f MB (heap %.1f, indexes %.1f), dead tuples %ld, vacuums %ld, deleted %ld\n",
				k, (double) (done[k] - done[k - w]) / w, w, MB(cur.total), MB(cur.heap),
				MB(cur.index), cur.dead, cur.vacuums, cur.deleted);
		/* the same, for the results: t/rate/MB/dead/vacuums per window */
		if (k % w == 0 && tlen < sizeof(trajectory) - 64)
			tlen += snprintf(trajectory + tlen, sizeof(trajectory) - tlen, "%s%d/%.0f/%.1f/%ld/%ld",
							 tlen > 0 ? "," : "", k, (double) (done[k] - done[k - w]) / w,
							 MB(cur.total), cur.dead, cur.vacuums);
	}
	atomic_store(&stop_soak, 1);
	for (int i = 0; i <= opt.clients; i++)
		pthread_join(threads[i], NULL);

	{
		double		first_rate = (double) done[w] / w;
		double		last_rate = (double) (done[opt.seconds] - done[opt.seconds - w]) / w;

		printf("system=taskq workload=soak seconds=%d window=%d clients=%d per_claim=%d batch=%d backlog=%ld retention=%s"
			   " tasks=%ld rate=%.0f first_rate=%.0f last_rate=%.0f rate_ratio=%.2f"
			   " size_first_mb=%.2f size_end_mb=%.2f size_ratio=%.2f"
			   " heap_first_mb=%.2f heap_end_mb=%.2f index_first_mb=%.2f index_end_mb=%.2f"
			   " open_rows_first=%ld open_mb_first=%.2f finished_rows_first=%ld finished_mb_first=%.2f"
			   " open_rows_end=%ld open_mb_end=%.2f finished_rows_end=%ld finished_mb_end=%.2f"
			   " dead_first=%ld dead_end=%ld vacuums=%ld deleted=%ld windows=%s\n",
			   opt.seconds, w, opt.clients, opt.per_claim, opt.batch, opt.backlog, retention,
			   done[opt.seconds], (double) done[opt.seconds] / opt.seconds,
			   first_rate, last_rate, last_rate / first_rate,
			   MB(first.total), MB(end.total), end.total / first.total,
			   MB(first.heap), MB(end.heap), MB(first.index), MB(end.index),
			   first.open_rows, MB(first.open_bytes), first.finished_rows, MB(first.finished_bytes),
			   end.open_rows, MB(end.open_bytes), end.finished_rows, MB(end.finished_bytes),
			   first.dead, end.dead, end.vacuums, end.deleted, trajectory);
	}
	free(threads);
	free(done);
	PQfinish(conn);
}

int
main(int argc, char **argv)
{
	pthread_t  *threads;
	double		start,
				elapsed;

	if (argc < 3)
	{
		fprintf(stderr, "usage: driver taskq|cycle|baseline|floor|bound enqueue|drain|latency|depth|fanin|chain|soak [options]\n");
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
		else if (strcmp(k, "--trigger") == 0)
			opt.trigger = v;
		else if (strcmp(k, "--claims") == 0)
			opt.claims = atol(v);
		else if (strcmp(k, "--backlog") == 0)
			opt.backlog = atol(v);
		else if (strcmp(k, "--window") == 0)
			opt.window = atoi(v);
		else if (strcmp(k, "--wait") == 0)
			opt.wait = atoi(v);
		else if (strcmp(k, "--async-producer") == 0)
			opt.async_producer = atoi(v);
		else if (strcmp(k, "--producer") == 0)
			opt.producer = v;
		else
		{
			fprintf(stderr, "driver: unknown option %s\n", k);
			return 2;
		}
	}

	if ((strcmp(opt.system, "bound") == 0 || strcmp(opt.system, "cycle") == 0) &&
		strcmp(opt.workload, "drain") != 0)
	{
		fprintf(stderr, "driver: system %s has the drain workload only\n", opt.system);
		return 2;
	}
	if (strcmp(opt.workload, "depth") == 0 || strcmp(opt.workload, "fanin") == 0 ||
		strcmp(opt.workload, "chain") == 0 || strcmp(opt.workload, "soak") == 0)
	{
		if (strcmp(opt.system, "taskq") != 0)
		{
			fprintf(stderr, "driver: workload %s is for taskq only\n", opt.workload);
			return 2;
		}
		if (opt.workload[0] == 'd')
			run_depth();
		else if (opt.workload[0] == 'f')
			run_fanin();
		else if (opt.workload[0] == 'c')
			run_chain();
		else
			run_soak();
		return 0;
	}

	threads = calloc(opt.clients + 1, sizeof(pthread_t));
	start = now_s();
	if (strcmp(opt.workload, "enqueue") == 0 || strcmp(opt.workload, "drain") == 0)
	{
		void	   *(*fn) (void *) = opt.workload[0] == 'e' ? enqueue_thread :
			strcmp(opt.system, "cycle") == 0 ? cycle_thread : drain_thread;

		for (long i = 0; i < opt.clients; i++)
			pthread_create(&threads[i], NULL, fn, (void *) i);
		for (int i = 0; i < opt.clients; i++)
			pthread_join(threads[i], NULL);
		elapsed = now_s() - start;
		/* waiting claims: the clients idle past the last completion */
		if (opt.wait > 0 && opt.workload[0] == 'd' && last_done_at > 0)
			elapsed = last_done_at - start;
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

		long		total = (long) opt.rate * opt.seconds;
		long		m = 0;
		double	   *after;

		samples = calloc((size_t) total + 16, sizeof(double));
		replied_at = calloc((size_t) total + 16, sizeof(double));
		insert_ms = calloc((size_t) total + 16, sizeof(double));
		claimed_at = calloc((size_t) total + 16, sizeof(double));
		after = calloc((size_t) total + 16, sizeof(double));
		for (long i = 0; i < opt.clients; i++)
			pthread_create(&threads[i], NULL, listener_thread, (void *) i);
		pthread_create(&threads[opt.clients], NULL, producer_thread, NULL);
		for (int i = 0; i <= opt.clients; i++)
			pthread_join(threads[i], NULL);
		n = atomic_load(&nsamples);
		qsort(samples, n, sizeof(double), compare_double);
		/* from the insert's reply (its commit done) to the claim */
		for (long t = 0; t < total; t++)
			if (claimed_at[t] > 0 && replied_at[t] > 0)
				after[m++] = (claimed_at[t] - replied_at[t]) * 1000;
		qsort(after, m, sizeof(double), compare_double);
		qsort(insert_ms, total, sizeof(double), compare_double);
		printf("system=%s workload=latency clients=%d rate=%d seconds=%d wait_ms=%d tasks=%ld p50_ms=%.3f p95_ms=%.3f p99_ms=%.3f"
			   " insert_p50_ms=%.3f insert_p99_ms=%.3f after_reply_p50_ms=%.3f after_reply_p99_ms=%.3f\n",
			   opt.system, opt.clients, opt.rate, opt.seconds, opt.wait, n,
			   percentile(samples, n, 50), percentile(samples, n, 95),
			   percentile(samples, n, 99),
			   percentile(insert_ms, total, 50), percentile(insert_ms, total, 99),
			   percentile(after, m, 50), percentile(after, m, 99));
	}
	else
	{
		fprintf(stderr, "driver: unknown workload %s\n", opt.workload);
		return 2;
	}
	return 0;
}
