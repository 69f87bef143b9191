// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm registry: each application's matrices (the aged one and the
 * whole-run one, with its event count) and its table of file homes: grown
 * and counted into by the worker, aged, reset and copied out for the char
 * device. The application's own mutex guards them (cdsm_app_matrix_lock());
 * the table and the task records are cdsm_app.c's.
 */
#include <linux/mm.h>
#include <linux/memcontrol.h>
#include <linux/mutex.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>

#include "cdsm_app.h"
#include "cdsm_app_internal.h"
#include "cdsm_core.h"
#include "cdsm_stats.h"

/* log2 of the entries of an application's table of file homes (768 files, 20 KiB). */
#define CDSM_HOMES_LOG2 10

/*
 * Allocates @size bytes, zeroed, for @app, charged to the memory cgroup of its
 * first task. Context: process context (the worker). A failure is counted.
 */
static void *cdsm_app_zalloc(struct cdsm_app *app, size_t size)
{
	struct mem_cgroup *old_memcg = set_active_memcg(READ_ONCE(app->memcg));
	void *mem = kvzalloc(size, GFP_KERNEL | __GFP_NOWARN | __GFP_ACCOUNT);

	set_active_memcg(old_memcg);
	if (!mem)
		cdsm_stat_add(CDSM_STAT_ALLOC_FAILURES, 1);
	return mem;
}

/**
 * cdsm_app_grow() - grow an application's matrices for the tasks that joined
 * (up to max_tasks), before the records that need the new rows are applied;
 * allocate its table of file homes the first time.
 * @app:	the application.
 *
 * Context: cdsm_apps_lock() held (the worker); allocates with GFP_KERNEL,
 * charged to the memory cgroup of the application's first task; takes the
 * matrix lock. A failure is counted and leaves both matrices as they were (or
 * the application without homes: all pairs count in its shared files).
 */
void cdsm_app_grow(struct cdsm_app *app)
{
	u32 nr_tasks = READ_ONCE(app->nr_tasks);
	struct cdsm_matrix m, w;
	u32 *old, *old_whole;
	void *homes;

	if (!app->homes.files && nr_tasks) {
		homes = cdsm_app_zalloc(app, cdsm_homes_mem_sz(CDSM_HOMES_LOG2));
		if (homes) {
			cdsm_homes_init(&app->homes, homes, CDSM_HOMES_LOG2);
			atomic64_add(cdsm_homes_mem_sz(CDSM_HOMES_LOG2), &app->kmem_bytes);
		}
	}
	if (nr_tasks <= app->matrix.dim || app->matrix.dim >= app->max_tasks)
		return;
	m.dim = cdsm_matrix_dim_for(nr_tasks, CDSM_MIN_MATRIX_DIM, app->max_tasks);
	w.dim = m.dim;
	m.cells = cdsm_app_zalloc(app, cdsm_matrix_mem_sz(m.dim));
	w.cells = m.cells ? cdsm_app_zalloc(app, cdsm_matrix_mem_sz(w.dim)) : NULL;
	if (!w.cells) {
		kvfree(m.cells);
		return;
	}
	mutex_lock(&app->mutex);
	old = app->matrix.cells;
	old_whole = app->whole.cells;
	if (old) {
		cdsm_matrix_copy(&m, &app->matrix);
		cdsm_matrix_copy(&w, &app->whole);
	}
	atomic64_add(2 * (cdsm_matrix_mem_sz(m.dim) - cdsm_matrix_mem_sz(app->matrix.dim)),
		     &app->kmem_bytes);
	app->matrix = m;
	app->whole = w;
	mutex_unlock(&app->mutex);
	kvfree(old);
	kvfree(old_whole);
}

/**
 * cdsm_app_matrix_lock() - lock an application's matrix and event count, for
 * a run of cdsm_app_count() calls.
 * @app:	the application.
 *
 * Context: process context; sleeps (a mutex). Never held while yielding:
 * readers of the matrix wait for it.
 */
void cdsm_app_matrix_lock(struct cdsm_app *app)
	__acquires(&app->mutex)
{
	mutex_lock(&app->mutex);
}

/**
 * cdsm_app_matrix_unlock() - release cdsm_app_matrix_lock().
 * @app:	the application.
 *
 * Context: cdsm_app_matrix_lock() held.
 */
void cdsm_app_matrix_unlock(struct cdsm_app *app)
	__releases(&app->mutex)
{
	mutex_unlock(&app->mutex);
}

/**
 * cdsm_app_count() - count one communication event between two tasks, in the
 * aged matrix and in the whole-run matrix.
 * @app:	the application.
 * @a:		a task index.
 * @b:		another task index.
 *
 * Context: cdsm_app_matrix_lock() held.
 * Return: false if a task is beyond the matrix (not grown yet, or beyond
 * max_tasks): the event is not counted.
 */
bool cdsm_app_count(struct cdsm_app *app, u32 a, u32 b)
{
	if (!cdsm_matrix_add_pair(&app->matrix, a, b))
		return false;
	/* Same dimension, grown together: cannot fail where the first did not. */
	cdsm_matrix_add_pair(&app->whole, a, b);
	app->events++;
	return true;
}

/**
 * cdsm_app_file_home() - the home of a shared file of an application: the
 * task that faulted on it first (cdsm_homes_get()).
 * @app:	the application.
 * @file:	the file's id (cdsm_fault_rec.file), not 0.
 * @sharer:	the faulting task, which becomes the home of a new file.
 * @time_ns:	when it faulted (cdsm_fault_rec.file_ns).
 *
 * Context: the worker (the only user of the table).
 * Return: the home's sharer id, or 0 when the file has none (no table, or
 * the table is full).
 */
u32 cdsm_app_file_home(struct cdsm_app *app, u64 file, u32 sharer, u64 time_ns)
{
	return app->homes.files ? cdsm_homes_get(&app->homes, file, sharer, time_ns) : 0;
}

/**
 * cdsm_app_snapshot_matrix() - a copy of one of an application's matrices.
 * @app:	the application.
 * @whole:	the whole-run matrix instead of the aged one.
 * @cells:	@dim * @dim zeroed cells, row-major.
 * @dim:	tasks to copy (rows beyond the matrix stay zero).
 * @events:	out: events counted.
 * @snapshot_ns: out: when the copy was taken (CLOCK_BOOTTIME).
 *
 * Context: process context; takes the matrix lock (sleeps).
 */
void cdsm_app_snapshot_matrix(struct cdsm_app *app, bool whole, u32 *cells, u32 dim,
			      u64 *events, u64 *snapshot_ns)
{
	const struct cdsm_matrix *m = whole ? &app->whole : &app->matrix;
	u32 rows, i;

	mutex_lock(&app->mutex);
	rows = min(dim, m->dim);
	for (i = 0; i < rows; i++)
		memcpy(cells + (size_t)i * dim, m->cells + (size_t)i * m->dim,
		       rows * sizeof(u32));
	*events = app->events;
	*snapshot_ns = ktime_get_boottime_ns();
	mutex_unlock(&app->mutex);
}

/**
 * cdsm_app_age() - age an application's matrix (cdsm_matrix_age()); the
 * whole-run matrix is never aged.
 * @app:	the application.
 *
 * Context: process context; takes the matrix lock (sleeps).
 */
void cdsm_app_age(struct cdsm_app *app)
{
	mutex_lock(&app->mutex);
	cdsm_matrix_age(&app->matrix);
	mutex_unlock(&app->mutex);
}

/**
 * cdsm_app_reset() - clear an application's matrices and event count.
 * @app:	the application.
 *
 * Context: process context; takes the matrix lock (sleeps).
 */
void cdsm_app_reset(struct cdsm_app *app)
{
	mutex_lock(&app->mutex);
	if (app->matrix.cells) {
		memset(app->matrix.cells, 0, cdsm_matrix_mem_sz(app->matrix.dim));
		memset(app->whole.cells, 0, cdsm_matrix_mem_sz(app->whole.dim));
	}
	app->events = 0;
	mutex_unlock(&app->mutex);
}
