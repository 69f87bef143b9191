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

#include <linux/atomic.h>
#include <linux/gfp.h>
#include <linux/sched.h>
#include <linux/types.h>
#include <linux/uidgid.h>

struct cdsm_app;
struct cdsm_app_info;
struct cdsm_task_info;
struct cgroup;
struct dentry;
struct mm_struct;
struct user_namespace;

/* Internal task flag: the first tracked task of its process (re-arming). */
#define CDSM_TASK_LEADER (1U << 31)

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
 * @rearm_next_addr:	first address of the next re-arming sweep over the
 *			shared mappings of its process (used, as the other
 *			rearm_* fields, on the first task of each process).
 * @rearm_credit_mpages: re-arming budget not yet spent, in 1/1000 pages;
 *			negative after a step armed more than its budget.
 * @rearm_priv_addr:	first address of the next strided re-arming walk over
 *			the private anonymous memory of its process.
 * @rearm_pass:		strided passes over that memory so far: the offset of
 *			the pieces re-armed in each window.
 * @rearm_steps:	re-arming steps of its process so far: which kind of
 *			memory has the first claim on a step's budget.
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
	unsigned long rearm_priv_addr;
	unsigned long rearm_pass;
	unsigned long rearm_steps;
};

/*
 * Read only through cdsm_tasks_tracked() and cdsm_apps_tracked() (inline: the
 * fault path's first check costs one load).
 */
extern atomic_t cdsm_nr_live_tasks;
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
 * probes' and the worker's first, lockless check.
 *
 * Context: any.
 * Return: true if so (a hint).
 */
static inline bool cdsm_apps_tracked(void)
{
	return atomic_read(&cdsm_nr_apps);
}

/* Locks (kernel-doc in cdsm_app.c). */
void cdsm_apps_lock(void);
void cdsm_apps_unlock(void);
void cdsm_tasks_lock(void);
void cdsm_tasks_unlock(void);

/* The fault path. */
struct cdsm_task *cdsm_task_lookup(struct task_struct *p);

/* Membership, for the tracking code (cdsm_track.c). */
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
/* Global, not called from outside: tests/kmod/race-widen probes it. */
void cdsm_task_refresh(struct cdsm_app *app, struct cdsm_task *t);

/* The worker and re-arming (cdsm_worker.c, cdsm_rearm.c). */
struct cdsm_app *cdsm_app_next(u32 *pos);

/**
 * cdsm_for_each_app() - every application in the table, by slot.
 * @app:	the cursor (struct cdsm_app *).
 * @pos:	a u32 position; the loop may remove @app (cdsm_app_remove()).
 *
 * Context: cdsm_apps_lock() held.
 */
#define cdsm_for_each_app(app, pos) \
	for ((pos) = 0; ((app) = cdsm_app_next(&(pos))) != NULL;)

struct cdsm_app *cdsm_app_of_key(u32 key);
bool cdsm_app_tracking(const struct cdsm_app *app);
bool cdsm_app_expired(const struct cdsm_app *app, u64 now_ns);
int cdsm_app_refill(struct cdsm_app *app);
void cdsm_app_grow(struct cdsm_app *app);
void cdsm_app_matrix_lock(struct cdsm_app *app);
void cdsm_app_matrix_unlock(struct cdsm_app *app);
bool cdsm_app_count(struct cdsm_app *app, u32 a, u32 b);
u32 cdsm_app_file_home(struct cdsm_app *app, u64 file, u32 sharer, u64 time_ns);
u32 cdsm_app_nr_tasks(const struct cdsm_app *app);
struct cdsm_task *cdsm_app_leader(struct cdsm_app *app, u32 index);
struct task_struct *cdsm_task_get_live(const struct cdsm_task *t);
struct mm_struct *cdsm_sharer_mm(u32 sharer);
void cdsm_app_add_rearmed(struct cdsm_app *app, unsigned long pages);
bool cdsm_app_clear_pending(void);
void cdsm_app_remove(struct cdsm_app *app, bool remember);

/* The char device (cdsm_dev.c). */
struct cdsm_app *cdsm_app_get(u32 id);
struct cdsm_app *cdsm_app_get_readable(u32 id, kuid_t euid, bool admin);
void cdsm_app_put(struct cdsm_app *app);
u32 cdsm_apps_list(struct cdsm_app_info *infos, kuid_t euid, bool admin,
		   struct user_namespace *ns);
void cdsm_apps_count(u64 *apps, u64 *tasks, u64 *kmem_bytes);
u32 cdsm_app_snapshot_tasks(struct cdsm_app *app, struct cdsm_task_info *infos, u32 n,
			    u32 capacity);
void cdsm_app_snapshot_matrix(struct cdsm_app *app, bool whole, u32 *cells, u32 dim,
			      u64 *events, u64 *snapshot_ns);
void cdsm_app_age(struct cdsm_app *app);
void cdsm_app_reset(struct cdsm_app *app);
int cdsm_app_untrack(struct cdsm_app *app, bool remember);
int cdsm_app_release(struct cdsm_app *app);

/* Module load and unload (cdsm_main.c). */
void cdsm_apps_free_all(void);
void cdsm_app_debugfs_init(struct dentry *dir);
void cdsm_app_exit(void);

#endif /* _CDSM_APP_H */
