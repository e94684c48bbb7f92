#!/bin/bash
# vblk-only guest cases: the driver's own modes, limits and counters. Runs
# INSIDE a guest after the driver-agnostic suite (tests/guest/run-all.sh),
# with the disks that scripts/guest-suite attaches for it (serials below).
#
#   tests/guest/vblk-suite.sh [--quick]
#
# Disks by serial (any missing one is reported as a failure, never skipped
# silently): vmq1 num-queues=1, vmq4 num-queues=4, vq16 queue-size=16 with
# indirect_desc=off (ring-full path, ring_size=16), vintx vectors=0, vshr vectors=2 on two
# queues (one shared vector), vdir indirect_desc=off, vnoevt event_idx=off,
# vppv page-per-vq=on with 4 queues (each doorbell on its own page).
# Ends with "N passed, N failed, N skipped"; exit 1 on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/guest/lib.sh
. "$here/lib.sh"

QUICK=0
PARAMS=/sys/module/vblk/parameters
DISKS="vmq1 vmq4 vq16 vintx vshr vdir vnoevt vppv"
declare -A PCI_OF=()

# ---- helpers --------------------------------------------------------------

# A vblk disk's config value (from /sys/block/vdX/vblk/config).
vcfg() { sed -n "s/^$2 //p" "/sys/block/$1/vblk/config"; }

# A column of the counters table: vcount DISK ROW COLUMN, read from the
# last snapshot (snap_counters) so that all numbers come from one moment.
vcount() {
	awk -v row="$2" -v col="$3" '
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$1 == row { print $c[col] }' "/tmp/counters-$1"
}

# After fio closes a disk opened for writing, udev reads it again: let that
# finish, then take one snapshot of the counters.
snap_counters() {
	udevadm settle --timeout=10 2>/dev/null || true
	cat "/sys/block/$1/vblk/counters" >"/tmp/counters-$1"
	cat "/tmp/counters-$1"
}

# Put the PCI function of serial $1 on vblk (again): parameters that apply at
# bind take effect. Prints the disk name.
rebind_vblk() {
	local s=$1
	"$BIND" none "${PCI_OF[$s]}" >/dev/null
	wait_gone "$s" || fail "$s did not go away"
	"$BIND" vblk "${PCI_OF[$s]}" >/dev/null
	await_disk "$s" || fail "$s did not come back under vblk"
	driver_of_disk "$DISK"
	[ "$DRV" = vblk ] || fail "$s is /dev/$DISK under $DRV, not vblk"
	echo "$DISK"
}

# Counters must add up after I/O has finished on a vblk disk.
check_counters() {
	local d=$1 polled=${2:-0} req comp bells irqs
	snap_counters "$d"
	req=$(vcount "$d" total requests)
	comp=$(vcount "$d" total completions)
	bells=$(vcount "$d" total doorbells)
	irqs=$(vcount "$d" total irqs)
	[ "$req" -gt 0 ] || fail "$d: no requests counted"
	[ "$comp" = "$req" ] || fail "$d: $comp completions for $req requests"
	[ "$bells" -le "$req" ] || fail "$d: $bells doorbells for $req requests"
	if [ "$polled" = 0 ]; then
		[ "$irqs" -gt 0 ] || fail "$d: I/O completed without interrupts"
	fi
	check_rings "$d"
}

# With the I/O done, every queue must be idle and its indices agree: all
# that was added was published, the device answered all of it, and the
# driver harvested every answer (vblk/rings).
check_rings() {
	local bad
	bad=$(awk 'NR > 1 && ($2 != $3 || $2 != $4 || $6 != $7 || $9 != 0 || $12 != 0)' \
		"/sys/block/$1/vblk/rings")
	[ -z "$bad" ] || fail "$1: a queue is not idle after its I/O: $(head -1 "/sys/block/$1/vblk/rings") / $bad"
}

reset_counters() { echo 1 >"/sys/block/$1/vblk/counters"; }

setparam() { echo "$2" >"$PARAMS/$1"; }

# param_refuses NAME VALUE [ERROR]: writing VALUE to the parameter fails
# with ERROR (strerror text, default EINVAL's) and its value stays. Each
# problem, naming the value, goes to BAD (the case reports them together).
param_refuses() {
	local p=$1 v=$2 want=${3:-Invalid argument} old err
	read1 "$PARAMS/$p"
	old=$REPLY
	if err=$({ printf '%s\n' "$v" >"$PARAMS/$p"; } 2>&1); then
		BAD+=("$p: '$v' accepted")
	elif [[ $err != *"$want"* ]]; then
		BAD+=("$p: '$v' refused with '${err##*: }', not '$want'")
	fi
	read1 "$PARAMS/$p"
	[ "$REPLY" = "$old" ] || BAD+=("$p: '$v' changed it from '$old' to '$REPLY'")
}

# param_takes NAME VALUE: writing VALUE works and it reads back as written.
param_takes() {
	if ! { printf '%s\n' "$2" >"$PARAMS/$1"; } 2>/dev/null; then
		BAD+=("$1: '$2' refused")
		return 0
	fi
	read1 "$PARAMS/$1"
	[ "$REPLY" = "$2" ] || BAD+=("$1: '$2' reads back as '$REPLY'")
}

# Fail the case with every problem in BAD, one per line in the log.
fail_bad() {
	[ "${#BAD[@]}" = 0 ] && return 0
	printf 'BAD: %s\n' "${BAD[@]}"
	fail "${#BAD[@]} bad: $(printf '%s; ' "${BAD[@]}")"
}

# udev opens a new disk to read its label: an rmmod right after a bind can
# find the module in use for a moment. Wait that out (bounded); a reference
# that never goes away still fails.
rmmod_vblk() {
	local t
	udevadm settle --timeout=10 2>/dev/null || true
	for ((t = 0; t < 50; t++)); do
		rmmod vblk 2>/dev/null && break
		sleep 0.2
	done
	! grep -q '^vblk ' /proc/modules || fail "vblk still loaded (in use: $(cat /sys/module/vblk/refcnt 2>/dev/null))"
}

# ---- cases ----------------------------------------------------------------

case_load() {
	local ko s d
	ko=$(vblk_ko) || fail "no build/$(uname -r)/vblk.ko"
	grep -q '^vblk ' /proc/modules || insmod "$ko"
	for s in $DISKS; do
		d=$(wait_disk "$s" 30) || fail "no disk with serial $s"
		PCI_OF[$s]=$("$BIND" show "$d" | cut -d' ' -f1)
		printf '%s %s\n' "$s" "${PCI_OF[$s]}" >>/tmp/vblk-pci-map
	done
}

# Parameters refuse bad values and keep the old one.
case_params() {
	! setparam irq_mode bogus 2>/dev/null || fail "irq_mode accepted 'bogus'"
	! setparam complete sometimes 2>/dev/null || fail "complete accepted 'sometimes'"
	! setparam poll_budget 0 2>/dev/null || fail "poll_budget accepted 0"
	[ "$(cat $PARAMS/irq_mode)" = auto ] || fail "irq_mode changed by a bad write"
	setparam complete softirq
	[ "$(cat $PARAMS/complete)" = softirq ] || fail "complete not settable"
	setparam complete auto
}

# Every parameter refuses each value outside its range (README's table)
# with EINVAL and keeps the old value; the ends of each range are taken.
# Nothing is bound in between, so nothing applies them.
case_param_ranges() {
	local p v old
	local -a BAD=()
	local -A bad=(
		[num_queues]="65 100 0x41 4294967295 4294967296 -1 abc 1.5 1k"
		[poll_queues]="64 1000 4294967296 -1 x"
		[queue_depth]="1025 65536 4294967296 -1 4k"
		[ring_size]="1 2 3 6 24 1000 1023 32769 65536 -16 0x3 ring"
		[max_segments]="0 1025 4096 4294967296 -1 foo"
		[poll_budget]="0 4097 -1"
		[io_timeout]="0 601 -1"
		[dev_loss_tmo]="86401 -1 x"
		[max_resets]="101 -1"
		[irq_coalesce]="101 -1"
		[notify_in_lock]="2 maybe"
		[indirect]="2 maybe"
		[event_idx]="2 maybe"
		[irq_mode]="bogus msi"
		[complete]="sometimes"
	)
	local -A good=(
		[num_queues]="0 1 64"
		[poll_queues]="0 63"
		[queue_depth]="0 1 1024"
		[ring_size]="0 4 16 32768"
		[max_segments]="1 1024"
		[poll_budget]="1 4096"
		[io_timeout]="1 600"
		[dev_loss_tmo]="0 86400"
		[max_resets]="0 100"
		[irq_coalesce]="0 100"
	)
	for p in "${!bad[@]}"; do
		read1 "$PARAMS/$p"
		old=$REPLY
		step "$p (now '$old') refuses: ${bad[$p]} and an empty write"
		for v in ${bad[$p]}; do
			param_refuses "$p" "$v"
		done
		param_refuses "$p" ""
		for v in ${good[$p]:-}; do
			param_takes "$p" "$v"
		done
		[ -z "${good[$p]:-}" ] || step "$p takes: ${good[$p]}"
		param_takes "$p" "$old"
	done
	# Read-only after load: a write fails whatever the value, and the
	# prefix stays.
	read1 "$PARAMS/disk_prefix"
	old=$REPLY
	for v in x a/b ""; do
		param_refuses disk_prefix "$v" "Permission denied"
	done
	step "disk_prefix (now '$old') is read-only"
	fail_bad
}

# Bind a disk, check the config the device asked for, verify data, counters.
case_disk() {
	local s=$1 key=$2 want=$3 d got
	d=$(rebind_vblk "$s")
	cat "/sys/block/$d/vblk/config"
	got=$(vcfg "$d" "$key")
	[ "$got" = "$want" ] || fail "$s: $key is '$got', expected '$want'"
	reset_counters "$d"
	fio_verify "/dev/$d" 32 1 8m
	check_counters "$d"
}

# Requests of more than one segment take their descriptor table from the
# queue's pool. At its smallest (pool_entries=0: one largest request's
# worth) large random writes from fio's page-sized buffers, 2 x 32 deep on
# one queue, must wait for runs (pool_waits counts it); everything still
# verifies, range commands (which always take a run) work beside them, and
# no run is left taken afterwards (pool_in_use).
case_pool() {
	local s=vmq1 d waits out segs
	# Every page a segment of its own (test hook size_max 4096): whether a
	# user buffer's pages are contiguous depends on how fragmented the
	# guest's memory is, and a run with few segments never fills the pool.
	need_fault_hook
	setparam pool_entries 0
	setparam fault_size_max 4096
	d=$(rebind_vblk "$s")
	setparam fault_size_max 0
	setparam pool_entries 512
	segs=$(vcfg "$d" max_segments)
	[ "$(vcfg "$d" pool_entries)" = $(((segs + 2 + 7) / 8 * 8)) ] ||
		fail "pool_entries $(vcfg "$d" pool_entries) for max_segments $segs"
	reset_counters "$d"
	out=$(fio --name=p --filename="/dev/$d" --ioengine=libaio --direct=1 \
		--rw=randwrite --bsrange=64k-1m --iodepth=32 --numjobs=2 \
		--size=32m --offset_increment=32m --verify=crc32c --verify_fatal=1 \
		--do_verify=1 --group_reporting 2>&1) || fail "fio verify on $d failed: $(tail -5 <<<"$out")"
	! grep -qiE 'verify failed|bad magic|mismatch' <<<"$out" || fail "bad data on $d"
	fio --name=m --filename="/dev/$d" --ioengine=libaio --direct=1 \
		--rw=write --bs=4m --size=16m --offset=64m --iodepth=4 \
		--verify=crc32c --verify_fatal=1 --do_verify=1 >/dev/null 2>&1 ||
		fail "4 MiB writes with verify on $d failed"
	blkdiscard -o 96m -l 8m "/dev/$d" || fail "blkdiscard on $d"
	blkdiscard -z -o 104m -l 8m "/dev/$d" || fail "BLKZEROOUT on $d"
	cmp -n 8388608 -i 109051904:0 "/dev/$d" /dev/zero || fail "$d: zeroed range reads back non-zero"
	check_counters "$d"
	waits=$(vcount "$d" total pool_waits)
	step "pool_waits $waits"
	[ "$waits" -gt 0 ] || fail "large requests 64 deep never waited for a pool run"
	[ "$(vcfg "$d" pool_in_use)" = 0 ] || fail "pool runs still taken after I/O: $(vcfg "$d" pool_in_use)"
	rebind_vblk "$s" >/dev/null
}

# A 16-entry ring without indirect descriptors fills up: requests wait for
# room (ring_full counts it) and all data still verifies. QEMU 10 offers
# 1024 entries whatever queue-size says, so the driver asks for 16.
case_ring_full() {
	local s=vq16 d full
	setparam ring_size 16
	d=$(rebind_vblk "$s")
	setparam ring_size 0
	[ "$(vcfg "$d" ring_size)" = 16 ] || fail "ring_size $(vcfg "$d" ring_size), not 16"
	# Direct descriptors: 3 or more per request, so half the ring in tags.
	[ "$(vcfg "$d" queue_depth)" = 8 ] || fail "queue_depth $(vcfg "$d" queue_depth), not 8 (half a direct ring)"
	reset_counters "$d"
	fio_verify "/dev/$d" 64 2 8m
	check_counters "$d"
	full=$(vcount "$d" total ring_full)
	[ "$full" -gt 0 ] || fail "a 16-entry direct ring never filled at iodepth 64 x 2"
}

# Every forced interrupt layout with every completion mode.
case_modes() {
	local s=vmq4 mode comp d
	for mode in msix shared intx; do
		for comp in hardirq softirq; do
			setparam irq_mode "$mode"
			setparam complete "$comp"
			d=$(rebind_vblk "$s")
			step "irq_mode=$mode complete=$comp: $(vcfg "$d" irq_mode)/$(vcfg "$d" complete)"
			[ "$(vcfg "$d" irq_mode)" = "$mode" ] || fail "irq_mode $mode not applied"
			[ "$(vcfg "$d" complete)" = "$comp" ] || fail "complete $comp not applied"
			reset_counters "$d"
			fio_verify "/dev/$d" 16 2 4m
			check_counters "$d"
			if [ "$comp" = softirq ]; then
				[ "$(vcount "$d" total polls)" -gt 0 ] || fail "softirq mode ran no irq_poll"
			fi
		done
	done
	setparam irq_mode auto
	setparam complete auto
	rebind_vblk "$s" >/dev/null
}

# Auto mode: one vector for several queues means softirq completion.
case_auto_shared() {
	local d
	d=$(rebind_vblk vshr)
	[ "$(vcfg "$d" irq_mode)" = shared ] || fail "vectors=2 with 2 queues: mode $(vcfg "$d" irq_mode)"
	[ "$(vcfg "$d" complete)" = softirq ] || fail "shared vector: completion $(vcfg "$d" complete)"
	d=$(rebind_vblk vintx)
	[ "$(vcfg "$d" irq_mode)" = intx ] || fail "vectors=0: mode $(vcfg "$d" irq_mode)"
	[ "$(vcfg "$d" complete)" = softirq ] || fail "INTx: completion $(vcfg "$d" complete)"
}

# The doorbell moves in and out of the lock, and interrupt moderation
# (irq_coalesce) changes, while verified I/O runs.
case_notify_flip() {
	local d pid i rc=0
	d=$(rebind_vblk vmq4)
	fio --name=flip --filename="/dev/$d" --ioengine=libaio --direct=1 \
		--rw=randwrite --bs=4k --iodepth=64 --numjobs=2 --size=8m \
		--offset_increment=8m --verify=crc32c --verify_fatal=1 \
		--group_reporting >/tmp/flip.out 2>&1 &
	pid=$!
	for ((i = 0; i < 200; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		setparam notify_in_lock $((i % 2))
		setparam irq_coalesce $(((i % 3) * 50))
		sleep 0.05
	done
	wait "$pid" || rc=$?
	setparam notify_in_lock 0
	setparam irq_coalesce 0
	tail -5 /tmp/flip.out
	[ "$rc" = 0 ] || fail "fio with notify_in_lock flipping exited $rc"
	[ "$i" -gt 2 ] || fail "fio ended before notify_in_lock was flipped"
}

# Interrupt moderation: at every setting the device's answers all come
# back, with their data intact and counted once, on a per-queue vector
# (hard-irq completion) and on a shared one (irq_poll), at iodepth 64 where
# the held-back interrupt spans many requests. Whether it saves interrupts
# is the benchmark's question (experiment "coalesce"): under TCG the device
# completes a doorbell's requests together, so it does not (2026-12-03).
case_coalesce() {
	local d pct
	! setparam irq_coalesce 101 2>/dev/null || fail "irq_coalesce accepted 101"
	[ "$(cat $PARAMS/irq_coalesce)" = 0 ] || fail "irq_coalesce changed by a bad write"
	d=$(rebind_vblk vmq1)
	for pct in 0 75 100; do
		setparam irq_coalesce $pct
		reset_counters "$d"
		fio_verify "/dev/$d" 64 2 8m
		check_counters "$d"
		step "irq_coalesce=$pct: $(vcount "$d" total irqs) interrupts for $(vcount "$d" total requests) requests"
	done
	d=$(rebind_vblk vshr)
	[ "$(vcfg "$d" complete)" = softirq ] || fail "vshr completes in $(vcfg "$d" complete) mode"
	reset_counters "$d"
	fio_verify "/dev/$d" 64 2 4m
	check_counters "$d"
	setparam irq_coalesce 0
}

# A maximum-size request among a stream of small multi-segment ones, on one
# queue with the pool at its default (exactly one maximum-size request): it
# needs the whole pool, and small requests keep taking blocks of it. The
# large writes must still go through while the stream runs (a request that
# never finds its run is never started, so no timeout would rescue it).
# They do without any reservation in the pool: blk-mq issues a request it
# got back (BLK_STS_RESOURCE) from the hctx's dispatch list before it takes
# new ones for that hctx, so the small ones queue behind it (issue 22's
# suspicion, refuted: 519 pool waits, the slowest 1 MiB write 668 ms).
# Pages of a user buffer are often physically contiguous (and merged into
# one segment): the test hook's size_max of one page makes every page a
# segment of its own. The drive is throttled to 100 requests a second so
# that the small requests stay in flight (and hold their pool blocks), as
# on a busy host, rather than coming back at once as they do under TCG.
case_pool_fair() {
	local s=vmq1 d out maxms n id
	need_fault_hook
	load_manifest vblk
	id=${MF[$s:qdev]}/virtio-backend
	setparam pool_entries 0
	setparam fault_size_max 4096
	d=$(rebind_vblk "$s")
	setparam fault_size_max 0
	qmp "{\"execute\": \"block_set_io_throttle\", \"arguments\": {\"id\": \"$id\", \"bps\": 0, \"bps_rd\": 0, \"bps_wr\": 0, \"iops\": 100, \"iops_rd\": 0, \"iops_wr\": 0}}" >/dev/null ||
		fail "block_set_io_throttle refused"
	out=$(timeout 120 fio --output-format=json \
		--name=small --filename="/dev/$d" --ioengine=libaio --direct=1 \
		--rw=randwrite --bs=16k --iodepth=32 --size=32m --time_based --runtime=20 \
		--cpus_allowed=0 \
		--name=big --filename="/dev/$d" --ioengine=libaio --direct=1 \
		--rw=write --bs=1m --iodepth=1 --offset=64m --size=4m --number_ios=4 \
		--cpus_allowed=0 2>/dev/null) || fail "fio failed on $d"
	qmp "{\"execute\": \"block_set_io_throttle\", \"arguments\": {\"id\": \"$id\", \"bps\": 0, \"bps_rd\": 0, \"bps_wr\": 0, \"iops\": 0, \"iops_rd\": 0, \"iops_wr\": 0}}" >/dev/null ||
		fail "block_set_io_throttle (lift) refused"
	read -r n maxms < <(python3 -c '
import json, sys
j = [x for x in json.load(sys.stdin)["jobs"] if x["jobname"] == "big"][0]
print(j["write"]["total_ios"], int(j["write"]["clat_ns"]["max"] / 1e6))' <<<"$out")
	step "1 MiB writes among 16 KiB ones: $n done, the slowest in $maxms ms; pool_waits $(awk '$1 == "total" { print $NF }' "/sys/block/$d/vblk/counters")"
	[ "$n" -ge 4 ] || fail "only $n of 4 large writes done"
	[ "$(awk '$1 == "total" { print $NF }' "/sys/block/$d/vblk/counters")" -gt 0 ] ||
		fail "no request waited for a pool run: the pool was never contended"
	[ "$maxms" -lt 10000 ] || fail "a large write waited $maxms ms behind small ones (the stream ran 20 s)"
	rebind_vblk "$s" >/dev/null
}

# A lost interrupt and a lost doorbell (vblk/lose drops one) cost the
# request they concern one request timeout, and nothing after it: the
# timeout harvests the answer and re-arms the interrupt, or rings the
# doorbell again. Had the timeout not re-armed, the device would raise no
# interrupt for the later requests either, and each would wait for a
# timeout of its own (the rescued count would keep growing).
case_lost_wakeups() {
	local d what col t0 n
	need_fault_hook
	d=$(rebind_vblk vmq1)
	! echo "irq 1001" >"/sys/block/$d/vblk/lose" 2>/dev/null || fail "vblk/lose took 1001"
	! echo "doorbell 1" >"/sys/block/$d/vblk/lose" 2>/dev/null || fail "vblk/lose took 'doorbell'"
	read1 "/sys/block/$d/queue/io_timeout"
	t0=$REPLY
	echo 2000 >"/sys/block/$d/queue/io_timeout"
	for what in irq kick; do
		[ $what = irq ] && col=rescued || col=rekicks
		reset_counters "$d"
		echo "$what 1" >"/sys/block/$d/vblk/lose"
		dd if="/dev/$d" of=/dev/null bs=4k count=1 iflag=direct status=none ||
			fail "a read with its $what lost failed"
		[ "$(sed -n "s/^$what //p" "/sys/block/$d/vblk/lose")" = 0 ] ||
			fail "the read's $what was not lost"
		snap_counters "$d"
		n=$(vcount "$d" total "$col")
		[ "$n" -ge 1 ] || fail "lost $what: the timeout did not recover the read ($col $n)"
		fio_verify "/dev/$d" 16 1 4m
		check_counters "$d"
		[ "$(vcount "$d" total "$col")" = "$n" ] ||
			fail "after a lost $what, later requests needed the timeout too ($col $n -> $(vcount "$d" total "$col"))"
		step "lost $what: recovered by the timeout, then $(vcount "$d" total requests) requests without it"
	done
	echo "$t0" >"/sys/block/$d/queue/io_timeout"
}

# A mode the device cannot give (three MSI-X vectors from a device with two)
# fails the probe with a clear message and unwinds fully: the device then
# binds in a mode it can give, and no disk is left behind in between.
case_probe_unwind() {
	local a=${PCI_OF[vshr]} k0 d
	"$BIND" none "$a" >/dev/null
	wait_gone vshr || fail "vshr did not go away"
	k0=$(dmesg | wc -l)
	setparam irq_mode msix
	if "$BIND" vblk "$a"; then
		setparam irq_mode auto
		fail "probe succeeded with irq_mode=msix on a 2-vector device"
	fi
	setparam irq_mode auto
	sleep 1
	! disk_of_serial vshr >/dev/null || fail "a disk appeared although the probe failed"
	dmesg | tail -n +"$((k0 + 1))" | grep -q 'no interrupts in mode msix' ||
		fail "no clear message for the failed probe"
	d=$(rebind_vblk vshr)
	[ "$(vcfg "$d" irq_mode)" = shared ] || fail "after the failed probe: mode $(vcfg "$d" irq_mode)"
	fio_verify "/dev/$d" 16 1 4m
}

# Deep queues and several jobs.
case_deep() {
	local d
	d=$(rebind_vblk vmq4)
	reset_counters "$d"
	fio_verify "/dev/$d" 128 4 8m
	check_counters "$d"
	[ "$(vcount "$d" total max_batch)" -gt 1 ] || fail "never harvested more than one completion at a time"
}

# A poll queue completes io_uring HIPRI I/O without interrupts.
case_poll_queue() {
	local d q rows comp irqs
	setparam poll_queues 1
	setparam num_queues 1
	d=$(rebind_vblk vmq4)
	setparam poll_queues 0
	setparam num_queues 0
	[ "$(vcfg "$d" poll_queues)" = 1 ] || fail "poll_queues not applied"
	[ "$(cat "/sys/block/$d/queue/io_poll")" = 1 ] || fail "queue/io_poll is not 1"
	udevadm settle --timeout=10 2>/dev/null || true
	reset_counters "$d"
	# 1024 HIPRI reads (opened read-only: no udev rescan afterwards).
	fio --name=poll --filename="/dev/$d" --ioengine=io_uring --hipri=1 \
		--direct=1 --rw=randread --bs=4k --iodepth=8 --size=8m --io_size=4m
	snap_counters "$d"
	rows=$(awk 'NR > 1 && $1 ~ /^[0-9]+$/' "/tmp/counters-$d" | wc -l)
	q=$((rows - 1))
	comp=$(vcount "$d" "$q" completions)
	irqs=$(vcount "$d" "$q" irqs)
	step "poll queue $q: $(vcount "$d" "$q" requests) requests, $comp completions, $irqs irqs; total $(vcount "$d" total requests) requests"
	[ "$comp" -gt 0 ] || fail "poll queue $q completed nothing"
	[ "$irqs" = 0 ] || fail "poll queue $q took $irqs interrupts"
	# Every HIPRI read went through the poll queue, and only there (merged
	# neighbours make fewer requests, never more): 0.041 hipri/irq passed
	# the older checks.
	[ "$comp" = "$(vcount "$d" "$q" requests)" ] || fail "poll queue $q: $comp completions for $(vcount "$d" "$q" requests) requests"
	[ "$comp" -ge 512 ] && [ "$comp" -le 1024 ] || fail "poll queue $q completed $comp of fio's 1024 HIPRI reads"
	[ "$(vcount "$d" total requests)" = "$comp" ] ||
		fail "$(( $(vcount "$d" total requests) - comp )) of the requests went to interrupt queues, not the poll queue"
	rebind_vblk vmq4 >/dev/null
}

# Bind and unbind many times; then unload and reload the module.
case_cycles() {
	local i s=vmq1 ko
	# Back to back, without waiting for udev in between: faster, and harder.
	for ((i = 0; i < 20; i++)); do
		VBLK_BIND_SETTLE=0 rebind_vblk "$s" >/dev/null
	done
	ko=$(vblk_ko)
	for ((i = 0; i < 20; i++)); do
		rmmod_vblk
		insmod "$ko"
		wait_disk "$s" >/dev/null || fail "insmod $i: $s not bound again"
	done
}

# Installed the way users do (the module in updates/, depmod, options in
# /etc/modprobe.d): modprobe loads it with those options and it takes no
# device by itself; a bound disk gets the configured name and timeout.
# (scripts/dkms-test checks that DKMS builds this very module, byte for
# byte, for 6.12 and 7.3.) Runs after the unload: vblk holds nothing.
case_modprobe() {
	local kver ko root dir d a=${PCI_OF[vmq1]} f
	kver=$(uname -r)
	ko=$(vblk_ko) || fail "no vblk.ko"
	# A module tree of its own (modprobe -d): depmod -a over the whole 9p
	# root took 6 minutes on 7.3 under TCG; vblk depends on no module.
	root=/tmp/vblk-modroot
	dir=$root/lib/modules/$kver/updates
	rm -rf "$root"
	mkdir -p "$dir"
	cp "$ko" "$dir/vblk.ko"
	for f in modules.order modules.builtin modules.builtin.modinfo; do
		[ ! -f "/lib/modules/$kver/$f" ] || cp "/lib/modules/$kver/$f" "$root/lib/modules/$kver/"
	done
	echo "options vblk disk_prefix=vbm io_timeout=17" >/etc/modprobe.d/vblk-test.conf
	depmod -b "$root" "$kver"
	[ "$(modinfo -b "$root" -n vblk)" = "$dir/vblk.ko" ] ||
		fail "modinfo finds $(modinfo -b "$root" -n vblk 2>&1), not $dir/vblk.ko"
	modprobe -d "$root" vblk || fail "modprobe vblk failed"
	[ "$(cat $PARAMS/io_timeout)" = 17 ] || fail "io_timeout $(cat $PARAMS/io_timeout): /etc/modprobe.d not applied"
	[ "$(cat $PARAMS/disk_prefix)" = vbm ] || fail "disk_prefix $(cat $PARAMS/disk_prefix)"
	sleep 1
	! ls /sys/bus/pci/drivers/vblk/ | grep -q '^0000:' ||
		fail "vblk took devices by itself: $(ls /sys/bus/pci/drivers/vblk/ | grep '^0000:' | paste -sd' ')"
	"$BIND" vblk "$a" >/dev/null
	d=$(wait_disk vmq1) || fail "vmq1 not bound to the modprobed vblk"
	[[ $d == vbm* ]] || fail "disk name $d, expected the vbm prefix"
	[ "$(cat "/sys/block/$d/queue/io_timeout")" = 17000 ] || fail "io_timeout $(cat "/sys/block/$d/queue/io_timeout") ms"
	fio_verify "/dev/$d" 16 1 4m
	step "modprobe vblk: $d, io_timeout 17 s, from $dir"
	"$BIND" virtio-pci "$a" >/dev/null
	wait_disk vmq1 >/dev/null || fail "vmq1 did not return to virtio_blk"
	udevadm settle --timeout=10 2>/dev/null || true
	modprobe -d "$root" -r vblk || fail "modprobe -r vblk failed"
	rm -rf "$root" /etc/modprobe.d/vblk-test.conf
}

# stat_total DISK KEY...: a value of the "total" row in vblk-stat's JSON
# report (/tmp/stat.json), e.g. iops, or counters requests.
stat_total() {
	python3 - /tmp/stat.json "$@" <<-'EOF'
		import json, sys
		v = json.loads(open(sys.argv[1]).readline())["disks"][sys.argv[2]]["queues"]["total"]
		for key in sys.argv[3:]:
		    v = v[key]
		if v is None:
		    sys.exit("no %s in the report" % " ".join(sys.argv[3:]))
		print(v)
	EOF
}

# fio_window_iops LOG START END: fio's mean IOPS from its per-500 ms log
# (--log_unix_epoch: "msec, iops, ...") over the wall-clock window
# [START, END] (seconds), from the log entries that end inside it.
fio_window_iops() {
	awk -F', *' -v a="$2" -v b="$3" '
		$1 / 1000 > a + 0.25 && $1 / 1000 <= b + 0.25 { n++; s += $2 }
		END { if (n) printf "%d %d\n", s / n, n; else print "0 0" }' "$1"
}

# vblk-stat (the live view) against fio: its IOPS agree with what fio did in
# the same seconds, and its raw counters with the counters file.
case_vblk_stat() {
	local d fio_iops stat_iops raw file win t0 t1 n
	d=$(rebind_vblk vmq4)
	reset_counters "$d"
	rm -f /tmp/stat_iops.*.log
	fio --name=stat --filename="/dev/$d" --ioengine=libaio --direct=1 --rw=randread \
		--bs=4k --iodepth=16 --time_based --runtime=30 --size=64m \
		--write_iops_log=/tmp/stat --log_avg_msec=500 --log_unix_epoch=1 \
		--output-format=json >/tmp/stat-fio.json &
	local pid=$! t
	# Sample from when fio's I/O runs (its start can take seconds here).
	for ((t = 0; t < 50; t++)); do
		[ "$(awk '$1 == "total" { print $2 }' "/sys/block/$d/vblk/counters")" -gt 0 ] && break
		sleep 0.1
	done
	sleep 1
	"$REPO/scripts/vblk-stat" --interval 4 --count 1 --json "$d" >/tmp/stat.json
	cat "/sys/block/$d/vblk/counters" "/sys/block/$d/vblk/rings" >/tmp/stat-after.txt
	# On a loaded host python's start alone took 6 s once: with 30 s of
	# fio the sample lies inside its run, and a late one says so.
	kill -0 "$pid" 2>/dev/null ||
		fail "fio ended before vblk-stat's sample did (vblk-stat started too late to compare)"
	wait "$pid" || fail "fio failed"
	cat /tmp/stat.json /tmp/stat-after.txt
	stat_iops=$(stat_total "$d" iops) || fail "no IOPS in vblk-stat's JSON: $(head -c 600 /tmp/stat.json)"
	stat_iops=${stat_iops%.*}
	win=$(python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); print(r["start"], r["end"])' /tmp/stat.json) ||
		fail "no start/end in vblk-stat's JSON"
	read -r t0 t1 <<<"$win"
	read -r fio_iops n < <(fio_window_iops /tmp/stat_iops.1.log "$t0" "$t1")
	step "vblk-stat ${stat_iops} IOPS over [$t0, $t1]; fio ${fio_iops} IOPS in the same window ($n half-second samples); fio's 30 s mean $(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["jobs"][0]["read"]["iops"]))' /tmp/stat-fio.json)"
	[ "$n" -ge 6 ] || fail "fio logged $n samples in vblk-stat's 4 s window (want 6 or more)"
	[ "$fio_iops" -gt 0 ] || fail "fio did no I/O in vblk-stat's window"
	# The window's edges fall inside fio's half-second samples: within 20 %.
	[ $((stat_iops * 100)) -ge $((fio_iops * 80)) ] && [ $((stat_iops * 100)) -le $((fio_iops * 120)) ] ||
		fail "vblk-stat ${stat_iops} IOPS, fio ${fio_iops} in the same window"
	udevadm settle --timeout=10 2>/dev/null || true
	"$REPO/scripts/vblk-stat" --interval 0.5 --count 1 --json "$d" >/tmp/stat.json
	file=$(awk '$1 == "total" { print $2 }' "/sys/block/$d/vblk/counters")
	raw=$(stat_total "$d" counters requests)
	[ "$raw" = "$file" ] || fail "vblk-stat raw requests $raw, counters file $file"
}

# virtio_blk names a disk after its lowest free index and fails its probe
# if vblk holds that name: give the disks back in name order (vda first).
case_unload() {
	local s name
	while read -r name s; do
		step "$s ($name) back to virtio_blk"
		"$BIND" virtio-pci "${PCI_OF[$s]}" >/dev/null
		wait_disk "$s" >/dev/null || fail "$s did not return to virtio_blk"
	done < <(for s in $DISKS; do
		printf '%s %s\n' "$(disk_of_serial "$s" || echo '~')" "$s"
	done | awk '{ print length($1), $0 }' | sort -k1,1n -k2,2 | cut -d' ' -f2-)
	rmmod_vblk
}

# insmod with a bad value fails with EINVAL, the kernel names the value,
# and no vblk is left loaded; the ends of the ranges load, and a disk binds
# with them, lowered by the device where it has less (with a log line).
# Runs after case_modprobe, with vblk unloaded and every disk on virtio_blk.
case_insmod_params() {
	local ko arg p v out k0 log d a=${PCI_OF[vmq1]} ring depth
	local prefix=abcdefghijklmnopqrstuv-_ # 24: the longest that fits
	local -a BAD=()
	local -a args=(
		num_queues=65 num_queues=-1 num_queues=abc num_queues= num_queues
		poll_queues=64 queue_depth=1025 queue_depth=4294967296
		ring_size=3 ring_size=1000 ring_size=65536 ring_size=2
		max_segments=0 max_segments=1025 io_timeout=0 irq_coalesce=101
		disk_prefix= "disk_prefix=${prefix}x" disk_prefix=a/b disk_prefix=VD
		disk_prefix=.. disk_prefix=v.d 'disk_prefix="v d"' $'disk_prefix=v\xe9'
	)
	ko=$(vblk_ko) || fail "no vblk.ko"
	! grep -q '^vblk ' /proc/modules || fail "vblk is loaded: this case needs it unloaded"
	k0=$(dmesg | wc -l)
	for arg in "${args[@]}"; do
		if out=$(insmod "$ko" "$arg" 2>&1); then
			BAD+=("insmod '$arg' loaded")
			rmmod vblk || true
			continue
		fi
		# kmod says EINVAL as "Invalid parameters" (older ones: strerror).
		[[ $out == *"Invalid parameters"* || $out == *"Invalid argument"* ]] ||
			BAD+=("insmod '$arg': '${out##*: }', not EINVAL")
		! grep -q '^vblk ' /proc/modules || BAD+=("insmod '$arg': vblk loaded after the failure")
	done
	log=$(dmesg | tail -n +"$((k0 + 1))")
	for arg in "${args[@]}"; do
		p=${arg%%=*}
		v=''
		[ "$p" = "$arg" ] || v=${arg#*=}
		v=${v//\"/} # the kernel takes the quotes off
		# dmesg escapes bytes it cannot print: look for those by name only.
		if [[ $v == *[![:print:]]* ]]; then
			[[ $log == *"' invalid for parameter \`$p'"* ]] ||
				BAD+=("insmod '$arg': no kernel line for $p")
		else
			[[ $log == *"vblk: \`$v' invalid for parameter \`$p'"* ]] ||
				BAD+=("insmod '$arg': no kernel line naming the value")
		fi
	done
	step "insmod refused ${#args[@]} bad values: ${args[*]}"

	k0=$(dmesg | wc -l)
	if ! insmod "$ko" num_queues=64 poll_queues=63 queue_depth=1024 ring_size=32768 \
		max_segments=1024 disk_prefix=$prefix; then
		fail_bad
		fail "insmod with the ends of the ranges failed"
	fi
	for arg in num_queues=64 poll_queues=63 queue_depth=1024 ring_size=32768 \
		max_segments=1024 disk_prefix=$prefix; do
		read1 "$PARAMS/${arg%%=*}"
		[ "$REPLY" = "${arg#*=}" ] || BAD+=("insmod $arg: reads back as '$REPLY'")
	done
	"$BIND" vblk "$a" >/dev/null
	d=$(wait_disk vmq1) || fail "vmq1 did not bind with the ends of the ranges"
	[ "$d" = "${prefix}a" ] || BAD+=("disk name $d, not ${prefix}a")
	cat "/sys/block/$d/vblk/config"
	ring=$(vcfg "$d" ring_size)
	depth=$(vcfg "$d" queue_depth)
	log=$(dmesg | tail -n +"$((k0 + 1))")
	printf '%s\n' "$log" | grep -aE 'lowered to' || true
	[ "$(vcfg "$d" queues)" = 1 ] || BAD+=("vmq1: $(vcfg "$d" queues) queues with num_queues=64")
	[ "$(vcfg "$d" poll_queues)" = 0 ] || BAD+=("vmq1: $(vcfg "$d" poll_queues) poll queues on 1 device queue")
	[[ $log == *"num_queues 64 lowered to 1,"* ]] || BAD+=("no log line for num_queues 64 on a 1-queue device")
	[[ $log == *"poll_queues 63 lowered to 0 "* ]] || BAD+=("no log line for poll_queues 63 on a 1-queue device")
	if [ "$ring" -lt 32768 ]; then
		[[ $log == *"ring_size 32768 lowered to $ring,"* ]] || BAD+=("ring $ring: no log line for ring_size 32768")
	fi
	if [ "$ring" -lt 1024 ]; then
		[ "$depth" = "$ring" ] || BAD+=("queue_depth $depth on a $ring ring, asked 1024")
		[[ $log == *"queue_depth 1024 lowered to $ring,"* ]] || BAD+=("no log line for queue_depth 1024 on a $ring ring")
	else
		[ "$depth" = 1024 ] || BAD+=("queue_depth $depth on a $ring ring, asked 1024")
	fi
	[ "$(vcfg "$d" max_segments)" -le 1024 ] || BAD+=("max_segments $(vcfg "$d" max_segments)")
	fio_verify "/dev/$d" 32 1 4m
	step "ends of the ranges: $d, ring $ring, depth $depth, segments $(vcfg "$d" max_segments)"
	"$BIND" virtio-pci "$a" >/dev/null
	wait_disk vmq1 >/dev/null || fail "vmq1 did not return to virtio_blk"
	rmmod_vblk
	fail_bad
}

# ---- main -----------------------------------------------------------------

load_map() {
	local s a
	[ -f /tmp/vblk-pci-map ] || return 0
	while read -r s a; do PCI_OF[$s]=$a; done </tmp/vblk-pci-map
}

# VBLK_ONLY=REGEX (iteration): run only the cases whose name matches (the
# load case always runs); the others are reported as skipped, with that
# reason.
vcase() {
	if [ -n "${VBLK_ONLY:-}" ] && ! [[ $1 =~ $VBLK_ONLY ]]; then
		report skip "$1" "not selected (VBLK_ONLY=$VBLK_ONLY)"
		return 0
	fi
	run_case "$@"
}

main() {
	[ "${1:-}" != --quick ] || QUICK=1
	case_logs vblk-only
	rm -f /tmp/vblk-pci-map
	load_patterns
	KMSG_N=0
	kmsg_scan
	echo "# vblk suite: kernel $(uname -r), $(nproc) cpus$([ "$QUICK" = 1 ] && echo ', quick')"
	udevadm settle --timeout=30 2>/dev/null || true
	run_case "vblk load and find disks" case_load
	if [ "$LAST_VERDICT" != ok ]; then
		summary
		exit 1
	fi
	load_map
	vcase "params reject bad values" case_params
	vcase "params refuse out-of-range values in sysfs" case_param_ranges
	vcase "one queue (vmq1)" case_disk vmq1 queues 1
	vcase "four queues (vmq4)" case_disk vmq4 queues 2
	vcase "direct descriptors (vdir)" case_disk vdir indirect 0
	vcase "no event index (vnoevt)" case_disk vnoevt event_idx 0
	vcase "a doorbell page per queue (vppv)" case_disk vppv queues 2
	vcase "INTx (vintx)" case_disk vintx irq_mode intx
	vcase "shared vector (vshr)" case_disk vshr irq_mode shared
	vcase "auto picks softirq for shared vectors" case_auto_shared
	vcase "failed probe unwinds" case_probe_unwind
	vcase "ring full and requeue (vq16)" case_ring_full
	vcase "overflow pool at its smallest (vmq1)" case_pool
	vcase "a maximum-size request among small ones (vmq1)" case_pool_fair
	vcase "notify_in_lock flipped under I/O" case_notify_flip
	vcase "interrupt moderation (irq_coalesce)" case_coalesce
	vcase "lost interrupt and lost doorbell recovered" case_lost_wakeups
	vcase "poll queue without interrupts" case_poll_queue
	if [ "$QUICK" = 0 ]; then
		vcase "forced irq and completion modes" case_modes
		vcase "iodepth 128 x 4 jobs" case_deep
		vcase "20 rebinds, 20 rmmod/insmod" case_cycles
	fi
	vcase "vblk-stat against fio" case_vblk_stat
	vcase "back to virtio_blk, rmmod" case_unload
	vcase "modprobe with /etc/modprobe.d options" case_modprobe
	vcase "insmod refuses bad parameter values" case_insmod_params
	summary
	[ "$n_fail" = 0 ]
}

main "$@"
