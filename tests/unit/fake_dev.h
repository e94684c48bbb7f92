/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A tiny fake virtio device for the ring's host tests: it finds the rings
 * through the bus addresses the driver programmed (in these tests a bus
 * address is simply the pointer), consumes avail entries, walks chains the
 * way a device would, and writes used elements. Hostile writes are made by
 * the tests directly on top of it.
 */
#ifndef VBLK_FAKE_DEV_H
#define VBLK_FAKE_DEV_H

#include <stdint.h>
#include <stdlib.h>
#include "vblk_ring.h"

struct fake_dev {
	struct vblk_desc *desc;
	struct vblk_avail *avail;
	struct vblk_used *used;
	unsigned int num;
	u16 last_avail;		/* next avail entry to fetch */
	u16 used_idx;		/* device's producer index */
	u16 *q;			/* fetched, not yet completed heads */
	unsigned int qn;
	/* Indirect tables are only followed inside this window (fuzzing). */
	uintptr_t tbl_lo, tbl_hi;
};

/* vblk_ring_user.h's count of platform (DMA) barriers: one per program. */
unsigned long vblk_test_platform_barriers;

static inline void *fake_bus_to_virt(u64 addr)
{
	return (void *)(uintptr_t)addr;
}

static inline u64 fake_virt_to_bus(const void *p)
{
	return (u64)(uintptr_t)p;
}

static inline int fake_dev_init(struct fake_dev *d, const struct vblk_ring *r)
{
	d->desc = fake_bus_to_virt(r->desc_addr);
	d->avail = fake_bus_to_virt(r->avail_addr);
	d->used = fake_bus_to_virt(r->used_addr);
	d->num = r->num;
	d->last_avail = 0;
	d->used_idx = 0;
	d->qn = 0;
	d->tbl_lo = 0;
	d->tbl_hi = UINTPTR_MAX;
	free(d->q);
	d->q = calloc(r->num, sizeof(*d->q));
	return d->q ? 0 : -1;
}

static inline void fake_dev_free(struct fake_dev *d)
{
	free(d->q);
	d->q = NULL;
}

static inline __le16 *fake_avail_event(struct fake_dev *d)
{
	return (__le16 *)&d->used->ring[d->num];
}

static inline __le16 *fake_used_event(struct fake_dev *d)
{
	return &d->avail->ring[d->num];
}

/* Fetch every published avail entry; returns how many, -1 on overflow. */
static inline int fake_dev_fetch(struct fake_dev *d)
{
	u16 idx = le16_to_cpu(READ_ONCE(d->avail->idx));
	int n = 0;

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	while (d->last_avail != idx) {
		if (d->qn >= d->num)
			return -1;
		d->q[d->qn++] = le16_to_cpu(
			d->avail->ring[d->last_avail & (d->num - 1)]);
		d->last_avail++;
		n++;
	}
	return n;
}

/*
 * Walk the chain at head like a device: returns the writable byte count,
 * or -1 if the chain is malformed (bad index, loop, INDIRECT misuse,
 * readable after writable). *ndesc gets the number of ring descriptors.
 */
static inline long long fake_dev_chain(struct fake_dev *d, u16 head,
				       unsigned int *ndesc)
{
	const struct vblk_desc *tbl = d->desc;
	unsigned int max = d->num, i = head, steps = 0, nd = 0;
	long long wsum = 0;
	bool writing = false, in_tbl = false;

	if (head >= d->num)
		return -1;
	for (;;) {
		const struct vblk_desc *x = &tbl[i];
		u16 fl = le16_to_cpu(x->flags);

		if (++steps > max)
			return -1;	/* loop */
		if (!in_tbl)
			nd++;
		if (fl & VBLK_DESC_F_INDIRECT) {
			u64 a = le64_to_cpu(x->addr);
			u32 len = le32_to_cpu(x->len);

			if (in_tbl || (fl & VBLK_DESC_F_NEXT) || !len ||
			    len % sizeof(struct vblk_desc))
				return -1;
			if (a < d->tbl_lo || a >= d->tbl_hi ||
			    d->tbl_hi - a < len ||
			    (a - d->tbl_lo) % sizeof(struct vblk_desc))
				return -1;
			tbl = fake_bus_to_virt(a);
			max = len / sizeof(struct vblk_desc);
			in_tbl = true;
			steps = 0;
			i = 0;
			continue;
		}
		if (fl & VBLK_DESC_F_WRITE) {
			writing = true;
			wsum += le32_to_cpu(x->len);
		} else if (writing) {
			return -1;
		}
		if (!(fl & VBLK_DESC_F_NEXT))
			break;
		i = le16_to_cpu(x->next);
		if (i >= max)
			return -1;
	}
	if (ndesc)
		*ndesc = nd;
	return wsum;
}

/* Write one used element and publish it. */
static inline void fake_dev_put_used(struct fake_dev *d, u32 id, u32 len)
{
	struct vblk_used_elem *e = &d->used->ring[d->used_idx & (d->num - 1)];

	e->id = cpu_to_le32(id);
	e->len = cpu_to_le32(len);
	d->used_idx++;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	WRITE_ONCE(d->used->idx, cpu_to_le16(d->used_idx));
}

/* Complete the k-th fetched head with len; returns the head. */
static inline u16 fake_dev_complete(struct fake_dev *d, unsigned int k,
				    u32 len)
{
	u16 head = d->q[k];

	d->q[k] = d->q[--d->qn];
	fake_dev_put_used(d, head, len);
	return head;
}

/* Complete the k-th fetched head with its full writable length. */
static inline int fake_dev_complete_full(struct fake_dev *d, unsigned int k)
{
	long long w = fake_dev_chain(d, d->q[k], NULL);

	if (w < 0)
		return -1;
	fake_dev_complete(d, k, (u32)w);
	return 0;
}

/* The spec's rule for the device's interrupt decision (EVENT_IDX). */
static inline bool fake_need_event(u16 event, u16 new, u16 old)
{
	return (u16)(new - event - 1) < (u16)(new - old);
}

#endif /* VBLK_FAKE_DEV_H */
