// SPDX-License-Identifier: GPL-2.0
/* blk_rq_map_kern() takes no request_queue (6.16+). */
#include <linux/blk-mq.h>
int probe(struct request *rq, void *buf, unsigned int len);
int probe(struct request *rq, void *buf, unsigned int len)
{
	return blk_rq_map_kern(rq, buf, len, GFP_KERNEL);
}
