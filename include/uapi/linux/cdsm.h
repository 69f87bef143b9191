/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * cdsm: communication detection through shared memory — the kernel/user ABI.
 *
 * Shared by cdsm.ko and user space (libcdsm, cdsmd, cdsmctl). Every struct has a fixed layout
 * (checked by tests/kmod/abi_test) with explicit padding; every ioctl argument starts with a
 * __u32 size that the caller sets to sizeof(the struct it was built with), so that structs can
 * grow at their end: the kernel accepts a smaller size it knows (never smaller than the first
 * version), and a larger one whose extra bytes are zero (copy_struct_from_user semantics,
 * -E2BIG otherwise, and for any size above CDSM_ARG_MAX). The ABI version changes whenever a
 * layout or a meaning changes incompatibly.
 *
 * Who may do what (docs/security.md):
 * - Rights are the OPENER's: the credentials /dev/cdsm was opened with, never the caller's
 *   at the time of an ioctl, so a program may open the device and then drop its privileges,
 *   and passing the file to a more privileged (setuid) program gives it no more rights.
 *   Capabilities count only in the initial user namespace.
 * - Control (TRACK, UNTRACK, RELEASE, AGE, RESET, SET_PARAMS) needs CAP_SYS_ADMIN (-EPERM).
 * - Every application has an owner: the effective uid of its first task when that task joined
 *   (the tracked process, the first task that joined a cgroup application, the process that
 *   auto mode tracked), recorded once and never changed: a later task of another user, or the
 *   first task becoming another user (setuid, exec of a setuid program), changes nothing.
 *   A cgroup application no task joined yet has no owner (cdsm_app_info.uid = (__u32)-1).
 * - Reading an application (LIST_APPS shows it, GET_TASKS, GET_MATRIX) needs CAP_SYS_ADMIN or
 *   an opener's effective uid equal to the owner. Others get -ENOENT, as for an application
 *   that does not exist, and LIST_APPS leaves it out.
 * - ABI_VERSION, GET_PARAMS and GET_COUNTERS (module-wide totals) are open to every opener.
 * - The device node is 0600 root; a node made accessible to others grants only the above.
 * - Netlink events (every application's tasks) need CAP_SYS_ADMIN to join the group.
 *
 * Times are CLOCK_BOOTTIME nanoseconds. Strings are NUL-terminated.
 */
#ifndef _UAPI_LINUX_CDSM_H
#define _UAPI_LINUX_CDSM_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Incremented on every incompatible change of this file. */
#define CDSM_ABI_VERSION 2

#define CDSM_DEVICE_NAME "cdsm"
#define CDSM_IOC_MAGIC 0xCD
#define CDSM_COMM_LEN 16
/* Largest argument size accepted (a newer struct with unknown zero bytes). */
#define CDSM_ARG_MAX 4096

/* How an application was chosen (cdsm_app_info.kind, cdsm_track.kind). */
enum cdsm_track_kind {
	CDSM_TRACK_PID = 1,	/* a process tree: pid, its threads and descendants */
	CDSM_TRACK_CGROUP = 2,	/* every task in a cgroup v2 directory and below */
	CDSM_TRACK_AUTO = 3,	/* a process that reached auto_threads threads */
};

/* cdsm_app_info.flags */
#define CDSM_APP_ENDED (1U << 0)	/* its last task exited */
#define CDSM_APP_UNTRACKED (1U << 1)	/* no new tasks join (untracked) */
#define CDSM_APP_TRUNCATED (1U << 2)	/* tasks beyond max_tasks were left out */

/**
 * struct cdsm_app_info - one application.
 * @app_id:		unique id, never reused while the module is loaded.
 * @kind:		enum cdsm_track_kind.
 * @flags:		CDSM_APP_*.
 * @nr_tasks:		tasks that joined so far (indices 0..nr_tasks-1).
 * @nr_live_tasks:	tasks that have not exited.
 * @matrix_dim:		rows of the matrix now (>= nr_tasks unless truncated).
 * @root_pid:		pid given to CDSM_IOC_TRACK, or the process found by auto mode; 0 for cgroups.
 * @uid:		owner: effective uid of the first task when it joined, never changed; it may
 *			read the application. (__u32)-1 while no task joined (a cgroup's).
 * @start_ns:		when it was created.
 * @end_ns:		when its last task exited, 0 while it runs.
 * @events:		communication events counted (before aging).
 * @rearm_pages:	pages re-armed for extra faults.
 * @kmem_bytes:		kernel memory it uses (tasks and matrix).
 * @comm:		command name of the first task.
 */
struct cdsm_app_info {
	__u32 app_id;
	__u32 kind;
	__u32 flags;
	__u32 nr_tasks;
	__u32 nr_live_tasks;
	__u32 matrix_dim;
	__s32 root_pid;
	__u32 uid;
	__u64 start_ns;
	__u64 end_ns;
	__u64 events;
	__u64 rearm_pages;
	__u64 kmem_bytes;
	char comm[CDSM_COMM_LEN];
};

/**
 * struct cdsm_list_apps - argument of CDSM_IOC_LIST_APPS.
 * @size:	sizeof(struct cdsm_list_apps).
 * @capacity:	entries of struct cdsm_app_info at @apps_ptr.
 * @count:	out: number of applications (at most @capacity are written).
 * @pad:	zero.
 * @apps_ptr:	user pointer to @capacity struct cdsm_app_info.
 */
struct cdsm_list_apps {
	__u32 size;
	__u32 capacity;
	__u32 count;
	__u32 pad;
	__u64 apps_ptr;
};

/* cdsm_task_info.flags */
#define CDSM_TASK_EXITED (1U << 0)

/**
 * struct cdsm_task_info - one task of an application.
 * @tid:	thread id (in the initial pid namespace).
 * @tgid:	process id.
 * @index:	dense index in its application, in arrival order: its matrix row.
 * @flags:	CDSM_TASK_*.
 * @arrival_ns:	when it joined.
 * @comm:	command name when it joined.
 */
struct cdsm_task_info {
	__s32 tid;
	__s32 tgid;
	__u32 index;
	__u32 flags;
	__u64 arrival_ns;
	char comm[CDSM_COMM_LEN];
};

/**
 * struct cdsm_get_tasks - argument of CDSM_IOC_GET_TASKS.
 * @size:	sizeof(struct cdsm_get_tasks).
 * @app_id:	the application.
 * @capacity:	entries of struct cdsm_task_info at @tasks_ptr.
 * @count:	out: the number of records written, the first @count tasks (a
 *		snapshot: tasks that join meanwhile may be left out); or, when
 *		above @capacity, the number of tasks, none to be read: call again
 *		with a larger buffer.
 * @tasks_ptr:	user pointer to @capacity struct cdsm_task_info.
 */
struct cdsm_get_tasks {
	__u32 size;
	__u32 app_id;
	__u32 capacity;
	__u32 count;
	__u64 tasks_ptr;
};

/**
 * enum cdsm_matrix_view - which of an application's two matrices to read.
 * @CDSM_MATRIX_AGED:	the matrix the mapper follows: every cell loses a quarter
 *			(M - (M >> 2)) at each aging (every age_period_ms when set,
 *			and on CDSM_IOC_AGE, e.g. by cdsmd after a migration).
 * @CDSM_MATRIX_WHOLE:	the same events never aged: the whole run since tracking
 *			began (or CDSM_IOC_RESET). Cells saturate at U32_MAX.
 */
enum cdsm_matrix_view {
	CDSM_MATRIX_AGED = 0,
	CDSM_MATRIX_WHOLE = 1,
};

/**
 * struct cdsm_get_matrix - argument of CDSM_IOC_GET_MATRIX: a consistent snapshot.
 * @size:	sizeof(struct cdsm_get_matrix), or CDSM_GET_MATRIX_SIZE_V1 (40)
 *		from a caller without @view, which reads the aged matrix.
 * @app_id:	the application.
 * @capacity:	rows the buffer at @cells_ptr holds: capacity * capacity __u32.
 * @dim:	out: rows of the snapshot, = nr_tasks; -ENOSPC (and @dim set) when > @capacity.
 * @cells_ptr:	user pointer; out: dim * dim __u32, row-major, symmetric.
 * @events:	out: communication events counted (before aging).
 * @snapshot_ns: out: when the snapshot was taken.
 * @view:	enum cdsm_matrix_view; other values are -EINVAL.
 * @pad:	zero.
 */
struct cdsm_get_matrix {
	__u32 size;
	__u32 app_id;
	__u32 capacity;
	__u32 dim;
	__u64 cells_ptr;
	__u64 events;
	__u64 snapshot_ns;
	__u32 view;
	__u32 pad;
};

/* Size of the first version of struct cdsm_get_matrix, without @view. */
#define CDSM_GET_MATRIX_SIZE_V1 40

/**
 * struct cdsm_app_op - argument of CDSM_IOC_AGE, _RESET, _RELEASE and _UNTRACK.
 * @size:	sizeof(struct cdsm_app_op).
 * @app_id:	the application.
 */
struct cdsm_app_op {
	__u32 size;
	__u32 app_id;
};

/**
 * struct cdsm_track - argument of CDSM_IOC_TRACK.
 * @size:	sizeof(struct cdsm_track).
 * @kind:	CDSM_TRACK_PID or CDSM_TRACK_CGROUP.
 * @pid:	CDSM_TRACK_PID: the process (in the caller's pid namespace).
 * @path_len:	CDSM_TRACK_CGROUP: bytes at @path_ptr, without a NUL, < 4096.
 * @path_ptr:	CDSM_TRACK_CGROUP: path of the cgroup v2 directory relative to the
 *		cgroup2 root, starting with '/' (e.g. "/system.slice/job_42").
 * @app_id:	out: the new application.
 * @pad:	zero.
 *
 * -EEXIST: the process is already tracked, or an application of the cgroup
 * still takes its new tasks. A cgroup's application takes them until it ends
 * (its last task exits) or is untracked; tracking the directory again then
 * starts a new application (a new run in the same directory).
 */
struct cdsm_track {
	__u32 size;
	__u32 kind;
	__s32 pid;
	__u32 path_len;
	__u64 path_ptr;
	__u32 app_id;
	__u32 pad;
};

/**
 * struct cdsm_params - argument of CDSM_IOC_GET_PARAMS and CDSM_IOC_SET_PARAMS.
 * @size:		sizeof(struct cdsm_params).
 * @block_shift:	log2 of the block size in bytes, 6..21 (default 8: 256 B).
 * @nr_sharers:		recent sharers per block, 1..8 (default 4); load time only.
 * @hash_entries_log2:	log2 of the block table entries; load time only.
 * @rearm_rate_bp:	pages re-armed per second, in basis points of the application's
 *			resident pages (default 100 = 1 %); 0 = first-touch faults only.
 * @rearm_period_ms:	period of the worker, 1..1000 ms (default 10).
 * @max_tasks:		largest matrix, in tasks, 2..5792 (default 4096).
 * @auto_threads:	track any process once it has this many threads; 0 = off (default).
 *			Limited per user and in all by the module parameters auto_per_uid and
 *			auto_max_apps; a process untracked or released is not tracked again.
 * @retention_s:	seconds an ended application stays readable; 0 = until released.
 * @age_period_ms:	age every matrix this often; 0 = only on request (default).
 * @pad:		zero.
 *
 * CDSM_IOC_SET_PARAMS changes every field at once; a field that cannot change at run time
 * must be given its current value (-EINVAL otherwise).
 */
struct cdsm_params {
	__u32 size;
	__u32 block_shift;
	__u32 nr_sharers;
	__u32 hash_entries_log2;
	__u32 rearm_rate_bp;
	__u32 rearm_period_ms;
	__u32 max_tasks;
	__u32 auto_threads;
	__u32 retention_s;
	__u32 age_period_ms;
};

/* cdsm_counters.status */
#define CDSM_STATUS_NUMA_BALANCING_NORMAL (1U << 0) /* kernel.numa_balancing has bit 0 */
#define CDSM_STATUS_REARM_AVAILABLE (1U << 1)	     /* change_prot_numa is usable */

/**
 * struct cdsm_counters - argument of CDSM_IOC_GET_COUNTERS: totals since load.
 * @size:		sizeof(struct cdsm_counters).
 * @status:		CDSM_STATUS_*: re-arming works only when both bits are set.
 * @faults:		page faults seen (handle_mm_fault calls).
 * @tracked_faults:	faults of tracked tasks that were recorded.
 * @comm_events:	communication events (pairs) counted.
 * @rearm_armed:	pages re-armed (PTEs made PROT_NONE by change_prot_numa).
 * @rearm_taken:	hinting faults taken by tracked tasks (kernel's own scanner included).
 * @dropped:		faults not recorded: full buffer, missed probe, out-of-range task.
 * @evictions:		block table entries replaced by another block.
 * @apps:		applications in the module now.
 * @tasks:		tasks in the module now (live or not).
 * @kmem_bytes:		kernel memory in use (table, buffers, applications).
 * @alloc_failures:	allocations that failed (and were survived).
 * @events_lost:	netlink events lost (queue full or no memory).
 * @migrated:		hinting faults of tracked tasks after which the kernel had migrated
 *			the page (its blocks follow it).
 */
struct cdsm_counters {
	__u32 size;
	__u32 status;
	__u64 faults;
	__u64 tracked_faults;
	__u64 comm_events;
	__u64 rearm_armed;
	__u64 rearm_taken;
	__u64 dropped;
	__u64 evictions;
	__u64 apps;
	__u64 tasks;
	__u64 kmem_bytes;
	__u64 alloc_failures;
	__u64 events_lost;
	__u64 migrated;
};

/*
 * Ioctls. All but CDSM_IOC_ABI_VERSION, LIST_APPS, GET_TASKS, GET_MATRIX, GET_PARAMS and
 * GET_COUNTERS need the opener's CAP_SYS_ADMIN; reading one application needs it or the
 * opener's effective uid equal to the application's owner (see the top of this file).
 * Errors: -ENOTTY unknown command, -EINVAL bad size or value, -E2BIG unknown non-zero
 * trailing bytes or size above CDSM_ARG_MAX, -EFAULT bad pointer, -ENOENT unknown application
 * (or another user's) or pid, -EPERM not allowed, -ENOSPC buffer too small or no free slot.
 */
#define CDSM_IOC_ABI_VERSION _IO(CDSM_IOC_MAGIC, 0x00)	/* returns CDSM_ABI_VERSION */
#define CDSM_IOC_LIST_APPS _IOWR(CDSM_IOC_MAGIC, 0x01, struct cdsm_list_apps)
#define CDSM_IOC_GET_TASKS _IOWR(CDSM_IOC_MAGIC, 0x02, struct cdsm_get_tasks)
#define CDSM_IOC_GET_MATRIX _IOWR(CDSM_IOC_MAGIC, 0x03, struct cdsm_get_matrix)
#define CDSM_IOC_AGE _IOW(CDSM_IOC_MAGIC, 0x04, struct cdsm_app_op)
#define CDSM_IOC_RESET _IOW(CDSM_IOC_MAGIC, 0x05, struct cdsm_app_op)
#define CDSM_IOC_RELEASE _IOW(CDSM_IOC_MAGIC, 0x06, struct cdsm_app_op)
#define CDSM_IOC_TRACK _IOWR(CDSM_IOC_MAGIC, 0x07, struct cdsm_track)
#define CDSM_IOC_UNTRACK _IOW(CDSM_IOC_MAGIC, 0x08, struct cdsm_app_op)
#define CDSM_IOC_GET_PARAMS _IOWR(CDSM_IOC_MAGIC, 0x09, struct cdsm_params)
#define CDSM_IOC_SET_PARAMS _IOW(CDSM_IOC_MAGIC, 0x0a, struct cdsm_params)
#define CDSM_IOC_GET_COUNTERS _IOWR(CDSM_IOC_MAGIC, 0x0b, struct cdsm_counters)

/*
 * Generic netlink family CDSM_GENL_NAME (initial network namespace only), multicast group
 * CDSM_GENL_MCGRP, which only CAP_SYS_ADMIN may join (the joiner's, at join time): one
 * CDSM_CMD_EVENT message per event, with CDSM_A_EVENT (u32, enum cdsm_event), CDSM_A_APP_ID
 * (u32) and, for task events, CDSM_A_TID, CDSM_A_TGID, CDSM_A_TASK_INDEX (u32) and
 * CDSM_A_COMM (string).
 */
#define CDSM_GENL_NAME "cdsm"
#define CDSM_GENL_VERSION 1
#define CDSM_GENL_MCGRP "events"

enum cdsm_genl_cmd {
	CDSM_CMD_UNSPEC,
	CDSM_CMD_EVENT,
	__CDSM_CMD_MAX,
};

enum cdsm_genl_attr {
	CDSM_A_UNSPEC,
	CDSM_A_EVENT,
	CDSM_A_APP_ID,
	CDSM_A_TID,
	CDSM_A_TGID,
	CDSM_A_TASK_INDEX,
	CDSM_A_COMM,
	__CDSM_A_MAX,
};
#define CDSM_A_MAX (__CDSM_A_MAX - 1)

enum cdsm_event {
	CDSM_EVENT_APP_STARTED = 1,
	CDSM_EVENT_APP_ENDED = 2,
	CDSM_EVENT_TASK_JOINED = 3,
	CDSM_EVENT_TASK_EXITED = 4,
};

#endif /* _UAPI_LINUX_CDSM_H */
