// SPDX-License-Identifier: GPL-2.0
// cdsm-query: the kernel-module tests' view of /dev/cdsm (include/uapi/linux/cdsm.h).
//
//   cdsm-query exec [--app-file F] -- CMD...   run CMD tracked from its first instruction
//   cdsm-query track PID | track-cgroup PATH   track, print the application id
//   cdsm-query untrack|release|age|reset APP
//   cdsm-query list | tasks APP | matrix APP | counters | params
//   cdsm-query set NAME=VALUE...               change run-time parameters
//   cdsm-query check APP TRUTH [--min R] [--within S]
//       each truth task's largest partner in the matrix must be a true partner for a share
//       >= R (default 0.95) of the truth's tasks; with --within, retry until S seconds passed
//   cdsm-query misuse [--unprivileged]         ioctl misuse must fail cleanly
//
// Exit status: 0 ok, 1 check failed or error, 2 usage.
#include <linux/cdsm.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

struct Failure : std::runtime_error {
	using std::runtime_error::runtime_error;
};

int open_dev()
{
	int fd = open("/dev/" CDSM_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		throw Failure(std::string("open /dev/cdsm: ") + strerror(errno));
	return fd;
}

template <typename T> T sized()
{
	T t{};
	t.size = sizeof(T);
	return t;
}

void xioctl(int fd, unsigned long cmd, void *arg, const char *what)
{
	if (ioctl(fd, cmd, arg) < 0)
		throw Failure(std::string(what) + ": " + strerror(errno));
}

uint32_t parse_u32(const std::string &s)
{
	size_t end = 0;
	unsigned long v = std::stoul(s, &end, 0);
	if (end != s.size() || v > UINT32_MAX)
		throw std::invalid_argument("not a number: " + s);
	return static_cast<uint32_t>(v);
}

std::vector<cdsm_task_info> get_tasks(int fd, uint32_t app)
{
	std::vector<cdsm_task_info> tasks(64);
	for (;;) {
		auto a = sized<cdsm_get_tasks>();
		a.app_id = app;
		a.capacity = static_cast<uint32_t>(tasks.size());
		a.tasks_ptr = reinterpret_cast<uintptr_t>(tasks.data());
		xioctl(fd, CDSM_IOC_GET_TASKS, &a, "CDSM_IOC_GET_TASKS");
		if (a.count <= tasks.size()) {
			tasks.resize(a.count);
			return tasks;
		}
		tasks.resize(a.count);
	}
}

struct Matrix {
	uint32_t dim = 0;
	std::vector<uint32_t> cells;
	uint64_t events = 0;
	uint32_t at(uint32_t i, uint32_t j) const { return cells[size_t(i) * dim + j]; }
};

Matrix get_matrix(int fd, uint32_t app)
{
	Matrix m;
	uint32_t capacity = 64;
	for (;;) {
		m.cells.assign(size_t(capacity) * capacity, 0);
		auto a = sized<cdsm_get_matrix>();
		a.app_id = app;
		a.capacity = capacity;
		a.cells_ptr = reinterpret_cast<uintptr_t>(m.cells.data());
		if (ioctl(fd, CDSM_IOC_GET_MATRIX, &a) == 0) {
			m.dim = a.dim;
			m.events = a.events;
			m.cells.resize(size_t(m.dim) * m.dim);
			return m;
		}
		if (errno != ENOSPC)
			throw Failure(std::string("CDSM_IOC_GET_MATRIX: ") + strerror(errno));
		capacity = a.dim;
	}
}

// Truth file: one line per task, "TID PARTNER_TID...".
std::map<pid_t, std::set<pid_t>> read_truth(const std::string &file)
{
	std::ifstream in(file);
	if (!in)
		throw Failure("cannot read truth file " + file);
	std::map<pid_t, std::set<pid_t>> truth;
	std::string line;
	while (std::getline(in, line)) {
		std::istringstream ls(line);
		pid_t tid, partner;
		if (!(ls >> tid))
			continue;
		auto &partners = truth[tid];
		while (ls >> partner)
			partners.insert(partner);
	}
	if (truth.empty())
		throw Failure("truth file " + file + " is empty");
	return truth;
}

// Share of truth tasks whose largest partner is a true partner; prints the misses.
double check_once(int fd, uint32_t app, const std::map<pid_t, std::set<pid_t>> &truth,
		  bool verbose)
{
	auto tasks = get_tasks(fd, app);
	Matrix m = get_matrix(fd, app);
	std::map<pid_t, uint32_t> index;
	for (const auto &t : tasks)
		index.emplace(t.tid, t.index);
	size_t good = 0;
	for (const auto &[tid, partners] : truth) {
		auto it = index.find(tid);
		if (it == index.end() || it->second >= m.dim) {
			if (verbose)
				printf("  task %d: not in the application\n", tid);
			continue;
		}
		uint32_t row = it->second, best = 0, best_j = UINT32_MAX;
		for (uint32_t j = 0; j < m.dim; j++)
			if (j != row && m.at(row, j) > best)
				best = m.at(row, j), best_j = j;
		bool ok = best_j != UINT32_MAX && best_j < tasks.size() &&
			  partners.count(tasks[best_j].tid);
		good += ok;
		if (verbose && !ok)
			printf("  task %d (row %u): largest partner %d with %u events, truth says %d\n",
			       tid, row, best_j == UINT32_MAX ? -1 : tasks[best_j].tid, best,
			       partners.empty() ? -1 : *partners.begin());
	}
	if (verbose)
		printf("check: %zu of %zu tasks found their partner, %llu events, %zu tasks\n", good,
		       truth.size(), (unsigned long long)m.events, tasks.size());
	return double(good) / double(truth.size());
}

int cmd_check(int fd, uint32_t app, const std::string &file, double min, double within)
{
	auto start = std::chrono::steady_clock::now();
	for (;;) {
		auto truth = read_truth(file);
		double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
		double share = check_once(fd, app, truth, false);
		if (share >= min || elapsed >= within) {
			check_once(fd, app, truth, true);
			printf("check: %.1f %% >= %.1f %%? %s after %.2f s\n", share * 100, min * 100,
			       share >= min ? "yes" : "NO", elapsed);
			return share >= min ? 0 : 1;
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
	}
}

uint32_t track(int fd, uint32_t kind, pid_t pid, const std::string &path)
{
	auto a = sized<cdsm_track>();
	a.kind = kind;
	a.pid = pid;
	a.path_len = static_cast<uint32_t>(path.size());
	a.path_ptr = reinterpret_cast<uintptr_t>(path.data());
	xioctl(fd, CDSM_IOC_TRACK, &a, "CDSM_IOC_TRACK");
	return a.app_id;
}

// Forks; the child waits until the parent tracked it, then runs the command.
int cmd_exec(int fd, const std::string &app_file, char **argv)
{
	int go[2];
	if (pipe2(go, O_CLOEXEC))
		throw Failure("pipe");
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(126);
		execvp(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	close(go[0]);
	uint32_t app = track(fd, CDSM_TRACK_PID, pid, "");
	if (!app_file.empty()) {
		std::ofstream(app_file) << app << "\n";
	}
	fprintf(stderr, "cdsm-query: pid %d tracked as application %u\n", pid, app);
	if (write(go[1], "g", 1) != 1)
		throw Failure("pipe write");
	close(go[1]);
	int status;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void print_counters(int fd)
{
	auto c = sized<cdsm_counters>();
	xioctl(fd, CDSM_IOC_GET_COUNTERS, &c, "CDSM_IOC_GET_COUNTERS");
	printf("status %u numa_normal %d rearm_available %d\nfaults %llu\ntracked_faults %llu\n"
	       "comm_events %llu\nrearm_armed %llu\nrearm_taken %llu\ndropped %llu\nevictions %llu\n"
	       "apps %llu\ntasks %llu\nkmem_bytes %llu\nalloc_failures %llu\nevents_lost %llu\n"
	       "migrated %llu\n",
	       c.status, !!(c.status & CDSM_STATUS_NUMA_BALANCING_NORMAL),
	       !!(c.status & CDSM_STATUS_REARM_AVAILABLE), (unsigned long long)c.faults,
	       (unsigned long long)c.tracked_faults, (unsigned long long)c.comm_events,
	       (unsigned long long)c.rearm_armed, (unsigned long long)c.rearm_taken,
	       (unsigned long long)c.dropped, (unsigned long long)c.evictions,
	       (unsigned long long)c.apps, (unsigned long long)c.tasks,
	       (unsigned long long)c.kmem_bytes, (unsigned long long)c.alloc_failures,
	       (unsigned long long)c.events_lost, (unsigned long long)c.migrated);
}

#define PARAMS(X)                                                                         \
	X(block_shift) X(nr_sharers) X(hash_entries_log2) X(rearm_rate_bp) X(rearm_period_ms) \
	X(max_tasks) X(auto_threads) X(retention_s) X(age_period_ms)

void print_params(int fd)
{
	auto p = sized<cdsm_params>();
	xioctl(fd, CDSM_IOC_GET_PARAMS, &p, "CDSM_IOC_GET_PARAMS");
#define PRINT(f) printf(#f " %u\n", p.f);
	PARAMS(PRINT)
#undef PRINT
}

void set_params(int fd, int argc, char **argv)
{
	auto p = sized<cdsm_params>();
	xioctl(fd, CDSM_IOC_GET_PARAMS, &p, "CDSM_IOC_GET_PARAMS");
	for (int i = 0; i < argc; i++) {
		std::string a = argv[i];
		auto eq = a.find('=');
		if (eq == std::string::npos)
			throw std::invalid_argument("expected NAME=VALUE, got " + a);
		std::string name = a.substr(0, eq);
		uint32_t v = parse_u32(a.substr(eq + 1));
		bool known = false;
#define SET(f)                   \
	if (name == #f) {        \
		p.f = v;         \
		known = true;    \
	}
		PARAMS(SET)
#undef SET
		if (!known)
			throw std::invalid_argument("unknown parameter " + name);
	}
	xioctl(fd, CDSM_IOC_SET_PARAMS, &p, "CDSM_IOC_SET_PARAMS");
}

// --- misuse: every bad call must fail with the documented error -----------------------------

int misuse_failures = 0;

void expect_errno(const char *what, int ret, int want)
{
	int got = ret < 0 ? errno : 0;
	bool ok = ret < 0 && got == want;
	printf("misuse: %-52s -> %s (want %s) %s\n", what, ret < 0 ? strerror(got) : "success",
	       strerror(want), ok ? "ok" : "FAIL");
	misuse_failures += !ok;
}

void expect_ok(const char *what, int ret)
{
	printf("misuse: %-52s -> %s %s\n", what, ret < 0 ? strerror(errno) : "success",
	       ret >= 0 ? "ok" : "FAIL");
	misuse_failures += ret < 0;
}

int cmd_misuse(bool unprivileged)
{
	int fd = open_dev();
	void *bad = reinterpret_cast<void *>(8); // never mapped
	// A page whose end borders an unmapped page: a struct straddling it faults.
	auto *guard = static_cast<char *>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	munmap(guard + 4096, 4096);

	expect_ok("ABI version", ioctl(fd, CDSM_IOC_ABI_VERSION) == CDSM_ABI_VERSION ? 0 : -1);
	expect_errno("unknown command number", ioctl(fd, _IO(CDSM_IOC_MAGIC, 0x7f)), ENOTTY);
	expect_errno("other ioctl type", ioctl(fd, _IO('T', 0x01)), ENOTTY);
	expect_errno("NULL argument", ioctl(fd, CDSM_IOC_GET_COUNTERS, nullptr), EFAULT);
	expect_errno("unmapped argument", ioctl(fd, CDSM_IOC_GET_COUNTERS, bad), EFAULT);
	{
		auto *c = reinterpret_cast<cdsm_counters *>(guard + 4096 - 8);
		c->size = sizeof(cdsm_counters);
		expect_errno("argument straddling an unmapped page", ioctl(fd, CDSM_IOC_GET_COUNTERS, c),
			     EFAULT);
	}
	{
		auto c = sized<cdsm_counters>();
		c.size = 4;
		expect_errno("size too small", ioctl(fd, CDSM_IOC_GET_COUNTERS, &c), EINVAL);
		c.size = 0;
		expect_errno("size zero", ioctl(fd, CDSM_IOC_GET_COUNTERS, &c), EINVAL);
	}
	{
		struct {
			cdsm_params p;
			uint64_t extra;
		} big{};
		big.p.size = sizeof(big);
		big.extra = 1;
		expect_errno("larger size with non-zero tail", ioctl(fd, CDSM_IOC_GET_PARAMS, &big), E2BIG);
		big.extra = 0;
		expect_ok("larger size with zero tail", ioctl(fd, CDSM_IOC_GET_PARAMS, &big));
		// Nothing beyond the known struct is written back.
		expect_ok("tail left untouched", big.extra == 0 ? 0 : -1);
	}
	{
		auto a = sized<cdsm_app_op>();
		a.app_id = 0xdeadbeef;
		int want = unprivileged ? EPERM : ENOENT;
		expect_errno("age unknown application", ioctl(fd, CDSM_IOC_AGE, &a), want);
		expect_errno("release unknown application", ioctl(fd, CDSM_IOC_RELEASE, &a), want);
		auto m = sized<cdsm_get_matrix>();
		m.app_id = 0xdeadbeef;
		expect_errno("matrix of unknown application", ioctl(fd, CDSM_IOC_GET_MATRIX, &m), ENOENT);
		auto t = sized<cdsm_get_tasks>();
		t.app_id = 0xdeadbeef;
		expect_errno("tasks of unknown application", ioctl(fd, CDSM_IOC_GET_TASKS, &t), ENOENT);
	}
	{
		auto l = sized<cdsm_list_apps>();
		l.capacity = 1000;
		l.apps_ptr = reinterpret_cast<uintptr_t>(bad);
		// Only fails when there is something to copy: the test tracks itself first (root).
		if (!unprivileged) {
			uint32_t app = track(fd, CDSM_TRACK_PID, getpid(), "");
			expect_errno("list into an unmapped buffer", ioctl(fd, CDSM_IOC_LIST_APPS, &l), EFAULT);
			auto m = sized<cdsm_get_matrix>();
			m.app_id = app;
			m.capacity = 4096;
			m.cells_ptr = reinterpret_cast<uintptr_t>(bad);
			expect_errno("matrix into an unmapped buffer", ioctl(fd, CDSM_IOC_GET_MATRIX, &m),
				     EFAULT);
			m.capacity = 0;
			expect_errno("matrix into a too small buffer", ioctl(fd, CDSM_IOC_GET_MATRIX, &m),
				     ENOSPC);
			expect_ok("dim reported when too small", m.dim >= 1 ? 0 : -1);
			auto t = sized<cdsm_get_tasks>();
			t.app_id = app;
			t.capacity = 100;
			t.tasks_ptr = reinterpret_cast<uintptr_t>(bad);
			expect_errno("tasks into an unmapped buffer", ioctl(fd, CDSM_IOC_GET_TASKS, &t), EFAULT);
			auto tr = sized<cdsm_track>();
			tr.kind = CDSM_TRACK_PID;
			tr.pid = getpid();
			expect_errno("track a tracked pid", ioctl(fd, CDSM_IOC_TRACK, &tr), EEXIST);
			auto a = sized<cdsm_app_op>();
			a.app_id = app;
			expect_ok("release own application", ioctl(fd, CDSM_IOC_RELEASE, &a));
			expect_errno("release it twice", ioctl(fd, CDSM_IOC_RELEASE, &a), ENOENT);
		}
	}
	{
		auto tr = sized<cdsm_track>();
		tr.kind = 99;
		int want = unprivileged ? EPERM : EINVAL;
		expect_errno("track unknown kind", ioctl(fd, CDSM_IOC_TRACK, &tr), want);
		tr.kind = CDSM_TRACK_PID;
		tr.pid = -5;
		expect_errno("track negative pid", ioctl(fd, CDSM_IOC_TRACK, &tr), want);
		tr.pid = 0x3fffffff;
		expect_errno("track nonexistent pid", ioctl(fd, CDSM_IOC_TRACK, &tr),
			     unprivileged ? EPERM : ENOENT);
		tr.kind = CDSM_TRACK_CGROUP;
		tr.path_len = 5;
		tr.path_ptr = reinterpret_cast<uintptr_t>(bad);
		expect_errno("track cgroup, unmapped path", ioctl(fd, CDSM_IOC_TRACK, &tr),
			     unprivileged ? EPERM : EFAULT);
		std::string nope = "/no/such/cgroup";
		tr.path_len = static_cast<uint32_t>(nope.size());
		tr.path_ptr = reinterpret_cast<uintptr_t>(nope.data());
		expect_errno("track nonexistent cgroup", ioctl(fd, CDSM_IOC_TRACK, &tr),
			     unprivileged ? EPERM : ENOENT);
		tr.path_len = 1 << 20;
		expect_errno("track cgroup, huge path length", ioctl(fd, CDSM_IOC_TRACK, &tr),
			     unprivileged ? EPERM : EINVAL);
	}
	{
		auto p = sized<cdsm_params>();
		ioctl(fd, CDSM_IOC_GET_PARAMS, &p);
		auto q = p;
		q.block_shift = 99;
		expect_errno("set block_shift=99", ioctl(fd, CDSM_IOC_SET_PARAMS, &q),
			     unprivileged ? EPERM : EINVAL);
		q = p;
		q.nr_sharers = p.nr_sharers + 1;
		expect_errno("change a load-time parameter", ioctl(fd, CDSM_IOC_SET_PARAMS, &q),
			     unprivileged ? EPERM : EINVAL);
		q = p;
		q.rearm_period_ms = 0;
		expect_errno("set rearm_period_ms=0", ioctl(fd, CDSM_IOC_SET_PARAMS, &q),
			     unprivileged ? EPERM : EINVAL);
		if (unprivileged)
			expect_errno("set valid parameters", ioctl(fd, CDSM_IOC_SET_PARAMS, &p), EPERM);
		else
			expect_ok("set valid parameters", ioctl(fd, CDSM_IOC_SET_PARAMS, &p));
	}
	printf("misuse: %d failure(s)\n", misuse_failures);
	return misuse_failures ? 1 : 0;
}

int usage()
{
	fprintf(stderr, "usage: see the header of tests/kmod/cdsm_query.cpp\n");
	return 2;
}

int run(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	std::string cmd = argv[1];
	if (cmd == "misuse")
		return cmd_misuse(argc > 2 && std::string(argv[2]) == "--unprivileged");
	int fd = open_dev();
	if (cmd == "exec") {
		std::string app_file;
		int i = 2;
		if (i + 1 < argc && std::string(argv[i]) == "--app-file")
			app_file = argv[i + 1], i += 2;
		if (i >= argc || std::string(argv[i]) != "--" || i + 1 >= argc)
			return usage();
		return cmd_exec(fd, app_file, argv + i + 1);
	}
	if (cmd == "track" && argc == 3) {
		printf("%u\n", track(fd, CDSM_TRACK_PID, static_cast<pid_t>(parse_u32(argv[2])), ""));
		return 0;
	}
	if (cmd == "track-cgroup" && argc == 3) {
		printf("%u\n", track(fd, CDSM_TRACK_CGROUP, 0, argv[2]));
		return 0;
	}
	if ((cmd == "untrack" || cmd == "release" || cmd == "age" || cmd == "reset") && argc == 3) {
		auto a = sized<cdsm_app_op>();
		a.app_id = parse_u32(argv[2]);
		unsigned long ioc = cmd == "untrack"   ? CDSM_IOC_UNTRACK
				    : cmd == "release" ? CDSM_IOC_RELEASE
				    : cmd == "age"     ? CDSM_IOC_AGE
						       : CDSM_IOC_RESET;
		xioctl(fd, ioc, &a, cmd.c_str());
		return 0;
	}
	if (cmd == "list") {
		std::vector<cdsm_app_info> apps(256);
		auto l = sized<cdsm_list_apps>();
		l.capacity = static_cast<uint32_t>(apps.size());
		l.apps_ptr = reinterpret_cast<uintptr_t>(apps.data());
		xioctl(fd, CDSM_IOC_LIST_APPS, &l, "CDSM_IOC_LIST_APPS");
		for (uint32_t i = 0; i < l.count && i < apps.size(); i++) {
			const auto &a = apps[i];
			printf("app %u kind %u flags %#x tasks %u live %u dim %u root %d uid %u events %llu "
			       "rearmed %llu kmem %llu comm %.16s\n",
			       a.app_id, a.kind, a.flags, a.nr_tasks, a.nr_live_tasks, a.matrix_dim,
			       a.root_pid, a.uid, (unsigned long long)a.events,
			       (unsigned long long)a.rearm_pages, (unsigned long long)a.kmem_bytes,
			       a.comm);
		}
		return 0;
	}
	if (cmd == "tasks" && argc == 3) {
		for (const auto &t : get_tasks(fd, parse_u32(argv[2])))
			printf("%u tid %d tgid %d flags %#x comm %.16s\n", t.index, t.tid, t.tgid, t.flags,
			       t.comm);
		return 0;
	}
	if (cmd == "matrix" && argc == 3) {
		Matrix m = get_matrix(fd, parse_u32(argv[2]));
		for (uint32_t i = 0; i < m.dim; i++) {
			for (uint32_t j = 0; j < m.dim; j++)
				printf("%s%u", j ? " " : "", m.at(i, j));
			printf("\n");
		}
		return 0;
	}
	if (cmd == "counters") {
		print_counters(fd);
		return 0;
	}
	if (cmd == "params") {
		print_params(fd);
		return 0;
	}
	if (cmd == "set" && argc > 2) {
		set_params(fd, argc - 2, argv + 2);
		return 0;
	}
	if (cmd == "check" && argc >= 4) {
		double min = 0.95, within = 0;
		for (int i = 4; i + 1 < argc; i += 2) {
			std::string o = argv[i];
			if (o == "--min")
				min = std::stod(argv[i + 1]);
			else if (o == "--within")
				within = std::stod(argv[i + 1]);
			else
				return usage();
		}
		return cmd_check(fd, parse_u32(argv[2]), argv[3], min, within);
	}
	return usage();
}

} // namespace

int main(int argc, char **argv)
{
	try {
		return run(argc, argv);
	} catch (const std::invalid_argument &e) {
		fprintf(stderr, "cdsm-query: %s\n", e.what());
		return 2;
	} catch (const std::exception &e) {
		fprintf(stderr, "cdsm-query: %s\n", e.what());
		return 1;
	}
}
