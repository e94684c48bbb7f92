// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for vblk_pt_check.c, the checks of a passthrough command:
 * each rule with its errno, hostile values (sector and length at the edges
 * of their types, wrapping addresses, absurd limits), then a smoke fuzzer:
 * random commands, modes and limits, where every accepted command is
 * checked against an oracle written separately here (in 128-bit
 * arithmetic): inside the capacity, aligned, within the limits, permitted.
 *
 *   ./test_pt [N]      N fuzz iterations (default 200000, fixed seed)
 *
 * Output: "ok - name" / "FAIL - name: reason" per case, then
 * "N passed, N failed"; non-zero exit status on failure.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vblk_pt_check.h"
#include "check.h"

_Static_assert(sizeof(struct vblk_pt_cmd) == 32, "uapi size is fixed");
_Static_assert(sizeof(struct vblk_pt_cmd) <= 80, "fits an SQE128 cmd area");

#define RW	(VBLK_PT_MAY_READ | VBLK_PT_MAY_WRITE)
#define RO	VBLK_PT_MAY_READ
#define WO	VBLK_PT_MAY_WRITE

/* QEMU's default virtio-blk disk of 1 GiB, as vblk sets its queue up. */
static struct vblk_pt_limits lim(void)
{
	return (struct vblk_pt_limits){
		.capacity = 2097152,
		.lbs = 512,
		.max_hw_sectors = 2048,
		.max_segments = 254,
		.page_size = 4096,
		.dma_align_mask = 511,
		.max_discard_sectors = 8192,
		.max_write_zeroes_sectors = 8192,
		.flush = true,
	};
}

static struct vblk_pt_cmd cmd(unsigned int op, uint64_t sector, uint32_t len)
{
	bool data = op == VBLK_PT_OP_READ || op == VBLK_PT_OP_WRITE ||
		    op == VBLK_PT_OP_GET_ID;

	return (struct vblk_pt_cmd){
		.version = VBLK_PT_VERSION, .op = op, .sector = sector,
		.len = len, .addr = data ? 0x7f0000001000ULL : 0,
	};
}

static int check(const struct vblk_pt_cmd *c, unsigned int may, bool admin)
{
	struct vblk_pt_limits l = lim();

	return vblk_pt_check(c, false, may, admin, &l);
}

static bool t_good_commands(void)
{
	struct vblk_pt_cmd c;

	c = cmd(VBLK_PT_OP_READ, 0, 4096);
	CHECK_EQ(check(&c, RO, false), 0);
	c = cmd(VBLK_PT_OP_WRITE, 2097152 - 8, 4096);
	CHECK_EQ(check(&c, RW, false), 0);
	c = cmd(VBLK_PT_OP_FLUSH, 0, 0);
	CHECK_EQ(check(&c, WO, false), 0);
	c = cmd(VBLK_PT_OP_DISCARD, 8, 8192 * 512);
	CHECK_EQ(check(&c, WO, false), 0);
	c = cmd(VBLK_PT_OP_WRITE_ZEROES, 0, 512);
	c.flags = VBLK_PT_F_NOUNMAP;
	CHECK_EQ(check(&c, WO, false), 0);
	c = cmd(VBLK_PT_OP_GET_ID, 0, 512);
	CHECK_EQ(check(&c, RO, false), 0);
	return true;
}

static bool t_bad_version_op_reserved(void)
{
	struct vblk_pt_cmd c = cmd(VBLK_PT_OP_READ, 0, 512);

	c.version = 0;
	CHECK_EQ(check(&c, RW, true), -EINVAL);
	c.version = 2;
	CHECK_EQ(check(&c, RW, true), -EINVAL);
	c = cmd(0, 0, 512);
	CHECK_EQ(check(&c, RW, true), -EINVAL);
	c = cmd(7, 0, 512);
	CHECK_EQ(check(&c, RW, true), -EINVAL);
	c = cmd(255, 0, 512);
	CHECK_EQ(check(&c, RW, true), -EINVAL);
	c = cmd(VBLK_PT_OP_READ, 0, 512);
	c.rsvd0 = 1;
	CHECK_EQ(check(&c, RW, true), -EINVAL);
	c.rsvd0 = 0;
	c.rsvd1 = 0x80000000U;
	CHECK_EQ(check(&c, RW, true), -EINVAL);
	return true;
}

static bool t_flags(void)
{
	struct vblk_pt_cmd c = cmd(VBLK_PT_OP_READ, 0, 512);

	c.flags = VBLK_PT_F_NOUNMAP;	/* write zeroes only */
	CHECK_EQ(check(&c, RW, true), -EINVAL);
	c = cmd(VBLK_PT_OP_WRITE_ZEROES, 0, 512);
	c.flags = 0x8000;
	CHECK_EQ(check(&c, RW, true), -EINVAL);
	c.flags = 0xffff;
	CHECK_EQ(check(&c, RW, true), -EINVAL);
	return true;
}

static bool t_ioprio(void)
{
	struct vblk_pt_cmd c = cmd(VBLK_PT_OP_READ, 0, 512);

	c.ioprio = (2 << 13) | 7;	/* best effort, level 7 */
	CHECK_EQ(check(&c, RO, false), 0);
	c.ioprio = (3 << 13);		/* idle */
	CHECK_EQ(check(&c, RO, false), 0);
	c.ioprio = (1 << 13) | 4;	/* real time */
	CHECK_EQ(check(&c, RO, false), -EPERM);
	CHECK_EQ(check(&c, RO, true), 0);
	c.ioprio = (4 << 13);		/* no such class */
	CHECK_EQ(check(&c, RO, true), -EINVAL);
	c.ioprio = 0xffff;
	CHECK_EQ(check(&c, RO, true), -EINVAL);
	c.ioprio = 3;			/* a level without a class */
	CHECK_EQ(check(&c, RO, true), -EINVAL);
	c.ioprio = (2 << 13) | 8;	/* a hint bit */
	CHECK_EQ(check(&c, RO, true), -EINVAL);
	return true;
}

/* Reads need FMODE_READ, writes FMODE_WRITE: CAP_SYS_ADMIN changes neither. */
static bool t_permissions(void)
{
	struct vblk_pt_cmd r = cmd(VBLK_PT_OP_READ, 0, 512);
	struct vblk_pt_cmd w = cmd(VBLK_PT_OP_WRITE, 0, 512);
	struct vblk_pt_cmd d = cmd(VBLK_PT_OP_DISCARD, 0, 512);
	struct vblk_pt_cmd z = cmd(VBLK_PT_OP_WRITE_ZEROES, 0, 512);
	struct vblk_pt_cmd f = cmd(VBLK_PT_OP_FLUSH, 0, 0);
	struct vblk_pt_cmd id = cmd(VBLK_PT_OP_GET_ID, 0, 512);

	CHECK_EQ(check(&r, WO, true), -EBADF);
	CHECK_EQ(check(&id, WO, true), -EBADF);
	CHECK_EQ(check(&r, 0, true), -EBADF);
	CHECK_EQ(check(&w, RO, true), -EBADF);
	CHECK_EQ(check(&d, RO, true), -EBADF);
	CHECK_EQ(check(&z, RO, true), -EBADF);
	CHECK_EQ(check(&w, WO, false), 0);
	CHECK_EQ(check(&f, RO, false), -EPERM);
	CHECK_EQ(check(&f, RO, true), 0);
	CHECK_EQ(check(&f, WO, false), 0);
	return true;
}

static bool t_read_only_disk(void)
{
	struct vblk_pt_limits l = lim();
	struct vblk_pt_cmd c = cmd(VBLK_PT_OP_WRITE, 0, 512);

	l.read_only = true;
	CHECK_EQ(vblk_pt_check(&c, false, RW, true, &l), -EROFS);
	c = cmd(VBLK_PT_OP_DISCARD, 0, 512);
	CHECK_EQ(vblk_pt_check(&c, false, RW, true, &l), -EROFS);
	c = cmd(VBLK_PT_OP_READ, 0, 512);
	CHECK_EQ(vblk_pt_check(&c, false, RO, false, &l), 0);
	return true;
}

static bool t_unsupported(void)
{
	struct vblk_pt_limits l = lim();
	struct vblk_pt_cmd c;

	l.flush = false;
	l.max_discard_sectors = 0;
	l.max_write_zeroes_sectors = 0;
	c = cmd(VBLK_PT_OP_FLUSH, 0, 0);
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), -EOPNOTSUPP);
	c = cmd(VBLK_PT_OP_DISCARD, 0, 512);
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), -EOPNOTSUPP);
	c = cmd(VBLK_PT_OP_WRITE_ZEROES, 0, 512);
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), -EOPNOTSUPP);
	/* Permission comes first: a reader learns nothing of the device. */
	CHECK_EQ(vblk_pt_check(&c, false, RO, false, &l), -EBADF);
	return true;
}

static bool t_length_and_alignment(void)
{
	struct vblk_pt_limits l = lim();
	struct vblk_pt_cmd c = cmd(VBLK_PT_OP_READ, 0, 0);

	CHECK_EQ(check(&c, RW, false), -EINVAL);	/* zero length */
	c.len = 511;
	CHECK_EQ(check(&c, RW, false), -EINVAL);
	c.len = 513;
	CHECK_EQ(check(&c, RW, false), -EINVAL);
	c.len = 2048 * 512 + 512;			/* above max_hw_sectors */
	CHECK_EQ(check(&c, RW, false), -EINVAL);
	c.len = 512;
	c.addr += 1;					/* buffer alignment */
	CHECK_EQ(check(&c, RW, false), -EINVAL);
	c.addr += 511;
	CHECK_EQ(check(&c, RW, false), 0);
	/* 4k logical blocks: sector and length in whole blocks. */
	l.lbs = 4096;
	c = cmd(VBLK_PT_OP_READ, 8, 4096);
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), 0);
	c.sector = 9;
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), -EINVAL);
	c.sector = 8;
	c.len = 512;
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), -EINVAL);
	c = cmd(VBLK_PT_OP_GET_ID, 0, 512);		/* one block: 4096 */
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), -EINVAL);
	c.len = 4096;
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), 0);
	return true;
}

static bool t_no_buffer_ops(void)
{
	struct vblk_pt_cmd c = cmd(VBLK_PT_OP_FLUSH, 0, 0);
	struct vblk_pt_limits l = lim();

	c.sector = 1;
	CHECK_EQ(check(&c, RW, false), -EINVAL);
	c.sector = 0;
	c.len = 512;
	CHECK_EQ(check(&c, RW, false), -EINVAL);
	c.len = 0;
	c.addr = 4096;
	CHECK_EQ(check(&c, RW, false), -EINVAL);
	c.addr = 0;
	CHECK_EQ(vblk_pt_check(&c, true, RW, false, &l), -EINVAL); /* fixed */
	c = cmd(VBLK_PT_OP_DISCARD, 0, 512);
	c.addr = 4096;
	CHECK_EQ(check(&c, RW, false), -EINVAL);
	c = cmd(VBLK_PT_OP_DISCARD, 0, 8193 * 512);	/* above the limit */
	CHECK_EQ(check(&c, RW, false), -EINVAL);
	c = cmd(VBLK_PT_OP_WRITE_ZEROES, 0, 0);
	CHECK_EQ(check(&c, RW, false), -EINVAL);
	c = cmd(VBLK_PT_OP_GET_ID, 1, 512);
	CHECK_EQ(check(&c, RW, false), -EINVAL);
	return true;
}

/* The edges of the capacity, and values that wrap. */
static bool t_capacity_hostile(void)
{
	struct vblk_pt_cmd c;

	c = cmd(VBLK_PT_OP_READ, 2097152 - 1, 512);
	CHECK_EQ(check(&c, RW, false), 0);
	c = cmd(VBLK_PT_OP_READ, 2097152, 512);
	CHECK_EQ(check(&c, RW, false), -ERANGE);
	c = cmd(VBLK_PT_OP_READ, 2097152 - 1, 1024);
	CHECK_EQ(check(&c, RW, false), -ERANGE);
	return true;
}

/* UINT64_MAX is a whole 512-byte block: a range fault, never a wrap. */
static bool t_sector_u64_max(void)
{
	struct vblk_pt_limits l = lim();
	struct vblk_pt_cmd c = cmd(VBLK_PT_OP_READ, UINT64_MAX, 512);

	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), -ERANGE);
	c.sector = UINT64_MAX - 0;
	c.op = VBLK_PT_OP_DISCARD;
	c.addr = 0;
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), -ERANGE);
	c.sector = UINT64_MAX - 7;	/* sector + 8 wraps to 0 */
	c.len = 4096;
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), -ERANGE);
	/* A capacity of 2^64 - 1 sectors: the last block is still inside. */
	l.capacity = UINT64_MAX;
	c = cmd(VBLK_PT_OP_READ, UINT64_MAX - 1, 512);
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), 0);
	c.len = 1024;
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), -ERANGE);
	/* An empty disk holds nothing. */
	l.capacity = 0;
	c = cmd(VBLK_PT_OP_READ, 0, 512);
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), -ERANGE);
	return true;
}

static bool t_buffer_hostile(void)
{
	struct vblk_pt_limits l = lim();
	struct vblk_pt_cmd c = cmd(VBLK_PT_OP_READ, 0, 4096);

	c.addr = UINT64_MAX - 511;			/* wraps */
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), -EINVAL);
	c.addr = 0ULL - 4096 - 512;			/* ends at the top */
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), 0);
	/* Pages: 4 segments allowed, 16 KiB over 5 pages is refused. */
	l.max_segments = 4;
	c = cmd(VBLK_PT_OP_READ, 0, 16384);
	c.addr = 0x10000;
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), 0);
	c.addr = 0x10200;
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), -EINVAL);
	l.max_segments = 0;
	c.addr = 0x10000;
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), -EINVAL);
	/* The largest len is refused, not wrapped. */
	l = lim();
	l.max_hw_sectors = UINT32_MAX;
	l.max_segments = UINT32_MAX;
	l.capacity = UINT64_MAX;
	c.len = UINT32_MAX - 511;
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), 0);
	c.len = UINT32_MAX;
	CHECK_EQ(vblk_pt_check(&c, false, RW, false, &l), -EINVAL);
	return true;
}

static bool t_absurd_limits(void)
{
	struct vblk_pt_limits l = lim();
	struct vblk_pt_cmd c = cmd(VBLK_PT_OP_READ, 0, 512);

	l.lbs = 0;
	CHECK_EQ(vblk_pt_check(&c, false, RW, true, &l), -EINVAL);
	l.lbs = 256;
	CHECK_EQ(vblk_pt_check(&c, false, RW, true, &l), -EINVAL);
	l.lbs = 1536;
	CHECK_EQ(vblk_pt_check(&c, false, RW, true, &l), -EINVAL);
	l = lim();
	l.page_size = 0;
	CHECK_EQ(vblk_pt_check(&c, false, RW, true, &l), -EINVAL);
	l = lim();
	l.dma_align_mask = 510;
	CHECK_EQ(vblk_pt_check(&c, false, RW, true, &l), -EINVAL);
	l.dma_align_mask = UINT32_MAX;	/* 2^32 - 1: a mask, if useless */
	CHECK_EQ(vblk_pt_check(&c, false, RW, true, &l), -EINVAL);
	return true;
}

/* ---- the fuzzer --------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* A value near an interesting edge, or anything. */
static uint64_t pick64(uint64_t edge)
{
	switch (rnd() % 6) {
	case 0:
		return rnd();
	case 1:
		return edge - (rnd() % 16);
	case 2:
		return edge + (rnd() % 16);
	case 3:
		return UINT64_MAX - (rnd() % 4096);
	case 4:
		return (rnd() % 64) * 512;
	default:
		return rnd() % (edge + 1 ? edge + 1 : 1);
	}
}

static const uint32_t lbs_choices[] = {
	512, 512, 512, 512, 512, 512, 1024, 1024,
	4096, 4096, 4096, 4096, 512, 4096, 0, 3000,
};

static struct vblk_pt_limits random_limits(void)
{
	struct vblk_pt_limits l = lim();

	l.capacity = rnd() % 4 ? rnd() % (1ULL << 30) : pick64(UINT64_MAX);
	l.lbs = lbs_choices[rnd() % 16];
	l.max_hw_sectors = rnd() % 4 ? 8 + rnd() % 4096 : (uint32_t)rnd();
	l.max_segments = rnd() % 4 ? 1 + rnd() % 256 : (uint32_t)rnd();
	l.page_size = rnd() % 8 ? 4096 : (rnd() % 2 ? 65536 : 0);
	l.dma_align_mask = rnd() % 8 ? 511 : (uint32_t)(rnd() % 5000);
	l.max_discard_sectors = rnd() % 3 ? (uint32_t)(rnd() % 100000) : 0;
	l.max_write_zeroes_sectors = rnd() % 3 ? (uint32_t)(rnd() % 100000) : 0;
	l.flush = rnd() % 2;
	l.read_only = rnd() % 5 == 0;
	return l;
}

static struct vblk_pt_cmd random_cmd(const struct vblk_pt_limits *l)
{
	uint64_t blk = l->lbs >= 512 ? l->lbs / 512 : 1;
	struct vblk_pt_cmd c = { 0 };

	c.version = rnd() % 16 ? VBLK_PT_VERSION : (uint8_t)rnd();
	c.op = rnd() % 16 ? 1 + rnd() % 6 : (uint8_t)rnd();
	c.flags = rnd() % 8 ? 0 : (uint16_t)rnd();
	c.ioprio = rnd() % 4 ? 0 : (uint16_t)rnd();
	c.rsvd0 = rnd() % 32 ? 0 : (uint16_t)rnd();
	c.rsvd1 = rnd() % 32 ? 0 : (uint32_t)rnd();

	/* Mostly near-valid, so that the checks past the first are reached. */
	c.sector = rnd() % 2 && l->capacity ? rnd() % l->capacity / blk * blk
			     : pick64(l->capacity);
	c.len = rnd() % 4 ? (uint32_t)(rnd() % 64) * (l->lbs ? l->lbs : 512)
			  : (uint32_t)pick64(UINT32_MAX);
	c.addr = rnd() % 3 ? (rnd() % (1ULL << 47)) & ~4095ULL : pick64(0);
	if (c.op == VBLK_PT_OP_FLUSH && rnd() % 2)
		c.sector = c.len = 0;
	if (c.op != VBLK_PT_OP_READ && c.op != VBLK_PT_OP_WRITE &&
	    c.op != VBLK_PT_OP_GET_ID && rnd() % 2)
		c.addr = 0;
	if (c.op == VBLK_PT_OP_GET_ID && rnd() % 2) {
		c.sector = 0;
		c.len = l->lbs;
	}
	return c;
}

typedef unsigned __int128 u128;

/* The oracle: what an accepted command must satisfy, computed apart. */
static const char *violation(const struct vblk_pt_cmd *c, bool fixed,
			     unsigned int may, bool admin,
			     const struct vblk_pt_limits *l)
{
	bool data = c->op == VBLK_PT_OP_READ || c->op == VBLK_PT_OP_WRITE ||
		    c->op == VBLK_PT_OP_GET_ID;
	bool ranged = c->op != VBLK_PT_OP_FLUSH && c->op != VBLK_PT_OP_GET_ID;
	u128 end = (u128)c->sector * 512 + c->len;
	uint64_t max = 0;

	if (c->version != VBLK_PT_VERSION || c->rsvd0 || c->rsvd1)
		return "bad version or reserved field accepted";
	if (c->op < 1 || c->op > 6)
		return "unknown op accepted";
	if (c->flags & ~(c->op == VBLK_PT_OP_WRITE_ZEROES ? 1 : 0))
		return "reserved flag accepted";
	if ((c->ioprio >> 13) == 1 && !admin)
		return "real-time ioprio without CAP_SYS_ADMIN";
	switch (c->op) {
	case VBLK_PT_OP_READ:
	case VBLK_PT_OP_GET_ID:
		if (!(may & VBLK_PT_MAY_READ))
			return "read without FMODE_READ";
		break;
	case VBLK_PT_OP_FLUSH:
		if (!(may & VBLK_PT_MAY_WRITE) && !admin)
			return "flush without FMODE_WRITE or CAP_SYS_ADMIN";
		if (!l->flush)
			return "flush without a write cache";
		if (c->len || c->sector || c->addr || fixed)
			return "flush with arguments";
		return NULL;
	default:
		if (!(may & VBLK_PT_MAY_WRITE))
			return "data change without FMODE_WRITE";
		if (l->read_only)
			return "data change on a read-only disk";
	}
	if (!l->lbs || l->lbs % 512 || (l->lbs & (l->lbs - 1)))
		return "absurd logical block size accepted";
	if (!c->len || c->len % l->lbs || (c->sector * 512) % l->lbs)
		return "length or sector not in logical blocks";
	if (c->op == VBLK_PT_OP_READ || c->op == VBLK_PT_OP_WRITE)
		max = l->max_hw_sectors;
	else if (c->op == VBLK_PT_OP_DISCARD)
		max = l->max_discard_sectors;
	else if (c->op == VBLK_PT_OP_WRITE_ZEROES)
		max = l->max_write_zeroes_sectors;
	if (c->op == VBLK_PT_OP_GET_ID) {
		if (c->len != l->lbs || c->sector)
			return "get id of another shape";
	} else if ((uint64_t)c->len > max * 512) {
		return "length above the queue's limit";
	}
	if (ranged && end > (u128)l->capacity * 512)
		return "beyond the capacity";
	if (!data)
		return c->addr || fixed ? "buffer on a command without data" : NULL;
	if (!l->page_size || (c->addr & l->dma_align_mask) ||
	    (((u128)l->dma_align_mask + 1) & l->dma_align_mask))
		return "misaligned buffer";
	if ((u128)c->addr + c->len > (u128)UINT64_MAX + 1)
		return "buffer wraps";
	if ((c->addr % l->page_size + (u128)c->len + l->page_size - 1) /
	    l->page_size > l->max_segments)
		return "more pages than segments";
	return NULL;
}

static int fuzz_n = 200000;

static bool t_fuzz(void)
{
	int counts[5] = { 0 };	/* 0, EINVAL, ERANGE, perm, other */
	int i;

	for (i = 0; i < fuzz_n; i++) {
		struct vblk_pt_limits l = random_limits();
		struct vblk_pt_cmd c = random_cmd(&l);
		unsigned int may = rnd() % 4;
		bool admin = rnd() % 2, fixed = rnd() % 8 == 0;
		const char *v;
		int err = vblk_pt_check(&c, fixed, may, admin, &l);

		switch (err) {
		case 0:
			counts[0]++;
			v = violation(&c, fixed, may, admin, &l);
			if (v)
				FAILF("iteration %d: %s: op %u sector %" PRIu64
				      " len %u addr %#" PRIx64 " lbs %u cap %" PRIu64,
				      i, v, c.op, (uint64_t)c.sector, c.len,
				      (uint64_t)c.addr, l.lbs, (uint64_t)l.capacity);
			break;
		case -EINVAL:
			counts[1]++;
			break;
		case -ERANGE:
			counts[2]++;
			break;
		case -EBADF:
		case -EPERM:
		case -EROFS:
			counts[3]++;
			break;
		case -EOPNOTSUPP:
			counts[4]++;
			break;
		default:
			FAILF("iteration %d: unexpected errno %d", i, err);
		}
	}
	printf("# fuzz: %d commands: %d accepted, %d EINVAL, %d ERANGE, %d permission, %d EOPNOTSUPP\n",
	       fuzz_n, counts[0], counts[1], counts[2], counts[3], counts[4]);
	/* A fuzzer that never gets a command through tests nothing. */
	CHECK(counts[0] > fuzz_n / 100);
	CHECK(counts[2] > 0 && counts[3] > 0 && counts[4] > 0);
	return true;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		fuzz_n = atoi(argv[1]);
	report("pt: well-formed commands of every op pass", t_good_commands());
	report("pt: bad version, op, reserved fields: EINVAL",
	       t_bad_version_op_reserved());
	report("pt: reserved and misplaced flags: EINVAL", t_flags());
	report("pt: ioprio classes, levels, hints; RT needs admin", t_ioprio());
	report("pt: open mode and CAP_SYS_ADMIN", t_permissions());
	report("pt: read-only disk: EROFS for data changes", t_read_only_disk());
	report("pt: commands the device lacks: EOPNOTSUPP", t_unsupported());
	report("pt: length, sector and buffer alignment", t_length_and_alignment());
	report("pt: flush, discard, write zeroes, get id shapes",
	       t_no_buffer_ops());
	report("pt: capacity edges", t_capacity_hostile());
	report("pt: u64-max sector and wrapping ranges", t_sector_u64_max());
	report("pt: wrapping buffers, segments, u32-max length",
	       t_buffer_hostile());
	report("pt: absurd limits refused", t_absurd_limits());
	report("pt: fuzz: accepted commands keep the invariants", t_fuzz());
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
