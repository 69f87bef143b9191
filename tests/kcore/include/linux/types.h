/* SPDX-License-Identifier: GPL-2.0 */
/* User-space stand-in for the kernel's <linux/types.h>, for testing kmod/cdsm_core.c. */
#ifndef CDSM_KCORE_COMPAT_TYPES_H
#define CDSM_KCORE_COMPAT_TYPES_H

#include_next <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

#define U32_MAX UINT32_MAX

#endif
