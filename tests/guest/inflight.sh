#!/bin/bash
# Large requests in flight, seen from the host: how many requests each
# driver keeps on a virtqueue during large random reads (issue 25: vblk's
# overflow pool caps large I/O; icount hides it and wall-clock IOPS on two
# host cores is noise). Runs INSIDE a guest booted by scripts/vm-run:
#
#   flock /tmp/vblk-tcg.lock scripts/vm-run --kernel 6.12 --out results/inflight \
#       --disk 'null,size=4G,serial=ifl-ref,drive.latency-ns=20000000,num-queues=2' \
#       --disk 'null,size=4G,serial=ifl-vblk,drive.latency-ns=20000000,num-queues=2' \
#       [--env VBLK_KO=/path/to/vblk.ko] -- tests/guest/inflight.sh
#
# ifl-ref stays on virtio_blk, ifl-vblk goes to vblk (build/$(uname -r)/vblk.ko
# or $VBLK_KO, loaded with its default parameters). The null backend's
# latency (20 ms) keeps every request the device takes in flight long
# enough that the count is what the driver hands over, not how fast a TCG
# guest submits. For each block size (IFL_BS, default "128k 512k") and each
# disk, fio reads at random, iodepth 32 x 4 jobs, and the host's
# x-query-virtio-queue-status of each virtqueue is sampled IFL_SAMPLES times
# (default 10): in flight = last-avail-idx - used-idx (taken by the device,
# not answered). Printed per queue and as the mean per queue; vblk's
# pool_waits (requests sent back for want of a pool run) beside it.
#
# Assertion: at 128 KiB vblk keeps at least as many requests in flight per
# queue as virtio_blk, less IFL_TOL percent (default 10). The other sizes
# are reported, not asserted. Ends with "N passed, N failed, N skipped";
# exit 1 on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/guest/lib.sh
. "$here/lib.sh"

REF=${IFL_REF:-ifl-ref} VB=${IFL_VBLK:-ifl-vblk}
SIZES=${IFL_BS:-128k 512k} SAMPLES=${IFL_SAMPLES:-10} TOL=${IFL_TOL:-10}
RES=${VBLK_OUT:-/tmp}/inflight.tsv
declare -A PCI_OF=()

# pool_waits of a vblk disk (total row of its counters), into WAITS.
pool_waits() {
	local -a head row
	local i
	WAITS=''
	{
		read -ra head
		while read -ra row; do
			[ "${row[0]}" = total ] || continue
			for i in "${!head[@]}"; do
				[ "${head[$i]}" = pool_waits ] && WAITS=${row[$i]}
			done
		done
	} <"/sys/block/$1/vblk/counters"
	[ -n "$WAITS" ] || fail "no pool_waits in /sys/block/$1/vblk/counters"
}

case_attach() {
	local ko
	if ! grep -q '^vblk ' /proc/modules; then
		ko=$(vblk_ko) || fail "no vblk.ko (build/$(uname -r)/vblk.ko or VBLK_KO)"
		step "insmod $ko (sha256 $(sha256sum <"$ko" | cut -c1-16))"
		insmod "$ko"
	fi
	move_disk "${PCI_OF[$VB]}" vblk "$VB"
	driver_of_disk "$DISK"
	[ "$DRV" = vblk ] || fail "$VB is /dev/$DISK under $DRV"
	step "$VB: /dev/$DISK on vblk: $(tr '\n' ' ' <"/sys/block/$DISK/vblk/config")"
	await_disk "$REF" || fail "no disk $REF"
	driver_of_disk "$DISK"
	[ "$DRV" = virtio_blk ] || fail "$REF is /dev/$DISK under $DRV"
	step "$REF: /dev/$DISK on virtio_blk (queue_depth $(cat "/sys/block/$DISK/mq/0/nr_tags"))"
}

# measure SERIAL DRIVER BS: fio in the background, the queues sampled while
# it runs; appends "driver bs mean q0 q1 ... waits" to RES.
measure() {
	local s=$1 drv=$2 bs=$3 nq=${MF[$1:queues]} q i pid sum=0 w0=- w1=-
	local -a tot=()
	await_disk "$s" || fail "no disk $s"
	driver_of_disk "$DISK"
	[ "$DRV" = "$drv" ] || fail "$s is /dev/$DISK under $DRV, not $drv"
	[ "$drv" != vblk ] || { pool_waits "$DISK"; w0=$WAITS; }
	fio --name=ifl --filename="/dev/$DISK" --ioengine=libaio --direct=1 \
		--rw=randread --bs="$bs" --iodepth=32 --numjobs=4 --size=4g \
		--time_based --runtime=600 --group_reporting \
		--output-format=terse >/dev/null 2>&1 &
	pid=$!
	nap 4
	kill -0 "$pid" 2>/dev/null || fail "fio on /dev/$DISK ended early"
	for ((q = 0; q < nq; q++)); do tot[q]=0; done
	for ((i = 0; i < SAMPLES; i++)); do
		for ((q = 0; q < nq; q++)); do
			host_vq "$s" "$q" || { kill "$pid"; fail "no queue status for $s queue $q"; }
			tot[q]=$((tot[q] + $(vq_delta "$VQ_USED" "$VQ_AVAIL")))
		done
		nap 0.3
	done
	kill -INT "$pid" 2>/dev/null || true
	wait "$pid" || true
	[ "$drv" != vblk ] || { pool_waits "$DISK"; w1=$WAITS; }
	local line="$drv $bs"
	for ((q = 0; q < nq; q++)); do sum=$((sum + tot[q])); done
	# Means in hundredths (bash has no floats).
	line+=" $((sum * 100 / (SAMPLES * nq)))"
	for ((q = 0; q < nq; q++)); do line+=" $((tot[q] * 100 / SAMPLES))"; done
	[ "$w0" = - ] || line+=" waits=$((w1 - w0))"
	echo "$line" >>"$RES"
	step "$line"
}

hundredths() { printf '%d.%02d' $(($1 / 100)) $(($1 % 100)); }

# The table, and the assertion at 128 KiB.
case_compare() {
	local drv bs mean rest ref='' vbm=''
	[ -s "$RES" ] || fail "no measurements"
	echo "# in flight per virtqueue (last-avail-idx - used-idx), mean of $SAMPLES samples"
	while read -r drv bs mean rest; do
		printf '#   %-10s %5s  mean per queue %7s  (per queue x100: %s)\n' \
			"$drv" "$bs" "$(hundredths "$mean")" "$rest"
		if [ "$bs" = 128k ]; then
			[ "$drv" = virtio_blk ] && ref=$mean
			[ "$drv" = vblk ] && vbm=$mean
		fi
	done <"$RES"
	if [ -z "$ref" ] || [ -z "$vbm" ]; then
		fail "no 128k measurement for both drivers"
	fi
	[ "$ref" -gt 100 ] || fail "virtio_blk kept $(hundredths "$ref") requests in flight: the backend latency did not hold them"
	[ $((vbm * 100)) -ge $((ref * (100 - TOL))) ] ||
		fail "128k: vblk keeps $(hundredths "$vbm") requests in flight per queue, virtio_blk $(hundredths "$ref") (tolerance $TOL %)"
	echo "# 128k: vblk $(hundredths "$vbm") >= virtio_blk $(hundredths "$ref") - $TOL %"
}

main() {
	local bs missing=0
	[ -f "${VBLK_DISKS:-}" ] || { echo "inflight: no disk manifest (run by scripts/vm-run)" >&2; exit 2; }
	case_logs inflight
	load_manifest ''
	load_patterns
	kmsg_scan
	: >"$RES"
	echo "# in flight: kernel $(uname -r), $(nproc) cpus; sizes $SIZES"
	pci_disks "$REF" "$VB" || missing=1
	if [ "$missing" = 0 ]; then
		run_case "$VB to vblk, $REF on virtio_blk" case_attach
		if [ "$LAST_VERDICT" = ok ]; then
			for bs in $SIZES; do
				run_case "virtio_blk $bs randread 32 x 4" measure "$REF" virtio_blk "$bs"
				run_case "vblk $bs randread 32 x 4" measure "$VB" vblk "$bs"
			done
			run_case "vblk keeps as many 128k requests in flight as virtio_blk" case_compare
			grep -h '^#' "$CASE_DIR"/*.log 2>/dev/null || true
		fi
	fi
	summary
	[ "$n_fail" = 0 ]
}

main "$@"
