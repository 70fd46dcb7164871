/*-------------------------------------------------------------------------
 *
 * cycle.c
 *	  The return-and-claim cycle: the returns of ended children go with the
 *	  next claim in one return_and_own call, and while children are short
 *	  the worker holds one task per slot claimed ahead, so that a child ends
 *	  and the next starts at once, before the return's round trip.
 *
 * Returns.  main.c queues the plain return (status, status code) of each
 * ended child here.  The queue is sent after the children that can start
 * from tasks claimed ahead have started: with return_and_own when the
 * worker is claiming too (one round trip and one commit for every return
 * and the claim), else with return_task one by one.  return_and_own is sent
 * without waiting for its answer (db.c keeps it in flight; cycle_poll takes
 * the answer in main.c's loop): children that end meanwhile start from
 * tasks claimed ahead and their returns wait in the queue for the next
 * call, so one call carries every return of the time the previous took.
 * return_and_own is all or none: when it fails with an error of the
 * statement (TQ001 for a task whose lease was lost and claimed by another
 * worker, ...) the returns go one by one with return_task, so that only
 * that task is refused, and the claim with own_tasks.  A return with a
 * result (--result) goes in return_and_own's results (NULL when no queued
 * return has one, so other tasks pay nothing) and as return_task's result;
 * a result return_task refuses (54000 over 1 MiB as jsonb, 22P02 for text
 * jsonb does not take, ...) fails the try instead: the task is returned
 * pending without it, its status naming the error, so that it is neither
 * lost nor left to its lease.  Returns that the connection's loss left
 * unmade or unacknowledged (the call failed, or return_and_own was in
 * flight) stay queued and are made again after the reconnection: a
 * repeated return with the same token is a no-op on the server, so the
 * retry is safe whether the first one committed or not (the claim of a
 * lost return_and_own is simply asked again; what it claimed comes back
 * by lease expiry).  Step returns
 * (transition, return_step) and releases are not queued: they are made as
 * the child ends (main.c), after the answer in flight has been read.
 *
 * Claiming ahead.  When the last child to end ran less than AHEAD_CHILD_MS
 * (children are short, so a claim's round trip is a large part of each
 * task), every claim asks for AHEAD_PER_SLOT tasks more per slot than the
 * free slots (two: one to start while the call that brings the next is in
 * flight);
 * the tasks that get no slot wait here, and the next child that ends makes
 * room for one at once.  A task claimed ahead waits at most
 * min(AHEAD_WAIT_MS, --lease / 4): then it is given back with release_task
 * (no try counted), so that a task is never held idle while another worker
 * could run it, and its lease needs no heartbeat before its child starts
 * (the child's heartbeats count from the claim).  At shutdown the tasks
 * claimed ahead are given back at once; when the connection is lost they
 * come back by lease expiry, like the running children's.
 *
 * The waiting claim.  Where the server has it (claims.c), a claim without
 * returns to send is the waiting claim on its own connection instead of
 * own_tasks on this one; its tasks are placed as any claim's, and the
 * claims sent with returns ask for the room it leaves.
 *
 * Single-threaded: called from main.c's loop only.
 *
 *-------------------------------------------------------------------------
 */
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AHEAD_CHILD_MS	250		/* children shorter than this: claim ahead */
#define AHEAD_WAIT_MS	1000	/* longest wait of a task claimed ahead */
#define AHEAD_PER_SLOT	2		/* tasks claimed ahead per slot at most */

/* A queued return and what its log line needs. */
typedef struct QueuedReturn
{
	char	   *id;
	char	   *token;
	char	   *action;
	char	   *status;
	char	   *result;			/* JSON text; NULL: none */
	const char *code;			/* completed, pending, aborted */
	const char *outcome;		/* for the log: completed, timeout, ... */
	int			try;
	char		exit_buf[32];
	double		seconds;
} QueuedReturn;

static QueuedReturn *queue;
static int	nqueue;
static int	queue_cap;

static QueuedReturn *inflight;	/* the returns sent in the call in flight */
static int	ninflight;
static int	inflight_cap;
static int	inflight_want;		/* and the tasks it claims at most */

static Claimed *ahead;			/* claimed ahead, oldest first */
static int	nahead;
static int	ahead_cap;
static bool short_children;
static bool stopping;			/* no more children: claimed tasks wait to be given back */

static int64_t
ahead_wait_ms(void)
{
	return opts.lease_ms / 4 < AHEAD_WAIT_MS ? opts.lease_ms / 4 : AHEAD_WAIT_MS;
}

void
cycle_init(void)
{
	queue_cap = inflight_cap = opts.concurrency;
	queue = calloc(queue_cap, sizeof(QueuedReturn));
	inflight = calloc(inflight_cap, sizeof(QueuedReturn));
	ahead_cap = AHEAD_PER_SLOT * opts.concurrency;
	ahead = calloc(ahead_cap, sizeof(Claimed));
	if (queue == NULL || inflight == NULL || ahead == NULL)
	{
		log_msg("out of memory");
		exit(1);
	}
}

/* A child ended after running ms: are children short? */
void
cycle_child_ran(int64_t ms, bool stopped)
{
	short_children = !stopped && ms < AHEAD_CHILD_MS;
}

/* A new item at the queue's end. */
static QueuedReturn *
queue_add(void)
{
	if (nqueue == queue_cap)
	{
		QueuedReturn *bigger = realloc(queue, 2 * queue_cap * sizeof(QueuedReturn));

		if (bigger == NULL)
		{
			log_msg("out of memory");
			exit(1);
		}
		queue = bigger;
		queue_cap *= 2;
	}
	return &queue[nqueue++];
}

void
cycle_queue_return(const Child *c, const char *status, const char *code,
				   const char *result, const char *outcome, const char *exit_buf,
				   double seconds)
{
	QueuedReturn *q = queue_add();

	q->id = xstrdup(c->id);
	q->token = xstrdup(c->token);
	q->action = xstrdup(c->action);
	q->status = xstrdup(status);
	q->result = result != NULL ? xstrdup(result) : NULL;
	q->code = code;
	q->outcome = outcome;
	q->try = c->try;
	snprintf(q->exit_buf, sizeof(q->exit_buf), "%s", exit_buf);
	q->seconds = seconds;
}

int
cycle_queued(void)
{
	return nqueue;
}

int
cycle_ahead(void)
{
	return nahead;
}

/* Give back a task that got no child (fork or temporary file failed). */
static void
give_back(const Claimed *t, const char *why)
{
	char		err[1024];
	bool		ok = db_release(t->id, t->token, err, sizeof(err));

	log_task(t->id, t->action, t->try, ok ? "released" : "not-returned", "-", 0.0,
			 ok ? why : err);
}

/*
 * A fan-in batch's task: its body gets the batch's instances
 * (fan_in_contexts).  If that fails the try fails: returned pending.
 */
static bool
add_fan_in(Claimed *t)
{
	char		err[1024];
	char		why[1100];
	char	   *body;

	if (db_fan_in_body(t->id, t->token, t->body, &body, err, sizeof(err)))
	{
		free(t->body);
		t->body = body;
		return true;
	}
	snprintf(why, sizeof(why), "fan_in_contexts failed: %s", err);
	log_msg("task %s: %s", t->id, why);
	if (db_return(t->id, t->token, why, "pending", NULL, err, sizeof(err)))
		log_task(t->id, t->action, t->try, "pending", "-", 0.0, why);
	else
		log_task(t->id, t->action, t->try, "not-returned", "-", 0.0, err);
	return false;
}

/* Start a child for claimed task t (in a free slot). */
static void
start_task(Claimed *t)
{
	const RunSpec *run = find_run(t->action);

	if (run != NULL && t->step.fan_in && !add_fan_in(t))
		return;
	if (run == NULL || child_start(run, t) == NULL)
		give_back(t, "could not start its child");
}

/* Children for the free slots from the tasks claimed ahead, oldest first. */
void
cycle_start_ahead(void)
{
	int			started = 0;

	while (!stopping && started < nahead && children_running() < opts.concurrency)
	{
		start_task(&ahead[started]);
		claimed_free_one(&ahead[started]);
		started++;
	}
	if (started > 0)
	{
		memmove(ahead, ahead + started, (nahead - started) * sizeof(Claimed));
		nahead -= started;
	}
}

/* Claimed tasks: children for the free slots, the rest wait here. */
static void
place(Claimed *tasks, int n)
{
	for (int i = 0; i < n; i++)
	{
		if (!stopping && children_running() < opts.concurrency)
		{
			start_task(&tasks[i]);
			claimed_free_one(&tasks[i]);
		}
		else if (nahead < ahead_cap)
			ahead[nahead++] = tasks[i];		/* takes the strings over */
		else
		{
			give_back(&tasks[i], "no room");
			claimed_free_one(&tasks[i]);
		}
	}
	free(tasks);
}

/*
 * How many tasks a claim now asks for: the free slots, and AHEAD_PER_SLOT
 * per slot ahead while children are short, less those held already or
 * asked for by the call in flight.
 */
static int
claim_room(void)
{
	int			room = opts.concurrency - children_running();

	if (short_children)
		room += AHEAD_PER_SLOT * opts.concurrency;
	room -= nahead;
	if (db_return_and_own_busy())
		room -= inflight_want;
	room -= claim_wait_want();	/* the waiting claim in flight (claims.c) */
	return room > 0 ? room : 0;
}

void
cycle_stop(void)
{
	stopping = true;
}

bool
cycle_busy(void)
{
	return db_return_and_own_busy();
}

static void
log_return(const QueuedReturn *q, bool ok, const char *err)
{
	log_task(q->id, q->action, q->try, ok ? q->outcome : "not-returned", q->exit_buf,
			 q->seconds, ok ? NULL : err);
}

static void
free_returns(QueuedReturn *q, int n)
{
	for (int i = 0; i < n; i++)
	{
		free(q[i].id);
		free(q[i].token);
		free(q[i].action);
		free(q[i].status);
		free(q[i].result);
	}
}

static void
clear_queue(void)
{
	free_returns(queue, nqueue);
	nqueue = 0;
}

/*
 * Return one task with return_task and log it.  A return with a result that
 * fails with an error of the statement is made again, pending and without
 * the result, with "result refused: <error>" as status: the try fails (if
 * the task is no longer ours, that return fails too).  False if the
 * connection is lost (before or during the call): the return is to be
 * made again after the reconnection (a repeated return with the same token
 * changes nothing), and nothing is logged yet.
 */
static bool
return_single(const QueuedReturn *q)
{
	char		err[1024];
	char		why[600];
	bool		ok;

	if (!db_connected())
		return false;
	ok = db_return(q->id, q->token, q->status, q->code, q->result, err, sizeof(err));
	if (!ok && !db_connected())
		return false;
	if (ok || q->result == NULL)
	{
		log_return(q, ok, err);
		return true;
	}
	snprintf(why, sizeof(why), "result refused: %s", err);
	log_msg("task %s: %s", q->id, why);
	ok = db_return(q->id, q->token, why, "pending", NULL, err, sizeof(err));
	log_task(q->id, q->action, q->try, ok ? "pending" : "not-returned", q->exit_buf,
			 q->seconds, ok ? why : err);
	return true;
}

/*
 * Return the tasks of rets one by one (return_task), logging each; those
 * the connection's loss left unmade go (back) to the queue, for after the
 * reconnection.  rets' items are freed or taken over.
 */
static void
return_one_by_one(QueuedReturn *rets, int n)
{
	int			kept = 0;

	for (int i = 0; i < n; i++)
	{
		if (return_single(&rets[i]))
			free_returns(&rets[i], 1);
		else
		{
			*queue_add() = rets[i];		/* takes the strings over */
			kept++;
		}
	}
	if (kept > 0)
		log_msg("connection lost: %d return(s) to make again after the reconnection", kept);
}

/*
 * At shutdown without a connection: the queued returns are not made (the
 * tasks come back when their leases expire).
 */
void
cycle_drop_returns(void)
{
	for (int i = 0; i < nqueue; i++)
		log_return(&queue[i], false, "connection lost at shutdown; the task comes back "
				   "when its lease expires");
	clear_queue();
}

/*
 * Send the queued returns, and claim if claim is true (and there is room).
 * With returns to make and a claim to ask for: one return_and_own, sent
 * without waiting (cycle_poll() takes the answer); while it is in flight,
 * returns wait in the queue for the next.  Else return_task one by one
 * and own_tasks, waiting.  *more: the claim got all it asked for (more may
 * be ready).  Returns whether it claimed or sent a claim.
 */
bool
cycle_flush(bool claim, bool *more)
{
	int			want;
	Claimed    *got = NULL;
	int			n = -1;
	char		err[1024];

	*more = false;
	if (db_return_and_own_busy() || !db_connected())
		return false;			/* the queue goes with the next call */
	want = claim ? claim_room() : 0;
	if (nqueue > 0 && want > 0 && db_has_return_and_own())
	{
		const char **ids = calloc(nqueue, sizeof(char *));
		const char **tokens = calloc(nqueue, sizeof(char *));
		const char **statuses = calloc(nqueue, sizeof(char *));
		const char **codes = calloc(nqueue, sizeof(char *));
		const char **results = NULL;
		bool		any_result = false;
		bool		sent;

		for (int i = 0; i < nqueue; i++)
			any_result = any_result || queue[i].result != NULL;
		if (any_result)
			results = calloc(nqueue, sizeof(char *));
		if (ids == NULL || tokens == NULL || statuses == NULL || codes == NULL ||
			(any_result && results == NULL))
		{
			log_msg("out of memory");
			exit(1);
		}
		for (int i = 0; i < nqueue; i++)
		{
			ids[i] = queue[i].id;
			tokens[i] = queue[i].token;
			statuses[i] = queue[i].status;
			codes[i] = queue[i].code;
			if (results != NULL)
				results[i] = queue[i].result;
		}
		sent = db_return_and_own_send(ids, tokens, statuses, codes, results, nqueue, want,
									  err, sizeof(err));
		free(ids);
		free(tokens);
		free(statuses);
		free(codes);
		free(results);
		if (sent)
		{
			/* the queue becomes the call's, the call's (empty) array the queue */
			QueuedReturn *swap = inflight;
			int			swap_cap = inflight_cap;

			inflight = queue;
			inflight_cap = queue_cap;
			ninflight = nqueue;
			inflight_want = want;
			queue = swap;
			queue_cap = swap_cap;
			nqueue = 0;
			return true;
		}
		if (!db_connected())
			return false;		/* the queue waits for the reconnection */
	}
	if (nqueue > 0)
	{
		/* the queue's items go to a copy: those not made come back to the queue */
		QueuedReturn *rets = malloc(nqueue * sizeof(QueuedReturn));
		int			nrets = nqueue;

		if (rets == NULL)
		{
			log_msg("out of memory");
			exit(1);
		}
		memcpy(rets, queue, nqueue * sizeof(QueuedReturn));
		nqueue = 0;
		return_one_by_one(rets, nrets);
		free(rets);
		if (!db_connected())
			return false;
	}
	if (want > 0 && db_connected() && claim_wait_on())
	{
		/* the waiting claim, on its own connection: cycle_wait_poll() places its tasks */
		(void) claim_wait_send(want, now_ms());
		return true;
	}
	if (want > 0 && db_connected())
		n = db_claim(want, &got);
	if (n > 0)
		place(got, n);
	else
		free(got);
	*more = want > 0 && n == want;
	return want > 0;
}

/*
 * The answer of the return_and_own in flight, if it came: the returns are
 * logged and the claimed tasks placed; *more as for cycle_flush.  If it
 * failed with an error of the statement (all or none: TQ001 for one task,
 * ...), the returns go one by one with return_task, and *more asks for a
 * claim (own_tasks).
 */
void
cycle_poll(bool *more)
{
	Claimed    *got;
	char		err[1024];
	int			n;

	*more = false;
	if (!db_return_and_own_busy())
		return;
	n = db_return_and_own_result(&got, err, sizeof(err));
	if (n == -2)
		return;
	if (n >= 0)
	{
		for (int i = 0; i < ninflight; i++)
			log_return(&inflight[i], true, NULL);
		if (n > 0)
			place(got, n);
		else
			free(got);
		*more = n == inflight_want;
	}
	else if (!db_connected())
	{
		/* unknown whether it committed: the returns are made again (no-ops if it did) */
		log_msg("connection lost with return_and_own in flight (%s): %d return(s) to make "
				"again after the reconnection", err, ninflight);
		for (int i = 0; i < ninflight; i++)
			*queue_add() = inflight[i];		/* takes the strings over */
		ninflight = 0;
	}
	else
	{
		log_msg("return_and_own failed (%s); returning the %d task(s) one by one",
				err, ninflight);
		return_one_by_one(inflight, ninflight);
		ninflight = 0;
		*more = true;
	}
	free_returns(inflight, ninflight);
	ninflight = 0;
	inflight_want = 0;
}

/*
 * The answer of the waiting claim in flight (claims.c), if it came: its
 * tasks are placed; *more: it got all it asked for.
 */
void
cycle_wait_poll(bool *more)
{
	Claimed    *got;
	int			want = claim_wait_want();
	int			n;

	*more = false;
	if (!claim_wait_busy())
		return;
	n = claim_wait_result(&got);
	if (n > 0)
		place(got, n);
	else
		free(got);
	*more = n > 0 && n == want;
}

/*
 * Shutdown: the waiting claim is cancelled; what it claimed all the same
 * waits with the tasks claimed ahead, which are given back next.
 */
void
cycle_wait_stop(void)
{
	Claimed    *got;
	int			n = claim_wait_cancel(&got);

	if (n > 0)
		place(got, n);
	else
		free(got);
}

/*
 * Give back the tasks claimed ahead that waited too long (all of them with
 * all = true, at shutdown); *wake: when the next one is due.
 */
void
cycle_expire_ahead(int64_t now, bool all, int64_t *wake)
{
	int			keep = 0;
	int64_t		limit = ahead_wait_ms();

	for (int i = 0; i < nahead; i++)
	{
		if (all || now >= ahead[i].claimed_ms + limit)
		{
			give_back(&ahead[i], all ? "claimed ahead; given back at shutdown" :
					  "claimed ahead and not started in time; given back");
			claimed_free_one(&ahead[i]);
		}
		else
		{
			int64_t		due = ahead[i].claimed_ms + limit;

			if (*wake == 0 || due < *wake)
				*wake = due;
			ahead[keep++] = ahead[i];
		}
	}
	nahead = keep;
}

/* The connection is gone: the tasks claimed ahead come back by lease expiry. */
void
cycle_drop_ahead(void)
{
	for (int i = 0; i < nahead; i++)
	{
		log_task(ahead[i].id, ahead[i].action, ahead[i].try, "lost", "-", 0.0,
				 "claimed ahead; connection lost; the task comes back when its lease expires");
		claimed_free_one(&ahead[i]);
	}
	nahead = 0;
}
