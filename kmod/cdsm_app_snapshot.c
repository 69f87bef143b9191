// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm registry: what a reader may see and the copies it gets (the char
 * device's LIST_APPS, GET_COUNTERS, GET_TASKS): the one rule for reading an
 * application, and snapshots of the table and of an application's task
 * records, taken under cdsm_tasks_lock(). The matrices' copy is in
 * cdsm_app_matrix.c.
 */
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>
#include <linux/cdsm.h>

#include "cdsm_app.h"
#include "cdsm_app_internal.h"

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
static bool cdsm_app_readable(const struct cdsm_app *app, kuid_t euid, bool admin)
{
	return admin || (uid_valid(app->uid) && uid_eq(app->uid, euid));
}

/**
 * cdsm_app_get_readable() - find an application a reader may read
 * (cdsm_app_readable()) and take a reference.
 * @id:		its id.
 * @euid:	the reader's effective uid.
 * @admin:	the reader is an admin.
 *
 * Context: process context; takes cdsm_tasks_lock().
 * Return: the application (release it with cdsm_app_put()), or NULL whether
 * it does not exist or the reader may not read it.
 */
struct cdsm_app *cdsm_app_get_readable(u32 id, kuid_t euid, bool admin)
{
	struct cdsm_app *app = cdsm_app_get(id);
	bool readable;

	if (!app)
		return NULL;
	spin_lock(&cdsm_lock);
	readable = cdsm_app_readable(app, euid, admin);
	spin_unlock(&cdsm_lock);
	if (!readable) {
		cdsm_app_put(app);
		return NULL;
	}
	return app;
}

/* A snapshot of @app for user space. Context: cdsm_lock held. */
static void cdsm_app_fill_info(const struct cdsm_app *app, struct cdsm_app_info *info,
			       struct user_namespace *ns)
{
	info->app_id = app->id;
	info->kind = app->kind;
	info->flags = app->flags;
	info->nr_tasks = app->nr_tasks;
	info->nr_live_tasks = app->nr_live;
	info->matrix_dim = app->matrix.dim;
	info->root_pid = app->root_pid;
	/* No owner yet (a cgroup's before its first task): (u32)-1. */
	info->uid = uid_valid(app->uid) ? from_kuid_munged(ns, app->uid) : (u32)-1;
	info->start_ns = app->start_ns;
	info->end_ns = app->end_ns;
	info->events = app->events;
	info->rearm_pages = app->rearm_pages;
	info->kmem_bytes = atomic64_read(&app->kmem_bytes);
	memcpy(info->comm, app->comm, sizeof(info->comm));
}

/**
 * cdsm_apps_list() - a snapshot of every application a reader may read.
 * @infos:	CDSM_MAX_APPS zeroed entries.
 * @euid:	the reader's effective uid.
 * @admin:	the reader is an admin.
 * @ns:		the user namespace uids are shown in.
 *
 * Context: process context; takes cdsm_tasks_lock().
 * Return: entries filled.
 */
u32 cdsm_apps_list(struct cdsm_app_info *infos, kuid_t euid, bool admin,
		   struct user_namespace *ns)
{
	u32 n = 0;
	int slot;

	spin_lock(&cdsm_lock);
	for (slot = 0; slot < CDSM_MAX_APPS; slot++)
		if (cdsm_apps[slot] && cdsm_app_readable(cdsm_apps[slot], euid, admin))
			cdsm_app_fill_info(cdsm_apps[slot], &infos[n++], ns);
	spin_unlock(&cdsm_lock);
	return n;
}

/**
 * cdsm_apps_count() - totals over the table.
 * @apps:	out: applications.
 * @tasks:	out: tasks that joined them.
 * @kmem_bytes:	in: memory counted so far; out: plus the applications'.
 *
 * Context: process context; takes cdsm_tasks_lock().
 */
void cdsm_apps_count(u64 *apps, u64 *tasks, u64 *kmem_bytes)
{
	int slot;

	spin_lock(&cdsm_lock);
	for (slot = 0; slot < CDSM_MAX_APPS; slot++) {
		if (!cdsm_apps[slot])
			continue;
		(*apps)++;
		*tasks += cdsm_apps[slot]->nr_tasks;
		*kmem_bytes += atomic64_read(&cdsm_apps[slot]->kmem_bytes);
	}
	spin_unlock(&cdsm_lock);
}

/**
 * cdsm_app_snapshot_tasks() - a snapshot of an application's first task
 * records, live ones refreshed (cdsm_task_refresh()).
 * @app:	the application.
 * @infos:	@n zeroed entries.
 * @n:		records to fill, at most min(cdsm_app_nr_tasks(), @capacity)
 *		read before.
 * @capacity:	the caller's buffer, in entries.
 *
 * Context: process context; takes cdsm_tasks_lock().
 * Return: the count to report: @n, or the number of tasks if it exceeds
 * @capacity (asking for a larger buffer). Tasks that joined since @n was read
 * are left out when they fit: a count above the @n records written made
 * callers read unwritten entries (tid 0) during a fork storm.
 */
u32 cdsm_app_snapshot_tasks(struct cdsm_app *app, struct cdsm_task_info *infos, u32 n,
			    u32 capacity)
{
	u32 i, count;

	spin_lock(&cdsm_lock);
	count = app->nr_tasks > capacity ? app->nr_tasks : n;
	for (i = 0; i < n; i++) {
		struct cdsm_task *t = cdsm_app_task(app, i);

		if (!(t->flags & CDSM_TASK_EXITED))
			cdsm_task_refresh(app, t);
		infos[i].tid = t->tid;
		infos[i].tgid = t->tgid;
		infos[i].index = t->index;
		infos[i].flags = t->flags & CDSM_TASK_EXITED;
		infos[i].arrival_ns = t->arrival_ns;
		memcpy(infos[i].comm, t->comm, sizeof(infos[i].comm));
	}
	spin_unlock(&cdsm_lock);
	return count;
}
