// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: range tables and range-command limits (see include/vblk_cmd.h).
 * Pure functions: built into the module and into tests/unit.
 */
#include "vblk_cmd.h"

/*
 * Append [sector, sector + nr_sectors) to the table, merged into the last
 * entry when it continues it: a request the block layer grew by contiguous
 * merges then costs one entry, and only discontiguous discards use more.
 */
int vblk_range_add(struct vblk_range_table *t, u64 sector, u64 nr_sectors,
		   u32 flags)
{
	struct vblk_range *last = t->n ? &t->r[t->n - 1] : NULL;

	if (!nr_sectors || nr_sectors > U32_MAX || sector + nr_sectors < sector)
		return -EINVAL;
	if (last && le32_to_cpu(last->flags) == flags &&
	    le64_to_cpu(last->sector) + le32_to_cpu(last->num_sectors) == sector &&
	    le32_to_cpu(last->num_sectors) + nr_sectors <= U32_MAX) {
		last->num_sectors = cpu_to_le32(le32_to_cpu(last->num_sectors) +
						(u32)nr_sectors);
		return 0;
	}
	if (t->n >= t->cap)
		return -ENOSPC;
	t->r[t->n].sector = cpu_to_le64(sector);
	t->r[t->n].num_sectors = cpu_to_le32((u32)nr_sectors);
	t->r[t->n].flags = cpu_to_le32(flags);
	t->n++;
	return 0;
}

/*
 * An alignment in sectors as a granularity in bytes: a multiple of the
 * logical block (the block layer never issues less), 0 when unusable.
 */
static u32 vblk_granularity(u32 align_sectors, u32 lbs)
{
	u64 bytes = (u64)align_sectors << 9;

	if (!align_sectors)
		return lbs;
	bytes = (bytes + lbs - 1) / lbs * lbs;
	return bytes > U32_MAX / 2 ? 0 : (u32)bytes;
}

/* A sector limit from the config: 0 means the device set none. */
static u32 vblk_sector_limit(u32 v, u32 lbs, const char *what,
			     vblk_cfg_warn_fn warn, void *ctx)
{
	if (!v) {
		warn(ctx, what, v, "taken as no limit");
		return U32_MAX;
	}
	if (v < lbs >> 9) {
		warn(ctx, what, v, "below one logical block: command off");
		return 0;
	}
	return v;
}

static void vblk_discard_limits(const struct vblk_range_cfg *c,
				unsigned int max_ranges,
				struct vblk_range_limits *l,
				vblk_cfg_warn_fn warn, void *ctx)
{
	u32 segs = c->max_discard_seg;

	l->max_discard_sectors = vblk_sector_limit(c->max_discard_sectors,
						   c->lbs,
						   "max_discard_sectors", warn,
						   ctx);
	l->discard_granularity = vblk_granularity(c->discard_sector_alignment,
						  c->lbs);
	if (!l->discard_granularity) {
		warn(ctx, "discard_sector_alignment",
		     c->discard_sector_alignment, "absurd: the logical block used");
		l->discard_granularity = c->lbs;
	}
	if (!segs) {
		warn(ctx, "max_discard_seg", segs, "one range per command");
		segs = 1;
	}
	l->max_discard_segments = segs < max_ranges ? segs : max_ranges;
}

/*
 * Secure erase shares the block layer's discard segment count and
 * granularity: the stricter of the two commands' values applies to both.
 * Zero in any of its fields is a broken device; the command stays off and
 * the disk works without it.
 */
static void vblk_secure_erase_limits(const struct vblk_range_cfg *c,
				     unsigned int max_ranges,
				     struct vblk_range_limits *l,
				     vblk_cfg_warn_fn warn, void *ctx)
{
	u32 gran, segs = c->max_secure_erase_seg;

	if (!c->max_secure_erase_sectors) {
		warn(ctx, "max_secure_erase_sectors", 0, "secure erase off");
		return;
	}
	if (!segs) {
		warn(ctx, "max_secure_erase_seg", 0, "secure erase off");
		return;
	}
	gran = c->secure_erase_sector_alignment ?
	       vblk_granularity(c->secure_erase_sector_alignment, c->lbs) : 0;
	if (!gran || c->max_secure_erase_sectors < gran >> 9) {
		warn(ctx, "secure_erase_sector_alignment",
		     c->secure_erase_sector_alignment,
		     "zero, absurd or above the sector limit: secure erase off");
		return;
	}
	l->max_secure_erase_sectors = c->max_secure_erase_sectors;
	if (segs > max_ranges)
		segs = max_ranges;
	if (!l->max_discard_segments || segs < l->max_discard_segments)
		l->max_discard_segments = segs;
	if (!l->discard_granularity || gran > l->discard_granularity)
		l->discard_granularity = gran;
}

void vblk_range_limits(const struct vblk_range_cfg *c, unsigned int max_ranges,
		       struct vblk_range_limits *l, vblk_cfg_warn_fn warn,
		       void *ctx)
{
	*l = (struct vblk_range_limits){};
	if (!max_ranges)
		return;
	if (c->discard)
		vblk_discard_limits(c, max_ranges, l, warn, ctx);
	if (c->secure_erase)
		vblk_secure_erase_limits(c, max_ranges, l, warn, ctx);
	if (l->max_discard_sectors &&
	    l->max_discard_sectors < l->discard_granularity >> 9) {
		warn(ctx, "max_discard_sectors", l->max_discard_sectors,
		     "below the discard granularity: discard off");
		l->max_discard_sectors = 0;
	}
	if (!l->max_discard_sectors && !l->max_secure_erase_sectors) {
		l->max_discard_segments = 0;
		l->discard_granularity = 0;
	}
	if (c->write_zeroes) {
		/* One range per command: the block layer never merges them. */
		if (!c->max_write_zeroes_seg)
			warn(ctx, "max_write_zeroes_seg", 0,
			     "one range per command anyway");
		l->max_write_zeroes_sectors =
			vblk_sector_limit(c->max_write_zeroes_sectors, c->lbs,
					  "max_write_zeroes_sectors", warn, ctx);
		l->zeroes_may_unmap = c->write_zeroes_may_unmap != 0;
	}
}

/*
 * A host-managed zoned device fails ordinary writes that do not follow the
 * write pointer: shown as a normal disk it would lose data, so vblk refuses
 * it. Host-aware and non-zoned devices take any write and are driven as
 * normal disks (without VIRTIO_BLK_F_ZONED).
 */
int vblk_zoned_check(u8 model, const char **why)
{
	switch (model) {
	case VBLK_ZONED_NONE:
	case VBLK_ZONED_HA:
		return 0;
	case VBLK_ZONED_HM:
		*why = "host-managed zoned device: vblk drives no zoned devices (virtio_blk does)";
		return -ENODEV;
	default:
		*why = "unknown zone model";
		return -EINVAL;
	}
}
