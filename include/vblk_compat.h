/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel API differences between the kernels vblk supports (6.1 .. 7.x).
 *
 * Every choice here is made by a compile probe (compat/<name>.c, run by
 * scripts/kbuild with the target kernel's kbuild), never by a version
 * number: distribution kernels backport APIs. The driver calls only the
 * vblk_* wrappers below for the APIs that differ.
 */
#ifndef VBLK_COMPAT_H
#define VBLK_COMPAT_H

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/hdreg.h>
#include <linux/pci.h>

#include "vblk_compat_probes.h"

#ifdef VBLK_HAVE_URING_CMD_H
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

/* Limits the driver derives from the device config. */
struct vblk_limits {
	unsigned int logical_block_size;
	unsigned int physical_block_size;
	unsigned int alignment_offset;
	unsigned int io_min;
	unsigned int io_opt;
	unsigned int max_segments;
	unsigned int max_segment_size;
	unsigned int max_hw_sectors;
	/* Range commands: a zero sector count leaves the command off. */
	unsigned int max_discard_sectors;
	unsigned int max_secure_erase_sectors;
	unsigned int max_write_zeroes_sectors;
	unsigned int discard_granularity;
	unsigned short max_discard_segments;
	bool write_cache;
};

#ifdef VBLK_HAVE_ALLOC_DISK_LIM
static inline struct gendisk *vblk_alloc_disk(struct blk_mq_tag_set *set,
					      const struct vblk_limits *l,
					      void *data)
{
	struct queue_limits lim = {
		.logical_block_size = l->logical_block_size,
		.physical_block_size = l->physical_block_size,
		.alignment_offset = l->alignment_offset,
		.io_min = l->io_min,
		.io_opt = l->io_opt,
		.max_segments = l->max_segments,
		.max_segment_size = l->max_segment_size,
		.max_hw_sectors = l->max_hw_sectors,
		.max_hw_discard_sectors = l->max_discard_sectors,
		.max_secure_erase_sectors = l->max_secure_erase_sectors,
		.max_write_zeroes_sectors = l->max_write_zeroes_sectors,
		.discard_granularity = l->discard_granularity,
		.max_discard_segments = l->max_discard_segments,
	};

#ifdef VBLK_HAVE_FEAT_WRITE_CACHE
	if (l->write_cache)
		lim.features |= BLK_FEAT_WRITE_CACHE;
#endif
#ifdef VBLK_HAVE_FEAT_ROTATIONAL
	/*
	 * The guest cannot know what backs the disk, and the in-tree driver
	 * reports it as rotational (as every queue was before 6.11): so does
	 * vblk, so that writeback throttling, the entropy pool and file
	 * systems behave the same under either driver. queue/rotational is
	 * writable for a user who knows better.
	 */
	lim.features |= BLK_FEAT_ROTATIONAL;
#endif
	return blk_mq_alloc_disk(set, &lim, data);
}
#else
static inline struct gendisk *vblk_alloc_disk(struct blk_mq_tag_set *set,
					      const struct vblk_limits *l,
					      void *data)
{
	struct gendisk *disk = blk_mq_alloc_disk(set, data);
	struct request_queue *q;

	if (IS_ERR(disk))
		return disk;
	q = disk->queue;
	blk_queue_logical_block_size(q, l->logical_block_size);
	blk_queue_physical_block_size(q, l->physical_block_size);
	blk_queue_alignment_offset(q, l->alignment_offset);
	blk_queue_io_min(q, l->io_min);
	blk_queue_io_opt(q, l->io_opt);
	blk_queue_max_segments(q, l->max_segments);
	blk_queue_max_segment_size(q, l->max_segment_size);
	blk_queue_max_hw_sectors(q, l->max_hw_sectors);
	blk_queue_write_cache(q, l->write_cache, false);
	if (l->max_discard_sectors || l->max_secure_erase_sectors) {
		blk_queue_max_discard_segments(q, l->max_discard_segments);
		q->limits.discard_granularity = l->discard_granularity;
	}
	blk_queue_max_discard_sectors(q, l->max_discard_sectors);
	blk_queue_max_secure_erase_sectors(q, l->max_secure_erase_sectors);
	blk_queue_max_write_zeroes_sectors(q, l->max_write_zeroes_sectors);
	return disk;
}
#endif

/*
 * The volatile write cache turned on or off on a live disk. The queue is
 * frozen for the change, so no request sees half of it.
 */
static inline int vblk_set_write_cache(struct gendisk *disk, bool on)
{
#ifdef VBLK_HAVE_ALLOC_DISK_LIM
	struct queue_limits lim = queue_limits_start_update(disk->queue);
	int err;

	if (on)
		lim.features |= BLK_FEAT_WRITE_CACHE;
	else
		lim.features &= ~BLK_FEAT_WRITE_CACHE;
#ifdef VBLK_HAVE_LIMITS_COMMIT_FROZEN
	err = queue_limits_commit_update_frozen(disk->queue, &lim);
#else
	blk_mq_freeze_queue(disk->queue);
	err = queue_limits_commit_update(disk->queue, &lim);
	blk_mq_unfreeze_queue(disk->queue);
#endif
	return err;
#else
	blk_queue_write_cache(disk->queue, on, false);
	return 0;
#endif
}

/*
 * Zoned devices: 6.1's virtio_blk.h predates them. The model byte's place
 * is fixed by the spec (5.2.4), whatever a header says.
 */
#ifndef VIRTIO_BLK_F_ZONED
#define VIRTIO_BLK_F_ZONED	17
#endif
#define VBLK_CFG_ZONED_MODEL	92

/* Old kernels set the write cache flag on the queue, not in the limits. */
#if defined(VBLK_HAVE_ALLOC_DISK_LIM) && !defined(VBLK_HAVE_FEAT_WRITE_CACHE)
#error "vblk: queue limits without features are not supported"
#endif

static inline int vblk_rq_map_sg(struct request *rq, struct scatterlist *sg)
{
#ifdef VBLK_HAVE_MAP_SG_RQ
	return blk_rq_map_sg(rq, sg);
#else
	return blk_rq_map_sg(rq->q, rq, sg);
#endif
}

static inline int vblk_rq_map_kern(struct request *rq, void *buf,
				   unsigned int len)
{
#ifdef VBLK_HAVE_MAP_KERN_RQ
	return blk_rq_map_kern(rq, buf, len, GFP_KERNEL);
#else
	return blk_rq_map_kern(rq->q, rq, buf, len, GFP_KERNEL);
#endif
}

/*
 * The list queue_rqs() gets (and io_comp_batch holds): its parameter, a
 * local list, and the operations vblk needs on it (order within a list does
 * not matter).
 */
#ifdef VBLK_HAVE_STRUCT_RQ_LIST
#define VBLK_QUEUE_RQS_ARGS		struct rq_list *rqlist
#define VBLK_RQ_LIST_T			struct rq_list
#define VBLK_RQ_LIST_INIT		{}
#define vblk_rq_list_pop(l)		rq_list_pop(l)
#define vblk_rq_list_add(l, rq)		rq_list_add_tail(l, rq)
#define vblk_rq_list_move(dst, src)	(*(dst) = *(src))
#define vblk_rq_list_empty(l)		rq_list_empty(l)
#else
#define VBLK_QUEUE_RQS_ARGS		struct request **rqlist
#define VBLK_RQ_LIST_T			struct request *
#define VBLK_RQ_LIST_INIT		NULL
#define vblk_rq_list_pop(l)		rq_list_pop(l)
#define vblk_rq_list_add(l, rq)		rq_list_add(l, rq)
#define vblk_rq_list_move(dst, src)	(*(dst) = *(src))
#define vblk_rq_list_empty(l)		rq_list_empty(*(l))
#endif

/* getgeo's first argument. */
#ifdef VBLK_HAVE_GETGEO_DISK
#define VBLK_GETGEO_ARG			struct gendisk *
#define vblk_getgeo_disk(arg)		(arg)
#else
#define VBLK_GETGEO_ARG			struct block_device *
#define vblk_getgeo_disk(arg)		((arg)->bd_disk)
#endif

#ifdef VBLK_HAVE_PCI_IRQ_INTX
#define VBLK_PCI_IRQ_INTX	PCI_IRQ_INTX
#else
#define VBLK_PCI_IRQ_INTX	PCI_IRQ_LEGACY
#endif

/*
 * A platform driver's remove callback returns void from 6.11 on, int
 * before: declare it VBLK_PLATFORM_REMOVE_T and end it with
 * "return VBLK_PLATFORM_REMOVE_RET;".
 */
#ifdef VBLK_HAVE_PLATFORM_REMOVE_VOID
#define VBLK_PLATFORM_REMOVE_T		void
#define VBLK_PLATFORM_REMOVE_RET
#else
#define VBLK_PLATFORM_REMOVE_T		int
#define VBLK_PLATFORM_REMOVE_RET	0
#endif

#ifdef VBLK_HAVE_MQ_SHOULD_MERGE
#define VBLK_MQ_F_MERGE		BLK_MQ_F_SHOULD_MERGE
#else
#define VBLK_MQ_F_MERGE		0
#endif

/* ---- io_uring passthrough (vblk_pt.c) ---------------------------------- */

/*
 * The SQE's command area as a typed pointer. 7.3 checks the size against
 * a 128-byte SQE's area (io_uring_sqe128_cmd); 6.12 hands out the SQE;
 * 6.1 the area itself.
 */
#if defined(VBLK_HAVE_URING_SQE128_CMD)
#define vblk_uring_cmd_area(ioucmd, type) \
	io_uring_sqe128_cmd((ioucmd)->sqe, type)
#elif defined(VBLK_HAVE_URING_CMD_SQE)
#define vblk_uring_cmd_area(ioucmd, type) \
	((const type *)io_uring_sqe_cmd((ioucmd)->sqe))
#else
#define vblk_uring_cmd_area(ioucmd, type) \
	((const type *)(ioucmd)->cmd)
#endif

/* Post the CQE; vblk has no second result for CQE32. */
static inline void vblk_uring_cmd_done(struct io_uring_cmd *ioucmd, int res,
				       unsigned int issue_flags)
{
#ifdef VBLK_HAVE_URING_CMD_DONE3
	io_uring_cmd_done(ioucmd, res, issue_flags);
#else
	io_uring_cmd_done(ioucmd, res, 0, issue_flags);
#endif
}

/*
 * A task-work callback: declare it with VBLK_URING_TW_ARGS, get its
 * command with vblk_uring_tw_cmd() and its issue flags with
 * VBLK_URING_TW_FLAGS (7.3 passes a struct io_tw_req and a token).
 */
#ifdef VBLK_HAVE_URING_TW_REQ
#define VBLK_URING_TW_ARGS	struct io_tw_req tw_req, io_tw_token_t tw
#define vblk_uring_tw_cmd()	io_uring_cmd_from_tw(tw_req)
#define VBLK_URING_TW_FLAGS	IO_URING_CMD_TASK_WORK_ISSUE_FLAGS
#else
#define VBLK_URING_TW_ARGS	struct io_uring_cmd *tw_cmd, unsigned int tw_flags
#define vblk_uring_tw_cmd()	(tw_cmd)
#define VBLK_URING_TW_FLAGS	(tw_flags)
#endif

/*
 * Completion in the submitter's task: lazily where the kernel can (its
 * wakeup waits until the task's waiter wants more), else at once.
 */
#ifdef VBLK_HAVE_URING_CMD_LAZY
#define vblk_uring_cmd_to_task(ioucmd, fn) \
	io_uring_cmd_do_in_task_lazy(ioucmd, fn)
#else
#define vblk_uring_cmd_to_task(ioucmd, fn) \
	io_uring_cmd_complete_in_task(ioucmd, fn)
#endif

/* An io_uring registered buffer as an iov_iter (ITER_BVEC). */
static inline int vblk_uring_import_fixed(u64 addr, unsigned long len,
					  int dir, struct iov_iter *iter,
					  struct io_uring_cmd *ioucmd,
					  unsigned int issue_flags)
{
#ifdef VBLK_HAVE_URING_IMPORT_FLAGS
	return io_uring_cmd_import_fixed(addr, len, dir, iter, ioucmd,
					 issue_flags);
#else
	return io_uring_cmd_import_fixed(addr, len, dir, iter, ioucmd);
#endif
}

/*
 * A passthrough request's I/O priority: the request's own (6.1), or that
 * of its bio (later kernels read it from there); a request without data
 * has none there, and goes at the default priority.
 */
static inline void vblk_rq_set_ioprio(struct request *rq, unsigned short prio)
{
#ifdef VBLK_HAVE_RQ_IOPRIO
	rq->ioprio = prio;
#else
	if (rq->bio)
		rq->bio->bi_ioprio = prio;
#endif
}

/* Polled passthrough requests: blk_rq_poll() (6.12, 7.3; not 6.1). */
#ifdef VBLK_HAVE_RQ_POLL
#define VBLK_CAN_RQ_POLL	true
#else
#define VBLK_CAN_RQ_POLL	false
#endif

/* A request's end_io: 7.3 passes the completion batch too. */
#ifdef VBLK_HAVE_END_IO_IOB
#define VBLK_END_IO_ARGS	struct request *rq, blk_status_t status, \
				const struct io_comp_batch *iob
#else
#define VBLK_END_IO_ARGS	struct request *rq, blk_status_t status
#endif

#endif /* VBLK_COMPAT_H */
