// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: notifications in both directions.
 *
 * Driver to device: the doorbell write. Device to driver: the interrupt
 * handlers of the three vector layouts (a vector per queue, one vector
 * shared by all queues, the INTx line) and the completion dispatch that
 * follows them: harvest in hard-irq context, or hand the queue to irq_poll
 * so completions run in softirq context with a bounded budget.
 *
 * Locking: every ring access is under the queue lock (include/vblk.h); the
 * interrupt counters are written only by the handler that owns them. A
 * ring that refuses a used element and a config interrupt are reported
 * upward through vb->events, never by calling the lifecycle code.
 */
#include <linux/interrupt.h>
#include <linux/irq_poll.h>

#include "vblk.h"
#include "vblk_compat.h"
#include "vblk_fault.h"

/*
 * The interrupt status bits, the same on both transports (virtio 1.x,
 * 4.1.4.5 and 4.2.2): a queue interrupt, a config change.
 */
#define VBLK_ISR_QUEUE		0x1
#define VBLK_ISR_CONFIG		0x2

/* Harvest at most this many used elements per lock hold. */
#define VBLK_HARVEST_BATCH	32

/*
 * The doorbell: the device learns which queue has news from the value.
 * A posted MMIO write, but under a hypervisor it is a VM exit, which is why
 * callers do it after dropping the queue lock (seed thread 000).
 */
void vblk_notify(struct vblk_queue *q)
{
	if (vblk_fault_drop_kick(&q->vb->fault))
		return;
	if (q->doorbell32)
		iowrite32(q->index, q->doorbell);
	else
		iowrite16(q->index, q->doorbell);
}

static void vblk_ring_failed(struct vblk_queue *q)
{
	static const char * const what[] = {
		[VBLK_RING_E_IDX] = "used index beyond what was made available",
		[VBLK_RING_E_ID] = "used id out of range",
		[VBLK_RING_E_IDLE] = "used id not in flight",
		[VBLK_RING_E_LEN] = "used length larger than the buffers",
	};
	const char *why = "invalid used element";

	if (q->ring.err < ARRAY_SIZE(what) && what[q->ring.err])
		why = what[q->ring.err];
	dev_err_ratelimited(vblk_dev_of(q->vb), "queue %u: %s (%u)\n",
			    q->index, why, q->ring.err_val);
	q->vb->events->failed(q->vb, why);
}

/*
 * Under the queue lock: ask for the next interrupt, at the first used
 * element or, with irq_coalesce, once that share of the requests the
 * device holds came back (fewer interrupts, larger batches; the requests
 * that wait meanwhile are at most that share). If what the interrupt
 * would announce is there already, mute again and say so: the caller
 * harvests it itself instead of waiting for an interrupt that may never
 * come.
 */
static bool vblk_rearm_locked(struct vblk_queue *q)
{
	if (vblk_ring_enable_cb_delayed(&q->ring, READ_ONCE(vblk_irq_coalesce)))
		return true;
	vblk_ring_disable_cb(&q->ring);
	return false;
}

/* What one lock hold took off the ring. */
struct vblk_take {
	void *tokens[VBLK_HARVEST_BATCH];
	u8 status[VBLK_HARVEST_BATCH];	/* each one's status byte, read with it */
	int n;
	bool failed;	/* the ring refused a used element */
	bool idle;	/* re-armed with nothing left to harvest */
	bool may_sleep;	/* the harvest runs where it may sleep */
	bool race;	/* test hook: the status race window is open */
};

/*
 * One hold of the queue lock: mute the interrupt first when asked (the
 * hard-irq handler's first take: without EVENT_IDX muting is a store
 * under the lock, and a hold of its own would cost a lock round trip per
 * interrupt), take up to want used elements and their status bytes and,
 * when the ring ran dry first and rearm is asked for, re-arm the interrupt
 * in the same hold. The status byte is read here, not at completion: once
 * the lock is dropped a restart may rebuild the ring memory the status
 * bytes live in. Elements taken make this harvest one of q->harvesters
 * until vblk_queue_done(), which a stop waits for.
 */
static void vblk_queue_take(struct vblk_queue *q, struct vblk_take *t,
			    int want, bool rearm, bool mute)
{
	unsigned long flags;
	bool stopped;
	int ret = 0;
	u32 len;

	t->idle = false;
	spin_lock_irqsave(&q->lock, flags);
	/*
	 * A stopped device's ring is the lifecycle code's until restart; a
	 * silent one (test hook) shows nothing, as if it were stopped.
	 */
	stopped = q->offline || vblk_fault_silent(&q->vb->fault);
	if (mute && !stopped)
		vblk_ring_disable_cb(&q->ring);
	for (t->n = 0; !stopped && t->n < want; t->n++) {
		void **token = &t->tokens[t->n];

		ret = vblk_ring_get_used(&q->ring, token, &len);
		if (ret <= 0)
			break;
		if (!t->race && in_task() &&
		    vblk_fault_race_take(&q->vb->fault)) {
			vblk_mq_fault_status(q, *token);
			t->race = true;
		}
		t->status[t->n] = vblk_mq_used_status(q, *token);
	}
	q->stats.completions += t->n;
	if (t->n)
		atomic_inc(&q->harvesters);
	t->failed = ret < 0;
	if (stopped)
		t->idle = true;		/* nothing to wait for: stop */
	else if (rearm && t->n < want)
		t->idle = vblk_rearm_locked(q);
	spin_unlock_irqrestore(&q->lock, flags);
}

/* Complete what a take took, outside the lock; the harvest is then done. */
static void vblk_queue_done(struct vblk_queue *q, struct vblk_take *t,
			    struct io_comp_batch *iob)
{
	int i;

	if (!t->n)
		return;
	if (t->race)
		vblk_fault_race_window(q, t->may_sleep);
	for (i = 0; i < t->n; i++)
		vblk_mq_complete_used(q, t->tokens[i], t->status[i], iob);
	if (atomic_dec_and_test(&q->harvesters))
		wake_up_var(&q->harvesters);
}

/*
 * Take up to budget used elements off the ring and complete their requests
 * outside the lock, so that submitters are not held up by completion work;
 * requests blk-mq can end in a batch go to iob (may be NULL). mute: mute
 * the interrupt in the first take (vblk_queue_take).
 *
 * With rearm (iob is then the caller's own), stop only once the interrupt
 * is re-armed on an idle ring, or the budget is spent (*idle says which).
 * The take that finds the ring run dry re-arms in the same lock hold, as
 * the in-tree driver's virtblk_done does: one hold per interrupt in the
 * common case. (Ending the gathered batch before a separate re-arm hold
 * caught completions that came meanwhile, at the price of a second lock
 * round trip on every interrupt; under icount the single hold measured free
 * or slightly better: docs/benchmark.md, "Round three, Part 2".) A re-arm
 * that finds more arrived has muted again: take those too.
 * The loop is bounded in rounds too, not only in completions: a device
 * that keeps saying there is more while there is none does not keep a
 * CPU here (*idle stays false: the caller hands the queue to irq_poll).
 */
static int vblk_queue_drain(struct vblk_queue *q, int budget,
			    struct io_comp_batch *iob, bool rearm, bool *idle,
			    bool may_sleep, bool mute)
{
	struct vblk_take t = { .may_sleep = may_sleep };
	int rounds = budget / VBLK_HARVEST_BATCH + 4;
	int done = 0;

	*idle = false;
	while (done < budget && rounds--) {
		int want = min(budget - done, VBLK_HARVEST_BATCH);

		t.race = false;
		vblk_queue_take(q, &t, want, rearm, mute);
		mute = false;
		vblk_queue_done(q, &t, iob);
		done += t.n;
		if (t.failed) {
			vblk_ring_failed(q);
			*idle = true;
			break;
		}
		if (t.n == want)
			continue;
		/* Ran dry; with rearm, the take re-armed or found more. */
		if (!rearm || t.idle) {
			*idle = t.idle;
			break;
		}
	}
	if (done > q->stats.max_batch)
		q->stats.max_batch = done;
	/* A queue stopped on a full ring restarts here (it checks itself). */
	if (done && q->hctx)
		blk_mq_start_stopped_hw_queue(q->hctx, true);
	return done;
}

/* Harvest without touching the interrupt state (poll queues, irq_poll). */
int vblk_queue_harvest(struct vblk_queue *q, int budget,
		       struct io_comp_batch *iob)
{
	bool idle;

	return vblk_queue_drain(q, budget, iob, false, &idle, false, false);
}

/*
 * The request timeout's harvest (process context). What it finds had its
 * interrupt held back (irq_coalesce) or lost, and the interrupt is re-armed
 * as the handler would: a harvest that moved last_used past used_event
 * without re-arming would leave the device no index to interrupt at until
 * the 16-bit index wrapped, and every later request would wait for a
 * timeout too. irq_poll raises a softirq: with bottom halves off, so that
 * it runs when they come back on rather than at some later interrupt.
 */
int vblk_queue_rescue(struct vblk_queue *q)
{
	unsigned long flags;
	bool idle = true;
	int done;

	done = vblk_queue_drain(q, q->ring.num, NULL, !q->polled, &idle, true,
				false);
	if (!idle) {
		local_bh_disable();
		irq_poll_sched(&q->iop);
		local_bh_enable();
	}
	if (done) {
		spin_lock_irqsave(&q->lock, flags);
		q->stats.rescued += done;
		spin_unlock_irqrestore(&q->lock, flags);
	}
	return done;
}

/*
 * The request timeout's doorbell, for a request still unanswered. A
 * doorbell the device missed leaves it unaware of the new requests, and
 * as its avail_event then stays behind, kick_prepare suppresses every
 * later doorbell as well. A doorbell is always allowed; one too many only
 * makes the device look at an avail ring it has already seen.
 */
void vblk_queue_rekick(struct vblk_queue *q)
{
	unsigned long flags;

	spin_lock_irqsave(&q->lock, flags);
	q->stats.rekicks++;
	spin_unlock_irqrestore(&q->lock, flags);
	vblk_notify(q);
}

static bool vblk_queue_rearm(struct vblk_queue *q)
{
	unsigned long flags;
	bool idle;

	spin_lock_irqsave(&q->lock, flags);
	idle = q->offline || vblk_rearm_locked(q);
	spin_unlock_irqrestore(&q->lock, flags);
	return idle;
}

static void vblk_queue_mute(struct vblk_queue *q)
{
	unsigned long flags;

	/* With EVENT_IDX muting writes nothing: spare the lock round trip. */
	if (q->ring.event_idx)
		return;
	spin_lock_irqsave(&q->lock, flags);
	if (!q->offline)
		vblk_ring_disable_cb(&q->ring);
	spin_unlock_irqrestore(&q->lock, flags);
}

/*
 * A hard-irq run harvests at most this many rings' worth before handing
 * the queue to irq_poll: a device that keeps the ring busy must not keep
 * a CPU in interrupt context.
 */
#define VBLK_HARDIRQ_RINGS	4

/*
 * Hard-irq completion: harvest with interrupts muted until the re-arm finds
 * the ring idle; the mute, the harvest and the re-arm share one lock hold
 * when the ring holds at most a take's worth (vblk_queue_drain). Requests
 * are ended in one batch where blk-mq allows it.
 */
static int vblk_complete_hardirq(struct vblk_queue *q)
{
	DEFINE_IO_COMP_BATCH(iob);
	int done;
	bool idle;

	done = vblk_queue_drain(q, VBLK_HARDIRQ_RINGS * q->ring.num, &iob,
				true, &idle, false, true);
	vblk_mq_flush_batch(&iob);
	if (!idle)
		irq_poll_sched(&q->iop);
	return done;
}

/* Softirq completion: mute the queue and let irq_poll do the work. */
static void vblk_complete_softirq(struct vblk_queue *q)
{
	vblk_queue_mute(q);
	irq_poll_sched(&q->iop);
}

/*
 * irq_poll callback. Under budget means the ring ran dry: leave polling
 * and re-arm; if elements arrived before the re-arm, poll again rather
 * than wait for an interrupt that was suppressed. The re-arm comes after
 * irq_poll_complete(): an interrupt right after it must find the poll
 * unscheduled, or its irq_poll_sched() would be lost.
 */
static int vblk_irq_poll(struct irq_poll *iop, int budget)
{
	struct vblk_queue *q = container_of(iop, struct vblk_queue, iop);
	DEFINE_IO_COMP_BATCH(iob);
	int done;

	q->stats.polls++;
	done = vblk_queue_harvest(q, budget, &iob);
	vblk_mq_flush_batch(&iob);
	if (!done)
		q->stats.spurious++;
	if (done < budget) {
		irq_poll_complete(iop);
		if (!vblk_queue_rearm(q))
			irq_poll_sched(iop);
	}
	return done;
}

/*
 * Only the handler of the queue's vector (or of the shared vector) runs
 * this, so the interrupt counters need no lock. A softirq queue counts its
 * spurious interrupts in the poll that finds nothing.
 */
static void vblk_queue_interrupt(struct vblk_queue *q)
{
	if (vblk_fault_drop_irq(&q->vb->fault))
		return;
	q->stats.irqs++;
	if (q->softirq)
		vblk_complete_softirq(q);
	else if (!vblk_complete_hardirq(q))
		q->stats.spurious++;
}

static irqreturn_t vblk_irq_queue(int irq, void *data)
{
	vblk_queue_interrupt(data);
	return IRQ_HANDLED;
}

static void vblk_all_queues_interrupt(struct vblk_dev *vb)
{
	unsigned int i;

	vb->shared_irqs++;
	for (i = 0; i < vb->nr_queues; i++)
		if (!vb->queues[i].polled)
			vblk_queue_interrupt(&vb->queues[i]);
}

static irqreturn_t vblk_irq_shared(int irq, void *data)
{
	vblk_all_queues_interrupt(data);
	return IRQ_HANDLED;
}

static irqreturn_t vblk_irq_config(int irq, void *data)
{
	struct vblk_dev *vb = data;

	vb->config_irqs++;
	vb->events->config_changed(vb);
	return IRQ_HANDLED;
}

/*
 * One line (PCI INTx, the virtio-mmio interrupt): it may be shared with
 * other devices, so the status register, read and acknowledged by the
 * transport, tells whether it was us and for what.
 */
static irqreturn_t vblk_irq_intx(int irq, void *data)
{
	struct vblk_dev *vb = data;
	u8 isr = vb->tp.ops->read_isr(&vb->tp);

	if (!isr)
		return IRQ_NONE;
	if (isr & VBLK_ISR_CONFIG)
		vblk_irq_config(irq, vb);
	if (isr & VBLK_ISR_QUEUE)
		vblk_all_queues_interrupt(vb);
	return IRQ_HANDLED;
}

static int vblk_irq_request(struct vblk_dev *vb, unsigned int vec,
			    irq_handler_t fn, void *data, unsigned long flags)
{
	int irq = vb->tp.ops->irq(&vb->tp, vec);

	if (irq < 0)
		return irq;
	return request_irq(irq, fn, flags, dev_name(vb->tp.dev), data);
}

static void vblk_irq_release(struct vblk_dev *vb, unsigned int vec, void *data)
{
	free_irq(vb->tp.ops->irq(&vb->tp, vec), data);
}

/* Queues that get interrupts at all (poll queues come last). */
static unsigned int vblk_irq_queues(struct vblk_dev *vb)
{
	return vb->nr_queues - vb->nr_poll;
}

int vblk_irqs_request(struct vblk_dev *vb)
{
	unsigned int i;
	int err;

	switch (vb->tp.irq_mode) {
	case VBLK_IRQ_INTX:
		return vblk_irq_request(vb, 0, vblk_irq_intx, vb, IRQF_SHARED);
	case VBLK_IRQ_SHARED:
		err = vblk_irq_request(vb, 0, vblk_irq_config, vb, 0);
		if (err)
			return err;
		err = vblk_irq_request(vb, 1, vblk_irq_shared, vb, 0);
		if (err)
			vblk_irq_release(vb, 0, vb);
		return err;
	default:
		break;
	}
	err = vblk_irq_request(vb, 0, vblk_irq_config, vb, 0);
	if (err)
		return err;
	for (i = 0; i < vblk_irq_queues(vb); i++) {
		err = vblk_irq_request(vb, i + 1, vblk_irq_queue,
				       &vb->queues[i], 0);
		if (err)
			goto unwind;
	}
	return 0;
unwind:
	while (i--)
		vblk_irq_release(vb, i + 1, &vb->queues[i]);
	vblk_irq_release(vb, 0, vb);
	return err;
}

void vblk_irqs_free(struct vblk_dev *vb)
{
	unsigned int i;

	switch (vb->tp.irq_mode) {
	case VBLK_IRQ_INTX:
		vblk_irq_release(vb, 0, vb);
		return;
	case VBLK_IRQ_SHARED:
		vblk_irq_release(vb, 1, vb);
		vblk_irq_release(vb, 0, vb);
		return;
	default:
		break;
	}
	for (i = 0; i < vblk_irq_queues(vb); i++)
		vblk_irq_release(vb, i + 1, &vb->queues[i]);
	vblk_irq_release(vb, 0, vb);
}

/* Wait for every running handler of the device to return. */
void vblk_irqs_sync(struct vblk_dev *vb)
{
	int i, n = max(vb->tp.nvec, 1);

	for (i = 0; i < n; i++)
		synchronize_irq(vb->tp.ops->irq(&vb->tp, i));
}

void vblk_queue_init_completion(struct vblk_queue *q)
{
	irq_poll_init(&q->iop, vblk_poll_budget, vblk_irq_poll);
}

/*
 * Offline: the device was stopped, and no harvest may touch the ring until
 * vblk_queue_start() rebuilds it; a running irq_poll is waited for and
 * stays disabled, and so is every harvest that took used elements before
 * (the poller's and the request timeout's too, which run where no
 * interrupt sync reaches). Online undoes that. Idempotent either way,
 * which irq_poll_disable()/irq_poll_enable() are not. Process context.
 */
static void vblk_queue_set_offline(struct vblk_queue *q, bool offline)
{
	unsigned long flags;
	bool was;

	spin_lock_irqsave(&q->lock, flags);
	was = q->offline;
	q->offline = offline;
	spin_unlock_irqrestore(&q->lock, flags);
	if (offline)
		wait_var_event(&q->harvesters, !atomic_read(&q->harvesters));
	if (was == offline)
		return;
	if (offline)
		irq_poll_disable(&q->iop);
	else
		irq_poll_enable(&q->iop);
}

void vblk_queue_offline(struct vblk_queue *q)
{
	vblk_queue_set_offline(q, true);
}

void vblk_queue_online(struct vblk_queue *q)
{
	vblk_queue_set_offline(q, false);
}
