/* SPDX-License-Identifier: GPL-2.0 */
/* The host uapi headers' virtio numbers, by name (tp_uapi.c). */
#ifndef VBLK_UNIT_TP_UAPI_H
#define VBLK_UNIT_TP_UAPI_H

struct tp_uapi_bit {
	const char *name;	/* NULL ends the table */
	unsigned int value;
};

extern const struct tp_uapi_bit tp_uapi_bits[];

#endif /* VBLK_UNIT_TP_UAPI_H */
