// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: the disk's sysfs attributes: serial and cache_type beside the
 * block layer's own files, and the vblk/ directory (counters, rings,
 * config, and lose in a fault-injection build: vblk_fault.c).
 *
 * Ownership and locking: the attributes exist from add_disk until
 * del_gendisk, and may run after remove tore the device side down while
 * the disk was held open. What asks the device (serial, cache_type) does
 * so under vb->lifecycle_lock and checks that the state is not GONE; the serial is read
 * once, lazily, under vb->serial_lock. Counters are per queue: each read
 * without a lock (a snapshot, not a consistent cut), reset under the queue
 * lock. Ring indices are read under the queue lock.
 */
#include <linux/blkdev.h>
#include <linux/sysfs.h>

#include "vblk.h"
#include "vblk_compat.h"
#include "vblk_fault.h"

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
	if (VBLK_CFG_READ(vb, wce, wce))
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
	if (vb->state != VBLK_GONE)
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
	if (vb->state != VBLK_GONE) {
		err = vblk_tp_write_config8(&vb->tp, VBLK_CFG(wce), want);
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
			   const struct vblk_stats *s, u64 pool_waits)
{
	return len + sysfs_emit_at(buf, len,
		"%-6s %12llu %12llu %12llu %12llu %9llu %9llu %12llu %12llu %12llu %8llu %8llu %10llu\n",
		name, s->requests, s->doorbells, s->suppressed, s->completions,
		s->max_batch, s->ring_full, s->irqs, s->spurious, s->polls,
		s->rescued, s->rekicks, pool_waits);
}

/* One line per queue and a total; writing anything resets them all. */
static ssize_t counters_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct vblk_dev *vb = vblk_from_dev(dev);
	struct vblk_stats sum;
	u64 waits, all_waits = 0;
	char name[12];
	unsigned int i;
	int len;

	len = sysfs_emit(buf, "%-6s %12s %12s %12s %12s %9s %9s %12s %12s %12s %8s %8s %10s\n",
			 "queue", "requests", "doorbells", "suppressed",
			 "completions", "max_batch", "ring_full", "irqs",
			 "spurious", "polls", "rescued", "rekicks",
			 "pool_waits");
	for (i = 0; i < vb->nr_queues; i++) {
		struct vblk_queue *q = &vb->queues[i];

		waits = vblk_pool_waits(&q->pool);
		all_waits += waits;
		snprintf(name, sizeof(name), "%u", i);
		len = vblk_emit_stats(buf, len, name, &q->stats, waits);
	}
	vblk_sum_stats(vb, &sum);
	len = vblk_emit_stats(buf, len, "total", &sum, all_waits);
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
		vblk_pool_reset_waits(&q->pool);
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

static u32 vblk_len_over(struct vblk_dev *vb)
{
	unsigned int i;
	u32 n = 0;

	for (i = 0; i < vb->nr_queues; i++)
		n += READ_ONCE(vb->queues[i].ring.len_over);
	return n;
}

static unsigned int vblk_pool_taken(struct vblk_dev *vb)
{
	unsigned int i, n = 0;

	for (i = 0; i < vb->nr_queues; i++)
		n += vblk_pool_in_use(&vb->queues[i].pool);
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
		"max_ranges %u\nzeroes_may_unmap %u\npool_entries %u\npool_in_use %u\n"
		"transport %s\n",
		(unsigned long long)vb->tp.features, vb->nr_queues - vb->nr_poll,
		vb->nr_poll, vb->ring_size, vb->depth, vb->max_segs, vb->indirect,
		vb->event_idx, vblk_irq_mode_names[vb->tp.irq_mode], vb->tp.nvec,
		vblk_complete_names[vb->complete], vb->tp.dma_api,
		vblk_state_names[READ_ONCE(vb->state)], READ_ONCE(vb->recoveries),
		vblk_len_over(vb), vb->max_ranges, vb->zeroes_may_unmap,
		vb->queues[0].pool.blocks * VBLK_POOL_BLOCK, vblk_pool_taken(vb),
		vb->tp.ops->name);
}
static DEVICE_ATTR_RO(config);

static struct attribute *vblk_attrs[] = {
	&dev_attr_counters.attr,
	&dev_attr_config.attr,
	&dev_attr_rings.attr,
	VBLK_FAULT_ATTR,	/* vblk/lose in a fault-injection build */
	NULL,
};

static const struct attribute_group vblk_attr_group = {
	.name = "vblk",
	.attrs = vblk_attrs,
};

const struct attribute_group *vblk_attr_groups[] = {
	&vblk_disk_group,
	&vblk_attr_group,
	NULL,
};
