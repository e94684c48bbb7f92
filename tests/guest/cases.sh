# shellcheck shell=bash
# The cases of the guest test suite (sourced by suite.sh). Each runs in a
# subshell with errexit (run_case); it ends by returning (pass), fail REASON
# or skip REASON. Globals from suite.sh: DRIVER, PCI_OF[serial], QUICK.

# disk SERIAL: set DISK to the disk holding the serial, or fail the case;
# fail it too when the disk is not on the driver under test (a case that
# failed half-way may have left it on the other one).
disk() {
	await_disk "$1" || fail "no disk with serial $1"
	driver_of_disk "$DISK"
	[ "$DRV" = "$DRIVER" ] || fail "$1 is /dev/$DISK under $DRV, not $DRIVER"
}

case_load_vblk() {
	local ko deps dep
	ko=$(vblk_ko) || fail "no build/$(uname -r)/vblk.ko"
	! grep -q '^vblk ' /proc/modules || fail "vblk is already loaded"
	deps=$(modinfo -F depends "$ko" | tr , ' ')
	for dep in $deps; do
		step "modprobe $dep"
		modprobe "$dep"
	done
	step "insmod $ko ${VBLK_MODPARAMS:-}"
	# shellcheck disable=SC2086 # parameters are words
	insmod "$ko" ${VBLK_MODPARAMS:-}
	[ -d /sys/bus/pci/drivers/vblk ] || fail "no /sys/bus/pci/drivers/vblk after insmod"
	# The by-id links for disks not named vd* (README: make install-udev).
	make -s -C "$REPO" install-udev
}

# Give every disk back to virtio_blk, then rmmod. The in-tree driver names a
# new disk after its lowest free index and fails the probe (sysfs duplicate
# warning) if vblk still holds that name, so the disks go back in name order
# (vda first): then each name virtio_blk picks has just been freed by vblk.
case_unload_vblk() {
	local s name list=()
	for s in "${!PCI_OF[@]}"; do
		if find_disk "$s"; then list+=("$DISK $s"); else list+=("~ $s"); fi
	done
	while read -r name s; do
		step "$s ($name) back to virtio_blk"
		move_disk "${PCI_OF[$s]}" virtio_blk "$s"
	done < <(printf '%s\n' "${list[@]}" | awk '{ print length($1), $0 }' | sort -k1,1n -k2,2 | cut -d' ' -f2-)
	step "rmmod vblk"
	udevadm settle --timeout=30 || true
	rmmod vblk
	! grep -q '^vblk ' /proc/modules || fail "vblk still loaded after rmmod"
}

# Put the disk on the driver under test.
case_attach() {
	local s=$1
	move_disk "${PCI_OF[$s]}" "$DRIVER" "$s"
	driver_of_disk "$DISK"
	[ "$DRV" = "$DRIVER" ] || fail "$s is $DISK under $DRV, not $DRIVER"
	step "$s: /dev/$DISK under $DRV at ${PCI_OF[$s]}"
}

inject_warn_once() {
	[[ ${VBLK_TEST_INJECT:-} == *warn* ]] || return 0
	[ ! -e /tmp/vblk-injected-warn ] || return 0
	touch /tmp/vblk-injected-warn
	step "VBLK_TEST_INJECT=warn: writing a WARNING line to /dev/kmsg"
	echo 'WARNING: CPU: 0 PID: 1 at test' >/dev/kmsg
}

# Capacity, block sizes, read-only flag and hardware queues as configured.
# (blockdev for what the ioctls report, sysfs for the rest.)
case_properties() {
	local s=$1 d got want q mqs
	disk "$s"
	d=$DISK
	got=$(blockdev --getsize64 --getss --getro "/dev/$d" | paste -sd' ')
	want="${MF[$s:size]} ${MF[$s:lbs]} ${MF[$s:ro]}"
	[ "$got" = "$want" ] ||
		fail "capacity, logical block size, read-only: $got, expected $want"
	want=${MF[$s:pbs]}
	if [ "$want" != - ]; then
		read1 "/sys/block/$d/queue/physical_block_size"
		[ "$REPLY" = "$want" ] || fail "physical block size $REPLY, expected $want"
	fi
	q=${MF[$s:queues]}
	want=$((q < NCPU ? q : NCPU))
	mqs=("/sys/block/$d/mq/"*)
	[ "${#mqs[@]}" = "$want" ] ||
		fail "${#mqs[@]} hardware queues, expected $want (num-queues=$q, $NCPU cpus)"
	step "$s /dev/$d: size lbs ro = $got, pbs ${MF[$s:pbs]}, ${#mqs[@]} queues"
	# The serial file holds exactly the serial: no newline (the in-tree format).
	cmp -s <(printf '%s' "$s") "/sys/block/$d/serial" ||
		fail "serial file reads '$(od -c "/sys/block/$d/serial" | head -2 | tr -s ' ' | paste -sd' ')', not exactly '$s'"
	# udev's persistent name comes from the serial sysfs file (both drivers).
	udevadm settle --timeout=30 2>/dev/null || true
	got=$(readlink -f "/dev/disk/by-id/virtio-$s" 2>/dev/null || echo none)
	[ "$got" = "/dev/$d" ] || fail "/dev/disk/by-id/virtio-$s points to $got, not /dev/$d"
	got=$(lsblk -dbn -o NAME,SIZE "/dev/$d" | tr -s ' ') || fail "lsblk /dev/$d failed"
	[ "$got" = "$d ${MF[$s:size]}" ] || fail "lsblk shows '$got', expected '$d ${MF[$s:size]}'"
	step "udev: /dev/disk/by-id/virtio-$s -> /dev/$d; lsblk: $got"
	inject_warn_once
}

# Unbind the function, check the disk goes away, bind it back.
case_rebind() {
	local s=$1 addr=${PCI_OF[$1]}
	"$BIND" none "$addr"
	wait_gone "$s" || fail "disk $s still present after unbinding $addr"
	move_disk "$addr" "$DRIVER" "$s"
	[ "$(blockdev --getsize64 "/dev/$DISK")" = "${MF[$s:size]}" ] ||
		fail "capacity changed after rebinding"
}

# fio job table: name bs rw iodepth size(MiB). bs "mix" = bssplit.
# $1: full (the first read-write disk), short (the others) or quick.
fio_table() {
	case $1 in
	quick)
		cat <<-'EOT'
			bs4k-qd64 4k randwrite 64 8
			bs1m-qd16 1m randwrite 16 16
			mix-qd8 mix randwrite 8 8
		EOT
		;;
	short)
		cat <<-'EOT'
			bs512-qd8 512 randwrite 8 1
			bs4k-qd64 4k randwrite 64 8
			bs64k-qd32 64k randwrite 32 8
			bs1m-qd64 1m randwrite 64 16
			mix-qd16 mix randwrite 16 16
		EOT
		;;
	*)
		cat <<-'EOT'
			bs512-qd1 512 randwrite 1 1
			bs512-qd64 512 write 64 2
			bs4k-qd1 4k write 1 2
			bs4k-qd64 4k randwrite 64 8
			bs16k-qd8 16k randwrite 8 4
			bs64k-qd32 64k randwrite 32 8
			bs256k-qd4 256k write 4 8
			bs1m-qd1 1m write 1 8
			bs1m-qd64 1m randwrite 64 32
			mix-qd16 mix randwrite 16 16
		EOT
		;;
	esac
}

bs_bytes() { numfmt --from=iec "${1^^}"; }

# Write a fio job file for disk $1 (lbs $2) to stdout; jobs run side by side
# on separate regions, spread over the CPUs (so over the hardware queues).
fio_jobfile() {
	local dev=$1 lbs=$2 table=$3 name bs rw qd mb off=0 j=0
	cat <<-EOF
		[global]
		filename=$dev
		ioengine=libaio
		direct=1
		thread
		verify=crc32c
		verify_fatal=1
		verify_state_save=0
		randrepeat=1
		group_reporting=0
	EOF
	while read -r name bs rw qd mb; do
		if [ "$bs" = mix ]; then
			if [ "$lbs" -le 512 ]; then
				bs="bssplit=512/10:4k/40:64k/30:1m/20"
			else
				bs="bssplit=4k/50:64k/30:1m/20"
			fi
		else
			[ "$(bs_bytes "$bs")" -ge "$lbs" ] || continue
			bs="bs=$bs"
		fi
		cat <<-EOF

			[$name]
			$bs
			rw=$rw
			iodepth=$qd
			offset=${off}m
			size=${mb}m
			cpus_allowed=$((j % NCPU))
		EOF
		off=$((off + mb))
		j=$((j + 1))
	done < <(fio_table "$table")
	echo "# total ${off} MiB"
}

# Offset (bytes) of job $2 in job file $1.
fio_job_offset() {
	awk -v job="[$2]" '$0 == job { f = 1 } f && /^offset=/ { sub(/offset=/, ""); sub(/m$/, ""); print $0 * 1048576; exit }' "$1"
}

# Corrupt 16 bytes of a block behind fio's back (VBLK_TEST_INJECT=verify).
inject_corruption() {
	local dev=$1 off=$2 blk=/tmp/vblk-inject.blk
	step "VBLK_TEST_INJECT=verify: overwriting 16 bytes at $((off + 100)) of $dev"
	dd if="$dev" of="$blk" bs=4096 skip=$((off / 4096)) count=1 iflag=direct status=none
	dd if=/dev/urandom of="$blk" bs=1 seek=100 count=16 conv=notrunc status=none
	dd if="$blk" of="$dev" bs=4096 seek=$((off / 4096)) count=1 oflag=direct status=none
}

# fio verify (crc32c): all jobs write their regions, then all read them back
# and check (verify_only), so the two passes are separate I/O streams.
# $2: the job table (full, short, quick).
case_fio_verify() {
	local s=$1 table=$2 d jf=/tmp/vblk-fio-$1.fio fo=/tmp/vblk-fio-$1.out off rc=0
	disk "$s"
	d=$DISK
	fio_jobfile "/dev/$d" "${MF[$s:lbs]}" "$table" >"$jf"
	cat "$jf"
	step "write pass"
	fio --output-format=normal "$jf" --do_verify=0 || fail "fio write pass failed"
	if [[ ${VBLK_TEST_INJECT:-} == *verify* ]]; then
		off=$(fio_job_offset "$jf" bs4k-qd64)
		inject_corruption "/dev/$d" "$((off + 65536))"
	fi
	step "verify pass"
	fio --output-format=normal "$jf" --verify_only=1 >"$fo" 2>&1 || rc=$?
	cat "$fo"
	if [ "$rc" != 0 ] || grep -qiE 'verify failed|bad magic|bad header|mismatch' "$fo"; then
		fail "verify pass (fio exit $rc): $(grep -E 'verify failed|bad magic|bad header|mismatch|Expected|Received' "$fo" | head -3 | tr -s ' \t' ' ' | paste -sd' ')"
	fi
}

# I/O against a null-co disk: no data to check, only that I/O completes.
case_fio_null() {
	local s=$1
	disk "$s"
	fio --filename="/dev/$DISK" --ioengine=libaio --direct=1 --thread \
		--name=null-rand --rw=randrw --bs=4k --iodepth=32 --io_size=16m --numjobs=2 \
		--name=null-seq --rw=read --bs=1m --iodepth=8 --io_size=64m
}

# A read-only disk: flagged read-only, refuses direct and buffered writes
# (EPERM/EROFS/EACCES) even after BLKROSET 0, and reads the expected bytes.
case_readonly() {
	local s=$1 d lbs=${MF[$1:lbs]} sha want=${MF[$1:sha1m]} err=/tmp/vblk-ro-$1.err mode
	disk "$s"
	d=$DISK
	[ "$(blockdev --getro "/dev/$d")" = 1 ] || fail "blockdev --getro says $(blockdev --getro "/dev/$d")"
	for mode in oflag=direct conv=fsync; do
		if dd if=/dev/zero of="/dev/$d" bs="$lbs" count=1 "$mode" status=none 2>"$err"; then
			fail "a write ($mode) to the read-only disk succeeded"
		fi
		step "write ($mode) refused: $(cat "$err")"
		grep -qE 'Operation not permitted|Read-only file system|Permission denied' "$err" ||
			fail "write ($mode) failed, but not with EPERM/EROFS/EACCES: $(cat "$err")"
	done
	blockdev --setrw "/dev/$d" || true
	if dd if=/dev/zero of="/dev/$d" bs="$lbs" count=1 oflag=direct status=none 2>"$err"; then
		fail "a write succeeded after blockdev --setrw"
	fi
	if [ "$want" != - ]; then
		sha=$(dd if="/dev/$d" bs=1M count=1 iflag=direct status=none | sha256sum | cut -d' ' -f1)
		[ "$sha" = "$want" ] || fail "first MiB reads back sha256 $sha, expected $want"
	fi
}

# mkfs.ext4, mount, write files, sync, umount, remount and check, fsck clean.
case_ext4() {
	local s=$1 d m=/tmp/vblk-mnt-$1 i got
	disk "$s"
	d=$DISK
	mkdir -p "$m"
	step "mkfs.ext4 /dev/$d"
	mkfs.ext4 -q -F "/dev/$d"
	mount -t ext4 "/dev/$d" "$m"
	mkdir "$m/small"
	for i in $(seq 1 300); do echo "file $i of $s" >"$m/small/$i"; done
	head -c 16M /dev/urandom >"$m/big"
	cp -r "$REPO/scripts" "$m/tree"
	(cd "$m" && find . -type f ! -name sums -exec sha256sum {} + >"/tmp/vblk-sums-$s")
	sync
	umount "$m"
	got=$(blkid -p -s TYPE -o value "/dev/$d") || fail "blkid -p /dev/$d failed"
	[ "$got" = ext4 ] || fail "blkid sees '$got' on /dev/$d, not ext4"
	step "remount read-only and compare"
	mount -t ext4 -o ro "/dev/$d" "$m"
	(cd "$m" && sha256sum --quiet -c "/tmp/vblk-sums-$s") || { umount "$m"; fail "file contents differ after remount"; }
	umount "$m"
	step "e2fsck -f -n /dev/$d"
	e2fsck -f -n "/dev/$d" || fail "e2fsck -f found problems (exit $?)"
}

# Data written through one driver reads back identical through the other
# after rebinding; with only virtio_blk, the same round trip on virtio_blk.
case_cross() {
	local s=$1 addr=${PCI_OF[$1]} d off data=/tmp/vblk-cross-$1.bin pair w r sha got
	local pairs=("virtio_blk virtio_blk")
	[ "$DRIVER" = vblk ] && pairs=("vblk virtio_blk" "virtio_blk vblk")
	off=$((${MF[$s:size]} / 1048576 - 16))
	for pair in "${pairs[@]}"; do
		read -r w r <<<"$pair"
		head -c 8M /dev/urandom >"$data"
		sha=$(sha256sum <"$data" | cut -d' ' -f1)
		move_disk "$addr" "$w" "$s"
		d=$DISK
		step "write 8 MiB at ${off} MiB through $w (/dev/$d)"
		dd if="$data" of="/dev/$d" bs=1M seek="$off" oflag=direct conv=fsync status=none
		"$BIND" none "$addr"
		wait_gone "$s" || fail "disk $s still present after unbinding"
		move_disk "$addr" "$r" "$s"
		d=$DISK
		got=$(dd if="/dev/$d" bs=1M skip="$off" count=8 iflag=direct status=none | sha256sum | cut -d' ' -f1)
		step "read back through $r (/dev/$d): $got"
		[ "$got" = "$sha" ] || fail "data written through $w differs when read through $r"
	done
	move_disk "$addr" "$DRIVER" "$s"
}

# case_fio_verify with the arguments in run_disk_case order (TABLE SERIAL).
case_fio_verify_t() { case_fio_verify "$2" "$1"; }

# ---- discard, write zeroes, fstrim ------------------------------------------
# On a disk whose drive has discard=unmap: what the guest trims must free the
# blocks of the host's raw image (visible here through the shared directory),
# what it zeroes must read back as zeros, and nothing else may change.

# alloc_of SERIAL: bytes the disk's image file holds on the host (REPLY).
alloc_of() {
	sync
	REPLY=$(stat -c '%b * %B' "${MF[$1:file]}")
	REPLY=$((REPLY))
}

# fill DEV MIB_OFFSET MIB: random data, direct, into the range.
fill() {
	dd if=/dev/urandom of="$1" bs=1M seek="$2" count="$3" oflag=direct status=none
}

# sum_of DEV MIB_OFFSET MIB: sha256 of the range (REPLY).
sum_of() {
	REPLY=$(dd if="$1" bs=1M skip="$2" count="$3" iflag=direct status=none | sha256sum)
	REPLY=${REPLY%% *}
}

# zeros DEV MIB_OFFSET MIB: the range reads back as zeros, or fail.
zeros() {
	cmp -s -n $(($3 << 20)) <(dd if="$1" bs=1M skip="$2" count="$3" iflag=direct status=none) /dev/zero ||
		fail "$1: ${3} MiB at ${2} MiB do not read back as zeros"
}

# freed_at_least BEFORE AFTER MIB WHAT: the image shrank by >= 3/4 of MIB.
freed_at_least() {
	local freed=$(($1 - $2)) want=$(($3 * 3 / 4 << 20))
	step "$4: image allocation $1 -> $2 bytes ($((freed >> 20)) MiB freed, want >= $((want >> 20)))"
	[ "$freed" -ge "$want" ] || fail "$4 freed $((freed >> 20)) MiB of the image, less than $((want >> 20)) of $3"
}

case_discard_limits() {
	local s=$1 q f v
	disk "$s"
	q=/sys/block/$DISK/queue
	for f in discard_max_bytes discard_granularity write_zeroes_max_bytes; do
		read1 "$q/$f"
		v=$REPLY
		step "$f $v"
		[ "$v" -gt 0 ] || fail "$DISK: $f is $v on a discard=unmap disk"
	done
	read1 "$q/discard_max_hw_bytes"
	step "discard_max_hw_bytes $REPLY, max_discard_segments $(cat "$q/max_discard_segments")"
}

# blkdiscard of 64 MiB between two 64 MiB ranges that must not change.
case_blkdiscard() {
	local s=$1 d a0 a1 lo hi
	disk "$s"
	d=/dev/$DISK
	fill "$d" 0 192
	sum_of "$d" 0 64; lo=$REPLY
	sum_of "$d" 128 64; hi=$REPLY
	alloc_of "$s"; a0=$REPLY
	step "blkdiscard -o 64MiB -l 64MiB $d"
	blkdiscard -o $((64 << 20)) -l $((64 << 20)) "$d" || fail "blkdiscard failed"
	alloc_of "$s"; a1=$REPLY
	freed_at_least "$a0" "$a1" 64 blkdiscard
	sum_of "$d" 0 64; [ "$REPLY" = "$lo" ] || fail "the 64 MiB before the discarded range changed"
	sum_of "$d" 128 64; [ "$REPLY" = "$hi" ] || fail "the 64 MiB after the discarded range changed"
}

# BLKZEROOUT (no unmap) and a punched hole (write zeroes that may unmap).
case_zeroout() {
	local s=$1 d a0 a1 lo hi
	disk "$s"
	d=/dev/$DISK
	fill "$d" 200 96
	sum_of "$d" 200 16; lo=$REPLY
	sum_of "$d" 280 16; hi=$REPLY
	step "BLKZEROOUT: blkdiscard -z -o 216MiB -l 32MiB"
	blkdiscard -z -o $((216 << 20)) -l $((32 << 20)) "$d" || fail "BLKZEROOUT failed"
	zeros "$d" 216 32
	alloc_of "$s"; a0=$REPLY
	step "write zeroes with unmap: fallocate --punch-hole -o 248MiB -l 32MiB"
	fallocate --punch-hole -o $((248 << 20)) -l $((32 << 20)) "$d" || fail "fallocate --punch-hole failed"
	zeros "$d" 248 32
	alloc_of "$s"; a1=$REPLY
	freed_at_least "$a0" "$a1" 32 "write zeroes (unmap)"
	sum_of "$d" 200 16; [ "$REPLY" = "$lo" ] || fail "the 16 MiB before the zeroed ranges changed"
	sum_of "$d" 280 16; [ "$REPLY" = "$hi" ] || fail "the 16 MiB after the zeroed ranges changed"
}

# fstrim on FS (ext4 or xfs): a deleted 64 MiB file comes back to the host.
fstrim_on() {
	local s=$1 fs=$2 d mnt=/tmp/vblk-trim-mnt a0 a1 out
	disk "$s"
	d=/dev/$DISK
	command -v "mkfs.$fs" >/dev/null || fail "no mkfs.$fs in the lab (scripts/setup installs it)"
	case $fs in
	ext4) mkfs.ext4 -q -F -E nodiscard "$d" ;;
	xfs) mkfs.xfs -q -f -K "$d" ;;
	esac
	mkdir -p "$mnt"
	mount "$d" "$mnt"
	dd if=/dev/urandom of="$mnt/f" bs=1M count=64 conv=fsync status=none
	dd if=/dev/urandom of="$mnt/keep" bs=1M count=8 conv=fsync status=none
	sha256sum "$mnt/keep" >/tmp/vblk-trim-keep.sum
	alloc_of "$s"; a0=$REPLY
	rm "$mnt/f"
	sync
	out=$(fstrim -v "$mnt") || { umount "$mnt"; fail "fstrim failed: $out"; }
	step "$out"
	alloc_of "$s"; a1=$REPLY
	umount "$mnt"
	mount "$d" "$mnt"
	(cd / && sha256sum -c --quiet /tmp/vblk-trim-keep.sum) || { umount "$mnt"; fail "a kept file changed after fstrim"; }
	umount "$mnt"
	case $fs in
	ext4) fsck.ext4 -n -f "$d" >/dev/null || fail "fsck.ext4 found errors after fstrim" ;;
	xfs) xfs_repair -n "$d" >/dev/null 2>&1 || fail "xfs_repair -n found errors after fstrim" ;;
	esac
	freed_at_least "$a0" "$a1" 64 "fstrim on $fs"
}

case_fstrim_ext4() { fstrim_on "$1" ext4; }
case_fstrim_xfs() { fstrim_on "$1" xfs; }

# fio: a verified random-write job beside a random-trim job (over a range
# filled first, which must read zeros afterwards: the trims reached the
# device) and a verified trim-then-write job, all at once. fio's own
# trim_percentage verify mode is not used: fio 3.39 aborts in it
# (fio_ro_check assertion) on any device.
case_fio_trim() {
	local s=$1 d out=/tmp/vblk-fio-trim.out rc=0
	disk "$s"
	d=/dev/$DISK
	fill "$d" 64 64
	(cd /tmp && fio --output-format=normal --filename="$d" --ioengine=libaio --direct=1 \
		--verify_state_save=0 \
		--name=verify-rw --rw=randwrite --bs=4k --offset=0 --size=32m --iodepth=16 \
		--verify=crc32c --verify_fatal=1 \
		--name=randtrim --rw=randtrim --bs=64k --offset=64m --size=64m --iodepth=8 \
		--name=trimwrite --rw=trimwrite --bs=128k --offset=128m --size=64m --iodepth=4 \
		--verify=crc32c --verify_fatal=1) >"$out" 2>&1 || rc=$?
	cat "$out"
	[ "$rc" = 0 ] || fail "fio exit $rc: $(grep -iE 'verify|error|bad|assert' "$out" | head -3 | paste -sd' ')"
	! grep -qiE 'verify failed|bad magic|mismatch' "$out" || fail "fio reported a verify failure"
	zeros "$d" 64 64
}

# ---- DMA through bounce buffers ----------------------------------------------
# A disk offering ACCESS_PLATFORM in a guest booted with swiotlb=force: every
# buffer is bounced, and one mapping takes at most 256 KiB. Requests of up to
# 1 MiB from huge pages (physically contiguous, so a segment could be 1 MiB)
# must be split to what maps, and verify; a request that cannot map would be
# retried forever, so fio runs under a time limit.
case_fio_bounce() {
	local s=$1 q seg out=/tmp/vblk-fio-bounce.out rc=0
	disk "$s"
	q=/sys/block/$DISK/queue
	grep -qw 'swiotlb=force' /proc/cmdline || fail "not booted with swiotlb=force"
	read1 "$q/max_segment_size"
	seg=$REPLY
	step "max_segment_size $seg, max_sectors_kb $(cat "$q/max_sectors_kb")"
	[ "$seg" -le 262144 ] || fail "max_segment_size $seg above the 256 KiB swiotlb mapping limit"
	echo 96 >/proc/sys/vm/nr_hugepages
	step "huge pages: $(cat /proc/sys/vm/nr_hugepages)"
	(cd /tmp && timeout 600 fio --output-format=normal --filename="/dev/$DISK" \
		--ioengine=libaio --direct=1 --iomem=shmhuge --verify_state_save=0 \
		--name=bounce --rw=randwrite --bsrange=4k-1m --size=128m --iodepth=8 \
		--verify=crc32c --verify_fatal=1) >"$out" 2>&1 || rc=$?
	echo 0 >/proc/sys/vm/nr_hugepages
	cat "$out"
	[ "$rc" != 124 ] || fail "fio did not finish in 600 s (a request that never maps?)"
	[ "$rc" = 0 ] || fail "fio exit $rc: $(grep -iE 'verify|error|bad' "$out" | head -3 | paste -sd' ')"
}

# ---- cache mode ---------------------------------------------------------------
# QEMU offers CONFIG_WCE: cache_type switches the device between write back
# and write through, and the block layer's write_cache (whether flushes are
# sent) follows; I/O keeps working in both modes.
case_cache_type() {
	local s=$1 f q mode
	disk "$s"
	f=/sys/block/$DISK/cache_type
	q=/sys/block/$DISK/queue/write_cache
	[ -e "$f" ] || fail "no $f"
	read1 "$f"
	step "cache_type '$REPLY', queue/write_cache '$(cat "$q")'"
	[ "$REPLY" = "write back" ] || fail "cache_type '$REPLY', expected 'write back' (QEMU's default)"
	for mode in "write through" "write back"; do
		echo "$mode" >"$f" || fail "writing '$mode' to cache_type failed"
		read1 "$f"
		[ "$REPLY" = "$mode" ] || fail "cache_type reads '$REPLY' after writing '$mode'"
		read1 "$q"
		[ "$REPLY" = "$mode" ] || fail "queue/write_cache is '$REPLY' with cache_type '$mode'"
		dd if=/dev/urandom of="/dev/$DISK" bs=64k count=16 seek=100 oflag=direct,sync status=none ||
			fail "a synchronous write failed in mode '$mode'"
		step "$mode: ok"
	done
	! echo "no such mode" >"$f" 2>/dev/null || fail "cache_type took 'no such mode'"
}
