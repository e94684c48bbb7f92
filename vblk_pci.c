// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: the modern virtio-pci transport (virtio 1.x, section 4.1), the
 * operations of include/vblk_transport.h.
 *
 * Finds the vendor capabilities, maps the regions they describe (each one
 * checked against its BAR), and gives access to the common config
 * (status, features, generation, queue registration), the ISR, the
 * doorbells and the interrupt vectors. It knows nothing of requests.
 *
 * Ownership: struct vblk_pci is allocated by vblk_pci_init() at probe and
 * freed by its exit operation at remove, with the mappings and the
 * regions; the pci_dev's drvdata is the lifecycle's (the vblk_dev).
 */
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/pci.h>
#include <linux/virtio_config.h>
#include <linux/virtio_pci.h>

#include "vblk.h"
#include "vblk_compat.h"
#include "vblk_transport.h"

#define COMMON(f)	offsetof(struct virtio_pci_common_cfg, f)

/* Mapped regions are validated against their BAR at probe. */
struct vblk_pci {
	struct pci_dev *pdev;
	void __iomem *common;		/* struct virtio_pci_common_cfg */
	void __iomem *isr;		/* one byte, read clears */
	void __iomem *device;		/* struct virtio_blk_config */
	u32 device_len;
	void __iomem *notify;		/* doorbell area */
	u32 notify_len;
	u32 notify_mult;
};

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

static struct vblk_pci *to_pci(struct vblk_transport *t)
{
	return t->priv;
}

static void vblk_pci_exit(struct vblk_transport *t)
{
	struct vblk_pci *p = to_pci(t);

	vblk_unmap_all(p);
	pci_release_regions(p->pdev);
	pci_disable_device(p->pdev);
	kfree(p);
	t->priv = NULL;
	t->device = NULL;
}

static u8 vblk_pci_get_status(struct vblk_transport *t)
{
	return ioread8(to_pci(t)->common + COMMON(device_status));
}

static void vblk_pci_set_status(struct vblk_transport *t, u8 status)
{
	iowrite8(status, to_pci(t)->common + COMMON(device_status));
}

static bool vblk_pci_present(struct vblk_transport *t)
{
	return pci_device_is_present(to_pci(t)->pdev);
}

static bool vblk_pci_offline(struct vblk_transport *t)
{
	return pci_channel_offline(to_pci(t)->pdev);
}

/* The PCI command word: all-ones when the function is gone. */
static const char *vblk_pci_bus_insane(struct vblk_transport *t)
{
	u16 cmd = 0;

	pci_read_config_word(to_pci(t)->pdev, PCI_COMMAND, &cmd);
	if (cmd == 0xffff)
		return "PCI config space reads all-ones";
	if (!(cmd & PCI_COMMAND_MASTER))
		return "PCI bus mastering switched off";
	return NULL;
}

static const char *vblk_pci_fence(struct vblk_transport *t)
{
	pci_clear_master(to_pci(t)->pdev);
	return "bus mastering off";
}

static void vblk_pci_unfence(struct vblk_transport *t)
{
	pci_set_master(to_pci(t)->pdev);
}

static u64 vblk_pci_get_features(struct vblk_transport *t)
{
	void __iomem *c = to_pci(t)->common;
	u64 f;

	iowrite32(0, c + COMMON(device_feature_select));
	f = ioread32(c + COMMON(device_feature));
	iowrite32(1, c + COMMON(device_feature_select));
	f |= (u64)ioread32(c + COMMON(device_feature)) << 32;
	return f;
}

static void vblk_pci_set_features(struct vblk_transport *t, u64 features)
{
	void __iomem *c = to_pci(t)->common;

	iowrite32(0, c + COMMON(guest_feature_select));
	iowrite32((u32)features, c + COMMON(guest_feature));
	iowrite32(1, c + COMMON(guest_feature_select));
	iowrite32(features >> 32, c + COMMON(guest_feature));
}

static u32 vblk_pci_generation(struct vblk_transport *t)
{
	return ioread8(to_pci(t)->common + COMMON(config_generation));
}

static u16 vblk_pci_num_queues(struct vblk_transport *t)
{
	return ioread16(to_pci(t)->common + COMMON(num_queues));
}

static u16 vblk_pci_queue_max_size(struct vblk_transport *t, u16 index)
{
	void __iomem *c = to_pci(t)->common;

	iowrite16(index, c + COMMON(queue_select));
	return ioread16(c + COMMON(queue_size));
}

static void iowrite64_split(u64 val, void __iomem *lo, void __iomem *hi)
{
	iowrite32((u32)val, lo);
	iowrite32(val >> 32, hi);
}

/*
 * Register a queue with the device: size, ring addresses, vector, and find
 * its doorbell (a 16-bit write of the queue index). The vector is read
 * back: a device out of vectors answers VIRTIO_MSI_NO_VECTOR.
 */
static int vblk_pci_setup_queue(struct vblk_transport *t, u16 index, u16 size,
				u64 desc, u64 avail, u64 used, u16 vector,
				void __iomem **doorbell, bool *doorbell32)
{
	struct vblk_pci *p = to_pci(t);
	void __iomem *c = p->common;
	u64 off;

	iowrite16(index, c + COMMON(queue_select));
	if (ioread16(c + COMMON(queue_enable))) {
		dev_err(t->dev, "queue %u already enabled\n", index);
		return -EBUSY;
	}
	iowrite16(size, c + COMMON(queue_size));
	iowrite64_split(desc, c + COMMON(queue_desc_lo), c + COMMON(queue_desc_hi));
	iowrite64_split(avail, c + COMMON(queue_avail_lo),
			c + COMMON(queue_avail_hi));
	iowrite64_split(used, c + COMMON(queue_used_lo), c + COMMON(queue_used_hi));
	if (t->nvec) {
		iowrite16(vector, c + COMMON(queue_msix_vector));
		if (ioread16(c + COMMON(queue_msix_vector)) != vector) {
			dev_err(t->dev, "queue %u: device refused vector %u\n",
				index, vector);
			return -EBUSY;
		}
	}
	off = (u64)ioread16(c + COMMON(queue_notify_off)) * p->notify_mult;
	if (off + 2 > p->notify_len) {
		dev_err(t->dev, "queue %u: doorbell offset %llu outside the %u-byte notify area\n",
			index, (unsigned long long)off, p->notify_len);
		return -EINVAL;
	}
	*doorbell = p->notify + off;
	*doorbell32 = false;
	iowrite16(1, c + COMMON(queue_enable));
	return 0;
}

static int vblk_pci_set_config_vector(struct vblk_transport *t, u16 vector)
{
	void __iomem *c = to_pci(t)->common;

	if (!t->nvec)
		return 0;
	iowrite16(vector, c + COMMON(msix_config));
	if (ioread16(c + COMMON(msix_config)) != vector) {
		dev_err(t->dev, "device refused config vector %u\n", vector);
		return -EBUSY;
	}
	return 0;
}

/*
 * Vector layout: 0 is the config vector; per-queue mode gives queue i
 * vector i + 1 (spread over the CPUs by the IRQ core); shared mode has one
 * vector 1 for every queue; INTx has none.
 */
static int vblk_pci_alloc_irqs(struct vblk_transport *t,
			       enum vblk_irq_mode mode,
			       unsigned int nr_irq_queues)
{
	struct pci_dev *pdev = to_pci(t)->pdev;
	struct irq_affinity desc = { .pre_vectors = 1 };
	int n;

	switch (mode) {
	case VBLK_IRQ_MSIX:
		n = pci_alloc_irq_vectors_affinity(pdev, nr_irq_queues + 1,
						   nr_irq_queues + 1,
						   PCI_IRQ_MSIX | PCI_IRQ_AFFINITY,
						   &desc);
		break;
	case VBLK_IRQ_SHARED:
		n = pci_alloc_irq_vectors(pdev, 2, 2, PCI_IRQ_MSIX);
		break;
	case VBLK_IRQ_INTX:
		n = pci_alloc_irq_vectors(pdev, 1, 1, VBLK_PCI_IRQ_INTX);
		if (n > 0) {
			t->nvec = 0;
			t->irq_mode = mode;
			return 0;
		}
		break;
	default:
		return -EINVAL;
	}
	if (n < 0)
		return n;
	t->nvec = n;
	t->irq_mode = mode;
	return 0;
}

static void vblk_pci_free_irqs(struct vblk_transport *t)
{
	pci_free_irq_vectors(to_pci(t)->pdev);
	t->nvec = 0;
}

static int vblk_pci_irq(struct vblk_transport *t, unsigned int vector)
{
	return pci_irq_vector(to_pci(t)->pdev, vector);
}

static const struct cpumask *vblk_pci_irq_affinity(struct vblk_transport *t,
						   unsigned int vector)
{
	return pci_irq_get_affinity(to_pci(t)->pdev, vector);
}

/* Reading the ISR clears it: that acknowledges it (4.1.4.5). */
static u8 vblk_pci_read_isr(struct vblk_transport *t)
{
	return ioread8(to_pci(t)->isr);
}

static const struct vblk_transport_ops vblk_pci_ops = {
	.name			= "pci",
	.exit			= vblk_pci_exit,
	.get_status		= vblk_pci_get_status,
	.set_status		= vblk_pci_set_status,
	.get_features		= vblk_pci_get_features,
	.set_features		= vblk_pci_set_features,
	.generation		= vblk_pci_generation,
	.num_queues		= vblk_pci_num_queues,
	.queue_max_size		= vblk_pci_queue_max_size,
	.setup_queue		= vblk_pci_setup_queue,
	.set_config_vector	= vblk_pci_set_config_vector,
	.alloc_irqs		= vblk_pci_alloc_irqs,
	.free_irqs		= vblk_pci_free_irqs,
	.irq			= vblk_pci_irq,
	.irq_affinity		= vblk_pci_irq_affinity,
	.read_isr		= vblk_pci_read_isr,
	.present		= vblk_pci_present,
	.offline		= vblk_pci_offline,
	.bus_insane		= vblk_pci_bus_insane,
	.fence			= vblk_pci_fence,
	.unfence		= vblk_pci_unfence,
};

/* Enable the function, map its regions and make it a bus master. */
int vblk_pci_init(struct vblk_transport *t, struct pci_dev *pdev)
{
	struct vblk_pci *p;
	int err;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->pdev = pdev;
	err = pci_enable_device(pdev);
	if (err)
		goto err_free;
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
	t->ops = &vblk_pci_ops;
	t->priv = p;
	t->dev = &pdev->dev;
	t->device = p->device;
	t->device_len = p->device_len;
	t->one_line = false;
	return 0;

err_unmap:
	vblk_unmap_all(p);
err_release:
	pci_release_regions(pdev);
err_disable:
	pci_disable_device(pdev);
err_free:
	kfree(p);
	return err;
}
