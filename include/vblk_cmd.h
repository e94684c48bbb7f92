/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vblk: the pure parts of the range commands (discard, write zeroes, secure
 * erase; virtio 1.2+ section 5.2.6): their payload table and the limits a
 * device's config allows for them. Nothing here touches the device or the
 * block layer, so the same code builds in tests/unit, where hostile config
 * values and odd request shapes are tried.
 *
 * Ownership: a range table lives in the tag's DMA storage (after the three
 * descriptors a range command uses, see vblk_mq.c); it belongs to the
 * request holding the tag, as the rest of that storage does.
 */
#ifndef VBLK_CMD_H
#define VBLK_CMD_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/limits.h>
#include <asm/byteorder.h>
#else
#include "vblk_ring_user.h"
#endif

/* One payload entry (struct virtio_blk_discard_write_zeroes). */
struct vblk_range {
	__le64 sector;
	__le32 num_sectors;
	__le32 flags;
};

#define VBLK_RANGE_F_UNMAP	1	/* write zeroes: may deallocate */

/* Ranges per command vblk preallocates room for, at most. */
#define VBLK_MAX_RANGES		16

/* A table being filled: entries [0, n) of cap. */
struct vblk_range_table {
	struct vblk_range *r;
	unsigned int n;
	unsigned int cap;
};

int vblk_range_add(struct vblk_range_table *t, u64 sector, u64 nr_sectors,
		   u32 flags);

/*
 * The device config fields of the range commands, in CPU order, and which
 * of the commands were negotiated. lbs is the logical block size in bytes.
 */
struct vblk_range_cfg {
	bool discard;
	bool write_zeroes;
	bool secure_erase;
	u32 lbs;
	u32 max_discard_sectors;
	u32 max_discard_seg;
	u32 discard_sector_alignment;
	u32 max_write_zeroes_sectors;
	u32 max_write_zeroes_seg;
	u8 write_zeroes_may_unmap;
	u32 max_secure_erase_sectors;
	u32 max_secure_erase_seg;
	u32 secure_erase_sector_alignment;
};

/* What the block layer is told; a zero sector count turns a command off. */
struct vblk_range_limits {
	u32 max_discard_sectors;
	u32 max_secure_erase_sectors;
	u32 max_write_zeroes_sectors;
	u32 discard_granularity;	/* bytes; discard and secure erase */
	u16 max_discard_segments;	/* discard and secure erase */
	bool zeroes_may_unmap;
};

/* Told about each config field whose value was not used as given. */
typedef void (*vblk_cfg_warn_fn)(void *ctx, const char *field, u32 value,
				 const char *consequence);

void vblk_range_limits(const struct vblk_range_cfg *c, unsigned int max_ranges,
		       struct vblk_range_limits *l, vblk_cfg_warn_fn warn,
		       void *ctx);

/* Zone models (VIRTIO_BLK_Z_*) and what vblk does with each. */
#define VBLK_ZONED_NONE		0
#define VBLK_ZONED_HA		1
#define VBLK_ZONED_HM		2

int vblk_zoned_check(u8 model, const char **why);

#endif /* VBLK_CMD_H */
