// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for vblk_cmd.c: range tables of discard / write zeroes /
 * secure erase requests, the limits derived from a device's config (QEMU's
 * values and hostile ones), and the zoned-device verdict.
 *
 * Output: "ok - name" / "FAIL - name: reason" per case, then
 * "N passed, N failed"; non-zero exit status on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vblk_cmd.h"
#include "check.h"

/* Warnings the limits code gave, by field name, for the checks. */
static char warned[1024];
static int n_warned;

static void warn(void *ctx, const char *field, unsigned int value,
		 const char *consequence)
{
	(void)ctx;
	(void)consequence;
	(void)value;
	n_warned++;
	strncat(warned, field, sizeof(warned) - strlen(warned) - 2);
	strcat(warned, " ");
}

static void reset_warned(void)
{
	warned[0] = '\0';
	n_warned = 0;
}

static bool warned_about(const char *field)
{
	return strstr(warned, field) != NULL;
}

#define CHECK_WARNED(f)							\
	do {								\
		if (!warned_about(f))					\
			FAILF("line %d: no warning about %s (got: %s)",	\
			      __LINE__, f, warned);			\
	} while (0)

/* The running case's table memory, freed by the runner whatever happens. */
static void *cur_mem;

/* A table of cap entries, exactly sized so ASan sees overruns. */
static struct vblk_range_table table(unsigned int cap)
{
	struct vblk_range_table t = { NULL, 0, cap };

	free(cur_mem);
	cur_mem = t.r = calloc(cap ? cap : 1, sizeof(struct vblk_range));
	return t;
}

static bool t_range_single(void)
{
	struct vblk_range_table t = table(1);

	CHECK_EQ(vblk_range_add(&t, 2048, 8, 0), 0);
	CHECK_EQ(t.n, 1);
	CHECK_EQ(le64_to_cpu(t.r[0].sector), 2048);
	CHECK_EQ(le32_to_cpu(t.r[0].num_sectors), 8);
	CHECK_EQ(le32_to_cpu(t.r[0].flags), 0);
	return true;
}

/* Contiguous pieces (a merged request's bios) cost one entry. */
static bool t_range_coalesce(void)
{
	struct vblk_range_table t = table(2);
	int i;

	for (i = 0; i < 100; i++)
		CHECK_EQ(vblk_range_add(&t, 1000 + 8 * i, 8, VBLK_RANGE_F_UNMAP), 0);
	CHECK_EQ(t.n, 1);
	CHECK_EQ(le32_to_cpu(t.r[0].num_sectors), 800);
	CHECK_EQ(le32_to_cpu(t.r[0].flags), VBLK_RANGE_F_UNMAP);
	/* A gap starts a new entry, the table's end refuses a third. */
	CHECK_EQ(vblk_range_add(&t, 5000, 8, VBLK_RANGE_F_UNMAP), 0);
	CHECK_EQ(t.n, 2);
	CHECK_EQ(vblk_range_add(&t, 9000, 8, VBLK_RANGE_F_UNMAP), -ENOSPC);
	CHECK_EQ(t.n, 2);
	/* Still contiguous with the last one: merged, no room needed. */
	CHECK_EQ(vblk_range_add(&t, 5008, 8, VBLK_RANGE_F_UNMAP), 0);
	CHECK_EQ(le32_to_cpu(t.r[1].num_sectors), 16);
	return true;
}

/* Different flags never merge; a merge may not overflow 32 bits. */
static bool t_range_no_merge(void)
{
	struct vblk_range_table t = table(4);

	CHECK_EQ(vblk_range_add(&t, 0, 8, 0), 0);
	CHECK_EQ(vblk_range_add(&t, 8, 8, VBLK_RANGE_F_UNMAP), 0);
	CHECK_EQ(t.n, 2);
	CHECK_EQ(vblk_range_add(&t, 16, UINT32_MAX - 7, VBLK_RANGE_F_UNMAP), 0);
	CHECK_EQ(t.n, 3);
	CHECK_EQ(le32_to_cpu(t.r[2].num_sectors), UINT32_MAX - 7);
	return true;
}

static bool t_range_bad(void)
{
	struct vblk_range_table t = table(4);

	CHECK_EQ(vblk_range_add(&t, 0, 0, 0), -EINVAL);
	CHECK_EQ(vblk_range_add(&t, 0, (u64)UINT32_MAX + 1, 0), -EINVAL);
	CHECK_EQ(vblk_range_add(&t, UINT64_MAX - 3, 8, 0), -EINVAL);
	CHECK_EQ(t.n, 0);
	t = table(0);
	CHECK_EQ(vblk_range_add(&t, 0, 8, 0), -ENOSPC);
	return true;
}

/* What QEMU's virtio-blk offers with discard=unmap on a 512-byte disk. */
static struct vblk_range_cfg qemu_cfg(void)
{
	struct vblk_range_cfg c = {
		.discard = true, .write_zeroes = true, .lbs = 512,
		.max_discard_sectors = 0x3fffff, .max_discard_seg = 1,
		.discard_sector_alignment = 1,
		.max_write_zeroes_sectors = 0x3fffff, .max_write_zeroes_seg = 1,
		.write_zeroes_may_unmap = 1,
	};
	return c;
}

static bool t_limits_qemu(void)
{
	struct vblk_range_cfg c = qemu_cfg();
	struct vblk_range_limits l;

	reset_warned();
	vblk_range_limits(&c, VBLK_MAX_RANGES, &l, warn, NULL);
	CHECK_EQ(n_warned, 0);
	CHECK_EQ(l.max_discard_sectors, 0x3fffff);
	CHECK_EQ(l.max_discard_segments, 1);
	CHECK_EQ(l.discard_granularity, 512);
	CHECK_EQ(l.max_write_zeroes_sectors, 0x3fffff);
	CHECK_EQ(l.zeroes_may_unmap, 1);
	CHECK_EQ(l.max_secure_erase_sectors, 0);
	/* 4 KiB blocks: alignment 8 sectors, granularity one block. */
	c.lbs = 4096;
	c.discard_sector_alignment = 8;
	vblk_range_limits(&c, VBLK_MAX_RANGES, &l, warn, NULL);
	CHECK_EQ(n_warned, 0);
	CHECK_EQ(l.discard_granularity, 4096);
	return true;
}

/* Nothing negotiated, or no room for ranges: everything off. */
static bool t_limits_off(void)
{
	struct vblk_range_cfg c = qemu_cfg();
	struct vblk_range_limits l;

	c.discard = c.write_zeroes = false;
	vblk_range_limits(&c, VBLK_MAX_RANGES, &l, warn, NULL);
	CHECK_EQ(l.max_discard_sectors, 0);
	CHECK_EQ(l.max_discard_segments, 0);
	CHECK_EQ(l.discard_granularity, 0);
	CHECK_EQ(l.max_write_zeroes_sectors, 0);
	c = qemu_cfg();
	vblk_range_limits(&c, 0, &l, warn, NULL);
	CHECK_EQ(l.max_discard_sectors, 0);
	CHECK_EQ(l.max_write_zeroes_sectors, 0);
	return true;
}

static bool t_limits_zero_values(void)
{
	struct vblk_range_cfg c = qemu_cfg();
	struct vblk_range_limits l;

	c.max_discard_sectors = 0;
	c.max_discard_seg = 0;
	c.discard_sector_alignment = 0;
	c.max_write_zeroes_sectors = 0;
	c.max_write_zeroes_seg = 0;
	reset_warned();
	vblk_range_limits(&c, VBLK_MAX_RANGES, &l, warn, NULL);
	CHECK_WARNED("max_discard_sectors");
	CHECK_WARNED("max_discard_seg");
	CHECK_WARNED("max_write_zeroes_sectors");
	CHECK_WARNED("max_write_zeroes_seg");
	CHECK_EQ(l.max_discard_sectors, UINT32_MAX);
	CHECK_EQ(l.max_discard_segments, 1);
	CHECK_EQ(l.discard_granularity, 512);
	CHECK_EQ(l.max_write_zeroes_sectors, UINT32_MAX);
	return true;
}

static bool t_limits_absurd(void)
{
	struct vblk_range_cfg c = qemu_cfg();
	struct vblk_range_limits l;

	/* More segments than vblk has room for: capped, silently. */
	c.max_discard_seg = 100000;
	vblk_range_limits(&c, VBLK_MAX_RANGES, &l, warn, NULL);
	CHECK_EQ(l.max_discard_segments, VBLK_MAX_RANGES);
	/* An alignment beyond 2 GiB: the logical block instead. */
	c = qemu_cfg();
	c.discard_sector_alignment = UINT32_MAX;
	reset_warned();
	vblk_range_limits(&c, VBLK_MAX_RANGES, &l, warn, NULL);
	CHECK_WARNED("discard_sector_alignment");
	CHECK_EQ(l.discard_granularity, 512);
	/* Granularity 3 sectors on 4 KiB blocks: rounded up to a block. */
	c = qemu_cfg();
	c.lbs = 4096;
	c.discard_sector_alignment = 3;
	vblk_range_limits(&c, VBLK_MAX_RANGES, &l, warn, NULL);
	CHECK_EQ(l.discard_granularity, 4096);
	/* A limit below one block: that command off, the other on. */
	c = qemu_cfg();
	c.lbs = 4096;
	c.max_discard_sectors = 7;
	c.max_write_zeroes_sectors = 4;
	reset_warned();
	vblk_range_limits(&c, VBLK_MAX_RANGES, &l, warn, NULL);
	CHECK_WARNED("max_discard_sectors");
	CHECK_EQ(l.max_discard_sectors, 0);
	CHECK_EQ(l.max_discard_segments, 0);
	CHECK_EQ(l.max_write_zeroes_sectors, 0);
	/* A limit below the granularity: discard off. */
	c = qemu_cfg();
	c.discard_sector_alignment = 2048;
	c.max_discard_sectors = 1024;
	vblk_range_limits(&c, VBLK_MAX_RANGES, &l, warn, NULL);
	CHECK_EQ(l.max_discard_sectors, 0);
	CHECK_EQ(l.max_write_zeroes_sectors, 0x3fffff);
	return true;
}

static bool t_limits_secure_erase(void)
{
	struct vblk_range_cfg c = qemu_cfg();
	struct vblk_range_limits l;

	c.secure_erase = true;
	c.max_discard_seg = 8;
	c.max_secure_erase_sectors = 1 << 20;
	c.max_secure_erase_seg = 4;
	c.secure_erase_sector_alignment = 16;
	reset_warned();
	vblk_range_limits(&c, VBLK_MAX_RANGES, &l, warn, NULL);
	CHECK_EQ(n_warned, 0);
	CHECK_EQ(l.max_secure_erase_sectors, 1 << 20);
	CHECK_EQ(l.max_discard_segments, 4);
	CHECK_EQ(l.discard_granularity, 16 * 512);
	/* Secure erase alone. */
	c.discard = false;
	vblk_range_limits(&c, VBLK_MAX_RANGES, &l, warn, NULL);
	CHECK_EQ(l.max_discard_sectors, 0);
	CHECK_EQ(l.max_discard_segments, 4);
	CHECK_EQ(l.discard_granularity, 16 * 512);
	return true;
}

/* A zero in any secure erase field: secure erase off, the disk lives. */
static bool t_limits_secure_erase_broken(void)
{
	static const char *const fields[] = {
		"max_secure_erase_sectors", "max_secure_erase_seg",
		"secure_erase_sector_alignment",
	};
	int i;

	for (i = 0; i < 3; i++) {
		struct vblk_range_cfg c = qemu_cfg();
		struct vblk_range_limits l;

		c.secure_erase = true;
		c.max_secure_erase_sectors = i == 0 ? 0 : 1 << 20;
		c.max_secure_erase_seg = i == 1 ? 0 : 1;
		c.secure_erase_sector_alignment = i == 2 ? 0 : 8;
		reset_warned();
		vblk_range_limits(&c, VBLK_MAX_RANGES, &l, warn, NULL);
		CHECK_WARNED(fields[i]);
		CHECK_EQ(l.max_secure_erase_sectors, 0);
		CHECK_EQ(l.max_discard_sectors, 0x3fffff);
		CHECK_EQ(l.discard_granularity, 512);
	}
	return true;
}

static bool t_zoned(void)
{
	const char *msg = NULL;

	CHECK_EQ(vblk_zoned_check(VBLK_ZONED_NONE, &msg), 0);
	CHECK_EQ(vblk_zoned_check(VBLK_ZONED_HA, &msg), 0);
	CHECK_EQ(msg == NULL, 1);
	CHECK_EQ(vblk_zoned_check(VBLK_ZONED_HM, &msg), -ENODEV);
	CHECK_EQ(msg != NULL && strstr(msg, "host-managed") != NULL, 1);
	msg = NULL;
	CHECK_EQ(vblk_zoned_check(7, &msg), -EINVAL);
	CHECK_EQ(msg != NULL, 1);
	return true;
}

static void run(const char *name, bool (*fn)(void))
{
	bool ok;

	why[0] = '\0';
	ok = fn();
	free(cur_mem);
	cur_mem = NULL;
	report(name, ok);
}

#define RUN(fn) run(&#fn[2], fn)	/* name without "t_" */

int main(void)
{
	RUN(t_range_single);
	RUN(t_range_coalesce);
	RUN(t_range_no_merge);
	RUN(t_range_bad);
	RUN(t_limits_qemu);
	RUN(t_limits_off);
	RUN(t_limits_zero_values);
	RUN(t_limits_absurd);
	RUN(t_limits_secure_erase);
	RUN(t_limits_secure_erase_broken);
	RUN(t_zoned);
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
