#!/usr/bin/env python3
"""Unit tests of scripts/bench --contention's python: the plan
(tests/bench/plan.py --mode contention) and the report's 2-sigma band
(tests/bench/report.py band).

    python3 tests/bench/test_contention.py  prints "N passed, N failed";
                                            exit status 1 on any failure
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import report  # noqa: E402
from checks import check, finish, plan  # noqa: E402


def main():
    check("band", report.band(1.2, 0.05) == "1.080-1.320", report.band(1.2, 0.05))
    check("band without sigma", report.band(1.2, None) == "-")
    check("band without ratio", report.band(None, 0.1) == "-")

    p, vm = plan("--mode", "contention")
    names = [e["name"] for e in p["experiments"]]
    check("contention experiments", names == ["notify-rt", "notify-rt-dl", "softirq-rt", "hostpoll-rt"], names)
    check("real time, 4 vCPUs", p["clock"] == "real" and p["cpus"] == 4 and p["icount"] is None, p)
    check("60 rounds", p["reps"] == 60 and all(e["reps"] == 60 for e in p["experiments"]))
    check("no icount option", not any("icount" in a for a in vm), vm)
    check("one-queue disk", "null,size=8G,serial=nr,props=num-queues=1" in vm, vm)
    check("shared-vector disks", sum("num-queues=4,props=vectors=2" in a for a in vm) == 3, vm)
    e = p["experiments"][0]
    check("notify arms", [(a["role"], a["set"]["notify_in_lock"]) for a in e["arms"]]
          == [("base", 1), ("control", 1), ("test", 0)], e["arms"])
    check("notify-rt: scheduler none", e["setup"][1] == {"do": "scheduler", "serial": "nr",
                                                         "scheduler": "none"}, e["setup"])
    check("notify-rt-dl: default scheduler", len(p["experiments"][1]["setup"]) == 1)
    check("notify target", e["targets"] == {"rr4k-qd64-nj4": 1.20})
    check("softirq target", p["experiments"][2]["targets"] == {"*": 1.10})
    check("hostpoll QD1 and doorbell target",
          [j["name"] for j in p["experiments"][3]["jobs"]] == ["rr4k-qd1", "rr4k-qd64-nj1"]
          and abs(p["experiments"][3]["doorbell_target"] - 1 / 6) < 1e-12)
    check("lockprof on the notify arms", p["lockprof"]["exp"] == "notify-rt"
          and p["lockprof"]["arms"] == ["in-lock", "outside"], p.get("lockprof"))
    p2, _ = plan("--mode", "contention", "--only", "softirq-rt", "--reps", "10")
    check("--only without notify: no lockprof", "lockprof" not in p2 and p2["reps"] == 10, p2.get("reps"))
    p3, _ = plan("--mode", "quick")
    check("quick unchanged: 2 vCPUs, icount, no lockprof",
          p3["cpus"] == 2 and p3["clock"] == "icount" and "lockprof" not in p3)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
