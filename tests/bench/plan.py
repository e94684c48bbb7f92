#!/usr/bin/env python3
"""vblk benchmark: the plan (which disks, which experiments, which fio jobs).

    plan.py --mode quick|headline|full|contention [--protocol slices|groups]
            [--clock real|icount] [--reps N] [--window S] [--pin-vcpus CPUS]
            [--only EXP,...] OUT

Writes OUT/plan.json (read by the guest, tests/bench/guest_bench.py, and by
the report) and prints the scripts/vm-run disk and QEMU options, one argument
per line, for scripts/bench.

Every experiment compares a test arm against a base arm, with a control arm
that is configured exactly like the base (the A/A control): the spread
between base and control is the noise floor that the report puts next to the
test/base ratio. Arms run interleaved in rotating order, after a warm-up.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_sampler  # noqa: E402

# fio jobs, scaled to the 2 vCPUs of the lab guest (the report states it).
JOBS = {
    "rr4k-qd64-nj1": {"rw": "randread", "bs": "4k", "ioengine": "libaio", "iodepth": 64, "numjobs": 1},
    "rr4k-qd64-nj2": {"rw": "randread", "bs": "4k", "ioengine": "libaio", "iodepth": 64, "numjobs": 2},
    "rr4k-qd64-nj4": {"rw": "randread", "bs": "4k", "ioengine": "libaio", "iodepth": 64, "numjobs": 4},
    # fio's buffers in hugetlb pages: every 64k request is one physical
    # segment, in every arm and every boot (MEMORY below says why).
    "rr64k-uring-qd32-nj4": {"rw": "randread", "bs": "64k", "ioengine": "io_uring", "iodepth": 32,
                             "numjobs": 4, "iomem": "shmhuge"},
    "rw4k-qd64-nj2": {"rw": "randwrite", "bs": "4k", "ioengine": "libaio", "iodepth": 64, "numjobs": 2},
    "rw4k-qd64-nj1": {"rw": "randwrite", "bs": "4k", "ioengine": "libaio", "iodepth": 64, "numjobs": 1},
    "rr4k-qd1": {"rw": "randread", "bs": "4k", "ioengine": "libaio", "iodepth": 1, "numjobs": 1},
    "rr4k-qd32-nj4": {"rw": "randread", "bs": "4k", "ioengine": "libaio", "iodepth": 32, "numjobs": 4},
    "rr4k-qd8-nj4": {"rw": "randread", "bs": "4k", "ioengine": "libaio", "iodepth": 8, "numjobs": 4},
    "rr4k-uring-qd32-nj1": {"rw": "randread", "bs": "4k", "ioengine": "io_uring", "iodepth": 32, "numjobs": 1},
    "rr4k-uring-qd1": {"rw": "randread", "bs": "4k", "ioengine": "io_uring", "iodepth": 1, "numjobs": 1},
}

JOB_TEXT = {
    "rr4k-qd64-nj1": "seed 000's job, numjobs 1",
    "rr4k-qd64-nj2": "seed 000's job, numjobs 2 (= vCPUs)",
    "rr4k-qd64-nj4": "seed 000's job, numjobs 4; stands for seed 002's numjobs=8 (more jobs than vCPUs, 2x)",
    "rr64k-uring-qd32-nj4": "seed 002's 64k io_uring job, numjobs 4 (2 per vCPU); fio's buffers in "
                            "2 MiB hugetlb pages (1 segment per I/O)",
    "rw4k-qd64-nj2": "4k randwrite",
    "rw4k-qd64-nj1": "4k randwrite, numjobs 1",
    "rr4k-qd1": "QD1 latency",
    "rr4k-qd32-nj4": "seed 004's job (iodepth 32, numjobs 32 on 32 vCPUs), scaled to 4 jobs on 2 vCPUs",
    "rr4k-uring-qd32-nj1": "io_uring, QD32, 1 job",
    "rr4k-qd8-nj4": "4 jobs at QD8: a shallower queue, more doorbells per request than at QD64",
    "rr4k-uring-qd1": "io_uring QD1",
}

# vblk-ptbench jobs (tools/vblk-ptbench, the passthru experiments): one
# client process, pinned to vCPU 0, driving a block device (O_DIRECT,
# READ_FIXED / WRITE_FIXED) or vblk's char device (uring_cmd) with the same
# settings: registered file, registered buffers, the same batch (submit
# and reap batch I/Os at a time; at QD1 one), and with "iopoll"
# IORING_SETUP_IOPOLL (the disks' poll queues).
PT_BATCH = 16
PT_JOBS = {}
for _rw, _short in (("randread", "rr"), ("randwrite", "rw")):
    for _qd in (1, 64):
        for _poll in (False, True):
            PT_JOBS["pt-%s4k-qd%d%s" % (_short, _qd, "-poll" if _poll else "")] = {
                "rw": _rw, "bs": "4k", "qd": _qd, "batch": min(PT_BATCH, _qd), "fixed": True,
                "regfile": True, "iopoll": _poll}


def pt_job(name):
    p = PT_JOBS[name]
    return {"name": name, "ptbench": dict(p),
            "text": "vblk-ptbench 4k %s QD%d%s, %s" % (
                p["rw"], p["qd"], " batch %d" % p["batch"] if p["batch"] > 1 else "",
                "IOPOLL" if p["iopoll"] else "interrupt-driven")}


# The guest's memory for fio's buffers. The physical layout of a buffer
# sets the number of segments of a 64k request (1 to 16), and that sets its
# cost in both drivers by up to a third. In 4k pages the layout is what the
# page allocator handed out when the fio started: in one boot (2026-12-03,
# THP off) the two virtio_blk arms differed by 6.3 % for the whole job
# (5.47k and 5.82k IOPS in every slice). With transparent huge pages on
# (Debian's default) khugepaged also turns a running fio's buffers into
# huge pages at a moment of its own (vblk 7.3k -> 9.5k IOPS as AnonHugePages
# went 2 -> 6 MiB). So THP is off for the whole boot (nothing changes under
# a running job) and the 64k job asks for hugetlb pages from the reserve
# below (3 arms x 4 jobs x 4 MiB at most): A/A 0.4-0.7 % in two boots.
MEMORY = {"thp": "never", "hugepages": 64}

NULL = "null,size=8G"
# sleep=on: while every vCPU is idle (a QD1 job waiting for its request)
# the guest's clock follows the host's; with sleep=off it jumped to the
# next timer deadline, so QD1 counted the guest's timers (540-860 IOPS,
# A/A 5.5 %) rather than the wait for the device (~4k IOPS, A/A 0.8 %).
# Jobs that keep the vCPUs busy are not affected.
ICOUNT = "-icount shift=3,align=off,sleep=on"
FILE = "size=8G,cache=none,aio=native"


def job(name, extra=None):
    j = {"name": name, "fio": dict(JOBS[name]), "text": JOB_TEXT.get(name, "")}
    j["fio"].update(extra or {})
    return j


def vblk_bind(serial, **params):
    return {"do": "bind", "serial": serial, "driver": "vblk",
            "params": {k: str(v) for k, v in params.items()}}


# Defaults of the bind-time parameters, set before each bind so that one
# experiment's settings never leak into the next one's disks.
DEFAULTS = {"num_queues": 0, "poll_queues": 0, "complete": "auto", "irq_mode": "auto",
            "queue_depth": 0, "indirect": 1, "event_idx": 1, "poll_budget": 64}


# Run-time switches, as vblk loads (experiments that flip them restore these).
DEFAULTS_RUNTIME = {"notify_in_lock": 0, "irq_coalesce": 0}


def bind_with(serial, **over):
    p = dict(DEFAULTS)
    p.update(over)
    return vblk_bind(serial, **p)


# The headline cells: what a kernel matrix (scripts/bench --kernel A,B,C,
# tests/bench/matrix.py) puts in its one table, and all that --headline
# measures: drv's 4k randread QD64 at numjobs 1 and 2, randwrite, QD1.
HEADLINE = [("drv", "rr4k-qd64-nj1"), ("drv", "rr4k-qd64-nj2"),
            ("drv", "rw4k-qd64-nj2"), ("drv", "rr4k-qd1")]

# --profile: after the experiments, each of drv's base and test arms
# (virtio_blk, vblk) runs these jobs alone for `seconds` under
# `perf record -a -g -e cpu-clock -c period_ns` (tests/bench/profile.py
# turns the samples into instructions per I/O per function). A sample every
# 1 ms of a CPU's clock is every 125k guest instructions under icount:
# ~1000 samples per busy second, and perf's own work per sample (the
# interrupt, the stack walk) stays a few per cent of the guest's time.
# irq_trace: also the irq_handler_entry/exit tracepoints, which time the
# hard interrupt handlers that the cpu-clock samples cannot see.
PROFILE = {"exp": "drv", "arms": ["virtio_blk", "vblk"], "jobs": ["rr4k-qd64-nj1", "rw4k-qd64-nj1"],
           "seconds": 8.0, "warm": 1.5, "period_ns": 1000000, "irq_trace": True}

# --profile-jobs A,B (scripts/bench): profile these jobs instead of
# PROFILE's, each with drv's virtio_blk and vblk. A job that the ceiling
# experiment runs (rr4k-qd64-nj2), when ceiling is in the plan, also gets
# the ceiling's null_blk arm (queue_mode=2 irqmode=0: no device, no
# interrupt), so that the report can say what vblk pays that null_blk does
# not. Such a job lists its arms itself, "EXP:LABEL" for another
# experiment's arm; the others take the profile's.
PROFILE_EXTRA_ARMS = {"ceiling": ["null_blk"]}


# --profile-jobs with passthru jobs (PT_JOBS): each of passthru's three
# paths (virtio_blk, vblk's block path, vblk's passthrough, the last the
# test) runs the job alone under perf; the report compares the
# passthrough with each of the other two.
PT_PROFILE = {"exp": "passthru", "arms": ["virtio_blk", "vblk", "vblk-pt"]}


def profile_spec(exps, jobs=None):
    """The plan's "profile": PROFILE with its jobs (fio job dicts), or
    with `jobs` (names) instead, and the arms of PROFILE_EXTRA_ARMS'
    experiments added to the jobs those experiments run."""
    prof = dict(PROFILE)
    prof["jobs"] = [job(j) for j in (jobs or PROFILE["jobs"])]
    if jobs is None:
        return prof
    for e in exps:
        extra = PROFILE_EXTRA_ARMS.get(e["name"], [])
        ejobs = {j["name"] for j in e["jobs"]}
        for j in prof["jobs"]:
            if extra and j["name"] in ejobs:
                j["arms"] = list(j.get("arms", prof["arms"])) + ["%s:%s" % (e["name"], a) for a in extra]
    return prof


# --contention: one boot in real time (multi-threaded TCG, one host thread
# per vCPU) with 4 vCPUs, where the seeds' techniques have something to win:
# under icount the vCPUs take turns in one host thread, nobody ever waits
# for a lock or a vector, and notify and softirq read 1.00. Four jobs share
# one virtqueue (QEMU num-queues=1: seed 000) or four queues share one
# vector (vectors=2: the config vector and one for all queues, seed 004).
# One real-time slice varies ~15 %: 60 rounds put the ratio's 2 sigma near
# 2 x sqrt(2) x 1.25 x 15 % / sqrt(60) = 7 % and the A/A spread under 5 %.
CONTENTION = {"cpus": 4, "reps": 60}

# --contention's perf phase: each notify arm alone under `perf record -a -g
# -e cpu-clock` (real time: a sample is 1 ms of a vCPU's clock), for the
# time spent spinning on the queue lock (native_queued_spin_lock_slowpath)
# and ringing the doorbell (vp_notify / iowrite16), per I/O.
LOCKPROF = {"exp": "notify-rt", "arms": ["in-lock", "outside"], "jobs": ["rr4k-qd64-nj4"],
            "seconds": 6.0, "warm": 1.5, "period_ns": 1000000, "irq_trace": False}


# The polling iothread starts with poll-max-ns=0 and polls only while its
# experiment runs: guest_bench.py's "iothread_poll" action sets it through
# QMP (qom-set on /objects/ID, read back with qom-get) in the experiment's
# setup and sets it back to 0 in its teardown. A poller left on for the
# whole boot took about one host core (of 2) through the other
# experiments, and under icount with sleep=on a QD1 job's idle time follows
# the host's clock: drv's QD1 cell of --full read 1.01-1.07 against 1.14
# in a --headline boot, which has no poller.
HOSTPOLL_NS = 1000000


def iothread_poll(iothread, ns):
    """Setup / teardown action: iothread ID's poll-max-ns (QMP qom-set)."""
    return {"do": "iothread_poll", "iothread": iothread, "poll_max_ns": int(ns)}


def hostpoll_setup_arms(base, control, test):
    """hostpoll A/B: (serial, iothread) of the base, control and test disks,
    each a null-co disk on an iothread of its own started with
    poll-max-ns=0 (the disks, the QEMU objects, setup, teardown, arms); the
    test's iothread polls (HOSTPOLL_NS) from setup to teardown."""
    labels = [("no poll", "base"), ("no poll#2", "control"), ("host poll", "test")]
    disks = (base, control, test)
    return {"disks": ["%s,serial=%s,props=iothread=%s" % (NULL, s, t) for s, t in disks],
            "qemu": ["-object iothread,id=%s,poll-max-ns=0" % t for _, t in disks],
            "setup": [bind_with(s) for s, _ in disks] + [iothread_poll(test[1], HOSTPOLL_NS)],
            "teardown": [iothread_poll(test[1], 0)],
            "arms": [{"label": lb, "serial": s, "iothread": t, "role": role}
                     for (lb, role), (s, t) in zip(labels, disks)]}


def notify_arms(serial):
    """notify_in_lock A/B on one disk: inside the lock (base, control), outside (test)."""
    return [{"label": "in-lock", "serial": serial, "set": {"notify_in_lock": 1}, "role": "base"},
            {"label": "in-lock#2", "serial": serial, "set": {"notify_in_lock": 1}, "role": "control"},
            {"label": "outside", "serial": serial, "set": {"notify_in_lock": 0}, "role": "test"}]


def softirq_setup_arms(h, h2, s):
    """complete= A/B: disks h and h2 bound hardirq (base, control), s softirq (test)."""
    return {"setup": [bind_with(h, complete="hardirq"), bind_with(h2, complete="hardirq"),
                      bind_with(s, complete="softirq")],
            "arms": [{"label": "hardirq", "serial": h, "role": "base"},
                     {"label": "hardirq#2", "serial": h2, "role": "control"},
                     {"label": "softirq", "serial": s, "role": "test"}]}


# Issue 25: the passthrough path against the block paths, all driven by
# vblk-ptbench with the same settings (PT_JOBS). Four disks per
# experiment, each arm on its own: virtio_blk twice (base and the A/A
# control), vblk's block path (/dev/<disk>, role "block") and vblk's
# passthrough (/dev/<disk>c0, "path": "char", the test). passthru-poll
# runs the IOPOLL jobs on disks with a poll queue: vblk bound with
# poll_queues=1 (QEMU num-queues=3: two interrupt-driven queues and one
# polled, as pollq), virtio_blk rebound with its module parameter
# poll_queues=1 (it caps its queues at the vCPUs: one interrupt-driven,
# one polled). Every arm on its own disk, so that no arm's poll reaps
# another's completions. Under icount every arm of a cell waits for the
# device the same way (all sleep or all spin), so icount compares them.
# `--only passthru` names both experiments (ONLY_GROUPS).
PT_TARGETS = {
    # (numerator, denominator, minimum ratio of IOPS, or None: a win;
    #  the job of passthru whose same ratio this cell must exceed)
    "pt-rr4k-qd64": [["vblk-pt", "virtio_blk", 1.40, None]],
    "pt-rr4k-qd1": [["vblk-pt", "vblk", None, None]],
    "pt-rw4k-qd1": [["vblk-pt", "vblk", None, None]],
    "pt-rr4k-qd64-poll": [["vblk-pt", "virtio_blk", 1.40, "pt-rr4k-qd64"]],
    "pt-rr4k-qd1-poll": [["vblk-pt", "vblk", None, "pt-rr4k-qd1"]],
    "pt-rw4k-qd1-poll": [["vblk-pt", "vblk", None, "pt-rw4k-qd1"]],
}
PT_QUICK_REPS = 12
ONLY_GROUPS = {"passthru": ["passthru", "passthru-poll"]}


def passthru_arms(va, va2, vb, vp):
    return [{"label": "virtio_blk", "serial": va, "driver": "virtio_blk", "role": "base"},
            {"label": "virtio_blk#2", "serial": va2, "driver": "virtio_blk", "role": "control"},
            {"label": "vblk", "serial": vb, "driver": "vblk", "role": "block"},
            {"label": "vblk-pt", "serial": vp, "driver": "vblk", "path": "char", "role": "test"}]


# q35 has 30 PCI slots for devices, and vm-run's guest takes 9 of them
# (9p, virtio-serial, the watchdog): --full's other experiments leave 2.
# So in --full (shared=True) passthru borrows drv's disks: its virtio_blk
# arms are drv's va and va2 (passthru-poll rebinds them with a poll queue
# and its "giveback" actions rebind them without, as drv had them, for
# --profile),
# its interrupt-driven vblk block arm is drv's bv, and two disks of its
# own (num-queues=3) carry the passthrough (both experiments; rebound
# with a poll queue for passthru-poll, without again after it) and
# passthru-poll's vblk block arm. Alone (--only passthru in --quick or
# --headline) every arm has a disk of its own, 8 in all.
PT_SHARED = {"irq": ("va", "va2", "bv", "ppt"), "poll": ("va", "va2", "pbkp", "ppt"), "own": ("ppt", "pbkp")}


def passthru_experiments(opt_in=False, shared=False):
    E = []
    for poll in (False, True):
        sfx = "p" if poll else ""
        va, va2, vb, vp = ("pva" + sfx, "pvb" + sfx, "pbk" + sfx, "ppt" + sfx)
        props = ",props=num-queues=3" if poll else ""
        disks = ["%s,serial=%s%s" % (NULL, s, props) for s in (va, va2, vb, vp)]
        if shared:
            va, va2, vb, vp = PT_SHARED["poll" if poll else "irq"]
            # in both (either may run alone); plan main() declares a disk once
            disks = ["%s,serial=%s,props=num-queues=3" % (NULL, s) for s in PT_SHARED["own"]]
        jobs = [j for j in PT_JOBS if PT_JOBS[j]["iopoll"] == poll]
        setup = [bind_with(vb, poll_queues=1 if poll else 0), bind_with(vp, poll_queues=1 if poll else 0)]
        if shared and not poll:
            setup = [bind_with(vp)]  # bv: drv's, bound with the defaults
        giveback = []
        if poll:
            setup.insert(0, {"do": "virtio_blk_poll", "serials": [va, va2], "poll_queues": 1})
            if shared:
                giveback = [{"do": "virtio_blk_poll", "serials": [va, va2], "poll_queues": 0}, bind_with(vp)]
        e = {
            "name": "passthru-poll" if poll else "passthru",
            "title": "issue 25: vblk passthrough (/dev/<disk>c0, uring_cmd) vs the block paths of virtio_blk "
                     "and vblk, one client (vblk-ptbench: registered file and buffers, batch %d)%s"
                     % (PT_BATCH, ", IOPOLL on poll queues" if poll else ", interrupt-driven"),
            "client": "ptbench",
            "disks": disks,
            "setup": setup,
            # actions after its jobs that give borrowed disks back bound as
            # their owner had them (guest_bench.py run_teardown runs them
            # after any teardown)
            "giveback": giveback,
            "arms": passthru_arms(va, va2, vb, vp),
            "jobs": [pt_job(j) for j in jobs],
            "targets": {j: t[0][2] for j, t in PT_TARGETS.items() if j in jobs and t[0][1] == "virtio_blk"},
            "pt_targets": {j: t for j, t in PT_TARGETS.items() if j in jobs},
            "quick_reps": PT_QUICK_REPS,
        }
        if opt_in:
            e["opt_in"] = True
        E.append(e)
    return E


def contention_experiments():
    E = []
    # A one-queue disk gets mq-deadline (the kernel's default for a single
    # hardware queue), and blk-mq then lets one CPU at a time dispatch from
    # the scheduler into the driver: the queue lock has one taker, and the
    # submitters wait on the scheduler's lock instead (perf, 2026-12-06:
    # 9 % of busy time in the spin lock slow path, all of it under
    # dd_bio_merge / dd_dispatch_request, none under vblk's lock). Seed
    # 000's blk-mq of 2014 had no scheduler: notify-rt runs with "none",
    # where every submitting vCPU calls vblk_queue_rq itself, and
    # notify-rt-dl keeps mq-deadline to show the difference.
    def notify_exp(name, serial, sched):
        setup = [bind_with(serial, num_queues=1)]
        if sched:
            setup.append({"do": "scheduler", "serial": serial, "scheduler": sched})
        return {
            "name": name,
            "title": "seed 000 in real time: doorbell outside (notify_in_lock=0) vs inside (=1) the lock, "
                     "4 jobs on 4 vCPUs sharing one virtqueue (QEMU num-queues=1), scheduler %s"
                     % (sched or "mq-deadline (default)"),
            "disks": ["%s,serial=%s,props=num-queues=1" % (NULL, serial)],
            "setup": setup,
            "arms": notify_arms(serial),
            "restore": {"notify_in_lock": DEFAULTS_RUNTIME["notify_in_lock"]},
            "jobs": [job("rr4k-qd64-nj4")],
            "targets": {"rr4k-qd64-nj4": 1.20},
        }
    E.append(notify_exp("notify-rt", "nr", "none"))
    E.append(notify_exp("notify-rt-dl", "nrd", None))
    # The same on a shallower queue: at QD64 vblk rang for 3-4 % of the
    # requests (2026-12-06), so the in-lock doorbell had few chances to
    # cost; at QD8 per job more submissions find the device idle and ring.
    # Opt-in (only with --only notify-rt-qd8): not part of --contention.
    qd8 = notify_exp("notify-rt-qd8", "nr8", "none")
    qd8["title"] = qd8["title"].replace("4 jobs on 4 vCPUs", "4 jobs at QD8 on 4 vCPUs")
    qd8["jobs"] = [job("rr4k-qd8-nj4")]
    qd8["targets"] = {"rr4k-qd8-nj4": 1.20}
    qd8["opt_in"] = True
    E.append(qd8)
    E.append({
        "name": "softirq-rt",
        "title": "seed 004 in real time: complete=softirq vs hardirq, 4 queues on one vector "
                 "(num-queues=4, vectors=2), 4 jobs on 4 vCPUs",
        "disks": ["%s,serial=%s,props=num-queues=4,props=vectors=2" % (NULL, s)
                  for s in ("r1h", "r1h2", "r1s")],
        **softirq_setup_arms("r1h", "r1h2", "r1s"),
        "jobs": [job("rr4k-qd32-nj4")],
        "targets": {"*": 1.10},
    })
    # hostpoll in real time: the doorbells it saves and what that does to
    # QD1 latency (the p50 / p99 columns of the report's tables).
    E.append({
        "name": "hostpoll-rt",
        "title": "seed 003 in real time: host polling (poll-max-ns=1000000) vs none (poll-max-ns=0)",
        **hostpoll_setup_arms(("rp0", "rio0"), ("rp0b", "rio0b"), ("rp1", "rio1")),
        "jobs": [job("rr4k-qd1"), job("rr4k-qd64-nj1")],
        "targets": {},
        "doorbell_target": 1 / 6,
    })
    return E


def experiments(mode):
    """Experiments in run order. Each: disks it needs (vm-run specs), QEMU
    options, setup actions (and teardown actions, run after its jobs), arms
    (base, control, test), jobs, targets."""
    if mode == "contention":
        return contention_experiments()
    quick = mode in ("quick", "headline")
    E = []

    drv_jobs = ["rr4k-qd64-nj1", "rr4k-qd64-nj2"]
    if mode == "headline":
        drv_jobs = [j for e, j in HEADLINE if e == "drv"]
    elif not quick:
        drv_jobs += ["rr4k-qd64-nj4", "rr64k-uring-qd32-nj4", "rw4k-qd64-nj2", "rr4k-qd1"]
    E.append({
        "name": "drv",
        "title": "vblk vs virtio_blk (null-co backend)",
        "disks": ["%s,serial=va" % NULL, "%s,serial=va2" % NULL, "%s,serial=bv" % NULL],
        "setup": [bind_with("bv")],
        "arms": [{"label": "virtio_blk", "serial": "va", "role": "base"},
                 {"label": "virtio_blk#2", "serial": "va2", "role": "control"},
                 {"label": "vblk", "serial": "bv", "role": "test"}],
        "jobs": [job(j) for j in drv_jobs],
        "targets": {"rr4k-qd64-nj1": 1.10, "rr4k-qd64-nj2": 1.10, "*": 1.00},
        "cpu_target": 1.15,
    })
    if quick:
        # passthru only when named (--only passthru): not part of the
        # quick and headline budgets.
        return E + passthru_experiments(opt_in=True)

    E.append({
        "name": "drv-file",
        "title": "vblk vs virtio_blk (raw file, cache=none, aio=native)",
        "disks": ["%s,serial=fa" % FILE, "%s,serial=fa2" % FILE, "%s,serial=fb" % FILE],
        "setup": [bind_with("fb")],
        "arms": [{"label": "virtio_blk", "serial": "fa", "role": "base"},
                 {"label": "virtio_blk#2", "serial": "fa2", "role": "control"},
                 {"label": "vblk", "serial": "fb", "role": "test"}],
        "jobs": [job("rr4k-qd64-nj2")],
        "targets": {"*": 1.00},
    })
    # Seed 000 had one virtqueue shared by all CPUs: the doorbell held the
    # queue lock against the other submitters. With one queue per vCPU
    # (vblk's default here) nobody else wants that lock, so the experiment
    # runs on a disk bound with num_queues=1, where both vCPUs share it.
    E.append({
        "name": "notify",
        "title": "seed 000: doorbell outside (notify_in_lock=0) vs inside (=1) the queue lock, one queue",
        "disks": ["%s,serial=nq" % NULL],
        "setup": [bind_with("nq", num_queues=1)],
        "arms": notify_arms("nq"),
        "restore": {"notify_in_lock": DEFAULTS_RUNTIME["notify_in_lock"]},
        "jobs": [job("rr4k-qd64-nj1"), job("rr4k-qd64-nj2"), job("rr4k-qd64-nj4")],
        "targets": {"rr4k-qd64-nj2": 1.20},
    })
    # Interrupt moderation through the event index: the re-arm asks for the
    # interrupt once a share of the requests in flight came back, not at the
    # first one (what virtio_blk does). Switched between runs on one disk.
    E.append({
        "name": "coalesce",
        "title": "interrupt moderation: irq_coalesce=75 (interrupt after 3/4 of the requests in flight) "
                 "vs 0 (at the first completion)",
        "disks": [],
        "setup": [],
        "arms": [{"label": "first", "serial": "bv", "set": {"irq_coalesce": 0}, "role": "base"},
                 {"label": "first#2", "serial": "bv", "set": {"irq_coalesce": 0}, "role": "control"},
                 {"label": "3/4", "serial": "bv", "set": {"irq_coalesce": 75}, "role": "test"}],
        "restore": {"irq_coalesce": DEFAULTS_RUNTIME["irq_coalesce"]},
        "jobs": [job("rr4k-qd64-nj1"), job("rr4k-qd64-nj2")],
        "targets": {},
    })
    E.append({
        "name": "softirq",
        "title": "seed 004: one interrupt vector (vectors=2), complete=softirq vs hardirq",
        "disks": ["%s,serial=v1h,props=num-queues=2,props=vectors=2" % NULL,
                  "%s,serial=v1h2,props=num-queues=2,props=vectors=2" % NULL,
                  "%s,serial=v1s,props=num-queues=2,props=vectors=2" % NULL],
        **softirq_setup_arms("v1h", "v1h2", "v1s"),
        "jobs": [job("rr4k-qd32-nj4")],
        "targets": {"*": 1.10},
    })
    E.append({
        "name": "queues",
        "title": "seed 002: 1 vs 2 virtqueues (vblk num_queues=1 vs 0 = one per vCPU)",
        "disks": ["%s,serial=q1,props=num-queues=2" % NULL, "%s,serial=q1b,props=num-queues=2" % NULL,
                  "%s,serial=q2,props=num-queues=2" % NULL],
        "setup": [bind_with("q1", num_queues=1), bind_with("q1b", num_queues=1),
                  bind_with("q2", num_queues=0)],
        "arms": [{"label": "1 queue", "serial": "q1", "role": "base"},
                 {"label": "1 queue#2", "serial": "q1b", "role": "control"},
                 {"label": "2 queues", "serial": "q2", "role": "test"}],
        "jobs": [job("rr4k-qd64-nj4")],
        "targets": {},
    })
    # QEMU >= 9: iothread-vq-mapping spreads a disk's virtqueues over
    # iothreads. It is a list property: only the JSON form of -device takes
    # it; the single quotes survive vm-run and reach virtme-ng's shell intact.
    def mq_disk(serial, iothreads):
        dev = {"driver": "virtio-blk-pci", "drive": "blk-" + serial, "serial": serial,
               "num-queues": 2, "iothread-vq-mapping": [{"iothread": t} for t in iothreads]}
        return ("-blockdev driver=null-co,node-name=blk-%s,size=8589934592,read-zeroes=on "
                "-device '%s'" % (serial, json.dumps(dev, separators=(",", ":"))))
    E.append({
        "name": "iothreads",
        "title": "seed 002: a 2-queue disk on 1 iothread vs its queues spread over 2 (iothread-vq-mapping)",
        "disks": [],
        "qemu": ["-object iothread,id=mt0 -object iothread,id=mt0b -object iothread,id=mt1 "
                 "-object iothread,id=mt2",
                 mq_disk("it1", ["mt0"]), mq_disk("it1b", ["mt0b"]), mq_disk("it2", ["mt1", "mt2"])],
        "setup": [bind_with("it1"), bind_with("it1b"), bind_with("it2")],
        "arms": [{"label": "1 iothread", "serial": "it1", "role": "base"},
                 {"label": "1 iothread#2", "serial": "it1b", "role": "control"},
                 {"label": "2 iothreads", "serial": "it2", "role": "test"}],
        "jobs": [job("rr4k-qd64-nj4")],
        "targets": {},
    })
    # QEMU's default adaptive window (poll-max-ns=32768) is shorter than the
    # gap between two requests of a guest under TCG (tens of microseconds
    # and more), so the iothread gives up polling before the next request
    # comes and the guest keeps ringing (bench of 2026-12-02: 0.80 -> 0.76
    # doorbells/IO). A 1 ms window stands for a host that polls for as long
    # as its guest needs, which is what seed 003 measured.
    E.append({
        "name": "hostpoll",
        "title": "seed 003: host polling (iothread poll-max-ns=1000000, scaled to TCG) vs none (poll-max-ns=0)",
        **hostpoll_setup_arms(("hp0", "io0"), ("hp0b", "io0b"), ("hp1", "io1")),
        "jobs": [job("rr4k-qd64-nj1"), job("rr4k-qd64-nj2")],
        "targets": {},
        "doorbell_target": 1 / 6,
    })
    # Its arms wait for the device in different ways: hipri spins, the
    # others sleep. Under icount a spinning vCPU's clock runs at 8 ns per
    # instruction and a sleeping one's at the host's (sleep=on), or jumps
    # to the next timer (sleep=off), so neither compares the two: the same
    # boot of 2026-12-03 gave hipri/irq 0.68 with sleep=on and 3.59 with
    # sleep=off. It runs in a second boot in real time (clock "real"), with
    # more rounds: one QD1 slice varies by 15-40 % there (38 % in the
    # make bench of 2026-12-03).
    E.append({
        "name": "pollq",
        "clock": "real",
        "real_reps": 60,
        "title": "poll queues (poll_queues=1, io_uring hipri) vs interrupts (io_uring, no hipri)",
        "disks": ["%s,serial=pq,props=num-queues=3" % NULL],
        "setup": [bind_with("pq", poll_queues=1)],
        "arms": [{"label": "irq", "serial": "pq", "fio": {"hipri": 0}, "role": "base"},
                 {"label": "irq#2", "serial": "pq", "fio": {"hipri": 0}, "role": "control"},
                 {"label": "hipri", "serial": "pq", "fio": {"hipri": 1}, "role": "test"}],
        "jobs": [job("rr4k-uring-qd1")],
        "targets": {},
    })
    E.append({
        "name": "ceiling",
        "title": "guest-side ceiling: vblk as a fraction of null_blk (no device at all)",
        "disks": [],
        "setup": [{"do": "null_blk", "args": "queue_mode=2 irqmode=0 nr_devices=1 gb=8 submit_queues=2"}],
        "arms": [{"label": "null_blk", "dev": "nullb0", "role": "base"},
                 {"label": "null_blk#2", "dev": "nullb0", "role": "control"},
                 {"label": "vblk", "serial": "bv", "role": "test"}],
        "jobs": [job("rr4k-qd64-nj2")],
        "targets": {},
    })
    E += passthru_experiments(shared=True)
    return E


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["quick", "headline", "full", "contention"], default="quick")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--window", type=float)
    ap.add_argument("--ramp", type=float, default=0.5)
    ap.add_argument("--protocol", choices=["slices", "groups"], default="slices")
    ap.add_argument("--clock", choices=["real", "icount"], default="icount")
    ap.add_argument("--only", default="")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--profile-jobs", default="", help="profile these jobs (comma-separated; implies --profile)")
    ap.add_argument("--profile-no-irq", action="store_true",
                    help="profile without the irq_handler_entry/exit tracepoints (their cost is left out)")
    ap.add_argument("--ko", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--kernel", default="6.12")
    ap.add_argument("--pin-vcpus", metavar="CPUS")
    ap.add_argument("out")
    a = ap.parse_args()
    pjobs = [j for j in a.profile_jobs.split(",") if j]
    for j in pjobs:
        if j not in JOBS and j not in PT_JOBS:
            ap.error("--profile-jobs: no job %s (jobs: %s)" % (j, " ".join(list(JOBS) + list(PT_JOBS))))
    pt_prof = [j for j in pjobs if j in PT_JOBS]
    if pt_prof and len(pt_prof) != len(pjobs):
        ap.error("--profile-jobs: passthru jobs (%s) and fio jobs in one profile: run them apart"
                 % ",".join(pt_prof))
    if [j for j in pt_prof if PT_JOBS[j]["iopoll"]]:
        ap.error("--profile-jobs: the profile runs passthru's interrupt-driven jobs only")
    a.profile = a.profile or bool(pjobs)
    # Where the host sampler puts QEMU's threads (host_sampler.placement):
    # checked here, before the boot, and recorded for the report.
    try:
        pin = host_sampler.placement(a.pin_vcpus, os.sched_getaffinity(0))
    except ValueError as e:
        ap.error("--pin-vcpus: %s" % e)
    # slices (default): every arm's fio runs for the whole job, stopped while
    # the other arms take their turn; rounds of short slices, each arm
    # measured within a second of the others, so that the slow swings of
    # the lab host's speed (~10 s: runs of 3 s one after the other were
    # correlated 0.48 at lag 1 on 2026-12-03) hit every arm alike.
    # groups (the older protocol): one fio group per run, 0.5 s ramp, runs
    # of window + 0.9 s; its start-up costs ~1.2 s per run.
    slices = a.protocol == "slices"
    if a.mode == "contention":
        a.clock = "real"
        a.reps = a.reps or CONTENTION["reps"]
    # icount slices vary ~1 % instead of ~15 %: in two full boots
    # (2026-12-03) the A/A spread was under 3 % in 37 of 38 cells (8.3 % in
    # one 64k io_uring cell), and 30 / 20 rounds fit the 8 / 30 min budgets.
    if slices:
        quick_reps, full_reps = (30, 20) if a.clock == "icount" else (40, 26)
        # headline: four jobs in CI-sized time (a few minutes per kernel).
        reps = a.reps or {"quick": quick_reps, "headline": quick_reps // 2}.get(a.mode, full_reps)
        window = a.window or 0.6
    else:
        reps = a.reps or (7 if a.mode == "full" else 16)
        window = a.window or 1.5
    exps = experiments(a.mode)
    if a.only:
        keep = [x for k in a.only.split(",") for x in ONLY_GROUPS.get(k, [k])]
        # --profile-jobs with passthru jobs profiles passthru's arms.
        if pt_prof and "passthru" not in keep:
            keep.append("passthru")
        # The quick and headline modes have drv only: say so rather than
        # drop an experiment without a word (ceiling needs --full).
        for k in keep:
            if k not in {e["name"] for e in exps}:
                print("plan.py: note: --only %s: no such experiment in --mode %s (%s)" % (
                    k, a.mode, " ".join(e["name"] for e in exps)), file=sys.stderr)
        # "ceiling" and "coalesce" use drv's vblk disk, --profile drv's
        # disks: keep drv's disks and setup (not its jobs).
        # So does passthru in --full (PT_SHARED).
        borrow = {"ceiling", "coalesce"} | ({"passthru", "passthru-poll"} if a.mode == "full" else set())
        if ((borrow & set(keep)) or (a.profile and not pt_prof)) and "drv" not in keep:
            for e in exps:
                if e["name"] == "drv":
                    e["jobs"] = []
            keep.append("drv")
        exps = [e for e in exps if e["name"] in keep]
    else:
        exps = [e for e in exps if not e.get("opt_in") or (pt_prof and e["name"] == "passthru")]
    for e in exps:
        e.pop("opt_in", None)
    # Experiments that only real time measures go to a second boot
    # (scripts/bench starts it), unless they were asked for by name.
    real_boot = []
    if a.clock == "icount" and not a.only:
        real_boot = [e["name"] for e in exps if e.get("clock") == "real"]
        exps = [e for e in exps if e.get("clock") != "real"]
    if pt_prof and "passthru" not in [e["name"] for e in exps]:
        ap.error("--profile-jobs %s: no passthru experiment in the plan (--only passthru or --full)"
                 % ",".join(pt_prof))
    for e in exps:
        qr = e.pop("quick_reps", None)
        if qr and a.mode in ("quick", "headline") and not a.reps:
            e["reps"] = qr
        rr = e.pop("real_reps", None)
        if rr and a.clock == "real" and not a.reps and slices:
            e["reps"] = rr
    # Thread names (CPU n/TCG, IO <id>) let the host sampler split QEMU's time.
    disks, qemu = [], ["-name virtme-ng,debug-threads=on"]
    # icount: the guest's clock advances 8 ns per guest instruction, whatever
    # the host's speed (which swings 15-20 % from one half second to the
    # next on the lab hosts); vCPUs then run one at a time in one thread.
    if a.clock == "icount":
        qemu.append(ICOUNT)
    for e in exps:
        # vblk-ptbench runs as slices only (guest_bench.py has no groups
        # protocol for it: the client has no job groups).
        if e.get("client") == "ptbench":
            e["slices"] = True
        e.setdefault("slices", slices)
        e.setdefault("settle", 0.1)
        e.setdefault("reps", reps)
        e.setdefault("warmup", 1)
        # quick: every job gets a warm-up round; full: only an experiment's first.
        e.setdefault("warmup_next", 1 if a.mode == "quick" else 0)
        e.setdefault("window", window)
        e.setdefault("ramp", a.ramp)
        e.setdefault("warm_window", 1.0)
        disks += [d for d in e.pop("disks", []) if d not in disks]
        qemu += e.pop("qemu", [])
    # The report's noise arithmetic takes one number of rounds: the
    # experiments' own when they all agree (a real-time pollq boot: 60).
    if len({e["reps"] for e in exps}) == 1:
        reps = exps[0]["reps"]
    plan = {"mode": a.mode, "kernel": a.kernel, "ko": a.ko, "repo": a.repo,
            "insmod": {"disk_prefix": "vblk"}, "experiments": exps,
            "reps": reps, "window": window, "ramp": a.ramp, "protocol": a.protocol,
            "clock": a.clock, "icount": ICOUNT if a.clock == "icount" else None,
            "memory": MEMORY, "real_boot": real_boot,
            "settle": 0.1, "cpus": CONTENTION["cpus"] if a.mode == "contention" else 2,
            "pin": pin}
    names = [e["name"] for e in exps]
    if a.mode == "contention" and ("notify-rt" in names or "notify-rt-qd8" in names):
        lp = dict(LOCKPROF)
        # with the shallow-queue variant, its job under perf too (on
        # notify-rt's disk and arms, or its own when notify-rt is left out)
        jobs = list(LOCKPROF["jobs"]) if "notify-rt" in names else []
        if "notify-rt-qd8" in names:
            jobs.append("rr4k-qd8-nj4")
            if "notify-rt" not in names:
                lp["exp"] = "notify-rt-qd8"
        lp["jobs"] = [job(j) for j in jobs]
        plan["lockprof"] = lp
    if a.profile:
        if pt_prof:
            plan["profile"] = dict(PROFILE, **PT_PROFILE)
            plan["profile"]["jobs"] = [pt_job(j) for j in pt_prof]
        else:
            plan["profile"] = profile_spec(exps, pjobs or None)
        if a.profile_no_irq:
            plan["profile"]["irq_trace"] = False
    with open(os.path.join(a.out, "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)
    for d in disks:
        print("--disk")
        print(d)
    for q in qemu:
        print("--qemu-opt")
        print(q)


if __name__ == "__main__":
    main()
