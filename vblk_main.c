// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: a virtio-blk driver with its own virtio-pci transport and split
 * virtqueues.
 *
 * This file: module init and exit, and the PCI driver: which functions it
 * binds and the lifecycle callbacks (vblk_dev.c) the PCI core calls. The
 * files and their jobs are listed at the top of include/vblk.h.
 *
 * Ownership and locking: nothing of its own; the driver structure is
 * registered at init and unregistered at exit, after which the PCI core
 * has removed every device and no vblk disk is left (each open disk holds
 * the module).
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/virtio_ids.h>

#include "vblk.h"
#include "vblk_fault.h"

/*
 * No MODULE_DEVICE_TABLE on purpose: vblk never loads by itself and never
 * takes a disk another driver could hold; users bind it (see README).
 */
static const struct pci_device_id vblk_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1001) },
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1040 + VIRTIO_ID_BLOCK) },
	{ }
};

static struct pci_driver vblk_driver = {
	.name		= VBLK_NAME,
	.id_table	= vblk_ids,
	.probe		= vblk_probe,
	.remove		= vblk_remove,
	.shutdown	= vblk_shutdown,
	.err_handler	= &vblk_err_handlers,
	.driver.pm	= &vblk_pm_ops,
};

static int __init vblk_init(void)
{
	vblk_fault_announce();
	return pci_register_driver(&vblk_driver);
}

static void __exit vblk_exit(void)
{
	pci_unregister_driver(&vblk_driver);
	vblk_disk_exit();
}

module_init(vblk_init);
module_exit(vblk_exit);
MODULE_DESCRIPTION("virtio-blk driver with its own virtio-pci transport and split rings");
MODULE_LICENSE("GPL");
