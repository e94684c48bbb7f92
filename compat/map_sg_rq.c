// SPDX-License-Identifier: GPL-2.0
/* blk_rq_map_sg() takes no request_queue (6.15+). */
#include <linux/blk-mq.h>
int probe(struct request *rq, struct scatterlist *sg);
int probe(struct request *rq, struct scatterlist *sg)
{
	return blk_rq_map_sg(rq, sg);
}
