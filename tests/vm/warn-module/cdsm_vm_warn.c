// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only module for the VM lab's own tests: loading it prints a real
 * kernel WARNING, which tests/vm/run must report as a failure.
 */

#include <linux/bug.h>
#include <linux/module.h>

static int __init cdsm_vm_warn_init(void)
{
	WARN(1, "cdsm_vm_warn: deliberate warning for the VM lab's log check\n");
	return 0;
}

static void __exit cdsm_vm_warn_exit(void)
{
}

module_init(cdsm_vm_warn_init);
module_exit(cdsm_vm_warn_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("VM lab self-test: triggers a kernel warning on load");
