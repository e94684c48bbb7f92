# shellcheck shell=bash
# shellcheck disable=SC2034 # globals used by suite.sh and cases.sh
# Helpers of the guest test suite (sourced by suite.sh): case runner and
# result accounting, the disk manifest, finding disks by serial, binding.
#
# Under TCG every exec costs 0.1-0.3 s (binaries come over 9p), so the
# helpers that run often use bash builtins only and set globals instead of
# printing into $(...).

GUEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$GUEST_DIR/../.." && pwd)
BIND=$REPO/scripts/vblk-bind
LOG_PATTERNS=$GUEST_DIR/kernel-log-patterns

n_pass=0 n_fail=0 n_skip=0 case_no=0
LAST_VERDICT='' # read by suite.sh
KMSG_N=0        # kernel log lines already looked at

# ---- small builtins-only tools ----------------------------------------------

# nap SECONDS: sleep without an exec (read with a timeout on a silent fifo).
nap() {
	if [ -z "${NAP_FD:-}" ]; then
		local f=/tmp/.vblk-nap.$$
		mkfifo "$f"
		exec {NAP_FD}<>"$f"
		rm -f "$f"
	fi
	read -r -t "$1" -u "$NAP_FD" _ || true
}

# now_us: wall clock in microseconds (sets NOW_US).
now_us() { NOW_US=${EPOCHREALTIME/./}; }

# ms_since T: milliseconds since T (a NOW_US value).
ms_since() { now_us; echo $(((NOW_US - $1) / 1000)); }

# Read the first line of a file into REPLY (empty when unreadable).
read1() { REPLY=''; read -r REPLY <"$1" 2>/dev/null || true; }

# ---- result reporting -------------------------------------------------------

# Inside a case (a subshell): end it as failed or skipped, with a reason.
fail() { [ -s "$CASE_REASON" ] || printf '%s\n' "$*" >"$CASE_REASON"; exit 1; }
skip() { printf '%s\n' "$*" >"$CASE_REASON"; exit 77; }
# Log a step of a case (goes to the case log).
step() { printf '+ %s\n' "$*"; }

report() {
	local verdict=$1 name=$2 reason=${3:-}
	LAST_VERDICT=$verdict
	case $verdict in
	ok) n_pass=$((n_pass + 1)); echo "ok - $name" ;;
	skip) n_skip=$((n_skip + 1)); echo "skip - $name: $reason" ;;
	FAIL) n_fail=$((n_fail + 1)); echo "FAIL - $name: $reason" ;;
	esac
}

summary() { echo "$n_pass passed, $n_fail failed, $n_skip skipped"; }

# The problem patterns as one ERE (also valid for awk).
load_patterns() {
	local l
	KMSG_PAT=''
	while IFS= read -r l; do
		case $l in '' | '#'*) continue ;; esac
		KMSG_PAT+=${KMSG_PAT:+|}$l
	done <"$LOG_PATTERNS"
}

# Scan the kernel log past line KMSG_N: problem lines into KMSG_PROBS,
# KMSG_N advanced to the end. (One dmesg and one awk.)
kmsg_scan() {
	local out
	# A log whose first line is not from time 0 has wrapped: line numbers no
	# longer mark "since", and problems may have been lost (vm-run boots with
	# log_buf_len=16M so that a suite never wraps it).
	out=$(dmesg 2>/dev/null | awk -v from="$KMSG_N" -v pat="$KMSG_PAT" '
		NR == 1 && $0 !~ /^\[ *0\.000000\]/ { wrapped = 1 }
		NR > from && $0 ~ pat && $0 !~ /Command line:/ { print }
		END { if (wrapped) print "kernel log wrapped: its first lines are lost (boot with a larger log_buf_len)"
		      print "#lines " NR }')
	KMSG_PROBS=${out%#lines *}
	KMSG_PROBS=${KMSG_PROBS%$'\n'}
	KMSG_N=${out##*#lines }
}

# kmsg_keep FROM FILE: the whole kernel log after line FROM (the patterns
# pick one line; the trace after it is what explains a failure). A blocked
# task also gets every blocked task's stack (sysrq w) added.
kmsg_keep() {
	if [[ $KMSG_PROBS == *"blocked for more than"* ]] && [ -w /proc/sysrq-trigger ]; then
		echo w >/proc/sysrq-trigger 2>/dev/null || true
		sleep 1
	fi
	dmesg 2>/dev/null | tail -n +"$(($1 + 1))" >"$2" || true
}

# case_logs NAME: a suite's case logs in $VBLK_OUT/cases-NAME/ (emptied) and
# its case times in $VBLK_OUT/times-NAME.txt (sets CASE_DIR and TIMES).
case_logs() {
	local base=${VBLK_OUT:-/tmp/vblk-suite}
	CASE_DIR=$base/cases-$1
	TIMES=$base/times-$1.txt
	rm -rf "$CASE_DIR"
	mkdir -p "$CASE_DIR"
	: >"$TIMES"
}

# run_case NAME FUNC ARGS...: run FUNC in a subshell with errexit, its output
# in a per-case log; any unexpected failing command fails the case, and so
# does a kernel log problem that appeared while it ran.
run_case() {
	local name=$1 rc reason log t0 lines
	shift
	case_no=$((case_no + 1))
	printf -v log '%s/%02d-%s.log' "$CASE_DIR" "$case_no" "${name//[^A-Za-z0-9._-]/_}"
	CASE_REASON=$log.reason
	now_us
	t0=$NOW_US
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
	now_us
	printf '%6d.%d %s\n' $(((NOW_US - t0) / 1000000)) $(((NOW_US - t0) / 100000 % 10)) "$name" >>"$TIMES"
	reason=''
	if [ -s "$CASE_REASON" ]; then
		mapfile -t -n 3 lines <"$CASE_REASON"
		reason=${lines[*]}
		reason=${reason:0:400}
	fi
	# A case that loaded the fault-hook build (need_fault_hook): the
	# plain build goes back before anything else runs, and the result
	# line says which build the case ran on.
	if [ -e /tmp/vblk-hook-loaded ]; then
		rm -f /tmp/vblk-hook-loaded
		name+=" [fault-hook build]"
		if grep -q '^vblk ' /proc/modules && ! swap_vblk "$(vblk_ko)" >>"$log" 2>&1; then
			rc=1
			reason="could not put the plain build back (see $log)${reason:+; and: $reason}"
		fi
	fi
	local from=$KMSG_N
	kmsg_scan
	if [ -n "$KMSG_PROBS" ]; then
		rc=1
		kmsg_keep "$from" "$log.kmsg"
		reason="kernel log: ${KMSG_PROBS%%$'\n'*}${reason:+ (and: $reason)}"
	fi
	case $rc in
	0) report ok "$name" ;;
	77) report skip "$name" "${reason:-no reason given}" ;;
	*)
		report FAIL "$name" "${reason:-exit $rc}"
		if [ -n "$KMSG_PROBS" ]; then
			printf '%s\n' "$KMSG_PROBS" | head -20 | sed 's/^/  # /'
			echo "  # whole kernel log of the case: $log.kmsg"
		fi
		tail -15 "$log" | sed 's/^/  # /'
		;;
	esac
	return 0
}

# ---- QMP (scripts/vm-run and scripts/qmp-agent) -----------------------------

# qmp JSON: send one QMP command to this guest's QEMU; QEMU's answer goes to
# stdout. Fails when QEMU answered with an error or not within 40 s.
# With VBLK_QMP_PORT (a virtio-serial port whose host end is qmp-agent
# --stream: scripts/mmio-run) the command goes as a line on the port.
QMP_N=0
qmp() {
	local dir=${VBLK_OUT:-}/qmp name i resp
	[ -z "${VBLK_QMP_PORT:-}" ] || { qmp_port "$1"; return; }
	[ -n "${VBLK_OUT:-}" ] || { echo "qmp: neither VBLK_OUT nor VBLK_QMP_PORT" >&2; return 2; }
	[ -d "$dir" ] || { echo "qmp: no $dir (not booted by scripts/vm-run?)" >&2; return 2; }
	QMP_N=$((QMP_N + 1))
	name=$dir/g$$-$BASHPID-$QMP_N
	printf '%s\n' "$1" >"$name.tmp"
	mv "$name.tmp" "$name.req"
	for ((i = 0; i < 400; i++)); do
		if [ -e "$name.resp" ]; then
			resp=$(cat "$name.resp")
			rm -f "$name.resp"
			printf '%s\n' "$resp"
			[[ $resp != *'"error"'* ]]
			return
		fi
		nap 0.1
	done
	rm -f "$name.req"
	echo "qmp: no answer to $1" >&2
	return 1
}

# The port is opened once, on fd QMP_FD, for the rest of the run; one line
# out, one line back (the agent answers in order, within 30 s).
QMP_FD=''
qmp_port() {
	local resp
	if [ -z "$QMP_FD" ]; then
		exec {QMP_FD}<>"$VBLK_QMP_PORT" || { echo "qmp: cannot open $VBLK_QMP_PORT" >&2; return 2; }
	fi
	printf '%s\n' "$1" >&"$QMP_FD"
	if ! IFS= read -r -t 40 resp <&"$QMP_FD"; then
		echo "qmp: no answer to $1 on $VBLK_QMP_PORT" >&2
		return 1
	fi
	resp=${resp%$'\r'}
	printf '%s\n' "$resp"
	[[ $resp != *'"error"'* ]]
}

# pci_disks SERIAL...: each disk, in the manifest and in the guest on a PCI
# function, into PCI_OF[SERIAL] (the caller's associative array); each
# missing one is a FAIL line. Status 1 if any was missing.
pci_disks() {
	local s missing=0
	for s in "$@"; do
		if [ -z "${MF[$s:qdev]:-}" ] || ! await_disk "$s" 30 || ! pci_of_disk "$DISK"; then
			report FAIL "find $s" "no disk with serial $s in the manifest or the guest"
			missing=1
			continue
		fi
		PCI_OF[$s]=$PCI_ADDR
	done
	return $missing
}

# bind_within TARGET SECONDS: vblk-bind TARGET (none, vblk, virtio-pci,
# virtio-mmio) of DEV_ADDR, done within SECONDS, or the case fails (a hang).
bind_within() {
	local t0 rc=0
	now_us
	t0=$NOW_US
	timeout "$2" "$BIND" "$1" "$DEV_ADDR" || rc=$?
	[ "$rc" != 124 ] || fail "vblk-bind $1 $DEV_ADDR did not finish within $2 s (hang)"
	[ "$rc" = 0 ] || fail "vblk-bind $1 $DEV_ADDR failed ($rc)"
	step "vblk-bind $1 $DEV_ADDR took $(ms_since "$t0") ms"
}

# await_exit PID SECONDS WHY: PID ends within SECONDS, or it is killed and
# the case fails with WHY.
await_exit() {
	local pid=$1 i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		nap 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	fail "$3"
}

# resize_wait NAME ID BYTES: QMP block_resize of the drive ID names (a JSON
# member: "node-name": ... or "device": ...) to BYTES, then wait until
# $DISK shows the new size (the config change interrupt's work); fails
# the case after 10 s. NAME is for the messages.
resize_wait() {
	local s=$1 id=$2 bytes=$3 i
	qmp "{\"execute\": \"block_resize\", \"arguments\": {$id, \"size\": $bytes}}" >/dev/null ||
		fail "block_resize $s to $bytes refused"
	for ((i = 0; i < 100; i++)); do
		[ "$(cat "/sys/block/$DISK/size")" = $((bytes / 512)) ] && return 0
		nap 0.1
	done
	fail "$s: size $(cat "/sys/block/$DISK/size") sectors 10 s after block_resize to $((bytes / 512))"
}

# ---- the disk manifest (written by scripts/vm-run) --------------------------
# One line per disk: serial= size= lbs= pbs= ro= queues= qsize= backend= sha1m=
# group= (optional) tags disks meant for one suite; eio= the blkdebug sector;
# qdev= node= port= file= QEMU's device, drive and root port ids and the image.
# load_manifest [GROUP]: MF[serial:key] for every disk; SERIALS (in order)
# lists the disks of GROUP, or all disks when no group is given.

load_manifest() {
	local line tok s
	SERIALS=()
	declare -gA MF=()
	while read -r line; do
		s=''
		for tok in $line; do
			case $tok in serial=*) s=${tok#serial=} ;; esac
		done
		[ -n "$s" ] || continue
		for tok in $line; do
			MF[$s:${tok%%=*}]=${tok#*=}
		done
		[ -z "${1:-}" ] || [ "${MF[$s:group]:-}" = "$1" ] || continue
		SERIALS+=("$s")
	done <"$VBLK_DISKS"
}

# ---- disks ------------------------------------------------------------------

# find_disk SERIAL: set DISK to the block device (vdX) holding the serial.
find_disk() {
	local f
	DISK=''
	for f in /sys/block/*/serial; do
		read1 "$f"
		if [ "$REPLY" = "$1" ]; then
			f=${f%/serial}
			DISK=${f##*/}
			return 0
		fi
	done
	return 1
}

# disk_of_serial SERIAL: print the disk holding the serial (status 1: none).
disk_of_serial() { find_disk "$1" && echo "$DISK"; }

# await_disk SERIAL [SECONDS]: wait for the disk and its /dev node; sets DISK.
await_disk() {
	local i
	for ((i = 0; i < ${2:-15} * 10; i++)); do
		if find_disk "$1" && [ -b "/dev/$DISK" ]; then
			return 0
		fi
		nap 0.1
	done
	return 1
}

# wait_disk SERIAL [SECONDS]: the same, and print the disk's name.
wait_disk() { await_disk "$@" && echo "$DISK"; }

# wait_gone SERIAL: wait until no disk carries the serial.
wait_gone() {
	local i
	for ((i = 0; i < 150; i++)); do
		find_disk "$1" || return 0
		nap 0.1
	done
	return 1
}

# pci_of_disk vdX: set PCI_ADDR to the PCI function the disk sits on.
pci_of_disk() {
	local path comp
	PCI_ADDR=''
	path=$(cd -P "/sys/block/$1" && pwd)
	local IFS=/
	for comp in $path; do
		[[ $comp =~ ^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ ]] && PCI_ADDR=$comp
	done
	[ -n "$PCI_ADDR" ]
}

# driver_of_disk vdX: set DRV to the driver of the disk's device
# (virtio_blk for the in-tree driver, vblk for vblk).
driver_of_disk() {
	DRV=$(cd -P "/sys/block/$1/device/driver" && pwd)
	DRV=${DRV##*/}
}

# dev_of_disk vdX: set DEV_ADDR to the device the disk sits on: its PCI
# function, else its virtio-mmio platform device (as vblk-bind names them).
dev_of_disk() {
	local path comp plat=''
	DEV_ADDR=''
	if pci_of_disk "$1"; then
		DEV_ADDR=$PCI_ADDR
		return 0
	fi
	path=$(cd -P "/sys/block/$1" && pwd)
	local IFS=/
	for comp in $path; do
		[ -n "$comp" ] && [ -e "/sys/bus/platform/devices/$comp" ] && plat=$comp
	done
	DEV_ADDR=$plat
	[ -n "$DEV_ADDR" ]
}

# The vblk-bind target for a driver under test (VBLK_TRANSPORT: pci, the
# default, or mmio: where virtio_blk's disks sit).
bind_target() {
	case $1 in
	vblk) echo vblk ;;
	virtio_blk) echo "virtio-${VBLK_TRANSPORT:-pci}" ;;
	*) echo "$1" ;;
	esac
}

# move_disk ADDR DRIVER SERIAL: move the PCI function to DRIVER
# (vblk|virtio_blk) and wait for the disk; sets DISK.
move_disk() {
	local addr=$1 drv=$2 serial=$3
	"$BIND" "$(bind_target "$drv")" "$addr"
	await_disk "$serial" || fail "disk $serial did not appear under $drv at $addr"
}

# fio_verify DEV [DEPTH JOBS SIZE BSRANGE]: random writes of mixed sizes
# (BSRANGE, default 4k-64k), JOBS jobs of SIZE each on their own regions,
# then a full read-back check through the device (direct I/O).
fio_verify() {
	local dev=$1 depth=${2:-32} jobs=${3:-1} size=${4:-16m} bs=${5:-4k-64k} rc=0 out
	out=$(fio --name=v --filename="$dev" --ioengine=libaio --direct=1 \
		--rw=randwrite --bsrange="$bs" --iodepth="$depth" --numjobs="$jobs" \
		--size="$size" --offset_increment="$size" --verify=crc32c \
		--verify_fatal=1 --do_verify=1 --group_reporting 2>&1) || rc=$?
	printf '%s\n' "$out" | tail -15
	[ "$rc" = 0 ] || fail "fio verify on $dev (iodepth $depth x $jobs) exited $rc"
	! grep -qiE 'verify failed|bad magic|mismatch' <<<"$out" ||
		fail "fio verify found bad data on $dev"
}

# ---- vblk module ------------------------------------------------------------

# The module the suites load: build/<kver>/vblk.ko, the plain build (the
# one DKMS and `make install` produce; scripts/check builds it so, and
# scripts/dkms-test compares its code with DKMS's). $VBLK_KO overrides.
vblk_ko() {
	local r k
	if [ -n "${VBLK_KO:-}" ]; then
		[ -f "$VBLK_KO" ] && { echo "$VBLK_KO"; return 0; }
		return 1
	fi
	r=$(uname -r)
	for k in "$REPO/build/$r/vblk.ko" "$REPO/build/${r%%.*}.$(r=${r#*.}; echo "${r%%.*}")/vblk.ko"; do
		[ -f "$k" ] && { echo "$k"; return 0; }
	done
	return 1
}

# The fault-hook build (CONFIG_VBLK_FAULT_INJECT: vblk/lose), for the cases
# that need it only: build/<kver>-hook/vblk.ko (scripts/kbuild
# --fault-inject --out build/<kver>-hook <kernel>).
vblk_hook_ko() {
	local r k
	r=$(uname -r)
	for k in "$REPO/build/$r-hook/vblk.ko" "$REPO/build/${r%%.*}.$(r=${r#*.}; echo "${r%%.*}")-hook/vblk.ko"; do
		[ -f "$k" ] && { echo "$k"; return 0; }
	done
	return 1
}

has_fault_hook() { [ -n "$(modinfo -F fault_inject "$1" 2>/dev/null)" ]; }

# swap_vblk KO: reload vblk from KO; the PCI functions vblk held are bound
# to it again (with the same disk_prefix). Status 1 when any step fails.
swap_vblk() {
	local ko=$1 a addrs=() prefix='' t
	if [ -r /sys/module/vblk/parameters/disk_prefix ]; then
		read1 /sys/module/vblk/parameters/disk_prefix
		prefix=$REPLY
	fi
	for a in /sys/bus/pci/drivers/vblk/0000:*; do
		[ -e "$a" ] && addrs+=("${a##*/}")
	done
	for a in "${addrs[@]}"; do "$BIND" none "$a" >/dev/null || return 1; done
	udevadm settle --timeout=10 2>/dev/null || true
	for ((t = 0; t < 50; t++)); do
		grep -q '^vblk ' /proc/modules || break
		rmmod vblk 2>/dev/null && break
		nap 0.2
	done
	! grep -q '^vblk ' /proc/modules || { echo "swap_vblk: vblk still loaded" >&2; return 1; }
	insmod "$ko" ${prefix:+disk_prefix=$prefix} || return 1
	for a in "${addrs[@]}"; do "$BIND" vblk "$a" >/dev/null || return 1; done
	udevadm settle --timeout=30 2>/dev/null || true
	echo "swap_vblk: $ko loaded, ${#addrs[@]} function(s) bound again: ${addrs[*]}"
}

# Inside a case that needs vblk/lose: load the fault-hook build in place of
# the plain one (run_case puts the plain one back after the case, and its
# result line says "[fault-hook build]"). A loaded build that has the hook
# already (an older layout: build/<kver>/ built with --fault-inject) is
# kept. No hook build: the case fails (never a silent skip).
need_fault_hook() {
	local ko
	grep -q '^vblk ' /proc/modules || fail "vblk is not loaded"
	ko=$(vblk_ko) || fail "no build/$(uname -r)/vblk.ko"
	if has_fault_hook "$ko"; then
		step "the loaded build $ko has the fault hook"
		return 0
	fi
	ko=$(vblk_hook_ko) || fail "no build/$(uname -r)-hook/vblk.ko (scripts/kbuild --fault-inject --out build/<kver>-hook KERNEL)"
	has_fault_hook "$ko" || fail "$ko was built without CONFIG_VBLK_FAULT_INJECT"
	step "this case loads the fault-hook build $ko"
	: >/tmp/vblk-hook-loaded
	swap_vblk "$ko" || fail "could not load $ko"
}

# ---- the host as witness (QMP, QEMU's accounting and trace events) ----------
# The guest's numbers come from the driver under test; QEMU knows what
# reached the device. These read it for a disk of the manifest (its drive
# MF[s:node], its device MF[s:qdev]).

# host_stats SERIAL: query-blockstats for the disk's drive into HS[key]:
# the BlockBackend's accounting (rd_operations, wr_operations,
# flush_operations, rd_bytes, wr_bytes, failed_*_operations,
# unmap_operations, ...), and the file node's driver-specific statistics
# with a file_ prefix (file_discard_nb_ok, file_discard_bytes_ok,
# file_discard_nb_failed). QEMU 10's virtio-blk accounts write zeroes as
# writes and discards not at all; the file node counts the discards that
# reached the image. Status 1 (and the reason on stderr) when QMP fails.
declare -A HS=()
host_stats() {
	local resp k v
	resp=$(qmp '{"execute": "query-blockstats"}') || { echo "query-blockstats: $resp" >&2; return 1; }
	HS=()
	while read -r k v; do
		HS[$k]=$v
	done < <(python3 -c '
import json, sys
node = sys.argv[1]
for e in json.loads(sys.stdin.read())["return"]:
    if e.get("device") != node:
        continue
    for k, v in e["stats"].items():
        if isinstance(v, int):
            print(k, v)
    for k, v in e.get("parent", {}).get("driver-specific", {}).items():
        if isinstance(v, int):
            print("file_" + k.replace("-", "_"), v)
' "${MF[$1:node]}" <<<"$resp")
	[ -n "${HS[flush_operations]:-}" ] || { echo "query-blockstats: no drive ${MF[$1:node]} in: ${resp:0:300}" >&2; return 1; }
}

# host_vq SERIAL QUEUE: the device's view of one virtqueue
# (x-query-virtio-queue-status): VQ_AVAIL is last-avail-idx (requests the
# device has taken), VQ_USED used-idx (answers it gave). Both are 16-bit
# and wrap: compare deltas (vq_delta) over fewer than 65,536 requests.
host_vq() {
	local resp
	resp=$(qmp "{\"execute\": \"x-query-virtio-queue-status\", \"arguments\": {\"path\": \"/machine/peripheral/${MF[$1:qdev]}/virtio-backend\", \"queue\": $2}}") ||
		{ echo "x-query-virtio-queue-status $1 queue $2: $resp" >&2; return 1; }
	[[ $resp =~ \"last-avail-idx\":\ *([0-9]+) ]] || { echo "no last-avail-idx in $resp" >&2; return 1; }
	VQ_AVAIL=${BASH_REMATCH[1]}
	[[ $resp =~ \"used-idx\":\ *([0-9]+) ]] || { echo "no used-idx in $resp" >&2; return 1; }
	VQ_USED=${BASH_REMATCH[1]}
}

# vq_delta BEFORE AFTER: AFTER - BEFORE of a 16-bit ring index.
vq_delta() { echo $((($2 - $1) & 0xffff)); }

# Trace events through QMP into $VBLK_OUT/qemu.log (scripts/vm-run: -D).
TRACE_LOG=${VBLK_OUT:-/tmp}/qemu.log

# trace_on EVENT... / trace_off EVENT...: turn QEMU trace events on or off.
trace_set() {
	local state=$1 ev
	shift
	for ev in "$@"; do
		qmp "{\"execute\": \"trace-event-set-state\", \"arguments\": {\"name\": \"$ev\", \"enable\": $state}}" >/dev/null ||
			{ echo "trace-event-set-state $ev $state failed" >&2; return 1; }
	done
}
trace_on() { trace_set true "$@"; }
trace_off() { trace_set false "$@"; }

# trace_mark: remember where the trace log ends now (TRACE_FROM).
trace_mark() {
	TRACE_FROM=0
	[ ! -e "$TRACE_LOG" ] || TRACE_FROM=$(stat -c %s "$TRACE_LOG")
}

# trace_since: the trace log written after the last trace_mark.
trace_since() { tail -c +"$((TRACE_FROM + 1))" "$TRACE_LOG" 2>/dev/null || true; }

# trace_settle: wait until the trace log has stopped growing (QEMU writes
# it from its own threads; the guest sees it through 9p).
trace_settle() {
	local a b=-1 i
	for ((i = 0; i < 50; i++)); do
		a=$(stat -c %s "$TRACE_LOG" 2>/dev/null || echo 0)
		[ "$a" != "$b" ] || return 0
		b=$a
		nap 0.2
	done
}

# host_vdev SERIAL: QEMU's VirtIODevice pointer of the disk (VDEV), which
# its trace lines carry: one direct read at a sector nothing else reads,
# seen by virtio_blk_handle_read. Needs DISK set to the disk's vdX.
host_vdev() {
	local s=$1 sec lbs=${MF[$1:lbs]} f=/tmp/vblk-vdev-$1
	if [ -s "$f" ]; then
		read -r VDEV <"$f"
		return 0
	fi
	sec=$((${MF[$s:size]} / 512 - 4096 - 8))
	sec=$((sec / (lbs / 512) * (lbs / 512)))
	trace_on virtio_blk_handle_read || return 1
	trace_mark
	dd if="/dev/$DISK" of=/dev/null bs="$lbs" skip=$((sec * 512 / lbs)) count=1 iflag=direct status=none || return 1
	trace_settle
	trace_off virtio_blk_handle_read || return 1
	VDEV=$(trace_since | sed -n "s/.*virtio_blk_handle_read vdev \(0x[0-9a-f]*\) req 0x[0-9a-f]* sector $sec nsectors .*/\1/p" | sort -u)
	[[ $VDEV =~ ^0x[0-9a-f]+$ ]] || { echo "no single virtio_blk_handle_read at sector $sec for $s in the trace: '$VDEV'" >&2; return 1; }
	echo "$VDEV" >"$f"
}
