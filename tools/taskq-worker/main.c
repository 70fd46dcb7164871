/*-------------------------------------------------------------------------
 *
 * main.c
 *	  taskq-worker's loop: signals, reconnection, claims, heartbeats,
 *	  timeouts, and the return of each task when its child ends.
 *
 * One iteration: note signals; escalate stops (SIGKILL --kill-after after
 * SIGTERM); reap ended children, start children from tasks claimed ahead,
 * and return the ended children's tasks; reconnect if the
 * connection is gone; send heartbeats that are due; stop children past
 * their --timeout; claim for the free slots; then poll() for the next
 * event: a signal (self-pipe), a notification, a child's stderr, or the
 * earliest deadline among all of the above.
 *
 * Claims.  Where the server's own_tasks has the argument wait (taskq 0.5),
 * the worker keeps one waiting claim in flight for its free slots on a
 * second connection (claims.c): it sleeps in the server until work is
 * ready, at most --poll, and is sent again when it answers; no LISTEN.
 * Against an older server the worker claims when a slot is free and (a) a
 * notification named one of its actions, (b) the last claim filled every
 * free slot (more may be ready), or (c) --poll passed since the last claim.
 * One own_tasks call claims for all free slots at once.  When children end, the next
 * ones start from tasks claimed ahead first, then the ended children's
 * returns go with the next claim in one return_and_own (cycle.c).
 *
 * Heartbeats.  A task's lease is extended by --lease when half of it has
 * passed since the claim or the last extension, in one extend_ownership
 * call for every task that is due.  owned = false: the task is no longer
 * ours; its child is stopped and nothing is returned for it.
 *
 * Workers registry.  At each connection and then every
 * REGISTRY_INTERVAL_MS, the worker writes its row of taskq.workers
 * (worker_heartbeat: id "<host>:<pid>", its actor, host, pid, version,
 * actions, concurrency and this interval); never while a return_and_own is
 * in flight (the next turn of the loop, once its answer is read, does it),
 * so that it never waits for a claim.  A clean exit deletes the row
 * (worker_stopped).  Against a taskq without the registry (before 0.6:
 * 42883) or a role that may not call it (42501), the worker logs it once
 * and runs without heartbeats on that connection.
 *
 * Lost connection.  Every child is stopped (its task comes back by lease
 * expiry; nothing can be returned without the connection), and the worker
 * reconnects after 1 s, 2 s, 4 s, ... up to --max-backoff (the backoff
 * starts again at 1 s only after a connection that lasted 10 s, so that a
 * database that accepts connections but fails every claim, a standby after
 * a failover say, is not hammered).  A statement that fails because the
 * database is unavailable (read-only, shutting down, too many connections:
 * shard_unavailable()) counts as a lost connection.  Returns the loss left
 * unmade or unacknowledged are made again after the reconnection
 * (cycle.c).  Several shards: a process per shard (shards.c), each with
 * this loop.
 *
 * Signals.  The first SIGTERM or SIGINT stops claiming; running children
 * get --grace to finish (their tasks are returned as usual), then they are
 * stopped and their tasks given back without counting a try.  The worker
 * exits 0 once no child is left.  A second signal stops the children at
 * once (SIGKILL) and gives their tasks back.
 *
 *-------------------------------------------------------------------------
 */
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REGISTRY_INTERVAL_MS 10000
#define CONNECTION_STEADY_MS 10000	/* a connection that lasted this long resets the backoff */

static int	sig_pipe[2] = {-1, -1};
static volatile sig_atomic_t stop_signals = 0;

int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
on_signal(int sig)
{
	int			save = errno;
	ssize_t		rc;

	if (sig == SIGTERM || sig == SIGINT)
		stop_signals++;
	rc = write(sig_pipe[1], "", 1);
	(void) rc;					/* a full pipe has woken the loop already */
	errno = save;
}

static void
setup_signals(void)
{
	struct sigaction sa;

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
	{
		perror("taskq-worker: pipe");
		exit(1);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void
exit_text(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "%d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "signal %d", WTERMSIG(status));
	else
		snprintf(buf, len, "status %d", status);
}

/* "prefix: last line of stderr", or prefix alone. */
static void
status_text(Child *c, const char *prefix, char *buf, size_t len)
{
	if (c->last_line[0] != '\0')
		snprintf(buf, len, "%s: %s", prefix, c->last_line);
	else
		snprintf(buf, len, "%s", prefix);
}

/*
 * A --result action's child exited 0: its standard output, if not blank,
 * must be one JSON value, the task's result (*result, malloc'd; NULL for
 * blank output).  False with the reason in why: the try fails.
 */
static bool
read_result(const Child *c, char **result, char *why, size_t whylen)
{
	char		err[300];

	*result = NULL;
	if (c->out_over)
	{
		snprintf(why, whylen, "standard output larger than %d bytes", TQW_MAX_STDOUT);
		return false;
	}
	if (step_output_blank(c))
		return true;
	if (!json_value_check(c->out_buf, c->out_len, err, sizeof(err)))
	{
		snprintf(why, whylen, "standard output is not JSON: %s", err);
		return false;
	}
	*result = malloc(c->out_len + 1);
	if (*result == NULL)
	{
		log_msg("out of memory");
		exit(1);
	}
	memcpy(*result, c->out_buf, c->out_len);
	(*result)[c->out_len] = '\0';
	return true;
}

/*
 * The child ended (reaped): return its task as its exit status or the
 * reason it was stopped says (with its result, for a --result action), and
 * log the task's line.
 */
static void
finish_child(Child *c)
{
	char		exit_buf[32];
	char		status[600];
	char		err[1024] = "";
	const char *code = NULL;
	const char *outcome;
	char	   *result = NULL;
	int			st = c->wait_status;
	double		secs = (now_ms() - c->started_ms) / 1000.0;
	bool		ok = true;

	exit_text(st, exit_buf, sizeof(exit_buf));
	switch (c->stop)
	{
		case STOP_LEASE_LOST:
			log_task(c->id, c->action, c->try, "lost", exit_buf, secs,
					 "lease lost (owned = false); nothing returned");
			return;
		case STOP_CONNECTION_LOST:
			log_task(c->id, c->action, c->try, "lost", exit_buf, secs,
					 "connection lost; the task comes back when its lease expires");
			return;
		case STOP_SHUTDOWN:
			ok = db_release(c->id, c->token, err, sizeof(err));
			log_task(c->id, c->action, c->try, ok ? "released" : "not-returned",
					 exit_buf, secs, ok ? "stopped at shutdown; given back" : err);
			return;
		case STOP_TIMEOUT:
			{
				const RunSpec *run = find_run(c->action);

				snprintf(status, sizeof(status), "timed out after %.1fs",
						 run != NULL ? run->timeout_ms / 1000.0 : secs);
				code = "pending";
				outcome = "timeout";
			}
			break;
		case STOP_NONE:
		default:
			if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && c->step.kind != STEP_PLAIN &&
				!step_output_blank(c))
			{
				StepOutcome so;

				step_finish(c, &so);
				log_task(c->id, c->action, c->try, so.outcome, exit_buf, secs, so.detail);
				return;
			}
			if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && c->want_result &&
				!read_result(c, &result, status, sizeof(status)))
				code = "pending";
			else if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			{
				snprintf(status, sizeof(status), "%s",
						 c->last_line[0] != '\0' ? c->last_line : "done");
				code = "completed";
			}
			else if (WIFEXITED(st) && WEXITSTATUS(st) == TQW_EXIT_GIVE_UP)
			{
				status_text(c, "exit 100", status, sizeof(status));
				code = "aborted";
			}
			else
			{
				char		prefix[48];

				snprintf(prefix, sizeof(prefix), "%s%s",
						 WIFEXITED(st) ? "exit " : "", exit_buf);
				status_text(c, prefix, status, sizeof(status));
				code = "pending";
			}
			outcome = code;
			break;
	}
	/* sent with the next claim (cycle.c) */
	cycle_queue_return(c, status, code, result, outcome, exit_buf, secs);
	free(result);
}

static void
heartbeat(int64_t now)
{
	Child	   *due[1000];
	bool		owned[1000];
	int			n = 0;

	for (int i = 0; i < opts.concurrency && n < 1000; i++)
	{
		Child	   *c = &children[i];

		if (c->used && c->pid > 0 &&
			c->stop != STOP_LEASE_LOST && c->stop != STOP_CONNECTION_LOST &&
			now >= c->extended_ms + opts.lease_ms / 2)
			due[n++] = c;
	}
	if (n == 0)
		return;
	if (!db_extend(due, n, owned))
	{
		/* try again in a second (or after the reconnection) */
		for (int i = 0; i < n; i++)
			due[i]->extended_ms = now + 1000 - opts.lease_ms / 2;
		return;
	}
	for (int i = 0; i < n; i++)
	{
		if (owned[i])
			due[i]->extended_ms = now;
		else
		{
			log_msg("task %s: lease lost (owned = false); stopping its child", due[i]->id);
			child_stop(due[i], STOP_LEASE_LOST);
		}
	}
}

static int64_t
earliest(int64_t a, int64_t b)
{
	return (a == 0 || (b != 0 && b < a)) ? b : a;
}

/* The workers registry (see the banner). */
static char registry_id[256];
static char registry_host[256];
static bool registry_off;		/* on this connection: missing or denied */
static bool registry_off_logged;
static bool registry_listed;	/* a heartbeat went in: worker_stopped at exit */
static int64_t registry_next_ms;

static void
registry_init(void)
{
	if (gethostname(registry_host, sizeof(registry_host) - 1) != 0 || registry_host[0] == '\0')
		strcpy(registry_host, "unknown");
	/* a worker id is at most 200 bytes: the host name is cut at 180 */
	snprintf(registry_id, sizeof(registry_id), "%.180s:%ld", registry_host, (long) getpid());
}

/* A new connection: a heartbeat at once. */
static void
registry_connected(void)
{
	registry_off = false;
	registry_next_ms = 0;
}

static void
registry_heartbeat(int64_t now, int64_t *wake)
{
	char		err[1024];
	int			rc;

	if (registry_off)
		return;
	if (now < registry_next_ms)
	{
		*wake = earliest(*wake, registry_next_ms);
		return;
	}
	if (cycle_busy())
		return;					/* after the answer in flight: the loop comes back */
	rc = db_worker_heartbeat(registry_id, registry_host, REGISTRY_INTERVAL_MS, err, sizeof(err));
	registry_next_ms = now + REGISTRY_INTERVAL_MS;
	if (rc == REGISTRY_OK)
		registry_listed = true;
	else if (rc == REGISTRY_MISSING || rc == REGISTRY_DENIED)
	{
		registry_off = true;
		if (!registry_off_logged)
			log_msg("no heartbeats into taskq.workers: %s", err);
		registry_off_logged = true;
		return;
	}
	else if (db_connected())
		log_msg("worker_heartbeat failed: %s; trying again in %ds", err,
				REGISTRY_INTERVAL_MS / 1000);
	*wake = earliest(*wake, registry_next_ms);
}

/* A clean exit: the registry's row goes. */
static void
registry_stopped(void)
{
	char		err[1024];

	if (!registry_listed || !db_connected())
		return;
	if (!db_worker_stopped(registry_id, err, sizeof(err)))
		log_msg("worker_stopped failed: %s", err);
}

int
main(int argc, char **argv)
{
	bool		stopping = false;
	bool		hard_stop = false;
	bool		grace_over = false;
	bool		was_connected = false;
	bool		want_claim = true;
	int64_t		stop_deadline = 0;
	int64_t		next_connect = 0;
	int64_t		backoff = 1000;
	int64_t		connected_ms = 0;
	int64_t		next_poll = 0;

	parse_options(argc, argv);
	shards_run();				/* several shards: returns in each shard's process */
	setup_signals();
#ifdef PR_SET_CHILD_SUBREAPER
	/* orphans of a child's group are reaped here (children.c) */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#endif
	children_init();
	cycle_init();
	registry_init();
	log_msg("taskq-worker %s: %d action(s), concurrency %d, lease %.1fs",
			TASKQ_WORKER_VERSION, opts.nruns, opts.concurrency, opts.lease_ms / 1000.0);

	for (;;)
	{
		int64_t		now = now_ms();
		int64_t		wake = 0;
		int			free_slots;
		struct pollfd pfd[3003];
		Child	   *pchild[3003];
		int			npfd = 0;
		int			timeout;

		/* signals */
		if (stop_signals >= 1 && !stopping)
		{
			stopping = true;
			stop_deadline = now + opts.grace_ms;
			log_msg("stopping: no more claims; %d running task(s) get %.1fs to finish",
					children_running(), opts.grace_ms / 1000.0);
			/* tasks claimed ahead go back at once, with the waiting claim's */
			cycle_stop();
			cycle_wait_stop();
			if (db_connected())
				cycle_expire_ahead(now, true, &wake);
		}
		if (stop_signals >= 2 && !hard_stop)
		{
			hard_stop = true;
			log_msg("second signal: stopping every child now");
			for (int i = 0; i < opts.concurrency; i++)
				if (children[i].used)
				{
					child_stop(&children[i], STOP_SHUTDOWN);
					child_kill_now(&children[i]);
				}
		}
		if (stopping && now >= stop_deadline)
			grace_over = true;
		if (grace_over)
			for (int i = 0; i < opts.concurrency; i++)
				if (children[i].used && children[i].pid > 0 && children[i].stop == STOP_NONE)
					child_stop(&children[i], STOP_SHUTDOWN);

		/* SIGKILL for children that outlived --kill-after */
		for (int i = 0; i < opts.concurrency; i++)
		{
			Child	   *c = &children[i];

			if (c->used && c->term_sent_ms != 0 && !c->killed &&
				(c->pid > 0 || child_group_alive(c)))
			{
				if (now >= c->term_sent_ms + opts.kill_after_ms)
					child_kill_now(c);
				else
					wake = earliest(wake, c->term_sent_ms + opts.kill_after_ms);
			}
		}

		/*
		 * a lost connection stops every child (those that ended already are
		 * returned after the reconnection, below and cycle.c)
		 */
		if (was_connected && !db_connected())
		{
			was_connected = false;
			children_reap();
			for (int i = 0; i < opts.concurrency; i++)
				if (children[i].used && children[i].pid > 0)
					child_stop(&children[i], STOP_CONNECTION_LOST);
			cycle_drop_ahead();
			claim_wait_close();
			/* a connection that did not last (a standby, ...): the backoff goes on */
			if (now - connected_ms >= CONNECTION_STEADY_MS)
				backoff = 1000;
			next_connect = now + backoff;
			backoff = backoff * 2 > opts.max_backoff_ms ? opts.max_backoff_ms : backoff * 2;
		}

		/* ended children: return their tasks */
		children_reap();
		for (int i = 0; i < opts.concurrency; i++)
		{
			Child	   *c = &children[i];

			if (c->used && c->pid == 0)
			{
				/* a stopped child ends with its whole group */
				if (c->term_sent_ms != 0 && child_group_alive(c))
				{
					wake = earliest(wake, now + 100);
					continue;
				}
				child_read_stderr(c, true);
				child_read_stdout(c);
				handoff_read_ctl(c, true);	/* forks it asked for come first */
				cycle_child_ran(now - c->started_ms, c->stop != STOP_NONE);
				finish_child(c);
				child_free(c);
				want_claim = want_claim || !stopping;
			}
		}
		/* the next children start before the returns' round trip */
		if (!stopping)
			cycle_start_ahead();
		{
			bool		more;

			/* the answer of a return_and_own in flight: tasks for free slots */
			cycle_poll(&more);
			want_claim = want_claim || (more && !stopping);
			/* and of the waiting claim */
			cycle_wait_poll(&more);
			if (cycle_queued() > 0 && cycle_flush(!stopping, &more))
			{
				want_claim = more;
				next_poll = now_ms() + opts.poll_ms;
			}
		}
		if (was_connected && !db_connected())
			continue;			/* a return lost the connection */
		if (db_connected() && cycle_ahead() > 0)
			cycle_expire_ahead(now_ms(), stopping, &wake);

		if (stopping && !db_connected() && cycle_queued() > 0)
			cycle_drop_returns();
		if (stopping && children_running() == 0 && cycle_ahead() == 0 &&
			!cycle_busy() && cycle_queued() == 0)
		{
			registry_stopped();
			log_msg("stopped");
			db_disconnect();
			return 0;
		}

		/* (re)connect */
		if (!db_connected() && !stopping)
		{
			if (now >= next_connect)
			{
				if (db_connect())
				{
					was_connected = true;
					connected_ms = now;
					want_claim = true;
					registry_connected();
				}
				else
				{
					next_connect = now + backoff;
					log_msg("next connection attempt in %.1fs", backoff / 1000.0);
					backoff = backoff * 2 > opts.max_backoff_ms ? opts.max_backoff_ms : backoff * 2;
				}
				continue;
			}
			wake = earliest(wake, next_connect);
		}

		if (db_connected())
		{
			heartbeat(now);
			if (!db_connected())
				continue;
			registry_heartbeat(now, &wake);
			if (!db_connected())
				continue;
		}

		/* --timeout */
		for (int i = 0; i < opts.concurrency; i++)
		{
			Child	   *c = &children[i];

			if (c->used && c->pid > 0 && c->stop == STOP_NONE && c->timeout_at_ms != 0)
			{
				if (now >= c->timeout_at_ms)
				{
					log_msg("task %s: timed out; stopping its child", c->id);
					child_stop(c, STOP_TIMEOUT);
				}
				else
					wake = earliest(wake, c->timeout_at_ms);
			}
		}

		/* claim */
		free_slots = opts.concurrency - children_running();
		if (db_connected() && !stopping && free_slots > 0 && claim_wait_on())
		{
			/* one waiting claim in flight for the room there is */
			if (!cycle_busy() && !claim_wait_busy() && now >= claim_wait_retry_at() &&
				cycle_flush(true, &want_claim))
				continue;
			if (claim_wait_retry_at() > now)
				wake = earliest(wake, claim_wait_retry_at());
		}
		else if (db_connected() && !stopping && free_slots > 0)
		{
			if (!cycle_busy() && (want_claim || now >= next_poll))
			{
				cycle_flush(true, &want_claim);
				next_poll = now_ms() + opts.poll_ms;
				continue;
			}
			wake = earliest(wake, next_poll);
		}

		/* notifications that came in with the results of the calls above */
		if (db_connected() && !stopping)
		{
			bool		wakeup = false;

			db_notifications(&wakeup);
			if (wakeup && free_slots > 0)
			{
				want_claim = true;
				continue;
			}
			want_claim = want_claim || wakeup;
		}

		/* wait for the next event */
		for (int i = 0; i < opts.concurrency; i++)
		{
			Child	   *c = &children[i];

			if (!c->used)
				continue;
			if (c->pid > 0 && c->stop != STOP_LEASE_LOST && c->stop != STOP_CONNECTION_LOST &&
				db_connected())
				wake = earliest(wake, c->extended_ms + opts.lease_ms / 2);
			if (c->err_fd >= 0)
			{
				pfd[npfd].fd = c->err_fd;
				pfd[npfd].events = POLLIN;
				pchild[npfd++] = c;
			}
			if (c->out_fd >= 0)
			{
				pfd[npfd].fd = c->out_fd;
				pfd[npfd].events = POLLIN;
				pchild[npfd++] = c;
			}
			if (c->ctl_fd >= 0)
			{
				pfd[npfd].fd = c->ctl_fd;
				pfd[npfd].events = POLLIN;
				pchild[npfd++] = c;
			}
		}
		if (stopping && !grace_over)
			wake = earliest(wake, stop_deadline);
		pfd[npfd].fd = sig_pipe[0];
		pfd[npfd].events = POLLIN;
		pchild[npfd++] = NULL;
		if (db_connected())
		{
			pfd[npfd].fd = db_socket();
			pfd[npfd].events = POLLIN;
			pchild[npfd++] = NULL;
		}
		if (claim_wait_socket() >= 0)
		{
			pfd[npfd].fd = claim_wait_socket();
			pfd[npfd].events = POLLIN;
			pchild[npfd++] = NULL;
		}
		if (wake == 0)
			timeout = 60000;
		else
		{
			int64_t		left = wake - now_ms();

			timeout = left < 0 ? 0 : left > 60000 ? 60000 : (int) left + 1;
		}
		if (poll(pfd, npfd, timeout) < 0 && errno != EINTR)
		{
			log_msg("poll: %s", strerror(errno));
			return 1;
		}
		for (int i = 0; i < npfd; i++)
		{
			if (pfd[i].revents == 0)
				continue;
			if (pchild[i] != NULL && pfd[i].fd == pchild[i]->out_fd)
				child_read_stdout(pchild[i]);
			else if (pchild[i] != NULL && pfd[i].fd == pchild[i]->ctl_fd)
				handoff_read_ctl(pchild[i], false);
			else if (pchild[i] != NULL)
				child_read_stderr(pchild[i], false);
			else if (pfd[i].fd == sig_pipe[0])
			{
				char		buf[64];

				while (read(sig_pipe[0], buf, sizeof(buf)) > 0)
					;
			}
			else if (pfd[i].fd == claim_wait_socket())
				;				/* read at the top of the loop (cycle_wait_poll) */
			else
			{
				bool		wakeup = false;

				if (db_consume(&wakeup) && wakeup)
					want_claim = true;
			}
		}
	}
}
