// SPDX-License-Identifier: GPL-2.0
/* blk_rq_poll(): poll a passthrough request's queue (6.12, 7.3; not 6.1). */
#include <linux/blk-mq.h>
int probe(struct request *rq, struct io_comp_batch *iob);
int probe(struct request *rq, struct io_comp_batch *iob)
{
	return blk_rq_poll(rq, iob, 0);
}
