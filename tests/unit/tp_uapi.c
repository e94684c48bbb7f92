// SPDX-License-Identifier: GPL-2.0
/*
 * The feature bits and ids as the host's uapi headers (<linux/virtio_*.h>)
 * number them, for test_tp.c to compare with include/vblk_tp_check.h's
 * stand-ins. A translation unit of its own: those headers' __le types
 * clash with vblk_ring_user.h's.
 */
#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_ring.h>
#include "tp_uapi.h"

const struct tp_uapi_bit tp_uapi_bits[] = {
#define B(n)	{ #n, n }
	B(VIRTIO_ID_BLOCK),
	B(VIRTIO_BLK_F_SIZE_MAX),
	B(VIRTIO_BLK_F_SEG_MAX),
	B(VIRTIO_BLK_F_GEOMETRY),
	B(VIRTIO_BLK_F_RO),
	B(VIRTIO_BLK_F_BLK_SIZE),
	B(VIRTIO_BLK_F_FLUSH),
	B(VIRTIO_BLK_F_TOPOLOGY),
	B(VIRTIO_BLK_F_CONFIG_WCE),
	B(VIRTIO_BLK_F_MQ),
	B(VIRTIO_BLK_F_DISCARD),
	B(VIRTIO_BLK_F_WRITE_ZEROES),
	B(VIRTIO_BLK_F_SECURE_ERASE),
#ifdef VIRTIO_BLK_F_ZONED	/* not in 6.1's headers */
	B(VIRTIO_BLK_F_ZONED),
#endif
	B(VIRTIO_RING_F_INDIRECT_DESC),
	B(VIRTIO_RING_F_EVENT_IDX),
	B(VIRTIO_F_VERSION_1),
	B(VIRTIO_F_ACCESS_PLATFORM),
	B(VIRTIO_F_ORDER_PLATFORM),
#undef B
	{ 0, 0 }
};
