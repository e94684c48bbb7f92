#!/bin/bash
# The benchmark's transport cells, INSIDE an initramfs guest that
# scripts/mmio-bench boots (QEMU microvm or q35 on x86, virt on arm64): the
# guest has busybox, bash and fio, no python, so this script prints one
# line per measurement and tests/bench/mmio_report.py, on the host, makes
# the tables.
#
#   tests/bench/mmio-bench.sh     (settings from the environment)
#
# MB_EXPS      experiments, any of:
#   drv        4k random read QD64, one job, on the reference disk under
#              virtio_blk (arms base and control: the A/A pair) and on the
#              vblk disk under vblk (arm test); make demo's drv cell
#   notify     seed 000: vblk's disk, four jobs of 4k random read QD64 on
#              its one queue, scheduler none; notify_in_lock=1 (base,
#              control) against notify_in_lock=0 (test), as the main
#              bench's notify-rt
#   doorbell   the cost of one doorbell write: each disk in turn (both
#              drivers) runs 4k random read at QD1 for MB_WINDOW seconds
#              under the function_graph tracer, filtered to the doorbell
#              functions (vblk_notify, and the in-tree transports' vm_notify
#              and vp_notify); prints their number and mean duration (the
#              MMIO or PCI write, trapped to QEMU, and the device's work
#              done in that trap under TCG, plus the tracer's own cost,
#              alike for all)
# MB_DISKS     "SERIAL:DRIVER ..." the disks: the first virtio_blk one is
#              drv's base, the first vblk one drv's test and notify's disk;
#              every one runs doorbell
# MB_REPS      rounds (default 8); MB_WINDOW seconds per slice (default 2)
#
# Output lines (stdout):
#   run EXP ARM ROUND IOPS REQUESTS DOORBELLS   (vblk's counters for a vblk
#                                                arm, else "- -")
#   doorbell SERIAL DRIVER TRANSPORT FUNC CALLS MEAN_US P50_US
#            (TRANSPORT: pci or mmio, from where the disk's device sits)
#   info KEY VALUE...
# and "N passed, N failed" for the steps that could fail (a disk missing,
# a run without a result), so that a broken bench is not a quiet one.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/guest/lib.sh
. "$here/../guest/lib.sh"

EXPS=${MB_EXPS:-drv notify doorbell}
REPS=${MB_REPS:-8}
WIN=${MB_WINDOW:-2}
export VBLK_BIND_SETTLE=0 # no udev here
npass=0 nfail=0
declare -A DISK_OF DRIVER_OF TP_OF

ok() { echo "ok - $*"; npass=$((npass + 1)); }
bad() { echo "FAIL - $*"; nfail=$((nfail + 1)); }

# Every disk onto its driver; DISK_OF[serial] its block device.
setup_disks() {
	local ent s d ko
	modprobe virtio_mmio 2>/dev/null || true
	modprobe virtio_blk 2>/dev/null || true
	ko=$(vblk_ko) || { bad "no vblk.ko for $(uname -r)"; return 1; }
	grep -q '^vblk ' /proc/modules || insmod "$ko" disk_prefix=vblk || { bad "insmod $ko"; return 1; }
	for ent in $MB_DISKS; do
		s=${ent%%:*} d=${ent#*:}
		DRIVER_OF[$s]=$d
		await_disk "$s" 30 || { bad "no disk $s"; continue; }
		if [ "$d" = vblk ]; then
			dev_of_disk "$DISK" || { bad "no device for $s"; continue; }
			bash /vblk/scripts/vblk-bind vblk "$DEV_ADDR" >/dev/null 2>&1 || { bad "vblk-bind vblk $DEV_ADDR ($s)"; continue; }
			await_disk "$s" 30 || { bad "$s did not come back under vblk"; continue; }
		fi
		DISK_OF[$s]=$DISK
		dev_of_disk "$DISK" || true
		TP_OF[$s]=$([ -e "/sys/bus/pci/devices/$DEV_ADDR" ] && echo pci || echo mmio)
		echo none >"/sys/block/$DISK/queue/scheduler" 2>/dev/null || true
		ok "$s: /dev/$DISK under $d"
	done
}

first_disk() {
	local ent
	for ent in $MB_DISKS; do
		[ "${ent#*:}" = "$1" ] && [ -n "${DISK_OF[${ent%%:*}]:-}" ] && { echo "${ent%%:*}"; return 0; }
	done
	return 1
}

# vblk's total requests and doorbells of disk $1 ("- -" for virtio_blk).
counters() {
	local f=/sys/block/$1/vblk/counters
	[ -r "$f" ] || { echo "- -"; return; }
	awk '$1 == "total" { print $2, $3 }' "$f"
}

# slice EXP ARM ROUND DISK JOBS: one fio run, one "run" line.
slice() {
	local exp=$1 arm=$2 r=$3 disk=$4 jobs=$5 c0 c1 iops out
	c0=$(counters "$disk")
	out=$(fio --name=s --filename="/dev/$disk" --direct=1 --ioengine=libaio --rw=randread \
		--bs=4k --iodepth=64 --numjobs="$jobs" --group_reporting --time_based \
		--runtime="$WIN" --ramp_time=0.2 --size=256m --norandommap --minimal 2>&1) || {
		bad "$exp $arm round $r: fio failed: $(echo "$out" | tail -2)"
		return
	}
	c1=$(counters "$disk")
	iops=$(echo "$out" | awk -F';' 'NF > 50 { print $8; exit }')
	[ -n "$iops" ] || { bad "$exp $arm round $r: no IOPS in fio's output"; return; }
	set -- $c0 $c1
	if [ "$1" = - ]; then
		echo "run $exp $arm $r $iops - -"
	else
		echo "run $exp $arm $r $iops $(($3 - $1)) $(($4 - $2))"
	fi
}

# arms EXP JOBS "ARM:DISK:NIL ..." REPS rounds, the arms' order rotating.
arms() {
	local exp=$1 jobs=$2 specs r i n a arm disk nil
	read -ra specs <<<"$3"
	n=${#specs[@]}
	for ((r = 0; r <= REPS; r++)); do
		for ((i = 0; i < n; i++)); do
			a=${specs[$(((i + r) % n))]}
			IFS=: read -r arm disk nil <<<"$a"
			[ "$nil" = - ] || echo "$nil" >/sys/module/vblk/parameters/notify_in_lock
			# Round 0 warms up and is not reported.
			if [ "$r" = 0 ]; then
				slice "$exp" "$arm" 0 "$disk" "$jobs" >/dev/null
			else
				slice "$exp" "$arm" "$r" "$disk" "$jobs"
			fi
		done
	done
	echo 0 >/sys/module/vblk/parameters/notify_in_lock
}

exp_drv() {
	local ref vb
	ref=$(first_disk virtio_blk) || { bad "drv: no virtio_blk disk"; return; }
	vb=$(first_disk vblk) || { bad "drv: no vblk disk"; return; }
	arms drv 1 "base:${DISK_OF[$ref]}:- control:${DISK_OF[$ref]}:- test:${DISK_OF[$vb]}:-"
	ok "drv: $REPS rounds"
}

exp_notify() {
	local vb d
	vb=$(first_disk vblk) || { bad "notify: no vblk disk"; return; }
	d=${DISK_OF[$vb]}
	echo "info notify_queues $(awk 'NR > 1 && $1 != "total" && $1 ~ /^[0-9]+$/' "/sys/block/$d/vblk/counters" | wc -l)"
	echo "info notify_arms base=1 control=1 test=0"
	arms notify 4 "base:$d:1 control:$d:1 test:$d:0"
	ok "notify: $REPS rounds"
}

# The tracer's lines: " 0)   3.456 us    |  vblk_notify [vblk]();"
exp_doorbell() {
	local T=/sys/kernel/tracing ent s d f
	[ -d "$T/options" ] || mount -t tracefs nodev "$T" 2>/dev/null
	[ -w "$T/current_tracer" ] || { bad "doorbell: no tracefs"; return; }
	: >"$T/set_ftrace_filter"
	for f in vblk_notify vm_notify vp_notify; do
		echo "$f" >>"$T/set_ftrace_filter" 2>/dev/null || true
	done
	echo "info doorbell_filter $(tr '\n' ' ' <"$T/set_ftrace_filter")"
	echo 16384 >"$T/buffer_size_kb"
	for ent in $MB_DISKS; do
		s=${ent%%:*}
		d=${DISK_OF[$s]:-}
		[ -n "$d" ] || continue
		echo function_graph >"$T/current_tracer"
		: >"$T/trace"
		echo 1 >"$T/tracing_on"
		fio --name=d --filename="/dev/$d" --direct=1 --ioengine=psync --rw=randread --bs=4k \
			--time_based --runtime="$WIN" --size=256m --norandommap --minimal >/dev/null 2>&1
		echo 0 >"$T/tracing_on"
		awk -v s="$s" -v drv="${DRIVER_OF[$s]}" -v tp="${TP_OF[$s]}" '
			/\| *[a-z_]+_notify( \[[a-z_]+\])?\(\);/ {
				for (i = 1; i <= NF; i++) if ($i == "us") { v = $(i - 1); break }
				fn = $0; sub(/.*\| */, "", fn); sub(/[ (].*/, "", fn)
				# a histogram of 0.1 us buckets gives the median in one pass
				b = int(v * 10); if (b > 99999) b = 99999
				n[fn]++; sum[fn] += v; h[fn, b]++; if (b > top[fn]) top[fn] = b
			}
			END {
				for (fn in n) {
					c = 0
					for (b = 0; b <= top[fn]; b++) { c += h[fn, b]; if (2 * c >= n[fn]) break }
					printf "doorbell %s %s %s %s %d %.2f %.1f\n", s, drv, tp, fn, n[fn], sum[fn] / n[fn], b / 10
				}
			}' <"$T/trace" | tee /tmp/mb-door
		if [ -s /tmp/mb-door ]; then ok "doorbell: $s"; else bad "doorbell: no doorbell calls traced on $s"; fi
		echo nop >"$T/current_tracer"
	done
}

main() {
	echo "info kernel $(uname -r) $(uname -m)"
	echo "info cpus $(nproc)"
	setup_disks
	local e
	for e in $EXPS; do
		case $e in
		drv | notify | doorbell) "exp_$e" ;;
		*) bad "unknown experiment $e" ;;
		esac
	done
	echo "$npass passed, $nfail failed"
	[ "$nfail" = 0 ]
}

main "$@"
