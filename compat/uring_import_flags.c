// SPDX-License-Identifier: GPL-2.0
/* io_uring_cmd_import_fixed() takes the issue flags (7.3; not 6.12). */
#include <linux/io_uring/cmd.h>
#include <linux/uio.h>
int probe(struct io_uring_cmd *cmd, struct iov_iter *it, unsigned int flags);
int probe(struct io_uring_cmd *cmd, struct iov_iter *it, unsigned int flags)
{
	return io_uring_cmd_import_fixed(0, 0, ITER_DEST, it, cmd, flags);
}
