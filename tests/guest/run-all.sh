#!/bin/bash
# Runs in the guest: the suite against the in-tree virtio_blk, then against
# vblk when build/$(uname -r)/vblk.ko exists, in the same boot. Passes its
# arguments (--quick) to suite.sh and ends with the combined
# "N passed, N failed, N skipped" line; exit status 1 if anything failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/guest/lib.sh
. "$here/lib.sh"

total() {
	# Sum the "N passed, N failed, N skipped" lines given on stdin.
	awk '/^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/ { p += $1; f += $3; s += $5 }
		END { printf "%d passed, %d failed, %d skipped\n", p, f, s }'
}

run_driver() {
	local drv=$1 rc=0 log
	shift
	log=${VBLK_OUT:-/tmp}/suite-$drv.log
	DRIVER=$drv "$here/suite.sh" "$@" | tee "$log" || rc=$?
	grep -qE '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log" ||
		echo "FAIL - suite DRIVER=$drv: ended without a summary (exit $rc)" | tee -a "$log"
	return 0
}

main() {
	local out=${VBLK_OUT:-/tmp}
	run_driver virtio_blk "$@"
	if vblk_ko >/dev/null; then
		run_driver vblk "$@"
	else
		echo "# no build/$(uname -r)/vblk.ko: DRIVER=vblk not run"
		rm -f "$out/suite-vblk.log"
	fi
	# Lines without a summary (a crashed suite) count as failures.
	local t
	t=$(cat "$out"/suite-*.log | total)
	local broken
	broken=$(cat "$out"/suite-*.log | grep -c '^FAIL - suite DRIVER=' || true)
	if [ "$broken" != 0 ]; then
		t=$(awk -v b="$broken" '{ printf "%d passed, %d failed, %d skipped\n", $1, $3 + b, $5 }' <<<"$t")
	fi
	echo "$t"
	[[ $t == *" 0 failed,"* ]]
}

main "$@"
