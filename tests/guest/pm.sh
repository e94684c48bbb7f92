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
# (driver_override, scripts/vblk-bind); PM_SERIALS="REF VBLK" names others
# (scripts/mmio-run runs these cases on its virtio-mmio disks, with
# VBLK_TRANSPORT=mmio). For each driver:
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
# A cycle must find fio running before and after it, the disk's device (PCI
# function or virtio-mmio platform device) must show its suspend and resume callbacks in the kernel log
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
# shellcheck source=tests/guest/io-lib.sh
. "$here/io-lib.sh"

QUICK=0
export VBLK_BIND_SETTLE=0 # no udev in this guest
REGION=64m                 # what fio fills, rewrites and verifies
SPARE=128m                 # offset of the after-the-cycles write
declare -A SERIAL_OF=([virtio_blk]=pm-ref [vblk]=pm-vblk)
# PM_SERIALS="REF VBLK": other disks (scripts/mmio-run: mm-ref mm-vblk).
if [ -n "${PM_SERIALS:-}" ]; then
	read -r SERIAL_OF[virtio_blk] SERIAL_OF[vblk] <<<"$PM_SERIALS"
fi
IO_TAG=pm
IO_OUT=${PM_OUT:-/tmp/pm-cases}

# ---- helpers ----------------------------------------------------------------

# dmesg_since N: the kernel log after line N, into /tmp/pm-kmsg (a file:
# grep -q at the end of a pipe fails the pipe under pipefail).
dmesg_since() { dmesg | tail -n +"$(($1 + 1))" >/tmp/pm-kmsg; }

# The disk's suspend and resume callback times (ms) in kernel log lines on
# stdin, from pm_print_times: "<drv> <addr>: [PM: ]<cb>[+0x..] returned 0
# after N usecs". Prints how many suspend and resume callbacks ran, their
# times, and after "ERR" the lines of callbacks that failed.
callback_ms() {
	awk -v a=" $1: " 'index($0, a) && / returned -?[0-9]+ after [0-9]+ usecs/ {
			# The callback: the word before "returned", or before the
			# name of its module ("vblk_pm_resume [vblk] returned").
			us = $(NF - 1); cb = $(NF - 5)
			if (cb ~ /^\[.*\]$/) cb = $(NF - 6)
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
	load_start "$stop"
	fpid=$FIO_PID
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
		note "$line"
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
	load_stop "$stop"
}

case_s2idle() { cycles freeze; }
case_hibernate() { cycles disk; }

pm_cases() {
	run_case "pm $DRIVER: s2idle cycles under fio" case_s2idle
	run_case "pm $DRIVER: hibernation (freeze/restore) cycles under fio" case_hibernate
}

main() {
	[ "${1:-}" != --quick ] || QUICK=1
	# The "# recovery:" lines of the cases reach the output through fd 3.
	io_init
	echo "# sleep cycles: kernel $(uname -r)$([ "$QUICK" = 1 ] && echo ', quick'); /sys/power/state: $(cat /sys/power/state); mem_sleep: $(cat /sys/power/mem_sleep 2>/dev/null || echo -)"
	# Per-device callback times in the kernel log; a short s2idle test delay.
	echo 1 >/sys/power/pm_print_times
	if [ -w /sys/module/suspend/parameters/pm_test_delay ]; then
		echo 1 >/sys/module/suspend/parameters/pm_test_delay
	fi
	echo "# pm_test levels: $(cat /sys/power/pm_test); s2idle test delay $(cat /sys/module/suspend/parameters/pm_test_delay 2>/dev/null || echo 5) s, hibernation 5 s"
	# shellcheck disable=SC2086 # a list
	each_driver "sleep cycles" pm_cases ${PM_DRIVERS:-virtio_blk vblk}
	local f
	for f in /tmp/pm-level-*; do
		[ -e "$f" ] && echo "# pm: ${f#/tmp/pm-level-} ran as $(cat "$f")"
	done
	summary
	[ "$n_fail" = 0 ]
}

main "$@"
