/*
 * common.c
 *	  Helpers of the bench drivers: see common.h.  A failed statement ends
 *	  the whole driver (exit 1) with the program's name and the server's
 *	  message: a bench that goes on after an error measures something else.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common.h"

double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

double
wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void
die(const char *what, PGconn *conn, PGresult *res)
{
	fprintf(stderr, "%s: %s: %s", program_invocation_short_name, what,
			res ? PQresultErrorMessage(res) : conn ? PQerrorMessage(conn) : "\n");
	exit(1);
}

PGconn *
connect_db(void)
{
	PGconn	   *conn = PQconnectdb("");

	if (PQstatus(conn) != CONNECTION_OK)
		die("connect", conn, NULL);
	return conn;
}

void
prepare(PGconn *conn, const char *name, const char *sql)
{
	PGresult   *res = PQprepare(conn, name, sql, 0, NULL);

	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		die(name, conn, res);
	PQclear(res);
}

PGresult *
exec_prepared(PGconn *conn, const char *name, int n, const char *const *params)
{
	PGresult   *res = PQexecPrepared(conn, name, n, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);

	if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK)
		die(name, conn, res);
	return res;
}

void
exec_sql(PGconn *conn, const char *sql)
{
	PGresult   *res = PQexec(conn, sql);
	ExecStatusType st = PQresultStatus(res);

	if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK)
		die(sql, conn, res);
	PQclear(res);
}

int
compare_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

double
percentile(double *v, long n, double p)
{
	long		k;

	if (n == 0)
		return NAN;
	k = (long) ceil(p / 100.0 * n) - 1;
	if (k < 0)
		k = 0;
	return v[k];
}
