// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm applications: tracking tasks through the sched_process_fork,
 * sched_process_exit, cgroup_attach_task and cgroup_rmdir tracepoints (found with
 * for_each_kernel_tracepoint(), as LTTng does), and by CDSM_IOC_TRACK.
 *
 * Tracepoint probes run in atomic context: they take only cdsm_lock and
 * allocate only with GFP_NOWAIT (task records come from a spare chunk the
 * worker keeps ready); a failure leaves the task out and is counted.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cgroup.h>
#include <linux/cred.h>
#include <linux/debugfs.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/tracepoint.h>

#include "cdsm_app.h"
#include "cdsm_netlink.h"
#include "cdsm_stats.h"

DEFINE_MUTEX(cdsm_apps_mutex);
DEFINE_SPINLOCK(cdsm_lock);
struct cdsm_app *cdsm_apps[CDSM_MAX_APPS];
atomic_t cdsm_nr_live_tasks;
atomic_t cdsm_nr_apps;

static DEFINE_HASHTABLE(cdsm_task_hash, 10);
static u16 cdsm_slot_gen[CDSM_MAX_APPS];
static u32 cdsm_next_app_id = 1;
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

/**
 * cdsm_app_task() - a task record by index.
 * @app:	the application.
 * @index:	below @app->nr_tasks.
 *
 * Return: the record.
 */
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

/*
 * Adds @p to @app, unless @p already has a record or is exiting. This is
 * the one place a task joins, so that the TRACK walk and the probes cannot
 * both add it (the walk can see a child after copy_process() linked it and
 * before sched_process_fork fires). The exit probe reads the live count
 * without the lock; the count is raised before PF_EXITING is read, each
 * side with a full barrier, so that either this sees PF_EXITING or the
 * exit probe sees the count and waits for the lock (and the record).
 * Context: cdsm_lock held.
 */
static struct cdsm_task *cdsm_app_add_task(struct cdsm_app *app,
					   struct task_struct *p)
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
	/* Count raised before PF_EXITING is read: pairs with cdsm_probe_exit(). */
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

/**
 * cdsm_app_readable() - the one rule for reading an application: the reader
 * has CAP_SYS_ADMIN in the initial user namespace (@admin), or its effective
 * uid is the application's owner, the effective uid of its first task when
 * that task joined. An application no task joined yet (a cgroup's) has no
 * owner: only admins read it. Later tasks, of any user, change nothing.
 * @app:	the application.
 * @euid:	the reader's effective uid (the opener's, see cdsm_dev.c).
 * @admin:	the reader is an admin.
 *
 * Context: cdsm_lock held (@app->uid is set under it).
 * Return: true if the reader may read @app.
 */
bool cdsm_app_readable(const struct cdsm_app *app, kuid_t euid, bool admin)
{
	return admin || (uid_valid(app->uid) && uid_eq(app->uid, euid));
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

static struct cdsm_app *cdsm_app_of(const struct cdsm_task *t)
{
	return cdsm_apps[cdsm_sharer_app(t->sharer) & 0xff];
}

/* A new application in a free slot. Context: cdsm_lock held. */
static struct cdsm_app *cdsm_app_create(u32 kind, struct task_struct *first,
					struct cgroup *cgrp, gfp_t gfp)
{
	u32 max_tasks = READ_ONCE(cdsm_params.max_tasks);
	u32 nr_chunks = DIV_ROUND_UP(max_tasks, CDSM_TASK_CHUNK);
	struct cdsm_app *app;
	int slot;

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
	if (first)
		app->root_pid = task_tgid_nr(first);
	/* Publish the initialised application to the lockless worker. */
	smp_store_release(&cdsm_apps[slot], app);
	atomic_inc(&cdsm_nr_apps);
	cdsm_event_app(CDSM_EVENT_APP_STARTED, app->id);
	return app;
nomem:
	cdsm_stat_add(CDSM_STAT_ALLOC_FAILURES, 1);
	return ERR_PTR(-ENOMEM);
}

/* Adds every thread of @leader's process. Context: cdsm_lock, RCU. */
static void cdsm_app_add_threads(struct cdsm_app *app, struct task_struct *leader)
{
	struct task_struct *t;

	for_each_thread(leader, t)
		cdsm_app_add_task(app, t);
}

static bool cdsm_in_cgroup(struct task_struct *p, struct cgroup *cgrp)
{
	return cgroup_is_descendant(task_dfl_cgroup(p), cgrp);
}

/*
 * A cgroup application that still takes new tasks: not ended (a new run in
 * the directory is a new application) and not untracked.
 */
static bool cdsm_app_open_cgroup(const struct cdsm_app *app)
{
	return app && app->cgrp && !(app->flags & (CDSM_APP_ENDED | CDSM_APP_UNTRACKED));
}

/* An application still takes @cgrp's new tasks. Context: cdsm_lock held. */
static bool cdsm_cgroup_taken(struct cgroup *cgrp)
{
	int slot;

	for (slot = 0; slot < CDSM_MAX_APPS; slot++)
		if (cdsm_app_open_cgroup(cdsm_apps[slot]) && cdsm_apps[slot]->cgrp == cgrp)
			return true;
	return false;
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
 * Auto mode may take one more application of @uid: at most auto_max_apps
 * automatic applications in all (the other slots stay for TRACK) and
 * auto_per_uid of one user; ended ones count until they are removed, as
 * they hold their slots. Context: cdsm_lock held.
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
		mine += uid_eq(app->uid, uid);
	}
	return all < READ_ONCE(cdsm_auto_max_apps) && mine < READ_ONCE(cdsm_auto_per_uid);
}

/* Auto mode: a process that reached auto_threads threads. */
static void cdsm_app_auto(struct task_struct *p)
{
	unsigned int min_threads = READ_ONCE(cdsm_params.auto_threads);
	struct cdsm_app *app;

	if (!min_threads || get_nr_threads(p) < min_threads || !p->mm ||
	    (p->flags & PF_EXITING) || cdsm_was_untracked(p))
		return;
	if (!cdsm_auto_quota_ok(task_euid(p))) {
		cdsm_auto_refused++;
		return;
	}
	app = cdsm_app_create(CDSM_TRACK_AUTO, p->group_leader, NULL, GFP_NOWAIT);
	if (!IS_ERR(app))
		cdsm_app_add_threads(app, p->group_leader);
}

static void cdsm_probe_fork(void *data, struct task_struct *parent,
			    struct task_struct *child)
{
	struct cdsm_task *pt;
	struct cdsm_app *app;
	int slot;

	if (!atomic_read(&cdsm_nr_apps) && !READ_ONCE(cdsm_params.auto_threads))
		return;
	spin_lock(&cdsm_lock);
	rcu_read_lock();
	pt = cdsm_task_lookup(parent);
	if (pt) {
		cdsm_app_add_task(cdsm_app_of(pt), child);
		goto out;
	}
	for (slot = 0; slot < CDSM_MAX_APPS; slot++) {
		app = cdsm_apps[slot];
		if (cdsm_app_open_cgroup(app) && cdsm_in_cgroup(child, app->cgrp)) {
			cdsm_app_add_task(app, child);
			goto out;
		}
	}
	cdsm_app_auto(child);
out:
	rcu_read_unlock();
	spin_unlock(&cdsm_lock);
}

static void cdsm_probe_exit(void *data, struct task_struct *p)
{
	struct cdsm_task *t;

	/* PF_EXITING is set: pairs with cdsm_app_add_task()'s barrier. */
	smp_mb();
	if (!atomic_read(&cdsm_nr_live_tasks))
		return;
	spin_lock(&cdsm_lock);
	t = cdsm_task_lookup(p);
	if (t)
		cdsm_app_exit_task(cdsm_app_of(t), t);
	spin_unlock(&cdsm_lock);
}

/* A task moved into a cgroup: join a tracked cgroup's application. */
static void cdsm_probe_attach(void *data, struct cgroup *dst, const char *path,
			      struct task_struct *p, bool threadgroup)
{
	struct cdsm_app *app;
	int slot;

	if (!atomic_read(&cdsm_nr_apps))
		return;
	spin_lock(&cdsm_lock);
	rcu_read_lock();
	for (slot = 0; slot < CDSM_MAX_APPS; slot++) {
		app = cdsm_apps[slot];
		if (!cdsm_app_open_cgroup(app) || !cgroup_is_descendant(dst, app->cgrp))
			continue;
		if (threadgroup)
			cdsm_app_add_threads(app, p->group_leader);
		else
			cdsm_app_add_task(app, p);
		break;
	}
	rcu_read_unlock();
	spin_unlock(&cdsm_lock);
}

/*
 * A cgroup directory was removed (cgroup v2 removes only unpopulated ones): an
 * application of it that no task ever joined, or whose tasks all exited, ends.
 */
static void cdsm_probe_rmdir(void *data, struct cgroup *cgrp, const char *path)
{
	struct cdsm_app *app;
	int slot;

	if (!atomic_read(&cdsm_nr_apps))
		return;
	spin_lock(&cdsm_lock);
	for (slot = 0; slot < CDSM_MAX_APPS; slot++) {
		app = cdsm_apps[slot];
		if (cdsm_app_open_cgroup(app) && app->cgrp == cgrp && !app->nr_live)
			cdsm_app_end(app);
	}
	spin_unlock(&cdsm_lock);
}

/**
 * struct cdsm_tp - a tracepoint cdsm attaches to.
 * @name:	its name.
 * @probe:	the probe function.
 * @tp:		the tracepoint, found at start.
 * @registered:	the probe is registered.
 */
struct cdsm_tp {
	const char *name;
	void *probe;
	struct tracepoint *tp;
	bool registered;
};

static struct cdsm_tp cdsm_tps[] = {
	{ .name = "sched_process_fork", .probe = cdsm_probe_fork },
	{ .name = "sched_process_exit", .probe = cdsm_probe_exit },
	{ .name = "cgroup_attach_task", .probe = cdsm_probe_attach },
	{ .name = "cgroup_rmdir", .probe = cdsm_probe_rmdir },
};

static void cdsm_tp_find(struct tracepoint *tp, void *priv)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(cdsm_tps); i++)
		if (!strcmp(tp->name, cdsm_tps[i].name))
			cdsm_tps[i].tp = tp;
}

/**
 * cdsm_app_tracking_start() - attach to the task lifecycle tracepoints.
 *
 * Return: 0, or an error after a message naming the tracepoint.
 */
int cdsm_app_tracking_start(void)
{
	int i, err;

	for_each_kernel_tracepoint(cdsm_tp_find, NULL);
	for (i = 0; i < ARRAY_SIZE(cdsm_tps); i++) {
		if (!cdsm_tps[i].tp) {
			pr_err("tracepoint %s not found\n", cdsm_tps[i].name);
			err = -ENOENT;
			goto fail;
		}
		err = tracepoint_probe_register(cdsm_tps[i].tp, cdsm_tps[i].probe, NULL);
		if (err) {
			pr_err("cannot attach to tracepoint %s: %d\n", cdsm_tps[i].name, err);
			goto fail;
		}
		cdsm_tps[i].registered = true;
	}
	return 0;
fail:
	cdsm_app_tracking_stop();
	return err;
}

/**
 * cdsm_app_tracking_stop() - detach from the tracepoints and wait until no
 * probe runs any more.
 */
void cdsm_app_tracking_stop(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(cdsm_tps); i++) {
		if (cdsm_tps[i].registered)
			tracepoint_probe_unregister(cdsm_tps[i].tp, cdsm_tps[i].probe, NULL);
		cdsm_tps[i].registered = false;
	}
	tracepoint_synchronize_unregister();
}

static bool cdsm_descends_from(struct task_struct *p, struct task_struct *root)
{
	for (; p && p->pid; p = rcu_dereference(p->real_parent)) {
		if (p->tgid == root->tgid)
			return true;
		if (p == p->real_parent)
			break;
	}
	return false;
}

/*
 * Adds @t, found by a walk over every task, unless it is tracked or exiting
 * (cdsm_app_add_task() checks both under cdsm_lock). The walk holds only RCU,
 * so that cdsm_lock is held per task and never for the length of the task
 * list. A task forked during the walk joins by the fork probe (its parent is
 * tracked) or by the walk (it is appended to the task list, possibly before
 * the fork probe runs); whichever comes second finds its record.
 * Context: rcu_read_lock() held, cdsm_apps_mutex held.
 */
static void cdsm_app_scan_add(struct cdsm_app *app, struct task_struct *t)
{
	spin_lock(&cdsm_lock);
	cdsm_app_add_task(app, t);
	spin_unlock(&cdsm_lock);
}

/*
 * Creates the application of @root's process tree (@cgrp NULL; @root_pid is
 * its pid in the caller's namespace) or of cgroup @cgrp (@root NULL; the
 * application takes the reference), and adds the tasks present now.
 * Return: as cdsm_app_track_pid() and cdsm_app_track_cgroup().
 */
static int cdsm_app_track(struct task_struct *root, pid_t root_pid, struct cgroup *cgrp,
			  u32 *app_id)
{
	struct cdsm_app *app = ERR_PTR(-ENOENT);
	struct task_struct *g, *t;

	mutex_lock(&cdsm_apps_mutex);
	spin_lock(&cdsm_lock);
	rcu_read_lock();
	if (root ? !!cdsm_task_lookup(root) : cdsm_cgroup_taken(cgrp))
		app = ERR_PTR(-EEXIST);
	else if (!root || (!(root->flags & PF_EXITING) && root->mm))
		app = cdsm_app_create(root ? CDSM_TRACK_PID : CDSM_TRACK_CGROUP, root, cgrp,
				      GFP_ATOMIC);
	if (IS_ERR(app)) {
		rcu_read_unlock();
		spin_unlock(&cdsm_lock);
		mutex_unlock(&cdsm_apps_mutex);
		return PTR_ERR(app);
	}
	if (root) {
		app->root_pid = root_pid;
		cdsm_app_add_threads(app, root->group_leader);
	}
	spin_unlock(&cdsm_lock);
	/* The walk over all tasks holds only RCU (see cdsm_app_scan_add). */
	for_each_process_thread(g, t)
		if (root ? cdsm_descends_from(t, root) : t->mm && cdsm_in_cgroup(t, cgrp))
			cdsm_app_scan_add(app, t);
	rcu_read_unlock();
	*app_id = app->id;
	mutex_unlock(&cdsm_apps_mutex);
	return 0;
}

/**
 * cdsm_app_track_pid() - track a process tree.
 * @pid:	the process, in the caller's pid namespace.
 * @app_id:	out: the new application.
 *
 * The process, its threads and its descendants join now, and every task
 * they create later.
 *
 * Return: 0, -ENOENT (no such process), -EEXIST (already tracked),
 * -ENOSPC (no free slot) or -ENOMEM.
 */
int cdsm_app_track_pid(pid_t pid, u32 *app_id)
{
	struct task_struct *root;
	int err;

	rcu_read_lock();
	root = pid_task(find_vpid(pid), PIDTYPE_PID);
	if (root)
		get_task_struct(root);
	rcu_read_unlock();
	if (!root)
		return -ENOENT;
	err = cdsm_app_track(root, pid, NULL, app_id);
	put_task_struct(root);
	return err;
}

/**
 * cdsm_app_track_cgroup() - track a cgroup v2 directory.
 * @path:	path relative to the cgroup2 root.
 * @app_id:	out: the new application.
 *
 * Every task in the cgroup or below joins now, and every task that enters
 * it later (by fork or by moving in), until the application ends (its last
 * task exits) or is untracked; tracking the directory again then starts a new
 * application.
 *
 * Return: 0, -ENOENT (no such cgroup), -EEXIST (an application of this
 * cgroup still takes tasks), -ENOSPC or -ENOMEM.
 */
int cdsm_app_track_cgroup(const char *path, u32 *app_id)
{
	struct cgroup *cgrp = cgroup_get_from_path(path);
	int err;

	if (IS_ERR(cgrp))
		return -ENOENT;
	err = cdsm_app_track(NULL, 0, cgrp, app_id);
	if (err)
		cgroup_put(cgrp);
	return err;
}

/**
 * cdsm_app_get() - find an application and take a reference.
 * @id:	its id.
 *
 * Return: the application, or NULL.
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
	if (app->cgrp)
		cgroup_put(app->cgrp);
	mem_cgroup_put(app->memcg);
	kfree(app);
}

/**
 * cdsm_app_put() - drop a reference from cdsm_app_get().
 * @app:	the application.
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
 * Context: cdsm_apps_mutex held; sleeps.
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
 * cdsm_apps_free_all() - remove every application (unload).
 */
void cdsm_apps_free_all(void)
{
	int slot;

	mutex_lock(&cdsm_apps_mutex);
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
 * Context: process context, may sleep.
 * Return: 0 or -ENOMEM (counted).
 */
int cdsm_app_refill(struct cdsm_app *app)
{
	struct cdsm_task *chunk;

	struct mem_cgroup *old_memcg;

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
 * Return: true once per wrap.
 */
bool cdsm_app_clear_pending(void)
{
	return atomic_read(&cdsm_clear_pending) && atomic_xchg(&cdsm_clear_pending, 0);
}

/*
 * debugfs "registry": a check of the task registry under cdsm_lock. Every
 * record not marked exited must be in the task hash exactly once and be the
 * only record of its task; the live counts must agree. "duplicates" and
 * "mismatches" are 0 unless the module is broken; the "refused" counters say
 * how often a race or a quota was met (and handled).
 */
static int cdsm_registry_show(struct seq_file *m, void *unused)
{
	u64 live = 0, hashed = 0, duplicates = 0, mismatches = 0;
	struct cdsm_task *t, *o;
	int slot, bkt;
	u32 i;

	spin_lock(&cdsm_lock);
	for (slot = 0; slot < CDSM_MAX_APPS; slot++) {
		struct cdsm_app *app = cdsm_apps[slot];
		u32 app_live = 0;

		if (!app)
			continue;
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
	spin_unlock(&cdsm_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(cdsm_registry);

/**
 * cdsm_app_debugfs_init() - create the "registry" file.
 * @dir:	the module's debugfs directory.
 */
void cdsm_app_debugfs_init(struct dentry *dir)
{
	debugfs_create_file("registry", 0400, dir, NULL, &cdsm_registry_fops);
}

/**
 * cdsm_app_exit() - forget the untracked processes (unload).
 */
void cdsm_app_exit(void)
{
	struct cdsm_untracked *u, *n;

	list_for_each_entry_safe(u, n, &cdsm_untracked_list, node)
		cdsm_forget_untracked(u);
}
