#!/usr/bin/env python3
"""Unit tests of the bench report's arithmetic (report.py) and of the table
across kernels (matrix.py) on small inputs computed by hand: ratio, A/A
spread, 2 sigma, per-round ratios, verdict, target, and the cells and runs
that must not get a verdict (an error window; kernel log problems).
Prints one line per failed check and `N passed, N failed`; exit status 1
on any failure.

    python3 tests/bench/test_report.py       (make unit runs it)
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import matrix  # noqa: E402
import report  # noqa: E402
from checks import check, finish  # noqa: E402


def near(a, b, eps=1e-4):
    return a is not None and b is not None and abs(a - b) <= eps


def test_ratio():
    check("ratio 3/2", report.ratio(3.0, 2.0) == 1.5, report.ratio(3.0, 2.0))
    check("ratio 150/100", report.ratio(150, 100) == 1.5)
    check("ratio 90/120", near(report.ratio(90, 120), 0.75))
    check("ratio /0", report.ratio(1, 0) is None)
    check("ratio None", report.ratio(None, 2) is None and report.ratio(2, None) is None)


def test_noise():
    # |A/A - 1|, at least the 2 % floor, at least 2 sigma.
    check("noise A/A 1.03", near(report.noise_of(1.03), 0.03))
    check("noise A/A 0.96", near(report.noise_of(0.96), 0.04))
    check("noise floor", near(report.noise_of(1.01), 0.02))
    check("noise no A/A", near(report.noise_of(None), 0.02))
    check("noise 2 sigma", near(report.noise_of(1.01, 0.02), 0.04))
    check("noise A/A over 2 sigma", near(report.noise_of(1.10, 0.02), 0.10))
    # 1.4826 * MAD / median: [1, 2, 3] -> MAD 1, median 2.
    check("rel_noise", near(report.rel_noise([1, 2, 3]), 0.7413))
    check("rel_noise [90, 100, 110]", near(report.rel_noise([90, 100, 110]), 0.14826))
    check("rel_noise < 3 runs", report.rel_noise([1, 2]) is None)
    # 1.2533 * rel_noise / sqrt(n)
    check("rel_se", near(report.rel_se([1, 2, 3]), 1.2533 * 0.7413 / math.sqrt(3)))
    check("reps_for 5 %", report.reps_for(0.05) == 13, report.reps_for(0.05))


def test_verdict():
    v = report.verdict
    check("verdict win", v(1.10, 1.03, True) == "win", v(1.10, 1.03, True))
    check("verdict loss", v(0.90, 1.03, True) == "loss", v(0.90, 1.03, True))
    check("verdict inside A/A", v(1.025, 1.03, True) == "within noise")
    check("verdict at the A/A edge", v(1.03, 1.03, True) == "within noise")
    check("verdict inside the floor", v(1.015, 1.0, True) == "within noise")
    check("verdict inside 2 sigma", v(1.10, 1.0, True, 0.06) == "within noise")
    check("verdict outside 2 sigma", v(1.13, 1.0, True, 0.06) == "win")
    check("verdict lower is better", v(0.90, 1.03, False) == "win" and v(1.10, 1.03, False) == "loss")
    check("verdict no A/A", v(1.5, None, True) == "no A/A control")
    check("verdict no ratio", v(None, 1.0, True) == "-")
    check("verdict unranked metric", v(1.5, 1.0, None) == "")
    c = report.combined
    check("combined agree", c(1.2, 1.0, 1.2, 1.0, True) == "win")
    check("combined disagree", c(1.2, 1.0, 1.01, 1.0, True) == "within noise*")
    check("combined no per-round", c(1.2, 1.0, None, None, True) == "win")


def test_target():
    t = report.target_status
    check("target met", t(1.15, 1.01, 1.10) == "MET", t(1.15, 1.01, 1.10))
    check("target missed", t(1.05, 1.01, 1.10) == "MISSED")
    check("target met inside the noise", t(1.015, 1.0, 1.01) == "met, but inside the noise")
    check("target lower is better", t(0.80, 1.0, 0.90, higher=False) == "MET"
          and t(0.95, 1.0, 0.90, higher=False) == "MISSED")
    check("target none", t(1.5, 1.0, None) == "" and t(None, 1.0, 1.1) == "")
    t2 = report.target_status2
    check("target2 both", t2(1.15, 1.01, 1.16, 1.0, 1.10) == "MET")
    check("target2 per-round misses", t2(1.15, 1.01, 1.05, 1.0, 1.10)
          == "met by the medians, not by the per-round ratios")


# base [100, 110, 90], test [150, 160, 140], control [102, 98, 100]:
# medians 100, 150, 100 -> ratio 1.5, A/A 1.0; per-round test/base 1.5,
# 1.4545, 1.5556 -> 1.5; control/base 1.02, 0.8909, 1.1111 -> 1.02.
# 2 sigma: rel_se(base) = 1.2533 * 0.14826 / sqrt(3) = 0.10728,
# rel_se(test) = 1.2533 * (1.4826 * 10 / 150) / sqrt(3) = 0.071522,
# sigma = sqrt(0.10728^2 + 0.071522^2) = 0.12894.
BASE, TEST, CTL = [100, 110, 90], [150, 160, 140], [102, 98, 100]


def exp(target=1.2):
    return {"name": "e", "arms": [{"label": "virtio_blk", "role": "base"}, {"label": "vblk", "role": "test"},
                                  {"label": "virtio_blk2", "role": "control"}],
            "jobs": [{"name": "j", "fio": {}}], "targets": {"*": target}}


def runs(errors=()):
    rr = []
    for arm, vals in (("virtio_blk", BASE), ("vblk", TEST), ("virtio_blk2", CTL)):
        for rep, v in enumerate(vals):
            rr.append({"id": "%s-%d" % (arm, rep), "exp": "e", "job": "j", "arm": arm, "rep": rep,
                       "record": True, "iops": v})
    for arm, rep in errors:
        rr.append({"id": "%s-err%d" % (arm, rep), "exp": "e", "job": "j", "arm": arm, "rep": rep,
                   "record": True, "error": "no I/O completed in the window"})
    return rr


def test_cell():
    c = report.Cell(exp(), {"name": "j", "fio": {}}, runs())
    r, aa = c.ratios("iops")
    check("cell ratio", near(r, 1.5), r)
    check("cell A/A", near(aa, 1.0), aa)
    check("cell 2 sigma", near(c.sigma("iops"), 0.12894), c.sigma("iops"))
    pr = c.round_ratios("iops", "test")
    check("cell per-round", [round(x, 4) for x in pr] == [1.5, 1.4545, 1.5556], pr)
    pt, pa = report.paired(c, "iops")
    check("cell paired", near(pt, 1.5) and near(pa, 1.02), (pt, pa))
    row = report.summary_rows([c])[0]
    check("row verdict", row["v"] == "win", row["v"])
    check("row target", row["ts"] == "MET", row["ts"])
    check("row n", row["n"] == 3, row["n"])
    check("row errors", row["errors"] == 0 and not row.get("invalid"), row)
    # A target above the ratio is missed; inside 2 sigma there is no verdict.
    row = report.summary_rows([report.Cell(exp(1.6), {"name": "j", "fio": {}}, runs())])[0]
    check("row target missed", row["ts"] == "MISSED", row["ts"])


def test_error_window():
    # vblk stalled in two windows: the other three still say 1.5, "win".
    for errs in ([("vblk", 3)], [("vblk", 3), ("vblk", 4)], [("virtio_blk", 5)]):
        c = report.Cell(exp(), {"name": "j", "fio": {}}, runs(errs))
        check("error cell counts %d" % len(errs), c.nerr == len(errs), c.nerr)
        row = report.summary_rows([c])[0]
        check("error cell no verdict %r" % errs, row["v"] == "INVALID", row["v"])
        check("error cell target missed %r" % errs, row["ts"] == "MISSED", row["ts"])
        check("error cell no ratio %r" % errs, row["r"] is None and row["pr"] is None, (row["r"], row["pr"]))
        check("error cell says why %r" % errs, row.get("invalid") == "%d error window%s" % (
            len(errs), "" if len(errs) == 1 else "s"), row.get("invalid"))
        report.PLAN[:] = [{}]
        txt = report.terminal_summary({}, [row], [c])
        check("summary names the invalid cell", "INVALID cells" in txt and "e/j" in txt, txt[-300:])


def summ(rows, rc="0"):
    return {"kernel": "k", "git": "g", "mode": "quick", "started": "s", "clock": "wall", "guest_rc": rc,
            "rows": rows}


def test_matrix():
    good = report.summary_rows([report.Cell(exp(), {"name": "j", "fio": {}}, runs())])[0]
    bad = report.summary_rows([report.Cell(exp(), {"name": "j", "fio": {}}, runs([("vblk", 3)]))])[0]
    m = matrix.merge([("6.12", summ([good])), ("7.3", summ([bad]))])
    text = matrix.markdown(m)
    check("matrix good cell", "1.50 (0.0%) win" in text, text)
    check("matrix invalid cell", "INVALID (1 error window)" in text, text)
    check("matrix names invalid", "INVALID cells (an error window: no ratio, no verdict): 7.3 e/j" in text, text)
    check("matrix fails on an invalid cell", matrix.failed(m))
    m = matrix.merge([("6.12", summ([good])), ("7.3", summ([good], rc="3"))])
    text = matrix.markdown(m)
    check("matrix fails on kernel log problems", matrix.failed(m))
    check("matrix says kernel log problems", "7.3: the guest run FAILED (guest_rc=3: kernel log problems)" in text,
          text)
    m = matrix.merge([("6.12", summ([good])), ("7.3", summ([good]))])
    check("matrix passes a clean run", not matrix.failed(m))


def test_guest_rc_in_summary():
    report.PLAN[:] = [{}]
    report.META_RC[:] = ["3"]
    txt = report.terminal_summary({}, [], [])
    report.META_RC[:] = []
    check("summary says the guest run failed", "THE GUEST RUN FAILED: guest_rc=3" in txt, txt)


def main():
    test_ratio()
    test_noise()
    test_verdict()
    test_target()
    test_cell()
    test_error_window()
    test_matrix()
    test_guest_rc_in_summary()
    return finish()


if __name__ == "__main__":
    sys.exit(main())
