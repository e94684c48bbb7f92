#!/bin/bash
# Parity with the in-tree driver: for each disk, what a user sees under
# virtio_blk and under vblk, side by side. Runs INSIDE a guest after the
# other suites (tests/guest/run-all.sh), with vblk.ko built for this kernel.
#
#   tests/guest/parity.sh [--quick]
#
# Every disk of the manifest's groups "common" and "parity" and the vblk
# suite's vppv (a doorbell page per queue) and vmq4 (4 queues) is put on
# virtio_blk, then on vblk (default parameters but disk_prefix), and each
# time every file directly under /sys/block/<disk>/queue/ is read, plus the
# disk's serial, cache_type, size and ro. The configurations: defaults,
# 4 KiB sectors, read-only, 2 queues of 16 entries, null-co, discard=unmap,
# iommu_platform=on (swiotlb=force), detect-zeroes=unmap, write-cache=off,
# seg-max-adjust=off with queue-size=64, page-per-vq=on, num-queues=4.
#
# A value that differs fails its disk's case unless tests/guest/parity-allowed
# lists the attribute (for that disk, or for all) with the reason. The whole
# table goes to $VBLK_OUT/parity.txt and, per disk, into the case output
# ("  # attr  virtio_blk  vblk  verdict"). Attributes that only one driver's
# disk has, or that cannot be read, count as differences too.
# Ends with "N passed, N failed, N skipped"; exit 1 on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/guest/lib.sh
. "$here/lib.sh"

EXTRA_DISKS="vppv vmq4"
# The unusual device configurations of the vblk suite (INTx, two vectors
# for two queues, no event index, no indirect descriptors, 16 entries,
# a doorbell page per queue, four queues): each gets verified I/O under
# both drivers, so that what vblk-suite.sh asks of vblk there is known to
# work with the in-tree driver too (issue 23, finding 10).
IO_DISKS="vintx vshr vnoevt vdir vq16 vppv vmq4"
ALLOWED=$here/parity-allowed
declare -A PCI_OF=()

# ---- reading a disk ---------------------------------------------------------

# snapshot DISK FILE: "name value" lines, one per attribute (bash builtins:
# under TCG every exec costs a tenth of a second or more). A file that
# cannot be read (write-only, or an error) reads as "<unreadable>", a
# missing disk attribute as "<absent>".
snapshot() {
	local d=/sys/block/$1 f v lines
	{
		for f in "$d"/queue/* "$d"/serial "$d"/cache_type "$d"/size "$d"/ro; do
			[ -d "$f" ] && continue
			if [ ! -e "$f" ]; then
				v='<absent>'
			elif mapfile -t lines <"$f" 2>/dev/null; then
				v=${lines[*]}
			else
				v='<unreadable>'
			fi
			f=${f#"$d"/}
			printf '%s %s\n' "$f" "${v:-<empty>}"
		done
	} >"$2"
}

# Put serial $1 on driver $2 (virtio_blk|vblk) and snapshot it into $3,
# after udev has handled the new disk (its rules write queue attributes).
read_under() {
	move_disk "${PCI_OF[$1]}" "$2" "$1" >/dev/null
	udevadm settle --timeout=30 2>/dev/null || true
	await_disk "$1" 30 || fail "$1 is gone after udev settled under $2"
	driver_of_disk "$DISK"
	[ "$DRV" = "$2" ] || fail "$1 is on $DRV, not $2"
	snapshot "$DISK" "$3"
}

# ---- one disk ---------------------------------------------------------------

# compare SERIAL REF VBLK: the table (attribute, virtio_blk, vblk, verdict);
# a difference that parity-allowed does not list for this disk (or for all,
# "*") is DIFFERENT and fails the case. parity-allowed lines:
# "ATTR SERIALS REASON...", SERIALS a comma list or "*".
compare() {
	awk -v s="$1" -v ref="$2" -v vb="$3" '
		function val(line) { sub(/^[^ ]+ /, "", line); return line }
		FILENAME == ARGV[1] {
			if ($0 ~ /^[ \t]*(#|$)/) next
			n = split($2, l, ",")
			r = $0; sub(/^[^ ]+[ ]+[^ ]+[ ]+/, "", r)
			for (i = 1; i <= n; i++) allow[$1 ":" l[i]] = r
			next
		}
		FILENAME == ref { a[$1] = val($0); seen[$1] = 1; next }
		FILENAME == vb { b[$1] = val($0); seen[$1] = 1; next }
		END {
			printf "%-26s %-22s %-22s %s\n", "attribute", "virtio_blk", "vblk", "verdict"
			n = 0
			for (k in seen) keys[++n] = k
			for (i = 1; i <= n; i++)	# insertion sort: a few dozen keys
				for (j = i; j > 1 && keys[j - 1] > keys[j]; j--) {
					t = keys[j]; keys[j] = keys[j - 1]; keys[j - 1] = t
				}
			for (i = 1; i <= n; i++) {
				k = keys[i]
				x = (k in a) ? a[k] : "<absent>"
				y = (k in b) ? b[k] : "<absent>"
				if (x == y) v = "same"
				else if ((k ":" s) in allow) v = "allowed: " allow[k ":" s]
				else if ((k ":*") in allow) v = "allowed: " allow[k ":*"]
				else { v = "DIFFERENT"; bad++ }
				printf "%-26s %-22s %-22s %s\n", k, x, y, v
			}
			exit (bad > 0 ? 1 : 0)
		}' "$ALLOWED" "$2" "$3" ||
		fail "attributes differ from virtio_blk without a reason in parity-allowed"
}

case_disk() {
	local s=$1
	read_under "$s" virtio_blk "/tmp/parity-$s.ref"
	read_under "$s" vblk "/tmp/parity-$s.vblk"
	"$BIND" virtio-pci "${PCI_OF[$s]}" >/dev/null
	await_disk "$s" 30 || fail "$s did not return to virtio_blk"
	compare "$s" "/tmp/parity-$s.ref" "/tmp/parity-$s.vblk"
}

# io_under SERIAL DRIVER: on that driver, 8 MiB of random writes of 4-128
# KiB with verify (read back through the device: direct I/O) at queue depth
# 32, one job per queue (two at most); fio must end clean.
io_under() {
	local s=$1 drv=$2 jobs
	move_disk "${PCI_OF[$s]}" "$drv" "$s" >/dev/null
	await_disk "$s" 30 || fail "no disk $s under $drv"
	driver_of_disk "$DISK"
	[ "$DRV" = "$drv" ] || fail "$s is on $DRV, not $drv"
	jobs=${MF[$s:queues]:-1}
	[ "$jobs" -le 2 ] || jobs=2
	echo "$drv:"
	fio_verify "/dev/$DISK" 32 "$jobs" $((8 / jobs))m 4k-128k
}

# Both drivers (vblk first, so that the disk ends on virtio_blk), and the
# host (query-blockstats) must have seen both runs' bytes written and read.
case_io() {
	local s=$1 wr0 rd0 wr rd
	host_stats "$s" || fail "no host statistics for $s"
	wr0=${HS[wr_bytes]} rd0=${HS[rd_bytes]}
	io_under "$s" vblk
	io_under "$s" virtio_blk
	host_stats "$s" || fail "no host statistics for $s"
	wr=$((HS[wr_bytes] - wr0)) rd=$((HS[rd_bytes] - rd0))
	echo "host saw $wr bytes written, $rd read"
	[ "$wr" -ge $((16 << 20)) ] && [ "$rd" -ge $((16 << 20)) ] ||
		fail "the host saw $wr bytes written and $rd read: less than the two runs' 16 MiB each way"
}

# table_of SERIAL: the rows of that disk's case log.
table_of() {
	local f
	for f in "$CASE_DIR"/*-"parity__$1.log"; do
		[ -f "$f" ] && grep -E ' (same|DIFFERENT)$| allowed: |^attribute ' "$f"
	done
	return 0
}

case_setup() {
	local ko s
	ko=$(vblk_ko) || fail "no vblk.ko for $(uname -r)"
	! grep -q '^vblk ' /proc/modules || rmmod vblk
	insmod "$ko" disk_prefix=vblk
	for s in "${SERIALS[@]}"; do
		await_disk "$s" 30 || fail "no disk with serial $s"
		pci_of_disk "$DISK" || fail "no PCI function for $s"
		echo "$s $PCI_ADDR"
	done >/tmp/parity-pci-map
}

case_teardown() {
	udevadm settle --timeout=10 2>/dev/null || true
	rmmod vblk || fail "rmmod vblk failed"
}

main() {
	case_logs parity
	local s a list=()
	load_manifest
	for s in "${SERIALS[@]}"; do
		case ${MF[$s:group]:-} in common | parity) list+=("$s") ;; esac
	done
	for s in $EXTRA_DISKS; do [ -n "${MF[$s:serial]:-}" ] && list+=("$s"); done
	# The attribute table's disks; setup maps these and the I/O disks.
	ATTR_SERIALS=("${list[@]}")
	for s in $IO_DISKS; do
		[ -n "${MF[$s:serial]:-}" ] || continue
		case " ${list[*]} " in *" $s "*) ;; *) list+=("$s") ;; esac
	done
	SERIALS=("${list[@]}")
	load_patterns
	KMSG_N=0
	kmsg_scan
	echo "# parity with virtio_blk: kernel $(uname -r), disks ${ATTR_SERIALS[*]}; I/O on $IO_DISKS"
	run_case "parity: setup" case_setup
	if [ "$LAST_VERDICT" != ok ]; then
		summary
		exit 1
	fi
	while read -r s a; do PCI_OF[$s]=$a; done </tmp/parity-pci-map
	for s in "${ATTR_SERIALS[@]}"; do
		run_case "parity: $s" case_disk "$s"
		# The table of a disk that passed is shown too: it is the report.
		[ "$LAST_VERDICT" != ok ] || table_of "$s" | sed 's/^/  # /'
	done
	for s in $IO_DISKS; do
		if [ -z "${MF[$s:serial]:-}" ]; then
			report fail "parity I/O: $s" "no disk $s in the manifest (group vblk)"
			continue
		fi
		run_case "parity I/O: $s, verified under both drivers" case_io "$s"
	done
	run_case "parity: rmmod vblk" case_teardown
	{
		echo "# parity with virtio_blk, kernel $(uname -r)"
		for s in "${ATTR_SERIALS[@]}"; do table_of "$s" | sed "s/^/$s /"; done
	} >"${VBLK_OUT:-/tmp}/parity.txt"
	summary
	[ "$n_fail" = 0 ]
}

main "$@"
