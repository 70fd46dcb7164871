/*
 * common.h
 *	  What the bench drivers (driver.c, machines.c, saga.c) share: clocks,
 *	  a connection, prepared statements and statements that must succeed
 *	  (a failure ends the driver with the server's message), and sorting
 *	  of measurements.  Each driver is one process of threads, one
 *	  connection per thread; nothing here keeps state between calls.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <libpq-fe.h>

/* monotonic seconds, for durations */
extern double now_s(void);

/* the wall clock, as the server's clock_timestamp() */
extern double wall_s(void);

/* print what failed (the result's error, else the connection's) and exit(1) */
extern void die(const char *what, PGconn *conn, PGresult *res);

/* a connection from the PG* environment, or die */
extern PGconn *connect_db(void);

/* prepare a statement without parameter types, or die */
extern void prepare(PGconn *conn, const char *name, const char *sql);

/* run a prepared statement that must succeed; the caller clears the result */
extern PGresult *exec_prepared(PGconn *conn, const char *name, int n,
							   const char *const *params);

/* run a statement without parameters whose result is not needed */
extern void exec_sql(PGconn *conn, const char *sql);

/* qsort comparator of doubles, ascending */
extern int	compare_double(const void *a, const void *b);

/* the p-th percentile (nearest rank) of n sorted values; NAN when n is 0 */
extern double percentile(double *v, long n, double p);

#endif
