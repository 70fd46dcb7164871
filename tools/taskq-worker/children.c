/*-------------------------------------------------------------------------
 *
 * children.c
 *	  The children: one process per claimed task, started with
 *	  /bin/sh -c COMMAND, the task's body on standard input and the task in
 *	  the environment (TASKQ_ID, TASKQ_ACTION, TASKQ_TRY, TASKQ_TOKEN,
 *	  TASKQ_DEADLINE, TASKQ_CONCURRENCY_KEY when it has one; for a workflow
 *	  step also TASKQ_RUN and TASKQ_STATE, TASKQ_CURSOR or TASKQ_STEP,
 *	  TASKQ_DIRECTION; TASKQ_CONTINUE_FD and TASKQ_PREDECESSORS_FILE with
 *	  the fds 3 and 4 of handoff.c: each removed otherwise).
 *
 * Children are started with posix_spawn (a vfork-like clone in glibc: the
 * worker's memory is not copied for each child), their environment built
 * here rather than by setenv in a forked copy.
 * Each child leads a process group of its own, so that stopping it reaches
 * whatever its shell started, and a Ctrl-C at a terminal reaches only the
 * worker, which then decides (main.c).  The body goes through an anonymous
 * file (memfd, else an unlinked temporary file), not a pipe: a child that
 * never reads its input cannot block the worker.  The child's stderr comes back through a pipe: each line
 * is logged, and the last non-empty one becomes the task's status text.
 * A plain task's stdout is the worker's; a workflow step's, and that of a
 * --result action's child, comes back through a pipe too (read in the same
 * loop, kept up to TQW_MAX_STDOUT, the rest drained) and is what steps.c,
 * or main.c for the task's result, reads when the child ends.
 * Stopping is SIGTERM to the group, then SIGKILL --kill-after later
 * (main.c's loop escalates).  The shell may not exec the command, so the
 * process the worker started can end on SIGTERM while the command in its
 * group ignores it: a stopped child counts as ended only when its whole
 * group is gone.  The worker is a child subreaper (Linux), so that such
 * orphans come back to it to be reaped and kill(-pgid, 0) tells the truth.
 *
 *-------------------------------------------------------------------------
 */
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

Child	   *children;

void
children_init(void)
{
	children = calloc(opts.concurrency, sizeof(Child));
	if (children == NULL)
	{
		log_msg("out of memory");
		exit(1);
	}
	for (int i = 0; i < opts.concurrency; i++)
	{
		children[i].err_fd = -1;
		children[i].out_fd = -1;
		children[i].ctl_fd = -1;
	}
}

int
children_running(void)
{
	int			n = 0;

	for (int i = 0; i < opts.concurrency; i++)
		if (children[i].used)
			n++;
	return n;
}

/*
 * An anonymous file holding body, positioned at its start; -1 on error.
 * memfd_create (Linux) costs no file system work; elsewhere, or if it
 * fails, an unlinked temporary file in $TMPDIR (else /tmp).
 */
int
anon_file(const char *body)
{
	const char *dir = getenv("TMPDIR");
	char		path[4096];
	int			fd = -1;
	size_t		left = strlen(body);

#ifdef MFD_CLOEXEC
	fd = memfd_create("taskq-worker-body", MFD_CLOEXEC);
#endif
	if (fd < 0)
	{
		snprintf(path, sizeof(path), "%s/taskq-worker-body.XXXXXX",
				 dir != NULL && *dir != '\0' ? dir : "/tmp");
		fd = mkostemp(path, O_CLOEXEC);
		if (fd < 0)
			return -1;
		unlink(path);
	}
	while (left > 0)
	{
		ssize_t		n = write(fd, body, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			close(fd);
			return -1;
		}
		body += n;
		left -= n;
	}
	if (lseek(fd, 0, SEEK_SET) != 0)
	{
		close(fd);
		return -1;
	}
	return fd;
}

static const char *const taskq_vars[] = {
	"TASKQ_ID", "TASKQ_ACTION", "TASKQ_TRY", "TASKQ_TOKEN", "TASKQ_DEADLINE",
	"TASKQ_RUN", "TASKQ_STATE", "TASKQ_CURSOR", "TASKQ_STEP", "TASKQ_DIRECTION",
	"TASKQ_CONCURRENCY_KEY", "TASKQ_CONTINUE_FD", "TASKQ_PREDECESSORS_FILE", NULL
};

/*
 * The child's environment: the worker's without the TASKQ_ variables
 * above, then the task's.  One malloc'd array; the entries of the worker's
 * environment are shared, the task's are in the array's own block (freed
 * with it).
 */
static char **
child_environment(const Claimed *t, const char *trybuf, bool ctl, bool preds)
{
	const StepInfo *step = &t->step;
	const char *names[16];
	const char *values[16];
	int			nvars = 0;
	int			nenv = 0;
	size_t		strings = 0;
	char	  **envp;
	char	   *p;
	int			k = 0;

#define ADD_VAR(n_, v_) do { names[nvars] = (n_); values[nvars] = (v_); nvars++; } while (0)
	ADD_VAR("TASKQ_ID", t->id);
	ADD_VAR("TASKQ_ACTION", t->action);
	ADD_VAR("TASKQ_TRY", trybuf);
	ADD_VAR("TASKQ_TOKEN", t->token);
	ADD_VAR("TASKQ_DEADLINE", t->deadline);
	if (t->concurrency_key != NULL)
		ADD_VAR("TASKQ_CONCURRENCY_KEY", t->concurrency_key);
	if (ctl)
		ADD_VAR("TASKQ_CONTINUE_FD", "3");
	if (preds)
		ADD_VAR("TASKQ_PREDECESSORS_FILE", "/dev/fd/4");
	if (step->kind != STEP_PLAIN && step->run != NULL)
		ADD_VAR("TASKQ_RUN", step->run);
	if (step->kind == STEP_MACHINE && step->name != NULL)
		ADD_VAR("TASKQ_STATE", step->name);
	if (step->kind == STEP_MACHINE && step->cursor != NULL)
		ADD_VAR("TASKQ_CURSOR", step->cursor);
	if (step->kind == STEP_SAGA && step->name != NULL)
		ADD_VAR("TASKQ_STEP", step->name);
	if (step->kind == STEP_SAGA && step->direction != NULL)
		ADD_VAR("TASKQ_DIRECTION", step->direction);
#undef ADD_VAR

	for (char **e = environ; *e != NULL; e++)
		nenv++;
	for (int i = 0; i < nvars; i++)
		strings += strlen(names[i]) + strlen(values[i]) + 2;
	envp = malloc((nenv + nvars + 1) * sizeof(char *) + strings);
	if (envp == NULL)
	{
		log_msg("out of memory");
		exit(1);
	}
	for (char **e = environ; *e != NULL; e++)
	{
		bool		ours = false;

		if (strncmp(*e, "TASKQ_", 6) == 0)
			for (int i = 0; taskq_vars[i] != NULL; i++)
			{
				size_t		n = strlen(taskq_vars[i]);

				if (strncmp(*e, taskq_vars[i], n) == 0 && (*e)[n] == '=')
				{
					ours = true;
					break;
				}
			}
		if (!ours)
			envp[k++] = *e;
	}
	p = (char *) (envp + nenv + nvars + 1);
	for (int i = 0; i < nvars; i++)
	{
		envp[k++] = p;
		p += sprintf(p, "%s=%s", names[i], values[i]) + 1;
	}
	envp[k] = NULL;
	return envp;
}

Child *
child_start(const RunSpec *run, const Claimed *t)
{
	Child	   *c = NULL;
	int			in_fd;
	int			err[2];
	int			out[2] = {-1, -1};
	int			ctl[2] = {-1, -1};
	int			pred_fd;
	char		trybuf[16];
	pid_t		pid;
	const StepInfo *step = &t->step;
	char	  **envp;
	char	   *argv[4] = {"sh", "-c", run->command, NULL};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	int			rc;

	for (int i = 0; i < opts.concurrency; i++)
		if (!children[i].used)
		{
			c = &children[i];
			break;
		}
	if (c == NULL)
		return NULL;

	in_fd = anon_file(t->body);
	if (in_fd < 0)
	{
		log_msg("task %s: cannot write its body to a temporary file: %s", t->id, strerror(errno));
		return NULL;
	}
	if (pipe2(err, O_CLOEXEC) != 0 ||
		((step->kind != STEP_PLAIN || run->result) && pipe2(out, O_CLOEXEC) != 0) ||
		(step->kind == STEP_MACHINE && step->continuation && pipe2(ctl, O_CLOEXEC) != 0))
	{
		log_msg("task %s: pipe: %s", t->id, strerror(errno));
		close(in_fd);
		close(err[0]);
		close(err[1]);
		if (out[0] >= 0)
		{
			close(out[0]);
			close(out[1]);
		}
		return NULL;
	}
	snprintf(trybuf, sizeof(trybuf), "%d", t->try);
	pred_fd = handoff_predecessors(t);	/* -1: none */

	envp = child_environment(t, trybuf, ctl[1] >= 0, pred_fd >= 0);
	rc = posix_spawn_file_actions_init(&fa);
	if (rc == 0)
	{
		posix_spawn_file_actions_adddup2(&fa, in_fd, STDIN_FILENO);
		posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
		if (out[1] >= 0)
			posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
		if (ctl[1] >= 0)
			posix_spawn_file_actions_adddup2(&fa, ctl[1], 3);
		if (pred_fd >= 0)
			posix_spawn_file_actions_adddup2(&fa, pred_fd, 4);
		rc = posix_spawnattr_init(&attr);
		if (rc == 0)
		{
			sigset_t	none;
			sigset_t	dfl;

			sigemptyset(&none);
			sigemptyset(&dfl);
			sigaddset(&dfl, SIGTERM);
			sigaddset(&dfl, SIGINT);
			sigaddset(&dfl, SIGCHLD);
			sigaddset(&dfl, SIGPIPE);
			sigaddset(&dfl, SIGHUP);
			posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
									 POSIX_SPAWN_SETSIGMASK);
			posix_spawnattr_setpgroup(&attr, 0);	/* a group of its own */
			posix_spawnattr_setsigdefault(&attr, &dfl);
			posix_spawnattr_setsigmask(&attr, &none);
			rc = posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, envp);
			posix_spawnattr_destroy(&attr);
		}
		posix_spawn_file_actions_destroy(&fa);
	}
	free(envp);
	if (pred_fd >= 0)
		close(pred_fd);
	if (rc != 0)
	{
		log_msg("task %s: cannot start /bin/sh: %s", t->id, strerror(rc));
		close(in_fd);
		close(err[0]);
		close(err[1]);
		if (out[0] >= 0)
		{
			close(out[0]);
			close(out[1]);
		}
		if (ctl[0] >= 0)
		{
			close(ctl[0]);
			close(ctl[1]);
		}
		return NULL;
	}
	setpgid(pid, pid);			/* done by the child already; harmless */
	close(in_fd);
	if (ctl[1] >= 0)
	{
		close(ctl[1]);
		fcntl(ctl[0], F_SETFL, fcntl(ctl[0], F_GETFL) | O_NONBLOCK);
	}
	close(err[1]);
	fcntl(err[0], F_SETFL, fcntl(err[0], F_GETFL) | O_NONBLOCK);
	if (out[1] >= 0)
	{
		close(out[1]);
		fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
	}

	memset(c, 0, sizeof(*c));
	c->used = true;
	c->pid = pid;
	c->pgid = pid;
	c->id = strdup(t->id);
	c->token = strdup(t->token);
	c->action = strdup(t->action);
	c->try = t->try;
	c->started_ms = now_ms();
	/* the lease counts from the claim (a task claimed ahead waited) */
	c->extended_ms = t->claimed_ms > 0 ? t->claimed_ms : c->started_ms;
	c->timeout_at_ms = run->timeout_ms > 0 ? c->started_ms + run->timeout_ms : 0;
	c->err_fd = err[0];
	c->out_fd = out[0];
	c->ctl_fd = ctl[0];
	c->want_result = run->result && step->kind == STEP_PLAIN;
	step_info_copy(&c->step, step);
	return c;
}

static void
signal_child(Child *c, int sig)
{
	if (c->pgid <= 0)
		return;
	if (kill(-c->pgid, sig) != 0 && c->pid > 0)
		kill(c->pid, sig);
}

/* Is any process of the child's group still there? */
bool
child_group_alive(const Child *c)
{
	return c->pgid > 0 && (kill(-c->pgid, 0) == 0 || errno == EPERM);
}

/* Ask the child to stop (SIGTERM); the first reason given stays. */
void
child_stop(Child *c, StopReason why)
{
	if (c->stop == STOP_NONE)
		c->stop = why;
	if (c->term_sent_ms != 0 || (c->pid <= 0 && !child_group_alive(c)))
		return;
	signal_child(c, SIGTERM);
	c->term_sent_ms = now_ms();
	if (opts.kill_after_ms == 0)
		child_kill_now(c);
}

void
child_kill_now(Child *c)
{
	if (c->killed)
		return;
	signal_child(c, SIGKILL);
	c->killed = true;
	if (c->term_sent_ms == 0)
		c->term_sent_ms = now_ms();
}

static void
take_line(Child *c, const char *line, size_t len)
{
	char		tmp[sizeof(c->err_buf) + 1];

	memcpy(tmp, line, len);
	tmp[len] = '\0';
	if (len > 0 && tmp[len - 1] == '\r')
		tmp[--len] = '\0';
	log_child_stderr(c->id, tmp);
	if (len > 0)
	{
		if (len >= sizeof(c->last_line))
			len = sizeof(c->last_line) - 1;
		memcpy(c->last_line, tmp, len);
		c->last_line[len] = '\0';
	}
}

/*
 * Read what the child wrote to stderr.  at_exit: the child is gone, so a
 * partial last line counts as a line.
 */
void
child_read_stderr(Child *c, bool at_exit)
{
	while (c->err_fd >= 0)
	{
		ssize_t		n;
		char	   *nl;

		if (c->err_len == sizeof(c->err_buf))
		{
			take_line(c, c->err_buf, c->err_len);
			c->err_len = 0;
		}
		n = read(c->err_fd, c->err_buf + c->err_len, sizeof(c->err_buf) - c->err_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			{
				close(c->err_fd);
				c->err_fd = -1;
				at_exit = true;
			}
			break;
		}
		c->err_len += n;
		while ((nl = memchr(c->err_buf, '\n', c->err_len)) != NULL)
		{
			size_t		len = nl - c->err_buf;

			take_line(c, c->err_buf, len);
			memmove(c->err_buf, nl + 1, c->err_len - len - 1);
			c->err_len -= len + 1;
		}
	}
	if (at_exit && c->err_len > 0)
	{
		take_line(c, c->err_buf, c->err_len);
		c->err_len = 0;
	}
}

/*
 * Read what a step's (or a --result action's) child printed on stdout,
 * without blocking: up to TQW_MAX_STDOUT bytes are kept; the rest is read
 * and dropped (the child must not block on a full pipe), and out_over
 * makes its try fail.
 */
void
child_read_stdout(Child *c)
{
	while (c->out_fd >= 0)
	{
		char		drop[8192];
		char	   *dst;
		size_t		room;
		ssize_t		n;

		if (!c->out_over && c->out_len == c->out_cap && c->out_cap < TQW_MAX_STDOUT + 1)
		{
			size_t		cap = c->out_cap ? c->out_cap * 4 : 4096;
			char	   *bigger;

			if (cap > TQW_MAX_STDOUT + 1)
				cap = TQW_MAX_STDOUT + 1;
			bigger = realloc(c->out_buf, cap);
			if (bigger == NULL)
			{
				log_msg("out of memory");
				exit(1);
			}
			c->out_buf = bigger;
			c->out_cap = cap;
		}
		if (c->out_over || c->out_len == c->out_cap)
		{
			dst = drop;
			room = sizeof(drop);
		}
		else
		{
			dst = c->out_buf + c->out_len;
			room = c->out_cap - c->out_len;
		}
		n = read(c->out_fd, dst, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			{
				close(c->out_fd);
				c->out_fd = -1;
			}
			break;
		}
		if (dst == drop)
			c->out_over = true;
		else
		{
			c->out_len += n;
			if (c->out_len > TQW_MAX_STDOUT)
				c->out_over = true;
		}
	}
}

/* Collect the children that ended; true if any did. */
bool
children_reap(void)
{
	bool		any = false;
	int			status;
	pid_t		pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
	{
		for (int i = 0; i < opts.concurrency; i++)
		{
			Child	   *c = &children[i];

			if (c->used && c->pid == pid)
			{
				c->pid = 0;
				c->wait_status = status;
				any = true;
				break;
			}
		}
	}
	return any;
}

void
child_free(Child *c)
{
	if (c->err_fd >= 0)
		close(c->err_fd);
	if (c->out_fd >= 0)
		close(c->out_fd);
	if (c->ctl_fd >= 0)
		close(c->ctl_fd);
	free(c->id);
	free(c->token);
	free(c->action);
	free(c->out_buf);
	step_info_free(&c->step);
	memset(c, 0, sizeof(*c));
	c->err_fd = -1;
	c->out_fd = -1;
	c->ctl_fd = -1;
}
