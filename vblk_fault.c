// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: the fault-injection test hook's control file, vblk/lose, and the
 * notice that says a module has it. Built only with
 * CONFIG_VBLK_FAULT_INJECT (Kbuild); include/vblk_fault.h has the checks
 * the doorbell and the interrupt handlers make, and the stubs that
 * replace them in a production build.
 *
 * Ownership and locking: the counts live in vb->fault; this file sets
 * them (atomics, WRITE_ONCE), the hot path uses them up without a lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/module.h>
#include <linux/sysfs.h>

#include "vblk.h"
#include "vblk_fault.h"

/* So that modinfo tells a test build from a production one. */
MODULE_INFO(fault_inject, "vblk/lose test hook compiled in: not for production");

void vblk_fault_announce(void)
{
	pr_info("fault injection (vblk/lose) compiled in: a test build, not for production\n");
}

/*
 * Test hook: "irq N" ignores the next N queue interrupts, "kick N" leaves
 * the next N doorbells unwritten (N <= VBLK_LOSE_MAX; 0 cancels). The
 * requests they concern wait for the request timeout, which recovers them.
 * "silent 1" makes the device look dead to the driver until "silent 0":
 * lost doorbells alone are not that, as a device restart makes QEMU look
 * at the ring again on its own.
 */
#define VBLK_LOSE_MAX	1000

static ssize_t lose_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct vblk_dev *vb = vblk_from_dev(dev);

	return sysfs_emit(buf, "irq %d\nkick %d\nsilent %d\n",
			  atomic_read(&vb->fault.lose_irqs),
			  atomic_read(&vb->fault.lose_kicks),
			  READ_ONCE(vb->fault.silent));
}

static ssize_t lose_store(struct device *dev, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	struct vblk_dev *vb = vblk_from_dev(dev);
	char what[8];
	unsigned int n;

	if (sscanf(buf, "%7s %u", what, &n) != 2 || n > VBLK_LOSE_MAX)
		return -EINVAL;
	if (!strcmp(what, "irq"))
		atomic_set(&vb->fault.lose_irqs, n);
	else if (!strcmp(what, "kick"))
		atomic_set(&vb->fault.lose_kicks, n);
	else if (!strcmp(what, "silent") && n <= 1)
		WRITE_ONCE(vb->fault.silent, n);
	else
		return -EINVAL;
	return count;
}

struct device_attribute vblk_fault_attr_lose = __ATTR_RW(lose);
