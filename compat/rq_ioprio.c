// SPDX-License-Identifier: GPL-2.0
/* struct request has its own ioprio (6.1; later it is its first bio's). */
#include <linux/blk-mq.h>
void probe(struct request *rq);
void probe(struct request *rq)
{
	rq->ioprio = 0;
}
