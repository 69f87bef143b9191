// SPDX-License-Identifier: GPL-2.0
// Layout of the kernel/user ABI (include/uapi/linux/cdsm.h): fixed sizes and offsets, no
// implicit padding, 8-byte alignment of 64-bit fields, so that 32- and 64-bit user space and
// the module agree. A failure here is an ABI change: bump CDSM_ABI_VERSION.
#include <gtest/gtest.h>
#include <linux/cdsm.h>

#include <cstddef>

#define LAYOUT(type, field, off) static_assert(offsetof(type, field) == (off), #type "." #field)

LAYOUT(cdsm_app_info, app_id, 0);
LAYOUT(cdsm_app_info, root_pid, 24);
LAYOUT(cdsm_app_info, uid, 28);
LAYOUT(cdsm_app_info, start_ns, 32);
LAYOUT(cdsm_app_info, kmem_bytes, 64);
LAYOUT(cdsm_app_info, comm, 72);
static_assert(sizeof(cdsm_app_info) == 88);

LAYOUT(cdsm_list_apps, capacity, 4);
LAYOUT(cdsm_list_apps, apps_ptr, 16);
static_assert(sizeof(cdsm_list_apps) == 24);

LAYOUT(cdsm_task_info, index, 8);
LAYOUT(cdsm_task_info, arrival_ns, 16);
LAYOUT(cdsm_task_info, comm, 24);
static_assert(sizeof(cdsm_task_info) == 40);

LAYOUT(cdsm_get_tasks, tasks_ptr, 16);
static_assert(sizeof(cdsm_get_tasks) == 24);

LAYOUT(cdsm_get_matrix, dim, 12);
LAYOUT(cdsm_get_matrix, cells_ptr, 16);
LAYOUT(cdsm_get_matrix, snapshot_ns, 32);
// The first version ended here; the module still takes it (the aged matrix).
static_assert(offsetof(cdsm_get_matrix, view) == CDSM_GET_MATRIX_SIZE_V1);
LAYOUT(cdsm_get_matrix, pad, 44);
static_assert(sizeof(cdsm_get_matrix) == 48);

static_assert(sizeof(cdsm_app_op) == 8);

LAYOUT(cdsm_track, path_ptr, 16);
LAYOUT(cdsm_track, app_id, 24);
static_assert(sizeof(cdsm_track) == 32);

LAYOUT(cdsm_params, age_period_ms, 36);
static_assert(sizeof(cdsm_params) == 40);

LAYOUT(cdsm_counters, faults, 8);
LAYOUT(cdsm_counters, events_lost, 96);
LAYOUT(cdsm_counters, migrated, 104);
static_assert(sizeof(cdsm_counters) == 112);

TEST(Abi, IoctlNumbersEncodeSizes) {
    EXPECT_EQ(_IOC_TYPE(CDSM_IOC_GET_MATRIX), 0xCDu);
    EXPECT_EQ(_IOC_SIZE(CDSM_IOC_GET_MATRIX), sizeof(cdsm_get_matrix));
    EXPECT_EQ(_IOC_SIZE(CDSM_IOC_GET_COUNTERS), sizeof(cdsm_counters));
    EXPECT_EQ(_IOC_NR(CDSM_IOC_SET_PARAMS), 0x0au);
}

TEST(Abi, FirstFieldOfEveryArgumentIsItsSize) {
    EXPECT_EQ(offsetof(cdsm_list_apps, size), 0u);
    EXPECT_EQ(offsetof(cdsm_get_tasks, size), 0u);
    EXPECT_EQ(offsetof(cdsm_get_matrix, size), 0u);
    EXPECT_EQ(offsetof(cdsm_app_op, size), 0u);
    EXPECT_EQ(offsetof(cdsm_track, size), 0u);
    EXPECT_EQ(offsetof(cdsm_params, size), 0u);
    EXPECT_EQ(offsetof(cdsm_counters, size), 0u);
}
