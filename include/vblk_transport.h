/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vblk: the contract between the driver and a virtio transport.
 *
 * Everything above this interface (setup, lifecycle, blk-mq, notify)
 * talks to the device through struct vblk_transport; nothing above it
 * names PCI or mmio. Two transports implement the operations:
 *
 *   vblk_pci.c    modern virtio-pci (virtio 1.x, 4.1): capabilities in
 *                 config space, MSI-X vectors or INTx, FLR, AER
 *   vblk_mmio.c   virtio-mmio version 2 (virtio 1.x, 4.2): one register
 *                 window, one interrupt line
 *
 * and vblk_transport.c builds what is common on top of them: the status
 * handshake and reset wait, feature negotiation, config reads under the
 * generation counter, and DMA (with VIRTIO_F_ACCESS_PLATFORM through the
 * DMA API, else guest physical addresses).
 *
 * The hot path calls no operation: the doorbell is a pointer each queue
 * keeps (struct vblk_queue.doorbell, written 16 or 32 bits wide), and DMA
 * mapping needs only t->dev and t->dma_api.
 *
 * Ownership: struct vblk_transport is embedded in struct vblk_dev (vb->tp)
 * and lives as long as it, so that sysfs and messages may read its common
 * fields after removal. The transport's own state (t->priv, its mappings)
 * is made by its init function at probe and released by ops->exit at
 * remove, under vb->lifecycle_lock; no operation may be called after it.
 * Operations are called from process context unless they say otherwise;
 * none takes a lock of vblk's, and the caller serialises them (probe and
 * remove, or vb->lifecycle_lock).
 */
#ifndef VBLK_TRANSPORT_H
#define VBLK_TRANSPORT_H

#include <linux/cpumask.h>
#include <linux/dma-direction.h>
#include <linux/types.h>

struct device;
struct page;
struct scatterlist;
struct vblk_transport;

enum vblk_irq_mode {
	VBLK_IRQ_AUTO,
	VBLK_IRQ_MSIX,		/* one vector per queue, plus config */
	VBLK_IRQ_SHARED,	/* one vector for all queues, plus config */
	VBLK_IRQ_INTX,		/* one line with a status register to read:
				 * PCI INTx, or the virtio-mmio interrupt */
};

/* A queue with no vector of its own (polled, or one line for all). */
#define VBLK_NO_VECTOR		0xffff	/* VIRTIO_MSI_NO_VECTOR on PCI */

/*
 * vector numbers: 0 is the config vector, then one per queue (MSIX) or
 * one for all queues (SHARED); INTX has the one line, vector 0.
 */
struct vblk_transport_ops {
	const char *name;
	/* Release the mappings and bus resources; frees t->priv. */
	void (*exit)(struct vblk_transport *t);
	u8 (*get_status)(struct vblk_transport *t);
	void (*set_status)(struct vblk_transport *t, u8 status);
	u64 (*get_features)(struct vblk_transport *t);
	void (*set_features)(struct vblk_transport *t, u64 features);
	u32 (*generation)(struct vblk_transport *t);
	/* Virtqueues the transport has; U16_MAX when it cannot tell. */
	u16 (*num_queues)(struct vblk_transport *t);
	/* The largest ring queue index takes; 0 when there is no such queue. */
	u16 (*queue_max_size)(struct vblk_transport *t, u16 index);
	/* Register a ring; sets *doorbell and *doorbell32 (write width). */
	int (*setup_queue)(struct vblk_transport *t, u16 index, u16 size,
			   u64 desc, u64 avail, u64 used, u16 vector,
			   void __iomem **doorbell, bool *doorbell32);
	int (*set_config_vector)(struct vblk_transport *t, u16 vector);
	/* Sets t->irq_mode and t->nvec; -EOPNOTSUPP for a mode it lacks. */
	int (*alloc_irqs)(struct vblk_transport *t, enum vblk_irq_mode mode,
			  unsigned int nr_irq_queues);
	void (*free_irqs)(struct vblk_transport *t);
	int (*irq)(struct vblk_transport *t, unsigned int vector);
	/* The CPUs vector serves, or NULL when it was not spread. */
	const struct cpumask *(*irq_affinity)(struct vblk_transport *t,
					      unsigned int vector);
	/* Read (and acknowledge) the interrupt status. Hard-irq context. */
	u8 (*read_isr)(struct vblk_transport *t);
	/* Whether the device can still be reached at all. */
	bool (*present)(struct vblk_transport *t);
	/* Whether its channel is frozen (a PCI error): do not touch it. */
	bool (*offline)(struct vblk_transport *t);
	/* What looks broken at the bus level, or NULL. */
	const char *(*bus_insane)(struct vblk_transport *t);
	/* Let the device reach memory again (after a fence or a reset). */
	void (*unfence)(struct vblk_transport *t);
	/* Stop a device that ignores reset from reaching memory; says how,
	 * or NULL when the transport cannot. */
	const char *(*fence)(struct vblk_transport *t);
};

struct vblk_transport {
	const struct vblk_transport_ops *ops;
	void *priv;			/* the transport's; freed by ops->exit */
	struct device *dev;		/* DMA and messages */
	void __iomem *device;		/* struct virtio_blk_config, or NULL */
	u32 device_len;
	u64 features;			/* negotiated */
	bool dma_api;			/* VIRTIO_F_ACCESS_PLATFORM negotiated */
	bool one_line;			/* one interrupt line, no vectors */
	int nvec;			/* vectors allocated (0: one line) */
	enum vblk_irq_mode irq_mode;	/* the mode in use */
};

/* vblk_pci.c and vblk_mmio.c: set up t for a device, or an error. */
struct pci_dev;
struct platform_device;
int vblk_pci_init(struct vblk_transport *t, struct pci_dev *pdev);
int vblk_mmio_init(struct vblk_transport *t, struct platform_device *pdev);

/* vblk_transport.c: what every transport shares. */
int vblk_tp_reset(struct vblk_transport *t);
int vblk_tp_begin(struct vblk_transport *t);
void vblk_tp_add_status(struct vblk_transport *t, u8 bits);
const char *vblk_tp_insane(struct vblk_transport *t);
int vblk_tp_set_features(struct vblk_transport *t, u64 features);
int vblk_tp_read_config(struct vblk_transport *t, unsigned int off,
			void *buf, unsigned int len);
int vblk_tp_write_config8(struct vblk_transport *t, unsigned int off, u8 val);
size_t vblk_tp_max_dma_size(struct vblk_transport *t);
void vblk_tp_set_dma_seg_size(struct vblk_transport *t, unsigned int size);
void *vblk_dma_alloc(struct vblk_transport *t, size_t size, dma_addr_t *addr);
void vblk_dma_free(struct vblk_transport *t, size_t size, void *mem,
		   dma_addr_t addr);
int vblk_dma_map_sg(struct vblk_transport *t, struct scatterlist *sg,
		    int nents, enum dma_data_direction dir);
void vblk_dma_unmap_sg(struct vblk_transport *t, struct scatterlist *sg,
		       int nents, enum dma_data_direction dir);
int vblk_dma_map_page(struct vblk_transport *t, struct page *page,
		      unsigned int off, unsigned int len,
		      enum dma_data_direction dir, dma_addr_t *addr);
void vblk_dma_unmap_page(struct vblk_transport *t, dma_addr_t addr,
			 unsigned int len, enum dma_data_direction dir);

static inline u8 vblk_tp_get_status(struct vblk_transport *t)
{
	return t->ops->get_status(t);
}

#endif /* VBLK_TRANSPORT_H */
