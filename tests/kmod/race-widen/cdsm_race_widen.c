// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only module for tests/kmod/race: widens two race windows of cdsm.ko
 * with kprobes, so that the race test hits them within seconds under QEMU
 * TCG. Nothing of this is in cdsm.ko.
 *
 * - fork: a task forked by "cdsm-storm" is in the task list (copy_process()
 *   linked it) before sched_process_fork fires; cgroup_post_fork() runs in
 *   between, and is delayed by fork_delay_us.
 * - add: cdsm.ko's cdsm_task_refresh() runs inside the addition of a task
 *   (between its exiting check and the live count's increment in the module
 *   before the fix); it is delayed by add_delay_us when called by
 *   "cdsm-race" (the race test's TRACK loop).
 */
#include <linux/delay.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/string.h>

static unsigned int fork_delay_us = 200;
module_param(fork_delay_us, uint, 0444);
static unsigned int add_delay_us = 50;
module_param(add_delay_us, uint, 0444);

static int widen_fork(struct kprobe *kp, struct pt_regs *regs)
{
	if (!strncmp(current->comm, "cdsm-storm", 10))
		udelay(fork_delay_us);
	return 0;
}

static int widen_add(struct kprobe *kp, struct pt_regs *regs)
{
	if (!strncmp(current->comm, "cdsm-race", 9))
		udelay(add_delay_us);
	return 0;
}

static struct kprobe kp_fork = { .symbol_name = "cgroup_post_fork", .pre_handler = widen_fork };
static struct kprobe kp_add = { .symbol_name = "cdsm_task_refresh", .pre_handler = widen_add };
static bool add_registered;

static int __init widen_init(void)
{
	int err = register_kprobe(&kp_fork);

	if (err) {
		pr_err("cdsm_race_widen: cannot probe cgroup_post_fork: %d\n", err);
		return err;
	}
	/* Needs cdsm.ko loaded; optional (its absence only narrows the window). */
	add_registered = !register_kprobe(&kp_add);
	pr_info("cdsm_race_widen: fork +%u us, add +%u us%s\n", fork_delay_us, add_delay_us,
		add_registered ? "" : " (cdsm_task_refresh not probed)");
	return 0;
}

static void __exit widen_exit(void)
{
	unregister_kprobe(&kp_fork);
	if (add_registered)
		unregister_kprobe(&kp_add);
}

module_init(widen_init);
module_exit(widen_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("cdsm race test: widens race windows with kprobes (test only)");
