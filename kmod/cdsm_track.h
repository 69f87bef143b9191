/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cdsm tracking: which tasks join which application. The task lifecycle
 * tracepoints (fork, exit, cgroup attach and rmdir) and CDSM_IOC_TRACK decide;
 * the registry (cdsm_app.h) holds the result.
 */
#ifndef _CDSM_TRACK_H
#define _CDSM_TRACK_H

#include <linux/types.h>

int cdsm_track_start(void);
void cdsm_track_stop(void);
int cdsm_track_pid(pid_t pid, u32 *app_id);
int cdsm_track_cgroup(const char *path, u32 *app_id);

#endif /* _CDSM_TRACK_H */
