#!/bin/bash
# QD1: where does a completion's interrupt land, and how many IPIs does a
# completion cost? 4k randread QD1 with fio pinned to vCPU 0, 6 s per
# driver, 2 rounds in alternating order; per I/O: the disk's interrupts on
# each vCPU, rescheduling (RES) and function-call (CAL) IPIs, and the
# queue vectors' affinity. Run under icount, e.g.
#   scripts/vm-run --kernel 7.3 --out results/qd1-irqs \
#     --qemu-opt "-icount shift=3,align=off,sleep=on" \
#     --disk 'null,size=4G,serial=s1' --disk 'null,size=4G,serial=s2' \
#     -- docs/perf/2026-12-06/qd1-irqs.sh
set -u
R=$(cd "$(dirname "$0")/../../.." && pwd)
. "$R/tests/guest/lib.sh"	# vblk_ko, disk_of_serial, pci_of_disk, wait_disk, BIND
insmod "$(vblk_ko)"
pci_of_disk "$(disk_of_serial s2)"
PCI=$PCI_ADDR
"$BIND" vblk "$PCI" >/dev/null
A=$(disk_of_serial s1); B=$(wait_disk s2)
pci_of_disk "$A"; APCI=$PCI_ADDR
echo "virtio_blk: $A ($APCI), vblk: $B ($PCI)"
# The disk's interrupt lines: virtio_blk's virtioN-req.*, vblk's named by its PCI address.
VIRTIO=$(basename "$(readlink -f /sys/block/$A/device)")
lines() { case $1 in virtio_blk) grep -E " $VIRTIO-req" /proc/interrupts ;; vblk) grep -F "$PCI" /proc/interrupts ;; esac; }
for drv in virtio_blk vblk; do
	lines $drv | while read -r irq c0 c1 rest; do
		n=${irq%:}
		echo "$drv irq $n ($rest): affinity $(cat /proc/irq/$n/effective_affinity_list 2>/dev/null)"
	done
done
snap() {	# snap DRIVER: per-CPU disk irqs, RES, CAL as "d0 d1 res0 res1 cal0 cal1"
	local d0=0 d1=0
	while read -r irq c0 c1 rest; do d0=$((d0 + c0)); d1=$((d1 + c1)); done < <(lines $1)
	echo "$d0 $d1 $(awk '$1=="RES:"{r0=$2;r1=$3} $1=="CAL:"{c0=$2;c1=$3} END{print r0,r1,c0,c1}' /proc/interrupts)"
}
run() {	# run DRIVER DEV
	local b a ios
	b=$(snap $1); ios0=$(awk '{print $1}' /sys/block/$2/stat)
	fio --name=x --filename=/dev/$2 --ioengine=libaio --direct=1 --rw=randread \
		--bs=4k --iodepth=1 --numjobs=1 --cpus_allowed=0 --time_based \
		--runtime=6 --output-format=terse | awk -F';' '{printf "%s IOPS %s  ", drv, $8}' drv=$1
	a=$(snap $1); ios=$(( $(awk '{print $1}' /sys/block/$2/stat) - ios0 ))
	python3 -c "
b=[int(x) for x in '$b'.split()]; a=[int(x) for x in '$a'.split()]; n=$ios
d=[(y-x)/n for x,y in zip(b,a)]
print('per I/O: disk irq cpu0 %.3f cpu1 %.3f  RES cpu0 %.3f cpu1 %.3f  CAL cpu0 %.3f cpu1 %.3f' % tuple(d))"
}
for round in 1 2; do
	if [ $round = 1 ]; then run virtio_blk $A; run vblk $B
	else run vblk $B; run virtio_blk $A; fi
done
