/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cdsm re-arming: makes pages of tracked applications fault again with the
 * kernel's own NUMA-balancing hinting faults (change_prot_numa()).
 */
#ifndef _CDSM_REARM_H
#define _CDSM_REARM_H

#include <linux/types.h>

struct cdsm_app;
struct dentry;

int cdsm_rearm_init(void);
bool cdsm_rearm_available(void);
bool cdsm_rearm_numa_normal(void);
void cdsm_rearm_check_sysctl(bool warn);
void cdsm_rearm_debugfs_init(struct dentry *dir);
void cdsm_rearm_app(struct cdsm_app *app, unsigned int period_ms, unsigned int rate_bp,
		    void (*drain)(void));

#endif /* _CDSM_REARM_H */
