// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm: communication detection through shared memory.
 *
 * Module entry: parameters, the /dev/cdsm control device, load and unload.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>

#include <linux/cdsm.h>

#define CDSM_VERSION "0.1.0"

/*
 * Memory block size, as a power of two: faults are recorded against
 * physical address >> block_shift. 8 (256 B) is the CDSM paper's choice;
 * 6 (64 B, a cache line) to 21 (2 MiB, a huge page) are accepted.
 */
static unsigned int block_shift = 8;
module_param(block_shift, uint, 0444);
MODULE_PARM_DESC(block_shift,
		 "log2 of the memory block size in bytes, 6..21 (default 8: 256 B)");

static long cdsm_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	switch (cmd) {
	case CDSM_IOC_ABI_VERSION:
		return CDSM_ABI_VERSION;
	default:
		return -ENOTTY;
	}
}

static const struct file_operations cdsm_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = cdsm_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice cdsm_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = CDSM_DEVICE_NAME,
	.fops = &cdsm_fops,
	.mode = 0600,
};

static int __init cdsm_init(void)
{
	int err;

	if (block_shift < 6 || block_shift > 21) {
		pr_err("block_shift=%u is out of range 6..21\n", block_shift);
		return -EINVAL;
	}
	err = misc_register(&cdsm_miscdev);
	if (err) {
		pr_err("cannot register /dev/%s: %d\n", CDSM_DEVICE_NAME, err);
		return err;
	}
	pr_info("version %s (ABI %d) loaded, block size %u B\n", CDSM_VERSION,
		CDSM_ABI_VERSION, 1U << block_shift);
	return 0;
}

static void __exit cdsm_exit(void)
{
	misc_deregister(&cdsm_miscdev);
	pr_info("unloaded\n");
}

module_init(cdsm_init);
module_exit(cdsm_exit);

MODULE_LICENSE("GPL");
MODULE_VERSION(CDSM_VERSION);
MODULE_DESCRIPTION("Communication detection through shared memory for thread and process mapping");
MODULE_AUTHOR("cdsm developers");
