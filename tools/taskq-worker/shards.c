/*-------------------------------------------------------------------------
 *
 * shards.c
 *	  Several shards: a worker process per shard, under a supervisor.
 *
 * With one --dbname (or none) nothing here happens: the worker is one
 * process on one database, as it always was.  With several --dbname
 * options, or with --shards-from-proxy and the proxy database as --dbname
 * (its taskq_proxy.partitions() read once at start, retried with backoff
 * until it answers), the process started becomes a supervisor: it forks one
 * worker process per shard, which runs main.c's loop on that shard alone
 * (its own connections, its own waiting claim, its own --concurrency
 * children, its own reconnection with backoff), so that a shard that is
 * down, failing over or refusing connections holds up no other shard.
 *
 * Why processes, not one loop over several connections: the loop's state
 * (connection, call in flight, waiting claim, returns queued, tasks claimed
 * ahead, children) is one shard's, and a process per shard keeps it so;
 * a crash or a stall in one shard's process stays there.
 *
 * The supervisor does no database work after the start.  Its signals are
 * blocked and taken with sigtimedwait(): SIGTERM and SIGINT are passed on
 * to every shard's process (the first stops claiming, the second stops the
 * children at once, as for one process), and it exits once they all have:
 * 0, or 1 if one of them failed.  A shard's process that ends by itself
 * before (out of memory, a crash) is started again after 1 s, 2 s, ... up
 * to --max-backoff.  Each shard's process leads a process group of its own
 * (a Ctrl-C at a terminal reaches the supervisor only, which passes it on
 * once) and gets SIGTERM if the supervisor dies.
 *
 * Partitions' connection strings come without passwords (the proxy removes
 * them): a shard's password comes from the password file or PGPASSWORD;
 * its user, if the connection string names none, is the one the proxy
 * connection used.
 *
 *-------------------------------------------------------------------------
 */
#include "worker.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define SHARD_STEADY_MS	60000	/* a process that ran this long restarts after 1 s */

typedef struct Shard
{
	char	   *conninfo;
	char		label[16];		/* --dbname's index, or the partition */
	pid_t		pid;			/* 0: not running */
	int64_t		started_ms;
	int64_t		restart_at_ms;	/* 0: none due */
	int64_t		backoff_ms;
	bool		failed;			/* it ended with a failure */
} Shard;

static Shard *shards;
static int	nshards;

/*
 * SQLSTATEs of a shard that is (for now) unusable on this connection: the
 * connection failed (class 08), the server shuts down (57P01-57P03), too
 * many connections (53300), or it is read-only (25006: a standby, or a
 * demoted primary after a failover).  The connection is dropped and made
 * again with backoff (db.c, claims.c).
 */
bool
shard_unavailable(const char *sqlstate)
{
	if (sqlstate == NULL)
		return false;
	return strncmp(sqlstate, "08", 2) == 0 ||
		strcmp(sqlstate, "57P01") == 0 || strcmp(sqlstate, "57P02") == 0 ||
		strcmp(sqlstate, "57P03") == 0 || strcmp(sqlstate, "53300") == 0 ||
		strcmp(sqlstate, "25006") == 0;
}

static void
add_shard(const char *conninfo, const char *label)
{
	Shard	   *s = &shards[nshards++];

	memset(s, 0, sizeof(*s));
	s->conninfo = xstrdup(conninfo);
	snprintf(s->label, sizeof(s->label), "%s", label);
	s->backoff_ms = 1000;
}

/*
 * The proxy's partitions, once: false (logged) if the proxy cannot be
 * reached or answers an error; the caller tries again.
 */
static bool
read_partitions(void)
{
	const char *const keys[] = {"connect_timeout", "fallback_application_name", "dbname", NULL};
	const char *const values[] = {"10", "taskq-worker", opts.conninfo, NULL};
	PGconn	   *conn = PQconnectdbParams(keys, values, 1);
	PGresult   *res;
	bool		ok = false;

	if (PQstatus(conn) != CONNECTION_OK)
	{
		log_msg("cannot connect to the proxy: %s", PQerrorMessage(conn));
		PQfinish(conn);
		return false;
	}
	res = PQexec(conn, "SELECT partition, connstr FROM taskq_proxy.partitions() "
				 "ORDER BY partition");
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		log_msg("taskq_proxy.partitions() failed: %s", PQerrorMessage(conn));
	else if (PQntuples(res) == 0)
		log_msg("taskq_proxy.partitions() lists no partition");
	else
	{
		int			n = PQntuples(res);

		shards = calloc(n, sizeof(Shard));
		if (shards == NULL)
		{
			log_msg("out of memory");
			exit(1);
		}
		for (int i = 0; i < n; i++)
			add_shard(PQgetvalue(res, i, 1), PQgetvalue(res, i, 0));
		opts.default_user = xstrdup(PQuser(conn));
		ok = true;
	}
	PQclear(res);
	PQfinish(conn);
	return ok;
}

static sigset_t
supervisor_signals(void)
{
	sigset_t	set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	return set;
}

/*
 * Wait up to ms for a signal (blocked); its number, 0 for none.
 */
static int
take_signal(int64_t ms)
{
	sigset_t	set = supervisor_signals();
	struct timespec ts;
	int			sig;

	if (ms < 0)
		ms = 0;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000;
	sig = sigtimedwait(&set, NULL, &ts);
	return sig < 0 ? 0 : sig;
}

/*
 * Start s's process.  Returns in the child (which then is that shard's
 * worker), false in the supervisor.
 */
static bool
start_shard(Shard *s)
{
	pid_t		supervisor = getpid();
	pid_t		pid = fork();

	if (pid < 0)
	{
		log_msg("shard %s: fork: %s; trying again in %.1fs", s->label, strerror(errno),
				s->backoff_ms / 1000.0);
		s->restart_at_ms = now_ms() + s->backoff_ms;
		return false;
	}
	if (pid == 0)
	{
		sigset_t	set = supervisor_signals();

		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != supervisor)
			exit(1);			/* the supervisor died before the line above */
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		opts.conninfo = s->conninfo;
		opts.shard = s->label;
		return true;
	}
	setpgid(pid, pid);
	s->pid = pid;
	s->started_ms = now_ms();
	s->restart_at_ms = 0;
	return false;
}

/* Reap the shards' processes that ended; restarts are scheduled unless stopping. */
static void
reap_shards(bool stopping)
{
	pid_t		pid;
	int			status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
	{
		for (int i = 0; i < nshards; i++)
		{
			Shard	   *s = &shards[i];
			int64_t		now = now_ms();

			if (s->pid != pid)
				continue;
			s->pid = 0;
			s->failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
			if (stopping)
				break;
			if (now - s->started_ms >= SHARD_STEADY_MS)
				s->backoff_ms = 1000;
			log_msg("shard %s: its worker process ended (%s %d); starting it again in %.1fs",
					s->label, WIFEXITED(status) ? "exit" : "signal",
					WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
					s->backoff_ms / 1000.0);
			s->restart_at_ms = now + s->backoff_ms;
			s->backoff_ms = s->backoff_ms * 2 > opts.max_backoff_ms ?
				opts.max_backoff_ms : s->backoff_ms * 2;
			break;
		}
	}
}

/*
 * Several shards: become their supervisor (never returns there), and
 * return in each shard's worker process with opts.conninfo set.  One
 * database: return at once.
 */
void
shards_run(void)
{
	sigset_t	set = supervisor_signals();
	int			signals = 0;
	int64_t		backoff = 1000;

	if (opts.ndbnames <= 1 && !opts.shards_from_proxy)
		return;
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (opts.shards_from_proxy)
	{
		while (!read_partitions())
		{
			int			sig;

			log_msg("reading the partitions again in %.1fs", backoff / 1000.0);
			sig = take_signal(backoff);
			if (sig == SIGTERM || sig == SIGINT)
			{
				log_msg("stopped");
				exit(0);
			}
			backoff = backoff * 2 > opts.max_backoff_ms ? opts.max_backoff_ms : backoff * 2;
		}
	}
	else
	{
		shards = calloc(opts.ndbnames, sizeof(Shard));
		if (shards == NULL)
		{
			log_msg("out of memory");
			exit(1);
		}
		for (int i = 0; i < opts.ndbnames; i++)
		{
			char		label[16];

			snprintf(label, sizeof(label), "%d", i);
			add_shard(opts.dbnames[i], label);
		}
	}
	log_msg("taskq-worker %s: %d shard(s), a worker process for each, concurrency %d each",
			TASKQ_WORKER_VERSION, nshards, opts.concurrency);
	for (int i = 0; i < nshards; i++)
		if (start_shard(&shards[i]))
			return;

	for (;;)
	{
		int64_t		now = now_ms();
		int64_t		wake = now + 60000;
		int			running = 0;
		int			sig;

		reap_shards(signals > 0);
		for (int i = 0; i < nshards; i++)
		{
			Shard	   *s = &shards[i];

			if (s->pid == 0 && s->restart_at_ms != 0 && signals == 0)
			{
				if (now >= s->restart_at_ms)
				{
					if (start_shard(s))
						return;
				}
				else if (s->restart_at_ms < wake)
					wake = s->restart_at_ms;
			}
			running += s->pid != 0;
		}
		if (signals > 0 && running == 0)
		{
			bool		failed = false;

			for (int i = 0; i < nshards; i++)
				failed = failed || shards[i].failed;
			log_msg("stopped");
			exit(failed ? 1 : 0);
		}
		sig = take_signal(wake - now);
		if (sig == SIGTERM || sig == SIGINT)
		{
			signals++;
			log_msg("%s: passed on to %d shard worker process(es)",
					signals == 1 ? "stopping" : "second signal", running);
			for (int i = 0; i < nshards; i++)
				if (shards[i].pid != 0)
					kill(shards[i].pid, sig);
		}
	}
}
