// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm re-arming. Every worker period, each process of a tracked
 * application gets a budget of rate_bp / 10000 of its resident pages per
 * second; the walk resumes where the last one stopped and covers only
 * memory that can carry communication: shared mappings, and private
 * anonymous memory of multi-threaded processes; never code, VM_IO,
 * VM_PFNMAP, VM_MIXEDMAP or hugetlb.
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
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
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
 * Longest virtual range walked per step: unpopulated ranges (thread stacks,
 * reservations) cost little to skip but must not stall the walk, as in the
 * kernel's own scanner, which walks up to 8 times its page budget.
 */
#define CDSM_REARM_SCAN_FACTOR 16
#define CDSM_REARM_SCAN_MIN_PAGES (SZ_16M >> PAGE_SHIFT)
/*
 * Pages per change_prot_numa() call: half a second of budget, within these
 * bounds. Each call that changes a PTE ends with one TLB shootdown, an IPI to
 * every CPU running the process, so pages are armed in batches (the kernel's
 * own scanner takes up to scan_size_mb = 256 MB at once); the bounds keep
 * sparse ranges fast and bursts small enough that a rate is met evenly.
 */
#define CDSM_REARM_CHUNK_MIN_PAGES 64UL
#define CDSM_REARM_CHUNK_MAX_PAGES 512UL

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
 * Re-arms up to @budget pages of @mm from @t's cursor, calling @drain after
 * every call that changed PTEs. Returns the pages re-armed.
 */
static unsigned long cdsm_rearm_mm(struct mm_struct *mm, struct cdsm_task *t,
				   unsigned long budget, unsigned long chunk, bool threaded,
				   void (*drain)(void))
{
	unsigned long addr = t->rearm_next_addr, armed = 0, n;
	unsigned long scan_left = budget * CDSM_REARM_SCAN_FACTOR + CDSM_REARM_SCAN_MIN_PAGES;
	struct vm_area_struct *vma;
	struct vma_iterator vmi;
	bool wrapped = false;

	vma_iter_init(&vmi, mm, addr);

	if (!mmap_read_trylock(mm))
		return 0;
	for (;;) {
		vma = vma_next(&vmi);
		if (!vma) {
			/* End of the address space: start over, once. */
			if (wrapped || !addr)
				break;
			wrapped = true;
			addr = 0;
			vma_iter_init(&vmi, mm, 0);
			continue;
		}
		if (!cdsm_vma_eligible(vma, threaded))
			continue;
		addr = max(addr, vma->vm_start);
		while (addr < vma->vm_end && armed < budget && scan_left) {
			/* At least @chunk pages per call; overshoot is a debt. */
			unsigned long pages = min(max(budget - armed, chunk), scan_left);
			unsigned long end = min(vma->vm_end, addr + pages * PAGE_SIZE);

			n = cdsm_change_prot_numa(vma, addr, end);
			scan_left -= (end - addr) >> PAGE_SHIFT;
			addr = end;
			armed += n;
			/*
			 * The call ended with a TLB shootdown, which waits
			 * for every CPU running @mm: the rings fill meanwhile.
			 */
			if (n)
				drain();
		}
		if (armed >= budget || !scan_left)
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
			unsigned long chunk = clamp_t(u64, rss * rate_bp / 20000,
						      CDSM_REARM_CHUNK_MIN_PAGES,
						      CDSM_REARM_CHUNK_MAX_PAGES);

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
