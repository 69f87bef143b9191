// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm fault source. An ftrace callback at the entry of handle_mm_fault()
 * sees every user page fault, hinting faults of NUMA balancing included.
 * It returns at once unless the current task is tracked, the fault is on
 * its own mm (GUP on another process comes through here too) and the
 * memory can carry communication (cdsm_vma_recorded()). For a tracked
 * task it pushes what is known at entry into this CPU's single-producer
 * ring (struct cdsm_fault_raw): the address, the frame mapped there if
 * any and whether its entry is PROT_NONE (a hinting fault) or a migration
 * entry, the kind of mapping and, for a shared one, its file. A full ring
 * drops the record and counts it.
 *
 * What a fault maps is known only once it returns. Rather than a return
 * probe on every tracked fault (a kretprobe cost ~1,000 instructions per
 * tracked fault and ~310 per fault of any task: docs/kmod.md), the worker
 * looks the frame up when it drains the ring (cdsm_fault_drain()), some
 * milliseconds later, in the task's mm: what the process maps at that
 * address then, which is what the fault mapped unless the page was
 * unmapped, migrated or copied meanwhile.
 *
 * The callback sleeps, allocates and locks nothing; it reads the task hash
 * under RCU (preemption off).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ftrace.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/pgtable.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/swap.h>
#include <linux/swapops.h>
#include <linux/timekeeping.h>
#include <linux/vmalloc.h>

#include "cdsm_app.h"
#include "cdsm_fault.h"
#include "cdsm_stats.h"

#ifdef ftrace_regs_get_argument
#define cdsm_fregs_arg(fregs, n) ftrace_regs_get_argument(fregs, n)
#else
/* 6.1: struct ftrace_regs is the pt_regs that ftrace_caller saved. */
#define cdsm_fregs_arg(fregs, n) regs_get_kernel_argument(&(fregs)->regs, n)
#endif

/**
 * struct cdsm_ring - a CPU's faults: produced by the fault callback on that
 * CPU (preemption off), consumed by the worker.
 * @head:	next record to write, written by the producer only.
 * @tail:	next record to read, written by the consumer only.
 * @rec:	the records.
 */
struct cdsm_ring {
	u32 head;
	u32 tail;
	struct cdsm_fault_raw rec[CDSM_RING_LEN];
};

static struct cdsm_ring **cdsm_rings;

/*
 * Whether faults on @vma can be recorded: only memory through which tasks
 * can communicate, never code (every process running a program or library
 * reads the same page-cache pages there, which would pair all of them),
 * device or PFN mappings. Private file mappings are checked again once the
 * frame is known (cdsm_fault_resolve()).
 */
static bool cdsm_vma_recorded(const struct vm_area_struct *vma)
{
	return !(vma->vm_flags & (VM_EXEC | VM_IO | VM_PFNMAP | VM_MIXEDMAP));
}

/*
 * The file of a shared mapping, as the worker's table of file homes keys it:
 * inode number and device, stable while the file exists (an address_space
 * pointer could name another file once freed). Four loads; nothing here
 * sleeps or locks (the VMA holds a reference on the file).
 */
static u64 cdsm_file_id(const struct file *file)
{
	const struct inode *inode = file_inode(file);

	return (u64)inode->i_ino ^ ((u64)inode->i_sb->s_dev << 32);
}

/*
 * Finds the PFN mapped at @addr and whether its entry is PROT_NONE; when
 * nothing is mapped, sets *@migrating (if not NULL) when a migration entry
 * stands there. Lockless, with interrupts off in an mm this CPU runs, and
 * with GUP-fast's checks (present or not, leaf or table; user page tables
 * hold no bad entries): each level is read once and the next one is found
 * from that copy.
 */
static unsigned int cdsm_walk(struct mm_struct *mm, unsigned long addr,
			      unsigned long *pfn, bool *protnone, bool *migrating)
{
	pgd_t pgd = READ_ONCE(*pgd_offset(mm, addr));
	p4d_t p4d;
	pud_t pud;
	pmd_t pmd;
	pte_t pte;

	if (!pgd_present(pgd))
		return 0;
	p4d = READ_ONCE(*p4d_offset(&pgd, addr));
	if (!p4d_present(p4d))
		return 0;
	pud = READ_ONCE(*pud_offset(&p4d, addr));
	if (!pud_present(pud))
		return 0;
	if (pud_leaf(pud)) {
		*pfn = pud_pfn(pud) + ((addr & ~PUD_MASK) >> PAGE_SHIFT);
		*protnone = false;
		return PUD_SHIFT;
	}
	pmd = READ_ONCE(*pmd_offset(&pud, addr));
	if (!pmd_present(pmd)) {
		if (migrating)
			*migrating = is_pmd_migration_entry(pmd);
		return 0;
	}
	if (pmd_leaf(pmd)) {
		*pfn = pmd_pfn(pmd) + ((addr & ~PMD_MASK) >> PAGE_SHIFT);
		*protnone = pmd_protnone(pmd);
		return PMD_SHIFT;
	}
	pte = READ_ONCE(*pte_offset_kernel(&pmd, addr));
	if (!pte_present(pte)) {
		if (migrating)
			*migrating = is_swap_pte(pte) &&
				     is_migration_entry(pte_to_swp_entry(pte));
		return 0;
	}
	*pfn = pte_pfn(pte);
	*protnone = pte_protnone(pte);
	return PAGE_SHIFT;
}

static unsigned int cdsm_lookup_pfn(struct mm_struct *mm, unsigned long addr, unsigned long *pfn,
				    bool *protnone, bool *migrating)
{
	unsigned long flags;
	unsigned int shift;

	if (migrating)
		*migrating = false;
	local_irq_save(flags);
	shift = cdsm_walk(mm, addr, pfn, protnone, migrating);
	local_irq_restore(flags);
	return shift;
}

/*
 * @raw is the fault of @sharer at @address: a fault that came back through
 * handle_mm_fault() after VM_FAULT_RETRY (under the per-VMA lock, a fault
 * that needs the mmap lock retries with it), or a second fault on the page
 * before the worker looked at the first (a read of untouched memory, then
 * the write). The first record stands for both: the worker finds what the
 * last one mapped.
 */
static bool cdsm_fault_repeats(const struct cdsm_fault_raw *raw, u32 sharer,
			       unsigned long address)
{
	return raw->sharer == sharer && !((raw->vaddr ^ address) >> PAGE_SHIFT);
}

/* A tracked task's fault: pushes what is known at entry into this CPU's ring. */
static noinline void notrace cdsm_fault_record(struct vm_area_struct *vma,
					       unsigned long address, u32 sharer)
{
	struct mm_struct *mm = vma->vm_mm;
	struct cdsm_ring *ring = cdsm_rings[smp_processor_id()];
	u32 head = ring->head, tail;
	struct cdsm_fault_raw *raw;
	bool protnone, migrating;
	unsigned int shift;
	unsigned long pfn;

	/* Pairs with the consumer's release: its slots are free to reuse. */
	tail = smp_load_acquire(&ring->tail);
	if (head != tail &&
	    cdsm_fault_repeats(&ring->rec[(head - 1) % CDSM_RING_LEN], sharer, address))
		return;
	if (head - tail >= CDSM_RING_LEN) {
		cdsm_stat_add(CDSM_STAT_DROPPED, 1);
		return;
	}
	raw = &ring->rec[head % CDSM_RING_LEN];
	raw->vaddr = address;
	raw->mm = (unsigned long)mm;
	raw->sharer = sharer;
	shift = cdsm_lookup_pfn(mm, address, &pfn, &protnone, &migrating);
	raw->entry_shift = shift;
	raw->entry_paddr = shift ? PFN_PHYS(pfn) | (address & ~PAGE_MASK) : 0;
	raw->flags = (shift && protnone ? CDSM_RAW_HINT : 0) |
		     (migrating ? CDSM_RAW_MIGRATING : 0);
	raw->file = 0;
	if (!(vma->vm_flags & VM_MAYSHARE))
		raw->flags |= CDSM_RAW_PRIVATE |
			      (vma_is_anonymous(vma) ? 0 : CDSM_RAW_FILE_PRIVATE);
	else if (vma->vm_file)
		raw->file = cdsm_file_id(vma->vm_file);
	raw->file_ns = raw->file ? ktime_get_mono_fast_ns() : 0;
	/* Publish the record to the consumer's acquire of head. */
	smp_store_release(&ring->head, head + 1);
	if (raw->flags & CDSM_RAW_HINT)
		cdsm_stat_add(CDSM_STAT_REARM_TAKEN, 1);
}

/*
 * The ftrace callback at handle_mm_fault(vma, address, flags, regs). Most
 * faults are not a tracked task's: they leave after a few loads.
 */
static void notrace cdsm_fault_entry(unsigned long ip, unsigned long parent_ip,
				     struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct vm_area_struct *vma = (void *)cdsm_fregs_arg(fregs, 0);
	struct cdsm_task *t;
	u32 sharer;

	cdsm_stat_add(CDSM_STAT_FAULTS, 1);
	if (!cdsm_tasks_tracked() || vma->vm_mm != current->mm || !cdsm_vma_recorded(vma))
		return;
	/*
	 * The task hash's RCU read side, this CPU's ring. No recursion guard
	 * (ftrace_test_recursion_trylock()): nothing below can fault on user
	 * memory, and handle_mm_fault() is never called from interrupts.
	 */
	preempt_disable_notrace();
	t = cdsm_task_lookup(current);
	sharer = t ? t->sharer : 0;
	if (sharer)
		cdsm_fault_record(vma, cdsm_fregs_arg(fregs, 1), sharer);
	preempt_enable_notrace();
}

static struct ftrace_ops cdsm_fault_ops = {
	.func = cdsm_fault_entry,
	/* Refuse sysctl kernel.ftrace_enabled=0, which would stop the callback unseen. */
	.flags = FTRACE_OPS_FL_PERMANENT,
};

static bool cdsm_fault_registered;

/**
 * struct cdsm_resolver - the mm in which the worker looks faults up.
 * @key:	cdsm_fault_raw.mm of the last fault looked up.
 * @sharer:	that fault's task.
 * @mm:		the mm @key names, referenced and in use by the worker
 *		(kthread_use_mm()), or NULL if @sharer's task is gone or has
 *		another mm since (an exec).
 */
struct cdsm_resolver {
	u64 key;
	u32 sharer;
	struct mm_struct *mm;
};

static void cdsm_resolver_put(struct cdsm_resolver *r)
{
	if (r->mm) {
		kthread_unuse_mm(r->mm);
		mmput(r->mm);
	}
	r->mm = NULL;
	r->key = 0;
}

/*
 * Enters the mm of @raw's fault, found through its task (the key is never
 * dereferenced: the mm may be gone); false if the task exited or runs
 * another program. A failure is retried for another task of the same mm.
 */
static bool cdsm_resolver_enter(struct cdsm_resolver *r, const struct cdsm_fault_raw *raw)
{
	struct mm_struct *mm;

	if (raw->mm == r->key && (r->mm || raw->sharer == r->sharer))
		return r->mm;
	cdsm_resolver_put(r);
	r->key = raw->mm;
	r->sharer = raw->sharer;
	mm = cdsm_sharer_mm(raw->sharer);
	if (mm && (unsigned long)mm != raw->mm) {
		mmput(mm);
		mm = NULL;
	}
	if (mm)
		kthread_use_mm(mm);
	r->mm = mm;
	return mm;
}

/*
 * What @page holds: its folio's mapping and index, which a migration copies
 * and a reuse of the frame changes (cdsm_frame_ident()). Read racily, under
 * the walk's protection: the page is not freed meanwhile, and a truncation
 * racing with the read only makes the table drop the block's sharers.
 */
static u32 cdsm_page_ident(struct page *page)
{
	struct folio *folio = page_folio(page);

	return cdsm_frame_ident((unsigned long)READ_ONCE(folio->mapping),
				READ_ONCE(folio->index));
}

/* What @raw's task maps at its address now, made into a record (cdsm_fault_resolve()). */
static enum cdsm_resolved cdsm_fault_lookup(struct cdsm_resolver *r,
					    const struct cdsm_fault_raw *raw,
					    struct cdsm_fault_rec *rec)
{
	struct cdsm_frame now = {};
	unsigned long flags, pfn;
	struct page *page;
	bool protnone;

	if (!cdsm_resolver_enter(r, raw))
		return CDSM_RESOLVED_GONE;
	/*
	 * As in GUP-fast: this CPU is in the mm's cpumask (kthread_use_mm()),
	 * and with interrupts off it holds off the TLB shootdown that comes
	 * before page tables or the page itself are freed.
	 */
	local_irq_save(flags);
	now.shift = cdsm_walk(r->mm, raw->vaddr, &pfn, &protnone, NULL);
	if (now.shift) {
		now.paddr = PFN_PHYS(pfn) | (raw->vaddr & ~PAGE_MASK);
		now.zero = is_zero_pfn(pfn);
		if (pfn_valid(pfn)) {
			page = pfn_to_page(pfn);
			now.anon = PageAnon(page);
			now.ident = cdsm_page_ident(page);
			/* The flag of a PMD-mapped THP is its head page's. */
			if (now.shift > PAGE_SHIFT)
				page = compound_head(page);
			now.cow_shared = now.anon && !PageAnonExclusive(page);
		}
	}
	local_irq_restore(flags);
	return cdsm_fault_resolve(raw, &now, rec);
}

/**
 * cdsm_fault_init() - allocate the per-CPU rings.
 *
 * Return: 0 or -ENOMEM.
 */
int cdsm_fault_init(void)
{
	int cpu;

	cdsm_rings = kcalloc(nr_cpu_ids, sizeof(*cdsm_rings), GFP_KERNEL);
	if (!cdsm_rings)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		cdsm_rings[cpu] = kvzalloc_node(sizeof(struct cdsm_ring), GFP_KERNEL,
						cpu_to_node(cpu));
		if (!cdsm_rings[cpu]) {
			cdsm_fault_exit();
			return -ENOMEM;
		}
	}
	return 0;
}

/**
 * cdsm_fault_start() - attach the callback to handle_mm_fault().
 *
 * Return: 0, or the error of ftrace after a message.
 */
int cdsm_fault_start(void)
{
	int err;

	err = ftrace_set_filter_ip(&cdsm_fault_ops, (unsigned long)handle_mm_fault, 0, 0);
	if (!err)
		err = register_ftrace_function(&cdsm_fault_ops);
	if (err) {
		pr_err("cannot attach an ftrace callback to handle_mm_fault: %d%s\n", err,
		       err == -EBUSY ? " (is sysctl kernel.ftrace_enabled 0?)" : "");
		ftrace_free_filter(&cdsm_fault_ops);
		return err;
	}
	cdsm_fault_registered = true;
	return 0;
}

/**
 * cdsm_fault_stop() - detach the callback; none runs afterwards.
 *
 * Context: sleeps (ftrace waits until no task is left in the callback).
 */
void cdsm_fault_stop(void)
{
	if (!cdsm_fault_registered)
		return;
	unregister_ftrace_function(&cdsm_fault_ops);
	ftrace_free_filter(&cdsm_fault_ops);
	cdsm_fault_registered = false;
}

/**
 * cdsm_fault_exit() - free the rings.
 */
void cdsm_fault_exit(void)
{
	int cpu;

	if (!cdsm_rings)
		return;
	for_each_possible_cpu(cpu)
		kvfree(cdsm_rings[cpu]);
	kfree(cdsm_rings);
	cdsm_rings = NULL;
}

/**
 * cdsm_fault_drain() - take faults out of a CPU's ring and look up the
 * frames they mapped.
 * @cpu:	the CPU.
 * @out:	room for @max records.
 * @max:	faults to take at most.
 * @more:	set to whether any fault was taken (some may give no record).
 *
 * Context: the worker, the only consumer, with cdsm_apps_lock() held
 * (cdsm_sharer_mm()); sleeps. Counts the records as tracked faults, and
 * the faults whose task or mapping is gone as dropped.
 * Return: the number of records written to @out.
 */
unsigned int cdsm_fault_drain(int cpu, struct cdsm_fault_rec *out, unsigned int max,
			      bool *more)
{
	struct cdsm_ring *ring = cdsm_rings[cpu];
	/* Pairs with the producer's release: records up to head are written. */
	u32 tail = ring->tail, head = smp_load_acquire(&ring->head);
	struct cdsm_resolver r = {};
	unsigned int n = 0, taken = 0;
	struct cdsm_fault_raw raw;

	while (tail != head && taken < max) {
		raw = ring->rec[tail++ % CDSM_RING_LEN];
		/* The copy is done before the producer may reuse the slot. */
		smp_store_release(&ring->tail, tail);
		taken++;
		switch (cdsm_fault_lookup(&r, &raw, &out[n])) {
		case CDSM_RESOLVED_RECORD:
			n++;
			break;
		case CDSM_RESOLVED_GONE:
			cdsm_stat_add(CDSM_STAT_DROPPED, 1);
			break;
		case CDSM_RESOLVED_SKIP:
			break;
		}
	}
	cdsm_resolver_put(&r);
	cdsm_stat_add(CDSM_STAT_TRACKED_FAULTS, n);
	*more = taken;
	return n;
}

/**
 * cdsm_fault_mem_sz() - memory of the rings.
 *
 * Return: bytes.
 */
size_t cdsm_fault_mem_sz(void)
{
	return num_possible_cpus() * sizeof(struct cdsm_ring);
}
