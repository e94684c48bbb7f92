# vblk: out-of-tree virtio-blk driver.
#
#   make                  build vblk.ko for the running kernel (needs its headers)
#   make KVER=6.12        build for a lab kernel (6.1, 6.12, 7.3) into build/<kver>/
#   make KDIR=/path       build against any kernel tree
#   make install          build, then modules_install (INSTALL_MOD_DIR=updates)
#                         and depmod; with KVER= into the lab tree
#   make CONFIG_VBLK_FAULT_INJECT=y   with the vblk/lose test hook (tests only;
#                         off by default, in DKMS and in `make install`)
#   make install-udev     the udev rule for /dev/disk/by-id/virtio-<serial> links
#                         (UDEV_DIR, default /etc/udev/rules.d)
#   (the plain kbuild command works too: make -C KDIR M=$PWD [modules_install])
#   make lint             sparse (C=1) and W=1 for every lab kernel, checkpatch if present
#   make lint-arm64       the same for Debian's arm64 builds of those kernels
#                         (cross-built; make KVER=6.12-arm64 builds one)
#   make unit             host unit tests and fuzz smoke of the ring, and the
#                         bench's host-side python (tests/bench/test_*.py)
#   make check            setup + unit + lint + build + guest suite on every lab kernel
#   make check KERNELS=6.12   the same on a subset (quick iteration);
#                         the debug stage comes last when it fits the budget
#                         (DEBUG= leaves it out)
#   make check-debug      setup, unit and the debug stage alone (debug kernel:
#                         KASAN, lockdep; scripts/debug-kernel)
#   make debug-kernel     build the lab's debug kernel (cached)
#   make ptbench          tools/vblk-ptbench (io_uring client for the passthrough
#                         char device and block devices), built in the lab chroot
#   make bench / demo     the benchmark (full / quick) on 6.12
#   make bench KERNELS=6.1,6.12,7.3 [BENCH_MODE=headline]   one boot per kernel,
#                         then one table across kernels (DIR-matrix.md)
#   make bench BENCH_MODE=memory   memory per bound disk for each driver
# Paths below are the checkout's, wherever make was started from (make -C,
# make -f).
TOP := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
KERNELS ?= 6.1 6.12 7.3
ARM64_KERNELS ?= 6.1-arm64 6.12-arm64 7.3-arm64
KVER ?=
KDIR ?=

ifeq ($(KVER)$(KDIR),)
KDIR := /lib/modules/$(shell uname -r)/build
endif

INSTALL_MOD_DIR ?= updates
export INSTALL_MOD_DIR

.PHONY: all modules install modules_install install-udev lint lint-arm64 unit check setup clean bench demo guest debug-kernel check-debug ptbench

ifneq ($(KVER),)
KBUILD_TARGET := $(KVER)
else
KBUILD_TARGET := --kdir $(KDIR)
endif
ifeq ($(CONFIG_VBLK_FAULT_INJECT),y)
KBUILD_TARGET := --fault-inject $(KBUILD_TARGET)
endif

all modules:
	$(TOP)/scripts/kbuild $(KBUILD_TARGET)

install modules_install:
	$(TOP)/scripts/kbuild --install $(KBUILD_TARGET)

UDEV_DIR ?= /etc/udev/rules.d

install-udev:
	install -D -m 0644 $(TOP)/udev/60-vblk.rules $(DESTDIR)$(UDEV_DIR)/60-vblk.rules
	-udevadm control --reload 2>/dev/null

lint:
	$(TOP)/scripts/lint $(KERNELS)

lint-arm64:
	$(TOP)/scripts/lint $(ARM64_KERNELS)

unit:
	$(MAKE) -C $(TOP)/tests/unit run
	$(TOP)/tests/guest/selfcheck
	set -e; for t in $(TOP)/tests/bench/test_*.py; do python3 "$$t"; done

setup:
	$(TOP)/scripts/setup

ptbench:
	bash -c '. "$(TOP)/scripts/lab-env" && cd "$(TOP)" && lab_run make -C tools/vblk-ptbench'

debug-kernel:
	$(TOP)/scripts/debug-kernel

# The debug stage (scripts/check: the debug kernel, the lifecycle cases of
# issue 22's defects under KASAN and lockdep, for both drivers) comes last,
# when it fits make check's 80-minute budget (else a skip line says so);
# make check DEBUG= leaves it out; make check-debug runs it alone, with
# every lifecycle case and vblk's own quick cases.
DEBUG ?= debug
check:
	$(TOP)/scripts/check $(KERNELS) $(DEBUG)

check-debug:
	$(TOP)/scripts/check debug

guest:
	$(TOP)/scripts/guest-suite $(KERNELS)

# Both provision the lab first (idempotent, seconds when it is in place), as
# the quick start promises: on a new machine `make demo` is the first command.
# make bench runs on 6.12 unless KERNELS is given on the command line (commas
# or spaces); BENCH_MODE is full, headline, quick or memory.
comma := ,
space := $(subst ,, )
BENCH_MODE ?= full
BENCH_KERNELS := 6.12
ifeq ($(origin KERNELS),command line)
BENCH_KERNELS := $(subst $(space),$(comma),$(strip $(subst $(comma), ,$(KERNELS))))
endif

bench:
	$(TOP)/scripts/setup
	$(TOP)/scripts/bench --$(BENCH_MODE) --kernel $(BENCH_KERNELS)

demo:
	$(TOP)/scripts/setup
	$(TOP)/scripts/bench --quick

clean:
	rm -rf $(TOP)/build
	rm -f $(TOP)/include/vblk_compat_probes.h $(TOP)/include/vblk_compat_probes.log \
		$(TOP)/include/.vblk_compat_probes.h.cmd
	$(MAKE) -C $(TOP)/tests/unit clean
	$(MAKE) -C $(TOP)/tools/vblk-ptbench clean
	-$(MAKE) -C $(KDIR) M=$(TOP) clean 2>/dev/null
