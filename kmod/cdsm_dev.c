// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm control device. Every argument starts with its size: smaller than
 * the first version is -EINVAL, larger than CDSM_ARG_MAX or larger with
 * non-zero unknown bytes is -E2BIG (copy_struct_from_user()). Everything
 * copied out is built in zeroed memory, so no kernel memory leaks through
 * padding or short fills.
 *
 * Rights are the opener's, taken from the file's credentials and counted
 * only in the initial user namespace: a control command needs CAP_SYS_ADMIN
 * there (file_ns_capable(), audited); reading needs it too or the opener's
 * effective uid must own the application (cdsm_app_get_readable()), decided at
 * open without an audit record, since a reader without the capability is
 * normal. So cdsmd can open the device and drop CAP_SYS_ADMIN, and a file
 * passed to, or used by, a more privileged program (a setuid one) keeps the
 * opener's rights.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "cdsm_app.h"
#include "cdsm_core.h"
#include "cdsm_dev.h"
#include "cdsm_fault.h"
#include "cdsm_params.h"
#include "cdsm_rearm.h"
#include "cdsm_stats.h"
#include "cdsm_track.h"
#include "cdsm_worker.h"

/*
 * Copies in an argument of @ksize bytes whose first version had @min_size
 * bytes; returns the caller's size or an error. A caller's size above
 * CDSM_ARG_MAX is refused before its tail is scanned for non-zero bytes. A
 * caller of an older version (at least @min_size) gets the fields it lacks
 * zeroed, and its size is kept in the argument's size field, so that
 * cdsm_arg_out() copies back only the bytes it has.
 */
static long cdsm_arg_in_sized(void *karg, size_t ksize, size_t min_size, void __user *uarg)
{
	u32 usize;
	int err;

	if (get_user(usize, (u32 __user *)uarg))
		return -EFAULT;
	if (usize < min_size)
		return -EINVAL;
	if (usize > CDSM_ARG_MAX)
		return -E2BIG;
	err = copy_struct_from_user(karg, ksize, uarg, usize);
	if (err)
		return err;
	*(u32 *)karg = min_t(size_t, usize, ksize);
	return usize;
}

/* An argument that has had one version so far: it is the minimum. */
static long cdsm_arg_in(void *karg, size_t ksize, void __user *uarg)
{
	return cdsm_arg_in_sized(karg, ksize, ksize, uarg);
}

/* Copies back the argument: as many bytes as its size field (the caller's version) says. */
static long cdsm_arg_out(void __user *uarg, const void *karg, size_t ksize)
{
	size_t n = min_t(size_t, *(const u32 *)karg, ksize);

	return copy_to_user(uarg, karg, n) ? -EFAULT : 0;
}

/*
 * Copies @bytes of @buf (kvmalloc'ed, freed here) to user address @uptr,
 * then the argument struct @karg back to @uarg.
 */
static long cdsm_arg_out_array(void __user *uarg, const void *karg, size_t ksize,
			       u64 uptr, void *buf, size_t bytes)
{
	long err = 0;

	if (bytes && copy_to_user(u64_to_user_ptr(uptr), buf, bytes))
		err = -EFAULT;
	kvfree(buf);
	return err ?: cdsm_arg_out(uarg, karg, ksize);
}

/* The opener had CAP_SYS_ADMIN in the initial user namespace (see cdsm_open()). */
static bool cdsm_opener_admin(const struct file *file)
{
	return (unsigned long)file->private_data == 1;
}

/*
 * Finds an application the opener may read; -ENOENT otherwise, whether it
 * does not exist or is another user's (its existence is not revealed).
 */
static struct cdsm_app *cdsm_get_readable(const struct file *file, u32 id)
{
	struct cdsm_app *app = cdsm_app_get_readable(id, file->f_cred->euid,
						     cdsm_opener_admin(file));

	return app ?: ERR_PTR(-ENOENT);
}

/*
 * Copies the argument struct in (see cdsm_arg_in()), then finds the readable
 * application whose id it holds at @app_id.
 */
static struct cdsm_app *cdsm_arg_in_readable(const struct file *file, void *karg, size_t ksize,
					     void __user *uarg, const u32 *app_id)
{
	long err = cdsm_arg_in(karg, ksize, uarg);

	return err < 0 ? ERR_PTR(err) : cdsm_get_readable(file, *app_id);
}

static long cdsm_ioc_list_apps(struct file *file, unsigned int nr, void __user *uarg)
{
	struct cdsm_list_apps a;
	struct cdsm_app_info *infos;
	long err;
	u32 n;

	err = cdsm_arg_in(&a, sizeof(a), uarg);
	if (err < 0)
		return err;
	if (a.pad)
		return -EINVAL;
	infos = kcalloc(CDSM_MAX_APPS, sizeof(*infos), GFP_KERNEL | __GFP_ACCOUNT);
	if (!infos)
		return -ENOMEM;
	n = cdsm_apps_list(infos, file->f_cred->euid, cdsm_opener_admin(file),
			   file->f_cred->user_ns);
	a.count = n;
	if (copy_to_user(u64_to_user_ptr(a.apps_ptr), infos,
			 min(n, a.capacity) * sizeof(*infos)))
		err = -EFAULT;
	else
		err = cdsm_arg_out(uarg, &a, sizeof(a));
	kfree(infos);
	return err;
}

static long cdsm_ioc_get_tasks(struct file *file, unsigned int nr, void __user *uarg)
{
	struct cdsm_task_info *infos = NULL;
	struct cdsm_get_tasks a;
	struct cdsm_app *app;
	long err;
	u32 n;

	app = cdsm_arg_in_readable(file, &a, sizeof(a), uarg, &a.app_id);
	if (IS_ERR(app))
		return PTR_ERR(app);
	/* nr_tasks only grows, and records never move: fill up to n. */
	n = min(cdsm_app_nr_tasks(app), a.capacity);
	if (n) {
		infos = kvcalloc(n, sizeof(*infos), GFP_KERNEL | __GFP_ACCOUNT | __GFP_NOWARN);
		if (!infos) {
			err = -ENOMEM;
			goto out;
		}
	}
	a.count = cdsm_app_snapshot_tasks(app, infos, n, a.capacity);
	err = cdsm_arg_out_array(uarg, &a, sizeof(a), a.tasks_ptr, infos, n * sizeof(*infos));
out:
	cdsm_app_put(app);
	return err;
}

static long cdsm_ioc_get_matrix(struct file *file, unsigned int nr, void __user *uarg)
{
	struct cdsm_get_matrix a;
	struct cdsm_app *app;
	u32 *cells = NULL, dim;
	long err;

	err = cdsm_arg_in_sized(&a, sizeof(a), CDSM_GET_MATRIX_SIZE_V1, uarg);
	if (err < 0)
		return err;
	if (a.view > CDSM_MATRIX_WHOLE || a.pad)
		return -EINVAL;
	app = cdsm_get_readable(file, a.app_id);
	if (IS_ERR(app))
		return PTR_ERR(app);
	/* At most max_tasks (<= CDSM_MAX_TASKS): at most 128 MiB, charged to the reader. */
	dim = cdsm_app_nr_tasks(app);
	if (dim > a.capacity) {
		a.dim = dim;
		err = cdsm_arg_out(uarg, &a, sizeof(a));
		err = err ?: -ENOSPC;
		goto out;
	}
	if (dim) {
		cells = kvzalloc(cdsm_matrix_mem_sz(dim), GFP_KERNEL | __GFP_ACCOUNT | __GFP_NOWARN);
		if (!cells) {
			err = -ENOMEM;
			goto out;
		}
	}
	cdsm_app_snapshot_matrix(app, a.view == CDSM_MATRIX_WHOLE, cells, dim, &a.events,
				 &a.snapshot_ns);
	a.dim = dim;
	err = cdsm_arg_out_array(uarg, &a, sizeof(a), a.cells_ptr, cells, cdsm_matrix_mem_sz(dim));
out:
	cdsm_app_put(app);
	return err;
}

static long cdsm_ioc_app_op(struct file *file, unsigned int nr, void __user *uarg)
{
	struct cdsm_app_op a;
	struct cdsm_app *app;
	long err;

	err = cdsm_arg_in(&a, sizeof(a), uarg);
	if (err < 0)
		return err;
	app = cdsm_app_get(a.app_id);
	if (!app)
		return -ENOENT;
	err = 0;
	switch (nr) {
	case _IOC_NR(CDSM_IOC_AGE):
		cdsm_app_age(app);
		break;
	case _IOC_NR(CDSM_IOC_RESET):
		cdsm_app_reset(app);
		break;
	case _IOC_NR(CDSM_IOC_UNTRACK):
		cdsm_app_untrack(app, true);
		break;
	case _IOC_NR(CDSM_IOC_RELEASE):
		err = cdsm_app_release(app);
		break;
	}
	cdsm_app_put(app);
	return err;
}

static long cdsm_ioc_track(struct file *file, unsigned int nr, void __user *uarg)
{
	struct cdsm_track a;
	char *path;
	long err;

	err = cdsm_arg_in(&a, sizeof(a), uarg);
	if (err < 0)
		return err;
	if (a.pad)
		return -EINVAL;
	switch (a.kind) {
	case CDSM_TRACK_PID:
		if (a.pid <= 0)
			return -EINVAL;
		err = cdsm_track_pid(a.pid, &a.app_id);
		break;
	case CDSM_TRACK_CGROUP:
		if (!a.path_len || a.path_len >= PATH_MAX)
			return -EINVAL;
		path = memdup_user_nul(u64_to_user_ptr(a.path_ptr), a.path_len);
		if (IS_ERR(path))
			return PTR_ERR(path);
		err = strlen(path) == a.path_len ? cdsm_track_cgroup(path, &a.app_id) :
						   -EINVAL;
		kfree(path);
		break;
	default:
		return -EINVAL;
	}
	return err ?: cdsm_arg_out(uarg, &a, sizeof(a));
}

static long cdsm_ioc_params(struct file *file, unsigned int nr, void __user *uarg)
{
	struct cdsm_params p;
	long err;

	err = cdsm_arg_in(&p, sizeof(p), uarg);
	if (err < 0)
		return err;
	if (nr == _IOC_NR(CDSM_IOC_SET_PARAMS))
		return cdsm_params_set(&p);
	cdsm_params_get(&p);
	return cdsm_arg_out(uarg, &p, sizeof(p));
}

static long cdsm_ioc_counters(struct file *file, unsigned int nr, void __user *uarg)
{
	struct cdsm_counters c;
	u64 kmem = cdsm_worker_mem_sz() + cdsm_fault_mem_sz();
	long err;

	err = cdsm_arg_in(&c, sizeof(c), uarg);
	if (err < 0)
		return err;
	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	if (cdsm_rearm_numa_normal())
		c.status |= CDSM_STATUS_NUMA_BALANCING_NORMAL;
	if (cdsm_rearm_available())
		c.status |= CDSM_STATUS_REARM_AVAILABLE;
	c.faults = cdsm_stat_sum(CDSM_STAT_FAULTS);
	c.tracked_faults = cdsm_stat_sum(CDSM_STAT_TRACKED_FAULTS);
	c.comm_events = cdsm_stat_sum(CDSM_STAT_COMM_EVENTS);
	c.rearm_armed = cdsm_stat_sum(CDSM_STAT_REARM_ARMED);
	c.rearm_taken = cdsm_stat_sum(CDSM_STAT_REARM_TAKEN);
	c.dropped = cdsm_stat_sum(CDSM_STAT_DROPPED);
	c.evictions = cdsm_worker_evictions();
	c.alloc_failures = cdsm_stat_sum(CDSM_STAT_ALLOC_FAILURES);
	c.events_lost = cdsm_stat_sum(CDSM_STAT_EVENTS_LOST);
	c.migrated = cdsm_stat_sum(CDSM_STAT_MIGRATED);
	cdsm_apps_count(&c.apps, &c.tasks, &kmem);
	c.kmem_bytes = kmem;
	return cdsm_arg_out(uarg, &c, sizeof(c));
}

static long cdsm_ioc_abi_version(struct file *file, unsigned int nr, void __user *uarg)
{
	return CDSM_ABI_VERSION;
}

/**
 * struct cdsm_ioc - an ioctl, by command number.
 * @fn:		its handler; the number tells handlers of several commands apart.
 * @control:	needs CAP_SYS_ADMIN (the opener's, in the initial user namespace).
 */
struct cdsm_ioc {
	long (*fn)(struct file *file, unsigned int nr, void __user *uarg);
	bool control;
};

static const struct cdsm_ioc cdsm_iocs[] = {
	[_IOC_NR(CDSM_IOC_ABI_VERSION)] = { cdsm_ioc_abi_version, false },
	[_IOC_NR(CDSM_IOC_LIST_APPS)] = { cdsm_ioc_list_apps, false },
	[_IOC_NR(CDSM_IOC_GET_TASKS)] = { cdsm_ioc_get_tasks, false },
	[_IOC_NR(CDSM_IOC_GET_MATRIX)] = { cdsm_ioc_get_matrix, false },
	[_IOC_NR(CDSM_IOC_AGE)] = { cdsm_ioc_app_op, true },
	[_IOC_NR(CDSM_IOC_RESET)] = { cdsm_ioc_app_op, true },
	[_IOC_NR(CDSM_IOC_RELEASE)] = { cdsm_ioc_app_op, true },
	[_IOC_NR(CDSM_IOC_TRACK)] = { cdsm_ioc_track, true },
	[_IOC_NR(CDSM_IOC_UNTRACK)] = { cdsm_ioc_app_op, true },
	[_IOC_NR(CDSM_IOC_GET_PARAMS)] = { cdsm_ioc_params, false },
	[_IOC_NR(CDSM_IOC_SET_PARAMS)] = { cdsm_ioc_params, true },
	[_IOC_NR(CDSM_IOC_GET_COUNTERS)] = { cdsm_ioc_counters, false },
};

static long cdsm_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	unsigned int nr = _IOC_NR(cmd);

	/* Dispatch on the number only: the size field versions the argument. */
	if (_IOC_TYPE(cmd) != CDSM_IOC_MAGIC || nr >= ARRAY_SIZE(cdsm_iocs))
		return -ENOTTY;
	nr = array_index_nospec(nr, ARRAY_SIZE(cdsm_iocs));
	if (!cdsm_iocs[nr].fn)
		return -ENOTTY;
	if (cdsm_iocs[nr].control && !file_ns_capable(file, &init_user_ns, CAP_SYS_ADMIN))
		return -EPERM;
	return cdsm_iocs[nr].fn(file, nr, (void __user *)arg);
}

/*
 * Records whether the opener may read every application: CAP_SYS_ADMIN in
 * the initial user namespace, checked without an audit record (current's
 * credentials are the file's now).
 */
static int cdsm_open(struct inode *inode, struct file *file)
{
	file->private_data = (void *)(unsigned long)ns_capable_noaudit(&init_user_ns,
								       CAP_SYS_ADMIN);
	return 0;
}

static const struct file_operations cdsm_fops = {
	.owner = THIS_MODULE,
	.open = cdsm_open,
	.unlocked_ioctl = cdsm_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice cdsm_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = CDSM_DEVICE_NAME,
	.fops = &cdsm_fops,
	.mode = 0600,
};

/**
 * cdsm_dev_init() - create /dev/cdsm.
 *
 * Return: 0 or the error of misc_register().
 */
int cdsm_dev_init(void)
{
	int err = misc_register(&cdsm_miscdev);

	if (err)
		pr_err("cannot register /dev/%s: %d\n", CDSM_DEVICE_NAME, err);
	return err;
}

/**
 * cdsm_dev_exit() - remove /dev/cdsm.
 */
void cdsm_dev_exit(void)
{
	misc_deregister(&cdsm_miscdev);
}
