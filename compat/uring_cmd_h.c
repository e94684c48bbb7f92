// SPDX-License-Identifier: GPL-2.0
/* io_uring's driver API has its own header, linux/io_uring/cmd.h (6.12, 7.3; not 6.1). */
#include <linux/io_uring/cmd.h>
u32 probe(struct io_uring_cmd *cmd);
u32 probe(struct io_uring_cmd *cmd)
{
	return cmd->cmd_op;
}
