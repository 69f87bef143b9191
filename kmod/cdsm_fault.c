// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm fault source. The kretprobe on handle_mm_fault() sees every user
 * page fault, hinting faults of NUMA balancing included:
 *
 * - at entry, it skips (no return probe armed) unless the current task is
 *   tracked, the fault is on its own mm (GUP on another process comes
 *   through here too) and the memory can carry communication (see
 *   cdsm_vma_recorded()); it notes whether the PTE is PROT_NONE, i.e. a
 *   hinting fault, or a migration entry (the fault waits for the page),
 *   and, for a shared mapping, which file it maps (cdsm_file_id());
 * - at return, if the fault succeeded, it finds the PFN with a lockless
 *   page-table walk (interrupts off, as GUP-fast does: page tables are not
 *   freed under it) and pushes (task, physical address) into this CPU's
 *   single-producer ring. A full ring drops the record and counts it.
 *
 * Nothing here sleeps, allocates or takes a lock other than RCU.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/pgtable.h>
#include <linux/ptrace.h>
#include <linux/slab.h>
#include <linux/swap.h>
#include <linux/swapops.h>
#include <linux/timekeeping.h>
#include <linux/vmalloc.h>

#include "cdsm_app.h"
#include "cdsm_fault.h"
#include "cdsm_stats.h"

/**
 * struct cdsm_ring - a CPU's records: produced by the fault probe on that
 * CPU (preemption off), consumed by the worker.
 * @head:	next record to write, written by the producer only.
 * @tail:	next record to read, written by the consumer only.
 * @rec:	the records.
 */
struct cdsm_ring {
	u32 head;
	u32 tail;
	struct cdsm_fault_rec rec[CDSM_RING_LEN];
};

static struct cdsm_ring **cdsm_rings;

/**
 * struct cdsm_fault_data - kretprobe instance data, entry to return.
 * @address:	the faulting user address.
 * @hint_pfn:	PFN under a PROT_NONE entry at entry (hinting fault), else 0.
 * @entry_pfn:	PFN mapped at entry, if @page_shift.
 * @file:	cdsm_file_id() of a shared mapping's file, else 0.
 * @sharer:	the tracked task.
 * @page_shift:	log2 of the page size mapped at entry, 0 if none.
 * @migrating:	at entry the page was being migrated (a migration entry):
 *		the fault waited for it and maps the same data in a new frame.
 * @private:	a private mapping: a frame it gets at this fault is new to it.
 * @file_private: a private file mapping: only its copied-on-write pages
 *		are recorded, not the file's pages it maps until written.
 */
struct cdsm_fault_data {
	unsigned long address;
	unsigned long hint_pfn;
	unsigned long entry_pfn;
	u64 file;
	u32 sharer;
	u8 page_shift;
	bool migrating;
	bool private;
	bool file_private;
};

/*
 * Whether faults on @vma can be recorded: only memory through which tasks
 * can communicate, never code (every process running a program or library
 * reads the same page-cache pages there, which would pair all of them),
 * device or PFN mappings. Private file mappings are checked again at
 * return (cdsm_fault_return()).
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
 * stands there.
 */
static unsigned int cdsm_walk(struct mm_struct *mm, unsigned long addr,
			      unsigned long *pfn, bool *protnone, bool *migrating)
{
	pgd_t *pgdp = pgd_offset(mm, addr), pgd = READ_ONCE(*pgdp);
	p4d_t *p4dp, p4d;
	pud_t *pudp, pud;
	pmd_t *pmdp, pmd;
	pte_t pte;

	if (pgd_none(pgd) || pgd_bad(pgd))
		return 0;
	p4dp = p4d_offset(pgdp, addr);
	p4d = READ_ONCE(*p4dp);
	if (p4d_none(p4d) || p4d_bad(p4d))
		return 0;
	pudp = pud_offset(p4dp, addr);
	pud = READ_ONCE(*pudp);
	if (pud_none(pud))
		return 0;
	if (pud_leaf(pud)) {
		if (!pud_present(pud))
			return 0;
		*pfn = pud_pfn(pud) + ((addr & ~PUD_MASK) >> PAGE_SHIFT);
		*protnone = false;
		return PUD_SHIFT;
	}
	if (pud_bad(pud))
		return 0;
	pmdp = pmd_offset(pudp, addr);
	pmd = READ_ONCE(*pmdp);
	if (pmd_none(pmd))
		return 0;
	if (is_pmd_migration_entry(pmd)) {
		if (migrating)
			*migrating = true;
		return 0;
	}
	if (pmd_leaf(pmd)) {
		if (!pmd_present(pmd))
			return 0;
		*pfn = pmd_pfn(pmd) + ((addr & ~PMD_MASK) >> PAGE_SHIFT);
		*protnone = pmd_protnone(pmd);
		return PMD_SHIFT;
	}
	if (pmd_bad(pmd))
		return 0;
	pte = READ_ONCE(*((pte_t *)pmd_page_vaddr(pmd) + pte_index(addr)));
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

static unsigned int cdsm_lookup_pfn(unsigned long addr, unsigned long *pfn, bool *protnone,
				    bool *migrating)
{
	unsigned long flags;
	unsigned int shift;

	if (migrating)
		*migrating = false;
	local_irq_save(flags);
	shift = cdsm_walk(current->mm, addr, pfn, protnone, migrating);
	local_irq_restore(flags);
	return shift;
}

/*
 * An anonymous page that the kernel does not hold exclusive to one process
 * (PG_anon_exclusive clear): shared copy-on-write since a fork (or merged by
 * KSM) until a write fault copies it or makes it exclusive again. The flag of
 * a PMD-mapped THP is its head page's. Lockless reads of the page's flags
 * (the fault just mapped it).
 */
static bool cdsm_cow_shared(unsigned long pfn, unsigned int shift)
{
	struct page *page;

	if (!pfn_valid(pfn))
		return false;
	page = pfn_to_page(pfn);
	if (shift > PAGE_SHIFT)
		page = compound_head(page);
	return PageAnon(page) && !PageAnonExclusive(page);
}

static int cdsm_fault_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct vm_area_struct *vma = (void *)regs_get_kernel_argument(regs, 0);
	struct cdsm_fault_data *d = (void *)ri->data;
	struct cdsm_task *t;
	bool protnone;

	cdsm_stat_add(CDSM_STAT_FAULTS, 1);
	if (!cdsm_tasks_tracked() || !current->mm ||
	    vma->vm_mm != current->mm || !cdsm_vma_recorded(vma))
		return 1;
	rcu_read_lock();
	t = cdsm_task_lookup(current);
	d->sharer = t ? t->sharer : 0;
	rcu_read_unlock();
	if (!d->sharer)
		return 1;
	d->address = regs_get_kernel_argument(regs, 1);
	d->hint_pfn = 0;
	d->page_shift = cdsm_lookup_pfn(d->address, &d->entry_pfn, &protnone, &d->migrating);
	d->private = !(vma->vm_flags & VM_MAYSHARE);
	d->file_private = d->private && !vma_is_anonymous(vma);
	d->file = !d->private && vma->vm_file ? cdsm_file_id(vma->vm_file) : 0;
	if (d->page_shift && protnone) {
		cdsm_stat_add(CDSM_STAT_REARM_TAKEN, 1);
		d->hint_pfn = d->entry_pfn;
	}
	return 0;
}
NOKPROBE_SYMBOL(cdsm_fault_entry);

static int cdsm_fault_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct cdsm_fault_data *d = (void *)ri->data;
	vm_fault_t ret = regs_return_value(regs);
	struct cdsm_fault_rec *rec;
	struct cdsm_ring *ring;
	unsigned int shift;
	unsigned long pfn;
	bool protnone;
	u32 head;

	/* A retried fault comes back through handle_mm_fault(). */
	if (ret & (VM_FAULT_ERROR | VM_FAULT_RETRY))
		return 0;
	shift = cdsm_lookup_pfn(d->address, &pfn, &protnone, NULL);
	if (!shift) {
		cdsm_stat_add(CDSM_STAT_DROPPED, 1);
		return 0;
	}
	/* A read of untouched memory maps the zero page: no one shares data there. */
	if (is_zero_pfn(pfn))
		return 0;
	/*
	 * A private file mapping maps the file's page-cache pages until written:
	 * every process that maps the file (a library's data, a program's
	 * read-only data) reads those; no task of the process can write them.
	 */
	if (d->file_private && (!pfn_valid(pfn) || !PageAnon(pfn_to_page(pfn))))
		return 0;
	/*
	 * Private memory shared copy-on-write with other processes (a fork's
	 * children before exec fault on their parent's re-armed pages): no
	 * process can write it without getting its own copy, so no data
	 * passes between processes there.
	 */
	if (d->private && cdsm_cow_shared(pfn, shift))
		return 0;
	ring = cdsm_rings[smp_processor_id()];
	head = ring->head;
	/* Pairs with the consumer's release: its slots are free to reuse. */
	if (head - smp_load_acquire(&ring->tail) >= CDSM_RING_LEN) {
		cdsm_stat_add(CDSM_STAT_DROPPED, 1);
		return 0;
	}
	rec = &ring->rec[head % CDSM_RING_LEN];
	rec->paddr = PFN_PHYS(pfn) | (d->address & ~PAGE_MASK);
	/* do_numa_page() may have migrated the page: its blocks move too. */
	rec->old_paddr = d->hint_pfn && d->hint_pfn != pfn ?
			 PFN_PHYS(d->hint_pfn) | (d->address & ~PAGE_MASK) : 0;
	rec->file = d->file;
	rec->file_ns = d->file ? ktime_get_mono_fast_ns() : 0;
	rec->sharer = d->sharer;
	/* A huge page split since entry moved (or was allocated) in 4 KiB parts. */
	rec->page_shift = d->page_shift ? min_t(unsigned int, shift, d->page_shift) : shift;
	/*
	 * Private memory got a new frame (first touch, or a copy on write):
	 * what the table knew of that frame came from its previous user. A
	 * fault that waited for a migration (a migration entry at entry, as
	 * when a partner's hinting fault moves the page) maps the same data:
	 * the migrating fault carries its blocks over (@old_paddr).
	 */
	rec->fresh = d->private && !d->hint_pfn && !d->migrating &&
		     (!d->page_shift || d->entry_pfn != pfn);
	/* Publish the record to the consumer's acquire of head. */
	smp_store_release(&ring->head, head + 1);
	cdsm_stat_add(CDSM_STAT_TRACKED_FAULTS, 1);
	return 0;
}
NOKPROBE_SYMBOL(cdsm_fault_return);

static struct kretprobe cdsm_krp = {
	.kp.symbol_name = "handle_mm_fault",
	.entry_handler = cdsm_fault_entry,
	.handler = cdsm_fault_return,
	.data_size = sizeof(struct cdsm_fault_data),
};

static bool cdsm_krp_registered;

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
 * cdsm_fault_start() - register the kretprobe on handle_mm_fault().
 *
 * Return: 0, or the error of register_kretprobe() after a message.
 */
int cdsm_fault_start(void)
{
	int err;

	/* Faults can sleep (I/O), so many may be in flight per CPU. */
	cdsm_krp.maxactive = max_t(int, 256, 16 * num_possible_cpus());
	err = register_kretprobe(&cdsm_krp);
	if (err) {
		pr_err("cannot register kretprobe on %s: %d\n",
		       cdsm_krp.kp.symbol_name, err);
		return err;
	}
	cdsm_krp_registered = true;
	return 0;
}

/**
 * cdsm_fault_stop() - unregister the kretprobe; no handler runs afterwards.
 */
void cdsm_fault_stop(void)
{
	if (cdsm_krp_registered)
		unregister_kretprobe(&cdsm_krp);
	cdsm_krp_registered = false;
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
 * cdsm_fault_drain() - take records out of a CPU's ring.
 * @cpu:	the CPU.
 * @out:	room for @max records.
 * @max:	records to take at most.
 *
 * Context: the worker, the only consumer.
 * Return: the number of records copied to @out.
 */
unsigned int cdsm_fault_drain(int cpu, struct cdsm_fault_rec *out, unsigned int max)
{
	struct cdsm_ring *ring = cdsm_rings[cpu];
	/* Pairs with the producer's release: records up to head are written. */
	u32 tail = ring->tail, head = smp_load_acquire(&ring->head);
	unsigned int n = 0;

	while (tail != head && n < max)
		out[n++] = ring->rec[tail++ % CDSM_RING_LEN];
	/* The copies are done before the producer may reuse the slots. */
	smp_store_release(&ring->tail, tail);
	return n;
}

/**
 * cdsm_fault_missed() - faults the kretprobe missed (no free instance).
 *
 * Return: the count since load.
 */
u64 cdsm_fault_missed(void)
{
	return cdsm_krp.nmissed + cdsm_krp.kp.nmissed;
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
