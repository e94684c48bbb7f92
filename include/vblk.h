/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vblk: structures shared by the driver's files and the contracts between
 * them.
 *
 *   vblk_main.c    module init/exit and the bus drivers: PCI (with FLR
 *                  and PCI error callbacks) and virtio-mmio platform
 *                  devices, whose callbacks hand bus events to the lifecycle
 *   vblk_params.c  module parameters and their validation
 *   vblk_dev.c     the lifecycle: probe, remove, shutdown, pause and
 *                  resume, recovery, config changes
 *   vblk_setup.c   features, config limits, queue count and size,
 *                  vectors, queue memory and ring (re)start
 *   vblk_disk.c    disk names, tag set, gendisk, geometry, .free_disk
 *   vblk_sysfs.c   the disk's sysfs attributes
 *   vblk_fault.c   the vblk/lose test hook (CONFIG_VBLK_FAULT_INJECT only)
 *   vblk_mq.c      blk-mq operations: request -> ring, ring -> request
 *   vblk_pool.c    per-queue overflow tables for requests with many segments
 *   vblk_notify.c  doorbells, interrupt handlers, completion dispatch
 *   vblk_transport.c  what every transport shares: status, features,
 *                  config reads, DMA (include/vblk_transport.h)
 *   vblk_pci.c     modern virtio-pci transport (no knowledge of requests)
 *   vblk_mmio.c    virtio-mmio version 2 transport (the same)
 *   vblk_ring.c    split virtqueue (no knowledge of blk-mq or PCI)
 *   vblk_cmd.c     range tables and range-command limits (pure; unit-tested)
 *   vblk_pt.c      io_uring passthrough: a char device per disk, commands
 *                  as blk-mq requests on the disk's queue
 *   vblk_pt_check.c  the checks of a passthrough command (pure; unit-tested)
 *   vblk_tp_check.c  the transports' pure decisions: mmio identity, the
 *                  config generation loop, features (pure; unit-tested)
 *
 * Layers, top down: vblk_main.c registers the bus drivers, whose
 * callbacks call the lifecycle (vblk_dev.c). vblk_setup.c, vblk_disk.c,
 * vblk_sysfs.c and vblk_fault.c serve it at probe and from sysfs. Under
 * them the I/O path: vblk_mq.c and vblk_notify.c are peers (mq rings the
 * doorbell through notify; notify harvests and hands each answer to mq's
 * completion), over vblk_pool.c (mq's storage for large requests),
 * vblk_ring.c and the transport (vblk_transport.c over vblk_pci.c or
 * vblk_mmio.c, through struct vblk_transport_ops); ring and transports
 * call nothing of vblk's above them.
 * vblk_pt.c serves the lifecycle at probe and remove, and sends its
 * commands down through blk-mq into vblk_mq.c like any request.
 * vblk_params.c, vblk_cmd.c and vblk_pt_check.c are leaves. The I/O path reports upward
 * only through vb->events (struct vblk_events below), or through state it
 * reads (vb->state); it never calls a function of the files above it.
 *
 * Ownership and locking
 * ---------------------
 * struct vblk_dev is created at probe and freed by the gendisk's .free_disk,
 * when the last opener of the disk closes it: a removed disk can still be
 * held open, and its operations then return -ENXIO (state GONE). The
 * device side (BARs, vectors, rings, tag memory) is torn down at remove.
 * vb->state and the lifecycle rules are described in vblk_dev.c.
 *
 * struct vblk_queue.lock (a spinlock taken with interrupts off) protects the
 * queue's ring (both the producer side, in queue_rq/commit_rqs/queue_rqs,
 * and the harvest, in the interrupt handler, the irq_poll softirq or the
 * poller) and the counters written under it. The doorbell write needs no
 * lock: it is a posted MMIO write of the queue index, which is why it is
 * done after the lock is dropped unless vblk_notify_in_lock asks otherwise.
 * Counters written outside the lock (interrupt counts) are only ever written
 * by the one handler that owns them.
 *
 * Per-tag DMA storage (header, status byte, inline descriptor table) belongs
 * to the request holding that tag between queue_rq and its completion; the
 * device owns it from publish until the used element comes back. A pool
 * run (vblk_pool.c) belongs to the request that took it in the same way.
 */
#ifndef VBLK_H
#define VBLK_H

#include <linux/blk-mq.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/interrupt.h>
#include <linux/irq_poll.h>
#include <linux/spinlock.h>
#include <linux/virtio_blk.h>
#include <linux/workqueue.h>

#include "uapi/vblk_pt.h"
#include "vblk_cmd.h"
#include "vblk_fault.h"
#include "vblk_ring.h"
#include "vblk_transport.h"

#define VBLK_NAME		"vblk"
#define VBLK_MAX_QUEUES		64
#define VBLK_SERIAL_LEN		20	/* VIRTIO_BLK_ID_BYTES */

enum vblk_complete_mode {
	VBLK_COMPLETE_AUTO,
	VBLK_COMPLETE_HARDIRQ,
	VBLK_COMPLETE_SOFTIRQ,
};

/* The lifecycle's states: the table at the top of vblk_dev.c. */
enum vblk_state {
	VBLK_PROBING,
	VBLK_LIVE,
	VBLK_RESETTING,
	VBLK_PAUSED,
	VBLK_DELETING,
	VBLK_DEAD,
	VBLK_GONE,
	VBLK_NR_STATES
};

extern const char * const vblk_state_names[VBLK_NR_STATES];

/* What the lifecycle made of a request left unanswered (events->unanswered). */
enum vblk_verdict {
	VBLK_WAIT,		/* the request waits on: reset its timer */
	VBLK_RECLAIMED,		/* taken back from the device: requeued or failed */
};

/* Module parameters (vblk_params.c). */
extern bool vblk_notify_in_lock;	/* read on every doorbell */
extern unsigned int vblk_max_resets;	/* read at each recovery */
extern unsigned int vblk_dev_loss_tmo;	/* read at each request timeout */
extern unsigned int vblk_poll_budget;	/* irq_poll budget per run */
extern unsigned int vblk_irq_coalesce;	/* percent; read at every re-arm */
/* ... and those read at bind (vblk_setup.c, vblk_disk.c) */
extern unsigned int vblk_num_queues;
extern unsigned int vblk_poll_queues;
extern unsigned int vblk_queue_depth;
extern unsigned int vblk_ring_size;
extern unsigned int vblk_max_segments;
extern unsigned int vblk_pool_entries;
extern bool vblk_use_indirect;
extern bool vblk_use_event_idx;
extern unsigned int vblk_io_timeout;
extern char *vblk_disk_prefix;
extern unsigned int vblk_irq_mode_param;	/* enum vblk_irq_mode */
extern unsigned int vblk_complete_param;	/* enum vblk_complete_mode */
extern const char * const vblk_irq_mode_names[];
extern const char * const vblk_complete_names[];

/*
 * The prefix plus the longest suffix (7 letters: vblk_format_name) must fit
 * DISK_NAME_LEN: a truncated name would be the same for many indices. A
 * name also becomes /dev and /sys/block entries, so only characters that
 * are safe there, unquoted, in scripts and udev rules.
 */
#define VBLK_PREFIX_MAX		(DISK_NAME_LEN - 8)

/* What the counters file reports; one set per queue. */
struct vblk_stats {
	u64 requests;		/* requests put on the ring */
	u64 doorbells;		/* doorbell writes */
	u64 suppressed;		/* kick_prepare: device did not want one */
	u64 completions;	/* used elements harvested */
	u64 max_batch;		/* largest harvest in one run */
	u64 ring_full;		/* queue_rq found no room */
	u64 irqs;		/* interrupts that served this queue */
	u64 spurious;		/* ... and found nothing to do */
	u64 polls;		/* irq_poll runs */
	u64 rescued;		/* answers the request timeout harvested */
	u64 rekicks;		/* doorbells the request timeout rang again */
};

/*
 * Per-tag DMA storage: the request header and a descriptor table just big
 * enough for a request of VBLK_INLINE_SEGS data segment (header, data,
 * status): 64 bytes a tag. The status bytes the device writes sit apart,
 * one per tag after the queue's used ring (q->status). Requests with more
 * segments, and range commands (discard, write zeroes, secure erase: three
 * descriptors, then the range table from tbl[VBLK_RANGE_DESCS] on), take
 * their table from the queue's pool (struct vblk_pool). The table is used
 * as the indirect table, or copied into the ring when indirect descriptors
 * are not negotiated.
 */
#define VBLK_RANGE_DESCS	3
#define VBLK_INLINE_SEGS	1
#define VBLK_INLINE_DESCS	(VBLK_INLINE_SEGS + 2)
struct vblk_req_hdr {
	__le32 type;
	__le32 ioprio;
	__le64 sector;
};

struct vblk_tag_dma {
	struct vblk_req_hdr hdr;
	struct vblk_desc tbl[VBLK_INLINE_DESCS];
};

/*
 * The overflow pool of a queue (vblk_pool.c): descriptor table entries in
 * DMA memory and as many scatterlist entries, handed out in runs of whole
 * blocks of VBLK_POOL_BLOCK entries to requests that do not fit their tag's
 * inline table. Allocated at bind with the queue; lock protects map,
 * waiting and waits (interrupts off).
 */
#define VBLK_POOL_BLOCK		8
/* pool_entries: "auto" (the default), and the largest number it takes. */
#define VBLK_POOL_AUTO		UINT_MAX
#define VBLK_POOL_MAX		16384
struct vblk_pool {
	spinlock_t lock;		/* map, waits; irqsave */
	unsigned long *map;		/* a set bit: block taken */
	unsigned int blocks;
	struct vblk_desc *tbl;		/* DMA memory, blocks * BLOCK entries */
	dma_addr_t dma;
	size_t tbl_bytes;
	struct scatterlist *sg;		/* the same number of entries */
	bool waiting;			/* a request found no run since a put */
	u64 waits;			/* requests that found no run free */
};

/*
 * Per-tag storage comes in chunks of at most VBLK_TAG_CHUNK_BYTES so that
 * no allocation needs many contiguous pages.
 */
#define VBLK_TAG_CHUNK_BYTES	(64 * 1024)

struct vblk_dma_chunk {
	void *mem;
	dma_addr_t dma;
};

struct vblk_dev;

/*
 * The narrow upward interface: what the lower layers (vblk_notify.c,
 * vblk_mq.c) tell the lifecycle code (vblk_dev.c), which installs its
 * table in vb->events at probe, before any interrupt or request can
 * run; it does not change afterwards. The lower layers never call the
 * lifecycle's functions by name.
 *
 * failed          the device wrote something that cannot be trusted.
 *                 Any context (hard irq, softirq, under no lock or a
 *                 queue lock); does not sleep; asynchronous: recovery
 *                 runs later in process context.
 * config_changed  the config interrupt fired. Hard-irq context; does
 *                 not sleep; asynchronous.
 * unanswered      the request timeout found a request of queue q with
 *                 no answer on the ring after waited_s seconds: the lifecycle
 *                 rings again and waits, or resets the device (the
 *                 request is then requeued or failed: VBLK_RECLAIMED).
 *                 Process context only, no queue lock held: sleeps,
 *                 takes vb->lifecycle_lock.
 */
struct vblk_events {
	void (*failed)(struct vblk_dev *vb, const char *why);
	void (*config_changed)(struct vblk_dev *vb);
	enum vblk_verdict (*unanswered)(struct vblk_dev *vb,
					struct vblk_queue *q,
					unsigned int waited_s);
};

/*
 * Cache-line aligned, as the in-tree driver's virtio_blk_vq: the queues are
 * one array (vb->queues), and without it one queue's last fields (the
 * pool's lock and waiting flag, written by completions) would share a
 * line with the next queue's lock and ring indices.
 */
struct vblk_queue {
	spinlock_t lock;		/* see the top of this file */
	struct vblk_ring ring;
	struct vblk_stats stats;
	struct vblk_dev *vb;
	u16 index;
	bool softirq;			/* completions through irq_poll */
	bool polled;			/* poll queue: no interrupts at all */
	bool offline;			/* device stopped: harvest nothing (lock) */
	atomic_t harvesters;		/* harvests between take and completion */
	void __iomem *doorbell;		/* this queue's, from setup_queue */
	bool doorbell32;		/* written 32 bits wide (mmio) */
	struct irq_poll iop;
	struct blk_mq_hw_ctx *hctx;	/* set in init_hctx */

	/*
	 * DMA memory of the ring and of the tags, allocated at probe. The
	 * tags' status bytes follow the ring in ring_mem, from status on.
	 */
	void *ring_mem;
	dma_addr_t ring_dma;
	size_t ring_bytes;
	u8 *status;
	dma_addr_t status_dma;
	struct vblk_ring_slot *slot;
	struct vblk_dma_chunk *tag_chunks;	/* depth tags, in chunks */
	struct vblk_pool pool;			/* tables of large requests */
} ____cacheline_aligned_in_smp;

/*
 * The passthrough char device (vblk_pt.c): its struct device holds a
 * gendisk reference until its release, so vb outlives every open file.
 */
struct vblk_pt {
	struct cdev cdev;
	struct device dev;
	bool added;			/* between vblk_pt_add and _remove */
};

struct vblk_dev {
	struct vblk_transport tp;	/* include/vblk_transport.h */
	struct gendisk *disk;
	struct blk_mq_tag_set tag_set;
	struct vblk_queue *queues;
	unsigned int nr_queues;		/* all virtqueues in use */
	unsigned int nr_poll;		/* the last nr_poll of them are polled */
	unsigned int ring_size;
	unsigned int depth;		/* tags per queue (<= ring_size) */
	unsigned int max_segs;		/* data segments per request */
	u32 size_max;			/* bytes per data descriptor */
	unsigned int max_ranges;	/* range table entries per request */
	unsigned int tbl_entries;	/* the largest table a request needs */
	unsigned int tag_stride;	/* bytes of vblk_tag_dma per tag */
	unsigned int chunk_shift;	/* log2(tags per chunk) */
	unsigned int nr_chunks;
	size_t chunk_bytes;
	bool indirect;
	bool event_idx;
	bool zeroes_may_unmap;		/* write zeroes may deallocate */
	enum vblk_complete_mode complete;	/* resolved: never AUTO */
	int index;			/* name index */
	char serial[VBLK_SERIAL_LEN + 1];

	const struct vblk_events *events;	/* set at probe, see above */
	struct work_struct config_work;	/* capacity change, NEEDS_RESET */
	struct work_struct reset_work;	/* device broke: recovery */
	const char *reset_why;		/* what reset_work is for (xchg) */

	/* Lifecycle (vblk_dev.c); all under lifecycle_lock but state. */
	struct mutex lifecycle_lock;
	enum vblk_state state;		/* READ_ONCE outside the lock */
	bool dma_leaked;		/* device never reset: keep its memory */
	unsigned int resets;		/* in a row, without progress */
	u64 stops;			/* device stops (vblk_stop_hw) so far */
	u64 completions_at_reset;
	u64 recoveries;
	struct mutex serial_lock;	/* serial read lazily, once */
	bool have_serial;
	u64 config_irqs;
	u64 shared_irqs;		/* interrupts on a shared vector / INTx */

	struct vblk_pt pt;		/* /dev/<disk>c0 */

	/* Test hook (vblk/lose); empty unless CONFIG_VBLK_FAULT_INJECT. */
	struct vblk_fault fault;
};

static inline struct device *vblk_dev_of(struct vblk_dev *vb)
{
	return vb->tp.dev;
}

/* The vb of a vblk disk's device, for its sysfs attributes. */
static inline struct vblk_dev *vblk_from_dev(struct device *dev)
{
	return dev_to_disk(dev)->private_data;
}

static inline bool vblk_has(struct vblk_dev *vb, unsigned int bit)
{
	return vb->tp.features & BIT_ULL(bit);
}

/* Device config fields: offset, and a read of the field's own size. */
#define VBLK_CFG(f)	offsetof(struct virtio_blk_config, f)
#define VBLK_CFG_READ(vb, f, ptr) \
	vblk_tp_read_config(&(vb)->tp, VBLK_CFG(f), (ptr), \
			     sizeof_field(struct virtio_blk_config, f))

/* vblk_notify.c: doorbells, interrupts, completion dispatch */
void vblk_notify(struct vblk_queue *q);
int vblk_irqs_request(struct vblk_dev *vb);
void vblk_irqs_free(struct vblk_dev *vb);
void vblk_irqs_sync(struct vblk_dev *vb);
void vblk_queue_init_completion(struct vblk_queue *q);
void vblk_queue_offline(struct vblk_queue *q);
void vblk_queue_online(struct vblk_queue *q);
int vblk_queue_harvest(struct vblk_queue *q, int budget,
		       struct io_comp_batch *iob);
int vblk_queue_rescue(struct vblk_queue *q);
void vblk_queue_rekick(struct vblk_queue *q);

/* vblk_pool.c: overflow tables */
int vblk_pool_alloc(struct vblk_transport *t, struct vblk_pool *pool,
		    unsigned int entries, unsigned int need);
void vblk_pool_free(struct vblk_transport *t, struct vblk_pool *pool);
unsigned int vblk_pool_get(struct vblk_pool *pool, unsigned int entries,
			   unsigned int *at);
bool vblk_pool_put(struct vblk_pool *pool, unsigned int at,
		   unsigned int entries);
struct vblk_desc *vblk_pool_tbl(struct vblk_pool *pool, unsigned int at,
				dma_addr_t *addr);
struct scatterlist *vblk_pool_sg(struct vblk_pool *pool, unsigned int at);
u64 vblk_pool_waits(struct vblk_pool *pool);
unsigned int vblk_pool_in_use(struct vblk_pool *pool);
void vblk_pool_reset_waits(struct vblk_pool *pool);

/* vblk_mq.c: blk-mq */
extern const struct blk_mq_ops vblk_mq_ops;
unsigned int vblk_mq_cmd_size(struct vblk_dev *vb);
u8 vblk_mq_used_status(struct vblk_queue *q, void *token);
void vblk_mq_complete_used(struct vblk_queue *q, void *token, u8 status,
			   struct io_comp_batch *iob);
void vblk_mq_flush_batch(struct io_comp_batch *iob);
#ifdef CONFIG_VBLK_FAULT_INJECT
void vblk_mq_fault_status(struct vblk_queue *q, void *token);
#else
static inline void vblk_mq_fault_status(struct vblk_queue *q, void *token)
{
}
#endif
void vblk_mq_reclaim_inflight(struct vblk_dev *vb, bool requeue);
int vblk_mq_get_serial(struct vblk_dev *vb);
void vblk_mq_pt_init(struct request *rq, unsigned int op, u64 sector,
		     unsigned int bytes);

/*
 * The upper files, called by the lifecycle (vblk_dev.c) at probe and
 * remove; the lower layers call none of them.
 */
struct vblk_limits;

/* vblk_setup.c: from the device's offer to queues and rings */
int vblk_start_device(struct vblk_dev *vb);
int vblk_read_capacity(struct vblk_dev *vb, sector_t *sectors);
int vblk_read_limits(struct vblk_dev *vb, struct vblk_limits *l);
int vblk_setup_irqs(struct vblk_dev *vb);
int vblk_setup_queues(struct vblk_dev *vb);
void vblk_free_queues(struct vblk_dev *vb, unsigned int n);
int vblk_queue_start(struct vblk_dev *vb, struct vblk_queue *q);

/* vblk_disk.c: name, tag set, gendisk */
int vblk_create_disk(struct vblk_dev *vb, const struct vblk_limits *lim);
void vblk_destroy_disk(struct vblk_dev *vb);
int vblk_add_disk(struct vblk_dev *vb);
void vblk_disk_exit(void);

/* vblk_pt.c: the passthrough char device, after add_disk, before del_gendisk */
void vblk_pt_add(struct vblk_dev *vb);
void vblk_pt_remove(struct vblk_dev *vb);
int vblk_pt_init(void);
void vblk_pt_exit(void);

/* vblk_sysfs.c: the groups device_add_disk() creates */
extern const struct attribute_group *vblk_attr_groups[];

/*
 * vblk_dev.c: the lifecycle, called by the bus drivers (vblk_main.c).
 * vblk_dev_probe() sets the transport up with init(t, bus_dev), then the
 * device and the disk; the device's drvdata is the vblk_dev from then on.
 */
typedef int (*vblk_tp_init_fn)(struct vblk_transport *t, void *bus_dev);
int vblk_dev_probe(struct device *dev, vblk_tp_init_fn init, void *bus_dev);
void vblk_dev_remove(struct vblk_dev *vb);
void vblk_dev_kill(struct vblk_dev *vb, const char *why);
void vblk_dev_pause(struct vblk_dev *vb);
int vblk_dev_unpause(struct vblk_dev *vb, const char *what);

#endif /* VBLK_H */
