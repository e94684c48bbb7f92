// SPDX-License-Identifier: GPL-2.0
/* Rotational is a queue limits feature (6.11+); before, every queue was. */
#include <linux/blkdev.h>
void probe(struct queue_limits *lim);
void probe(struct queue_limits *lim)
{
	lim->features |= BLK_FEAT_ROTATIONAL;
}
