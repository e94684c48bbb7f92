// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: the per-queue overflow pool.
 *
 * Most requests fit the small descriptor table and scatterlist every tag
 * carries (VBLK_INLINE_SEGS data segments). Sizing every tag for the
 * largest request instead would cost about 12 KiB per tag at 254 segments,
 * some 3 MiB per queue at depth 256, for memory a 4k random workload never
 * touches. The few larger requests take a run of this pool: descriptor
 * table entries in DMA memory and, at the same indices, scatterlist
 * entries, handed out in blocks of VBLK_POOL_BLOCK entries.
 *
 * Everything is allocated at bind, with the queue, and freed with it;
 * taking and giving back a run allocates nothing. The pool always holds at
 * least one run of the largest size a request can need, so a request that
 * finds no room now finds it once the runs in use come back: they belong
 * to requests of the same hardware queue (vblk_mq.c has blk-mq issue the
 * request again, and runs the queue when a run comes back).
 *
 * Locking: pool->lock (interrupts off: runs come back from completions in
 * hard-irq context) protects the map, waiting and the waits counter. A run belongs
 * to the request that took it until it gives it back.
 */
#include <linux/bitmap.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "vblk.h"

static unsigned int vblk_pool_blocks_for(unsigned int entries)
{
	return DIV_ROUND_UP(entries, VBLK_POOL_BLOCK);
}

/*
 * entries is what was asked for; the pool is never smaller than need
 * entries (the largest table one request can take), so that every request
 * fits once the pool is empty. Returns 0 or -ENOMEM.
 */
int vblk_pool_alloc(struct vblk_transport *t, struct vblk_pool *pool,
		    unsigned int entries, unsigned int need)
{
	unsigned int n;

	spin_lock_init(&pool->lock);
	pool->blocks = vblk_pool_blocks_for(max(entries, need));
	pool->waits = 0;
	pool->waiting = false;
	n = pool->blocks * VBLK_POOL_BLOCK;
	pool->tbl_bytes = PAGE_ALIGN(n * sizeof(struct vblk_desc));
	pool->map = bitmap_zalloc(pool->blocks, GFP_KERNEL);
	pool->sg = kvcalloc(n, sizeof(*pool->sg), GFP_KERNEL);
	pool->tbl = vblk_dma_alloc(t, pool->tbl_bytes, &pool->dma);
	if (pool->map && pool->sg && pool->tbl)
		return 0;
	vblk_pool_free(t, pool);
	return -ENOMEM;
}

void vblk_pool_free(struct vblk_transport *t, struct vblk_pool *pool)
{
	if (pool->tbl)
		vblk_dma_free(t, pool->tbl_bytes, pool->tbl, pool->dma);
	kvfree(pool->sg);
	bitmap_free(pool->map);
	pool->tbl = NULL;
	pool->sg = NULL;
	pool->map = NULL;
	pool->blocks = 0;
}

/*
 * A run of at least entries entries: *at is its first entry, the return
 * value its length in entries (what vblk_pool_put() wants back), or 0 when
 * no run that long is free now.
 */
unsigned int vblk_pool_get(struct vblk_pool *pool, unsigned int entries,
			   unsigned int *at)
{
	unsigned int nr = vblk_pool_blocks_for(entries);
	unsigned long flags, start;

	spin_lock_irqsave(&pool->lock, flags);
	start = bitmap_find_next_zero_area(pool->map, pool->blocks, 0, nr, 0);
	if (start >= pool->blocks) {
		pool->waiting = true;
		pool->waits++;
		spin_unlock_irqrestore(&pool->lock, flags);
		return 0;
	}
	bitmap_set(pool->map, start, nr);
	spin_unlock_irqrestore(&pool->lock, flags);
	*at = start * VBLK_POOL_BLOCK;
	return nr * VBLK_POOL_BLOCK;
}

/* Returns true when a request found no run since the last put. */
bool vblk_pool_put(struct vblk_pool *pool, unsigned int at,
		   unsigned int entries)
{
	unsigned long flags;
	bool waiting;

	spin_lock_irqsave(&pool->lock, flags);
	bitmap_clear(pool->map, at / VBLK_POOL_BLOCK,
		     vblk_pool_blocks_for(entries));
	/*
	 * Written only when set: a store on every put would dirty the line
	 * for nothing, and puts come from every CPU's completions.
	 */
	waiting = pool->waiting;
	if (waiting)
		pool->waiting = false;
	spin_unlock_irqrestore(&pool->lock, flags);
	return waiting;
}

/* The run's descriptor table, and its bus address. */
struct vblk_desc *vblk_pool_tbl(struct vblk_pool *pool, unsigned int at,
				dma_addr_t *addr)
{
	*addr = pool->dma + (dma_addr_t)at * sizeof(struct vblk_desc);
	return &pool->tbl[at];
}

struct scatterlist *vblk_pool_sg(struct vblk_pool *pool, unsigned int at)
{
	return &pool->sg[at];
}

/* Entries taken now (for vblk/config: 0 on an idle queue). */
unsigned int vblk_pool_in_use(struct vblk_pool *pool)
{
	unsigned long flags;
	unsigned int n;

	spin_lock_irqsave(&pool->lock, flags);
	n = bitmap_weight(pool->map, pool->blocks);
	spin_unlock_irqrestore(&pool->lock, flags);
	return n * VBLK_POOL_BLOCK;
}

/* Requests that found no run free (and waited for one), since bind. */
u64 vblk_pool_waits(struct vblk_pool *pool)
{
	return READ_ONCE(pool->waits);
}

void vblk_pool_reset_waits(struct vblk_pool *pool)
{
	unsigned long flags;

	spin_lock_irqsave(&pool->lock, flags);
	pool->waits = 0;
	spin_unlock_irqrestore(&pool->lock, flags);
}
