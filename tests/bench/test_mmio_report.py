#!/usr/bin/env python3
"""Unit tests of the transport cells' report (tests/bench/mmio_report.py):
a guest log made up here, read back as tables.

    python3 tests/bench/test_mmio_report.py  prints "N passed, N failed";
                                             exit status 1 on any failure
"""
import contextlib
import io
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mmio_report as M  # noqa: E402
from checks import check, finish  # noqa: E402


def log(lines):
    d = tempfile.mkdtemp(prefix="mmio-report-")
    with open(os.path.join(d, "guest.log"), "w") as f:
        f.write("\r\n".join(lines) + "\r\n")
    return d


def report(d, label):
    with contextlib.redirect_stdout(io.StringIO()):
        return M.report(d, label)


def rounds(exp, base, control, test, n=5):
    out = []
    for r in range(1, n + 1):
        out += ["run %s base %d %d 100 50" % (exp, r, base),
                "run %s control %d %d - -" % (exp, r, control),
                "run %s test %d %d 100 20" % (exp, r, test)]
    return out


def main():
    d = log(["info kernel 6.12 x86_64", "info notify_arms base=1 control=1 test=0"]
            + rounds("drv", 1000, 1005, 1200) + rounds("notify", 1000, 999, 1000)
            + ["doorbell mm-vblk vblk mmio vblk_notify 2000 12.50 11.0", "ok - doorbell: mm-vblk"])
    rc = report(d, "made up")
    s = json.load(open(os.path.join(d, "summary.json")))
    cells = {c["exp"]: c for c in s["cells"]}
    check("report written", rc == 0 and os.path.exists(os.path.join(d, "report.md")))
    check("drv ratio", abs(cells["drv"]["ratio"] - 1.2) < 1e-9, cells["drv"])
    check("drv A/A", abs(cells["drv"]["aa"] - 1.005) < 1e-9, cells["drv"])
    check("drv wins", cells["drv"]["verdict"] == "win", cells["drv"])
    check("doorbells per I/O", abs(cells["drv"]["test_doorbells_per_io"] - 0.2) < 1e-9, cells["drv"])
    check("notify same", cells["notify"]["verdict"] == "same", cells["notify"])
    check("doorbell row", s["doorbells"] == [{"serial": "mm-vblk", "driver": "vblk", "transport": "mmio",
                                              "func": "vblk_notify", "calls": 2000, "mean_us": 12.5,
                                              "p50_us": 11.0}], s["doorbells"])
    # The first guest script's notify arms were the other way round.
    d = log(rounds("notify", 1300, 1290, 1000))
    report(d, "old order")
    c = json.load(open(os.path.join(d, "summary.json")))["cells"][0]
    check("old notify order swapped", abs(c["ratio"] - 1.3) < 1e-9 and c["base_iops"] == 1000, c)
    check("old notify A/A against test", abs(c["aa"] - 1290 / 1300) < 1e-9, c)
    # A failed step shows; a log with nothing measured is an error.
    d = log(["FAIL - no disk mm-vblk"])
    check("nothing measured fails", report(d, "empty") == 1)
    check("failed step listed", "no disk mm-vblk" in open(os.path.join(d, "report.md")).read())
    finish()


if __name__ == "__main__":
    main()
