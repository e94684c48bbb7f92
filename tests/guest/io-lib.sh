# shellcheck shell=bash
# shellcheck disable=SC2034 # KMSG_N and TIMES are lib.sh's
# Helpers of the initramfs guests' tests (tests/guest/pm.sh, vmops.sh),
# sourced after lib.sh: fio with verify on the disk of the driver under
# test, attaching that disk, a fio load started and stopped in bounds,
# and what a hung disk holds.
#
# The caller sets IO_TAG (names of fio's output files: /tmp/IO_TAG-fio-*),
# IO_OUT (where the case logs go), REGION (what fio fills, rewrites and
# verifies), SPARE (where the last write goes), SERIAL_OF (driver -> disk
# serial); DRIVER is the driver under test; VBLK_PARAMS are extra insmod
# parameters of vblk; VBLK_TRANSPORT (pci, the default, or mmio) is the
# transport of the disks; IO_CASE_PREFIX (default none) goes before the
# names of the case log directories (IO_OUT/PREFIXDRIVER/) and the times
# file (IO_OUT/PREFIXtimes.txt), for a second run into the same IO_OUT.

# io_init: the case times file, the kernel log's problem patterns; fd 3
# is the test's output (the cases' own output goes to their logs).
io_init() {
	TIMES=$IO_OUT/${IO_CASE_PREFIX:-}times.txt
	mkdir -p "$IO_OUT"
	: >"$TIMES"
	exec 3>&1
	load_patterns
	KMSG_N=0 # lib.sh's
	kmsg_scan
}

# note LINE: a result line in the case log and on the test's output.
note() {
	echo "$1"
	echo "$1" >&3
}

# each_driver WHAT FUNC DRIVERS...: for each driver, its case logs, the
# attach case (WHAT skipped when it fails), FUNC (the driver's cases),
# the read-back case. A driver not among DRIVERS is a skip line; an
# unknown one, or vblk without its module, a failure.
each_driver() {
	local what=$1 func=$2 d drivers
	shift 2
	drivers=" $* "
	for d in "$@"; do
		[ "$d" = virtio_blk ] || [ "$d" = vblk ] ||
			report FAIL "$IO_TAG $d" "unknown driver '$d' (drivers: $*)"
	done
	# A driver left out is a skip line, not silence; a vblk that cannot
	# be loaded is a failure.
	for d in virtio_blk vblk; do
		if [[ $drivers != *" $d "* ]]; then
			report skip "$IO_TAG $d" "not among the drivers asked for ($*)"
			continue
		fi
		if [ "$d" = vblk ] && ! vblk_ko >/dev/null; then
			report FAIL "$IO_TAG vblk" "no build/$(uname -r)/vblk.ko"
			continue
		fi
		DRIVER=$d
		CASE_DIR=$IO_OUT/${IO_CASE_PREFIX:-}$DRIVER
		mkdir -p "$CASE_DIR"
		run_case "$IO_TAG $DRIVER: attach, fill $REGION" case_attach
		if [ "$LAST_VERDICT" != ok ]; then
			report skip "$IO_TAG $DRIVER: $what" "no disk"
			continue
		fi
		"$func"
		run_case "$IO_TAG $DRIVER: read back and verify, disk works" read_back
	done
}

# fio_job NAME ARGS...: a fio job on /dev/$DISK's first $REGION with
# verify headers every 4 KiB; output in /tmp/$IO_TAG-fio-NAME.
fio_job() {
	local name=$1
	shift
	fio --name="$name" --filename="/dev/$DISK" --ioengine=libaio --direct=1 \
		--size="$REGION" --verify=crc32c --verify_interval=4k --verify_fatal=1 \
		"$@" >"/tmp/$IO_TAG-fio-$name" 2>&1
}

# fio_ok NAME RC: fio ended without an error; its summary goes to the log.
fio_ok() {
	local f=/tmp/$IO_TAG-fio-$1
	grep -E 'err=|IOPS=|verify|clat \(|lat \(.*max' "$f" | head -8 || true
	[ "$2" = 0 ] || fail "fio $1 exited $2: $(grep -m1 -E 'verify:|error' "$f" || tail -1 "$f")"
	! grep -q 'verify: ' "$f" || fail "fio $1: $(grep -m1 'verify: ' "$f")"
}

# The disk of the driver under test; sets DISK.
disk() { await_disk "${SERIAL_OF[$DRIVER]}" 30 || fail "no disk ${SERIAL_OF[$DRIVER]} under $DRIVER"; }

# attach_disk: the disk onto the driver under test (vblk: insmod with
# disk_prefix=vblk and VBLK_PARAMS, driver_override); sets DISK, PCI_ADDR
# (the device's address: a PCI function, or a virtio-mmio platform device)
# and DRV, and writes "DISK PCI_ADDR" to /tmp/$IO_TAG-disk-$DRIVER.
attach_disk() {
	local s=${SERIAL_OF[$DRIVER]} ko tp=${VBLK_TRANSPORT:-pci}
	if [ ! -d "/sys/bus/$([ "$tp" = pci ] && echo pci || echo platform)/drivers/virtio-$tp" ]; then
		modprobe "virtio_$tp" || fail "modprobe virtio_$tp failed"
	fi
	# Also for vblk: a disk is found by its serial, which takes a driver.
	[ -d /sys/bus/virtio/drivers/virtio_blk ] || modprobe virtio_blk || fail "modprobe virtio_blk failed"
	if [ "$DRIVER" = vblk ]; then
		ko=$(vblk_ko) || fail "no build/$(uname -r)/vblk.ko in the initramfs"
		# shellcheck disable=SC2086 # VBLK_PARAMS is a list
		grep -q '^vblk ' /proc/modules || insmod "$ko" disk_prefix=vblk ${VBLK_PARAMS:-} ||
			fail "insmod $ko ${VBLK_PARAMS:-} failed"
		await_disk "$s" 30 || fail "no disk $s under virtio_blk to move"
		dev_of_disk "$DISK" || fail "no device for $DISK"
		move_disk "$DEV_ADDR" vblk "$s"
	fi
	disk
	driver_of_disk "$DISK"
	dev_of_disk "$DISK" || fail "no device for $DISK"
	PCI_ADDR=$DEV_ADDR
	step "$s: /dev/$DISK at $PCI_ADDR, driver $DRV${VBLK_PARAMS:+ (vblk: $VBLK_PARAMS)}"
	echo "$DISK $PCI_ADDR" >"/tmp/$IO_TAG-disk-$DRIVER"
}

# The disk onto the driver under test, and the region filled.
case_attach() {
	local rc=0
	attach_disk
	fio_job fill --rw=write --bs=64k --iodepth=16 --do_verify=0 || rc=$?
	fio_ok fill "$rc"
}

# load_start STOPFILE ARGS...: fio random-writes 4k-64k at QD32 over
# $REGION and verifies behind itself until STOPFILE appears (at most 900
# s); sets FIO_PID. A case that fails half way does not leave its fio
# running into the next case's.
load_start() {
	local stop=$1
	shift
	rm -f "$stop"
	fio_job load --rw=randwrite --bsrange=4k-64k --iodepth=32 --verify_backlog=64 \
		--time_based --runtime=900 --trigger-file="$stop" "$@" &
	FIO_PID=$!
	# shellcheck disable=SC2064 # the pid is known now
	trap "kill -9 $FIO_PID 2>/dev/null || true" EXIT
}

# load_stop STOPFILE: tell fio to stop, wait for it (60 s at most: longer
# is a hang, and the disk's state goes to the case log), check its result.
load_stop() {
	local i rc=0
	touch "$1"
	for ((i = 0; i < 600; i++)); do
		kill -0 "$FIO_PID" 2>/dev/null || break
		nap 0.1
	done
	if kill -0 "$FIO_PID" 2>/dev/null; then
		stuck_dump
		kill -9 "$FIO_PID" 2>/dev/null || true
		fail "fio still running 60 s after it was told to stop (hang; its disk's state in the case log)"
	fi
	wait "$FIO_PID" || rc=$?
	trap - EXIT
	fio_ok load "$rc"
	grep -q 'err= 0' "/tmp/$IO_TAG-fio-load" || fail "fio load: no 'err= 0' in its report"
}

# What a disk whose I/O hangs holds: blk-mq's view (debugfs), vblk's rings
# and state, and every blocked task's stack in the kernel log.
stuck_dump() {
	local f
	step "in flight: $(cat "/sys/block/$DISK/inflight")"
	mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || true
	for f in /sys/kernel/debug/block/"$DISK"/{state,requeue_list,pm_only} \
		/sys/kernel/debug/block/"$DISK"/hctx*/{state,dispatch,busy,dispatch_busy,ctx*/*_rq_list} \
		/sys/block/"$DISK"/vblk/{config,rings}; do
		[ -r "$f" ] || continue
		echo "+ ${f#/sys/}:"
		sed 's/^/+   /' "$f" 2>/dev/null | head -20 || true
	done
	[ ! -w /proc/sysrq-trigger ] || echo w >/proc/sysrq-trigger
}

# read_back: everything fio wrote reads back right; the disk still takes
# verified writes at SPARE; vblk is live.
read_back() {
	local rc=0 st
	disk
	fio_job check --rw=read --bs=64k --iodepth=16 || rc=$?
	fio_ok check "$rc"
	fio_job after --offset="$SPARE" --rw=randwrite --bsrange=4k-64k --iodepth=32 --do_verify=1 \
		--size=16m || rc=$?
	fio_ok after "$rc"
	if [ "$DRIVER" = vblk ]; then
		st=$(sed -n 's/^state //p' "/sys/block/$DISK/vblk/config")
		step "vblk state $st, recoveries $(sed -n 's/^recoveries //p' "/sys/block/$DISK/vblk/config")"
		[ "$st" = live ] || fail "vblk state '$st' (want live)"
	fi
}
