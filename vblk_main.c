// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: a virtio-blk driver with its own virtio-pci transport and split
 * virtqueues.
 *
 * This file: module parameters, the PCI driver, probe and remove, feature
 * negotiation, the device config and the gendisk built from it, sysfs,
 * config changes and the handling of a device that broke.
 */
#include <linux/blkdev.h>
#include <linux/hdreg.h>
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_pci.h>
#include <uapi/linux/virtio_ring.h>

#include "vblk.h"
#include "vblk_compat.h"

/* ---- module parameters ------------------------------------------------ */

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

static unsigned int vblk_num_queues;
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

static unsigned int vblk_poll_queues;
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

static unsigned int vblk_queue_depth;
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

static unsigned int vblk_ring_size;
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

static unsigned int vblk_max_segments = 254;
module_param_cb(max_segments, &vblk_segments_ops, &vblk_max_segments, 0644);
MODULE_PARM_DESC(max_segments,
		 "Cap on data segments per request, 1..1024 (default 254; applies at bind)");

static bool vblk_use_indirect = true;
module_param_named(indirect, vblk_use_indirect, bool, 0644);
MODULE_PARM_DESC(indirect, "Negotiate indirect descriptors when offered (default 1; applies at bind)");

static bool vblk_use_event_idx = true;
module_param_named(event_idx, vblk_use_event_idx, bool, 0644);
MODULE_PARM_DESC(event_idx, "Negotiate the event index when offered (default 1; applies at bind)");

/*
 * Recovery (vblk_dev.c): the request timeout, and how many resets in a row
 * without an answer from the device before its disk is declared dead. A
 * silent device fails its I/O after about 2 * io_timeout * (max_resets + 1).
 */
static unsigned int vblk_io_timeout = 10;
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
		 "Request timeout in seconds, 1..600 (default 10; applies at bind, then per disk in queue/io_timeout)");

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

/*
 * The prefix plus the longest suffix (7 letters: vblk_format_name) must fit
 * DISK_NAME_LEN: a truncated name would be the same for many indices. A
 * name also becomes /dev and /sys/block entries, so only characters that
 * are safe there, unquoted, in scripts and udev rules.
 */
#define VBLK_PREFIX_MAX		(DISK_NAME_LEN - 8)

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

static char *vblk_disk_prefix = "vd";
module_param_cb(disk_prefix, &vblk_prefix_ops, &vblk_disk_prefix, 0444);
MODULE_PARM_DESC(disk_prefix,
		 "Disk name prefix, 1..24 of a-z 0-9 _ - (default \"vd\"; see README for mixed guests)");

static const char * const vblk_irq_mode_names[] = {
	[VBLK_IRQ_AUTO] = "auto", [VBLK_IRQ_MSIX] = "msix",
	[VBLK_IRQ_SHARED] = "shared", [VBLK_IRQ_INTX] = "intx",
};

static const char * const vblk_complete_names[] = {
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

static unsigned int vblk_irq_mode_param;
static struct vblk_enum_param vblk_irq_mode_p = {
	&vblk_irq_mode_param, vblk_irq_mode_names, ARRAY_SIZE(vblk_irq_mode_names)
};
module_param_cb(irq_mode, &vblk_enum_ops, &vblk_irq_mode_p, 0644);
MODULE_PARM_DESC(irq_mode, "auto|msix|shared|intx (applies at bind)");

static unsigned int vblk_complete_param;
static struct vblk_enum_param vblk_complete_p = {
	&vblk_complete_param, vblk_complete_names, ARRAY_SIZE(vblk_complete_names)
};
module_param_cb(complete, &vblk_enum_ops, &vblk_complete_p, 0644);
MODULE_PARM_DESC(complete,
		 "auto|hardirq|softirq; auto = softirq when queues share a vector (applies at bind)");

/* ---- disk names --------------------------------------------------------- */

static DEFINE_IDA(vblk_index_ida);
static DEFINE_MUTEX(vblk_name_lock);	/* name choice + add_disk */

/*
 * Same scheme as sd and virtio_blk: a..z, aa..zz, aaa.. Seven letters hold
 * any int index (26 + 26^2 + ... + 26^7 > INT_MAX). A name that does not
 * fit is an error, never a truncated one: truncation would give many
 * indices one name, and vblk_pick_name would walk the whole IDA for a
 * free one.
 */
static int vblk_format_name(char *buf, size_t len, const char *prefix, int index)
{
	char suffix[8];
	int i = sizeof(suffix) - 1;

	BUILD_BUG_ON(VBLK_PREFIX_MAX + sizeof(suffix) > DISK_NAME_LEN);
	suffix[i] = '\0';
	do {
		suffix[--i] = 'a' + index % 26;
		index = index / 26 - 1;
	} while (index >= 0 && i > 0);
	if (index >= 0)
		return -ENAMETOOLONG;
	if (snprintf(buf, len, "%s%s", prefix, &suffix[i]) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static bool vblk_name_taken(struct gendisk *disk, const char *name)
{
	struct device *d;

	/* The class of our own (not yet added) disk is the block class. */
	d = class_find_device_by_name(disk_to_dev(disk)->class, name);
	if (!d)
		return false;
	put_device(d);
	return true;
}

/*
 * The lowest index whose name no block device holds. Called with
 * vblk_name_lock held, up to add_disk, so two vblk probes cannot race; a
 * driver outside vblk can still take a name at the same moment, which the
 * disk_prefix parameter exists for. Every index has a name of its own
 * (vblk_format_name), so the loop ends after at most one try per block
 * device there is.
 */
static int vblk_pick_name(struct vblk_dev *vb)
{
	struct gendisk *disk = vb->disk;
	int index = 0, err;

	for (;;) {
		index = ida_alloc_min(&vblk_index_ida, index, GFP_KERNEL);
		if (index < 0)
			return index;
		err = vblk_format_name(disk->disk_name, DISK_NAME_LEN,
				       vblk_disk_prefix, index);
		if (err) {
			ida_free(&vblk_index_ida, index);
			return err;
		}
		if (!vblk_name_taken(disk, disk->disk_name))
			break;
		ida_free(&vblk_index_ida, index);
		index++;
	}
	vb->index = index;
	return 0;
}

/* ---- config changes ----------------------------------------------------- */

void vblk_config_changed(struct vblk_dev *vb)
{
	schedule_work(&vb->config_work);
}

/* ---- config ------------------------------------------------------------- */

#define CFG(f)	offsetof(struct virtio_blk_config, f)
#define CFG_READ(vb, f, ptr) \
	vblk_pci_read_config(&(vb)->pci, CFG(f), (ptr), \
			     sizeof_field(struct virtio_blk_config, f))

static bool vblk_has(struct vblk_dev *vb, unsigned int bit)
{
	return vb->pci.features & BIT_ULL(bit);
}

/* Capacity in 512-byte sectors, refused when it cannot be a real disk. */
static int vblk_read_capacity(struct vblk_dev *vb, sector_t *sectors)
{
	__le64 cap;
	int err = CFG_READ(vb, capacity, &cap);

	if (err)
		return err;
	*sectors = le64_to_cpu(cap);
	if (le64_to_cpu(cap) > (U64_MAX >> 10)) {
		dev_err(vblk_dev_of(vb), "capacity %llu sectors is not plausible\n",
			le64_to_cpu(cap));
		return -EINVAL;
	}
	return 0;
}

static void vblk_config_work(struct work_struct *work)
{
	struct vblk_dev *vb = container_of(work, struct vblk_dev, config_work);
	sector_t sectors;

	if (!READ_ONCE(vb->live) || READ_ONCE(vb->state) != VBLK_LIVE)
		return;
	/* The device asks for a reset through a config change (2.1.2). */
	if (vblk_pci_get_status(&vb->pci) & VIRTIO_CONFIG_S_NEEDS_RESET) {
		vblk_dev_recover(vb, "device set NEEDS_RESET");
		return;
	}
	if (vblk_read_capacity(vb, &sectors))
		return;
	if (sectors != get_capacity(vb->disk)) {
		dev_info(vblk_dev_of(vb), "%s: capacity now %llu sectors\n",
			 vb->disk->disk_name, (unsigned long long)sectors);
		set_capacity_and_notify(vb->disk, sectors);
	}
}

static int vblk_read_u32(struct vblk_dev *vb, unsigned int off, u32 *v)
{
	__le32 x;
	int err = vblk_pci_read_config(&vb->pci, off, &x, sizeof(x));

	*v = le32_to_cpu(x);
	return err;
}

/* Block sizes: logical from blk_size, physical and io hints from topology. */
static int vblk_read_block_sizes(struct vblk_dev *vb, struct vblk_limits *l)
{
	struct device *dev = vblk_dev_of(vb);
	u8 pexp = 0, align = 0;
	__le16 min_io = 0;
	__le32 opt_io = 0;
	u32 bs = SECTOR_SIZE;

	if (vblk_has(vb, VIRTIO_BLK_F_BLK_SIZE) &&
	    vblk_read_u32(vb, CFG(blk_size), &bs))
		return -EIO;
	if (bs < SECTOR_SIZE || bs > PAGE_SIZE || !is_power_of_2(bs)) {
		dev_err(dev, "block size %u is not a power of two in 512..%lu\n",
			bs, PAGE_SIZE);
		return -EINVAL;
	}
	l->logical_block_size = bs;
	l->physical_block_size = bs;
	if (!vblk_has(vb, VIRTIO_BLK_F_TOPOLOGY))
		return 0;
	if (CFG_READ(vb, physical_block_exp, &pexp) ||
	    CFG_READ(vb, alignment_offset, &align) ||
	    CFG_READ(vb, min_io_size, &min_io) ||
	    CFG_READ(vb, opt_io_size, &opt_io))
		return -EIO;
	if (pexp > 12) {
		dev_warn(dev, "ignoring topology: physical block exponent %u\n",
			 pexp);
		return 0;
	}
	l->physical_block_size = bs << pexp;
	l->alignment_offset = bs * align;
	l->io_min = bs * le16_to_cpu(min_io);
	/* A 32-bit count of blocks can overflow bytes: such a hint is noise. */
	if ((u64)bs * le32_to_cpu(opt_io) <= UINT_MAX)
		l->io_opt = bs * le32_to_cpu(opt_io);
	if (l->alignment_offset >= l->physical_block_size)
		l->alignment_offset = 0;
	return 0;
}

/* Segments: what the device takes, what a ring can carry, what we allow. */
static int vblk_read_seg_limits(struct vblk_dev *vb, struct vblk_limits *l)
{
	struct device *dev = vblk_dev_of(vb);
	u32 seg_max = 1, size_max = U32_MAX;
	unsigned int segs;

	if (vblk_has(vb, VIRTIO_BLK_F_SEG_MAX) &&
	    vblk_read_u32(vb, CFG(seg_max), &seg_max))
		return -EIO;
	if (vblk_has(vb, VIRTIO_BLK_F_SIZE_MAX) &&
	    vblk_read_u32(vb, CFG(size_max), &size_max))
		return -EIO;
	if (!seg_max) {
		dev_warn(dev, "seg_max 0: using 1 segment per request\n");
		seg_max = 1;
	}
	if (size_max < PAGE_SIZE) {
		dev_err(dev, "size_max %u below the page size\n", size_max);
		return -EINVAL;
	}
	size_max = min_t(size_t, size_max, vblk_pci_max_dma_size(&vb->pci));
	if (size_max < PAGE_SIZE) {
		dev_err(dev, "DMA mappings limited to %u bytes, below the page size\n",
			size_max);
		return -EINVAL;
	}
	segs = min3(seg_max, vblk_max_segments ?: 1U, 1024U);
	/*
	 * No chain may be longer than the ring, indirect tables included, and
	 * each carries a header and a status descriptor besides the data.
	 */
	segs = min(segs, vb->ring_size - 2);
	vb->max_segs = segs;
	l->max_segments = segs;
	l->max_segment_size = size_max;
	/*
	 * No byte limit of our own, as in the in-tree driver: segments and
	 * their size bound a request, and so does its 32-bit byte count.
	 */
	l->max_hw_sectors = UINT_MAX;
	return 0;
}

static void vblk_cfg_warn(void *ctx, const char *field, u32 value,
			  const char *consequence)
{
	dev_warn(ctx, "device config %s = %u: %s\n", field, value, consequence);
}

/* The range commands' config fields, when their feature was negotiated. */
static int vblk_read_range_cfg(struct vblk_dev *vb, struct vblk_range_cfg *c)
{
	__le32 v[3];

	if (c->discard &&
	    (CFG_READ(vb, max_discard_sectors, &v[0]) ||
	     CFG_READ(vb, max_discard_seg, &v[1]) ||
	     CFG_READ(vb, discard_sector_alignment, &v[2])))
		return -EIO;
	if (c->discard) {
		c->max_discard_sectors = le32_to_cpu(v[0]);
		c->max_discard_seg = le32_to_cpu(v[1]);
		c->discard_sector_alignment = le32_to_cpu(v[2]);
	}
	if (c->write_zeroes &&
	    (CFG_READ(vb, max_write_zeroes_sectors, &v[0]) ||
	     CFG_READ(vb, max_write_zeroes_seg, &v[1]) ||
	     CFG_READ(vb, write_zeroes_may_unmap, &c->write_zeroes_may_unmap)))
		return -EIO;
	if (c->write_zeroes) {
		c->max_write_zeroes_sectors = le32_to_cpu(v[0]);
		c->max_write_zeroes_seg = le32_to_cpu(v[1]);
	}
	if (c->secure_erase &&
	    (CFG_READ(vb, max_secure_erase_sectors, &v[0]) ||
	     CFG_READ(vb, max_secure_erase_seg, &v[1]) ||
	     CFG_READ(vb, secure_erase_sector_alignment, &v[2])))
		return -EIO;
	if (c->secure_erase) {
		c->max_secure_erase_sectors = le32_to_cpu(v[0]);
		c->max_secure_erase_seg = le32_to_cpu(v[1]);
		c->secure_erase_sector_alignment = le32_to_cpu(v[2]);
	}
	return 0;
}

/*
 * Discard, write zeroes and secure erase: limits from the config (values
 * that cannot be right are reported and replaced, or turn that command
 * off; see vblk_cmd.c), and the range table room every tag then needs.
 */
static int vblk_read_range_limits(struct vblk_dev *vb, struct vblk_limits *l)
{
	struct vblk_range_cfg c = {
		.discard = vblk_has(vb, VIRTIO_BLK_F_DISCARD),
		.write_zeroes = vblk_has(vb, VIRTIO_BLK_F_WRITE_ZEROES),
		.secure_erase = vblk_has(vb, VIRTIO_BLK_F_SECURE_ERASE),
		.lbs = l->logical_block_size,
	};
	struct vblk_range_limits rl;

	if (vblk_read_range_cfg(vb, &c))
		return -EIO;
	vblk_range_limits(&c, VBLK_MAX_RANGES, &rl, vblk_cfg_warn,
			  vblk_dev_of(vb));
	l->max_discard_sectors = rl.max_discard_sectors;
	l->max_secure_erase_sectors = rl.max_secure_erase_sectors;
	l->max_write_zeroes_sectors = rl.max_write_zeroes_sectors;
	l->discard_granularity = rl.discard_granularity;
	l->max_discard_segments = rl.max_discard_segments;
	vb->max_ranges = max_t(unsigned int, rl.max_discard_segments,
			       rl.max_write_zeroes_sectors ? 1 : 0);
	vb->zeroes_may_unmap = rl.zeroes_may_unmap;
	vb->tbl_entries = max(vb->max_segs + 2,
			      VBLK_RANGE_DESCS + vb->max_ranges);
	return 0;
}

static int vblk_read_limits(struct vblk_dev *vb, struct vblk_limits *l)
{
	u8 wce = 1;
	int err;

	memset(l, 0, sizeof(*l));
	err = vblk_read_block_sizes(vb, l);
	if (!err)
		err = vblk_read_seg_limits(vb, l);
	if (!err)
		err = vblk_read_range_limits(vb, l);
	if (err)
		return err;
	if (vblk_has(vb, VIRTIO_BLK_F_CONFIG_WCE) && CFG_READ(vb, wce, &wce))
		return -EIO;
	l->write_cache = vblk_has(vb, VIRTIO_BLK_F_FLUSH) && wce;
	return 0;
}

/* ---- features and queues ------------------------------------------------ */

static u64 vblk_wanted_features(void)
{
	u64 f = BIT_ULL(VIRTIO_F_VERSION_1) | BIT_ULL(VIRTIO_F_ACCESS_PLATFORM) |
		BIT_ULL(VIRTIO_BLK_F_SIZE_MAX) | BIT_ULL(VIRTIO_BLK_F_SEG_MAX) |
		BIT_ULL(VIRTIO_BLK_F_GEOMETRY) | BIT_ULL(VIRTIO_BLK_F_RO) |
		BIT_ULL(VIRTIO_BLK_F_BLK_SIZE) | BIT_ULL(VIRTIO_BLK_F_FLUSH) |
		BIT_ULL(VIRTIO_BLK_F_TOPOLOGY) | BIT_ULL(VIRTIO_BLK_F_CONFIG_WCE) |
		BIT_ULL(VIRTIO_BLK_F_MQ) | BIT_ULL(VIRTIO_BLK_F_DISCARD) |
		BIT_ULL(VIRTIO_BLK_F_WRITE_ZEROES) |
		BIT_ULL(VIRTIO_BLK_F_SECURE_ERASE);

	if (vblk_use_indirect)
		f |= BIT_ULL(VIRTIO_RING_F_INDIRECT_DESC);
	if (vblk_use_event_idx)
		f |= BIT_ULL(VIRTIO_RING_F_EVENT_IDX);
	return f;
}

/*
 * VIRTIO_BLK_F_ZONED is never accepted. The config may be read before
 * FEATURES_OK (3.1.1), so the zone model decides whether the device can be
 * driven as a normal disk at all (vblk_zoned_check()).
 */
static int vblk_check_zoned(struct vblk_dev *vb, u64 offered)
{
	const char *why = NULL;
	u8 model;
	int err;

	if (!(offered & BIT_ULL(VIRTIO_BLK_F_ZONED)))
		return 0;
	if (vblk_pci_read_config(&vb->pci, VBLK_CFG_ZONED_MODEL, &model, 1)) {
		dev_err(vblk_dev_of(vb), "zoned device without a readable zone model: refused\n");
		return -ENODEV;
	}
	err = vblk_zoned_check(model, &why);
	if (err)
		dev_err(vblk_dev_of(vb), "zone model %u refused: %s\n", model, why);
	return err;
}

static int vblk_negotiate(struct vblk_dev *vb)
{
	u64 offered = vblk_pci_device_features(&vb->pci);
	int err;

	if (!(offered & BIT_ULL(VIRTIO_F_VERSION_1))) {
		dev_err(vblk_dev_of(vb), "device has no VIRTIO_F_VERSION_1: legacy devices are not supported\n");
		return -ENODEV;
	}
	err = vblk_check_zoned(vb, offered);
	if (err)
		return err;
	err = vblk_pci_set_features(&vb->pci, offered & vblk_wanted_features());
	if (err)
		return err;
	vb->indirect = vblk_has(vb, VIRTIO_RING_F_INDIRECT_DESC);
	vb->event_idx = vblk_has(vb, VIRTIO_RING_F_EVENT_IDX);
	return 0;
}

/* How many virtqueues to use: device, transport and parameters agree. */
static int vblk_count_queues(struct vblk_dev *vb)
{
	struct device *dev = vblk_dev_of(vb);
	unsigned int dev_q = 1, want, asked;
	__le16 nq;

	if (vblk_has(vb, VIRTIO_BLK_F_MQ)) {
		if (CFG_READ(vb, num_queues, &nq))
			return -EIO;
		dev_q = le16_to_cpu(nq);
		if (!dev_q) {
			dev_warn(dev, "device reports 0 queues: using 1\n");
			dev_q = 1;
		}
	}
	if (dev_q > vblk_pci_num_queues(&vb->pci)) {
		dev_warn(dev, "config says %u queues, transport has %u\n",
			 dev_q, vblk_pci_num_queues(&vb->pci));
		dev_q = vblk_pci_num_queues(&vb->pci);
		if (!dev_q)
			return -ENODEV;
	}
	asked = READ_ONCE(vblk_num_queues);
	want = min3(asked ?: num_online_cpus(), dev_q, (unsigned int)VBLK_MAX_QUEUES);
	if (asked > want)
		dev_info(dev, "num_queues %u lowered to %u, the device's queue count\n",
			 asked, want);
	asked = READ_ONCE(vblk_poll_queues);
	vb->nr_poll = min(asked, dev_q - want);
	if (asked > vb->nr_poll)
		dev_info(dev, "poll_queues %u lowered to %u (device queues %u, interrupt-driven %u)\n",
			 asked, vb->nr_poll, dev_q, want);
	vb->nr_queues = want + vb->nr_poll;
	return 0;
}

/* One ring size for all queues: the smallest the device allows, 2^n. */
static int vblk_pick_ring_size(struct vblk_dev *vb)
{
	struct device *dev = vblk_dev_of(vb);
	unsigned int i, size = VBLK_RING_MAX_SIZE, asked;

	for (i = 0; i < vb->nr_queues; i++) {
		u16 max = vblk_pci_queue_max_size(&vb->pci, i);

		if (!max) {
			dev_err(vblk_dev_of(vb), "queue %u unavailable (size 0)\n", i);
			return -ENODEV;
		}
		size = min_t(unsigned int, size, rounddown_pow_of_two(max));
	}
	/*
	 * The spec lets the driver choose a smaller ring than the maximum;
	 * the parameter is a power of two (vblk_set_ring_size).
	 */
	asked = READ_ONCE(vblk_ring_size);
	if (asked > size)
		dev_info(dev, "ring_size %u lowered to %u, the device's maximum\n",
			 asked, size);
	else if (asked)
		size = asked;
	if (size < 4) {
		dev_err(vblk_dev_of(vb), "queue size %u too small\n", size);
		return -EINVAL;
	}
	vb->ring_size = size;
	/*
	 * Without indirect tables a request takes at least a header, a data
	 * and a status descriptor: a tag per ring entry would only park most
	 * of them on a full ring.
	 */
	asked = READ_ONCE(vblk_queue_depth);
	vb->depth = min3(asked ?: (vb->indirect ? size : size / 2), size, 1024U);
	if (asked > vb->depth)
		dev_info(dev, "queue_depth %u lowered to %u, the ring size\n",
			 asked, vb->depth);
	return 0;
}

static int vblk_setup_irqs(struct vblk_dev *vb)
{
	enum vblk_irq_mode mode = READ_ONCE(vblk_irq_mode_param);
	unsigned int irq_q = vb->nr_queues - vb->nr_poll;
	int err = -ENODEV;

	if (mode == VBLK_IRQ_AUTO || mode == VBLK_IRQ_MSIX)
		err = vblk_pci_alloc_vectors(&vb->pci, VBLK_IRQ_MSIX, irq_q);
	if (err && (mode == VBLK_IRQ_AUTO || mode == VBLK_IRQ_SHARED))
		err = vblk_pci_alloc_vectors(&vb->pci, VBLK_IRQ_SHARED, irq_q);
	if (err && (mode == VBLK_IRQ_AUTO || mode == VBLK_IRQ_INTX))
		err = vblk_pci_alloc_vectors(&vb->pci, VBLK_IRQ_INTX, irq_q);
	if (err) {
		dev_err(vblk_dev_of(vb), "no interrupts in mode %s (%d)\n",
			vblk_irq_mode_names[mode], err);
		return err;
	}
	vb->complete = READ_ONCE(vblk_complete_param);
	if (vb->complete == VBLK_COMPLETE_AUTO)
		vb->complete = vb->pci.irq_mode == VBLK_IRQ_MSIX ?
			       VBLK_COMPLETE_HARDIRQ : VBLK_COMPLETE_SOFTIRQ;
	return 0;
}

/* Tags per chunk is a power of two, so finding a tag is shift and mask. */
static void vblk_size_tag_chunks(struct vblk_dev *vb)
{
	unsigned int per;

	vb->tag_stride = ALIGN(sizeof(struct vblk_tag_dma) +
			       vb->tbl_entries * sizeof(struct vblk_desc), 64);
	per = rounddown_pow_of_two(max_t(unsigned int, 1,
					 VBLK_TAG_CHUNK_BYTES / vb->tag_stride));
	per = min(per, roundup_pow_of_two(vb->depth));
	vb->chunk_shift = ilog2(per);
	vb->nr_chunks = DIV_ROUND_UP(vb->depth, per);
	vb->chunk_bytes = PAGE_ALIGN((size_t)per * vb->tag_stride);
}

static void vblk_free_queue_mem(struct vblk_dev *vb, struct vblk_queue *q)
{
	unsigned int i;

	vblk_dma_free(&vb->pci, q->ring_bytes, q->ring_mem, q->ring_dma);
	for (i = 0; q->tag_chunks && i < vb->nr_chunks; i++)
		vblk_dma_free(&vb->pci, vb->chunk_bytes, q->tag_chunks[i].mem,
			      q->tag_chunks[i].dma);
	kfree(q->tag_chunks);
	kfree(q->slot);
	q->ring_mem = NULL;
	q->tag_chunks = NULL;
	q->slot = NULL;
}

static int vblk_alloc_queue_mem(struct vblk_dev *vb, struct vblk_queue *q)
{
	unsigned int i;

	q->ring_bytes = PAGE_ALIGN(vblk_ring_mem_size(vb->ring_size));
	q->ring_mem = vblk_dma_alloc(&vb->pci, q->ring_bytes, &q->ring_dma);
	q->slot = kcalloc(vb->ring_size, sizeof(*q->slot), GFP_KERNEL);
	q->tag_chunks = kcalloc(vb->nr_chunks, sizeof(*q->tag_chunks),
				GFP_KERNEL);
	if (!q->ring_mem || !q->slot || !q->tag_chunks)
		goto nomem;
	for (i = 0; i < vb->nr_chunks; i++) {
		struct vblk_dma_chunk *c = &q->tag_chunks[i];

		c->mem = vblk_dma_alloc(&vb->pci, vb->chunk_bytes, &c->dma);
		if (!c->mem)
			goto nomem;
	}
	return 0;
nomem:
	dev_err(vblk_dev_of(vb), "queue %u: no memory for a %u-entry ring and %u tags of %u bytes\n",
		q->index, vb->ring_size, vb->depth, vb->tag_stride);
	vblk_free_queue_mem(vb, q);
	return -ENOMEM;
}

/*
 * Lay out the queue's ring afresh in its (kept) memory and register it with
 * a device that was just reset: at probe, and again after every recovery
 * or pause. The ring is empty then; the harvest may touch it again.
 */
int vblk_queue_start(struct vblk_dev *vb, struct vblk_queue *q)
{
	u16 vector = VIRTIO_MSI_NO_VECTOR;
	unsigned long flags;
	int err;

	memset(q->ring_mem, 0, q->ring_bytes);
	spin_lock_irqsave(&q->lock, flags);
	err = vblk_ring_init(&q->ring, q->ring_mem, q->ring_dma, vb->ring_size,
			     q->slot, vb->event_idx, vb->indirect);
	if (!err && q->polled)
		vblk_ring_disable_cb(&q->ring);
	spin_unlock_irqrestore(&q->lock, flags);
	if (err)
		return err;
	if (!q->polled && vb->pci.irq_mode == VBLK_IRQ_MSIX)
		vector = q->index + 1;
	else if (!q->polled && vb->pci.irq_mode == VBLK_IRQ_SHARED)
		vector = 1;
	err = vblk_pci_setup_queue(&vb->pci, q->index, vb->ring_size,
				   q->ring.desc_addr, q->ring.avail_addr,
				   q->ring.used_addr, vector, &q->doorbell);
	if (err)
		return err;
	vblk_queue_online(q);
	return 0;
}

static int vblk_setup_queue(struct vblk_dev *vb, unsigned int i)
{
	struct vblk_queue *q = &vb->queues[i];
	bool polled = i >= vb->nr_queues - vb->nr_poll;
	int err;

	spin_lock_init(&q->lock);
	q->vb = vb;
	q->index = i;
	q->polled = polled;
	q->softirq = !polled && vb->complete == VBLK_COMPLETE_SOFTIRQ;
	err = vblk_alloc_queue_mem(vb, q);
	if (err)
		return err;
	vblk_queue_init_completion(q);
	err = vblk_queue_start(vb, q);
	if (err) {
		vblk_queue_offline(q);
		vblk_free_queue_mem(vb, q);
	}
	return err;
}

static void vblk_free_queues(struct vblk_dev *vb, unsigned int n)
{
	while (n--) {
		vblk_queue_offline(&vb->queues[n]);
		vblk_free_queue_mem(vb, &vb->queues[n]);
	}
	kfree(vb->queues);
	vb->queues = NULL;
}

static int vblk_setup_queues(struct vblk_dev *vb)
{
	unsigned int i;
	int err;

	vblk_size_tag_chunks(vb);
	vb->queues = kcalloc(vb->nr_queues, sizeof(*vb->queues), GFP_KERNEL);
	if (!vb->queues)
		return -ENOMEM;
	for (i = 0; i < vb->nr_queues; i++) {
		err = vblk_setup_queue(vb, i);
		if (err) {
			vblk_free_queues(vb, i);
			return err;
		}
	}
	return 0;
}

/* ---- gendisk ------------------------------------------------------------ */

/* Held open after removal, the disk still answers: -ENXIO. */
static int vblk_getgeo(VBLK_GETGEO_ARG arg, struct hd_geometry *geo)
{
	struct vblk_dev *vb = vblk_getgeo_disk(arg)->private_data;
	__le16 cylinders;
	u8 heads, sectors;
	bool have = false;

	mutex_lock(&vb->lifecycle_lock);
	if (vb->removed) {
		mutex_unlock(&vb->lifecycle_lock);
		return -ENXIO;
	}
	if (vblk_has(vb, VIRTIO_BLK_F_GEOMETRY) &&
	    !CFG_READ(vb, geometry.cylinders, &cylinders) &&
	    !CFG_READ(vb, geometry.heads, &heads) &&
	    !CFG_READ(vb, geometry.sectors, &sectors) && heads && sectors)
		have = true;
	mutex_unlock(&vb->lifecycle_lock);
	if (have) {
		geo->heads = heads;
		geo->sectors = sectors;
		geo->cylinders = le16_to_cpu(cylinders);
		return 0;
	}
	/* The usual made-up geometry of disks that have none. */
	geo->heads = 64;
	geo->sectors = 32;
	geo->cylinders = get_capacity(vblk_getgeo_disk(arg)) >> 11;
	return 0;
}

/* The disk's last reference is gone: the name and the structure go. */
static void vblk_free_disk(struct gendisk *disk)
{
	struct vblk_dev *vb = disk->private_data;

	if (!vb)
		return;
	mutex_lock(&vblk_name_lock);
	ida_free(&vblk_index_ida, vb->index);
	mutex_unlock(&vblk_name_lock);
	kfree(vb);
}

static const struct block_device_operations vblk_fops = {
	.owner		= THIS_MODULE,
	.getgeo		= vblk_getgeo,
	.free_disk	= vblk_free_disk,
};

static int vblk_init_tag_set(struct vblk_dev *vb)
{
	struct blk_mq_tag_set *set = &vb->tag_set;

	set->ops = &vblk_mq_ops;
	set->nr_hw_queues = vb->nr_queues;
	set->nr_maps = vb->nr_poll ? HCTX_MAX_TYPES : 1;
	set->queue_depth = vb->depth;
	set->numa_node = dev_to_node(vblk_dev_of(vb));
	set->flags = VBLK_MQ_F_MERGE;
	set->cmd_size = vblk_mq_cmd_size(vb);
	set->driver_data = vb;
	return blk_mq_alloc_tag_set(set);
}

static int vblk_create_disk(struct vblk_dev *vb, const struct vblk_limits *lim)
{
	sector_t sectors;
	int err;

	err = vblk_read_capacity(vb, &sectors);
	if (err)
		return err;
	err = vblk_init_tag_set(vb);
	if (err)
		return err;
	vb->disk = vblk_alloc_disk(&vb->tag_set, lim, vb);
	if (IS_ERR(vb->disk)) {
		err = PTR_ERR(vb->disk);
		vb->disk = NULL;
		blk_mq_free_tag_set(&vb->tag_set);
		return err;
	}
	vb->disk->fops = &vblk_fops;
	/* private_data stays NULL (free_disk does nothing) until added. */
	set_capacity(vb->disk, sectors);
	blk_queue_rq_timeout(vb->disk->queue, READ_ONCE(vblk_io_timeout) * HZ);
	set_disk_ro(vb->disk, vblk_has(vb, VIRTIO_BLK_F_RO));
	return 0;
}

/* Probe unwind only: the disk was never added (free_disk does nothing). */
static void vblk_destroy_disk(struct vblk_dev *vb)
{
	put_disk(vb->disk);
	blk_mq_free_tag_set(&vb->tag_set);
}

/* ---- sysfs -------------------------------------------------------------- */

static struct vblk_dev *vblk_from_dev(struct device *dev)
{
	return dev_to_disk(dev)->private_data;
}

/*
 * The serial is asked for at the first read, not at probe: a device that
 * does not answer must not hang the bind (the request timeout bounds this).
 * The file reads as the in-tree driver's does: the bytes without a newline,
 * and empty when the device answers GET_ID with an I/O error. Unprintable
 * bytes read as '?' (vblk_mq_get_serial()).
 */
static ssize_t serial_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct vblk_dev *vb = vblk_from_dev(dev);
	int err = 0;

	mutex_lock(&vb->serial_lock);
	if (!vb->have_serial) {
		err = vblk_mq_get_serial(vb);
		vb->have_serial = !err;
	}
	mutex_unlock(&vb->serial_lock);
	if (err == -EIO)
		return 0;
	if (err)
		return err;
	/* No newline (in-tree format): sysfs_emit would want one. */
	return strscpy(buf, vb->serial, PAGE_SIZE);
}
static DEVICE_ATTR_RO(serial);

static const char * const vblk_cache_types[] = {
	"write through", "write back",
};

/* What the device caches now: wce when it can be toggled, else FLUSH. */
static int vblk_cache_mode(struct vblk_dev *vb, u8 *wce)
{
	*wce = vblk_has(vb, VIRTIO_BLK_F_FLUSH);
	if (!vblk_has(vb, VIRTIO_BLK_F_CONFIG_WCE))
		return 0;
	if (CFG_READ(vb, wce, wce))
		return -EIO;
	*wce = !!*wce;
	return 0;
}

static ssize_t cache_type_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	struct vblk_dev *vb = vblk_from_dev(dev);
	int err = -ENXIO;
	u8 wce;

	mutex_lock(&vb->lifecycle_lock);
	if (!vb->removed)
		err = vblk_cache_mode(vb, &wce);
	mutex_unlock(&vb->lifecycle_lock);
	if (err)
		return err;
	return sysfs_emit(buf, "%s\n", vblk_cache_types[wce]);
}

/*
 * With VIRTIO_BLK_F_CONFIG_WCE the cache mode can be changed: the device
 * is told, asked back (it may keep its mode), and the block layer's flush
 * behaviour follows what the device says it does now.
 */
static ssize_t cache_type_store(struct device *dev,
				struct device_attribute *attr, const char *buf,
				size_t count)
{
	struct vblk_dev *vb = vblk_from_dev(dev);
	int want = sysfs_match_string(vblk_cache_types, buf);
	int err = -ENXIO;
	u8 wce = 0;

	if (want < 0)
		return want;
	if (!vblk_has(vb, VIRTIO_BLK_F_CONFIG_WCE))
		return -EPERM;
	mutex_lock(&vb->lifecycle_lock);
	if (!vb->removed) {
		err = vblk_pci_write_config8(&vb->pci, CFG(wce), want);
		if (!err)
			err = vblk_cache_mode(vb, &wce);
	}
	mutex_unlock(&vb->lifecycle_lock);
	if (!err)
		err = vblk_set_write_cache(vb->disk,
					   wce && vblk_has(vb, VIRTIO_BLK_F_FLUSH));
	if (!err && wce != want) {
		dev_warn(dev, "device kept its cache %s\n", vblk_cache_types[wce]);
		err = -EIO;
	}
	return err ?: count;
}
static DEVICE_ATTR_RW(cache_type);

static struct attribute *vblk_disk_attrs[] = {
	&dev_attr_serial.attr,
	&dev_attr_cache_type.attr,
	NULL,
};

/* cache_type is writable only where the device lets the mode change. */
static umode_t vblk_disk_attr_mode(struct kobject *kobj, struct attribute *a,
				   int n)
{
	struct vblk_dev *vb = vblk_from_dev(kobj_to_dev(kobj));

	if (a == &dev_attr_cache_type.attr &&
	    !vblk_has(vb, VIRTIO_BLK_F_CONFIG_WCE))
		return 0444;
	return a->mode;
}

static const struct attribute_group vblk_disk_group = {
	.attrs = vblk_disk_attrs,
	.is_visible = vblk_disk_attr_mode,
};

static void vblk_sum_stats(struct vblk_dev *vb, struct vblk_stats *sum)
{
	unsigned int i;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < vb->nr_queues; i++) {
		const struct vblk_stats *s = &vb->queues[i].stats;

		sum->requests += READ_ONCE(s->requests);
		sum->doorbells += READ_ONCE(s->doorbells);
		sum->suppressed += READ_ONCE(s->suppressed);
		sum->completions += READ_ONCE(s->completions);
		sum->max_batch = max(sum->max_batch, READ_ONCE(s->max_batch));
		sum->ring_full += READ_ONCE(s->ring_full);
		sum->irqs += READ_ONCE(s->irqs);
		sum->spurious += READ_ONCE(s->spurious);
		sum->polls += READ_ONCE(s->polls);
		sum->rescued += READ_ONCE(s->rescued);
		sum->rekicks += READ_ONCE(s->rekicks);
	}
}

static int vblk_emit_stats(char *buf, int len, const char *name,
			   const struct vblk_stats *s)
{
	return len + sysfs_emit_at(buf, len,
		"%-6s %12llu %12llu %12llu %12llu %9llu %9llu %12llu %12llu %12llu %8llu %8llu\n",
		name, s->requests, s->doorbells, s->suppressed, s->completions,
		s->max_batch, s->ring_full, s->irqs, s->spurious, s->polls,
		s->rescued, s->rekicks);
}

/* One line per queue and a total; writing anything resets them all. */
static ssize_t counters_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct vblk_dev *vb = vblk_from_dev(dev);
	struct vblk_stats sum;
	char name[12];
	unsigned int i;
	int len;

	len = sysfs_emit(buf, "%-6s %12s %12s %12s %12s %9s %9s %12s %12s %12s %8s %8s\n",
			 "queue", "requests", "doorbells", "suppressed",
			 "completions", "max_batch", "ring_full", "irqs",
			 "spurious", "polls", "rescued", "rekicks");
	for (i = 0; i < vb->nr_queues; i++) {
		snprintf(name, sizeof(name), "%u", i);
		len = vblk_emit_stats(buf, len, name, &vb->queues[i].stats);
	}
	vblk_sum_stats(vb, &sum);
	len = vblk_emit_stats(buf, len, "total", &sum);
	len += sysfs_emit_at(buf, len, "device_irqs %llu config_irqs %llu\n",
			     READ_ONCE(vb->shared_irqs), READ_ONCE(vb->config_irqs));
	return len;
}

static ssize_t counters_store(struct device *dev, struct device_attribute *attr,
			      const char *buf, size_t count)
{
	struct vblk_dev *vb = vblk_from_dev(dev);
	unsigned long flags;
	unsigned int i;

	for (i = 0; i < vb->nr_queues; i++) {
		struct vblk_queue *q = &vb->queues[i];

		spin_lock_irqsave(&q->lock, flags);
		memset(&q->stats, 0, sizeof(q->stats));
		spin_unlock_irqrestore(&q->lock, flags);
	}
	vb->shared_irqs = 0;
	vb->config_irqs = 0;
	return count;
}
static DEVICE_ATTR_RW(counters);

/*
 * One line per queue: the driver's ring indices and the shared ones, so
 * that a queue whose requests hang can be read (was the device told, did
 * it answer, is the interrupt asked for).
 */
static ssize_t rings_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct vblk_dev *vb = vblk_from_dev(dev);
	struct vblk_ring_state st;
	unsigned long flags;
	unsigned int i;
	int len;

	len = sysfs_emit(buf, "%s %s %s\n",
			 "queue avail_idx kick_idx shared_avail avail_event",
			 "used_idx last_used used_event in_flight num_free",
			 "used_flags broken");
	for (i = 0; i < vb->nr_queues; i++) {
		struct vblk_queue *q = &vb->queues[i];

		spin_lock_irqsave(&q->lock, flags);
		vblk_ring_state(&q->ring, &st);
		spin_unlock_irqrestore(&q->lock, flags);
		len += sysfs_emit_at(buf, len,
				     "%u %u %u %u %u %u %u %u %u %u %#x %d\n", i,
				     st.avail_idx, st.kick_idx, st.shared_avail_idx,
				     st.avail_event, st.used_idx, st.last_used,
				     st.used_event, st.in_flight, st.num_free,
				     st.used_flags, st.broken);
	}
	return len;
}
static DEVICE_ATTR_RO(rings);

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
			  atomic_read(&vb->lose_irqs),
			  atomic_read(&vb->lose_kicks), READ_ONCE(vb->silent));
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
		atomic_set(&vb->lose_irqs, n);
	else if (!strcmp(what, "kick"))
		atomic_set(&vb->lose_kicks, n);
	else if (!strcmp(what, "silent") && n <= 1)
		WRITE_ONCE(vb->silent, n);
	else
		return -EINVAL;
	return count;
}
static DEVICE_ATTR_RW(lose);

static const char * const vblk_state_names[] = {
	[VBLK_LIVE] = "live", [VBLK_RESETTING] = "resetting", [VBLK_DEAD] = "dead",
};

static u32 vblk_len_over(struct vblk_dev *vb)
{
	unsigned int i;
	u32 n = 0;

	for (i = 0; i < vb->nr_queues; i++)
		n += READ_ONCE(vb->queues[i].ring.len_over);
	return n;
}

static ssize_t config_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct vblk_dev *vb = vblk_from_dev(dev);

	return sysfs_emit(buf,
		"features %#llx\nqueues %u\npoll_queues %u\nring_size %u\nqueue_depth %u\n"
		"max_segments %u\nindirect %u\nevent_idx %u\nirq_mode %s\nvectors %d\n"
		"complete %s\ndma_api %u\nstate %s\nrecoveries %llu\nused_len_over %u\n"
		"max_ranges %u\nzeroes_may_unmap %u\n",
		(unsigned long long)vb->pci.features, vb->nr_queues - vb->nr_poll,
		vb->nr_poll, vb->ring_size, vb->depth, vb->max_segs, vb->indirect,
		vb->event_idx, vblk_irq_mode_names[vb->pci.irq_mode], vb->pci.nvec,
		vblk_complete_names[vb->complete], vb->pci.dma_api,
		vblk_state_names[READ_ONCE(vb->state)], READ_ONCE(vb->recoveries),
		vblk_len_over(vb), vb->max_ranges, vb->zeroes_may_unmap);
}
static DEVICE_ATTR_RO(config);

static struct attribute *vblk_attrs[] = {
	&dev_attr_counters.attr,
	&dev_attr_config.attr,
	&dev_attr_rings.attr,
	&dev_attr_lose.attr,
	NULL,
};

static const struct attribute_group vblk_attr_group = {
	.name = "vblk",
	.attrs = vblk_attrs,
};

static const struct attribute_group *vblk_attr_groups[] = {
	&vblk_disk_group,
	&vblk_attr_group,
	NULL,
};

/* ---- probe and remove --------------------------------------------------- */

/* Transport up, device acknowledged, features agreed, queues counted. */
static int vblk_start_device(struct vblk_dev *vb)
{
	int err;

	err = vblk_pci_begin(&vb->pci);
	if (!err)
		err = vblk_negotiate(vb);
	if (!err)
		err = vblk_count_queues(vb);
	if (!err)
		err = vblk_pick_ring_size(vb);
	return err;
}

static int vblk_add_disk(struct vblk_dev *vb)
{
	int err;

	mutex_lock(&vblk_name_lock);
	err = vblk_pick_name(vb);
	if (!err) {
		vb->disk->private_data = vb;
		err = device_add_disk(vblk_dev_of(vb), vb->disk, vblk_attr_groups);
		if (err) {
			vb->disk->private_data = NULL;
			ida_free(&vblk_index_ida, vb->index);
		}
	}
	mutex_unlock(&vblk_name_lock);
	return err;
}

static int vblk_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct vblk_limits lim;
	struct vblk_dev *vb;
	int err;

	vb = kzalloc(sizeof(*vb), GFP_KERNEL);
	if (!vb)
		return -ENOMEM;
	INIT_WORK(&vb->config_work, vblk_config_work);
	vblk_dev_init_lifecycle(vb);
	mutex_init(&vb->serial_lock);
	pci_set_drvdata(pdev, vb);

	err = vblk_pci_init(&vb->pci, pdev);
	if (err)
		goto err_free;
	err = vblk_start_device(vb);
	if (err)
		goto err_reset;
	/* Segment limits size the per-tag tables, so read them first. */
	err = vblk_read_limits(vb, &lim);
	if (err)
		goto err_reset;
	err = vblk_setup_irqs(vb);
	if (err)
		goto err_reset;
	err = vblk_setup_queues(vb);
	if (err)
		goto err_vectors;
	err = vblk_pci_set_config_vector(&vb->pci, 0);
	if (err)
		goto err_queues;
	err = vblk_irqs_request(vb);
	if (err)
		goto err_queues;
	err = vblk_create_disk(vb, &lim);
	if (err)
		goto err_irqs;
	pci_save_state(pdev);
	vblk_pci_add_status(&vb->pci, VIRTIO_CONFIG_S_DRIVER_OK);
	err = vblk_add_disk(vb);
	if (err)
		goto err_irqs;
	WRITE_ONCE(vb->live, true);

	dev_info(&pdev->dev,
		 "%s: %llu sectors, %u+%u queues x %u (depth %u), %s vectors, %s completion%s%s\n",
		 vb->disk->disk_name, (unsigned long long)get_capacity(vb->disk),
		 vb->nr_queues - vb->nr_poll, vb->nr_poll, vb->ring_size, vb->depth,
		 vblk_irq_mode_names[vb->pci.irq_mode],
		 vblk_complete_names[vb->complete],
		 vb->indirect ? ", indirect" : "",
		 vb->event_idx ? ", event idx" : "");
	return 0;

err_irqs:
	/* Device quiet and handlers gone before the works they schedule. */
	vblk_pci_reset(&vb->pci);
	vblk_irqs_free(vb);
	cancel_work_sync(&vb->config_work);
	cancel_work_sync(&vb->reset_work);
	if (vb->disk)
		vblk_destroy_disk(vb);
	goto err_free_queues;
err_queues:
	vblk_pci_reset(&vb->pci);
err_free_queues:
	vblk_free_queues(vb, vb->nr_queues);
err_vectors:
	vblk_pci_free_vectors(&vb->pci);
err_reset:
	vblk_pci_add_status(&vb->pci, VIRTIO_CONFIG_S_FAILED);
	vblk_pci_exit(&vb->pci);
err_free:
	kfree(vb);
	return err;
}

/*
 * Device side down; the disk may stay open (vb lives until free_disk).
 * Order: a device that is gone fails its I/O first (del_gendisk would wait
 * for it otherwise); no config change starts once the disk is going;
 * del_gendisk drains the rest (the request timeout still recovers or fails
 * a silent device meanwhile); then the device stops for good, and only
 * after its interrupts are freed can no work item be scheduled again.
 */
static void vblk_remove(struct pci_dev *pdev)
{
	struct vblk_dev *vb = pci_get_drvdata(pdev);

	if (!pci_device_is_present(pdev))
		vblk_dev_kill(vb, "device removed");
	WRITE_ONCE(vb->live, false);
	cancel_work_sync(&vb->config_work);
	del_gendisk(vb->disk);
	cancel_work_sync(&vb->reset_work);
	vblk_dev_kill(vb, NULL);
	vblk_irqs_free(vb);
	cancel_work_sync(&vb->config_work);
	cancel_work_sync(&vb->reset_work);

	mutex_lock(&vb->lifecycle_lock);
	vb->removed = true;
	if (vb->dma_leaked)
		dev_err(&pdev->dev, "leaking the DMA memory of a device that did not reset\n");
	else
		vblk_free_queues(vb, vb->nr_queues);
	vblk_pci_free_vectors(&vb->pci);
	vblk_pci_exit(&vb->pci);
	mutex_unlock(&vb->lifecycle_lock);
	blk_mq_free_tag_set(&vb->tag_set);
	put_disk(vb->disk);
}

/* Power off or kexec: the device must stop touching memory, I/O fails. */
static void vblk_shutdown(struct pci_dev *pdev)
{
	vblk_dev_kill(pci_get_drvdata(pdev), NULL);
}

/* ---- power management, function reset, PCI errors ----------------------- */

static int vblk_pm_suspend(struct device *dev)
{
	vblk_dev_pause(pci_get_drvdata(to_pci_dev(dev)));
	return 0;
}

static int vblk_pm_resume(struct device *dev)
{
	return vblk_dev_unpause(pci_get_drvdata(to_pci_dev(dev)), "sleep");
}

static const struct dev_pm_ops vblk_pm_ops = {
	SET_SYSTEM_SLEEP_PM_OPS(vblk_pm_suspend, vblk_pm_resume)
};

static void vblk_reset_prepare(struct pci_dev *pdev)
{
	vblk_dev_pause(pci_get_drvdata(pdev));
}

static void vblk_reset_done(struct pci_dev *pdev)
{
	vblk_dev_unpause(pci_get_drvdata(pdev), "function reset");
}

static pci_ers_result_t vblk_error_detected(struct pci_dev *pdev,
					    pci_channel_state_t state)
{
	struct vblk_dev *vb = pci_get_drvdata(pdev);

	if (state == pci_channel_io_perm_failure) {
		vblk_dev_kill(vb, "permanent PCI failure");
		return PCI_ERS_RESULT_DISCONNECT;
	}
	vblk_dev_pause(vb);
	return PCI_ERS_RESULT_NEED_RESET;
}

static pci_ers_result_t vblk_slot_reset(struct pci_dev *pdev)
{
	pci_restore_state(pdev);
	return PCI_ERS_RESULT_RECOVERED;
}

static void vblk_error_resume(struct pci_dev *pdev)
{
	vblk_dev_unpause(pci_get_drvdata(pdev), "PCI error recovery");
}

static const struct pci_error_handlers vblk_err_handlers = {
	.error_detected	= vblk_error_detected,
	.slot_reset	= vblk_slot_reset,
	.resume		= vblk_error_resume,
	.reset_prepare	= vblk_reset_prepare,
	.reset_done	= vblk_reset_done,
};

/*
 * No MODULE_DEVICE_TABLE on purpose: vblk never loads by itself and never
 * takes a disk another driver could hold; users bind it (see README).
 */
static const struct pci_device_id vblk_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1001) },
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1040 + VIRTIO_ID_BLOCK) },
	{ }
};

static struct pci_driver vblk_driver = {
	.name		= VBLK_NAME,
	.id_table	= vblk_ids,
	.probe		= vblk_probe,
	.remove		= vblk_remove,
	.shutdown	= vblk_shutdown,
	.err_handler	= &vblk_err_handlers,
	.driver.pm	= &vblk_pm_ops,
};

static int __init vblk_init(void)
{
	return pci_register_driver(&vblk_driver);
}

static void __exit vblk_exit(void)
{
	pci_unregister_driver(&vblk_driver);
	ida_destroy(&vblk_index_ida);
}

module_init(vblk_init);
module_exit(vblk_exit);
MODULE_DESCRIPTION("virtio-blk driver with its own virtio-pci transport and split rings");
MODULE_LICENSE("GPL");
