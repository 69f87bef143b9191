// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm: communication detection through shared memory.
 *
 * Module entry: brings the pieces up in dependency order and down in
 * reverse: the fault probe goes first on unload, so that nothing produces
 * records while the worker and the applications are freed; the tracepoints
 * go last, so that every task that exits before its record is freed is seen
 * exiting (a record of a task that exited unseen would name a freed task).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/module.h>

#include <linux/cdsm.h>

#include "cdsm_app.h"
#include "cdsm_dev.h"
#include "cdsm_fault.h"
#include "cdsm_netlink.h"
#include "cdsm_params.h"
#include "cdsm_rearm.h"
#include "cdsm_track.h"
#include "cdsm_worker.h"

#ifndef CDSM_VERSION
#error "CDSM_VERSION comes from the file VERSION (see Kbuild)"
#endif

/* /sys/kernel/debug/cdsm: consistency checks (root only). */
static struct dentry *cdsm_debugfs;

static int __init cdsm_init(void)
{
	int err;

	err = cdsm_params_init();
	if (err)
		return err;
	err = cdsm_rearm_init();
	if (err)
		return err;
	err = cdsm_fault_init();
	if (err)
		return err;
	err = cdsm_netlink_init();
	if (err)
		goto fail_netlink;
	err = cdsm_track_start();
	if (err)
		goto fail_tracking;
	err = cdsm_worker_start();
	if (err)
		goto fail_tracking;
	err = cdsm_fault_start();
	if (err)
		goto fail_fault;
	err = cdsm_dev_init();
	if (err)
		goto fail_dev;
	cdsm_debugfs = debugfs_create_dir(KBUILD_MODNAME, NULL);
	cdsm_app_debugfs_init(cdsm_debugfs);
	cdsm_rearm_debugfs_init(cdsm_debugfs);
	pr_info("version %s (ABI %d) loaded: block %u B, %u sharers, %u block entries, re-arm %u bp/s every %u ms%s\n",
		CDSM_VERSION, CDSM_ABI_VERSION, 1U << cdsm_params.block_shift,
		cdsm_params.nr_sharers, 1U << cdsm_params.hash_entries_log2,
		cdsm_params.rearm_rate_bp, cdsm_params.rearm_period_ms,
		cdsm_rearm_available() ? "" : " (re-arming unavailable)");
	return 0;

fail_dev:
	cdsm_fault_stop();
fail_fault:
	cdsm_worker_stop();
fail_tracking:
	cdsm_apps_free_all();
	cdsm_track_stop();
	cdsm_app_exit();
	cdsm_netlink_exit();
fail_netlink:
	cdsm_fault_exit();
	return err;
}

static void __exit cdsm_exit(void)
{
	debugfs_remove_recursive(cdsm_debugfs);
	cdsm_dev_exit();
	cdsm_fault_stop();
	cdsm_worker_stop();
	/*
	 * Applications go while the exit probe still runs: a record not marked
	 * exited then names a live task (cdsm_app_untrack() reads it), and the
	 * registry refuses new applications from then on.
	 */
	cdsm_apps_free_all();
	cdsm_track_stop();
	cdsm_app_exit();
	cdsm_netlink_exit();
	cdsm_fault_exit();
	pr_info("unloaded\n");
}

module_init(cdsm_init);
module_exit(cdsm_exit);

MODULE_LICENSE("GPL");
MODULE_VERSION(CDSM_VERSION);
MODULE_DESCRIPTION("Communication detection through shared memory for thread and process mapping");
MODULE_AUTHOR("cdsm developers");
