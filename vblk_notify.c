// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: notifications in both directions.
 *
 * Driver to device: the doorbell write. Device to driver: the interrupt
 * handlers of the three vector layouts (a vector per queue, one vector
 * shared by all queues, the INTx line) and the completion dispatch that
 * follows them: harvest in hard-irq context, or hand the queue to irq_poll
 * so completions run in softirq context with a bounded budget.
 */
#include <linux/interrupt.h>
#include <linux/irq_poll.h>
#include <linux/virtio_pci.h>

#include "vblk.h"
#include "vblk_compat.h"

/* ISR bit 0: a queue interrupt (virtio 1.x, 4.1.4.5). */
#define VBLK_ISR_QUEUE		0x1

/* Harvest at most this many used elements per lock hold. */
#define VBLK_HARVEST_BATCH	32

/*
 * The doorbell: the device learns which queue has news from the value.
 * A posted MMIO write, but under a hypervisor it is a VM exit, which is why
 * callers do it after dropping the queue lock (seed thread 000).
 */
void vblk_notify(struct vblk_queue *q)
{
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
	vblk_device_failed(q->vb, why);
}

/*
 * Take up to budget used elements off the ring and complete their
 * requests. The ring is read under the queue lock, in batches, and the
 * requests are completed outside it so that the submitters are not held up
 * by completion work. Returns the number of elements harvested.
 */
int vblk_queue_harvest(struct vblk_queue *q, int budget)
{
	void *tokens[VBLK_HARVEST_BATCH];
	unsigned long flags;
	int done = 0, n, i, ret = 0;
	u32 len;

	while (done < budget) {
		int want = min(budget - done, VBLK_HARVEST_BATCH);

		spin_lock_irqsave(&q->lock, flags);
		for (n = 0; n < want; n++) {
			ret = vblk_ring_get_used(&q->ring, &tokens[n], &len);
			if (ret <= 0)
				break;
		}
		q->stats.completions += n;
		spin_unlock_irqrestore(&q->lock, flags);

		for (i = 0; i < n; i++)
			vblk_mq_complete_used(q, tokens[i]);
		done += n;
		if (ret < 0)
			vblk_ring_failed(q);
		if (n < want)
			break;
	}
	if (done > q->stats.max_batch)
		q->stats.max_batch = done;
	/* A queue stopped on a full ring restarts here (it checks itself). */
	if (done && q->hctx)
		blk_mq_start_stopped_hw_queue(q->hctx, true);
	return done;
}

static bool vblk_queue_rearm(struct vblk_queue *q)
{
	unsigned long flags;
	bool idle;

	spin_lock_irqsave(&q->lock, flags);
	idle = vblk_ring_enable_cb(&q->ring);
	if (!idle)
		vblk_ring_disable_cb(&q->ring);
	spin_unlock_irqrestore(&q->lock, flags);
	return idle;
}

static void vblk_queue_mute(struct vblk_queue *q)
{
	unsigned long flags;

	spin_lock_irqsave(&q->lock, flags);
	vblk_ring_disable_cb(&q->ring);
	spin_unlock_irqrestore(&q->lock, flags);
}

/*
 * Hard-irq completion: harvest with interrupts muted, then re-arm, and go
 * round again if elements slipped in before the re-arm. Bounded: a device
 * that keeps the ring busy forever is handed over to the next interrupt.
 */
static int vblk_complete_hardirq(struct vblk_queue *q)
{
	int total = 0, rounds;

	vblk_queue_mute(q);
	for (rounds = 0; rounds < 8; rounds++) {
		total += vblk_queue_harvest(q, INT_MAX);
		if (vblk_queue_rearm(q))
			break;
	}
	if (rounds == 8)
		vblk_queue_rearm(q);
	return total;
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
 * than wait for an interrupt that was suppressed.
 */
static int vblk_irq_poll(struct irq_poll *iop, int budget)
{
	struct vblk_queue *q = container_of(iop, struct vblk_queue, iop);
	int done;

	q->stats.polls++;
	done = vblk_queue_harvest(q, budget);
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
	vblk_config_changed(vb);
	return IRQ_HANDLED;
}

/*
 * INTx: the line may be shared with other devices, so the ISR register
 * (read clears it) tells whether it was us and for what.
 */
static irqreturn_t vblk_irq_intx(int irq, void *data)
{
	struct vblk_dev *vb = data;
	u8 isr = vblk_pci_read_isr(&vb->pci);

	if (!isr)
		return IRQ_NONE;
	if (isr & VIRTIO_PCI_ISR_CONFIG)
		vblk_irq_config(irq, vb);
	if (isr & VBLK_ISR_QUEUE)
		vblk_all_queues_interrupt(vb);
	return IRQ_HANDLED;
}

static int vblk_irq_request(struct vblk_dev *vb, unsigned int vec,
			    irq_handler_t fn, void *data, unsigned long flags)
{
	struct pci_dev *pdev = vb->pci.pdev;

	return request_irq(pci_irq_vector(pdev, vec), fn, flags,
			   dev_name(&pdev->dev), data);
}

static void vblk_irq_release(struct vblk_dev *vb, unsigned int vec, void *data)
{
	free_irq(pci_irq_vector(vb->pci.pdev, vec), data);
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

	switch (vb->pci.irq_mode) {
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

	switch (vb->pci.irq_mode) {
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
	struct pci_dev *pdev = vb->pci.pdev;
	int i, n = max(vb->pci.nvec, 1);

	for (i = 0; i < n; i++)
		synchronize_irq(pci_irq_vector(pdev, i));
}

void vblk_queue_init_completion(struct vblk_queue *q)
{
	irq_poll_init(&q->iop, vblk_poll_budget, vblk_irq_poll);
}

void vblk_queue_stop_completion(struct vblk_queue *q)
{
	irq_poll_disable(&q->iop);
}
