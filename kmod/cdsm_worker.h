/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cdsm worker: a kernel thread that, every rearm_period_ms, drains the fault
 * rings into the block table and the matrices, grows matrices, re-arms
 * pages, ages matrices, expires ended applications and sends events.
 */
#ifndef _CDSM_WORKER_H
#define _CDSM_WORKER_H

#include <linux/types.h>

int cdsm_worker_start(void);
void cdsm_worker_stop(void);
size_t cdsm_worker_mem_sz(void);
u64 cdsm_worker_evictions(void);

#endif /* _CDSM_WORKER_H */
