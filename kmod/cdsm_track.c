// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm tracking: tasks join applications through the sched_process_fork,
 * sched_process_exit, cgroup_attach_task and cgroup_rmdir tracepoints (found
 * with for_each_kernel_tracepoint(), as LTTng does), and by CDSM_IOC_TRACK.
 * This file decides which application a task joins; the registry
 * (cdsm_app.c) adds it, refuses a second record or an exiting task, and owns
 * the locks.
 *
 * Tracepoint probes run in atomic context: they take only the registry's
 * spinlock (cdsm_tasks_lock()) and allocate only with GFP_NOWAIT (task
 * records come from a spare chunk the worker keeps ready); a failure leaves
 * the task out and is counted.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cgroup.h>
#include <linux/err.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "cdsm_app.h"
#include "cdsm_params.h"
#include "cdsm_track.h"

/*
 * Auto mode: a process that reached auto_threads threads gets an application,
 * within the registry's quota. Context: cdsm_tasks_lock() held.
 */
static void cdsm_track_auto(struct task_struct *p)
{
	unsigned int min_threads = READ_ONCE(cdsm_params.auto_threads);

	if (!min_threads || get_nr_threads(p) < min_threads || !p->mm ||
	    (p->flags & PF_EXITING))
		return;
	cdsm_app_create_auto(p);
}

static void cdsm_probe_fork(void *data, struct task_struct *parent,
			    struct task_struct *child)
{
	struct cdsm_task *pt;
	struct cdsm_app *app;

	if (!cdsm_apps_tracked() && !READ_ONCE(cdsm_params.auto_threads))
		return;
	cdsm_tasks_lock();
	rcu_read_lock();
	pt = cdsm_task_lookup(parent);
	if (pt) {
		cdsm_app_add_task(cdsm_app_of_task(pt), child);
		goto out;
	}
	app = cdsm_app_open_in(task_dfl_cgroup(child));
	if (app)
		cdsm_app_add_task(app, child);
	else
		cdsm_track_auto(child);
out:
	rcu_read_unlock();
	cdsm_tasks_unlock();
}

static void cdsm_probe_exit(void *data, struct task_struct *p)
{
	cdsm_task_exited(p);
}

/* A task moved into a cgroup: join a tracked cgroup's application. */
static void cdsm_probe_attach(void *data, struct cgroup *dst, const char *path,
			      struct task_struct *p, bool threadgroup)
{
	struct cdsm_app *app;

	if (!cdsm_apps_tracked())
		return;
	cdsm_tasks_lock();
	rcu_read_lock();
	app = cdsm_app_open_in(dst);
	if (app && threadgroup)
		cdsm_app_add_threads(app, p->group_leader);
	else if (app)
		cdsm_app_add_task(app, p);
	rcu_read_unlock();
	cdsm_tasks_unlock();
}

/*
 * A cgroup directory was removed (cgroup v2 removes only unpopulated ones): an
 * application of it that no task ever joined, or whose tasks all exited, ends.
 */
static void cdsm_probe_rmdir(void *data, struct cgroup *cgrp, const char *path)
{
	if (cdsm_apps_tracked())
		cdsm_app_end_cgroup(cgrp);
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

/* Exit first: no task joins before its exit is seen. */
static struct cdsm_tp cdsm_tps[] = {
	{ .name = "sched_process_exit", .probe = cdsm_probe_exit },
	{ .name = "sched_process_fork", .probe = cdsm_probe_fork },
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
 * cdsm_track_start() - attach to the task lifecycle tracepoints.
 *
 * On failure some may be attached, and applications may exist: the caller
 * frees them (cdsm_apps_free_all()) before cdsm_track_stop(), as on unload.
 *
 * Context: process context (module load).
 * Return: 0, or an error after a message naming the tracepoint.
 */
int cdsm_track_start(void)
{
	int i, err;

	for_each_kernel_tracepoint(cdsm_tp_find, NULL);
	for (i = 0; i < ARRAY_SIZE(cdsm_tps); i++) {
		if (!cdsm_tps[i].tp) {
			pr_err("tracepoint %s not found\n", cdsm_tps[i].name);
			return -ENOENT;
		}
	}
	for (i = 0; i < ARRAY_SIZE(cdsm_tps); i++) {
		err = tracepoint_probe_register(cdsm_tps[i].tp, cdsm_tps[i].probe, NULL);
		if (err) {
			pr_err("cannot attach to tracepoint %s: %d\n", cdsm_tps[i].name, err);
			return err;
		}
		cdsm_tps[i].registered = true;
	}
	return 0;
}

/**
 * cdsm_track_stop() - detach from the tracepoints and wait until no
 * probe runs any more.
 *
 * Context: process context; sleeps.
 */
void cdsm_track_stop(void)
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

static bool cdsm_in_cgroup(struct task_struct *p, struct cgroup *cgrp)
{
	return cgroup_is_descendant(task_dfl_cgroup(p), cgrp);
}

/*
 * Creates the application of @root's process tree (@cgrp NULL; @root_pid is
 * its pid in the caller's namespace) or of cgroup @cgrp (@root NULL; the
 * application takes the reference), and adds the tasks present now.
 *
 * The walk over every task holds only RCU, so that the registry's spinlock is
 * held per task (cdsm_app_join()) and never for the length of the task list.
 * A task forked during the walk joins by the fork probe (its parent is
 * tracked) or by the walk (it is appended to the task list, possibly before
 * the fork probe runs); whichever comes second finds its record. The
 * registry's mutex keeps the application in its slot meanwhile.
 * Return: as cdsm_track_pid() and cdsm_track_cgroup().
 */
static int cdsm_track(struct task_struct *root, pid_t root_pid, struct cgroup *cgrp,
		      u32 *app_id)
{
	struct cdsm_app *app = ERR_PTR(-ENOENT);
	struct task_struct *g, *t;

	cdsm_apps_lock();
	cdsm_tasks_lock();
	rcu_read_lock();
	if (root ? !!cdsm_task_lookup(root) : !!cdsm_app_open_at(cgrp))
		app = ERR_PTR(-EEXIST);
	else if (!root || (!(root->flags & PF_EXITING) && root->mm))
		app = cdsm_app_create(root ? CDSM_TRACK_PID : CDSM_TRACK_CGROUP, root_pid, cgrp,
				      GFP_ATOMIC);
	if (IS_ERR(app)) {
		rcu_read_unlock();
		cdsm_tasks_unlock();
		cdsm_apps_unlock();
		return PTR_ERR(app);
	}
	if (root)
		cdsm_app_add_threads(app, root->group_leader);
	cdsm_tasks_unlock();
	for_each_process_thread(g, t)
		if (root ? cdsm_descends_from(t, root) : t->mm && cdsm_in_cgroup(t, cgrp))
			cdsm_app_join(app, t);
	rcu_read_unlock();
	*app_id = cdsm_app_id(app);
	cdsm_apps_unlock();
	return 0;
}

/**
 * cdsm_track_pid() - track a process tree.
 * @pid:	the process, in the caller's pid namespace.
 * @app_id:	out: the new application.
 *
 * The process, its threads and its descendants join now, and every task
 * they create later.
 *
 * Context: process context; sleeps.
 * Return: 0, -ENOENT (no such process), -EEXIST (already tracked),
 * -ENOSPC (no free slot) or -ENOMEM.
 */
int cdsm_track_pid(pid_t pid, u32 *app_id)
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
	err = cdsm_track(root, pid, NULL, app_id);
	put_task_struct(root);
	return err;
}

/**
 * cdsm_track_cgroup() - track a cgroup v2 directory.
 * @path:	path relative to the cgroup2 root.
 * @app_id:	out: the new application.
 *
 * Every task in the cgroup or below joins now, and every task that enters
 * it later (by fork or by moving in), until the application ends (its last
 * task exits) or is untracked; tracking the directory again then starts a new
 * application.
 *
 * Context: process context; sleeps.
 * Return: 0, -ENOENT (no such cgroup), -EEXIST (an application of this
 * cgroup still takes tasks), -ENOSPC or -ENOMEM.
 */
int cdsm_track_cgroup(const char *path, u32 *app_id)
{
	struct cgroup *cgrp = cgroup_get_from_path(path);
	int err;

	if (IS_ERR(cgrp))
		return -ENOENT;
	err = cdsm_track(NULL, 0, cgrp, app_id);
	if (err)
		cgroup_put(cgrp);
	return err;
}
