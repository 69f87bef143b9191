// SPDX-License-Identifier: GPL-2.0
/*
 * placement_bench - what busy tasks lose or win by where they are pinned
 *
 * Forks one process per task, pins task i to the i-th CPU of --place with
 * sched_setaffinity() and, once every task is pinned and its memory is
 * ready, releases them all at once to do a fixed amount of work:
 *
 *   compute  8 independent chains of dependent FP multiply-adds
 *            (x = x * a + b), latency-bound: they leave most of the FP
 *            pipes, which SMT siblings share, to a sibling.
 *   dense    24 such chains: they keep the FP pipes nearly busy alone.
 *   cache    a random pointer chase through a private buffer of --kib KiB
 *            (one node per cache line, a single cycle): sized to fit the
 *            per-core L2 once but not twice, it measures what an SMT
 *            sibling costs in cache capacity.
 *   pairs    tasks 2k and 2k+1 are partners (communicating ranks): each
 *            round both do --round-work steps of the compute chains, write
 *            a --msg byte message into their outbox in a MAP_SHARED buffer
 *            made before fork(), publish the round number, wait for the
 *            partner's and read (and check) the partner's message. Cache
 *            lines ping-pong between the partners' caches: cheap on SMT
 *            siblings, dearer across cores, dearest across packages.
 *
 * Each task times itself from the common start to the end of its work; the
 * parent prints one line per run with the largest of those times, the one a
 * bulk-synchronous program waits for.  Every task's result is verified (the
 * chase must close its cycle with the known index sum, each message word
 * must be the expected one, the chains must stay finite, tasks doing the
 * same work must agree) and printed, so that no work can be optimised away;
 * the exit status is not 0 when a check failed.
 *
 *   placement_bench --work compute|dense|cache|pairs --place 0,2,4,6
 *                   [--iters N] [--kib K] [--msg BYTES] [--round-work N]
 *                   [--label TEXT] [--timeout SECONDS]
 *
 * A CPU may appear more than once in --place (tasks time-sharing one CPU).
 * --iters counts multiply-add steps per chain (compute, dense), chase steps
 * (cache, rounded up to whole turns of the cycle) or rounds (pairs).
 *
 * Build (static, no library beyond libc):
 *   gcc -O2 -static -Wall -Wextra -o placement_bench placement_bench.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_TASKS	256
#define LINE		64
#define __aligned(x)	__attribute__((aligned(x)))
#define CHAINS		24	/* doubles: fp_dense's chains */

enum work { WORK_COMPUTE, WORK_DENSE, WORK_CACHE, WORK_PAIRS };

static const char *const work_names[] = { "compute", "dense", "cache",
					   "pairs" };

/* What a task hands back to the parent, one cache line each. */
struct task_result {
	double ms;		/* wall time from the common start to the end */
	uint64_t checksum;	/* what the work computed */
	int ok;			/* 1: the task's own checks passed */
	int cpu;		/* sched_getcpu() at the end */
} __aligned(LINE);

/* Shared by the parent and all tasks (MAP_SHARED, made before fork). */
struct control {
	_Atomic int ready __aligned(LINE);	/* tasks set up */
	_Atomic int failed;		/* tasks whose set-up failed */
	_Atomic int go __aligned(LINE);	/* 1: start, -1: abort */
	struct task_result res[MAX_TASKS];
};

/*
 * A task's outbox in a pair's shared buffer: the last round it published,
 * alone on its cache line, then two message buffers used in turn (double
 * buffering: the partner reads round r's while round r + 1's is written).
 */
struct mailbox {
	_Atomic uint64_t seq __aligned(LINE);
	uint64_t data[] __aligned(LINE);
};

struct params {
	enum work work;
	int ntasks;
	int cpus[MAX_TASKS];
	uint64_t iters;
	size_t kib;		/* cache: buffer size */
	size_t msg;		/* pairs: message bytes, a multiple of LINE */
	uint64_t round_work;	/* pairs: compute steps per chain and round */
	const char *label;
	unsigned int timeout;
};

static pid_t pids[MAX_TASKS];
static int npids;
static volatile sig_atomic_t timed_out;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* SIGALRM in the parent: a task hung (or took far too long); end them. */
static void on_alarm(int sig)
{
	int i;

	if (sig == SIGALRM)
		timed_out = 1;
	for (i = 0; i < npids; i++)
		kill(pids[i], SIGKILL);
}

typedef double v2d __attribute__((vector_size(16)));

/*
 * Independent chains of x = x * a + b, each step depending on the one
 * before, two doubles to an SSE2 register; x tends to b / (1 - a) = 1 and
 * never gets near a denormal.  A multiply and an add take 6-8 cycles on
 * today's cores, so
 *   fp_light  4 registers (8 chains): keeps the FP pipes about a quarter
 *             busy; a sibling's chains fit beside them (SMT's good case);
 *   fp_dense 12 registers (24 chains): keeps them nearly busy, as a tuned
 *             dense kernel does; a sibling can only take a share.
 * The chains are named variables so that they stay in registers.
 */
static void fp_light(double *x, uint64_t steps)
{
	const v2d a = { 0.9999999, 0.9999999 }, b = { 1e-7, 1e-7 };
	v2d c0, c1, c2, c3;
	uint64_t s;

	memcpy(&c0, x + 0, 16);
	memcpy(&c1, x + 2, 16);
	memcpy(&c2, x + 4, 16);
	memcpy(&c3, x + 6, 16);
	for (s = 0; s < steps; s++) {
		c0 = c0 * a + b;
		c1 = c1 * a + b;
		c2 = c2 * a + b;
		c3 = c3 * a + b;
	}
	memcpy(x + 0, &c0, 16);
	memcpy(x + 2, &c1, 16);
	memcpy(x + 4, &c2, 16);
	memcpy(x + 6, &c3, 16);
}

static void fp_dense(double *x, uint64_t steps)
{
	const v2d a = { 0.9999999, 0.9999999 }, b = { 1e-7, 1e-7 };
	v2d c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11;
	uint64_t s;

	memcpy(&c0, x + 0, 16);
	memcpy(&c1, x + 2, 16);
	memcpy(&c2, x + 4, 16);
	memcpy(&c3, x + 6, 16);
	memcpy(&c4, x + 8, 16);
	memcpy(&c5, x + 10, 16);
	memcpy(&c6, x + 12, 16);
	memcpy(&c7, x + 14, 16);
	memcpy(&c8, x + 16, 16);
	memcpy(&c9, x + 18, 16);
	memcpy(&c10, x + 20, 16);
	memcpy(&c11, x + 22, 16);
	for (s = 0; s < steps; s++) {
		c0 = c0 * a + b;
		c1 = c1 * a + b;
		c2 = c2 * a + b;
		c3 = c3 * a + b;
		c4 = c4 * a + b;
		c5 = c5 * a + b;
		c6 = c6 * a + b;
		c7 = c7 * a + b;
		c8 = c8 * a + b;
		c9 = c9 * a + b;
		c10 = c10 * a + b;
		c11 = c11 * a + b;
	}
	memcpy(x + 0, &c0, 16);
	memcpy(x + 2, &c1, 16);
	memcpy(x + 4, &c2, 16);
	memcpy(x + 6, &c3, 16);
	memcpy(x + 8, &c4, 16);
	memcpy(x + 10, &c5, 16);
	memcpy(x + 12, &c6, 16);
	memcpy(x + 14, &c7, 16);
	memcpy(x + 16, &c8, 16);
	memcpy(x + 18, &c9, 16);
	memcpy(x + 20, &c10, 16);
	memcpy(x + 22, &c11, 16);
}

static void fp_init(double *x)
{
	int j;

	for (j = 0; j < CHAINS; j++)
		x[j] = j + 2;
}

/* The chains' sum, as bits for the checksum; 0 when one went wrong. */
static uint64_t fp_sum(const double *x, int *ok)
{
	double sum = 0;
	uint64_t bits;
	int j;

	for (j = 0; j < CHAINS; j++) {
		if (!isfinite(x[j]) || x[j] <= 0 || x[j] > CHAINS + 2)
			*ok = 0;
		sum += x[j];
	}
	memcpy(&bits, &sum, sizeof(bits));
	return bits;
}

static int run_compute(const struct params *p, struct task_result *res)
{
	double x[CHAINS];

	fp_init(x);
	if (p->work == WORK_DENSE)
		fp_dense(x, p->iters);
	else
		fp_light(x, p->iters);
	res->checksum = fp_sum(x, &res->ok);
	return 0;
}

/* One node of the chase per cache line. */
struct node {
	uint64_t next;
	uint64_t pad[LINE / 8 - 1];
};

/* xorshift64*: the same sequence in every task (a fixed seed). */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

/*
 * Sattolo's shuffle: next[] becomes a single cycle through all n nodes in a
 * random order, which the prefetchers cannot follow.
 */
static struct node *chase_setup(size_t n)
{
	uint64_t seed = 0x9e3779b97f4a7c15ULL, t;
	struct node *nodes;
	size_t i, j;

	nodes = mmap(NULL, n * sizeof(*nodes), PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (nodes == MAP_FAILED)
		return NULL;
	for (i = 0; i < n; i++)
		nodes[i].next = i;
	for (i = n - 1; i > 0; i--) {
		j = rnd(&seed) % i;
		t = nodes[i].next;
		nodes[i].next = nodes[j].next;
		nodes[j].next = t;
	}
	return nodes;
}

/*
 * Follows the cycle for whole turns: it must end on node 0 again, having
 * added every index once per turn.
 */
static int run_cache(const struct params *p, const struct node *nodes,
		     struct task_result *res)
{
	size_t n = p->kib * 1024 / sizeof(struct node);
	uint64_t turns = (p->iters + n - 1) / n, steps = turns * n, s;
	uint64_t i = 0, sum = 0;

	for (s = 0; s < steps; s++) {
		i = nodes[i].next;
		sum += i;
	}
	res->checksum = sum;
	res->ok = i == 0 && sum == turns * (n * (n - 1) / 2);
	return 0;
}

/* Word w of round r's message from task t: cheap, and checkable. */
static inline uint64_t msg_word(uint64_t r, uint64_t w, uint64_t t)
{
	return (r << 32) ^ (w << 8) ^ t;
}

static size_t mailbox_size(const struct params *p)
{
	return sizeof(struct mailbox) + 2 * p->msg;
}

static struct mailbox *mailbox_of(void *pairs, const struct params *p,
				  int task)
{
	return (struct mailbox *)((char *)pairs + task * mailbox_size(p));
}

static int run_pairs(const struct params *p, void *pairs, int self,
		     struct task_result *res)
{
	int peer_id = self ^ 1;
	struct mailbox *me = mailbox_of(pairs, p, self);
	struct mailbox *peer = mailbox_of(pairs, p, peer_id);
	size_t words = p->msg / 8, w;
	uint64_t r, sum = 0, bad = 0, v;
	uint64_t *out, *in;
	double x[CHAINS];

	fp_init(x);
	for (r = 1; r <= p->iters; r++) {
		fp_light(x, p->round_work);

		out = me->data + (r & 1) * words;
		for (w = 0; w < words; w++)
			out[w] = msg_word(r, w, self);
		atomic_store_explicit(&me->seq, r, memory_order_release);

		while (atomic_load_explicit(&peer->seq,
					    memory_order_acquire) < r)
			cpu_relax();
		in = peer->data + (r & 1) * words;
		for (w = 0; w < words; w++) {
			v = in[w];
			bad |= v ^ msg_word(r, w, peer_id);
			sum += v;
		}
	}
	res->checksum = sum ^ fp_sum(x, &res->ok);
	if (bad)
		res->ok = 0;
	return 0;
}

/* A task: pin, set up, wait for the start, work, report. Never returns. */
static void task_main(const struct params *p, struct control *ctl,
		      void *pairs, int self)
{
	struct task_result *res = &ctl->res[self];
	struct node *nodes = NULL;
	cpu_set_t set;
	double t0;
	int go;

	CPU_ZERO(&set);
	CPU_SET(p->cpus[self], &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "task %d: sched_setaffinity(CPU %d): %s\n",
			self, p->cpus[self], strerror(errno));
		goto fail;
	}
	/* Memory is touched after pinning: it lies on the task's node. */
	if (p->work == WORK_CACHE) {
		nodes = chase_setup(p->kib * 1024 / sizeof(struct node));
		if (!nodes) {
			fprintf(stderr, "task %d: mmap: %s\n", self,
				strerror(errno));
			goto fail;
		}
	} else if (p->work == WORK_PAIRS) {
		memset(mailbox_of(pairs, p, self), 0, mailbox_size(p));
	}
	res->ok = 1;
	atomic_fetch_add(&ctl->ready, 1);

	while (!(go = atomic_load_explicit(&ctl->go, memory_order_acquire)))
		cpu_relax();
	if (go < 0)
		_exit(2);

	t0 = now_ms();
	switch (p->work) {
	case WORK_COMPUTE:
	case WORK_DENSE:
		run_compute(p, res);
		break;
	case WORK_CACHE:
		run_cache(p, nodes, res);
		break;
	case WORK_PAIRS:
		run_pairs(p, pairs, self, res);
		break;
	}
	res->ms = now_ms() - t0;
	res->cpu = sched_getcpu();
	_exit(0);
fail:
	atomic_fetch_add(&ctl->failed, 1);
	atomic_fetch_add(&ctl->ready, 1);
	_exit(1);
}

static int parse_place(const char *arg, struct params *p)
{
	char *end;
	long cpu;

	p->ntasks = 0;
	while (*arg) {
		errno = 0;
		cpu = strtol(arg, &end, 10);
		if (end == arg || errno || cpu < 0 || cpu >= CPU_SETSIZE ||
		    (*end && *end != ','))
			return -1;
		if (p->ntasks == MAX_TASKS)
			return -1;
		p->cpus[p->ntasks++] = cpu;
		arg = *end ? end + 1 : end;
	}
	return p->ntasks ? 0 : -1;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: placement_bench --work compute|dense|cache|pairs --place CPU[,CPU...]\n"
		"       [--iters N] [--kib K] [--msg BYTES] [--round-work N]\n"
		"       [--label TEXT] [--timeout SECONDS]\n");
	exit(2);
}

static uint64_t parse_u64(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || *end || errno || !v)
		usage();
	return v;
}

static void parse_args(int argc, char **argv, struct params *p)
{
	static const struct option opts[] = {
		{ "work", required_argument, NULL, 'w' },
		{ "place", required_argument, NULL, 'p' },
		{ "iters", required_argument, NULL, 'n' },
		{ "kib", required_argument, NULL, 'k' },
		{ "msg", required_argument, NULL, 'm' },
		{ "round-work", required_argument, NULL, 'r' },
		{ "label", required_argument, NULL, 'l' },
		{ "timeout", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 }
	};
	int c, have_place = 0, have_iters = 0;
	unsigned int i;

	memset(p, 0, sizeof(*p));
	p->work = WORK_COMPUTE;
	p->kib = 768;
	p->msg = 4096;
	p->round_work = 2000;
	p->label = "-";
	p->timeout = 120;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'w':
			for (i = 0; i < 4; i++)
				if (!strcmp(optarg, work_names[i]))
					break;
			if (i == 4)
				usage();
			p->work = i;
			break;
		case 'p':
			if (parse_place(optarg, p))
				usage();
			have_place = 1;
			break;
		case 'n':
			p->iters = parse_u64(optarg);
			have_iters = 1;
			break;
		case 'k':
			p->kib = parse_u64(optarg);
			break;
		case 'm':
			p->msg = parse_u64(optarg);
			break;
		case 'r':
			p->round_work = parse_u64(optarg);
			break;
		case 'l':
			p->label = optarg;
			break;
		case 't':
			p->timeout = parse_u64(optarg);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !have_place)
		usage();
	if (p->work == WORK_PAIRS && p->ntasks % 2) {
		fprintf(stderr, "pairs: an even number of tasks is needed\n");
		exit(2);
	}
	if (p->msg % LINE) {
		fprintf(stderr, "--msg: a multiple of %d bytes\n", LINE);
		exit(2);
	}
	if (p->kib * 1024 / sizeof(struct node) < 2) {
		fprintf(stderr, "--kib: too small\n");
		exit(2);
	}
	if (!have_iters) {
		/* About a second each on a 3 GHz core of today. */
		static const uint64_t dflt[] = { 400000000, 400000000,
						 150000000, 100000 };

		p->iters = dflt[p->work];
	}
}

int main(int argc, char **argv)
{
	struct params p;
	struct control *ctl;
	void *pairs = NULL;
	double max_ms = 0, min_ms = 1e300;
	uint64_t checksum = 0;
	int i, status, failed = 0, moved = 0, disagree = 0;
	int bad[MAX_TASKS] = { 0 };
	pid_t pid;

	parse_args(argc, argv, &p);

	ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (p.work == WORK_PAIRS) {
		pairs = mmap(NULL, p.ntasks * mailbox_size(&p),
			     PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (pairs == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
	}

	signal(SIGALRM, on_alarm);
	alarm(p.timeout);
	for (i = 0; i < p.ntasks; i++) {
		pid = fork();
		if (pid < 0) {
			perror("fork");
			on_alarm(0);
			return 1;
		}
		if (!pid)
			task_main(&p, ctl, pairs, i);
		pids[npids++] = pid;
	}

	/* Everyone pinned and set up: start them all, or none. */
	while (atomic_load(&ctl->ready) < p.ntasks) {
		if (waitpid(-1, &status, WNOHANG) > 0) {
			fprintf(stderr, "a task ended before the start\n");
			atomic_store(&ctl->go, -1);
			on_alarm(0);
			break;
		}
		usleep(200);
	}
	atomic_store_explicit(&ctl->go, atomic_load(&ctl->failed) ? -1 : 1,
			      memory_order_release);

	for (i = 0; i < npids; i++) {
		if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			bad[i] = 1;
	}
	alarm(0);
	if (timed_out)
		fprintf(stderr, "timed out after %u s: tasks killed\n",
			p.timeout);

	for (i = 0; i < p.ntasks; i++) {
		struct task_result *res = &ctl->res[i];

		if (bad[i] || !res->ok)
			failed++;
		if (res->cpu != p.cpus[i])
			moved++;
		if (p.work != WORK_PAIRS &&
		    res->checksum != ctl->res[0].checksum)
			disagree++;
		if (res->ms > max_ms)
			max_ms = res->ms;
		if (res->ms < min_ms)
			min_ms = res->ms;
		checksum += res->checksum;
	}

	printf("work=%s label=%s tasks=%d cpus=", work_names[p.work], p.label,
	       p.ntasks);
	for (i = 0; i < p.ntasks; i++)
		printf("%s%d", i ? "," : "", p.cpus[i]);
	printf(" max_ms=%.3f max_us=%.0f min_ms=%.3f checksum=0x%016llx %s\n",
	       max_ms, max_ms * 1e3, min_ms, (unsigned long long)checksum,
	       failed || disagree ? "FAILED" : moved ? "MOVED" : "verified");
	if (failed || disagree) {
		fprintf(stderr, "%d task(s) failed their checks, %d disagree\n",
			failed, disagree);
		return 1;
	}
	if (moved) {
		fprintf(stderr, "%d task(s) ended on another CPU\n", moved);
		return 1;
	}
	return 0;
}
