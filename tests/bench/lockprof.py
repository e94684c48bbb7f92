#!/usr/bin/env python3
"""vblk bench --contention: where the notify arms' CPU time goes.

    lockprof.py OUT      writes OUT/lockprof.md and OUT/lockprof.json,
                         prints the table

Reads OUT/lockprof.jsonl (one record per arm: the window's I/Os, vblk's
counters, the perf script file) and OUT/profile/<job>.<arm>.perf.txt
(`perf record -a -g -e cpu-clock` of that arm alone: in real time one
sample per period_ns of a busy vCPU). For each arm:

- busy us/IO: non-idle samples x period / I/Os of the window;
- spin us/IO: samples whose leaf is the queued spin lock's slow path
  (a vCPU waiting for a lock some other vCPU holds), per I/O, and its share
  of the busy time;
- doorbell us/IO and us per doorbell: samples with vblk_notify on the
  stack (the notification write, a trap to QEMU under TCG, and what leads to
  it), per I/O and per doorbell the counters saw;
- submit us/IO: samples inside vblk_queue_rq / vblk_queue_rqs (the
  submission, which holds the queue lock around the ring update), per I/O;
- irq-off us/IO and per doorbell: samples whose leaf is
  _raw_spin_unlock_irqrestore called from vblk's submission. The queue lock
  is taken with interrupts off, and the cpu-clock sample is a timer
  interrupt: it cannot land while a vCPU spins for the lock or holds it, so
  all that time (the wait, the hold and a doorbell rung inside it, whose
  trap to QEMU under TCG also lands its sample after the write) shows up
  at the unlock that re-enables interrupts. The spin column therefore
  sees only locks taken with interrupts on (mq-deadline's, for one).

A sampled profile cannot time one lock hold; what it can say is how much
of the vCPUs' time waits for or holds the lock and how much rings the
doorbell.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_report as P  # noqa: E402

SPIN = re.compile(r"(native_queued_spin_lock_slowpath|__pv_queued_spin_lock_slowpath|"
                  r"queued_spin_lock_slowpath|pv_wait|__raw_callee_save___pv_queued_spin_unlock_slowpath)")
DOORBELL = re.compile(r"^(vblk_notify|vp_notify)\b")
SUBMIT = re.compile(r"^(vblk_queue_rq|vblk_queue_rqs)\b")
VBLK_SUBMIT = re.compile(r"^(vblk_queue_rq|vblk_queue_rqs|vblk_submit_batch)\b")
IRQRESTORE = re.compile(r"^_raw_spin_unlock_irqrestore\b")


def classify(samples):
    """Counts of busy, spin, doorbell and submit samples (idle left out)."""
    n = {"busy": 0, "spin": 0, "doorbell": 0, "submit": 0, "irqoff": 0}
    for s in samples:
        if P.is_idle(s):
            continue
        n["busy"] += 1
        fr = s["frames"]
        if fr and SPIN.search(fr[0]):
            n["spin"] += 1
        if any(DOORBELL.search(f) for f in fr):
            n["doorbell"] += 1
        if any(SUBMIT.search(f) for f in fr):
            n["submit"] += 1
        if len(fr) > 1 and IRQRESTORE.search(fr[0]) and VBLK_SUBMIT.search(fr[1]):
            n["irqoff"] += 1
    return n


def arm_row(rec, counts):
    """us per I/O (and per doorbell) from the sample counts of one arm."""
    ios = rec.get("win_ios") or 0
    per = rec.get("period_ns", 1000000) / 1000.0  # us per sample
    v = rec.get("vblk") or {}
    db = v.get("doorbells")
    row = {"arm": rec["arm"], "job": rec["job"], "iops": rec.get("win_iops"), "ios": ios,
           "samples": counts["busy"], "doorbells": db,
           "doorbells_per_io": (db / v["requests"]) if db is not None and v.get("requests") else None}
    for k in ("busy", "spin", "doorbell", "submit", "irqoff"):
        row[k + "_us_per_io"] = counts[k] * per / ios if ios else None
    row["spin_share"] = counts["spin"] / counts["busy"] if counts["busy"] else None
    row["us_per_doorbell"] = counts["doorbell"] * per / db if db else None
    row["irqoff_us_per_doorbell"] = counts["irqoff"] * per / db if db else None
    return row


def fmt(v, f="%.2f"):
    return "-" if v is None else f % v


def table(rows):
    h = ["job", "arm", "IOPS", "busy us/IO", "spin us/IO (share)", "submit us/IO",
         "irq-off in submit us/IO", "irq-off us/doorbell",
         "doorbell us/IO", "doorbells/IO", "us/doorbell", "samples"]
    L = ["| " + " | ".join(h) + " |", "|" + "---|" * len(h)]
    for r in rows:
        L.append("| " + " | ".join([
            r["job"], r["arm"], fmt(r["iops"], "%.0f"), fmt(r["busy_us_per_io"]),
            "%s (%s)" % (fmt(r["spin_us_per_io"]), fmt(None if r["spin_share"] is None
                                                        else 100 * r["spin_share"], "%.1f%%")),
            fmt(r["submit_us_per_io"]), fmt(r["irqoff_us_per_io"]), fmt(r["irqoff_us_per_doorbell"], "%.1f"),
            fmt(r["doorbell_us_per_io"]), fmt(r["doorbells_per_io"], "%.3f"),
            fmt(r["us_per_doorbell"], "%.1f"), str(r["samples"])]) + " |")
    return "\n".join(L)


def main():
    out = sys.argv[1]
    recs = [json.loads(ln) for ln in open(os.path.join(out, "lockprof.jsonl")) if ln.strip()]
    ksyms = None
    kp = os.path.join(out, "profile", "kallsyms")
    if os.path.exists(kp):
        with open(kp) as f:
            ksyms = P.Kallsyms(f)
    rows = []
    for rec in recs:
        if rec.get("error") or not rec.get("file"):
            continue
        with open(os.path.join(out, "profile", rec["file"])) as f:
            samples = P.parse_perf_script(f, ksyms)
        # perf's clock and the snapshots' are both CLOCK_MONOTONIC
        samples = P.in_window(samples, rec["t0"], rec["t1"])
        rows.append(arm_row(rec, classify(samples)))
    md = ("## Notify arms under perf (cpu-clock, real time, one arm at a time)\n\n"
          "busy = non-idle vCPU time per I/O; spin = samples in the queued spin lock's slow path "
          "(waiting for a lock another vCPU holds, seen only for locks taken with interrupts on); "
          "submit = inside vblk_queue_rq(s); irq-off = samples at _raw_spin_unlock_irqrestore "
          "called from vblk's submission: the time spent waiting for and holding the queue lock "
          "(interrupts off, so the cpu-clock sample waits for the unlock), the doorbell with it when "
          "notify_in_lock=1; doorbell = inside vblk_notify (~0 under TCG: the trap's sample lands "
          "after the write).\n\n"
          + table(rows) + "\n")
    with open(os.path.join(out, "lockprof.md"), "w") as f:
        f.write(md)
    with open(os.path.join(out, "lockprof.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(md)


if __name__ == "__main__":
    main()
