/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vblk: the checks of a passthrough command (include/uapi/vblk_pt.h) before
 * any request is built for it. One pure function: nothing here touches the
 * device, the block layer or user memory, so the same code builds in
 * tests/unit, where hostile commands and limits are tried and fuzzed.
 */
#ifndef VBLK_PT_CHECK_H
#define VBLK_PT_CHECK_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/errno.h>
#else
/*
 * The host build (tests/unit): the uapi header brings linux/types.h, whose
 * __le types clash with vblk_ring_user.h's, so this file has its own few
 * stand-ins.
 */
#include <errno.h>
#include <stdbool.h>
#include <linux/types.h>
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
#endif

#include "uapi/vblk_pt.h"

/* What the opener may do: the file's open mode, as bits. */
#define VBLK_PT_MAY_READ	0x1U
#define VBLK_PT_MAY_WRITE	0x2U

/*
 * The disk as the checks see it, taken from its queue limits at submit.
 * A zero sector limit says the device lacks the command.
 */
struct vblk_pt_limits {
	u64 capacity;			/* 512-byte sectors */
	u32 lbs;			/* logical block size: 2^n, >= 512 */
	u32 max_hw_sectors;		/* per data request */
	u32 max_segments;		/* data segments per request */
	u32 page_size;			/* 2^n: the unit of a data segment */
	u32 dma_align_mask;		/* buffer address alignment - 1 */
	u32 max_discard_sectors;
	u32 max_write_zeroes_sectors;
	bool flush;			/* the device has a write cache to flush */
	bool read_only;
};

/*
 * The command's fields, read once from the SQE (which user space may be
 * changing) into this copy; only the copy is checked and used.
 *
 * fixed: the buffer is an io_uring registered buffer (IORING_URING_CMD_FIXED).
 * may: VBLK_PT_MAY_* of the file. admin: capable(CAP_SYS_ADMIN).
 * Returns 0 or a negative errno (the order and meaning of the checks are
 * in vblk_pt_check.c and docs/passthrough.md).
 */
int vblk_pt_check(const struct vblk_pt_cmd *c, bool fixed, unsigned int may,
		  bool admin, const struct vblk_pt_limits *l);

/* The op's permission class, for the checks and for the tests' oracle. */
enum vblk_pt_class {
	VBLK_PT_CLASS_NONE,		/* unknown op */
	VBLK_PT_CLASS_READ,		/* needs the file open for reading */
	VBLK_PT_CLASS_WRITE,		/* changes data: open for writing */
	VBLK_PT_CLASS_OTHER,		/* open for writing, or CAP_SYS_ADMIN */
};

enum vblk_pt_class vblk_pt_op_class(unsigned int op);

#endif /* VBLK_PT_CHECK_H */
