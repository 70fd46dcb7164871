/*
 * test/bin/asan_shim.c — preloaded after libasan by `make check-asan`.
 *
 * The PostgreSQL binaries are not instrumented, so the ASan runtime is
 * preloaded, and it initializes at the first malloc: inside p11-kit's
 * constructor, which holds glibc's locale lock.  ASan's initialization looks
 * up swift_demangle; the failed lookup makes dlerror() translate its message,
 * which takes the same lock: the process hangs before main.  With the symbol
 * found here, the lookup succeeds and nothing is translated.  ASan calls it
 * only for Swift names, which C code has none of.
 */
#include <stddef.h>

char	   *swift_demangle(const char *mangled, size_t len, char *out,
						   size_t *outlen, unsigned flags);

char *
swift_demangle(const char *mangled, size_t len, char *out, size_t *outlen,
			   unsigned flags)
{
	(void) mangled;
	(void) len;
	(void) out;
	(void) outlen;
	(void) flags;
	return NULL;
}
