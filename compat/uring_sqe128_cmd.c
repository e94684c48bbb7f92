// SPDX-License-Identifier: GPL-2.0
/* io_uring_sqe128_cmd(): a typed cmd area of a 128-byte SQE (6.18+). */
#include <linux/io_uring/cmd.h>
struct probe_cmd {
	u64 v[4];
};

u64 probe(struct io_uring_cmd *cmd);
u64 probe(struct io_uring_cmd *cmd)
{
	return io_uring_sqe128_cmd(cmd->sqe, struct probe_cmd)->v[3];
}
