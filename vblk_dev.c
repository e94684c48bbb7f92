// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: the device lifecycle after probe: recovery of a device that broke
 * or stopped answering, system sleep, function reset (FLR), PCI error
 * recovery, and the final kill at removal or shutdown.
 *
 * States (vb->state, written under vb->lifecycle_lock, read anywhere with
 * READ_ONCE):
 *
 *   LIVE       rings in use, I/O flows. Any path may call in here.
 *   RESETTING  the request queue is quiesced; only the holder of
 *              lifecycle_lock touches the device and the rings (recovery,
 *              or a pause for sleep / FLR / a PCI error, vb->paused).
 *   DEAD       the device was reset, or is gone, or broke more often than
 *              max_resets allows: every request fails with an I/O error.
 *              Terminal; remove() tears down from here.
 *
 *   LIVE -> RESETTING -> LIVE       recovery or pause/unpause that worked
 *   LIVE | RESETTING -> DEAD        recovery exhausted, restart failed, kill
 *
 * Memory the device may DMA into is never handed back while it can: a
 * device that does not finish its reset loses bus mastering, and its ring
 * and tag memory is leaked at removal (vb->dma_leaked) rather than freed.
 */
#include <linux/blk-mq.h>
#include <linux/ktime.h>
#include <linux/pci.h>
#include <linux/virtio_config.h>

#include "vblk.h"

static void vblk_set_state(struct vblk_dev *vb, enum vblk_state st)
{
	WRITE_ONCE(vb->state, st);
}

/*
 * Whether the device looks broken, and why. Cheap enough for the request
 * timeout: a status byte, the PCI command word and the channel state.
 */
const char *vblk_dev_insane(struct vblk_dev *vb)
{
	struct pci_dev *pdev = vb->pci.pdev;
	u16 cmd = 0;
	u8 st;

	if (pci_channel_offline(pdev))
		return "PCI channel offline";
	st = vblk_pci_get_status(&vb->pci);
	if (st == 0xff)
		return "device status reads all-ones (device gone?)";
	if (st & VIRTIO_CONFIG_S_NEEDS_RESET)
		return "device set NEEDS_RESET";
	if (!(st & VIRTIO_CONFIG_S_DRIVER_OK))
		return "device lost DRIVER_OK";
	pci_read_config_word(pdev, PCI_COMMAND, &cmd);
	if (cmd == 0xffff)
		return "PCI config space reads all-ones";
	if (!(cmd & PCI_COMMAND_MASTER))
		return "PCI bus mastering switched off";
	return NULL;
}

/*
 * Stop the device: after this it no longer reads or writes the rings, no
 * handler runs and none will harvest. A device that will not finish its
 * reset loses bus mastering (it can then no longer reach memory) and its
 * DMA memory is marked leaked.
 */
static void vblk_stop_hw(struct vblk_dev *vb)
{
	unsigned int i;
	int err;

	err = vblk_pci_reset(&vb->pci);
	if (err == -ETIMEDOUT) {
		pci_clear_master(vb->pci.pdev);
		vb->dma_leaked = true;
		dev_err(vblk_dev_of(vb), "device did not reset: bus mastering off, its DMA memory will not be freed\n");
	}
	vblk_irqs_sync(vb);
	for (i = 0; i < vb->nr_queues; i++)
		vblk_queue_offline(&vb->queues[i]);
}

/* Bring a stopped device back with the features and rings it had. */
static int vblk_restart_hw(struct vblk_dev *vb)
{
	unsigned int i;
	int err;

	if (!pci_device_is_present(vb->pci.pdev))
		return -ENODEV;
	pci_set_master(vb->pci.pdev);
	err = vblk_pci_begin(&vb->pci);
	if (err)
		return err;
	if ((vblk_pci_device_features(&vb->pci) & vb->pci.features) !=
	    vb->pci.features) {
		dev_err(vblk_dev_of(vb), "device no longer offers the negotiated features\n");
		return -ENODEV;
	}
	err = vblk_pci_set_features(&vb->pci, vb->pci.features);
	for (i = 0; !err && i < vb->nr_queues; i++)
		err = vblk_queue_start(vb, &vb->queues[i]);
	if (!err)
		err = vblk_pci_set_config_vector(&vb->pci, 0);
	if (err)
		return err;
	vblk_pci_add_status(&vb->pci, VIRTIO_CONFIG_S_DRIVER_OK);
	return 0;
}

/* Let the queue run again: requeued requests and those parked on a stop. */
static void vblk_resume_queue(struct vblk_dev *vb)
{
	struct request_queue *q = vb->disk->queue;

	blk_mq_unquiesce_queue(q);
	blk_mq_start_stopped_hw_queues(q, true);
	blk_mq_kick_requeue_list(q);
}

/*
 * Under lifecycle_lock, with the queue quiesced and the device stopped.
 * A disk still live lets its queue run, so that parked and later requests
 * fail at once; once remove has started, del_gendisk() owns the queue and
 * it is only unquiesced.
 */
static void vblk_die_locked(struct vblk_dev *vb)
{
	vblk_set_state(vb, VBLK_DEAD);
	vblk_mq_reclaim_inflight(vb, false);
	if (READ_ONCE(vb->live))
		vblk_resume_queue(vb);
	else
		blk_mq_unquiesce_queue(vb->disk->queue);
}

static s64 vblk_ms_since(ktime_t t0)
{
	return ktime_ms_delta(ktime_get(), t0);
}

/* Completions harvested so far, to tell a device that makes progress. */
static u64 vblk_completions(struct vblk_dev *vb)
{
	u64 n = 0;
	unsigned int i;

	for (i = 0; i < vb->nr_queues; i++)
		n += READ_ONCE(vb->queues[i].stats.completions);
	return n;
}

/*
 * Reset the device, rebuild its rings and requeue what it held, unless it
 * was reset max_resets times in a row without answering anything in
 * between: then everything fails and the disk is dead. Synchronous; the
 * request timeout calls it (every request the device held, the timed-out
 * one too, is then requeued or failed). Returns 0 when the device is live
 * again, -EIO when it is dead, -EBUSY when it was not live to begin with.
 */
int vblk_dev_recover(struct vblk_dev *vb, const char *why)
{
	struct device *dev = vblk_dev_of(vb);
	ktime_t t0 = ktime_get();
	u64 done;
	int err;

	mutex_lock(&vb->lifecycle_lock);
	if (vb->state != VBLK_LIVE) {
		mutex_unlock(&vb->lifecycle_lock);
		return -EBUSY;
	}
	vblk_set_state(vb, VBLK_RESETTING);
	blk_mq_quiesce_queue(vb->disk->queue);
	vblk_stop_hw(vb);
	done = vblk_completions(vb);
	if (done != vb->completions_at_reset)
		vb->resets = 0;
	if (vb->dma_leaked || vb->resets >= READ_ONCE(vblk_max_resets)) {
		vblk_die_locked(vb);
		dev_err(dev, "%s: %s; %u reset(s) without progress: failing all I/O (dead after %lld ms)\n",
			vb->disk->disk_name, why, vb->resets, vblk_ms_since(t0));
		mutex_unlock(&vb->lifecycle_lock);
		return -EIO;
	}
	vb->resets++;
	vb->completions_at_reset = done;
	vblk_mq_reclaim_inflight(vb, true);
	err = vblk_restart_hw(vb);
	if (err) {
		vblk_stop_hw(vb);
		vblk_die_locked(vb);
		dev_err(dev, "%s: %s; restart failed (%d): failing all I/O (dead after %lld ms)\n",
			vb->disk->disk_name, why, err, vblk_ms_since(t0));
		mutex_unlock(&vb->lifecycle_lock);
		return -EIO;
	}
	vb->recoveries++;
	vblk_set_state(vb, VBLK_LIVE);
	vblk_resume_queue(vb);
	dev_warn(dev, "%s: %s: device reset, rings rebuilt, I/O requeued (recovery %llu, %lld ms)\n",
		 vb->disk->disk_name, why, vb->recoveries, vblk_ms_since(t0));
	mutex_unlock(&vb->lifecycle_lock);
	return 0;
}

static void vblk_reset_work(struct work_struct *work)
{
	struct vblk_dev *vb = container_of(work, struct vblk_dev, reset_work);

	vblk_dev_recover(vb, vb->reset_why ?: "device error");
}

/*
 * Lower layers report a device they cannot trust here (from any context):
 * recovery runs in process context.
 */
void vblk_device_failed(struct vblk_dev *vb, const char *why)
{
	if (READ_ONCE(vb->state) != VBLK_LIVE)
		return;
	dev_err_ratelimited(vblk_dev_of(vb), "device failed (%s): resetting it\n", why);
	vb->reset_why = why;
	schedule_work(&vb->reset_work);
}

/*
 * Stop the device for good and fail whatever it held: removal of a device
 * that is gone, shutdown, a permanent PCI failure. Idempotent.
 */
void vblk_dev_kill(struct vblk_dev *vb, const char *why)
{
	bool quiesced;

	mutex_lock(&vb->lifecycle_lock);
	if (vb->state == VBLK_DEAD) {
		mutex_unlock(&vb->lifecycle_lock);
		return;
	}
	if (why)
		dev_warn(vblk_dev_of(vb), "%s: %s: failing all I/O\n",
			 vb->disk->disk_name, why);
	/* A paused queue is quiesced already. */
	quiesced = vb->state == VBLK_RESETTING;
	vb->paused = false;
	if (!quiesced)
		blk_mq_quiesce_queue(vb->disk->queue);
	vblk_stop_hw(vb);
	vblk_die_locked(vb);
	mutex_unlock(&vb->lifecycle_lock);
}

/*
 * Sleep, FLR, PCI error: stop the device and requeue what it held (those
 * requests were not failed; they go out again at unpause).
 */
void vblk_dev_pause(struct vblk_dev *vb)
{
	mutex_lock(&vb->lifecycle_lock);
	if (vb->state == VBLK_LIVE) {
		vblk_set_state(vb, VBLK_RESETTING);
		vb->paused = true;
		blk_mq_quiesce_queue(vb->disk->queue);
		vblk_stop_hw(vb);
		vblk_mq_reclaim_inflight(vb, true);
	}
	mutex_unlock(&vb->lifecycle_lock);
}

int vblk_dev_unpause(struct vblk_dev *vb, const char *what)
{
	ktime_t t0 = ktime_get();
	int err = 0;

	mutex_lock(&vb->lifecycle_lock);
	if (vb->paused) {
		vb->paused = false;
		err = vblk_restart_hw(vb);
		if (err) {
			vblk_stop_hw(vb);
			vblk_die_locked(vb);
			dev_err(vblk_dev_of(vb), "%s: restart after %s failed (%d): failing all I/O\n",
				vb->disk->disk_name, what, err);
		} else {
			vblk_set_state(vb, VBLK_LIVE);
			vblk_resume_queue(vb);
			dev_info(vblk_dev_of(vb), "%s: restarted after %s in %lld ms\n",
				 vb->disk->disk_name, what, vblk_ms_since(t0));
		}
	}
	mutex_unlock(&vb->lifecycle_lock);
	return err;
}

void vblk_dev_init_lifecycle(struct vblk_dev *vb)
{
	mutex_init(&vb->lifecycle_lock);
	INIT_WORK(&vb->reset_work, vblk_reset_work);
	vb->state = VBLK_LIVE;
}
