// SPDX-License-Identifier: GPL-2.0
/* BLK_MQ_F_SHOULD_MERGE exists (merging became the default in 6.14). */
#include <linux/blk-mq.h>
unsigned int probe(void);
unsigned int probe(void)
{
	return BLK_MQ_F_SHOULD_MERGE;
}
