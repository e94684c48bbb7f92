#!/usr/bin/env python3
"""Unit tests of the bench's passthru experiments (issue 25): the plan
(plan.py: which disks, arms, jobs, rounds; --only passthru; the profile of
passthru's jobs), the guest's vblk-ptbench command line and I/O count
(guest_bench.py), and the report's passthru rows (report.py: the three
paths' ratios, verdicts, targets, an arm that could not run). Prints one
line per failed check and `N passed, N failed`; exit status 1 on any
failure.

    python3 tests/bench/test_passthru.py       (make unit runs it)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guest_bench  # noqa: E402
import profile_report  # noqa: E402
import report  # noqa: E402
from checks import check, finish, plan  # noqa: E402


def near(a, b, eps=1e-4):
    return a is not None and b is not None and abs(a - b) <= eps


def names(p):
    return [e["name"] for e in p["experiments"]]


def test_plan():
    p, _ = plan("--mode", "quick")
    check("quick: no passthru unless named", names(p) == ["drv"], names(p))
    p, args = plan("--mode", "quick", "--only", "passthru")
    check("--only passthru: both experiments", names(p) == ["passthru", "passthru-poll"], names(p))
    disks = [args[i + 1] for i, a in enumerate(args) if a == "--disk"]
    check("8 disks", len(disks) == 8, disks)
    check("poll disks: 3 queues", sum("num-queues=3" in d for d in disks) == 4, disks)
    irq, poll = p["experiments"]
    check("client ptbench", irq.get("client") == "ptbench" and poll.get("client") == "ptbench")
    check("quick rounds", irq["reps"] == 12 and poll["reps"] == 12, (irq["reps"], poll["reps"]))
    check("slices", irq["slices"] and poll["slices"])
    roles = [(a["label"], a["role"], a.get("path")) for a in irq["arms"]]
    check("arms", roles == [("virtio_blk", "base", None), ("virtio_blk#2", "control", None),
                            ("vblk", "block", None), ("vblk-pt", "test", "char")], roles)
    check("arms on disks of their own", len({a["serial"] for a in irq["arms"] + poll["arms"]}) == 8)
    jobs = [j["name"] for j in irq["jobs"]]
    check("irq jobs", jobs == ["pt-rr4k-qd1", "pt-rr4k-qd64", "pt-rw4k-qd1", "pt-rw4k-qd64"], jobs)
    check("poll jobs", all(j["ptbench"]["iopoll"] and j["name"].endswith("-poll") for j in poll["jobs"])
          and len(poll["jobs"]) == 4)
    pj = irq["jobs"][1]["ptbench"]
    check("qd64 job", pj == {"rw": "randread", "bs": "4k", "qd": 64, "batch": 16, "fixed": True,
                             "regfile": True, "iopoll": False}, pj)
    check("qd1 batch 1", irq["jobs"][0]["ptbench"]["batch"] == 1)
    check("target 1.4 at randread QD64", irq["targets"] == {"pt-rr4k-qd64": 1.40}, irq["targets"])
    check("pt targets", sorted(irq["pt_targets"]) == ["pt-rr4k-qd1", "pt-rr4k-qd64", "pt-rw4k-qd1"])
    check("poll: better than irq", poll["pt_targets"]["pt-rr4k-qd64-poll"][0][3] == "pt-rr4k-qd64")
    check("vblk bound with a poll queue", [a["params"]["poll_queues"] for a in poll["setup"]
                                           if a["do"] == "bind"] == ["1", "1"])
    check("vblk bound without", [a["params"]["poll_queues"] for a in irq["setup"]] == ["0", "0"])
    vp = [a for a in poll["setup"] if a["do"] == "virtio_blk_poll"]
    check("virtio_blk rebound with poll_queues", len(vp) == 1 and vp[0]["serials"] == ["pvap", "pvbp"], vp)
    p, _ = plan("--mode", "quick", "--only", "passthru", "--reps", "5")
    check("--reps wins", [e["reps"] for e in p["experiments"]] == [5, 5])
    p, _ = plan("--mode", "quick", "--only", "passthru-poll")
    check("--only passthru-poll alone", names(p) == ["passthru-poll"], names(p))
    p, args = plan("--mode", "full")
    check("full: passthru last", names(p)[-2:] == ["passthru", "passthru-poll"], names(p))
    check("full rounds", p["experiments"][-1]["reps"] == 20)
    # q35: 30 PCI slots, 9 of them vm-run's own devices (9p, virtio-serial,
    # the watchdog): the disks and the -device options of a plan fit in 21.
    pci = sum(1 for a in args if a == "--disk") + sum(a.count("-device ") for a in args)
    check("full fits q35's PCI slots", pci <= 21, pci)
    irq, poll = p["experiments"][-2:]
    check("full: passthru borrows drv's disks", [a["serial"] for a in irq["arms"]] == ["va", "va2", "bv", "ppt"]
          and [a["serial"] for a in poll["arms"]] == ["va", "va2", "pbkp", "ppt"])
    check("full: bv keeps drv's binding", [a["serial"] for a in irq["setup"]] == ["ppt"], irq["setup"])
    td = poll["giveback"]
    check("full: poll gives drv's disks back", td[0] == {"do": "virtio_blk_poll", "serials": ["va", "va2"], "poll_queues": 0}
          and td[1]["serial"] == "ppt" and td[1]["params"]["poll_queues"] == "0", td)
    p, args = plan("--mode", "full", "--only", "passthru-poll")
    disks = [args[i + 1] for i, a in enumerate(args) if a == "--disk"]
    check("full --only passthru-poll: its disks and drv's", len(disks) == 5 and
          any("serial=ppt" in d for d in disks) and any("serial=va2" in d for d in disks), disks)
    check("full --only passthru-poll: drv without jobs", names(p) == ["drv", "passthru-poll"]
          and p["experiments"][0]["jobs"] == [])
    p, _ = plan("--mode", "full", "--protocol", "groups", "--only", "passthru,drv")
    check("groups: passthru still slices", [e["slices"] for e in p["experiments"]] == [False, True, True])
    p, _ = plan("--mode", "headline")
    check("headline: no passthru unless named", "passthru" not in names(p))


def test_profile_plan():
    p, _ = plan("--mode", "quick", "--only", "passthru", "--profile-jobs", "pt-rr4k-qd64")
    pr = p["profile"]
    check("profile exp", pr["exp"] == "passthru" and pr["arms"] == ["virtio_blk", "vblk", "vblk-pt"], pr)
    check("profile job", [j["name"] for j in pr["jobs"]] == ["pt-rr4k-qd64"] and "ptbench" in pr["jobs"][0])
    check("no drv disks for a passthru profile", "drv" not in names(p), names(p))
    p, _ = plan("--mode", "quick", "--profile-jobs", "pt-rr4k-qd64")
    check("profile without --only brings passthru", names(p) == ["drv", "passthru"], names(p))
    p, r = plan("--mode", "quick", "--profile-jobs", "pt-rr4k-qd64,rr4k-qd1", may_fail=True)
    check("mixed profile refused", p is None and "apart" in r.stderr, r)
    p, r = plan("--mode", "quick", "--profile-jobs", "pt-rr4k-qd64-poll", may_fail=True)
    check("poll profile refused", p is None and "interrupt-driven" in r.stderr, r)
    check("profile: pt against both", profile_report.comparisons(pr, pr["arms"])
          == [("vblk-pt", "virtio_blk"), ("vblk-pt", "vblk")])
    check("profile: QD64 job gets the categories", profile_report.detail_job(pr, "pt-rr4k-qd64", pr["arms"]))
    check("profile: ptbench iodepth", profile_report.job_fio(pr, "pt-rr4k-qd64") == {"iodepth": 64})
    cats = profile_report.categories({"vblk-ptbench;[user]": 1.0,
                                      "vblk-ptbench;entry_SYSCALL_64;__x64_sys_io_uring_enter;x": 2.0,
                                      "vblk-ptbench;entry_SYSCALL_64;__x64_sys_mmap": 4.0})
    check("profile: client categories", cats == {"vblk-ptbench: user space": 1.0,
                                                 "vblk-ptbench: io_uring_enter": 2.0,
                                                 "vblk-ptbench: other kernel": 4.0}, cats)
    p, _ = plan("--mode", "quick", "--profile")
    check("fio profile unchanged", p["profile"]["exp"] == "drv" and p["profile"]["arms"] == ["virtio_blk", "vblk"])


def test_guest():
    job = {"name": "pt-rr4k-qd64", "ptbench": {"rw": "randread", "bs": "4k", "qd": 64, "batch": 16,
                                               "fixed": True, "regfile": True, "iopoll": True}}
    a = guest_bench.ptbench_argv("/r", job, {"path": "char"}, "vblka", 100)
    check("argv char", a == ["/r/tools/vblk-ptbench/vblk-ptbench", "--rw", "randread", "--bs", "4096", "--qd", "64",
                             "--batch", "16", "--runtime", "100", "--fixed", "--regfile", "--iopoll",
                             "/dev/vblkac0"], a)
    a = guest_bench.ptbench_argv("/r", dict(job, ptbench=dict(job["ptbench"], iopoll=False)), {}, "vda", 9)
    check("argv block", a[-1] == "/dev/vda" and "--iopoll" not in a and "--fixed" in a, a)
    check("count", guest_bench.arm_count({"path": "char"}) == "vblk" and guest_bench.arm_count({}) == "disk")
    check("job_bs", guest_bench.job_bs(job) == 4096 and guest_bench.job_bs({"fio": {"bs": "64k"}}) == 65536)
    s0 = {"t": 0.0, "cpu": [0] * 10, "irq": {}, "softirq": {}, "disk": {"ios": 7, "sectors": 8},
          "vblk": {"completions": 100, "requests": 100}}
    s1 = {"t": 2.0, "cpu": [100, 0, 100, 300, 0, 0, 0, 0, 0, 0], "irq": {}, "softirq": {},
          "disk": {"ios": 7, "sectors": 8}, "vblk": {"completions": 2100, "requests": 2100}}
    m = guest_bench.derive("nodisk", s0, s1, "vblk")
    check("derive vblk count", m["win_ios"] == 2000 and near(m["win_iops"], 1000) and m["ios_from"] == "vblk", m)
    check("derive vblk: no kib", m["kib_per_io"] is None)
    m = guest_bench.derive("nodisk", s0, s1)
    check("derive disk count", m["win_ios"] == 0 and "ios_from" not in m, m)
    # IOPOLL on a disk without a poll queue: the arm is unavailable, before any client starts.
    rd, drv = guest_bench.rd, guest_bench.driver_of
    guest_bench.rd = lambda path, default="": "0\n" if path.endswith("queue/io_poll") else default
    guest_bench.driver_of = lambda dev: "virtio_blk"
    try:
        guest_bench.start_arm_ptbench({"name": "e"}, job, {"label": "virtio_blk"}, "vdz", 0, 10)
        check("no poll queue: unavailable", False, "no exception")
    except guest_bench.ArmUnavailable as e:
        check("no poll queue: unavailable", "no poll queue (queue/io_poll 0)" in str(e), e)
    finally:
        guest_bench.rd, guest_bench.driver_of = rd, drv


ARMS = [{"label": "virtio_blk", "role": "base"}, {"label": "virtio_blk#2", "role": "control"},
        {"label": "vblk", "role": "block"}, {"label": "vblk-pt", "role": "test"}]


def cell_runs(exp, job, iops, reps=5):
    runs = []
    for rep in range(reps):
        for lb, v in iops.items():
            runs.append({"id": "%s.%s.r%d.%s" % (exp, job, rep, lb), "exp": exp, "job": job, "arm": lb,
                         "rep": rep, "record": True, "iops": v * (1 + 0.001 * (rep - 2)),
                         "iops_per_busy_cpu_s": v})
    return runs


def test_report():
    ic = "-icount shift=3,align=off,sleep=on"
    exps = [{"name": "passthru", "client": "ptbench", "arms": ARMS,
             "jobs": [{"name": "pt-rr4k-qd64", "ptbench": {}}, {"name": "pt-rr4k-qd1", "ptbench": {}}],
             "pt_targets": {"pt-rr4k-qd64": [["vblk-pt", "virtio_blk", 1.40, None]],
                            "pt-rr4k-qd1": [["vblk-pt", "vblk", None, None]]}},
            {"name": "passthru-poll", "client": "ptbench", "arms": ARMS,
             "jobs": [{"name": "pt-rr4k-qd64-poll", "ptbench": {}}],
             "pt_targets": {"pt-rr4k-qd64-poll": [["vblk-pt", "virtio_blk", 1.40, "pt-rr4k-qd64"]]}},
            {"name": "drv", "arms": ARMS[:2], "jobs": [{"name": "rr4k-qd1", "fio": {}}]}]
    plan_ = {"clock": "icount", "icount": ic, "experiments": exps}
    runs = (cell_runs("passthru", "pt-rr4k-qd64", {"virtio_blk": 10000, "virtio_blk#2": 10050,
                                                   "vblk": 11000, "vblk-pt": 15000})
            + cell_runs("passthru", "pt-rr4k-qd1", {"virtio_blk": 4000, "virtio_blk#2": 4010,
                                                  "vblk": 4100, "vblk-pt": 4105})
            + cell_runs("passthru-poll", "pt-rr4k-qd64-poll", {"virtio_blk#2": 10050, "vblk": 13000,
                                                              "vblk-pt": 17000}))
    raw = runs + [{"exp": "passthru-poll", "job": "pt-rr4k-qd64-poll", "arm": "virtio_blk",
                   "unavailable": "/dev/vde (virtio_blk) has no poll queue"}]
    cells = report.build_cells(plan_, runs)
    rows = report.passthru_rows(plan_, cells, raw)
    check("passthru rows only", [r["job"] for r in rows] == ["pt-rr4k-qd64", "pt-rr4k-qd1", "pt-rr4k-qd64-poll"])
    r = rows[0]
    check("icount_ns", report.icount_ns(plan_) == 8 and report.icount_ns({"clock": "real"}) is None)
    check("medians", r["arms"]["base"]["iops"] == 10000 and r["arms"]["test"]["iops"] == 15000, r["arms"])
    check("instr/IO", near(r["arms"]["test"]["ipio"], 1e9 / 8 / 15000), r["arms"]["test"]["ipio"])
    rat = r["ratios"]
    check("pt/vb", near(rat["vblk-pt/virtio_blk"]["r"], 1.5) and rat["vblk-pt/virtio_blk"]["v"] == "win", rat)
    check("pt/vblk", near(rat["vblk-pt/vblk"]["r"], 15000 / 11000))
    check("vblk/vb", near(rat["vblk/virtio_blk"]["r"], 1.1))
    check("per-round", near(rat["vblk-pt/virtio_blk"]["pr"], 1.5))
    check("A/A", near(r["aa"], 1.005))
    check("target met", r["targets"][0]["status"] == "MET", r["targets"])
    r = rows[1]
    check("QD1 within noise", r["ratios"]["vblk-pt/vblk"]["v"] == "within noise", r["ratios"])
    check("QD1 beats: missed", r["targets"][0]["status"] == "MISSED", r["targets"])
    r = rows[2]
    check("unavailable arm", r["arms"]["base"]["unavailable"] and r["arms"]["base"]["iops"] is None)
    t = r["targets"][0]
    check("unavailable: n/a", t["r"] is None and t["status"].startswith("n/a: /dev/vde"), t)
    check("pt/vblk still measured", near(r["ratios"]["vblk-pt/vblk"]["r"], 17000 / 13000))
    md = "\n".join(report.passthru_section(rows, plan_))
    check("section table", "| passthru | pt-rr4k-qd64 | 10000 | 11000 | 15000 |" in md, md[:600])
    check("section n/a", "not run: /dev/vde" in md and "| n/a |" in md)
    summ = report.passthru_summary(rows)
    check("summary lines", len(summ) == 4 and "1.500" in summ[1], summ)
    check("no passthru, no section", report.passthru_section([], plan_) == [] and report.passthru_summary([]) == [])
    # better than the interrupt-driven cell
    runs2 = runs + cell_runs("passthru-poll", "pt-rr4k-qd64-poll", {"virtio_blk": 10000})
    rows = report.passthru_rows(plan_, report.build_cells(plan_, runs2), runs2)
    t = rows[2]["targets"][0]
    check("poll target: met and better", t["status"] == "MET" and t["better"] == "better"
          and near(t["than"], 1.5), t)
    runs3 = [x for x in runs2 if not (x["exp"] == "passthru-poll" and x["arm"] == "vblk-pt")] + \
        cell_runs("passthru-poll", "pt-rr4k-qd64-poll", {"vblk-pt": 14500})
    rows = report.passthru_rows(plan_, report.build_cells(plan_, runs3), runs3)
    t = rows[2]["targets"][0]
    check("poll target: 1.45 met, not better than 1.5", t["status"] == "MET" and t["better"] == "worse", t)
    check("better-again text", "better again than pt-rr4k-qd64's 1.500: NO (lower)" in report.target_text(t),
          report.target_text(t))
    # an error window invalidates the cell's ratios
    bad = runs + [{"id": "x", "exp": "passthru", "job": "pt-rr4k-qd1", "arm": "vblk-pt", "rep": 9,
                   "record": True, "error": "no I/O completed in the window"}]
    rows = report.passthru_rows(plan_, report.build_cells(plan_, bad), bad)
    check("INVALID", rows[1]["ratios"]["vblk-pt/vblk"]["v"] == "INVALID" and
          rows[1]["ratios"]["vblk-pt/vblk"]["r"] is None and rows[1]["targets"][0]["status"].startswith("n/a"),
          rows[1])
    check("job_opts ptbench", report.job_opts({"ptbench": {"rw": "randread", "bs": "4k", "qd": 64, "batch": 16,
                                                           "fixed": True, "iopoll": True}})
          == "vblk-ptbench --rw randread --bs 4k --qd 64 --batch 16 --fixed --iopoll")
    check("job_opts fio", report.job_opts({"fio": {"rw": "randread", "iodepth": 1}}) == "fio rw=randread iodepth=1")


if __name__ == "__main__":
    test_plan()
    test_profile_plan()
    test_guest()
    test_report()
    sys.exit(finish())
