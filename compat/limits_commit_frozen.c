// SPDX-License-Identifier: GPL-2.0
/* queue_limits_commit_update_frozen() freezes the queue itself (6.14+). */
#include <linux/blkdev.h>
int probe(struct request_queue *q, struct queue_limits *lim);
int probe(struct request_queue *q, struct queue_limits *lim)
{
	return queue_limits_commit_update_frozen(q, lim);
}
