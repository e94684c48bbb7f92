// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: module parameters, and the setters that validate them.
 *
 * Every setter refuses a bad value with -EINVAL and keeps the old one:
 * a value that cannot work is refused when written (or at load), not
 * clamped at some later bind where nobody sees it.
 *
 * Ownership and locking: the values belong to this file; the other files
 * read them (READ_ONCE where a write can race) and never write them. A
 * parameter "read at bind" is read once by probe (vblk_setup.c,
 * vblk_disk.c); the others are read where they act: the doorbell
 * (notify_in_lock), every interrupt re-arm (irq_coalesce), each recovery
 * (max_resets). No lock: each value is one word, written whole.
 */
#include <linux/blkdev.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

#include "vblk.h"

bool vblk_notify_in_lock;
module_param_named(notify_in_lock, vblk_notify_in_lock, bool, 0644);
MODULE_PARM_DESC(notify_in_lock,
		 "Write the doorbell before dropping the queue lock (seed 000 A/B; default 0)");

/*
 * A uint parameter that takes only lo..hi; a bad value keeps the old one.
 * Every bad value is EINVAL, as README says: kstrtouint's ERANGE for a
 * number past 2^32 is just another value out of range here.
 */
static int vblk_set_uint_range(const char *val, const struct kernel_param *kp,
			       unsigned int lo, unsigned int hi)
{
	unsigned int v;

	if (kstrtouint(val, 0, &v) || v < lo || v > hi)
		return -EINVAL;
	WRITE_ONCE(*(unsigned int *)kp->arg, v);
	return 0;
}

unsigned int vblk_irq_coalesce;
static int vblk_set_percent(const char *val, const struct kernel_param *kp)
{
	return vblk_set_uint_range(val, kp, 0, 100);
}

static const struct kernel_param_ops vblk_percent_ops = {
	.set = vblk_set_percent,
	.get = param_get_uint,
};
module_param_cb(irq_coalesce, &vblk_percent_ops, &vblk_irq_coalesce, 0644);
MODULE_PARM_DESC(irq_coalesce,
		 "With EVENT_IDX, the next interrupt waits until this percentage of the requests the device holds came back, 0..100 (0 = the first one; default 0; read at every re-arm and kick)");

unsigned int vblk_poll_budget = 64;
static int vblk_set_budget(const char *val, const struct kernel_param *kp)
{
	return vblk_set_uint_range(val, kp, 1, 4096);
}

static const struct kernel_param_ops vblk_budget_ops = {
	.set = vblk_set_budget,
	.get = param_get_uint,
};
module_param_cb(poll_budget, &vblk_budget_ops, &vblk_poll_budget, 0644);
MODULE_PARM_DESC(poll_budget,
		 "Completions per irq_poll run in softirq mode, 1..4096 (default 64; applies at bind)");

/*
 * The queue-shaping parameters below are read at bind. Their ranges are
 * what the driver can build whatever the device: a value outside them is
 * refused when written (or at load), not clamped at some later bind where
 * nobody sees it. What a given device allows is still applied at bind,
 * and said in the log when it lowers a value.
 */
static int vblk_set_queues(const char *val, const struct kernel_param *kp)
{
	return vblk_set_uint_range(val, kp, 0, VBLK_MAX_QUEUES);
}

static const struct kernel_param_ops vblk_queues_ops = {
	.set = vblk_set_queues,
	.get = param_get_uint,
};

unsigned int vblk_num_queues;
module_param_cb(num_queues, &vblk_queues_ops, &vblk_num_queues, 0644);
MODULE_PARM_DESC(num_queues,
		 "Interrupt-driven queues per disk, 0..64; 0 = min(device queues, CPUs) (default 0; applies at bind)");

/*
 * Bounded like num_queues, less the interrupt-driven queue a disk always
 * keeps for the I/O that is not polled.
 */
static int vblk_set_poll_queues(const char *val, const struct kernel_param *kp)
{
	return vblk_set_uint_range(val, kp, 0, VBLK_MAX_QUEUES - 1);
}

static const struct kernel_param_ops vblk_poll_queues_ops = {
	.set = vblk_set_poll_queues,
	.get = param_get_uint,
};

unsigned int vblk_poll_queues;
module_param_cb(poll_queues, &vblk_poll_queues_ops, &vblk_poll_queues, 0644);
MODULE_PARM_DESC(poll_queues,
		 "Extra polled queues for io_uring IOPOLL, 0..63 (default 0; applies at bind)");

/* The most tags vblk_pick_ring_size ever gives a queue is 1024. */
static int vblk_set_depth(const char *val, const struct kernel_param *kp)
{
	return vblk_set_uint_range(val, kp, 0, 1024);
}

static const struct kernel_param_ops vblk_depth_ops = {
	.set = vblk_set_depth,
	.get = param_get_uint,
};

unsigned int vblk_queue_depth;
module_param_cb(queue_depth, &vblk_depth_ops, &vblk_queue_depth, 0644);
MODULE_PARM_DESC(queue_depth,
		 "Tags per queue, 0..1024; 0 = the ring size (half of it without indirect descriptors) (default 0; applies at bind)");

/*
 * A split ring's size must be a power of two (and vblk_ring.c allocates at
 * most VBLK_RING_MAX_SIZE): refusing any other value beats silently
 * rounding it to one the user did not ask for.
 */
static int vblk_set_ring_size(const char *val, const struct kernel_param *kp)
{
	unsigned int v;

	if (kstrtouint(val, 0, &v))
		return -EINVAL;
	if (v && (v < 4 || v > VBLK_RING_MAX_SIZE || !is_power_of_2(v)))
		return -EINVAL;
	WRITE_ONCE(*(unsigned int *)kp->arg, v);
	return 0;
}

static const struct kernel_param_ops vblk_ring_size_ops = {
	.set = vblk_set_ring_size,
	.get = param_get_uint,
};

unsigned int vblk_ring_size;
module_param_cb(ring_size, &vblk_ring_size_ops, &vblk_ring_size, 0644);
MODULE_PARM_DESC(ring_size,
		 "Ring entries per queue, a power of two 4..32768; 0 = the device's maximum (default 0; applies at bind)");

/*
 * 0 has meant "1" here, which reads like "no cap": refuse it. 1024 is the
 * most the driver ever uses, whatever the device's seg_max.
 */
static int vblk_set_segments(const char *val, const struct kernel_param *kp)
{
	return vblk_set_uint_range(val, kp, 1, 1024);
}

static const struct kernel_param_ops vblk_segments_ops = {
	.set = vblk_set_segments,
	.get = param_get_uint,
};

unsigned int vblk_max_segments = 254;
module_param_cb(max_segments, &vblk_segments_ops, &vblk_max_segments, 0644);
MODULE_PARM_DESC(max_segments,
		 "Cap on data segments per request, 1..1024 (default 254; applies at bind)");

/*
 * Descriptor table entries each queue keeps for requests with more than
 * VBLK_INLINE_SEGS segments (vblk_pool.c). Never less than the largest
 * request needs, whatever is asked: 0 means just that. "auto" (the
 * default, VBLK_POOL_AUTO) sizes it at bind for many large requests at
 * once (vblk_setup.c: vblk_pool_size).
 */
static int vblk_set_pool_entries(const char *val, const struct kernel_param *kp)
{
	if (sysfs_streq(val, "auto")) {
		WRITE_ONCE(vblk_pool_entries, VBLK_POOL_AUTO);
		return 0;
	}
	return vblk_set_uint_range(val, kp, 0, VBLK_POOL_MAX);
}

static int vblk_get_pool_entries(char *buf, const struct kernel_param *kp)
{
	unsigned int v = READ_ONCE(vblk_pool_entries);

	if (v == VBLK_POOL_AUTO)
		return sysfs_emit(buf, "auto\n");
	return sysfs_emit(buf, "%u\n", v);
}

static const struct kernel_param_ops vblk_pool_entries_ops = {
	.set = vblk_set_pool_entries,
	.get = vblk_get_pool_entries,
};

unsigned int vblk_pool_entries = VBLK_POOL_AUTO;
module_param_cb(pool_entries, &vblk_pool_entries_ops, &vblk_pool_entries, 0644);
MODULE_PARM_DESC(pool_entries,
		 "Descriptor entries per queue for requests of more than 2 segments: auto, or 0..16384 (0 = what the largest request needs); auto = room for 102 requests of 128 KiB in 4 KiB pages, at most queue_depth of them (default auto; applies at bind)");

bool vblk_use_indirect = true;
module_param_named(indirect, vblk_use_indirect, bool, 0644);
MODULE_PARM_DESC(indirect, "Negotiate indirect descriptors when offered (default 1; applies at bind)");

bool vblk_use_event_idx = true;
module_param_named(event_idx, vblk_use_event_idx, bool, 0644);
MODULE_PARM_DESC(event_idx, "Negotiate the event index when offered (default 1; applies at bind)");

/*
 * Recovery (vblk_dev.c): the request timeout; how long a request waits for
 * a device that looks sane before the device is reset and the request
 * fails (dev_loss_tmo); and how many resets in a row without an answer
 * from the device before its disk is declared dead. A timeout no longer
 * means a reset, so io_timeout is blk-mq's own default: it only sets how
 * often a waiting request is looked at (and its doorbell rung again).
 */
unsigned int vblk_io_timeout = 30;
static int vblk_set_timeout(const char *val, const struct kernel_param *kp)
{
	return vblk_set_uint_range(val, kp, 1, 600);
}

static const struct kernel_param_ops vblk_timeout_ops = {
	.set = vblk_set_timeout,
	.get = param_get_uint,
};
module_param_cb(io_timeout, &vblk_timeout_ops, &vblk_io_timeout, 0644);
MODULE_PARM_DESC(io_timeout,
		 "Request timeout in seconds, 1..600: how often an unanswered request is looked at and its doorbell rung again (default 30; applies at bind, then per disk in queue/io_timeout)");

/*
 * 600 s, nvme over fabrics' ctrl_loss_tmo: long enough for a storage path
 * failover, an NFS server restart or a thin pool growing, short enough
 * that an application that cannot get an answer learns it. 0 waits for
 * ever, as the in-tree driver does.
 */
unsigned int vblk_dev_loss_tmo = 600;
static int vblk_set_loss_tmo(const char *val, const struct kernel_param *kp)
{
	return vblk_set_uint_range(val, kp, 0, 86400);
}

static const struct kernel_param_ops vblk_loss_tmo_ops = {
	.set = vblk_set_loss_tmo,
	.get = param_get_uint,
};
module_param_cb(dev_loss_tmo, &vblk_loss_tmo_ops, &vblk_dev_loss_tmo, 0644);
MODULE_PARM_DESC(dev_loss_tmo,
		 "Seconds a request waits for a device that looks sane but does not answer before the device is reset and the request fails, 0..86400 (0 = for ever; default 600)");

unsigned int vblk_max_resets = 1;
static int vblk_set_resets(const char *val, const struct kernel_param *kp)
{
	return vblk_set_uint_range(val, kp, 0, 100);
}

static const struct kernel_param_ops vblk_resets_ops = {
	.set = vblk_set_resets,
	.get = param_get_uint,
};
module_param_cb(max_resets, &vblk_resets_ops, &vblk_max_resets, 0644);
MODULE_PARM_DESC(max_resets,
		 "Device resets in a row without progress before the disk is failed, 0..100 (default 1)");
static int vblk_set_prefix(const char *val, const struct kernel_param *kp)
{
	size_t len = strlen(val), i;

	if (!len || len > VBLK_PREFIX_MAX)
		return -EINVAL;
	/* Not islower(): the kernel's ctype takes Latin-1 letters too. */
	for (i = 0; i < len; i++) {
		char c = val[i];

		if (!(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9') &&
		    c != '_' && c != '-')
			return -EINVAL;
	}
	return param_set_charp(val, kp);
}

static const struct kernel_param_ops vblk_prefix_ops = {
	.set = vblk_set_prefix,
	.get = param_get_charp,
	.free = param_free_charp,
};

char *vblk_disk_prefix = "vd";
module_param_cb(disk_prefix, &vblk_prefix_ops, &vblk_disk_prefix, 0444);
MODULE_PARM_DESC(disk_prefix,
		 "Disk name prefix, 1..24 of a-z 0-9 _ - (default \"vd\"; see README for mixed guests)");

const char * const vblk_irq_mode_names[] = {
	[VBLK_IRQ_AUTO] = "auto", [VBLK_IRQ_MSIX] = "msix",
	[VBLK_IRQ_SHARED] = "shared", [VBLK_IRQ_INTX] = "intx",
};

const char * const vblk_complete_names[] = {
	[VBLK_COMPLETE_AUTO] = "auto", [VBLK_COMPLETE_HARDIRQ] = "hardirq",
	[VBLK_COMPLETE_SOFTIRQ] = "softirq",
};

struct vblk_enum_param {
	unsigned int *val;
	const char * const *names;
	unsigned int count;
};

static int vblk_enum_set(const char *val, const struct kernel_param *kp)
{
	const struct vblk_enum_param *p = kp->arg;
	int i = __sysfs_match_string(p->names, p->count, val);

	if (i < 0)
		return -EINVAL;
	WRITE_ONCE(*p->val, i);
	return 0;
}

static int vblk_enum_get(char *buf, const struct kernel_param *kp)
{
	const struct vblk_enum_param *p = kp->arg;

	return sysfs_emit(buf, "%s\n", p->names[READ_ONCE(*p->val)]);
}

static const struct kernel_param_ops vblk_enum_ops = {
	.set = vblk_enum_set,
	.get = vblk_enum_get,
};

unsigned int vblk_irq_mode_param;
static struct vblk_enum_param vblk_irq_mode_p = {
	&vblk_irq_mode_param, vblk_irq_mode_names, ARRAY_SIZE(vblk_irq_mode_names)
};
module_param_cb(irq_mode, &vblk_enum_ops, &vblk_irq_mode_p, 0644);
MODULE_PARM_DESC(irq_mode, "auto|msix|shared|intx (applies at bind)");

unsigned int vblk_complete_param;
static struct vblk_enum_param vblk_complete_p = {
	&vblk_complete_param, vblk_complete_names, ARRAY_SIZE(vblk_complete_names)
};
module_param_cb(complete, &vblk_enum_ops, &vblk_complete_p, 0644);
MODULE_PARM_DESC(complete,
		 "auto|hardirq|softirq; auto = softirq when queues share a vector (applies at bind)");
