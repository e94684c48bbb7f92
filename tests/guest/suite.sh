#!/bin/bash
# The driver-agnostic guest test suite; runs INSIDE a guest (scripts/vm-run).
#
#   DRIVER=virtio_blk|vblk tests/guest/suite.sh [--quick] [--group G] [--disks MANIFEST]
#
# The disks under test are found by their virtio-blk serial; their expected
# properties come from the manifest vm-run writes ($VBLK_DISKS): all of its
# disks, or with --group G those given group=G. For
# DRIVER=vblk, build/$(uname -r)/vblk.ko is insmod'ed (with $VBLK_MODPARAMS)
# and each disk's PCI function is moved to vblk with scripts/vblk-bind; at the
# end they go back to virtio-pci and vblk is removed.
#
# Each case prints "ok - NAME", "FAIL - NAME: reason" or "skip - NAME: reason"
# (diagnostics follow as "  # ..." lines); the last line is
# "N passed, N failed, N skipped"; the exit status is 1 if anything failed.
# Per-case logs: $VBLK_OUT/cases-$DRIVER/, case times: $VBLK_OUT/times-$DRIVER.txt.
#
# VBLK_TEST_INJECT (comma list) proves that failures are caught:
#   verify  overwrite bytes on the disk between fio's write and verify passes
#   warn    write "WARNING: CPU: 0 PID: 1 at test" to the kernel log
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/guest/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/guest/cases.sh
. "$here/cases.sh"

QUICK=0 GROUP=''
# The suite waits for the disks itself; it settles udev only before rmmod.
export VBLK_BIND_SETTLE=0
DRIVER=${DRIVER:-}
declare -A PCI_OF=() BROKEN=()

die() { echo "suite: error: $*" >&2; exit 2; }

parse_args() {
	while [ $# -gt 0 ]; do
		case $1 in
		--quick) QUICK=1 ;;
		--disks) VBLK_DISKS=${2:?}; shift ;;
		--group) GROUP=${2:?}; shift ;;
		-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
		*) die "unknown argument '$1'" ;;
		esac
		shift
	done
	case $DRIVER in
	virtio_blk | vblk) ;;
	*) die "set DRIVER=virtio_blk or DRIVER=vblk" ;;
	esac
	if [ -z "${VBLK_DISKS:-}" ] || [ ! -f "$VBLK_DISKS" ]; then
		die "no disk manifest (VBLK_DISKS or --disks; scripts/vm-run writes one)"
	fi
	[ "$(id -u)" = 0 ] || die "must run as root"
}

# Map each serial to its PCI function (the disks are on some driver now).
map_disks() {
	local s
	for s in "${SERIALS[@]}"; do
		if await_disk "$s" 30 && pci_of_disk "$DISK"; then
			PCI_OF[$s]=$PCI_ADDR
		else
			BROKEN[$s]=1
			report FAIL "find $s" "no disk with serial $s (is it bound to a driver?)"
		fi
	done
}

# run_disk_case NAME SERIAL FUNC: skip when the disk could not be attached;
# fail without running when the disk is not on DRIVER now (an earlier case
# that moved it between drivers and failed half-way): its results would be
# the other driver's, reported under this one's name.
run_disk_case() {
	local name=$1 s=$2
	shift 2
	if [ -n "${BROKEN[$s]:-}" ]; then
		report skip "$name $s" "disk $s is not attached to $DRIVER"
		return 0
	fi
	if ! find_disk "$s"; then
		report FAIL "$name $s" "no disk with serial $s before the case (left unbound by an earlier case?)"
		return 0
	fi
	driver_of_disk "$DISK"
	if [ "$DRV" != "$DRIVER" ]; then
		report FAIL "$name $s" "$s is /dev/$DISK under $DRV before the case, not $DRIVER"
		return 0
	fi
	run_case "$name $s" "$@" "$s"
}

run_fio() {
	# run_disk_case appends the serial: the table goes first.
	local s=$1 table=$2
	run_disk_case fio-verify "$s" case_fio_verify_t "$table"
}

first_rw_disk() {
	local s
	for s in "${SERIALS[@]}"; do
		[ "${MF[$s:ro]}" = 0 ] && [ "${MF[$s:backend]}" = file ] && { echo "$s"; return 0; }
	done
	return 1
}

# Discard, write zeroes and fstrim, on a disk whose drive frees trimmed
# blocks (drive.discard=unmap). xfs only where the lab has its tools.
discard_cases() {
	local s=$1
	run_disk_case discard-limits "$s" case_discard_limits
	run_disk_case blkdiscard "$s" case_blkdiscard
	run_disk_case zeroout "$s" case_zeroout
	run_disk_case fio-trim "$s" case_fio_trim
	run_disk_case fstrim-ext4 "$s" case_fstrim_ext4
	run_disk_case fstrim-xfs "$s" case_fstrim_xfs
}

disk_cases() {
	local s=$1 rw0=$2 ro=${MF[$1:ro]} backend=${MF[$1:backend]}
	run_disk_case properties "$s" case_properties
	run_disk_case rebind "$s" case_rebind
	if [ "$ro" = 1 ]; then
		run_disk_case readonly "$s" case_readonly
	elif [ "$backend" = null ]; then
		run_disk_case fio-null "$s" case_fio_null
	else
		if [ "$QUICK" = 1 ]; then
			[ "$s" != "$rw0" ] || run_fio "$s" quick
		elif [ "$s" = "$rw0" ]; then
			run_fio "$s" full
		else
			run_fio "$s" short
		fi
		[ "$s" != "$rw0" ] || run_disk_case cross-driver "$s" case_cross
		[ "$s" != "$rw0" ] || run_disk_case cache-type "$s" case_cache_type
		[ "${MF[$s:discard]:--}" != unmap ] || discard_cases "$s"
		[ "${MF[$s:iommu]:-off}" != on ] || run_disk_case fio-bounce "$s" case_fio_bounce
		# A file system on the first disk and on any with big sectors.
		if [ "$QUICK" = 0 ] && { [ "$s" = "$rw0" ] || [ "${MF[$s:lbs]}" -gt 512 ]; }; then
			run_disk_case ext4 "$s" case_ext4
		fi
	fi
}

main() {
	parse_args "$@"
	case_logs "$DRIVER"
	load_manifest "$GROUP"
	[ ${#SERIALS[@]} -gt 0 ] || die "no disks${GROUP:+ of group $GROUP} in $VBLK_DISKS"
	load_patterns
	NCPU=$(nproc)
	kmsg_scan # start of the log: problems before the suite are vm-run's to report
	echo "# guest suite: DRIVER=$DRIVER kernel $(uname -r), $(nproc) cpus$([ "$QUICK" = 1 ] && echo ', quick')"
	map_disks
	if [ "$DRIVER" = vblk ]; then
		run_case "load vblk" case_load_vblk
		if [ "$LAST_VERDICT" != ok ]; then
			summary
			exit 1
		fi
	fi
	local s rw0=''
	rw0=$(first_rw_disk) || true
	for s in "${SERIALS[@]}"; do
		[ -n "${PCI_OF[$s]:-}" ] || continue
		run_case "attach $s" case_attach "$s"
		[ "$LAST_VERDICT" = ok ] || BROKEN[$s]=1
	done
	for s in "${SERIALS[@]}"; do
		[ -n "${PCI_OF[$s]:-}" ] || continue
		disk_cases "$s" "$rw0"
	done
	[ "$DRIVER" != vblk ] || run_case "unload vblk" case_unload_vblk
	summary
	[ "$n_fail" = 0 ]
}

main "$@"
