// SPDX-License-Identifier: GPL-2.0
/* queue_rqs() gets a struct rq_list (6.13+). */
#include <linux/blk-mq.h>
struct request *probe(struct rq_list *rl);
struct request *probe(struct rq_list *rl)
{
	return rq_list_pop(rl);
}
