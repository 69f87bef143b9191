/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cdsm registry: applications and their tasks, which tasks are tracked, in
 * which application, at which matrix index. Tasks join from the tracepoints
 * (atomic context) and from CDSM_IOC_TRACK (cdsm_track.c); the fault path
 * finds the current task's sharer id under RCU. Locks: cdsm_apps_lock() (a
 * mutex) keeps applications in their slots; cdsm_tasks_lock() (a spinlock)
 * guards membership; each application's matrix has its own mutex. Each
 * function's kernel-doc says which it takes or needs.
 */
#ifndef _CDSM_APP_H
#define _CDSM_APP_H

#include <linux/hashtable.h>
#include <linux/kref.h>
#include <linux/memcontrol.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/types.h>
#include <linux/uidgid.h>

struct cgroup;
struct dentry;

#include "cdsm_core.h"
#include "cdsm_params.h"

/* Internal task flag: the first tracked task of its process (re-arming). */
#define CDSM_TASK_LEADER (1U << 31)

/* Task records are allocated in chunks of this many. */
#define CDSM_TASK_CHUNK 64

/* Bits of a slot's generation in the application key (see cdsm_core.h). */
#define CDSM_GEN_BITS 10

/**
 * struct cdsm_task - a task of an application.
 * @hnode:		in the task hash while the task lives.
 * @task:		the task; compared, never dereferenced once it exited.
 * @tid:		thread id.
 * @tgid:		process id.
 * @index:		dense index in the application (its matrix row).
 * @sharer:		cdsm_sharer() of the application and @index.
 * @flags:		CDSM_TASK_*.
 * @arrival_ns:		when it joined (CLOCK_BOOTTIME).
 * @comm:		command name: at join, then as last seen (a query of the
 *			application's tasks or readers, the task's exit).
 * @euid:		effective uid, as @comm.
 * @rearm_next_addr:	first address of the next re-arming walk of its
 *			process (used on the first task of each process).
 * @rearm_credit_mpages: re-arming budget not yet spent, in 1/1000 pages;
 *			negative after a step armed more than its budget.
 */
struct cdsm_task {
	struct hlist_node hnode;
	struct task_struct *task;
	pid_t tid;
	pid_t tgid;
	u32 index;
	u32 sharer;
	u32 flags;
	u64 arrival_ns;
	char comm[TASK_COMM_LEN];
	kuid_t euid;
	unsigned long rearm_next_addr;
	s64 rearm_credit_mpages;
};

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
 * @mutex:		protects @matrix and @events.
 * @matrix:		communication events, @matrix.dim >= @nr_tasks after the worker grew it.
 * @events:		communication events counted.
 * @rearm_pages:	pages re-armed (worker only).
 * @rearm_task:		index of the task whose process is re-armed next (worker only).
 * @kmem_bytes:		memory of chunks and matrix.
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
	u64 events;
	u64 rearm_pages;
	u32 rearm_task;
	atomic64_t kmem_bytes;
};

/* The registry's locks, for cdsm_worker.c, cdsm_rearm.c and cdsm_dev.c (to go). */
extern struct mutex cdsm_apps_mutex;
extern spinlock_t cdsm_lock;
/* The application table; a slot changes under both locks above. */
extern struct cdsm_app *cdsm_apps[CDSM_MAX_APPS];
/* Number of tasks in the task hash: read only through cdsm_tasks_tracked(). */
extern atomic_t cdsm_nr_live_tasks;
/* Number of applications in the table: read only through cdsm_apps_tracked(). */
extern atomic_t cdsm_nr_apps;

/**
 * cdsm_tasks_tracked() - some task is in the task hash: the fault path's
 * first, lockless check.
 *
 * Context: any.
 * Return: true if so (a hint: the task hash decides).
 */
static inline bool cdsm_tasks_tracked(void)
{
	return atomic_read(&cdsm_nr_live_tasks);
}

/**
 * cdsm_apps_tracked() - some application is in the table: the tracepoint
 * probes' first, lockless check.
 *
 * Context: any.
 * Return: true if so (a hint).
 */
static inline bool cdsm_apps_tracked(void)
{
	return atomic_read(&cdsm_nr_apps);
}

void cdsm_apps_lock(void);
void cdsm_apps_unlock(void);
void cdsm_tasks_lock(void);
void cdsm_tasks_unlock(void);

/* Membership, for the tracking code (cdsm_track.c). */
struct cdsm_task *cdsm_task_lookup(struct task_struct *p);
struct cdsm_app *cdsm_app_of_task(const struct cdsm_task *t);
struct cdsm_task *cdsm_app_add_task(struct cdsm_app *app, struct task_struct *p);
void cdsm_app_add_threads(struct cdsm_app *app, struct task_struct *leader);
void cdsm_app_join(struct cdsm_app *app, struct task_struct *p);
void cdsm_task_exited(struct task_struct *p);
struct cdsm_app *cdsm_app_create(u32 kind, pid_t root_pid, struct cgroup *cgrp, gfp_t gfp);
void cdsm_app_create_auto(struct task_struct *p);
struct cdsm_app *cdsm_app_open_at(struct cgroup *cgrp);
struct cdsm_app *cdsm_app_open_in(struct cgroup *cgrp);
void cdsm_app_end_cgroup(struct cgroup *cgrp);
u32 cdsm_app_id(const struct cdsm_app *app);

void cdsm_apps_free_all(void);
struct cdsm_task *cdsm_app_task(struct cdsm_app *app, u32 index);
void cdsm_task_refresh(struct cdsm_app *app, struct cdsm_task *t);
bool cdsm_app_readable(const struct cdsm_app *app, kuid_t euid, bool admin);
void cdsm_app_debugfs_init(struct dentry *dir);
void cdsm_app_exit(void);
bool cdsm_app_clear_pending(void);

struct cdsm_app *cdsm_app_get(u32 id);
void cdsm_app_put(struct cdsm_app *app);
int cdsm_app_untrack(struct cdsm_app *app, bool remember);
void cdsm_app_remove(struct cdsm_app *app, bool remember);
int cdsm_app_refill(struct cdsm_app *app);

#endif /* _CDSM_APP_H */
