#!/usr/bin/env python3
"""vblk benchmark, host side: CPU time of the guest's QEMU process at markers.

    host_sampler.py [--pin-vcpus CPUS] OUT

Waits for the QEMU process whose command line names OUT (scripts/vm-run puts
the results directory on it as a 9p share), then follows OUT/markers, which
the guest (tests/bench/guest_bench.py) appends to at the start and end of each
measurement window. For every marker line it writes one line to
OUT/host-markers.jsonl: the run id, S/E, the host time, the QEMU process' CPU
time (utime+stime of all threads, in seconds) split into vCPU threads, I/O
threads and the rest, and the host's /proc/stat busy time (so the report can
show how much of the host something else used). Exits when QEMU is gone.

It also places QEMU's threads (OUT/pinned.json says where they went): by
default vCPU thread n ("CPU n/TCG", named with -name ...,debug-threads=on)
on host CPU n mod the host's CPUs, the other threads free
(VBLK_BENCH_PIN=0: nothing pinned); with --pin-vcpus CPUS the vCPU threads
on CPUS (n mod their number) and QEMU's other threads (main loop, IO
threads, workers) on the host CPUs not in CPUS, so that an oversubscribed
host is made on purpose (--pin-vcpus 0: 4 vCPUs on one core).
"""
import argparse
import json
import os
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def find_qemu(out):
    needle = out.encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        argv0 = cmd.split(b"\0", 1)[0]
        if b"qemu-system" in argv0 and needle in cmd:
            return int(pid)
    return None


def thread_times(pid):
    groups = {"vcpu": 0.0, "iothread": 0.0, "other": 0.0}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return None
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        f = s[s.rindex(")") + 2:].split()
        t = (int(f[11]) + int(f[12])) / TICK
        if comm.startswith("CPU "):
            groups["vcpu"] += t
        elif comm.startswith("IO ") or "iothread" in comm:
            groups["iothread"] += t
        else:
            groups["other"] += t
    # Threads that exited are only in the process' own totals.
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
        f = s[s.rindex(")") + 2:].split()
        total = (int(f[11]) + int(f[12])) / TICK
    except OSError:
        return None
    groups["total"] = max(total, sum(groups.values()))
    return groups


def ncpus_wanted(pid):
    """The guest's vCPU count, from QEMU's -smp argument (default 1)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().decode(errors="replace").split("\0")
    except OSError:
        return 0
    for i, a in enumerate(argv[:-1]):
        if a == "-smp":
            try:
                return int(argv[i + 1].split(",")[0].split("=")[-1])
            except ValueError:
                return 1
    return 1


def parse_cpulist(text):
    """A host CPU list as taskset -c takes it ("0", "0,1", "0-3,6") ->
    sorted list of CPU numbers; ValueError on anything else."""
    cpus = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise ValueError("empty entry in CPU list %r" % text)
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError("bad CPU list entry %r" % part)
        lo, hi = int(lo), int(hi) if sep else int(lo)
        if hi < lo:
            raise ValueError("bad CPU range %r" % part)
        cpus.update(range(lo, hi + 1))
    return sorted(cpus)


def placement(request, host_cpus):
    """Where QEMU's threads go. request: None (the default) or a host CPU
    list for the vCPU threads (scripts/bench --pin-vcpus). Returns
    {"requested", "vcpu_cpus", "other_cpus"}: vCPU thread n goes to
    vcpu_cpus[n mod len]; the other threads (main loop, IO threads,
    workers) to other_cpus, None = left free. Default: the vCPUs spread
    over all host CPUs, the rest free. With a request: the rest on the host
    CPUs the vCPUs do not have (free if the vCPUs have them all).
    ValueError if the request names a CPU the host does not offer."""
    host_cpus = sorted(host_cpus)
    if request is None:
        return {"requested": None, "vcpu_cpus": host_cpus, "other_cpus": None}
    want = parse_cpulist(request)
    missing = [c for c in want if c not in host_cpus]
    if missing:
        raise ValueError("host CPU(s) %s not available (this process may use %s)"
                         % (",".join(map(str, missing)), ",".join(map(str, host_cpus))))
    rest = [c for c in host_cpus if c not in want]
    return {"requested": request, "vcpu_cpus": want, "other_cpus": rest or None}


def vcpu_index(comm):
    """n of a vCPU thread's name ("CPU 0/TCG", "CPU 1/KVM"), else None. The
    single-threaded TCG thread of an icount guest ("ALL CPUs/TCG") is none."""
    if not comm.startswith("CPU "):
        return None
    try:
        return int(comm[4:].split("/")[0])
    except ValueError:
        return None


def target_cpus(comm, place):
    """The CPU set a thread of this name belongs on, or None (leave it)."""
    n = vcpu_index(comm)
    if n is not None:
        v = place["vcpu_cpus"]
        return [v[n % len(v)]]
    return place["other_cpus"]


def pin_threads(pid, place, done, setaff=os.sched_setaffinity, getaff=os.sched_getaffinity,
                proc="/proc"):
    """Pin every thread of QEMU that placement() places and `done` does not
    hold yet under its present name (a new thread has its creator's name
    until it names itself: "CPU 0/TCG" may first look like the main loop);
    done: {tid: {"comm", "cpus"}}, updated (the CPUs read back after the
    pin). Returns True if anything new was pinned."""
    changed = False
    try:
        tids = os.listdir("%s/%d/task" % (proc, pid))
    except OSError:
        return False
    for tid in tids:
        try:
            with open("%s/%d/task/%s/comm" % (proc, pid, tid)) as f:
                comm = f.read().strip()
        except OSError:
            continue
        if done.get(int(tid), {}).get("comm") == comm:
            continue
        cpus = target_cpus(comm, place)
        if cpus is None:
            continue
        try:
            setaff(int(tid), set(cpus))
            got = sorted(getaff(int(tid)))
        except OSError:
            continue  # the thread is gone
        done[int(tid)] = {"comm": comm, "cpus": got}
        changed = True
    return changed


def pinned_record(place, done):
    """OUT/pinned.json: the placement asked for and what each thread got."""
    return {"requested": place["requested"], "vcpu_cpus": place["vcpu_cpus"],
            "other_cpus": place["other_cpus"],
            "threads": {str(t): d for t, d in sorted(done.items())}}


def host_cpu():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    total = sum(v[:8])
    return {"host_busy_s": (total - v[3] - v[4]) / TICK, "host_total_s": total / TICK}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pin-vcpus", metavar="CPUS",
                    help="host CPU list for QEMU's vCPU threads (vCPU n on the n-th mod the list's "
                         "length); QEMU's other threads go to the remaining host CPUs")
    ap.add_argument("out")
    a = ap.parse_args()
    out = os.path.realpath(a.out)
    pin_request = a.pin_vcpus
    mpath = os.path.join(out, "markers")
    res = open(os.path.join(out, "host-markers.jsonl"), "a")
    t0 = time.time()
    pid = None
    while pid is None:
        pid = find_qemu(out)
        if pid is None:
            if time.time() - t0 > 300:
                print("host_sampler: no QEMU process for %s" % out, file=sys.stderr)
                return 1
            time.sleep(0.2)
    with open(os.path.join(out, "qemu.pid"), "w") as f:
        f.write("%d\n" % pid)
    pin = os.environ.get("VBLK_BENCH_PIN", "1") == "1"
    place = placement(pin_request, os.sched_getaffinity(0))
    pinned = {}
    next_pin = 0.0
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        with open(os.path.join(out, "qemu.cmdline"), "w") as f:
            f.write(cmd + "\n")
    except OSError:
        pass
    pos = 0
    buf = b""
    alive = True
    while True:
        try:
            size = os.path.getsize(mpath)
        except OSError:
            size = 0
        # vCPU threads appear while QEMU starts: pin each one as it comes.
        # With --pin-vcpus the other threads too, and QEMU starts threads
        # later (workers): look again every second.
        now = time.time()
        nv = sum(1 for d in pinned.values() if vcpu_index(d["comm"]) is not None)
        if pin and (nv < ncpus_wanted(pid) or (place["other_cpus"] and now >= next_pin)):
            next_pin = now + 1.0
            if pin_threads(pid, place, pinned):
                with open(os.path.join(out, "pinned.json"), "w") as f:
                    json.dump(pinned_record(place, pinned), f, indent=1)
        if size > pos:
            with open(mpath, "rb") as f:
                f.seek(pos)
                data = f.read()
            pos += len(data)
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                parts = line.decode(errors="replace").split()
                if len(parts) < 2:
                    continue
                # "S|E RUN_ID GUEST_T" (older guests wrote "RUN_ID S|E ...")
                kind, rid = parts[0], parts[1]
                if kind not in ("S", "E"):
                    kind, rid = parts[1], parts[0]
                rec = {"id": rid, "kind": kind, "host_t": time.time()}
                tt = thread_times(pid)
                if tt:
                    rec.update({"qemu_" + k: v for k, v in tt.items()})
                rec.update(host_cpu())
                res.write(json.dumps(rec) + "\n")
                res.flush()
            continue
        if not alive:
            break
        if not os.path.exists("/proc/%d" % pid):
            alive = False  # one more pass over the file, then stop
            continue
        time.sleep(0.005)
    return 0


if __name__ == "__main__":
    sys.exit(main())
