// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: the block device users see: its name (vdX, or disk_prefix), the
 * blk-mq tag set and gendisk built from the checked config, its geometry,
 * and the end of its lifetime (.free_disk).
 *
 * Ownership and locking: vblk_name_lock serializes the choice of a name
 * with add_disk, so two vblk probes never pick the same one; the index
 * IDA holds the names vblk uses, and an index is given back only when the
 * disk's last reference goes (vblk_free_disk), which is also when struct
 * vblk_dev is freed. The disk's private_data is NULL until add_disk
 * succeeded: until then .free_disk has nothing to free (probe unwinds).
 * Geometry is read under vb->lifecycle_lock, like everything that touches
 * a device that remove may have torn down (state GONE).
 */
#include <linux/blkdev.h>
#include <linux/hdreg.h>
#include <linux/idr.h>
#include <linux/module.h>

#include "vblk.h"
#include "vblk_compat.h"

/* ---- disk names --------------------------------------------------------- */

static DEFINE_IDA(vblk_index_ida);
static DEFINE_MUTEX(vblk_name_lock);	/* name choice + add_disk */

/*
 * Same scheme as sd and virtio_blk: a..z, aa..zz, aaa.. Seven letters hold
 * any int index (26 + 26^2 + ... + 26^7 > INT_MAX). A name that does not
 * fit is an error, never a truncated one: truncation would give many
 * indices one name, and vblk_pick_name would walk the whole IDA for a
 * free one.
 */
static int vblk_format_name(char *buf, size_t len, const char *prefix, int index)
{
	char suffix[8];
	int i = sizeof(suffix) - 1;

	BUILD_BUG_ON(VBLK_PREFIX_MAX + sizeof(suffix) > DISK_NAME_LEN);
	suffix[i] = '\0';
	do {
		suffix[--i] = 'a' + index % 26;
		index = index / 26 - 1;
	} while (index >= 0 && i > 0);
	if (index >= 0)
		return -ENAMETOOLONG;
	if (snprintf(buf, len, "%s%s", prefix, &suffix[i]) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static bool vblk_name_taken(struct gendisk *disk, const char *name)
{
	struct device *d;

	/* The class of our own (not yet added) disk is the block class. */
	d = class_find_device_by_name(disk_to_dev(disk)->class, name);
	if (!d)
		return false;
	put_device(d);
	return true;
}

/*
 * The lowest index whose name no block device holds. Called with
 * vblk_name_lock held, up to add_disk, so two vblk probes cannot race; a
 * driver outside vblk can still take a name at the same moment, which the
 * disk_prefix parameter exists for. Every index has a name of its own
 * (vblk_format_name), so the loop ends after at most one try per block
 * device there is.
 */
static int vblk_pick_name(struct vblk_dev *vb)
{
	struct gendisk *disk = vb->disk;
	int index = 0, err;

	for (;;) {
		index = ida_alloc_min(&vblk_index_ida, index, GFP_KERNEL);
		if (index < 0)
			return index;
		err = vblk_format_name(disk->disk_name, DISK_NAME_LEN,
				       vblk_disk_prefix, index);
		if (err) {
			ida_free(&vblk_index_ida, index);
			return err;
		}
		if (!vblk_name_taken(disk, disk->disk_name))
			break;
		ida_free(&vblk_index_ida, index);
		index++;
	}
	vb->index = index;
	return 0;
}

/* ---- gendisk ------------------------------------------------------------ */

/* Held open after removal, the disk still answers: -ENXIO. */
static int vblk_getgeo(VBLK_GETGEO_ARG arg, struct hd_geometry *geo)
{
	struct vblk_dev *vb = vblk_getgeo_disk(arg)->private_data;
	__le16 cylinders;
	u8 heads, sectors;
	bool have = false;

	mutex_lock(&vb->lifecycle_lock);
	if (vb->state == VBLK_GONE) {
		mutex_unlock(&vb->lifecycle_lock);
		return -ENXIO;
	}
	if (vblk_has(vb, VIRTIO_BLK_F_GEOMETRY) &&
	    !VBLK_CFG_READ(vb, geometry.cylinders, &cylinders) &&
	    !VBLK_CFG_READ(vb, geometry.heads, &heads) &&
	    !VBLK_CFG_READ(vb, geometry.sectors, &sectors) && heads && sectors)
		have = true;
	mutex_unlock(&vb->lifecycle_lock);
	if (have) {
		geo->heads = heads;
		geo->sectors = sectors;
		geo->cylinders = le16_to_cpu(cylinders);
		return 0;
	}
	/* The usual made-up geometry of disks that have none. */
	geo->heads = 64;
	geo->sectors = 32;
	geo->cylinders = get_capacity(vblk_getgeo_disk(arg)) >> 11;
	return 0;
}

/* The disk's last reference is gone: the name and the structure go. */
static void vblk_free_disk(struct gendisk *disk)
{
	struct vblk_dev *vb = disk->private_data;

	if (!vb)
		return;
	mutex_lock(&vblk_name_lock);
	ida_free(&vblk_index_ida, vb->index);
	mutex_unlock(&vblk_name_lock);
	kfree(vb);
}

static const struct block_device_operations vblk_fops = {
	.owner		= THIS_MODULE,
	.getgeo		= vblk_getgeo,
	.free_disk	= vblk_free_disk,
};

static int vblk_init_tag_set(struct vblk_dev *vb)
{
	struct blk_mq_tag_set *set = &vb->tag_set;

	set->ops = &vblk_mq_ops;
	set->nr_hw_queues = vb->nr_queues;
	set->nr_maps = vb->nr_poll ? HCTX_MAX_TYPES : 1;
	set->queue_depth = vb->depth;
	set->numa_node = dev_to_node(vblk_dev_of(vb));
	set->flags = VBLK_MQ_F_MERGE;
	set->cmd_size = vblk_mq_cmd_size(vb);
	set->driver_data = vb;
	return blk_mq_alloc_tag_set(set);
}

int vblk_create_disk(struct vblk_dev *vb, const struct vblk_limits *lim)
{
	sector_t sectors;
	int err;

	err = vblk_read_capacity(vb, &sectors);
	if (err)
		return err;
	err = vblk_init_tag_set(vb);
	if (err)
		return err;
	vb->disk = vblk_alloc_disk(&vb->tag_set, lim, vb);
	if (IS_ERR(vb->disk)) {
		err = PTR_ERR(vb->disk);
		vb->disk = NULL;
		blk_mq_free_tag_set(&vb->tag_set);
		return err;
	}
	vb->disk->fops = &vblk_fops;
	/* private_data stays NULL (free_disk does nothing) until added. */
	set_capacity(vb->disk, sectors);
	blk_queue_rq_timeout(vb->disk->queue, READ_ONCE(vblk_io_timeout) * HZ);
	set_disk_ro(vb->disk, vblk_has(vb, VIRTIO_BLK_F_RO));
	return 0;
}

/* Probe unwind only: the disk was never added (free_disk does nothing). */
void vblk_destroy_disk(struct vblk_dev *vb)
{
	put_disk(vb->disk);
	blk_mq_free_tag_set(&vb->tag_set);
}

/* Name the disk and add it, with vblk's sysfs attributes (vblk_sysfs.c). */
int vblk_add_disk(struct vblk_dev *vb)
{
	int err;

	mutex_lock(&vblk_name_lock);
	err = vblk_pick_name(vb);
	if (!err) {
		vb->disk->private_data = vb;
		err = device_add_disk(vblk_dev_of(vb), vb->disk, vblk_attr_groups);
		if (err) {
			vb->disk->private_data = NULL;
			ida_free(&vblk_index_ida, vb->index);
		}
	}
	mutex_unlock(&vblk_name_lock);
	return err;
}

/* Module exit: every disk is gone (each held the module), the IDA is empty. */
void vblk_disk_exit(void)
{
	ida_destroy(&vblk_index_ida);
}
