// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: the modern virtio-pci transport (virtio 1.x, section 4.1).
 *
 * Finds the vendor capabilities, maps the regions they describe (each one
 * checked against its BAR), drives the device status handshake, feature
 * negotiation, config space reads under the generation counter, queue
 * registration and interrupt vectors. It knows nothing of requests.
 */
#include <linux/cc_platform.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/pci.h>
#include <linux/virtio_config.h>
#include <linux/virtio_pci.h>

#include "vblk.h"
#include "vblk_compat.h"

#define COMMON(f)	offsetof(struct virtio_pci_common_cfg, f)

/* The spec lets a reset take a while: ten seconds, polled in steps. */
#define VBLK_RESET_WAIT_MS	10000
#define VBLK_CONFIG_RETRIES	16

struct vblk_cap {
	u8 bar;
	u32 offset;
	u32 length;
	u8 pos;		/* where the capability sits in config space */
};

static u8 cap_read8(struct pci_dev *pdev, int pos, int off)
{
	u8 v;

	pci_read_config_byte(pdev, pos + off, &v);
	return v;
}

static u32 cap_read32(struct pci_dev *pdev, int pos, int off)
{
	u32 v;

	pci_read_config_dword(pdev, pos + off, &v);
	return v;
}

/*
 * The first capability of the given type that names a usable memory BAR.
 * A device may offer several of a type; the spec asks drivers to use the
 * first one they understand.
 */
static bool vblk_find_cap(struct pci_dev *pdev, u8 type, struct vblk_cap *cap)
{
	int pos;

	for (pos = pci_find_capability(pdev, PCI_CAP_ID_VNDR); pos > 0;
	     pos = pci_find_next_capability(pdev, pos, PCI_CAP_ID_VNDR)) {
		u8 bar = cap_read8(pdev, pos, VIRTIO_PCI_CAP_BAR);

		if (cap_read8(pdev, pos, VIRTIO_PCI_CAP_CFG_TYPE) != type)
			continue;
		if (bar >= PCI_STD_NUM_BARS ||
		    !(pci_resource_flags(pdev, bar) & IORESOURCE_MEM))
			continue;
		cap->bar = bar;
		cap->offset = cap_read32(pdev, pos, VIRTIO_PCI_CAP_OFFSET);
		cap->length = cap_read32(pdev, pos, VIRTIO_PCI_CAP_LENGTH);
		cap->pos = pos;
		return true;
	}
	return false;
}

/* Map [offset, offset + length) of a capability, at least minlen bytes. */
static void __iomem *vblk_map_cap(struct pci_dev *pdev, struct vblk_cap *cap,
				  u32 minlen, u32 maxlen, u32 *mapped)
{
	resource_size_t barlen = pci_resource_len(pdev, cap->bar);
	u32 len = min(cap->length, maxlen);
	void __iomem *p;

	if (len < minlen || (u64)cap->offset + len > barlen) {
		dev_err(&pdev->dev,
			"capability at %#x: offset %u length %u outside BAR %u (%llu bytes) or under %u\n",
			cap->pos, cap->offset, cap->length, cap->bar,
			(unsigned long long)barlen, minlen);
		return NULL;
	}
	p = pci_iomap_range(pdev, cap->bar, cap->offset, len);
	if (!p)
		dev_err(&pdev->dev, "cannot map BAR %u\n", cap->bar);
	else if (mapped)
		*mapped = len;
	return p;
}

static void vblk_unmap_all(struct vblk_pci *p)
{
	void __iomem **maps[] = { &p->common, &p->isr, &p->device, &p->notify };
	int i;

	for (i = 0; i < ARRAY_SIZE(maps); i++) {
		if (*maps[i])
			pci_iounmap(p->pdev, *maps[i]);
		*maps[i] = NULL;
	}
}

static int vblk_map_regions(struct vblk_pci *p)
{
	struct pci_dev *pdev = p->pdev;
	struct vblk_cap common, isr, notify, device;

	if (!vblk_find_cap(pdev, VIRTIO_PCI_CAP_COMMON_CFG, &common) ||
	    !vblk_find_cap(pdev, VIRTIO_PCI_CAP_ISR_CFG, &isr) ||
	    !vblk_find_cap(pdev, VIRTIO_PCI_CAP_NOTIFY_CFG, &notify)) {
		dev_err(&pdev->dev, "not a modern virtio-pci device (capabilities missing)\n");
		return -ENODEV;
	}
	p->notify_mult = cap_read32(pdev, notify.pos,
				    offsetof(struct virtio_pci_notify_cap,
					     notify_off_multiplier));

	p->common = vblk_map_cap(pdev, &common,
				 sizeof(struct virtio_pci_common_cfg),
				 sizeof(struct virtio_pci_common_cfg), NULL);
	p->isr = vblk_map_cap(pdev, &isr, 1, 1, NULL);
	/*
	 * The doorbell area: at least one 16-bit doorbell, and all of it, as
	 * each queue's doorbell may sit on a page of its own (page-per-vq).
	 */
	p->notify = vblk_map_cap(pdev, &notify, 2, notify.length, &p->notify_len);
	if (vblk_find_cap(pdev, VIRTIO_PCI_CAP_DEVICE_CFG, &device))
		p->device = vblk_map_cap(pdev, &device, 0, PAGE_SIZE,
					 &p->device_len);
	if (!p->common || !p->isr || !p->notify) {
		vblk_unmap_all(p);
		return -ENODEV;
	}
	return 0;
}

int vblk_pci_init(struct vblk_pci *p, struct pci_dev *pdev)
{
	int err;

	p->pdev = pdev;
	err = pci_enable_device(pdev);
	if (err)
		return err;
	err = pci_request_regions(pdev, VBLK_NAME);
	if (err)
		goto err_disable;
	err = vblk_map_regions(p);
	if (err)
		goto err_release;
	err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err)
		err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(32));
	if (err) {
		dev_err(&pdev->dev, "no usable DMA mask\n");
		goto err_unmap;
	}
	pci_set_master(pdev);
	return 0;

err_unmap:
	vblk_unmap_all(p);
err_release:
	pci_release_regions(pdev);
err_disable:
	pci_disable_device(pdev);
	return err;
}

void vblk_pci_exit(struct vblk_pci *p)
{
	vblk_unmap_all(p);
	pci_release_regions(p->pdev);
	pci_disable_device(p->pdev);
}

u8 vblk_pci_get_status(struct vblk_pci *p)
{
	return ioread8(p->common + COMMON(device_status));
}

void vblk_pci_add_status(struct vblk_pci *p, u8 bits)
{
	iowrite8(vblk_pci_get_status(p) | bits, p->common + COMMON(device_status));
}

/*
 * Whether the device looks broken, and why. Cheap enough for the request
 * timeout: a status byte, the PCI command word and the channel state.
 */
const char *vblk_pci_insane(struct vblk_pci *p)
{
	struct pci_dev *pdev = p->pdev;
	u16 cmd = 0;
	u8 st;

	if (pci_channel_offline(pdev))
		return "PCI channel offline";
	st = vblk_pci_get_status(p);
	if (st == 0xff)
		return "device status reads all-ones (device gone?)";
	if (st & VIRTIO_CONFIG_S_NEEDS_RESET)
		return "device set NEEDS_RESET";
	if (!(st & VIRTIO_CONFIG_S_DRIVER_OK))
		return "device lost DRIVER_OK";
	pci_read_config_word(pdev, PCI_COMMAND, &cmd);
	if (cmd == 0xffff)
		return "PCI config space reads all-ones";
	if (!(cmd & PCI_COMMAND_MASTER))
		return "PCI bus mastering switched off";
	return NULL;
}

/*
 * Reset and wait until the device says it is done (it must read back 0),
 * so it no longer touches our rings. The wait is long (the spec sets no
 * bound) but not endless: -ENODEV for a device that went away (its memory
 * can no longer be reached by it), -ETIMEDOUT for one present that never
 * finished (the caller must not hand its DMA memory back).
 */
int vblk_pci_reset(struct vblk_pci *p)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(VBLK_RESET_WAIT_MS);
	u8 st;

	iowrite8(0, p->common + COMMON(device_status));
	while ((st = vblk_pci_get_status(p))) {
		if (st == 0xff && !pci_device_is_present(p->pdev))
			return -ENODEV;
		if (time_after(jiffies, deadline)) {
			dev_err(&p->pdev->dev, "device did not finish reset in %u ms (status %#x)\n",
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
int vblk_pci_begin(struct vblk_pci *p)
{
	int err = vblk_pci_reset(p);

	if (err)
		return err;
	vblk_pci_add_status(p, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	vblk_pci_add_status(p, VIRTIO_CONFIG_S_DRIVER);
	return 0;
}

u64 vblk_pci_device_features(struct vblk_pci *p)
{
	u64 f;

	iowrite32(0, p->common + COMMON(device_feature_select));
	f = ioread32(p->common + COMMON(device_feature));
	iowrite32(1, p->common + COMMON(device_feature_select));
	f |= (u64)ioread32(p->common + COMMON(device_feature)) << 32;
	return f;
}

/*
 * Write the driver features and check the device accepts them. A guest
 * whose memory is encrypted cannot let a device use physical addresses
 * (the host would read ciphertext): such a device must offer
 * VIRTIO_F_ACCESS_PLATFORM, so that bounce buffers are used, or it is
 * refused.
 */
int vblk_pci_set_features(struct vblk_pci *p, u64 features)
{
	if (!(features & BIT_ULL(VIRTIO_F_ACCESS_PLATFORM)) &&
	    cc_platform_has(CC_ATTR_GUEST_MEM_ENCRYPT)) {
		dev_err(&p->pdev->dev, "guest memory is encrypted and the device lacks VIRTIO_F_ACCESS_PLATFORM: refused\n");
		return -ENODEV;
	}
	iowrite32(0, p->common + COMMON(guest_feature_select));
	iowrite32((u32)features, p->common + COMMON(guest_feature));
	iowrite32(1, p->common + COMMON(guest_feature_select));
	iowrite32(features >> 32, p->common + COMMON(guest_feature));
	vblk_pci_add_status(p, VIRTIO_CONFIG_S_FEATURES_OK);
	if (!(vblk_pci_get_status(p) & VIRTIO_CONFIG_S_FEATURES_OK)) {
		dev_err(&p->pdev->dev, "device refused features %#llx\n",
			(unsigned long long)features);
		return -ENODEV;
	}
	p->features = features;
	p->dma_api = features & BIT_ULL(VIRTIO_F_ACCESS_PLATFORM);
	return 0;
}

u16 vblk_pci_num_queues(struct vblk_pci *p)
{
	return ioread16(p->common + COMMON(num_queues));
}

/*
 * One field, read at its own width as virtio-pci requires (4.1.3.1): 16-
 * and 32-bit fields in one access, 64-bit ones as two 32-bit halves (the
 * generation check makes the pair consistent). buf keeps the device's
 * little-endian layout. Anything else (a byte, or a span that is not one
 * aligned field) goes bytewise.
 */
static void vblk_config_copy(struct vblk_pci *p, unsigned int off, u8 *buf,
			     unsigned int len)
{
	void __iomem *a = p->device + off;
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

/*
 * Read a device config field consistently: the device bumps the generation
 * counter whenever it changes config, so re-read until it holds still.
 */
int vblk_pci_read_config(struct vblk_pci *p, unsigned int off, void *buf,
			 unsigned int len)
{
	int tries;
	u8 gen;

	if (!p->device || off + len > p->device_len)
		return -ERANGE;
	for (tries = 0; tries < VBLK_CONFIG_RETRIES; tries++) {
		gen = ioread8(p->common + COMMON(config_generation));
		vblk_config_copy(p, off, buf, len);
		if (gen == ioread8(p->common + COMMON(config_generation)))
			return 0;
	}
	dev_err(&p->pdev->dev, "config generation never settled\n");
	return -EIO;
}

/* The only config field a virtio-blk driver writes is a byte (wce). */
int vblk_pci_write_config8(struct vblk_pci *p, unsigned int off, u8 val)
{
	if (!p->device || off + 1 > p->device_len)
		return -ERANGE;
	iowrite8(val, p->device + off);
	return 0;
}

u16 vblk_pci_queue_max_size(struct vblk_pci *p, u16 index)
{
	iowrite16(index, p->common + COMMON(queue_select));
	return ioread16(p->common + COMMON(queue_size));
}

static void iowrite64_split(u64 val, void __iomem *lo, void __iomem *hi)
{
	iowrite32((u32)val, lo);
	iowrite32(val >> 32, hi);
}

/*
 * Register a queue with the device: size, ring addresses, vector, and find
 * its doorbell. The vector is read back: a device out of vectors answers
 * VIRTIO_MSI_NO_VECTOR.
 */
int vblk_pci_setup_queue(struct vblk_pci *p, u16 index, u16 size,
			 u64 desc, u64 avail, u64 used, u16 vector,
			 void __iomem **doorbell)
{
	void __iomem *c = p->common;
	u64 off;

	iowrite16(index, c + COMMON(queue_select));
	if (ioread16(c + COMMON(queue_enable))) {
		dev_err(&p->pdev->dev, "queue %u already enabled\n", index);
		return -EBUSY;
	}
	iowrite16(size, c + COMMON(queue_size));
	iowrite64_split(desc, c + COMMON(queue_desc_lo), c + COMMON(queue_desc_hi));
	iowrite64_split(avail, c + COMMON(queue_avail_lo),
			c + COMMON(queue_avail_hi));
	iowrite64_split(used, c + COMMON(queue_used_lo), c + COMMON(queue_used_hi));
	if (p->nvec) {
		iowrite16(vector, c + COMMON(queue_msix_vector));
		if (ioread16(c + COMMON(queue_msix_vector)) != vector) {
			dev_err(&p->pdev->dev, "queue %u: device refused vector %u\n",
				index, vector);
			return -EBUSY;
		}
	}
	off = (u64)ioread16(c + COMMON(queue_notify_off)) * p->notify_mult;
	if (off + 2 > p->notify_len) {
		dev_err(&p->pdev->dev, "queue %u: doorbell offset %llu outside the %u-byte notify area\n",
			index, (unsigned long long)off, p->notify_len);
		return -EINVAL;
	}
	*doorbell = p->notify + off;
	iowrite16(1, c + COMMON(queue_enable));
	return 0;
}

int vblk_pci_set_config_vector(struct vblk_pci *p, u16 vector)
{
	if (!p->nvec)
		return 0;
	iowrite16(vector, p->common + COMMON(msix_config));
	if (ioread16(p->common + COMMON(msix_config)) != vector) {
		dev_err(&p->pdev->dev, "device refused config vector %u\n", vector);
		return -EBUSY;
	}
	return 0;
}

/*
 * Vector layout: 0 is the config vector; per-queue mode gives queue i
 * vector i + 1 (spread over the CPUs by the IRQ core); shared mode has one
 * vector 1 for every queue; INTx has none.
 */
int vblk_pci_alloc_vectors(struct vblk_pci *p, enum vblk_irq_mode mode,
			   unsigned int nr_irq_queues)
{
	struct irq_affinity desc = { .pre_vectors = 1 };
	int n;

	switch (mode) {
	case VBLK_IRQ_MSIX:
		n = pci_alloc_irq_vectors_affinity(p->pdev, nr_irq_queues + 1,
						   nr_irq_queues + 1,
						   PCI_IRQ_MSIX | PCI_IRQ_AFFINITY,
						   &desc);
		break;
	case VBLK_IRQ_SHARED:
		n = pci_alloc_irq_vectors(p->pdev, 2, 2, PCI_IRQ_MSIX);
		break;
	case VBLK_IRQ_INTX:
		n = pci_alloc_irq_vectors(p->pdev, 1, 1, VBLK_PCI_IRQ_INTX);
		if (n > 0) {
			p->nvec = 0;
			p->irq_mode = mode;
			return 0;
		}
		break;
	default:
		return -EINVAL;
	}
	if (n < 0)
		return n;
	p->nvec = n;
	p->irq_mode = mode;
	return 0;
}

void vblk_pci_free_vectors(struct vblk_pci *p)
{
	pci_free_irq_vectors(p->pdev);
	p->nvec = 0;
}

u8 vblk_pci_read_isr(struct vblk_pci *p)
{
	return ioread8(p->isr);
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
size_t vblk_pci_max_dma_size(struct vblk_pci *p)
{
	if (!p->dma_api)
		return SIZE_MAX;
	return dma_max_mapping_size(&p->pdev->dev);
}

/*
 * The longest segment the DMA layer may make: an IOMMU merges the pages of
 * a scatterlist into one I/O virtual range as long as it may, and each
 * mapped segment becomes one descriptor, so without this a descriptor
 * could exceed the device's size_max.
 */
void vblk_pci_set_dma_seg_size(struct vblk_pci *p, unsigned int size)
{
	if (p->dma_api)
		dma_set_max_seg_size(&p->pdev->dev, size);
}

void *vblk_dma_alloc(struct vblk_pci *p, size_t size, dma_addr_t *addr)
{
	void *mem;

	if (p->dma_api)
		return dma_alloc_coherent(&p->pdev->dev, size, addr, GFP_KERNEL);
	mem = alloc_pages_exact(size, GFP_KERNEL | __GFP_ZERO);
	if (mem)
		*addr = virt_to_phys(mem);
	return mem;
}

void vblk_dma_free(struct vblk_pci *p, size_t size, void *mem, dma_addr_t addr)
{
	if (!mem)
		return;
	if (p->dma_api)
		dma_free_coherent(&p->pdev->dev, size, mem, addr);
	else
		free_pages_exact(mem, size);
}

int vblk_dma_map_sg(struct vblk_pci *p, struct scatterlist *sg, int nents,
		    enum dma_data_direction dir)
{
	struct scatterlist *s;
	int i;

	if (p->dma_api)
		return dma_map_sg(&p->pdev->dev, sg, nents, dir);
	for_each_sg(sg, s, nents, i) {
		s->dma_address = sg_phys(s);
		sg_dma_len(s) = s->length;
	}
	return nents;
}

void vblk_dma_unmap_sg(struct vblk_pci *p, struct scatterlist *sg, int nents,
		       enum dma_data_direction dir)
{
	if (p->dma_api)
		dma_unmap_sg(&p->pdev->dev, sg, nents, dir);
}

/* One physically contiguous buffer. Returns 0 or -ENOMEM. */
int vblk_dma_map_page(struct vblk_pci *p, struct page *page,
		      unsigned int off, unsigned int len,
		      enum dma_data_direction dir, dma_addr_t *addr)
{
	if (!p->dma_api) {
		*addr = page_to_phys(page) + off;
		return 0;
	}
	*addr = dma_map_page(&p->pdev->dev, page, off, len, dir);
	return dma_mapping_error(&p->pdev->dev, *addr) ? -ENOMEM : 0;
}

void vblk_dma_unmap_page(struct vblk_pci *p, dma_addr_t addr,
			 unsigned int len, enum dma_data_direction dir)
{
	if (p->dma_api)
		dma_unmap_page(&p->pdev->dev, addr, len, dir);
}
