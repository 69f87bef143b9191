// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm.so - a Slurm SPANK plugin: cdsm for job steps.
 *
 * Adds to srun, sbatch and salloc:
 *   --cdsm=off|detect|map   off: cdsm leaves the step alone; detect: tracked, its placements
 *                           planned and reported, but never moved; map: tracked and placed by
 *                           cdsmd (the node's policy). Default: the site's (plugstack.conf).
 *   --cdsm-report=DIR       at the end of each step, write cdsm's report to DIR (an absolute
 *                           path; made if missing), owned by the job's user: the matrix (CSV
 *                           and JSON), its heatmap (PNG and SVG), and the application's placements,
 *                           costs and migrations (JSON). The report is written when the step
 *                           has ended, after srun may have returned: each file appears under
 *                           its name only when complete (written as .NAME.part, then renamed).
 *
 * plugstack.conf arguments: default=off|detect|map (map if not given), socket=PATH (cdsmd's
 * control socket, /run/cdsm/cdsmd.sock), cdsmctl=PATH (/usr/bin/cdsmctl, for reports).
 *
 * In slurmstepd (as root) the step's cgroup is tracked through cdsmd when its first task has
 * been forked, before any task runs the user's program; cdsmd names the application after the
 * job and step. The report is written by a child process that has taken the job's user and
 * groups, so that it holds only what the user may see and can write only where the user may:
 * cdsmd's answers for the ended application (matrix, "show", tasks) as JSON, then the matrix's
 * CSV and heatmap made offline by cdsmctl from the saved JSON. What fails is logged in slurmd's
 * log (with cdsmctl's own message). A step that cdsm cannot track still runs: the plugin logs
 * an error and lets it go.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

SPANK_PLUGIN(cdsm, 1)

enum cdsm_mode { MODE_UNSET = -1, MODE_OFF, MODE_DETECT, MODE_MAP };
static const char *const mode_names[] = { "off", "detect", "map" };

static enum cdsm_mode site_mode = MODE_MAP;
static enum cdsm_mode step_mode = MODE_UNSET;
static char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)] = "/run/cdsm/cdsmd.sock";
static char cdsmctl_path[PATH_MAX] = "/usr/bin/cdsmctl";
static char report_dir[PATH_MAX];
static long app_id = -1;
static int tracked_once;

static int parse_mode(const char *s, enum cdsm_mode *mode)
{
	for (int m = MODE_OFF; m <= MODE_MAP; m++) {
		if (s && strcmp(s, mode_names[m]) == 0) {
			*mode = m;
			return 0;
		}
	}
	return -1;
}

static int opt_cdsm(int val, const char *arg, int remote)
{
	(void)val;
	(void)remote;
	if (parse_mode(arg, &step_mode) < 0) {
		slurm_error("cdsm: --cdsm=%s: not off, detect or map", arg ? arg : "");
		return ESPANK_BAD_ARG;
	}
	return ESPANK_SUCCESS;
}

static int opt_report(int val, const char *arg, int remote)
{
	(void)val;
	(void)remote;
	if (!arg || arg[0] != '/' || strlen(arg) >= sizeof(report_dir) - 64) {
		slurm_error("cdsm: --cdsm-report=%s: give an absolute directory path",
			    arg ? arg : "");
		return ESPANK_BAD_ARG;
	}
	strcpy(report_dir, arg);
	return ESPANK_SUCCESS;
}

struct spank_option spank_options[] = {
	{ "cdsm", "off|detect|map",
	  "cdsm for this job's steps: off (left alone), detect (communication tracked and "
	  "reported, tasks never moved) or map (tracked, tasks placed by cdsmd); default: the site's",
	  1, 0, opt_cdsm },
	{ "cdsm-report", "DIR",
	  "At the end of each step write cdsm's report (matrix CSV and JSON, heatmap PNG and SVG, "
	  "placements) to DIR, an absolute path",
	  1, 0, opt_report },
	SPANK_OPTIONS_TABLE_END
};

static int copy_arg(const char *arg, const char *key, char *to, size_t size)
{
	size_t n = strlen(key);

	if (strncmp(arg, key, n) != 0)
		return 0;
	if (strlen(arg + n) >= size || arg[n] != '/') {
		slurm_error("cdsm: plugstack.conf: %s needs an absolute path shorter than %zu bytes",
			    arg, size);
		return -1;
	}
	strcpy(to, arg + n);
	return 1;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	/*
	 * sbatch and salloc (the allocator context) do not read the table spank_options, only
	 * srun and slurmstepd do: there the options are registered, or sbatch refuses --cdsm.
	 */
	if (spank_context() == S_CTX_ALLOCATOR) {
		for (struct spank_option *opt = spank_options; opt->name; opt++) {
			if (spank_option_register(sp, opt) != ESPANK_SUCCESS) {
				slurm_error("cdsm: cannot register --%s", opt->name);
				return -1;
			}
		}
	}
	for (int i = 0; i < ac; i++) {
		int r;

		if (strncmp(av[i], "default=", 8) == 0) {
			if (parse_mode(av[i] + 8, &site_mode) < 0) {
				slurm_error("cdsm: plugstack.conf: %s: not off, detect or map", av[i]);
				return -1;
			}
			continue;
		}
		r = copy_arg(av[i], "socket=", socket_path, sizeof(socket_path));
		if (r == 0)
			r = copy_arg(av[i], "cdsmctl=", cdsmctl_path, sizeof(cdsmctl_path));
		if (r < 0)
			return -1;
		if (r == 0) {
			slurm_error("cdsm: plugstack.conf: unknown argument '%s' (default=, socket=, cdsmctl=)",
				    av[i]);
			return -1;
		}
	}
	return 0;
}

/* A connection to cdsmd with @request sent; the socket, or -1 with errno. */
static int cdsmd_send(const char *request)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 10 };
	size_t len = strlen(request);
	int fd, saved;

	strcpy(addr.sun_path, socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		goto fail;
	while (len > 0) {
		ssize_t n = write(fd, request, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		request += n;
		len -= n;
	}
	return fd;
fail:
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}

/* One request to cdsmd, one reply line into @reply; 0, or -1 with errno. */
static int cdsmd_request(const char *request, char *reply, size_t size)
{
	size_t got = 0;
	int fd = cdsmd_send(request);

	if (fd < 0)
		return -1;
	while (got + 1 < size) {
		ssize_t n = read(fd, reply + got, size - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
		if (memchr(reply + got - n, '\n', n))
			break;
	}
	reply[got] = '\0';
	close(fd);
	if (!memchr(reply, '\n', got)) {
		errno = got + 1 >= size ? EMSGSIZE : EPROTO;
		return -1;
	}
	return 0;
}

/*
 * One request to cdsmd, its reply line (of any size: a matrix) into the file @name in @dir.
 * 0, or -1: no complete reply, or cdsmd's answer is an error ({"ok":false,...}: a short line).
 */
static int cdsmd_to_file(const char *request, int dir, const char *name)
{
	char buf[8192], head[512];
	size_t total = 0, kept = 0;
	int fd, out, done = 0;

	out = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out < 0)
		return -1;
	fd = cdsmd_send(request);
	while (fd >= 0 && !done) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done = memchr(buf, '\n', n) != NULL;
		if (kept < sizeof(head) - 1) {
			size_t k = (size_t)n < sizeof(head) - 1 - kept ? (size_t)n : sizeof(head) - 1 - kept;

			memcpy(head + kept, buf, k);
			kept += k;
		}
		if (write(out, buf, n) != n)
			break;
		total += n;
	}
	head[kept] = '\0';
	if (fd >= 0)
		close(fd);
	close(out);
	if (done && !(total < sizeof(head) && strstr(head, "\"ok\":false")))
		return 0;
	slurm_error("cdsm: %s: cdsmd's answer to %.*s: %s", name, (int)strcspn(request, "\n"),
		    request, fd < 0 ? "cannot connect" : kept ? head : "none");
	return -1;
}

/*
 * A report file is written as ".NAME.part" and renamed to NAME when complete (@ok), or removed:
 * a user (or a script waiting for the report) never sees a file half written.
 */
static const char *part_of(const char *name, char part[128])
{
	snprintf(part, 128, ".%s.part", name);
	return part;
}

static int publish(int dir, const char *name, int ok)
{
	char part[128];

	part_of(name, part);
	if (ok && renameat(dir, part, dir, name) == 0)
		return 0;
	unlinkat(dir, part, 0);
	return -1;
}

/* The number after "key": in a JSON reply, or -1. */
static long json_number(const char *json, const char *key)
{
	char pattern[64];
	const char *p;

	snprintf(pattern, sizeof(pattern), "\"%s\":", key);
	p = strstr(json, pattern);
	if (!p)
		return -1;
	p += strlen(pattern);
	while (*p == ' ')
		p++;
	return *p >= '0' && *p <= '9' ? strtol(p, NULL, 10) : -1;
}

/*
 * The step's tasks' cgroup (relative to the cgroup2 mount) from a task's: the path up to its
 * "/job_<id>/step_<name>/user" directories, where slurmstepd keeps the tasks (in task_N) apart
 * from itself (in "slurm").
 */
static int step_cgroup(pid_t pid, uint32_t job, char *path, size_t size)
{
	char file[64], line[PATH_MAX + 8], marker[32], *start, *step, *end;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	f = fopen(file, "re");
	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	if (strncmp(line, "0::/", 4) != 0)
		return -1; /* not cgroup v2 */
	start = line + 3;
	snprintf(marker, sizeof(marker), "/job_%u/step_", job);
	step = strstr(start, marker);
	if (!step)
		return -1;
	end = strchr(step + strlen(marker), '/');
	/* The tasks' part of the step: its "user" directory (slurmstepd itself is in "slurm"). */
	if (end && strncmp(end, "/user", 5) == 0 && (end[5] == '/' || end[5] == '\0'))
		end += 5;
	if (end)
		*end = '\0';
	if (strlen(start) >= size)
		return -1;
	strcpy(path, start);
	return 0;
}

/* "J.S" for job J's step S, "J.batch" and "J.interactive" for those steps. */
static void step_label(uint32_t job, uint32_t step, char *label, size_t size)
{
	if (step == SLURM_BATCH_SCRIPT)
		snprintf(label, size, "%u.batch", job);
	else if (step == SLURM_INTERACTIVE_STEP)
		snprintf(label, size, "%u.interactive", job);
	else
		snprintf(label, size, "%u.%u", job, step);
}

/* @s as a JSON string body (the cgroup path: printable ASCII expected). */
static int json_safe(const char *s)
{
	for (; *s; s++) {
		if (*s < 0x20 || *s == '"' || *s == '\\' || *s == 0x7f)
			return 0;
	}
	return 1;
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	char cgroup[PATH_MAX], request[PATH_MAX + 256], reply[4096], label[48], name[64];
	uint32_t job = 0, step = 0;
	enum cdsm_mode mode = step_mode == MODE_UNSET ? site_mode : step_mode;
	pid_t pid = 0;

	(void)ac;
	(void)av;
	if (!spank_remote(sp) || tracked_once++ || mode == MODE_OFF)
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS) {
		slurm_error("cdsm: cannot get the job's id, step or task pid; step not tracked");
		return 0;
	}
	if (step == SLURM_EXTERN_CONT)
		return 0;
	if (step_cgroup(pid, job, cgroup, sizeof(cgroup)) < 0 || !json_safe(cgroup)) {
		slurm_error("cdsm: job %u: task %d is in no cgroup v2 step directory; step not tracked",
			    job, (int)pid);
		return 0;
	}
	step_label(job, step, label, sizeof(label));
	snprintf(name, sizeof(name), "slurm-%s", label);
	snprintf(request, sizeof(request),
		 "{\"cmd\":\"track\",\"cgroup\":\"%s\",\"name\":\"%s\"%s}\n", cgroup, name,
		 mode == MODE_DETECT ? ",\"mode\":\"detect\"" : "");
	if (cdsmd_request(request, reply, sizeof(reply)) < 0) {
		slurm_error("cdsm: job %u: cdsmd at %s: %s; step not tracked", job, socket_path,
			    strerror(errno));
		return 0;
	}
	app_id = json_number(reply, "app_id");
	if (app_id < 0) {
		reply[strcspn(reply, "\n")] = '\0';
		slurm_error("cdsm: job %u: cdsmd did not track %s: %s", job, cgroup, reply);
		return 0;
	}
	slurm_verbose("cdsm: job %u: step cgroup %s is cdsm application %ld (%s)", job, cgroup,
		      app_id, mode_names[mode]);
	return 0;
}

/*
 * Runs cdsmctl with @args, its output into @file in the report directory (never through a
 * symbolic link), in the user's child process. What cdsmctl says on its standard error when it
 * fails goes to slurmd's log (its first 1 KiB), so that a missing file has a reason there.
 */
static int run_cdsmctl(int dir, const char *file, char *const args[])
{
	int status, err[2], out = openat(dir, file,
					 O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	char said[1024];
	size_t len = 0;
	ssize_t n;
	pid_t child;

	if (out < 0)
		return -1;
	if (pipe2(err, O_CLOEXEC) < 0) {
		close(out);
		return -1;
	}
	child = fork();
	if (child == 0) {
		if (dup2(out, STDOUT_FILENO) < 0 || dup2(err[1], STDERR_FILENO) < 0 ||
		    fchdir(dir) < 0)
			_exit(127);
		execv(cdsmctl_path, args);
		dprintf(STDERR_FILENO, "cannot run %s: %s\n", cdsmctl_path, strerror(errno));
		_exit(127);
	}
	close(out);
	close(err[1]);
	/* Read to the end, keeping the start: cdsmctl must not block on a full pipe. */
	for (;;) {
		char rest[256];
		int keep = len < sizeof(said) - 1;

		n = read(err[0], keep ? said + len : rest, keep ? sizeof(said) - 1 - len : sizeof(rest));
		if (n == 0 || (n < 0 && errno != EINTR))
			break;
		if (n > 0 && keep)
			len += (size_t)n;
	}
	close(err[0]);
	said[len] = '\0';
	if (len && said[len - 1] == '\n')
		said[len - 1] = '\0';
	if (child < 0 || waitpid(child, &status, 0) < 0)
		return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFSIGNALED(status))
		slurm_error("cdsm: %s %s: killed by signal %d%s%s", cdsmctl_path, args[1],
			    WTERMSIG(status), len ? ": " : "", said);
	else
		slurm_error("cdsm: %s %s failed (status %d)%s%s", cdsmctl_path, args[1],
			    WIFEXITED(status) ? WEXITSTATUS(status) : -1, len ? ": " : "", said);
	return -1;
}

static int write_report(uid_t uid, gid_t gid, gid_t *gids, int ngids, uint32_t job,
			uint32_t step)
{
	char request[96], label[48], prefix[64], name[96], part[128], matrix[96], png[128], svg[128];
	static const char *const what[] = { "matrix", "show", "tasks" };
	/* The step's whole run, not the aged matrix cdsmd maps by. */
	static const char *const extra[] = { ",\"view\":\"whole\"", "", "" };
	static const char *const file[] = { "matrix.json", "placements.json", "tasks.json" };
	int dir, failed = 0;

	if (setgroups(ngids, gids) < 0 || setgid(gid) < 0 || setuid(uid) < 0 || getuid() != uid)
		return 1;
	if (mkdir(report_dir, 0755) < 0 && errno != EEXIST)
		return 2;
	dir = open(report_dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dir < 0)
		return 2;
	step_label(job, step, label, sizeof(label));
	snprintf(prefix, sizeof(prefix), "cdsm-%s", label);
	/*
	 * First what cdsmd knows, as it answers (the ended application is released after
	 * mapping.release_ended_after_ms): the whole-run matrix, then placements, costs and migrations
	 * ("show"), and the tasks. Then, offline from the saved matrix, its CSV and heatmap.
	 */
	for (int i = 0; i < 3; i++) {
		snprintf(request, sizeof(request), "{\"cmd\":\"%s\",\"app\":%ld%s}\n", what[i],
			 app_id, extra[i]);
		snprintf(name, sizeof(name), "%s-%s", prefix, file[i]);
		failed |= publish(dir, name, cdsmd_to_file(request, dir, part_of(name, part)) == 0) < 0;
	}
	/* cdsmctl reads the matrix once it is complete, under its final name. */
	snprintf(matrix, sizeof(matrix), "%s-matrix.json", prefix);
	snprintf(name, sizeof(name), "%s-heatmap.png", prefix);
	part_of(name, png);
	snprintf(name, sizeof(name), "%s-heatmap.svg", prefix);
	part_of(name, svg);
	{
		char *csv[] = { "cdsmctl", "show", "--matrix", matrix, "--format", "csv", NULL };
		char *pic[] = { "cdsmctl", "show", "--matrix", matrix, "--png", png, "--svg", svg,
				NULL };
		int ok;

		snprintf(name, sizeof(name), "%s-matrix.csv", prefix);
		failed |= publish(dir, name, run_cdsmctl(dir, part_of(name, part), csv) == 0) < 0;
		ok = run_cdsmctl(dir, "/dev/null", pic) == 0;
		snprintf(name, sizeof(name), "%s-heatmap.png", prefix);
		failed |= publish(dir, name, ok) < 0;
		snprintf(name, sizeof(name), "%s-heatmap.svg", prefix);
		failed |= publish(dir, name, ok) < 0;
	}
	close(dir);
	return failed ? 3 : 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	uid_t uid;
	gid_t gid, *gids = NULL;
	int ngids = 0, status;
	uint32_t job = 0, step = 0;
	pid_t child;

	(void)ac;
	(void)av;
	if (!spank_remote(sp) || app_id < 0 || !report_dir[0])
		return 0;
	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &ngids) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS) {
		slurm_error("cdsm: cannot get the job's user; no report");
		return 0;
	}
	child = fork();
	if (child == 0)
		_exit(write_report(uid, gid, gids, ngids, job, step));
	if (child < 0 || waitpid(child, &status, 0) < 0) {
		slurm_error("cdsm: job %u: no report: %s", job, strerror(errno));
		return 0;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		static const char *const why[] = { "", "cannot take the job's user",
						   "cannot make or open the directory",
						   "cdsmctl or cdsmd failed" };
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;

		slurm_error("cdsm: job %u: report to %s incomplete: %s", job, report_dir,
			    code > 0 && code < 4 ? why[code] : "killed");
	}
	return 0;
}
