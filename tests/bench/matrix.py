#!/usr/bin/env python3
"""One table across kernels from the per-kernel bench runs.

    matrix.py [--all] --out FILE.md KERNEL=DIR ...

Reads DIR/summary.json (tests/bench/report.py) of each kernel's run and
writes FILE.md (the table, and where each column comes from) and FILE.json
(the merged rows); prints the table. Rows: the headline cells (plan.py
HEADLINE) that at least one kernel measured, or with --all every cell;
columns: kernels; cells: test/base ratio of the medians, the A/A spread
(|control/base - 1|) in brackets and the verdict. A kernel without a
summary (its boot failed) is a column of "-" and a line saying so. A cell
with an error window reads INVALID; a kernel whose guest run failed
(guest_rc, 3: kernel log problems) is named; either makes the exit status 1.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plan import HEADLINE  # noqa: E402
from report import load_json  # noqa: E402


def load(d):
    return load_json(os.path.join(d, "summary.json"))


def merge(runs, headline=None):
    """runs: [(kernel, summary or None)] in column order. Rows in the order
    first seen (the headline's order when given)."""
    rows, index = [], {}
    order = list(headline) if headline else []
    for k, s in runs:
        for r in (s or {}).get("rows", []):
            key = (r["exp"], r["job"])
            if headline and key not in headline:
                continue
            if key not in index:
                index[key] = {"exp": r["exp"], "job": r["job"], "base": r.get("base"),
                              "test": r.get("test"), "cells": {}}
            index[key]["cells"][k] = r
    for key in order + [k for k in index if k not in order]:
        if key in index and index[key] not in rows:
            rows.append(index[key])
    meta = {k: (None if s is None else {x: s.get(x) for x in ("kernel", "git", "mode", "started",
                                                              "clock", "guest_rc")})
            for k, s in runs}
    return {"kernels": [k for k, _ in runs], "rows": rows, "meta": meta}


def cell_text(r):
    if r and r.get("errors"):
        return "INVALID (%d error window%s)" % (r["errors"], "" if r["errors"] == 1 else "s")
    if not r or r.get("r") is None:
        return "-"
    aa = "-" if r.get("aa") is None else "%.1f%%" % (abs(r["aa"] - 1) * 100)
    return "%.2f (%s) %s" % (r["r"], aa, r.get("v") or "")


def short(label):
    return {"virtio_blk": "vb"}.get(label, label or "?")


def markdown(m):
    ks = m["kernels"]
    L = ["| experiment | job | test / base | " + " | ".join(ks) + " |",
         "|" + "---|" * (3 + len(ks))]
    for r in m["rows"]:
        L.append("| %s | %s | %s / %s | %s |" % (r["exp"], r["job"], short(r["test"]), short(r["base"]),
                                                 " | ".join(cell_text(r["cells"].get(k)) for k in ks)))
    L.append("")
    L.append("Cells: test/base ratio of the medians (A/A spread) verdict; vb = virtio_blk.")
    for k in ks:
        mt = m["meta"].get(k)
        if mt is None:
            L.append("- %s: no summary (the run failed before its report)" % k)
        else:
            L.append("- %s: kernel %s, git %s, %s mode, %s clock, started %s" % (
                k, mt.get("kernel"), mt.get("git"), mt.get("mode"), mt.get("clock"), mt.get("started")))
            if mt.get("guest_rc") not in ("0", None):
                L.append("  **%s: the guest run FAILED (guest_rc=%s%s)**" % (
                    k, mt.get("guest_rc"), ": kernel log problems" if mt.get("guest_rc") == "3" else ""))
    bad = ["%s %s/%s" % (k, r["exp"], r["job"]) for r in m["rows"] for k in ks
           if (r["cells"].get(k) or {}).get("errors")]
    if bad:
        L.append("INVALID cells (an error window: no ratio, no verdict): " + ", ".join(bad))
    return "\n".join(L) + "\n"


def failed(m):
    """A kernel whose guest run failed (kernel log problems included) or a
    cell with an error window: matrix.py exits 1."""
    return any(mt and mt.get("guest_rc") not in ("0", None) for mt in m["meta"].values()) or any(
        (c or {}).get("errors") for r in m["rows"] for c in r["cells"].values())


def main(argv):
    every, out, runs = False, None, []
    while argv:
        a = argv.pop(0)
        if a == "--all":
            every = True
        elif a == "--out" and argv:
            out = argv.pop(0)
        elif "=" in a:
            k, _, d = a.partition("=")
            runs.append((k, load(d)))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    if not out or not runs:
        print(__doc__, file=sys.stderr)
        return 2
    m = merge(runs, None if every else HEADLINE)
    text = markdown(m)
    with open(out, "w") as f:
        f.write(text)
    with open(os.path.splitext(out)[0] + ".json", "w") as f:
        json.dump(m, f, indent=1)
    print(text, end="")
    if not any(s for _, s in runs) or failed(m):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
