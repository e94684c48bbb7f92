// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: from what the device offers to what the driver builds, at probe.
 *
 * Feature negotiation, the device config read and checked (capacity,
 * block sizes, segment and range-command limits: the device is not
 * trusted, a value that cannot be right is refused or replaced), how many
 * queues and how large their rings, the interrupt vectors, and each
 * queue's DMA memory with its ring laid out and handed to the device.
 *
 * Ownership and locking: probe (vblk_dev.c) calls all of this before the
 * disk exists, on a vb nobody else sees yet, so nothing here takes a lock
 * but the queue lock vblk_queue_start() needs once interrupts can run.
 * vblk_queue_start() is also called by the lifecycle code with
 * vb->lifecycle_lock held and the device stopped, to rebuild the rings
 * after a reset. The queue memory is freed by vblk_free_queues() at
 * remove, never while the device may still write into it.
 */
#include <linux/blkdev.h>
#include <linux/sizes.h>
#include <linux/virtio_config.h>
#include <uapi/linux/virtio_ring.h>

#include "vblk.h"
#include "vblk_compat.h"
#include "vblk_tp_check.h"

/* kcalloc of the queues keeps the alignment (vblk_setup_queues). */
static_assert(sizeof(struct vblk_queue) % SMP_CACHE_BYTES == 0 &&
	      sizeof(struct vblk_queue) > 192);

/* ---- config ------------------------------------------------------------- */

/* Capacity in 512-byte sectors, refused when it cannot be a real disk. */
int vblk_read_capacity(struct vblk_dev *vb, sector_t *sectors)
{
	__le64 cap;
	int err = VBLK_CFG_READ(vb, capacity, &cap);

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

static int vblk_read_u32(struct vblk_dev *vb, unsigned int off, u32 *v)
{
	__le32 x;
	int err = vblk_tp_read_config(&vb->tp, off, &x, sizeof(x));

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
	    vblk_read_u32(vb, VBLK_CFG(blk_size), &bs))
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
	if (VBLK_CFG_READ(vb, physical_block_exp, &pexp) ||
	    VBLK_CFG_READ(vb, alignment_offset, &align) ||
	    VBLK_CFG_READ(vb, min_io_size, &min_io) ||
	    VBLK_CFG_READ(vb, opt_io_size, &opt_io))
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
	    vblk_read_u32(vb, VBLK_CFG(seg_max), &seg_max))
		return -EIO;
	if (vblk_has(vb, VIRTIO_BLK_F_SIZE_MAX) &&
	    vblk_read_u32(vb, VBLK_CFG(size_max), &size_max))
		return -EIO;
	vblk_fault_size_max(&size_max);
	if (!seg_max) {
		dev_warn(dev, "seg_max 0: using 1 segment per request\n");
		seg_max = 1;
	}
	if (size_max < PAGE_SIZE) {
		dev_err(dev, "size_max %u below the page size\n", size_max);
		return -EINVAL;
	}
	size_max = min_t(size_t, size_max, vblk_tp_max_dma_size(&vb->tp));
	if (size_max < PAGE_SIZE) {
		dev_err(dev, "DMA mappings limited to %u bytes, below the page size\n",
			size_max);
		return -EINVAL;
	}
	vb->size_max = size_max;
	vblk_tp_set_dma_seg_size(&vb->tp, size_max);
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
	    (VBLK_CFG_READ(vb, max_discard_sectors, &v[0]) ||
	     VBLK_CFG_READ(vb, max_discard_seg, &v[1]) ||
	     VBLK_CFG_READ(vb, discard_sector_alignment, &v[2])))
		return -EIO;
	if (c->discard) {
		c->max_discard_sectors = le32_to_cpu(v[0]);
		c->max_discard_seg = le32_to_cpu(v[1]);
		c->discard_sector_alignment = le32_to_cpu(v[2]);
	}
	if (c->write_zeroes &&
	    (VBLK_CFG_READ(vb, max_write_zeroes_sectors, &v[0]) ||
	     VBLK_CFG_READ(vb, max_write_zeroes_seg, &v[1]) ||
	     VBLK_CFG_READ(vb, write_zeroes_may_unmap, &c->write_zeroes_may_unmap)))
		return -EIO;
	if (c->write_zeroes) {
		c->max_write_zeroes_sectors = le32_to_cpu(v[0]);
		c->max_write_zeroes_seg = le32_to_cpu(v[1]);
	}
	if (c->secure_erase &&
	    (VBLK_CFG_READ(vb, max_secure_erase_sectors, &v[0]) ||
	     VBLK_CFG_READ(vb, max_secure_erase_seg, &v[1]) ||
	     VBLK_CFG_READ(vb, secure_erase_sector_alignment, &v[2])))
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

int vblk_read_limits(struct vblk_dev *vb, struct vblk_limits *l)
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
	if (vblk_has(vb, VIRTIO_BLK_F_CONFIG_WCE) && VBLK_CFG_READ(vb, wce, &wce))
		return -EIO;
	l->write_cache = vblk_has(vb, VIRTIO_BLK_F_FLUSH) && wce;
	return 0;
}

/* ---- features and queues ------------------------------------------------ */

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
	if (vblk_tp_read_config(&vb->tp, VBLK_CFG_ZONED_MODEL, &model, 1)) {
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
	u64 offered = vb->tp.ops->get_features(&vb->tp);
	const char *why;
	u64 accepted;
	int err;

	err = vblk_accept_features(offered, vblk_use_indirect,
				   vblk_use_event_idx, &accepted, &why);
	if (err) {
		dev_err(vblk_dev_of(vb), "%s\n", why);
		return err;
	}
	err = vblk_check_zoned(vb, offered);
	if (err)
		return err;
	err = vblk_tp_set_features(&vb->tp, accepted);
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
		if (VBLK_CFG_READ(vb, num_queues, &nq))
			return -EIO;
		dev_q = le16_to_cpu(nq);
		if (!dev_q) {
			dev_warn(dev, "device reports 0 queues: using 1\n");
			dev_q = 1;
		}
	}
	if (dev_q > vb->tp.ops->num_queues(&vb->tp)) {
		dev_warn(dev, "config says %u queues, transport has %u\n",
			 dev_q, vb->tp.ops->num_queues(&vb->tp));
		dev_q = vb->tp.ops->num_queues(&vb->tp);
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
		u16 max = vb->tp.ops->queue_max_size(&vb->tp, i);

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

int vblk_setup_irqs(struct vblk_dev *vb)
{
	enum vblk_irq_mode mode = READ_ONCE(vblk_irq_mode_param);
	unsigned int irq_q = vb->nr_queues - vb->nr_poll;
	struct vblk_transport *t = &vb->tp;
	int err = -ENODEV;

	/* A transport with one line has no other mode to offer. */
	if (t->one_line && mode != VBLK_IRQ_AUTO && mode != VBLK_IRQ_INTX) {
		dev_info(vblk_dev_of(vb), "irq_mode %s: the %s transport has one interrupt line: using intx\n",
			 vblk_irq_mode_names[mode], t->ops->name);
		mode = VBLK_IRQ_INTX;
	}
	if (!t->one_line && (mode == VBLK_IRQ_AUTO || mode == VBLK_IRQ_MSIX))
		err = t->ops->alloc_irqs(t, VBLK_IRQ_MSIX, irq_q);
	if (!t->one_line && err &&
	    (mode == VBLK_IRQ_AUTO || mode == VBLK_IRQ_SHARED))
		err = t->ops->alloc_irqs(t, VBLK_IRQ_SHARED, irq_q);
	if (err && (mode == VBLK_IRQ_AUTO || mode == VBLK_IRQ_INTX))
		err = t->ops->alloc_irqs(t, VBLK_IRQ_INTX, irq_q);
	if (err) {
		dev_err(vblk_dev_of(vb), "no interrupts in mode %s (%d)\n",
			vblk_irq_mode_names[mode], err);
		return err;
	}
	vb->complete = READ_ONCE(vblk_complete_param);
	if (vb->complete == VBLK_COMPLETE_AUTO)
		vb->complete = vb->tp.irq_mode == VBLK_IRQ_MSIX ?
			       VBLK_COMPLETE_HARDIRQ : VBLK_COMPLETE_SOFTIRQ;
	return 0;
}

/* Tags per chunk is a power of two, so finding a tag is shift and mask. */
static void vblk_size_tag_chunks(struct vblk_dev *vb)
{
	unsigned int per;

	vb->tag_stride = sizeof(struct vblk_tag_dma);
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

	vblk_dma_free(&vb->tp, q->ring_bytes, q->ring_mem, q->ring_dma);
	for (i = 0; q->tag_chunks && i < vb->nr_chunks; i++)
		vblk_dma_free(&vb->tp, vb->chunk_bytes, q->tag_chunks[i].mem,
			      q->tag_chunks[i].dma);
	kfree(q->tag_chunks);
	kfree(q->slot);
	vblk_pool_free(&vb->tp, &q->pool);
	q->ring_mem = NULL;
	q->tag_chunks = NULL;
	q->slot = NULL;
}

/*
 * The overflow pool's size in entries (vblk_pool_alloc makes it at least
 * what the largest request needs). By default (pool_entries=auto): runs
 * for as many requests of 128 KiB built from page-sized buffers (34
 * entries, 40 in blocks) as fit one allocation of VBLK_TAG_CHUNK_BYTES of
 * DMA table (the tags' bound on contiguous pages), at most one per tag:
 * 102 with 4 KiB pages. The in-tree driver allocates each large request's
 * table as it goes, so it keeps as many in flight as the application asks;
 * a pool sized for one 254-segment request (the old default, 256 entries)
 * had room for six 128 KiB requests of pages per queue and sent the rest
 * back (BLK_STS_RESOURCE): the host saw 35 requests in flight per queue
 * where virtio_blk kept 61 (docs/benchmark.md, "Round three, Part 2").
 * Cost per queue at depth >= 102 with 4 KiB pages: 4080 entries, 64 KiB
 * of DMA table and 128 KiB of scatterlist, all at bind.
 */
static unsigned int vblk_pool_size(struct vblk_dev *vb)
{
	unsigned int want = READ_ONCE(vblk_pool_entries);
	unsigned int segs, run, runs;

	if (want != VBLK_POOL_AUTO)
		return want;
	segs = min_t(unsigned int, vb->max_segs,
		     max_t(unsigned long, SZ_128K / PAGE_SIZE, 1));
	run = round_up(segs + 2, VBLK_POOL_BLOCK);
	runs = VBLK_TAG_CHUNK_BYTES / sizeof(struct vblk_desc) / run;
	return min(vb->depth, max(runs, 1U)) * run;
}

static int vblk_alloc_queue_mem(struct vblk_dev *vb, struct vblk_queue *q)
{
	unsigned int i;

	size_t status_off = ALIGN(vblk_ring_mem_size(vb->ring_size),
				  SMP_CACHE_BYTES);

	/* The status bytes mostly fit in the ring's last page, for free. */
	q->ring_bytes = PAGE_ALIGN(status_off + vb->depth);
	q->ring_mem = vblk_dma_alloc(&vb->tp, q->ring_bytes, &q->ring_dma);
	q->status = q->ring_mem ? (u8 *)q->ring_mem + status_off : NULL;
	q->status_dma = q->ring_dma + status_off;
	q->slot = kcalloc(vb->ring_size, sizeof(*q->slot), GFP_KERNEL);
	q->tag_chunks = kcalloc(vb->nr_chunks, sizeof(*q->tag_chunks),
				GFP_KERNEL);
	if (!q->ring_mem || !q->slot || !q->tag_chunks)
		goto nomem;
	if (vblk_pool_alloc(&vb->tp, &q->pool, vblk_pool_size(vb),
			    vb->tbl_entries))
		goto nomem;
	for (i = 0; i < vb->nr_chunks; i++) {
		struct vblk_dma_chunk *c = &q->tag_chunks[i];

		c->mem = vblk_dma_alloc(&vb->tp, vb->chunk_bytes, &c->dma);
		if (!c->mem)
			goto nomem;
	}
	return 0;
nomem:
	dev_err(vblk_dev_of(vb), "queue %u: no memory for a %u-entry ring, %u tags of %u bytes and a pool of %u entries\n",
		q->index, vb->ring_size, vb->depth, vb->tag_stride,
		max(vblk_pool_size(vb), vb->tbl_entries));
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
	u16 vector = VBLK_NO_VECTOR;
	unsigned long flags;
	int err;

	memset(q->ring_mem, 0, q->ring_bytes);
	spin_lock_irqsave(&q->lock, flags);
	err = vblk_ring_init(&q->ring, q->ring_mem, q->ring_dma, vb->ring_size,
			     q->slot, vb->event_idx, vb->indirect);
	/* A hardware device orders its accesses as the platform's DMA does. */
	if (!err)
		vblk_ring_set_platform_order(&q->ring,
					     vblk_has(vb, VIRTIO_F_ORDER_PLATFORM));
	if (!err && q->polled)
		vblk_ring_disable_cb(&q->ring);
	spin_unlock_irqrestore(&q->lock, flags);
	if (err)
		return err;
	if (!q->polled && vb->tp.irq_mode == VBLK_IRQ_MSIX)
		vector = q->index + 1;
	else if (!q->polled && vb->tp.irq_mode == VBLK_IRQ_SHARED)
		vector = 1;
	err = vb->tp.ops->setup_queue(&vb->tp, q->index, vb->ring_size,
				      q->ring.desc_addr, q->ring.avail_addr,
				      q->ring.used_addr, vector, &q->doorbell,
				      &q->doorbell32);
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

void vblk_free_queues(struct vblk_dev *vb, unsigned int n)
{
	while (n--) {
		vblk_queue_offline(&vb->queues[n]);
		vblk_free_queue_mem(vb, &vb->queues[n]);
	}
	kfree(vb->queues);
	vb->queues = NULL;
}

int vblk_setup_queues(struct vblk_dev *vb)
{
	unsigned int i;
	int err;

	vblk_size_tag_chunks(vb);
	/*
	 * The array keeps struct vblk_queue's cache-line alignment: its size
	 * is a multiple of the line and over 192 bytes, so kmalloc serves it
	 * from a power-of-two cache (or whole pages), whose objects are
	 * naturally aligned (the static_assert at the top).
	 */
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

/* Transport up, device acknowledged, features agreed, queues counted. */
int vblk_start_device(struct vblk_dev *vb)
{
	int err;

	err = vblk_tp_begin(&vb->tp);
	if (!err)
		err = vblk_negotiate(vb);
	if (!err)
		err = vblk_count_queues(vb);
	if (!err)
		err = vblk_pick_ring_size(vb);
	return err;
}
