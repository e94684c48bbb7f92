#!/usr/bin/env python3
"""Unit tests of tests/bench/lockprof.py (bench --contention's perf table).

    python3 tests/bench/test_lockprof.py    prints "N passed, N failed";
                                            exit status 1 on any failure
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lockprof as L  # noqa: E402
import profile_report as P  # noqa: E402
from checks import check, finish  # noqa: E402


SCRIPT = """\
fio   232 [000]    10.000100:    1000000 
\tffffffffad1a7b80 native_queued_spin_lock_slowpath ([kernel.kallsyms])
\tffffffffad1a7b82 _raw_spin_lock ([kernel.kallsyms])
\tffffffffad1a7b84 vblk_queue_rq ([vblk])
\t    7f0c84cc102d [unknown] (/usr/bin/fio)

fio   233 [001]    10.000200:    1000000 
\tffffffffad1a7b90 iowrite16 ([kernel.kallsyms])
\tffffffffad1a7b92 vblk_notify ([vblk])
\tffffffffad1a7b84 vblk_queue_rq ([vblk])

swapper       0 [002]    10.000300:    1000000 
\tffffffffad1b8d0f pv_native_safe_halt ([kernel.kallsyms])
\tffffffffad1bb229 default_idle ([kernel.kallsyms])
\tffffffffac3ea41d do_idle ([kernel.kallsyms])

fio   235 [002]    10.000350:    1000000 
\tffffffffad1a7bb0 _raw_spin_unlock_irqrestore ([kernel.kallsyms])
\tffffffffad1a7bb2 vblk_submit_batch ([vblk])
\tffffffffad1a7bb4 vblk_queue_rqs ([vblk])

fio   236 [002]    10.000360:    1000000 
\tffffffffad1a7bb0 _raw_spin_unlock_irqrestore ([kernel.kallsyms])
\tffffffffad1a7bb2 aio_complete_rw ([kernel.kallsyms])

fio   234 [003]    10.000400:    1000000 
\tffffffffad1a7ba0 io_submit ([kernel.kallsyms])
\t    7f0c84cc102d [unknown] (/usr/bin/fio)

fio   234 [003]    12.000400:    1000000 
\tffffffffad1a7ba0 native_queued_spin_lock_slowpath ([kernel.kallsyms])

"""


def main():
    samples = P.parse_perf_script(SCRIPT.splitlines(True))
    check("parsed", len(samples) == 7, len(samples))
    win = P.in_window(samples, 10.0, 11.0)
    n = L.classify(win)
    check("busy excludes idle and the out-of-window sample", n["busy"] == 5, n)
    check("spin leaf", n["spin"] == 1, n)
    check("doorbell inclusive", n["doorbell"] == 1, n)
    check("submit inclusive", n["submit"] == 3, n)
    check("irq-off only from vblk's submission", n["irqoff"] == 1, n)
    rec = {"arm": "in-lock", "job": "j", "win_ios": 100, "win_iops": 50.0, "period_ns": 1000000,
           "vblk": {"doorbells": 4, "requests": 100}}
    r = L.arm_row(rec, n)
    check("busy us/IO", abs(r["busy_us_per_io"] - 50.0) < 1e-9, r)
    check("spin us/IO", abs(r["spin_us_per_io"] - 10.0) < 1e-9, r)
    check("spin share", abs(r["spin_share"] - 1 / 5) < 1e-9, r)
    check("irq-off us/IO and per doorbell", abs(r["irqoff_us_per_io"] - 10.0) < 1e-9
          and abs(r["irqoff_us_per_doorbell"] - 250.0) < 1e-9, r)
    check("us per doorbell", abs(r["us_per_doorbell"] - 250.0) < 1e-9, r)
    check("doorbells/IO", abs(r["doorbells_per_io"] - 0.04) < 1e-9, r)
    r0 = L.arm_row(dict(rec, win_ios=0, vblk={}), n)
    check("no I/O: no rates", r0["busy_us_per_io"] is None and r0["us_per_doorbell"] is None, r0)
    t = L.table([r, r0])
    check("table rows", len(t.splitlines()) == 4 and "20.0%" in t, t)
    # main() end to end on a results directory
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "profile"))
        with open(os.path.join(d, "profile", "j.in-lock.perf.txt"), "w") as f:
            f.write(SCRIPT)
        rec.update({"file": "j.in-lock.perf.txt", "t0": 10.0, "t1": 11.0})
        with open(os.path.join(d, "lockprof.jsonl"), "w") as f:
            f.write(json.dumps(rec) + "\n" + json.dumps({"arm": "x", "job": "j", "error": "boom"}) + "\n")
        sys.argv = ["lockprof.py", d]
        stdout = sys.stdout
        sys.stdout = open(os.devnull, "w")
        try:
            L.main()
        finally:
            sys.stdout.close()
            sys.stdout = stdout
        rows = json.load(open(os.path.join(d, "lockprof.json")))
        check("main: one row (error skipped)", len(rows) == 1 and rows[0]["arm"] == "in-lock", rows)
        check("main: md written", "spin us/IO" in open(os.path.join(d, "lockprof.md")).read())
    return finish()


if __name__ == "__main__":
    sys.exit(main())
