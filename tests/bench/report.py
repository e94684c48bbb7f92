#!/usr/bin/env python3
"""vblk benchmark: the report (host side, after the guest returned).

    report.py OUT

Reads OUT/plan.json, OUT/runs.jsonl (guest), OUT/host-markers.jsonl (host
sampler) and OUT/meta; writes OUT/report.md, OUT/summary.txt (and its rows as
OUT/summary.json, for tests/bench/matrix.py), OUT/runs.csv,
the gnuplot data and scripts in OUT/plots/ and the PNGs next to them; prints
the summary (one screen) on stdout.

Method: for each experiment, job and arm, the median, min and max over the
measured repetitions; the ratio test/base of the medians; and next to it the
A/A spread, |control/base - 1| of the medians, where the control arm is
configured exactly like the base. A difference counts as a win or a loss only
when it is larger than that spread; otherwise it is "within noise".
"""
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys

import host_sampler  # noqa: E402 tests/bench/host_sampler.py: where QEMU's threads went
import profile_report  # tests/bench/profile_report.py: scripts/bench --profile

# metric key, label, unit, higher is better, format
METRICS = [
    ("iops", "IOPS", "", True, "%.0f"),
    ("bw_mib", "MiB/s", "", True, "%.1f"),
    ("clat_p50_us", "p50 lat", "us", False, "%.0f"),
    ("clat_p99_us", "p99 lat", "us", False, "%.0f"),
    ("clat_p99.9_us", "p99.9 lat", "us", False, "%.0f"),
    ("guest_busy_frac", "guest CPU busy", "%", None, "%.0f"),
    ("iops_per_busy_cpu_s", "IOPS/busy CPU-s", "", True, "%.0f"),
    ("host_us_per_io", "host CPU/IO", "us", False, "%.1f"),
    ("host_cores", "QEMU cores", "", None, "%.2f"),
    ("host_other_cores", "other host load", "cores", None, "%.2f"),
    ("irqs_per_io", "irqs/IO", "", False, "%.3f"),
    ("doorbells_per_io", "doorbells/IO", "", False, "%.3f"),
    ("polls_per_io", "polls/IO", "", None, "%.3f"),
]
MFMT = {m[0]: m for m in METRICS}

# A single A/A pair can agree by luck; differences smaller than this are
# never called a win or a loss, whatever the A/A spread of the boot.
NOISE_FLOOR = 0.02


# The expected noise of a ratio of medians, from the runs' own dispersion:
# each arm's median has a relative standard error of about
# 1.2533 * (1.4826 * MAD / median) / sqrt(n); the ratio's is the two combined.
# Differences inside NSIGMA of it are not called either.
NSIGMA = 2.0


def noise_of(aa, sig=None):
    n = abs(aa - 1) if aa is not None else 0.0
    if sig is not None:
        n = max(n, NSIGMA * sig)
    return max(n, NOISE_FLOOR)


def rel_noise(xs):
    """One run's relative noise: 1.4826 MAD / median (None for < 3 runs)."""
    if len(xs) < 3:
        return None
    m = statistics.median(xs)
    if not m:
        return None
    return 1.4826 * statistics.median([abs(x - m) for x in xs]) / abs(m)


def rel_se(xs):
    """Relative standard error of the median of xs."""
    rn = rel_noise(xs)
    return None if rn is None else 1.2533 * rn / len(xs) ** 0.5


def load_jsonl(path):
    res = []
    if not os.path.exists(path):
        return res
    with open(path) as f:
        for ln in f:
            ln = ln.strip()
            if ln:
                try:
                    res.append(json.loads(ln))
                except ValueError:
                    pass
    return res


def load_json(path):
    """A results file's JSON, or None when the run did not write it."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def load_host_noise(out):
    return load_json(os.path.join(out, "host-noise.json"))


def host_noise_text(hn):
    if not hn or not hn.get("cpus"):
        return None
    return ("host speed before the boot (the same CPU loop on every host CPU at once, %g s windows, "
            "%d windows): %s" % (hn["window_s"], hn["windows"], ", ".join(
                "cpu%s %.1f%% sd [%.2f - %.2f]" % (c, 100 * v["rel_sd"], v["min"], v["max"])
                for c, v in sorted(hn["cpus"].items()) if v.get("rel_sd") is not None))
            + ("; correlation between CPUs %.2f" % hn["corr_cpu0_cpu1"]
               if hn.get("corr_cpu0_cpu1") is not None else ""))


def run_noise(cells):
    """Median over cells and arms of one run's relative noise
    (1.4826 MAD / median of IOPS)."""
    out = []
    for c in cells:
        for a in c.arms:
            rn = rel_noise(c.values(a["label"], "iops"))
            if rn is not None:
                out.append(rn)
    return med(out)


def reps_for(noise, se=0.025):
    """Rounds per arm for which the A/A ratio of the medians has standard
    error se, at a run noise of `noise`."""
    return int(2 * (1.2533 * noise / se) ** 2 + 0.999)


def load_meta(out):
    meta = {}
    p = os.path.join(out, "meta")
    if os.path.exists(p):
        for ln in open(p):
            if "=" in ln:
                k, v = ln.rstrip("\n").split("=", 1)
                meta[k] = v
    return meta


def join_host(runs, marks):
    by = {}
    for m in marks:
        if m.get("kind") not in ("S", "E"):  # older samplers swapped the fields
            m["id"], m["kind"] = m.get("kind"), m.get("id")
        by.setdefault(m["id"], {})[m["kind"]] = m
    for r in runs:
        m = by.get(r.get("id"), {})
        s, e = m.get("S"), m.get("E")
        if not s or not e or "qemu_total" not in s or "qemu_total" not in e:
            continue
        wall = e["host_t"] - s["host_t"]
        cpu = e["qemu_total"] - s["qemu_total"]
        r["host_wall_s"] = wall
        r["host_cpu_s"] = cpu
        r["host_vcpu_s"] = e["qemu_vcpu"] - s["qemu_vcpu"]
        r["host_iothread_s"] = e["qemu_iothread"] - s["qemu_iothread"]
        if wall > 0:
            r["host_cores"] = cpu / wall
            busy = e["host_busy_s"] - s["host_busy_s"]
            r["host_other_cores"] = max(0.0, (busy - cpu) / wall)
        if r.get("win_ios"):
            r["host_us_per_io"] = cpu / r["win_ios"] * 1e6


def med(xs):
    return statistics.median(xs) if xs else None


def fmt(key, v):
    if v is None:
        return "-"
    f = MFMT[key][4] if key in MFMT else "%.3g"
    if key == "guest_busy_frac":
        v = v * 100
    return f % v


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def verdict(r, aa, higher, sig=None):
    """win / loss / within noise for a test/base ratio, given the A/A
    spread (|control/base - 1|) and the ratio's expected noise (sig)."""
    if r is None:
        return "-"
    if higher is None:
        return ""
    if aa is None and sig is None:
        return "no A/A control"
    noise = noise_of(aa, sig)
    d = r - 1
    if abs(d) <= noise:
        return "within noise"
    good = d > 0 if higher else d < 0
    return "win" if good else "loss"


def band(r, sig):
    """The 2-sigma band of a ratio of medians: r (1 -/+ NSIGMA sig), as text."""
    if r is None or sig is None:
        return "-"
    return "%.3f-%.3f" % (r * (1 - NSIGMA * sig), r * (1 + NSIGMA * sig))


def rs(r):
    return "-" if r is None else "%.3f" % r


class Cell:
    """One experiment x job: arms' values per metric."""

    def __init__(self, exp, job, runs):
        self.exp, self.job = exp, job
        self.arms = exp["arms"]
        self.role = {a["role"]: a["label"] for a in self.arms}
        self.vals = {}
        for a in self.arms:
            rr = [r for r in runs if r.get("arm") == a["label"] and r.get("record")
                  and not r.get("error")]
            self.vals[a["label"]] = rr
        self.nerr = sum(1 for r in runs if r.get("error"))

    def values(self, label, key):
        out = []
        for r in self.vals.get(label, []):
            v = r.get(key)
            if isinstance(v, (int, float)):
                out.append(v)
        return out

    def stat(self, label, key):
        v = self.values(label, key)
        if not v:
            return None, None, None, 0
        return med(v), min(v), max(v), len(v)

    def ratios(self, key):
        base, ctl, test = (self.role.get(x) for x in ("base", "control", "test"))
        mb = self.stat(base, key)[0] if base else None
        mt = self.stat(test, key)[0] if test else None
        mc = self.stat(ctl, key)[0] if ctl else None
        return ratio(mt, mb), ratio(mc, mb)

    def sigma(self, key):
        """Expected relative noise of the ratio test/base of the medians."""
        b, t = self.role.get("base"), self.role.get("test")
        if not b or not t:
            return None
        sb, st = rel_se(self.values(b, key)), rel_se(self.values(t, key))
        if sb is None or st is None:
            return None
        return (sb * sb + st * st) ** 0.5

    def round_ratios(self, key, num_role, den_role="base"):
        """Per-round ratios (same round: the arms ran back to back)."""
        num, den = self.role.get(num_role), self.role.get(den_role)
        if not num or not den:
            return []
        a = {r["rep"]: r.get(key) for r in self.vals.get(num, [])}
        b = {r["rep"]: r.get(key) for r in self.vals.get(den, [])}
        return [a[k] / b[k] for k in a if k in b and isinstance(a[k], (int, float))
                and isinstance(b[k], (int, float)) and b[k]]

    def target(self):
        t = self.exp.get("targets", {})
        return t.get(self.job["name"], t.get("*"))


def target_status(r, aa, tgt, higher=True, sig=None):
    if tgt is None or r is None:
        return ""
    noise = noise_of(aa, sig)
    met = r >= tgt if higher else r <= tgt
    if met:
        if (higher and r - 1 <= noise) or (not higher and 1 - r <= noise):
            return "met, but inside the noise"
        return "MET"
    return "MISSED"


def paired(c, key):
    """Median of the per-round ratios test/base and control/base."""
    t, a = c.round_ratios(key, "test"), c.round_ratios(key, "control")
    return (med(t) if t else None), (med(a) if a else None)


def combined(r, aa, pr, pa, higher, sig=None):
    """The verdict of the ratio of the medians, kept only when the median of
    the per-round (paired) ratios says the same; otherwise within noise."""
    v1 = verdict(r, aa, higher, sig)
    if pr is None or v1 in ("-", "", "no A/A control"):
        return v1
    v2 = verdict(pr, pa, higher)
    if v1 == v2:
        return v1
    return "within noise*"


def target_status2(r, aa, pr, pa, tgt, higher=True, sig=None):
    """MET needs both estimates (ratio of medians, median per-round ratio)."""
    ts = target_status(r, aa, tgt, higher, sig)
    if ts == "MET" and pr is not None:
        ts2 = target_status(pr, pa, tgt, higher)
        if ts2 != "MET":
            return "met by the medians, not by the per-round ratios"
    return ts


def invalidate(row, nerr):
    """A cell with any error window (a slice or run that completed no I/O:
    the driver stalled) has no ratio, no verdict and misses its target:
    what the other windows say would hide the stall."""
    row["invalid"] = "%d error window%s" % (nerr, "" if nerr == 1 else "s")
    for k in ("r", "pr", "rc", "prc", "rh", "prh", "rl"):
        if k in row:
            row[k] = None
    for k in ("v", "vc", "vh", "vl"):
        row[k] = "INVALID"
    row["ts"] = "MISSED" if row.get("tgt") else ""


def build_cells(plan, runs):
    cells = []
    for e in plan["experiments"]:
        er = [r for r in runs if r.get("exp") == e["name"]]
        for j in e["jobs"]:
            jr = [r for r in er if r.get("job") == j["name"]]
            cells.append(Cell(e, j, jr))
    return cells


def summary_rows(cells):
    rows = []
    for c in cells:
        e = c.exp
        r, aa = c.ratios("iops")
        rc, aac = c.ratios("iops_per_busy_cpu_s")
        rh, aah = c.ratios("host_us_per_io")
        rl, aal = c.ratios("clat_p99_us")
        sg, sgc, sgh = c.sigma("iops"), c.sigma("iops_per_busy_cpu_s"), c.sigma("host_us_per_io")
        pr, pa = paired(c, "iops")
        prc, pac = paired(c, "iops_per_busy_cpu_s")
        prh, pah = paired(c, "host_us_per_io")
        row = {
            "pr": pr, "pa": pa,
            "exp": e["name"], "job": c.job["name"],
            "base": c.role.get("base"), "test": c.role.get("test"),
            "n": min(c.stat(c.role[x], "iops")[3] for x in ("base", "test") if x in c.role),
            "base_iops": c.stat(c.role["base"], "iops")[0],
            "test_iops": c.stat(c.role["test"], "iops")[0],
            "sig": sg,
            "r": r, "aa": aa, "v": combined(r, aa, pr, pa, True, sg),
            "tgt": c.target(), "ts": target_status2(r, aa, pr, pa, c.target(), sig=sg),
            "rc": rc, "aac": aac, "vc": combined(rc, aac, prc, pac, True, sgc),
            "rh": rh, "aah": aah, "vh": combined(rh, aah, prh, pah, False, sgh),
            "rl": rl, "aal": aal, "vl": verdict(rl, aal, False),
            "db_base": c.stat(c.role["base"], "doorbells_per_io")[0],
            "db_test": c.stat(c.role["test"], "doorbells_per_io")[0],
            "irq_base": c.stat(c.role["base"], "irqs_per_io")[0],
            "irq_test": c.stat(c.role["test"], "irqs_per_io")[0],
            "errors": c.nerr,
        }
        if c.nerr:
            invalidate(row, c.nerr)
        if e.get("cpu_target"):
            row["cpu_ts"] = target_status2(rc, aac, prc, pac, e["cpu_target"], sig=sgc)
            row["cpu_tgt"] = e["cpu_target"]
        if e.get("doorbell_target"):
            rd_, aad = c.ratios("doorbells_per_io")
            row["rd"], row["aad"] = rd_, aad
            row["db_tgt"] = e["doorbell_target"]
            row["db_ts"] = target_status(rd_, aad, e["doorbell_target"], higher=False,
                                         sig=c.sigma("doorbells_per_io"))
        if c.nerr:
            for k in ("cpu_ts", "db_ts"):
                if k in row:
                    row[k] = "MISSED"
        rows.append(row)
    return rows


def spread_s(aa):
    return "-" if aa is None else "%.1f%%" % (abs(aa - 1) * 100)


def terminal_summary(meta, rows, cells):
    L = []
    L.append("vblk bench (%s, kernel %s, git %s): ratio = test/base of the medians; A/A = |control/base - 1|;"
             % (meta.get("mode", "?"), meta.get("kernel", "?"), meta.get("git", "?")))
    if PLAN and PLAN[0].get("clock") == "icount":
        L.append("clock: icount (guest time = guest instructions x 8 ns; rates per guest second)")
    L.append("2sigma = expected noise of the ratio from the runs' dispersion; a verdict needs a difference "
             "outside A/A, 2sigma and 2%;")
    L.append("per-round = median of the per-round ratios; * = the two estimates disagree; "
             "target: ok / ~ (inside the noise, or not by both estimates) / MISS")
    if OUT_DIR and (PLAN and (PLAN[0].get("pin") or {}).get("requested") is not None):
        L.append("placement: " + pinning_text(OUT_DIR[0]))
    hdr = "%-9s %-20s %-18s %9s %9s %6s %6s %6s %-14s %-14s %-9s| %-14s| %-14s| %s" % (
        "exp", "job", "test/base", "base IOPS", "test IOPS", "ratio", "A/A", "2sigma", "per-round (A/A)", "verdict",
        "target", "IOPS/CPU-s", "host us/IO", "db/IO irq/IO (base->test)")
    L.append(hdr)
    L.append("-" * len(hdr))
    for r in rows:
        tgt = ("%s %s" % (">=%.2f" % r["tgt"], "ok" if r["ts"] == "MET" else
                          ("~" if r["ts"].startswith("met") else "MISS"))) if r["tgt"] else ""
        cpu = "%s (%s)" % (rs(r["rc"]), spread_s(r["aac"]))
        host = "%s (%s)" % (rs(r["rh"]), spread_s(r["aah"]))
        db = "%s->%s %s->%s" % (
            fmt("doorbells_per_io", r["db_base"]) if r["db_base"] is not None else "n/a",
            fmt("doorbells_per_io", r["db_test"]) if r["db_test"] is not None else "n/a",
            fmt("irqs_per_io", r["irq_base"]), fmt("irqs_per_io", r["irq_test"]))
        L.append("%-9s %-20s %-18s %9s %9s %6s %6s %6s %-15s %-14s %-9s| %-14s| %-14s| %s" % (
            r["exp"], r["job"], "%s/%s" % (short(r["test"]), short(r["base"])),
            fmt("iops", r["base_iops"]), fmt("iops", r["test_iops"]), rs(r["r"]), spread_s(r["aa"]),
            "-" if r["sig"] is None else "%.1f%%" % (NSIGMA * r["sig"] * 100),
            "%s (%s)" % (rs(r["pr"]), spread_s(r["pa"])), r["v"], tgt, cpu, host, db))
    load = [x for c in cells for a in c.arms for x in c.values(a["label"], "host_other_cores")]
    if load:
        L.append("host cores used by other processes during the windows: median %.2f, max %.2f (of %d)"
                 % (med(load), max(load), os.cpu_count() or 0))
    hn = host_noise_text(load_host_noise(OUT_DIR[0])) if OUT_DIR else None
    if hn:
        L.append(hn)
    errs = sum(r["errors"] for r in rows)
    if errs:
        L.append("runs with errors: %d (see runs.jsonl)" % errs)
        L.append("INVALID cells (an error window: no ratio, no verdict, target missed): %s" % ", ".join(
            "%s/%s (%s)" % (r["exp"], r["job"], r["invalid"]) for r in rows if r.get("invalid")))
    if META_RC and META_RC[0] not in ("0", None):
        L.append("THE GUEST RUN FAILED: guest_rc=%s%s" % (
            META_RC[0], " (kernel log problems, see log-problems.txt)" if META_RC[0] == "3" else ""))
    return "\n".join(L)


def job_opts(job):
    """A job's load generator and its options, as text: fio's options, or
    vblk-ptbench's for a passthru job."""
    if "ptbench" in job:
        p = job["ptbench"]
        return "vblk-ptbench --rw %s --bs %s --qd %s --batch %s%s" % (
            p["rw"], p["bs"], p["qd"], p.get("batch", 1),
            "".join(" --" + f for f in ("fixed", "regfile", "iopoll") if p.get(f)))
    return "fio " + " ".join("%s=%s" % kv for kv in job.get("fio", {}).items())


# ---- passthru (issue 25): three paths, one client ---------------------------

# The three ratios of a passthru cell: (numerator role, denominator role).
PT_RATIOS = [("test", "base"), ("test", "block"), ("block", "base")]


def icount_ns(plan):
    """Guest ns per instruction under icount (2^shift), None without it."""
    ic = (plan or {}).get("icount") or ""
    if (plan or {}).get("clock") != "icount" or "shift=" not in ic:
        return None
    return 2 ** int(ic.split("shift=")[1].split(",")[0])


def pair_stats(c, num, den, key="iops"):
    """num/den (arm labels) for one cell: ratio of the medians, its
    2-sigma-able noise (the two medians' relative standard errors
    combined), the median of the per-round ratios; the A/A (control/base,
    ratio of the medians and per round) is the cell's."""
    mn, md = c.stat(num, key)[0], c.stat(den, key)[0]
    sn, sd = rel_se(c.values(num, key)), rel_se(c.values(den, key))
    a = {r["rep"]: r.get(key) for r in c.vals.get(num, [])}
    b = {r["rep"]: r.get(key) for r in c.vals.get(den, [])}
    rr = [a[k] / b[k] for k in a if k in b and isinstance(a[k], (int, float))
          and isinstance(b[k], (int, float)) and b[k]]
    return {"r": ratio(mn, md), "sig": (sn * sn + sd * sd) ** 0.5 if sn is not None and sd is not None else None,
            "pr": med(rr) if rr else None}


def passthru_rows(plan, cells, raw_runs):
    """One row per passthru cell (experiments whose client is ptbench):
    the three paths' median IOPS (and, under icount, guest instructions
    per I/O = 1 / (IOPS x ns per instruction): exact when some vCPU is
    always busy, an upper bound otherwise), the ratios of PT_RATIOS with
    their verdicts against the cell's A/A, and the cell's targets
    (exp["pt_targets"]; "better": whether the ratio is above the same
    ratio of the interrupt-driven cell named, beyond the noise, a target
    of its own). Arms the guest could not run (runs.jsonl
    "unavailable") make their ratios n/a, with the reason."""
    ns = icount_ns(plan)
    rows = []
    for c in cells:
        if c.exp.get("client") != "ptbench":
            continue
        e, job = c.exp, c.job["name"]
        unav = {r["arm"]: r["unavailable"] for r in raw_runs
                if r.get("exp") == e["name"] and r.get("job") == job and "unavailable" in r}
        row = {"exp": e["name"], "job": job, "arms": {}, "ratios": {}, "targets": [], "unavailable": unav,
               "errors": c.nerr}
        _, aa = c.ratios("iops")
        pa = paired(c, "iops")[1]
        row["aa"], row["pa"] = aa, pa
        for role in ("base", "control", "block", "test"):
            lb = c.role.get(role)
            m, lo, hi, n = c.stat(lb, "iops") if lb else (None, None, None, 0)
            row["arms"][role] = {"label": lb, "iops": m, "min": lo, "max": hi, "n": n,
                                 "ipio": 1e9 / ns / m if ns and m else None,
                                 "iops_busy": c.stat(lb, "iops_per_busy_cpu_s")[0] if lb else None,
                                 "busy": c.stat(lb, "guest_busy_frac")[0] if lb else None,
                                 "unavailable": unav.get(lb)}
        for num, den in PT_RATIOS:
            ln, ld = c.role.get(num), c.role.get(den)
            st = pair_stats(c, ln, ld) if ln and ld else {"r": None, "sig": None, "pr": None}
            st["v"] = "INVALID" if c.nerr else combined(st["r"], aa, st["pr"], pa, True, st["sig"])
            if c.nerr:
                st["r"] = st["pr"] = None
            row["ratios"]["%s/%s" % (ln, ld)] = st
        rows.append(row)
    by = {(r["exp"], r["job"]): r for r in rows}
    for row in rows:
        exp = next(e for e in plan["experiments"] if e["name"] == row["exp"])
        for num, den, tmin, better_than in exp.get("pt_targets", {}).get(row["job"], []):
            key = "%s/%s" % (num, den)
            st = row["ratios"].get(key, {})
            r = st.get("r")
            t = {"ratio": key, "min": tmin, "better_than": better_than, "r": r}
            if r is None:
                why = [row["arms"][ro]["unavailable"] for ro in row["arms"]
                       if row["arms"][ro]["label"] in (num, den) and row["arms"][ro]["unavailable"]]
                t["status"] = "n/a" + (": " + why[0] if why else (" (INVALID)" if row["errors"] else ""))
            elif tmin is not None:
                t["status"] = target_status2(r, row["aa"], st["pr"], row["pa"], tmin, sig=st["sig"])
            else:
                t["status"] = "MET" if st["v"] == "win" else "MISSED"
            if better_than and r is not None:
                other = by.get(("passthru", better_than), {}).get("ratios", {}).get(key, {}).get("r")
                t["than"] = other
                if other is None:
                    t["better"] = "n/a (no %s)" % better_than
                else:
                    d = r / other - 1
                    t["better"] = ("better" if d > noise_of(row["aa"], st["sig"]) else
                                   "worse" if -d > noise_of(row["aa"], st["sig"]) else "within noise")
            row["targets"].append(t)
    return rows


def target_text(t):
    want = (">= %.2f" % t["min"]) if t["min"] is not None else "> 1 (a win)"
    s = "%s %s: %s %s" % (t["ratio"], want, rs(t["r"]), t["status"])
    if t.get("better_than"):
        s += "; better again than %s's %s: %s" % (
            t["better_than"], rs(t.get("than")),
            {"better": "yes", "worse": "NO (lower)", "within noise": "NO (within noise)"}.get(
                t.get("better"), t.get("better", "-")))
    return s


def passthru_section(rows, plan):
    if not rows:
        return []
    ns = icount_ns(plan)
    R = ["## Passthrough (issue 25): three paths, one client\n"]
    R.append("Each cell: the same vblk-ptbench settings on virtio_blk's block device (base, and its A/A "
             "control), vblk's block device (O_DIRECT) and vblk's passthrough char device (`/dev/<disk>c0`, "
             "uring_cmd), each arm on a disk of its own, interleaved in slices. IOPS: medians of the slices "
             "(passthrough: completions in vblk's counters, which the block layer's stat does not count). "
             "%s Ratios of the medians with the verdict against the cell's A/A (virtio_blk#2 / virtio_blk), "
             "2 sigma and 2%%; per-round ratio in brackets.\n" % (
                 ("Under icount, *instr/IO* = 1 / (IOPS x %d ns): all guest instructions per I/O when some "
                  "vCPU is always busy (QD64, and IOPOLL, which spins); at QD1 interrupt-driven the guest "
                  "also idles while the host works (with `sleep=on` its clock then follows the host's), "
                  "so there it is an upper bound, and *IOPS/busy CPU-s* is the closer measure." % ns)
                 if ns else "This boot ran in real time: IOPS are not instruction counts."))
    hdr = ["experiment", "job", "virtio_blk IOPS", "vblk IOPS", "vblk-pt IOPS"]
    if ns:
        hdr += ["instr/IO vb / vblk / pt"]
    hdr += ["pt / vb", "pt / vblk", "vblk / vb", "A/A", "IOPS/busy CPU-s vb / vblk / pt", "targets"]
    trs = []
    for r in rows:
        a = r["arms"]
        cells = [r["exp"], r["job"]]
        for role in ("base", "block", "test"):
            x = a[role]
            cells.append("n/a" if x["unavailable"] else fmt("iops", x["iops"]))
        if ns:
            cells.append(" / ".join("%.0f" % a[ro]["ipio"] if a[ro]["ipio"] else "-"
                                    for ro in ("base", "block", "test")))
        for num, den in PT_RATIOS:
            st = r["ratios"]["%s/%s" % (a[num]["label"], a[den]["label"])]
            cells.append("%s (%s) %s" % (rs(st["r"]), rs(st["pr"]), st["v"]))
        cells.append(spread_s(r["aa"]))
        cells.append(" / ".join(fmt("iops_per_busy_cpu_s", a[ro]["iops_busy"]) for ro in ("base", "block", "test")))
        cells.append("; ".join(target_text(t) for t in r["targets"]))
        trs.append(cells)
    R.append(md_table(hdr, trs))
    R.append("")
    for r in rows:
        for role, x in r["arms"].items():
            if x["unavailable"]:
                R.append("- %s %s: arm %s (%s) not run: %s" % (r["exp"], r["job"], x["label"], role,
                                                               x["unavailable"]))
    R.append("")
    return R


def passthru_summary(rows):
    if not rows:
        return []
    L = ["passthru (issue 25): IOPS virtio_blk / vblk block / vblk passthrough; ratios pt/vb pt/vblk vblk/vb "
         "(A/A); targets"]
    for r in rows:
        a = r["arms"]
        rat = [r["ratios"]["%s/%s" % (a[n]["label"], a[d]["label"])]["r"] for n, d in PT_RATIOS]
        L.append("  %-14s %-18s %7s %7s %7s  %s %s %s (%s)  %s" % (
            r["exp"], r["job"], *("n/a" if a[ro]["unavailable"] else fmt("iops", a[ro]["iops"])
                                  for ro in ("base", "block", "test")),
            *(rs(x) for x in rat), spread_s(r["aa"]), "; ".join(target_text(t) for t in r["targets"])))
    return L


def short(label):
    return {"virtio_blk": "vb", "vblk": "vblk"}.get(label, label)


# ---- plots ---------------------------------------------------------------------

def plots(out, cells):
    pdir = os.path.join(out, "plots")
    os.makedirs(pdir, exist_ok=True)
    made = []
    if not shutil.which("gnuplot"):
        return made
    byexp = {}
    for c in cells:
        byexp.setdefault(c.exp["name"], []).append(c)
    for name, cs in byexp.items():
        arms = [a["label"] for a in cs[0].arms]
        for key, ylab, fname in (("iops", "IOPS (median, min-max)", "iops"),
                                 ("iops_per_busy_cpu_s", "IOPS per busy guest CPU-second", "cpu"),
                                 ("host_us_per_io", "host CPU (QEMU) us per I/O", "host")):
            dat = os.path.join(pdir, "%s-%s.dat" % (name, fname))
            with open(dat, "w") as f:
                f.write("# job " + " ".join("med%d min%d max%d" % (i, i, i) for i in range(len(arms))) + "\n")
                for c in cs:
                    row = [c.job["name"]]
                    for a in arms:
                        m, lo, hi, _ = c.stat(a, key)
                        row += ["%g" % x if x is not None else "NaN" for x in (m, lo, hi)]
                    f.write(" ".join(row) + "\n")
            png = os.path.join(pdir, "%s-%s.png" % (name, fname))
            gp = os.path.join(pdir, "%s-%s.gp" % (name, fname))
            cols = []
            for i, a in enumerate(arms):
                b = 2 + 3 * i
                cols.append("'%s' using %d:%d:%d:xtic(1) title '%s'" % (
                    os.path.basename(dat), b, b + 1, b + 2, a))
            with open(gp, "w") as f:
                f.write("set terminal pngcairo size 900,420 noenhanced\n" if has_cairo() else
                        "set terminal png size 900,420\n")
                f.write("set output '%s'\n" % os.path.basename(png))
                f.write("set title '%s: %s'\n" % (name, ylab))
                f.write("set style data histogram\nset style histogram errorbars gap 1 lw 1\n")
                f.write("set style fill solid 0.6 border -1\nset yrange [0:*]\nset grid ytics\n")
                f.write("set key outside right\nset xtics rotate by -15\n")
                f.write("plot " + ", ".join(cols) + "\n")
            r = subprocess.run(["gnuplot", os.path.basename(gp)], cwd=pdir,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode == 0 and os.path.exists(png):
                made.append(os.path.relpath(png, out))
            else:
                sys.stderr.write("report: gnuplot %s: %s\n" % (gp, r.stdout[-300:]))
    # IOPS of every measured run in time order: drift and noise at a glance.
    dat = os.path.join(pdir, "timeline.dat")
    series = {}
    for c in cells:
        for a in c.arms:
            for r in c.vals[a["label"]]:
                series.setdefault("%s %s" % (c.exp["name"], a["role"]), []).append(
                    (r.get("elapsed_s", 0), r["iops"], c.job["name"]))
    if series:
        with open(dat, "w") as f:
            names = sorted(series)
            for n in names:
                f.write("# %s\n" % n)
                for t, v, j in sorted(series[n]):
                    f.write("%.1f %.0f %s\n" % (t, v, j))
                f.write("\n\n")
        gp = os.path.join(pdir, "timeline.gp")
        with open(gp, "w") as f:
            f.write("set terminal pngcairo size 1000,420 noenhanced\n" if has_cairo() else
                    "set terminal png size 1000,420\n")
            f.write("set output 'timeline.png'\nset title 'IOPS of each measured run over time'\n")
            f.write("set xlabel 'seconds since the first run'\nset ylabel 'IOPS'\nset grid\n")
            f.write("set key outside right\nset logscale y\n")
            f.write("plot " + ", ".join("'timeline.dat' index %d using 1:2 with points pt 7 ps 0.6 title '%s'"
                                       % (i, n) for i, n in enumerate(names)) + "\n")
        r = subprocess.run(["gnuplot", "timeline.gp"], cwd=pdir, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode == 0:
            made.append("plots/timeline.png")
    return made


_cairo = None


def has_cairo():
    global _cairo
    if _cairo is None:
        r = subprocess.run(["gnuplot", "-e", "set terminal"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        _cairo = "pngcairo" in r.stdout
    return _cairo


# ---- report ---------------------------------------------------------------------

def cpus_s(cpus):
    return ",".join(str(c) for c in cpus)


def pinning_text(out):
    """Where the host sampler put QEMU's threads (OUT/pinned.json: the
    placement asked for and each thread's CPUs, read back after the pin;
    results of before 2026-12-07: {tid: cpu} of the vCPU threads)."""
    try:
        with open(os.path.join(out, "pinned.json")) as f:
            pinned = json.load(f)
    except (OSError, ValueError):
        return "QEMU's vCPU threads not pinned"
    if "threads" not in pinned:
        return "QEMU's vCPU threads pinned to host CPUs %s, its other threads free" % (
            ", ".join(str(c) for c in sorted(pinned.values())))
    threads = list(pinned["threads"].values())
    vcpus = sorted((host_sampler.vcpu_index(t["comm"]), t) for t in threads
                   if host_sampler.vcpu_index(t["comm"]) is not None)
    others = [t for t in threads if host_sampler.vcpu_index(t["comm"]) is None]
    txt = "QEMU's vCPU threads pinned to host CPUs %s" % (
        ", ".join(cpus_s(t["cpus"]) for _, t in vcpus) or "(none seen)")
    if pinned.get("requested") is not None:
        txt += " (--pin-vcpus %s)" % pinned["requested"]
    if pinned.get("other_cpus") is None:
        txt += ", its other threads free"
    else:
        names = {}
        for t in others:
            names[t["comm"]] = names.get(t["comm"], 0) + 1
        txt += ", its other threads (%d seen: %s) to host CPU%s %s" % (
            len(others), ", ".join("%s x%d" % (n, c) if c > 1 else n for n, c in sorted(names.items())),
            "s" if len(pinned["other_cpus"]) > 1 else "", cpus_s(pinned["other_cpus"]))
    place = {"vcpu_cpus": pinned.get("vcpu_cpus") or [0], "other_cpus": pinned.get("other_cpus")}
    off = [t for t in threads if host_sampler.target_cpus(t["comm"], place) not in (None, t["cpus"])]
    if off:
        txt += "; NOT where asked: %s" % ", ".join("%s on %s" % (t["comm"], cpus_s(t["cpus"])) for t in off)
    return txt


def protocol_text(plan):
    if plan.get("protocol", "groups") == "slices":
        return ("per job, one fio process per arm, started once and kept running; an arm not being "
                "measured is stopped (SIGSTOP). One warm-up round, then %d measured rounds; in each "
                "round the arms take turns in rotating order, each resumed for %g s of settling and then "
                "measured for a %g s window, in which the guest snapshots its counters and the host reads "
                "QEMU's CPU time. The arms of a round are measured within about a second of each other, "
                "so the host's slow swings of speed hit them alike." % (
                    plan["reps"], plan.get("settle", 0.1), plan["window"]))
    return ("per job, one warm-up round (in full mode only before an experiment's first job) "
            "then %d measured rounds; each round runs every arm once, "
            "in rotating order; each run: fio ramp %g s, then a %g s measurement window in which the guest "
            "snapshots its counters and the host reads QEMU's CPU time." % (
                plan["reps"], plan["ramp"], plan["window"]))


def md_table(header, rows):
    L = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        L.append("| " + " | ".join(str(x) for x in r) + " |")
    return "\n".join(L)


def write_csv(out, runs):
    keys = ["id", "exp", "job", "arm", "dev", "driver", "rep", "record", "iops", "bw_kib",
            "clat_mean_us", "clat_p50_us", "clat_p99_us", "clat_p99.9_us", "win_s", "win_ios",
            "win_iops", "guest_busy_frac", "guest_busy_s", "iops_per_busy_cpu_s", "irqs",
            "irqs_per_io", "doorbells_per_io", "vblk_irqs_per_io", "polls_per_io",
            "host_cpu_s", "host_vcpu_s", "host_iothread_s", "host_wall_s", "host_us_per_io",
            "host_cores", "host_other_cores", "softirq_BLOCK", "softirq_IRQ_POLL",
            "elapsed_s", "wall_s", "error"]
    with open(os.path.join(out, "runs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(keys)
        for r in runs:
            if "id" in r:
                w.writerow([r.get(k, "") for k in keys])


def arm_iothread_text(it):
    """An arm's iothread in the arms' configuration (guest_bench.py reads
    its poll-max-ns through QMP after the experiment's setup)."""
    if not it:
        return ""
    return "; iothread %s, poll-max-ns %s during the experiment" % (it.get("id", "?"), it.get("poll_max_ns", "?"))


OUT_DIR = []
PLAN = []
META_RC = []


def main():
    out = os.path.realpath(sys.argv[1])
    OUT_DIR.append(out)
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    PLAN.append(plan)
    meta = load_meta(out)
    META_RC.append(meta.get("guest_rc"))
    runs = load_jsonl(os.path.join(out, "runs.jsonl"))
    marks = load_jsonl(os.path.join(out, "host-markers.jsonl"))
    info = {}
    if os.path.exists(os.path.join(out, "guest-info.json")):
        with open(os.path.join(out, "guest-info.json")) as f:
            info = json.load(f)
    setup_errors = [r for r in runs if "setup_error" in r]
    teardown_errors = [r for r in runs if "teardown_error" in r]
    runs = [r for r in runs if "id" in r]
    join_host(runs, marks)
    for r in runs:
        if isinstance(r.get("bw_kib"), (int, float)):
            r["bw_mib"] = r["bw_kib"] / 1024
    write_csv(out, runs)
    cells = build_cells(plan, runs)
    rows = summary_rows(cells)
    summ = terminal_summary(meta, rows, cells)
    pt_rows = passthru_rows(plan, cells, load_jsonl(os.path.join(out, "runs.jsonl")))
    if pt_rows:
        summ += "\n" + "\n".join(passthru_summary(pt_rows))
    prof_summ = []
    prof_R = profile_report.section(out, plan, summary=prof_summ)
    if prof_summ:
        summ += "\n" + "\n".join(prof_summ)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(summ + "\n")
    # The same rows for tests/bench/matrix.py (one table across kernels).
    keep = ("exp", "job", "base", "test", "n", "base_iops", "test_iops", "sig", "r", "aa",
            "pr", "pa", "v", "tgt", "ts", "errors", "invalid")
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"kernel": meta.get("kernel"), "git": meta.get("git"), "mode": plan["mode"],
                   "guest_rc": meta.get("guest_rc"),
                   "started": meta.get("started"), "clock": plan.get("clock"),
                   "rows": [{k: r.get(k) for k in keep} for r in rows]}, f, indent=1)
    pngs = plots(out, cells)

    R = []
    R.append("# vblk benchmark report (%s)\n" % plan["mode"])
    R.append("- kernel %s, guest %s vCPUs under TCG (no KVM), fio: %s" % (
        meta.get("kernel", "?"), info.get("ncpu", "?"), info.get("fio", "?")))
    R.append("- git %s, vblk.ko sha256 %s (built %s)%s" % (
        meta.get("git", "?"), meta.get("ko_sha256", "?"), meta.get("ko_mtime", "?"),
        ", a fault-injection test build (vblk/lose)" if meta.get("ko_fault_inject") == "yes" else ""))
    R.append("- started %s, guest wall time %s s, host: %s" % (meta.get("started", "?"),
                                                            meta.get("guest_wall_s", "?"), meta.get("host", "?")))
    R.append("- protocol: %s" % protocol_text(plan))
    if plan.get("clock") == "icount":
        R.append("- clock: **icount** (QEMU `%s`): the guest's clock counts its own instructions, "
                 "8 ns each, so IOPS, latency and CPU shares are per guest second: they measure guest "
                 "instructions per I/O, independent of the host's speed. Work the host does outside the "
                 "guest's instructions (emulating the device, waiting for QEMU's big lock) takes no guest "
                 "time; *host CPU/IO* still counts it. The vCPUs run one at a time in one host "
                 "thread." % plan.get("icount"))
    R.append("- placement: %s; fio job i on guest vCPU i mod %s (cpus_allowed_policy=split)" % (
        pinning_text(out), info.get("ncpu", "?")))
    mem = info.get("memory")
    if mem:
        R.append("- memory: transparent huge pages `%s`, %d hugetlb pages reserved; the 64k job's "
                 "buffers are in hugetlb pages (`iomem=shmhuge`, 1 segment per I/O). In 4k pages "
                 "the number of segments depends on where fio's pages happened to land, and with "
                 "THP on khugepaged changes it under a running job." % (
                     mem.get("thp", "?"), mem.get("hugepages", 0)))
    R.append("- guest_rc=%s%s" % (meta.get("guest_rc", "?"),
                                 " (kernel log problems, see log-problems.txt)" if meta.get("guest_rc") == "3" else ""))
    if setup_errors:
        for s in setup_errors:
            R.append("- **experiment %s could not be set up**: %s" % (s["exp"], s["setup_error"]))
    for s in teardown_errors:
        R.append("- **experiment %s: teardown failed** (the experiments after it ran with what it did not "
                 "undo): %s" % (s["exp"], s["teardown_error"]))
    R.append("")
    R.append("## How to read this\n")
    R.append("Absolute numbers on this machine (2 host cores, software-emulated guest, other guests running "
             "beside it) swing by 2x from boot to boot; only the ratios between arms measured interleaved in "
             "this boot mean anything. *ratio* is test/base of the medians. *A/A* is the same ratio between the "
             "base arm and a control arm configured exactly like it: the noise floor of this boot. A difference "
             "is called a **win** or a **loss** only when it is larger than the A/A spread, than *2 sigma* (twice "
             "the standard error of the ratio expected from the runs' own dispersion: one A/A pair can agree "
             "by luck) and than %d%%; otherwise **within noise**. For latency and CPU-per-I/O a ratio below 1 is the win. A target is **MET** only "
             "when the ratio reaches it and the difference is outside the A/A spread.\n" % (NOISE_FLOOR * 100))

    R.append("## Summary\n")
    hdr = ["experiment", "job", "test / base", "base IOPS", "test IOPS", "ratio", "A/A spread",
           "2 sigma", "2-sigma band", "per-round ratio (A/A)", "verdict",
           "target", "target status", "IOPS/busy CPU-s ratio (A/A)", "host CPU/IO ratio (A/A)",
           "p99 ratio (A/A)"]
    trs = []
    for r in rows:
        trs.append([r["exp"], r["job"], "%s / %s" % (r["test"], r["base"]), fmt("iops", r["base_iops"]),
                    fmt("iops", r["test_iops"]), rs(r["r"]), spread_s(r["aa"]),
                    "-" if r["sig"] is None else "%.1f%%" % (NSIGMA * r["sig"] * 100), band(r["r"], r["sig"]),
                    "%s (%s)" % (rs(r["pr"]), spread_s(r["pa"])), r["v"],
                    ">= %.2f" % r["tgt"] if r["tgt"] else "", r["ts"],
                    "%s (%s) %s" % (rs(r["rc"]), spread_s(r["aac"]), r["vc"]),
                    "%s (%s) %s" % (rs(r["rh"]), spread_s(r["aah"]), r["vh"]),
                    "%s (%s) %s" % (rs(r["rl"]), spread_s(r["aal"]), r["vl"])])
    R.append(md_table(hdr, trs))
    R.append("")
    # Secondary targets.
    extra = []
    for r in rows:
        if "cpu_ts" in r:
            extra.append("- %s %s: IOPS per busy CPU-second ratio %s (A/A %s) vs target >= %.2f: **%s**" % (
                r["exp"], r["job"], rs(r["rc"]), spread_s(r["aac"]), r["cpu_tgt"], r["cpu_ts"] or "-"))
        if "db_ts" in r:
            extra.append("- %s %s: doorbells/IO ratio %s (A/A %s) vs target <= %.3f: **%s**" % (
                r["exp"], r["job"], rs(r.get("rd")), spread_s(r.get("aad")), r["db_tgt"], r["db_ts"] or "-"))
    bad = [r for r in rows if r.get("invalid")]
    if bad:
        R.append("**INVALID cells** (a window completed no I/O: no ratio, no verdict, target MISSED): %s\n" % (
            ", ".join("%s/%s (%s)" % (r["exp"], r["job"], r["invalid"]) for r in bad)))
    noisy = [r for r in rows if r["aa"] is not None and abs(r["aa"] - 1) > 0.05]
    if extra:
        R.append("Other targets:\n")
        R += extra
        R.append("")
    rn = run_noise(cells)
    hn = host_noise_text(load_host_noise(out))
    if noisy:
        R.append("**A/A spread above 5%%** (the issue's goal) in %d of %d cells: %s. Ratios there are weak "
                 "evidence; rerun with more --reps or a longer --window, on a quieter host.\n" % (
                     len(noisy), len(rows), ", ".join("%s/%s %s" % (r["exp"], r["job"], spread_s(r["aa"]))
                                                      for r in noisy)))
    else:
        R.append("A/A spread under 5%% in all %d cells.\n" % len(rows))
    if rn:
        R.append("Noise of one %s in this boot (median over cells and arms of 1.4826 MAD / median of IOPS): "
                 "%.1f%%. With it the A/A ratio of the medians of %d rounds has a standard error of about "
                 "%.1f%%; %d rounds per job would bring that to 2.5%% (an A/A spread under 5%% in 95%% of "
                 "cells).%s\n" % (
                     "slice" if plan.get("protocol") == "slices" else "run", 100 * rn, plan["reps"],
                     100 * 1.2533 * rn * (2.0 / plan["reps"]) ** 0.5, reps_for(rn),
                     " The " + hn + "." if hn else ""))
    for p in pngs:
        R.append("![%s](%s)" % (os.path.basename(p), p))
    R.append("")

    load = [x for c in cells for a in c.arms for x in c.values(a["label"], "host_other_cores")]
    if load:
        R.append("Host load from other processes during the measurement windows: median %.2f, max %.2f "
                 "cores of %d. QEMU emulates the guest's CPUs in software, so CPU that other processes take "
                 "is lost by the guest and shows up as run-to-run noise; *host CPU/IO* (QEMU's CPU time per "
                 "I/O) is the measure least affected by it.\n" % (med(load), max(load), os.cpu_count() or 0))
    R += passthru_section(pt_rows, plan)
    R.append("## Jobs and their scaling\n")
    R.append("The seed threads used 4 to 32 vCPUs; the lab guest has 2. Jobs as run here:\n")
    seen = set()
    for c in cells:
        if c.job["name"] in seen:
            continue
        seen.add(c.job["name"])
        R.append("- `%s`: %s; %s" % (c.job["name"], c.job.get("text", ""), job_opts(c.job)))
    R.append("")
    R.append("## Details\n")
    if plan.get("protocol", "groups") == "slices":
        R.append("Per arm: median [min - max] over the measured slices. IOPS, bandwidth and the window "
                 "metrics (CPU, interrupts, doorbells, host CPU) come from the counters snapshotted at the "
                 "start and end of each slice's window (IOPS: the disk's completed I/Os over the window). "
                 "Latency percentiles are pooled over all of an arm's slices (one value per arm, so min = "
                 "max), from fio's latency histogram without the I/Os that were in flight while the arm "
                 "was stopped (listed as *left out* in guest.log).\n")
    else:
        R.append("Per arm: median [min - max] over the measured runs. Window metrics (CPU, interrupts, "
                 "doorbells, host CPU) come from the counters snapshotted at the start and end of the "
                 "measurement window; IOPS and latency (completion latency percentiles) from fio's JSON.\n")
    for c in cells:
        e = c.exp
        R.append("### %s: %s, job %s\n" % (e["name"], e.get("title", ""), c.job["name"]))
        R.append("`%s`%s\n" % (job_opts(c.job), " (%s)" % c.job["text"] if c.job.get("text") else ""))
        hdr = ["metric"] + ["%s (%s)" % (a["label"], a["role"]) for a in c.arms] + ["ratio test/base", "A/A"]
        trs = []
        for key, label, unit, higher, _ in METRICS:
            cols = []
            anyv = False
            for a in c.arms:
                m, lo, hi, n = c.stat(a["label"], key)
                if m is None:
                    cols.append("-")
                else:
                    anyv = True
                    cols.append("%s [%s - %s]" % (fmt(key, m), fmt(key, lo), fmt(key, hi)))
            if not anyv:
                continue
            r, aa = c.ratios(key)
            trs.append(["%s%s" % (label, " (%s)" % unit if unit else "")] + cols + [rs(r), spread_s(aa)])
        trs.append(["runs"] + [str(len(c.vals[a["label"]])) for a in c.arms] + ["", ""])
        pr = []
        for role in ("test", "control"):
            rr = c.round_ratios("iops", role)
            if rr:
                pr.append("%s/base %.3f [%.3f - %.3f]" % (role, med(rr), min(rr), max(rr)))
        if pr:
            trs.append(["IOPS ratio per round: median [min - max]"] + [""] * len(c.arms)
                       + ["; ".join(pr), ""])
        R.append(md_table(hdr, trs))
        R.append("")
        if c.nerr:
            errs = [r for r in runs if r.get("exp") == e["name"] and r.get("job") == c.job["name"] and r.get("error")]
            R.append("Errors: " + "; ".join("%s: %s" % (r["id"], r["error"][:160]) for r in errs[:5]) + "\n")

    R += prof_R
    R.append("## Arms' configuration\n")
    for k, v in sorted(info.get("arms", {}).items()):
        cfg = " ".join(ln for ln in (v.get("config") or "").split("\n") if ln and not ln.startswith("features"))
        R.append("- %s: /dev/%s on %s%s%s%s" % (k, v["dev"], v["driver"],
                                                "; " + cfg if cfg else "",
                                                "; set %s" % v["set"] if v.get("set") else "",
                                                arm_iothread_text(v.get("iothread"))))
    R.append("\nRaw data: fio/*.json (fio output per run), runs.jsonl / runs.csv (every run with its window "
             "metrics), host-markers.jsonl (QEMU CPU time at each marker), plan.json, guest.log, dmesg.txt.\n")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(R))
    print(summ)
    return 0


if __name__ == "__main__":
    sys.exit(main())
