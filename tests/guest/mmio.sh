#!/bin/bash
# virtio-mmio guest cases: the disks of a QEMU microvm guest (no PCI at
# all), under the in-tree virtio_blk (over virtio-mmio, the reference),
# then under vblk's own mmio transport. Runs INSIDE the initramfs guest
# that scripts/mmio-run boots (and scripts/arm64-run: arm64's virt
# machine, whose virtio-mmio devices come from the device tree).
#
#   tests/guest/mmio.sh [--legacy | --pci]
#
# Disks (by serial): mm-ref stays with virtio_blk, mm-vblk is moved to
# vblk (driver_override on its platform device, scripts/vblk-bind). Both
# have Firecracker's profile: one queue, no indirect descriptors (the
# direct-ring mode). For each driver:
#
#   attach      the driver takes its disk; fio fills the first 64 MiB with
#               verify blocks (a header with offset and crc32c every 4 KiB)
#   transport   the disk sits on a virtio-mmio platform device with one
#               queue; vblk's config says transport mmio, one line (intx,
#               no vectors), softirq completion (complete=auto), no
#               indirect descriptors, and after I/O its counters show
#               doorbells, interrupts and irq_poll runs
#   verified I/O  random writes 4k-128k at QD32, two jobs, then a full
#               read-back check
#   unbind under fio  the device is unbound while fio writes: the unbind
#               ends within 60 s, fio ends (its errors expected) within
#               60 s, the disk comes back when bound again and takes a new
#               fill
#   held-open fd  the device is unbound while a process holds the disk
#               open: the unbind ends, reads through the held fd fail
#               (no hang), the fd closes, the disk comes back
#   resize      the disk grows by 128 MiB and shrinks back (QMP
#               block_resize, sent over the virtio-serial port vblk.qmp
#               to scripts/qmp-agent --stream) while fio writes and
#               verifies: each new size shows within 10 s (virtio-mmio's
#               config change: InterruptStatus bit 1 on the one line), and
#               fio passes. Skipped, saying so, in a boot without the port
#   silent device (vblk only, the fault-hook build: vblk/lose)  the device
#               stops answering (its doorbells and completions dropped):
#               with dev_loss_tmo 4 s, io_timeout 2 s and max_resets 1, two
#               reads fail, not hang, within 10 s each, the disk is dead,
#               the unbind ends, and the plain build takes the disk again
#   verify      fio reads the whole 64 MiB back and checks every header; a
#               new verified write elsewhere works; vblk's state is live.
#
# --legacy: the guest's virtio-mmio devices speak the legacy interface
# (version 1, QEMU's default): virtio_blk takes mm-vblk, vblk must refuse
# it with a message that names QEMU's force-legacy=false, and the disk goes
# back to virtio_blk unharmed.
#
# --pci: the same cases on one virtio-blk-pci disk of the same profile,
# serial pc-a64, under virtio_blk and then vblk (scripts/arm64-run: the
# virt machine has PCIe too): the transport case wants the disk on a PCI
# function, vblk's config to say transport pci, irq_mode msix with 2
# vectors (config and the one queue), complete hardirq (auto on a vector
# of the queue's own), and its counters doorbells, interrupts and
# completions. Case names start with "pci", logs go to
# $MMIO_OUT/pci-<driver>/.
#
# Ends with "N passed, N failed, N skipped"; exit 1 on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/guest/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/guest/io-lib.sh
. "$here/io-lib.sh"

export VBLK_BIND_SETTLE=0 # no udev in this guest
export VBLK_TRANSPORT=mmio
REGION=64m
SPARE=128m
IO_TAG=mmio
IO_OUT=${MMIO_OUT:-/tmp/mmio-cases}
declare -A SERIAL_OF=([virtio_blk]=mm-ref [vblk]=mm-vblk)

# The disk of the driver under test, its driver and its device (cases run
# in subshells: attach's variables do not reach them); sets DISK, DRV,
# DEV_ADDR.
mdisk() {
	disk
	driver_of_disk "$DISK"
	dev_of_disk "$DISK" || fail "no device for $DISK"
}

# cfg KEY: a line of vblk's config file.
cfg() { sed -n "s/^$1 //p" "/sys/block/$DISK/vblk/config"; }

# total COLUMN: the counters file's "total" line, column named COLUMN.
total() {
	awk -v c="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) n = i }
		$1 == "total" { print $n }' "/sys/block/$DISK/vblk/counters"
}

case_transport() {
	local nq want got k cfgs counts
	mdisk
	if [ "$VBLK_TRANSPORT" = pci ]; then
		[[ $DEV_ADDR =~ ^[0-9a-f]{4}: ]] || fail "$DISK sits on $DEV_ADDR, not on a PCI function"
		step "$DISK on PCI function $DEV_ADDR, driver $DRV"
		cfgs=("transport pci" "irq_mode msix" "vectors 2" "complete hardirq" "queues 1" "indirect 0")
		counts="doorbells irqs completions"
	else
		[[ ! $DEV_ADDR =~ ^[0-9a-f]{4}: ]] || fail "$DISK sits on PCI function $DEV_ADDR, not a virtio-mmio device"
		[ -e "/sys/bus/platform/devices/$DEV_ADDR" ] || fail "$DEV_ADDR is not a platform device"
		step "$DISK on platform device $DEV_ADDR, driver $DRV"
		cfgs=("transport mmio" "irq_mode intx" "vectors 0" "complete softirq" "queues 1" "indirect 0")
		counts="doorbells irqs polls completions"
	fi
	nq=$(find "/sys/block/$DISK/mq" -mindepth 1 -maxdepth 1 | wc -l)
	step "$nq hardware queue(s)"
	[ "$nq" = 1 ] || fail "$nq hardware queues (the disk has num-queues=1)"
	[ "$DRIVER" = vblk ] || return 0
	sed 's/^/+   /' "/sys/block/$DISK/vblk/config"
	for k in "${cfgs[@]}"; do
		want=${k#* }
		got=$(cfg "${k%% *}")
		[ "$got" = "$want" ] || fail "vblk config: ${k%% *} '$got' (want '$want')"
	done
	fio_job tr --rw=randread --bs=4k --iodepth=8 --size=8m --do_verify=0 || fail "fio randread failed"
	sed 's/^/+   /' "/sys/block/$DISK/vblk/counters"
	for k in $counts; do
		got=$(total "$k")
		[ "${got:-0}" -gt 0 ] || fail "vblk counters: $k is '${got:-}' after I/O (want > 0)"
	done
}

case_verified_io() {
	disk
	fio_verify "/dev/$DISK" 32 2 8m 4k-128k
}

# rebind: the device back onto the driver under test, and the disk.
rebind() {
	"$BIND" "$(bind_target "$DRIVER")" "$DEV_ADDR" || fail "binding $DEV_ADDR to $DRIVER again failed"
	disk
}

case_unbind_under_fio() {
	local i rc=0
	mdisk
	# fio's errors are expected here: its status goes to a file, not to
	# the case's error trap.
	rm -f /tmp/mmio-fio-rc
	{ fio_job load --rw=randwrite --bsrange=4k-64k --iodepth=32 --time_based \
		--runtime=120 || echo $? >/tmp/mmio-fio-rc; } &
	FIO_PID=$!
	nap 3
	kill -0 "$FIO_PID" 2>/dev/null || fail "fio ended before the unbind: $(tail -3 /tmp/mmio-fio-load)"
	bind_within none 60
	await_exit "$FIO_PID" 60 "fio still running 60 s after its disk was unbound"
	wait "$FIO_PID" || true
	grep -iE 'err|error' /tmp/mmio-fio-load | head -5 || true
	step "fio exited $(cat /tmp/mmio-fio-rc 2>/dev/null || echo 0) after the unbind (errors expected): $(grep -m1 -iE 'error|err=' /tmp/mmio-fio-load || true)"
	rebind
	fio_job refill --rw=write --bs=64k --iodepth=16 --do_verify=0 || rc=$?
	fio_ok refill "$rc"
}

case_held_fd() {
	local fd rc=0
	mdisk
	exec {fd}<"/dev/$DISK"
	bind_within none 60
	if timeout 30 dd of=/dev/null bs=4096 count=1 iflag=direct <&"$fd" 2>/tmp/mmio-dd; then
		step "read through the held fd: $(tail -1 /tmp/mmio-dd)"
	else
		rc=$?
		[ "$rc" != 124 ] || fail "a read through the held fd hung"
		step "read through the held fd failed as expected: $(tail -1 /tmp/mmio-dd)"
	fi
	exec {fd}<&-
	rebind
}

# A legacy device: vblk's probe fails with the advice, virtio_blk gets it back.
case_legacy() {
	local ko n0
	modprobe virtio_mmio 2>/dev/null || true
	modprobe virtio_blk || fail "modprobe virtio_blk failed"
	await_disk mm-vblk 30 || fail "no disk mm-vblk under virtio_blk"
	dev_of_disk "$DISK" || fail "no device for $DISK"
	ko=$(vblk_ko) || fail "no vblk.ko in the initramfs"
	insmod "$ko" disk_prefix=vblk || fail "insmod $ko failed"
	n0=$(dmesg | wc -l)
	! "$BIND" vblk "$DEV_ADDR" 2>&1 || fail "vblk took a legacy virtio-mmio device"
	dmesg | tail -n +"$((n0 + 1))" | grep vblk || true
	dmesg | tail -n +"$((n0 + 1))" | grep -q "version 1 (legacy) is not supported: give QEMU -global virtio-mmio.force-legacy=false" ||
		fail "no refusal naming force-legacy=false in the kernel log"
	"$BIND" virtio-mmio "$DEV_ADDR" || fail "giving $DEV_ADDR back to virtio-mmio failed"
	await_disk mm-vblk 30 || fail "mm-vblk did not come back under virtio_blk"
	dd if="/dev/$DISK" of=/dev/null bs=64k count=16 iflag=direct 2>/dev/null || fail "reading $DISK back under virtio_blk failed"
	rmmod vblk || fail "rmmod vblk failed"
}

# reload_vblk KO ARGS...: vblk from KO, holding the device under test.
reload_vblk() {
	local ko=$1
	shift
	local t
	"$BIND" none "$DEV_ADDR" >/dev/null || fail "unbinding $DEV_ADDR failed"
	# A disk closed a moment ago may still hold the module for a while:
	# busybox's timeout leaves a watcher process (forked before the
	# command, with its descriptors) for up to a second after the command
	# ended, and the held-open fd case's `timeout 30 dd <&fd` leaves one
	# holding the disk (seen on arm64: refcnt 1, rmmod EAGAIN).
	for ((t = 0; t < 50; t++)); do
		rmmod vblk 2>/dev/null && break
		nap 0.1
	done
	! grep -q '^vblk ' /proc/modules || fail "rmmod vblk failed for 5 s: $(grep '^vblk ' /proc/modules)"
	insmod "$ko" disk_prefix=vblk "$@" || fail "insmod $ko $* failed"
	"$BIND" vblk "$DEV_ADDR" >/dev/null || fail "binding $DEV_ADDR to $ko failed"
	disk
}

case_silent() {
	local hook plain i rc t0 ms st
	[ "$DRIVER" = vblk ] || skip "vblk only: the fault switch is vblk's (vblk/lose)"
	mdisk
	hook=$(vblk_hook_ko) || fail "no build/$(uname -r)-hook/vblk.ko in the initramfs"
	plain=$(vblk_ko) || fail "no build/$(uname -r)/vblk.ko in the initramfs"
	step "this case loads the fault-hook build $hook"
	reload_vblk "$hook" max_resets=1 dev_loss_tmo=4
	[ -w "/sys/block/$DISK/vblk/lose" ] || fail "$hook has no vblk/lose"
	echo 2000 >"/sys/block/$DISK/queue/io_timeout"
	echo "silent 1" >"/sys/block/$DISK/vblk/lose"
	for i in 1 2; do
		now_us
		t0=$NOW_US
		rc=0
		timeout 60 dd if="/dev/$DISK" of=/dev/null bs=4k count=1 skip=$((i * 1000)) iflag=direct 2>/dev/null || rc=$?
		ms=$(ms_since "$t0")
		st=$(cfg state)
		step "read $i ended (exit $rc) after $ms ms, state $st"
		[ "$rc" != 124 ] || fail "read $i on a silent device hung for 60 s"
		[ "$rc" != 0 ] || fail "read $i on a silent device succeeded"
		[ "$ms" -le 10000 ] || fail "failing read $i took $ms ms, bound 10 s (dev_loss_tmo 4 + io_timeout 2 + 4)"
	done
	[ "$st" = dead ] || fail "state $st after a silent device's reads failed (want dead)"
	dev_of_disk "$DISK" || fail "no device for $DISK"
	reload_vblk "$plain"
	step "the plain build holds $DISK again, state $(cfg state)"
}

# Grow by 128 MiB and shrink back under fio (write and verify).
case_resize() {
	local s=${SERIAL_OF[$DRIVER]} size stop=/tmp/mmio-stop-resize-$DRIVER
	[ -n "${VBLK_QMP_PORT:-}" ] || skip "no QMP port (virtio-serial vblk.qmp) in this boot"
	disk
	size=$(($(cat "/sys/block/$DISK/size") * 512))
	load_start "$stop"
	sleep 2
	resize_wait "$s" "\"device\": \"$s\"" $((size + 134217728))
	step "grown to $(cat "/sys/block/$DISK/size") sectors"
	sleep 2
	resize_wait "$s" "\"device\": \"$s\"" "$size"
	step "back to $(cat "/sys/block/$DISK/size") sectors"
	sleep 1
	load_stop "$stop"
}

# The virtio-serial port named vblk.qmp, if this boot has one (its name
# comes over the console's control queue, after the probe: wait for it).
find_qmp_port() {
	local p i
	[ "$VBLK_TRANSPORT" != mmio ] || modprobe virtio_mmio 2>/dev/null || true
	modprobe virtio_console 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		for p in /sys/class/virtio-ports/*; do
			[ "$(cat "$p/name" 2>/dev/null)" = vblk.qmp ] || continue
			[ -c "/dev/${p##*/}" ] && VBLK_QMP_PORT=/dev/${p##*/} && return 0
		done
		nap 0.1
	done
	return 0
}

# The lifecycle cases that need a PCI function (tests/guest/lifecycle.sh
# runs them there): said, not left out silently.
pci_only() {
	[ "$VBLK_TRANSPORT" = mmio ] || return 0
	report skip "$IO_TAG $DRIVER: function level reset" "PCI only: virtio-mmio has no FLR (lifecycle.sh runs it on PCI)"
	report skip "$IO_TAG $DRIVER: AER correctable, non-fatal and failed recovery" "PCI only: no PCIe error reporting on virtio-mmio (lifecycle.sh runs it on PCI)"
	report skip "$IO_TAG $DRIVER: hot-unplug (device_del) under fio" "PCI only: microvm and virt have no hot-pluggable virtio-mmio slot (lifecycle.sh runs it on PCI)"
}

mmio_cases() {
	pci_only
	run_case "$IO_TAG $DRIVER: transport, interrupt and completion" case_transport
	run_case "$IO_TAG $DRIVER: verified random I/O 4k-128k, QD32 x 2" case_verified_io
	run_case "$IO_TAG $DRIVER: resize (grow, shrink back) under fio" case_resize
	run_case "$IO_TAG $DRIVER: unbind under fio, bound again" case_unbind_under_fio
	run_case "$IO_TAG $DRIVER: held-open fd across unbind" case_held_fd
	run_case "$IO_TAG $DRIVER: silent device failed within the bound [fault-hook build]" case_silent
}

main() {
	if [ "${1:-}" = --pci ]; then
		VBLK_TRANSPORT=pci IO_TAG=pci IO_CASE_PREFIX=pci-
		SERIAL_OF=([virtio_blk]=pc-a64 [vblk]=pc-a64)
	fi
	io_init
	find_qmp_port
	if [ "${1:-}" = --pci ]; then
		echo "# virtio-pci: kernel $(uname -r); disk pc-a64 on PCI"
		# shellcheck disable=SC2086 # a list
		each_driver "pci cases" mmio_cases ${MMIO_DRIVERS:-virtio_blk vblk}
		summary
		[ "$n_fail" = 0 ]
		return
	fi
	if [ "${1:-}" = --legacy ]; then
		echo "# virtio-mmio, legacy interface: kernel $(uname -r)"
		CASE_DIR=$IO_OUT/legacy
		mkdir -p "$CASE_DIR"
		run_case "mmio legacy: vblk refuses version 1 and names the QEMU option" case_legacy
		summary
		[ "$n_fail" = 0 ]
		return
	fi
	local d n=0
	for d in /sys/bus/platform/drivers/virtio-mmio/*/driver; do [ -e "$d" ] && n=$((n + 1)); done
	echo "# virtio-mmio: kernel $(uname -r); $n platform device(s) bound to virtio-mmio; QMP port ${VBLK_QMP_PORT:-none}"
	# shellcheck disable=SC2086 # a list
	each_driver "mmio cases" mmio_cases ${MMIO_DRIVERS:-virtio_blk vblk}
	summary
	[ "$n_fail" = 0 ]
}

main "$@"
