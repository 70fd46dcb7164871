/*
 * test/bin/asan_selftest.c — `make check-asan` proves its set-up catches a
 * bug before it trusts a clean run: this function, built with ASan like
 * taskq.so and called in a single-user server, writes one byte past a
 * malloc'd block.  The run fails unless ASan reports it.
 */
#include "postgres.h"

#include "fmgr.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(taskq_asan_selftest);

Datum
taskq_asan_selftest(PG_FUNCTION_ARGS)
{
	volatile char *p = malloc(8);

	p[8] = 1;					/* one past the end */
	free((void *) p);
	PG_RETURN_VOID();
}
