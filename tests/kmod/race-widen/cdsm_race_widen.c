// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only module for tests/kmod/race and tests/kmod/unload-race: widens race
 * windows of cdsm.ko with kprobes, so that the tests hit them within seconds
 * under QEMU TCG, and reports what the unload test looks for. Nothing of this
 * is in cdsm.ko.
 *
 * - fork: a task forked by "cdsm-storm" is in the task list (copy_process()
 *   linked it) before sched_process_fork fires; cgroup_post_fork() runs in
 *   between, and is delayed by fork_delay_us.
 * - add: cdsm.ko's cdsm_task_refresh() runs inside the addition of a task
 *   (between its exiting check and the live count's increment in the module
 *   before the fix); it is delayed by add_delay_us when called by
 *   "cdsm-race" (the race test's TRACK loop).
 * - unload: cdsm.ko's cdsm_worker_stop(), called by rmmod, is delayed by
 *   unload_delay_ms (busy-waiting: a kprobe cannot sleep), so that tasks exit
 *   in the middle of the unload; such exits are counted. When rmmod then
 *   refreshes a task record (cdsm_task_refresh(), as the registry does when it
 *   untracks a live record), the record's task must not have passed its exit
 *   (exit_state set, or its credentials gone): that would be a record of a
 *   task whose exit cdsm.ko missed, naming a task_struct that may be freed;
 *   it is reported ("unload: record of exited task"). The counts are printed
 *   when this module is removed.
 */
#include <linux/delay.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/types.h>

/* The start of struct cdsm_task (kmod/cdsm_app.h): the fields read here. */
struct cdsm_task_prefix {
	struct hlist_node hnode;
	struct task_struct *task;
	pid_t tid;
};

static unsigned int fork_delay_us = 200;
module_param(fork_delay_us, uint, 0444);
static unsigned int add_delay_us = 50;
module_param(add_delay_us, uint, 0444);
static unsigned int unload_delay_ms = 100;
module_param(unload_delay_ms, uint, 0444);

static bool in_unload_window;
static atomic_t unload_exits = ATOMIC_INIT(0);
static atomic_t unload_refreshed = ATOMIC_INIT(0);
static atomic_t unload_dangling = ATOMIC_INIT(0);

static bool called_by(const char *comm)
{
	return !strncmp(current->comm, comm, TASK_COMM_LEN);
}

static int widen_fork(struct kprobe *kp, struct pt_regs *regs)
{
	if (!strncmp(current->comm, "cdsm-storm", 10))
		udelay(fork_delay_us);
	return 0;
}

static int widen_add(struct kprobe *kp, struct pt_regs *regs)
{
	const struct cdsm_task_prefix *t;
	struct task_struct *p;

	if (!strncmp(current->comm, "cdsm-race", 9))
		udelay(add_delay_us);
	if (!called_by("rmmod"))
		return 0;
	/* cdsm_task_refresh(app, t) */
	t = (const struct cdsm_task_prefix *)regs_get_kernel_argument(regs, 1);
	p = READ_ONCE(t->task);
	atomic_inc(&unload_refreshed);
	if (READ_ONCE(p->exit_state) || !READ_ONCE(p->cred)) {
		atomic_inc(&unload_dangling);
		pr_err("cdsm_race_widen: unload: record of exited task %d\n", t->tid);
	}
	return 0;
}

static int widen_unload(struct kprobe *kp, struct pt_regs *regs)
{
	if (!called_by("rmmod") || !unload_delay_ms)
		return 0;
	WRITE_ONCE(in_unload_window, true);
	mdelay(unload_delay_ms);
	WRITE_ONCE(in_unload_window, false);
	return 0;
}

static int count_exit(struct kprobe *kp, struct pt_regs *regs)
{
	if (READ_ONCE(in_unload_window))
		atomic_inc(&unload_exits);
	return 0;
}

static struct kprobe kp_fork = { .symbol_name = "cgroup_post_fork", .pre_handler = widen_fork };
static struct kprobe kp_add = { .symbol_name = "cdsm_task_refresh", .pre_handler = widen_add };
static struct kprobe kp_unload = { .symbol_name = "cdsm_worker_stop", .pre_handler = widen_unload };
static struct kprobe kp_exit = { .symbol_name = "do_exit", .pre_handler = count_exit };
static bool add_registered, unload_registered;

static int __init widen_init(void)
{
	int err = register_kprobe(&kp_fork);

	if (err) {
		pr_err("cdsm_race_widen: cannot probe cgroup_post_fork: %d\n", err);
		return err;
	}
	/* Needs cdsm.ko loaded; optional (its absence only narrows the window). */
	add_registered = !register_kprobe(&kp_add);
	unload_registered = add_registered && !register_kprobe(&kp_unload);
	if (unload_registered && register_kprobe(&kp_exit)) {
		unregister_kprobe(&kp_unload);
		unload_registered = false;
	}
	pr_info("cdsm_race_widen: fork +%u us, add +%u us%s, unload +%u ms%s\n", fork_delay_us,
		add_delay_us, add_registered ? "" : " (cdsm_task_refresh not probed)",
		unload_delay_ms, unload_registered ? "" : " (unload not probed)");
	return 0;
}

static void __exit widen_exit(void)
{
	unregister_kprobe(&kp_fork);
	if (unload_registered) {
		unregister_kprobe(&kp_exit);
		unregister_kprobe(&kp_unload);
	}
	if (add_registered)
		unregister_kprobe(&kp_add);
	pr_info("cdsm_race_widen: unload window: %d task exits, %d records refreshed by rmmod, %d of exited tasks\n",
		atomic_read(&unload_exits), atomic_read(&unload_refreshed),
		atomic_read(&unload_dangling));
}

module_init(widen_init);
module_exit(widen_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("cdsm race test: widens race windows with kprobes (test only)");
