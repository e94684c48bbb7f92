/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace stand-ins for the few kernel facilities vblk_ring.c and
 * vblk_cmd.c use, so the same code builds in tests/unit (unit tests, fuzz
 * targets). Included by vblk_ring.h and vblk_cmd.h only when __KERNEL__ is
 * not defined.
 *
 * The __le types are plain integers here: the endianness checking is done
 * by sparse on the kernel build, the host build only needs the conversions
 * to be right (they are no-ops on little-endian hosts).
 */
#ifndef VBLK_RING_USER_H
#define VBLK_RING_USER_H

#ifdef __KERNEL__
#error "vblk_ring_user.h is for userspace builds only"
#endif

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

#define U32_MAX		UINT32_MAX

typedef uint16_t __le16;
typedef uint32_t __le32;
typedef uint64_t __le64;

#define cpu_to_le16(x)	((__le16)htole16(x))
#define cpu_to_le32(x)	((__le32)htole32(x))
#define cpu_to_le64(x)	((__le64)htole64(x))
#define le16_to_cpu(x)	((u16)le16toh(x))
#define le32_to_cpu(x)	((u32)le32toh(x))
#define le64_to_cpu(x)	((u64)le64toh(x))

/*
 * One access of exactly the declared width, never torn, merged or
 * re-read by the compiler: the other side (a test's fake device, or a
 * fuzzer) may change the memory between two reads.
 */
#define READ_ONCE(x)	(*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, val) \
	do { *(volatile __typeof__(x) *)&(x) = (val); } while (0)

/* Like the kernel's virt_*(): ordering against another CPU, not MMIO. */
#define vblk_mb()	__atomic_thread_fence(__ATOMIC_SEQ_CST)
#define vblk_rmb()	__atomic_thread_fence(__ATOMIC_ACQUIRE)
#define vblk_wmb()	__atomic_thread_fence(__ATOMIC_RELEASE)

/*
 * The platform (DMA) barriers of VIRTIO_F_ORDER_PLATFORM: the same fences
 * here, and counted, so that the unit tests see which kind a ring used.
 */
extern unsigned long vblk_test_platform_barriers;
#define vblk_platform_mb() \
	do { vblk_test_platform_barriers++; vblk_mb(); } while (0)
#define vblk_platform_rmb() \
	do { vblk_test_platform_barriers++; vblk_rmb(); } while (0)
#define vblk_platform_wmb() \
	do { vblk_test_platform_barriers++; vblk_wmb(); } while (0)

#endif /* VBLK_RING_USER_H */
