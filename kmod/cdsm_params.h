/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cdsm parameters: module parameters at load, changed at run time through
 * CDSM_IOC_SET_PARAMS. Readers use READ_ONCE(); one writer at a time.
 */
#ifndef _CDSM_PARAMS_H
#define _CDSM_PARAMS_H

#include <linux/types.h>
#include <linux/cdsm.h>

/* Applications tracked at once (the issue asks for at least 64). */
#define CDSM_MAX_APPS 256
/* Smallest matrix allocated for an application, in tasks. */
#define CDSM_MIN_MATRIX_DIM 16
/*
 * Largest max_tasks: an application's two matrices (aged and whole-run) of
 * 5792 tasks take 256 MiB together, the documented bound (5793 would pass
 * it); each is far below kvmalloc's INT_MAX limit, and the task index fits
 * the sharer id's 14 bits (cdsm_core.h).
 */
#define CDSM_MAX_TASKS 5792

extern struct cdsm_params cdsm_params;
/* Auto mode's quota (module parameters, see docs/kmod.md). */
extern unsigned int cdsm_auto_per_uid;
extern unsigned int cdsm_auto_max_apps;
/* The file_rule module parameter: true for "home", false for "all". */
extern bool cdsm_file_home;

int cdsm_params_init(void);
void cdsm_params_get(struct cdsm_params *p);
int cdsm_params_set(const struct cdsm_params *p);

#endif /* _CDSM_PARAMS_H */
