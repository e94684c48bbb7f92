// SPDX-License-Identifier: GPL-2.0
/* io_uring_cmd_done() takes no second result (7.3; 6.1 and 6.12 take res2: 7.3 has done32). */
#include <linux/io_uring/cmd.h>
void probe(struct io_uring_cmd *cmd, unsigned int issue_flags);
void probe(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	io_uring_cmd_done(cmd, 0, issue_flags);
}
