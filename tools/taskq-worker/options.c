/*-------------------------------------------------------------------------
 *
 * options.c
 *	  taskq-worker's command line: options, durations, --help, --version.
 *
 * Durations are a number with an optional unit: ms, s (the default), m,
 * h ("1.5s", "500ms", "2m").  A usage error prints one line and exits 2.
 *
 *-------------------------------------------------------------------------
 */
#include "worker.h"

#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Options		opts = {
	.conninfo = "",
	.dbnames = NULL,
	.ndbnames = 0,
	.shards_from_proxy = false,
	.default_user = NULL,
	.shard = NULL,
	.actor = NULL,
	.concurrency = 1,
	.lease_ms = 60000,
	.poll_ms = 5000,
	.grace_ms = 30000,
	.kill_after_ms = 5000,
	.max_backoff_ms = 30000,
	.json_log = false,
	.runs = NULL,
	.nruns = 0,
};

static void
usage(FILE *f)
{
	fprintf(f,
			"taskq-worker runs a program for each task it claims from a taskq queue.\n"
			"\n"
			"Usage:\n"
			"  taskq-worker [OPTION]... --run ACTION=COMMAND [--run ACTION=COMMAND]...\n"
			"\n"
			"Options:\n"
			"  -d, --dbname=CONNINFO      database to connect to (connection string or URI;\n"
			"                             PG* environment variables apply); repeat for\n"
			"                             several shards: a worker process for each\n"
			"      --shards-from-proxy    --dbname is a taskq_proxy database: work on each\n"
			"                             of its partitions (taskq_proxy.partitions())\n"
			"  -a, --actor=NAME           actor name recorded with each claim (default: host name)\n"
			"  -r, --run=ACTION=COMMAND   run COMMAND (with /bin/sh -c) for tasks of ACTION;\n"
			"                             repeat for each action\n"
			"  -c, --concurrency=N        children at most at once (default 1), per shard\n"
			"  -l, --lease=DURATION       lease of each claim, renewed at half (default 60s)\n"
			"  -R, --result=ACTION        read the standard output of ACTION's children: one\n"
			"                             JSON value printed by a child that exits 0 is its\n"
			"                             task's result; repeat for each action\n"
			"  -P, --predecessors=ACTION  hand ACTION's children their predecessors' results:\n"
			"                             a JSON array in the file TASKQ_PREDECESSORS_FILE;\n"
			"                             repeat for each action\n"
			"  -t, --timeout=ACTION=DURATION\n"
			"                             stop a child of ACTION after DURATION and give its\n"
			"                             task back as pending (default: no limit)\n"
			"  -p, --poll=DURATION        longest wait of a claim in the server (own_tasks'\n"
			"                             wait), or, on a server without it, look for work\n"
			"                             at least this often without a notification\n"
			"                             (default 5s)\n"
			"  -g, --grace=DURATION       on SIGTERM/SIGINT, time the running children get to\n"
			"                             finish (default 30s)\n"
			"  -k, --kill-after=DURATION  time between SIGTERM and SIGKILL when the worker\n"
			"                             stops a child (default 5s)\n"
			"  -b, --max-backoff=DURATION longest wait between reconnection attempts (default 30s)\n"
			"  -f, --log-format=FORMAT    text (default) or json\n"
			"  -V, --version              print the version and exit\n"
			"  -h, --help                 print this help and exit\n"
			"\n"
			"Exit status of COMMAND: 0 completed, 75 pending (try again later),\n"
			"100 aborted (give up), anything else or a signal: pending (retried until max_tries).\n"
			"With --result, exit 0 and output that is not one JSON value: pending.\n"
			"A continuation step's child may write a cursor line to fd 3\n"
			"(TASKQ_CONTINUE_FD): its next chunk is forked at once.\n"
			"Durations: a number with unit ms, s (default), m or h.\n");
}

static void
usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "taskq-worker: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry \"taskq-worker --help\" for more information.\n");
	exit(2);
}

bool
parse_duration(const char *s, int64_t *ms)
{
	char	   *end;
	double		v;
	double		unit = 1000.0;

	if (s == NULL || *s == '\0' || isspace((unsigned char) *s))
		return false;
	v = strtod(s, &end);
	if (end == s || v < 0)
		return false;
	if (strcmp(end, "") == 0 || strcmp(end, "s") == 0)
		unit = 1000.0;
	else if (strcmp(end, "ms") == 0)
		unit = 1.0;
	else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
		unit = 60000.0;
	else if (strcmp(end, "h") == 0)
		unit = 3600000.0;
	else
		return false;
	v *= unit;
	if (v > 1e12)
		return false;
	*ms = (int64_t) (v + 0.5);
	return true;
}

static int64_t
duration_arg(const char *opt, const char *s, bool positive)
{
	int64_t		ms;

	if (!parse_duration(s, &ms) || (positive && ms <= 0))
		usage_error(opt, s);
	return ms;
}

const RunSpec *
find_run(const char *action)
{
	for (int i = 0; i < opts.nruns; i++)
		if (strcmp(opts.runs[i].action, action) == 0)
			return &opts.runs[i];
	return NULL;
}

/* Split "NAME=VALUE" (NAME non-empty); returns a copy of NAME, *value points into s. */
static char *
split_pair(const char *s, const char **value)
{
	const char *eq = strchr(s, '=');
	char	   *name;

	if (eq == NULL || eq == s)
		return NULL;
	name = strndup(s, eq - s);
	*value = eq + 1;
	return name;
}

void
parse_options(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dbname", required_argument, NULL, 'd'},
		{"actor", required_argument, NULL, 'a'},
		{"run", required_argument, NULL, 'r'},
		{"concurrency", required_argument, NULL, 'c'},
		{"lease", required_argument, NULL, 'l'},
		{"result", required_argument, NULL, 'R'},
		{"predecessors", required_argument, NULL, 'P'},
		{"timeout", required_argument, NULL, 't'},
		{"poll", required_argument, NULL, 'p'},
		{"grace", required_argument, NULL, 'g'},
		{"kill-after", required_argument, NULL, 'k'},
		{"max-backoff", required_argument, NULL, 'b'},
		{"log-format", required_argument, NULL, 'f'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{"shards-from-proxy", no_argument, NULL, 'S'},
		{NULL, 0, NULL, 0}
	};
	struct
	{
		char	   *action;
		int64_t		ms;
	}		   *timeouts = NULL;
	int			ntimeouts = 0;
	const char **results;
	int			nresults = 0;
	const char **preds;
	int			npreds = 0;
	int			c;

	opts.runs = calloc(argc, sizeof(RunSpec));
	opts.dbnames = calloc(argc, sizeof(char *));
	timeouts = calloc(argc, sizeof(*timeouts));
	results = calloc(argc, sizeof(*results));
	preds = calloc(argc, sizeof(*preds));
	if (opts.runs == NULL || opts.dbnames == NULL || timeouts == NULL || results == NULL || preds == NULL)
		usage_error("%s", "out of memory");

	while ((c = getopt_long(argc, argv, "d:a:r:R:P:c:l:t:p:g:k:b:f:Vh", longopts, NULL)) != -1)
	{
		const char *value;
		char	   *name;
		char	   *end;
		long		n;

		switch (c)
		{
			case 'd':
				for (int i = 0; i < opts.ndbnames; i++)
					if (strcmp(opts.dbnames[i], optarg) == 0)
						usage_error("--dbname \"%s\" is given twice (a shard is listed once)", optarg);
				opts.dbnames[opts.ndbnames++] = optarg;
				opts.conninfo = optarg;
				break;
			case 'S':
				opts.shards_from_proxy = true;
				break;
			case 'a':
				if (*optarg == '\0')
					usage_error("%s", "--actor must not be empty");
				opts.actor = optarg;
				break;
			case 'r':
				name = split_pair(optarg, &value);
				if (name == NULL || *value == '\0')
					usage_error("--run wants ACTION=COMMAND, not \"%s\"", optarg);
				if (find_run(name) != NULL)
					usage_error("action \"%s\" has two --run options", name);
				opts.runs[opts.nruns].action = name;
				opts.runs[opts.nruns].command = strdup(value);
				opts.nruns++;
				break;
			case 'R':
				if (*optarg == '\0')
					usage_error("%s", "--result wants ACTION, not an empty string");
				results[nresults++] = optarg;
				break;
			case 'P':
				if (*optarg == '\0')
					usage_error("%s", "--predecessors wants ACTION, not an empty string");
				preds[npreds++] = optarg;
				break;
			case 'c':
				n = strtol(optarg, &end, 10);
				if (*optarg == '\0' || *end != '\0' || n < 1 || n > 1000)
					usage_error("--concurrency must be 1 to 1000, not \"%s\"", optarg);
				opts.concurrency = (int) n;
				break;
			case 'l':
				opts.lease_ms = duration_arg("bad --lease \"%s\"", optarg, true);
				if (opts.lease_ms < 1000)
					usage_error("--lease must be at least 1s, not \"%s\"", optarg);
				break;
			case 't':
				name = split_pair(optarg, &value);
				if (name == NULL)
					usage_error("--timeout wants ACTION=DURATION, not \"%s\"", optarg);
				timeouts[ntimeouts].action = name;
				timeouts[ntimeouts].ms = duration_arg("bad duration in --timeout \"%s\"", value, true);
				ntimeouts++;
				break;
			case 'p':
				opts.poll_ms = duration_arg("bad --poll \"%s\"", optarg, true);
				break;
			case 'g':
				opts.grace_ms = duration_arg("bad --grace \"%s\"", optarg, false);
				break;
			case 'k':
				opts.kill_after_ms = duration_arg("bad --kill-after \"%s\"", optarg, false);
				break;
			case 'b':
				opts.max_backoff_ms = duration_arg("bad --max-backoff \"%s\"", optarg, true);
				break;
			case 'f':
				if (strcmp(optarg, "json") == 0)
					opts.json_log = true;
				else if (strcmp(optarg, "text") == 0)
					opts.json_log = false;
				else
					usage_error("--log-format is text or json, not \"%s\"", optarg);
				break;
			case 'V':
				printf("taskq-worker (taskq) %s\n", TASKQ_WORKER_VERSION);
				exit(0);
			case 'h':
				usage(stdout);
				exit(0);
			default:
				fprintf(stderr, "Try \"taskq-worker --help\" for more information.\n");
				exit(2);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument \"%s\"", argv[optind]);
	if (opts.nruns == 0)
		usage_error("%s", "no --run ACTION=COMMAND given");
	if (opts.shards_from_proxy && opts.ndbnames != 1)
		usage_error("%s", "--shards-from-proxy wants one --dbname: the proxy database");
	for (int i = 0; i < ntimeouts; i++)
	{
		RunSpec    *r = (RunSpec *) find_run(timeouts[i].action);

		if (r == NULL)
			usage_error("--timeout names action \"%s\", which has no --run", timeouts[i].action);
		r->timeout_ms = timeouts[i].ms;
		free(timeouts[i].action);
	}
	free(timeouts);
	for (int i = 0; i < nresults; i++)
	{
		RunSpec    *r = (RunSpec *) find_run(results[i]);

		if (r == NULL)
			usage_error("--result names action \"%s\", which has no --run", results[i]);
		r->result = true;
	}
	free(results);
	for (int i = 0; i < npreds; i++)
	{
		RunSpec    *r = (RunSpec *) find_run(preds[i]);

		if (r == NULL)
			usage_error("--predecessors names action \"%s\", which has no --run", preds[i]);
		r->predecessors = true;
	}
	free(preds);
	if (opts.actor == NULL)
	{
		static char host[256];

		if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0')
			strcpy(host, "taskq-worker");
		opts.actor = host;
	}
}
