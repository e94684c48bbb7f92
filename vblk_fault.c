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
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/sysfs.h>

#include "vblk.h"
#include "vblk_fault.h"

/* So that modinfo tells a test build from a production one. */
MODULE_INFO(fault_inject, "vblk/lose test hook compiled in: not for production");

/*
 * fault_probe_bad_idx=1: the next probe finds a used index far beyond
 * what was made available on queue 0 right after its interrupts were
 * requested, before the disk exists and before DRIVER_OK, as a hostile
 * device could write it; the hook harvests it (what the queue's interrupt
 * would do) and waits for the work that reports it. Used up by one probe.
 */
static bool vblk_fault_probe_bad_idx;
module_param_named(fault_probe_bad_idx, vblk_fault_probe_bad_idx, bool, 0644);
MODULE_PARM_DESC(fault_probe_bad_idx,
		 "Test hook: the next probe sees a bad used index on queue 0 before DRIVER_OK");

void vblk_fault_probe(struct vblk_dev *vb)
{
	struct vblk_queue *q = &vb->queues[0];

	if (!xchg(&vblk_fault_probe_bad_idx, false))
		return;
	dev_warn(vblk_dev_of(vb), "fault hook: used index 0x8000 on queue 0 before DRIVER_OK\n");
	WRITE_ONCE(q->ring.used->idx, cpu_to_le16(0x8000));
	vblk_queue_harvest(q, 1, NULL);
	msleep(500);
}

/*
 * fault_size_max=N: the next probes read a size_max of N bytes, as if the
 * device offered VIRTIO_BLK_F_SIZE_MAX (QEMU's virtio-blk does not), so
 * that the segment limit can be tested behind an IOMMU; vblk/lose's
 * seg_over counts descriptors that exceeded it.
 */
static unsigned int vblk_fault_size_max_param;
module_param_named(fault_size_max, vblk_fault_size_max_param, uint, 0644);
MODULE_PARM_DESC(fault_size_max,
		 "Test hook: probes take this size_max in bytes (0: the device's)");

void vblk_fault_size_max(u32 *size_max)
{
	unsigned int v = READ_ONCE(vblk_fault_size_max_param);

	if (v)
		*size_max = v;
}

/*
 * The status race's window: ask for a recovery, as a broken ring on
 * another queue would, and hold the harvest that already took its used
 * element until the recovery is done (the recovery count moved), or it
 * stopped this queue and so waits for this harvest, or a bound passed: 3 s
 * for a harvest that may sleep (the request timeout's), 1 s of busy
 * waiting for the poller (io_uring IOPOLL, which polls under the RCU read
 * lock: a recovery's quiesce waits for it, so this bound ends the wait).
 */
void vblk_fault_race_window(struct vblk_queue *q, bool may_sleep)
{
	struct vblk_dev *vb = q->vb;
	u64 rec = READ_ONCE(vb->recoveries);
	unsigned long end = jiffies + (may_sleep ? 3 * HZ : HZ);

	vb->events->failed(vb, "fault hook: recovery during a harvest");
	while (READ_ONCE(vb->recoveries) == rec && !READ_ONCE(q->offline) &&
	       time_before(jiffies, end)) {
		if (may_sleep)
			usleep_range(10000, 20000);
		else
			mdelay(1);
	}
}

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
 * at the ring again on its own. "race N" opens the status race window
 * (include/vblk_fault.h) in the next N harvests that may sleep; "raced"
 * counts the windows opened. "slot_reset_fail N" refuses the next N PCI
 * slot resets, so that an AER recovery ends in DISCONNECT.
 */
#define VBLK_LOSE_MAX	1000

static ssize_t lose_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct vblk_dev *vb = vblk_from_dev(dev);

	return sysfs_emit(buf,
			  "irq %d\nkick %d\nsilent %d\nrace %d\nraced %d\nslot_reset_fail %d\nseg_over %d\n",
			  atomic_read(&vb->fault.lose_irqs),
			  atomic_read(&vb->fault.lose_kicks),
			  READ_ONCE(vb->fault.silent),
			  atomic_read(&vb->fault.race),
			  atomic_read(&vb->fault.raced),
			  atomic_read(&vb->fault.slot_reset_fail),
			  atomic_read(&vb->fault.seg_over));
}

static ssize_t lose_store(struct device *dev, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	struct vblk_dev *vb = vblk_from_dev(dev);
	char what[16];
	unsigned int n;

	if (sscanf(buf, "%15s %u", what, &n) != 2 || n > VBLK_LOSE_MAX)
		return -EINVAL;
	if (!strcmp(what, "irq"))
		atomic_set(&vb->fault.lose_irqs, n);
	else if (!strcmp(what, "kick"))
		atomic_set(&vb->fault.lose_kicks, n);
	else if (!strcmp(what, "silent") && n <= 1)
		WRITE_ONCE(vb->fault.silent, n);
	else if (!strcmp(what, "race"))
		atomic_set(&vb->fault.race, n);
	else if (!strcmp(what, "slot_reset_fail"))
		atomic_set(&vb->fault.slot_reset_fail, n);
	else
		return -EINVAL;
	return count;
}

struct device_attribute vblk_fault_attr_lose = __ATTR_RW(lose);
