/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * cdsm: communication detection through shared memory — the kernel/user ABI.
 *
 * Shared by cdsm.ko and user space (libcdsm, cdsmd, cdsmctl). Every struct has a fixed layout
 * (checked by tests); the ABI version changes whenever a layout or a meaning changes.
 */
#ifndef _UAPI_LINUX_CDSM_H
#define _UAPI_LINUX_CDSM_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Incremented on every incompatible change of this file. */
#define CDSM_ABI_VERSION 1

#define CDSM_DEVICE_NAME "cdsm"
#define CDSM_IOC_MAGIC 0xCD

/* CDSM_IOC_ABI_VERSION: returns CDSM_ABI_VERSION as the ioctl's result. */
#define CDSM_IOC_ABI_VERSION _IO(CDSM_IOC_MAGIC, 0x00)

#endif /* _UAPI_LINUX_CDSM_H */
