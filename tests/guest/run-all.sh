#!/bin/bash
# Runs in the guest (scripts/guest-suite boots it through scripts/vm-run):
#
#   tests/guest/run-all.sh [--quick] [--no-reference] [--group G] [--suites LIST]
#
# 1. suite.sh against the in-tree virtio_blk (the reference);
# 2. suite.sh against vblk, when build/$(uname -r)/vblk.ko exists;
# 3. vblk-suite.sh (vblk's own cases), when it and vblk.ko exist;
# 4. parity.sh: every queue attribute, serial, cache_type, size and ro of
#    the same disks under virtio_blk and vblk, side by side;
# 5. witness.sh (the host as witness: QEMU's accounting and trace of
#    flushes, discards, write zeroes, injected errors, queues, doorbells)
#    for virtio_blk, then vblk;
# 6. passthru.sh: vblk's io_uring passthrough (/dev/<disk>c0), with
#    QEMU's accounting as the witness (vblk only);
# 7. lifecycle.sh (removal, failure, FLR, sleep) against virtio_blk, then
#    vblk (LIFE= leaves it out with a skip line).
# --suites LIST runs only the suites named in LIST (commas): virtio_blk
# (1), vblk (2), vblk-only (3), parity (4), witness (5: both drivers),
# passthru (6), life (7: both drivers); the default is all of them. A named suite that cannot run here (no vblk.ko,
# no disks of group "life") is a failure, not a silent skip.
# No vblk.ko, a suite script that is missing or not executable, or no
# lifecycle disks: each is a failure ("FAIL - suite NAME: why"), never a
# silent omission.
# --quick goes to every suite, --group G to suite.sh (which disks it tests).
# --no-reference leaves out the in-tree driver's runs of 1, 5 and 6, each
# with a skip line (make check runs the reference on one kernel, 6.12: the
# tests are the same on every kernel; vblk runs them all on each).
# Each suite's output is also in $VBLK_OUT/suite-<name>.log. Ends with the
# combined "N passed, N failed, N skipped"; a suite that ends without its
# summary line counts as one more failure. Exit status 1 if anything failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/guest/lib.sh
. "$here/lib.sh"

OUT=${VBLK_OUT:-/tmp}
quick=() group=() suites=virtio_blk,vblk,vblk-only,parity,witness,passthru,life all=1 ref=1
SUITES="virtio_blk vblk vblk-only parity witness passthru life"

# Whether suite $1 is to run.
want() { [[ ,$suites, == *",$1,"* ]]; }

# run_suite NAME CMD...: run one suite, keep its log, note a missing summary.
run_suite() {
	local name=$1 rc=0 log=$OUT/suite-$1.log
	shift
	"$@" | tee "$log" || rc=$?
	grep -qE '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log" ||
		echo "FAIL - suite $name: ended without a summary (exit $rc)" | tee -a "$log"
	return 0
}

# no_ref NAME: the reference's run of suite NAME left out (--no-reference).
no_ref() {
	printf 'skip - suite %s: the reference runs on another kernel (--no-reference)\n0 passed, 0 failed, 1 skipped\n' "$1" |
		tee "$OUT/suite-$1.log"
}

# missing NAME WHY: a suite that could not run is a failure, in its own log.
missing() { echo "FAIL - suite $1: $2" | tee "$OUT/suite-$1.log"; }

# have NAME SCRIPT: the suite's script is there and executable, or a failure.
have() {
	[ -x "$here/$2" ] && return 0
	missing "$1" "no executable $here/$2"
	return 1
}

# The "N passed, N failed, N skipped" lines of all suites, summed; each
# "FAIL - suite" line (a suite that died) counts as a failure too.
total() {
	cat "$OUT"/suite-*.log | awk '
		/^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/ { p += $1; f += $3; s += $5 }
		/^FAIL - suite / { f++ }
		END { printf "%d passed, %d failed, %d skipped\n", p, f, s }'
}

# A kernel with lockdep (the debug kernel, scripts/debug-kernel): it must
# still be on after every suite. Lockdep turns itself off for good after
# its first report, or when a table overflows, and would pass the rest of
# the run unchecked. Counted as one case (suite "kernel").
lockdep_check() {
	local on classes
	[ -r /proc/lockdep_stats ] || return 0
	on=$(awk '$1 == "debug_locks:" { print $2 }' /proc/lockdep_stats)
	classes=$(awk '/^ lock-classes:/ { print $2 }' /proc/lockdep_stats)
	{
		if [ "$on" = 1 ]; then
			echo "ok - kernel: lockdep still on at the end (debug_locks 1, lock classes ${classes:-?})"
			echo "1 passed, 0 failed, 0 skipped"
		else
			echo "FAIL - kernel: lockdep turned off during the run (debug_locks ${on:-?}): an earlier report or a full table; see dmesg.txt"
			echo "0 passed, 1 failed, 0 skipped"
		fi
	} | tee "$OUT/suite-kernel.log"
}

main() {
	while [ $# -gt 0 ]; do
		case $1 in
		--quick) quick=(--quick) ;;
		--no-reference) ref=0 ;;
		--group) group=(--group "${2:?}"); shift ;;
		--suites) suites=${2:?}; all=0; shift ;;
		*) echo "run-all: unknown argument '$1'" >&2; exit 2 ;;
		esac
		shift
	done
	local s
	for s in ${suites//,/ }; do
		[[ " $SUITES " == *" $s "* ]] ||
			{ echo "run-all: unknown suite '$s' (known: $SUITES)" >&2; exit 2; }
	done
	rm -f "$OUT"/suite-*.log
	[ $all = 1 ] || echo "# suites: $suites"
	if want virtio_blk && [ $ref = 0 ]; then
		no_ref virtio_blk
	elif want virtio_blk; then
		run_suite virtio_blk env DRIVER=virtio_blk "$here/suite.sh" "${quick[@]}" "${group[@]}"
	fi
	if ! vblk_ko >/dev/null; then
		# Only the reference ran: that is no pass of vblk.
		missing vblk "no build/$(uname -r)/vblk.ko: vblk was not tested at all"
	else
		# This run moves disks between the two drivers while vblk holds
		# some (cross-driver case): virtio_blk picks names from its own
		# counter and fails on a vdX that vblk holds, so vblk takes its
		# own prefix here, as README.md advises for mixed guests.
		if want vblk; then
			run_suite vblk env DRIVER=vblk \
				VBLK_MODPARAMS="${VBLK_MODPARAMS-disk_prefix=vblk}" \
				"$here/suite.sh" "${quick[@]}" "${group[@]}"
		fi
		if want vblk-only && have vblk-only vblk-suite.sh; then
			run_suite vblk-only "$here/vblk-suite.sh" "${quick[@]}"
		fi
		# What a user sees under each driver, side by side.
		if want parity && have parity parity.sh; then
			run_suite parity "$here/parity.sh"
		fi
		# What QEMU saw of each driver's flushes, discards, write
		# zeroes, errors, queues and doorbells.
		if want witness && have witness witness.sh; then
			if [ $ref = 1 ]; then
				run_suite witness-virtio_blk env DRIVER=virtio_blk "$here/witness.sh"
			else
				no_ref witness-virtio_blk
			fi
			run_suite witness-vblk env DRIVER=vblk "$here/witness.sh"
		fi
		# vblk's io_uring passthrough, QEMU's accounting as the witness.
		if want passthru && have passthru passthru.sh; then
			run_suite passthru "$here/passthru.sh" "${quick[@]}"
		fi
		# Lifecycle faults: the reference first, then vblk. LIFE= (empty)
		# leaves them out, and says so; without its disks they fail.
		if ! want life; then
			:
		elif [ -z "${LIFE-1}" ]; then
			printf 'skip - suite life: LIFE= given\n0 passed, 0 failed, 1 skipped\n' | tee "$OUT/suite-life.log"
		elif ! find_disk vlife; then
			missing life "no disk vlife (group life): the lifecycle suite did not run"
		elif have life lifecycle.sh; then
			if [ $ref = 1 ]; then
				run_suite life-virtio_blk env DRIVER=virtio_blk "$here/lifecycle.sh" "${quick[@]}"
			else
				no_ref life-virtio_blk
			fi
			run_suite life-vblk env DRIVER=vblk "$here/lifecycle.sh" "${quick[@]}"
		fi
	fi
	lockdep_check
	local t
	t=$(total)
	echo "$t"
	[[ $t == *" 0 failed,"* ]]
}

main "$@"
