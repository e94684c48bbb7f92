#!/bin/bash
# Large random reads from page-sized buffers (THP off): vblk with the
# smallest overflow pool (pool_entries=0) and with 4096 entries, against
# virtio_blk, 3 rounds. Run under icount (IOPS per guest second), e.g.
#   scripts/vm-run --kernel 6.12 --out results/bigio \
#     --qemu-opt "-icount shift=3,align=off,sleep=on" \
#     --disk 'null,size=4G,serial=big1' --disk 'null,size=4G,serial=big2' \
#     -- docs/perf/2026-12-06/bigio-pool.sh
set -u
R=$(cd "$(dirname "$0")/../../.." && pwd)
echo never > /sys/kernel/mm/transparent_hugepage/enabled
. "$R/tests/guest/lib.sh"	# vblk_ko, disk_of_serial, pci_of_disk, wait_disk, BIND
insmod "$(vblk_ko)"
A=$(disk_of_serial big1)
pci_of_disk "$(disk_of_serial big2)"
PCI=$PCI_ADDR
"$BIND" vblk "$PCI" >/dev/null
run() { fio --name=x --filename=/dev/$1 --ioengine=libaio --direct=1 --rw=randread --bs=$2 --iodepth=32 --numjobs=2 --time_based --runtime=6 --ramp_time=1 --group_reporting --output-format=terse | awk -F';' '{print $8}'; }
for bs in 128k 512k; do
 for round in 1 2 3; do
  a=$(run $A $bs)
  for pe in 0 4096; do
   echo $pe > /sys/module/vblk/parameters/pool_entries
   "$BIND" none "$PCI" >/dev/null; "$BIND" vblk "$PCI" >/dev/null
   B=$(wait_disk big2)
   echo 1 > /sys/block/$B/vblk/counters
   b=$(run $B $bs)
   w=$(awk '$1=="total"{print $13}' /sys/block/$B/vblk/counters)
   echo "bs=$bs round=$round virtio_blk=$a vblk(pool_entries=$pe,$(grep pool_entries /sys/block/$B/vblk/config))=$b pool_waits=$w"
  done
 done
done
