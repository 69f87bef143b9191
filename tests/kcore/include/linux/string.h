/* SPDX-License-Identifier: GPL-2.0 */
/* User-space stand-in for the kernel's <linux/string.h>, for kmod/cdsm_core.c. */
#ifndef CDSM_KCORE_COMPAT_STRING_H
#define CDSM_KCORE_COMPAT_STRING_H

#include <string.h>

#endif
