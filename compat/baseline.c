// SPDX-License-Identifier: GPL-2.0
/*
 * The baseline: any kernel compiles this. If it fails, the compiler or the
 * flags are broken, and the build stops instead of writing a header that
 * says "this kernel has none of the APIs probed".
 */
#include <linux/types.h>
int probe(void);
int probe(void)
{
	return 0;
}
