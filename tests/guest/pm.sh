#!/bin/bash
# System sleep guest cases: suspend (s2idle) and hibernation cycles in the
# kernel's test mode (/sys/power/pm_test=devices) while fio writes and
# verifies, against the in-tree virtio_blk (the reference), then vblk.
# Runs INSIDE the initramfs guest that scripts/pm-run boots, not under
# virtme-ng: there the root file system is virtio 9p, which has no
# freeze/restore, and the first cycle leaves the guest without its root.
#
#   tests/guest/pm.sh [--quick]
#
# Disks (by serial): pm-ref stays with virtio_blk, pm-vblk is moved to vblk
# (driver_override, scripts/vblk-bind). For each driver:
#
#   attach     the driver takes its disk; fio fills the first 64 MiB with
#              verify blocks (a header with offset and crc32c every 4 KiB)
#   s2idle     `echo freeze >/sys/power/state` at pm_test=devices (3 times,
#              --quick once) while fio random-writes 4k-64k at QD32 and
#              verifies behind itself (verify_backlog): tasks are frozen,
#              every device's suspend callbacks run, the kernel waits
#              pm_test_delay (set to 1 s), the resume callbacks run. If the
#              kernel refuses that level for s2idle ("Unsupported test
#              mode"), `platform`, then `mem` at `devices` are tried; "# pm:"
#              says which ran.
#   hibernate  `echo disk >/sys/power/state` at pm_test=devices, as often:
#              hibernation_snapshot() runs the .freeze callbacks, skips
#              create_image() at TEST_DEVICES (no image is written, no swap
#              needed), waits 5 s and, in_suspend being 0, resumes devices
#              with PMSG_RESTORE: the .restore callbacks.
#   verify     fio reads the whole 64 MiB back and checks every 4 KiB
#              header (offset and checksum); a new verified write elsewhere
#              works; vblk's state is live.
#
# A cycle must find fio running before and after it, the disk's PCI
# function must show its suspend and resume callbacks in the kernel log
# (pm_print_times), and for vblk "restarted after sleep" once per cycle.
# Each cycle prints a "# recovery:" line: how long the write to
# /sys/power/state took (the test delay included), the disk's suspend and
# resume callbacks, and how long after the return a 4 KiB direct read of
# the disk took.
# Ends with "N passed, N failed, N skipped"; exit 1 on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/guest/lib.sh
. "$here/lib.sh"

QUICK=0
export VBLK_BIND_SETTLE=0 # no udev in this guest
REGION=64m                 # what fio fills, rewrites and verifies
SPARE=128m                 # offset of the after-the-cycles write
declare -A SERIAL_OF=([virtio_blk]=pm-ref [vblk]=pm-vblk)

# ---- helpers ----------------------------------------------------------------

# fio_job NAME ARGS...: a fio job on /dev/$DISK's first $REGION with
# verify headers every 4 KiB; output in /tmp/pm-fio-NAME.
fio_job() {
	local name=$1
	shift
	fio --name="$name" --filename="/dev/$DISK" --ioengine=libaio --direct=1 \
		--size="$REGION" --verify=crc32c --verify_interval=4k --verify_fatal=1 \
		"$@" >"/tmp/pm-fio-$name" 2>&1
}

# fio_ok NAME RC: fio ended without an error; its summary goes to the log.
fio_ok() {
	grep -E 'err=|IOPS=|verify' "/tmp/pm-fio-$1" | head -6 || true
	[ "$2" = 0 ] || fail "fio $1 exited $2: $(grep -m1 -E 'verify:|error' "/tmp/pm-fio-$1" || tail -1 "/tmp/pm-fio-$1")"
	! grep -q 'verify: ' "/tmp/pm-fio-$1" || fail "fio $1: $(grep -m1 'verify: ' "/tmp/pm-fio-$1")"
}

# The disk of the driver under test; sets DISK.
disk() { await_disk "${SERIAL_OF[$DRIVER]}" 30 || fail "no disk ${SERIAL_OF[$DRIVER]} under $DRIVER"; }

# dmesg_since N: the kernel log after line N, into /tmp/pm-kmsg (a file:
# grep -q at the end of a pipe fails the pipe under pipefail).
dmesg_since() { dmesg | tail -n +"$(($1 + 1))" >/tmp/pm-kmsg; }

# The disk's suspend and resume callback times (ms) in kernel log lines on
# stdin, from pm_print_times: "<drv> <addr>: [PM: ]<cb>[+0x..] returned 0
# after N usecs". Prints how many suspend and resume callbacks ran, their
# times, and after "ERR" the lines of callbacks that failed.
callback_ms() {
	awk -v a=" $1: " 'index($0, a) && / returned -?[0-9]+ after [0-9]+ usecs/ {
			us = $(NF - 1); cb = $(NF - 5)
			if (cb ~ /suspend|freeze/) { down += us; nd++ }
			else if (cb ~ /resume|restore|thaw/) { up += us; nu++ }
			if ($0 !~ / returned 0 /) bad = bad " " $0
		}
		END { printf "%d %d %.1f %.1f%s\n", nd, nu, down / 1000, up / 1000, bad ? " ERR" bad : "" }'
}

# sleep_cycle STATE: one cycle into /sys/power/state STATE in a test mode;
# sets LEVEL (what ran: STATE@pm_test level) and CYCLE_MS. The level that
# worked is kept for the next cycles (/tmp/pm-level-STATE).
sleep_cycle() {
	local st=$1 tries t0 n0 lv try out
	if [ -s "/tmp/pm-level-$st" ]; then
		tries=$(cat "/tmp/pm-level-$st")
	elif [ "$st" = freeze ]; then
		tries="freeze@devices freeze@platform mem@devices"
	else
		tries="$st@devices"
	fi
	for try in $tries; do
		st=${try%@*} lv=${try#*@}
		grep -qw "$st" /sys/power/state || { step "no $st in /sys/power/state ($(cat /sys/power/state))"; continue; }
		echo "$lv" >/sys/power/pm_test
		n0=$(dmesg | wc -l)
		now_us
		t0=$NOW_US
		if out=$(timeout 150 sh -c "echo $st >/sys/power/state" 2>&1); then
			CYCLE_MS=$(ms_since "$t0")
			LEVEL=$try
			echo "$try" >"/tmp/pm-level-${1}"
			echo none >/sys/power/pm_test
			return 0
		fi
		step "echo $st >/sys/power/state at pm_test=$lv refused: $out"
		dmesg_since "$n0"
		grep -iE 'unsupported test mode|PM: ' /tmp/pm-kmsg | tail -3 | sed 's/^/+   /' || true
		# Another level only for a level or state the kernel does not
		# offer; a cycle that failed (a callback, the freezer) fails.
		if ! grep -qi 'unsupported test mode' /tmp/pm-kmsg && [[ $out != *"Invalid argument"* ]]; then
			echo none >/sys/power/pm_test
			fail "echo $st >/sys/power/state at pm_test=$lv failed: $out"
		fi
	done
	echo none >/sys/power/pm_test
	fail "no sleep cycle into $1 ran (tried: $tries)"
}

# The number of vblk's "restarted after sleep" lines so far.
vblk_restarts() { dmesg | grep -c ": restarted after sleep in " || true; }

# ---- cases --------------------------------------------------------------------

# The disk onto the driver under test, and the region filled.
case_attach() {
	local s=${SERIAL_OF[$DRIVER]} ko
	if [ ! -d /sys/bus/pci/drivers/virtio-pci ]; then
		modprobe virtio_pci || fail "modprobe virtio_pci failed"
	fi
	# Also for vblk: a disk is found by its serial, which takes a driver.
	[ -d /sys/bus/virtio/drivers/virtio_blk ] || modprobe virtio_blk || fail "modprobe virtio_blk failed"
	if [ "$DRIVER" = vblk ]; then
		ko=$(vblk_ko) || fail "no build/$(uname -r)/vblk.ko in the initramfs"
		grep -q '^vblk ' /proc/modules || insmod "$ko" disk_prefix=vblk || fail "insmod $ko failed"
		await_disk "$s" 30 || fail "no disk $s under virtio_blk to move"
		pci_of_disk "$DISK" || fail "no PCI function for $DISK"
		move_disk "$PCI_ADDR" vblk "$s"
	fi
	disk
	driver_of_disk "$DISK"
	pci_of_disk "$DISK" || fail "no PCI function for $DISK"
	step "$s: /dev/$DISK at $PCI_ADDR, driver $DRV"
	echo "$DISK $PCI_ADDR" >"/tmp/pm-disk-$DRIVER"
	local rc=0
	fio_job fill --rw=write --bs=64k --iodepth=16 --do_verify=0 || rc=$?
	fio_ok fill "$rc"
}

# cycles STATE: N cycles into STATE while fio writes and verifies.
cycles() {
	local st=$1 n=3 i n0 addr t0 io_ms cb r0 fpid rc=0 ir iw nd nu down up rx line stop
	[ "$QUICK" = 0 ] || n=1
	n=${PM_CYCLES:-$n}
	# No cycle is no test of sleep: it must not pass.
	[ "$n" -ge 1 ] 2>/dev/null || fail "PM_CYCLES=$n: no $st cycle would run"
	disk
	read -r _ addr <"/tmp/pm-disk-$DRIVER"
	r0=$(vblk_restarts)
	# fio stops when this file appears (and deletes it): one per run.
	stop=/tmp/pm-stop-$DRIVER-$st
	rm -f "$stop"
	fio_job load --rw=randwrite --bsrange=4k-64k --iodepth=32 --verify_backlog=64 \
		--time_based --runtime=600 --trigger-file="$stop" &
	fpid=$!
	# A case that fails half way does not leave its fio running into the
	# next case's.
	# shellcheck disable=SC2064 # the pid is known now
	trap "kill -9 $fpid 2>/dev/null || true" EXIT
	sleep 2
	for ((i = 1; i <= n; i++)); do
		kill -0 "$fpid" 2>/dev/null || fail "fio ended before cycle $i: $(tail -3 /tmp/pm-fio-load)"
		read -r ir iw <"/sys/block/$DISK/inflight"
		n0=$(dmesg | wc -l)
		sleep_cycle "$st"
		now_us
		t0=$NOW_US
		dd if="/dev/$DISK" of=/dev/null bs=4k count=1 skip=$((32768 + i)) iflag=direct 2>/dev/null ||
			fail "a read after cycle $i failed"
		io_ms=$(ms_since "$t0")
		dmesg_since "$n0"
		cb=$(callback_ms "$addr" </tmp/pm-kmsg)
		read -r nd nu down up rx <<<"$cb"
		line="# recovery: $DRIVER $st $i/$n ($LEVEL): state write returned after $CYCLE_MS ms;"
		line+=" $addr callbacks: suspend $down ms, resume $up ms; 4 KiB read done $io_ms ms later;"
		line+=" in flight before: $ir reads, $iw writes${rx:+; $rx}"
		[ "$DRIVER" != vblk ] ||
			line+="; vblk: $(sed -n 's/.*: restarted after sleep in \([0-9]*\) ms$/restarted in \1 ms/p' /tmp/pm-kmsg)"
		# In the case log and on the suite's output (fd 3, see main).
		echo "$line"
		echo "$line" >&3
		[ -z "$rx" ] || fail "a PM callback of $addr failed: $rx"
		if [ "$nd" = 0 ] || [ "$nu" = 0 ]; then
			fail "cycle $i: $nd suspend and $nu resume callbacks of $addr in the kernel log (pm_print_times)"
		fi
		if [ "$DRIVER" = vblk ]; then
			grep -F ": restarted after sleep in " /tmp/pm-kmsg | sed 's/^/+ /' || true
			[ "$(vblk_restarts)" = $((r0 + i)) ] ||
				fail "vblk's sleep path did not run in cycle $i ($(($(vblk_restarts) - r0)) restarts for $i cycles)"
		fi
		kill -0 "$fpid" 2>/dev/null || fail "fio ended during cycle $i: $(tail -3 /tmp/pm-fio-load)"
		sleep 1
	done
	sleep 2
	touch "$stop"
	for ((i = 0; i < 600; i++)); do
		kill -0 "$fpid" 2>/dev/null || break
		nap 0.1
	done
	if kill -0 "$fpid" 2>/dev/null; then
		stuck_dump
		kill -9 "$fpid" 2>/dev/null || true
		fail "fio still running 60 s after it was told to stop (hang; its disk's state in the case log)"
	fi
	wait "$fpid" || rc=$?
	trap - EXIT
	fio_ok load "$rc"
	grep -q 'err= 0' /tmp/pm-fio-load || fail "fio load: no 'err= 0' in its report"
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

case_s2idle() { cycles freeze; }
case_hibernate() { cycles disk; }

# Everything fio wrote reads back right; the disk still takes verified
# writes; vblk is live.
case_verify() {
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
		[ "$st" = live ] || fail "vblk state '$st' after the sleep cycles (want live)"
	fi
}

run_driver() {
	DRIVER=$1
	CASE_DIR=${PM_OUT:-/tmp/pm-cases}/$DRIVER
	mkdir -p "$CASE_DIR"
	run_case "pm $DRIVER: attach, fill $REGION" case_attach
	if [ "$LAST_VERDICT" != ok ]; then
		report skip "pm $DRIVER: sleep cycles" "no disk"
		return 0
	fi
	run_case "pm $DRIVER: s2idle cycles under fio" case_s2idle
	run_case "pm $DRIVER: hibernation (freeze/restore) cycles under fio" case_hibernate
	run_case "pm $DRIVER: read back and verify, disk works" case_verify
}

main() {
	[ "${1:-}" != --quick ] || QUICK=1
	TIMES=${PM_OUT:-/tmp/pm-cases}/times.txt
	mkdir -p "${PM_OUT:-/tmp/pm-cases}"
	: >"$TIMES"
	# The "# recovery:" lines of the cases (whose output goes to their
	# logs) reach the suite's output through fd 3.
	exec 3>&1
	load_patterns
	KMSG_N=0
	kmsg_scan
	echo "# sleep cycles: kernel $(uname -r)$([ "$QUICK" = 1 ] && echo ', quick'); /sys/power/state: $(cat /sys/power/state); mem_sleep: $(cat /sys/power/mem_sleep 2>/dev/null || echo -)"
	# Per-device callback times in the kernel log; a short s2idle test delay.
	echo 1 >/sys/power/pm_print_times
	if [ -w /sys/module/suspend/parameters/pm_test_delay ]; then
		echo 1 >/sys/module/suspend/parameters/pm_test_delay
	fi
	echo "# pm_test levels: $(cat /sys/power/pm_test); s2idle test delay $(cat /sys/module/suspend/parameters/pm_test_delay 2>/dev/null || echo 5) s, hibernation 5 s"
	local d drivers=" ${PM_DRIVERS:-virtio_blk vblk} "
	for d in ${PM_DRIVERS:-}; do
		[ "$d" = virtio_blk ] || [ "$d" = vblk ] || report FAIL "pm $d" "PM_DRIVERS names an unknown driver '$d'"
	done
	# A driver PM_DRIVERS leaves out is a skip line, not silence; a vblk
	# that cannot be loaded is a failure.
	for d in virtio_blk vblk; do
		if [[ $drivers != *" $d "* ]]; then
			report skip "pm $d" "not in PM_DRIVERS='${PM_DRIVERS:-}'"
			continue
		fi
		if [ "$d" = vblk ] && ! vblk_ko >/dev/null; then
			report FAIL "pm vblk" "no build/$(uname -r)/vblk.ko"
			continue
		fi
		run_driver "$d"
	done
	local f
	for f in /tmp/pm-level-*; do
		[ -e "$f" ] && echo "# pm: ${f#/tmp/pm-level-} ran as $(cat "$f")"
	done
	summary
	[ "$n_fail" = 0 ]
}

main "$@"
