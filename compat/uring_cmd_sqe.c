// SPDX-License-Identifier: GPL-2.0
/* The cmd area through cmd->sqe and io_uring_sqe_cmd(sqe) (6.12; not 6.1, not 7.3). */
#include <linux/io_uring/cmd.h>
const void *probe(struct io_uring_cmd *cmd);
const void *probe(struct io_uring_cmd *cmd)
{
	return io_uring_sqe_cmd(cmd->sqe);
}
