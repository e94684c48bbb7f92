#!/usr/bin/env python3
"""vblk benchmark, host side: how steady is this machine's own speed?

    host_noise.py OUT [SECONDS]

Before the guest boots, runs the same fixed CPU loop on every host CPU at
once (one process pinned to each) and counts how much of it each CPU gets
done in every half-second window, for SECONDS (default 8). Writes
OUT/host-noise.json: per CPU the relative standard deviation of those
counts, their min and max as fractions of the mean, and the correlation
between the CPUs' windows.

Why: the guest runs under software emulation, so its speed is the host
CPUs' speed. When the host itself (often a virtual machine) swings by
10-15 % from one half second to the next, no protocol can measure a guest
more steadily than that; the report puts this floor next to the A/A spread.
"""
import json
import multiprocessing as mp
import os
import statistics
import sys
import time

WIN = 0.5


def spin(cpu, t_start, t_end, q):
    os.sched_setaffinity(0, {cpu})
    counts = {}
    while time.time() < t_start:
        pass
    while True:
        now = time.time()
        if now >= t_end:
            break
        w = int((now - t_start) / WIN)
        n = 0
        while int((time.time() - t_start) / WIN) == w:
            for _ in range(1000):
                pass
            n += 1
        counts[w] = n
    q.put((cpu, counts))


def corr(x, y):
    mx, my = statistics.mean(x), statistics.mean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / (sxx * syy) ** 0.5 if sxx and syy else None


def main():
    out = sys.argv[1]
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 8.0
    cpus = sorted(os.sched_getaffinity(0))
    t_start = time.time() + 0.3
    q = mp.Queue()
    ps = [mp.Process(target=spin, args=(c, t_start, t_start + secs, q)) for c in cpus]
    for p in ps:
        p.start()
    got = dict(q.get() for _ in ps)
    for p in ps:
        p.join()
    # Drop the last (partial) window of each CPU.
    common = sorted(set.intersection(*(set(c) for c in got.values())))[:-1]
    res = {"window_s": WIN, "seconds": secs, "windows": len(common), "cpus": {}}
    series = {}
    for c in cpus:
        x = [got[c][w] for w in common]
        series[c] = x
        m = statistics.mean(x) if x else 0
        res["cpus"][str(c)] = {
            "rel_sd": statistics.pstdev(x) / m if m else None,
            "min": min(x) / m if m else None,
            "max": max(x) / m if m else None}
    if len(cpus) >= 2 and len(common) > 2:
        res["corr_cpu%d_cpu%d" % (cpus[0], cpus[1])] = corr(series[cpus[0]], series[cpus[1]])
    with open(os.path.join(out, "host-noise.json"), "w") as f:
        json.dump(res, f, indent=1)
    print("bench: host speed noise (CPU loop, %g s windows): %s" % (WIN, ", ".join(
        "cpu%s %.1f%%" % (c, 100 * v["rel_sd"]) for c, v in res["cpus"].items()
        if v["rel_sd"] is not None)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
