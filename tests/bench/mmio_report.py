#!/usr/bin/env python3
"""The transport cells' report: tests/bench/mmio-bench.sh's lines -> tables.

    mmio_report.py OUT [LABEL]   reads OUT/guest.log (and OUT/meta), writes
                                 OUT/report.md and OUT/summary.json, prints
                                 the tables

For an A/B experiment (drv, notify): per round, the ratio test/base and the
A/A ratio control/base (the same configuration measured twice); the cell's
ratio is the median over rounds, its noise the A/A's largest distance from
1 (its spread). Verdict: "win" when the ratio's distance from 1 is above
twice the A/A median's, above the A/A spread and above 2 %, "loss"
likewise below, else "same" (within the noise).
For drv, test is vblk and base virtio_blk: under icount IOPS per guest
second is the inverse of guest instructions per I/O, so the ratio reads as
"virtio_blk's instructions per I/O / vblk's". For notify, test is
notify_in_lock=0 and base 1, as in the main bench's notify-rt: a ratio
above 1 is what seed 000 predicts (the doorbell inside the lock costs).
A log without the "info notify_arms" line comes from the first version of
the guest script, whose notify base was 0 and test 1: those arms are
swapped on reading, and the A/A is then control against test.
"""
import json
import os
import re
import statistics
import sys

EXPLAIN = {
    "drv": ("4k randread QD64 x1", "virtio_blk", "vblk", "vblk / virtio_blk IOPS"),
    "notify": ("4k randread QD64 x4 jobs, one queue", "notify_in_lock=1", "notify_in_lock=0",
               "outside / in-lock IOPS"),
}


def parse(lines):
    runs, doors, info, verdicts = [], [], {}, []
    for raw in lines:
        line = raw.strip().replace("\r", "")
        f = line.split()
        if not f:
            continue
        if f[0] == "run" and len(f) == 7:
            runs.append({"exp": f[1], "arm": f[2], "round": int(f[3]), "iops": float(f[4]),
                         "requests": None if f[5] == "-" else int(f[5]),
                         "doorbells": None if f[6] == "-" else int(f[6])})
        elif f[0] == "doorbell" and len(f) == 8:
            doors.append({"serial": f[1], "driver": f[2], "transport": f[3], "func": f[4],
                          "calls": int(f[5]), "mean_us": float(f[6]), "p50_us": float(f[7])})
        elif f[0] == "info" and len(f) >= 3:
            info[f[1]] = " ".join(f[2:])
        elif re.match(r"^(ok|FAIL) - ", line):
            verdicts.append(line)
    return runs, doors, info, verdicts


def cell(runs, exp, aa_ref="base"):
    by = {}
    for r in runs:
        if r["exp"] == exp:
            by.setdefault(r["round"], {})[r["arm"]] = r
    rounds = [v for _, v in sorted(by.items()) if {"base", "control", "test"} <= set(v)]
    if not rounds:
        return None
    ratio = [v["test"]["iops"] / v["base"]["iops"] for v in rounds if v["base"]["iops"] > 0]
    # The A/A pair: control and the arm configured like it.
    aa = [v["control"]["iops"] / v[aa_ref]["iops"] for v in rounds if v[aa_ref]["iops"] > 0]
    med, aa_med = statistics.median(ratio), statistics.median(aa)
    noise = max(abs(x - 1) for x in aa)
    d = med - 1
    verdict = "same"
    if abs(d) > max(2 * abs(aa_med - 1), noise, 0.02):
        verdict = "win" if d > 0 else "loss"
    out = {"exp": exp, "rounds": len(rounds), "ratio": med, "aa": aa_med, "aa_spread": noise,
           "verdict": verdict}
    for arm in ("base", "control", "test"):
        out[arm + "_iops"] = statistics.median(v[arm]["iops"] for v in rounds)
        reqs = sum(v[arm]["requests"] or 0 for v in rounds)
        bells = sum(v[arm]["doorbells"] or 0 for v in rounds)
        out[arm + "_doorbells_per_io"] = bells / reqs if reqs else None
    return out


def fmt_db(x):
    return "-" if x is None else "%.3f" % x


def report(out_dir, label):
    with open(os.path.join(out_dir, "guest.log"), errors="replace") as f:
        runs, doors, info, verdicts = parse(f)
    meta = ""
    if os.path.exists(os.path.join(out_dir, "meta")):
        with open(os.path.join(out_dir, "meta")) as f:
            meta = f.read()
    aa_ref = {}
    if "notify_arms" not in info:
        swap = {"base": "test", "test": "base", "control": "control"}
        for r in runs:
            if r["exp"] == "notify":
                r["arm"] = swap.get(r["arm"], r["arm"])
        aa_ref["notify"] = "test"
    cells = [c for c in (cell(runs, e, aa_ref.get(e, "base")) for e in EXPLAIN) if c]
    md = ["# Transport cells: %s" % label, ""]
    md += ["- " + m for m in meta.strip().splitlines()]
    md += ["- guest: %s, %s vCPUs" % (info.get("kernel", "?"), info.get("cpus", "?")), ""]
    if cells:
        md += ["| cell | job | base | test | base IOPS | test IOPS | ratio | A/A | A/A spread "
               "| doorbells/IO base, test | verdict |",
               "|---|---|---|---|---|---|---|---|---|---|---|"]
        for c in cells:
            job, b, t, what = EXPLAIN[c["exp"]]
            md.append("| %s (%s, %d rounds) | %s | %s | %s | %.0f | %.0f | %.3f | %.3f | %.3f | %s, %s | %s |" % (
                c["exp"], what, c["rounds"], job, b, t, c["base_iops"], c["test_iops"], c["ratio"],
                c["aa"], c["aa_spread"], fmt_db(c["base_doorbells_per_io"]),
                fmt_db(c["test_doorbells_per_io"]), c["verdict"]))
        md.append("")
    if doors:
        md += ["Doorbell cost per write (function_graph, 4k randread QD1; includes the tracer's "
               "own cost, alike for every row):", "",
               "| disk | driver | transport | function | calls | mean us | median us |",
               "|---|---|---|---|---|---|---|"]
        for d in doors:
            md.append("| %s | %s | %s | %s | %d | %.2f | %.1f |" % (
                d["serial"], d["driver"], d["transport"], d["func"], d["calls"], d["mean_us"],
                d["p50_us"]))
        md.append("")
    bad = [v for v in verdicts if v.startswith("FAIL")]
    if bad:
        md += ["Failed steps:", ""] + ["- " + v for v in bad] + [""]
    text = "\n".join(md)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump({"label": label, "cells": cells, "doorbells": doors, "info": info,
                   "failed": bad}, f, indent=1)
    print(text)
    return 0 if cells or doors else 1


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: mmio_report.py OUT [LABEL]")
    sys.exit(report(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else os.path.basename(sys.argv[1])))
