#!/bin/bash
# VM operations with I/O in flight, the guest's side: while fio writes and
# verifies, the host (scripts/vmops-run) stops the VM for a while and
# continues it, saves and loads a snapshot of it (savevm/loadvm on qcow2),
# and migrates it to a file and into a new QEMU. Against the in-tree
# virtio_blk (the reference), then vblk. Runs INSIDE the initramfs guest
# that scripts/vmops-run boots (under virtme-ng the root is virtio 9p, and
# QEMU refuses to migrate or snapshot a VM with a 9p export mounted).
#
#   tests/guest/vmops.sh
#
# Disks (by serial): vm-ref stays with virtio_blk, vm-vblk is moved to
# vblk. For each driver:
#
#   attach   the driver takes its disk; fio fills the first 64 MiB with
#            verify blocks (a header with offset and crc32c every 4 KiB)
#   stop, savevm, migrate (VMOPS_OPS, default all three, in that order):
#            fio random-writes 4k-64k at QD32 and verifies behind itself;
#            once it runs, the guest asks the host for the operation with a
#            line "vmops-op: OP DRIVER SEQ" on its output (ttyS1) and waits
#            (VMOPS_OP_WAIT guest seconds, default 300: the guest's clock
#            stands still while the VM does) for the host's answer on ttyS3,
#            "vmops-done OP SEQ key=value...", sent when the VM runs again.
#            Then fio runs 5 s more and stops; the case fails on an fio
#            error or verify mismatch, no I/O for 120 s after the answer,
#            an "I/O error" in the kernel log, and for vblk on a device
#            reset ("device reset, rings rebuilt", recoveries going up by
#            other than VMOPS_WANT_RESETS, default 0), a request failed
#            ("failing all I/O"), a rescued completion, or a state other
#            than live.
#   verify   fio reads the whole 64 MiB back and checks every header; a new
#            verified write elsewhere works; vblk's state is live.
#
# Each operation prints a "# vmops:" line: what the host measured (how long
# the VM did not run, and the operation's own times), what the guest saw
# (how far its clock and its RTC moved across the operation: the guest's
# clock stands still while the VM is stopped, the RTC follows the host),
# the longest time without an I/O completion by the guest's clock around
# the operation, the time of a 4 KiB direct read after it, and for vblk
# its rekicks (doorbells rung again by the timeout handler) and warnings.
# Ends with "N passed, N failed, N skipped"; exit 1 on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/guest/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/guest/io-lib.sh
. "$here/io-lib.sh"

export VBLK_BIND_SETTLE=0 # no udev in this guest
REGION=64m                 # what fio fills, rewrites and verifies
SPARE=128m                 # offset of the after-the-operations write
IO_TAG=vmops
IO_OUT=${VMOPS_OUT:-/tmp/vmops-cases}
declare -A SERIAL_OF=([virtio_blk]=vm-ref [vblk]=vm-vblk)
SEQ=0 # the last request to the host

# vblk's counters: recoveries, and rescued and rekicks of all queues
# (the counters file's "total" line); "- - -" for the in-tree driver.
vblk_numbers() {
	local rec res kick
	if [ "$DRIVER" != vblk ]; then
		echo "- - -"
		return 0
	fi
	rec=$(sed -n 's/^recoveries //p' "/sys/block/$DISK/vblk/config")
	read -r res kick <<<"$(awk '$1 == "total" { print $11, $12 }' "/sys/block/$DISK/vblk/counters")"
	echo "$rec $res $kick"
}

# The number of completed reads and writes of the disk (sets IOS).
ios() {
	local r w
	read -r r _ _ _ w _ <"/sys/block/$DISK/stat"
	IOS=$((r + w))
}

# gap_watch OUT STOP: until file STOP appears (or 900 s of the guest's
# clock), the longest time (ms) in which the disk completed nothing, into
# OUT.
gap_watch() {
	local last=-1 t_last=0 max=0 gap end=$((SECONDS + 900))
	while [ ! -e "$2" ] && [ $SECONDS -lt $end ]; do
		ios
		now_us
		if [ "$IOS" != "$last" ]; then
			last=$IOS t_last=$NOW_US
		fi
		gap=$(((NOW_US - t_last) / 1000))
		[ "$gap" -le "$max" ] || max=$gap
		nap 0.05
	done
	echo "$max" >"$1"
}

# await_io SECONDS: until the disk completes one more I/O; prints the ms.
await_io() {
	local i t0 n0
	ios
	n0=$IOS
	now_us
	t0=$NOW_US
	for ((i = 0; i < $1 * 100; i++)); do
		ios
		[ "$IOS" = "$n0" ] || { ms_since "$t0"; return 0; }
		nap 0.01
	done
	return 1
}

# rtc: the RTC's seconds (it follows the host's clock), or - without one.
rtc() { cat /sys/class/rtc/rtc0/since_epoch 2>/dev/null || echo -; }

# ask_host OP: ask for the operation, wait for its answer; sets ANSWER
# (its key=value part).
ask_host() {
	local op=$1 line deadline
	# Unique in the boot (a case runs in a subshell: its own count would
	# be lost), so that an answer to another request is not taken.
	SEQ=$case_no
	echo "vmops-op: $op $DRIVER $SEQ" >&3
	deadline=$((SECONDS + ${VMOPS_OP_WAIT:-300}))
	while [ $SECONDS -lt $deadline ]; do
		line=''
		IFS= read -r -t $((deadline - SECONDS + 1)) line <&4 || true
		line=${line%$'\r'}
		step "host: ${line:-(nothing)}"
		case $line in
		"vmops-done $op $SEQ "*) ANSWER=${line#"vmops-done $op $SEQ "}; return 0 ;;
		"vmops-fail $op $SEQ "*) fail "the host could not $op: ${line#"vmops-fail $op $SEQ "}" ;;
		esac
	done
	fail "no answer from the host to '$op' within ${VMOPS_OP_WAIT:-300} s of the guest's clock"
}

# case_op OP: the operation OP done by the host while fio writes and
# verifies.
case_op() {
	local op=$1 stop gapf n0 num0 num1 r0 r1 t0 gclk io_ms rd_ms gap ir iw kmsg
	local rec0 res0 kick0 rec1 res1 kick1 warns vb='' i
	disk
	stop=/tmp/vmops-stop-$DRIVER-$op
	gapf=/tmp/vmops-gap-$DRIVER-$op
	load_start "$stop"
	await_io 30 >/dev/null || fail "fio did no I/O within 30 s"
	sleep 2
	kill -0 "$FIO_PID" 2>/dev/null || fail "fio ended early: $(tail -3 /tmp/vmops-fio-load)"
	n0=$(dmesg | wc -l)
	num0=$(vblk_numbers)
	read -r rec0 res0 kick0 <<<"$num0"
	read -r ir iw <"/sys/block/$DISK/inflight"
	rm -f "$gapf" "$gapf.stop"
	gap_watch "$gapf" "$gapf.stop" &
	r0=$(rtc)
	now_us
	t0=$NOW_US
	ask_host "$op"
	gclk=$(ms_since "$t0")
	r1=$(rtc)
	io_ms=$(await_io 120) || { stuck_dump; fail "no I/O completed within 120 s after the host's answer"; }
	now_us
	t0=$NOW_US
	dd if="/dev/$DISK" of=/dev/null bs=4k count=1 skip=$((32768 + SEQ)) iflag=direct 2>/dev/null ||
		fail "a 4 KiB read after $op failed"
	rd_ms=$(ms_since "$t0")
	sleep 5
	touch "$gapf.stop"
	for ((i = 0; i < 50; i++)); do
		[ -s "$gapf" ] && break
		nap 0.1
	done
	read1 "$gapf"
	gap=${REPLY:-?}
	kill -0 "$FIO_PID" 2>/dev/null || fail "fio ended after $op: $(tail -3 /tmp/vmops-fio-load)"
	load_stop "$stop"
	num1=$(vblk_numbers)
	read -r rec1 res1 kick1 <<<"$num1"
	kmsg=/tmp/vmops-kmsg-$DRIVER-$op
	dmesg | tail -n +"$((n0 + 1))" >"$kmsg"
	sed 's/^/+ kmsg: /' "$kmsg" | tail -20
	warns=$(grep -c 'from a device that looks sane' "$kmsg" || true)
	[ "$r0" = - ] || r1=$((r1 - r0))
	[ "$DRIVER" != vblk ] ||
		vb="; vblk: recoveries +$((rec1 - rec0)), rescued +$((res1 - res0)), rekicks +$((kick1 - kick0)), slow-device warnings $warns"
	note "# vmops: $DRIVER $op: host: $ANSWER; guest: clock +$gclk ms, RTC +$r1 s across the operation; longest time without an I/O completion $gap ms (guest clock); first I/O $io_ms ms and a 4 KiB read $rd_ms ms after the answer; in flight before: $ir reads, $iw writes${vb:-}"
	! grep -E 'I/O error|critical (medium|target) error' "$kmsg" >/tmp/vmops-ioerr ||
		fail "I/O error in the kernel log: $(head -1 /tmp/vmops-ioerr)"
	if [ "$DRIVER" = vblk ]; then
		! grep -q 'failing all I/O' "$kmsg" || fail "vblk failed the disk's I/O: $(grep -m1 'failing all I/O' "$kmsg")"
		[ $((rec1 - rec0)) = "${VMOPS_WANT_RESETS:-0}" ] ||
			fail "vblk recoveries went up by $((rec1 - rec0)) across $op (want ${VMOPS_WANT_RESETS:-0}): $(grep -m1 'device reset' "$kmsg" || echo 'no reset line')"
		[ "${VMOPS_WANT_RESETS:-0}" != 0 ] || ! grep -q 'device reset, rings rebuilt' "$kmsg" ||
			fail "vblk reset the device across $op: $(grep -m1 'device reset' "$kmsg")"
		[ "$res1" = "$res0" ] || fail "vblk rescued $((res1 - res0)) completions across $op (a lost interrupt?)"
		grep -q '^state live$' "/sys/block/$DISK/vblk/config" ||
			fail "vblk state $(sed -n 's/^state //p' "/sys/block/$DISK/vblk/config") after $op (want live)"
	fi
}

vmops_cases() {
	local op
	for op in ${VMOPS_OPS:-stop savevm migrate}; do
		run_case "vmops $DRIVER: $op under fio" case_op "$op"
	done
}

main() {
	# The "# vmops:" lines and the requests to the host reach the output
	# through fd 3; the host's answers come on ttyS3.
	io_init
	exec 4</dev/ttyS3
	echo "# vmops: kernel $(uname -r); clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource); RTC $(rtc)${VBLK_PARAMS:+; vblk: $VBLK_PARAMS}"
	# shellcheck disable=SC2086 # a list
	each_driver "VM operations" vmops_cases ${VMOPS_DRIVERS:-virtio_blk vblk}
	summary
	[ "$n_fail" = 0 ]
}

main "$@"
