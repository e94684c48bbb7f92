// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzz target for vblk_ring.c.
 *
 * An input is a script: one header byte (ring size, EVENT_IDX, indirect,
 * indices starting just below the 16-bit wrap), then 4-byte records
 * (op, a, b, c) mixing driver calls, a well-behaved
 * device (tests/unit/fake_dev.h) and hostile device writes (arbitrary used
 * index, ids, lengths, scribbles over the descriptor table). A shadow
 * model of the driver's state checks, after every step:
 *
 *  - in_flight never exceeds num and equals the requests really out;
 *  - every token is returned at most once (by get_used or reclaim), and
 *    only while it is out; len never exceeds its writable bytes;
 *  - num_free matches the descriptors the in-flight chains hold;
 *  - broken is sticky (err/err_val frozen, add/get_used refuse with -EIO),
 *    and a failing get_used changes nothing else;
 *  - with no hostile write since init, the ring never breaks and returns
 *    exactly the completions the device made, in order;
 *  - the driver never writes the used ring; return codes and kick
 *    decisions follow the spec's rules.
 * ASan/UBSan catch out-of-bounds accesses and undefined arithmetic.
 *
 * Builds as a libFuzzer target (LLVMFuzzerTestOneInput), or with
 * -DFUZZ_STANDALONE as fuzz_ring_smoke: runs N pseudo-random scripts from a
 * fixed seed (or replays files given on the command line) and prints
 * "N passed, N failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vblk_ring.h"
#include "fake_dev.h"

#define F_MAXNUM	64
#define F_MAXD		(F_MAXNUM + 2)	/* one past the spec limit */
#define F_NTOK		(2 * F_MAXNUM + 1)

enum fop {
	OP_ADD, OP_PUBLISH, OP_KICK, OP_GET_USED, OP_HAS_USED, OP_ENABLE_CB,
	OP_DISABLE_CB, OP_DEV_FETCH, OP_DEV_COMPLETE, OP_DEV_AVAIL_EVENT,
	OP_DEV_USED_FLAGS, OP_RESET,
	/* hostile from here on */
	OP_H_USED_IDX, OP_H_ELEM, OP_H_LONG, OP_H_DUP, OP_H_SCRIBBLE,
	OP_H_UNFETCHED, OP_H_RAW,
	OP_COUNT
};
#define OP_FIRST_HOSTILE OP_H_USED_IDX

struct ftok {
	bool out;
	u32 wsum;
	u16 head;
};

struct fexp {
	struct ftok *tok;
	u32 len;
};

struct fstate {
	void *mem;
	size_t size;
	unsigned int num;
	bool event_idx, indirect, platform_order;
	struct vblk_ring r;
	struct vblk_ring_slot *slot;	/* exactly num, for ASan */
	struct fake_dev d;
	struct ftok tok[F_NTOK];
	struct vblk_desc tbl[F_MAXNUM][F_MAXD];	/* per-tag indirect tables */
	struct vblk_desc scratch[F_MAXD];
	struct ftok *by_head[F_MAXNUM];	/* legit device: head -> token */
	struct fexp exp[F_MAXNUM * 4];	/* legit completions, in order */
	unsigned int exp_h, exp_n;
	u8 *used_shadow;
	size_t used_off;
	unsigned int out;		/* tokens out */
	bool hostile;			/* hostile write since init */
	bool broken;
	enum vblk_ring_err err;
	u32 err_val;
	u16 kick_old;			/* model of kick_idx */
	u16 last_dup;			/* last id the device completed */
	bool have_dup;
	bool cb_off;			/* model of NO_INTERRUPT */
};

static char fz_why[256];

/* Statistics for the smoke driver, to show the scripts reach deep states. */
static unsigned long st_completed, st_broken[5], st_kicks, st_enospc;

#define FZ_CHECK(c)							\
	do {								\
		if (!(c)) {						\
			snprintf(fz_why, sizeof(fz_why),		\
				 "line %d: %s", __LINE__, #c);		\
			return false;					\
		}							\
	} while (0)

static u16 used_idx_mem(struct fstate *s)
{
	return le16_to_cpu(s->r.used->idx);
}

static void shadow_take(struct fstate *s)
{
	memcpy(s->used_shadow, (u8 *)s->mem + s->used_off,
	       s->size - s->used_off);
}

static bool shadow_same(struct fstate *s)
{
	return !memcmp(s->used_shadow, (u8 *)s->mem + s->used_off,
		       s->size - s->used_off);
}

/*
 * Start all 16-bit indices just below the wrap, as if the ring had run
 * for a while, so short scripts cross 65535 -> 0 too.
 */
static void fs_start_at(struct fstate *s, u16 start)
{
	s->r.avail_idx = s->r.kick_idx = s->r.last_used = start;
	s->d.last_avail = s->d.used_idx = start;
	s->r.avail->idx = cpu_to_le16(start);
	s->r.used->idx = cpu_to_le16(start);
	*fake_used_event(&s->d) = cpu_to_le16(start);
	*fake_avail_event(&s->d) = cpu_to_le16(start);
	s->kick_old = start;
	shadow_take(s);
}

static bool fs_init(struct fstate *s)
{
	memset(s->mem, 0, s->size);
	if (vblk_ring_init(&s->r, s->mem, fake_virt_to_bus(s->mem), s->num,
			   s->slot, s->event_idx, s->indirect))
		return false;
	vblk_ring_set_platform_order(&s->r, s->platform_order);
	if (fake_dev_init(&s->d, &s->r))
		return false;
	s->d.tbl_lo = (uintptr_t)s->tbl;
	s->d.tbl_hi = (uintptr_t)(s->tbl + F_MAXNUM);
	memset(s->tok, 0, sizeof(s->tok));
	memset(s->by_head, 0, sizeof(s->by_head));
	s->exp_h = s->exp_n = 0;
	s->out = 0;
	s->hostile = false;
	s->broken = false;
	s->kick_old = 0;
	s->have_dup = false;
	s->cb_off = false;
	shadow_take(s);
	return true;
}

/* ---- invariants ------------------------------------------------------ */

static bool check_invariants(struct fstate *s)
{
	unsigned int i, held = 0, ndesc = 0;

	FZ_CHECK(s->r.in_flight <= s->num);
	FZ_CHECK(s->r.in_flight == s->out);
	FZ_CHECK(s->r.num_free <= s->num);
	for (i = 0; i < s->num; i++) {
		struct ftok *t = s->slot[i].token;

		if (!t)
			continue;
		FZ_CHECK(t >= s->tok && t < s->tok + F_NTOK);
		FZ_CHECK(t->out && t->head == i);
		held++;
		ndesc += s->slot[i].ndesc;
	}
	FZ_CHECK(held == s->out);
	FZ_CHECK(s->r.num_free + ndesc == s->num);
	if (s->broken) {
		FZ_CHECK(s->r.broken);
		FZ_CHECK(s->r.err == s->err && s->r.err_val == s->err_val);
	} else {
		FZ_CHECK(!s->r.broken);
	}
	FZ_CHECK(s->hostile || !s->r.broken);
	FZ_CHECK(shadow_same(s));
	return true;
}

/* ---- driver ops ------------------------------------------------------ */

static struct ftok *tok_get(struct fstate *s, unsigned int start)
{
	unsigned int i;

	for (i = 0; i < F_NTOK; i++) {
		struct ftok *t = &s->tok[(start + i) % F_NTOK];

		if (!t->out)
			return t;
	}
	return NULL;
}

static u32 len_of(u8 c, unsigned int i)
{
	if ((c & 0xf0) == 0xf0)
		return 0xffffffffu - i;	/* exercise the saturating sum */
	return (u32)c * 17 + i;
}

static bool op_add(struct fstate *s, u8 a, u8 b, u8 c)
{
	/* mostly short chains, sometimes anything up to one past the limit */
	unsigned int n = a & 3 ? 1u + (a >> 2) % 4 : (a >> 2) % (s->num + 2);
	unsigned int nr = n ? b % (n + 1) : 0, i;
	u16 head = c % (s->num + 1);
	bool disorder = (b & 0xe0) == 0xe0 && n >= 2 && nr < n - 1;
	bool busy = head >= s->num || s->r.slot[head].token;
	struct vblk_desc *t;
	struct ftok *tok = tok_get(s, a * 7 + c);
	u32 wsum = 0;
	int want, ret;

	if (n > F_MAXD)
		n = F_MAXD;
	t = s->indirect && !busy ? s->tbl[head] : s->scratch;
	for (i = 0; i < n; i++) {
		bool w = i >= nr;
		u32 len = len_of(c, i);

		vblk_desc_set(&t[i], 0x10000ULL * (i + 1), len, w);
		if (w)
			wsum = wsum > 0xffffffffu - len ? 0xffffffffu :
			       wsum + len;
	}
	if (disorder)	/* a readable descriptor after a writable one */
		vblk_desc_set(&t[n - 1], 0x1000, 1, false);

	if (s->broken)
		want = -EIO;
	else if (!n || n > s->num || disorder)
		want = -EINVAL;
	else if (s->indirect && head >= s->num)
		want = -EINVAL;
	else if (s->indirect && busy)
		want = -EBUSY;
	else if (!s->indirect && n > s->r.num_free)
		want = -ENOSPC;
	else
		want = 0;

	ret = vblk_ring_add(&s->r, head, t, fake_virt_to_bus(t), n, tok);
	if (ret != want) {
		snprintf(fz_why, sizeof(fz_why),
			 "add n=%u head=%u returned %d, want %d", n, head, ret,
			 want);
		return false;
	}
	if (ret == -ENOSPC)
		st_enospc++;
	if (ret)
		return true;
	head = le16_to_cpu(s->r.avail->ring[(u16)(s->r.avail_idx - 1) &
					    (s->num - 1)]);
	FZ_CHECK(head < s->num && s->slot[head].token == tok);
	FZ_CHECK(s->slot[head].in_len == wsum);
	FZ_CHECK(s->slot[head].ndesc == (s->indirect ? 1 : n));
	tok->out = true;
	tok->wsum = wsum;
	tok->head = head;
	s->by_head[head] = tok;
	s->out++;
	return true;
}

static bool op_kick(struct fstate *s)
{
	u16 old = s->kick_old, new = s->r.avail_idx;
	bool want, got;

	if (new == old)
		want = false;
	else if (s->event_idx)
		want = fake_need_event(le16_to_cpu(*fake_avail_event(&s->d)),
				       new, old);
	else
		want = !(le16_to_cpu(s->r.used->flags) &
			 VBLK_USED_F_NO_NOTIFY);
	got = vblk_ring_kick_prepare(&s->r);
	FZ_CHECK(got == want);
	FZ_CHECK(le16_to_cpu(s->r.avail->idx) == new || new == old);
	s->kick_old = new;
	st_kicks += got;
	return true;
}

/*
 * Interrupt moderation after a kick (pct = a % 101): used_event may only
 * move forward, and never past the chains the device holds.
 */
static bool op_delay_cb(struct fstate *s, u8 a)
{
	u16 before = le16_to_cpu(*fake_used_event(&s->d));
	u16 after, last = s->r.last_used;

	vblk_ring_delay_cb(&s->r, a % 101);
	after = le16_to_cpu(*fake_used_event(&s->d));
	if (!s->event_idx || s->r.broken || !(a % 101)) {
		FZ_CHECK(after == before);
		return true;
	}
	if (after != before) {
		FZ_CHECK((u16)(after - last) > (u16)(before - last));
		FZ_CHECK((u16)(after - last) < s->r.in_flight);
	}
	return true;
}

static void note_broken(struct fstate *s)
{
	if (!s->broken) {
		s->broken = true;
		s->err = s->r.err;
		s->err_val = s->r.err_val;
		if (s->r.err < 5)
			st_broken[s->r.err]++;
	}
}

/* What the spec says about the next used element (single-threaded). */
static enum vblk_ring_err expect_err(struct fstate *s)
{
	u16 idx = used_idx_mem(s), pos = s->r.last_used & (s->num - 1);
	u32 id = le32_to_cpu(s->r.used->ring[pos].id);
	u32 len = le32_to_cpu(s->r.used->ring[pos].len);

	if (idx == s->r.last_used)
		return VBLK_RING_OK;
	if ((u16)(idx - s->r.last_used) > s->out)
		return VBLK_RING_E_IDX;
	if (id >= s->num)
		return VBLK_RING_E_ID;
	if (!s->slot[id].token)
		return VBLK_RING_E_IDLE;
	/* An over-long len is tolerated (clamped, counted by the ring). */
	(void)len;
	return VBLK_RING_OK;
}

static bool op_get_used(struct fstate *s, u8 a)
{
	unsigned int k = 1 + a % 4;

	while (k--) {
		struct vblk_ring before = s->r;
		struct vblk_ring_slot sb[F_MAXNUM];
		void *tp = (void *)&fz_why;
		struct ftok *t;
		u32 len = 12345;
		bool was_broken = s->r.broken;
		int ret;

		enum vblk_ring_err want = expect_err(s);

		memcpy(sb, s->slot, s->num * sizeof(*sb));
		ret = vblk_ring_get_used(&s->r, &tp, &len);
		if (!was_broken && want != VBLK_RING_OK)
			FZ_CHECK(ret == -EIO && s->r.err == want);
		if (ret == 0) {
			FZ_CHECK(!was_broken);
			FZ_CHECK(used_idx_mem(s) == s->r.last_used);
			return true;
		}
		if (ret < 0) {
			FZ_CHECK(ret == -EIO && s->r.broken);
			FZ_CHECK(s->r.err != VBLK_RING_OK);
			FZ_CHECK(tp == (void *)&fz_why && len == 12345);
			FZ_CHECK(!memcmp(sb, s->slot, s->num * sizeof(*sb)));
			FZ_CHECK(before.last_used == s->r.last_used &&
				 before.in_flight == s->r.in_flight &&
				 before.num_free == s->r.num_free &&
				 before.free_head == s->r.free_head &&
				 before.avail_idx == s->r.avail_idx);
			if (was_broken)
				FZ_CHECK(before.err == s->r.err &&
					 before.err_val == s->r.err_val);
			note_broken(s);
			return true;
		}
		FZ_CHECK(ret == 1 && !was_broken);
		t = tp;
		FZ_CHECK(t >= s->tok && t < s->tok + F_NTOK);
		FZ_CHECK(t->out);		/* never returned twice */
		FZ_CHECK(len <= t->wsum);
		FZ_CHECK((u16)(before.last_used + 1) == s->r.last_used);
		if (!s->hostile) {
			FZ_CHECK(s->exp_n);
			FZ_CHECK(s->exp[s->exp_h].tok == t);
			FZ_CHECK(s->exp[s->exp_h].len == len);
			s->exp_h = (s->exp_h + 1) % (F_MAXNUM * 4);
			s->exp_n--;
		}
		t->out = false;
		s->by_head[t->head] = NULL;
		s->out--;
		st_completed++;
	}
	return true;
}

/*
 * Re-arm through enable_cb, or through enable_cb_delayed when a's top bit
 * is set (pct = a % 101): with EVENT_IDX the threshold must lie 1..in_flight
 * elements ahead and "idle" must mean fewer than that many are waiting.
 */
static bool op_enable_cb(struct fstate *s, u8 a)
{
	unsigned int pct = a % 101;
	u16 wait = 1, waiting;
	bool idle;

	if (a & 0x80)
		idle = vblk_ring_enable_cb_delayed(&s->r, pct);
	else
		idle = vblk_ring_enable_cb(&s->r);
	s->cb_off = false;
	waiting = (u16)(used_idx_mem(s) - s->r.last_used);
	if (s->event_idx) {
		wait = le16_to_cpu(*fake_used_event(&s->d)) - s->r.last_used + 1;
		FZ_CHECK(wait >= 1);
		FZ_CHECK(wait == 1 || ((a & 0x80) && pct &&
				       wait <= s->r.in_flight));
	}
	FZ_CHECK(idle == (s->r.broken || waiting < wait));
	return true;
}

static bool op_cb(struct fstate *s, bool enable, u8 a)
{
	if (!enable) {
		vblk_ring_disable_cb(&s->r);
		if (!s->event_idx)
			s->cb_off = true;
	} else if (!op_enable_cb(s, a)) {
		return false;
	}
	FZ_CHECK(le16_to_cpu(s->r.avail->flags) ==
		 (s->cb_off ? VBLK_AVAIL_F_NO_INTERRUPT : 0));
	return true;
}

static bool reclaim_seen_ok;

static void reclaim_fn(void *token, void *arg)
{
	struct fstate *s = arg;
	struct ftok *t = token;

	if (t < s->tok || t >= s->tok + F_NTOK || !t->out)
		reclaim_seen_ok = false;
	else
		t->out = false;	/* a second call for it will fail above */
}

static bool op_reset(struct fstate *s)
{
	unsigned int i;

	reclaim_seen_ok = true;
	vblk_ring_reclaim(&s->r, reclaim_fn, s);
	FZ_CHECK(reclaim_seen_ok);
	for (i = 0; i < F_NTOK; i++)
		FZ_CHECK(!s->tok[i].out);
	FZ_CHECK(s->r.in_flight == 0 && s->r.num_free == s->num);
	return fs_init(s);
}

/* ---- device ops -------------------------------------------------------- */

static void dev_complete_legit(struct fstate *s, u8 a, u8 b)
{
	unsigned int k;
	long long w;
	u16 head;
	u32 len;

	if (!s->d.qn)
		return;
	k = a % s->d.qn;
	head = s->d.q[k];
	w = fake_dev_chain(&s->d, head, NULL);
	if (w < 0) {
		/* only after a scribble: complete it with nothing written */
		w = 0;
	}
	len = (b & 3) ? (u32)w : (u32)(w * b / 256);
	fake_dev_complete(&s->d, k, len);
	if (!s->hostile && s->exp_n < F_MAXNUM * 4) {
		s->exp[(s->exp_h + s->exp_n) % (F_MAXNUM * 4)] =
			(struct fexp){ s->by_head[head], len };
		s->exp_n++;
	}
	s->last_dup = head;
	s->have_dup = true;
}

/* Ids around the interesting boundaries, and anything at all. */
static u32 hostile_id(struct fstate *s, u8 a, u8 b, u8 c)
{
	switch (c & 3) {
	case 0:
		return a % (s->num + 2);
	case 1:
		return s->num + a % 3 - 1;
	case 2:
		return 0xffffffffu - a;
	default:
		return (u32)a << (b % 25) | b;
	}
}

static void dev_hostile(struct fstate *s, enum fop op, u8 a, u8 b, u8 c)
{
	struct vblk_used_elem *e;
	u8 *p;
	unsigned int i;

	s->hostile = true;
	switch (op) {
	case OP_H_USED_IDX:
		s->d.used_idx = a | b << 8;
		s->r.used->idx = cpu_to_le16(s->d.used_idx);
		break;
	case OP_H_ELEM:
		fake_dev_put_used(&s->d, hostile_id(s, a, b, c),
				  b & 1 ? c : (u32)c << (a % 25));
		break;
	case OP_H_LONG:
		if (s->d.qn) {
			long long w = fake_dev_chain(&s->d, s->d.q[a % s->d.qn],
						     NULL);

			fake_dev_complete(&s->d, a % s->d.qn,
					  (u32)(w < 0 ? 0 : w) + 1 + c);
		}
		break;
	case OP_H_DUP:
		if (s->have_dup)
			fake_dev_put_used(&s->d, s->last_dup, 0);
		break;
	case OP_H_SCRIBBLE:
		p = (u8 *)&s->r.desc[a % s->num];
		for (i = 0; i < sizeof(struct vblk_desc); i++)
			p[i] ^= (u8)(b * (i + 1) + c);
		break;
	case OP_H_UNFETCHED:
		for (i = 0; i < s->num; i++) {
			unsigned int h = (a + i) % s->num;

			if (s->slot[h].token) {
				fake_dev_put_used(&s->d, h, 0);
				break;
			}
		}
		break;
	case OP_H_RAW:
		e = &s->r.used->ring[a % s->num];
		e->id = cpu_to_le32(b * 0x01010101u);
		e->len = cpu_to_le32(c * 0x01000001u);
		break;
	default:
		break;
	}
}

/* ---- the interpreter --------------------------------------------------- */

static struct fstate fs;

static bool run_script(const u8 *data, size_t size)
{
	struct fstate *s = &fs;
	size_t i;

	s->num = 1u << ((data[0] & 7) > 6 ? 6 : (data[0] & 7));
	s->event_idx = data[0] & 8;
	s->indirect = data[0] & 16;
	s->platform_order = data[0] & 32;
	s->size = vblk_ring_mem_size(s->num);
	/* The used ring (with avail_event) ends the ring memory. */
	s->used_off = s->size - (3 * sizeof(__le16) +
				 s->num * sizeof(struct vblk_used_elem));
	/* Exact size, so ASan flags any access past the ring. */
	if (posix_memalign(&s->mem, 16, s->size))
		return false;
	s->slot = calloc(s->num, sizeof(*s->slot));
	if (!s->slot)
		return false;
	s->used_shadow = malloc(s->size - s->used_off);
	if (!s->used_shadow || !fs_init(s))
		return false;
	if ((u8 *)s->r.used - (u8 *)s->mem != (ptrdiff_t)s->used_off) {
		snprintf(fz_why, sizeof(fz_why), "used ring misplaced");
		return false;
	}
	if (data[0] & 32)
		fs_start_at(s, 0x10000 - 4 - 8 * (data[0] >> 6));

	for (i = 1; i + 4 <= size; i += 4) {
		enum fop op = data[i] % OP_COUNT;
		u8 a = data[i + 1], b = data[i + 2], c = data[i + 3];
		bool ok = true;

		switch (op) {
		case OP_ADD:
			ok = op_add(s, a, b, c);
			break;
		case OP_PUBLISH:
			vblk_ring_publish(&s->r);
			break;
		case OP_KICK:
			ok = op_kick(s);
			if (ok && (a & 0x80))
				ok = op_delay_cb(s, b);
			break;
		case OP_GET_USED:
			ok = op_get_used(s, a);
			break;
		case OP_HAS_USED:
			FZ_CHECK(vblk_ring_has_used(&s->r) ==
				 (!s->r.broken &&
				  used_idx_mem(s) != s->r.last_used));
			break;
		case OP_ENABLE_CB:
		case OP_DISABLE_CB:
			ok = op_cb(s, op == OP_ENABLE_CB, a);
			break;
		case OP_DEV_FETCH:
			if (fake_dev_fetch(&s->d) < 0)
				s->hostile = true;	/* only after lies */
			break;
		case OP_DEV_COMPLETE:
			dev_complete_legit(s, a, b);
			break;
		case OP_DEV_AVAIL_EVENT:
			*fake_avail_event(&s->d) = cpu_to_le16(a | b << 8);
			break;
		case OP_DEV_USED_FLAGS:
			s->r.used->flags = cpu_to_le16(a & 3);
			break;
		case OP_RESET:
			ok = op_reset(s);
			break;
		default:
			dev_hostile(s, op, a, b, c);
			break;
		}
		if (op >= OP_DEV_FETCH && op != OP_RESET)
			shadow_take(s);		/* device side wrote */
		if (!ok || !check_invariants(s)) {
			char tmp[sizeof(fz_why)];

			memcpy(tmp, fz_why, sizeof(tmp));
			snprintf(fz_why, sizeof(fz_why),
				 "step %zu (op %d): %.200s", (i - 1) / 4, op,
				 tmp);
			return false;
		}
	}
	return true;
}

/* Returns 0 when every invariant held. */
int vblk_fuzz_one(const u8 *data, size_t size);

int vblk_fuzz_one(const u8 *data, size_t size)
{
	bool ok;

	if (size < 1)
		return 0;
	fz_why[0] = '\0';
	ok = run_script(data, size);
	fake_dev_free(&fs.d);
	free(fs.mem);
	free(fs.used_shadow);
	free(fs.slot);
	fs.mem = NULL;
	fs.used_shadow = NULL;
	fs.slot = NULL;
	return ok ? 0 : 1;
}

#ifndef FUZZ_STANDALONE

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (vblk_fuzz_one(data, size)) {
		fprintf(stderr, "invariant violated: %s\n", fz_why);
		abort();
	}
	return 0;
}

#else /* FUZZ_STANDALONE: fuzz_ring_smoke */

static u64 rng = 0x9e3779b97f4a7c15ULL;

static u32 rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (u32)(rng >> 16);
}

static const u8 legit_ops[] = {
	OP_ADD, OP_ADD, OP_ADD, OP_ADD, OP_ADD, OP_PUBLISH, OP_PUBLISH,
	OP_KICK, OP_GET_USED, OP_GET_USED, OP_GET_USED, OP_HAS_USED,
	OP_ENABLE_CB, OP_DISABLE_CB, OP_DEV_FETCH, OP_DEV_FETCH, OP_DEV_FETCH,
	OP_DEV_COMPLETE, OP_DEV_COMPLETE, OP_DEV_COMPLETE, OP_DEV_COMPLETE,
	OP_DEV_AVAIL_EVENT, OP_DEV_USED_FLAGS,
};

/*
 * Three kinds of scripts: well-behaved device only (deep, long-lived
 * rings), mostly well-behaved with rare hostile writes (breaks late, from
 * a busy state), and raw random bytes.
 */
static size_t gen(u8 *buf, size_t max, unsigned int kind)
{
	size_t n = 1 + 4 * (16 + rnd() % ((max - 1) / 4 - 16)), i;

	for (i = 0; i < n; i++)
		buf[i] = rnd();
	if (kind == 2)
		return n;
	for (i = 1; i + 4 <= n; i += 4) {
		unsigned int r = rnd() % 512;

		if (kind == 1 && r < 4)
			buf[i] = OP_FIRST_HOSTILE +
				 rnd() % (OP_COUNT - OP_FIRST_HOSTILE);
		else if (r >= 4 && r < 6)
			buf[i] = OP_RESET;
		else	/* favour add / fetch / complete / harvest */
			buf[i] = legit_ops[r % sizeof(legit_ops)];
	}
	return n;
}

static int replay(int argc, char **argv)
{
	int i, pass = 0, fail = 0;

	for (i = 1; i < argc; i++) {
		static u8 buf[1 << 20];
		FILE *fp = fopen(argv[i], "rb");
		size_t n;

		if (!fp) {
			perror(argv[i]);
			fail++;
			continue;
		}
		n = fread(buf, 1, sizeof(buf), fp);
		fclose(fp);
		if (vblk_fuzz_one(buf, n)) {
			printf("FAIL - %s: %s\n", argv[i], fz_why);
			fail++;
		} else {
			printf("ok - %s\n", argv[i]);
			pass++;
		}
	}
	printf("%d passed, %d failed\n", pass, fail);
	return fail ? 1 : 0;
}

int main(int argc, char **argv)
{
	static u8 buf[4097];
	unsigned long n = 20000, i, pass = 0, fail = 0;
	char *end;

	if (argc > 1) {
		n = strtoul(argv[1], &end, 10);
		if (*end || !n)
			return replay(argc, argv);
	}
	for (i = 0; i < n; i++) {
		size_t len = gen(buf, sizeof(buf), i % 3);

		if (!vblk_fuzz_one(buf, len)) {
			pass++;
			continue;
		}
		fail++;
		if (fail <= 20) {
			char name[64];
			FILE *fp;

			snprintf(name, sizeof(name), "fuzz-fail-%lu.bin", i);
			fp = fopen(name, "wb");
			if (fp) {
				fwrite(buf, 1, len, fp);
				fclose(fp);
			}
			printf("FAIL - input %lu (saved as %s): %s\n", i, name,
			       fz_why);
		}
	}
	printf("# %lu completions, %lu kicks, %lu ENOSPC; broken by idx %lu, id %lu, idle %lu, len %lu\n",
	       st_completed, st_kicks, st_enospc, st_broken[VBLK_RING_E_IDX],
	       st_broken[VBLK_RING_E_ID], st_broken[VBLK_RING_E_IDLE],
	       st_broken[VBLK_RING_E_LEN]);
	printf("%lu passed, %lu failed\n", pass, fail);
	return fail ? 1 : 0;
}

#endif /* FUZZ_STANDALONE */
