/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cdsm registry, inside: what cdsm_app.c (the table, the task records and
 * their locks), cdsm_app_matrix.c (each application's matrices) and
 * cdsm_app_snapshot.c (the copies handed to readers) share. No other file
 * includes it: everyone else goes through cdsm_app.h.
 */
#ifndef _CDSM_APP_INTERNAL_H
#define _CDSM_APP_INTERNAL_H

#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>

#include "cdsm_core.h"
#include "cdsm_params.h"

struct cgroup;
struct mem_cgroup;

/**
 * struct cdsm_app - an application: its tasks and its matrix.
 * @ref:		references: its slot, and readers copying it out.
 * @id:			user-visible id, never reused while loaded.
 * @key:		slot | generation << 8 (CDSM_GEN_BITS), in the sharer ids.
 * @slot:		index in the application table.
 * @kind:		enum cdsm_track_kind.
 * @flags:		CDSM_APP_*, under cdsm_lock.
 * @root_pid:		the tracked process, 0 for a cgroup.
 * @uid:		owner: effective uid of the first task when it joined, never
 *			changed; INVALID_UID until a task joined (a cgroup's).
 * @quota_uid:		the user auto mode's per-user quota charges for an automatic
 *			application (cdsm_auto_quota_uid()); unused for other kinds.
 * @memcg:		memory cgroup of the first task (a reference), or NULL: the
 *			application's memory is charged to it.
 * @cgrp:		the tracked cgroup (a reference), or NULL.
 * @start_ns:		creation time.
 * @end_ns:		when the last task exited, 0 while running.
 * @nr_tasks:		tasks joined, under cdsm_lock.
 * @nr_live:		tasks not exited, under cdsm_lock.
 * @max_tasks:		limit of @nr_tasks, max_tasks when created.
 * @chunks:		@max_tasks / CDSM_TASK_CHUNK pointers to task records.
 * @spare_chunk:	a chunk kept ready for atomic context, refilled by the worker.
 * @comm:		command name of the first task, as its @comm.
 * @mutex:		protects @matrix, @whole and @events (cdsm_app_matrix_lock()).
 * @matrix:		communication events, aged (CDSM_MATRIX_AGED), @matrix.dim >=
 *			@nr_tasks after the worker grew it.
 * @whole:		the same events, never aged (CDSM_MATRIX_WHOLE): the whole
 *			run since tracking began or the last reset; @whole.dim == @matrix.dim.
 * @events:		communication events counted.
 * @rearm_pages:	pages re-armed (re-arming, through cdsm_app_add_rearmed()).
 * @homes:		the home of each shared file, used by the worker only;
 *			@homes.files is NULL until the worker allocated it.
 * @kmem_bytes:		memory of chunks, both matrices and @homes.
 */
struct cdsm_app {
	struct kref ref;
	u32 id;
	u32 key;
	u32 slot;
	u32 kind;
	u32 flags;
	pid_t root_pid;
	kuid_t uid;
	kuid_t quota_uid;
	struct mem_cgroup *memcg;
	struct cgroup *cgrp;
	u64 start_ns;
	u64 end_ns;
	u32 nr_tasks;
	u32 nr_live;
	u32 max_tasks;
	struct cdsm_task **chunks;
	struct cdsm_task *spare_chunk;
	char comm[TASK_COMM_LEN];
	struct mutex mutex;
	struct cdsm_matrix matrix;
	struct cdsm_matrix whole;
	u64 events;
	u64 rearm_pages;
	struct cdsm_homes homes;
	atomic64_t kmem_bytes;
};

/* Protects task membership, the task hash and the application table. */
extern spinlock_t cdsm_lock;
/* The application table (see cdsm_app.c for who changes a slot when). */
extern struct cdsm_app *cdsm_apps[CDSM_MAX_APPS];

struct cdsm_task *cdsm_app_task(struct cdsm_app *app, u32 index);

#endif /* _CDSM_APP_INTERNAL_H */
