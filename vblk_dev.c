// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: the device lifecycle: probe and remove, shutdown, system sleep,
 * function reset (FLR), PCI error recovery, recovery of a device that
 * broke or stopped answering, config changes, and the final kill at
 * removal or shutdown. What probe builds comes from vblk_setup.c (device,
 * queues, vectors) and vblk_disk.c (tag set, gendisk, name); vblk_main.c
 * registers the PCI driver whose callbacks are here.
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
 * The lower layers (vblk_notify.c, vblk_mq.c) never call this file: they
 * report through vb->events (struct vblk_events in vblk.h), which probe
 * installs before the first interrupt can fire, or look at vb->state.
 *
 * Memory the device may DMA into is never handed back while it can: a
 * device that does not finish its reset loses bus mastering, and its ring
 * and tag memory is leaked at removal (vb->dma_leaked) rather than freed.
 */
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/ktime.h>
#include <linux/pci.h>
#include <linux/virtio_config.h>

#include "vblk.h"
#include "vblk_compat.h"

static void vblk_set_state(struct vblk_dev *vb, enum vblk_state st)
{
	WRITE_ONCE(vb->state, st);
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
static int vblk_dev_recover(struct vblk_dev *vb, const char *why)
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
 * vb->events->failed: lower layers report a device they cannot trust here
 * (from any context); recovery runs in process context.
 */
static void vblk_device_failed(struct vblk_dev *vb, const char *why)
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
static void vblk_dev_kill(struct vblk_dev *vb, const char *why)
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
static void vblk_dev_pause(struct vblk_dev *vb)
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

static int vblk_dev_unpause(struct vblk_dev *vb, const char *what)
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

/* ---- config changes ----------------------------------------------------- */

/* vb->events->config_changed: the config interrupt, hard-irq context. */
static void vblk_config_changed(struct vblk_dev *vb)
{
	schedule_work(&vb->config_work);
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

static const struct vblk_events vblk_dev_events = {
	.failed		= vblk_device_failed,
	.config_changed	= vblk_config_changed,
	.recover	= vblk_dev_recover,
};

static void vblk_dev_init_lifecycle(struct vblk_dev *vb)
{
	mutex_init(&vb->lifecycle_lock);
	INIT_WORK(&vb->reset_work, vblk_reset_work);
	vb->state = VBLK_LIVE;
	vb->events = &vblk_dev_events;
}

/* ---- probe and remove --------------------------------------------------- */

int vblk_probe(struct pci_dev *pdev, const struct pci_device_id *id)
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
	vblk_fault_probe(vb);
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
void vblk_remove(struct pci_dev *pdev)
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
void vblk_shutdown(struct pci_dev *pdev)
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

const struct dev_pm_ops vblk_pm_ops = {
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
	struct vblk_dev *vb = pci_get_drvdata(pdev);

	if (vblk_fault_slot_reset_fails(&vb->fault))
		return PCI_ERS_RESULT_DISCONNECT;
	pci_restore_state(pdev);
	return PCI_ERS_RESULT_RECOVERED;
}

static void vblk_error_resume(struct pci_dev *pdev)
{
	vblk_dev_unpause(pci_get_drvdata(pdev), "PCI error recovery");
}

const struct pci_error_handlers vblk_err_handlers = {
	.error_detected	= vblk_error_detected,
	.slot_reset	= vblk_slot_reset,
	.resume		= vblk_error_resume,
	.reset_prepare	= vblk_reset_prepare,
	.reset_done	= vblk_reset_done,
};
