#!/usr/bin/env python3
"""Unit tests of scripts/bench --pin-vcpus: the host sampler's placement of
QEMU's threads (tests/bench/host_sampler.py: parse_cpulist, placement,
pin_threads on a fake /proc), the plan's record of it (plan.py --pin-vcpus),
the report's placement line (report.pinning_text), and the opt-in
shallow-queue notify experiment (notify-rt-qd8).

    python3 tests/bench/test_pin.py   prints "N passed, N failed";
                                      exit status 1 on any failure
"""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import host_sampler as H  # noqa: E402
import report  # noqa: E402
from checks import check, finish, plan  # noqa: E402


def raises(f, *a):
    try:
        f(*a)
    except ValueError:
        return True
    return False


def fake_proc(d, pid, threads):
    """d/<pid>/task/<tid>/comm for each (tid, comm)."""
    for tid, comm in threads:
        p = os.path.join(d, str(pid), "task", str(tid))
        os.makedirs(p, exist_ok=True)
        with open(os.path.join(p, "comm"), "w") as f:
            f.write(comm + "\n")


def rename(d, pid, tid, comm):
    with open(os.path.join(d, str(pid), "task", str(tid), "comm"), "w") as f:
        f.write(comm + "\n")


class Aff:
    """sched_setaffinity / sched_getaffinity on a dict; tids in `gone` have exited."""

    def __init__(self, gone=()):
        self.cpus, self.calls, self.gone = {}, [], set(gone)

    def set(self, tid, cpus):
        if tid in self.gone:
            raise ProcessLookupError(tid)
        self.calls.append((tid, sorted(cpus)))
        self.cpus[tid] = set(cpus)

    def get(self, tid):
        return self.cpus[tid]


def test_cpulist():
    check("cpulist one", H.parse_cpulist("0") == [0])
    check("cpulist list and range", H.parse_cpulist("3,0-1, 1") == [0, 1, 3], H.parse_cpulist("3,0-1, 1"))
    for bad in ("", "a", "1-", "2-1", "0,,1", "-1"):
        check("cpulist rejects %r" % bad, raises(H.parse_cpulist, bad))


def test_placement():
    p = H.placement(None, {1, 0})
    check("default: vCPUs over all CPUs, rest free",
          p == {"requested": None, "vcpu_cpus": [0, 1], "other_cpus": None}, p)
    p = H.placement("0", {0, 1})
    check("--pin-vcpus 0: rest on 1", p == {"requested": "0", "vcpu_cpus": [0], "other_cpus": [1]}, p)
    p = H.placement("0-1", {0, 1})
    check("all CPUs for the vCPUs: rest free", p["other_cpus"] is None and p["vcpu_cpus"] == [0, 1], p)
    p = H.placement("1", {0, 1, 2, 3})
    check("rest on every other CPU", p["other_cpus"] == [0, 2, 3], p)
    check("CPU the host lacks", raises(H.placement, "2", {0, 1}))
    check("vcpu_index", [H.vcpu_index(c) for c in ("CPU 0/TCG", "CPU 13/KVM", "ALL CPUs/TCG",
                                                   "qemu-system-x86", "IO rio0")]
          == [0, 13, None, None, None])
    pl = H.placement("0,1", {0, 1, 2})
    check("vCPU n on the n-th of the list, mod its length",
          [H.target_cpus("CPU %d/TCG" % n, pl) for n in range(4)] == [[0], [1], [0], [1]])
    check("others on the rest", H.target_cpus("IO rio0", pl) == [2])
    check("default leaves others alone", H.target_cpus("worker", H.placement(None, {0, 1})) is None)


def test_pin_threads():
    with tempfile.TemporaryDirectory() as d:
        pid = 100
        # 104 was just created by the main loop and has not named itself yet
        fake_proc(d, pid, [(100, "qemu-system-x86"), (101, "call_rcu"), (102, "IO mon_iothread"),
                           (103, "CPU 0/TCG"), (104, "qemu-system-x86"), (105, "worker"),
                           (107, "worker"), (108, "worker")])
        place = H.placement("0", {0, 1})
        aff, done = Aff(gone={105}), {}
        changed = H.pin_threads(pid, place, done, aff.set, aff.get, proc=d)
        check("pinned something", changed)
        check("vCPU on 0, others on 1",
              {t: v["cpus"] for t, v in done.items()} == {100: [1], 101: [1], 102: [1], 103: [0], 104: [1], 107: [1], 108: [1]},
              done)
        check("an exited thread is skipped", 105 not in done)
        n = len(aff.calls)
        check("nothing new: no calls", not H.pin_threads(pid, place, done, aff.set, aff.get, proc=d)
              and len(aff.calls) == n)
        rename(d, pid, 104, "CPU 1/TCG")
        fake_proc(d, pid, [(106, "CPU 2/TCG")])
        check("renamed and new threads", H.pin_threads(pid, place, done, aff.set, aff.get, proc=d))
        check("renamed thread re-pinned as a vCPU", done[104] == {"comm": "CPU 1/TCG", "cpus": [0]}, done[104])
        check("only the changed threads", sorted(aff.calls[n:]) == [(104, [0]), (106, [0])], aff.calls[n:])
        # the default leaves everything but the vCPUs alone
        aff2, done2 = Aff(), {}
        H.pin_threads(pid, H.placement(None, {0, 1}), done2, aff2.set, aff2.get, proc=d)
        check("default: vCPU n on CPU n mod 2",
              {t: v["cpus"] for t, v in done2.items()} == {103: [0], 104: [1], 106: [0]}, done2)
        check("missing process", not H.pin_threads(999, place, {}, aff.set, aff.get, proc=d))
        rec = H.pinned_record(place, done)
        check("record", rec["requested"] == "0" and rec["vcpu_cpus"] == [0] and rec["other_cpus"] == [1]
              and rec["threads"]["103"] == {"comm": "CPU 0/TCG", "cpus": [0]}, rec)
    return rec


def pinning(obj):
    with tempfile.TemporaryDirectory() as d:
        if obj is not None:
            with open(os.path.join(d, "pinned.json"), "w") as f:
                json.dump(obj, f)
        return report.pinning_text(d)


def test_report(rec):
    t = pinning(rec)
    check("report: vCPUs and request", t.startswith("QEMU's vCPU threads pinned to host CPUs 0, 0, 0 "
                                                   "(--pin-vcpus 0)"), t)
    check("report: others", "its other threads (5 seen: IO mon_iothread, call_rcu, qemu-system-x86, worker x2) "
          "to host CPU 1" in t, t)
    check("report: all where asked", "NOT" not in t, t)
    bad = json.loads(json.dumps(rec))
    bad["threads"]["102"]["cpus"] = [0, 1]
    t = pinning(bad)
    check("report: a thread not where asked", t.endswith("; NOT where asked: IO mon_iothread on 0,1"), t)
    dflt = {"requested": None, "vcpu_cpus": [0, 1], "other_cpus": None,
            "threads": {"7": {"comm": "CPU 1/TCG", "cpus": [1]}, "6": {"comm": "CPU 0/TCG", "cpus": [0]}}}
    t = pinning(dflt)
    check("report: default", t == "QEMU's vCPU threads pinned to host CPUs 0, 1, its other threads free", t)
    t = pinning({"11": 0, "12": 1, "13": 0})
    check("report: old pinned.json", t == "QEMU's vCPU threads pinned to host CPUs 0, 0, 1, its other "
          "threads free", t)
    check("report: none", pinning(None) == "QEMU's vCPU threads not pinned")


def test_plan():
    cpus = sorted(os.sched_getaffinity(0))
    first = str(cpus[0])
    p, _ = plan("--mode", "contention", "--pin-vcpus", first)
    check("plan records the pin", p["pin"] == {"requested": first, "vcpu_cpus": [cpus[0]],
                                               "other_cpus": cpus[1:] or None}, p["pin"])
    p, _ = plan("--mode", "contention")
    check("plan: default pin", p["pin"]["requested"] is None and p["pin"]["other_cpus"] is None, p["pin"])
    names = [e["name"] for e in p["experiments"]]
    check("qd8 variant opt-in only", "notify-rt-qd8" not in names and
          [j["name"] for j in p["lockprof"]["jobs"]] == ["rr4k-qd64-nj4"], names)
    p, r = plan("--mode", "contention", "--pin-vcpus", str(max(cpus) + 1), may_fail=True)
    check("plan: a CPU the host lacks is refused", p is None and "--pin-vcpus" in r.stderr, r)
    p, vm = plan("--mode", "contention", "--only", "notify-rt,notify-rt-qd8,softirq-rt")
    names = [e["name"] for e in p["experiments"]]
    check("qd8 when named", names == ["notify-rt", "notify-rt-qd8", "softirq-rt"], names)
    e = p["experiments"][1]
    check("qd8: its own one-queue disk, scheduler none, QD8 x 4",
          "null,size=8G,serial=nr8,props=num-queues=1" in vm
          and e["setup"][1] == {"do": "scheduler", "serial": "nr8", "scheduler": "none"}
          and [(j["name"], j["fio"]["iodepth"], j["fio"]["numjobs"]) for j in e["jobs"]]
          == [("rr4k-qd8-nj4", 8, 4)] and e["targets"] == {"rr4k-qd8-nj4": 1.20}
          and "opt_in" not in e, e)
    check("qd8 under perf on notify-rt's disk", p["lockprof"]["exp"] == "notify-rt" and
          [j["name"] for j in p["lockprof"]["jobs"]] == ["rr4k-qd64-nj4", "rr4k-qd8-nj4"], p["lockprof"])
    p, _ = plan("--mode", "contention", "--only", "notify-rt-qd8")
    check("qd8 alone under perf on its own disk", p["lockprof"]["exp"] == "notify-rt-qd8" and
          [j["name"] for j in p["lockprof"]["jobs"]] == ["rr4k-qd8-nj4"], p.get("lockprof"))


def main():
    test_cpulist()
    test_placement()
    rec = test_pin_threads()
    test_report(rec)
    test_plan()
    return finish()


if __name__ == "__main__":
    sys.exit(main())
