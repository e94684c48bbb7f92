#!/bin/bash
# memory.sh: memory per bound disk for vblk and virtio_blk, in a guest.
#
#   tests/bench/memory.sh [--binds N] [--drivers virtio_blk,vblk] [--ko KO] [--out DIR]
#
# Runs as root in a lab guest (scripts/vm-run; scripts/bench --memory boots one
# for it). The disks are those of the vm-run manifest ($VBLK_DISKS) whose group
# is mem-CONFIG; a config's disks should be identical (same num-queues,
# queue-size). Config q4 binds vblk with num_queues=4 queue_depth=256 and
# virtio_blk with queue_depth=256 (see driver_params); any other config uses
# both drivers' defaults.
#
# For each config and driver: every disk of the config is unbound; one of them
# is bound and unbound once (first-bind costs: caches, sysfs of the driver);
# /proc/meminfo is read; then each disk (at most N, default 3) is bound in
# its own traced window: the kmem, percpu and cma trace events (with a kernel
# stack for every page allocation) are recorded from the write that binds the
# disk until it is ready (vblk-bind's udev settle done, the disk in
# /sys/block); /proc/meminfo is read again; the disks are unbound. The page
# cache is dropped before each /proc/meminfo read.
#
# Output in DIR (default $VBLK_OUT/memory): <config>-<driver>-<n>.trace,
# samples.tsv (one line per traced bind), meminfo-<config>-<driver>-{before,
# after}, info; then tests/bench/memtrace.py report DIR writes memory.md and
# memory.json (also run on the host by scripts/bench --memory).
#
# Exit status: 0 done; 1 a bind or the accounting failed; 2 usage or setup.
set -euo pipefail
B=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$B/../.." && pwd)
BIND=$REPO/scripts/vblk-bind
T=/sys/kernel/tracing
PARAMS=/sys/module/vblk/parameters

binds=3 drivers=virtio_blk,vblk ko='' out=${VBLK_OUT:-.}/memory

die() { printf 'memory.sh: error: %s\n' "$*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }
log() { printf 'memory: %s\n' "$*"; }

while [ $# -gt 0 ]; do
	case $1 in
	--binds) binds=${2:?}; shift ;;
	--drivers) drivers=${2:?}; shift ;;
	--ko) ko=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	-h | --help) usage 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
	shift
done
[ "$(id -u)" = 0 ] || die "must run as root"
if [ -z "${VBLK_DISKS:-}" ] || [ ! -f "$VBLK_DISKS" ]; then
	die "no disk manifest (\$VBLK_DISKS): run under scripts/vm-run"
fi
if [ -z "$ko" ]; then
	r=$(uname -r)
	for k in "$REPO/build/$r/vblk.ko" "$REPO/build/$(cut -d. -f1-2 <<<"$r")/vblk.ko"; do
		[ -f "$k" ] && { ko=$k; break; }
	done
fi
[[ $drivers != *vblk* || ( -n "$ko" && -f "$ko" ) ]] || die "no vblk.ko (give --ko)"
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/*.trace "$out/samples.tsv" "$out"/meminfo-*

# ---- disks ---------------------------------------------------------------------

declare -A CFG_SERIALS=()
configs=()
while read -r line; do
	s='' g=''
	for tok in $line; do
		case $tok in serial=*) s=${tok#serial=} ;; group=mem-*) g=${tok#group=mem-} ;; esac
	done
	if [ -z "$s" ] || [ -z "$g" ]; then continue; fi
	[ -n "${CFG_SERIALS[$g]:-}" ] || configs+=("$g")
	CFG_SERIALS[$g]="${CFG_SERIALS[$g]:-} $s"
done <"$VBLK_DISKS"
[ ${#configs[@]} -gt 0 ] || die "no disk of group mem-* in $VBLK_DISKS"

# The PCI function of each serial, found once while virtio_blk holds them all.
declare -A ADDR=()
find_addrs() {
	local f s dev path comp a
	for f in /sys/block/*/serial; do
		s=''
		read -r s <"$f" 2>/dev/null || [ -n "$s" ] || continue # (virtio_blk's has no newline)
		dev=${f%/serial}
		path=$(cd -P "$dev" && pwd)
		a=''
		for comp in ${path//\// }; do
			[[ $comp =~ ^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ ]] && a=$comp
		done
		[ -z "$a" ] || ADDR[$s]=$a
	done
}

# The block device on a PCI function (either driver), or nothing.
disk_on() {
	local d
	for d in /sys/bus/pci/devices/"$1"/block/* /sys/bus/pci/devices/"$1"/virtio*/block/*; do
		[ -e "$d" ] && { echo "${d##*/}"; return 0; }
	done
	return 1
}

target_of() { case $1 in vblk) echo vblk ;; virtio_blk) echo virtio-pci ;; *) die "driver '$1'" ;; esac; }

bind_disk() { # bind_disk ADDR DRIVER: bind and wait until the disk is there
	local i dev
	"$BIND" "$(target_of "$2")" "$1" >/dev/null
	for ((i = 0; i < 300; i++)); do
		if dev=$(disk_on "$1") && [ -b "/dev/$dev" ]; then
			echo "$dev"
			return 0
		fi
		sleep 0.1
	done
	echo "memory.sh: no disk on $1 under $2" >&2
	return 1
}

unbind_disk() { "$BIND" none "$1" >/dev/null; }

# driver_params CONFIG DRIVER: set the driver's parameters for a config.
# q4 is 4 queues x depth 256 for both: vblk num_queues=4 queue_depth=256,
# virtio_blk (reloaded: its parameter is read-only) queue_depth=256; the
# QEMU here offers 1024-entry rings whatever queue-size says (both drivers
# take 1024 tags per queue by default), so the depth is set in the guest.
# Any other config: both drivers at their defaults.
driver_params() {
	local q=0 depth=0 cur
	[ "$1" != q4 ] || q=4 depth=256
	case $2 in
	vblk)
		echo "$q" >"$PARAMS/num_queues"
		echo "$depth" >"$PARAMS/queue_depth"
		;;
	virtio_blk)
		cur=$(cat /sys/module/virtio_blk/parameters/queue_depth 2>/dev/null || echo 0)
		[ "$cur" != "$depth" ] || return 0
		rmmod virtio_blk || die "rmmod virtio_blk failed (does it still hold a disk?)"
		modprobe virtio_blk queue_depth="$depth" || die "modprobe virtio_blk queue_depth=$depth failed"
		;;
	esac
}

quiet_meminfo() { # quiet_meminfo FILE: page cache dropped, free lists drained
	sync
	echo 1 >/proc/sys/vm/drop_caches
	echo 1 >/proc/sys/vm/compact_memory 2>/dev/null || true
	sleep 1
	cat /proc/meminfo >"$1"
	cat /proc/zoneinfo >"$1.zoneinfo" # per-CPU free page lists (pagesets' count:)
}

# ---- tracing -------------------------------------------------------------------

EVENTS=()
trace_setup() {
	local e
	[ -d "$T/events" ] || mount -t tracefs nodev "$T" || die "no tracefs"
	echo 0 >"$T/tracing_on"
	echo nop >"$T/current_tracer"
	echo 0 >"$T/events/enable"
	echo 16384 >"$T/buffer_size_kb"
	for e in kmem/kmalloc kmem/kmalloc_node kmem/kmem_cache_alloc kmem/kmem_cache_alloc_node \
		kmem/kfree kmem/kmem_cache_free kmem/mm_page_alloc kmem/mm_page_free \
		kmem/mm_page_free_batched percpu/percpu_alloc_percpu percpu/percpu_free_percpu \
		cma/cma_alloc_finish cma/cma_release; do
		[ -d "$T/events/$e" ] || continue
		echo 1 >"$T/events/$e/enable"
		EVENTS+=("$e")
	done
	[ -d "$T/events/kmem/mm_page_alloc" ] || die "no kmem:mm_page_alloc event"
	echo stacktrace >"$T/events/kmem/mm_page_alloc/trigger"
	echo >"$T/trace"
}

overruns() {
	local n=0 f k v
	for f in "$T"/per_cpu/cpu*/stats; do
		while read -r k v; do
			case $k in overrun: | dropped) n=$((n + ${v##* })) ;; esac
		done <"$f"
	done
	echo $n
}

trace_done() {
	echo 0 >"$T/tracing_on"
	echo '!stacktrace' >"$T/events/kmem/mm_page_alloc/trigger" 2>/dev/null || true
	echo 0 >"$T/events/enable"
}

# traced_bind CONFIG DRIVER N ADDR: one bind in a traced window.
traced_bind() {
	local cfg=$1 drv=$2 n=$3 addr=$4 dev name hwq tags
	name=$cfg-$drv-$n.trace
	echo >"$T/trace"
	echo 1 >"$T/tracing_on"
	dev=$(bind_disk "$addr" "$drv") || { echo 0 >"$T/tracing_on"; return 1; }
	echo 0 >"$T/tracing_on"
	cat "$T/trace" >"$out/$name"
	hwq=$(find "/sys/block/$dev/mq" -mindepth 1 -maxdepth 1 -type d | wc -l)
	read -r tags <"/sys/block/$dev/mq/0/nr_tags"
	# What the disk was built with: block layer queue files, vblk's config.
	{
		for f in nr_requests scheduler max_segments; do
			echo "queue/$f=$(cat "/sys/block/$dev/queue/$f")"
		done
		[ ! -f "/sys/block/$dev/vblk/config" ] || cat "/sys/block/$dev/vblk/config"
	} >"$out/${name%.trace}.disk"
	printf '%s %s %s %s %s %s %s %s\n' "$cfg" "$drv" "$n" "$dev" "$hwq" "$tags" \
		"$(overruns)" "$name" >>"$out/samples.tsv"
	log "$cfg $drv #$n: $dev ($hwq queues x $tags tags), $(wc -l <"$out/$name") trace lines"
}

# ---- main ----------------------------------------------------------------------

# At boot udev loads virtio_blk and the disks come up in the background.
[ -d /sys/bus/virtio/drivers/virtio_blk ] || modprobe virtio_blk || die "modprobe virtio_blk failed"
udevadm settle --timeout=30 || true
for ((try = 0; try < 60; try++)); do
	find_addrs
	missing=''
	for cfg in "${configs[@]}"; do
		for s in ${CFG_SERIALS[$cfg]}; do
			[ -n "${ADDR[$s]:-}" ] || missing+=" $s"
		done
	done
	[ -n "$missing" ] || break
	sleep 0.5
done
[ -z "$missing" ] || die "no block device for disk(s)$missing after 30 s"
if [[ $drivers == *vblk* ]] && [ ! -d /sys/module/vblk ]; then
	insmod "$ko" disk_prefix=vblk || die "insmod $ko failed"
fi
{
	echo "kernel=$(uname -r)"
	echo "ncpu=$(nproc)"
	echo "ncpu_possible=$(($(cut -d- -f2 /sys/devices/system/cpu/possible) + 1))"
	echo "ko=$ko $( [ -z "$ko" ] || sha256sum "$ko" | cut -c1-16)"
	echo "binds=$binds"
	echo "configs=${configs[*]}"
} >"$out/info"
trace_setup
echo "events=${EVENTS[*]}" >>"$out/info"
log "events: ${EVENTS[*]}"
rc=0
IFS=, read -ra dlist <<<"$drivers"
for cfg in "${configs[@]}"; do
	read -ra serials <<<"${CFG_SERIALS[$cfg]}"
	for drv in "${dlist[@]}"; do
		for s in "${serials[@]}"; do unbind_disk "${ADDR[$s]}"; done
		driver_params "$cfg" "$drv"
		bind_disk "${ADDR[${serials[0]}]}" "$drv" >/dev/null || { rc=1; continue; }
		unbind_disk "${ADDR[${serials[0]}]}"
		quiet_meminfo "$out/meminfo-$cfg-$drv-before"
		n=0
		for s in "${serials[@]}"; do
			[ $n -lt "$binds" ] || break
			n=$((n + 1))
			traced_bind "$cfg" "$drv" $n "${ADDR[$s]}" || rc=1
		done
		quiet_meminfo "$out/meminfo-$cfg-$drv-after"
		for s in "${serials[@]}"; do unbind_disk "${ADDR[$s]}"; done
	done
done
trace_done
python3 "$B/memtrace.py" report "$out" || rc=1
exit $rc
