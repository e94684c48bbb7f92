// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for vblk_ring.c: the test plays the device with
 * fake_dev.h and checks the driver side against the virtio 1.x split
 * virtqueue rules (section 2.7).
 *
 * Output: one "ok - name" / "FAIL - name: reason" line per case, then
 * "N passed, N failed"; the exit status is non-zero if anything failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vblk_ring.h"
#include "fake_dev.h"
#include "check.h"

#define MAXN	8	/* descriptors per test request */

/* A ring, its slots, per-tag descriptor tables and the fake device. */
struct fx {
	void *mem;
	size_t size;
	unsigned int num;
	struct vblk_ring r;
	struct vblk_ring_slot *slot;
	struct vblk_desc (*tbl)[MAXN];
	struct fake_dev d;
	int tok[65536 / 16];	/* &tok[i] serves as a token */
};

/* The fixture of the running case, freed by the runner whatever happens. */
static struct fx *cur;

static void fx_free(struct fx *f)
{
	if (!f)
		return;
	fake_dev_free(&f->d);
	free(f->mem);
	free(f->slot);
	free(f->tbl);
	free(f);
}

static struct fx *fx_new(unsigned int num, bool event_idx, bool indirect)
{
	struct fx *f = calloc(1, sizeof(*f));

	fx_free(cur);
	cur = f;
	if (!f)
		return NULL;
	f->num = num;
	f->size = vblk_ring_mem_size(num);
	/* Exact size, so ASan flags any access past the ring. */
	if (posix_memalign(&f->mem, 16, f->size))
		return NULL;
	memset(f->mem, 0, f->size);
	f->slot = calloc(num, sizeof(*f->slot));
	f->tbl = calloc(num, sizeof(*f->tbl));
	if (!f->slot || !f->tbl)
		return NULL;
	if (vblk_ring_init(&f->r, f->mem, fake_virt_to_bus(f->mem), num,
			   f->slot, event_idx, indirect))
		return NULL;
	if (fake_dev_init(&f->d, &f->r))
		return NULL;
	return f;
}

/* Zero the ring memory and initialise again, as after a device reset. */
static bool fx_reinit(struct fx *f)
{
	memset(f->mem, 0, f->size);
	return !vblk_ring_init(&f->r, f->mem, fake_virt_to_bus(f->mem), f->num,
			       f->slot, f->r.event_idx, f->r.indirect) &&
	       !fake_dev_init(&f->d, &f->r);
}

/*
 * Build a request in tbl[tag]: nr readable descriptors of 16 bytes, then
 * nw writable ones of wlen bytes each; add it to the ring.
 */
static int req_add(struct fx *f, u16 tag, unsigned int nr, unsigned int nw,
		   u32 wlen, void *token)
{
	struct vblk_desc *t = f->tbl[tag % f->num];
	unsigned int i;

	for (i = 0; i < nr + nw && i < MAXN; i++)
		vblk_desc_set(&t[i], 0x100000ULL * (tag + 1) + 0x1000 * i,
			      i < nr ? 16 : wlen, i >= nr);
	return vblk_ring_add(&f->r, tag, t, fake_virt_to_bus(t), nr + nw,
			     token);
}

static u16 avail_idx_mem(struct fx *f)
{
	return le16_to_cpu(f->r.avail->idx);
}

/* ------------------------------------------------------------------ */

struct layout_case {
	unsigned int num;
	size_t avail_off, used_off, size;
};

static bool t_layout(void)
{
	static const struct layout_case lc[] = {
		/* desc 16n | avail 6+2n | pad to 16 | used 6+8n */
		{ 1, 16, 32, 46 },
		{ 2, 32, 48, 70 },
		{ 16, 256, 304, 438 },
		{ 256, 4096, 4624, 6678 },
		{ 32768, 524288, 589840, 851990 },
	};
	unsigned int i;

	for (i = 0; i < sizeof(lc) / sizeof(lc[0]); i++) {
		struct fx *f = fx_new(lc[i].num, false, true);
		u8 *m;

		CHECK(f);
		m = f->mem;
		CHECK_EQ(vblk_ring_mem_size(lc[i].num), lc[i].size);
		CHECK((u8 *)f->r.desc == m);
		CHECK_EQ((u8 *)f->r.avail - m, lc[i].avail_off);
		CHECK_EQ((u8 *)f->r.used - m, lc[i].used_off);
		CHECK_EQ(f->r.used_addr % 16, 0);
		CHECK_EQ(f->r.desc_addr, fake_virt_to_bus(m));
		CHECK_EQ(f->r.avail_addr,
			 fake_virt_to_bus(m) + lc[i].avail_off);
		CHECK_EQ(f->r.used_addr, fake_virt_to_bus(m) + lc[i].used_off);
		/* avail_event is the last 2 bytes of the ring memory. */
		CHECK((u8 *)fake_avail_event(&f->d) + 2 == m + lc[i].size);
		CHECK((u8 *)fake_used_event(&f->d) + 2 ==
		      m + lc[i].avail_off + 6 + 2 * lc[i].num);
		CHECK_EQ(f->r.num, lc[i].num);
		CHECK_EQ(f->r.num_free, lc[i].num);
		CHECK_EQ(f->r.in_flight, 0);
		CHECK(!f->r.broken);
	}
	CHECK_EQ(vblk_ring_mem_size(0), 0);
	CHECK_EQ(vblk_ring_mem_size(3), 0);
	CHECK_EQ(vblk_ring_mem_size(65536), 0);
	return true;
}

static bool t_init_invalid(void)
{
	struct fx *f = fx_new(16, false, false);
	struct vblk_ring r;
	u8 *m;

	CHECK(f);
	m = f->mem;
	CHECK_EQ(vblk_ring_init(&r, m, 0x1000, 0, f->slot, 0, 0), -EINVAL);
	CHECK_EQ(vblk_ring_init(&r, m, 0x1000, 12, f->slot, 0, 0), -EINVAL);
	CHECK_EQ(vblk_ring_init(&r, m, 0x1000, 65536, f->slot, 0, 0),
		 -EINVAL);
	CHECK_EQ(vblk_ring_init(&r, m + 8, 0x1000, 16, f->slot, 0, 0),
		 -EINVAL);
	CHECK_EQ(vblk_ring_init(&r, m, 0x1004, 16, f->slot, 0, 0), -EINVAL);
	CHECK_EQ(vblk_ring_init(&r, NULL, 0x1000, 16, f->slot, 0, 0),
		 -EINVAL);
	CHECK_EQ(vblk_ring_init(&r, m, 0x1000, 16, NULL, 0, 0), -EINVAL);
	CHECK_EQ(vblk_ring_init(&r, m, 0x1000, 16, f->slot, 0, 0), 0);
	return true;
}

static bool t_indirect_roundtrip(void)
{
	struct fx *f = fx_new(16, false, true);
	struct vblk_desc *d, *t;
	void *tok;
	u32 len;
	unsigned int nd;

	CHECK(f);
	/* header (readable), data and status (writable) */
	t = f->tbl[5];
	vblk_desc_set(&t[0], 0xa000, 16, false);
	vblk_desc_set(&t[1], 0xb000, 4096, true);
	vblk_desc_set(&t[2], 0xc000, 1, true);
	CHECK_EQ(vblk_ring_add(&f->r, 5, t, 0x12340, 3, &f->tok[5]), 0);

	d = &f->r.desc[5];
	CHECK_EQ(le16_to_cpu(d->flags), VBLK_DESC_F_INDIRECT);
	CHECK_EQ(le64_to_cpu(d->addr), 0x12340);
	CHECK_EQ(le32_to_cpu(d->len), 48);
	CHECK_EQ(le16_to_cpu(t[0].flags), VBLK_DESC_F_NEXT);
	CHECK_EQ(le16_to_cpu(t[0].next), 1);
	CHECK_EQ(le16_to_cpu(t[1].flags), VBLK_DESC_F_NEXT | VBLK_DESC_F_WRITE);
	CHECK_EQ(le16_to_cpu(t[1].next), 2);
	CHECK_EQ(le16_to_cpu(t[2].flags), VBLK_DESC_F_WRITE);
	CHECK_EQ(le16_to_cpu(t[2].next), 0);
	CHECK_EQ(le64_to_cpu(t[1].addr), 0xb000);
	CHECK(f->slot[5].token == &f->tok[5]);
	CHECK_EQ(f->slot[5].in_len, 4097);
	CHECK_EQ(f->slot[5].ndesc, 1);
	CHECK_EQ(f->r.in_flight, 1);
	CHECK_EQ(f->r.num_free, 15);
	CHECK_EQ(le16_to_cpu(f->r.avail->ring[0]), 5);

	/* Added, not yet published: the device sees nothing. */
	CHECK_EQ(avail_idx_mem(f), 0);
	CHECK_EQ(fake_dev_fetch(&f->d), 0);
	vblk_ring_publish(&f->r);
	CHECK_EQ(avail_idx_mem(f), 1);

	/* Point the tests' device at the real table for the walk. */
	d->addr = cpu_to_le64(fake_virt_to_bus(t));
	CHECK_EQ(fake_dev_fetch(&f->d), 1);
	CHECK_EQ(fake_dev_chain(&f->d, f->d.q[0], &nd), 4097);
	CHECK_EQ(nd, 1);
	CHECK(!vblk_ring_has_used(&f->r));
	CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 0);
	CHECK_EQ(fake_dev_complete(&f->d, 0, 4097), 5);
	CHECK(vblk_ring_has_used(&f->r));
	CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 1);
	CHECK(tok == &f->tok[5]);
	CHECK_EQ(len, 4097);
	CHECK(f->slot[5].token == NULL);
	CHECK_EQ(f->r.in_flight, 0);
	CHECK_EQ(f->r.num_free, 16);
	CHECK_EQ(f->r.last_used, 1);
	CHECK(!vblk_ring_has_used(&f->r));
	CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 0);

	/* The tag is free again. */
	CHECK_EQ(req_add(f, 5, 1, 1, 512, &f->tok[5]), 0);
	CHECK_EQ(f->r.in_flight, 1);
	return true;
}

static bool t_indirect_args(void)
{
	struct fx *f = fx_new(8, false, true);
	struct vblk_desc *t;

	CHECK(f);
	CHECK_EQ(req_add(f, 3, 1, 2, 100, &f->tok[3]), 0);
	CHECK_EQ(req_add(f, 3, 1, 2, 100, &f->tok[4]), -EBUSY);
	CHECK_EQ(vblk_ring_add(&f->r, 8, f->tbl[0], 0x1000, 2, &f->tok[0]),
		 -EINVAL);
	CHECK_EQ(vblk_ring_add(&f->r, 4, f->tbl[4], 0x1000, 0, &f->tok[4]),
		 -EINVAL);
	CHECK_EQ(vblk_ring_add(&f->r, 4, f->tbl[4], 0x1000, 9, &f->tok[4]),
		 -EINVAL);
	CHECK_EQ(vblk_ring_add(&f->r, 4, f->tbl[4], 0x1000, 2, NULL),
		 -EINVAL);
	CHECK_EQ(vblk_ring_add(&f->r, 4, NULL, 0x1000, 2, &f->tok[4]),
		 -EINVAL);
	/* readable after writable is forbidden by the spec */
	t = f->tbl[4];
	vblk_desc_set(&t[0], 0x1000, 512, true);
	vblk_desc_set(&t[1], 0x2000, 16, false);
	CHECK_EQ(vblk_ring_add(&f->r, 4, t, 0x1000, 2, &f->tok[4]), -EINVAL);
	/* stray flags from the caller are not passed through */
	vblk_desc_set(&t[0], 0x1000, 16, false);
	t[0].flags = cpu_to_le16(VBLK_DESC_F_INDIRECT | VBLK_DESC_F_NEXT);
	CHECK_EQ(vblk_ring_add(&f->r, 4, t, 0x1000, 1, &f->tok[4]), 0);
	CHECK_EQ(le16_to_cpu(t[0].flags), 0);
	/* n == num is the largest chain the spec allows */
	CHECK_EQ(req_add(f, 6, 1, 7, 1, &f->tok[6]), 0);
	CHECK_EQ(f->r.in_flight, 3);
	CHECK_EQ(f->r.avail_idx, 3);
	CHECK(!f->slot[5].token);
	return true;
}

static bool t_direct_chains(void)
{
	struct fx *f = fx_new(8, false, false);
	struct vblk_desc *d = NULL;
	void *tok;
	u32 len;
	unsigned int i, nd;
	int k;

	CHECK(f);
	d = f->r.desc;
	CHECK_EQ(req_add(f, 0, 1, 2, 512, &f->tok[0]), 0);	/* A: 0,1,2 */
	CHECK_EQ(req_add(f, 1, 2, 1, 1, &f->tok[1]), 0);	/* B: 3,4,5 */
	CHECK_EQ(f->r.num_free, 2);
	CHECK_EQ(req_add(f, 2, 1, 2, 8, &f->tok[2]), -ENOSPC);
	CHECK_EQ(req_add(f, 2, 1, 1, 8, &f->tok[2]), 0);	/* C: 6,7 */
	CHECK_EQ(f->r.num_free, 0);
	CHECK_EQ(req_add(f, 3, 0, 1, 8, &f->tok[3]), -ENOSPC);
	CHECK_EQ(f->r.in_flight, 3);

	/* Chain A: copied contents, links, flags. */
	CHECK_EQ(le16_to_cpu(f->r.avail->ring[0]), 0);
	CHECK_EQ(le16_to_cpu(f->r.avail->ring[1]), 3);
	CHECK_EQ(le16_to_cpu(f->r.avail->ring[2]), 6);
	CHECK_EQ(le16_to_cpu(d[0].flags), VBLK_DESC_F_NEXT);
	CHECK_EQ(le16_to_cpu(d[0].next), 1);
	CHECK_EQ(le32_to_cpu(d[0].len), 16);
	CHECK_EQ(le64_to_cpu(d[0].addr), 0x100000);
	CHECK_EQ(le16_to_cpu(d[1].flags), VBLK_DESC_F_NEXT | VBLK_DESC_F_WRITE);
	CHECK_EQ(le16_to_cpu(d[1].next), 2);
	CHECK_EQ(le16_to_cpu(d[2].flags), VBLK_DESC_F_WRITE);
	CHECK_EQ(le64_to_cpu(d[2].addr), 0x102000);
	CHECK_EQ(f->slot[0].ndesc, 3);
	CHECK_EQ(f->slot[3].ndesc, 3);
	CHECK_EQ(f->slot[6].ndesc, 2);
	CHECK_EQ(f->slot[0].in_len, 1024);
	CHECK_EQ(f->slot[3].in_len, 1);
	/* Only heads carry tokens. */
	CHECK(!f->slot[1].token && !f->slot[4].token && !f->slot[7].token);

	vblk_ring_publish(&f->r);
	CHECK_EQ(fake_dev_fetch(&f->d), 3);
	for (i = 0; i < 3; i++) {
		CHECK(fake_dev_chain(&f->d, f->d.q[i], &nd) >= 0);
		CHECK_EQ(nd, i < 2 ? 3 : 2);
	}
	/* Complete B first (out of order). */
	CHECK_EQ(fake_dev_complete(&f->d, 1, 1), 3);
	CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 1);
	CHECK(tok == &f->tok[1]);
	CHECK_EQ(f->r.num_free, 3);

	/* D reuses B's descriptors; the device scribbles on their links. */
	CHECK_EQ(req_add(f, 3, 1, 2, 64, &f->tok[3]), 0);
	CHECK_EQ(le16_to_cpu(f->r.avail->ring[3]), 3);
	CHECK_EQ(le16_to_cpu(d[3].next), 4);
	CHECK_EQ(le16_to_cpu(d[4].next), 5);
	CHECK_EQ(f->r.num_free, 0);
	vblk_ring_publish(&f->r);
	CHECK_EQ(fake_dev_fetch(&f->d), 1);
	d[3].next = cpu_to_le16(7);
	d[4].next = cpu_to_le16(0xffff);
	d[5].next = cpu_to_le16(3);
	for (k = f->d.qn - 1; k >= 0; k--)
		fake_dev_complete(&f->d, k, 0);
	for (i = 0; i < 3; i++) {
		CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 1);
		CHECK_EQ(len, 0);
	}
	CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 0);
	CHECK_EQ(f->r.num_free, 8);
	CHECK_EQ(f->r.in_flight, 0);

	/* Eight one-descriptor chains: every descriptor, each once. */
	for (i = 0; i < 8; i++)
		CHECK_EQ(req_add(f, i, 0, 1, 4, &f->tok[i]), 0);
	CHECK_EQ(req_add(f, 0, 0, 1, 4, &f->tok[9]), -ENOSPC);
	{
		unsigned int seen = 0;

		for (i = 0; i < 8; i++) {
			u16 h = le16_to_cpu(f->r.avail->ring[(4 + i) & 7]);

			CHECK(h < 8);
			seen |= 1u << h;
			CHECK_EQ(f->slot[h].ndesc, 1);
			CHECK_EQ(le16_to_cpu(d[h].flags), VBLK_DESC_F_WRITE);
		}
		CHECK_EQ(seen, 0xff);
	}
	/* A chain longer than the ring can never fit: -EINVAL, not -ENOSPC. */
	CHECK_EQ(vblk_ring_add(&f->r, 0, f->tbl[0], 0, 9, &f->tok[0]),
		 -EINVAL);
	return true;
}

/* ------------------------------------------------------------------ */

static u32 rnd_state = 12345;

static u32 rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

struct wreq {
	u32 wlen;
	bool out;
};

/*
 * Push > 65536 requests through a 16-entry ring with random batching and
 * out-of-order completion, so every 16-bit index wraps at least once.
 */
static bool wrap_run(bool indirect, bool event_idx)
{
	enum { NUM = 16, TOTAL = 70000 };
	struct fx *f = fx_new(NUM, event_idx, indirect);
	static struct wreq req[NUM];
	u16 tags[NUM];
	unsigned int ntags = NUM, i, done = 0, issued = 0;
	unsigned int kicks = 0;

	CHECK(f);
	memset(req, 0, sizeof(req));
	for (i = 0; i < NUM; i++)
		tags[i] = i;
	rnd_state = 12345;

	while (done < TOTAL) {
		unsigned int batch = rnd() % 6;
		void *tok;
		u32 len;
		int ret;

		for (i = 0; i < batch && issued < TOTAL && ntags; i++) {
			unsigned int ti = rnd() % ntags, nd = 1 + rnd() % 3;
			u16 tag = tags[ti];
			struct wreq *q = &req[tag];

			q->wlen = 1 + rnd() % 4096;
			ret = req_add(f, tag, nd > 1, nd - (nd > 1), q->wlen,
				      q);
			if (!indirect && ret == -ENOSPC)
				break;
			CHECK_EQ(ret, 0);
			q->wlen *= nd - (nd > 1);
			q->out = true;
			tags[ti] = tags[--ntags];
			issued++;
		}
		if (rnd() % 2) {
			vblk_ring_publish(&f->r);
			kicks += vblk_ring_kick_prepare(&f->r);
		} else {
			kicks += vblk_ring_kick_prepare(&f->r);
		}
		CHECK(fake_dev_fetch(&f->d) >= 0);
		if (event_idx)	/* ask for a kick at the next entry */
			*fake_avail_event(&f->d) = cpu_to_le16(f->d.last_avail);
		for (i = rnd() % (f->d.qn + 1); i; i--)
			CHECK_EQ(fake_dev_complete_full(&f->d,
							rnd() % f->d.qn), 0);
		while ((ret = vblk_ring_get_used(&f->r, &tok, &len)) == 1) {
			struct wreq *q = tok;

			CHECK(q >= req && q < req + NUM);
			CHECK(q->out);
			CHECK_EQ(len, q->wlen);
			q->out = false;
			tags[ntags++] = q - req;
			done++;
		}
		CHECK_EQ(ret, 0);
		CHECK(f->r.in_flight <= NUM);
		if (!indirect)
			CHECK(f->r.num_free <= NUM);
	}
	CHECK(!f->r.broken);
	CHECK_EQ(f->r.avail_idx, TOTAL & 0xffff);
	CHECK_EQ(f->r.last_used, TOTAL & 0xffff);
	CHECK_EQ(f->r.in_flight, 0);
	CHECK_EQ(f->r.num_free, NUM);
	CHECK(kicks > 0);
	return true;
}

static bool t_wrap_indirect(void)
{
	return wrap_run(true, false);
}

static bool t_wrap_direct(void)
{
	return wrap_run(false, false);
}

static bool t_wrap_event_idx(void)
{
	return wrap_run(true, true) && wrap_run(false, true);
}

/* ------------------------------------------------------------------ */

/* Add (and complete at once, to keep tags free) k requests. */
static bool add_k(struct fx *f, unsigned int k)
{
	void *tok;
	u32 len;

	while (k--) {
		if (req_add(f, 0, 1, 1, 1, &f->tok[0]))
			return false;
		vblk_ring_publish(&f->r);
		if (fake_dev_fetch(&f->d) != 1)
			return false;
		fake_dev_complete(&f->d, 0, 0);
		if (vblk_ring_get_used(&f->r, &tok, &len) != 1)
			return false;
	}
	return true;
}

static void set_avail_event(struct fx *f, u16 v)
{
	*fake_avail_event(&f->d) = cpu_to_le16(v);
}

static bool t_kick_event_idx(void)
{
	struct fx *f = fx_new(16, true, true);
	static const u16 olds[] = { 0, 100, 65530, 65535 };
	unsigned int i, span;

	CHECK(f);
	/* Fresh ring: avail_event 0 asks for a kick at the first entry. */
	CHECK(add_k(f, 1));
	CHECK(vblk_ring_kick_prepare(&f->r));
	CHECK_EQ(f->r.kick_idx, 1);
	CHECK(!vblk_ring_kick_prepare(&f->r));	/* nothing new */

	set_avail_event(f, 1);
	CHECK(add_k(f, 1));			/* publishes entry 1 */
	CHECK(vblk_ring_kick_prepare(&f->r));

	set_avail_event(f, 5);
	CHECK(add_k(f, 1));			/* entry 2 */
	CHECK(!vblk_ring_kick_prepare(&f->r));
	CHECK(add_k(f, 2));			/* entries 3, 4 */
	CHECK(!vblk_ring_kick_prepare(&f->r));
	CHECK(add_k(f, 1));			/* entry 5 */
	CHECK(vblk_ring_kick_prepare(&f->r));

	set_avail_event(f, 7);
	CHECK(add_k(f, 3));			/* batch 6..8 covers 7 */
	CHECK(vblk_ring_kick_prepare(&f->r));

	/* A stale avail_event behind the window: the device is awake. */
	set_avail_event(f, 2);
	CHECK(add_k(f, 1));
	CHECK(!vblk_ring_kick_prepare(&f->r));

	/* The lower bit of used->flags is ignored with EVENT_IDX. */
	f->r.used->flags = cpu_to_le16(VBLK_USED_F_NO_NOTIFY);
	set_avail_event(f, f->r.avail_idx);
	CHECK(add_k(f, 1));
	CHECK(vblk_ring_kick_prepare(&f->r));
	f->r.used->flags = 0;

	/*
	 * Sweep every avail_event for windows of several sizes, across the
	 * 16-bit wrap: a kick iff the event lies in [old, new).
	 */
	for (i = 0; i < sizeof(olds) / sizeof(olds[0]); i++) {
		for (span = 1; span <= 16; span *= 4) {
			u16 old = olds[i], new = old + span;
			u32 ev;

			for (ev = 0; ev < 65536; ev++) {
				bool want = (u16)(ev - old) < span;

				f->r.kick_idx = old;
				f->r.avail_idx = new;
				set_avail_event(f, ev);
				if (vblk_ring_kick_prepare(&f->r) != want)
					FAILF("old %u new %u event %u: want %d",
					      old, new, ev, want);
				CHECK_EQ(f->r.kick_idx, new);
				CHECK_EQ(avail_idx_mem(f), new);
			}
		}
	}
	return true;
}

static bool t_kick_wrap(void)
{
	struct fx *f = fx_new(16, true, false);

	CHECK(f);
	CHECK(add_k(f, 65534));
	CHECK(vblk_ring_kick_prepare(&f->r));
	CHECK_EQ(f->r.kick_idx, 65534);
	set_avail_event(f, 65535);
	CHECK(add_k(f, 3));		/* 65534, 65535, 0: new = 1 */
	CHECK_EQ(f->r.avail_idx, 1);
	CHECK(vblk_ring_kick_prepare(&f->r));
	set_avail_event(f, 3);
	CHECK(add_k(f, 2));		/* 1, 2 */
	CHECK(!vblk_ring_kick_prepare(&f->r));
	CHECK(add_k(f, 2));		/* 3, 4 */
	CHECK(vblk_ring_kick_prepare(&f->r));
	return true;
}

static bool t_kick_no_notify(void)
{
	struct fx *f = fx_new(16, false, true);

	CHECK(f);
	CHECK(!vblk_ring_kick_prepare(&f->r));	/* nothing published */
	CHECK(add_k(f, 1));
	CHECK(vblk_ring_kick_prepare(&f->r));
	CHECK(!vblk_ring_kick_prepare(&f->r));

	f->r.used->flags = cpu_to_le16(VBLK_USED_F_NO_NOTIFY);
	CHECK(add_k(f, 2));
	CHECK(!vblk_ring_kick_prepare(&f->r));
	f->r.used->flags = 0;
	CHECK(!vblk_ring_kick_prepare(&f->r));	/* nothing new since */
	/* avail_event means nothing without EVENT_IDX */
	set_avail_event(f, 1000);
	CHECK(add_k(f, 1));
	CHECK(vblk_ring_kick_prepare(&f->r));
	/* Other used->flags bits do not suppress. */
	f->r.used->flags = cpu_to_le16(2);
	CHECK(add_k(f, 1));
	CHECK(vblk_ring_kick_prepare(&f->r));
	return true;
}

static bool t_kick_publishes(void)
{
	struct fx *f = fx_new(16, false, true);

	CHECK(f);
	CHECK_EQ(req_add(f, 1, 1, 1, 8, &f->tok[1]), 0);
	CHECK_EQ(req_add(f, 2, 1, 1, 8, &f->tok[2]), 0);
	CHECK_EQ(avail_idx_mem(f), 0);
	CHECK(vblk_ring_kick_prepare(&f->r));
	CHECK_EQ(avail_idx_mem(f), 2);
	CHECK_EQ(fake_dev_fetch(&f->d), 2);
	return true;
}

/* ------------------------------------------------------------------ */

static bool t_cb_flags(void)
{
	struct fx *f = fx_new(16, false, true);
	void *tok;
	u32 len;

	CHECK(f);
	CHECK(vblk_ring_enable_cb(&f->r));
	CHECK_EQ(le16_to_cpu(f->r.avail->flags), 0);
	vblk_ring_disable_cb(&f->r);
	CHECK_EQ(le16_to_cpu(f->r.avail->flags), VBLK_AVAIL_F_NO_INTERRUPT);
	CHECK_EQ(f->r.avail_flags, VBLK_AVAIL_F_NO_INTERRUPT);
	vblk_ring_disable_cb(&f->r);
	CHECK_EQ(le16_to_cpu(f->r.avail->flags), VBLK_AVAIL_F_NO_INTERRUPT);
	CHECK_EQ(le16_to_cpu(*fake_used_event(&f->d)), 0);

	CHECK_EQ(req_add(f, 1, 1, 1, 8, &f->tok[1]), 0);
	vblk_ring_publish(&f->r);
	CHECK_EQ(fake_dev_fetch(&f->d), 1);
	fake_dev_complete(&f->d, 0, 8);
	/* A completion waits: re-arming must tell the caller to harvest. */
	CHECK(!vblk_ring_enable_cb(&f->r));
	CHECK_EQ(le16_to_cpu(f->r.avail->flags), 0);
	CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 1);
	CHECK(vblk_ring_enable_cb(&f->r));
	CHECK_EQ(le16_to_cpu(*fake_used_event(&f->d)), 0);
	return true;
}

static bool t_cb_event_idx(void)
{
	struct fx *f = fx_new(16, true, true);
	void *tok;
	u32 len;
	unsigned int i;
	u16 ue;

	CHECK(f);
	vblk_ring_disable_cb(&f->r);
	CHECK_EQ(le16_to_cpu(f->r.avail->flags), 0);
	CHECK_EQ(le16_to_cpu(*fake_used_event(&f->d)), 0);
	for (i = 1; i <= 3; i++)
		CHECK_EQ(req_add(f, i, 1, 1, 8, &f->tok[i]), 0);
	vblk_ring_publish(&f->r);
	CHECK_EQ(fake_dev_fetch(&f->d), 3);
	for (i = 0; i < 3; i++)
		fake_dev_complete(&f->d, 0, 8);
	for (i = 0; i < 2; i++)
		CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 1);
	vblk_ring_disable_cb(&f->r);
	CHECK_EQ(le16_to_cpu(*fake_used_event(&f->d)), 0);
	CHECK(!vblk_ring_enable_cb(&f->r));
	CHECK_EQ(le16_to_cpu(*fake_used_event(&f->d)), 2);
	CHECK_EQ(le16_to_cpu(f->r.avail->flags), 0);
	CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 1);
	CHECK(vblk_ring_enable_cb(&f->r));
	ue = le16_to_cpu(*fake_used_event(&f->d));
	CHECK_EQ(ue, 3);
	/* The device's next completion (used idx 3 -> 4) must interrupt. */
	CHECK(fake_need_event(ue, 4, 3));
	CHECK(!fake_need_event(ue, 3, 2));
	CHECK_EQ(le16_to_cpu(f->r.avail->flags), 0);
	return true;
}

/*
 * Interrupt moderation: with 8 chains given out and 75 %, the interrupt
 * waits for the 6th completion; chains added but not published do not
 * count; with nothing out it is the plain re-arm.
 */
static bool t_cb_delayed(void)
{
	struct fx *f = fx_new(16, true, true);
	void *tok;
	u32 len;
	unsigned int i;
	u16 ue;

	CHECK(f);
	CHECK(vblk_ring_enable_cb_delayed(&f->r, 75));
	CHECK_EQ(le16_to_cpu(*fake_used_event(&f->d)), 0);
	for (i = 0; i < 8; i++)
		CHECK_EQ(req_add(f, i, 1, 1, 8, &f->tok[i]), 0);
	vblk_ring_kick_prepare(&f->r);
	/* Two more, not published: the device cannot complete them yet. */
	CHECK_EQ(req_add(f, 8, 1, 1, 8, &f->tok[8]), 0);
	CHECK_EQ(req_add(f, 9, 1, 1, 8, &f->tok[9]), 0);
	CHECK_EQ(fake_dev_fetch(&f->d), 8);

	CHECK(vblk_ring_enable_cb_delayed(&f->r, 75));
	ue = le16_to_cpu(*fake_used_event(&f->d));
	CHECK_EQ(ue, 5);
	/* The 6th completion (used idx 5 -> 6) interrupts, the 5th does not. */
	CHECK(fake_need_event(ue, 6, 5));
	CHECK(!fake_need_event(ue, 5, 4));

	for (i = 0; i < 5; i++)
		fake_dev_complete(&f->d, 0, 8);
	CHECK(vblk_ring_enable_cb_delayed(&f->r, 75));
	fake_dev_complete(&f->d, 0, 8);
	/* Six wait now: the caller must harvest rather than sleep. */
	CHECK(!vblk_ring_enable_cb_delayed(&f->r, 75));
	for (i = 0; i < 6; i++)
		CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 1);

	/* Two given out, 75 % of 2 rounds down to 1: the next completion. */
	CHECK(vblk_ring_enable_cb_delayed(&f->r, 75));
	CHECK_EQ(le16_to_cpu(*fake_used_event(&f->d)), 6);
	/* 0 % and a value above 100 % behave as documented. */
	CHECK(vblk_ring_enable_cb_delayed(&f->r, 0));
	CHECK_EQ(le16_to_cpu(*fake_used_event(&f->d)), 6);
	CHECK(vblk_ring_enable_cb_delayed(&f->r, 1000));
	CHECK_EQ(le16_to_cpu(*fake_used_event(&f->d)), 7);
	return true;
}

/*
 * Chains published after the re-arm move the threshold forward, never
 * back, and never past what the device holds.
 */
static bool t_cb_delay_after_kick(void)
{
	struct fx *f = fx_new(16, true, true);
	unsigned int i;

	CHECK(f);
	CHECK(vblk_ring_enable_cb_delayed(&f->r, 75));
	CHECK_EQ(le16_to_cpu(*fake_used_event(&f->d)), 0);
	for (i = 0; i < 8; i++)
		CHECK_EQ(req_add(f, i, 1, 1, 8, &f->tok[i]), 0);
	vblk_ring_kick_prepare(&f->r);
	vblk_ring_delay_cb(&f->r, 75);
	/* 8 given, 75 %: the 6th completion (used_event 5). */
	CHECK_EQ(le16_to_cpu(*fake_used_event(&f->d)), 5);
	/* A smaller share does not pull it back. */
	vblk_ring_delay_cb(&f->r, 25);
	CHECK_EQ(le16_to_cpu(*fake_used_event(&f->d)), 5);
	/* 0 leaves it as it is too. */
	vblk_ring_delay_cb(&f->r, 0);
	CHECK_EQ(le16_to_cpu(*fake_used_event(&f->d)), 5);
	/* At most every chain given out: 100 % is the 8th (used_event 7). */
	vblk_ring_delay_cb(&f->r, 100);
	CHECK_EQ(le16_to_cpu(*fake_used_event(&f->d)), 7);
	return true;
}

/* Without EVENT_IDX there is nothing to move. */
static bool t_cb_delay_flags(void)
{
	struct fx *f = fx_new(16, false, true);
	unsigned int i;
	u16 ue;

	CHECK(f);
	ue = le16_to_cpu(*fake_used_event(&f->d));
	for (i = 0; i < 4; i++)
		CHECK_EQ(req_add(f, i, 1, 1, 8, &f->tok[i]), 0);
	vblk_ring_kick_prepare(&f->r);
	vblk_ring_delay_cb(&f->r, 75);
	CHECK_EQ(le16_to_cpu(*fake_used_event(&f->d)), ue);
	CHECK_EQ(le16_to_cpu(f->r.avail->flags), 0);
	return true;
}

/* Without EVENT_IDX there is no threshold to set: the plain re-arm. */
static bool t_cb_delayed_flags(void)
{
	struct fx *f = fx_new(16, false, true);
	unsigned int i;

	CHECK(f);
	for (i = 0; i < 4; i++)
		CHECK_EQ(req_add(f, i, 1, 1, 8, &f->tok[i]), 0);
	vblk_ring_kick_prepare(&f->r);
	vblk_ring_disable_cb(&f->r);
	CHECK(vblk_ring_enable_cb_delayed(&f->r, 75));
	CHECK_EQ(le16_to_cpu(f->r.avail->flags), 0);
	CHECK_EQ(fake_dev_fetch(&f->d), 4);
	fake_dev_complete(&f->d, 0, 8);
	CHECK(!vblk_ring_enable_cb_delayed(&f->r, 75));
	return true;
}

/* ------------------------------------------------------------------ */

/*
 * Three requests in flight (heads 1, 2, 3; in direct mode chains of two),
 * fetched by the device. The caller then writes something invalid and
 * expects err; nothing but broken/err/err_val may change.
 */
static bool err_setup(struct fx *f)
{
	unsigned int i;

	for (i = 1; i <= 3; i++)
		if (req_add(f, i, 1, 1, 100, &f->tok[i]))
			return false;
	vblk_ring_publish(&f->r);
	return fake_dev_fetch(&f->d) == 3;
}

/* Everything but broken/err/err_val. */
static bool ring_state_eq(const struct vblk_ring *a, const struct vblk_ring *b)
{
	return a->desc == b->desc && a->avail == b->avail &&
	       a->used == b->used && a->slot == b->slot &&
	       a->desc_addr == b->desc_addr && a->avail_addr == b->avail_addr &&
	       a->used_addr == b->used_addr && a->num == b->num &&
	       a->event_idx == b->event_idx && a->indirect == b->indirect &&
	       a->avail_idx == b->avail_idx && a->kick_idx == b->kick_idx &&
	       a->free_head == b->free_head && a->num_free == b->num_free &&
	       a->avail_flags == b->avail_flags &&
	       a->last_used == b->last_used && a->in_flight == b->in_flight;
}

static unsigned int tokens_held(struct fx *f)
{
	unsigned int i, n = 0;

	for (i = 0; i < f->num; i++)
		n += f->slot[i].token != NULL;
	return n;
}

static bool err_check(struct fx *f, enum vblk_ring_err err, u32 val)
{
	struct vblk_ring before = f->r;
	struct vblk_ring_slot *sbefore = calloc(f->num, sizeof(*sbefore));
	u8 *mbefore = malloc(f->size);
	void *tok = (void *)1;
	u32 len = 77;
	bool ok = true;

	if (!sbefore || !mbefore) {
		free(sbefore);
		free(mbefore);
		FAILF("oom");
	}
	memcpy(sbefore, f->slot, f->num * sizeof(*sbefore));
	memcpy(mbefore, f->mem, f->size);

	if (vblk_ring_get_used(&f->r, &tok, &len) != -EIO) {
		snprintf(why, sizeof(why), "get_used did not fail");
		ok = false;
	} else if (!f->r.broken || f->r.err != err || f->r.err_val != val) {
		snprintf(why, sizeof(why), "broken %d err %d (want %d) val %u (want %u)",
			 f->r.broken, f->r.err, err, f->r.err_val, val);
		ok = false;
	} else if (tok != (void *)1 || len != 77) {
		snprintf(why, sizeof(why), "outputs touched");
		ok = false;
	} else if (memcmp(sbefore, f->slot, f->num * sizeof(*sbefore)) ||
		   memcmp(mbefore, f->mem, f->size)) {
		snprintf(why, sizeof(why), "slots or ring memory touched");
		ok = false;
	} else if (!ring_state_eq(&before, &f->r)) {
		snprintf(why, sizeof(why), "ring state touched");
		ok = false;
	}
	free(sbefore);
	free(mbefore);
	if (!ok)
		return false;

	/* Sticky: the ring refuses everything, even valid completions. */
	CHECK_EQ(tokens_held(f), f->r.in_flight);
	CHECK(f->r.in_flight >= 2);
	CHECK_EQ(req_add(f, 9, 1, 1, 8, &f->tok[9]), -EIO);
	CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), -EIO);
	CHECK(!vblk_ring_has_used(&f->r));
	CHECK(vblk_ring_enable_cb(&f->r));
	CHECK(f->r.broken);
	CHECK_EQ(f->r.err, err);
	return true;
}

/* Heads of the three requests (indirect: tags; direct: chain heads). */
static u16 err_head(struct fx *f, unsigned int i)
{
	return le16_to_cpu(f->r.avail->ring[i - 1]);
}

static bool err_cases(bool indirect)
{
	struct fx *f;
	void *tok;
	u32 len;

	/* used->idx jumps past what is in flight */
	f = fx_new(16, false, indirect);
	CHECK(f && err_setup(f));
	fake_dev_complete(&f->d, 0, 1);
	f->d.used_idx += 3;	/* 4 new entries, 3 in flight */
	f->r.used->idx = cpu_to_le16(f->d.used_idx);
	if (!err_check(f, VBLK_RING_E_IDX, 4))
		return false;

	/* exactly in_flight new entries is fine; a rewind is not */
	f = fx_new(16, false, indirect);
	CHECK(f && err_setup(f));
	CHECK_EQ(fake_dev_complete_full(&f->d, 0), 0);
	CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 1);
	f->r.used->idx = cpu_to_le16(0);
	if (!err_check(f, VBLK_RING_E_IDX, 0))
		return false;

	/* id out of range */
	f = fx_new(16, false, indirect);
	CHECK(f && err_setup(f));
	fake_dev_put_used(&f->d, 16, 0);
	if (!err_check(f, VBLK_RING_E_ID, 16))
		return false;
	f = fx_new(16, false, indirect);
	CHECK(f && err_setup(f));
	fake_dev_put_used(&f->d, 0xffffffffu, 0);
	if (!err_check(f, VBLK_RING_E_ID, 0xffffffffu))
		return false;

	/* id in range but not in flight */
	f = fx_new(16, false, indirect);
	CHECK(f && err_setup(f));
	fake_dev_put_used(&f->d, 12, 0);
	if (!err_check(f, VBLK_RING_E_IDLE, 12))
		return false;

	/* len larger than the writable buffers (len == in_len is fine) */
	f = fx_new(16, false, indirect);
	CHECK(f && err_setup(f));
	fake_dev_put_used(&f->d, err_head(f, 1), 100);
	CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 1);
	CHECK_EQ(len, 100);
	/* over-reported: tolerated, clamped and counted */
	fake_dev_put_used(&f->d, err_head(f, 2), 101);
	CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 1);
	CHECK_EQ(len, 100);
	CHECK_EQ(f->r.len_over, 1);
	CHECK(!f->r.broken);

	/* duplicate completion of one id */
	f = fx_new(16, false, indirect);
	CHECK(f && err_setup(f));
	fake_dev_put_used(&f->d, err_head(f, 2), 5);
	CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 1);
	CHECK(tok == &f->tok[2]);
	fake_dev_put_used(&f->d, err_head(f, 2), 5);
	if (!err_check(f, VBLK_RING_E_IDLE, err_head(f, 2)))
		return false;
	CHECK(f->slot[err_head(f, 1)].token == &f->tok[1]);
	CHECK(f->slot[err_head(f, 3)].token == &f->tok[3]);

	if (!indirect) {
		/* the second descriptor of a chain is not a head */
		f = fx_new(16, false, indirect);
		CHECK(f && err_setup(f));
		fake_dev_put_used(&f->d, err_head(f, 2) + 1, 0);
		if (!err_check(f, VBLK_RING_E_IDLE, err_head(f, 2) + 1))
			return false;
	}
	return true;
}

static bool t_errors_indirect(void)
{
	return err_cases(true);
}

static bool t_errors_direct(void)
{
	return err_cases(false);
}

/* ------------------------------------------------------------------ */

struct reclaim_log {
	void *tok[16];
	unsigned int n;
	void *arg;
};

static void reclaim_fn(void *token, void *arg)
{
	struct reclaim_log *l = arg;

	if (l->n < 16)
		l->tok[l->n] = token;
	l->n++;
}

static bool reclaim_run(bool indirect)
{
	struct fx *f = fx_new(8, false, indirect);
	struct reclaim_log log = { .n = 0 };
	void *tok;
	u32 len;
	unsigned int i, mask = 0;

	CHECK(f);
	CHECK_EQ(req_add(f, 1, 1, 2, 8, &f->tok[1]), 0);
	CHECK_EQ(req_add(f, 2, 1, 1, 8, &f->tok[2]), 0);
	CHECK_EQ(req_add(f, 4, 0, 1, 8, &f->tok[4]), 0);
	vblk_ring_publish(&f->r);
	CHECK_EQ(fake_dev_fetch(&f->d), 3);
	fake_dev_complete(&f->d, 1, 0);		/* the second request */
	CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 1);
	CHECK(tok == &f->tok[2]);
	/* and a hostile write breaks the ring before the reset */
	fake_dev_put_used(&f->d, 15, 0);
	CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), -EIO);

	vblk_ring_reclaim(&f->r, reclaim_fn, &log);
	CHECK_EQ(log.n, 2);
	for (i = 0; i < log.n; i++)
		mask |= log.tok[i] == &f->tok[1] ? 1 :
			log.tok[i] == &f->tok[4] ? 2 : 4;
	CHECK_EQ(mask, 3);
	CHECK_EQ(f->r.in_flight, 0);
	CHECK_EQ(f->r.num_free, 8);
	for (i = 0; i < 8; i++)
		CHECK(!f->slot[i].token);
	/* nothing left to reclaim a second time */
	vblk_ring_reclaim(&f->r, reclaim_fn, &log);
	CHECK_EQ(log.n, 2);
	vblk_ring_reclaim(&f->r, NULL, NULL);

	/* Re-init after the reset: fully usable, no longer broken. */
	CHECK(fx_reinit(f));
	CHECK(!f->r.broken);
	for (i = 0; i < 8; i++)
		CHECK_EQ(req_add(f, i, 0, 1, 8, &f->tok[i]), 0);
	vblk_ring_publish(&f->r);
	CHECK_EQ(fake_dev_fetch(&f->d), 8);
	while (f->d.qn)
		CHECK_EQ(fake_dev_complete_full(&f->d, 0), 0);
	for (i = 0; i < 8; i++)
		CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 1);
	CHECK_EQ(vblk_ring_get_used(&f->r, &tok, &len), 0);
	CHECK_EQ(f->r.num_free, 8);
	return true;
}

static bool t_reclaim_indirect(void)
{
	return reclaim_run(true);
}

static bool t_reclaim_direct(void)
{
	return reclaim_run(false);
}

/* ------------------------------------------------------------------ */

static void run(const char *name, bool (*fn)(void))
{
	bool ok;

	why[0] = '\0';
	ok = fn();
	fx_free(cur);
	cur = NULL;
	report(name, ok);
}

#define RUN(fn) run(&#fn[2], fn)	/* name without "t_" */

/*
 * VIRTIO_F_ORDER_PLATFORM: a ring told so uses the platform (DMA) barriers
 * at every ordering point of a round trip (publish, kick_prepare, harvest,
 * re-arm), and one not told so uses none of them; the ring works the
 * same either way.
 */
static bool platform_round_trip(bool platform, unsigned long *barriers)
{
	struct fx *f = fx_new(16, true, true);
	unsigned long before;
	void *tok;
	u32 len;

	if (!f)
		return false;
	vblk_ring_set_platform_order(&f->r, platform);
	before = vblk_test_platform_barriers;
	if (req_add(f, 3, 1, 2, 512, &f->tok[3]))
		return false;
	if (!vblk_ring_kick_prepare(&f->r))
		return false;
	if (fake_dev_fetch(&f->d) != 1 || fake_dev_complete_full(&f->d, 0))
		return false;
	if (vblk_ring_get_used(&f->r, &tok, &len) != 1 || tok != &f->tok[3])
		return false;
	if (!vblk_ring_enable_cb(&f->r))
		return false;
	*barriers = vblk_test_platform_barriers - before;
	return true;
}

static bool t_platform_order(void)
{
	unsigned long smp = 0, platform = 0;

	CHECK(platform_round_trip(false, &smp));
	CHECK_EQ(smp, 0);
	CHECK(platform_round_trip(true, &platform));
	/* wmb (publish), mb (kick_prepare), rmb (harvest), mb (re-arm) */
	CHECK(platform >= 4);
	return true;
}

int main(void)
{
	RUN(t_layout);
	RUN(t_init_invalid);
	RUN(t_indirect_roundtrip);
	RUN(t_indirect_args);
	RUN(t_direct_chains);
	RUN(t_wrap_indirect);
	RUN(t_wrap_direct);
	RUN(t_wrap_event_idx);
	RUN(t_kick_event_idx);
	RUN(t_kick_wrap);
	RUN(t_kick_no_notify);
	RUN(t_kick_publishes);
	RUN(t_cb_flags);
	RUN(t_cb_event_idx);
	RUN(t_cb_delayed);
	RUN(t_cb_delayed_flags);
	RUN(t_cb_delay_after_kick);
	RUN(t_cb_delay_flags);
	RUN(t_errors_indirect);
	RUN(t_errors_direct);
	RUN(t_reclaim_indirect);
	RUN(t_reclaim_direct);
	RUN(t_platform_order);
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
