// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: the checks of a passthrough command (include/vblk_pt_check.h).
 * Pure: built into the module and into tests/unit.
 *
 * The order, and so which errno a command with several faults gets:
 *   1. the limits themselves make sense (else -EINVAL: a driver bug)
 *   2. version, reserved fields, op, flags, ioprio: -EINVAL (a
 *      real-time ioprio without CAP_SYS_ADMIN: -EPERM)
 *   3. permission: the file's open mode (-EBADF), a read-only disk
 *      (-EROFS), CAP_SYS_ADMIN where the mode does not allow (-EPERM)
 *   4. the device has the command: -EOPNOTSUPP
 *   5. the command's shape: zero or misaligned length, misaligned sector or
 *      buffer, a buffer where none belongs, above the queue's limits: -EINVAL
 *   6. the range within the capacity: -ERANGE
 * All arithmetic is in 64 bits on values of at most 32 bits, or checked
 * before it could wrap.
 */
#include "vblk_pt_check.h"

#define VBLK_PT_SECTOR_SHIFT	9

/* ioprio: class in bits 13-15, level in bits 0-2; hints (3-12) refused. */
#define VBLK_PT_IOPRIO_CLASS_SHIFT	13
#define VBLK_PT_IOPRIO_LEVEL_MASK	0x7U
#define VBLK_PT_IOPRIO_CLASS_NONE	0
#define VBLK_PT_IOPRIO_CLASS_RT		1
#define VBLK_PT_IOPRIO_CLASS_IDLE	3

static bool vblk_pt_pow2(u64 v)
{
	return v && !(v & (v - 1));
}

enum vblk_pt_class vblk_pt_op_class(unsigned int op)
{
	switch (op) {
	case VBLK_PT_OP_READ:
	case VBLK_PT_OP_GET_ID:
		return VBLK_PT_CLASS_READ;
	case VBLK_PT_OP_WRITE:
	case VBLK_PT_OP_DISCARD:
	case VBLK_PT_OP_WRITE_ZEROES:
		return VBLK_PT_CLASS_WRITE;
	case VBLK_PT_OP_FLUSH:
		/* Changes no data; it only costs the device work. */
		return VBLK_PT_CLASS_OTHER;
	default:
		return VBLK_PT_CLASS_NONE;
	}
}

static bool vblk_pt_limits_sane(const struct vblk_pt_limits *l)
{
	return l->lbs >= 512 && vblk_pt_pow2(l->lbs) &&
	       vblk_pt_pow2(l->page_size) &&
	       vblk_pt_pow2((u64)l->dma_align_mask + 1);
}

static int vblk_pt_check_fields(const struct vblk_pt_cmd *c, bool admin)
{
	unsigned int prio_class = c->ioprio >> VBLK_PT_IOPRIO_CLASS_SHIFT;
	unsigned int data = c->ioprio & ((1U << VBLK_PT_IOPRIO_CLASS_SHIFT) - 1);
	u16 allowed = 0;

	if (c->version != VBLK_PT_VERSION || c->rsvd0 || c->rsvd1)
		return -EINVAL;
	if (vblk_pt_op_class(c->op) == VBLK_PT_CLASS_NONE)
		return -EINVAL;
	if (c->op == VBLK_PT_OP_WRITE_ZEROES)
		allowed = VBLK_PT_F_NOUNMAP;
	if (c->flags & ~allowed)
		return -EINVAL;
	if (prio_class > VBLK_PT_IOPRIO_CLASS_IDLE ||
	    (data & ~VBLK_PT_IOPRIO_LEVEL_MASK) ||
	    (prio_class == VBLK_PT_IOPRIO_CLASS_NONE && data))
		return -EINVAL;
	/* As ioprio_set(2): the real-time class is for the privileged. */
	if (prio_class == VBLK_PT_IOPRIO_CLASS_RT && !admin)
		return -EPERM;
	return 0;
}

static int vblk_pt_check_permission(const struct vblk_pt_cmd *c,
				    unsigned int may, bool admin,
				    const struct vblk_pt_limits *l)
{
	switch (vblk_pt_op_class(c->op)) {
	case VBLK_PT_CLASS_READ:
		return may & VBLK_PT_MAY_READ ? 0 : -EBADF;
	case VBLK_PT_CLASS_WRITE:
		/* Not even CAP_SYS_ADMIN writes through a read-only open. */
		if (!(may & VBLK_PT_MAY_WRITE))
			return -EBADF;
		return l->read_only ? -EROFS : 0;
	case VBLK_PT_CLASS_OTHER:
		return (may & VBLK_PT_MAY_WRITE) || admin ? 0 : -EPERM;
	default:
		return -EINVAL;
	}
}

static int vblk_pt_check_support(const struct vblk_pt_cmd *c,
				 const struct vblk_pt_limits *l)
{
	switch (c->op) {
	case VBLK_PT_OP_FLUSH:
		return l->flush ? 0 : -EOPNOTSUPP;
	case VBLK_PT_OP_DISCARD:
		return l->max_discard_sectors ? 0 : -EOPNOTSUPP;
	case VBLK_PT_OP_WRITE_ZEROES:
		return l->max_write_zeroes_sectors ? 0 : -EOPNOTSUPP;
	default:
		return 0;
	}
}

/* A length of whole logical blocks, at a sector on a logical block. */
static int vblk_pt_check_blocks(const struct vblk_pt_cmd *c,
				const struct vblk_pt_limits *l, u64 max_sectors)
{
	u64 lbs_sectors = l->lbs >> VBLK_PT_SECTOR_SHIFT;

	if (!c->len || (c->len & (l->lbs - 1)))
		return -EINVAL;
	if (c->sector & (lbs_sectors - 1))
		return -EINVAL;
	if ((u64)c->len > max_sectors << VBLK_PT_SECTOR_SHIFT)
		return -EINVAL;
	return 0;
}

/*
 * The buffer: aligned as the device's DMA needs (so that the block layer
 * maps it as it is, never through a kernel bounce copy), not wrapping the
 * address space, and over no more pages than the request may have
 * segments (each page is at most one segment, so the mapping cannot fail
 * on the segment count).
 */
static int vblk_pt_check_buffer(const struct vblk_pt_cmd *c,
				const struct vblk_pt_limits *l)
{
	u64 in_page = c->addr & (l->page_size - 1);

	if (c->addr & l->dma_align_mask)
		return -EINVAL;
	if (c->addr + c->len < c->addr)
		return -EINVAL;
	if (in_page + c->len > (u64)l->max_segments * l->page_size)
		return -EINVAL;
	return 0;
}

static int vblk_pt_check_shape(const struct vblk_pt_cmd *c, bool fixed,
			       const struct vblk_pt_limits *l)
{
	int err;

	switch (c->op) {
	case VBLK_PT_OP_READ:
	case VBLK_PT_OP_WRITE:
		err = vblk_pt_check_blocks(c, l, l->max_hw_sectors);
		return err ?: vblk_pt_check_buffer(c, l);
	case VBLK_PT_OP_GET_ID:
		/* One logical block: enough for the ID, and mapped directly. */
		if (c->sector || c->len != l->lbs)
			return -EINVAL;
		return vblk_pt_check_buffer(c, l);
	case VBLK_PT_OP_FLUSH:
		return c->sector || c->len || c->addr || fixed ? -EINVAL : 0;
	case VBLK_PT_OP_DISCARD:
		if (c->addr || fixed)
			return -EINVAL;
		return vblk_pt_check_blocks(c, l, l->max_discard_sectors);
	case VBLK_PT_OP_WRITE_ZEROES:
		if (c->addr || fixed)
			return -EINVAL;
		return vblk_pt_check_blocks(c, l, l->max_write_zeroes_sectors);
	default:
		return -EINVAL;
	}
}

/* [sector, sector + len) within the capacity, without overflow. */
static int vblk_pt_check_range(const struct vblk_pt_cmd *c,
			       const struct vblk_pt_limits *l)
{
	u64 sectors = (u64)c->len >> VBLK_PT_SECTOR_SHIFT;

	if (c->op == VBLK_PT_OP_FLUSH || c->op == VBLK_PT_OP_GET_ID)
		return 0;
	if (c->sector > l->capacity || sectors > l->capacity - c->sector)
		return -ERANGE;
	return 0;
}

int vblk_pt_check(const struct vblk_pt_cmd *c, bool fixed, unsigned int may,
		  bool admin, const struct vblk_pt_limits *l)
{
	int err;

	if (!vblk_pt_limits_sane(l))
		return -EINVAL;
	err = vblk_pt_check_fields(c, admin);
	if (err)
		return err;
	err = vblk_pt_check_permission(c, may, admin, l);
	if (err)
		return err;
	err = vblk_pt_check_support(c, l);
	if (err)
		return err;
	err = vblk_pt_check_shape(c, fixed, l);
	if (err)
		return err;
	return vblk_pt_check_range(c, l);
}
