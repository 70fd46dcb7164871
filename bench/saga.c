/*
 * saga.c — benchmark driver for saga steps (libpq, one thread and
 * connection per client).
 *
 *   saga MODE --clients N --chains M --steps K [--prefix P]
 *     MODE  plain  M chains of K hops of plain tasks: a worker claims a hop
 *                  (own_tasks, 1 per claim) and returns it in one statement
 *                  that inserts its successor (insert_tasks, a body the size
 *                  of a saga step's) and completes it (return_task); the
 *                  last hop of a chain inserts nothing.  The M first hops
 *                  are inserted before the clock starts.
 *           saga   M runs of a linear saga of K steps (started before the
 *                  clock starts): a worker claims a step (own_tasks, 1 per
 *                  claim) and returns it with return_step(id, token,
 *                  'success'), which makes the next step's task (the last
 *                  step's return ends the run succeeded).
 *           undo   M runs of a linear saga of K steps whose last step fails:
 *                  first the do steps are drained as in saga, the last one
 *                  returned 'fatal' (timed: do_ms_per_step); then, after
 *                  the same VACUUM ANALYZE and CHECKPOINT as before the do
 *                  phase, the K undo steps of each run are drained, each
 *                  returned 'success' (timed: undo_ms_per_step).
 *   Both sides are two statements per step in autocommit, as a worker that
 *   writes nothing else runs them: the claim, then the return.
 *   The connection comes from the usual PG* environment variables.
 *
 * Prints one line of key=value pairs; bench/run.sh turns them into tables.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "common.h"

static const char *mode;
static int	clients = 1;
static long chains = 1000;
static int	steps = 10;
static const char *prefix = "s";

static atomic_long done_steps;	/* steps returned in this phase */
static long phase_total;		/* steps the phase drains */
static const char *phase_action;	/* the action the phase claims */
static atomic_long empty_claims;

/*
 * A successor's body, about the size of a saga step's body
 * ({"run", "saga", "version", "step", "direction", "inputs", "working"}).
 */
static void
successor_body(char *buf, size_t len, const char *chain, int hop)
{
	snprintf(buf, len,
			 "{\"run\": \"%s\", \"saga\": \"bench\", \"version\": 1, \"step\": \"s%d\","
			 " \"direction\": \"do\", \"inputs\": {}, \"working\": {}}", chain, hop);
}

static void *
worker(void *arg)
{
	int			me = (int) (long) arg;
	PGconn	   *conn = connect_db();
	char		actor[64];
	const char *params[4];

	snprintf(actor, sizeof(actor), "saga-bench-%d", me);
	prepare(conn, "claim",
			"SELECT id, token FROM taskq.own_tasks($1, 1, ARRAY[$2]::text[])");
	prepare(conn, "plain_next",
			"SELECT taskq.insert_tasks(pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object("
			"'id', $3::text, 'action', 'hop', 'body', $4::jsonb))),"
			" taskq.return_task($1, $2::uuid, NULL, 'completed')");
	prepare(conn, "plain_last", "SELECT taskq.return_task($1, $2::uuid, NULL, 'completed')");
	prepare(conn, "step", "SELECT taskq.return_step($1, $2::uuid, $3)");

	while (atomic_load(&done_steps) < phase_total)
	{
		PGresult   *res;
		char	   *id,
				   *token;

		params[0] = actor;
		params[1] = phase_action;
		res = PQexecPrepared(conn, "claim", 2, params, NULL, NULL, 0);
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			die("own_tasks", conn, res);
		if (PQntuples(res) == 0)
		{
			PQclear(res);
			atomic_fetch_add(&empty_claims, 1);
			usleep(200);
			continue;
		}
		id = strdup(PQgetvalue(res, 0, 0));
		token = strdup(PQgetvalue(res, 0, 1));
		PQclear(res);
		params[0] = id;
		params[1] = token;
		if (strcmp(mode, "plain") == 0)
		{
			char	   *slash = strrchr(id, '/');
			int			hop = atoi(slash + 1);

			if (hop < steps)
			{
				char		next[160];
				char		body[512];
				char		chain[128];

				snprintf(chain, sizeof(chain), "%.*s", (int) (slash - id), id);
				snprintf(next, sizeof(next), "%s/%d", chain, hop + 1);
				successor_body(body, sizeof(body), chain, hop + 1);
				params[2] = next;
				params[3] = body;
				res = PQexecPrepared(conn, "plain_next", 4, params, NULL, NULL, 0);
			}
			else
				res = PQexecPrepared(conn, "plain_last", 2, params, NULL, NULL, 0);
		}
		else
		{
			/* undo mode, do phase: the last step of each run fails */
			const char *slash = strrchr(id, '/');
			bool		last = strcmp(mode, "undo") == 0 && strcmp(phase_action, "sdo") == 0 &&
				atoi(slash + 1) == steps;

			params[2] = last ? "fatal" : "success";
			res = PQexecPrepared(conn, "step", 3, params, NULL, NULL, 0);
		}
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			die("return", conn, res);
		PQclear(res);
		free(id);
		free(token);
		atomic_fetch_add(&done_steps, 1);
	}
	PQfinish(conn);
	return NULL;
}

/* Drain phase_total steps of action with the clients; seconds taken. */
static double
drain(const char *action, long total)
{
	pthread_t  *th = calloc(clients, sizeof(pthread_t));
	double		t0;

	phase_action = action;
	phase_total = total;
	atomic_store(&done_steps, 0);
	t0 = now_s();
	for (int i = 0; i < clients; i++)
		pthread_create(&th[i], NULL, worker, (void *) (long) i);
	for (int i = 0; i < clients; i++)
		pthread_join(th[i], NULL);
	free(th);
	return now_s() - t0;
}

static void
define_and_start(PGconn *conn)
{
	char		sql[1024];
	char	   *def = malloc(64 * steps + 128);
	size_t		n = 0;

	n += sprintf(def + n, "SELECT taskq.define_saga('bench%d', '{\"steps\": [", steps);
	for (int k = 1; k <= steps; k++)
		n += sprintf(def + n, "%s{\"name\": \"s%d\", \"do\": \"sdo\", \"undo\": \"sundo\"}",
					 k > 1 ? ", " : "", k);
	sprintf(def + n, "]}')");
	exec_sql(conn, def);
	free(def);
	snprintf(sql, sizeof(sql),
			 "SELECT count(taskq.start_saga('bench%d', '%s' || g, '{}'))"
			 "  FROM pg_catalog.generate_series(1, %ld) g", steps, prefix, chains);
	exec_sql(conn, sql);
}

int
main(int argc, char **argv)
{
	PGconn	   *conn;
	char		sql[1024];
	long		total;
	double		secs;

	if (argc < 2)
	{
		fprintf(stderr, "usage: saga plain|saga|undo --clients N --chains M --steps K [--prefix P]\n");
		return 2;
	}
	mode = argv[1];
	for (int i = 2; i + 1 < argc; i += 2)
	{
		if (strcmp(argv[i], "--clients") == 0)
			clients = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--chains") == 0)
			chains = atol(argv[i + 1]);
		else if (strcmp(argv[i], "--steps") == 0)
			steps = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--prefix") == 0)
			prefix = argv[i + 1];
		else
		{
			fprintf(stderr, "saga: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	total = chains * steps;
	conn = connect_db();
	if (strcmp(mode, "plain") == 0)
	{
		snprintf(sql, sizeof(sql),
				 "SELECT taskq.insert_tasks((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object("
				 "'id', '%s' || g || '/1', 'action', 'hop', 'body', pg_catalog.jsonb_build_object("
				 "'run', '%s' || g, 'saga', 'bench', 'version', 1, 'step', 's1', 'direction', 'do',"
				 " 'inputs', '{}'::jsonb, 'working', '{}'::jsonb)))"
				 " FROM pg_catalog.generate_series(1, %ld) g))", prefix, prefix, chains);
		exec_sql(conn, sql);
		exec_sql(conn, "VACUUM ANALYZE taskq.tasks");
		exec_sql(conn, "CHECKPOINT");
		secs = drain("hop", total);
		printf("mode=plain clients=%d chains=%ld steps=%d seconds=%.3f rate=%.1f ms_per_step=%.4f"
			   " empty_claims=%ld\n", clients, chains, steps, secs, total / secs,
			   1000.0 * secs / total, atomic_load(&empty_claims));
	}
	else if (strcmp(mode, "saga") == 0 || strcmp(mode, "undo") == 0)
	{
		double		usecs;

		define_and_start(conn);
		exec_sql(conn, "VACUUM ANALYZE taskq.tasks");
		exec_sql(conn, "VACUUM ANALYZE taskq.runs");
		exec_sql(conn, "VACUUM ANALYZE taskq.saga_steps");
		exec_sql(conn, "CHECKPOINT");
		secs = drain("sdo", total);
		if (strcmp(mode, "saga") == 0)
		{
			printf("mode=saga clients=%d chains=%ld steps=%d seconds=%.3f rate=%.1f"
				   " ms_per_step=%.4f empty_claims=%ld\n", clients, chains, steps, secs,
				   total / secs, 1000.0 * secs / total, atomic_load(&empty_claims));
		}
		else
		{
			long		do_empty = atomic_load(&empty_claims);

			atomic_store(&empty_claims, 0);
			/* the undo phase starts from tables as clean as the do phase's */
			exec_sql(conn, "VACUUM ANALYZE taskq.tasks");
			exec_sql(conn, "VACUUM ANALYZE taskq.runs");
			exec_sql(conn, "VACUUM ANALYZE taskq.saga_steps");
			exec_sql(conn, "CHECKPOINT");
			usecs = drain("sundo", total);
			printf("mode=undo clients=%d chains=%ld steps=%d do_seconds=%.3f undo_seconds=%.3f"
				   " do_ms_per_step=%.4f undo_ms_per_step=%.4f undo_per_do=%.3f"
				   " do_empty_claims=%ld undo_empty_claims=%ld\n", clients, chains, steps, secs,
				   usecs, 1000.0 * secs / total, 1000.0 * usecs / total, usecs / secs, do_empty,
				   atomic_load(&empty_claims));
		}
	}
	else
	{
		fprintf(stderr, "saga: unknown mode %s\n", mode);
		return 2;
	}
	PQfinish(conn);
	return 0;
}
