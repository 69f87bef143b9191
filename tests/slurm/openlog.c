// SPDX-License-Identifier: GPL-2.0
/*
 * Preloaded into the ranks of tests/slurm/vm-cluster: records each open(2) of an Open MPI
 * shared-memory segment (a path with "vader_segment" in it), what it returned and its errno, one
 * line per call in $CDSM_OPENLOG.<pid>. It calls the C library's open and changes nothing else.
 *
 * Why: ranks of the cluster's ring runs failed in MPI_Init to open(2) a peer's segment (ENOENT);
 * Open MPI's message names neither the file nor the peer. These lines do, and which rank created
 * which segment on which node: they showed the ENOENT follows the crash of the segment's creator
 * (session 33).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*open_fn)(const char *, int, ...);

/* The C library's @name (POSIX's way: dlsym returns an object pointer). */
static open_fn next_open(const char *name)
{
	open_fn fn;
	void *sym = dlsym(RTLD_NEXT, name);

	memcpy(&fn, &sym, sizeof(fn));
	return fn;
}

static void record(const char *call, const char *path, int flags, int ret, int err)
{
	const char *base = getenv("CDSM_OPENLOG");
	char name[4096], line[4096 + 256], host[64] = "?";
	int fd, n;

	if (!base || !path || !strstr(path, "vader_segment"))
		return;
	gethostname(host, sizeof(host) - 1);
	n = snprintf(name, sizeof(name), "%s.%d", base, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(name))
		return;
	n = snprintf(line, sizeof(line), "%s rank %s pid %d: %s(%s, %s) = %d%s%s\n", host,
		     getenv("SLURM_PROCID") ? getenv("SLURM_PROCID") : "?", (int)getpid(), call,
		     path, (flags & O_CREAT) ? "O_CREAT" : "no O_CREAT", ret, ret < 0 ? " " : "",
		     ret < 0 ? strerror(err) : "");
	if (n < 0)
		return;
	fd = next_open("open")(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) < 0) {
		/* nothing to do: the record is lost, the call's result is not */
	}
	close(fd);
}

static int forward(const char *call, const char *path, int flags, va_list ap)
{
	open_fn real = next_open(call);
	mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
	int ret, err;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	ret = real(path, flags, mode);
	err = errno;
	record(call, path, flags, ret, err);
	errno = err;
	return ret;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	int ret;

	va_start(ap, flags);
	ret = forward("open", path, flags, ap);
	va_end(ap);
	return ret;
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	int ret;

	va_start(ap, flags);
	ret = forward("open64", path, flags, ap);
	va_end(ap);
	return ret;
}
