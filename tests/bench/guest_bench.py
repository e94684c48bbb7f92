#!/usr/bin/env python3
"""vblk benchmark, guest side (runs inside the lab guest under scripts/vm-run).

Reads a plan (JSON, written by scripts/bench), loads vblk, binds disks, and
runs every experiment of the plan: fio jobs on each arm, interleaved in
rotating order (A B C, B C A, C A B, ...), after a warm-up round.

For each run it takes two snapshots of the guest's counters inside fio's
steady state (after the ramp): /proc/stat, /proc/interrupts, /proc/softirqs,
the disk's /sys/block/X/stat and, for vblk disks, /sys/block/X/vblk/counters.
At each snapshot it appends a marker line to OUT/markers; the host side
(tests/bench/host_sampler.py) reads the QEMU process' CPU time when it sees
the marker. Results: OUT/runs.jsonl (one JSON object per run), OUT/fio/*.json
(raw fio output), OUT/guest-info.json, and one progress line per run on
stdout. With a "profile" in the plan (scripts/bench --profile), a profile
phase follows the experiments: OUT/profile.jsonl and OUT/profile/ (see
run_profile).
"""
import errno
import glob
import json
import shutil
import os
import re
import select
import signal
import subprocess
import sys
import time

OUT = os.environ.get("VBLK_OUT", ".")
PARAMS = "/sys/module/vblk/parameters"
HZ = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(msg, flush=True)


def rd(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def wr(path, val):
    with open(path, "w") as f:
        f.write(str(val))


def sh(cmd, check=True):
    r = subprocess.run(cmd, shell=True, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (cmd, r.returncode, r.stdout.strip()))
    return r.stdout


# ---- markers for the host ------------------------------------------------

_mfd = None


def marker(run_id, kind):
    global _mfd
    if _mfd is None:
        _mfd = os.open(os.path.join(OUT, "markers"),
                       os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(_mfd, ("%s %s %.6f\n" % (kind, run_id, time.monotonic())).encode())


# ---- disks -----------------------------------------------------------------

def disk_by_serial(serial):
    for d in sorted(os.listdir("/sys/block")):
        if rd("/sys/block/%s/serial" % d).strip() == serial:
            return d
    return None


def pci_of(dev):
    path = os.path.realpath("/sys/block/%s" % dev)
    addr = None
    for comp in path.split("/"):
        if re.match(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$", comp):
            addr = comp
    return addr


def driver_of(dev):
    """The driver the disk's device is bound to, read from sysfs (a disk
    is not called virtio_blk because it lacks vblk's files)."""
    if dev.startswith("nullb"):
        return "null_blk"
    link = "/sys/block/%s/device/driver" % dev
    if not os.path.exists(link):
        return "?"
    return os.path.basename(os.path.realpath(link))


def queue_info(dev):
    """What shapes a disk's queue under either driver: scheduler,
    hardware queues, requests per queue (recorded for every arm)."""
    q = "/sys/block/%s/queue/" % dev
    return {"scheduler": rd(q + "scheduler"), "nr_hw_queues": len(glob.glob("/sys/block/%s/mq/*" % dev)),
            "nr_requests": rd(q + "nr_requests")}


def irq_names(dev):
    """Names in /proc/interrupts that belong to this disk's device."""
    drv = driver_of(dev)
    if drv == "vblk":
        return ("exact", pci_of(dev))
    if drv == "virtio_blk":
        vdev = os.path.basename(os.path.realpath("/sys/block/%s/device" % dev))
        return ("prefix", vdev + "-")
    return ("none", None)


def bind(serial, driver, params=None):
    """Set vblk parameters (they apply at bind), then move the disk."""
    for k, v in (params or {}).items():
        wr(os.path.join(PARAMS, k), v)
    dev = disk_by_serial(serial)
    if dev is None:
        raise RuntimeError("no disk with serial %s" % serial)
    pci = pci_of(dev)
    target = {"vblk": "vblk", "virtio_blk": "virtio-pci"}[driver]
    if driver_of(dev) == driver and driver == "vblk":
        sh("%s/scripts/vblk-bind none %s" % (REPO, pci))
    sh("%s/scripts/vblk-bind %s %s" % (REPO, target, pci))
    for _ in range(100):
        dev = disk_by_serial(serial)
        if dev and driver_of(dev) == driver:
            return dev
        time.sleep(0.1)
    raise RuntimeError("disk %s did not come back on %s" % (serial, driver))


# ---- snapshots ----------------------------------------------------------------

def read_interrupts():
    tot = {}
    lines = rd("/proc/interrupts").splitlines()
    if not lines:
        return tot
    ncpu = len(lines[0].split())
    for ln in lines[1:]:
        f = ln.split()
        if not f or not f[0].endswith(":"):
            continue
        nums = []
        for x in f[1:1 + ncpu]:
            if x.isdigit():
                nums.append(int(x))
            else:
                break
        if not f[0][:-1].isdigit():
            continue
        name = f[-1] if len(f) > 1 + ncpu else ""
        tot["%s %s" % (f[0][:-1], name)] = sum(nums)
    return tot


def read_softirqs():
    res = {}
    for ln in rd("/proc/softirqs").splitlines()[1:]:
        f = ln.split()
        if f and f[0].endswith(":"):
            res[f[0][:-1]] = sum(int(x) for x in f[1:] if x.isdigit())
    return res


def read_cpu():
    for ln in rd("/proc/stat").splitlines():
        if ln.startswith("cpu "):
            return [int(x) for x in ln.split()[1:]]
    return []


def read_counters(dev):
    txt = rd("/sys/block/%s/vblk/counters" % dev)
    res = {}
    hdr = None
    for ln in txt.splitlines():
        f = ln.split()
        if not f:
            continue
        if f[0] == "queue":
            hdr = f[1:]
        elif f[0] == "total" and hdr:
            res.update({k: int(v) for k, v in zip(hdr, f[1:])})
        elif f[0] == "device_irqs":
            res["device_irqs"] = int(f[1])
            res["config_irqs"] = int(f[3])
    return res


def read_diskstat(dev):
    f = [int(x) for x in rd("/sys/block/%s/stat" % dev).split()]
    # reads completed, writes completed (fields 1 and 5); sectors (3 and 7)
    return ({"ios": f[0] + f[4], "rd": f[0], "wr": f[4], "sectors": f[2] + f[6]}
            if f else {"ios": 0, "sectors": 0})


def proc_state(pid):
    """What a long-running fio keeps from one window to the next, for
    reading a level shift of one arm: its threads (io_uring's iou-wrk
    workers among them), the CPUs its threads last ran on, and how much of
    its memory (the I/O buffers) is in transparent huge pages."""
    st = {"threads": 0, "iou_wrk": 0, "cpus": {}}
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            comm = rd("/proc/%d/task/%s/comm" % (pid, tid)).strip()
            st["threads"] += 1
            if comm.startswith("iou-wrk"):
                st["iou_wrk"] += 1
            f = rd("/proc/%d/task/%s/stat" % (pid, tid)).rsplit(")", 1)[-1].split()
            if len(f) > 36:
                st["cpus"][f[36]] = st["cpus"].get(f[36], 0) + 1
    except OSError:
        pass
    for ln in rd("/proc/%d/smaps_rollup" % pid).splitlines():
        if ln.startswith("AnonHugePages:"):
            st["thp_kb"] = int(ln.split()[1])
    return st


def snapshot(dev):
    s = {"t": time.monotonic(), "cpu": read_cpu(), "irq": read_interrupts(),
         "softirq": read_softirqs(), "disk": read_diskstat(dev)}
    if driver_of(dev) == "vblk":
        s["vblk"] = read_counters(dev)
    return s


def irq_delta(dev, s0, s1):
    kind, name = irq_names(dev)
    if kind == "none":
        return 0
    tot = 0
    for k, v1 in s1["irq"].items():
        nm = k.split(" ", 1)[1]
        if (kind == "exact" and nm == name) or (kind == "prefix" and nm.startswith(name)
                                                and not nm.endswith("config")):
            tot += v1 - s0["irq"].get(k, 0)
    return tot


def derive(dev, s0, s1, count="disk"):
    """Window metrics from two snapshots. I/Os: the disk's completed reads
    and writes (/sys/block/X/stat), or with count "vblk" the completions
    in vblk's counters: passthrough requests are not in the disk's stat
    on the lab kernels (the block layer accounts no passthrough request
    before 6.13's iostats_passthrough)."""
    dt = s1["t"] - s0["t"]
    c0, c1 = s0["cpu"], s1["cpu"]
    d = [b - a for a, b in zip(c0, c1)]
    total = sum(d[:8])  # user nice system idle iowait irq softirq steal
    idle = d[3] + d[4]
    busy_s = (total - idle) / HZ
    ios = s1["disk"]["ios"] - s0["disk"]["ios"]
    sectors = s1["disk"]["sectors"] - s0["disk"]["sectors"]
    if count == "vblk":
        ios = s1.get("vblk", {}).get("completions", 0) - s0.get("vblk", {}).get("completions", 0)
        sectors = None
    m = {"win_s": dt, "win_ios": ios, "win_iops": ios / dt if dt > 0 else 0,
         "guest_busy_s": busy_s, "guest_cpu_total_s": total / HZ,
         "guest_busy_frac": (total - idle) / total if total else 0,
         "guest_sys_s": d[2] / HZ, "guest_user_s": d[0] / HZ,
         "guest_irq_s": d[5] / HZ, "guest_softirq_s": d[6] / HZ,
         "iops_per_busy_cpu_s": ios / busy_s if busy_s > 0 else None,
         "irqs": irq_delta(dev, s0, s1),
         "kib_per_io": sectors / 2 / ios if ios and sectors is not None else None}
    if count != "disk":
        m["ios_from"] = count
    m["irqs_per_io"] = m["irqs"] / ios if ios else None
    for k in ("BLOCK", "IRQ_POLL"):
        m["softirq_" + k] = s1["softirq"].get(k, 0) - s0["softirq"].get(k, 0)
    if "vblk" in s0 and "vblk" in s1:
        v = {k: s1["vblk"][k] - s0["vblk"].get(k, 0) for k in s1["vblk"] if k != "max_batch"}
        m["vblk"] = v
        req = v.get("requests", 0)
        if req:
            m["doorbells_per_io"] = v.get("doorbells", 0) / req
            m["vblk_irqs_per_io"] = v.get("irqs", 0) / req
            m["polls_per_io"] = v.get("polls", 0) / req
    return m


# ---- fio ---------------------------------------------------------------------

def fio_summary_job(job):
    """IOPS, bandwidth and completion latency of one (group-reported) job."""
    res = {"iops": 0.0, "bw_kib": 0.0, "ios": 0}
    pct = {}
    lat_mean = []
    for dirn in ("read", "write"):
        d = job[dirn]
        if d["total_ios"] == 0 and d["iops"] == 0:
            continue
        res["iops"] += d["iops"]
        res["bw_kib"] += d["bw"]
        res["ios"] += d["total_ios"]
        cl = d.get("clat_ns", {})
        if cl.get("N", 0):
            lat_mean.append((cl["mean"], cl["N"]))
            for k, v in cl.get("percentile", {}).items():
                pct.setdefault(k, []).append(v)
    if lat_mean:
        n = sum(x[1] for x in lat_mean)
        res["clat_mean_us"] = sum(m * c for m, c in lat_mean) / n / 1000
    for key, name in (("50.000000", "p50"), ("99.000000", "p99"), ("99.900000", "p99.9")):
        if key in pct:
            res["clat_%s_us" % name] = max(pct[key]) / 1000
    res["usr_cpu"] = job.get("usr_cpu")
    res["sys_cpu"] = job.get("sys_cpu")
    res["ctx"] = job.get("ctx")
    if job.get("error"):
        res["error"] = "fio error %s" % job["error"]
    return res


def load_fio_json(path):
    with open(path) as f:
        txt = f.read()
    # fio may print warnings before the JSON
    return json.loads(txt[txt.index("{"):])


WORK = "/dev/shm/vblkbench"
SLACK = 0.9  # seconds fio runs past the measurement window (sleeps overshoot under load)


def run_id(exp, job, rep, label):
    """The id of one run (slice) in runs.jsonl and in the host markers."""
    return "%s.%s.r%d.%s" % (exp["name"], job["name"], rep,
                             re.sub(r"[^A-Za-z0-9_#.+-]", "_", label))


def fio_pin_lines(exp):
    """Job i runs on vCPU i mod n, so every run of an arm places its jobs
    (and, through the queue mapping, its interrupts) the same way."""
    if not exp.get("pin_jobs", True):
        return []
    return ["cpus_allowed=0-%d" % ((os.cpu_count() or 1) - 1), "cpus_allowed_policy=split"]


def fio_opt_lines(job, arm):
    """The job's fio options with the arm's own on top (None: a flag)."""
    opts = dict(job["fio"], **arm.get("fio", {}))
    return ["%s=%s" % kv if kv[1] is not None else kv[0] for kv in opts.items()]


def write_jobfile(name, lines):
    """Write a fio job file into WORK, keep a copy in OUT/fio; returns the
    job file's path and the path for fio's JSON output."""
    jpath = os.path.join(WORK, name + ".fio")
    with open(jpath, "w") as f:
        f.write("\n".join(lines) + "\n")
    fdir = os.path.join(OUT, "fio")
    os.makedirs(fdir, exist_ok=True)
    shutil.copy(jpath, os.path.join(fdir, os.path.basename(jpath)))
    return jpath, os.path.join(fdir, name + ".json")


def set_params(arm):
    """The arm's run-time vblk parameters."""
    for k, v in arm.get("set", {}).items():
        wr(os.path.join(PARAMS, k), v)


def run_job(exp, job, arms, devs, first_n, total, runs_out, t_all):
    """All rounds of one fio job of one experiment, in ONE fio process: every
    run is a group of its own (stonewall), so that fio's start-up (slow in
    this guest: ~60 shared libraries over 9p) is paid once per job, not once
    per run. Each group's exec_prerun sets the arm's run-time parameters and
    tells us which group runs; we then wait for its I/O to start, let it ramp,
    and take the measurement window inside it."""
    os.makedirs(WORK, exist_ok=True)
    # The first job of an experiment warms its disks up; later jobs reuse them.
    warm = exp.get("warmup", 1) if job is exp["jobs"][0] else exp.get("warmup_next", 0)
    ramp, window, wwin = exp["ramp"], exp["window"], exp.get("warm_window", 1)
    groups = []
    for r in range(warm + exp["reps"]):
        k = r % len(arms)
        for arm in arms[k:] + arms[:k]:
            groups.append({"rid": run_id(exp, job, r - warm, arm["label"]), "arm": arm, "dev": devs[arm["label"]],
                           "rep": r - warm, "record": r >= warm,
                           "window": window if r >= warm else wwin})
    cur = os.path.join(WORK, "cur")
    wr(cur, "-")
    jf = ["[global]", "direct=1", "time_based", "ramp_time=%dms" % round(ramp * 1000), "group_reporting",
          "norandommap", "randrepeat=0"] + fio_pin_lines(exp)
    for g, gr in enumerate(groups):
        pre = os.path.join(WORK, "pre%d.sh" % g)
        with open(pre, "w") as f:
            f.write("#!/bin/sh\n")
            for k, v in gr["arm"].get("set", {}).items():
                f.write("echo %s > %s/%s\n" % (v, PARAMS, k))
            f.write("echo %d > %s\n" % (g, cur))
        os.chmod(pre, 0o755)
        jf += ["", "[g%d]" % g, "stonewall", "new_group", "filename=/dev/%s" % gr["dev"],
               "runtime=%dms" % round((gr["window"] + SLACK) * 1000), "exec_prerun=%s" % pre]
        jf += fio_opt_lines(job, gr["arm"])
    jpath, outfile = write_jobfile("%s.%s" % (exp["name"], job["name"]), jf)
    t_start = time.monotonic()
    p = subprocess.Popen(["fio", "--output-format=json", "--output=%s" % outfile, jpath],
                         cwd=WORK, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    recs = []
    n = first_n
    for g, gr in enumerate(groups):
        n += 1
        dev = gr["dev"]
        rec = {"id": gr["rid"], "group": g, "exp": exp["name"], "job": job["name"],
               "arm": gr["arm"]["label"], "dev": dev, "driver": driver_of(dev),
               "record": gr["record"], "rep": gr["rep"], "fio_json": os.path.basename(outfile)}
        t0 = time.monotonic()
        started = False
        while p.poll() is None and time.monotonic() - t0 < 120:
            if rd(cur).strip() == str(g):
                started = True
                break
            time.sleep(0.01)
        if started:
            started = False
            st0 = read_diskstat(dev)["ios"]
            while p.poll() is None and time.monotonic() - t0 < 120:
                if read_diskstat(dev)["ios"] > st0:
                    started = True
                    break
                time.sleep(0.01)
        rec["startup_s"] = time.monotonic() - t0
        if started:
            time.sleep(ramp)
            s0 = snapshot(dev)
            marker(gr["rid"], "S")
            time.sleep(gr["window"])
            marker(gr["rid"], "E")
            s1 = snapshot(dev)
            rec.update(derive(dev, s0, s1))
            if rd(cur).strip() != str(g):
                rec["error"] = "measurement window overran the fio job"
        else:
            rec["error"] = "fio group %d never started (fio %s)" % (
                g, "exited" if p.poll() is not None else "stuck")
        rec["elapsed_s"] = time.monotonic() - t_all
        recs.append(rec)
        progress(n, total, rec)
        if p.poll() is not None and not started:
            break
    try:
        _, err = p.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    fj = {}
    try:
        for j in load_fio_json(outfile)["jobs"]:
            fj[j["jobname"]] = j
    except (OSError, ValueError, KeyError) as e:
        err = "fio output: %s; %s" % (e, err)
    for rec in recs:
        j = fj.get("g%d" % rec["group"])
        if j is not None:
            rec.update({k: v for k, v in fio_summary_job(j).items() if k != "error" or v})
        elif not rec.get("error"):
            rec["error"] = "no fio result: exit %s: %s" % (p.returncode, (err or "").strip()[:300])
        rec["fio_rc"] = p.returncode
        runs_out.write(json.dumps(rec) + "\n")
    runs_out.flush()
    log("   %s %s: fio exit %s, %.0f s%s" % (exp["name"], job["name"], p.returncode,
                                          time.monotonic() - t_start,
                                          "; " + err.strip()[:200] if p.returncode else ""))
    return len(groups)


# ---- slices: every arm's fio kept alive, taking turns -------------------------

def bs_bytes(v):
    """fio's bs value ("4k", "64k", "512") in bytes."""
    v = str(v).strip().lower()
    mult = {"k": 1024, "m": 1024 * 1024}.get(v[-1:], 1)
    return int(float(v.rstrip("km")) * mult)


def pgsignal(p, sig):
    """Signal fio and anything it started (its own process group)."""
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass


def stop_once_running(p, what, arm, ios, st0):
    """Wait (120 s at most) for the arm's load generator p (its own process
    group) to start I/O, ios() rising above st0, give it 0.3 s more so
    that every job gets going, then SIGSTOP it. One that exits or never
    starts I/O is killed and fails the arm."""
    t0 = time.monotonic()
    while p.poll() is None and time.monotonic() - t0 < 120:
        if ios() > st0:
            break
        time.sleep(0.02)
    else:
        why = "exited" if p.poll() is not None else "never started I/O"
        pgsignal(p, signal.SIGKILL)
        _, err = p.communicate()
        raise RuntimeError("%s for arm %s %s (exit %s): %s" % (
            what, arm["label"], why, p.returncode, (err or "").strip()[:300]))
    time.sleep(0.3)
    pgsignal(p, signal.SIGSTOP)


def start_arm_fio(exp, job, arm, dev, k, runtime_s):
    """One fio process (its own process group) running this arm's job for
    longer than the whole cell will take; stopped as soon as its I/O runs."""
    # thread: the jobs are threads of the one fio process, which SIGSTOP
    # stops as a whole (forked job processes leave fio's process group).
    jf = ["[global]", "thread", "direct=1", "time_based", "runtime=%ds" % runtime_s,
          "group_reporting", "norandommap", "randrepeat=0"] + fio_pin_lines(exp)
    jf += ["", "[a%d]" % k, "filename=/dev/%s" % dev] + fio_opt_lines(job, arm)
    jpath, outfile = write_jobfile("%s.%s.a%d" % (exp["name"], job["name"], k), jf)
    set_params(arm)
    st0 = read_diskstat(dev)["ios"]
    p = subprocess.Popen(["fio", "--output-format=json+", "--output=%s" % outfile, jpath],
                         cwd=WORK, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    stop_once_running(p, "fio", arm, lambda: read_diskstat(dev)["ios"], st0)
    return p, outfile


PTBENCH = "tools/vblk-ptbench/vblk-ptbench"  # in the repo (make ptbench)


def arm_count(arm):
    """Where an arm's I/Os are counted (derive): vblk's counters for the
    char device, the disk's stat otherwise."""
    return "vblk" if arm.get("path") == "char" else "disk"


def arm_ios(dev, count):
    if count == "vblk":
        return read_counters(dev).get("completions", 0)
    return read_diskstat(dev)["ios"]


def ptbench_argv(repo, job, arm, dev, runtime_s):
    """vblk-ptbench's command line for one arm of a ptbench job: the disk
    /dev/DEV (O_DIRECT) or, for a "char" arm, its passthrough char device
    /dev/DEVc0, with the job's settings."""
    p = job["ptbench"]
    argv = [os.path.join(repo, PTBENCH), "--rw", p["rw"], "--bs", str(bs_bytes(p["bs"])),
            "--qd", str(p["qd"]), "--batch", str(p.get("batch", 1)), "--runtime", str(int(runtime_s))]
    for flag in ("fixed", "regfile", "iopoll"):
        if p.get(flag):
            argv.append("--" + flag)
    argv.append("/dev/%s%s" % (dev, "c0" if arm.get("path") == "char" else ""))
    return argv


class ArmUnavailable(RuntimeError):
    """This arm's disk cannot run the job as asked (IOPOLL without a poll
    queue): the arm is left out of the cell, not an error."""


def start_arm_ptbench(exp, job, arm, dev, k, runtime_s):
    """As start_arm_fio, for a ptbench job: one vblk-ptbench process (its
    own process group, pinned to vCPU 0 as fio's job 0 is), its per-second
    lines in OUT/ptbench/; stopped as soon as its I/O runs. Returns the
    process and the log's path."""
    argv = ptbench_argv(REPO, job, arm, dev, runtime_s)
    # IOPOLL on a disk without a poll queue still runs (the block layer
    # drops the poll flag, the I/O completes by interrupt while io_uring
    # spins): not the path being measured, so such an arm does not run.
    if job["ptbench"].get("iopoll") and rd("/sys/block/%s/queue/io_poll" % dev).strip() != "1":
        raise ArmUnavailable("/dev/%s (%s) has no poll queue (queue/io_poll %s)" % (
            dev, driver_of(dev), rd("/sys/block/%s/queue/io_poll" % dev).strip() or "?"))
    ldir = os.path.join(OUT, "ptbench")
    os.makedirs(ldir, exist_ok=True)
    log_path = os.path.join(ldir, "%s.%s.a%d.log" % (exp["name"], job["name"], k))
    set_params(arm)
    count = arm_count(arm)
    st0 = arm_ios(dev, count)
    with open(log_path, "w") as lf:
        lf.write(" ".join(argv) + "\n")
        lf.flush()
        p = subprocess.Popen(argv, cwd=WORK, stdout=lf, stderr=subprocess.PIPE, text=True,
                             start_new_session=True,
                             preexec_fn=lambda: os.sched_setaffinity(0, {0}))
    stop_once_running(p, "vblk-ptbench", arm, lambda: arm_ios(dev, count), st0)
    return p, log_path


def start_arm(exp, job, arm, dev, k, runtime_s):
    """The arm's load generator: vblk-ptbench for a ptbench job, else fio."""
    if "ptbench" in job:
        return start_arm_ptbench(exp, job, arm, dev, k, runtime_s)
    return start_arm_fio(exp, job, arm, dev, k, runtime_s)


def job_bs(job):
    return bs_bytes((job.get("ptbench") or job.get("fio") or {}).get("bs", "4k"))


def stop_arm_fio(p):
    """Resume, then ask fio to end (SIGINT: it stops its jobs and writes its
    JSON); returns fio's stderr."""
    pgsignal(p, signal.SIGCONT)
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        pgsignal(p, signal.SIGKILL)
        _, err = p.communicate()
    return err or ""


def pooled_latency(job_json, cutoff_ns):
    """Completion latency percentiles of one fio job (JSON+ histogram bins),
    leaving out samples of cutoff_ns and more: those are the I/Os that were
    in flight while the arm was stopped (they wait for the other arms'
    slices), not latency of the device or the driver."""
    bins = {}
    for dirn in ("read", "write"):
        for v, c in job_json.get(dirn, {}).get("clat_ns", {}).get("bins", {}).items():
            bins[int(v)] = bins.get(int(v), 0) + c
    kept = sorted((v, c) for v, c in bins.items() if v < cutoff_ns)
    n = sum(c for _, c in kept)
    res = {"lat_excluded": sum(c for v, c in bins.items() if v >= cutoff_ns), "lat_n": n}
    if not n:
        return res
    res["clat_mean_us"] = sum(v * c for v, c in kept) / n / 1000
    for p, name in ((50.0, "p50"), (99.0, "p99"), (99.9, "p99.9")):
        want, cum = p / 100 * n, 0
        for v, c in kept:
            cum += c
            if cum >= want:
                res["clat_%s_us" % name] = v / 1000
                break
    return res


_stuck_seen = set()


def stuck_report(dev):
    """The first time a disk completes nothing in a window, log what its
    queues look like (vblk/rings, vblk/counters, the block layer's inflight
    count), so that a hang can be told from a slow device."""
    if dev in _stuck_seen:
        return
    _stuck_seen.add(dev)
    log("!! %s completed nothing in a window; inflight %s" % (
        dev, rd("/sys/block/%s/inflight" % dev).strip()))
    for f in ("rings", "counters"):
        txt = rd("/sys/block/%s/vblk/%s" % (dev, f))
        if txt:
            log("!! %s vblk/%s:\n%s" % (dev, f, txt.rstrip()))


def run_job_slices(exp, job, arms, devs, first_n, total, runs_out, t_all):
    """All rounds of one fio job of one experiment as slices: every arm has
    its own fio process, started once and then stopped (SIGSTOP on its
    process group); in each round the arms take turns in rotating order,
    each resumed for `settle` seconds and then measured for `window`
    seconds. Arms measured a second apart share the machine's slow swings
    of speed (they last ~10 s on the lab hosts), which runs of a few
    seconds each, one after the other, do not; and fio's start-up is paid
    once per arm and job instead of once per run."""
    os.makedirs(WORK, exist_ok=True)
    window, settle = exp["window"], exp.get("settle", 0.1)
    warm, wwin = exp.get("warmup", 1), exp.get("warm_window", 1.0)
    rounds = warm + exp["reps"]
    runtime_s = int(60 + 3 * len(arms) * rounds * (window + settle + 0.5))
    procs, outs = {}, {}
    recs, n = [], first_n
    t_start = time.monotonic()
    pt = "ptbench" in job
    try:
        for k, arm in enumerate(arms):
            try:
                procs[arm["label"]], outs[arm["label"]] = start_arm(
                    exp, job, arm, devs[arm["label"]], k, runtime_s)
            except ArmUnavailable as e:
                # A ptbench arm that cannot run this job (virtio_blk
                # without poll queues under IOPOLL) is left out of the
                # cell, said so in runs.jsonl; the others go on. Any
                # other failure fails the job, as fio's does.
                log("   %s %s: arm %s unavailable: %s" % (exp["name"], job["name"], arm["label"], e))
                runs_out.write(json.dumps({"exp": exp["name"], "job": job["name"], "arm": arm["label"],
                                           "unavailable": str(e)}) + "\n")
                runs_out.flush()
        for r in range(rounds):
            k = r % len(arms)
            for arm in arms[k:] + arms[:k]:
                if arm["label"] not in procs:
                    continue
                label, dev, p = arm["label"], devs[arm["label"]], procs[arm["label"]]
                n += 1
                rec = {"id": run_id(exp, job, r - warm, label),
                       "exp": exp["name"], "job": job["name"], "arm": label, "dev": dev,
                       "driver": driver_of(dev), "record": r >= warm, "rep": r - warm,
                       "slice": True, "fio_json": os.path.basename(outs[label])}
                if p.poll() is not None:
                    rec["error"] = "fio exited early (exit %s)" % p.returncode
                else:
                    set_params(arm)
                    pgsignal(p, signal.SIGCONT)
                    time.sleep(settle)
                    s0 = snapshot(dev)
                    marker(rec["id"], "S")
                    time.sleep(window if r >= warm else wwin)
                    marker(rec["id"], "E")
                    s1 = snapshot(dev)
                    pgsignal(p, signal.SIGSTOP)
                    rec["proc"] = proc_state(p.pid)
                    rec.update(derive(dev, s0, s1, arm_count(arm)))
                    rec["iops"] = rec["win_iops"]
                    rec["bw_kib"] = rec["win_iops"] * job_bs(job) / 1024
                    if not rec["win_ios"]:
                        rec["error"] = "no I/O completed in the window"
                        stuck_report(dev)
                rec["elapsed_s"] = time.monotonic() - t_all
                recs.append(rec)
                progress(n, total, rec)
    finally:
        errs = {label: stop_arm_fio(p) for label, p in procs.items()}
    # Stopped arms wait at least the other arms' windows: latencies that
    # long are the stop, not the I/O path.
    cutoff_ns = int(0.5 * max(1, len(arms) - 1) * window * 1e9)
    lat = {}
    for label, path in outs.items():
        if pt:
            continue  # vblk-ptbench reports no latency (its log: OUT/ptbench/)
        try:
            jobs = load_fio_json(path)["jobs"]
            lat[label] = pooled_latency(jobs[0], cutoff_ns)
            if jobs[0].get("error"):
                lat[label]["fio_error"] = jobs[0]["error"]
        except (OSError, ValueError, KeyError, IndexError) as e:
            lat[label] = {"fio_output_error": "%s; %s" % (e, errs.get(label, "").strip()[:200])}
    for rec in recs:
        rec.update({kk: v for kk, v in lat.get(rec["arm"], {}).items()})
        rec["lat_pooled"] = not pt
        runs_out.write(json.dumps(rec) + "\n")
    runs_out.flush()
    log("   %s %s: %d slices, %.0f s%s" % (
        exp["name"], job["name"], len(recs), time.monotonic() - t_start,
        "; clients' exit: %s" % ", ".join("%s %s" % (lb, p.returncode) for lb, p in procs.items()) if pt else
        "; latency samples left out (stopped arm): %s" % ", ".join(
            "%s %s" % (lb, lat[lb].get("lat_excluded", "?")) for lb in lat)))
    return len(recs)


def progress(n, total, rec):
    def f(key, fmt, scale=1.0):
        v = rec.get(key)
        return fmt % (v * scale) if isinstance(v, (int, float)) else "-"
    tag = "" if rec["record"] else " (warm-up)"
    if rec.get("error"):
        log("[%3d/%d] %-10s %-14s %-6s %-6s ERROR %s" % (n, total, rec["exp"], rec["job"],
            rec["arm"], rec["dev"], rec["error"]))
        return
    log("[%3d/%d] %-9s %-20s %-12s %-7s %7s IOPS  busy %4s%%  IOPS/busy-s %6s  irq/IO %5s  db/IO %5s%s"
        % (n, total, rec["exp"], rec["job"], rec["arm"], rec["dev"], f("win_iops", "%.0f"),
           f("guest_busy_frac", "%.0f", 100),
           f("iops_per_busy_cpu_s", "%.0f"), f("irqs_per_io", "%.2f"),
           f("doorbells_per_io", "%.2f"), tag))


# ---- profile: where the instructions go, per driver ---------------------------

def perf_control_open(perf, ctl, ack, timeout=600):
    """Open perf record's control FIFO (for writing: it succeeds once perf
    has opened it) and its ack FIFO; (ctl fd, ack fd)."""
    t0 = time.monotonic()
    while True:
        try:
            cfd = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise
        if perf.poll() is not None:
            raise RuntimeError("perf record exited at start (exit %s): %s" % (
                perf.returncode, perf.stderr.read().strip()[:300]))
        if time.monotonic() - t0 > timeout:
            raise RuntimeError("perf record did not open its control FIFO in %d s" % timeout)
        time.sleep(0.05)
    return cfd, os.open(ack, os.O_RDONLY | os.O_NONBLOCK)


def perf_control(perf, cfd, afd, cmd, timeout=300):
    """Send a command to perf record (enable, disable) and wait for its ack."""
    os.write(cfd, (cmd + "\n").encode())
    t0, got = time.monotonic(), b""
    while b"ack" not in got:
        if perf.poll() is not None or time.monotonic() - t0 > timeout:
            raise RuntimeError("perf record: no ack for %s (exit %s)" % (cmd, perf.returncode))
        select.select([afd], [], [], 0.1)
        try:
            got += os.read(afd, 64)
        except BlockingIOError:
            pass
        if not got:
            time.sleep(0.01)


def perf_record_args(prof, data, ctl, ack, irq):
    """perf record of every CPU with call chains: cpu-clock every period_ns
    and, with irq, every hard interrupt handler's entry and exit (the
    cpu-clock timer cannot fire while interrupts are off, so a handler's
    own instructions get no samples of their own: the report times them
    from these events)."""
    ev = ["-e", "cpu-clock/period=%d/" % prof["period_ns"]]
    if irq:
        # No call chains for these: with them each event cost ~10k guest
        # instructions (2026-12-06: 12.4k -> 19.6k instructions per I/O).
        ev += ["-e", "irq:irq_handler_entry/call-graph=no/", "-e", "irq:irq_handler_exit/call-graph=no/"]
    return (["perf", "record", "-a", "-g"] + ev +
            ["--clockid", "monotonic", "-D", "-1", "--control", "fifo:%s,%s" % (ctl, ack), "-N",
             "-o", data])


def profile_arm(prof, exp, job, arm, dev, k):
    """One arm's fio alone, `seconds` long, under `perf record -a -g` with
    the cpu-clock event (a sample every period_ns of each CPU's clock: under
    icount, every period_ns/8 instructions). The disk's I/Os and /proc/stat
    are snapshotted at the ends of the window; the samples are cut to it by
    their time stamps (perf's clock is CLOCK_MONOTONIC, as time.monotonic()).
    Writes OUT/profile/<job>.<label>.perf.txt (perf script) and returns the
    window's record."""
    pdir = os.path.join(OUT, "profile")
    os.makedirs(pdir, exist_ok=True)
    name = "%s.%s" % (job["name"], re.sub(r"[^A-Za-z0-9_-]", "_", arm["label"]))
    data = os.path.join(WORK, name + ".perf.data")
    # fio ends by SIGINT after the window (stop_arm_fio); its own runtime
    # is only a bound. It counts from fio's start, and in a starved guest
    # (scripts/bench --pin-vcpus 0, 2026-12-06) the first I/O came ~110 s
    # after fio started and perf took 32 s more to start: with 150 s the
    # QD64 arms' fio had ended before the window (0 I/Os).
    runtime_s = int(900 + 4 * (prof["seconds"] + prof["warm"]))
    t_start = time.monotonic()
    p, outfile = start_arm(exp, job, arm, dev, 90 + k, runtime_s)
    rec = {"exp": exp["name"], "job": job["name"], "arm": arm["label"], "dev": dev,
           "driver": driver_of(dev), "period_ns": prof["period_ns"], "file": name + ".perf.txt",
           "irq_match": irq_names(dev), "fio_start_s": time.monotonic() - t_start}
    perf, cfd, afd = None, None, None
    ctl, ack = os.path.join(WORK, name + ".ctl"), os.path.join(WORK, name + ".ack")
    try:
        pgsignal(p, signal.SIGCONT)
        t = time.monotonic()
        for f in (ctl, ack):
            if os.path.exists(f):
                os.unlink(f)
            os.mkfifo(f)
        # -D -1: events start disabled; "enable" / "disable" on the control
        # FIFO, each acknowledged, bracket the window (perf's start-up,
        # loading over 9p under TCG, can take longer than the window).
        # -N: no build-id cache (perf script runs in this boot). Without
        # the irq tracepoints if perf cannot open them.
        for irq in ([True, False] if prof.get("irq_trace") else [False]):
            perf = subprocess.Popen(perf_record_args(prof, data, ctl, ack, irq),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True, start_new_session=True)
            try:
                cfd, afd = perf_control_open(perf, ctl, ack)
                break
            except RuntimeError as e:
                if perf.poll() is None:
                    perf.kill()
                    perf.wait()
                if not irq:
                    raise
                log("profile: perf record with irq tracepoints failed (%s); without them" % e)
        rec["irq_trace"] = irq
        rec["perf_ready_s"] = time.monotonic() - t
        time.sleep(max(0.0, prof["warm"] - rec["perf_ready_s"]))  # fio settles
        perf_control(perf, cfd, afd, "enable")
        s0 = snapshot(dev)
        time.sleep(prof["seconds"])
        s1 = snapshot(dev)
        perf_control(perf, cfd, afd, "disable")
        rec.update(derive(dev, s0, s1, arm_count(arm)))
        rec["t0"], rec["t1"], rec["cpu0"], rec["cpu1"] = s0["t"], s1["t"], s0["cpu"], s1["cpu"]
    finally:
        if perf is not None:
            t = time.monotonic()
            if perf.poll() is None:
                perf.send_signal(signal.SIGINT)
            try:
                _, err = perf.communicate(timeout=600)
            except subprocess.TimeoutExpired:
                perf.kill()
                _, err = perf.communicate()
            rec["perf_rc"] = perf.returncode
            rec["perf_msg"] = (err or "").strip()[-300:]
            rec["perf_exit_s"] = time.monotonic() - t
        for fd in (cfd, afd):
            if fd is not None:
                os.close(fd)
        stop_arm_fio(p)
    t = time.monotonic()
    fields = ["-F", "comm,tid,cpu,time,period,ip,sym,dso"]
    if rec.get("irq_trace"):
        fields = ["-F", "sw:comm,tid,cpu,time,period,ip,sym,dso", "-F", "trace:comm,tid,cpu,time,event,trace"]
    for fl in (fields, ["-F", "comm,tid,cpu,time,period,ip,sym,dso"]):
        with open(os.path.join(pdir, rec["file"]), "w") as f:
            r = subprocess.run(["perf", "script", "-i", data, "--kallsyms", "/proc/kallsyms"] + fl,
                               stdout=f, stderr=subprocess.PIPE, text=True)
        if r.returncode == 0:
            break
        log("profile: perf script %s: exit %d: %s" % (" ".join(fl), r.returncode, r.stderr.strip()[:300]))
    rec["script_rc"] = r.returncode
    if r.returncode:
        rec["error"] = "perf script: exit %d: %s" % (r.returncode, r.stderr.strip()[:300])
    rec["script_s"] = time.monotonic() - t
    try:
        os.unlink(data)
    except OSError:
        pass
    return rec


def profile_arms(prof, job, exps):
    """[(experiment, arm)] that profile this job: the job's own "arms" or
    the profile's, each an arm label of the profile's experiment or
    "EXP:LABEL" (tests/bench/plan.py, profile_spec); ones not in the plan
    are left out."""
    out = []
    for name in job.get("arms", prof["arms"]):
        en, _, label = name.rpartition(":")
        exp = exps.get(en or prof["exp"])
        arm = next((a for a in (exp or {}).get("arms", []) if a["label"] == label), None)
        if arm is None:
            log("profile: no arm %s in the plan" % name)
            continue
        out.append((exp, arm))
    return out


def run_profile(prof, plan, info, jsonl="profile.jsonl"):
    """The profile phase: for each job, each profiled arm (virtio_blk and
    vblk of drv; with --profile-jobs, null_blk of ceiling on its job too)
    alone under perf; records in OUT/profile.jsonl for
    tests/bench/profile_report.py."""
    exps = {e["name"]: e for e in plan["experiments"]}
    if prof["exp"] not in exps:
        log("profile: no experiment %s in the plan" % prof["exp"])
        return
    if not os.path.isdir("/sys/kernel/tracing/events"):
        sh("mount -t tracefs nodev /sys/kernel/tracing", check=False)
    wr("/proc/sys/kernel/kptr_restrict", "0")
    wr("/proc/sys/kernel/perf_event_paranoid", "-1")
    info["perf"] = sh("perf --version", check=False).strip()
    # The kernel's and the modules' text symbols of this boot: the host
    # side names kernel frames from them (with their module: perf script
    # --kallsyms calls module code [kernel.kallsyms]).
    os.makedirs(os.path.join(OUT, "profile"), exist_ok=True)
    with open(os.path.join(OUT, "profile", "kallsyms"), "w") as f:
        f.writelines(ln for ln in rd("/proc/kallsyms").splitlines(True)
                     if ln[17:18] in ("t", "T", "w", "W"))
    out = open(os.path.join(OUT, jsonl), "a")
    for job in prof["jobs"]:
        for k, (exp, arm) in enumerate(profile_arms(prof, job, exps)):
            dev = resolve_arm(arm)
            t = time.monotonic()
            try:
                rec = profile_arm(prof, exp, job, arm, dev, k)
            except Exception as e:
                rec = {"exp": exp["name"], "job": job["name"], "arm": arm["label"],
                       "error": "%s: %s" % (type(e).__name__, e)}
            out.write(json.dumps(rec) + "\n")
            out.flush()
            log("profile %s %s (%s): %s IOPS, busy %s%%; fio's first I/O after %.1f s, perf ready after %.1f s, "
                "exit %s after %.1f s; perf script %.0f s; %.0f s in all%s" % (
                job["name"], arm["label"], rec.get("dev"), "%.0f" % rec["win_iops"] if "win_iops" in rec else "-",
                "%.0f" % (100 * rec["guest_busy_frac"]) if "guest_busy_frac" in rec else "-",
                rec.get("fio_start_s", -1), rec.get("perf_ready_s", -1), rec.get("perf_rc"), rec.get("perf_exit_s", -1),
                rec.get("script_s", 0), time.monotonic() - t,
                "; ERROR " + rec["error"] if rec.get("error") else ""))
    out.close()


# ---- setup actions -----------------------------------------------------------

def runs_of(exp, i):
    """Runs (slices) job i of exp takes, warm-ups included: with slices every
    job warms up (its fio processes are new); with groups only the first
    job of an experiment, unless warmup_next says otherwise."""
    if exp.get("slices", True) or i == 0:
        warm = exp.get("warmup", 1)
    else:
        warm = exp.get("warmup_next", 0)
    return len(exp["arms"]) * (exp["reps"] + warm)


# ---- QMP (scripts/vm-run starts scripts/qmp-agent next to every boot) -------

QMP_WAIT_S = 40  # the agent answers within 30 s, with an AgentError if QEMU does not
_qmp_n = [0]


def qmp(cmd, wait=QMP_WAIT_S):
    """Send one QMP command to this guest's QEMU through scripts/qmp-agent
    (tests/guest/lib.sh's qmp does the same in shell): write
    OUT/qmp/NAME.req, wait for OUT/qmp/NAME.resp. Returns QEMU's "return";
    raises RuntimeError on an error answer or none within `wait` seconds."""
    d = os.path.join(OUT, "qmp")
    if not os.path.isdir(d):
        raise RuntimeError("qmp: no %s (not booted by scripts/vm-run?)" % d)
    _qmp_n[0] += 1
    name = os.path.join(d, "bench-%d-%d" % (os.getpid(), _qmp_n[0]))
    with open(name + ".tmp", "w") as f:
        f.write(json.dumps(cmd) + "\n")
    os.rename(name + ".tmp", name + ".req")
    deadline = time.monotonic() + wait
    while not os.path.exists(name + ".resp"):
        if time.monotonic() > deadline:
            try:
                os.unlink(name + ".req")
            except OSError:
                pass
            raise RuntimeError("qmp %s: no answer in %g s (is scripts/qmp-agent running?)" % (
                cmd.get("execute"), wait))
        time.sleep(0.05)
    with open(name + ".resp") as f:
        text = f.read()
    os.unlink(name + ".resp")
    try:
        resp = json.loads(text)
    except ValueError:
        raise RuntimeError("qmp %s: bad answer %r" % (cmd.get("execute"), text[:200]))
    if not isinstance(resp, dict) or "error" in resp or "return" not in resp:
        err = resp.get("error", {}) if isinstance(resp, dict) else {}
        raise RuntimeError("qmp %s %s refused: %s: %s" % (
            cmd.get("execute"), json.dumps(cmd.get("arguments", {})),
            err.get("class", "?"), err.get("desc", text.strip()[:200])))
    return resp["return"]


def iothread_poll_get(iothread):
    return qmp({"execute": "qom-get", "arguments": {"path": "/objects/" + iothread,
                                                     "property": "poll-max-ns"}})


def iothread_poll(iothread, ns):
    """Set iothread ID's poll-max-ns (QMP qom-set on /objects/ID, which
    QEMU applies to the running iothread) and read it back (qom-get):
    raises RuntimeError unless QEMU took exactly `ns`."""
    qmp({"execute": "qom-set", "arguments": {"path": "/objects/" + iothread,
                                              "property": "poll-max-ns", "value": int(ns)}})
    got = iothread_poll_get(iothread)
    if got != int(ns):
        raise RuntimeError("iothread %s: poll-max-ns reads %r after qom-set %d" % (iothread, got, ns))
    return got


VIRTIO_BLK_POLL = "/sys/module/virtio_blk/parameters/poll_queues"


def virtio_blk_poll(serials, n):
    """Rebind these disks to virtio_blk with its poll_queues parameter at n
    (read at probe), then put the parameter back. Returns the disks. A
    kernel whose virtio_blk has no such parameter (or a read-only one)
    leaves the disks as they were: the IOPOLL jobs then find no poll
    queue there, and their virtio_blk arms are unavailable."""
    if not os.path.exists(VIRTIO_BLK_POLL):
        raise RuntimeError("no %s: virtio_blk cannot poll on this kernel" % VIRTIO_BLK_POLL)
    old = rd(VIRTIO_BLK_POLL).strip()
    devs = []
    try:
        wr(VIRTIO_BLK_POLL, n)
        for serial in serials:
            dev = disk_by_serial(serial)
            if dev is None:
                raise RuntimeError("no disk with serial %s" % serial)
            pci = pci_of(dev)
            sh("%s/scripts/vblk-bind none %s" % (REPO, pci))
            sh("%s/scripts/vblk-bind virtio-pci %s" % (REPO, pci))
            for _ in range(100):
                dev = disk_by_serial(serial)
                if dev and driver_of(dev) == "virtio_blk":
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError("disk %s did not come back on virtio_blk" % serial)
            devs.append(dev)
    finally:
        wr(VIRTIO_BLK_POLL, old)
    return devs


def do_setup(actions, what="setup"):
    for a in actions:
        kind = a["do"]
        if kind == "bind":
            dev = bind(a["serial"], a["driver"], a.get("params"))
            cfg = rd("/sys/block/%s/vblk/config" % dev).replace("\n", "; ")
            log("setup: %s (serial %s) on %s %s" % (dev, a["serial"], a["driver"], cfg))
        elif kind == "param":
            for k, v in a["params"].items():
                wr(os.path.join(PARAMS, k), v)
        elif kind == "null_blk":
            if not os.path.isdir("/sys/block/nullb0"):
                sh("modprobe null_blk %s" % a.get("args", "queue_mode=2 irqmode=0 nr_devices=1"))
            log("setup: null_blk %s" % rd("/sys/block/nullb0/queue/nr_requests").strip())
        elif kind == "sh":
            log("setup: %s" % sh(a["cmd"]).strip())
        elif kind == "scheduler":
            dev = disk_by_serial(a["serial"])
            path = "/sys/block/%s/queue/scheduler" % dev
            wr(path, a["scheduler"])
            log("setup: %s (serial %s) scheduler %s" % (dev, a["serial"], rd(path).strip()))
        elif kind == "virtio_blk_poll":
            # Not fatal: without poll queues the IOPOLL jobs' virtio_blk
            # arms are left out (start_arm_ptbench), the others run.
            try:
                devs = virtio_blk_poll(a["serials"], a["poll_queues"])
            except Exception as e:
                log("%s: virtio_blk cannot poll here: %s: %s" % (what, type(e).__name__, e))
                devs = []
            for dev in devs:
                log("%s: %s on virtio_blk with poll_queues=%s: queue/io_poll %s, %d hardware queues" % (
                    what, dev, a["poll_queues"], rd("/sys/block/%s/queue/io_poll" % dev).strip(),
                    queue_info(dev)["nr_hw_queues"]))
        elif kind == "iothread_poll":
            got = iothread_poll(a["iothread"], a["poll_max_ns"])
            log("%s: iothread %s poll-max-ns %d (qom-set, read back with qom-get)" % (what, a["iothread"], got))
        else:
            raise RuntimeError("%s: unknown action %r" % (what, kind))


THP = "/sys/kernel/mm/transparent_hugepage/enabled"


def set_memory(mem):
    """THP mode and the hugetlb reserve for the whole boot (plan.py says
    why); returns what the kernel took, for the report."""
    if "thp" in mem and os.path.exists(THP):
        wr(THP, mem["thp"])
    if "hugepages" in mem:
        wr("/proc/sys/vm/nr_hugepages", str(mem["hugepages"]))
    got = {"thp": rd(THP).strip(), "hugepages": int(rd("/proc/sys/vm/nr_hugepages", "0") or 0)}
    log("setup: transparent huge pages %s; %d hugetlb pages reserved" % (got["thp"], got["hugepages"]))
    if got["hugepages"] < mem.get("hugepages", 0):
        log("setup: only %d of %d hugetlb pages: jobs with iomem=shmhuge (64k) may fail" % (
            got["hugepages"], mem["hugepages"]))
    return got


def run_teardown(exp, runs):
    """exp's teardown actions (and "giveback": borrowed disks rebound as
    their owner had them, plan.py PT_SHARED), after its jobs (and after a failed setup,
    which may have got part of the way). A failure is logged and written to
    runs.jsonl as a teardown_error, which the report shows: the experiments
    after it run with whatever the teardown failed to undo."""
    try:
        do_setup(exp.get("teardown", []) + exp.get("giveback", []), what="teardown")
    except Exception as e:
        log("!! experiment %s: teardown failed: %s" % (exp["name"], e))
        runs.write(json.dumps({"exp": exp["name"], "teardown_error": str(e)}) + "\n")
        runs.flush()


def arm_iothread(arm):
    """What the report says of an arm whose disk is on an iothread: its id
    and poll-max-ns as QEMU reads it when the experiment starts."""
    try:
        ns = iothread_poll_get(arm["iothread"])
    except Exception as e:
        ns = "unknown (%s)" % e
    return {"id": arm["iothread"], "poll_max_ns": ns}


def resolve_arm(arm):
    if "serial" in arm:
        return disk_by_serial(arm["serial"])
    return arm["dev"]


REPO = "/work/main"


def main():
    global REPO
    plan_path = sys.argv[1]
    with open(plan_path) as f:
        plan = json.load(f)
    REPO = plan.get("repo", REPO)
    ko = plan["ko"]
    info = {"uname": os.uname().release, "ncpu": os.cpu_count(), "hz": HZ,
            "fio": sh("fio --version", check=False).strip()}
    if any(e.get("client") == "ptbench" for e in plan["experiments"]):
        info["ptbench"] = os.path.join(REPO, PTBENCH)
        if not os.access(info["ptbench"], os.X_OK):
            log("!! no %s (make ptbench): the passthru arms cannot run" % info["ptbench"])
    args = " ".join("%s=%s" % kv for kv in plan.get("insmod", {}).items())
    sh("insmod %s %s" % (ko, args))
    info["vblk_params"] = {p: rd(os.path.join(PARAMS, p)).strip() for p in sorted(os.listdir(PARAMS))}
    info["memory"] = set_memory(plan.get("memory") or {})
    # Plan size for the progress counter.
    total = sum(runs_of(exp, i) for exp in plan["experiments"] for i in range(len(exp["jobs"])))
    n = 0
    with open(os.path.join(OUT, "guest-info.json"), "w") as f:
        json.dump(info, f, indent=1)
    runs = open(os.path.join(OUT, "runs.jsonl"), "a")
    t_all = time.monotonic()
    for exp in plan["experiments"]:
        try:
            do_setup(exp.get("setup", []))
        except Exception as e:  # an experiment that cannot be set up is skipped
            log("experiment %s: setup failed: %s" % (exp["name"], e))
            runs.write(json.dumps({"exp": exp["name"], "setup_error": str(e)}) + "\n")
            runs.flush()
            n += sum(runs_of(exp, i) for i in range(len(exp["jobs"])))
            run_teardown(exp, runs)
            continue  # (the counter may now overshoot the total: only cosmetic)
        arms = exp["arms"]
        devs = {}
        for arm in arms:
            devs[arm["label"]] = resolve_arm(arm)
            dev = devs[arm["label"]]
            if dev:
                cfg = rd("/sys/block/%s/vblk/config" % dev)
                info.setdefault("arms", {})["%s/%s" % (exp["name"], arm["label"])] = {
                    "dev": dev, "driver": driver_of(dev), "config": cfg,
                    "queue": queue_info(dev),
                    "irq": irq_names(dev), "set": arm.get("set", {})}
                want = arm.get("driver")
                if want and driver_of(dev) != want:
                    raise SystemExit("arm %s: /dev/%s is on %s, not %s" % (arm["label"], dev, driver_of(dev), want))
                if arm.get("iothread"):
                    it = arm_iothread(arm)
                    info["arms"]["%s/%s" % (exp["name"], arm["label"])]["iothread"] = it
                    log("%s: %s on iothread %s, poll-max-ns %s" % (exp["name"], arm["label"], it["id"],
                                                                   it["poll_max_ns"]))
        log("== %s: %s" % (exp["name"], ", ".join(
            "%s=%s(%s)" % (a["label"], devs[a["label"]], driver_of(devs[a["label"]]) if devs[a["label"]] else "?")
            for a in arms)))
        missing = [a["label"] for a in arms if not devs[a["label"]]]
        for job in exp["jobs"]:
            if missing:
                log("experiment %s: no disk for %s: skipped" % (exp["name"], ", ".join(missing)))
                runs.write(json.dumps({"exp": exp["name"], "setup_error": "no disk for %s" % missing}) + "\n")
                n += runs_of(exp, exp["jobs"].index(job))
                continue
            try:
                if exp.get("slices", True) or "ptbench" in job:
                    run_job_slices(exp, job, arms, devs, n, total, runs, t_all)
                else:
                    run_job(exp, job, arms, devs, n, total, runs, t_all)
            except Exception as e:
                log("experiment %s job %s failed: %s: %s" % (exp["name"], job["name"], type(e).__name__, e))
                runs.write(json.dumps({"exp": exp["name"], "setup_error": "job %s: %s: %s" % (
                    job["name"], type(e).__name__, e)}) + "\n")
            runs.flush()
            n += runs_of(exp, exp["jobs"].index(job))
        # Restore the defaults of run-time switches.
        for k, v in exp.get("restore", {}).items():
            wr(os.path.join(PARAMS, k), v)
        run_teardown(exp, runs)
    if plan.get("profile"):
        run_profile(plan["profile"], plan, info)
    # --contention: the notify arms under perf (lockprof.jsonl, read by
    # tests/bench/lockprof.py), then the run-time defaults again.
    if plan.get("lockprof"):
        run_profile(plan["lockprof"], plan, info, jsonl="lockprof.jsonl")
        exp = next((e for e in plan["experiments"] if e["name"] == plan["lockprof"]["exp"]), {})
        for k, v in exp.get("restore", {}).items():
            wr(os.path.join(PARAMS, k), v)
    with open(os.path.join(OUT, "guest-info.json"), "w") as f:
        json.dump(info, f, indent=1)
    log("guest: done in %.0f s" % (time.monotonic() - t_all))


if __name__ == "__main__":
    main()
