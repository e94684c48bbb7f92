# shellcheck shell=bash
# Helpers of the guest test suite (sourced by suite.sh): case runner and
# result accounting, the disk manifest, finding disks by serial, binding.

GUEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$GUEST_DIR/../.." && pwd)
BIND=$REPO/scripts/vblk-bind
LOG_PATTERNS=$GUEST_DIR/kernel-log-patterns

n_pass=0 n_fail=0 n_skip=0 case_no=0
export LAST_VERDICT=

# ---- result reporting -------------------------------------------------------

# Inside a case (a subshell): end it as failed or skipped, with a reason.
fail() { [ -s "$CASE_REASON" ] || printf '%s\n' "$*" >"$CASE_REASON"; exit 1; }
skip() { printf '%s\n' "$*" >"$CASE_REASON"; exit 77; }
# Log a step of a case (goes to the case log).
step() { printf '+ %s\n' "$*"; }

report() {
	local verdict=$1 name=$2 reason=${3:-}
	LAST_VERDICT=$verdict # read by suite.sh
	case $verdict in
	ok) n_pass=$((n_pass + 1)); echo "ok - $name" ;;
	skip) n_skip=$((n_skip + 1)); echo "skip - $name: $reason" ;;
	FAIL) n_fail=$((n_fail + 1)); echo "FAIL - $name: $reason" ;;
	esac
}

# Kernel log lines (from line $1 on) that match a problem pattern.
kmsg_lines() { dmesg 2>/dev/null | wc -l; }
kmsg_problems() {
	local from=$1 pat
	pat=$(grep -v '^#' "$LOG_PATTERNS" | grep . | paste -sd'|')
	dmesg 2>/dev/null | tail -n +"$((from + 1))" | grep -E "$pat" | grep -v 'Command line:' || true
}

# run_case NAME FUNC ARGS...: run FUNC in a subshell with errexit, its output
# in a per-case log; any unexpected failing command fails the case, and so
# does a kernel log problem that appeared while it ran.
run_case() {
	local name=$1 rc reason log k0 t0 t1 probs
	shift
	case_no=$((case_no + 1))
	log=$CASE_DIR/$(printf '%02d' "$case_no")-${name//[^A-Za-z0-9._-]/_}.log
	CASE_REASON=$log.reason
	rm -f "$CASE_REASON"
	k0=$(kmsg_lines)
	t0=$(date +%s.%N)
	set +e
	(
		set -eEuo pipefail
		# The first failure explains the case; later (outer) ones do not.
		# shellcheck disable=SC2154 # e is assigned in the trap
		trap 'e=$?; [ -s "$CASE_REASON" ] || printf "%s: \"%s\" exited %s\n" "${FUNCNAME[0]:-case}:$LINENO" "$BASH_COMMAND" "$e" >"$CASE_REASON"' ERR
		"$@"
	) >"$log" 2>&1 </dev/null
	rc=$?
	set -e
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" -v n="$name" 'BEGIN { printf "%6.1f %s\n", b - a, n }' >>"$TIMES"
	reason=$(head -c 400 "$CASE_REASON" 2>/dev/null | head -3 | paste -sd';' || true)
	probs=$(kmsg_problems "$k0")
	if [ -n "$probs" ]; then
		rc=1
		reason="kernel log: $(head -1 <<<"$probs")${reason:+ (and: $reason)}"
	fi
	case $rc in
	0) report ok "$name" ;;
	77) report skip "$name" "${reason:-no reason given}" ;;
	*)
		report FAIL "$name" "${reason:-exit $rc}"
		[ -z "$probs" ] || head -20 <<<"$probs" | sed 's/^/  # /'
		tail -15 "$log" | sed 's/^/  # /'
		;;
	esac
	return 0
}

summary() { echo "$n_pass passed, $n_fail failed, $n_skip skipped"; }

# ---- the disk manifest (written by scripts/vm-run) --------------------------
# One line per disk: serial= size= lbs= pbs= ro= queues= qsize= backend= sha1m=

manifest_serials() { sed -n 's/^serial=\([^ ]*\).*/\1/p' "$VBLK_DISKS"; }

# mf SERIAL KEY: a disk's expected property.
mf() {
	local line
	line=$(grep "^serial=$1 " "$VBLK_DISKS") || return 1
	tr ' ' '\n' <<<"$line" | sed -n "s/^$2=//p"
}

# ---- disks ------------------------------------------------------------------

# Block device name (vdX) holding the given serial, or nothing.
disk_of_serial() {
	local f
	for f in /sys/block/*/serial; do
		[ -r "$f" ] || continue
		if [ "$(cat "$f" 2>/dev/null)" = "$1" ]; then
			basename "$(dirname "$f")"
			return 0
		fi
	done
	return 1
}

# Wait (up to $2 s, default 15) for the disk with serial $1 and its /dev node.
wait_disk() {
	local s=$1 t=${2:-15} d i
	for ((i = 0; i < t * 5; i++)); do
		if d=$(disk_of_serial "$s") && [ -b "/dev/$d" ]; then
			echo "$d"
			return 0
		fi
		sleep 0.2
	done
	return 1
}

# Wait until no disk carries serial $1.
wait_gone() {
	local i
	for ((i = 0; i < 75; i++)); do
		disk_of_serial "$1" >/dev/null || return 0
		sleep 0.2
	done
	return 1
}

pci_of_serial() { "$BIND" show "$(disk_of_serial "$1")" | cut -d' ' -f1; }

# The vblk-bind target that means "the driver under test" / "the other one".
bind_target() { [ "$1" = vblk ] && echo vblk || echo virtio-pci; }

# Move the PCI function $1 to driver $2 (vblk|virtio_blk), wait for serial $3.
move_disk() {
	local addr=$1 drv=$2 serial=$3
	"$BIND" "$(bind_target "$drv")" "$addr"
	wait_disk "$serial" >/dev/null || fail "disk $serial did not appear under $drv at $addr"
}

# ---- vblk module ------------------------------------------------------------

vblk_ko() {
	local r k
	r=$(uname -r)
	for k in "$REPO/build/$r/vblk.ko" "$REPO/build/$(cut -d. -f1,2 <<<"$r")/vblk.ko"; do
		[ -f "$k" ] && { echo "$k"; return 0; }
	done
	return 1
}
