// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: the virtio-mmio transport, version 2 (virtio 1.x, section 4.2), the
 * operations of include/vblk_transport.h.
 *
 * One register window (control registers, then the device config from
 * 0x100) and one interrupt line with a status register to read and
 * acknowledge: the transport of Firecracker, QEMU's microvm and arm64 virt
 * machines. The legacy interface (version 1, what QEMU's virtio-mmio
 * offers unless told force-legacy=false) is refused with that advice. It
 * knows nothing of requests.
 *
 * Control registers are 32 bits wide and read or written only as such
 * (4.2.2.2); readl/writel are little-endian like the registers, and order
 * each access after the driver's earlier stores to memory, so a ring
 * published before QueueReady or a doorbell is visible to the device.
 *
 * Ownership: struct vblk_mmio is allocated by vblk_mmio_init() at probe and
 * freed by its exit operation at remove; the register window is a managed
 * mapping of the platform device, unmapped by the driver core after
 * remove. The platform device's drvdata is the lifecycle's (the vblk_dev).
 */
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/platform_device.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_mmio.h>

#include "vblk.h"
#include "vblk_tp_check.h"
#include "vblk_transport.h"

struct vblk_mmio {
	struct platform_device *pdev;
	void __iomem *base;
	int irq;
};

static struct vblk_mmio *to_mmio(struct vblk_transport *t)
{
	return t->priv;
}

static u32 mmio_read(struct vblk_transport *t, unsigned int reg)
{
	return readl(to_mmio(t)->base + reg);
}

static void mmio_write(struct vblk_transport *t, unsigned int reg, u32 val)
{
	writel(val, to_mmio(t)->base + reg);
}

static void vblk_mmio_exit(struct vblk_transport *t)
{
	kfree(t->priv);
	t->priv = NULL;
	t->device = NULL;
}

static u8 vblk_mmio_get_status(struct vblk_transport *t)
{
	return mmio_read(t, VIRTIO_MMIO_STATUS);
}

static void vblk_mmio_set_status(struct vblk_transport *t, u8 status)
{
	mmio_write(t, VIRTIO_MMIO_STATUS, status);
}

static u64 vblk_mmio_get_features(struct vblk_transport *t)
{
	u64 f;

	mmio_write(t, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	f = (u64)mmio_read(t, VIRTIO_MMIO_DEVICE_FEATURES) << 32;
	mmio_write(t, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	return f | mmio_read(t, VIRTIO_MMIO_DEVICE_FEATURES);
}

static void vblk_mmio_set_features(struct vblk_transport *t, u64 features)
{
	mmio_write(t, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	mmio_write(t, VIRTIO_MMIO_DRIVER_FEATURES, features >> 32);
	mmio_write(t, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	mmio_write(t, VIRTIO_MMIO_DRIVER_FEATURES, (u32)features);
}

static u32 vblk_mmio_generation(struct vblk_transport *t)
{
	return mmio_read(t, VIRTIO_MMIO_CONFIG_GENERATION);
}

/* No register says how many queues there are: QueueNumMax 0 ends them. */
static u16 vblk_mmio_num_queues(struct vblk_transport *t)
{
	return U16_MAX;
}

static u16 vblk_mmio_queue_max_size(struct vblk_transport *t, u16 index)
{
	mmio_write(t, VIRTIO_MMIO_QUEUE_SEL, index);
	return min_t(u32, mmio_read(t, VIRTIO_MMIO_QUEUE_NUM_MAX), U16_MAX);
}

static void mmio_write64(struct vblk_transport *t, unsigned int lo, u64 val)
{
	mmio_write(t, lo, (u32)val);
	mmio_write(t, lo + 4, val >> 32);
}

/*
 * 4.2.3.2: select the queue, check it is not in use and big enough, give
 * its size and ring addresses, then mark it ready. Every queue shares the
 * one QueueNotify register, written 32 bits wide with the queue's index.
 */
static int vblk_mmio_setup_queue(struct vblk_transport *t, u16 index, u16 size,
				 u64 desc, u64 avail, u64 used, u16 vector,
				 void __iomem **doorbell, bool *doorbell32)
{
	u32 max;

	mmio_write(t, VIRTIO_MMIO_QUEUE_SEL, index);
	if (mmio_read(t, VIRTIO_MMIO_QUEUE_READY)) {
		dev_err(t->dev, "queue %u already in use\n", index);
		return -EBUSY;
	}
	max = mmio_read(t, VIRTIO_MMIO_QUEUE_NUM_MAX);
	if (max < size) {
		dev_err(t->dev, "queue %u takes %u entries, not %u\n",
			index, max, size);
		return -ENODEV;
	}
	mmio_write(t, VIRTIO_MMIO_QUEUE_NUM, size);
	mmio_write64(t, VIRTIO_MMIO_QUEUE_DESC_LOW, desc);
	mmio_write64(t, VIRTIO_MMIO_QUEUE_AVAIL_LOW, avail);
	mmio_write64(t, VIRTIO_MMIO_QUEUE_USED_LOW, used);
	*doorbell = to_mmio(t)->base + VIRTIO_MMIO_QUEUE_NOTIFY;
	*doorbell32 = true;
	mmio_write(t, VIRTIO_MMIO_QUEUE_READY, 1);
	return 0;
}

static int vblk_mmio_set_config_vector(struct vblk_transport *t, u16 vector)
{
	return 0;
}

/* The one line serves config changes and every queue. */
static int vblk_mmio_alloc_irqs(struct vblk_transport *t,
				enum vblk_irq_mode mode,
				unsigned int nr_irq_queues)
{
	if (mode != VBLK_IRQ_INTX)
		return -EOPNOTSUPP;
	t->nvec = 0;
	t->irq_mode = mode;
	return 0;
}

static void vblk_mmio_free_irqs(struct vblk_transport *t)
{
}

static int vblk_mmio_irq(struct vblk_transport *t, unsigned int vector)
{
	return vector ? -EINVAL : to_mmio(t)->irq;
}

static const struct cpumask *vblk_mmio_irq_affinity(struct vblk_transport *t,
						    unsigned int vector)
{
	return NULL;
}

/*
 * The status register keeps its bits until acknowledged (4.2.2): ack what
 * was read, so that an event arriving after the read raises the line
 * again. Bit 0 (used buffer) and bit 1 (config change) mean what the PCI
 * ISR's bits mean.
 */
static u8 vblk_mmio_read_isr(struct vblk_transport *t)
{
	u32 st = mmio_read(t, VIRTIO_MMIO_INTERRUPT_STATUS);

	if (st)
		mmio_write(t, VIRTIO_MMIO_INTERRUPT_ACK, st);
	return st;
}

static bool vblk_mmio_magic_ok(struct vblk_transport *t)
{
	return mmio_read(t, VIRTIO_MMIO_MAGIC_VALUE) == VBLK_MMIO_MAGIC;
}

static bool vblk_mmio_present(struct vblk_transport *t)
{
	return vblk_mmio_magic_ok(t);
}

static bool vblk_mmio_offline(struct vblk_transport *t)
{
	return false;
}

static const char *vblk_mmio_bus_insane(struct vblk_transport *t)
{
	return vblk_mmio_magic_ok(t) ? NULL :
	       "virtio-mmio magic value lost (device gone?)";
}

/* virtio-mmio has no bus mastering to take away. */
static const char *vblk_mmio_fence(struct vblk_transport *t)
{
	return NULL;
}

static void vblk_mmio_unfence(struct vblk_transport *t)
{
}

static const struct vblk_transport_ops vblk_mmio_ops = {
	.name			= "mmio",
	.exit			= vblk_mmio_exit,
	.get_status		= vblk_mmio_get_status,
	.set_status		= vblk_mmio_set_status,
	.get_features		= vblk_mmio_get_features,
	.set_features		= vblk_mmio_set_features,
	.generation		= vblk_mmio_generation,
	.num_queues		= vblk_mmio_num_queues,
	.queue_max_size		= vblk_mmio_queue_max_size,
	.setup_queue		= vblk_mmio_setup_queue,
	.set_config_vector	= vblk_mmio_set_config_vector,
	.alloc_irqs		= vblk_mmio_alloc_irqs,
	.free_irqs		= vblk_mmio_free_irqs,
	.irq			= vblk_mmio_irq,
	.irq_affinity		= vblk_mmio_irq_affinity,
	.read_isr		= vblk_mmio_read_isr,
	.present		= vblk_mmio_present,
	.offline		= vblk_mmio_offline,
	.bus_insane		= vblk_mmio_bus_insane,
	.fence			= vblk_mmio_fence,
	.unfence		= vblk_mmio_unfence,
};

/* What sits behind the window: a version 2 block device, or an error. */
static int vblk_mmio_identify(struct device *dev, void __iomem *base)
{
	u32 magic = readl(base + VIRTIO_MMIO_MAGIC_VALUE);
	u32 version = readl(base + VIRTIO_MMIO_VERSION);
	u32 id = readl(base + VIRTIO_MMIO_DEVICE_ID);
	char why[VBLK_MMIO_WHY_LEN];

	if (vblk_mmio_id_check(magic, version, id, why, sizeof(why)) ==
	    VBLK_MMIO_ID_OK)
		return 0;
	dev_err(dev, "%s\n", why);
	return -ENODEV;
}

int vblk_mmio_init(struct vblk_transport *t, struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct resource *res;
	struct vblk_mmio *m;
	int err;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->pdev = pdev;
	m->base = devm_platform_get_and_ioremap_resource(pdev, 0, &res);
	if (IS_ERR(m->base)) {
		err = PTR_ERR(m->base);
		goto err_free;
	}
	err = -ENODEV;
	if (resource_size(res) <= VIRTIO_MMIO_CONFIG) {
		dev_err(dev, "register window of %llu bytes has no device config\n",
			(unsigned long long)resource_size(res));
		goto err_free;
	}
	err = vblk_mmio_identify(dev, m->base);
	if (err)
		goto err_free;
	m->irq = platform_get_irq(pdev, 0);
	if (m->irq < 0) {
		err = m->irq;
		goto err_free;
	}
	err = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (err)
		err = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(32));
	if (err) {
		dev_err(dev, "no usable DMA mask\n");
		goto err_free;
	}
	t->ops = &vblk_mmio_ops;
	t->priv = m;
	t->dev = dev;
	t->device = m->base + VIRTIO_MMIO_CONFIG;
	t->device_len = min_t(resource_size_t, resource_size(res) - VIRTIO_MMIO_CONFIG,
			      PAGE_SIZE);
	t->one_line = true;
	return 0;

err_free:
	kfree(m);
	return err;
}
