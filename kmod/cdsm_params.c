// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm parameters. Defaults follow the CDSM paper (block 256 B, 4 sharers,
 * extra faults on at most 1 % of the pages per second in 10 ms steps) except
 * the block table, which is scaled to the machine's RAM (one entry per page,
 * at most 4 M entries as in the paper, at least 4 K).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sizes.h>
#include <linux/string.h>

#include "cdsm_core.h"
#include "cdsm_params.h"

static unsigned int block_shift = 8;
module_param(block_shift, uint, 0444);
MODULE_PARM_DESC(block_shift, "log2 of the memory block size in bytes, 6..21 (default 8: 256 B)");

static unsigned int sharers = 4;
module_param(sharers, uint, 0444);
MODULE_PARM_DESC(sharers, "recent sharers kept per block, 1..8 (default 4)");

static unsigned int hash_entries_log2;
module_param(hash_entries_log2, uint, 0444);
MODULE_PARM_DESC(hash_entries_log2,
		 "log2 of the block table entries, 12..24 (default 0: one per page of RAM, 12..22)");

static unsigned int rearm_rate_bp = 100;
module_param(rearm_rate_bp, uint, 0444);
MODULE_PARM_DESC(rearm_rate_bp,
		 "pages re-armed per second, basis points of resident pages, 0..10000 (default 100: 1 %)");

static unsigned int rearm_period_ms = 10;
module_param(rearm_period_ms, uint, 0444);
MODULE_PARM_DESC(rearm_period_ms, "worker period in ms, 1..1000 (default 10)");

static unsigned int max_tasks = 4096;
module_param(max_tasks, uint, 0444);
MODULE_PARM_DESC(max_tasks, "largest matrix, in tasks, 2..5792 (default 4096)");

static unsigned int auto_threads;
module_param(auto_threads, uint, 0444);
MODULE_PARM_DESC(auto_threads, "track any process with at least this many threads, 0 = off (default)");

unsigned int cdsm_auto_per_uid = 4;
module_param_named(auto_per_uid, cdsm_auto_per_uid, uint, 0644);
MODULE_PARM_DESC(auto_per_uid,
		 "automatic applications of one user (effective uid, or the owner of its user namespace) at once, ended ones included (default 4)");

unsigned int cdsm_auto_max_apps = 128;
module_param_named(auto_max_apps, cdsm_auto_max_apps, uint, 0644);
MODULE_PARM_DESC(auto_max_apps,
		 "automatic applications at once, of all users; the other slots stay for tracking on request (default 128 of 256)");

static unsigned int retention_s = 600;
module_param(retention_s, uint, 0444);
MODULE_PARM_DESC(retention_s, "seconds an ended application stays readable, 0 = until released (default 600)");

static unsigned int age_period_ms;
module_param(age_period_ms, uint, 0444);
MODULE_PARM_DESC(age_period_ms, "age every matrix this often in ms, 0 = on request only (default)");

/*
 * How faults in shared files count (docs/kmod.md, "Shared files"): "home"
 * pairs a task only with the file's home, "all" pairs every recent sharer
 * as in private memory. Writable at run time; read by the worker per record.
 */
bool cdsm_file_home = true;

static int cdsm_file_rule_set(const char *val, const struct kernel_param *kp)
{
	if (sysfs_streq(val, "home")) {
		WRITE_ONCE(cdsm_file_home, true);
	} else if (sysfs_streq(val, "all")) {
		WRITE_ONCE(cdsm_file_home, false);
	} else {
		pr_err("file_rule must be home or all\n");
		return -EINVAL;
	}
	return 0;
}

static int cdsm_file_rule_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%s\n", READ_ONCE(cdsm_file_home) ? "home" : "all");
}

static const struct kernel_param_ops cdsm_file_rule_ops = {
	.set = cdsm_file_rule_set,
	.get = cdsm_file_rule_get,
};
module_param_cb(file_rule, &cdsm_file_rule_ops, NULL, 0644);
MODULE_PARM_DESC(file_rule,
		 "faults in shared files pair a task with the file's home (first tracked toucher) only: home (default), or every recent sharer: all");

struct cdsm_params cdsm_params;
static DEFINE_MUTEX(cdsm_params_mutex);

/* Checks one value; @name is printed when @report and the value is refused. */
static bool cdsm_param_ok(const char *name, u32 val, u32 min, u32 max, bool report)
{
	if (val >= min && val <= max)
		return true;
	if (report)
		pr_err("%s=%u is out of range %u..%u\n", name, val, min, max);
	return false;
}

static int cdsm_params_check(const struct cdsm_params *p, bool report)
{
	bool ok = cdsm_param_ok("block_shift", p->block_shift, 6, 21, report) &
		  cdsm_param_ok("sharers", p->nr_sharers, 1, CDSM_MAX_SHARERS, report) &
		  cdsm_param_ok("hash_entries_log2", p->hash_entries_log2, 12, 24, report) &
		  cdsm_param_ok("rearm_rate_bp", p->rearm_rate_bp, 0, 10000, report) &
		  cdsm_param_ok("rearm_period_ms", p->rearm_period_ms, 1, 1000, report) &
		  cdsm_param_ok("max_tasks", p->max_tasks, 2, CDSM_MAX_TASKS, report) &
		  cdsm_param_ok("age_period_ms", p->age_period_ms,
				p->age_period_ms ? p->rearm_period_ms : 0, U32_MAX, report);

	return ok ? 0 : -EINVAL;
}

/**
 * cdsm_params_init() - validate the module parameters and set the defaults.
 *
 * Return: 0, or -EINVAL with a message naming each bad parameter.
 */
int cdsm_params_init(void)
{
	struct cdsm_params p = {
		.size = sizeof(p),
		.block_shift = block_shift,
		.nr_sharers = sharers,
		.hash_entries_log2 = hash_entries_log2,
		.rearm_rate_bp = rearm_rate_bp,
		.rearm_period_ms = rearm_period_ms,
		.max_tasks = max_tasks,
		.auto_threads = auto_threads,
		.retention_s = retention_s,
		.age_period_ms = age_period_ms,
	};
	int err;

	/* The largest task index and the application key fit a sharer id. */
	BUILD_BUG_ON(CDSM_MAX_TASKS - 1 > CDSM_MAX_TASK_INDEX);
	/* An application's two matrices stay within 256 MiB (docs/security.md). */
	BUILD_BUG_ON(2ULL * CDSM_MAX_TASKS * CDSM_MAX_TASKS * sizeof(u32) > SZ_256M);
	if (!p.hash_entries_log2)
		p.hash_entries_log2 = clamp(order_base_2(totalram_pages()), 12, 22);
	err = cdsm_params_check(&p, true);
	if (err)
		return err;
	cdsm_params = p;
	return 0;
}

/**
 * cdsm_params_get() - copy the current parameters.
 * @p:	out: every field, size included.
 */
void cdsm_params_get(struct cdsm_params *p)
{
	mutex_lock(&cdsm_params_mutex);
	*p = cdsm_params;
	mutex_unlock(&cdsm_params_mutex);
}

/**
 * cdsm_params_set() - change the run-time parameters.
 * @p:	every field; nr_sharers and hash_entries_log2 must be unchanged.
 *
 * Return: 0 or -EINVAL.
 */
int cdsm_params_set(const struct cdsm_params *p)
{
	int err = cdsm_params_check(p, false);

	if (err)
		return err;
	mutex_lock(&cdsm_params_mutex);
	if (p->nr_sharers != cdsm_params.nr_sharers ||
	    p->hash_entries_log2 != cdsm_params.hash_entries_log2) {
		err = -EINVAL;
	} else {
		WRITE_ONCE(cdsm_params.block_shift, p->block_shift);
		WRITE_ONCE(cdsm_params.rearm_rate_bp, p->rearm_rate_bp);
		WRITE_ONCE(cdsm_params.rearm_period_ms, p->rearm_period_ms);
		WRITE_ONCE(cdsm_params.max_tasks, p->max_tasks);
		WRITE_ONCE(cdsm_params.auto_threads, p->auto_threads);
		WRITE_ONCE(cdsm_params.retention_s, p->retention_s);
		WRITE_ONCE(cdsm_params.age_period_ms, p->age_period_ms);
	}
	mutex_unlock(&cdsm_params_mutex);
	return err;
}
