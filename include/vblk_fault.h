/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vblk: the fault-injection test hook (vblk/lose), compiled in only when
 * the build sets CONFIG_VBLK_FAULT_INJECT (Kbuild: `make ...
 * CONFIG_VBLK_FAULT_INJECT=y`, `scripts/kbuild --fault-inject`; the guest
 * suite's build). Without it struct vblk_fault is empty, every check below
 * is a constant false the compiler drops, there is no vblk/lose file, and
 * vblk_fault.c is not built.
 *
 * Ownership and locking: struct vblk_fault lives in struct vblk_dev. Only
 * the lose attribute (vblk_fault.c, process context) sets it; the doorbell
 * and the interrupt handlers use it up (atomics, READ_ONCE), without the
 * queue lock: a lost doorbell or interrupt is meant to be a race anyway.
 */
#ifndef VBLK_FAULT_H
#define VBLK_FAULT_H

#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/types.h>

#ifdef CONFIG_VBLK_FAULT_INJECT

/*
 * This many of the next queue interrupts are ignored, or doorbells left
 * unwritten, so that the request timeout's recovery can be exercised;
 * while silent is set the driver sees no answer at all (doorbells
 * dropped, used ring ignored), which is a device that stopped answering
 * as far as the driver can tell.
 */
struct vblk_fault {
	atomic_t lose_irqs;
	atomic_t lose_kicks;
	bool silent;
	atomic_t race;		/* status race windows still to open */
	atomic_t raced;		/* ... opened so far */
	atomic_t slot_reset_fail; /* PCI slot resets to refuse */
	atomic_t seg_over;	/* data descriptors longer than size_max */
};

/* Use up one of *n if any is left. */
static inline bool vblk_fault_lose_one(atomic_t *n)
{
	return unlikely(atomic_read(n)) && atomic_dec_if_positive(n) >= 0;
}

/* The device looks dead: harvest nothing. */
static inline bool vblk_fault_silent(struct vblk_fault *f)
{
	return unlikely(READ_ONCE(f->silent));
}

/* Leave this doorbell unwritten. */
static inline bool vblk_fault_drop_kick(struct vblk_fault *f)
{
	return vblk_fault_silent(f) || vblk_fault_lose_one(&f->lose_kicks);
}

/* Ignore this queue interrupt. */
static inline bool vblk_fault_drop_irq(struct vblk_fault *f)
{
	return vblk_fault_lose_one(&f->lose_irqs);
}

/*
 * The status race (issue 22, defect 1): a harvest in process context (the
 * request timeout's, or the io_uring poller's) that took a used element
 * while a race is armed writes an error status for it, as a device that
 * failed the request would, and then holds its window open
 * (vblk_fault_race_window) while a recovery forced by the hook runs.
 */
static inline bool vblk_fault_race_take(struct vblk_fault *f)
{
	if (!vblk_fault_lose_one(&f->race))
		return false;
	atomic_inc(&f->raced);
	return true;
}

/* A PCI slot reset that this device refuses (AER recovery ends in DISCONNECT). */
static inline bool vblk_fault_slot_reset_fails(struct vblk_fault *f)
{
	return vblk_fault_lose_one(&f->slot_reset_fail);
}

/* Witness: a data descriptor longer than the device's size_max. */
static inline void vblk_fault_seg_len(struct vblk_fault *f, u32 len, u32 max)
{
	if (unlikely(len > max))
		atomic_inc(&f->seg_over);
}

/* The vblk/lose attribute and the load-time notice (vblk_fault.c). */
struct device_attribute;
void vblk_fault_size_max(u32 *size_max);
struct vblk_dev;
struct vblk_queue;
void vblk_fault_race_window(struct vblk_queue *q, bool may_sleep);
void vblk_fault_probe(struct vblk_dev *vb);
extern struct device_attribute vblk_fault_attr_lose;
#define VBLK_FAULT_ATTR		(&vblk_fault_attr_lose.attr)
void vblk_fault_announce(void);

#else /* !CONFIG_VBLK_FAULT_INJECT */

struct vblk_fault { };

static inline bool vblk_fault_silent(struct vblk_fault *f)
{
	return false;
}

static inline bool vblk_fault_drop_kick(struct vblk_fault *f)
{
	return false;
}

static inline bool vblk_fault_drop_irq(struct vblk_fault *f)
{
	return false;
}

static inline bool vblk_fault_race_take(struct vblk_fault *f)
{
	return false;
}

static inline bool vblk_fault_slot_reset_fails(struct vblk_fault *f)
{
	return false;
}

struct vblk_dev;
struct vblk_queue;
static inline void vblk_fault_race_window(struct vblk_queue *q,
					  bool may_sleep)
{
}

static inline void vblk_fault_probe(struct vblk_dev *vb)
{
}

static inline void vblk_fault_seg_len(struct vblk_fault *f, u32 len, u32 max)
{
}

static inline void vblk_fault_size_max(u32 *size_max)
{
}

/*
 * No attribute: in an attribute list this NULL ends the list, so it goes
 * last (before the terminating NULL).
 */
#define VBLK_FAULT_ATTR		NULL

static inline void vblk_fault_announce(void)
{
}

#endif /* CONFIG_VBLK_FAULT_INJECT */

#endif /* VBLK_FAULT_H */
