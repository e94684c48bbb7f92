#!/bin/bash
# vblk's io_uring passthrough (/dev/<disk>c0, docs/passthrough.md), driven
# by tools/vblk-ptbench, with QEMU's own accounting (query-blockstats over
# QMP) as the witness of what reached the device. vblk only: the in-tree
# driver has no passthrough. Runs INSIDE a guest booted by scripts/vm-run
# (tests/guest/run-all.sh, suite "passthru"):
#
#   tests/guest/passthru.sh [--quick]
#
# Disk (by serial; PT_DISK, default vmq4: four queues, guest-suite's vblk
# group), moved to vblk (insmod with poll_queues=1, disk_prefix=pt) and
# back to virtio_blk at the end. Cases:
#
#   char device     /dev/<disk>c0 exists, is a char device, and its class
#                   entry (vblk-generic) leads to the disk
#   verified I/O    sequential 4k writes with a pattern (QD8, batch 4), read
#                   back and checked; random reads with registered buffers
#                   and a registered file, checked; the host counted at
#                   least as many writes and reads as the client did
#   commands        flush, write zeroes, discard and get id one by one: each
#                   answers 0 (id: the disk's serial), the host counted the
#                   flush (flush_operations) and the write zeroes (QEMU
#                   accounts them as writes); discard is not accounted by
#                   QEMU (witness.sh says why) and is checked by its answer
#   iopoll          random reads, checked, on the poll queue with
#                   IORING_SETUP_IOPOLL, and vblk's poll queue shows the
#                   requests; on a kernel without blk_rq_poll() (6.1) the
#                   command must be refused with EOPNOTSUPP, as vblk logs at
#                   load (skip, saying so)
#   permissions     an unprivileged user (nobody) with the node readable:
#                   a write through a read-only fd is EBADF, a flush EPERM,
#                   a read works; then PT_RANDOM (default 3000, --quick
#                   1000) random and hostile commands: the client never
#                   crashes, every refusal is an errno, and the host counts
#                   no write, flush or discard (query-blockstats before and
#                   after: wr_operations, flush_operations,
#                   unmap_operations); the data written before still reads
#                   back checked
#   removal         64k random reads at QD16 through the char device while
#                   the disk is unbound: the unbind ends within 60 s, the
#                   client ends within 30 s, the char device is gone, the
#                   disk comes back under virtio_blk
#   held open       the char device held open across the unbind: the unbind
#                   ends, vblk cannot be unloaded while the file is open
#                   (it holds the module), and can be once it is closed
#
# Ends with "N passed, N failed, N skipped"; exit 1 on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/guest/lib.sh
. "$here/lib.sh"

S=${PT_DISK:-vmq4}
N_RANDOM=${PT_RANDOM:-3000}
PT=$REPO/tools/vblk-ptbench/vblk-ptbench
export VBLK_BIND_SETTLE=0

# ---- helpers ----------------------------------------------------------------

# The disk on vblk (DISK, CDEV), loading vblk with a poll queue first.
on_vblk() {
	local ko
	ko=$(vblk_ko) || fail "no vblk.ko for $(uname -r)"
	grep -q '^vblk ' /proc/modules || insmod "$ko" poll_queues=1 disk_prefix=pt ||
		fail "insmod $ko poll_queues=1 failed"
	await_disk "$S" 30 || fail "no disk $S"
	driver_of_disk "$DISK"
	if [ "$DRV" != vblk ]; then
		dev_of_disk "$DISK" || fail "no device for $DISK"
		move_disk "$DEV_ADDR" vblk "$S"
	fi
	CDEV=/dev/${DISK}c0
	step "$S: /dev/$DISK under vblk, passthrough $CDEV"
}

# pt ARGS...: the client, its output in the case log and in PT_OUT;
# run_pt CMD...: the same for a command line that runs the client (as
# another user).
run_pt() {
	local rc=0
	PT_OUT=$("$@" 2>&1) || rc=$?
	printf '%s\n' "$PT_OUT" | tail -12 | sed 's/^/  pt: /'
	return $rc
}
pt() { run_pt "$PT" "$@"; }
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# The client's I/O count from its summary line.
pt_ios() { sed -n 's/^summary: .*: \([0-9]*\) I\/Os in .*/\1/p' <<<"$PT_OUT"; }

# pt_cmd WANT [as_nobody] ARGS...: one --cmd (ARGS: the client's), whose
# answer must contain WANT.
pt_cmd() {
	local want=$1 who=()
	shift
	[ "$1" != as_nobody ] || { who=(as_nobody); shift; }
	run_pt "${who[@]}" "$PT" "$@" || true
	grep -q "$want" <<<"$PT_OUT" || fail "vblk-ptbench $*: want '$want', got: $(tail -2 <<<"$PT_OUT")"
}

# Whether this kernel and vblk can poll passthrough commands (vblk logs
# at load when it cannot). Not "dmesg | grep -q" under pipefail: grep's
# early exit kills dmesg with SIGPIPE once the log is long, and the
# pipeline then fails whatever grep found.
has_iopoll() { ! grep -q 'passthrough: this kernel has no blk_rq_poll()' < <(dmesg); }

# The requests of vblk's last queue (the poll queue with poll_queues=1).
poll_queue_requests() {
	awk '$1 ~ /^[0-9]+$/ { r = $2 } END { print r + 0 }' "/sys/block/$DISK/vblk/counters"
}

# ---- cases ------------------------------------------------------------------

case_cdev() {
	on_vblk
	[ -c "$CDEV" ] || fail "no char device $CDEV"
	local link
	link=$(readlink -f "/sys/class/vblk-generic/${DISK}c0/device" 2>/dev/null) ||
		fail "no /sys/class/vblk-generic/${DISK}c0/device"
	[ "${link##*/}" = "$DISK" ] || fail "${DISK}c0's device is ${link##*/}, not $DISK"
	step "$CDEV $(stat -c '%t:%T' "$CDEV"), device $link"
}

case_verified_io() {
	local w r0 w0 n
	on_vblk
	host_stats "$S" || fail "no host accounting for $S"
	r0=${HS[rd_operations]} w0=${HS[wr_operations]}
	VBLK_PTBENCH_RDWR=1 pt --rw write --bs 4k --qd 8 --batch 4 --runtime 2 --size 16m --verify "$CDEV" ||
		fail "verified writes failed"
	w=$(pt_ios)
	pt --rw read --bs 4k --qd 8 --batch 4 --runtime 2 --size 16m --verify "$CDEV" || fail "read back failed"
	n=$(pt_ios)
	pt --rw randread --bs 4k --qd 8 --batch 4 --runtime 2 --size 16m --verify --fixed --regfile "$CDEV" ||
		fail "random reads with registered buffers and file failed"
	n=$((n + $(pt_ios)))
	grep -q ', 0 verify failures' <<<"$PT_OUT" || fail "verify failures"
	host_stats "$S" || fail "no host accounting for $S"
	step "client: $w writes, $n reads; host: $((HS[wr_operations] - w0)) writes, $((HS[rd_operations] - r0)) reads"
	if [ "$w" = 0 ] || [ "$n" = 0 ]; then fail "the client did no I/O"; fi
	[ $((HS[wr_operations] - w0)) -ge "$w" ] || fail "the host saw fewer writes than the client made"
	[ $((HS[rd_operations] - r0)) -ge "$n" ] || fail "the host saw fewer reads than the client made"
}

case_commands() {
	local f0 w0
	on_vblk
	host_stats "$S" || fail "no host accounting for $S"
	f0=${HS[flush_operations]} w0=${HS[wr_operations]}
	VBLK_PTBENCH_RDWR=1 pt_cmd 'cmd flush res 0' --cmd flush "$CDEV"
	host_stats "$S" || fail "no host accounting for $S"
	[ "${HS[flush_operations]}" -gt "$f0" ] || fail "the host saw no flush"
	VBLK_PTBENCH_RDWR=1 pt_cmd 'cmd zeroes res 0' --cmd zeroes:65536:65536 "$CDEV"
	host_stats "$S" || fail "no host accounting for $S"
	[ "${HS[wr_operations]}" -gt "$w0" ] || fail "the host saw no write zeroes (accounted as a write)"
	VBLK_PTBENCH_RDWR=1 pt_cmd 'cmd discard res 0' --cmd discard:131072:65536 "$CDEV"
	pt_cmd "id $S" --cmd "id:0:$(cat "/sys/block/$DISK/queue/logical_block_size")" "$CDEV"
	# Out of range and malformed: refused, nothing sent.
	pt_cmd 'error ERANGE' --cmd "read:$(cat "/sys/block/$DISK/size"):4096" "$CDEV"
	pt_cmd 'error EINVAL' --cmd read:1:1000 "$CDEV"
	step "host: flushes $f0 -> ${HS[flush_operations]}, writes $w0 -> ${HS[wr_operations]}"
}

case_iopoll() {
	local p0 p1
	on_vblk
	if ! has_iopoll; then
		pt --rw randread --qd 4 --runtime 1 --size 16m --iopoll "$CDEV" &&
			fail "IOPOLL worked on a kernel where vblk said it cannot"
		grep -qE 'Operation not supported|EOPNOTSUPP' <<<"$PT_OUT" || fail "IOPOLL refused, but not with EOPNOTSUPP"
		skip "this kernel has no blk_rq_poll(): IOPOLL refused with EOPNOTSUPP, as vblk logged"
	fi
	grep -q 'poll' "/sys/block/$DISK/vblk/config" || true
	p0=$(poll_queue_requests)
	pt --rw randread --bs 4k --qd 4 --runtime 2 --size 16m --verify --iopoll "$CDEV" || fail "IOPOLL reads failed"
	p1=$(poll_queue_requests)
	step "poll queue requests: $p0 -> $p1 for $(pt_ios) I/Os"
	[ $((p1 - p0)) -ge "$(pt_ios)" ] || fail "the poll queue took $((p1 - p0)) requests for $(pt_ios) polled I/Os"
}

case_permissions() {
	local w0 f0 u0 k
	on_vblk
	chmod 0644 "$CDEV"
	pt_cmd 'error EBADF' as_nobody --cmd write:0:4096 "$CDEV"
	pt_cmd 'error EPERM' as_nobody --cmd flush "$CDEV"
	pt_cmd 'cmd read res 4096' as_nobody --cmd read:0:4096 "$CDEV"
	host_stats "$S" || fail "no host accounting for $S"
	w0=${HS[wr_operations]} f0=${HS[flush_operations]} u0=${HS[unmap_operations]:-0}
	as_nobody "$PT" --random-cmds "$N_RANDOM" --seed 7 "$CDEV" >/tmp/pt-random 2>&1 ||
		fail "the client failed on random commands: $(tail -3 /tmp/pt-random)"
	sed 's/^/  /' /tmp/pt-random
	grep -q "random-cmds: $N_RANDOM sent" /tmp/pt-random || fail "not all random commands were answered"
	host_stats "$S" || fail "no host accounting for $S"
	for k in wr_operations flush_operations; do
		step "host $k: ${HS[$k]}"
	done
	[ "${HS[wr_operations]}" = "$w0" ] || fail "an unprivileged read-only user wrote: host writes $w0 -> ${HS[wr_operations]}"
	[ "${HS[flush_operations]}" = "$f0" ] || fail "an unprivileged read-only user flushed: $f0 -> ${HS[flush_operations]}"
	[ "${HS[unmap_operations]:-0}" = "$u0" ] || fail "an unprivileged read-only user discarded"
	pt --rw read --bs 4k --qd 4 --runtime 1 --size 16m --verify "$CDEV" || fail "the data written before no longer reads back"
}

# unbind: the disk back to virtio_blk, within 60 s.
unbind() {
	dev_of_disk "$DISK" || fail "no device for $DISK"
	bind_within "$(bind_target virtio_blk)" 60
}

case_removal() {
	local pid
	on_vblk
	"$PT" --rw randread --bs 64k --qd 16 --runtime 20 --size 64m "$CDEV" >/tmp/pt-removal 2>&1 &
	pid=$!
	sleep 2
	kill -0 "$pid" 2>/dev/null || fail "the client ended before the unbind: $(tail -2 /tmp/pt-removal)"
	unbind
	await_exit "$pid" 30 "the client still ran 30 s after the unbind"
	wait "$pid" || true
	tail -3 /tmp/pt-removal | sed 's/^/  pt: /'
	[ ! -e "$CDEV" ] || fail "$CDEV still there after the unbind"
	await_disk "$S" 30 || fail "$S did not come back"
	driver_of_disk "$DISK"
	[ "$DRV" = virtio_blk ] || fail "$S is under $DRV after the unbind"
}

case_held_open() {
	local fd
	on_vblk
	exec {fd}<"$CDEV"
	unbind
	if rmmod vblk 2>/dev/null; then
		exec {fd}<&-
		fail "vblk unloaded while its char device was open"
	fi
	step "rmmod refused while the char device is open"
	exec {fd}<&-
	rmmod vblk || fail "rmmod after the close failed"
	step "rmmod after the close worked"
}

main() {
	[ "${1:-}" != --quick ] || N_RANDOM=${PT_RANDOM:-1000}
	[ -x "$PT" ] || { echo "FAIL - passthru: no $PT (make ptbench)"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
	load_manifest ""
	case_logs passthru
	# A kernel log problem before the first case is not its fault.
	load_patterns
	kmsg_scan
	echo "# passthrough on $S, kernel $(uname -r)"
	run_case "passthru: char device with the disk" case_cdev
	run_case "passthru: verified I/O, registered buffers and file, host-counted" case_verified_io
	run_case "passthru: flush, write zeroes, discard, get id, out of range" case_commands
	run_case "passthru: IOPOLL on the poll queue" case_iopoll
	run_case "passthru: unprivileged read-only random commands write nothing (host-counted)" case_permissions
	run_case "passthru: unbind with commands in flight" case_removal
	run_case "passthru: char device held open across unbind" case_held_open
	# Back to where the suite found the disk.
	if find_disk "$S"; then
		driver_of_disk "$DISK"
		if [ "$DRV" != virtio_blk ] && dev_of_disk "$DISK"; then
			"$BIND" "$(bind_target virtio_blk)" "$DEV_ADDR" || true
		fi
	fi
	if grep -q '^vblk ' /proc/modules; then rmmod vblk 2>/dev/null || true; fi
	summary
	[ "$n_fail" = 0 ]
}

main "$@"
