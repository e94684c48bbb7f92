/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unit tests' checks: a case is a bool function that returns false
 * through these with the reason in why[]; report() prints its line.
 */
#ifndef VBLK_UNIT_CHECK_H
#define VBLK_UNIT_CHECK_H

#include <stdbool.h>
#include <stdio.h>

static char why[2048];
static int n_pass, n_fail;

#define FAILF(...)							\
	do {								\
		snprintf(why, sizeof(why), __VA_ARGS__);		\
		return false;						\
	} while (0)

#define CHECK(c)							\
	do {								\
		if (!(c))						\
			FAILF("line %d: %s", __LINE__, #c);		\
	} while (0)

#define CHECK_EQ(a, b)							\
	do {								\
		long long _a = (long long)(a), _b = (long long)(b);	\
		if (_a != _b)						\
			FAILF("line %d: %s = %lld, expected %lld",	\
			      __LINE__, #a, _a, _b);			\
	} while (0)

/* "ok - name" or "FAIL - name: reason", counted. */
static inline void report(const char *name, bool ok)
{
	if (ok) {
		n_pass++;
		printf("ok - %s\n", name);
	} else {
		n_fail++;
		printf("FAIL - %s: %s\n", name, why[0] ? why : "failed");
	}
	fflush(stdout);
	why[0] = '\0';
}

#endif /* VBLK_UNIT_CHECK_H */
