// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: blk-mq operations.
 *
 * A request becomes a virtio-blk header, its data segments and a status
 * byte, described by a descriptor table in the tag's DMA storage; all of
 * that is prepared before the queue lock is taken. Under the lock the
 * request goes on the ring and, at the end of a batch, kick_prepare decides
 * whether the device wants a doorbell; the doorbell is written after the
 * lock is dropped (vblk_notify_in_lock moves it back inside, for the A/B of
 * seed thread 000). Nothing here allocates memory.
 *
 * Locking: the queue lock around the ring (include/vblk.h); a request's
 * PDU and tag storage belong to it from queue_rq to its completion. The
 * request timeout hands what stays unanswered to vb->events->unanswered
 * (the lifecycle code's policy), never calling it by name.
 */
#include <linux/blk-mq.h>
#include <linux/ctype.h>
#include <linux/scatterlist.h>

#include "vblk.h"
#include "vblk_compat.h"

static_assert(sizeof(struct vblk_range) ==
	      sizeof(struct virtio_blk_discard_write_zeroes));
/* The range table sits in descriptor slots. */
static_assert(sizeof(struct vblk_range) == sizeof(struct vblk_desc));
/* A tag's DMA storage is one cache line: 256 tags in four pages. */
static_assert(sizeof(struct vblk_tag_dma) == 64);

/* Requests prepared outside the lock and put on the ring in one hold. */
#define VBLK_QUEUE_RQS_BATCH	32

/* Written by the driver before the device may write the status byte. */
#define VBLK_STATUS_UNSET	0xff

/*
 * The request PDU: what the driver keeps about an in-flight request. It is
 * kept to 48 bytes: blk-mq allocates requests in 64-byte steps, and a
 * request of 320 bytes (with the 248-272 of struct request) packs 204 to a
 * 64 KiB block, where one of 384 (the in-tree driver's) packs 170.
 */
struct vblk_req {
	blk_status_t status;
	bool reclaimed;		/* taken back from a stopped device */
	bool requeue;		/* ... and to be issued again */
	u8 retries;		/* requeues after a device recovery */
	bool one_buf;		/* data mapped as one buffer: sg[0]'s DMA fields */
	u8 pt_op;		/* DRV_IN/OUT: VBLK_PT_OP_*, 0: vblk's GET_ID */
	u16 timeouts;		/* request timeouts since it was issued */
	u16 nents;		/* scatterlist entries (before DMA mapping) */
	u16 ndesc;		/* descriptors in the request's table */
	u16 pool_at;		/* first entry of its pool run ... */
	u16 pool_n;		/* ... and its length; 0: the tag's own table */
	struct scatterlist sg[VBLK_INLINE_SEGS];
};

static_assert(sizeof(struct vblk_req) <= 48);

unsigned int vblk_mq_cmd_size(struct vblk_dev *vb)
{
	return sizeof(struct vblk_req);
}

static struct vblk_tag_dma *vblk_tag(struct vblk_queue *q, unsigned int tag,
				     dma_addr_t *addr)
{
	struct vblk_dev *vb = q->vb;
	struct vblk_dma_chunk *c = &q->tag_chunks[tag >> vb->chunk_shift];
	size_t off = (size_t)(tag & ((1U << vb->chunk_shift) - 1)) *
		     vb->tag_stride;

	if (addr)
		*addr = c->dma + off;
	return c->mem + off;
}

/* Where the request's descriptor table is (the tag's, or a pool run). */
static struct vblk_desc *vblk_rq_tbl(struct vblk_queue *q, struct request *rq,
				     dma_addr_t *addr)
{
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);
	struct vblk_tag_dma *t;
	dma_addr_t base;

	if (vr->pool_n)
		return vblk_pool_tbl(&q->pool, vr->pool_at, addr);
	t = vblk_tag(q, rq->tag, &base);
	*addr = base + offsetof(struct vblk_tag_dma, tbl);
	return t->tbl;
}

static struct scatterlist *vblk_rq_sg(struct vblk_queue *q,
				      struct vblk_req *vr)
{
	return vr->pool_n ? vblk_pool_sg(&q->pool, vr->pool_at) : vr->sg;
}

/*
 * A table of need entries: the tag's own when it is big enough, else a run
 * of the queue's pool. With none free the request goes back to blk-mq as
 * BLK_STS_RESOURCE, which runs the queue again by itself (at once, or 3 ms
 * later when a restart is pending), so the request can never be left
 * waiting; a run given back while someone waits runs the queue at once.
 * BLK_STS_DEV_RESOURCE would leave the rerun to blk-mq's restart on
 * completion, which its batched completions do not make, and stopping the
 * queue instead raced with a run given back in between (a request was
 * left waiting on a running queue, and a removal then waited for it).
 */
static blk_status_t vblk_take_table(struct vblk_queue *q, struct vblk_req *vr,
				    unsigned int need)
{
	unsigned int at, n;

	if (need <= VBLK_INLINE_DESCS)
		return BLK_STS_OK;
	n = vblk_pool_get(&q->pool, need, &at);
	if (!n)
		return BLK_STS_RESOURCE;
	vr->pool_n = n;
	vr->pool_at = at;
	return BLK_STS_OK;
}

static void vblk_give_table(struct vblk_queue *q, struct vblk_req *vr)
{
	bool waited;

	if (!vr->pool_n)
		return;
	waited = vblk_pool_put(&q->pool, vr->pool_at, vr->pool_n);
	vr->pool_n = 0;
	if (waited)
		blk_mq_run_hw_queue(q->hctx, true);
}

static dma_addr_t vblk_status_addr(struct vblk_queue *q, struct request *rq)
{
	return q->status_dma + rq->tag;
}

static enum dma_data_direction vblk_rq_dir(struct request *rq)
{
	return rq_data_dir(rq) == WRITE ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
}

/*
 * A passthrough request (REQ_OP_DRV_IN/OUT) carries its operation in the
 * PDU (vblk_mq_pt_init), its sector in the request's position and its
 * length in its bytes; pt_op 0 is vblk's own GET_ID (vblk_mq_get_serial).
 * The direction must match: vblk_pt.c picks it, this makes sure.
 */
static int vblk_pt_type(struct request *rq)
{
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);
	bool in = req_op(rq) == REQ_OP_DRV_IN;

	switch (vr->pt_op) {
	case 0:
	case VBLK_PT_OP_GET_ID:
		return in ? VIRTIO_BLK_T_GET_ID : -1;
	case VBLK_PT_OP_READ:
		return in ? VIRTIO_BLK_T_IN : -1;
	case VBLK_PT_OP_WRITE:
		return in ? -1 : VIRTIO_BLK_T_OUT;
	case VBLK_PT_OP_FLUSH:
		return in ? -1 : VIRTIO_BLK_T_FLUSH;
	case VBLK_PT_OP_DISCARD:
		return in ? -1 : VIRTIO_BLK_T_DISCARD;
	case VBLK_PT_OP_WRITE_ZEROES:
		return in ? -1 : VIRTIO_BLK_T_WRITE_ZEROES;
	default:
		return -1;
	}
}

static int vblk_rq_type(struct request *rq)
{
	switch (req_op(rq)) {
	case REQ_OP_READ:
		return VIRTIO_BLK_T_IN;
	case REQ_OP_WRITE:
		return VIRTIO_BLK_T_OUT;
	case REQ_OP_FLUSH:
		return VIRTIO_BLK_T_FLUSH;
	case REQ_OP_DISCARD:
		return VIRTIO_BLK_T_DISCARD;
	case REQ_OP_WRITE_ZEROES:
		return VIRTIO_BLK_T_WRITE_ZEROES;
	case REQ_OP_SECURE_ERASE:
		return VIRTIO_BLK_T_SECURE_ERASE;
	case REQ_OP_DRV_IN:
	case REQ_OP_DRV_OUT:
		return vblk_pt_type(rq);
	default:
		return -1;
	}
}

/*
 * The common 4k direct I/O: one segment in one bio_vec. It is mapped as it
 * is, without building a scatterlist; only its DMA address and length are
 * kept, in sg[0]'s DMA fields.
 */
static bool vblk_map_one_buf(struct vblk_queue *q, struct request *rq,
			     blk_status_t *st)
{
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);
	struct scatterlist *s = &vr->sg[0];
	struct bio_vec bv;
	dma_addr_t addr;

	if (rq->bio != rq->biotail || (rq->rq_flags & RQF_SPECIAL_PAYLOAD))
		return false;
	bv = req_bvec(rq);
	if (bv.bv_len != blk_rq_bytes(rq))
		return false;
	if (vblk_dma_map_page(&q->vb->tp, bv.bv_page, bv.bv_offset, bv.bv_len,
			      vblk_rq_dir(rq), &addr)) {
		*st = BLK_STS_RESOURCE;
		return true;
	}
	sg_dma_address(s) = addr;
	sg_dma_len(s) = bv.bv_len;
	vr->one_buf = true;
	vr->nents = 1;
	*st = BLK_STS_OK;
	return true;
}

/* segs: the request's segment count, which its scatterlist can hold. */
static blk_status_t vblk_map_data(struct vblk_queue *q, struct request *rq,
				  unsigned int segs, int *mapped)
{
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);
	struct scatterlist *sg = vblk_rq_sg(q, vr);
	blk_status_t st;

	*mapped = 0;
	if (!segs)
		return BLK_STS_OK;
	if (segs == 1 && vblk_map_one_buf(q, rq, &st)) {
		*mapped = vr->nents;
		return st;
	}
	sg_init_table(sg, segs);
	vr->nents = vblk_rq_map_sg(rq, sg);
	*mapped = vblk_dma_map_sg(&q->vb->tp, sg, vr->nents, vblk_rq_dir(rq));
	if (!*mapped) {
		vr->nents = 0;
		return BLK_STS_RESOURCE;
	}
	return BLK_STS_OK;
}

/* Undo the preparation: unmap the data, give back a pool run. */
static void vblk_unmap_data(struct vblk_queue *q, struct request *rq)
{
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);

	if (vr->one_buf)
		vblk_dma_unmap_page(&q->vb->tp, sg_dma_address(vr->sg),
				    sg_dma_len(vr->sg), vblk_rq_dir(rq));
	else if (vr->nents)
		vblk_dma_unmap_sg(&q->vb->tp, vblk_rq_sg(q, vr), vr->nents,
				  vblk_rq_dir(rq));
	vr->nents = 0;
	vr->one_buf = false;
	vblk_give_table(q, vr);
}

static bool vblk_is_range_cmd(int type)
{
	return type == VIRTIO_BLK_T_DISCARD ||
	       type == VIRTIO_BLK_T_WRITE_ZEROES ||
	       type == VIRTIO_BLK_T_SECURE_ERASE;
}

/*
 * The range table of a discard, write zeroes or secure erase: one entry per
 * bio, contiguous bios merged (a request merged the ordinary way is one
 * range, only discard's multi-range merges need more). The block layer
 * keeps a request within max_discard_segments, so a full table is a bug
 * here, not something the device did. A passthrough request has no bio:
 * its one range is its position and length (vblk_mq_pt_init).
 */
static blk_status_t vblk_fill_ranges(struct vblk_queue *q, struct request *rq,
				     struct vblk_range *r, unsigned int cap,
				     unsigned int *n)
{
	struct vblk_range_table t = { r, 0, cap };
	u32 flags = 0;
	struct bio *bio;
	int err = 0;

	if (blk_rq_is_passthrough(rq)) {
		struct vblk_req *vr = blk_mq_rq_to_pdu(rq);

		if (vr->pt_op == VBLK_PT_OP_WRITE_ZEROES &&
		    !(rq->cmd_flags & REQ_NOUNMAP))
			flags = VBLK_RANGE_F_UNMAP;
		if (cap)
			err = vblk_range_add(&t, blk_rq_pos(rq),
					     blk_rq_sectors(rq), flags);
		goto out;
	}
	if (req_op(rq) == REQ_OP_WRITE_ZEROES && !(rq->cmd_flags & REQ_NOUNMAP))
		flags = VBLK_RANGE_F_UNMAP;
	__rq_for_each_bio(bio, rq) {
		err = vblk_range_add(&t, bio->bi_iter.bi_sector, bio_sectors(bio),
				     flags);
		if (err)
			break;
	}
out:
	if (err || !t.n) {
		dev_err_ratelimited(vblk_dev_of(q->vb),
				    "queue %u: %s of %u sectors at %llu does not fit %u ranges (%d)\n",
				    q->index, blk_op_str(req_op(rq)),
				    blk_rq_sectors(rq),
				    (unsigned long long)blk_rq_pos(rq), t.cap, err);
		return BLK_STS_IOERR;
	}
	*n = t.n;
	return BLK_STS_OK;
}

/*
 * Header, range table (device-readable), status: tbl[0..2], the range
 * table from tbl[VBLK_RANGE_DESCS] on. Always in a pool run: the tag's own
 * table has no room for ranges. A request has at most one range per bio,
 * and blk-mq counts a discard's bios as its segments.
 */
static blk_status_t vblk_prep_range_cmd(struct vblk_queue *q, struct request *rq,
					dma_addr_t hdr)
{
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);
	unsigned int cap = min_t(unsigned int, blk_rq_nr_discard_segments(rq),
				 q->vb->max_ranges);
	struct vblk_range *r;
	struct vblk_desc *tbl;
	dma_addr_t addr;
	unsigned int nr;
	blk_status_t st;

	st = vblk_take_table(q, vr, max(VBLK_RANGE_DESCS + cap,
					VBLK_INLINE_DESCS + 1));
	if (st)
		return st;
	tbl = vblk_rq_tbl(q, rq, &addr);
	r = (struct vblk_range *)&tbl[VBLK_RANGE_DESCS];
	st = vblk_fill_ranges(q, rq, r, cap, &nr);
	if (st)
		return st;
	vblk_desc_set(&tbl[0], hdr, sizeof(struct vblk_req_hdr), false);
	vblk_desc_set(&tbl[1], addr + VBLK_RANGE_DESCS * sizeof(*tbl),
		      nr * sizeof(*r), false);
	vblk_desc_set(&tbl[2], vblk_status_addr(q, rq), 1, true);
	vr->ndesc = VBLK_RANGE_DESCS;
	return BLK_STS_OK;
}

/* Header, data segments, status. */
static blk_status_t vblk_prep_data_cmd(struct vblk_queue *q, struct request *rq,
				       dma_addr_t hdr)
{
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);
	bool dev_writes = vblk_rq_dir(rq) == DMA_FROM_DEVICE;
	unsigned int segs = min_t(unsigned int, blk_rq_nr_phys_segments(rq),
				  q->vb->max_segs);
	struct scatterlist *s;
	struct vblk_desc *tbl;
	dma_addr_t addr;
	int mapped, i, n = 0;
	blk_status_t st;

	st = vblk_take_table(q, vr, segs + 2);
	if (st)
		return st;
	st = vblk_map_data(q, rq, segs, &mapped);
	if (st)
		return st;
	tbl = vblk_rq_tbl(q, rq, &addr);
	vblk_desc_set(&tbl[n++], hdr, sizeof(struct vblk_req_hdr), false);
	if (vr->one_buf)	/* no scatterlist to walk: see vblk_map_one_buf */
		vblk_desc_set(&tbl[n++], sg_dma_address(vr->sg),
			      sg_dma_len(vr->sg), dev_writes);
	else
		for_each_sg(vblk_rq_sg(q, vr), s, mapped, i) {
			vblk_fault_seg_len(&q->vb->fault, sg_dma_len(s),
					   q->vb->size_max);
			vblk_desc_set(&tbl[n++], sg_dma_address(s),
				      sg_dma_len(s), dev_writes);
		}
	vblk_desc_set(&tbl[n++], vblk_status_addr(q, rq), 1, true);
	vr->ndesc = n;
	return BLK_STS_OK;
}

/*
 * Everything that can be done without the queue lock: the header, the
 * status byte, the DMA mapping and the descriptor table, and then the
 * request's start. A request that fails here is not started and can be
 * handed back as is; one that then finds no room on the ring is started
 * (see vblk_ring_put).
 */
static blk_status_t vblk_prep_rq(struct vblk_queue *q, struct request *rq)
{
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);
	struct vblk_tag_dma *t;
	dma_addr_t base;
	blk_status_t st;
	int type;

	if (unlikely(READ_ONCE(q->vb->state) == VBLK_DEAD))
		return BLK_STS_IOERR;
	if (!(rq->rq_flags & RQF_DONTPREP)) {
		/* First issue; a requeued request keeps its retry count. */
		rq->rq_flags |= RQF_DONTPREP;
		vr->retries = 0;
	}
	type = vblk_rq_type(rq);
	if (type < 0)
		return BLK_STS_NOTSUPP;
	t = vblk_tag(q, rq->tag, &base);
	base += offsetof(struct vblk_tag_dma, hdr);
	/* Nothing mapped, no pool run: what vblk_unmap_data() undoes. */
	vr->nents = 0;
	vr->one_buf = false;
	vr->pool_n = 0;
	if (vblk_is_range_cmd(type))
		st = vblk_prep_range_cmd(q, rq, base);
	else
		st = vblk_prep_data_cmd(q, rq, base);
	if (st) {
		vblk_unmap_data(q, rq);
		return st;
	}
	t->hdr.type = cpu_to_le32(type);
	t->hdr.ioprio = cpu_to_le32(req_get_ioprio(rq));
	t->hdr.sector = cpu_to_le64(type == VIRTIO_BLK_T_IN ||
				    type == VIRTIO_BLK_T_OUT ?
				    blk_rq_pos(rq) : 0);
	q->status[rq->tag] = VBLK_STATUS_UNSET;
	vr->reclaimed = false;
	vr->requeue = false;
	vr->timeouts = 0;
	blk_mq_start_request(rq);
	return BLK_STS_OK;
}

/*
 * Under the queue lock: put a prepared, started request on the ring. It
 * was started before the lock was taken (as the in-tree driver does): the
 * start (timer, state, statistics) then runs with interrupts on, not in
 * the section every submitter and the harvest contend for. A request the
 * ring refuses is started but not given to the device: blk-mq takes it
 * back as started on BLK_STS_DEV_RESOURCE / BLK_STS_RESOURCE (queue_rq),
 * and queue_rqs hands it back with blk_mq_requeue_request(). The request
 * timeout cannot meet it in between: its timer was armed just now, and a
 * recovery quiesces the queue (waiting out queue_rq) before it reclaims.
 */
static int vblk_ring_put(struct vblk_queue *q, struct request *rq)
{
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);
	dma_addr_t addr;
	struct vblk_desc *tbl = vblk_rq_tbl(q, rq, &addr);
	int err;

	err = vblk_ring_add(&q->ring, rq->tag, tbl, addr, vr->ndesc, rq);
	if (err)
		return err;
	q->stats.requests++;
	return 0;
}

/*
 * Under the queue lock: publish what was added, and ask whether a doorbell
 * is wanted (the ring's kick_prepare does both, with one barrier pair).
 * With irq_coalesce the armed interrupt then waits for its share of the
 * new requests too: the re-arm usually comes when few are in flight.
 */
static bool vblk_kick_prepare(struct vblk_queue *q)
{
	unsigned int pct = READ_ONCE(vblk_irq_coalesce);
	bool kick = vblk_ring_kick_prepare(&q->ring);

	if (pct && !q->polled)
		vblk_ring_delay_cb(&q->ring, pct);
	if (kick) {
		q->stats.doorbells++;
		return true;
	}
	q->stats.suppressed++;
	return false;
}

/* Drop the queue lock and ring the doorbell if wanted, in the chosen order. */
static void vblk_unlock_kick(struct vblk_queue *q, bool kick,
			     unsigned long flags)
	__releases(&q->lock)
{
	if (kick && READ_ONCE(vblk_notify_in_lock)) {
		vblk_notify(q);
		spin_unlock_irqrestore(&q->lock, flags);
		return;
	}
	spin_unlock_irqrestore(&q->lock, flags);
	if (kick)
		vblk_notify(q);
}

static blk_status_t vblk_put_failed(struct vblk_queue *q,
				    struct blk_mq_hw_ctx *hctx, int err)
{
	switch (err) {
	case -ENOSPC:
		/* Restarted by the harvest that frees descriptors. */
		q->stats.ring_full++;
		blk_mq_stop_hw_queue(hctx);
		return BLK_STS_DEV_RESOURCE;
	case -EIO:
		/* A broken ring: recovery is on its way; retry after it. */
		if (READ_ONCE(q->vb->state) == VBLK_DEAD)
			return BLK_STS_IOERR;
		return BLK_STS_RESOURCE;
	default:
		dev_err_ratelimited(vblk_dev_of(q->vb),
				    "queue %u: ring refused a request (%d)\n",
				    q->index, err);
		return BLK_STS_IOERR;
	}
}

static blk_status_t vblk_queue_rq(struct blk_mq_hw_ctx *hctx,
				  const struct blk_mq_queue_data *bd)
{
	struct vblk_queue *q = hctx->driver_data;
	struct request *rq = bd->rq;
	unsigned long flags;
	blk_status_t st;
	bool kick = false;
	int err;

	st = vblk_prep_rq(q, rq);
	if (st)
		return st;

	spin_lock_irqsave(&q->lock, flags);
	err = vblk_ring_put(q, rq);
	if (err) {
		/* What this batch published already, commit_rqs kicks. */
		st = vblk_put_failed(q, hctx, err);
		spin_unlock_irqrestore(&q->lock, flags);
		vblk_unmap_data(q, rq);
		return st;
	}
	if (bd->last)
		kick = vblk_kick_prepare(q);
	vblk_unlock_kick(q, kick, flags);
	return BLK_STS_OK;
}

/* blk-mq promised more requests with !bd->last, then had none. */
static void vblk_commit_rqs(struct blk_mq_hw_ctx *hctx)
{
	struct vblk_queue *q = hctx->driver_data;
	unsigned long flags;
	bool kick;

	spin_lock_irqsave(&q->lock, flags);
	kick = vblk_kick_prepare(q);
	vblk_unlock_kick(q, kick, flags);
}

/*
 * Put up to n prepared, started requests of one queue on its ring in one
 * lock hold with at most one doorbell. Those the ring cannot take are
 * started already, so they cannot go back on the plug's list (blk-mq would
 * issue them through queue_rq, which starts them again): they go to
 * blk-mq's requeue list, as the in-tree driver's do, and the requeue work
 * issues them through queue_rq, which stops the queue if the ring is
 * still full (restarted by the harvest that frees room).
 */
static void vblk_submit_batch(struct vblk_queue *q, struct request **rqs,
			      unsigned int n)
{
	unsigned long flags;
	unsigned int i, done = 0;
	bool kick = false;

	spin_lock_irqsave(&q->lock, flags);
	for (i = 0; i < n; i++) {
		if (vblk_ring_put(q, rqs[i]))
			break;
		done++;
	}
	if (i < n)
		q->stats.ring_full++;
	if (done)
		kick = vblk_kick_prepare(q);
	vblk_unlock_kick(q, kick, flags);

	for (; i < n; i++) {
		vblk_unmap_data(q, rqs[i]);
		blk_mq_requeue_request(rqs[i], i == n - 1);
	}
}

/*
 * A plug's worth of requests, possibly for several queues. Requests are
 * grouped by queue in the order they come; one that cannot be prepared
 * (not started) goes back to blk-mq on the list, which issues it one by
 * one through queue_rq; one the ring refuses is requeued (above).
 */
static void vblk_queue_rqs(VBLK_QUEUE_RQS_ARGS)
{
	VBLK_RQ_LIST_T requeue = VBLK_RQ_LIST_INIT;
	struct request *batch[VBLK_QUEUE_RQS_BATCH];
	struct vblk_queue *cur = NULL;
	struct request *rq;
	unsigned int n = 0;

	while ((rq = vblk_rq_list_pop(rqlist))) {
		struct vblk_queue *q = rq->mq_hctx->driver_data;

		if (n && (q != cur || n == VBLK_QUEUE_RQS_BATCH)) {
			vblk_submit_batch(cur, batch, n);
			n = 0;
		}
		cur = q;
		/*
		 * The tag iterators (timeout, recovery) find a request through
		 * its tag's slot; 6.1 fills it for queue_rq only.
		 */
		rq->mq_hctx->tags->rqs[rq->tag] = rq;
		if (vblk_prep_rq(q, rq) != BLK_STS_OK) {
			vblk_rq_list_add(&requeue, rq);
			continue;
		}
		batch[n++] = rq;
	}
	if (n)
		vblk_submit_batch(cur, batch, n);
	vblk_rq_list_move(rqlist, &requeue);
}

static blk_status_t vblk_status(u8 status)
{
	switch (status) {
	case VIRTIO_BLK_S_OK:
		return BLK_STS_OK;
	case VIRTIO_BLK_S_UNSUPP:
		return BLK_STS_NOTSUPP;
	default:
		return BLK_STS_IOERR;
	}
}

static void vblk_unmap_batch(struct io_comp_batch *iob)
{
	struct request *rq;

	rq_list_for_each(&iob->req_list, rq)
		vblk_unmap_data(rq->mq_hctx->driver_data, rq);
	blk_mq_end_request_batch(iob);
}

/* Under the queue lock, with the used element: the status byte the device wrote. */
u8 vblk_mq_used_status(struct vblk_queue *q, void *token)
{
	struct request *rq = token;

	return READ_ONCE(q->status[rq->tag]);
}

/*
 * Called by the harvest, outside the queue lock, for each used element,
 * with the status byte read under the lock (vblk_mq_used_status).
 * A successful read or write joins iob (when there is one): blk-mq then
 * frees the batch's tags together. Passthrough requests (GET_ID) and
 * failures take the one-by-one path, which carries their status.
 */
void vblk_mq_complete_used(struct vblk_queue *q, void *token, u8 status,
			   struct io_comp_batch *iob)
{
	struct request *rq = token;
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);

	vr->status = vblk_status(status);
	if (unlikely(status != VIRTIO_BLK_S_OK && status != VIRTIO_BLK_S_UNSUPP))
		dev_err_ratelimited(vblk_dev_of(q->vb),
				    "queue %u: I/O error, status %u, sector %llu\n",
				    q->index, status,
				    (unsigned long long)blk_rq_pos(rq));
	if (vr->status == BLK_STS_OK && !blk_rq_is_passthrough(rq) &&
	    blk_mq_add_to_batch(rq, iob, false, vblk_unmap_batch))
		return;
	blk_mq_complete_request(rq);
}

#ifdef CONFIG_VBLK_FAULT_INJECT
/* Test hook: the device failed this request (it wrote an error status). */
void vblk_mq_fault_status(struct vblk_queue *q, void *token)
{
	struct request *rq = token;

	WRITE_ONCE(q->status[rq->tag], VIRTIO_BLK_S_IOERR);
}
#endif

/* End what a harvest gathered in iob, and leave iob empty for more. */
void vblk_mq_flush_batch(struct io_comp_batch *iob)
{
	if (!iob || vblk_rq_list_empty(&iob->req_list))
		return;
	iob->complete(iob);
	*iob = (struct io_comp_batch){};
}

static void vblk_complete_rq(struct request *rq)
{
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);

	vblk_unmap_data(rq->mq_hctx->driver_data, rq);
	if (vr->requeue) {
		vr->requeue = false;
		blk_mq_requeue_request(rq, true);
		return;
	}
	blk_mq_end_request(rq, vr->status);
}

static int vblk_init_hctx(struct blk_mq_hw_ctx *hctx, void *data,
			  unsigned int index)
{
	struct vblk_dev *vb = data;

	hctx->driver_data = &vb->queues[index];
	vb->queues[index].hctx = hctx;
	return 0;
}

static int vblk_poll(struct blk_mq_hw_ctx *hctx, struct io_comp_batch *iob)
{
	struct vblk_queue *q = hctx->driver_data;

	/* blk-mq ends what joined iob once the poll returns. */
	return vblk_queue_harvest(q, q->ring.num, iob);
}

/*
 * Seconds a started request has waited for its answer: its request
 * timeouts so far times its timeout (the timeout and the reclaim after a
 * reset both judge by it). In 64 bits: with dev_loss_tmo 0 the count may
 * reach U16_MAX timeouts of up to 600 s.
 */
static unsigned int vblk_rq_waited_s(struct request *rq)
{
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);

	return div_u64((u64)vr->timeouts * jiffies_to_msecs(rq->timeout), 1000);
}

/*
 * The device owns the request's buffers until it answers; taking them back
 * needs a device reset. First look at the ring: the answer may be there
 * with its interrupt held back (irq_coalesce) or lost, and the harvest
 * completes it. What is still unanswered goes to the lifecycle code
 * (vb->events->unanswered), which rings again and waits for a device that
 * looks sane, up to dev_loss_tmo, and resets one that looks broken or
 * waited too long; the request is then requeued or failed with the rest.
 */
static enum blk_eh_timer_return vblk_timeout(struct request *rq)
{
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);
	struct vblk_queue *q = rq->mq_hctx->driver_data;
	struct vblk_dev *vb = q->vb;
	int found;

	found = vblk_queue_rescue(q);
	if (found)
		dev_warn_ratelimited(vblk_dev_of(vb), "queue %u: %d answers found without their interrupt\n",
				     q->index, found);
	if (blk_mq_rq_state(rq) != MQ_RQ_IN_FLIGHT)
		return BLK_EH_DONE;
	if (vr->timeouts < U16_MAX)
		vr->timeouts++;
	if (vb->events->unanswered(vb, q, vblk_rq_waited_s(rq)) == VBLK_RECLAIMED)
		return BLK_EH_DONE;
	/* A recovery or pause that ran meanwhile may have taken it back. */
	if (blk_mq_rq_state(rq) != MQ_RQ_IN_FLIGHT)
		return BLK_EH_DONE;
	return BLK_EH_RESET_TIMER;
}

/* Queues to CPUs: follow the vector affinity when each queue has one. */
static void vblk_map_by_affinity(struct vblk_dev *vb, struct blk_mq_queue_map *map)
{
	unsigned int q, cpu;

	for (q = 0; q < map->nr_queues; q++) {
		const struct cpumask *mask =
			vb->tp.ops->irq_affinity(&vb->tp, q + 1);

		if (!mask) {
			blk_mq_map_queues(map);
			return;
		}
		for_each_cpu(cpu, mask)
			map->mq_map[cpu] = map->queue_offset + q;
	}
}

static void vblk_map_queues(struct blk_mq_tag_set *set)
{
	struct vblk_dev *vb = set->driver_data;
	struct blk_mq_queue_map *def = &set->map[HCTX_TYPE_DEFAULT];
	struct blk_mq_queue_map *poll = &set->map[HCTX_TYPE_POLL];

	def->nr_queues = vb->nr_queues - vb->nr_poll;
	def->queue_offset = 0;
	if (vb->tp.irq_mode == VBLK_IRQ_MSIX)
		vblk_map_by_affinity(vb, def);
	else
		blk_mq_map_queues(def);
	if (set->nr_maps > HCTX_TYPE_POLL) {
		set->map[HCTX_TYPE_READ].nr_queues = 0;
		poll->nr_queues = vb->nr_poll;
		poll->queue_offset = def->nr_queues;
		blk_mq_map_queues(poll);
	}
}

const struct blk_mq_ops vblk_mq_ops = {
	.queue_rq	= vblk_queue_rq,
	.commit_rqs	= vblk_commit_rqs,
	.queue_rqs	= vblk_queue_rqs,
	.complete	= vblk_complete_rq,
	.init_hctx	= vblk_init_hctx,
	.map_queues	= vblk_map_queues,
	.poll		= vblk_poll,
	.timeout	= vblk_timeout,
};

/* Mark what the ring took back from a stopped device. */
static void vblk_mark_reclaimed(void *token, void *arg)
{
	struct request *rq = token;
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);

	vr->status = BLK_STS_IOERR;
	vr->reclaimed = true;
}

/* A request goes out again after a recovery at most this many times. */
#define VBLK_MAX_RETRIES	5

/* It waited for an answer as long as dev_loss_tmo allows (0: no bound). */
static bool vblk_rq_expired(struct request *rq)
{
	unsigned int tmo = READ_ONCE(vblk_dev_loss_tmo);

	return tmo && vblk_rq_waited_s(rq) >= tmo;
}

static bool vblk_complete_reclaimed(struct request *rq, void *data)
{
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);
	bool requeue = *(bool *)data;

	if (!vr->reclaimed)
		return true;
	vr->reclaimed = false;
	vr->requeue = requeue && !blk_rq_is_passthrough(rq) &&
		      !vblk_rq_expired(rq) && vr->retries++ < VBLK_MAX_RETRIES;
	blk_mq_complete_request(rq);
	return true;
}

/*
 * The device was stopped and can no longer touch the rings: take back every
 * request it held, and requeue it (requeue, a recovery or a pause; not one
 * that waited dev_loss_tmo already) or fail it. The marks are made under
 * each queue lock, the completions outside any lock (a completion may
 * start new submissions). Passthrough requests
 * (GET_ID) are failed, not requeued: their issuer sees the error.
 */
void vblk_mq_reclaim_inflight(struct vblk_dev *vb, bool requeue)
{
	unsigned long flags;
	unsigned int i;

	for (i = 0; i < vb->nr_queues; i++) {
		struct vblk_queue *q = &vb->queues[i];

		spin_lock_irqsave(&q->lock, flags);
		vblk_ring_reclaim(&q->ring, vblk_mark_reclaimed, NULL);
		spin_unlock_irqrestore(&q->lock, flags);
	}
	blk_mq_tagset_busy_iter(&vb->tag_set, vblk_complete_reclaimed, &requeue);
}

/*
 * VIRTIO_BLK_T_GET_ID: the serial, up to 20 bytes, NUL-terminated only when
 * shorter. The device chooses the bytes: keep them printable for sysfs.
 */
int vblk_mq_get_serial(struct vblk_dev *vb)
{
	struct request *rq;
	char *buf;
	int err, i;

	buf = kzalloc(VBLK_SERIAL_LEN + 1, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	rq = blk_mq_alloc_request(vb->disk->queue, REQ_OP_DRV_IN, 0);
	if (IS_ERR(rq)) {
		err = PTR_ERR(rq);
		goto out;
	}
	vblk_mq_pt_init(rq, 0, 0, 0);
	err = vblk_rq_map_kern(rq, buf, VBLK_SERIAL_LEN);
	if (!err)
		err = blk_status_to_errno(blk_execute_rq(rq, false));
	blk_mq_free_request(rq);
	for (i = 0; !err && buf[i]; i++)
		vb->serial[i] = isprint(buf[i]) ? buf[i] : '?';
out:
	kfree(buf);
	return err;
}

/*
 * Make a passthrough request (REQ_OP_DRV_IN/OUT, allocated by vblk_pt.c)
 * the command op (VBLK_PT_OP_*, checked already) at sector. A command
 * without data (flush, discard, write zeroes) has no bio: its length in
 * bytes is kept in the request's own length, which blk-mq leaves alone
 * for a request without bios, and which the range table is made from.
 * A command with data got its length from the mapping; bytes is 0 then.
 */
void vblk_mq_pt_init(struct request *rq, unsigned int op, u64 sector,
		     unsigned int bytes)
{
	struct vblk_req *vr = blk_mq_rq_to_pdu(rq);

	vr->pt_op = op;
	rq->__sector = sector;
	if (!rq->bio)
		rq->__data_len = bytes;
}
