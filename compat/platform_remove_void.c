// SPDX-License-Identifier: GPL-2.0
/* struct platform_driver's .remove returns void (6.11+; int before). */
#include <linux/platform_device.h>
static void remove(struct platform_device *pdev)
{
}

struct platform_driver probe_drv = { .remove = remove };
