/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vblk: the transport's decisions that need no device (vblk_tp_check.c):
 * what sits behind a virtio-mmio window, the config read under the
 * generation counter, and which features to accept. Pure: the device is
 * reached only through the values passed in or the callbacks given, so
 * the same code builds in tests/unit, where hostile register values, a
 * generation that never settles and every feature word are tried.
 */
#ifndef VBLK_TP_CHECK_H
#define VBLK_TP_CHECK_H

#ifdef __KERNEL__
#include <linux/bits.h>
#include <linux/errno.h>
#include <linux/types.h>
#include <uapi/linux/virtio_blk.h>
#include <uapi/linux/virtio_config.h>
#include <uapi/linux/virtio_ids.h>
#include <uapi/linux/virtio_ring.h>
#else
#include <stdio.h>
#include "vblk_ring_user.h"

#define BIT_ULL(n)	(1ULL << (n))

/*
 * The spec's numbers (virtio 1.x, 5.2.3 and 6), as the kernel's uapi
 * headers have them; tests/unit/test_tp.c compares them with the host's
 * <linux/virtio_*.h>, which this file cannot include (their __le types
 * clash with vblk_ring_user.h's).
 */
#define VIRTIO_ID_BLOCK			2
#define VIRTIO_BLK_F_SIZE_MAX		1
#define VIRTIO_BLK_F_SEG_MAX		2
#define VIRTIO_BLK_F_GEOMETRY		4
#define VIRTIO_BLK_F_RO			5
#define VIRTIO_BLK_F_BLK_SIZE		6
#define VIRTIO_BLK_F_FLUSH		9
#define VIRTIO_BLK_F_TOPOLOGY		10
#define VIRTIO_BLK_F_CONFIG_WCE		11
#define VIRTIO_BLK_F_MQ			12
#define VIRTIO_BLK_F_DISCARD		13
#define VIRTIO_BLK_F_WRITE_ZEROES	14
#define VIRTIO_BLK_F_SECURE_ERASE	16
#define VIRTIO_RING_F_INDIRECT_DESC	28
#define VIRTIO_RING_F_EVENT_IDX		29
#define VIRTIO_F_VERSION_1		32
#define VIRTIO_F_ACCESS_PLATFORM	33
#define VIRTIO_F_ORDER_PLATFORM		36
#endif

/* 6.1's virtio_blk.h predates zoned devices; the spec fixes the bit. */
#ifndef VIRTIO_BLK_F_ZONED
#define VIRTIO_BLK_F_ZONED		17
#endif

/* ---- virtio-mmio identity (virtio 1.x, 4.2.2) ---------------------------- */

#define VBLK_MMIO_MAGIC		0x74726976	/* "virt", little-endian */
#define VBLK_MMIO_VERSION	2		/* the modern interface */

/* Room for the longest reason vblk_mmio_id_check() writes. */
#define VBLK_MMIO_WHY_LEN	128

enum vblk_mmio_id_verdict {
	VBLK_MMIO_ID_OK,
	VBLK_MMIO_ID_BAD_MAGIC,		/* not virtio-mmio at all */
	VBLK_MMIO_ID_LEGACY,		/* version 1: QEMU's default */
	VBLK_MMIO_ID_BAD_VERSION,	/* neither 1 nor 2 */
	VBLK_MMIO_ID_NOT_BLOCK,		/* another device, or an empty slot */
};

/*
 * The MagicValue, Version and DeviceID registers as read: a version 2
 * block device is VBLK_MMIO_ID_OK; anything else gets its verdict and the
 * message to print, without a newline, in why[len].
 */
enum vblk_mmio_id_verdict vblk_mmio_id_check(u32 magic, u32 version, u32 id,
					     char *why, size_t len);

/* ---- config reads under the generation counter (virtio 1.x, 2.5.1) ------- */

/* Reads of one field before the driver gives up on a device. */
#define VBLK_CONFIG_RETRIES	16

struct vblk_cfg_reader {
	/* The device's config generation now. */
	u32 (*generation)(void *ctx);
	/* Copy the field into the caller's buffer (ctx says which). */
	void (*copy)(void *ctx);
};

/*
 * Copy until the generation is the same before and after the copy, at
 * most retries times: 0 with the buffer holding the last copy, or -EIO
 * when the generation never held still.
 */
int vblk_cfg_read_stable(const struct vblk_cfg_reader *r, void *ctx,
			 unsigned int retries);

/* ---- feature negotiation (virtio 1.x, 3.1.1) ----------------------------- */

/*
 * What vblk would accept, as the module parameters indirect and event_idx
 * say. Never VIRTIO_BLK_F_ZONED: a zoned device is driven as a normal disk
 * or refused, by its zone model (vblk_zoned_check()).
 */
u64 vblk_wanted_features(bool indirect, bool event_idx);

/*
 * The features to write for a device offering offered: 0 and *accepted,
 * or -ENODEV with the message to print in *why.
 */
int vblk_accept_features(u64 offered, bool indirect, bool event_idx,
			 u64 *accepted, const char **why);

/*
 * Whether the accepted features let the device reach guest memory: an
 * encrypted guest needs VIRTIO_F_ACCESS_PLATFORM (bounce buffers through
 * the DMA API). 0, or -ENODEV with the message in *why.
 */
int vblk_platform_features_check(u64 features, bool mem_encrypted,
				 const char **why);

#endif /* VBLK_TP_CHECK_H */
