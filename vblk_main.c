// SPDX-License-Identifier: GPL-2.0
/*
 * vblk: a virtio-blk driver with its own virtio transports (modern
 * virtio-pci, virtio-mmio version 2) and split virtqueues.
 *
 * This file: module init and exit, and the two bus drivers: which devices
 * they bind, and how each bus event becomes a call into the lifecycle
 * (vblk_dev.c). PCI has function reset (FLR) and error recovery (AER),
 * which pause and resume the device; virtio-mmio has neither. The files
 * and their jobs are listed at the top of include/vblk.h.
 *
 * Ownership and locking: nothing of its own; the drivers are registered at
 * init and unregistered at exit, after which the bus cores have removed
 * every device and no vblk disk is left (each open disk holds the module).
 * Each device's drvdata is its vblk_dev, set by vblk_dev_probe().
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/platform_device.h>
#include <linux/virtio_ids.h>

#include "vblk.h"
#include "vblk_compat.h"
#include "vblk_fault.h"

/* ---- PCI ----------------------------------------------------------------- */

/*
 * No MODULE_DEVICE_TABLE on purpose: vblk never loads by itself and never
 * takes a disk another driver could hold; users bind it (see README).
 */
static const struct pci_device_id vblk_pci_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1001) },
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1040 + VIRTIO_ID_BLOCK) },
	{ }
};

static int vblk_pci_tp_init(struct vblk_transport *t, void *bus_dev)
{
	return vblk_pci_init(t, bus_dev);
}

static int vblk_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int err = vblk_dev_probe(&pdev->dev, vblk_pci_tp_init, pdev);

	/* What function resets and error recoveries restore. */
	if (!err)
		pci_save_state(pdev);
	return err;
}

static void vblk_pci_remove(struct pci_dev *pdev)
{
	vblk_dev_remove(pci_get_drvdata(pdev));
}

/* Power off or kexec: the device must stop touching memory, I/O fails. */
static void vblk_pci_shutdown(struct pci_dev *pdev)
{
	vblk_dev_kill(pci_get_drvdata(pdev), NULL);
}

static void vblk_reset_prepare(struct pci_dev *pdev)
{
	vblk_dev_pause(pci_get_drvdata(pdev));
}

static void vblk_reset_done(struct pci_dev *pdev)
{
	vblk_dev_unpause(pci_get_drvdata(pdev), "function reset");
}

static pci_ers_result_t vblk_error_detected(struct pci_dev *pdev,
					    pci_channel_state_t state)
{
	struct vblk_dev *vb = pci_get_drvdata(pdev);

	switch (state) {
	case pci_channel_io_normal:
		/* Non-fatal: the link works; nothing of the device was lost. */
		return PCI_ERS_RESULT_CAN_RECOVER;
	case pci_channel_io_perm_failure:
		vblk_dev_kill(vb, "permanent PCI failure");
		return PCI_ERS_RESULT_DISCONNECT;
	default:
		vblk_dev_pause(vb);
		return PCI_ERS_RESULT_NEED_RESET;
	}
}

/*
 * pci_restore_state() uses the saved state up (it clears state_saved):
 * save it again, or a second error recovery would restore nothing.
 */
static pci_ers_result_t vblk_slot_reset(struct pci_dev *pdev)
{
	struct vblk_dev *vb = pci_get_drvdata(pdev);

	if (vblk_fault_slot_reset_fails(&vb->fault))
		return PCI_ERS_RESULT_DISCONNECT;
	pci_restore_state(pdev);
	pci_save_state(pdev);
	return PCI_ERS_RESULT_RECOVERED;
}

static void vblk_error_resume(struct pci_dev *pdev)
{
	vblk_dev_unpause(pci_get_drvdata(pdev), "PCI error recovery");
}

static const struct pci_error_handlers vblk_err_handlers = {
	.error_detected	= vblk_error_detected,
	.slot_reset	= vblk_slot_reset,
	.resume		= vblk_error_resume,
	.reset_prepare	= vblk_reset_prepare,
	.reset_done	= vblk_reset_done,
};

/* ---- system sleep, either bus ---------------------------------------------- */

static int vblk_pm_suspend(struct device *dev)
{
	vblk_dev_pause(dev_get_drvdata(dev));
	return 0;
}

static int vblk_pm_resume(struct device *dev)
{
	return vblk_dev_unpause(dev_get_drvdata(dev), "sleep");
}

static const struct dev_pm_ops vblk_pm_ops = {
	SET_SYSTEM_SLEEP_PM_OPS(vblk_pm_suspend, vblk_pm_resume)
};

static struct pci_driver vblk_pci_driver = {
	.name		= VBLK_NAME,
	.id_table	= vblk_pci_ids,
	.probe		= vblk_pci_probe,
	.remove		= vblk_pci_remove,
	.shutdown	= vblk_pci_shutdown,
	.err_handler	= &vblk_err_handlers,
	.driver.pm	= &vblk_pm_ops,
};

/* ---- virtio-mmio platform devices ------------------------------------------ */

static int vblk_mmio_tp_init(struct vblk_transport *t, void *bus_dev)
{
	return vblk_mmio_init(t, bus_dev);
}

static int vblk_mmio_probe(struct platform_device *pdev)
{
	return vblk_dev_probe(&pdev->dev, vblk_mmio_tp_init, pdev);
}

static VBLK_PLATFORM_REMOVE_T vblk_mmio_remove(struct platform_device *pdev)
{
	vblk_dev_remove(platform_get_drvdata(pdev));
	return VBLK_PLATFORM_REMOVE_RET;
}

static void vblk_mmio_shutdown(struct platform_device *pdev)
{
	struct vblk_dev *vb = platform_get_drvdata(pdev);

	if (vb)
		vblk_dev_kill(vb, NULL);
}

/*
 * No match table, on purpose: a virtio-mmio slot (ACPI LNRO0005, device
 * tree "virtio,mmio") may hold any virtio device, and virtio-mmio binds
 * them all; vblk takes one only when asked through driver_override
 * (scripts/vblk-bind), and refuses any but a block device.
 */
static struct platform_driver vblk_mmio_driver = {
	.driver = {
		.name	= VBLK_NAME,
		.pm	= &vblk_pm_ops,
	},
	.probe		= vblk_mmio_probe,
	.remove		= vblk_mmio_remove,
	.shutdown	= vblk_mmio_shutdown,
};

static int __init vblk_init(void)
{
	int err;

	vblk_fault_announce();
	err = vblk_pt_init();
	if (err)
		return err;
	err = platform_driver_register(&vblk_mmio_driver);
	if (err)
		goto err_pt;
	err = pci_register_driver(&vblk_pci_driver);
	if (err)
		goto err_mmio;
	return 0;

err_mmio:
	platform_driver_unregister(&vblk_mmio_driver);
err_pt:
	vblk_pt_exit();
	return err;
}

static void __exit vblk_exit(void)
{
	pci_unregister_driver(&vblk_pci_driver);
	platform_driver_unregister(&vblk_mmio_driver);
	vblk_pt_exit();
	vblk_disk_exit();
}

module_init(vblk_init);
module_exit(vblk_exit);
MODULE_DESCRIPTION("virtio-blk driver with its own virtio-pci and virtio-mmio transports and split rings");
MODULE_LICENSE("GPL");
