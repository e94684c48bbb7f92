// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: the transport's pure decisions (include/vblk_tp_check.h): the
 * virtio-mmio identity check, the config read loop under the generation
 * counter, and feature acceptance. Built into the module (vblk_mmio.c,
 * vblk_transport.c and vblk_setup.c call it) and into tests/unit.
 */
#ifdef __KERNEL__
#include <linux/kernel.h>
#endif

#include "vblk_tp_check.h"

enum vblk_mmio_id_verdict vblk_mmio_id_check(u32 magic, u32 version, u32 id,
					     char *why, size_t len)
{
	if (magic != VBLK_MMIO_MAGIC) {
		snprintf(why, len, "not a virtio-mmio device (magic %#x)", magic);
		return VBLK_MMIO_ID_BAD_MAGIC;
	}
	/*
	 * QEMU's virtio-mmio speaks version 1 unless told otherwise: name the
	 * option, since the user who meets this message is the one to give it.
	 */
	if (version == 1) {
		snprintf(why, len,
			 "virtio-mmio version 1 (legacy) is not supported: give QEMU -global virtio-mmio.force-legacy=false");
		return VBLK_MMIO_ID_LEGACY;
	}
	if (version != VBLK_MMIO_VERSION) {
		snprintf(why, len, "unknown virtio-mmio version %u", version);
		return VBLK_MMIO_ID_BAD_VERSION;
	}
	/* QEMU's microvm and virt machines have empty slots: id 0. */
	if (id != VIRTIO_ID_BLOCK) {
		snprintf(why, len, "virtio device id %u is not a block device", id);
		return VBLK_MMIO_ID_NOT_BLOCK;
	}
	return VBLK_MMIO_ID_OK;
}

/*
 * The device bumps the generation whenever it changes its config, so a
 * copy between two equal readings is consistent, even of a field read in
 * several accesses (a 64-bit one as two halves). A device changing config
 * forever (or a broken one whose generation never reads the same twice)
 * must not hold probe: the loop is bounded.
 */
int vblk_cfg_read_stable(const struct vblk_cfg_reader *r, void *ctx,
			 unsigned int retries)
{
	unsigned int tries;
	u32 gen;

	for (tries = 0; tries < retries; tries++) {
		gen = r->generation(ctx);
		r->copy(ctx);
		if (gen == r->generation(ctx))
			return 0;
	}
	return -EIO;
}

/* The refusals' messages, each one line to grep the kernel log for. */
static const char vblk_no_version_1_msg[] =
	"device has no VIRTIO_F_VERSION_1: legacy devices are not supported";
static const char vblk_encrypted_msg[] =
	"guest memory is encrypted and the device lacks VIRTIO_F_ACCESS_PLATFORM: refused";

u64 vblk_wanted_features(bool indirect, bool event_idx)
{
	u64 f = BIT_ULL(VIRTIO_F_VERSION_1) | BIT_ULL(VIRTIO_F_ACCESS_PLATFORM) |
		BIT_ULL(VIRTIO_F_ORDER_PLATFORM) |
		BIT_ULL(VIRTIO_BLK_F_SIZE_MAX) | BIT_ULL(VIRTIO_BLK_F_SEG_MAX) |
		BIT_ULL(VIRTIO_BLK_F_GEOMETRY) | BIT_ULL(VIRTIO_BLK_F_RO) |
		BIT_ULL(VIRTIO_BLK_F_BLK_SIZE) | BIT_ULL(VIRTIO_BLK_F_FLUSH) |
		BIT_ULL(VIRTIO_BLK_F_TOPOLOGY) | BIT_ULL(VIRTIO_BLK_F_CONFIG_WCE) |
		BIT_ULL(VIRTIO_BLK_F_MQ) | BIT_ULL(VIRTIO_BLK_F_DISCARD) |
		BIT_ULL(VIRTIO_BLK_F_WRITE_ZEROES) |
		BIT_ULL(VIRTIO_BLK_F_SECURE_ERASE);

	if (indirect)
		f |= BIT_ULL(VIRTIO_RING_F_INDIRECT_DESC);
	if (event_idx)
		f |= BIT_ULL(VIRTIO_RING_F_EVENT_IDX);
	return f;
}

/*
 * vblk speaks only the modern interface (virtio 1.x): a device without
 * VIRTIO_F_VERSION_1 lays out its rings and config the legacy way.
 */
int vblk_accept_features(u64 offered, bool indirect, bool event_idx,
			 u64 *accepted, const char **why)
{
	if (!(offered & BIT_ULL(VIRTIO_F_VERSION_1))) {
		*why = vblk_no_version_1_msg;
		return -ENODEV;
	}
	*accepted = offered & vblk_wanted_features(indirect, event_idx);
	return 0;
}

/*
 * Without VIRTIO_F_ACCESS_PLATFORM the device uses guest physical
 * addresses; in an encrypted guest it would read ciphertext there.
 */
int vblk_platform_features_check(u64 features, bool mem_encrypted,
				 const char **why)
{
	if (!(features & BIT_ULL(VIRTIO_F_ACCESS_PLATFORM)) && mem_encrypted) {
		*why = vblk_encrypted_msg;
		return -ENODEV;
	}
	return 0;
}
