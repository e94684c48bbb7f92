// SPDX-License-Identifier: GPL-2.0
/* A request's end_io gets the completion batch too (7.3; not 6.12). */
#include <linux/blk-mq.h>
static enum rq_end_io_ret end_io(struct request *rq, blk_status_t st,
				 const struct io_comp_batch *iob)
{
	return RQ_END_IO_NONE;
}

void probe(struct request *rq);
void probe(struct request *rq)
{
	rq->end_io = end_io;
}
