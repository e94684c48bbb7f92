#!/bin/bash
# The host as witness: what the driver under test claims to send, checked
# against what QEMU saw (QMP: query-blockstats, x-query-virtio-queue-status,
# trace events in $VBLK_OUT/qemu.log). Runs INSIDE a guest booted by
# scripts/vm-run, once per driver (tests/guest/run-all.sh):
#
#   DRIVER=virtio_blk|vblk tests/guest/witness.sh
#
# Disks by serial (a missing one fails, never skips), all of them on
# virtio_blk when the suite starts and again when it ends:
#   vblk-trim  write-back, drive.discard=unmap, ioeventfd=off (guest-suite's
#              common disk): flushes, discards, write zeroes, doorbells
#   vmq4       num-queues=4: which virtqueue carries which CPU's requests
#   vleio      blkdebug fails every read and write of sector eio=
# W_ONLY="flush discard zeroes eio queues doorbells" (any of them) runs only
# those cases; the others are reported as skipped.
# For DRIVER=vblk, build/$(uname -r)/vblk.ko (or $VBLK_KO) is insmod'ed
# when vblk is not loaded, with disk_prefix=wvb, and removed at the end.
#
# What is not witnessed by the host, and why: secure erase (QEMU offers no
# VIRTIO_BLK_F_SECURE_ERASE; tests/unit and vblk's counters only); with
# ioeventfd on, or an iothread, QEMU's notification count is eventfd reads,
# not doorbells, so doorbells are counted on the ioeventfd=off disk only.
#
# Each case confirms the disk is on DRIVER before it asserts anything.
# Ends with "N passed, N failed, N skipped"; exit 1 on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/guest/lib.sh
. "$here/lib.sh"

DRIVER=${DRIVER:-}
W_IO=${W_IO:-vblk-trim} W_MQ=${W_MQ:-vmq4} W_EIO=${W_EIO:-vleio}
FSYNCS=${W_FSYNCS:-40}
declare -A PCI_OF=()

# on_driver SERIAL: DISK is the disk and it is on DRIVER, or the case fails
# (a disk left on the other driver by an earlier failure is not tested
# under the wrong name).
on_driver() {
	await_disk "$1" 15 || fail "no disk with serial $1"
	driver_of_disk "$DISK"
	[ "$DRV" = "$DRIVER" ] || fail "$1 is /dev/$DISK under $DRV, not $DRIVER"
	step "$1: /dev/$DISK under $DRV"
}

# counters DISK: vblk's own counters' total row into VC[column].
declare -A VC=()
vblk_total() {
	local -a head row
	VC=()
	{
		read -ra head
		while read -ra row; do
			[ "${row[0]}" = total ] || continue
			local i
			for i in "${!head[@]}"; do VC[${head[$i]}]=${row[$i]}; done
		done
	} <"/sys/block/$1/vblk/counters"
	[ -n "${VC[doorbells]:-}" ] || fail "no total row with doorbells in /sys/block/$1/vblk/counters"
}

# ---- cases ------------------------------------------------------------------

case_attach_all() {
	local s ko
	if [ "$DRIVER" = vblk ] && ! grep -q '^vblk ' /proc/modules; then
		ko=${VBLK_KO:-$(vblk_ko)} || fail "no build/$(uname -r)/vblk.ko"
		step "insmod $ko disk_prefix=wvb (sha256 $(sha256sum <"$ko" | cut -c1-16))"
		insmod "$ko" disk_prefix=wvb
		: >/tmp/vblk-witness-loaded
	fi
	for s in "$W_IO" "$W_MQ" "$W_EIO"; do
		move_disk "${PCI_OF[$s]}" "$DRIVER" "$s"
		on_driver "$s"
	done
}

case_detach_all() {
	local s
	if [ "$DRIVER" = vblk ]; then
		for s in "$W_IO" "$W_MQ" "$W_EIO"; do
			step "$s back to virtio_blk"
			"$BIND" virtio-pci "${PCI_OF[$s]}" >/dev/null
			await_disk "$s" 30 || fail "$s did not return to virtio_blk"
		done
		if [ -e /tmp/vblk-witness-loaded ]; then
			udevadm settle --timeout=30 2>/dev/null || true
			rmmod vblk
			rm -f /tmp/vblk-witness-loaded
		fi
	fi
	for s in "$W_IO" "$W_MQ" "$W_EIO"; do
		await_disk "$s" 15 || fail "no disk $s at the end"
		driver_of_disk "$DISK"
		[ "$DRV" = virtio_blk ] || fail "$s ends on $DRV, not virtio_blk"
	done
}

# fsync_n DEV N: N fsync() calls on the raw device, one after the other
# (opened read-only: closing it wakes no udev rule).
fsync_n() {
	python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for _ in range(int(sys.argv[2])):
    os.fsync(fd)
os.close(fd)' "$1" "$2"
}

# N fsync() on a write-back disk: QEMU counts exactly N flushes (one thread:
# nothing for the block layer to merge). In write-through mode: none.
case_host_flush() {
	local s=$W_IO f0 f1 wc=queue/write_cache
	on_driver "$s"
	udevadm settle --timeout=30 2>/dev/null || true
	read1 "/sys/block/$DISK/$wc"
	[ "$REPLY" = "write back" ] || fail "$wc is '$REPLY', not 'write back' (cache=writeback)"
	host_stats "$s" || fail "no host statistics for $s"
	f0=${HS[flush_operations]}
	fsync_n "/dev/$DISK" "$FSYNCS"
	host_stats "$s" || fail "no host statistics for $s"
	f1=${HS[flush_operations]}
	step "write back: $FSYNCS fsync() -> host flush_operations $f0 -> $f1"
	[ $((f1 - f0)) = "$FSYNCS" ] || fail "host counted $((f1 - f0)) flushes for $FSYNCS fsync() calls"
	echo "write through" >"/sys/block/$DISK/cache_type"
	fsync_n "/dev/$DISK" "$FSYNCS"
	host_stats "$s" || fail "no host statistics for $s"
	echo "write back" >"/sys/block/$DISK/cache_type"
	step "write through: $FSYNCS fsync() -> host flush_operations $f1 -> ${HS[flush_operations]}"
	[ "${HS[flush_operations]}" = "$f1" ] || fail "host counted $((HS[flush_operations] - f1)) flushes in write-through mode"
	[ "${HS[failed_flush_operations]:-0}" = 0 ] || fail "host failed ${HS[failed_flush_operations]} flushes"
}

# blkdiscard of 64 MiB: the image's file node discards exactly those bytes
# (QEMU's virtio-blk does not account discards; file-posix does).
case_host_discard() {
	local s=$W_IO n0 b0 e0
	on_driver "$s"
	[ "${MF[$s:discard]}" = unmap ] || fail "$s has drive discard=${MF[$s:discard]}, not unmap"
	host_stats "$s" || fail "no host statistics for $s"
	[ -n "${HS[file_discard_bytes_ok]:-}" ] || fail "no file node discard statistics for $s"
	n0=${HS[file_discard_nb_ok]} b0=${HS[file_discard_bytes_ok]} e0=${HS[file_discard_nb_failed]}
	blkdiscard -o $((64 << 20)) -l $((64 << 20)) "/dev/$DISK" || fail "blkdiscard failed"
	host_stats "$s" || fail "no host statistics for $s"
	step "blkdiscard 64 MiB: host file node discards $n0 -> ${HS[file_discard_nb_ok]}, bytes $b0 -> ${HS[file_discard_bytes_ok]}, failed $e0 -> ${HS[file_discard_nb_failed]}; BlockBackend unmap_operations ${HS[unmap_operations]:-?}"
	[ $((HS[file_discard_bytes_ok] - b0)) = $((64 << 20)) ] ||
		fail "host discarded $((HS[file_discard_bytes_ok] - b0)) bytes for a 64 MiB blkdiscard"
	[ "${HS[file_discard_nb_failed]}" = "$e0" ] || fail "host discards failed"
}

# zero_writes MIB_OFF MIB FLAGS_WANT: the trace since trace_mark holds
# write-zeroes requests (blk_co_pwritev with BDRV_REQ_ZERO_WRITE, 0x2) that
# cover exactly the range, with BDRV_REQ_MAY_UNMAP (0x4) as wanted (0 or 4),
# and no data write into it.
zero_writes() {
	local lo=$(($1 << 20)) len=$(($2 << 20)) unmap=$3 sum
	sum=$(trace_since | python3 -c '
import re, sys
lo, hi, unmap = (int(a) for a in sys.argv[1:])
z = reqs = data = bad = wrong = 0
for l in sys.stdin:
    m = re.search(r"blk_co_pwritev .*offset (\d+) bytes (\d+) flags (0x[0-9a-f]+)", l)
    if not m:
        continue
    off, n, fl = int(m[1]), int(m[2]), int(m[3], 16)
    if off + n <= lo or off >= hi:
        continue
    if off < lo or off + n > hi:
        bad += 1
    elif not fl & 2:
        data += n
    elif fl & 4 != unmap:
        wrong += 1
    else:
        z += n
        reqs += 1
print(z, reqs, data, bad, wrong)' "$lo" "$((lo + len))" "$unmap")
	read -r ZW_BYTES ZW_REQS ZW_DATA ZW_BAD ZW_FLAG <<<"$sum"
	step "host: $ZW_REQS write-zeroes requests, $ZW_BYTES bytes; data writes $ZW_DATA bytes; outside the range $ZW_BAD; unmap flag not $unmap: $ZW_FLAG"
	[ "$ZW_DATA" = 0 ] || fail "host saw $ZW_DATA bytes of data writes where zeroes were asked"
	[ "$ZW_BAD" = 0 ] && [ "$ZW_FLAG" = 0 ] || fail "host saw $ZW_BAD requests across the range's ends, $ZW_FLAG with the unmap flag not $unmap"
	[ "$ZW_BYTES" = "$len" ] || fail "host saw $ZW_BYTES bytes of write zeroes for $2 MiB"
}

# BLKZEROOUT and a punched hole reach QEMU as write-zeroes requests (not as
# data, not as discards): without and with the unmap flag.
case_host_zeroes() {
	local s=$W_IO
	on_driver "$s"
	read1 "/sys/block/$DISK/queue/write_zeroes_max_bytes"
	[ "$REPLY" -gt 0 ] || fail "write_zeroes_max_bytes is $REPLY"
	trace_on blk_co_pwritev || fail "trace-event-set-state failed"
	trace_mark
	blkdiscard -z -o $((216 << 20)) -l $((32 << 20)) "/dev/$DISK" || { trace_off blk_co_pwritev; fail "BLKZEROOUT failed"; }
	trace_settle
	zero_writes 216 32 0 || { trace_off blk_co_pwritev; exit 1; }
	trace_mark
	fallocate --punch-hole -o $((248 << 20)) -l $((32 << 20)) "/dev/$DISK" || { trace_off blk_co_pwritev; fail "punch-hole failed"; }
	trace_settle
	trace_off blk_co_pwritev
	zero_writes 248 32 4
}

# An error blkdebug injects on the host reaches the application: a direct
# read and a direct write of the sector fail with EIO, QEMU counts them as
# failed, and the blocks next to it still work.
case_host_eio() {
	local s=$W_EIO sec lbs=${MF[$W_EIO:lbs]} r0 w0 err=/tmp/witness-eio.err blk
	on_driver "$s"
	sec=${MF[$s:eio]}
	[ "$sec" != - ] || fail "$s has no eio= sector in the manifest"
	blk=$((sec * 512 / lbs))
	host_stats "$s" || fail "no host statistics for $s"
	r0=${HS[failed_rd_operations]} w0=${HS[failed_wr_operations]}
	dd if="/dev/$DISK" of=/dev/null bs="$lbs" skip=$((blk - 8)) count=1 iflag=direct status=none ||
		fail "a read 8 blocks before the injected sector failed"
	if dd if="/dev/$DISK" of=/dev/null bs="$lbs" skip="$blk" count=1 iflag=direct status=none 2>"$err"; then
		fail "a direct read of sector $sec (blkdebug EIO) succeeded"
	fi
	step "read of sector $sec: $(cat "$err")"
	grep -q 'Input/output error' "$err" || fail "the read failed, but not with EIO: $(cat "$err")"
	if dd if=/dev/zero of="/dev/$DISK" bs="$lbs" seek="$blk" count=1 oflag=direct status=none 2>"$err"; then
		fail "a direct write of sector $sec (blkdebug EIO) succeeded"
	fi
	step "write of sector $sec: $(cat "$err")"
	grep -q 'Input/output error' "$err" || fail "the write failed, but not with EIO: $(cat "$err")"
	host_stats "$s" || fail "no host statistics for $s"
	step "host failed_rd_operations $r0 -> ${HS[failed_rd_operations]}, failed_wr_operations $w0 -> ${HS[failed_wr_operations]}"
	[ "${HS[failed_rd_operations]}" -gt "$r0" ] || fail "host counted no failed read"
	[ "${HS[failed_wr_operations]}" -gt "$w0" ] || fail "host counted no failed write"
}

# Jobs pinned to CPUs: each virtqueue carries the requests of the jobs on
# the CPUs its hardware context serves (queue/mq/N/cpu_list), counted by the
# device (last-avail-idx deltas); a queue the CPUs do not use carries none.
case_host_queues() {
	local s=$W_MQ nq=${MF[$W_MQ:queues]} ncpu q c want used=0 got slack=16
	local -a a0 exp jobs=(1024 3072)
	on_driver "$s"
	[ "$nq" -ge 2 ] || fail "$s has $nq queues"
	ncpu=$(nproc)
	[ "$ncpu" -ge 2 ] || fail "one CPU: nothing to spread"
	for ((c = ${#jobs[@]}; c < ncpu; c++)); do jobs+=($((512 * (c + 1)))); done
	for ((q = 0; q < nq; q++)); do
		exp[q]=0
		if [ -d "/sys/block/$DISK/mq/$q" ]; then
			used=$((used + 1))
			for c in $(tr ',' ' ' <"/sys/block/$DISK/mq/$q/cpu_list"); do
				exp[q]=$((exp[q] + jobs[c]))
			done
		fi
	done
	want=$((nq < ncpu ? nq : ncpu))
	[ "$used" = "$want" ] || fail "$used hardware queues with CPUs, expected $want ($nq queues, $ncpu CPUs)"
	for ((q = 0; q < nq; q++)); do
		host_vq "$s" "$q" || fail "no queue status for $s queue $q"
		a0[q]=$VQ_AVAIL
	done
	local args=() off=0
	for ((c = 0; c < ncpu; c++)); do
		args+=(--name="cpu$c" --cpus_allowed="$c" --offset="${off}k" --size="$((jobs[c] * 4))k")
		off=$((off + jobs[c] * 4))
	done
	fio --filename="/dev/$DISK" --ioengine=psync --direct=1 --rw=read --bs=4k \
		--group_reporting=0 --output-format=terse "${args[@]}" >/dev/null || fail "fio failed"
	for ((q = 0; q < nq; q++)); do
		host_vq "$s" "$q" || fail "no queue status for $s queue $q"
		got=$(vq_delta "${a0[q]}" "$VQ_AVAIL")
		step "queue $q: cpus '$(cat "/sys/block/$DISK/mq/$q/cpu_list" 2>/dev/null || echo none)', expected $((exp[q])) requests, the device took $got"
		if [ "$got" -lt "${exp[q]}" ] || [ "$got" -gt $((exp[q] + slack)) ]; then
			fail "virtqueue $q carried $got requests, expected $((exp[q])) (+$slack) from the jobs pinned to its CPUs"
		fi
		if [ "$q" -lt "$want" ] && [ "$got" = 0 ]; then
			fail "virtqueue $q carried nothing"
		fi
	done
}

# Doorbells on an ioeventfd=off disk: each one is a trace line
# virtio_queue_notify for this device. With the device's notification
# suppression (event index) they are fewer than the requests, and for vblk
# exactly what its own counters say (and its requests the device's).
case_host_doorbells() {
	local s=$W_IO nq=${MF[$W_IO:queues]} q bells reqs
	local -a a0
	on_driver "$s"
	[ "${MF[$s:ioeventfd]:-on}" = off ] ||
		fail "$s is not an ioeventfd=off disk: QEMU's notify count would count eventfd reads"
	udevadm settle --timeout=30 2>/dev/null || true
	host_vdev "$s" || fail "cannot tell $s's device in the trace"
	step "$s is vdev $VDEV in QEMU's trace"
	for ((q = 0; q < nq; q++)); do
		host_vq "$s" "$q" || fail "no queue status for $s queue $q"
		a0[q]=$VQ_AVAIL
	done
	[ "$DRIVER" != vblk ] || echo 1 >"/sys/block/$DISK/vblk/counters"
	trace_on virtio_queue_notify || fail "trace-event-set-state failed"
	trace_mark
	fio --name=bells --filename="/dev/$DISK" --ioengine=libaio --direct=1 --rw=randread \
		--bs=4k --iodepth=32 --iodepth_batch_submit=16 --iodepth_batch_complete_min=8 \
		--size=64m --io_size=16m --numjobs=2 --offset_increment=64m \
		--output-format=terse >/dev/null || { trace_off virtio_queue_notify; fail "fio failed"; }
	trace_settle
	trace_off virtio_queue_notify || fail "trace-event-set-state off failed"
	bells=$(trace_since | grep -c "virtio_queue_notify vdev $VDEV " || true)
	reqs=0
	for ((q = 0; q < nq; q++)); do
		host_vq "$s" "$q" || fail "no queue status for $s queue $q"
		reqs=$((reqs + $(vq_delta "${a0[q]}" "$VQ_AVAIL")))
	done
	step "host: $bells doorbells for $reqs requests"
	# Reads the block layer finds adjacent in a plug are merged: fewer
	# requests than fio's 8192 reads, never more.
	[ "$reqs" -ge 4096 ] && [ "$reqs" -le 8192 ] || fail "the device took $reqs requests for 8192 reads"
	[ "$bells" -gt 0 ] || fail "host saw no doorbell at all (is the trace working?)"
	[ "$bells" -lt "$reqs" ] || fail "host saw $bells doorbells for $reqs requests: no suppression"
	if [ "$DRIVER" = vblk ]; then
		vblk_total "$DISK"
		step "vblk: ${VC[doorbells]} doorbells, ${VC[suppressed]} suppressed, ${VC[requests]} requests"
		[ "${VC[doorbells]}" = "$bells" ] || fail "vblk counted ${VC[doorbells]} doorbells, the host saw $bells"
		[ "${VC[requests]}" = "$reqs" ] || fail "vblk counted ${VC[requests]} requests, the device took $reqs"
	fi
}

# ---- main -------------------------------------------------------------------

# w_case KEY NAME FUNC: run a case; W_ONLY="KEY ..." (iteration, mutation
# tests) runs only those and reports each other one as skipped.
w_case() {
	if [ -n "${W_ONLY:-}" ] && [[ " $W_ONLY " != *" $1 "* ]]; then
		report skip "$2" "not in W_ONLY='$W_ONLY'"
		return 0
	fi
	run_case "$2" "$3"
}

main() {
	case $DRIVER in
	virtio_blk | vblk) ;;
	*) echo "witness: set DRIVER=virtio_blk or DRIVER=vblk" >&2; exit 2 ;;
	esac
	[ -f "${VBLK_DISKS:-}" ] || { echo "witness: no disk manifest" >&2; exit 2; }
	case_logs "witness-$DRIVER"
	load_manifest
	load_patterns
	kmsg_scan
	echo "# host witness: DRIVER=$DRIVER kernel $(uname -r), $(nproc) cpus"
	local missing=0
	pci_disks "$W_IO" "$W_MQ" "$W_EIO" || missing=1
	if [ "$missing" = 0 ]; then
		run_case "attach to $DRIVER" case_attach_all
		if [ "$LAST_VERDICT" = ok ]; then
			w_case flush "host: $FSYNCS fsync = $FSYNCS flushes ($W_IO)" case_host_flush
			w_case discard "host: discard reaches the image ($W_IO)" case_host_discard
			w_case zeroes "host: write zeroes arrive as write zeroes ($W_IO)" case_host_zeroes
			w_case eio "host: blkdebug EIO reaches the application ($W_EIO)" case_host_eio
			w_case queues "host: queue use per virtqueue ($W_MQ)" case_host_queues
			w_case doorbells "host: doorbells counted, suppressed ($W_IO)" case_host_doorbells
		fi
		run_case "back to virtio_blk" case_detach_all
	fi
	summary
	[ "$n_fail" = 0 ]
}

main "$@"
