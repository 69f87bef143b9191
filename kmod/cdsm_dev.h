/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cdsm control device /dev/cdsm (mode 0600): the ioctls of
 * include/uapi/linux/cdsm.h.
 */
#ifndef _CDSM_DEV_H
#define _CDSM_DEV_H

int cdsm_dev_init(void);
void cdsm_dev_exit(void);

#endif /* _CDSM_DEV_H */
