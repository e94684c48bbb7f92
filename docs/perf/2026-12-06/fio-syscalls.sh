#!/bin/bash
# Why does fio itself ([user] in the profile) spend fewer instructions per
# I/O on vblk's disk than on virtio_blk's? Count fio's system calls per I/O
# and its user/system CPU per I/O on both drivers, 4k randread QD64, one
# job, 3 rounds in alternating order. Run under icount (guest time counts
# guest instructions), e.g.
#   scripts/vm-run --kernel 6.12 --out results/fio-sys \
#     --qemu-opt "-icount shift=3,align=off,sleep=on" \
#     --disk 'null,size=4G,serial=s1' --disk 'null,size=4G,serial=s2' \
#     -- docs/perf/2026-12-06/fio-syscalls.sh
set -u
R=$(cd "$(dirname "$0")/../../.." && pwd)
. "$R/tests/guest/lib.sh"	# vblk_ko, disk_of_serial, pci_of_disk, wait_disk, BIND
insmod "$(vblk_ko)"
pci_of_disk "$(disk_of_serial s2)"
PCI=$PCI_ADDR
"$BIND" vblk "$PCI" >/dev/null
A=$(disk_of_serial s1); B=$(wait_disk s2)
echo "virtio_blk: $A, vblk: $B"
EV=syscalls:sys_enter_io_submit,syscalls:sys_enter_io_getevents,syscalls:sys_enter_io_pgetevents
run() {	# run DRIVER DEV
	local out=/tmp/fio-$1.json st=/tmp/perf-$1.txt
	perf stat -x, -o $st -e $EV -a -- \
		fio --name=x --filename=/dev/$2 --ioengine=libaio --direct=1 \
		--rw=randread --bs=4k --iodepth=64 --numjobs=1 --time_based \
		--runtime=8 --ramp_time=1 --output-format=json >$out
	python3 - "$1" "$out" "$st" <<'PY'
import json, sys
drv, out, st = sys.argv[1:]
j = json.load(open(out))["jobs"][0]
ios = j["read"]["total_ios"]
rt = j["job_runtime"] / 1000.0
ev = {}
for ln in open(st):
    f = ln.strip().split(",")
    if len(f) > 2 and f[2].startswith("syscalls:"):
        ev[f[2].split(":sys_enter_")[1]] = float(f[0])
# perf counts the ramp too: per I/O over fio's whole run (ramp included)
# needs the I/Os of the ramp, which fio leaves out; so scale by time.
tot_t = rt + 1.0
ios_all = ios * tot_t / rt
sub = ev.get("io_submit", 0) / ios_all
get = (ev.get("io_getevents", 0) + ev.get("io_pgetevents", 0)) / ios_all
print("%-10s IOPS %6.0f  io_submit/IO %.3f  getevents/IO %.3f  (I/Os per getevents %.1f)"
      "  usr %% %.1f  sys %% %.1f  usr us/IO %.1f  sys us/IO %.1f  ctx/IO %.3f" % (
      drv, j["read"]["iops"], sub, get, 1 / get if get else 0,
      j["usr_cpu"], j["sys_cpu"], j["usr_cpu"] / 100 * rt * 1e6 / ios,
      j["sys_cpu"] / 100 * rt * 1e6 / ios, j["ctx"] / ios_all))
PY
}
for round in 1 2 3; do
	if [ $((round % 2)) = 1 ]; then run virtio_blk $A; run vblk $B
	else run vblk $B; run virtio_blk $A; fi
done
