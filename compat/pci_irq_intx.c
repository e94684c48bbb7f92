// SPDX-License-Identifier: GPL-2.0
/* PCI_IRQ_LEGACY was renamed PCI_IRQ_INTX (6.8+). */
#include <linux/pci.h>
unsigned int probe(void);
unsigned int probe(void)
{
	return PCI_IRQ_INTX;
}
