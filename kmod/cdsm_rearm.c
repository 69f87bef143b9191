// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm re-arming. Every worker period, each process of a tracked
 * application gets a budget of rate_bp / 10000 of its resident pages per
 * second; the walk resumes where the last one stopped and covers only
 * memory that can carry communication: shared mappings, and private
 * anonymous memory of multi-threaded processes; never code, VM_IO,
 * VM_PFNMAP, VM_MIXEDMAP or hugetlb. The two kinds are walked apart, each
 * with its own cursor, and share the budget (cdsm_rearm_app()):
 *  - shared mappings (shm segments, files: where processes communicate) in
 *    one sweep from a cursor, in calls of 64-512 pages; a page re-armed and
 *    not touched since costs nothing, so a sweep re-arms every page in use
 *    of a small segment each time it comes by;
 *  - private anonymous memory of multi-threaded processes strided (see
 *    CDSM_REARM_SPREAD): each pass re-arms a small piece of every window of
 *    it, so that every region is re-armed within a pass rather than once per
 *    sweep over the whole memory; threads share page tables, and a page
 *    they share faults again only when re-armed.
 *
 * Pages are re-armed by change_prot_numa(), the function automatic NUMA
 * balancing uses: PTEs become PROT_NONE (still present for the kernel), the
 * TLB is flushed, and the next access takes a hinting fault that
 * do_numa_page() resolves with nothing lost - though, as for NUMA
 * balancing, the kernel may migrate the page to the faulting node. The
 * present bit is never cleared by hand.
 *
 * change_prot_numa() skips pages on top-tier nodes unless
 * kernel.numa_balancing has bit 0 (NUMA_BALANCING_NORMAL) set, which is off
 * by default on single-node machines: the worker reads the sysctl, warns
 * when re-arming cannot work, and reports it in cdsm_counters.status.
 *
 * change_prot_numa() is not exported: its address comes from a kprobe
 * registered on it for a moment. On kernels with IBT the probe lands after
 * the ENDBR; the call goes to the function's start, and is refused when the
 * CPU enforces IBT but the kernel sealed that ENDBR (no indirect callers).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/seq_file.h>
#include <linux/pgtable.h>
#include <linux/sizes.h>
#include <asm/ibt.h>

#include "cdsm_app.h"
#include "cdsm_rearm.h"
#include "cdsm_stats.h"

typedef unsigned long (*cdsm_change_prot_numa_t)(struct vm_area_struct *vma,
						  unsigned long start,
						  unsigned long end);

static cdsm_change_prot_numa_t cdsm_change_prot_numa;
static bool cdsm_numa_normal;

/* The ENDBR64 instruction, f3 0f 1e fa, as a little-endian word. */
#define CDSM_ENDBR64 0xfa1e0ff3U

/*
 * The sweep over shared mappings: pages per change_prot_numa() call, half a
 * second of budget within these bounds (each call that changes a PTE ends
 * with one TLB shootdown, so pages are armed in batches), and the longest
 * virtual range walked per step, as in the kernel's own scanner, which walks
 * up to 8 times its page budget: unpopulated ranges cost little to skip but
 * must not stall the walk.
 */
#define CDSM_SWEEP_CHUNK_MIN_PAGES 64UL
#define CDSM_SWEEP_CHUNK_MAX_PAGES 512UL
#define CDSM_SWEEP_SCAN_FACTOR 16UL
#define CDSM_SWEEP_SCAN_MIN_PAGES (SZ_16M >> PAGE_SHIFT)
/*
 * The strided walk over private anonymous memory: pages per call,
 * 1/CDSM_REARM_CALLS_PER_SEC of a second of budget within these bounds.
 * Each call that changes a PTE ends with one TLB shootdown, an IPI to every
 * CPU running the process: a few microseconds on a real machine,
 * milliseconds under QEMU TCG. The kernel's own scanner makes about 20 such
 * calls per pass over a process.
 */
#define CDSM_REARM_CALLS_PER_SEC 32
#define CDSM_REARM_CHUNK_MIN_PAGES 1UL
#define CDSM_REARM_CHUNK_MAX_PAGES 512UL
/*
 * The address space is cut into windows of CDSM_REARM_SPREAD chunks, and a
 * pass re-arms one chunk in each window of the eligible VMAs, at the same
 * offset; the next pass takes the next offset. A pass so covers every
 * region, a 1/CDSM_REARM_SPREAD sample of its pages, instead of a sweep
 * reaching a region once per cycle over the whole memory; every page still
 * has its turn once per CDSM_REARM_SPREAD passes.
 */
#define CDSM_REARM_SPREAD 16UL
/*
 * Pieces tried per step, at most, per piece of budget (a piece already armed
 * and not faulted since costs a call that changes nothing), and moves over
 * unpopulated ranges (thread stacks, reservations: skipped a page-table
 * entry at a time) or windows whose piece lies outside the VMA.
 */
#define CDSM_REARM_VISITS_FACTOR 8UL
#define CDSM_REARM_VISITS_MIN 64UL
#define CDSM_REARM_HOPS 4096UL

/* Kinds of memory re-armed, for the debugfs counters. */
enum cdsm_rearm_kind {
	CDSM_REARM_SHARED,
	CDSM_REARM_PRIVATE,
	CDSM_REARM_NR_KINDS,
};

/*
 * debugfs "rearm", written by the worker only: per kind, pages re-armed,
 * change_prot_numa() calls, and those that changed PTEs (each ended with a
 * TLB shootdown); steps that re-armed, and budget lost to the one-second cap
 * (a worker that fell behind its period).
 */
static struct {
	u64 armed[CDSM_REARM_NR_KINDS];
	u64 calls[CDSM_REARM_NR_KINDS];
	u64 flushes[CDSM_REARM_NR_KINDS];
	u64 steps;
	u64 capped_pages;
} cdsm_rearm_stats;

/**
 * cdsm_rearm_init() - find change_prot_numa().
 *
 * Return: 0, also when re-arming is unavailable under IBT (reported);
 * the kprobe's error when the function cannot be found.
 */
int cdsm_rearm_init(void)
{
	struct kprobe kp = { .symbol_name = "change_prot_numa" };
	unsigned long addr;
	int err;

	err = register_kprobe(&kp);
	if (err) {
		pr_err("cannot find change_prot_numa (kprobe: %d): re-arming impossible\n", err);
		return err;
	}
	addr = (unsigned long)kp.addr;
	unregister_kprobe(&kp);
	/* The kprobe sits after the ENDBR (or its sealed form) at the start. */
	if (IS_ENABLED(CONFIG_X86_KERNEL_IBT) && is_endbr(*(u32 *)(addr - 4)))
		addr -= 4;
	if (IS_ENABLED(CONFIG_X86_KERNEL_IBT) && cpu_feature_enabled(X86_FEATURE_IBT) &&
	    *(u32 *)addr != CDSM_ENDBR64) {
		pr_err("change_prot_numa at %pS has no ENDBR and this CPU enforces IBT: re-arming disabled, only first-touch faults are seen\n",
		       (void *)addr);
		return 0;
	}
	cdsm_change_prot_numa = (cdsm_change_prot_numa_t)addr;
	return 0;
}

/**
 * cdsm_rearm_available() - change_prot_numa() can be called.
 *
 * Return: true if so.
 */
bool cdsm_rearm_available(void)
{
	return cdsm_change_prot_numa;
}

/**
 * cdsm_rearm_numa_normal() - kernel.numa_balancing had bit 0 set at the
 * last check.
 *
 * Return: true if so.
 */
bool cdsm_rearm_numa_normal(void)
{
	return READ_ONCE(cdsm_numa_normal);
}

/**
 * cdsm_rearm_check_sysctl() - read kernel.numa_balancing.
 * @warn:	complain if re-arming cannot work and the value changed.
 *
 * Context: process context, sleeps.
 */
void cdsm_rearm_check_sysctl(bool warn)
{
	char buf[16] = "";
	struct file *f;
	loff_t pos = 0;
	bool normal;
	int mode = 0;

	f = filp_open("/proc/sys/kernel/numa_balancing", O_RDONLY, 0);
	if (IS_ERR(f))
		return;
	if (kernel_read(f, buf, sizeof(buf) - 1, &pos) > 0 && kstrtoint(strim(buf), 0, &mode))
		mode = 0;
	filp_close(f, NULL);
	normal = mode & 1;
	if (warn && !normal && READ_ONCE(cdsm_numa_normal) != normal)
		pr_warn("kernel.numa_balancing=%d lacks bit 0 (NORMAL): pages cannot be re-armed, only first-touch faults are seen; set it to 1 to enable extra faults\n",
			mode);
	WRITE_ONCE(cdsm_numa_normal, normal);
}

static bool cdsm_vma_rearmable(struct vm_area_struct *vma)
{
	if (vma->vm_flags & (VM_EXEC | VM_IO | VM_PFNMAP | VM_MIXEDMAP | VM_HUGETLB))
		return false;
	return vma_is_accessible(vma);
}

/* Shared mappings, swept. */
static bool cdsm_vma_shared(struct vm_area_struct *vma)
{
	return (vma->vm_flags & VM_SHARED) && cdsm_vma_rearmable(vma);
}

/* Private anonymous memory with pages, strided (multi-threaded processes). */
static bool cdsm_vma_private(struct vm_area_struct *vma)
{
	return !(vma->vm_flags & VM_SHARED) && vma_is_anonymous(vma) && vma->anon_vma &&
	       cdsm_vma_rearmable(vma);
}

/* One change_prot_numa() call, counted; drains after a TLB shootdown. */
static unsigned long cdsm_rearm_range(struct vm_area_struct *vma, unsigned long start,
				      unsigned long end, void (*drain)(void))
{
	int kind = vma->vm_flags & VM_SHARED ? CDSM_REARM_SHARED : CDSM_REARM_PRIVATE;
	unsigned long n = cdsm_change_prot_numa(vma, start, end);

	cdsm_rearm_stats.calls[kind]++;
	cdsm_rearm_stats.armed[kind] += n;
	/*
	 * A call that changed PTEs ended with a TLB shootdown, which waits for
	 * every CPU running the process: the rings fill meanwhile.
	 */
	if (n) {
		cdsm_rearm_stats.flushes[kind]++;
		drain();
	}
	return n;
}

/*
 * The next VMA from @vmi of the kind the walk re-arms (@shared: shared
 * mappings, else private anonymous memory). At the end of the address space
 * the walk starts over at 0, once: *@wrapped becomes true, *@addr 0, and
 * *@pass (if not NULL) counts the pass. NULL at the second end.
 */
static struct vm_area_struct *cdsm_rearm_next_vma(struct mm_struct *mm, struct vma_iterator *vmi,
						  bool shared, unsigned long *addr, bool *wrapped,
						  unsigned long *pass)
{
	struct vm_area_struct *vma;

	for (;;) {
		vma = vma_next(vmi);
		if (vma) {
			if (shared ? cdsm_vma_shared(vma) : cdsm_vma_private(vma))
				return vma;
			continue;
		}
		if (*wrapped)
			return NULL;
		*wrapped = true;
		*addr = 0;
		if (pass)
			(*pass)++;
		vma_iter_init(vmi, mm, 0);
	}
}

/*
 * Re-arms up to @budget pages of the shared mappings of @mm in one sweep
 * from @t's cursor, in calls of at least @chunk pages (overshoot is a debt);
 * at the end of the address space it starts over, once. Returns the pages
 * re-armed.
 */
static unsigned long cdsm_rearm_sweep(struct mm_struct *mm, struct cdsm_task *t,
				      unsigned long budget, unsigned long chunk,
				      void (*drain)(void))
{
	unsigned long scan_left = budget * CDSM_SWEEP_SCAN_FACTOR + CDSM_SWEEP_SCAN_MIN_PAGES;
	unsigned long addr = t->rearm_next_addr, armed = 0;
	struct vm_area_struct *vma;
	struct vma_iterator vmi;
	bool wrapped = false;

	vma_iter_init(&vmi, mm, addr);
	while ((vma = cdsm_rearm_next_vma(mm, &vmi, true, &addr, &wrapped, NULL))) {
		addr = max(addr, vma->vm_start);
		while (addr < vma->vm_end && armed < budget && scan_left) {
			unsigned long pages = min(max(budget - armed, chunk), scan_left);
			unsigned long end = min(vma->vm_end, addr + pages * PAGE_SIZE);

			armed += cdsm_rearm_range(vma, addr, end, drain);
			scan_left -= (end - addr) >> PAGE_SHIFT;
			addr = end;
		}
		if (armed >= budget || !scan_left)
			break;
	}
	t->rearm_next_addr = addr;
	return armed;
}

/*
 * Where the walk goes on when no page table maps @addr of @mm below @end: the
 * end of the empty PGD, P4D, PUD or PMD entry's range; 0 when a PMD maps
 * @addr. Reads the entries without their locks; the mmap lock held for read
 * keeps the tables above the PTEs. A stale answer only moves one piece of a
 * pass.
 */
static unsigned long cdsm_unmapped_end(struct mm_struct *mm, unsigned long addr,
				       unsigned long end)
{
	pgd_t *pgd = pgd_offset(mm, addr);
	p4d_t *p4d;
	pud_t *pud;

	if (pgd_none(READ_ONCE(*pgd)))
		return pgd_addr_end(addr, end);
	p4d = p4d_offset(pgd, addr);
	if (p4d_none(READ_ONCE(*p4d)))
		return p4d_addr_end(addr, end);
	pud = pud_offset(p4d, addr);
	if (pud_none(READ_ONCE(*pud)) || pud_leaf(READ_ONCE(*pud)))
		return pud_addr_end(addr, end);
	if (pmd_none(READ_ONCE(*pmd_offset(pud, addr))))
		return pmd_addr_end(addr, end);
	return 0;
}

/*
 * Re-arms up to @budget pages of the private anonymous memory of @mm in
 * @chunk-page pieces, one per window of CDSM_REARM_SPREAD * @chunk pages,
 * from @t's cursor; at the end of the address space the walk wraps and
 * takes the next offset in the windows. Returns the pages re-armed.
 */
static unsigned long cdsm_rearm_strided(struct mm_struct *mm, struct cdsm_task *t,
					unsigned long budget, unsigned long chunk,
					void (*drain)(void))
{
	unsigned long window = chunk * CDSM_REARM_SPREAD << PAGE_SHIFT;
	unsigned long visits = budget / chunk * CDSM_REARM_VISITS_FACTOR + CDSM_REARM_VISITS_MIN;
	unsigned long addr = t->rearm_priv_addr, armed = 0, hops = CDSM_REARM_HOPS;
	struct vm_area_struct *vma;
	struct vma_iterator vmi;
	bool wrapped = false;

	vma_iter_init(&vmi, mm, addr);
	/* At the end of the address space: the next offset, once per step. */
	while ((vma = cdsm_rearm_next_vma(mm, &vmi, false, &addr, &wrapped, &t->rearm_pass))) {
		addr = max(addr, vma->vm_start);
		while (addr < vma->vm_end && armed < budget && visits && hops) {
			unsigned long win = ALIGN_DOWN(addr, window);
			unsigned long off = (t->rearm_pass % CDSM_REARM_SPREAD) * chunk;
			unsigned long start = max(addr, win + (off << PAGE_SHIFT));
			unsigned long end = min(vma->vm_end, win + ((off + chunk) << PAGE_SHIFT));
			unsigned long next;

			if (start >= end) {
				/* This window's chunk is behind the cursor or past the VMA. */
				addr = min(vma->vm_end, win + window);
				hops--;
				continue;
			}
			next = cdsm_unmapped_end(mm, start, vma->vm_end);
			if (next) {
				addr = next;
				hops--;
				continue;
			}
			/*
			 * A piece within a transparent huge page splits it
			 * (change_pmd_range()), as the kernel's scanner does
			 * at the ends of its ranges; arming it whole would
			 * spend up to 512 pages of budget at once.
			 */
			visits--;
			armed += cdsm_rearm_range(vma, start, end, drain);
			addr = max(end, min(vma->vm_end, win + window));
		}
		if (armed >= budget || !visits || !hops)
			break;
	}
	t->rearm_priv_addr = addr;
	return armed;
}

/*
 * One step of @t's process: @budget pages, shared between the sweep over
 * shared mappings and, for a multi-threaded process, the strided walk over
 * private anonymous memory. Each kind has the first claim on the whole
 * budget every other step, and the other kind gets what it left; so each
 * gets at least about half of the budget while it has pages in use to
 * re-arm, and all of it when the other has none (threads with no shared
 * mapping, single-threaded processes).
 */
static unsigned long cdsm_rearm_mm(struct mm_struct *mm, struct cdsm_task *t,
				   unsigned long budget, u64 rss, unsigned int rate_bp,
				   bool threaded, void (*drain)(void))
{
	unsigned long sweep_chunk = clamp_t(u64, rss * rate_bp / 20000, CDSM_SWEEP_CHUNK_MIN_PAGES,
					    CDSM_SWEEP_CHUNK_MAX_PAGES);
	/* A power of two: windows then tile PMDs. */
	unsigned long stride_chunk =
		rounddown_pow_of_two(clamp_t(u64, rss * rate_bp / (10000 * CDSM_REARM_CALLS_PER_SEC),
					     CDSM_REARM_CHUNK_MIN_PAGES,
					     CDSM_REARM_CHUNK_MAX_PAGES));
	unsigned long armed = 0;

	if (!mmap_read_trylock(mm))
		return 0;
	cdsm_rearm_stats.steps++;
	if (!threaded) {
		armed = cdsm_rearm_sweep(mm, t, budget, sweep_chunk, drain);
	} else if (t->rearm_steps++ & 1) {
		armed = cdsm_rearm_strided(mm, t, budget, stride_chunk, drain);
		if (armed < budget)
			armed += cdsm_rearm_sweep(mm, t, budget - armed, sweep_chunk, drain);
	} else {
		armed = cdsm_rearm_sweep(mm, t, budget, sweep_chunk, drain);
		if (armed < budget)
			armed += cdsm_rearm_strided(mm, t, budget - armed, stride_chunk, drain);
	}
	mmap_read_unlock(mm);
	return armed;
}

/* Takes the mm of a live leader task, or NULL. */
static struct mm_struct *cdsm_task_mm(struct cdsm_task *t, bool *threaded)
{
	struct task_struct *p = cdsm_task_get_live(t);
	struct mm_struct *mm;

	if (!p)
		return NULL;
	mm = get_task_mm(p);
	*threaded = get_nr_threads(p) > 1;
	put_task_struct(p);
	return mm;
}

/**
 * cdsm_rearm_app() - one re-arming step of an application.
 * @app:	the application.
 * @period_ms:	time since the last step.
 * @rate_bp:	pages per second, in basis points of resident pages.
 * @drain:	called after every change_prot_numa() call that changed
 *		PTEs (each ends with a TLB shootdown, which can wait long for
 *		busy CPUs), with the process's mmap lock held for read.
 *
 * Context: the worker, cdsm_apps_lock() held; sleeps.
 */
void cdsm_rearm_app(struct cdsm_app *app, unsigned int period_ms, unsigned int rate_bp,
		    void (*drain)(void))
{
	u32 i, nr_tasks = cdsm_app_nr_tasks(app);

	if (!rate_bp || !cdsm_change_prot_numa || !READ_ONCE(cdsm_numa_normal))
		return;
	for (i = 0; i < nr_tasks; i++) {
		struct cdsm_task *t = cdsm_app_leader(app, i);
		struct mm_struct *mm;
		unsigned long armed;
		bool threaded;
		s64 cap;
		u64 rss;

		if (!t)
			continue;
		mm = cdsm_task_mm(t, &threaded);
		if (!mm)
			continue;
		/* rss * rate_bp / 10000 pages/s * period_ms / 1000 s, in 1/1000 pages */
		rss = get_mm_rss(mm);
		t->rearm_credit_mpages += (s64)(rss * rate_bp * period_ms / 10000);
		/* Never more than one second of budget at once. */
		cap = rss * rate_bp / 10;
		if (t->rearm_credit_mpages > cap) {
			cdsm_rearm_stats.capped_pages += (t->rearm_credit_mpages - cap) / 1000;
			t->rearm_credit_mpages = cap;
		}
		if (t->rearm_credit_mpages >= 1000) {
			armed = cdsm_rearm_mm(mm, t, t->rearm_credit_mpages / 1000, rss, rate_bp,
					      threaded, drain);
			/* Pages armed beyond the budget are paid back in later steps. */
			t->rearm_credit_mpages -= (s64)armed * 1000;
			cdsm_app_add_rearmed(app, armed);
			cdsm_stat_add(CDSM_STAT_REARM_ARMED, armed);
		}
		mmput(mm);
	}
}

static int cdsm_rearm_show(struct seq_file *m, void *unused)
{
	static const char *const kinds[CDSM_REARM_NR_KINDS] = { "shared", "private" };
	int k;

	for (k = 0; k < CDSM_REARM_NR_KINDS; k++)
		seq_printf(m, "%s_armed %llu\n%s_calls %llu\n%s_flushes %llu\n", kinds[k],
			   READ_ONCE(cdsm_rearm_stats.armed[k]), kinds[k],
			   READ_ONCE(cdsm_rearm_stats.calls[k]), kinds[k],
			   READ_ONCE(cdsm_rearm_stats.flushes[k]));
	seq_printf(m, "steps %llu\ncapped_pages %llu\n", READ_ONCE(cdsm_rearm_stats.steps),
		   READ_ONCE(cdsm_rearm_stats.capped_pages));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(cdsm_rearm);

/**
 * cdsm_rearm_debugfs_init() - create the "rearm" file: what re-arming did,
 * per kind of memory, since the module was loaded.
 * @dir:	the module's debugfs directory.
 *
 * Context: process context (module load).
 */
void cdsm_rearm_debugfs_init(struct dentry *dir)
{
	debugfs_create_file("rearm", 0400, dir, NULL, &cdsm_rearm_fops);
}
