/*
 * bench/spawn.c — the process-spawn limit for the runners workload of
 * bench/run.sh: start COUNT children with fork, a process group of their
 * own and execl("/bin/sh", "sh", "-c", COMMAND), as taskq-worker did before
 * it moved to posix_spawn, with at most CONCURRENCY at once, and wait for
 * each; no database.  Prints "tasks=COUNT seconds=S rate=R".
 *
 *   spawn CONCURRENCY COUNT COMMAND
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	int			conc, count, started = 0, running = 0, done = 0, devnull;
	double		t0;

	if (argc != 4 || (conc = atoi(argv[1])) < 1 || (count = atoi(argv[2])) < 1)
	{
		fprintf(stderr, "usage: spawn CONCURRENCY COUNT COMMAND\n");
		return 2;
	}
	devnull = open("/dev/null", O_RDONLY);
	t0 = now();
	while (done < count)
	{
		while (running < conc && started < count)
		{
			pid_t		pid = fork();

			if (pid < 0)
			{
				perror("fork");
				return 1;
			}
			if (pid == 0)
			{
				setpgid(0, 0);
				dup2(devnull, 0);
				execl("/bin/sh", "sh", "-c", argv[3], (char *) NULL);
				_exit(127);
			}
			setpgid(pid, pid);
			started++;
			running++;
		}
		int			st;

		if (waitpid(-1, &st, 0) < 0)
		{
			if (errno == EINTR)
				continue;
			perror("waitpid");
			return 1;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		{
			fprintf(stderr, "spawn: a child failed (status %d)\n", st);
			return 1;
		}
		running--;
		done++;
	}
	double		s = now() - t0;

	printf("tasks=%d seconds=%.3f rate=%.1f\n", count, s, count / s);
	return 0;
}
