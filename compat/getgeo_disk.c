// SPDX-License-Identifier: GPL-2.0
/* block_device_operations.getgeo takes a gendisk (6.18+). */
#include <linux/blkdev.h>
#include <linux/hdreg.h>
int probe(struct gendisk *disk, struct hd_geometry *geo);
int probe(struct gendisk *disk, struct hd_geometry *geo)
{
	return 0;
}

const struct block_device_operations probe_ops = { .getgeo = probe };
