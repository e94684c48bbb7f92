// SPDX-License-Identifier: GPL-2.0
/*
 * vblk-ptbench: one io_uring client for vblk's passthrough char device
 * (/dev/<disk>c0, IORING_OP_URING_CMD with struct vblk_pt_cmd) and for any
 * block device (O_DIRECT, IORING_OP_READ/WRITE or READ_FIXED/WRITE_FIXED),
 * with the same settings, so that the paths can be compared with one
 * client; in the spirit of fio's t/io_uring. It also sends random, hostile
 * passthrough commands for the tests (--random-cmds), and never crashes on
 * what comes back. Usage: vblk-ptbench --help; docs/passthrough.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <liburing.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "uapi/vblk_pt.h"

struct opts {
	const char *path;
	bool write, rand, fixed, regfile, iopoll, verify;
	unsigned int bs, qd, batch, runtime;
	uint64_t size;		/* bytes of the target used; 0: all */
	long random_cmds;
	unsigned int seed;
	const char *cmd;	/* --cmd OP[:SECTOR[:LEN[:FLAGS]]] */
};

struct bench {
	struct opts o;
	struct io_uring ring;
	int fd, ufd;		/* ufd: the fd or its registered index */
	bool pt;		/* a char device: passthrough */
	unsigned int lbs;
	uint64_t blocks;	/* of bs in the range used */
	uint64_t next;		/* sequential: the next block */
	void **bufs;
	uint64_t *slot_blk;	/* the block each slot's I/O is on */
	uint64_t done, errors, verify_fail;
	int first_err;
};

static void usage(void)
{
	fputs("usage: vblk-ptbench [options] TARGET\n"
	      "  TARGET is /dev/<disk>c0 (vblk passthrough) or a block device\n"
	      "  --rw read|write|randread|randwrite   (default randread)\n"
	      "  --bs BYTES       block size (default 4096)\n"
	      "  --qd N           queue depth (default 1)\n"
	      "  --batch N        submit and reap in batches of N (default 1)\n"
	      "  --fixed          registered buffers (READ/WRITE_FIXED, or\n"
	      "                   IORING_URING_CMD_FIXED for passthrough)\n"
	      "  --regfile        registered file\n"
	      "  --iopoll         IORING_SETUP_IOPOLL (vblk needs poll_queues)\n"
	      "  --runtime S      seconds (default 5)\n"
	      "  --size BYTES     use the first BYTES of the target (default all)\n"
	      "  --verify         write: a pattern of each block's number;\n"
	      "                   read: check that pattern\n"
	      "  --random-cmds N  send N random passthrough commands, count the\n"
	      "                   answers by errno (with --seed S)\n"
	      "  --cmd OP[:SECTOR[:LEN[:FLAGS]]]  one passthrough command\n"
	      "                   (OP: read write flush discard zeroes id;\n"
	      "                   read and write move LEN bytes of a buffer,\n"
	      "                   write's holding --verify's pattern); prints\n"
	      "                   \"cmd OP res N\" or \"cmd OP error ENAME\",\n"
	      "                   exit status 0 or 3 (refused)\n", stderr);
	exit(2);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': return v << 10;
	case 'm': case 'M': return v << 20;
	case 'g': case 'G': return v << 30;
	default: return v;
	}
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "rw", 1, 0, 'r' }, { "bs", 1, 0, 'b' }, { "qd", 1, 0, 'q' },
		{ "batch", 1, 0, 'B' }, { "fixed", 0, 0, 'F' },
		{ "regfile", 0, 0, 'R' }, { "iopoll", 0, 0, 'P' },
		{ "runtime", 1, 0, 't' }, { "size", 1, 0, 's' },
		{ "verify", 0, 0, 'V' }, { "random-cmds", 1, 0, 'X' },
		{ "seed", 1, 0, 'S' }, { "cmd", 1, 0, 'C' },
		{ "help", 0, 0, 'h' }, { 0 },
	};
	int c;

	*o = (struct opts){ .rand = true, .bs = 4096, .qd = 1, .batch = 1,
			    .runtime = 5, .seed = 1 };
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'r':
			o->write = strstr(optarg, "write") != NULL;
			o->rand = strncmp(optarg, "rand", 4) == 0;
			if (!strstr(optarg, "read") && !o->write)
				usage();
			break;
		case 'b': o->bs = parse_size(optarg); break;
		case 'q': o->qd = atoi(optarg); break;
		case 'B': o->batch = atoi(optarg); break;
		case 'F': o->fixed = true; break;
		case 'R': o->regfile = true; break;
		case 'P': o->iopoll = true; break;
		case 't': o->runtime = atoi(optarg); break;
		case 's': o->size = parse_size(optarg); break;
		case 'V': o->verify = true; break;
		case 'X': o->random_cmds = atol(optarg); break;
		case 'S': o->seed = strtoul(optarg, NULL, 0); break;
		case 'C': o->cmd = optarg; break;
		default: usage();
		}
	}
	if (optind != argc - 1 || !o->bs || !o->qd || !o->batch ||
	    o->batch > o->qd || o->bs % 512)
		usage();
	o->path = argv[optind];
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The char device's disk: /sys/class/vblk-generic/<name>/device. */
static int target_geometry(struct bench *b)
{
	char p[512];
	const char *name = strrchr(b->o.path, '/');
	unsigned long long v = 0;
	uint64_t bytes;
	FILE *f;

	name = name ? name + 1 : b->o.path;
	if (!b->pt) {
		if (ioctl(b->fd, BLKGETSIZE64, &bytes) ||
		    ioctl(b->fd, BLKSSZGET, &b->lbs))
			return -errno;
	} else {
		snprintf(p, sizeof(p), "/sys/class/vblk-generic/%s/device/size", name);
		f = fopen(p, "r");
		if (!f || fscanf(f, "%llu", &v) != 1)
			return -ENOENT;
		fclose(f);
		bytes = v * 512;
		snprintf(p, sizeof(p),
			 "/sys/class/vblk-generic/%s/device/queue/logical_block_size", name);
		f = fopen(p, "r");
		if (!f || fscanf(f, "%u", &b->lbs) != 1)
			return -ENOENT;
		fclose(f);
	}
	if (b->o.size && b->o.size < bytes)
		bytes = b->o.size;
	b->blocks = bytes / b->o.bs;
	return 0;
}

static void *alloc_buf(size_t n)
{
	void *p;

	if (posix_memalign(&p, 4096, n))
		return NULL;
	memset(p, 0, n);
	return p;
}

static void pt_prep(struct io_uring_sqe *sqe, int fd, bool regfile,
		    const struct vblk_pt_cmd *c, int buf_index)
{
	memset(sqe, 0, 2 * sizeof(*sqe));	/* an SQE128 slot */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	if (regfile)
		sqe->flags |= IOSQE_FIXED_FILE;
	sqe->cmd_op = VBLK_PT_URING_CMD_IO;
	if (buf_index >= 0) {
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = buf_index;
	}
	memcpy(sqe->cmd, c, sizeof(*c));
}

/* Each 8 bytes of a block say which block it is (offset in 512-byte units). */
static void pattern(uint64_t *p, unsigned int bytes, uint64_t blk, unsigned int bs)
{
	uint64_t first = blk * (bs / 512);
	unsigned int i;

	for (i = 0; i < bytes / 8; i++)
		p[i] = first + i / 64;
}

static bool pattern_ok(const uint64_t *p, unsigned int bytes, uint64_t blk,
		       unsigned int bs)
{
	uint64_t first = blk * (bs / 512);
	unsigned int i;

	for (i = 0; i < bytes / 8; i++)
		if (p[i] != first + i / 64)
			return false;
	return true;
}

static uint64_t rng = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t pick_block(struct bench *b)
{
	uint64_t blk;

	if (b->o.rand)
		return rnd() % b->blocks;
	blk = b->next++;
	if (b->next >= b->blocks)
		b->next = 0;
	return blk;
}

static void queue_io(struct bench *b, unsigned int slot)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
	uint64_t blk = pick_block(b);
	uint64_t off = blk * b->o.bs;
	void *buf = b->bufs[slot];

	b->slot_blk[slot] = blk;
	if (b->o.write && b->o.verify)
		pattern(buf, b->o.bs, blk, b->o.bs);
	if (b->pt) {
		struct vblk_pt_cmd c = {
			.version = VBLK_PT_VERSION,
			.op = b->o.write ? VBLK_PT_OP_WRITE : VBLK_PT_OP_READ,
			.sector = off / 512, .addr = (uintptr_t)buf,
			.len = b->o.bs,
		};

		pt_prep(sqe, b->ufd, b->o.regfile, &c, b->o.fixed ? (int)slot : -1);
	} else if (b->o.fixed) {
		if (b->o.write)
			io_uring_prep_write_fixed(sqe, b->ufd, buf, b->o.bs, off, slot);
		else
			io_uring_prep_read_fixed(sqe, b->ufd, buf, b->o.bs, off, slot);
	} else {
		if (b->o.write)
			io_uring_prep_write(sqe, b->ufd, buf, b->o.bs, off);
		else
			io_uring_prep_read(sqe, b->ufd, buf, b->o.bs, off);
	}
	if (b->o.regfile && !b->pt)
		sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data64(sqe, slot);
}

static void reap_one(struct bench *b, struct io_uring_cqe *cqe)
{
	unsigned int slot = io_uring_cqe_get_data64(cqe);

	if (cqe->res != (int)b->o.bs) {
		if (!b->errors++)
			b->first_err = cqe->res;
	} else if (!b->o.write && b->o.verify &&
		   !pattern_ok(b->bufs[slot], b->o.bs, b->slot_blk[slot], b->o.bs)) {
		if (!b->verify_fail++)
			fprintf(stderr, "verify: block %" PRIu64 " differs\n",
				b->slot_blk[slot]);
	}
	b->done++;
}

static int run_bench(struct bench *b)
{
	double t0 = now(), last = t0, t;
	uint64_t last_done = 0;
	unsigned int i, pending = 0, sec = 0;
	struct io_uring_cqe *cqe;
	unsigned int head, n;
	int ret;

	for (i = 0; i < b->o.qd; i++)
		queue_io(b, i);
	ret = io_uring_submit(&b->ring);
	if (ret < 0)
		return ret;
	for (;;) {
		ret = io_uring_submit_and_wait(&b->ring, b->o.batch);
		if (ret < 0 && ret != -EINTR)
			return ret;
		n = 0;
		io_uring_for_each_cqe(&b->ring, head, cqe) {
			unsigned int slot = io_uring_cqe_get_data64(cqe);

			reap_one(b, cqe);
			n++;
			if (b->errors)
				continue;
			queue_io(b, slot);
			pending++;
		}
		io_uring_cq_advance(&b->ring, n);
		if (b->errors) {
			fprintf(stderr, "vblk-ptbench: I/O failed: %s (%d)\n",
				strerror(-b->first_err), b->first_err);
			return b->first_err < 0 ? b->first_err : -EIO;
		}
		if (pending >= b->o.batch) {
			io_uring_submit(&b->ring);
			pending = 0;
		}
		t = now();
		if (t - last >= 1.0) {
			printf("sec %u: %.0f IOPS, %.1f MiB/s\n", ++sec,
			       (b->done - last_done) / (t - last),
			       (b->done - last_done) * b->o.bs / (t - last) / 1048576);
			fflush(stdout);
			last = t;
			last_done = b->done;
		}
		if (t - t0 >= b->o.runtime)
			break;
	}
	t = now() - t0;
	printf("summary: %s %s %s bs=%u qd=%u batch=%u fixed=%d regfile=%d iopoll=%d: %" PRIu64 " I/Os in %.2f s, %.0f IOPS, %.1f MiB/s, %" PRIu64 " verify failures\n",
	       b->pt ? "passthru" : "block", b->o.rand ? "rand" : "seq",
	       b->o.write ? "write" : "read", b->o.bs, b->o.qd, b->o.batch,
	       b->o.fixed, b->o.regfile, b->o.iopoll, b->done, t, b->done / t,
	       b->done * b->o.bs / t / 1048576, b->verify_fail);
	return b->verify_fail ? -EILSEQ : 0;
}

/* ---- random hostile commands ------------------------------------------- */

#define SCRATCH		(4u << 20)	/* followed by a PROT_NONE guard */

static uint64_t hostile_u64(uint64_t sane)
{
	switch (rnd() % 8) {
	case 0: return rnd();
	case 1: return UINT64_MAX - rnd() % 8;
	case 2: return 0;
	default: return sane;
	}
}

static void random_cmd(struct bench *b, struct vblk_pt_cmd *c, char *scratch,
		       struct io_uring_sqe *sqe)
{
	uint64_t cap = b->blocks * b->o.bs / 512;

	c->version = rnd() % 16 ? VBLK_PT_VERSION : rnd();
	c->op = rnd() % 16 ? 1 + rnd() % 6 : rnd();
	c->flags = rnd() % 8 ? 0 : rnd();
	c->ioprio = rnd() % 4 ? 0 : rnd();
	c->rsvd0 = rnd() % 32 ? 0 : rnd();
	c->rsvd1 = rnd() % 32 ? 0 : rnd();
	c->sector = hostile_u64(cap ? rnd() % cap : 0);
	c->len = rnd() % 4 ? (rnd() % 17) * 512 : rnd();
	switch (rnd() % 6) {
	case 0:
		c->addr = 0;
		break;
	case 1:
		c->addr = 0xffff888000000000ULL + (rnd() % (1u << 30)) * 512;
		break;
	case 2:
		c->addr = rnd();
		/* Never an address of this process but the scratch buffer. */
		c->addr |= 0x8000000000000000ULL;
		break;
	default:
		c->addr = (uintptr_t)scratch + (rnd() % (SCRATCH / 512)) * 512 +
			  (rnd() % 8 ? 0 : rnd() % 512);
	}
	pt_prep(sqe, b->ufd, b->o.regfile, c, -1);
	if (rnd() % 8 == 0) {
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = rnd() % 3;
		c->addr = (uintptr_t)scratch + (rnd() % 16) * 512;
		memcpy(sqe->cmd, c, sizeof(*c));
	}
	if (rnd() % 32 == 0)
		sqe->cmd_op = rnd();
}

static int run_random(struct bench *b)
{
	static long by_errno[200], ok_by_op[8];
	char *scratch;
	struct io_uring_cqe *cqe;
	long i, other = 0;
	int e;

	scratch = mmap(NULL, 2 * SCRATCH, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (scratch == MAP_FAILED || mprotect(scratch + SCRATCH, SCRATCH, PROT_NONE))
		return -errno;
	memset(scratch, 0xa5, SCRATCH);
	rng = b->o.seed * 2654435761ULL + 1;
	for (i = 0; i < b->o.random_cmds; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
		struct vblk_pt_cmd c;

		random_cmd(b, &c, scratch, sqe);
		io_uring_sqe_set_data64(sqe, c.op);
		e = io_uring_submit_and_wait(&b->ring, 1);
		if (e < 0)
			return e;
		if (io_uring_wait_cqe(&b->ring, &cqe))
			return -EIO;
		if (cqe->res >= 0)
			ok_by_op[io_uring_cqe_get_data64(cqe) & 7]++;
		else if (-cqe->res < 200)
			by_errno[-cqe->res]++;
		else
			other++;
		io_uring_cqe_seen(&b->ring, cqe);
	}
	printf("random-cmds: %ld sent, seed %u\n", b->o.random_cmds, b->o.seed);
	for (e = 1; e < 8; e++)
		if (ok_by_op[e])
			printf("  accepted op %d: %ld\n", e, ok_by_op[e]);
	for (e = 1; e < 200; e++)
		if (by_errno[e])
			printf("  refused %s (%d): %ld\n", strerrorname_np(e) ?: "?",
			       -e, by_errno[e]);
	if (other)
		printf("  refused with an errno beyond 200: %ld\n", other);
	munmap(scratch, 2 * SCRATCH);
	return 0;
}

/* ---- one command (--cmd) -------------------------------------------------- */

static const char *const op_names[] = {
	[VBLK_PT_OP_READ] = "read", [VBLK_PT_OP_WRITE] = "write",
	[VBLK_PT_OP_FLUSH] = "flush", [VBLK_PT_OP_DISCARD] = "discard",
	[VBLK_PT_OP_WRITE_ZEROES] = "zeroes", [VBLK_PT_OP_GET_ID] = "id",
};

static int run_cmd(struct bench *b)
{
	struct vblk_pt_cmd c = { .version = VBLK_PT_VERSION };
	struct io_uring_sqe *sqe;
	unsigned long long sector = 0, len = 0, flags = 0;
	struct io_uring_cqe *cqe;
	char name[16] = "";
	void *buf = NULL;
	unsigned int i;
	int ret;

	if (sscanf(b->o.cmd, "%15[a-z]:%llu:%llu:%llu", name, &sector, &len, &flags) < 1)
		usage();
	for (i = 1; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (op_names[i] && !strcmp(name, op_names[i]))
			c.op = i;
	if (!c.op || len > (1U << 30))
		usage();
	c.sector = sector;
	c.len = len;
	c.flags = flags;
	if (len && (c.op == VBLK_PT_OP_READ || c.op == VBLK_PT_OP_WRITE ||
		    c.op == VBLK_PT_OP_GET_ID)) {
		buf = alloc_buf(len);
		if (!buf)
			return -ENOMEM;
		if (c.op == VBLK_PT_OP_WRITE)
			pattern(buf, len, sector, len);
		c.addr = (uintptr_t)buf;
	}
	sqe = io_uring_get_sqe(&b->ring);
	if (!sqe)
		return -EBUSY;
	pt_prep(sqe, b->ufd, b->o.regfile, &c, -1);
	ret = io_uring_submit_and_wait(&b->ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(&b->ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&b->ring, cqe);
	if (ret >= 0) {
		printf("cmd %s res %d\n", name, ret);
		if (c.op == VBLK_PT_OP_GET_ID && buf)
			printf("id %.20s\n", (char *)buf);
		return 0;
	}
	printf("cmd %s error %s\n", name, strerrorname_np(-ret) ?: "?");
	return 1;
}

/* ---- setup -------------------------------------------------------------- */

static int setup(struct bench *b)
{
	struct io_uring_params p = { 0 };
	unsigned int i, entries = 1;
	struct iovec *iov;
	struct stat st;
	int flags, ret;

	flags = b->o.write && !b->o.random_cmds && !b->o.cmd ? O_RDWR : O_RDONLY;
	if (getenv("VBLK_PTBENCH_RDWR"))
		flags = O_RDWR;
	if (stat(b->o.path, &st))
		return -errno;
	b->pt = S_ISCHR(st.st_mode);
	if (!b->pt && !S_ISBLK(st.st_mode))
		return -ENOTBLK;
	/* O_DIRECT is for the block device: a char device refuses it. */
	b->fd = open(b->o.path, flags | (b->pt ? 0 : O_DIRECT));
	if (b->fd < 0)
		return -errno;
	if ((b->o.random_cmds || b->o.cmd) && !b->pt)
		return -ENOTTY;
	ret = target_geometry(b);
	if (ret)
		return ret;
	if (!b->blocks && !b->o.random_cmds && !b->o.cmd)
		return -ENOSPC;
	while (entries < 2 * b->o.qd)
		entries <<= 1;
	if (b->pt)
		p.flags |= IORING_SETUP_SQE128;
	if (b->o.iopoll)
		p.flags |= IORING_SETUP_IOPOLL;
	ret = io_uring_queue_init_params(entries, &b->ring, &p);
	if (ret)
		return ret;
	b->ufd = b->fd;
	if (b->o.regfile) {
		ret = io_uring_register_files(&b->ring, &b->fd, 1);
		if (ret)
			return ret;
		b->ufd = 0;
	}
	b->bufs = calloc(b->o.qd, sizeof(*b->bufs));
	b->slot_blk = calloc(b->o.qd, sizeof(*b->slot_blk));
	iov = calloc(b->o.qd, sizeof(*iov));
	if (!b->bufs || !b->slot_blk || !iov)
		return -ENOMEM;
	for (i = 0; i < b->o.qd; i++) {
		b->bufs[i] = alloc_buf(b->o.bs);
		if (!b->bufs[i])
			return -ENOMEM;
		iov[i] = (struct iovec){ b->bufs[i], b->o.bs };
	}
	if (b->o.fixed) {
		ret = io_uring_register_buffers(&b->ring, iov, b->o.qd);
		if (ret)
			return ret;
	}
	free(iov);
	return 0;
}

int main(int argc, char **argv)
{
	struct bench b = { 0 };
	int ret;

	parse(argc, argv, &b.o);
	ret = setup(&b);
	if (ret) {
		fprintf(stderr, "vblk-ptbench: %s: %s\n", b.o.path, strerror(-ret));
		return 1;
	}
	if (b.o.cmd) {
		ret = run_cmd(&b);
		io_uring_queue_exit(&b.ring);
		if (ret < 0) {
			fprintf(stderr, "vblk-ptbench: %s\n", strerror(-ret));
			return 1;
		}
		return ret ? 3 : 0;
	}
	ret = b.o.random_cmds ? run_random(&b) : run_bench(&b);
	io_uring_queue_exit(&b.ring);
	if (ret) {
		fprintf(stderr, "vblk-ptbench: %s\n", strerror(-ret));
		return 1;
	}
	return 0;
}
