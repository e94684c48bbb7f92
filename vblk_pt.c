// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: io_uring passthrough. Each disk gets a char device, /dev/<disk>c0
 * (class vblk-generic), that takes IORING_OP_URING_CMD with the command of
 * include/uapi/vblk_pt.h; docs/passthrough.md is the user's side.
 *
 * A command is an ordinary blk-mq request on the disk's own queue
 * (REQ_OP_DRV_IN for read and get id, REQ_OP_DRV_OUT for the rest, the
 * operation in the request's PDU: vblk_mq_pt_init), with the user's
 * buffer mapped by the block layer (blk_rq_map_user, or an io_uring
 * registered buffer through blk_rq_map_user_iov): it shares the tag set,
 * the rings, the timeouts, the recovery and the counters with the block
 * path, and nothing here allocates beyond that mapping. Every field is
 * checked first, by vblk_pt_check() (vblk_pt_check.c), against the file's
 * open mode and the queue's limits as they are at submission.
 *
 * Lifetimes
 * ---------
 * struct vblk_pt is in struct vblk_dev, which the gendisk's .free_disk
 * frees. The char device's struct device holds a reference on the gendisk
 * from vblk_pt_add() until its release (vblk_pt_release), and its cdev is
 * a child of it; an open file holds the cdev, an in-flight command holds
 * its file (io_uring does). So the vblk_dev outlives every open file and
 * every command, whatever the order of close and removal.
 *
 * Removal (vblk_dev_remove) first deletes the char device (no new opens;
 * the node goes), then del_gendisk, which marks the queue dying and waits
 * for every request in it: commands in flight complete as any request
 * does at removal, answered by a device still running, or failed (-EIO)
 * by the removal and recovery path (passthrough requests are never
 * requeued after a device reset either: they fail with -EIO). A command
 * submitted once removal has begun fails with -ENODEV: straight away in
 * state DELETING or GONE, else from blk_mq_alloc_request() on the dying
 * queue (a removal of a dead device goes through DEAD, where commands
 * fail with -EIO or, once the capacity is 0, -ERANGE).
 *
 * Locking: none of its own. The minor IDA has its own lock; the command
 * is copied out of the SQE field by field (READ_ONCE: user space may be
 * rewriting it) and only the copy is checked and used; a command's PDU in
 * the io_uring_cmd belongs to it from submission to completion.
 *
 * States (vblk_dev.c's table): every state but GONE lets a command be
 * submitted; the block layer then does with it what the state does with
 * any request (LIVE: issued; RESETTING, PAUSED: waits in the quiesced
 * queue, then issued or failed; DEAD: failed with -EIO). Open refuses a
 * GONE disk (-ENXIO) and a write open of a read-only one (-EROFS).
 *
 * Completion: end_io hands the result to the submitter's task (io_uring
 * task work), where the buffer is unmapped and the CQE posted. With
 * IORING_SETUP_IOPOLL the request goes to a poll queue (REQ_POLLED) and is
 * completed by uring_cmd_iopoll's blk_rq_poll(), in the submitter's task,
 * so end_io posts it directly; a kernel without blk_rq_poll() (6.1) fails
 * IOPOLL commands with -EOPNOTSUPP.
 */
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/capability.h>
#include <linux/cdev.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/ioprio.h>
#include <linux/uio.h>

#include "vblk.h"
#include "vblk_compat.h"
#include "vblk_pt_check.h"

#define VBLK_PT_MINORS	BIT(MINORBITS)

static_assert(sizeof(struct vblk_pt_cmd) == 32);

static dev_t vblk_pt_devt;
static DEFINE_IDA(vblk_pt_minor_ida);
static struct class vblk_pt_class = {
	.name = "vblk-generic",
};

/* What a command keeps in its io_uring_cmd between submission and CQE. */
struct vblk_pt_pdu {
	struct request *rq;	/* for uring_cmd_iopoll; NULL once ended */
	struct bio *bio;	/* the mapping, unmapped at completion */
	int res;		/* the CQE's result */
};

static struct vblk_pt_pdu *vblk_pt_pdu(struct io_uring_cmd *ioucmd)
{
	BUILD_BUG_ON(sizeof(struct vblk_pt_pdu) > sizeof(ioucmd->pdu));
	return (struct vblk_pt_pdu *)ioucmd->pdu;
}

/* ---- completion --------------------------------------------------------- */

static void vblk_pt_finish(struct io_uring_cmd *ioucmd,
			   unsigned int issue_flags)
{
	struct vblk_pt_pdu *pdu = vblk_pt_pdu(ioucmd);
	int err = 0;

	if (pdu->bio)
		err = blk_rq_unmap_user(pdu->bio);
	if (err && pdu->res >= 0)
		pdu->res = err;
	vblk_uring_cmd_done(ioucmd, pdu->res, issue_flags);
}

static void vblk_pt_task_done(VBLK_URING_TW_ARGS)
{
	vblk_pt_finish(vblk_uring_tw_cmd(), VBLK_URING_TW_FLAGS);
}

/*
 * Any context: a harvest in hard irq or softirq, the poller, the request
 * timeout's work, a recovery's reclaim. A polled request is ended by the
 * poller in the submitter's task, or by the timeout or a recovery in
 * process context: the CQE can be posted at once (an IOPOLL ring's
 * completion only marks the command done for its poller). Anything else
 * goes to the submitter's task, where the buffer can be unmapped.
 */
static enum rq_end_io_ret vblk_pt_end_io(VBLK_END_IO_ARGS)
{
	struct io_uring_cmd *ioucmd = rq->end_io_data;
	struct vblk_pt_pdu *pdu = vblk_pt_pdu(ioucmd);

	if (status != BLK_STS_OK)
		pdu->res = blk_status_to_errno(status);
	if (blk_rq_is_poll(rq)) {
		WRITE_ONCE(pdu->rq, NULL);
		vblk_pt_finish(ioucmd, 0);
	} else {
		vblk_uring_cmd_to_task(ioucmd, vblk_pt_task_done);
	}
	return RQ_END_IO_FREE;
}

static int vblk_pt_uring_cmd_iopoll(struct io_uring_cmd *ioucmd,
				    struct io_comp_batch *iob,
				    unsigned int poll_flags)
{
#ifdef VBLK_HAVE_RQ_POLL
	struct request *rq = READ_ONCE(vblk_pt_pdu(ioucmd)->rq);

	/*
	 * As nvme's: a request ended meanwhile may be polled once more, which
	 * only polls its hardware queue; the queue cannot go before this
	 * command completes (del_gendisk waits for it).
	 */
	if (rq && blk_rq_is_poll(rq))
		return blk_rq_poll(rq, iob, poll_flags);
#endif
	return 0;
}

/* ---- submission --------------------------------------------------------- */

/* One read of each field: user space may be changing the SQE meanwhile. */
static void vblk_pt_read_cmd(struct io_uring_cmd *ioucmd,
			     struct vblk_pt_cmd *c)
{
	const struct vblk_pt_cmd *u =
		vblk_uring_cmd_area(ioucmd, struct vblk_pt_cmd);

	c->version = READ_ONCE(u->version);
	c->op = READ_ONCE(u->op);
	c->flags = READ_ONCE(u->flags);
	c->ioprio = READ_ONCE(u->ioprio);
	c->rsvd0 = READ_ONCE(u->rsvd0);
	c->sector = READ_ONCE(u->sector);
	c->addr = READ_ONCE(u->addr);
	c->len = READ_ONCE(u->len);
	c->rsvd1 = READ_ONCE(u->rsvd1);
}

static void vblk_pt_limits(struct vblk_dev *vb, struct vblk_pt_limits *l)
{
	struct request_queue *q = vb->disk->queue;

	l->capacity = get_capacity(vb->disk);
	l->lbs = queue_logical_block_size(q);
	l->max_hw_sectors = queue_max_hw_sectors(q);
	l->max_segments = queue_max_segments(q);
	l->page_size = PAGE_SIZE;
	l->dma_align_mask = queue_dma_alignment(q);
	l->max_discard_sectors = q->limits.max_discard_sectors;
	l->max_write_zeroes_sectors = q->limits.max_write_zeroes_sectors;
	l->flush = vblk_has(vb, VIRTIO_BLK_F_FLUSH);
	l->read_only = get_disk_ro(vb->disk);
}

/*
 * Removal has begun (DELETING, or GONE after it): del_gendisk sets the
 * capacity to 0, and a command would otherwise be told -ERANGE. One that
 * comes just before still meets the dying queue (-ENODEV), or is drained.
 */
static bool vblk_pt_removed(struct vblk_dev *vb)
{
	enum vblk_state st = READ_ONCE(vb->state);

	return st == VBLK_DELETING || st == VBLK_GONE;
}

static unsigned int vblk_pt_may(struct file *file)
{
	return (file->f_mode & FMODE_READ ? VBLK_PT_MAY_READ : 0) |
	       (file->f_mode & FMODE_WRITE ? VBLK_PT_MAY_WRITE : 0);
}

/*
 * capable() is asked only where its answer matters (a flush without a
 * write open, a real-time ioprio): it is audited, and each question
 * marks the task as having used its privilege.
 */
static bool vblk_pt_admin(const struct vblk_pt_cmd *c, unsigned int may)
{
	bool rt = IOPRIO_PRIO_CLASS(c->ioprio) == IOPRIO_CLASS_RT;
	bool other = vblk_pt_op_class(c->op) == VBLK_PT_CLASS_OTHER &&
		     !(may & VBLK_PT_MAY_WRITE);

	return (rt || other) && capable(CAP_SYS_ADMIN);
}

static bool vblk_pt_has_data(unsigned int op)
{
	return op == VBLK_PT_OP_READ || op == VBLK_PT_OP_WRITE ||
	       op == VBLK_PT_OP_GET_ID;
}

/* What the CQE says when the command succeeds. */
static int vblk_pt_success(const struct vblk_pt_cmd *c)
{
	switch (c->op) {
	case VBLK_PT_OP_READ:
	case VBLK_PT_OP_WRITE:
		return c->len;
	case VBLK_PT_OP_GET_ID:
		return VBLK_PT_ID_BYTES;
	default:
		return 0;
	}
}

static int vblk_pt_map(struct request *rq, const struct vblk_pt_cmd *c,
		       bool fixed, struct io_uring_cmd *ioucmd,
		       unsigned int issue_flags)
{
	struct iov_iter iter;
	int err;

	if (!fixed)
		return blk_rq_map_user(rq->q, rq, NULL,
				       u64_to_user_ptr(c->addr), c->len,
				       GFP_KERNEL);
	err = vblk_uring_import_fixed(c->addr, c->len,
				      op_is_write(req_op(rq)) ? ITER_SOURCE :
								ITER_DEST,
				      &iter, ioucmd, issue_flags);
	if (err)
		return err;
	return blk_rq_map_user_iov(rq->q, rq, NULL, &iter, GFP_KERNEL);
}

static struct request *vblk_pt_alloc(struct vblk_dev *vb,
				     const struct vblk_pt_cmd *c,
				     unsigned int issue_flags)
{
	bool in = c->op == VBLK_PT_OP_READ || c->op == VBLK_PT_OP_GET_ID;
	blk_opf_t opf = in ? REQ_OP_DRV_IN : REQ_OP_DRV_OUT;
	blk_mq_req_flags_t flags = 0;

	if (issue_flags & IO_URING_F_IOPOLL)
		opf |= REQ_POLLED;
	if (issue_flags & IO_URING_F_NONBLOCK) {
		opf |= REQ_NOWAIT;
		flags |= BLK_MQ_REQ_NOWAIT;
	}
	if (c->op == VBLK_PT_OP_WRITE_ZEROES && (c->flags & VBLK_PT_F_NOUNMAP))
		opf |= REQ_NOUNMAP;
	return blk_mq_alloc_request(vb->disk->queue, opf, flags);
}

static int vblk_pt_submit(struct vblk_dev *vb, struct io_uring_cmd *ioucmd,
			  unsigned int issue_flags)
{
	struct vblk_pt_pdu *pdu = vblk_pt_pdu(ioucmd);
	bool fixed = ioucmd->flags & IORING_URING_CMD_FIXED;
	unsigned int may = vblk_pt_may(ioucmd->file);
	struct vblk_pt_limits lim;
	struct vblk_pt_cmd c;
	struct request *rq;
	int err;

	vblk_pt_read_cmd(ioucmd, &c);
	if (vblk_pt_removed(vb))
		return -ENODEV;
	if (!VBLK_CAN_RQ_POLL && (issue_flags & IO_URING_F_IOPOLL))
		return -EOPNOTSUPP;
	vblk_pt_limits(vb, &lim);
	err = vblk_pt_check(&c, fixed, may, vblk_pt_admin(&c, may), &lim);
	if (err)
		return err;

	rq = vblk_pt_alloc(vb, &c, issue_flags);
	if (IS_ERR(rq))
		return PTR_ERR(rq);
	if (vblk_pt_has_data(c.op)) {
		err = vblk_pt_map(rq, &c, fixed, ioucmd, issue_flags);
		if (err) {
			blk_mq_free_request(rq);
			return err;
		}
	}
	vblk_mq_pt_init(rq, c.op, c.sector, c.len);
	vblk_rq_set_ioprio(rq, c.ioprio);
	rq->end_io = vblk_pt_end_io;
	rq->end_io_data = ioucmd;
	pdu->rq = rq;
	pdu->bio = rq->bio;
	pdu->res = vblk_pt_success(&c);
	blk_execute_rq_nowait(rq, false);
	return -EIOCBQUEUED;
}

static int vblk_pt_uring_cmd(struct io_uring_cmd *ioucmd,
			     unsigned int issue_flags)
{
	struct vblk_dev *vb = ioucmd->file->private_data;

	if (ioucmd->cmd_op != VBLK_PT_URING_CMD_IO)
		return -ENOTTY;
	/* The command needs 32 bytes of cmd area: a 64-byte SQE has 16. */
	if (!(issue_flags & IO_URING_F_SQE128))
		return -EINVAL;
	return vblk_pt_submit(vb, ioucmd, issue_flags);
}

/* ---- the char device ---------------------------------------------------- */

static int vblk_pt_open(struct inode *inode, struct file *file)
{
	struct vblk_dev *vb = container_of(inode->i_cdev, struct vblk_dev,
					   pt.cdev);

	if (READ_ONCE(vb->state) == VBLK_GONE)
		return -ENXIO;
	if ((file->f_mode & FMODE_WRITE) && get_disk_ro(vb->disk))
		return -EROFS;
	file->private_data = vb;
	return 0;
}

/* The file's hold on the cdev (and so on vb) goes when it returns. */
static int vblk_pt_release(struct inode *inode, struct file *file)
{
	return 0;
}

static const struct file_operations vblk_pt_fops = {
	.owner			= THIS_MODULE,
	.open			= vblk_pt_open,
	.release		= vblk_pt_release,
	.llseek			= noop_llseek,
	.uring_cmd		= vblk_pt_uring_cmd,
	.uring_cmd_iopoll	= vblk_pt_uring_cmd_iopoll,
};

/* The last reference: the minor, then the gendisk reference it held. */
static void vblk_pt_dev_release(struct device *dev)
{
	struct vblk_dev *vb = container_of(dev, struct vblk_dev, pt.dev);

	ida_free(&vblk_pt_minor_ida, MINOR(dev->devt));
	put_disk(vb->disk);	/* may free vb: nothing after this */
}

/*
 * After add_disk: /dev/<disk>c0. A failure leaves the disk without its
 * char device, and says so; the disk itself works on.
 */
void vblk_pt_add(struct vblk_dev *vb)
{
	struct vblk_pt *pt = &vb->pt;
	int minor, err;

	minor = ida_alloc_max(&vblk_pt_minor_ida, VBLK_PT_MINORS - 1,
			      GFP_KERNEL);
	if (minor < 0) {
		err = minor;
		goto fail;
	}
	device_initialize(&pt->dev);
	pt->dev.devt = MKDEV(MAJOR(vblk_pt_devt), minor);
	pt->dev.class = &vblk_pt_class;
	pt->dev.parent = disk_to_dev(vb->disk);
	pt->dev.release = vblk_pt_dev_release;
	get_device(disk_to_dev(vb->disk));	/* put by the release */
	err = dev_set_name(&pt->dev, "%sc0", vb->disk->disk_name);
	if (!err) {
		cdev_init(&pt->cdev, &vblk_pt_fops);
		pt->cdev.owner = THIS_MODULE;
		err = cdev_device_add(&pt->cdev, &pt->dev);
	}
	if (err) {
		put_device(&pt->dev);
		goto fail;
	}
	pt->added = true;
	return;
fail:
	dev_warn(vblk_dev_of(vb), "%s: no passthrough char device (%d)\n",
		 vb->disk->disk_name, err);
}

/* Before del_gendisk: no new opens; open files keep vb (see the top). */
void vblk_pt_remove(struct vblk_dev *vb)
{
	struct vblk_pt *pt = &vb->pt;

	if (!pt->added)
		return;
	pt->added = false;
	cdev_device_del(&pt->cdev, &pt->dev);
	put_device(&pt->dev);
}

/* Module init, from vblk_main.c: the major and the class. */
int vblk_pt_init(void)
{
	int err;

	err = alloc_chrdev_region(&vblk_pt_devt, 0, VBLK_PT_MINORS,
				  "vblk-generic");
	if (err)
		return err;
	err = class_register(&vblk_pt_class);
	if (err) {
		unregister_chrdev_region(vblk_pt_devt, VBLK_PT_MINORS);
		return err;
	}
	if (!VBLK_CAN_RQ_POLL)
		pr_info("vblk: passthrough: this kernel has no blk_rq_poll(): IORING_SETUP_IOPOLL commands fail with -EOPNOTSUPP\n");
	if (!IS_ENABLED(CONFIG_IO_URING))
		pr_info("vblk: passthrough: kernel built without io_uring: the char devices take no commands\n");
	return 0;
}

/* Module exit: every disk, and so every char device, is gone. */
void vblk_pt_exit(void)
{
	class_unregister(&vblk_pt_class);
	unregister_chrdev_region(vblk_pt_devt, VBLK_PT_MINORS);
	ida_destroy(&vblk_pt_minor_ida);
}
