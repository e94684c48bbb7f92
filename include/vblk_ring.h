/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vblk split virtqueue (virtio 1.x, section 2.7).
 *
 * The ring knows nothing of blk-mq or PCI: its owner hands it ring memory
 * (with the bus address the device must use) and per-slot bookkeeping
 * arrays, and calls it under one lock. This header builds in the kernel and
 * in userspace (tests/unit), where the same ring code is unit-tested and
 * fuzzed.
 *
 * Locking: every function taking a struct vblk_ring must be called with the
 * owner's per-queue lock held (or, for init, before the ring is shared).
 * The ring itself takes no locks and never allocates memory.
 *
 * Trust: the device writes only the used ring (and used->flags /
 * avail_event). Every value read from there is validated before use; the
 * descriptor table is never read back (a private shadow holds the chains).
 */
#ifndef VBLK_RING_H
#define VBLK_RING_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/compiler.h>
#include <linux/errno.h>
#include <asm/barrier.h>
#include <asm/byteorder.h>

/*
 * Two orderings (virtio 1.x, 2.7.13 and 6: VIRTIO_F_ORDER_PLATFORM):
 *
 * - Without VIRTIO_F_ORDER_PLATFORM the device is another CPU (the host's
 *   emulation) that reads and writes our memory coherently: SMP-strength
 *   barriers suffice, vblk_mb/rmb/wmb below (the kernel's virt_*(); on
 *   arm64 dmb ish, ishld, ishst).
 * - With it the device may be hardware whose accesses are ordered only as
 *   the platform orders DMA: the DMA barriers, vblk_platform_* below
 *   (dma_rmb/dma_wmb: on arm64 dmb oshld, oshst; mb() for the full one:
 *   dsb sy). On x86 both kinds are the same instructions.
 *
 * Each ring decides once, at init (vblk_ring_set_platform_order); the
 * barrier helpers in vblk_ring.c pick by it.
 *
 * Except for the full barrier on x86, used where a ring store is followed
 * by a load of what the device wrote (the doorbell and re-arm decisions).
 * virt_mb() is a locked add there, and QEMU's TCG turns a locked
 * instruction into a plain load and store when all vCPUs share one host
 * thread (a single vCPU, or -icount): the store can then pass the load on
 * the host, the device emulation in its own thread misses it too, and a
 * doorbell or an interrupt is lost for good. TCG always turns mfence into
 * a host barrier. On hardware and under KVM mfence costs a few cycles more
 * than a locked add, at most twice per batch of requests.
 */
#ifdef CONFIG_X86
#define vblk_mb()	mb()		/* mfence: see above */
#else
#define vblk_mb()	virt_mb()	/* order ring stores vs later loads */
#endif
#define vblk_rmb()	virt_rmb()	/* used idx before used elements */
#define vblk_wmb()	virt_wmb()	/* avail entries before avail idx */
#define vblk_platform_mb()	mb()
#define vblk_platform_rmb()	dma_rmb()
#define vblk_platform_wmb()	dma_wmb()
#else
#include "vblk_ring_user.h"
#endif

/* Descriptor flags (spec 2.7.5). */
#define VBLK_DESC_F_NEXT	1
#define VBLK_DESC_F_WRITE	2
#define VBLK_DESC_F_INDIRECT	4

/* avail->flags: driver asks for no interrupts (used without EVENT_IDX). */
#define VBLK_AVAIL_F_NO_INTERRUPT	1
/* used->flags: device asks for no notifications (used without EVENT_IDX). */
#define VBLK_USED_F_NO_NOTIFY		1

#define VBLK_RING_MAX_SIZE	32768

struct vblk_desc {
	__le64 addr;
	__le32 len;
	__le16 flags;
	__le16 next;
};

struct vblk_avail {
	__le16 flags;
	__le16 idx;
	__le16 ring[];		/* num entries, then used_event */
};

struct vblk_used_elem {
	__le32 id;
	__le32 len;
};

struct vblk_used {
	__le16 flags;
	__le16 idx;
	struct vblk_used_elem ring[];	/* num entries, then avail_event */
};

/*
 * Per-slot bookkeeping, private to the driver (never visible to the device).
 * A slot is indexed by the head descriptor of a chain. token != NULL means
 * the chain is in flight (owned by the device).
 */
struct vblk_ring_slot {
	void *token;
	u32 in_len;	/* bytes the device may write: bound for used.len */
	u16 ndesc;	/* descriptors the chain took in the ring (direct) */
	u16 next;	/* shadow of desc[i].next: the free list and chains */
};

/* Why vblk_ring_get_used() refused a used element. */
enum vblk_ring_err {
	VBLK_RING_OK = 0,
	VBLK_RING_E_IDX,	/* used->idx ran past what was made available */
	VBLK_RING_E_ID,		/* used.id out of range */
	VBLK_RING_E_IDLE,	/* used.id names a slot not in flight */
	VBLK_RING_E_LEN,	/* unused: an over-long used.len is tolerated */
};

struct vblk_ring {
	/* Set by vblk_ring_init(), read-only afterwards. */
	struct vblk_desc *desc;
	struct vblk_avail *avail;
	struct vblk_used *used;
	struct vblk_ring_slot *slot;
	u64 desc_addr, avail_addr, used_addr;	/* bus addresses */
	u16 num;		/* power of two */
	bool event_idx;		/* VIRTIO_F_RING_EVENT_IDX negotiated */
	bool indirect;		/* one slot per request, head index = tag */
	bool platform_order;	/* VIRTIO_F_ORDER_PLATFORM: DMA barriers */

	/* Producer side. */
	u16 avail_idx;		/* next avail->idx to publish (shadow) */
	u16 kick_idx;		/* avail->idx at the last kick_prepare */
	u16 free_head;		/* direct mode: free descriptor list */
	u16 num_free;
	u16 avail_flags;	/* shadow of avail->flags */

	/* Consumer side. */
	u16 last_used;		/* next used element to harvest */
	u16 in_flight;		/* chains the device owns */
	u32 len_over;		/* used.len above the writable bytes (clamped) */

	/* Set on the first invalid device write; the ring then refuses work. */
	bool broken;
	enum vblk_ring_err err;
	u32 err_val;		/* the offending value, for the report */
};

/*
 * A queue's indices as the driver keeps them and as they stand in shared
 * memory, for reading a stuck queue (vblk/rings): taken under the caller's
 * lock, device-written values read once each.
 */
struct vblk_ring_state {
	u16 avail_idx, kick_idx, last_used, in_flight, num_free;
	u16 shared_avail_idx;	/* avail->idx as published */
	u16 used_idx;		/* written by the device */
	u16 avail_event;	/* written by the device (EVENT_IDX) */
	u16 used_event;		/* written by the driver (EVENT_IDX) */
	u16 used_flags;		/* written by the device */
	bool broken;
};

void vblk_ring_state(struct vblk_ring *r, struct vblk_ring_state *st);

/* Bytes of ring memory for num entries (desc, avail, used, 16-byte aligned). */
size_t vblk_ring_mem_size(unsigned int num);

/*
 * Lay out a ring in mem (zeroed by the caller, at least
 * vblk_ring_mem_size(num) bytes, 16-byte aligned, bus address addr) with a
 * slot array of num entries. num must be a power of two <= 32768.
 * Returns 0 or -EINVAL.
 */
void vblk_ring_set_platform_order(struct vblk_ring *r, bool platform);
int vblk_ring_init(struct vblk_ring *r, void *mem, u64 addr, unsigned int num,
		   struct vblk_ring_slot *slot, bool event_idx, bool indirect);

/* Fill one descriptor of a driver-built table (a request's descriptors). */
static inline void vblk_desc_set(struct vblk_desc *d, u64 addr, u32 len,
				 bool device_writes)
{
	d->addr = cpu_to_le64(addr);
	d->len = cpu_to_le32(len);
	d->flags = cpu_to_le16(device_writes ? VBLK_DESC_F_WRITE : 0);
	d->next = 0;
}

/*
 * Make a request available. tbl[0..n-1] are its descriptors, readable ones
 * first (filled with vblk_desc_set); tbl_addr is their bus address.
 *
 * Indirect ring: the chain is one descriptor at index head (the caller's
 * tag, < num) pointing at tbl; tbl's NEXT links are set here.
 * Direct ring: head is ignored; tbl is copied into free ring descriptors.
 *
 * The avail entry is written but not published: see vblk_ring_publish().
 * Returns 0, -ENOSPC (direct ring full), -EBUSY (head in flight),
 * -EINVAL (bad arguments) or -EIO (ring broken).
 */
int vblk_ring_add(struct vblk_ring *r, u16 head, struct vblk_desc *tbl,
		  u64 tbl_addr, unsigned int n, void *token);

/* Make every added entry visible to the device (write avail->idx). */
void vblk_ring_publish(struct vblk_ring *r);

/*
 * After publish: does the device want a notification for what was published
 * since the last call? Honours avail_event (EVENT_IDX) or
 * VBLK_USED_F_NO_NOTIFY. The doorbell itself is the caller's business.
 */
bool vblk_ring_kick_prepare(struct vblk_ring *r);

/* Is there a used element to harvest? */
bool vblk_ring_has_used(struct vblk_ring *r);

/*
 * Harvest one used element. Returns 1 with *token and *len set (len
 * clamped to the chain's writable bytes; len_over counts how often), 0 when
 * there is nothing to harvest, -EIO when the device wrote something invalid
 * (r->broken is then set, r->err/r->err_val say what; nothing is touched).
 */
int vblk_ring_get_used(struct vblk_ring *r, void **token, u32 *len);

/* Ask the device not to interrupt (best effort with EVENT_IDX). */
void vblk_ring_disable_cb(struct vblk_ring *r);

/*
 * Ask for an interrupt at the next used element. Returns false if used
 * elements already wait (the caller must harvest again, or it may miss an
 * interrupt), true if the ring was idle when re-armed.
 */
bool vblk_ring_enable_cb(struct vblk_ring *r);

/*
 * Interrupt moderation (EVENT_IDX only; otherwise vblk_ring_enable_cb()):
 * ask for the interrupt once pct percent (at least one) of the chains the
 * device was given have come back. Returns false if that many already
 * wait (the caller must harvest again), true otherwise: fewer used
 * elements than that may wait, and the interrupt will announce them.
 */
bool vblk_ring_enable_cb_delayed(struct vblk_ring *r, unsigned int pct);

/*
 * Interrupt moderation, after kick_prepare published more chains: move
 * used_event forward so that the chains published since the re-arm count
 * too (never backward, never past what was given out). EVENT_IDX only.
 */
void vblk_ring_delay_cb(struct vblk_ring *r, unsigned int pct);

/*
 * Take back every in-flight chain after the device was reset; calls fn
 * for each token. Used only when the device no longer owns the ring.
 */
void vblk_ring_reclaim(struct vblk_ring *r, void (*fn)(void *token, void *arg),
		       void *arg);

#endif /* VBLK_RING_H */
