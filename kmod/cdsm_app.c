// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm registry: the application table, the task records and the task hash,
 * and the locks that protect them (see cdsm_app.h for which lock guards
 * what). Every other file goes through the functions below; each says in
 * its Context: line which lock it takes or needs.
 *
 * Functions called from the tracepoint probes (cdsm_track.c) run in atomic
 * context: they take only cdsm_lock and allocate only with GFP_NOWAIT (task
 * records come from a spare chunk the worker keeps ready); a failure leaves
 * the task out and is counted.
 *
 * Each application's matrices are in cdsm_app_matrix.c, the copies handed to
 * readers in cdsm_app_snapshot.c; cdsm_app_internal.h is what the three share.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cgroup.h>
#include <linux/cred.h>
#include <linux/debugfs.h>
#include <linux/hashtable.h>
#include <linux/kref.h>
#include <linux/memcontrol.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/user_namespace.h>
#include <linux/vmalloc.h>

#include "cdsm_app.h"
#include "cdsm_app_internal.h"
#include "cdsm_core.h"
#include "cdsm_netlink.h"
#include "cdsm_params.h"
#include "cdsm_stats.h"

/* Task records are allocated in chunks of this many. */
#define CDSM_TASK_CHUNK 64

/* Bits of a slot's generation in the application key (see cdsm_core.h). */
#define CDSM_GEN_BITS 10

/* Serialises creation and removal of applications with the worker. */
static DEFINE_MUTEX(cdsm_apps_mutex);
/* Protects task membership, the task hash and the application table. */
DEFINE_SPINLOCK(cdsm_lock);
/*
 * The application table; a slot changes under both locks above, and is read
 * with either held, or locklessly by the worker (which holds the mutex).
 */
struct cdsm_app *cdsm_apps[CDSM_MAX_APPS];
atomic_t cdsm_nr_live_tasks;
atomic_t cdsm_nr_apps;

static DEFINE_HASHTABLE(cdsm_task_hash, 10);
static u16 cdsm_slot_gen[CDSM_MAX_APPS];
static u32 cdsm_next_app_id = 1;
/* Unload: cdsm_apps_free_all() ran; no application is created any more. */
static bool cdsm_apps_closed;
/* A slot's generation wrapped: the worker clears the block table. */
static atomic_t cdsm_clear_pending;

/*
 * Consistency counters, under cdsm_lock (debugfs "registry"): additions of a
 * task that already had a record (the TRACK walk and the fork probe both saw
 * it) or that was exiting, both refused; processes not tracked automatically
 * because their user or all users reached the quota.
 */
static u64 cdsm_refused_tracked, cdsm_refused_exiting, cdsm_auto_refused;

/*
 * Processes taken out of tracking by CDSM_IOC_UNTRACK or _RELEASE (a reference
 * to each one's tgid pid), so that auto mode does not track them again at
 * their next thread. Forgotten when the process is gone; at most
 * CDSM_UNTRACKED_MAX, beyond which the oldest is forgotten. Under cdsm_lock.
 */
#define CDSM_UNTRACKED_MAX 1024

/**
 * struct cdsm_untracked - an untracked process.
 * @node:	in cdsm_untracked_list, oldest first.
 * @tgid:	its tgid pid (a reference).
 */
struct cdsm_untracked {
	struct list_head node;
	struct pid *tgid;
};

static LIST_HEAD(cdsm_untracked_list);
static unsigned int cdsm_nr_untracked;

static size_t cdsm_chunk_sz(void)
{
	return CDSM_TASK_CHUNK * sizeof(struct cdsm_task);
}

/**
 * cdsm_apps_lock() - keep every application in its slot: while held, only
 * the holder removes applications (or creates them by TRACK; auto mode may
 * still fill a free slot), so applications found in the table stay valid (the
 * worker's step, TRACK, RELEASE, unload).
 *
 * Context: process context; sleeps. Taken before cdsm_tasks_lock().
 */
void cdsm_apps_lock(void)
	__acquires(&cdsm_apps_mutex)
{
	mutex_lock(&cdsm_apps_mutex);
}

/**
 * cdsm_apps_unlock() - release cdsm_apps_lock().
 *
 * Context: cdsm_apps_lock() held.
 */
void cdsm_apps_unlock(void)
	__releases(&cdsm_apps_mutex)
{
	mutex_unlock(&cdsm_apps_mutex);
}

/**
 * cdsm_tasks_lock() - lock task membership: the task records, the task hash,
 * the application table's slots, flags, counts and owners. Held by the
 * tracking code while it decides where a task goes and adds it, so that the
 * decision and the addition are one step.
 *
 * Context: any but hard interrupt (the tracepoint probes take it); a
 * spinlock: nothing under it sleeps.
 */
void cdsm_tasks_lock(void)
	__acquires(&cdsm_lock)
{
	spin_lock(&cdsm_lock);
}

/**
 * cdsm_tasks_unlock() - release cdsm_tasks_lock().
 *
 * Context: cdsm_tasks_lock() held.
 */
void cdsm_tasks_unlock(void)
	__releases(&cdsm_lock)
{
	spin_unlock(&cdsm_lock);
}

/**
 * cdsm_task_lookup() - the tracked record of a live task.
 * @p:	the task.
 *
 * Context: under rcu_read_lock() (or with preemption off), or cdsm_lock.
 * Return: the record, or NULL if @p is not tracked.
 */
struct cdsm_task *cdsm_task_lookup(struct task_struct *p)
{
	struct cdsm_task *t;

	hash_for_each_possible_rcu(cdsm_task_hash, t, hnode, (unsigned long)p)
		if (t->task == p)
			return t;
	return NULL;
}

/* The task record at @index, below @app->nr_tasks. */
struct cdsm_task *cdsm_app_task(struct cdsm_app *app, u32 index)
{
	return &app->chunks[index / CDSM_TASK_CHUNK][index % CDSM_TASK_CHUNK];
}

/* Queues a netlink event about @t (cdsm_netlink.c knows no registry type). */
static void cdsm_task_event(enum cdsm_event event, const struct cdsm_app *app,
			    const struct cdsm_task *t)
{
	BUILD_BUG_ON(sizeof(t->comm) != CDSM_COMM_LEN);
	cdsm_event_task(event, app->id, t->tid, t->tgid, t->index, t->comm);
}

/*
 * The first task of @app joined: it owns the application (its effective uid,
 * once), and the application's memory is charged to its memory cgroup.
 * task_lock() keeps @p->mm from changing under us. Context: cdsm_lock held.
 */
static void cdsm_app_set_owner(struct cdsm_app *app, struct task_struct *p)
{
	app->uid = task_euid(p);
	if (app->memcg)
		return;
	task_lock(p);
	if (p->mm)
		app->memcg = get_mem_cgroup_from_mm(p->mm);
	task_unlock(p);
}

/**
 * cdsm_app_add_task() - add a task to an application.
 * @app:	the application.
 * @p:		the task.
 *
 * Adds @p to @app, unless @p already has a record or is exiting. This is
 * the one place a task joins, so that the TRACK walk and the probes cannot
 * both add it (the walk can see a child after copy_process() linked it and
 * before sched_process_fork fires). The exit probe reads the live count
 * without the lock; the count is raised before PF_EXITING is read, each
 * side with a full barrier, so that either this sees PF_EXITING or the
 * exit probe (cdsm_task_exited()) sees the count and waits for the lock
 * (and the record).
 *
 * Context: cdsm_tasks_lock() held; does not sleep.
 * Return: the new record, or NULL (refused or counted as a failure).
 */
struct cdsm_task *cdsm_app_add_task(struct cdsm_app *app, struct task_struct *p)
{
	u32 idx = app->nr_tasks, c = idx / CDSM_TASK_CHUNK;
	struct mem_cgroup *old_memcg;
	struct cdsm_task *t;

	if (app->flags & CDSM_APP_UNTRACKED)
		return NULL;
	if (cdsm_task_lookup(p)) {
		cdsm_refused_tracked++;
		return NULL;
	}
	if (idx >= app->max_tasks) {
		app->flags |= CDSM_APP_TRUNCATED;
		return NULL;
	}
	atomic_inc(&cdsm_nr_live_tasks);
	/* Count raised before PF_EXITING is read: pairs with cdsm_task_exited(). */
	smp_mb__after_atomic();
	if (READ_ONCE(p->flags) & PF_EXITING) {
		atomic_dec(&cdsm_nr_live_tasks);
		cdsm_refused_exiting++;
		return NULL;
	}
	if (!idx)
		cdsm_app_set_owner(app, p);
	if (!app->chunks[c]) {
		app->chunks[c] = app->spare_chunk;
		app->spare_chunk = NULL;
		if (!app->chunks[c]) {
			old_memcg = set_active_memcg(app->memcg);
			app->chunks[c] = kzalloc(cdsm_chunk_sz(),
						 GFP_NOWAIT | __GFP_NOWARN | __GFP_ACCOUNT);
			set_active_memcg(old_memcg);
			if (!app->chunks[c]) {
				atomic_dec(&cdsm_nr_live_tasks);
				cdsm_stat_add(CDSM_STAT_ALLOC_FAILURES, 1);
				return NULL;
			}
			atomic64_add(cdsm_chunk_sz(), &app->kmem_bytes);
		}
	}
	t = &app->chunks[c][idx % CDSM_TASK_CHUNK];
	t->task = p;
	t->tid = task_pid_nr(p);
	t->tgid = task_tgid_nr(p);
	t->index = idx;
	t->sharer = cdsm_sharer(app->key, idx);
	t->flags = thread_group_leader(p) ? CDSM_TASK_LEADER : 0;
	t->rearm_next_addr = 0;
	t->rearm_credit_mpages = 0;
	t->rearm_priv_addr = 0;
	t->rearm_pass = 0;
	t->rearm_steps = 0;
	t->arrival_ns = ktime_get_boottime_ns();
	cdsm_task_refresh(app, t);
	app->nr_tasks++;
	app->nr_live++;
	hash_add_rcu(cdsm_task_hash, &t->hnode, (unsigned long)p);
	cdsm_task_event(CDSM_EVENT_TASK_JOINED, app, t);
	return t;
}

/**
 * cdsm_task_refresh() - copy a live task's command name and effective uid
 * into its record, and the command name into the application's for its first
 * task: a task that execs another program or changes user is seen as it is
 * now. The application's owner (@app->uid) never changes.
 * @app:	the task's application.
 * @t:		a task that has not exited.
 *
 * Context: cdsm_lock held (the task cannot pass its exit tracepoint, so
 * @t->task is alive).
 */
void cdsm_task_refresh(struct cdsm_app *app, struct cdsm_task *t)
{
	/* Unlocked, as the kernel's own tracepoints read comm. */
	strscpy_pad(t->comm, t->task->comm, sizeof(t->comm));
	t->euid = task_euid(t->task);
	if (!t->index)
		memcpy(app->comm, t->comm, sizeof(app->comm));
}

/* Marks @app ended. Context: cdsm_lock held. */
static void cdsm_app_end(struct cdsm_app *app)
{
	app->flags |= CDSM_APP_ENDED;
	app->end_ns = ktime_get_boottime_ns();
	cdsm_event_app(CDSM_EVENT_APP_ENDED, app->id);
}

/* Marks @t exited. Context: cdsm_lock held. */
static void cdsm_app_exit_task(struct cdsm_app *app, struct cdsm_task *t)
{
	cdsm_task_refresh(app, t);
	hash_del_rcu(&t->hnode);
	t->flags |= CDSM_TASK_EXITED;
	atomic_dec(&cdsm_nr_live_tasks);
	cdsm_task_event(CDSM_EVENT_TASK_EXITED, app, t);
	if (--app->nr_live == 0)
		cdsm_app_end(app);
}

/**
 * cdsm_app_of_task() - the application of a task record.
 * @t:	a live record (from cdsm_task_lookup()).
 *
 * Context: cdsm_tasks_lock() held.
 * Return: its application.
 */
struct cdsm_app *cdsm_app_of_task(const struct cdsm_task *t)
{
	return cdsm_apps[cdsm_sharer_app(t->sharer) & 0xff];
}

/**
 * cdsm_app_create() - a new application in a free slot, no task yet.
 * @kind:	enum cdsm_track_kind.
 * @root_pid:	its root process as user space names it, 0 for a cgroup.
 * @cgrp:	the tracked cgroup (the application takes the reference), or NULL.
 * @gfp:	allocation flags, atomic ones (cdsm_tasks_lock() is held).
 *
 * Context: cdsm_tasks_lock() held.
 * Return: the application, ERR_PTR(-ENOSPC) (no free slot) or
 * ERR_PTR(-ENOMEM) (counted).
 */
struct cdsm_app *cdsm_app_create(u32 kind, pid_t root_pid, struct cgroup *cgrp, gfp_t gfp)
{
	u32 max_tasks = READ_ONCE(cdsm_params.max_tasks);
	u32 nr_chunks = DIV_ROUND_UP(max_tasks, CDSM_TASK_CHUNK);
	struct cdsm_app *app;
	int slot;

	if (cdsm_apps_closed)
		return ERR_PTR(-ESHUTDOWN);
	for (slot = 0; slot < CDSM_MAX_APPS; slot++)
		if (!cdsm_apps[slot])
			break;
	if (slot == CDSM_MAX_APPS)
		return ERR_PTR(-ENOSPC);
	app = kzalloc(sizeof(*app), gfp | __GFP_NOWARN);
	if (!app)
		goto nomem;
	app->chunks = kcalloc(nr_chunks, sizeof(*app->chunks), gfp | __GFP_NOWARN);
	app->spare_chunk = kzalloc(cdsm_chunk_sz(), gfp | __GFP_NOWARN);
	if (!app->chunks || !app->spare_chunk) {
		kfree(app->chunks);
		kfree(app->spare_chunk);
		kfree(app);
		goto nomem;
	}
	kref_init(&app->ref);
	mutex_init(&app->mutex);
	atomic64_set(&app->kmem_bytes, sizeof(*app) + nr_chunks * sizeof(*app->chunks) +
		     cdsm_chunk_sz());
	app->id = cdsm_next_app_id++;
	app->slot = slot;
	/*
	 * A new generation: the slot's previous applications' entries in the
	 * block table keep their keys. When the generation wraps, an entry
	 * 2^CDSM_GEN_BITS generations old would alias this application: the
	 * worker clears the table before it applies more records.
	 */
	cdsm_slot_gen[slot] = (cdsm_slot_gen[slot] + 1) & ((1U << CDSM_GEN_BITS) - 1);
	if (!cdsm_slot_gen[slot])
		atomic_set(&cdsm_clear_pending, 1);
	app->key = slot | (u32)cdsm_slot_gen[slot] << 8;
	app->kind = kind;
	app->max_tasks = max_tasks;
	app->cgrp = cgrp;
	app->start_ns = ktime_get_boottime_ns();
	/* The first task's, once it joins (cdsm_app_set_owner()). */
	app->uid = INVALID_UID;
	app->root_pid = root_pid;
	/* Publish the initialised application to the lockless worker. */
	smp_store_release(&cdsm_apps[slot], app);
	atomic_inc(&cdsm_nr_apps);
	cdsm_event_app(CDSM_EVENT_APP_STARTED, app->id);
	return app;
nomem:
	cdsm_stat_add(CDSM_STAT_ALLOC_FAILURES, 1);
	return ERR_PTR(-ENOMEM);
}

/**
 * cdsm_app_add_threads() - add every thread of a process (cdsm_app_add_task()).
 * @app:	the application.
 * @leader:	the process's leader.
 *
 * Context: cdsm_tasks_lock() and rcu_read_lock() held.
 */
void cdsm_app_add_threads(struct cdsm_app *app, struct task_struct *leader)
{
	struct task_struct *t;

	for_each_thread(leader, t)
		cdsm_app_add_task(app, t);
}

/*
 * A cgroup application that still takes new tasks: not ended (a new run in
 * the directory is a new application) and not untracked.
 */
static bool cdsm_app_open_cgroup(const struct cdsm_app *app)
{
	return app && app->cgrp && !(app->flags & (CDSM_APP_ENDED | CDSM_APP_UNTRACKED));
}

/**
 * cdsm_app_open_at() - the application that still takes new tasks of exactly
 * this cgroup (there is at most one: cdsm_track_cgroup() refuses a second).
 * @cgrp:	the cgroup.
 *
 * Context: cdsm_tasks_lock() held.
 * Return: the application, or NULL.
 */
struct cdsm_app *cdsm_app_open_at(struct cgroup *cgrp)
{
	int slot;

	for (slot = 0; slot < CDSM_MAX_APPS; slot++)
		if (cdsm_app_open_cgroup(cdsm_apps[slot]) && cdsm_apps[slot]->cgrp == cgrp)
			return cdsm_apps[slot];
	return NULL;
}

/**
 * cdsm_app_open_in() - the first application (by slot) that still takes new
 * tasks of a cgroup that is @cgrp or one of its ancestors.
 * @cgrp:	the cgroup of a task.
 *
 * Context: cdsm_tasks_lock() and rcu_read_lock() held.
 * Return: the application, or NULL.
 */
struct cdsm_app *cdsm_app_open_in(struct cgroup *cgrp)
{
	int slot;

	for (slot = 0; slot < CDSM_MAX_APPS; slot++)
		if (cdsm_app_open_cgroup(cdsm_apps[slot]) &&
		    cgroup_is_descendant(cgrp, cdsm_apps[slot]->cgrp))
			return cdsm_apps[slot];
	return NULL;
}

/**
 * cdsm_app_end_cgroup() - end the applications of a removed cgroup that no
 * task joined or whose tasks all exited.
 * @cgrp:	the cgroup.
 *
 * Context: any but hard interrupt; takes cdsm_tasks_lock().
 */
void cdsm_app_end_cgroup(struct cgroup *cgrp)
{
	struct cdsm_app *app;
	int slot;

	spin_lock(&cdsm_lock);
	for (slot = 0; slot < CDSM_MAX_APPS; slot++) {
		app = cdsm_apps[slot];
		if (cdsm_app_open_cgroup(app) && app->cgrp == cgrp && !app->nr_live)
			cdsm_app_end(app);
	}
	spin_unlock(&cdsm_lock);
}

/* @p's process was untracked (see cdsm_untracked_list). Context: cdsm_lock. */
static bool cdsm_was_untracked(struct task_struct *p)
{
	struct pid *tgid = task_tgid(p);
	struct cdsm_untracked *u;

	list_for_each_entry(u, &cdsm_untracked_list, node)
		if (u->tgid == tgid)
			return true;
	return false;
}

/*
 * The user an automatic application of @p's process is charged to: @p's
 * effective uid, or, for a process in a user namespace, the owner of the
 * outermost one below the initial namespace, so that a user who maps a range
 * of uids (subordinate uids) into a namespace has one quota, not one per uid.
 * Context: rcu_read_lock() held.
 */
static kuid_t cdsm_auto_quota_uid(struct task_struct *p)
{
	const struct cred *cred = __task_cred(p);
	struct user_namespace *ns = cred->user_ns;

	if (ns == &init_user_ns)
		return cred->euid;
	while (ns->parent != &init_user_ns)
		ns = ns->parent;
	return ns->owner;
}

/*
 * Auto mode may take one more application charged to @uid: at most
 * auto_max_apps automatic applications in all (the other slots stay for
 * TRACK) and auto_per_uid of one user (cdsm_auto_quota_uid()); ended ones
 * count until they are removed, as they hold their slots. Context: cdsm_lock
 * held.
 */
static bool cdsm_auto_quota_ok(kuid_t uid)
{
	unsigned int all = 0, mine = 0;
	int slot;

	for (slot = 0; slot < CDSM_MAX_APPS; slot++) {
		struct cdsm_app *app = cdsm_apps[slot];

		if (!app || app->kind != CDSM_TRACK_AUTO)
			continue;
		all++;
		mine += uid_eq(app->quota_uid, uid);
	}
	return all < READ_ONCE(cdsm_auto_max_apps) && mine < READ_ONCE(cdsm_auto_per_uid);
}

/**
 * cdsm_app_create_auto() - auto mode: an application of @p's process, with
 * every thread it has, unless the process was untracked before or the quota
 * is reached (then counted in debugfs "registry").
 * @p:		the task that made its process reach auto_threads threads.
 *
 * Context: cdsm_tasks_lock() and rcu_read_lock() held.
 */
void cdsm_app_create_auto(struct task_struct *p)
{
	kuid_t quota_uid = cdsm_auto_quota_uid(p);
	struct cdsm_app *app;

	if (cdsm_was_untracked(p))
		return;
	if (!cdsm_auto_quota_ok(quota_uid)) {
		cdsm_auto_refused++;
		return;
	}
	app = cdsm_app_create(CDSM_TRACK_AUTO, task_tgid_nr(p->group_leader), NULL, GFP_NOWAIT);
	if (IS_ERR(app))
		return;
	app->quota_uid = quota_uid;
	cdsm_app_add_threads(app, p->group_leader);
}

/**
 * cdsm_task_exited() - a task passed its exit tracepoint: its record, if it
 * has one, is marked exited and leaves the task hash.
 * @p:	the exiting task (PF_EXITING set).
 *
 * Context: any but hard interrupt; takes cdsm_tasks_lock() only while tasks
 * are tracked.
 */
void cdsm_task_exited(struct task_struct *p)
{
	struct cdsm_task *t;

	/* PF_EXITING is set: pairs with cdsm_app_add_task()'s barrier. */
	smp_mb();
	if (!atomic_read(&cdsm_nr_live_tasks))
		return;
	spin_lock(&cdsm_lock);
	t = cdsm_task_lookup(p);
	if (t)
		cdsm_app_exit_task(cdsm_app_of_task(t), t);
	spin_unlock(&cdsm_lock);
}

/**
 * cdsm_app_join() - cdsm_app_add_task() under the lock, for a walk over every
 * task that holds only RCU (cdsm_track()), so that the lock is held per task
 * and never for the length of the task list.
 * @app:	the application.
 * @p:		the task.
 *
 * Context: rcu_read_lock() and cdsm_apps_lock() held; takes cdsm_tasks_lock().
 */
void cdsm_app_join(struct cdsm_app *app, struct task_struct *p)
{
	spin_lock(&cdsm_lock);
	cdsm_app_add_task(app, p);
	spin_unlock(&cdsm_lock);
}

/**
 * cdsm_app_id() - an application's user-visible id.
 * @app:	the application.
 *
 * Context: any; the id never changes.
 * Return: the id.
 */
u32 cdsm_app_id(const struct cdsm_app *app)
{
	return app->id;
}

/**
 * cdsm_app_get() - find an application and take a reference.
 * @id:	its id.
 *
 * Context: any but hard interrupt; takes cdsm_tasks_lock().
 * Return: the application, or NULL; release it with cdsm_app_put().
 */
struct cdsm_app *cdsm_app_get(u32 id)
{
	struct cdsm_app *app = NULL;
	int slot;

	spin_lock(&cdsm_lock);
	for (slot = 0; slot < CDSM_MAX_APPS; slot++) {
		if (cdsm_apps[slot] && cdsm_apps[slot]->id == id) {
			app = cdsm_apps[slot];
			kref_get(&app->ref);
			break;
		}
	}
	spin_unlock(&cdsm_lock);
	return app;
}

static void cdsm_app_free(struct kref *ref)
{
	struct cdsm_app *app = container_of(ref, struct cdsm_app, ref);
	u32 c;

	for (c = 0; c < DIV_ROUND_UP(app->max_tasks, CDSM_TASK_CHUNK); c++)
		kfree(app->chunks[c]);
	kfree(app->chunks);
	kfree(app->spare_chunk);
	kvfree(app->matrix.cells);
	kvfree(app->whole.cells);
	kvfree(app->homes.files);
	if (app->cgrp)
		cgroup_put(app->cgrp);
	mem_cgroup_put(app->memcg);
	kfree(app);
}

/**
 * cdsm_app_put() - drop a reference from cdsm_app_get().
 * @app:	the application.
 *
 * Context: any but hard interrupt; the last reference frees the
 * application (kfree/kvfree, no sleep).
 */
void cdsm_app_put(struct cdsm_app *app)
{
	kref_put(&app->ref, cdsm_app_free);
}

static void cdsm_forget_untracked(struct cdsm_untracked *u)
{
	list_del(&u->node);
	put_pid(u->tgid);
	kfree(u);
	cdsm_nr_untracked--;
}

/*
 * Remembers @p's process as untracked (see cdsm_untracked_list): forgets
 * processes that are gone, then the oldest if the list is full.
 * Context: cdsm_lock held.
 */
static void cdsm_remember_untracked(struct task_struct *p)
{
	struct cdsm_untracked *u, *n;

	if (cdsm_was_untracked(p))
		return;
	if (cdsm_nr_untracked >= CDSM_UNTRACKED_MAX) {
		list_for_each_entry_safe(u, n, &cdsm_untracked_list, node)
			if (!pid_has_task(u->tgid, PIDTYPE_TGID))
				cdsm_forget_untracked(u);
	}
	if (cdsm_nr_untracked >= CDSM_UNTRACKED_MAX)
		cdsm_forget_untracked(list_first_entry(&cdsm_untracked_list,
						       struct cdsm_untracked, node));
	u = kmalloc(sizeof(*u), GFP_ATOMIC | __GFP_NOWARN);
	if (!u) {
		cdsm_stat_add(CDSM_STAT_ALLOC_FAILURES, 1);
		return;
	}
	u->tgid = get_pid(task_tgid(p));
	list_add_tail(&u->node, &cdsm_untracked_list);
	cdsm_nr_untracked++;
}

/**
 * cdsm_app_untrack() - stop tracking: no task joins any more, the live tasks
 * are no longer recorded, and the application ends; the data stays readable.
 * @app:	the application.
 * @remember:	remember the live tasks' processes, so that auto mode does
 *		not track them again (an untrack or release from user space).
 *
 * Context: process context; takes cdsm_tasks_lock().
 * Return: 0.
 */
int cdsm_app_untrack(struct cdsm_app *app, bool remember)
{
	u32 i;

	spin_lock(&cdsm_lock);
	for (i = 0; i < app->nr_tasks; i++) {
		struct cdsm_task *t = cdsm_app_task(app, i);

		if (t->flags & CDSM_TASK_EXITED)
			continue;
		if (remember && (t->flags & CDSM_TASK_LEADER))
			cdsm_remember_untracked(t->task);
		cdsm_app_exit_task(app, t);
	}
	/* One no task ever joined (an empty cgroup) ends too. */
	if (!(app->flags & CDSM_APP_ENDED))
		cdsm_app_end(app);
	app->flags |= CDSM_APP_UNTRACKED;
	spin_unlock(&cdsm_lock);
	return 0;
}

/**
 * cdsm_app_remove() - untrack an application, free its slot and drop the
 * slot's reference once no fault probe can see its tasks.
 * @app:	the application, in a slot.
 * @remember:	as for cdsm_app_untrack().
 *
 * Context: cdsm_apps_lock() held; sleeps (synchronize_rcu()).
 */
void cdsm_app_remove(struct cdsm_app *app, bool remember)
{
	cdsm_app_untrack(app, remember);
	spin_lock(&cdsm_lock);
	WRITE_ONCE(cdsm_apps[app->slot], NULL);
	atomic_dec(&cdsm_nr_apps);
	spin_unlock(&cdsm_lock);
	synchronize_rcu();
	cdsm_app_put(app);
}

/**
 * cdsm_apps_free_all() - refuse new applications and remove every one
 * (unload), while the exit tracepoint is still attached (see cdsm_main.c).
 *
 * Context: process context; takes cdsm_apps_lock(); sleeps.
 */
void cdsm_apps_free_all(void)
{
	int slot;

	mutex_lock(&cdsm_apps_mutex);
	spin_lock(&cdsm_lock);
	cdsm_apps_closed = true;
	spin_unlock(&cdsm_lock);
	for (slot = 0; slot < CDSM_MAX_APPS; slot++)
		if (cdsm_apps[slot])
			cdsm_app_remove(cdsm_apps[slot], false);
	mutex_unlock(&cdsm_apps_mutex);
}

/**
 * cdsm_app_refill() - keep a spare chunk of task records ready for atomic
 * context.
 * @app:	the application.
 *
 * Context: cdsm_apps_lock() held (the worker); sleeps; takes
 * cdsm_tasks_lock().
 * Return: 0 or -ENOMEM (counted).
 */
int cdsm_app_refill(struct cdsm_app *app)
{
	struct mem_cgroup *old_memcg;
	struct cdsm_task *chunk;

	if (READ_ONCE(app->spare_chunk) || app->flags & CDSM_APP_UNTRACKED)
		return 0;
	/* Charged to the owner's memory cgroup (set under cdsm_lock, so read once). */
	old_memcg = set_active_memcg(READ_ONCE(app->memcg));
	chunk = kzalloc(cdsm_chunk_sz(), GFP_KERNEL | __GFP_NOWARN | __GFP_ACCOUNT);
	set_active_memcg(old_memcg);
	if (!chunk) {
		cdsm_stat_add(CDSM_STAT_ALLOC_FAILURES, 1);
		return -ENOMEM;
	}
	spin_lock(&cdsm_lock);
	if (!app->spare_chunk) {
		app->spare_chunk = chunk;
		chunk = NULL;
		atomic64_add(cdsm_chunk_sz(), &app->kmem_bytes);
	}
	spin_unlock(&cdsm_lock);
	kfree(chunk);
	return 0;
}

/**
 * cdsm_app_clear_pending() - a slot's generation wrapped since the last call
 * (see cdsm_app_create()): the block table must be cleared.
 *
 * Context: any (the worker).
 * Return: true once per wrap.
 */
bool cdsm_app_clear_pending(void)
{
	return atomic_read(&cdsm_clear_pending) && atomic_xchg(&cdsm_clear_pending, 0);
}

/**
 * cdsm_app_next() - the application at or after a table position
 * (cdsm_for_each_app()).
 * @pos:	in: the first slot to look at; out: the slot after the one found.
 *
 * Reads the table locklessly: applications are published with a release
 * store (cdsm_app_create()), and only the caller removes them.
 *
 * Context: cdsm_apps_lock() held.
 * Return: the application, or NULL after the last one.
 */
struct cdsm_app *cdsm_app_next(u32 *pos)
{
	struct cdsm_app *app;

	for (; *pos < CDSM_MAX_APPS; (*pos)++) {
		app = READ_ONCE(cdsm_apps[*pos]);
		if (app) {
			(*pos)++;
			return app;
		}
	}
	return NULL;
}

/**
 * cdsm_app_of_key() - the application whose key (slot and generation) a
 * sharer id holds.
 * @key:	cdsm_sharer_app() of a sharer id.
 *
 * Context: cdsm_apps_lock() held (the worker); lockless.
 * Return: the application, or NULL if the slot was freed or reused since.
 */
struct cdsm_app *cdsm_app_of_key(u32 key)
{
	struct cdsm_app *app = READ_ONCE(cdsm_apps[key & 0xff]);

	return app && app->key == key ? app : NULL;
}

/**
 * cdsm_app_tracking() - an application still records: it has not ended and
 * was not untracked (re-arming its pages is worth it).
 * @app:	the application.
 *
 * Context: any; a lockless read of the flags.
 * Return: true if so.
 */
bool cdsm_app_tracking(const struct cdsm_app *app)
{
	return !(READ_ONCE(app->flags) & (CDSM_APP_ENDED | CDSM_APP_UNTRACKED));
}

/**
 * cdsm_app_expired() - an application ended more than retention_s ago.
 * @app:	the application.
 * @now_ns:	the worker step's start (CLOCK_BOOTTIME).
 *
 * Context: cdsm_apps_lock() held (the worker).
 * Return: true if it should be removed.
 */
bool cdsm_app_expired(const struct cdsm_app *app, u64 now_ns)
{
	unsigned int retention_s = READ_ONCE(cdsm_params.retention_s);

	/*
	 * @now_ns is the step's start: an application that ended during the
	 * step (re-arming can take seconds under emulation) ended after it, and
	 * the difference would wrap around.
	 */
	return retention_s && app->end_ns && now_ns > app->end_ns &&
	       now_ns - app->end_ns > (u64)retention_s * NSEC_PER_SEC;
}

/**
 * cdsm_app_nr_tasks() - tasks that joined an application so far (it only
 * grows, and records never move).
 * @app:	the application.
 *
 * Context: any; a lockless read.
 * Return: the count.
 */
u32 cdsm_app_nr_tasks(const struct cdsm_app *app)
{
	return READ_ONCE(app->nr_tasks);
}

/**
 * cdsm_app_leader() - the task record at an index if it is the first tracked
 * task of its process: re-arming walks each process once, from that record,
 * whose rearm_* fields only re-arming uses.
 * @app:	the application.
 * @index:	below cdsm_app_nr_tasks().
 *
 * Context: cdsm_apps_lock() held (the worker); lockless (the flag is set
 * before the record is counted).
 * Return: the record, or NULL.
 */
struct cdsm_task *cdsm_app_leader(struct cdsm_app *app, u32 index)
{
	struct cdsm_task *t = cdsm_app_task(app, index);

	return t->flags & CDSM_TASK_LEADER ? t : NULL;
}

/**
 * cdsm_task_get_live() - the task of a record that has not exited, with a
 * reference.
 * @t:	the record.
 *
 * Context: process context; takes cdsm_tasks_lock() (under which a task
 * cannot pass its exit tracepoint).
 * Return: the task (release it with put_task_struct()), or NULL.
 */
struct task_struct *cdsm_task_get_live(const struct cdsm_task *t)
{
	struct task_struct *p = NULL;

	spin_lock(&cdsm_lock);
	if (!(t->flags & CDSM_TASK_EXITED)) {
		p = t->task;
		get_task_struct(p);
	}
	spin_unlock(&cdsm_lock);
	return p;
}

/**
 * cdsm_sharer_mm() - the address space of a sharer's task, if it lives.
 * @sharer:	a sharer id (the fault path's records).
 *
 * Context: the worker, cdsm_apps_lock() held; takes cdsm_tasks_lock().
 * Return: the mm with a reference (release it with mmput()), or NULL if
 * the application or the task is gone.
 */
struct mm_struct *cdsm_sharer_mm(u32 sharer)
{
	struct cdsm_app *app = cdsm_app_of_key(cdsm_sharer_app(sharer));
	u32 index = cdsm_sharer_task(sharer);
	struct task_struct *p;
	struct mm_struct *mm;

	if (!app || index >= cdsm_app_nr_tasks(app))
		return NULL;
	p = cdsm_task_get_live(cdsm_app_task(app, index));
	if (!p)
		return NULL;
	mm = get_task_mm(p);
	put_task_struct(p);
	return mm;
}

/**
 * cdsm_app_add_rearmed() - count pages re-armed for an application.
 * @app:	the application.
 * @pages:	pages re-armed.
 *
 * Context: the worker (the only writer).
 */
void cdsm_app_add_rearmed(struct cdsm_app *app, unsigned long pages)
{
	app->rearm_pages += pages;
}

/**
 * cdsm_app_release() - remove an application that is still in its slot
 * (cdsm_app_remove(), remembering its processes), for CDSM_IOC_RELEASE.
 * @app:	the application, with a reference from cdsm_app_get().
 *
 * Context: process context; takes cdsm_apps_lock(); sleeps.
 * Return: 0, or -ENOENT if it was removed meanwhile.
 */
int cdsm_app_release(struct cdsm_app *app)
{
	int err = 0;

	mutex_lock(&cdsm_apps_mutex);
	if (READ_ONCE(cdsm_apps[app->slot]) == app)
		cdsm_app_remove(app, true);
	else
		err = -ENOENT;
	mutex_unlock(&cdsm_apps_mutex);
	return err;
}

/*
 * debugfs "registry": a check of the task registry under cdsm_lock. Every
 * record not marked exited must be in the task hash exactly once and be the
 * only record of its task; the live counts must agree. "duplicates" and
 * "mismatches" are 0 unless the module is broken; the "refused" counters say
 * how often a race or a quota was met (and handled). "file_homes" counts the
 * shared files with a home in the applications' tables, "file_homes_unhomed"
 * the new files that found a table full (read without the worker: a hint).
 */
static int cdsm_registry_show(struct seq_file *m, void *unused)
{
	u64 live = 0, hashed = 0, duplicates = 0, mismatches = 0, homes = 0, unhomed = 0;
	struct cdsm_task *t, *o;
	int slot, bkt;
	u32 i;

	spin_lock(&cdsm_lock);
	for (slot = 0; slot < CDSM_MAX_APPS; slot++) {
		struct cdsm_app *app = cdsm_apps[slot];
		u32 app_live = 0;

		if (!app)
			continue;
		homes += READ_ONCE(app->homes.nr_used);
		unhomed += READ_ONCE(app->homes.nr_unhomed);
		for (i = 0; i < app->nr_tasks; i++) {
			t = cdsm_app_task(app, i);
			if (t->flags & CDSM_TASK_EXITED)
				continue;
			app_live++;
			if (cdsm_task_lookup(t->task) != t)
				mismatches++;
		}
		if (app_live != app->nr_live)
			mismatches++;
		live += app_live;
	}
	hash_for_each(cdsm_task_hash, bkt, t, hnode) {
		hashed++;
		hash_for_each_possible(cdsm_task_hash, o, hnode, (unsigned long)t->task)
			if (o != t && o->task == t->task)
				duplicates++;
	}
	if (live != hashed || live != atomic_read(&cdsm_nr_live_tasks))
		mismatches++;
	seq_printf(m, "live_records %llu\nhashed_records %llu\nlive_count %d\n", live, hashed,
		   atomic_read(&cdsm_nr_live_tasks));
	seq_printf(m, "duplicates %llu\nmismatches %llu\n", duplicates, mismatches);
	seq_printf(m, "refused_tracked %llu\nrefused_exiting %llu\n", cdsm_refused_tracked,
		   cdsm_refused_exiting);
	seq_printf(m, "auto_refused %llu\nuntracked_remembered %u\n", cdsm_auto_refused,
		   cdsm_nr_untracked);
	seq_printf(m, "file_homes %llu\nfile_homes_unhomed %llu\n", homes, unhomed);
	spin_unlock(&cdsm_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(cdsm_registry);

/**
 * cdsm_app_debugfs_init() - create the "registry" file.
 * @dir:	the module's debugfs directory.
 *
 * Context: process context (module load).
 */
void cdsm_app_debugfs_init(struct dentry *dir)
{
	debugfs_create_file("registry", 0400, dir, NULL, &cdsm_registry_fops);
}

/**
 * cdsm_app_exit() - forget the untracked processes (unload).
 *
 * Context: process context, after cdsm_apps_free_all() and with the
 * tracepoints detached.
 */
void cdsm_app_exit(void)
{
	struct cdsm_untracked *u, *n;

	list_for_each_entry_safe(u, n, &cdsm_untracked_list, node)
		cdsm_forget_untracked(u);
}
