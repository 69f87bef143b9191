/* SPDX-License-Identifier: GPL-2.0 */
/* User-space copy of the kernel's hash_64() (include/linux/hash.h), for kmod/cdsm_core.c. */
#ifndef CDSM_KCORE_COMPAT_HASH_H
#define CDSM_KCORE_COMPAT_HASH_H

#include <linux/types.h>

#define GOLDEN_RATIO_64 0x61C8864680B583EBull

static inline u32 hash_64(u64 val, unsigned int bits)
{
	return (u32)(val * GOLDEN_RATIO_64 >> (64 - bits));
}

#endif
