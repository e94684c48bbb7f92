# vblk: out-of-tree virtio-blk driver.
#
#   make                  build vblk.ko for the running kernel (needs its headers)
#   make KVER=6.12        build for a lab kernel (6.1, 6.12, 7.3) into build/<kver>/
#   make KDIR=/path       build against any kernel tree
#   make lint             sparse (C=1) and W=1 for every lab kernel, checkpatch if present
#   make unit             host unit tests and fuzz smoke of the ring
#   make check            setup + unit + lint + build + guest suite on every lab kernel
#   make check KERNELS=6.12   the same on a subset (quick iteration)
#   make bench / demo     the benchmark (full / quick)
KERNELS ?= 6.1 6.12 7.3
KVER ?=
KDIR ?=

ifeq ($(KVER)$(KDIR),)
KDIR := /lib/modules/$(shell uname -r)/build
endif

.PHONY: all modules lint unit check setup clean bench demo guest

ifneq ($(KVER),)
all modules:
	scripts/kbuild $(KVER)
else
all modules:
	scripts/kbuild --kdir $(KDIR)
endif

lint:
	scripts/lint $(KERNELS)

unit:
	$(MAKE) -C tests/unit run

setup:
	scripts/setup

check:
	scripts/check $(KERNELS)

guest:
	scripts/guest-suite $(KERNELS)

# Both provision the lab first (idempotent, seconds when it is in place), as
# the quick start promises: on a new machine `make demo` is the first command.
bench:
	scripts/setup
	scripts/bench --full

demo:
	scripts/setup
	scripts/bench --quick

clean:
	rm -rf build
	$(MAKE) -C tests/unit clean
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null
