// SPDX-License-Identifier: GPL-2.0
/* io_uring_sqe128_cmd(): a typed cmd area of a 128-byte SQE (7.3; not 6.12). */
#include <linux/io_uring/cmd.h>
u64 probe(struct io_uring_cmd *cmd);

struct probe_cmd {
	u64 v[4];
};

u64 probe(struct io_uring_cmd *cmd)
{
	return io_uring_sqe128_cmd(cmd->sqe, struct probe_cmd)->v[3];
}
