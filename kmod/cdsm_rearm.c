// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm re-arming. Every worker period, each process of a tracked
 * application gets a budget of rate_bp / 10000 of its resident pages per
 * second; the walk resumes where the last one stopped and covers only
 * memory that can carry communication: shared mappings, and private
 * anonymous memory of multi-threaded processes; never code, VM_IO,
 * VM_PFNMAP, VM_MIXEDMAP or hugetlb. It is strided (see CDSM_REARM_SPREAD):
 * each pass re-arms a small piece of every window of that memory, so that
 * every region is re-armed within a pass rather than once per sweep over
 * the whole memory; threads share page tables, and a page they share faults
 * again only when re-armed.
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

#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/pgtable.h>
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
 * Pages per change_prot_numa() call: 1/CDSM_REARM_CALLS_PER_SEC of a second
 * of budget, within these bounds. Each call that changes a PTE ends with one
 * TLB shootdown, an IPI to every CPU running the process: a few
 * microseconds on a real machine, milliseconds under QEMU TCG. The kernel's
 * own scanner makes about 20 such calls per pass over a process.
 */
#define CDSM_REARM_CALLS_PER_SEC 32
#define CDSM_REARM_CHUNK_MIN_PAGES 1UL
#define CDSM_REARM_CHUNK_MAX_PAGES 512UL
/*
 * The walk is strided: the address space is cut into windows of
 * CDSM_REARM_SPREAD chunks, and a pass re-arms one chunk in each window of
 * the eligible VMAs, at the same offset; the next pass takes the next
 * offset. A pass so covers every region, a 1/CDSM_REARM_SPREAD sample of
 * its pages, instead of a sweep reaching a region once per cycle over the
 * whole memory; every page still has its turn once per CDSM_REARM_SPREAD
 * passes.
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

static bool cdsm_vma_eligible(struct vm_area_struct *vma, bool threaded)
{
	if (vma->vm_flags & (VM_EXEC | VM_IO | VM_PFNMAP | VM_MIXEDMAP | VM_HUGETLB))
		return false;
	if (!vma_is_accessible(vma))
		return false;
	if (vma->vm_flags & VM_SHARED)
		return true;
	return threaded && vma_is_anonymous(vma);
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
 * Re-arms up to @budget pages of @mm in @chunk-page pieces, one per window
 * of CDSM_REARM_SPREAD * @chunk pages, from @t's cursor; at the end of the
 * address space the walk wraps and takes the next offset in the windows.
 * Calls @drain after every call that changed PTEs. Returns the pages
 * re-armed.
 */
static unsigned long cdsm_rearm_mm(struct mm_struct *mm, struct cdsm_task *t,
				   unsigned long budget, unsigned long chunk, bool threaded,
				   void (*drain)(void))
{
	unsigned long window = chunk * CDSM_REARM_SPREAD << PAGE_SHIFT;
	unsigned long visits = budget / chunk * CDSM_REARM_VISITS_FACTOR + CDSM_REARM_VISITS_MIN;
	unsigned long addr = t->rearm_next_addr, armed = 0, hops = CDSM_REARM_HOPS, n;
	struct vm_area_struct *vma;
	struct vma_iterator vmi;
	bool wrapped = false;

	vma_iter_init(&vmi, mm, addr);

	if (!mmap_read_trylock(mm))
		return 0;
	for (;;) {
		vma = vma_next(&vmi);
		if (!vma) {
			/* End of the address space: the next offset, once per step. */
			if (wrapped)
				break;
			wrapped = true;
			t->rearm_pass++;
			addr = 0;
			vma_iter_init(&vmi, mm, 0);
			continue;
		}
		if (!cdsm_vma_eligible(vma, threaded) || (!vma->anon_vma && !vma->vm_file))
			continue;
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
			n = cdsm_change_prot_numa(vma, start, end);
			addr = max(end, min(vma->vm_end, win + window));
			armed += n;
			/*
			 * The call ended with a TLB shootdown, which waits
			 * for every CPU running @mm: the rings fill meanwhile.
			 */
			if (n)
				drain();
		}
		if (armed >= budget || !visits || !hops)
			break;
	}
	mmap_read_unlock(mm);
	t->rearm_next_addr = addr;
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
		t->rearm_credit_mpages = min_t(s64, t->rearm_credit_mpages, rss * rate_bp / 10);
		if (t->rearm_credit_mpages >= 1000) {
			/* A power of two: windows then tile PMDs. */
			unsigned long chunk =
				rounddown_pow_of_two(clamp_t(u64, rss * rate_bp /
							     (10000 * CDSM_REARM_CALLS_PER_SEC),
							     CDSM_REARM_CHUNK_MIN_PAGES,
							     CDSM_REARM_CHUNK_MAX_PAGES));

			armed = cdsm_rearm_mm(mm, t, t->rearm_credit_mpages / 1000, chunk,
					      threaded, drain);
			/* Pages armed beyond the budget are paid back in later steps. */
			t->rearm_credit_mpages -= (s64)armed * 1000;
			cdsm_app_add_rearmed(app, armed);
			cdsm_stat_add(CDSM_STAT_REARM_ARMED, armed);
		}
		mmput(mm);
	}
}
