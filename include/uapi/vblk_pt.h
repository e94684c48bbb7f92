/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * vblk's io_uring passthrough command (docs/passthrough.md).
 *
 * A command is an IORING_OP_URING_CMD on /dev/<disk>c0 (e.g. /dev/vdbc0)
 * with cmd_op VBLK_PT_URING_CMD_IO and a struct vblk_pt_cmd in the SQE's
 * cmd area. The struct is 32 bytes, more than the 16 a 64-byte SQE has
 * room for (a sector and a buffer address alone take 16), so the ring must
 * be set up with IORING_SETUP_SQE128 (80 bytes of cmd area), as for NVMe's
 * passthrough; CQE32 is not needed. A command on a ring without SQE128
 * fails with -EINVAL.
 *
 * The data buffer is a user address (addr), or, with IORING_URING_CMD_FIXED
 * in the SQE's uring_cmd_flags and the buffer's index in buf_index, an
 * address inside that io_uring registered buffer.
 *
 * The CQE's res is the number of bytes transferred for READ and WRITE,
 * VBLK_PT_ID_BYTES for GET_ID, 0 for FLUSH, DISCARD and WRITE_ZEROES, or a
 * negative errno: see docs/passthrough.md for which check gives which.
 */
#ifndef _UAPI_VBLK_PT_H
#define _UAPI_VBLK_PT_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define VBLK_PT_VERSION		1

/* op: 0 is no operation, so that a zeroed command is refused. */
enum vblk_pt_op {
	VBLK_PT_OP_READ		= 1,	/* device -> buffer */
	VBLK_PT_OP_WRITE	= 2,	/* buffer -> device */
	VBLK_PT_OP_FLUSH	= 3,	/* no buffer, sector and len 0 */
	VBLK_PT_OP_DISCARD	= 4,	/* no buffer: [sector, +len bytes) */
	VBLK_PT_OP_WRITE_ZEROES	= 5,	/* no buffer: [sector, +len bytes) */
	VBLK_PT_OP_GET_ID	= 6,	/* serial into one logical block */
};

/* flags: every bit not defined here, and any bit on another op, is refused. */
#define VBLK_PT_F_NOUNMAP	(1U << 0)	/* WRITE_ZEROES: keep allocated */

/* GET_ID: the device writes up to this many bytes, NUL-padded if shorter. */
#define VBLK_PT_ID_BYTES	20

struct vblk_pt_cmd {
	__u8	version;	/* VBLK_PT_VERSION */
	__u8	op;		/* enum vblk_pt_op */
	__u16	flags;		/* VBLK_PT_F_* */
	__u16	ioprio;		/* IOPRIO_PRIO_VALUE(class, level); 0: none */
	__u16	rsvd0;		/* must be 0 */
	__u64	sector;		/* in 512-byte units, whatever the block size */
	__u64	addr;		/* buffer's user address; 0 if none */
	__u32	len;		/* bytes */
	__u32	rsvd1;		/* must be 0 */
};

#define VBLK_PT_MAGIC		0xB1
#define VBLK_PT_URING_CMD_IO	_IOWR(VBLK_PT_MAGIC, 0x01, struct vblk_pt_cmd)

#endif /* _UAPI_VBLK_PT_H */
