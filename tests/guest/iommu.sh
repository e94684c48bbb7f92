#!/bin/bash
# IOMMU guest cases (issue 22, defect 5): a disk that offers ACCESS_PLATFORM
# behind QEMU's intel-iommu, with the guest's IOMMU on (intel_iommu=on):
# the DMA layer merges a request's pages into I/O virtual ranges, and no
# data descriptor may be longer than the device's size_max. Runs INSIDE a
# guest that scripts/iommu-run boots:
#
#   tests/guest/iommu.sh
#
# Disk: serial viommu (iommu_platform=on, disable-legacy=on). QEMU's
# virtio-blk offers no size_max, so vblk's test hook makes probe read one
# (module parameter fault_size_max, 64 KiB) and counts the descriptors
# that exceeded it (vblk/lose seg_over): a witness only a test build has.
# The in-tree driver runs the same I/O first, as the reference.
# Ends with "N passed, N failed, N skipped"; exit 1 on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/guest/lib.sh
. "$here/lib.sh"

SIZE_MAX=65536
PARAMS=/sys/module/vblk/parameters
PCI=''

# Large direct I/O from scattered user pages, verified: each request has
# up to 256 pages that the IOMMU maps into as few ranges as it may.
big_io() {
	local rc=0 out
	out=$(timeout 300 fio --name=big --filename="/dev/$1" --allow_file_create=0 \
		--ioengine=libaio --direct=1 --rw=randwrite --bs=1m --iodepth=8 \
		--size=64m --verify=crc32c --verify_fatal=1 --do_verify=1 2>&1) || rc=$?
	printf '%s\n' "$out" | grep -E 'WRITE:|READ:|err=' | head -4
	[ "$rc" = 0 ] || fail "1 MiB verified I/O behind the IOMMU: fio exited $rc"
}

case_iommu_on() {
	local g
	await_disk viommu 30 || fail "no disk viommu"
	pci_of_disk "$DISK" || fail "no PCI function for viommu"
	PCI=$PCI_ADDR
	echo "$PCI" >/tmp/iommu-pci
	ls /sys/class/iommu/ | grep -q . || fail "no IOMMU in the guest (/sys/class/iommu is empty)"
	g=$(readlink "/sys/bus/pci/devices/$PCI/iommu_group") || fail "$PCI is in no IOMMU group"
	step "IOMMU $(ls /sys/class/iommu/), $PCI in group ${g##*/}, type $(cat "/sys/bus/pci/devices/$PCI/iommu_group/type")"
	[ "$(cat "/sys/bus/pci/devices/$PCI/iommu_group/type")" != identity ] ||
		fail "the IOMMU group is identity-mapped: no translation to test"
}

case_reference() {
	await_disk viommu 30 || fail "no disk viommu"
	driver_of_disk "$DISK"
	[ "$DRV" = virtio_blk ] || fail "viommu is on $DRV, not virtio_blk"
	big_io "$DISK"
}

case_vblk_size_max() {
	local ko over
	# The witness (fault_size_max, seg_over) is the fault-hook build's.
	ko=$(vblk_hook_ko) || fail "no build/$(uname -r)-hook/vblk.ko (scripts/kbuild --fault-inject --out build/<kver>-hook KERNEL)"
	has_fault_hook "$ko" || fail "$ko was built without CONFIG_VBLK_FAULT_INJECT"
	step "this case loads the fault-hook build $ko"
	grep -q '^vblk ' /proc/modules || insmod "$ko" disk_prefix=vblk fault_size_max=$SIZE_MAX
	PCI=$(cat /tmp/iommu-pci)
	"$BIND" none "$PCI" >/dev/null
	wait_gone viommu || fail "viommu did not go away"
	"$BIND" vblk "$PCI" >/dev/null
	await_disk viommu 30 || fail "viommu did not come back under vblk"
	driver_of_disk "$DISK"
	[ "$DRV" = vblk ] || fail "viommu is on $DRV, not vblk"
	[ "$(sed -n 's/^dma_api //p' "/sys/block/$DISK/vblk/config")" = 1 ] || fail "vblk does not use the DMA API for viommu"
	[ "$(cat "/sys/block/$DISK/queue/max_segment_size")" = $SIZE_MAX ] ||
		fail "max_segment_size $(cat "/sys/block/$DISK/queue/max_segment_size"), want $SIZE_MAX"
	big_io "$DISK"
	over=$(sed -n 's/^seg_over //p' "/sys/block/$DISK/vblk/lose")
	step "descriptors longer than size_max $SIZE_MAX: $over"
	[ "$over" = 0 ] || fail "$over data descriptors exceeded size_max $SIZE_MAX: the DMA layer merged beyond the device's limit"
	"$BIND" virtio-pci "$PCI" >/dev/null
	await_disk viommu 30 || fail "viommu did not return to virtio_blk"
}

main() {
	case_logs iommu
	load_patterns
	KMSG_N=0
	kmsg_scan
	echo "# iommu suite: kernel $(uname -r), cmdline: $(grep -o 'intel_iommu=[^ ]*' /proc/cmdline)"
	udevadm settle --timeout=30 2>/dev/null || true
	run_case "iommu: translation on for the disk" case_iommu_on
	run_case "iommu: virtio_blk, 1 MiB verified I/O (reference)" case_reference
	run_case "iommu: vblk, no descriptor beyond size_max" case_vblk_size_max
	summary
	[ "$n_fail" = 0 ]
}

main "$@"
