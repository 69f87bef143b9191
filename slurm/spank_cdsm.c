// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm.so - a Slurm SPANK plugin: cdsm for job steps.
 *
 * Adds to srun, sbatch and salloc:
 *   --cdsm=off|detect|map   off: cdsm leaves the step alone; detect: tracked, its placements
 *                           planned and reported, but never moved; map: tracked and placed by
 *                           cdsmd (the node's policy). Default: the site's (plugstack.conf).
 *   --cdsm-smt=avoid|allow  placement rules for the step's busy tasks (cdsmd's [mapping] smt and
 *   --cdsm-spread=balanced|pack  spread, sent with the track request): avoid, one core per
 *                           task while there are no more tasks than cores; allow, SMT siblings
 *                           shared if communication says so; balanced, packages loaded in
 *                           proportion to their cores; pack, as few packages as communication
 *                           wants. Default: the site's (plugstack.conf smt=, spread=), else
 *                           cdsmd's ([mapping]: avoid and balanced unless the node says).
 *   --cdsm-report=DIR       at the end of each step, write cdsm's report to DIR (an absolute
 *                           path; made if missing), owned by the job's user: the matrix (CSV
 *                           and JSON), its heatmap (PNG and SVG), and the application's placements,
 *                           costs and migrations (JSON). The report is written when the step
 *                           has ended, after srun may have returned: each file appears under
 *                           its name only when complete (written as .NAME.RANDOM.part, then
 *                           renamed); files 0600, a directory the plugin makes 0700.
 *                           Names: DIR/cdsm-JOB.STEP-FILE; for a step on several nodes
 *                           DIR/cdsm-JOB.STEP-NODE-FILE, each node's report under its own
 *                           (NODE: the node's short hostname).
 *   --cdsm-mpi=monitor|off  monitor: Open MPI's monitoring of every rank pair for the step
 *                           (OMPI_MCA_pml_monitoring_* in its tasks' environment), its files in
 *                           DIR/cdsm-JOB.STEP-monitoring (made by the task, as the job's user),
 *                           and the report adds the job's matrix, merged with this node's
 *                           (cdsmctl job-matrix): DIR/cdsm-JOB.STEP[-NODE]-job-matrix.json. Needs
 *                           --cdsm-report=DIR. Default off.
 *
 * plugstack.conf arguments: default=off|detect|map (map if not given), smt=avoid|allow and
 * spread=balanced|pack (the site's rules; not given: cdsmd's), socket=PATH (cdsmd's
 * control socket, /run/cdsm/cdsmd.sock), cdsmctl=PATH (/usr/bin/cdsmctl, for reports),
 * report_mode=OCTAL (the report files' mode, 0600; a directory the plugin makes gets it with x
 * where r is: 0700), report_timeout=SECONDS (how long slurmstepd waits for the report, 60).
 *
 * In slurmstepd (as root) the step's cgroup is tracked through cdsmd when its first task has
 * been forked, before any task runs the user's program; cdsmd names the application after the
 * job and step. The report is written by a child process that has taken the job's user and
 * groups, so that it holds only what the user may see and can write only where the user may:
 * cdsmd's answers for the ended application (matrix, "show", tasks) as JSON, then the matrix's
 * CSV and heatmap made offline by cdsmctl from the saved JSON. What fails is logged in slurmd's
 * log (with cdsmctl's own message). A step that cdsm cannot track still runs: the plugin logs
 * an error and lets it go.
 *
 * The job's user owns the report child and may stop it or plant files in the report directory:
 * slurmstepd waits for it report_timeout seconds at most, then kills its process group; it
 * creates each file itself under a name no one can guess (O_EXCL, never following a link or
 * opening a FIFO) and hands cdsmctl open files, not names. Every string a user controls is
 * escaped in slurmd's log (escape()): a newline cannot start a line of its own.
 */
#define _GNU_SOURCE /* pipe2, F_DUPFD_CLOEXEC */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
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
/* The report files' mode (a directory the plugin makes: x added where r is) and deadline. */
static mode_t report_mode = 0600;
static int report_timeout = 60;
static long app_id = -1;
/* Placement rules: the step's (--cdsm-smt, --cdsm-spread), else the site's, else cdsmd's (""). */
static const char *const smt_names[] = { "avoid", "allow", NULL };
static const char *const spread_names[] = { "balanced", "pack", NULL };
static const char *site_smt = "", *site_spread = "", *step_smt = "", *step_spread = "";
static int tracked_once;
/* --cdsm-mpi=monitor: Open MPI's monitoring for the step, the job's matrix in the report. */
static int mpi_monitor;

/* The size of escape()'s buffer: a log line's user-controlled part, cut beyond. */
#define ESCAPED 1024

/*
 * @s as it may go into a log line: a backslash as \\, a tab, newline or carriage return as \t,
 * \n, \r, any other byte outside printable ASCII as \xHH, cut with "..." past @out's ESCAPED
 * bytes. A user's string (a path, cdsmctl's message) then cannot start or forge a line in
 * slurmd's log, nor carry a terminal's escape sequences. Returns @out.
 */
static const char *escape(const char *s, char out[ESCAPED])
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		char e[4] = { '\\', 0, 0, 0 };
		size_t len = 2;

		if (c == '\\' || c == '\n' || c == '\t' || c == '\r') {
			e[1] = c == '\\' ? '\\' : c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
		} else if (c < 0x20 || c > 0x7e) {
			e[1] = 'x';
			e[2] = hex[c >> 4];
			e[3] = hex[c & 15];
			len = 4;
		} else {
			e[0] = (char)c;
			len = 1;
		}
		if (n + len + 4 > ESCAPED) {
			memcpy(out + n, "...", 3);
			n += 3;
			break;
		}
		memcpy(out + n, e, len);
		n += len;
	}
	out[n] = '\0';
	return out;
}

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
	char e[ESCAPED];

	(void)val;
	(void)remote;
	if (parse_mode(arg, &step_mode) < 0) {
		slurm_error("cdsm: --cdsm=%s: not off, detect or map", escape(arg, e));
		return ESPANK_BAD_ARG;
	}
	return ESPANK_SUCCESS;
}

/* The word of @names that @s is (a static string), or NULL. */
static const char *rule_word(const char *s, const char *const *names)
{
	for (; s && *names; names++) {
		if (strcmp(s, *names) == 0)
			return *names;
	}
	return NULL;
}

/* --cdsm-@name=@arg: one of @names into *@to, else the plugin's message (choices @choices). */
static int opt_rule(const char *name, const char *arg, const char *const *names,
		    const char **to, const char *choices)
{
	char e[ESCAPED];
	const char *w = rule_word(arg, names);

	if (!w) {
		slurm_error("cdsm: --cdsm-%s=%s: not %s", name, escape(arg, e), choices);
		return ESPANK_BAD_ARG;
	}
	*to = w;
	return ESPANK_SUCCESS;
}

static int opt_smt(int val, const char *arg, int remote)
{
	(void)val;
	(void)remote;
	return opt_rule("smt", arg, smt_names, &step_smt, "avoid or allow");
}

static int opt_spread(int val, const char *arg, int remote)
{
	(void)val;
	(void)remote;
	return opt_rule("spread", arg, spread_names, &step_spread, "balanced or pack");
}

static int opt_report(int val, const char *arg, int remote)
{
	char e[ESCAPED];

	(void)val;
	(void)remote;
	if (!arg || arg[0] != '/' || strlen(arg) >= sizeof(report_dir) - 64) {
		slurm_error("cdsm: --cdsm-report=%s: give an absolute directory path",
			    escape(arg, e));
		return ESPANK_BAD_ARG;
	}
	strcpy(report_dir, arg);
	return ESPANK_SUCCESS;
}

static int opt_mpi(int val, const char *arg, int remote)
{
	char e[ESCAPED];

	(void)val;
	(void)remote;
	if (arg && strcmp(arg, "monitor") == 0) {
		mpi_monitor = 1;
	} else if (arg && strcmp(arg, "off") == 0) {
		mpi_monitor = 0;
	} else {
		slurm_error("cdsm: --cdsm-mpi=%s: not monitor or off", escape(arg, e));
		return ESPANK_BAD_ARG;
	}
	return ESPANK_SUCCESS;
}

struct spank_option spank_options[] = {
	{ "cdsm", "off|detect|map",
	  "cdsm for this job's steps: off (left alone), detect (communication tracked and "
	  "reported, tasks never moved) or map (tracked, tasks placed by cdsmd); default: the site's",
	  1, 0, opt_cdsm },
	{ "cdsm-smt", "avoid|allow",
	  "Busy tasks of this job's steps: avoid (a core each while there are no more tasks than "
	  "cores) or allow (SMT siblings shared if communication says so); default: the site's",
	  1, 0, opt_smt },
	{ "cdsm-spread", "balanced|pack",
	  "Busy tasks of this job's steps: balanced (packages loaded in proportion to their cores) "
	  "or pack (as few packages as communication wants); default: the site's",
	  1, 0, opt_spread },
	{ "cdsm-report", "DIR",
	  "At the end of each step write cdsm's report (matrix CSV and JSON, heatmap PNG and SVG, "
	  "placements) to DIR, an absolute path",
	  1, 0, opt_report },
	{ "cdsm-mpi", "monitor|off",
	  "monitor: Open MPI's monitoring of every rank pair, and the job's matrix (monitoring "
	  "merged with cdsm's) in the report; needs --cdsm-report",
	  1, 0, opt_mpi },
	SPANK_OPTIONS_TABLE_END
};

static int copy_arg(const char *arg, const char *key, char *to, size_t size)
{
	size_t n = strlen(key);

	if (strncmp(arg, key, n) != 0)
		return 0;
	if (strlen(arg + n) >= size || arg[n] != '/') {
		char e[ESCAPED];

		slurm_error("cdsm: plugstack.conf: %s needs an absolute path shorter than %zu bytes",
			    escape(arg, e), size);
		return -1;
	}
	strcpy(to, arg + n);
	return 1;
}

/*
 * report_mode=OCTAL: read/write bits only (at most 0666), the owner's read and write among them.
 * report_timeout=SECONDS: 1 to 3600. 1 when @arg was one of them (and right), 0 when not, -1 when
 * wrong.
 */
static int report_arg(const char *arg)
{
	char *end, e[ESCAPED];
	long v;

	if (strncmp(arg, "report_mode=", 12) == 0) {
		v = strtol(arg + 12, &end, 8);
		if (arg[12] && !*end && (v & ~0666L) == 0 && (v & 0600) == 0600) {
			report_mode = (mode_t)v;
			return 1;
		}
		slurm_error("cdsm: plugstack.conf: %s: not 0600, 0640, 0644 or the like (octal, rw)",
			    escape(arg, e));
		return -1;
	}
	if (strncmp(arg, "report_timeout=", 15) == 0) {
		v = strtol(arg + 15, &end, 10);
		if (arg[15] && !*end && v >= 1 && v <= 3600) {
			report_timeout = (int)v;
			return 1;
		}
		slurm_error("cdsm: plugstack.conf: %s: seconds, 1 to 3600", escape(arg, e));
		return -1;
	}
	return 0;
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
		char e[ESCAPED];
		int r;

		if (strncmp(av[i], "default=", 8) == 0) {
			if (parse_mode(av[i] + 8, &site_mode) < 0) {
				slurm_error("cdsm: plugstack.conf: %s: not off, detect or map",
					    escape(av[i], e));
				return -1;
			}
			continue;
		}
		if (strncmp(av[i], "smt=", 4) == 0 || strncmp(av[i], "spread=", 7) == 0) {
			const int smt = av[i][1] == 'm';
			const char *w = rule_word(av[i] + (smt ? 4 : 7), smt ? smt_names : spread_names);

			if (!w) {
				slurm_error("cdsm: plugstack.conf: %s: not %s", escape(av[i], e),
					    smt ? "avoid or allow" : "balanced or pack");
				return -1;
			}
			*(smt ? &site_smt : &site_spread) = w;
			continue;
		}
		r = copy_arg(av[i], "socket=", socket_path, sizeof(socket_path));
		if (r == 0)
			r = copy_arg(av[i], "cdsmctl=", cdsmctl_path, sizeof(cdsmctl_path));
		if (r == 0)
			r = report_arg(av[i]);
		if (r < 0)
			return -1;
		if (r == 0) {
			slurm_error("cdsm: plugstack.conf: unknown argument '%s' (%s)", escape(av[i], e),
				    "default=, smt=, spread=, socket=, cdsmctl=, report_mode=, "
				    "report_timeout=");
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
 * One request to cdsmd, its reply line (of any size: a matrix) into @out, the report file @name.
 * 0, or -1: no complete reply, or cdsmd's answer is an error ({"ok":false,...}: a short line).
 */
static int cdsmd_to_fd(const char *request, int out, const char *name)
{
	char buf[8192], head[512], e[ESCAPED];
	size_t total = 0, kept = 0;
	int fd, done = 0;

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
	if (done && !(total < sizeof(head) && strstr(head, "\"ok\":false")))
		return 0;
	slurm_error("cdsm: %s: cdsmd's answer to %.*s: %s", name, (int)strcspn(request, "\n"),
		    request, fd < 0 ? "cannot connect" : kept ? escape(head, e) : "none");
	return -1;
}

/*
 * A report file NAME is written as ".NAME.RANDOM.part" and renamed to NAME when complete, or
 * removed: a user (or a script waiting for the report) never sees a file half written. The part
 * is created here, never opened if something is there (O_EXCL: a FIFO, a link or a file planted
 * under its name is refused, not followed or blocked on), under a name of 64 random bits no one
 * can plant in advance, and given report_mode explicitly, whatever the umask.
 */
struct report_file {
	char name[96];
	char part[128];
	int fd;
};

static int report_create(int dir, const char *prefix, const char *what, struct report_file *f)
{
	char e[ESCAPED];
	struct stat st;
	uint64_t r;

	snprintf(f->name, sizeof(f->name), "%s-%s", prefix, what);
	f->fd = -1;
	f->part[0] = '\0';
	for (int tries = 0; tries < 4 && f->fd < 0; tries++) {
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			break;
		snprintf(f->part, sizeof(f->part), ".%s.%016llx.part", f->name,
			 (unsigned long long)r);
		f->fd = openat(dir, f->part,
			       O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
		if (f->fd < 0 && errno != EEXIST)
			break;
	}
	if (f->fd >= 0 && fstat(f->fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    fchmod(f->fd, report_mode) == 0)
		return 0;
	slurm_error("cdsm: %s: cannot create %s in %s: %s", f->name, f->part,
		    escape(report_dir, e), strerror(errno));
	if (f->fd >= 0) {
		close(f->fd);
		unlinkat(dir, f->part, 0);
		f->fd = -1;
	}
	f->part[0] = '\0';
	return -1;
}

/* Renames @f to its name when @ok, or removes it; closes it. 0 when published. */
static int report_publish(int dir, struct report_file *f, int ok)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	if (!f->part[0])
		return -1;
	if (ok && renameat(dir, f->part, dir, f->name) == 0)
		return 0;
	unlinkat(dir, f->part, 0);
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
	char rules[64];
	uint32_t job = 0, step = 0;
	enum cdsm_mode mode = step_mode == MODE_UNSET ? site_mode : step_mode;
	const char *smt = *step_smt ? step_smt : site_smt;
	const char *spread = *step_spread ? step_spread : site_spread;
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
	/* Words of smt_names and spread_names only: nothing to escape. */
	snprintf(rules, sizeof(rules), "%s%s%s%s%s%s", *smt ? ",\"smt\":\"" : "", smt,
		 *smt ? "\"" : "", *spread ? ",\"spread\":\"" : "", spread, *spread ? "\"" : "");
	snprintf(request, sizeof(request),
		 "{\"cmd\":\"track\",\"cgroup\":\"%s\",\"name\":\"%s\"%s%s}\n", cgroup, name,
		 mode == MODE_DETECT ? ",\"mode\":\"detect\"" : "", rules);
	if (cdsmd_request(request, reply, sizeof(reply)) < 0) {
		slurm_error("cdsm: job %u: cdsmd at %s: %s; step not tracked", job, socket_path,
			    strerror(errno));
		return 0;
	}
	app_id = json_number(reply, "app_id");
	if (app_id < 0) {
		char e[ESCAPED];

		reply[strcspn(reply, "\n")] = '\0';
		slurm_error("cdsm: job %u: cdsmd did not track %s: %s", job, cgroup,
			    escape(reply, e));
		return 0;
	}
	slurm_verbose("cdsm: job %u: step cgroup %s is cdsm application %ld (%s)", job, cgroup,
		      app_id, mode_names[mode]);
	return 0;
}

static int open_report_dir(void);

/* The step's monitoring directory, DIR/cdsm-JOB.STEP-monitoring, into @path. */
static void monitoring_dir(uint32_t job, uint32_t step, char *path, size_t size)
{
	char label[48];

	step_label(job, step, label, sizeof(label));
	snprintf(path, size, "%s/cdsm-%s-monitoring", report_dir, label);
}

/*
 * --cdsm-mpi=monitor, in each task just before it runs the user's program (as the job's user):
 * the monitoring directory made (0700, the user's) and Open MPI's monitoring turned on through
 * the environment, so that every rank writes DIR/prof.RANK.prof at MPI_Finalize; a PML list in
 * OMPI_MCA_pml gets ",monitoring" (a list without it excludes the monitoring PML). A program
 * that is not Open MPI ignores the variables; the report then says that monitoring is missing.
 */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char path[PATH_MAX + 64], file[PATH_MAX + 80], pml[256], e[ESCAPED];
	enum cdsm_mode mode = step_mode == MODE_UNSET ? site_mode : step_mode;
	uint32_t job = 0, step = 0;
	int dir;

	(void)ac;
	(void)av;
	if (!spank_remote(sp) || !mpi_monitor || mode == MODE_OFF)
		return 0;
	if (!report_dir[0]) {
		slurm_error("cdsm: --cdsm-mpi=monitor needs --cdsm-report=DIR; no monitoring");
		return 0;
	}
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
		return 0;
	monitoring_dir(job, step, path, sizeof(path));
	dir = open_report_dir();
	if (dir >= 0)
		close(dir);
	if (dir < 0 || (mkdir(path, 0700) < 0 && errno != EEXIST)) {
		slurm_error("cdsm: job %u: cannot make %s: %s; no monitoring", job,
			    escape(path, e), strerror(errno));
		return 0;
	}
	snprintf(file, sizeof(file), "%s/prof", path);
	/* A PML list (OMPI_MCA_pml=ob1) must name monitoring too, or Open MPI never loads it. */
	if (spank_getenv(sp, "OMPI_MCA_pml", pml, sizeof(pml)) == ESPANK_SUCCESS && pml[0] &&
	    pml[0] != '^' && !strstr(pml, "monitoring") && strlen(pml) + 12 < sizeof(pml)) {
		strcat(pml, ",monitoring");
		spank_setenv(sp, "OMPI_MCA_pml", pml, 1);
	}
	if (spank_setenv(sp, "OMPI_MCA_pml_monitoring_enable", "2", 1) != ESPANK_SUCCESS ||
	    spank_setenv(sp, "OMPI_MCA_pml_monitoring_enable_output", "3", 1) != ESPANK_SUCCESS ||
	    spank_setenv(sp, "OMPI_MCA_pml_monitoring_filename", file, 1) != ESPANK_SUCCESS)
		slurm_error("cdsm: job %u: cannot set OMPI_MCA_pml_monitoring_*; no monitoring", job);
	return 0;
}

/* In a child about to exec: @from[i] becomes descriptor i (i < @n); the rest close on exec. */
static int place_fds(const int *from, int n)
{
	int high[8];

	for (int i = 0; i < n; i++) {
		high[i] = fcntl(from[i], F_DUPFD_CLOEXEC, 16);
		if (high[i] < 0)
			return -1;
	}
	for (int i = 0; i < n; i++) {
		if (dup2(high[i], i) < 0)
			return -1;
	}
	return 0;
}

/*
 * Runs cdsmctl with @args in the user's child process: the saved matrix @in on its standard
 * input (read from its start), its output into @out and @pictures (descriptors 3, 4...: it is
 * given /proc/self/fd/N, never a name in the report directory). What cdsmctl says on its
 * standard error when it fails goes to slurmd's log (its first 1 KiB, escaped), so that a missing
 * file has a reason there.
 */
static int run_cdsmctl(char *const args[], int in, int out, const int *pictures, int npictures)
{
	int status, err[2];
	char said[1024], e[ESCAPED];
	size_t len = 0;
	ssize_t n;
	pid_t child;

	if (pipe2(err, O_CLOEXEC) < 0)
		return -1;
	child = fork();
	if (child == 0) {
		int from[5] = { in, out, err[1] };

		for (int i = 0; i < npictures && i < 2; i++)
			from[3 + i] = pictures[i];
		if (place_fds(from, 3 + (npictures < 2 ? npictures : 2)) < 0 ||
		    lseek(STDIN_FILENO, 0, SEEK_SET) < 0)
			_exit(127);
		execv(cdsmctl_path, args);
		dprintf(STDERR_FILENO, "cannot run %s: %s\n", cdsmctl_path, strerror(errno));
		_exit(127);
	}
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
			    WTERMSIG(status), len ? ": " : "", escape(said, e));
	else
		slurm_error("cdsm: %s %s failed (status %d)%s%s", cdsmctl_path, args[1],
			    WIFEXITED(status) ? WEXITSTATUS(status) : -1, len ? ": " : "",
			    escape(said, e));
	return -1;
}

/*
 * The report directory, opened; made when missing, with report_mode and x where r is (0700),
 * set explicitly whatever the umask. One that exists keeps the mode its owner gave it.
 */
static int open_report_dir(void)
{
	int made = mkdir(report_dir, 0700) == 0, dir;

	if (!made && errno != EEXIST)
		return -1;
	dir = open(report_dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dir >= 0 && made && fchmod(dir, report_mode | (report_mode & 0444) >> 2) < 0) {
		close(dir);
		return -1;
	}
	return dir;
}

/* The report child's exit status: why the report is incomplete. */
enum { REPORT_OK, REPORT_NO_USER, REPORT_NO_DIR, REPORT_FAILED };

/*
 * This node's name in the report: the short hostname (up to its first dot, as slurmd takes its
 * NodeName by default), bytes other than letters, digits, '-' and '_' as '_'; "node" and the
 * node's index in the step (S_JOB_NODEID) when there is none.
 */
static void node_name(spank_t sp, char *name, size_t size)
{
	char host[256] = "";
	uint32_t id = 0;
	size_t n = 0;

	if (gethostname(host, sizeof(host) - 1) < 0)
		host[0] = '\0';
	for (const char *c = host; *c && *c != '.' && n + 1 < size; c++, n++) {
		int ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			 (*c >= '0' && *c <= '9') || *c == '-' || *c == '_';

		name[n] = ok ? *c : '_';
	}
	name[n] = '\0';
	if (n == 0) {
		spank_get_item(sp, S_JOB_NODEID, &id);
		snprintf(name, size, "node%u", id);
	}
}

/*
 * The report files' prefix: cdsm-J.S for a step on one node, cdsm-J.S-NODE (node_name()) for a
 * step on several nodes, whose reports go into one shared directory: each node's under names
 * of its own, none replacing another's.
 */
static void report_prefix(uint32_t job, uint32_t step, uint32_t nodes, const char *node,
			  char *prefix, size_t size)
{
	char label[48];

	step_label(job, step, label, sizeof(label));
	if (nodes > 1)
		snprintf(prefix, size, "cdsm-%s-%s", label, node);
	else
		snprintf(prefix, size, "cdsm-%s", label);
}

static int write_report(uid_t uid, gid_t gid, gid_t *gids, int ngids, uint32_t job,
			uint32_t step, uint32_t nodes, const char *node)
{
	char request[96], prefix[128];
	static const char *const what[] = { "matrix", "show", "tasks" };
	/* The step's whole run, not the aged matrix cdsmd maps by. */
	static const char *const extra[] = { ",\"view\":\"whole\"", "", "" };
	static const char *const file[] = { "matrix.json", "placements.json", "tasks.json" };
	char *csv_args[] = { "cdsmctl", "show", "--matrix", "-", "--format", "csv", NULL };
	char *pic_args[] = { "cdsmctl", "show", "--matrix", "-", "--png", "/proc/self/fd/3",
			     "--svg", "/proc/self/fd/4", NULL };
	struct report_file f, csv = { .fd = -1 }, pic[2] = { { .fd = -1 }, { .fd = -1 } };
	int dir, matrix = -1, null, ok, failed = 0;

	if (setgroups(ngids, gids) < 0 || setgid(gid) < 0 || setuid(uid) < 0 || getuid() != uid)
		return REPORT_NO_USER;
	dir = open_report_dir();
	if (dir < 0)
		return REPORT_NO_DIR;
	report_prefix(job, step, nodes, node, prefix, sizeof(prefix));
	/*
	 * First what cdsmd knows, as it answers (the ended application is released after
	 * mapping.release_ended_after_ms): the whole-run matrix, then placements, costs and migrations
	 * ("show"), and the tasks. Then, offline from the saved matrix, its CSV and heatmap.
	 */
	for (int i = 0; i < 3; i++) {
		if (report_create(dir, prefix, file[i], &f) < 0) {
			failed = 1;
			continue;
		}
		snprintf(request, sizeof(request), "{\"cmd\":\"%s\",\"app\":%ld%s}\n", what[i],
			 app_id, extra[i]);
		ok = cdsmd_to_fd(request, f.fd, f.name) == 0;
		if (i == 0 && ok)
			matrix = fcntl(f.fd, F_DUPFD_CLOEXEC, 0);
		failed |= report_publish(dir, &f, ok) < 0;
	}
	/* cdsmctl reads the saved matrix on its standard input, writes into the files made here. */
	if (matrix < 0) {
		close(dir);
		return REPORT_FAILED;
	}
	ok = report_create(dir, prefix, "matrix.csv", &csv) == 0 &&
	     run_cdsmctl(csv_args, matrix, csv.fd, NULL, 0) == 0;
	failed |= report_publish(dir, &csv, ok) < 0;
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	ok = null >= 0 && report_create(dir, prefix, "heatmap.png", &pic[0]) == 0 &&
	     report_create(dir, prefix, "heatmap.svg", &pic[1]) == 0;
	if (ok) {
		int fds[2] = { pic[0].fd, pic[1].fd };

		ok = run_cdsmctl(pic_args, matrix, null, fds, 2) == 0;
	}
	failed |= report_publish(dir, &pic[0], ok) < 0;
	failed |= report_publish(dir, &pic[1], ok) < 0;
	if (mpi_monitor) {
		/* The job's matrix: the monitoring files merged with this node's saved matrix. */
		char mon[PATH_MAX + 64], matrix_arg[320];
		char *job_args[] = { "cdsmctl", "job-matrix", "--monitoring", mon, "--node-matrix",
				     matrix_arg, "--format", "json", NULL };
		struct report_file jm = { .fd = -1 };

		monitoring_dir(job, step, mon, sizeof(mon));
		snprintf(matrix_arg, sizeof(matrix_arg), "%s=/proc/self/fd/0", node);
		ok = report_create(dir, prefix, "job-matrix.json", &jm) == 0 &&
		     run_cdsmctl(job_args, matrix, jm.fd, NULL, 0) == 0;
		failed |= report_publish(dir, &jm, ok) < 0;
	}
	close(matrix);
	close(dir);
	return failed ? REPORT_FAILED : REPORT_OK;
}

/*
 * Waits for the report child @child, report_timeout seconds at most, then kills its process group
 * (the child and its cdsmctl) and reaps it. The child is the job's user's, who may stop it
 * (SIGSTOP) or make it wait: slurmstepd, and so the step's end, waits no longer than that.
 * 0 when it ended, 1 when it was killed, -1 on error.
 */
static int reap_report(pid_t child, int *status)
{
	const struct timespec nap = { .tv_nsec = 50 * 1000 * 1000 };
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pid_t r = waitpid(child, status, WNOHANG);

		if (r == child)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000L + (now.tv_nsec - start.tv_nsec) / 1000000 >=
		    report_timeout * 1000L)
			break;
		nanosleep(&nap, NULL);
	}
	/* Not reaped yet: its pid, and so its process group's id, is not reused before. */
	kill(-child, SIGKILL);
	kill(child, SIGKILL);
	while (waitpid(child, status, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	return 1;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	static const char *const why[] = { "", "cannot take the job's user",
					   "cannot make or open the directory",
					   "cdsmctl or cdsmd failed" };
	char e[ESCAPED], node[64];
	uid_t uid;
	gid_t gid, *gids = NULL;
	int ngids = 0, status, killed, code;
	uint32_t job = 0, step = 0, nodes = 1;
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
	/* The step's nodes (slurmstepd's step, not the job's allocation). */
	if (spank_get_item(sp, S_JOB_NNODES, &nodes) != ESPANK_SUCCESS)
		nodes = 1;
	node_name(sp, node, sizeof(node));
	/* The child leads a process group of its own, which its cdsmctl joins: killed together. */
	child = fork();
	if (child == 0) {
		setpgid(0, 0);
		_exit(write_report(uid, gid, gids, ngids, job, step, nodes, node));
	}
	if (child > 0)
		setpgid(child, child);
	killed = child < 0 ? -1 : reap_report(child, &status);
	if (killed < 0) {
		slurm_error("cdsm: job %u: no report: %s", job, strerror(errno));
		return 0;
	}
	if (killed) {
		slurm_error("cdsm: job %u: report to %s killed after report_timeout (%d s): stopped or stuck",
			    job, escape(report_dir, e), report_timeout);
		return 0;
	}
	code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	if (code != REPORT_OK)
		slurm_error("cdsm: job %u: report to %s incomplete: %s", job, escape(report_dir, e),
			    code > 0 && code <= REPORT_FAILED ? why[code] : "killed");
	return 0;
}
