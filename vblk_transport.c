// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: what every transport shares (include/vblk_transport.h): the
 * device status handshake and the reset wait, feature negotiation, device
 * config reads under the generation counter, and DMA. It knows nothing of
 * requests, and reaches the device only through the transport's
 * operations and the config window it mapped (t->device).
 */
#include <linux/cc_platform.h>
#include <linux/delay.h>
#include <linux/device.h>
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/jiffies.h>
#include <linux/scatterlist.h>
#include <linux/virtio_config.h>

#include "vblk_tp_check.h"
#include "vblk_transport.h"

/* The spec lets a reset take a while: ten seconds, polled in steps. */
#define VBLK_RESET_WAIT_MS	10000

void vblk_tp_add_status(struct vblk_transport *t, u8 bits)
{
	t->ops->set_status(t, vblk_tp_get_status(t) | bits);
}

/*
 * Whether the device looks broken, and why. Cheap enough for the request
 * timeout: the bus's own checks, then the status byte.
 */
const char *vblk_tp_insane(struct vblk_transport *t)
{
	const char *why;
	u8 st;

	if (t->ops->offline(t))
		return "channel offline";
	st = vblk_tp_get_status(t);
	if (st == 0xff)
		return "device status reads all-ones (device gone?)";
	if (st & VIRTIO_CONFIG_S_NEEDS_RESET)
		return "device set NEEDS_RESET";
	if (!(st & VIRTIO_CONFIG_S_DRIVER_OK))
		return "device lost DRIVER_OK";
	why = t->ops->bus_insane(t);
	return why;
}

/*
 * Reset and wait until the device says it is done (it must read back 0),
 * so it no longer touches our rings (virtio 1.x, 2.4 and 4.2.3.1). The
 * wait is long (the spec sets no bound) but not endless: -ENODEV for a
 * device that went away (its memory can no longer be reached by it),
 * -ETIMEDOUT for one present that never finished (the caller must not hand
 * its DMA memory back).
 */
int vblk_tp_reset(struct vblk_transport *t)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(VBLK_RESET_WAIT_MS);
	u8 st;

	t->ops->set_status(t, 0);
	while ((st = vblk_tp_get_status(t))) {
		if (st == 0xff && !t->ops->present(t))
			return -ENODEV;
		if (time_after(jiffies, deadline)) {
			dev_err(t->dev, "device did not finish reset in %u ms (status %#x)\n",
				VBLK_RESET_WAIT_MS, st);
			return -ETIMEDOUT;
		}
		usleep_range(500, 1000);
	}
	return 0;
}

/*
 * The start of every initialisation (virtio 1.x, 3.1.1): reset, then tell
 * the device a driver found it and knows how to drive it.
 */
int vblk_tp_begin(struct vblk_transport *t)
{
	int err = vblk_tp_reset(t);

	if (err)
		return err;
	vblk_tp_add_status(t, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	vblk_tp_add_status(t, VIRTIO_CONFIG_S_DRIVER);
	return 0;
}

/*
 * Write the driver features and check the device accepts them. A guest
 * whose memory is encrypted cannot let a device use physical addresses
 * (the host would read ciphertext): such a device must offer
 * VIRTIO_F_ACCESS_PLATFORM, so that bounce buffers are used, or it is
 * refused.
 */
int vblk_tp_set_features(struct vblk_transport *t, u64 features)
{
	const char *why;

	if (vblk_platform_features_check(features,
					 cc_platform_has(CC_ATTR_GUEST_MEM_ENCRYPT),
					 &why)) {
		dev_err(t->dev, "%s\n", why);
		return -ENODEV;
	}
	t->ops->set_features(t, features);
	vblk_tp_add_status(t, VIRTIO_CONFIG_S_FEATURES_OK);
	if (!(vblk_tp_get_status(t) & VIRTIO_CONFIG_S_FEATURES_OK)) {
		dev_err(t->dev, "device refused features %#llx\n",
			(unsigned long long)features);
		return -ENODEV;
	}
	t->features = features;
	t->dma_api = features & BIT_ULL(VIRTIO_F_ACCESS_PLATFORM);
	return 0;
}

/*
 * One field, read at its own width as both transports require (4.1.3.1,
 * 4.2.2.2): 16- and 32-bit fields in one access, 64-bit ones as two 32-bit
 * halves (the generation check makes the pair consistent). buf keeps the
 * device's little-endian layout. Anything else (a byte, or a span that is
 * not one aligned field) goes bytewise.
 */
static void vblk_config_copy(struct vblk_transport *t, unsigned int off,
			     u8 *buf, unsigned int len)
{
	void __iomem *a = t->device + off;
	__le32 w[2];
	__le16 h;
	unsigned int i;

	if (len == 8 && IS_ALIGNED(off, 4)) {
		w[0] = cpu_to_le32(ioread32(a));
		w[1] = cpu_to_le32(ioread32(a + 4));
		memcpy(buf, w, 8);
	} else if (len == 4 && IS_ALIGNED(off, 4)) {
		w[0] = cpu_to_le32(ioread32(a));
		memcpy(buf, w, 4);
	} else if (len == 2 && IS_ALIGNED(off, 2)) {
		h = cpu_to_le16(ioread16(a));
		memcpy(buf, &h, 2);
	} else {
		for (i = 0; i < len; i++)
			buf[i] = ioread8(a + i);
	}
}

/* A config read in progress, for vblk_cfg_read_stable()'s callbacks. */
struct vblk_cfg_read {
	struct vblk_transport *t;
	unsigned int off;
	void *buf;
	unsigned int len;
};

static u32 vblk_cfg_generation(void *ctx)
{
	struct vblk_cfg_read *r = ctx;

	return r->t->ops->generation(r->t);
}

static void vblk_cfg_copy(void *ctx)
{
	struct vblk_cfg_read *r = ctx;

	vblk_config_copy(r->t, r->off, r->buf, r->len);
}

static const struct vblk_cfg_reader vblk_cfg_reader = {
	.generation	= vblk_cfg_generation,
	.copy		= vblk_cfg_copy,
};

/*
 * Read a device config field consistently: the device bumps the generation
 * counter whenever it changes config, so re-read until it holds still.
 */
int vblk_tp_read_config(struct vblk_transport *t, unsigned int off,
			void *buf, unsigned int len)
{
	struct vblk_cfg_read r = { .t = t, .off = off, .buf = buf, .len = len };

	if (!t->device || off + len > t->device_len)
		return -ERANGE;
	if (vblk_cfg_read_stable(&vblk_cfg_reader, &r, VBLK_CONFIG_RETRIES)) {
		dev_err(t->dev, "config generation never settled\n");
		return -EIO;
	}
	return 0;
}

/* The only config field a virtio-blk driver writes is a byte (wce). */
int vblk_tp_write_config8(struct vblk_transport *t, unsigned int off, u8 val)
{
	if (!t->device || off + 1 > t->device_len)
		return -ERANGE;
	iowrite8(val, t->device + off);
	return 0;
}

/*
 * DMA: with VIRTIO_F_ACCESS_PLATFORM the device sits behind the platform's
 * IOMMU and we must use the DMA API; without it the device uses guest
 * physical addresses whatever IOMMU the guest has.
 */
/*
 * The largest buffer one mapping can take: through the DMA API a bounce
 * buffer (swiotlb) or an IOMMU may limit it, and a segment beyond it would
 * fail to map every time it is tried.
 */
size_t vblk_tp_max_dma_size(struct vblk_transport *t)
{
	if (!t->dma_api)
		return SIZE_MAX;
	return dma_max_mapping_size(t->dev);
}

/*
 * The longest segment the DMA layer may make: an IOMMU merges the pages of
 * a scatterlist into one I/O virtual range as long as it may, and each
 * mapped segment becomes one descriptor, so without this a descriptor
 * could exceed the device's size_max.
 */
void vblk_tp_set_dma_seg_size(struct vblk_transport *t, unsigned int size)
{
	if (t->dma_api)
		dma_set_max_seg_size(t->dev, size);
}

void *vblk_dma_alloc(struct vblk_transport *t, size_t size, dma_addr_t *addr)
{
	void *mem;

	if (t->dma_api)
		return dma_alloc_coherent(t->dev, size, addr, GFP_KERNEL);
	mem = alloc_pages_exact(size, GFP_KERNEL | __GFP_ZERO);
	if (mem)
		*addr = virt_to_phys(mem);
	return mem;
}

void vblk_dma_free(struct vblk_transport *t, size_t size, void *mem,
		   dma_addr_t addr)
{
	if (!mem)
		return;
	if (t->dma_api)
		dma_free_coherent(t->dev, size, mem, addr);
	else
		free_pages_exact(mem, size);
}

int vblk_dma_map_sg(struct vblk_transport *t, struct scatterlist *sg,
		    int nents, enum dma_data_direction dir)
{
	struct scatterlist *s;
	int i;

	if (t->dma_api)
		return dma_map_sg(t->dev, sg, nents, dir);
	for_each_sg(sg, s, nents, i) {
		s->dma_address = sg_phys(s);
		sg_dma_len(s) = s->length;
	}
	return nents;
}

void vblk_dma_unmap_sg(struct vblk_transport *t, struct scatterlist *sg,
		       int nents, enum dma_data_direction dir)
{
	if (t->dma_api)
		dma_unmap_sg(t->dev, sg, nents, dir);
}

/* One physically contiguous buffer. Returns 0 or -ENOMEM. */
int vblk_dma_map_page(struct vblk_transport *t, struct page *page,
		      unsigned int off, unsigned int len,
		      enum dma_data_direction dir, dma_addr_t *addr)
{
	if (!t->dma_api) {
		*addr = page_to_phys(page) + off;
		return 0;
	}
	*addr = dma_map_page(t->dev, page, off, len, dir);
	return dma_mapping_error(t->dev, *addr) ? -ENOMEM : 0;
}

void vblk_dma_unmap_page(struct vblk_transport *t, dma_addr_t addr,
			 unsigned int len, enum dma_data_direction dir)
{
	if (t->dma_api)
		dma_unmap_page(t->dev, addr, len, dir);
}
