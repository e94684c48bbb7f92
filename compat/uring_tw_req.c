// SPDX-License-Identifier: GPL-2.0
/* Task-work callbacks take a struct io_tw_req and a token (7.3; not 6.12). */
#include <linux/io_uring/cmd.h>
static void cb(struct io_tw_req tw_req, io_tw_token_t tw)
{
	io_uring_cmd_done(io_uring_cmd_from_tw(tw_req), 0,
			  IO_URING_CMD_TASK_WORK_ISSUE_FLAGS);
}

void probe(struct io_uring_cmd *cmd);
void probe(struct io_uring_cmd *cmd)
{
	io_uring_cmd_complete_in_task(cmd, cb);
}
