/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cdsm fault source: a kretprobe on handle_mm_fault() that records
 * (task, physical address) of tracked tasks' faults into per-CPU rings,
 * drained by the worker.
 */
#ifndef _CDSM_FAULT_H
#define _CDSM_FAULT_H

#include <linux/types.h>

/* Records per CPU ring (a power of two). */
#define CDSM_RING_LEN 4096

/**
 * struct cdsm_fault_rec - one recorded fault.
 * @paddr:	physical address of the faulting byte.
 * @old_paddr:	its address before the fault if the kernel migrated the page
 *		on a hinting fault, else 0.
 * @file:	id of the file of a shared mapping (cdsm_file_id()), whose home
 *		rule applies; 0 for private memory.
 * @file_ns:	with @file, when the fault returned (ktime_get_mono_fast_ns():
 *		orders faults recorded on different CPUs); else 0.
 * @sharer:	cdsm_sharer() of the faulting task.
 * @page_shift:	log2 of the size of the page mapped at @paddr (PAGE_SHIFT,
 *		or PMD_SHIFT for a huge page): the range whose blocks move with
 *		@old_paddr or are forgotten with @fresh.
 * @fresh:	the fault gave private memory a new frame (first touch or copy
 *		on write): what the table knows of that frame is stale.
 * @pad:	unused.
 */
struct cdsm_fault_rec {
	u64 paddr;
	u64 old_paddr;
	u64 file;
	u64 file_ns;
	u32 sharer;
	u8 page_shift;
	u8 fresh;
	u16 pad;
};

int cdsm_fault_init(void);
int cdsm_fault_start(void);
void cdsm_fault_stop(void);
void cdsm_fault_exit(void);
unsigned int cdsm_fault_drain(int cpu, struct cdsm_fault_rec *out, unsigned int max);
u64 cdsm_fault_missed(void);
size_t cdsm_fault_mem_sz(void);

#endif /* _CDSM_FAULT_H */
