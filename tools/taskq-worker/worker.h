/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  taskq-worker: runs a program per claimed task (one child process per
 *	  task), keeps the lease with heartbeats and returns the task from the
 *	  child's exit status.
 *
 * The program is single-threaded: one poll() loop (main.c) watches the
 * database connection (notifications), the waiting claim's connection, a
 * self-pipe the signal handlers write to, and the children's pipes.  Every database call is a
 * short blocking libpq call on the one connection.
 *
 *	  options.c   command line, durations, --help
 *	  log.c       one line per task on stderr (text or JSON), messages
 *	  children.c  starting, watching and stopping the children
 *	  cycle.c     returns sent with the next claim; tasks claimed ahead
 *	  steps.c     workflow steps: what the child printed -> transition or
 *	              return_step
 *	  json.c      reading that JSON (the child's standard output; a --result
 *	              action's child prints its task's result)
 *	  claims.c    a claim's columns and rows; the waiting claim (own_tasks
 *	              with wait) on a connection of its own
 *	  handoff.c   what a child gets besides its body: its predecessors'
 *	              results (--predecessors), the early continuation fork
 *	  db.c        connection, LISTEN, claims, heartbeats, returns
 *	  shards.c    several shards: one worker process per shard, started
 *	              and stopped by a supervisor
 *	  main.c      signals and the loop that ties them together
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_WORKER_H
#define TASKQ_WORKER_H

/* pipe2, mkostemp: every file includes this header first */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef TASKQ_WORKER_VERSION
#define TASKQ_WORKER_VERSION "unknown"
#endif

/* Exit statuses of a child with a meaning of their own. */
#define TQW_EXIT_TEMPFAIL	75		/* EX_TEMPFAIL: try again later */
#define TQW_EXIT_GIVE_UP	100		/* give up: no more tries */

/*
 * The most a workflow step's child (or a --result action's) may print on
 * its standard output: twice the largest task body (1 MiB), so that a
 * context, working map or result as large as a body can have fits with room
 * to spare (the server still refuses a result over 1 MiB as jsonb).
 */
#define TQW_MAX_STDOUT		(2 * 1024 * 1024)

/* ------------------------------------------------------------ options */

typedef struct RunSpec
{
	char	   *action;
	char	   *command;		/* run with /bin/sh -c */
	int64_t		timeout_ms;		/* 0: none */
	bool		result;			/* --result: stdout is the task's result */
	bool		predecessors;	/* --predecessors: TASKQ_PREDECESSORS_FILE */
} RunSpec;

typedef struct Options
{
	const char *conninfo;		/* this process's database (a shard's) */
	const char **dbnames;		/* every --dbname: one per shard */
	int			ndbnames;
	bool		shards_from_proxy;	/* --dbname is the proxy: read its partitions */
	const char *default_user;	/* a shard's user when its conninfo has none */
	const char *shard;			/* this process's shard, for the log; NULL: one database */
	const char *actor;
	int			concurrency;
	int64_t		lease_ms;
	int64_t		poll_ms;
	int64_t		grace_ms;
	int64_t		kill_after_ms;
	int64_t		max_backoff_ms;
	bool		json_log;
	RunSpec    *runs;
	int			nruns;
} Options;

extern Options opts;

extern void parse_options(int argc, char **argv);
extern bool parse_duration(const char *s, int64_t *ms);
extern const RunSpec *find_run(const char *action);

/* ------------------------------------------------------------ shards */

extern void shards_run(void);
extern bool shard_unavailable(const char *sqlstate);

/* ------------------------------------------------------------ time */

extern int64_t now_ms(void);	/* CLOCK_MONOTONIC, milliseconds */

/* ------------------------------------------------------------ log */

extern void log_msg(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern void log_task(const char *id, const char *action, int try, const char *outcome,
					 const char *exit_text, double seconds, const char *detail);
extern void log_child_stderr(const char *id, const char *line);
extern char *xstrdup(const char *s);

/* ------------------------------------------------------------ json */

typedef enum JsonType
{
	JV_NULL, JV_BOOL, JV_NUMBER, JV_STRING, JV_ARRAY, JV_OBJECT
} JsonType;

typedef struct JsonMember
{
	char	   *key;			/* decoded */
	JsonType	type;
	const char *raw;			/* the value's text, in the parsed text */
	size_t		raw_len;
	char	   *str;			/* decoded, for JV_STRING */
} JsonMember;

extern int	json_object_members(const char *text, size_t len, JsonMember **out,
								char *err, size_t errlen);
extern void json_members_free(JsonMember *m, int n);
extern const char *json_type_name(JsonType t);
extern bool json_value_check(const char *text, size_t len, char *err, size_t errlen);

/* ------------------------------------------------------------ steps */

/* What a claimed task is, read from its body when it was claimed (db.c). */
typedef enum StepKind
{
	STEP_PLAIN = 0,				/* an ordinary task */
	STEP_MACHINE,				/* a state machine's step: transition */
	STEP_SAGA					/* a saga's do or undo: return_step */
} StepKind;

typedef struct StepInfo
{
	StepKind	kind;
	char	   *run;			/* the run's id (TASKQ_RUN) */
	char	   *name;			/* the state (machine) or step (saga) */
	char	   *direction;		/* saga: do or undo */
	char	   *cursor;			/* continuation state: the cursor; NULL at first */
	bool		continuation;	/* the body has a cursor key */
	bool		fan_in;			/* a fan-in batch's task */
} StepInfo;

extern void step_info_copy(StepInfo *dst, const StepInfo *src);
extern void step_info_free(StepInfo *s);

/* ------------------------------------------------------------ children */

/* Why the worker stopped a child (what then happens to its task). */
typedef enum StopReason
{
	STOP_NONE = 0,
	STOP_TIMEOUT,				/* --timeout passed: returned pending */
	STOP_LEASE_LOST,			/* owned = false: nothing returned */
	STOP_CONNECTION_LOST,		/* the connection died: nothing returned */
	STOP_SHUTDOWN				/* --grace passed: given back, no try counted */
} StopReason;

typedef struct Child
{
	bool		used;
	pid_t		pid;			/* 0 once reaped */
	pid_t		pgid;			/* its process group (the first pid) */
	char	   *id;
	char	   *token;
	char	   *action;
	int			try;
	int64_t		started_ms;
	int64_t		extended_ms;	/* claim or last heartbeat */
	int64_t		timeout_at_ms;	/* 0: none */
	StopReason	stop;
	int64_t		term_sent_ms;	/* 0: not signalled yet */
	bool		killed;
	int			err_fd;			/* read end of its stderr; -1 at EOF */
	char		err_buf[1024];	/* the current partial line */
	size_t		err_len;
	char		last_line[512]; /* last non-empty line of stderr */
	int			wait_status;	/* from waitpid, valid once pid == 0 */
	StepInfo	step;			/* a workflow step? */
	int			out_fd;			/* a step's or --result action's stdout (read
								 * end); -1: none or EOF */
	char	   *out_buf;		/* what it printed, up to TQW_MAX_STDOUT */
	size_t		out_len;
	size_t		out_cap;
	bool		out_over;		/* it printed more: the try fails */
	bool		want_result;	/* a plain task of a --result action */
	int			ctl_fd;			/* a continuation step's fd 3 (read end): cursors
								 * to fork at once; -1: none or EOF */
	char		ctl_buf[4096];	/* the current partial line */
	size_t		ctl_len;
	bool		ctl_over;		/* the current line is too long: dropped */
} Child;

extern Child *children;			/* opts.concurrency slots */

extern void children_init(void);
extern int	children_running(void);
typedef struct Claimed Claimed;
extern Child *child_start(const RunSpec *run, const Claimed *t);
extern void child_stop(Child *c, StopReason why);
extern void child_kill_now(Child *c);
extern void child_read_stderr(Child *c, bool at_exit);
extern void child_read_stdout(Child *c);
extern bool children_reap(void);
extern bool child_group_alive(const Child *c);
extern void child_free(Child *c);
extern int	anon_file(const char *text);

/* ------------------------------------------------------------ db */

struct Claimed
{
	char	   *id;
	char	   *token;
	char	   *action;
	char	   *body;
	int			try;
	char	   *deadline;
	int64_t		claimed_ms;		/* now_ms() when the claim was sent */
	char	   *concurrency_key;	/* NULL: none (or taskq before 0.6) */
	StepInfo	step;
};

extern bool db_connected(void);
extern bool db_connect(void);
extern void db_disconnect(void);
extern int	db_socket(void);
extern bool db_consume(bool *wakeup);
extern void db_notifications(bool *wakeup);
extern int	db_claim(int max, Claimed **out);
extern void claimed_free(Claimed *c, int n);
extern void claimed_free_one(Claimed *c);
extern bool db_has_return_and_own(void);
extern bool db_return_and_own_send(const char *const *ids, const char *const *tokens,
								   const char *const *statuses, const char *const *codes,
								   const char *const *results, int nret, int max,
								   char *err, size_t errlen);
extern bool db_return_and_own_busy(void);
extern int	db_return_and_own_result(Claimed **out, char *err, size_t errlen);
extern bool db_extend(Child **due, int n, bool *owned);
extern bool db_return(const char *id, const char *token, const char *status,
					  const char *code, const char *result, char *err, size_t errlen);
extern bool db_release(const char *id, const char *token, char *err, size_t errlen);

/* db_worker_heartbeat's answers */
#define REGISTRY_OK			0
#define REGISTRY_MISSING	1	/* 42883: taskq before 0.6 */
#define REGISTRY_FAILED		2
#define REGISTRY_DENIED		3	/* 42501: the role may not call it */
extern int	db_worker_heartbeat(const char *worker_id, const char *host, int64_t interval_ms,
								char *err, size_t errlen);
extern bool db_worker_stopped(const char *worker_id, char *err, size_t errlen);
extern bool db_fan_in_body(const char *id, const char *token, const char *body,
						   char **new_body, char *err, size_t errlen);
extern bool db_transition(const char *id, const char *token, const char *event,
						  const char *context, bool fork, const char *cursor,
						  char **next_state, char **fork_run, char *err, size_t errlen);
extern bool db_return_step(const char *id, const char *token, const char *result,
						   const char *working, const char *error, char *err, size_t errlen);
extern bool db_exec_params(const char *sql, int nparams, const char *const *params,
						   char **value, char **value2, char *err, size_t errlen);

/* ------------------------------------------------------------ claims */

struct pg_result;

/* A column's value copied, or NULL (db.c) */
extern char *db_value_or_null(struct pg_result *res, int row, int col);
extern void claims_server(bool have_wait, bool have_key);
extern const char *claims_sql(const char *from);
extern int	claims_rows(struct pg_result *res, const char *what, int64_t sent_ms,
						Claimed **out, char *err, size_t errlen);
extern bool claim_wait_on(void);
extern bool claim_wait_busy(void);
extern int	claim_wait_want(void);
extern int	claim_wait_socket(void);
extern bool claim_wait_send(int max, int64_t now);
extern int	claim_wait_result(Claimed **out);
extern int	claim_wait_cancel(Claimed **out);
extern void claim_wait_close(void);
extern int64_t claim_wait_retry_at(void);

/* ------------------------------------------------------------ handoff */

extern int	handoff_predecessors(const Claimed *t);
extern void handoff_read_ctl(Child *c, bool at_exit);

/* ------------------------------------------------------------ cycle */

extern void cycle_init(void);
extern void cycle_child_ran(int64_t ms, bool stopped);
extern void cycle_queue_return(const Child *c, const char *status, const char *code,
							   const char *result, const char *outcome, const char *exit_buf,
							   double seconds);
extern int	cycle_queued(void);
extern int	cycle_ahead(void);
extern void cycle_start_ahead(void);
extern bool cycle_flush(bool claim, bool *more);
extern bool cycle_busy(void);
extern void cycle_stop(void);
extern void cycle_poll(bool *more);
extern void cycle_expire_ahead(int64_t now, bool all, int64_t *wake);
extern void cycle_drop_ahead(void);
extern void cycle_drop_returns(void);
extern void cycle_wait_poll(bool *more);
extern void cycle_wait_stop(void);

/* ------------------------------------------------------------ steps (2) */

/* How a step's return went, for the log line. */
typedef struct StepOutcome
{
	const char *outcome;		/* completed, pending, aborted, not-returned */
	char		detail[1200];
} StepOutcome;

extern bool step_output_blank(const Child *c);
extern void step_finish(Child *c, StepOutcome *out);

#endif							/* TASKQ_WORKER_H */
