/*-------------------------------------------------------------------------
 *
 * handoff.c
 *	  What a child gets besides its body and the task's variables: its
 *	  predecessors' results, and a way to fork the next chunk of a
 *	  continuation at once.
 *
 * Predecessors' results (--predecessors ACTION).  Before a child of ACTION
 * starts, the worker reads predecessor_results(id, token) and hands the
 * rows to the child as a JSON array in an anonymous file, open as the
 * child's fd 4, named by TASKQ_PREDECESSORS_FILE (/dev/fd/4):
 * [{"id", "status_code", "status", "result"}, ...] in id order (result
 * null for a predecessor without one or not finished).  One statement per
 * task, so only for the actions that ask; if it fails (an extension before
 * 0.5), the child runs without the variable and the failure is logged.
 *
 * Early continuation forks.  A child of a continuation state (its body has
 * "cursor") gets a pipe as fd 3, named by TASKQ_CONTINUE_FD=3: each line it
 * writes there is a cursor, and the worker calls continue_machine(id,
 * token, cursor) at once, committed on its own, so that another worker can
 * take the next chunk while this child works on its own.  A child that
 * fails or is killed afterwards loses nothing: its step is tried again and
 * the same visit forks only once (continue_machine returns the fork already
 * made), as does the "continue" key of its output.  A line longer than
 * the buffer (4 KiB) is dropped and logged.
 *
 * Single-threaded: called from main.c's loop and children.c.
 *
 *-------------------------------------------------------------------------
 */
#include "worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * An anonymous file holding t's predecessors' results as JSON, for a task
 * of a --predecessors action; -1 for other tasks, or if it failed (logged).
 */
int
handoff_predecessors(const Claimed *t)
{
	const RunSpec *run = find_run(t->action);
	const char *params[2] = {t->id, t->token};
	char	   *json = NULL;
	char		err[1024];
	int			fd;

	if (run == NULL || !run->predecessors)
		return -1;
	if (!db_exec_params("SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object("
						"'id', p.id, 'status_code', p.status_code, 'status', p.status, "
						"'result', p.result) ORDER BY p.id), '[]'::jsonb)::text "
						"FROM taskq.predecessor_results($1, $2::uuid) AS p",
						2, params, &json, NULL, err, sizeof(err)) || json == NULL)
	{
		log_msg("task %s: predecessor_results failed: %s; TASKQ_PREDECESSORS_FILE not set",
				t->id, json == NULL && err[0] == '\0' ? "no answer" : err);
		free(json);
		return -1;
	}
	fd = anon_file(json);
	if (fd < 0)
		log_msg("task %s: cannot write its predecessors' results to a temporary file: %s",
				t->id, strerror(errno));
	free(json);
	return fd;
}

/* A cursor the child wrote on fd 3: fork at once. */
static void
fork_now(Child *c, const char *cursor)
{
	const char *params[3] = {c->id, c->token, cursor};
	char	   *run = NULL;
	char		err[1024];

	if (c->stop != STOP_NONE || !db_connected())
	{
		log_msg("task %s: cursor \"%s\" not forked: the task is being stopped or the "
				"connection is lost", c->id, cursor);
		return;
	}
	if (db_exec_params("SELECT taskq.continue_machine($1, $2::uuid, $3)",
					   3, params, &run, NULL, err, sizeof(err)))
		log_msg("task %s: cursor \"%s\" forked run %s", c->id, cursor, run ? run : "(none)");
	else
		log_msg("task %s: continue_machine for cursor \"%s\" failed: %s", c->id, cursor, err);
	free(run);
}

static void
take_ctl_line(Child *c, size_t len)
{
	c->ctl_buf[len] = '\0';
	if (len > 0 && c->ctl_buf[len - 1] == '\r')
		c->ctl_buf[--len] = '\0';
	if (c->ctl_over)
		log_msg("task %s: a line on fd 3 longer than %zu bytes was dropped", c->id,
				sizeof(c->ctl_buf) - 1);
	else if (len > 0)
		fork_now(c, c->ctl_buf);
	c->ctl_over = false;
}

/*
 * Read the cursors a continuation step's child wrote on fd 3, without
 * blocking; each complete line forks.  at_exit: the child is gone, a last
 * line without its newline counts too.
 */
void
handoff_read_ctl(Child *c, bool at_exit)
{
	while (c->ctl_fd >= 0)
	{
		ssize_t		n;
		char	   *nl;

		if (c->ctl_len == sizeof(c->ctl_buf) - 1)
		{
			c->ctl_over = true; /* no newline in sight: drop what came so far */
			c->ctl_len = 0;
		}
		n = read(c->ctl_fd, c->ctl_buf + c->ctl_len, sizeof(c->ctl_buf) - 1 - c->ctl_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			{
				close(c->ctl_fd);
				c->ctl_fd = -1;
				at_exit = true;
			}
			break;
		}
		c->ctl_len += n;
		while ((nl = memchr(c->ctl_buf, '\n', c->ctl_len)) != NULL)
		{
			size_t		len = nl - c->ctl_buf;
			size_t		rest = c->ctl_len - len - 1;
			char		next[sizeof(c->ctl_buf)];

			memcpy(next, nl + 1, rest);
			take_ctl_line(c, len);
			memcpy(c->ctl_buf, next, rest);
			c->ctl_len = rest;
		}
	}
	if (at_exit && c->ctl_len > 0)
	{
		take_ctl_line(c, c->ctl_len);
		c->ctl_len = 0;
	}
}
