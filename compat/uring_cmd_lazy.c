// SPDX-License-Identifier: GPL-2.0
/* io_uring_cmd_do_in_task_lazy(): task work without an early wakeup (6.12, 7.3; not 6.1). */
#include <linux/io_uring/cmd.h>
void probe(struct io_uring_cmd *cmd);
void probe(struct io_uring_cmd *cmd)
{
	io_uring_cmd_do_in_task_lazy(cmd, NULL);
}
