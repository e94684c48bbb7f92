// SPDX-License-Identifier: GPL-2.0
/*
 * vblk split virtqueue, written from the virtio 1.x specification,
 * section 2.7 (Split Virtqueues).
 *
 * Who writes what in the shared ring memory:
 *
 *	descriptor table, avail ring, used_event	driver
 *	used ring, avail_event				device
 *
 * The driver never reads back what it wrote (the device could have
 * scribbled on it): chains and the free list are kept in the private
 * r->slot[] array. Everything the device wrote is validated before it is
 * used as an index, a token or a length; the first invalid value marks the
 * ring broken and the ring then refuses all work until it is initialised
 * again after a device reset.
 *
 * All 16-bit ring indices are free-running and wrap at 65536; a position in
 * the rings is the index masked with num - 1 (num is a power of two, so
 * 65536 is a multiple of it and the masking stays consistent across wraps).
 */
#include "vblk_ring.h"

/*
 * The spec asks 16 for the descriptor table, 2 for the avail ring and 4 for
 * the used ring; every part is put on a 16-byte boundary so the used ring
 * starts cache-line friendly and a single alignment rule covers the lot.
 */
#define VBLK_RING_ALIGN		16
#define VBLK_LEN_MAX		((u32)~0U)

static bool vblk_ring_num_ok(unsigned int num)
{
	return num && num <= VBLK_RING_MAX_SIZE && !(num & (num - 1));
}

static size_t vblk_ring_align(size_t off)
{
	return (off + VBLK_RING_ALIGN - 1) & ~(size_t)(VBLK_RING_ALIGN - 1);
}

static size_t vblk_desc_bytes(unsigned int num)
{
	return sizeof(struct vblk_desc) * num;
}

/* flags, idx, ring[num], used_event */
static size_t vblk_avail_bytes(unsigned int num)
{
	return sizeof(__le16) * (3 + (size_t)num);
}

/* flags, idx, ring[num], avail_event */
static size_t vblk_used_bytes(unsigned int num)
{
	return sizeof(__le16) * 3 + sizeof(struct vblk_used_elem) * num;
}

static size_t vblk_avail_offset(unsigned int num)
{
	return vblk_ring_align(vblk_desc_bytes(num));
}

static size_t vblk_used_offset(unsigned int num)
{
	return vblk_ring_align(vblk_avail_offset(num) + vblk_avail_bytes(num));
}

/* Returns 0 for a num the ring cannot use, so callers cannot size wrongly. */
size_t vblk_ring_mem_size(unsigned int num)
{
	if (!vblk_ring_num_ok(num))
		return 0;
	return vblk_used_offset(num) + vblk_used_bytes(num);
}

/* The driver's interrupt threshold lives just past the avail ring entries. */
static __le16 *vblk_used_event(struct vblk_ring *r)
{
	return &r->avail->ring[r->num];
}

/* The device's notification threshold lives just past the used elements. */
static __le16 *vblk_avail_event(struct vblk_ring *r)
{
	return (__le16 *)&r->used->ring[r->num];
}

static u16 vblk_used_idx(struct vblk_ring *r)
{
	return le16_to_cpu(READ_ONCE(r->used->idx));
}

/*
 * Every free descriptor links to the next one. The last link (num) is a
 * sentinel that is never followed: num_free guards every walk.
 */
static void vblk_free_list_init(struct vblk_ring *r)
{
	unsigned int i;

	for (i = 0; i < r->num; i++)
		r->slot[i].next = i + 1;
	r->free_head = 0;
	r->num_free = r->num;
}

/*
 * The ring's barriers, of the kind its ordering needs (include/vblk_ring.h):
 * wmb orders our descriptor and avail entry stores before the avail index
 * store; rmb orders our load of the used index before the loads of the
 * used elements and of the buffers the device wrote; mb orders our ring
 * stores before the loads of the device's suppression state that follow.
 */
static inline void vblk_ring_wmb(const struct vblk_ring *r)
{
	if (r->platform_order)
		vblk_platform_wmb();
	else
		vblk_wmb();
}

static inline void vblk_ring_rmb(const struct vblk_ring *r)
{
	if (r->platform_order)
		vblk_platform_rmb();
	else
		vblk_rmb();
}

static inline void vblk_ring_mb(const struct vblk_ring *r)
{
	if (r->platform_order)
		vblk_platform_mb();
	else
		vblk_mb();
}

/*
 * VIRTIO_F_ORDER_PLATFORM negotiated: DMA barriers from now on. Called
 * after vblk_ring_init(), before the ring is handed to the device.
 */
void vblk_ring_set_platform_order(struct vblk_ring *r, bool platform)
{
	r->platform_order = platform;
}

int vblk_ring_init(struct vblk_ring *r, void *mem, u64 addr, unsigned int num,
		   struct vblk_ring_slot *slot, bool event_idx, bool indirect)
{
	unsigned int i;

	if (!r || !mem || !slot || !vblk_ring_num_ok(num))
		return -EINVAL;
	if (((uintptr_t)mem | addr) & (VBLK_RING_ALIGN - 1))
		return -EINVAL;

	r->desc = mem;
	r->avail = (struct vblk_avail *)((u8 *)mem + vblk_avail_offset(num));
	r->used = (struct vblk_used *)((u8 *)mem + vblk_used_offset(num));
	r->slot = slot;
	r->desc_addr = addr;
	r->avail_addr = addr + vblk_avail_offset(num);
	r->used_addr = addr + vblk_used_offset(num);
	r->num = num;
	r->event_idx = event_idx;
	r->indirect = indirect;
	r->platform_order = false;

	r->avail_idx = 0;
	r->kick_idx = 0;
	r->avail_flags = 0;
	r->last_used = 0;
	r->in_flight = 0;
	r->broken = false;
	r->err = VBLK_RING_OK;
	r->err_val = 0;

	for (i = 0; i < num; i++) {
		slot[i].token = NULL;
		slot[i].in_len = 0;
		slot[i].ndesc = 0;
	}
	vblk_free_list_init(r);
	return 0;
}

static bool vblk_desc_writable(const struct vblk_desc *d)
{
	return le16_to_cpu(d->flags) & VBLK_DESC_F_WRITE;
}

/*
 * The spec requires device-writable descriptors to come after all readable
 * ones; a device would reject or misparse anything else, so refuse it here
 * where the caller can still see the error. The writable total is the
 * largest used.len the device may honestly report (saturating: used.len
 * cannot express more anyway).
 */
static bool vblk_chain_in_len(const struct vblk_desc *tbl, unsigned int n,
			      u32 *in_len)
{
	bool writing = false;
	u32 sum = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		u32 len = le32_to_cpu(tbl[i].len);

		if (!vblk_desc_writable(&tbl[i])) {
			if (writing)
				return false;
			continue;
		}
		writing = true;
		sum = sum > VBLK_LEN_MAX - len ? VBLK_LEN_MAX : sum + len;
	}
	*in_len = sum;
	return true;
}

/*
 * Only WRITE is taken from the caller: NEXT is ours to manage, and a stray
 * INDIRECT inside a chain or an indirect table is forbidden by the spec.
 */
static __le16 vblk_chain_flags(const struct vblk_desc *d, bool more)
{
	u16 flags = le16_to_cpu(d->flags) & VBLK_DESC_F_WRITE;

	if (more)
		flags |= VBLK_DESC_F_NEXT;
	return cpu_to_le16(flags);
}

/*
 * One ring descriptor per request, at the caller's tag: the tag is the
 * head, so completion needs no lookup and no free list.
 */
static int vblk_add_indirect(struct vblk_ring *r, u16 head,
			     struct vblk_desc *tbl, u64 tbl_addr,
			     unsigned int n)
{
	struct vblk_desc *d;
	unsigned int i;

	if (head >= r->num)
		return -EINVAL;
	if (r->slot[head].token)
		return -EBUSY;

	for (i = 0; i < n; i++) {
		bool more = i + 1 < n;

		tbl[i].flags = vblk_chain_flags(&tbl[i], more);
		tbl[i].next = cpu_to_le16(more ? i + 1 : 0);
	}

	d = &r->desc[head];
	d->addr = cpu_to_le64(tbl_addr);
	d->len = cpu_to_le32(n * sizeof(*tbl));
	d->flags = cpu_to_le16(VBLK_DESC_F_INDIRECT);
	d->next = 0;

	r->slot[head].ndesc = 1;
	return head;
}

/*
 * Copy the table into descriptors taken from the head of the free list.
 * Free-list order is chain order, so slot[].next of the taken descriptors
 * already describes the chain; only the tail's link is stale, and the free
 * routine never follows it.
 */
static int vblk_add_direct(struct vblk_ring *r, const struct vblk_desc *tbl,
			   unsigned int n)
{
	u16 head = r->free_head;
	u16 idx = head;
	unsigned int i;

	if (n > r->num_free)
		return -ENOSPC;

	for (i = 0; i < n; i++) {
		struct vblk_desc *d = &r->desc[idx];
		bool more = i + 1 < n;
		u16 next = r->slot[idx].next;

		d->addr = tbl[i].addr;
		d->len = tbl[i].len;
		d->flags = vblk_chain_flags(&tbl[i], more);
		d->next = cpu_to_le16(more ? next : 0);
		if (more)
			idx = next;
	}
	r->free_head = r->slot[idx].next;

	r->slot[head].ndesc = n;
	return head;
}

int vblk_ring_add(struct vblk_ring *r, u16 head, struct vblk_desc *tbl,
		  u64 tbl_addr, unsigned int n, void *token)
{
	struct vblk_ring_slot *slot;
	u32 in_len;
	int ret;

	if (r->broken)
		return -EIO;
	/* The spec caps every chain, indirect ones too, at the queue size. */
	if (!tbl || !token || !n || n > r->num)
		return -EINVAL;
	if (!vblk_chain_in_len(tbl, n, &in_len))
		return -EINVAL;

	if (r->indirect)
		ret = vblk_add_indirect(r, head, tbl, tbl_addr, n);
	else
		ret = vblk_add_direct(r, tbl, n);
	if (ret < 0)
		return ret;

	slot = &r->slot[ret];
	slot->token = token;
	slot->in_len = in_len;
	r->num_free -= slot->ndesc;
	r->in_flight++;

	/* Invisible to the device until vblk_ring_publish() moves the idx. */
	r->avail->ring[r->avail_idx & (r->num - 1)] = cpu_to_le16(ret);
	r->avail_idx++;
	return 0;
}

void vblk_ring_publish(struct vblk_ring *r)
{
	/* The device may fetch the entries the moment it sees the new index. */
	vblk_ring_wmb(r);
	WRITE_ONCE(r->avail->idx, cpu_to_le16(r->avail_idx));
}

/*
 * The spec's "need event" rule: notify iff event lies in the window of
 * entries published since the last decision, [old, new), modulo 2^16.
 */
static bool vblk_need_event(u16 event, u16 new, u16 old)
{
	return (u16)(new - event - 1) < (u16)(new - old);
}

/*
 * Entries added but not yet published are published here, so that an
 * add followed directly by kick_prepare can never lose its doorbell.
 */
bool vblk_ring_kick_prepare(struct vblk_ring *r)
{
	u16 old = r->kick_idx;
	u16 new = r->avail_idx;

	if (new == old)
		return false;
	r->kick_idx = new;
	vblk_ring_publish(r);

	/*
	 * Our avail->idx store must be visible before we read the device's
	 * suppression state: otherwise the device may go to sleep having not
	 * seen the new entries while we read its stale "don't notify" and
	 * skip the doorbell, and the request stalls.
	 */
	vblk_ring_mb(r);

	if (r->event_idx) {
		u16 event = le16_to_cpu(READ_ONCE(*vblk_avail_event(r)));

		return vblk_need_event(event, new, old);
	}
	return !(le16_to_cpu(READ_ONCE(r->used->flags)) &
		 VBLK_USED_F_NO_NOTIFY);
}

/* A broken ring reports nothing to harvest, so callers' loops end. */
bool vblk_ring_has_used(struct vblk_ring *r)
{
	return !r->broken && vblk_used_idx(r) != r->last_used;
}

static int vblk_ring_fail(struct vblk_ring *r, enum vblk_ring_err err,
			  u32 val)
{
	r->broken = true;
	r->err = err;
	r->err_val = val;
	return -EIO;
}

/* Give a completed direct chain's descriptors back to the free list. */
static void vblk_free_chain(struct vblk_ring *r, u16 head)
{
	u16 tail = head;
	unsigned int i;

	for (i = 1; i < r->slot[head].ndesc; i++)
		tail = r->slot[tail].next;
	r->slot[tail].next = r->free_head;
	r->free_head = head;
}

int vblk_ring_get_used(struct vblk_ring *r, void **token, u32 *len)
{
	const struct vblk_used_elem *elem;
	struct vblk_ring_slot *slot;
	u16 used_idx;
	u32 id, elen;

	if (r->broken)
		return -EIO;

	/* Read once: the device may move it while we look. */
	used_idx = vblk_used_idx(r);
	if (used_idx == r->last_used)
		return 0;
	/* More new entries than chains we gave out is a jump (or a rewind). */
	if ((u16)(used_idx - r->last_used) > r->in_flight)
		return vblk_ring_fail(r, VBLK_RING_E_IDX, used_idx);

	/* The element must not be read before the index that covers it. */
	vblk_ring_rmb(r);
	elem = &r->used->ring[r->last_used & (r->num - 1)];
	id = le32_to_cpu(READ_ONCE(elem->id));
	elen = le32_to_cpu(READ_ONCE(elem->len));

	if (id >= r->num)
		return vblk_ring_fail(r, VBLK_RING_E_ID, id);
	slot = &r->slot[id];
	/* Also catches a non-head descriptor and a double completion. */
	if (!slot->token)
		return vblk_ring_fail(r, VBLK_RING_E_IDLE, id);
	/*
	 * Real backends over-report len, and virtio-blk does not need it (the
	 * status byte carries the result): count it, report the bound.
	 */
	if (elen > slot->in_len) {
		r->len_over++;
		elen = slot->in_len;
	}

	*token = slot->token;
	*len = elen;
	slot->token = NULL;
	if (!r->indirect)
		vblk_free_chain(r, id);
	r->num_free += slot->ndesc;
	r->in_flight--;
	r->last_used++;
	return 1;
}

/*
 * Without EVENT_IDX this sets VBLK_AVAIL_F_NO_INTERRUPT. With EVENT_IDX the
 * flags must stay 0 and nothing needs writing: the device interrupts only
 * when its used index steps over the used_event written by the last
 * enable_cb, which happens once, so at most one interrupt follows a
 * disable (spurious ones are harmless: the handler finds nothing or the
 * entries it would have polled anyway). Not touching the shared cache line
 * keeps the interrupt path cheap.
 */
void vblk_ring_disable_cb(struct vblk_ring *r)
{
	if (r->event_idx || (r->avail_flags & VBLK_AVAIL_F_NO_INTERRUPT))
		return;
	r->avail_flags |= VBLK_AVAIL_F_NO_INTERRUPT;
	WRITE_ONCE(r->avail->flags, cpu_to_le16(r->avail_flags));
}

/*
 * EVENT_IDX: interrupt when the device writes the wait-th used element
 * after the last one harvested (wait >= 1). Returns true if fewer than
 * wait are there now (or the ring is broken: a caller looping "harvest
 * until re-armed" must terminate); false means the caller harvests again.
 */
static bool vblk_ring_arm_event(struct vblk_ring *r, u16 wait)
{
	WRITE_ONCE(*vblk_used_event(r), cpu_to_le16(r->last_used + wait - 1));

	/*
	 * The device may have added entries before it saw the new used_event,
	 * and will not interrupt for them: the store must be visible before
	 * we look, so that either the device sees it or we see the entries.
	 */
	vblk_ring_mb(r);
	if (r->broken)
		return true;
	return (u16)(vblk_used_idx(r) - r->last_used) < wait;
}

/*
 * Returns true on a broken ring: there is nothing it may harvest, and a
 * caller looping "harvest until enable_cb says idle" must terminate.
 */
bool vblk_ring_enable_cb(struct vblk_ring *r)
{
	if (r->event_idx)
		return vblk_ring_arm_event(r, 1);
	if (r->avail_flags & VBLK_AVAIL_F_NO_INTERRUPT) {
		r->avail_flags &= ~VBLK_AVAIL_F_NO_INTERRUPT;
		WRITE_ONCE(r->avail->flags, cpu_to_le16(r->avail_flags));
	}
	/* As in vblk_ring_arm_event(): the device sees it, or we see its work. */
	vblk_ring_mb(r);
	return !vblk_ring_has_used(r);
}

/*
 * The chains the device can know about: published (kick_prepare moves
 * kick_idx with avail->idx) and not yet harvested. A device that completed
 * an unpublished chain would make this wrap: in_flight bounds it.
 */
static u16 vblk_ring_given(struct vblk_ring *r)
{
	u16 given = r->kick_idx - r->last_used;

	return given < r->in_flight ? given : r->in_flight;
}

/* pct percent (capped at 100) of the chains given out, rounded down. */
static u16 vblk_ring_coalesce_wait(struct vblk_ring *r, unsigned int pct)
{
	if (pct > 100)
		pct = 100;
	return (u32)vblk_ring_given(r) * pct / 100;
}

bool vblk_ring_enable_cb_delayed(struct vblk_ring *r, unsigned int pct)
{
	u16 wait;

	if (!r->event_idx || !pct)
		return vblk_ring_enable_cb(r);
	/*
	 * Interrupt when the wait-th of the chains given out now comes back.
	 * They all come back eventually, so the interrupt is only late, never
	 * lost; with at most one chain out this is vblk_ring_enable_cb().
	 */
	wait = vblk_ring_coalesce_wait(r, pct);
	return vblk_ring_arm_event(r, wait ? wait : 1);
}

/*
 * Requests published since the re-arm count as well: the interrupt then
 * waits for pct percent of everything the device holds now. used_event
 * only moves forward and stays within the chains given out, so the
 * interrupt it asks for still comes (they all come back); if the device
 * reads the old value instead, the interrupt is merely earlier. A
 * used_event that the harvest has already passed (it then lies far "ahead"
 * modulo 2^16) is left alone.
 */
void vblk_ring_delay_cb(struct vblk_ring *r, unsigned int pct)
{
	u16 wait, cur;

	if (!r->event_idx || !pct || r->broken)
		return;
	wait = vblk_ring_coalesce_wait(r, pct);
	if (!wait)
		return;
	cur = le16_to_cpu(READ_ONCE(*vblk_used_event(r))) - r->last_used;
	if (cur < r->in_flight && (u16)(wait - 1) > cur)
		WRITE_ONCE(*vblk_used_event(r),
			   cpu_to_le16(r->last_used + wait - 1));
}

void vblk_ring_state(struct vblk_ring *r, struct vblk_ring_state *st)
{
	st->avail_idx = r->avail_idx;
	st->kick_idx = r->kick_idx;
	st->last_used = r->last_used;
	st->in_flight = r->in_flight;
	st->num_free = r->num_free;
	st->shared_avail_idx = le16_to_cpu(READ_ONCE(r->avail->idx));
	st->used_idx = vblk_used_idx(r);
	st->avail_event = le16_to_cpu(READ_ONCE(*vblk_avail_event(r)));
	st->used_event = le16_to_cpu(READ_ONCE(*vblk_used_event(r)));
	st->used_flags = le16_to_cpu(READ_ONCE(r->used->flags));
	st->broken = r->broken;
}

/*
 * After a device reset nothing is in flight any more. The 16-bit indices
 * (avail_idx, last_used, kick_idx) still hold the old ring's positions
 * while the reset device starts from 0, and the ring memory still holds the
 * old entries, so the ring is only reusable after the caller zeroes its
 * memory and calls vblk_ring_init() again (which also clears broken).
 */
void vblk_ring_reclaim(struct vblk_ring *r, void (*fn)(void *token, void *arg),
		       void *arg)
{
	unsigned int i;

	for (i = 0; i < r->num; i++) {
		void *token = r->slot[i].token;

		if (!token)
			continue;
		r->slot[i].token = NULL;
		if (fn)
			fn(token, arg);
	}
	vblk_free_list_init(r);
	r->in_flight = 0;
}
