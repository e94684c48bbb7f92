// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: the device lifecycle: probe and remove, shutdown, pause and
 * resume (system sleep, function reset, PCI error recovery), a device that
 * stops answering or breaks, config changes. What probe builds comes from
 * the transport (its init function, then struct vblk_transport_ops),
 * vblk_setup.c (device, queues, vectors) and vblk_disk.c (tag set, gendisk,
 * name); vblk_main.c's bus drivers call the entry points here.
 *
 * The state machine
 * -----------------
 * vb->state is written only by vblk_change_state(), under
 * vb->lifecycle_lock, which refuses (and logs) any transition the table
 * below does not list. It is read anywhere with READ_ONCE. Each state
 * says what the device, the request queue and the requests are doing:
 *
 *   state      device             request queue      requests it held
 *   PROBING    being set up       no disk yet        none
 *   LIVE       running            runs               on the rings
 *   RESETTING  stopped, restarts  quiesced           requeued
 *   PAUSED     stopped            quiesced           requeued
 *   DELETING   running            runs (del_gendisk) on the rings
 *   DEAD       stopped for good   runs, all fails    failed
 *   GONE       torn down          del_gendisk done   none
 *
 *   PROBING   -> LIVE                      probe made the disk
 *   LIVE      -> RESETTING -> LIVE         recovery worked
 *                RESETTING -> DEAD         resets exhausted, restart failed
 *   LIVE      -> PAUSED    -> LIVE         sleep, FLR, PCI error recovered
 *                PAUSED    -> DEAD         restart failed, removed paused
 *   LIVE      -> DELETING  -> GONE         orderly removal
 *                DELETING  -> DEAD         no answer during removal
 *   LIVE      -> DEAD                      gone, shutdown, PCI failure
 *   DEAD      -> GONE                      removal
 *
 * vblk_change_state() also does what entering a state means for the
 * device and the queue, so that no caller decides it for itself: leaving
 * LIVE or DELETING for a state whose device is stopped quiesces the queue
 * (except for GONE: del_gendisk has drained it), stops the device and
 * every harvester, and takes back what the rings held (requeued for
 * RESETTING and PAUSED, failed otherwise); entering LIVE or DEAD lets the
 * queue run again, stopped hctxs included, so that parked requests are
 * issued (LIVE) or failed (DEAD). Restarting the device between
 * RESETTING or PAUSED and LIVE is the caller's, and so is stopping it
 * again when that restart failed half-way.
 *
 * Entry points and the states they act in (all others leave them alone):
 *   queue_rq, commit_rqs   any; DEAD fails the request (vblk_mq.c)
 *   harvesters             any; a stopped queue yields nothing
 *   request timeout        LIVE: rescue, ring again, wait, or reset
 *                          (vblk_dev_unanswered); DELETING: DEAD;
 *                          RESETTING, PAUSED: wait for them
 *   reset_work             LIVE: recover; DELETING: DEAD; PROBING: kept
 *                          for the end of probe
 *   config_work            LIVE (run again on every entry to LIVE)
 *   remove                 LIVE -> DELETING (DEAD if the device is gone),
 *                          PAUSED -> DEAD, then del_gendisk, then GONE
 *   shutdown, PCI failure  LIVE, PAUSED, DELETING -> DEAD
 *   sleep, FLR, PCI error  LIVE -> PAUSED; resume: PAUSED -> LIVE
 *
 * The lower layers (vblk_notify.c, vblk_mq.c) never call this file: they
 * report through vb->events (struct vblk_events in vblk.h), which probe
 * installs before the first interrupt can fire, or look at vb->state.
 *
 * Memory the device may DMA into is never handed back while it can: a
 * device that does not finish its reset loses bus mastering, and its ring
 * and tag memory is leaked at removal (vb->dma_leaked, a fact about that
 * memory, not a state) rather than freed.
 */
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/virtio_config.h>

#include "vblk.h"
#include "vblk_compat.h"

#define S(st)	BIT(VBLK_##st)
static const unsigned int vblk_next_states[VBLK_NR_STATES] = {
	[VBLK_PROBING]		= S(LIVE),
	[VBLK_LIVE]		= S(RESETTING) | S(PAUSED) | S(DELETING) | S(DEAD),
	[VBLK_RESETTING]	= S(LIVE) | S(DEAD),
	[VBLK_PAUSED]		= S(LIVE) | S(DEAD),
	[VBLK_DELETING]		= S(DEAD) | S(GONE),
	[VBLK_DEAD]		= S(GONE),
	[VBLK_GONE]		= 0,
};

#undef S

const char * const vblk_state_names[VBLK_NR_STATES] = {
	[VBLK_PROBING] = "probing", [VBLK_LIVE] = "live",
	[VBLK_RESETTING] = "resetting", [VBLK_PAUSED] = "paused",
	[VBLK_DELETING] = "deleting", [VBLK_DEAD] = "dead",
	[VBLK_GONE] = "gone",
};

/* The device's I/O flows in these; in the others it is stopped. */
static bool vblk_state_running(enum vblk_state st)
{
	return st == VBLK_LIVE || st == VBLK_DELETING;
}

/* Stopped with the queue quiesced, what it held requeued. */
static bool vblk_state_parked(enum vblk_state st)
{
	return st == VBLK_RESETTING || st == VBLK_PAUSED;
}

/* For messages: the disk's name, or the function's before there is one. */
static const char *vblk_name(struct vblk_dev *vb)
{
	return vb->disk ? vb->disk->disk_name : dev_name(vb->tp.dev);
}

/*
 * Reset the device; one that does not finish its reset is fenced where the
 * transport can (PCI: bus mastering off, so it no longer reaches memory)
 * and its DMA memory is marked leaked either way.
 */
static void vblk_reset_or_fence(struct vblk_dev *vb)
{
	const char *how;

	if (vblk_tp_reset(&vb->tp) != -ETIMEDOUT)
		return;
	how = vb->tp.ops->fence(&vb->tp);
	vb->dma_leaked = true;
	dev_err(vblk_dev_of(vb), "device did not reset: %s, its DMA memory will not be freed\n",
		how ?: "the transport cannot fence it");
}

/*
 * Stop the device: after this it no longer reads or writes the rings, no
 * handler runs, and no harvester holds or will take a used element (see
 * vblk_reset_or_fence for a device that does not finish its reset). A
 * frozen channel (PCI error) is not reset here: the device cannot be
 * reached, nor reach memory, and the slot reset resets it.
 */
static void vblk_stop_hw(struct vblk_dev *vb)
{
	unsigned int i;

	if (!vb->tp.ops->offline(&vb->tp))
		vblk_reset_or_fence(vb);
	vblk_irqs_sync(vb);
	for (i = 0; i < vb->nr_queues; i++)
		vblk_queue_offline(&vb->queues[i]);
	vb->stops++;
}

/*
 * After a reset the device may offer less than at probe; the rings that
 * exist (their count, size and memory) must still fit what it offers.
 */
static int vblk_check_queues(struct vblk_dev *vb)
{
	unsigned int i, n = vb->tp.ops->num_queues(&vb->tp);

	if (n < vb->nr_queues) {
		dev_err(vblk_dev_of(vb), "device now offers %u queues, %u in use\n",
			n, vb->nr_queues);
		return -ENODEV;
	}
	for (i = 0; i < vb->nr_queues; i++) {
		n = vb->tp.ops->queue_max_size(&vb->tp, i);
		if (n < vb->ring_size) {
			dev_err(vblk_dev_of(vb), "queue %u now takes %u entries, %u in use\n",
				i, n, vb->ring_size);
			return -ENODEV;
		}
	}
	return 0;
}

/* Bring a stopped device back with the features and rings it had. */
static int vblk_restart_hw(struct vblk_dev *vb)
{
	unsigned int i;
	int err;

	if (!vb->tp.ops->present(&vb->tp))
		return -ENODEV;
	vb->tp.ops->unfence(&vb->tp);
	err = vblk_tp_begin(&vb->tp);
	if (err)
		return err;
	if ((vb->tp.ops->get_features(&vb->tp) & vb->tp.features) !=
	    vb->tp.features) {
		dev_err(vblk_dev_of(vb), "device no longer offers the negotiated features\n");
		return -ENODEV;
	}
	err = vblk_tp_set_features(&vb->tp, vb->tp.features);
	if (!err)
		err = vblk_check_queues(vb);
	for (i = 0; !err && i < vb->nr_queues; i++)
		err = vblk_queue_start(vb, &vb->queues[i]);
	if (!err)
		err = vb->tp.ops->set_config_vector(&vb->tp, 0);
	if (err)
		return err;
	vblk_tp_add_status(&vb->tp, VIRTIO_CONFIG_S_DRIVER_OK);
	return 0;
}

/* Let the queue run again: requeued requests and those parked on a stop. */
static void vblk_run_queue(struct vblk_dev *vb)
{
	struct request_queue *q = vb->disk->queue;

	blk_mq_unquiesce_queue(q);
	blk_mq_start_stopped_hw_queues(q, true);
	blk_mq_kick_requeue_list(q);
}

/*
 * The one place vb->state changes; see the table at the top of this file.
 * Returns false, and changes nothing, for a transition the table does not
 * list.
 */
static bool vblk_change_state(struct vblk_dev *vb, enum vblk_state new)
{
	enum vblk_state old = vb->state;

	lockdep_assert_held(&vb->lifecycle_lock);
	if (!(vblk_next_states[old] & BIT(new))) {
		dev_err(vblk_dev_of(vb), "%s: state change %s -> %s refused\n",
			vblk_name(vb), vblk_state_names[old],
			vblk_state_names[new]);
		return false;
	}
	WRITE_ONCE(vb->state, new);
	if (old == VBLK_PROBING)
		return true;
	if (vblk_state_running(old) && !vblk_state_running(new)) {
		/* Queue first, so that no request reaches a stopped ring. */
		if (new != VBLK_GONE)
			blk_mq_quiesce_queue(vb->disk->queue);
		vblk_stop_hw(vb);
		vblk_mq_reclaim_inflight(vb, vblk_state_parked(new));
	}
	if (new == VBLK_LIVE || new == VBLK_DEAD)
		vblk_run_queue(vb);
	/* A config change while stopped was not looked at: look now. */
	if (new == VBLK_LIVE)
		schedule_work(&vb->config_work);
	return true;
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

/* Under lifecycle_lock: fail everything for good (from LIVE, PAUSED, DELETING). */
static void vblk_die_locked(struct vblk_dev *vb, const char *why)
{
	if (vblk_change_state(vb, VBLK_DEAD) && why)
		dev_err(vblk_dev_of(vb), "%s: %s: failing all I/O\n",
			vblk_name(vb), why);
}

/*
 * Under lifecycle_lock, in LIVE: reset the device, rebuild its rings and
 * requeue what it held (what waited longer than dev_loss_tmo fails), unless
 * it was reset max_resets times in a row without answering anything in
 * between: then everything fails and the disk is dead. Returns 0 when the
 * device is live again, -EIO when it is dead.
 */
static int vblk_recover_locked(struct vblk_dev *vb, const char *why)
{
	struct device *dev = vblk_dev_of(vb);
	ktime_t t0 = ktime_get();
	u64 done;
	int err;

	if (!vblk_change_state(vb, VBLK_RESETTING))
		return -EIO;
	done = vblk_completions(vb);
	if (done != vb->completions_at_reset)
		vb->resets = 0;
	if (vb->dma_leaked || vb->resets >= READ_ONCE(vblk_max_resets)) {
		vblk_change_state(vb, VBLK_DEAD);
		dev_err(dev, "%s: %s; %u reset(s) without progress: failing all I/O (dead after %lld ms)\n",
			vblk_name(vb), why, vb->resets, vblk_ms_since(t0));
		return -EIO;
	}
	vb->resets++;
	vb->completions_at_reset = done;
	/* The rings are rebuilt: what broke the old ones is moot. */
	WRITE_ONCE(vb->reset_why, NULL);
	err = vblk_restart_hw(vb);
	if (err) {
		/* A restart that failed half-way may have woken it. */
		vblk_stop_hw(vb);
		vblk_change_state(vb, VBLK_DEAD);
		dev_err(dev, "%s: %s; restart failed (%d): failing all I/O (dead after %lld ms)\n",
			vblk_name(vb), why, err, vblk_ms_since(t0));
		return -EIO;
	}
	vb->recoveries++;
	vblk_change_state(vb, VBLK_LIVE);
	dev_warn(dev, "%s: %s: device reset, rings rebuilt, I/O requeued (recovery %llu, %lld ms)\n",
		 vblk_name(vb), why, vb->recoveries, vblk_ms_since(t0));
	return 0;
}

/* A lower layer reported a device it cannot trust (vblk_device_failed). */
static void vblk_reset_work(struct work_struct *work)
{
	struct vblk_dev *vb = container_of(work, struct vblk_dev, reset_work);
	const char *why;

	mutex_lock(&vb->lifecycle_lock);
	why = xchg(&vb->reset_why, NULL);
	if (why) {
		switch (vb->state) {
		case VBLK_LIVE:
			vblk_recover_locked(vb, why);
			break;
		case VBLK_DELETING:
			vblk_die_locked(vb, why);
			break;
		case VBLK_PROBING:
			/* Probe looks again once the disk exists. */
			WRITE_ONCE(vb->reset_why, why);
			break;
		default:
			/* Stopped: a restart rebuilds the rings anyway. */
			break;
		}
	}
	mutex_unlock(&vb->lifecycle_lock);
}

/*
 * vb->events->failed: lower layers report a device they cannot trust here
 * (from any context); recovery runs in process context, in whatever state
 * the device is in by then.
 */
static void vblk_device_failed(struct vblk_dev *vb, const char *why)
{
	enum vblk_state st = READ_ONCE(vb->state);

	if (st == VBLK_DEAD || st == VBLK_GONE)
		return;
	dev_err_ratelimited(vblk_dev_of(vb), "device failed (%s): resetting it\n", why);
	WRITE_ONCE(vb->reset_why, why);
	schedule_work(&vb->reset_work);
}

/*
 * vb->events->unanswered: the request timeout found a request on queue q
 * still unanswered after waited_s seconds, with nothing on the ring for it. Slow
 * is not dead:
 * - a device that looks broken (NEEDS_RESET, status all ones, PCI channel
 *   offline, bus mastering off, mmio magic gone) is reset at once;
 * - a device that looks sane gets its doorbell again (a lost doorbell
 *   also mutes every later one) and is waited for, with a rate-limited
 *   warning, until the request waited dev_loss_tmo seconds (0: for ever);
 *   then it is reset, and the requests that waited that long fail;
 * - while the disk is being removed nobody waits: the device is failed.
 * Serialised with recovery, pause and FLR by lifecycle_lock, so that the
 * register reads and the doorbell never meet a device being reset.
 * Returns VBLK_RECLAIMED when the device's requests were taken back
 * (requeued or failed), VBLK_WAIT when the request waits on.
 */
static enum vblk_verdict vblk_dev_unanswered(struct vblk_dev *vb,
					     struct vblk_queue *q,
					     unsigned int waited_s)
{
	unsigned int tmo = READ_ONCE(vblk_dev_loss_tmo);
	u64 stops = READ_ONCE(vb->stops);
	enum vblk_verdict v = VBLK_WAIT;
	const char *why;

	mutex_lock(&vb->lifecycle_lock);
	/* A stop while we waited for the lock took the request back. */
	if (vb->stops != stops) {
		mutex_unlock(&vb->lifecycle_lock);
		return VBLK_WAIT;
	}
	switch (vb->state) {
	case VBLK_DELETING:
		vblk_die_locked(vb, "no answer while the disk is removed");
		v = VBLK_RECLAIMED;
		break;
	case VBLK_LIVE:
		why = vblk_tp_insane(&vb->tp);
		if (!why && tmo && waited_s >= tmo)
			why = "no answer within dev_loss_tmo";
		if (why) {
			vblk_recover_locked(vb, why);
			v = VBLK_RECLAIMED;
			break;
		}
		vblk_queue_rekick(q);
		dev_warn_ratelimited(vblk_dev_of(vb), "%s: queue %u: no answer for %u s from a device that looks sane: doorbell rung again, waiting%s\n",
				     vblk_name(vb), q->index, waited_s,
				     tmo ? " (gives up at dev_loss_tmo)" : "");
		break;
	default:
		break;
	}
	mutex_unlock(&vb->lifecycle_lock);
	return v;
}

/*
 * Stop the device for good and fail whatever it held: removal of a device
 * that is gone, shutdown, a permanent PCI failure. Idempotent.
 */
void vblk_dev_kill(struct vblk_dev *vb, const char *why)
{
	mutex_lock(&vb->lifecycle_lock);
	if (vb->state != VBLK_DEAD && vb->state != VBLK_GONE)
		vblk_die_locked(vb, why);
	mutex_unlock(&vb->lifecycle_lock);
}

/*
 * Sleep, FLR, PCI error: stop the device and requeue what it held (those
 * requests were not failed; they go out again at unpause).
 */
void vblk_dev_pause(struct vblk_dev *vb)
{
	mutex_lock(&vb->lifecycle_lock);
	if (vb->state == VBLK_LIVE)
		vblk_change_state(vb, VBLK_PAUSED);
	mutex_unlock(&vb->lifecycle_lock);
}

int vblk_dev_unpause(struct vblk_dev *vb, const char *what)
{
	ktime_t t0 = ktime_get();
	int err = 0;

	mutex_lock(&vb->lifecycle_lock);
	if (vb->state == VBLK_PAUSED) {
		err = vblk_restart_hw(vb);
		if (err) {
			vblk_stop_hw(vb);
			vblk_change_state(vb, VBLK_DEAD);
			dev_err(vblk_dev_of(vb), "%s: restart after %s failed (%d): failing all I/O\n",
				vblk_name(vb), what, err);
		} else {
			vblk_change_state(vb, VBLK_LIVE);
			dev_info(vblk_dev_of(vb), "%s: restarted after %s in %lld ms\n",
				 vblk_name(vb), what, vblk_ms_since(t0));
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

/*
 * In LIVE only; every entry to LIVE schedules it again, so a change that
 * came while the device was stopped is not lost.
 */
static void vblk_config_work(struct work_struct *work)
{
	struct vblk_dev *vb = container_of(work, struct vblk_dev, config_work);
	sector_t sectors;

	if (READ_ONCE(vb->state) != VBLK_LIVE)
		return;
	/* The device asks for a reset through a config change (2.1.2). */
	if (vblk_tp_get_status(&vb->tp) & VIRTIO_CONFIG_S_NEEDS_RESET) {
		mutex_lock(&vb->lifecycle_lock);
		if (vb->state == VBLK_LIVE)
			vblk_recover_locked(vb, "device set NEEDS_RESET");
		mutex_unlock(&vb->lifecycle_lock);
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
	.unanswered	= vblk_dev_unanswered,
};

static void vblk_dev_init_lifecycle(struct vblk_dev *vb)
{
	mutex_init(&vb->lifecycle_lock);
	INIT_WORK(&vb->reset_work, vblk_reset_work);
	INIT_WORK(&vb->config_work, vblk_config_work);
	vb->state = VBLK_PROBING;
	vb->events = &vblk_dev_events;
}

/* ---- probe and remove --------------------------------------------------- */

/* The disk exists and the device is running: PROBING -> LIVE. */
static void vblk_probe_done(struct vblk_dev *vb)
{
	mutex_lock(&vb->lifecycle_lock);
	vblk_change_state(vb, VBLK_LIVE);
	mutex_unlock(&vb->lifecycle_lock);
	/* A failure reported before the disk existed is recovered now. */
	if (READ_ONCE(vb->reset_why))
		schedule_work(&vb->reset_work);
}

/*
 * The transport first (init sets vb->tp up for the bus device), then the
 * device, its queues and interrupts, then the disk. Every failure unwinds
 * what was done, in reverse, and leaves the device reset and FAILED.
 */
int vblk_dev_probe(struct device *dev, vblk_tp_init_fn init, void *bus_dev)
{
	struct vblk_limits lim;
	struct vblk_dev *vb;
	int err;

	vb = kzalloc(sizeof(*vb), GFP_KERNEL);
	if (!vb)
		return -ENOMEM;
	vblk_dev_init_lifecycle(vb);
	mutex_init(&vb->serial_lock);
	dev_set_drvdata(dev, vb);

	err = init(&vb->tp, bus_dev);
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
	err = vb->tp.ops->set_config_vector(&vb->tp, 0);
	if (err)
		goto err_queues;
	err = vblk_irqs_request(vb);
	if (err)
		goto err_queues;
	vblk_fault_probe(vb);
	err = vblk_create_disk(vb, &lim);
	if (err)
		goto err_irqs;
	vblk_tp_add_status(&vb->tp, VIRTIO_CONFIG_S_DRIVER_OK);
	vblk_probe_done(vb);
	err = vblk_add_disk(vb);
	if (err)
		goto err_irqs;
	vblk_pt_add(vb);

	dev_info(dev,
		 "%s: %llu sectors, %u+%u queues x %u (depth %u), %s %s, %s completion%s%s\n",
		 vb->disk->disk_name, (unsigned long long)get_capacity(vb->disk),
		 vb->nr_queues - vb->nr_poll, vb->nr_poll, vb->ring_size, vb->depth,
		 vb->tp.ops->name, vblk_irq_mode_names[vb->tp.irq_mode],
		 vblk_complete_names[vb->complete],
		 vb->indirect ? ", indirect" : "",
		 vb->event_idx ? ", event idx" : "");
	return 0;

err_irqs:
	/* Device quiet and handlers gone before the works they schedule. */
	vblk_reset_or_fence(vb);
	vblk_irqs_free(vb);
	cancel_work_sync(&vb->config_work);
	cancel_work_sync(&vb->reset_work);
	if (vb->disk)
		vblk_destroy_disk(vb);
	goto err_free_queues;
err_queues:
	vblk_reset_or_fence(vb);
err_free_queues:
	if (vb->dma_leaked)
		dev_err(dev, "leaking the DMA memory of a device that did not reset\n");
	else
		vblk_free_queues(vb, vb->nr_queues);
err_vectors:
	vb->tp.ops->free_irqs(&vb->tp);
err_reset:
	vblk_tp_add_status(&vb->tp, VIRTIO_CONFIG_S_FAILED);
	vb->tp.ops->exit(&vb->tp);
err_free:
	dev_set_drvdata(dev, NULL);
	kfree(vb);
	return err;
}

/*
 * The first step of removal, the same whatever the state: the queue must
 * run (unquiesced, stopped hctxs started) so that del_gendisk can drain
 * it. A running device goes on serving it (DELETING: a request that then
 * times out fails the device); a device that is gone, or paused and so
 * never coming back, is failed now with everything parked.
 */
static void vblk_remove_begin(struct vblk_dev *vb)
{
	mutex_lock(&vb->lifecycle_lock);
	switch (vb->state) {
	case VBLK_LIVE:
		if (vb->tp.ops->present(&vb->tp))
			vblk_change_state(vb, VBLK_DELETING);
		else
			vblk_die_locked(vb, "device removed");
		break;
	case VBLK_PAUSED:
		vblk_die_locked(vb, "device removed while paused");
		break;
	default:
		break;
	}
	mutex_unlock(&vb->lifecycle_lock);
}

/*
 * Device side down; the disk may stay open (vb lives until free_disk).
 * The passthrough char device goes first (no new opens; its open files
 * hold vb). del_gendisk drains the queue, passthrough commands included;
 * then the device stops for good (GONE), and only after its interrupts
 * are freed can no work item be scheduled again.
 */
void vblk_dev_remove(struct vblk_dev *vb)
{
	vblk_pt_remove(vb);
	vblk_remove_begin(vb);
	cancel_work_sync(&vb->config_work);
	del_gendisk(vb->disk);
	mutex_lock(&vb->lifecycle_lock);
	vblk_change_state(vb, VBLK_GONE);
	mutex_unlock(&vb->lifecycle_lock);
	vblk_irqs_free(vb);
	cancel_work_sync(&vb->config_work);
	cancel_work_sync(&vb->reset_work);

	mutex_lock(&vb->lifecycle_lock);
	if (vb->dma_leaked)
		dev_err(vblk_dev_of(vb), "leaking the DMA memory of a device that did not reset\n");
	else
		vblk_free_queues(vb, vb->nr_queues);
	vb->tp.ops->free_irqs(&vb->tp);
	vb->tp.ops->exit(&vb->tp);
	mutex_unlock(&vb->lifecycle_lock);
	blk_mq_free_tag_set(&vb->tag_set);
	put_disk(vb->disk);
}
