// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm worker (see cdsm_worker.h). It is the only user of the block table,
 * so the table needs no lock; a matrix is updated under its application's
 * matrix lock (cdsm_app_matrix_lock()), which snapshots take too. Matrices
 * grow (cdsm_app_grow()) before the records that need the new rows are
 * applied. A step holds cdsm_apps_lock(), so that the applications it walks
 * stay in their slots; it reaches them only through the registry's
 * functions (cdsm_app.h).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/vmalloc.h>

#include "cdsm_app.h"
#include "cdsm_core.h"
#include "cdsm_fault.h"
#include "cdsm_netlink.h"
#include "cdsm_params.h"
#include "cdsm_rearm.h"
#include "cdsm_stats.h"
#include "cdsm_worker.h"

static struct task_struct *cdsm_worker_task;
static struct cdsm_blocks cdsm_blocks;
static void *cdsm_blocks_mem;
static unsigned int cdsm_blocks_shift;
static struct cdsm_fault_rec *cdsm_batch;
static u64 cdsm_evictions_before_clear;

/*
 * The frame under @rec changed owner: the kernel migrated the page (its
 * blocks move to the new frame, so that their sharers follow the data and
 * the old frame starts clean), or gave private memory a fresh frame at a
 * first touch or a copy on write (what the table knew of that frame is
 * stale). A huge page moves or
 * starts as a whole; a PUD-sized one never does either (no NUMA hinting on
 * PUDs, no anonymous PUD pages), so the range is at most a PMD. Blocks
 * larger than the page are left as they are.
 */
static void cdsm_worker_new_frame(const struct cdsm_fault_rec *rec, unsigned int shift)
{
	unsigned int page_shift = min_t(unsigned int, rec->page_shift, PMD_SHIFT);
	u64 mask = ~((1ULL << page_shift) - 1);
	u64 to = (rec->paddr & mask) >> shift;
	u64 i, n;

	/* A block larger than the page holds other pages' data too: leave it. */
	if (shift > page_shift)
		return;
	n = 1ULL << (page_shift - shift);
	if (rec->old_paddr) {
		u64 from = (rec->old_paddr & mask) >> shift;

		cdsm_stat_add(CDSM_STAT_MIGRATED, 1);
		for (i = 0; i < n; i++)
			cdsm_blocks_move(&cdsm_blocks, from + i, to + i);
	} else {
		for (i = 0; i < n; i++)
			cdsm_blocks_forget(&cdsm_blocks, to + i);
	}
}

/* Applies one record; @locked is the application whose mutex is held. */
static void cdsm_worker_apply(const struct cdsm_fault_rec *rec, unsigned int shift,
			      struct cdsm_app **locked)
{
	struct cdsm_app *app = cdsm_app_of_key(cdsm_sharer_app(rec->sharer));
	u32 peers[CDSM_MAX_SHARERS];
	unsigned int i, n;

	if (!app) {
		cdsm_stat_add(CDSM_STAT_DROPPED, 1);
		return;
	}
	if (*locked != app) {
		if (*locked)
			cdsm_app_matrix_unlock(*locked);
		cdsm_app_matrix_lock(app);
		*locked = app;
	}
	if (rec->old_paddr || rec->fresh)
		cdsm_worker_new_frame(rec, shift);
	n = cdsm_blocks_record(&cdsm_blocks, rec->paddr >> shift, rec->ident,
			       rec->sharer, peers);
	/*
	 * In a shared file only pairs with its home count (cdsm_core.c). The
	 * home is learnt from every fault, also under file_rule=all, so that
	 * switching the rule finds the files' first tracked touchers.
	 */
	if (rec->file) {
		u32 home = cdsm_app_file_home(app, rec->file, rec->sharer, rec->file_ns);

		if (READ_ONCE(cdsm_file_home))
			n = cdsm_home_filter(rec->sharer, home, peers, n);
	}
	for (i = 0; i < n; i++)
		if (!cdsm_app_count(app, cdsm_sharer_task(rec->sharer), cdsm_sharer_task(peers[i])))
			cdsm_stat_add(CDSM_STAT_DROPPED, 1);
	cdsm_stat_add(CDSM_STAT_COMM_EVENTS, n);
}

static void cdsm_worker_record(void)
{
	unsigned int shift = READ_ONCE(cdsm_params.block_shift), i, n;
	struct cdsm_app *locked = NULL;
	bool more;
	int cpu;

	/* A new block size, or a slot's generation wrapped (cdsm_app_create()). */
	if (shift != cdsm_blocks_shift || cdsm_app_clear_pending()) {
		WRITE_ONCE(cdsm_evictions_before_clear,
			   cdsm_evictions_before_clear + cdsm_blocks.evictions);
		cdsm_blocks_clear(&cdsm_blocks);
		cdsm_blocks_shift = shift;
	}
	for_each_possible_cpu(cpu) {
		for (;;) {
			n = cdsm_fault_drain(cpu, cdsm_batch, CDSM_RING_LEN, &more);
			if (!more)
				break;
			for (i = 0; i < n; i++)
				cdsm_worker_apply(&cdsm_batch[i], shift, &locked);
			/* Never yield with a matrix locked: readers would wait for us. */
			if (locked)
				cdsm_app_matrix_unlock(locked);
			locked = NULL;
			cond_resched();
		}
	}
}

/*
 * Grows the matrices for the tasks that joined, then applies the records.
 * Also called by re-arming after each call that changed PTEs: a call ends
 * with a TLB shootdown that waits for every CPU running the process (up to
 * about a second under QEMU TCG), and a step re-arms every process of every
 * application, so applying records only once per step left matrices
 * seconds behind the faults. Context: cdsm_apps_lock() held.
 */
static void cdsm_worker_catch_up(void)
{
	struct cdsm_app *app;
	u32 pos;

	cdsm_for_each_app(app, pos)
		cdsm_app_grow(app);
	cdsm_worker_record();
}

static void cdsm_worker_tick(unsigned int elapsed_ms, bool age)
{
	unsigned int rate_bp = READ_ONCE(cdsm_params.rearm_rate_bp);
	u64 now_ns = ktime_get_boottime_ns();
	struct cdsm_app *app;
	u32 pos;

	cdsm_apps_lock();
	cdsm_for_each_app(app, pos)
		cdsm_app_refill(app);
	cdsm_worker_catch_up();
	cdsm_for_each_app(app, pos) {
		if (cdsm_app_tracking(app))
			cdsm_rearm_app(app, elapsed_ms, rate_bp, cdsm_worker_catch_up);
		if (age)
			cdsm_app_age(app);
		if (cdsm_app_expired(app, now_ns))
			cdsm_app_remove(app, false);
	}
	cdsm_apps_unlock();
	cdsm_events_send();
}

static int cdsm_worker_fn(void *unused)
{
	unsigned long last = jiffies, last_check = 0, last_age = jiffies;

	while (!kthread_should_stop()) {
		unsigned int age_ms = READ_ONCE(cdsm_params.age_period_ms);
		unsigned long now = jiffies;
		bool age = age_ms && time_after_eq(now, last_age + msecs_to_jiffies(age_ms));

		if (age)
			last_age = now;
		if (!last_check || time_after_eq(now, last_check + HZ)) {
			cdsm_rearm_check_sysctl(cdsm_apps_tracked() &&
						READ_ONCE(cdsm_params.rearm_rate_bp));
			last_check = now;
		}
		cdsm_worker_tick(min(jiffies_to_msecs(now - last), 1000U), age);
		last = now;
		schedule_timeout_interruptible(msecs_to_jiffies(READ_ONCE(cdsm_params.rearm_period_ms)));
	}
	return 0;
}

/**
 * cdsm_worker_start() - allocate the block table and start the worker.
 *
 * Return: 0, -ENOMEM or the error of kthread_run().
 */
int cdsm_worker_start(void)
{
	unsigned int log2 = cdsm_params.hash_entries_log2;
	unsigned int nr_sharers = cdsm_params.nr_sharers;

	cdsm_blocks_mem = kvzalloc(cdsm_blocks_mem_sz(log2, nr_sharers), GFP_KERNEL);
	cdsm_batch = kvmalloc_array(CDSM_RING_LEN, sizeof(*cdsm_batch), GFP_KERNEL);
	if (!cdsm_blocks_mem || !cdsm_batch) {
		pr_err("cannot allocate the block table (%zu bytes)\n",
		       cdsm_blocks_mem_sz(log2, nr_sharers));
		cdsm_worker_stop();
		return -ENOMEM;
	}
	cdsm_blocks_init(&cdsm_blocks, cdsm_blocks_mem, log2, nr_sharers);
	cdsm_blocks_shift = cdsm_params.block_shift;
	cdsm_worker_task = kthread_run(cdsm_worker_fn, NULL, "cdsm");
	if (IS_ERR(cdsm_worker_task)) {
		int err = PTR_ERR(cdsm_worker_task);

		cdsm_worker_task = NULL;
		cdsm_worker_stop();
		return err;
	}
	return 0;
}

/**
 * cdsm_worker_stop() - stop the worker and free the block table.
 */
void cdsm_worker_stop(void)
{
	if (cdsm_worker_task)
		kthread_stop(cdsm_worker_task);
	cdsm_worker_task = NULL;
	kvfree(cdsm_blocks_mem);
	kvfree(cdsm_batch);
	cdsm_blocks_mem = NULL;
	cdsm_batch = NULL;
}

/**
 * cdsm_worker_mem_sz() - memory of the block table and batch buffer.
 *
 * Return: bytes.
 */
size_t cdsm_worker_mem_sz(void)
{
	return cdsm_blocks_mem_sz(cdsm_params.hash_entries_log2, cdsm_params.nr_sharers) +
	       CDSM_RING_LEN * sizeof(*cdsm_batch);
}

/**
 * cdsm_worker_evictions() - block table evictions so far.
 *
 * Return: the count (read without lock: a statistic).
 */
u64 cdsm_worker_evictions(void)
{
	return READ_ONCE(cdsm_evictions_before_clear) + READ_ONCE(cdsm_blocks.evictions);
}
