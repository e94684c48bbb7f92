// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for vblk_tp_check.c, the transport's pure decisions:
 * the virtio-mmio identity check against QEMU's values and hostile ones,
 * the config read under the generation counter against fake devices (one
 * that holds still, one that changes on every read, one that settles,
 * one caught mid-copy), and feature acceptance for every kind of offer.
 * Then a smoke fuzzer: random register triples, random offers and
 * parameters, random config-change counts and bounds, each checked
 * against an oracle written separately here.
 *
 *   ./test_tp [N]      N fuzz iterations (default 200000, fixed seed)
 *
 * Output: "ok - name" / "FAIL - name: reason" per case, then
 * "N passed, N failed"; non-zero exit status on failure.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "vblk_tp_check.h"
#include "tp_uapi.h"
#include "check.h"

#define F(b)		BIT_ULL(b)
#define LEGACY_HINT	"-global virtio-mmio.force-legacy=false"

/* ---- the oracle ------------------------------------------------------ */

/*
 * The features vblk drives, bit by bit, written here apart from
 * vblk_wanted_features(): what include/vblk_tp_check.h promises.
 */
static const unsigned int always_wanted[] = {
	1, 2, 4, 5, 6, 9, 10, 11, 12, 13, 14, 16,	/* block features */
	32, 33, 36,	/* VERSION_1, ACCESS_PLATFORM, ORDER_PLATFORM */
};

static uint64_t oracle_wanted(bool indirect, bool event_idx)
{
	uint64_t f = 0;
	size_t i;

	for (i = 0; i < sizeof(always_wanted) / sizeof(always_wanted[0]); i++)
		f |= 1ULL << always_wanted[i];
	if (indirect)
		f |= 1ULL << 28;
	if (event_idx)
		f |= 1ULL << 29;
	return f;
}

/* The verdict and the exact message vblk_mmio.c printed before the split. */
static enum vblk_mmio_id_verdict oracle_id(uint32_t magic, uint32_t version,
					   uint32_t id, char *msg, size_t len)
{
	if (magic != 0x74726976) {
		snprintf(msg, len, "not a virtio-mmio device (magic %#x)", magic);
		return VBLK_MMIO_ID_BAD_MAGIC;
	}
	if (version == 1) {
		snprintf(msg, len, "virtio-mmio version 1 (legacy) is not supported: give QEMU " LEGACY_HINT);
		return VBLK_MMIO_ID_LEGACY;
	}
	if (version != 2) {
		snprintf(msg, len, "unknown virtio-mmio version %u", version);
		return VBLK_MMIO_ID_BAD_VERSION;
	}
	if (id != 2) {
		snprintf(msg, len, "virtio device id %u is not a block device", id);
		return VBLK_MMIO_ID_NOT_BLOCK;
	}
	msg[0] = '\0';
	return VBLK_MMIO_ID_OK;
}

/* One identity against the oracle, verdict and message both. */
static bool id_matches(uint32_t magic, uint32_t version, uint32_t id)
{
	char reason[VBLK_MMIO_WHY_LEN], want[512];
	enum vblk_mmio_id_verdict v, w;

	memset(reason, 0, sizeof(reason));
	v = vblk_mmio_id_check(magic, version, id, reason, sizeof(reason));
	w = oracle_id(magic, version, id, want, sizeof(want));
	if (v != w)
		FAILF("magic %#x version %u id %u: verdict %d, expected %d",
		      magic, version, id, v, w);
	if (v != VBLK_MMIO_ID_OK && strcmp(reason, want))
		FAILF("magic %#x version %u id %u: message \"%s\", expected \"%s\"",
		      magic, version, id, reason, want);
	return true;
}

/* ---- mmio identity --------------------------------------------------- */

static bool t_mmio_qemu(void)
{
	char reason[VBLK_MMIO_WHY_LEN];

	/* QEMU's virtio-mmio with force-legacy=false, and Firecracker. */
	CHECK_EQ(vblk_mmio_id_check(0x74726976, 2, 2, reason, sizeof(reason)),
		 VBLK_MMIO_ID_OK);
	/* QEMU's default: version 1. The guest test greps the option. */
	CHECK_EQ(vblk_mmio_id_check(0x74726976, 1, 2, reason, sizeof(reason)),
		 VBLK_MMIO_ID_LEGACY);
	CHECK(strstr(reason, LEGACY_HINT));
	CHECK(!strcmp(reason, "virtio-mmio version 1 (legacy) is not supported: give QEMU -global virtio-mmio.force-legacy=false"));
	/* microvm's and virt's empty slots: the magic, version 2, id 0. */
	CHECK_EQ(vblk_mmio_id_check(0x74726976, 2, 0, reason, sizeof(reason)),
		 VBLK_MMIO_ID_NOT_BLOCK);
	CHECK(!strcmp(reason, "virtio device id 0 is not a block device"));
	/* A network device (id 1) in the next slot. */
	CHECK_EQ(vblk_mmio_id_check(0x74726976, 2, 1, reason, sizeof(reason)),
		 VBLK_MMIO_ID_NOT_BLOCK);
	/* A legacy empty slot is refused for its version first. */
	CHECK_EQ(vblk_mmio_id_check(0x74726976, 1, 0, reason, sizeof(reason)),
		 VBLK_MMIO_ID_LEGACY);
	return true;
}

/* Every combination of edge values: 0, 1, 2, 3, all-ones and near misses. */
static bool t_mmio_edges(void)
{
	static const uint32_t magics[] = {
		0, 1, 2, 3, 0xffffffff, 0x74726976, 0x74726975, 0x74726977,
		0x76697274 /* byte-swapped */, 0x74726976 ^ 0x80000000,
	};
	static const uint32_t vals[] = { 0, 1, 2, 3, 0x7fffffff, 0x80000000,
					 0xfffffffe, 0xffffffff };
	size_t m, v, i;
	int ok = 0;

	for (m = 0; m < sizeof(magics) / sizeof(magics[0]); m++)
		for (v = 0; v < sizeof(vals) / sizeof(vals[0]); v++)
			for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
				if (!id_matches(magics[m], vals[v], vals[i]))
					return false;
				ok += magics[m] == 0x74726976 && vals[v] == 2 &&
				      vals[i] == 2;
			}
	CHECK_EQ(ok, 1);
	return true;
}

/* The longest messages fit; a short buffer is cut, never overrun. */
static bool t_mmio_why_len(void)
{
	char reason[VBLK_MMIO_WHY_LEN], small[8];
	size_t n;

	vblk_mmio_id_check(0xffffffff, 2, 2, reason, sizeof(reason));
	CHECK(!strcmp(reason, "not a virtio-mmio device (magic 0xffffffff)"));
	vblk_mmio_id_check(0x74726976, 0xffffffff, 2, reason, sizeof(reason));
	CHECK(!strcmp(reason, "unknown virtio-mmio version 4294967295"));
	vblk_mmio_id_check(0x74726976, 2, 0xffffffff, reason, sizeof(reason));
	CHECK(!strcmp(reason, "virtio device id 4294967295 is not a block device"));
	vblk_mmio_id_check(0x74726976, 1, 2, reason, sizeof(reason));
	n = strlen(reason);
	CHECK(n + 1 < sizeof(reason));
	memset(small, 'x', sizeof(small));
	CHECK_EQ(vblk_mmio_id_check(0x74726976, 1, 2, small, sizeof(small)),
		 VBLK_MMIO_ID_LEGACY);
	CHECK_EQ(strlen(small), sizeof(small) - 1);
	return true;
}

/* ---- config reads ---------------------------------------------------- */

/*
 * A fake device's config: a 64-bit field read as two 32-bit halves, as
 * vblk_config_copy() reads one. changes_left config changes are made, one
 * per copy, between the halves (the device updates the field and bumps
 * the generation), so a copy during a change is torn.
 */
struct fake_cfg {
	uint32_t gen;
	uint64_t value;
	uint64_t buf;			/* the driver's copy */
	unsigned int changes_left;
	bool bump_every_read;		/* generation never the same twice */
	unsigned int gen_reads, copies;
};

static uint32_t fake_gen(void *ctx)
{
	struct fake_cfg *c = ctx;

	c->gen_reads++;
	if (c->bump_every_read)
		return c->gen++;
	return c->gen;
}

static void fake_copy(void *ctx)
{
	struct fake_cfg *c = ctx;
	uint32_t lo = (uint32_t)c->value;

	c->copies++;
	if (c->changes_left) {
		c->changes_left--;
		c->value += 0x100000001ULL;
		c->gen++;
	}
	c->buf = (uint64_t)(c->value >> 32) << 32 | lo;
}

static const struct vblk_cfg_reader fake_reader = {
	.generation = fake_gen,
	.copy = fake_copy,
};

static bool t_cfg_stable(void)
{
	struct fake_cfg c = { .gen = 7, .value = 0x1122334455667788ULL };

	CHECK_EQ(vblk_cfg_read_stable(&fake_reader, &c, VBLK_CONFIG_RETRIES), 0);
	CHECK_EQ(c.copies, 1);
	CHECK_EQ(c.gen_reads, 2);
	CHECK(c.buf == 0x1122334455667788ULL);
	return true;
}

/* A generation that changes on every read: -EIO after exactly the bound. */
static bool t_cfg_never_settles(void)
{
	unsigned int bound;

	for (bound = 0; bound <= VBLK_CONFIG_RETRIES + 1; bound++) {
		struct fake_cfg c = { .bump_every_read = true };

		CHECK_EQ(vblk_cfg_read_stable(&fake_reader, &c, bound), -EIO);
		CHECK_EQ(c.copies, bound);
		CHECK_EQ(c.gen_reads, 2 * bound);
	}
	return true;
}

/* k < bound changes: 0 with the last copy; bound changes: -EIO. */
static bool t_cfg_settles(void)
{
	unsigned int k;

	for (k = 0; k <= VBLK_CONFIG_RETRIES; k++) {
		struct fake_cfg c = { .gen = 0xfffffff0, .changes_left = k };
		int err = vblk_cfg_read_stable(&fake_reader, &c,
					       VBLK_CONFIG_RETRIES);

		if (k < VBLK_CONFIG_RETRIES) {
			CHECK_EQ(err, 0);
			CHECK_EQ(c.copies, k + 1);
			CHECK(c.buf == c.value);
			CHECK(c.buf == k * 0x100000001ULL);
		} else {
			CHECK_EQ(err, -EIO);
			CHECK_EQ(c.copies, VBLK_CONFIG_RETRIES);
		}
	}
	return true;
}

/* A change between the halves is caught: the torn copy is not returned. */
static bool t_cfg_torn(void)
{
	struct fake_cfg c = { .value = 0x00000001ffffffffULL, .changes_left = 1 };

	CHECK_EQ(vblk_cfg_read_stable(&fake_reader, &c, VBLK_CONFIG_RETRIES), 0);
	CHECK_EQ(c.copies, 2);
	CHECK(c.value == 0x0000000300000000ULL);
	CHECK(c.buf == c.value);
	/* What one unchecked copy would have given: old low, new high. */
	CHECK(((uint64_t)3 << 32 | 0xffffffff) != c.value);
	return true;
}

/* A generation that wraps from all-ones to 0 is a change too. */
static bool t_cfg_gen_wraps(void)
{
	struct fake_cfg c = { .gen = 0xffffffff, .changes_left = 1 };

	CHECK_EQ(vblk_cfg_read_stable(&fake_reader, &c, VBLK_CONFIG_RETRIES), 0);
	CHECK_EQ(c.gen, 0);
	CHECK_EQ(c.copies, 2);
	return true;
}

/* ---- features -------------------------------------------------------- */

/* The numbers this header uses for the host build are the uapi's. */
static bool t_feature_numbers(void)
{
	static const struct tp_uapi_bit ours[] = {
#define B(n)	{ #n, n }
		B(VIRTIO_ID_BLOCK), B(VIRTIO_BLK_F_SIZE_MAX),
		B(VIRTIO_BLK_F_SEG_MAX), B(VIRTIO_BLK_F_GEOMETRY),
		B(VIRTIO_BLK_F_RO), B(VIRTIO_BLK_F_BLK_SIZE),
		B(VIRTIO_BLK_F_FLUSH), B(VIRTIO_BLK_F_TOPOLOGY),
		B(VIRTIO_BLK_F_CONFIG_WCE), B(VIRTIO_BLK_F_MQ),
		B(VIRTIO_BLK_F_DISCARD), B(VIRTIO_BLK_F_WRITE_ZEROES),
		B(VIRTIO_BLK_F_SECURE_ERASE), B(VIRTIO_BLK_F_ZONED),
		B(VIRTIO_RING_F_INDIRECT_DESC), B(VIRTIO_RING_F_EVENT_IDX),
		B(VIRTIO_F_VERSION_1), B(VIRTIO_F_ACCESS_PLATFORM),
		B(VIRTIO_F_ORDER_PLATFORM),
#undef B
	};
	const struct tp_uapi_bit *u;
	size_t i, found = 0;

	for (u = tp_uapi_bits; u->name; u++)
		for (i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
			if (!strcmp(u->name, ours[i].name)) {
				if (u->value != ours[i].value)
					FAILF("%s: %u here, %u in the uapi header",
					      u->name, ours[i].value, u->value);
				found++;
			}
	/* All but ZONED, which the host's headers may predate. */
	CHECK(found >= sizeof(ours) / sizeof(ours[0]) - 1);
	CHECK_EQ(VIRTIO_BLK_F_ZONED, 17);
	return true;
}

/*
 * QEMU's virtio-blk-pci offer with its defaults (num-queues > 1), as
 * virtio_blk_get_features() and the common virtio bits make it: the
 * legacy NOTIFY_ON_EMPTY (24) and ANY_LAYOUT (27) and RING_RESET (40),
 * none of which vblk drives.
 */
static const uint64_t qemu_offer =
	F(2) | F(4) | F(6) | F(9) | F(10) | F(11) | F(12) | F(13) | F(14) |
	F(24) | F(27) | F(28) | F(29) | F(32) | F(40);

static bool t_features_qemu(void)
{
	const char *reason = NULL;
	uint64_t acc = 0;

	CHECK_EQ(vblk_accept_features(qemu_offer, true, true, &acc, &reason), 0);
	CHECK(acc == (qemu_offer & ~(F(24) | F(27) | F(40))));
	CHECK(!reason);
	/* indirect=0 event_idx=0: the ring features stay off. */
	CHECK_EQ(vblk_accept_features(qemu_offer, false, false, &acc, &reason), 0);
	CHECK(acc == (qemu_offer & ~(F(24) | F(27) | F(40) | F(28) | F(29))));
	/* Firecracker's profile: no indirect descriptors offered. */
	CHECK_EQ(vblk_accept_features(F(32) | F(29) | F(9) | F(5), true, true,
				      &acc, &reason), 0);
	CHECK(acc == (F(32) | F(29) | F(9) | F(5)));
	return true;
}

static bool t_features_all_and_none(void)
{
	const char *reason = NULL;
	uint64_t acc;
	int p;

	for (p = 0; p < 4; p++) {
		bool ind = p & 1, ev = p & 2;

		acc = 0;
		CHECK_EQ(vblk_accept_features(~0ULL, ind, ev, &acc, &reason), 0);
		CHECK(acc == oracle_wanted(ind, ev));
		CHECK(acc == vblk_wanted_features(ind, ev));
		CHECK(!(acc & F(VIRTIO_BLK_F_ZONED)));

		acc = 0x5a5a;
		CHECK_EQ(vblk_accept_features(0, ind, ev, &acc, &reason), -ENODEV);
		CHECK(acc == 0x5a5a);
		CHECK(reason && !strcmp(reason, "device has no VIRTIO_F_VERSION_1: legacy devices are not supported"));
		reason = NULL;
	}
	/* Only VERSION_1: a device with nothing optional is still driven. */
	CHECK_EQ(vblk_accept_features(F(32), true, true, &acc, &reason), 0);
	CHECK(acc == F(32));
	return true;
}

static bool t_features_no_version_1(void)
{
	const char *reason = NULL;
	uint64_t acc = 0;

	CHECK_EQ(vblk_accept_features(~0ULL & ~F(32), true, true, &acc, &reason),
		 -ENODEV);
	CHECK(reason && strstr(reason, "VIRTIO_F_VERSION_1"));
	CHECK_EQ(vblk_accept_features(qemu_offer & ~F(32), true, true, &acc,
				      &reason), -ENODEV);
	/* A transitional device's legacy-only bits do not stand in for it. */
	CHECK_EQ(vblk_accept_features(F(24) | F(27) | F(33), true, true, &acc,
				      &reason), -ENODEV);
	return true;
}

static bool t_features_zoned(void)
{
	const char *reason = NULL;
	uint64_t acc = 0;

	CHECK_EQ(vblk_accept_features(qemu_offer | F(17), true, true, &acc,
				      &reason), 0);
	CHECK(!(acc & F(17)));
	CHECK(acc == (qemu_offer & ~(F(24) | F(27) | F(40))));
	CHECK(!(vblk_wanted_features(true, true) & F(17)));
	return true;
}

/* ORDER_PLATFORM and ACCESS_PLATFORM are taken whenever offered. */
static bool t_features_platform(void)
{
	const char *reason = NULL;
	uint64_t acc = 0;

	CHECK_EQ(vblk_accept_features(F(32) | F(36), false, false, &acc, &reason), 0);
	CHECK(acc == (F(32) | F(36)));
	CHECK_EQ(vblk_accept_features(F(32) | F(33), false, false, &acc, &reason), 0);
	CHECK(acc == (F(32) | F(33)));
	CHECK_EQ(vblk_accept_features(qemu_offer | F(33) | F(36), true, true,
				      &acc, &reason), 0);
	CHECK((acc & (F(33) | F(36))) == (F(33) | F(36)));

	/* An encrypted guest needs ACCESS_PLATFORM; others do not. */
	CHECK_EQ(vblk_platform_features_check(F(32), false, &reason), 0);
	CHECK_EQ(vblk_platform_features_check(F(32) | F(33), false, &reason), 0);
	CHECK_EQ(vblk_platform_features_check(F(32) | F(33), true, &reason), 0);
	reason = NULL;
	CHECK_EQ(vblk_platform_features_check(F(32) | F(36), true, &reason),
		 -ENODEV);
	CHECK(reason && !strcmp(reason, "guest memory is encrypted and the device lacks VIRTIO_F_ACCESS_PLATFORM: refused"));
	CHECK_EQ(vblk_platform_features_check(~0ULL & ~F(33), true, &reason),
		 -ENODEV);
	return true;
}

/* ---- smoke fuzzer ---------------------------------------------------- */

static int fuzz_n = 200000;
static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Mostly random, often an edge: edges are where checks go wrong. */
static uint32_t rnd_u32(uint32_t interesting)
{
	static const uint32_t edges[] = { 0, 1, 2, 3, 0xffffffff, 0x80000000 };

	switch (rnd() % 4) {
	case 0:
		return interesting;
	case 1:
		return edges[rnd() % (sizeof(edges) / sizeof(edges[0]))];
	default:
		return (uint32_t)rnd();
	}
}

static bool t_fuzz_identify(void)
{
	int i, counts[5] = { 0 };

	for (i = 0; i < fuzz_n; i++) {
		uint32_t magic = rnd_u32(0x74726976);
		uint32_t version = rnd_u32(2);
		uint32_t id = rnd_u32(2);
		char reason[VBLK_MMIO_WHY_LEN];

		if (!id_matches(magic, version, id))
			return false;
		counts[vblk_mmio_id_check(magic, version, id, reason, sizeof(reason))]++;
	}
	printf("# fuzz identify: %d triples: %d ok, %d magic, %d legacy, %d version, %d id\n",
	       fuzz_n, counts[0], counts[1], counts[2], counts[3], counts[4]);
	CHECK(counts[0] && counts[1] && counts[2] && counts[3] && counts[4]);
	return true;
}

static bool t_fuzz_features(void)
{
	int i, accepted = 0, refused = 0;

	for (i = 0; i < fuzz_n; i++) {
		/* Dense, sparse, or QEMU's offer with bits flipped. */
		uint64_t offered = rnd();
		bool ind = rnd() & 1, ev = rnd() & 1;
		const char *reason = NULL;
		uint64_t acc = 0xdeadbeef, wanted = oracle_wanted(ind, ev);
		int err;

		if (i % 3 == 1)
			offered &= rnd() & rnd();
		else if (i % 3 == 2)
			offered = qemu_offer ^ F(rnd() % 64);
		err = vblk_accept_features(offered, ind, ev, &acc, &reason);
		if (!(offered & F(32)) != (err != 0))
			FAILF("offer %#" PRIx64 ": err %d", offered, err);
		if (err) {
			refused++;
			if (err != -ENODEV || !reason || acc != 0xdeadbeef)
				FAILF("offer %#" PRIx64 ": refusal err %d reason %p",
				      offered, err, (const void *)reason);
			continue;
		}
		accepted++;
		if (acc & ~(offered & wanted))
			FAILF("offer %#" PRIx64 ": accepted %#" PRIx64
			      " beyond offered & wanted", offered, acc);
		if (acc != (offered & wanted))
			FAILF("offer %#" PRIx64 ": accepted %#" PRIx64
			      ", expected %#" PRIx64, offered, acc,
			      offered & wanted);
		if (acc & F(VIRTIO_BLK_F_ZONED))
			FAILF("offer %#" PRIx64 ": ZONED accepted", offered);
		if (!(acc & F(32)))
			FAILF("offer %#" PRIx64 ": VERSION_1 dropped", offered);
	}
	printf("# fuzz features: %d offers: %d accepted, %d refused\n",
	       fuzz_n, accepted, refused);
	CHECK(accepted > fuzz_n / 10 && refused > fuzz_n / 10);
	return true;
}

/* Random change counts and bounds: 0 iff the changes stop in time. */
static bool t_fuzz_config(void)
{
	int i;

	for (i = 0; i < fuzz_n / 10; i++) {
		unsigned int bound = rnd() % 40, changes = rnd() % 40;
		struct fake_cfg c = { .gen = (uint32_t)rnd(), .value = rnd(),
				      .changes_left = changes };
		int err = vblk_cfg_read_stable(&fake_reader, &c, bound);
		unsigned int want_copies = changes < bound ? changes + 1 : bound;

		if (err != (changes < bound ? 0 : -EIO) ||
		    c.copies != want_copies || (!err && c.buf != c.value))
			FAILF("bound %u changes %u: err %d, %u copies",
			      bound, changes, err, c.copies);
	}
	return true;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		fuzz_n = atoi(argv[1]);
	report("tp: mmio identity: QEMU's and Firecracker's values, empty slots",
	       t_mmio_qemu());
	report("tp: mmio identity: every magic/version/id edge", t_mmio_edges());
	report("tp: mmio identity: messages fit, short buffers cut",
	       t_mmio_why_len());
	report("tp: config read: a still generation, one copy", t_cfg_stable());
	report("tp: config read: generation changing on every read: EIO after exactly the bound",
	       t_cfg_never_settles());
	report("tp: config read: settles after k < bound changes, last copy kept",
	       t_cfg_settles());
	report("tp: config read: torn 64-bit copy detected and re-read",
	       t_cfg_torn());
	report("tp: config read: generation wrapping to 0", t_cfg_gen_wraps());
	report("tp: features: bit numbers as the uapi headers'",
	       t_feature_numbers());
	report("tp: features: QEMU's and Firecracker's offers", t_features_qemu());
	report("tp: features: every bit set, none set", t_features_all_and_none());
	report("tp: features: no VERSION_1 refused", t_features_no_version_1());
	report("tp: features: ZONED offered, never accepted", t_features_zoned());
	report("tp: features: ORDER_PLATFORM and ACCESS_PLATFORM pass through",
	       t_features_platform());
	report("tp: fuzz: random identities against the oracle",
	       t_fuzz_identify());
	report("tp: fuzz: random offers keep the invariants", t_fuzz_features());
	report("tp: fuzz: random config changes and bounds", t_fuzz_config());
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
