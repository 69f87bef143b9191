/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cdsm fault source: an ftrace callback at the entry of handle_mm_fault()
 * records (task, address) of tracked tasks' faults into per-CPU rings; the
 * worker drains them and looks up the frames the faults mapped.
 */
#ifndef _CDSM_FAULT_H
#define _CDSM_FAULT_H

#include <linux/types.h>

#include "cdsm_core.h"

/* Records per CPU ring (a power of two). */
#define CDSM_RING_LEN 4096

int cdsm_fault_init(void);
int cdsm_fault_start(void);
void cdsm_fault_stop(void);
void cdsm_fault_exit(void);
unsigned int cdsm_fault_drain(int cpu, struct cdsm_fault_rec *out, unsigned int max,
			      bool *more);
size_t cdsm_fault_mem_sz(void);

#endif /* _CDSM_FAULT_H */
