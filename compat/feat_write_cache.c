// SPDX-License-Identifier: GPL-2.0
/* Queue features live in queue_limits (6.11+). */
#include <linux/blkdev.h>
void probe(struct queue_limits *lim);
void probe(struct queue_limits *lim)
{
	lim->features |= BLK_FEAT_WRITE_CACHE;
}
