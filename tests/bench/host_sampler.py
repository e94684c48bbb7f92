#!/usr/bin/env python3
"""vblk benchmark, host side: CPU time of the guest's QEMU process at markers.

    host_sampler.py OUT

Waits for the QEMU process whose command line names OUT (scripts/vm-run puts
the results directory on it as a 9p share), then follows OUT/markers, which
the guest (tests/bench/guest_bench.py) appends to at the start and end of each
measurement window. For every marker line it writes one line to
OUT/host-markers.jsonl: the run id, S/E, the host time, the QEMU process' CPU
time (utime+stime of all threads, in seconds) split into vCPU threads, I/O
threads and the rest, and the host's /proc/stat busy time (so the report can
show how much of the host something else used). Exits when QEMU is gone.
"""
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


def pin_vcpus(pid):
    """Pin vCPU thread n to host CPU n (mod the host's CPUs); the other
    threads of QEMU stay free. Returns {tid: cpu} of what was pinned."""
    cpus = sorted(os.sched_getaffinity(0))
    done = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return done
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                comm = f.read().strip()
        except OSError:
            continue
        # "CPU 0/TCG", "CPU 1/KVM"
        if not comm.startswith("CPU "):
            continue
        try:
            n = int(comm[4:].split("/")[0])
            cpu = cpus[n % len(cpus)]
            os.sched_setaffinity(int(tid), {cpu})
            done[int(tid)] = cpu
        except (ValueError, OSError):
            continue
    return done


def host_cpu():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    total = sum(v[:8])
    return {"host_busy_s": (total - v[3] - v[4]) / TICK, "host_total_s": total / TICK}


def main():
    out = os.path.realpath(sys.argv[1])
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
    pinned = {}
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
        if pin and len(pinned) < ncpus_wanted(pid):
            new = pin_vcpus(pid)
            if len(new) > len(pinned):
                pinned = new
                with open(os.path.join(out, "pinned.json"), "w") as f:
                    json.dump({str(k): v for k, v in pinned.items()}, f)
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
