// SPDX-License-Identifier: GPL-2.0
/*
 * Preloaded into the ranks of tests/slurm/vm-cluster: records each open(2) of an Open MPI
 * shared-memory segment (a path with "vader_segment" in it), what it returned and its errno, and
 * when MPI_Init (or MPI_Init_thread) returned, one line per event in $CDSM_OPENLOG.<pid>, each
 * with its CLOCK_REALTIME time (the cluster's nodes share the lab guest's kernel, so one clock).
 * It calls the C library's open and Open MPI's PMPI_Init and changes nothing else.
 *
 * Why: ranks of the cluster's ring runs failed in MPI_Init to open(2) a peer's segment (ENOENT);
 * Open MPI's message names neither the file nor the peer. These lines do, and which rank created
 * which segment on which node: they showed the ENOENT follows the crash of the segment's creator
 * (session 33). The times show whether MPI_Init's last barrier held: a rank attaches its node's
 * peers' segments before that barrier, so no rank may return from MPI_Init before every rank's
 * last such open (it did not hold under Slurm's tree fence, session 34: tests/slurm/cluster.sh).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* Appends "TIME HOST rank R pid P: WHAT" to $CDSM_OPENLOG.<pid>. */
static void append(const char *what)
{
	const char *base = getenv("CDSM_OPENLOG");
	char name[4096], line[8192], host[64] = "?";
	struct timespec now;
	int fd, n;

	if (!base)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gethostname(host, sizeof(host) - 1);
	n = snprintf(name, sizeof(name), "%s.%d", base, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(name))
		return;
	n = snprintf(line, sizeof(line), "%lld.%06ld %s rank %s pid %d: %s\n", (long long)now.tv_sec,
		     now.tv_nsec / 1000, host,
		     getenv("SLURM_PROCID") ? getenv("SLURM_PROCID") : "?", (int)getpid(), what);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	fd = next_open("open")(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) < 0) {
		/* nothing to do: the record is lost, the call's result is not */
	}
	close(fd);
}

static void record(const char *call, const char *path, int flags, int ret, int err)
{
	char what[4096 + 128];

	if (!path || !strstr(path, "vader_segment"))
		return;
	snprintf(what, sizeof(what), "%s(%s, %s) = %d%s%s", call, path,
		 (flags & O_CREAT) ? "O_CREAT" : "no O_CREAT", ret, ret < 0 ? " " : "",
		 ret < 0 ? strerror(err) : "");
	append(what);
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

/* Open MPI's own entry points (its PMPI_ names), looked up when the program calls MPI_Init. */
int MPI_Init(int *argc, char ***argv)
{
	int (*real)(int *argc, char ***argv);
	void *sym = dlsym(RTLD_NEXT, "PMPI_Init");
	int ret;

	if (!sym)
		return 1; /* not MPI_SUCCESS: no Open MPI under this program */
	memcpy(&real, &sym, sizeof(real));
	ret = real(argc, argv);
	append("MPI_Init returned");
	return ret;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int (*real)(int *argc, char ***argv, int required, int *provided);
	void *sym = dlsym(RTLD_NEXT, "PMPI_Init_thread");
	int ret;

	if (!sym)
		return 1;
	memcpy(&real, &sym, sizeof(real));
	ret = real(argc, argv, required, provided);
	append("MPI_Init returned");
	return ret;
}
