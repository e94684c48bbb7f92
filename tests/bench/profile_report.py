#!/usr/bin/env python3
"""vblk benchmark, profile mode (scripts/bench --profile): instructions per
I/O by function, per driver, from the guest's `perf record -a -g -e
cpu-clock` and its irq_handler_entry/exit events (tests/bench/guest_bench.py,
run_profile).

    profile_report.py OUT   print the report section, write OUT/profile/*.svg
                            and OUT/profile/*.folded

Under icount the guest's clock advances 2^shift ns (8 ns) per guest
instruction, so a cpu-clock sample every P ns of a CPU's clock is a sample
every P/8 instructions that CPU ran, and a function's share of the samples
is its share of the instructions. The vCPUs take turns in one host thread
and the clock counts the instructions of whichever vCPU runs: while both
vCPUs are busy, each one's P ns of clock hold only half as many of its own
instructions. So every busy sample weighs 1/n, n the number of CPUs with a
busy sample in the same period-long slot of time (1 when the other CPU is
idle, as in a numjobs-1 job). Then

    instructions per I/O of f = sum of f's sample weights x P / 8 / I/Os

with the I/Os the disk completed in the same window (/sys/block/X/stat).
Self: samples where f is the leaf (the function that ran); inclusive:
samples where f is anywhere on the stack (it or what it called).
Samples of the idle task in the idle loop are left out. Samples the timer
took late because interrupts were off are found from each CPU's timer grid
and, if a traced hard interrupt handler ran then, moved to it (see
"hard interrupts" below).

report.py calls section(); the functions here are small and pure so that
tests/bench/test_profile.py can check them.
"""
import bisect
import hashlib
import html
import json
import os
import re
import sys

HEADER = re.compile(r"^(?P<comm>.+?)\s+(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<time>\d+\.\d+):"
                    r"\s+(?P<period>\d+)")
IRQ_EVENT = re.compile(r"^(?P<comm>.+?)\s+(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<time>\d+\.\d+):\s+"
                       r"irq:irq_handler_(?P<kind>entry|exit):\s+irq=(?P<irq>\d+)(?:\s+name=(?P<name>\S+))?")
KERNEL_BASE = 0xffff800000000000  # x86-64: kernel addresses are above
FRAME = re.compile(r"^\s+(?P<ip>[0-9a-f]+)\s+(?P<sym>.*?)(?:\s+\((?P<dso>[^()]*)\))?\s*$")
# The idle loop's leaves (the idle task's own halt; its interrupts count).
IDLE = re.compile(r"(safe_halt|default_idle|mwait_idle|poll_idle|acpi_idle|intel_idle|"
                  r"cpu_idle_poll|native_halt|^halt$)")


# ---- perf script -> samples -> folded stacks ---------------------------------

def frame_name(sym, dso):
    """A frame's name: the symbol; a kernel module's symbols get " [module]";
    an unknown symbol is its object file's name in brackets."""
    dso = (dso or "").strip()
    if not sym or sym == "[unknown]":
        base = os.path.basename(dso.strip("[]")) if dso and dso != "[unknown]" else "unknown"
        return "[%s]" % base
    if dso.startswith("[") and dso.endswith("]") and dso not in ("[kernel.kallsyms]", "[unknown]") \
            and not dso.startswith("[vdso") and not dso.startswith("[guest"):
        return "%s %s" % (sym, dso)
    if dso.endswith(".ko") or ".ko." in dso:
        return "%s [%s]" % (sym, os.path.basename(dso).split(".ko")[0])
    return sym


class Kallsyms:
    """Text symbols of the guest's boot (OUT/profile/kallsyms, a copy of
    /proc/kallsyms): names kernel and module addresses, the modules'
    with their module."""

    def __init__(self, lines):
        syms = []
        for ln in lines:
            f = ln.split()
            if len(f) >= 3 and f[1] in "tTwW":
                mod = f[3].strip("[]") if len(f) > 3 else ""
                syms.append((int(f[0], 16), f[2], mod))
        syms.sort()
        self.addrs = [a for a, _, _ in syms]
        self.syms = syms

    def name(self, ip):
        """"sym" or "sym [module]" of the symbol at or below ip; None
        below the first or past the last symbol's page."""
        i = bisect.bisect_right(self.addrs, ip) - 1
        if i < 0 or ip - self.addrs[i] > 1 << 20:
            return None
        _, sym, mod = self.syms[i]
        return "%s [%s]" % (sym, mod) if mod else sym


def is_kernel_dso(dso):
    d = (dso or "").strip()
    return d.startswith("[") and d not in ("[unknown]", "[vdso]", "[vsyscall]") or d.endswith(".ko")


def comm_root(comm):
    """A process name without its per-CPU / per-instance tail:
    kworker/0:1H-kblockd -> kworker, ksoftirqd/1 -> ksoftirqd."""
    c = comm.strip()
    c = re.sub(r"/.*$", "", c)
    c = re.sub(r"-\d+$", "", c)
    return c or "?"


def parse_perf_script(lines, ksyms=None, irqs=None):
    """Samples of `perf script -F comm,tid,cpu,time,period,ip,sym,dso`: a
    header line, then the call chain leaf first, then a blank line. Returns
    dicts with comm, tid, cpu, time (s), period (ns), frames (names, leaf
    first). Kernel frames are named from ksyms (a Kallsyms) when given:
    perf script with --kallsyms names module code too but calls its object
    [kernel.kallsyms], and kallsyms says which module it is.
    irq_handler_entry/exit events go to the list irqs when given (dicts
    with kind, cpu, time, irq, name)."""
    samples, cur = [], None
    for ln in lines:
        ln = ln.rstrip("\n")
        if not ln.strip():
            if cur is not None:
                finish_frames(cur)
                samples.append(cur)
                cur = None
            continue
        if not ln.startswith("\t"):  # a header; frames start with a tab
            if cur is not None:
                finish_frames(cur)
                samples.append(cur)
            ln = ln.lstrip()  # perf pads a tracepoint's comm
            m = IRQ_EVENT.match(ln)
            if m:
                cur = None
                if irqs is not None:
                    irqs.append({"kind": m.group("kind"), "cpu": int(m.group("cpu")),
                                 "time": float(m.group("time")), "irq": int(m.group("irq")),
                                 "name": m.group("name") or ""})
                continue
            m = HEADER.match(ln)
            cur = None if m is None else {
                "comm": m.group("comm").strip(), "tid": int(m.group("tid")),
                "cpu": int(m.group("cpu")), "time": float(m.group("time")),
                "period": int(m.group("period")), "frames": []}
            continue
        m = FRAME.match(ln)
        if cur is not None and m:
            sym, dso = m.group("sym"), m.group("dso")
            name = None
            if ksyms is not None and is_kernel_dso(dso):
                name = ksyms.name(int(m.group("ip"), 16))
            cur["frames"].append(name or frame_name(sym, dso))
            cur.setdefault("kern", []).append(int(m.group("ip"), 16) >= KERNEL_BASE)
    if cur is not None:
        finish_frames(cur)
        samples.append(cur)
    return samples


def tidy_frames(frames):
    """User-space call chains of code built without frame pointers (fio,
    libc) come out of perf as long runs of [unknown] or [object] frames
    (garbage return addresses): drop [unknown] frames other than the leaf
    and merge runs of one [object] into one frame."""
    out = []
    for i, fn in enumerate(frames):
        if fn == "[unknown]" and i > 0:
            continue
        if fn.startswith("[") and out and out[-1] == fn:
            continue
        out.append(fn)
    return out


def finish_frames(sample):
    """A sample's frames, tidied, with all of user space as one frame
    [user] (the caller of the system call, or the leaf of a sample taken
    in user space): fio and libc have no frame pointers, so perf's chains
    there are garbage, and perf names their code differently from one fio
    process to the next (a missed map makes libc's syscall [unknown]),
    which would show as differences between the drivers."""
    kern = sample.pop("kern", [])
    fr = [f for f, k in zip(sample["frames"], kern) if k]
    if len(fr) < len(sample["frames"]):
        fr.append("[user]")
    sample["frames"] = tidy_frames(fr)


def is_idle(s):
    """The idle task in the idle loop (not an interrupt it took)."""
    return s["tid"] == 0 and bool(s["frames"]) and bool(IDLE.search(s["frames"][0]))


def in_window(samples, t0, t1):
    return [s for s in samples if t0 <= s["time"] < t1]


def weights(samples, period_ns):
    """Each busy sample's weight: 1/n with n the CPUs that have a busy
    sample in the same period-long slot (module docstring). Idle samples
    are dropped. Returns [(sample, weight)]."""
    slot = {}
    busy = [s for s in samples if not is_idle(s)]
    for s in busy:
        k = int(s["time"] * 1e9 // period_ns)
        slot.setdefault(k, set()).add(s["cpu"])
    return [(s, 1.0 / len(slot[int(s["time"] * 1e9 // period_ns)])) for s in busy]


# ---- hard interrupts ----------------------------------------------------------
#
# The cpu-clock sample is taken in a timer interrupt, which cannot come
# while interrupts are off: a sample due inside a hard interrupt handler
# (or a spin_lock_irqsave section) is taken when interrupts come back on,
# charged to the code there, and later than its time. The timer of each CPU
# fires on a grid (every period from one phase), so a sample's delay after
# its grid point tells it was deferred; if a traced handler ran on that
# CPU at the grid point, the sample belongs to that handler.

DEFER_NS = 2000


def grid_delays(samples, period_ns):
    """Per sample (same order): ns after its CPU's grid point. The phase
    of a CPU is the most common 1 us bin of time mod period."""
    phase = {}
    for cpu in {s["cpu"] for s in samples}:
        bins = {}
        for s in samples:
            if s["cpu"] == cpu:
                b = int(round(s["time"] * 1e9)) % period_ns // 1000
                bins[b] = bins.get(b, 0) + 1
        phase[cpu] = max(bins, key=lambda b: (bins[b], -b)) * 1000
    return [(int(round(s["time"] * 1e9)) - phase[s["cpu"]]) % period_ns for s in samples]


def irq_intervals(irqs):
    """Per CPU, sorted [(entry s, exit s, name)] of the traced hard
    interrupt handlers (an entry and the next exit of the same irq)."""
    by, pending = {}, {}
    for e in sorted(irqs, key=lambda e: e["time"]):
        if e["kind"] == "entry":
            pending[e["cpu"]] = e
            continue
        b = pending.pop(e["cpu"], None)
        if b is not None and b["irq"] == e["irq"]:
            by.setdefault(e["cpu"], []).append((b["time"], e["time"], b["name"]))
    return by


def handler_at(intervals, cpu, t):
    """The handler running on cpu at time t, or None."""
    iv = intervals.get(cpu) or []
    i = bisect.bisect_right(iv, (t, float("inf"), "")) - 1
    if i >= 0 and iv[i][0] <= t <= iv[i][1]:
        return iv[i][2]
    return None


def attribute_hardirq(samples, delays, intervals, disk_irq=None):
    """Samples deferred past a grid point at which a traced handler ran
    become samples of that handler: process "hardirq", one frame
    "[hardirq NAME]", or "[hardirq: disk]" for the profiled disk's own
    interrupt (named disk_irq), so that the two drivers' handlers compare.
    Returns (samples, number moved)."""
    out, moved = [], 0
    for s, d in zip(samples, delays):
        name = handler_at(intervals, s["cpu"], s["time"] - d / 1e9) if d > DEFER_NS else None
        if name is None:
            out.append(s)
            continue
        moved += 1
        disk = name in disk_irq if isinstance(disk_irq, (set, frozenset, list, tuple)) else name == disk_irq
        frame = "[hardirq: disk]" if disk else "[hardirq %s]" % name
        out.append(dict(s, comm="hardirq", tid=-1, frames=[frame]))
    return out, moved


def disk_irqs(handlers, match=None):
    """All of the profiled disk's interrupts among the traced handlers:
    with a prefix match (virtio_blk: "virtio3-", one name per queue,
    virtio3-req.0, virtio3-req.1, ...) every handler with that prefix,
    as a job on both vCPUs takes both queues' interrupts (vblk's queues
    share one name); else the one disk_irq_name finds."""
    if match and match[0] == "prefix" and match[1]:
        names = {n for n in handlers if n.startswith(match[1])}
        if names:
            return names
    one = disk_irq_name(handlers, match)
    return {one} if one else set()


def disk_irq_name(handlers, match=None):
    """The profiled disk's interrupt among the traced handlers ({name:
    [calls, ns]}): the one guest_bench's irq_names matched (["exact",
    name] or ["prefix", "virtio3-"]), else the one with the most time."""
    if match and match[0] in ("exact", "prefix") and match[1]:
        for name in sorted(handlers, key=lambda n: (-handlers[n][1], n)):
            if name == match[1] or (match[0] == "prefix" and name.startswith(match[1])):
                return name
    return max(handlers, key=lambda n: handlers[n][1]) if handlers else None


def fold(weighted):
    """Folded stacks: "root;caller;...;leaf" -> summed weight; the root is
    the process name (comm_root)."""
    f = {}
    for s, w in weighted:
        key = ";".join([comm_root(s["comm"])] + list(reversed(s["frames"])))
        f[key] = f.get(key, 0.0) + w
    return f


def self_incl(folded):
    """Per function: self (leaf) and inclusive (anywhere on the stack, once
    per stack) weights; the process root is not a function."""
    self_w, incl = {}, {}
    for key, w in folded.items():
        fr = key.split(";")[1:]
        if not fr:
            continue
        self_w[fr[-1]] = self_w.get(fr[-1], 0.0) + w
        for fn in set(fr):
            incl[fn] = incl.get(fn, 0.0) + w
    return self_w, incl


def read_folded(path):
    f = {}
    with open(path) as fh:
        for ln in fh:
            key, _, w = ln.rstrip("\n").rpartition(" ")
            if key:
                f[key] = f.get(key, 0.0) + float(w)
    return f


def write_folded(path, folded):
    with open(path, "w") as fh:
        for key in sorted(folded):
            fh.write("%s %.6g\n" % (key, folded[key]))


# ---- flame graph --------------------------------------------------------------

def tree(folded):
    """Nested {name: [weight, children]} from folded stacks."""
    root = ["all", 0.0, {}]
    for key, w in folded.items():
        root[1] += w
        node = root
        for fn in key.split(";"):
            node = node[2].setdefault(fn, [fn, 0.0, {}])
            node[1] += w
    return root


def color(name, drivers=("[vblk]", "[virtio_blk]")):
    """Warm colours from a hash of the name (stable across graphs); the
    block drivers' own functions blue, user space grey-green."""
    h = int(hashlib.md5(name.encode()).hexdigest()[:6], 16)
    a, b = h & 0xff, (h >> 8) & 0xff
    if any(name.endswith(d) for d in drivers):
        return "rgb(%d,%d,%d)" % (60 + a % 60, 120 + b % 60, 230)
    if name.startswith("["):
        return "rgb(%d,%d,%d)" % (150 + a % 40, 180 + b % 40, 150)
    return "rgb(%d,%d,%d)" % (220 + a % 35, 90 + b % 110, 40 + (h >> 16) % 50)


def flame_svg(folded, title, unit_per_weight=None, unit="instructions/IO", width=1200, row=17):
    """A flame graph: the root at the bottom, each frame a rectangle as wide
    as its share of the samples, its callees stacked on top of it; name as
    text where it fits, and a tooltip (<title>) with samples, share and
    unit_per_weight x weight (e.g. instructions per I/O)."""
    root = tree(folded)
    total = root[1] or 1.0
    rects = []

    def depth(node):
        return 1 + max((depth(c) for c in node[2].values()), default=0)

    rows = depth(root)
    top = 40
    height = top + rows * row + 20

    def walk(node, x, d):
        w = node[1] / total * (width - 20)
        if w >= 0.3:
            rects.append((node, 10 + x, d, w))
        cx = x
        for c in sorted(node[2].values(), key=lambda n: n[0]):
            walk(c, cx, d + 1)
            cx += c[1] / total * (width - 20)

    walk(root, 0.0, 0)
    out = ['<?xml version="1.0" standalone="no"?>',
           '<svg version="1.1" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg" '
           'font-family="Verdana, sans-serif" font-size="11">' % (width, height),
           '<rect x="0" y="0" width="%d" height="%d" fill="rgb(250,250,245)"/>' % (width, height),
           '<text x="%d" y="20" text-anchor="middle" font-size="15">%s</text>' % (
               width // 2, html.escape(title)),
           '<text x="10" y="34" font-size="10" fill="rgb(90,90,90)">width: share of the guest\'s '
           'instructions (cpu-clock samples under icount); hover for numbers; blue: the block '
           'driver module</text>']
    for node, x, d, w in rects:
        name, wt = node[0], node[1]
        y = height - 20 - (d + 1) * row
        tip = "%s: %.1f samples, %.2f%%" % (name, wt, 100 * wt / total)
        if unit_per_weight:
            tip += ", %.0f %s" % (wt * unit_per_weight, unit)
        out.append('<g><title>%s</title><rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" '
                   'rx="2"/>' % (html.escape(tip), x, y, w, row - 1,
                                 "rgb(200,200,200)" if d == 0 else color(name)))
        chars = int((w - 4) / 6.5)
        if chars >= 3:
            txt = name if len(name) <= chars else name[:chars - 2] + ".."
            out.append('<text x="%.2f" y="%d">%s</text>' % (x + 2, y + row - 5, html.escape(txt)))
        out.append('</g>')
    out.append('</svg>')
    return "\n".join(out) + "\n"


# ---- numbers and tables -----------------------------------------------------

def ns_per_insn(plan):
    """Guest ns per instruction under icount (2^shift), None without it."""
    m = re.search(r"shift=(\d+)", (plan or {}).get("icount") or "")
    return 2 ** int(m.group(1)) if m else None


def analyse(rec, samples, ns_insn, irqs=()):
    """One driver's window: folded stacks and the numbers of the report.
    Weights are turned into instructions per I/O by k = period / ns_insn /
    I/Os. irqs: the irq_handler_entry/exit events (may be empty)."""
    period = rec["period_ns"]
    samples = [s for s in samples if s["period"] == period]  # cpu-clock only
    win = in_window(samples, rec["t0"], rec["t1"])
    delays = grid_delays(win, period)
    ivs = irq_intervals([e for e in irqs if rec["t0"] <= e["time"] < rec["t1"]])
    handlers = {}
    for iv in ivs.values():
        for a, b, name in iv:
            h = handlers.setdefault(name, [0, 0.0])
            h[0] += 1
            h[1] += (b - a) * 1e9
    disk_irq = disk_irqs(handlers, rec.get("irq_match"))
    win, moved = attribute_hardirq(win, delays, ivs, disk_irq)
    wt = weights(win, period)
    folded = fold(wt)
    ios = rec.get("win_ios") or 0
    k = period / ns_insn / ios if ios and ns_insn else None
    busy_w = sum(w for _, w in wt)
    first = min((s["time"] for s in samples), default=None)
    deferred = sum(1 for s, d in zip(win, delays) if d > DEFER_NS and not is_idle(s))
    res = {"folded": folded, "k": k, "ios": ios, "iops": rec.get("win_iops"),
           "win_s": rec["t1"] - rec["t0"], "n_window": len(win), "n_busy": len(wt),
           "n_idle": len(win) - len(wt), "busy_w": busy_w,
           "busy_ns_stat": rec.get("guest_busy_s", 0) * 1e9,
           "idle_ns_stat": (rec["guest_cpu_total_s"] - rec.get("guest_busy_s", 0)) * 1e9
           if "guest_cpu_total_s" in rec else None,
           "busy_ns_samples": len(wt) * period, "insn_ns_samples": busy_w * period,
           "perf_late": first is not None and first > rec["t0"] + 2 * period / 1e9,
           "perf_share": sum(w for s, w in wt if comm_root(s["comm"]) == "perf") / busy_w if busy_w else 0,
           "deferred": deferred / len(wt) if wt else 0, "moved": moved,
           "irq_traced": bool(rec.get("irq_trace")), "handlers": handlers, "disk_irq": disk_irq,
           "hardirq_w": sum(w for s, w in wt if s["comm"] == "hardirq")}
    res["self"], res["incl"] = self_incl(folded)
    if k:
        res["ipio"] = busy_w * k
        res["ipio_stat"] = res["busy_ns_stat"] / ns_insn / ios
        res["ipio_wall"] = res["win_s"] * 1e9 / ns_insn / ios
        res["hardirq_ipio_traced"] = sum(h[1] for h in handlers.values()) / ns_insn / ios
        res["hardirq_ipio_samples"] = res["hardirq_w"] * k
    return res


def top(d, k, n):
    return sorted(((fn, w * k) for fn, w in d.items()), key=lambda x: (-x[1], x[0]))[:n]


def diff_rows(a, b, n=25):
    """vblk minus virtio_blk per function: (fn, self a, self b, d self,
    incl a, incl b, d incl) in instructions per I/O, sorted by the larger
    of |d self| and |d incl|."""
    fns = set(a["self"]) | set(b["self"]) | set(a["incl"]) | set(b["incl"])
    rows = []
    for fn in fns:
        sa, sb = a["self"].get(fn, 0) * a["k"], b["self"].get(fn, 0) * b["k"]
        ia, ib = a["incl"].get(fn, 0) * a["k"], b["incl"].get(fn, 0) * b["k"]
        rows.append((fn, sa, sb, sb - sa, ia, ib, ib - ia))
    rows.sort(key=lambda r: (-max(abs(r[3]), abs(r[6])), r[0]))
    return rows[:n]


# Where a job's instructions go, coarsely: each folded stack goes to the
# first category whose test matches (root = the process, frames = the
# stack). Interrupts come first: one taken in fio's or the idle task's
# context belongs to it (its handler, entry and exit, and the softirqs run
# on the way out, where the block layer may complete I/O).
INTR = re.compile(r"^(asm_)?(common_interrupt|sysvec_|__sysvec_)|^\[hardirq")
CATEGORIES = [
    ("perf (the profiler)", lambda root, fr: root == "perf"),
    ("interrupts (handlers, entry and exit, softirqs on exit)",
     lambda root, fr: root == "hardirq" or any(INTR.search(f) for f in fr)),
    ("idle task outside interrupts (waking up, going to sleep)", lambda root, fr: root == "swapper"),
    ("ksoftirqd", lambda root, fr: root == "ksoftirqd"),
    ("kworker", lambda root, fr: root == "kworker"),
    ("fio: io_submit", lambda root, fr: root == "fio" and "__x64_sys_io_submit" in fr),
    ("fio: io_getevents", lambda root, fr: root == "fio" and any(
        f in ("__x64_sys_io_getevents", "__x64_sys_io_pgetevents") for f in fr)),
    ("fio: other kernel", lambda root, fr: root == "fio" and any(f != "[user]" for f in fr)),
    ("fio: user space", lambda root, fr: root == "fio"),
    # passthru's jobs (tools/vblk-ptbench): submission and reaping are one
    # system call, io_uring_enter; task-work completions run inside it.
    ("vblk-ptbench: io_uring_enter", lambda root, fr: root == "vblk-ptbench" and "__x64_sys_io_uring_enter" in fr),
    ("vblk-ptbench: other kernel", lambda root, fr: root == "vblk-ptbench" and any(f != "[user]" for f in fr)),
    ("vblk-ptbench: user space", lambda root, fr: root == "vblk-ptbench"),
    ("other processes", lambda root, fr: True),
]


def categories(folded):
    """{category: weight} of folded stacks (CATEGORIES: every stack in
    exactly one, so they add up to the total)."""
    out = {}
    for key, w in folded.items():
        parts = key.split(";")
        root, fr = parts[0], parts[1:]
        name = next(c for c, test in CATEGORIES if test(root, fr))
        out[name] = out.get(name, 0.0) + w
    return out


def time_split(r, ns_insn, ncpu=2):
    """Per I/O: guest wall time, busy instructions (samples) and their
    time, idle = wall - busy (the time no guest instruction ran: under
    icount with sleep=on the guest's clock then follows the host's, so
    this is the wait for the host), and the vCPUs' busy time from
    /proc/stat's idle (ncpu x wall - idle: /proc/stat's idle is measured,
    its user and system are counted in ticks, which miss short busy
    spells). us, instructions."""
    wall = r["win_s"] * 1e6 / r["ios"]
    busy = r["ipio"] * ns_insn / 1000
    idle_stat = r.get("idle_ns_stat")
    return {"wall_us": wall, "busy_insn": r["ipio"], "busy_us": busy,
            "busy_cpu_us": (ncpu * r["win_s"] * 1e9 - idle_stat) / 1000 / r["ios"] if idle_stat is not None else None,
            "idle_us": wall - busy, "busy_share": busy / wall if wall else 0}


def slice_runs(out, exp, job):
    """The measured slices of exp's job (OUT/runs.jsonl: recorded, without
    an error), all arms; [] if it did not run."""
    path = os.path.join(out, "runs.jsonl")
    if not exp or not os.path.exists(path):
        return []
    with open(path) as f:
        rows = [json.loads(ln) for ln in f if ln.strip()]
    return [r for r in rows if r.get("exp") == exp and r.get("job") == job and r.get("record")
            and not r.get("error")]


def med(xs):
    """The upper median (the middle value, no averaging)."""
    return sorted(xs)[len(xs) // 2]


def slices_split(out, exp, job, arm, ncpu=2):
    """The same job and arm in the experiment's slices (no perf running):
    medians of IOPS, wall us/IO and the vCPUs' busy time per I/O from
    /proc/stat's idle (ncpu x wall - idle); None if it did not run."""
    v = [r for r in slice_runs(out, exp, job)
         if r.get("arm") == arm and r.get("win_ios") and "guest_cpu_total_s" in r]
    if not v:
        return None
    return {"n": len(v), "iops": med([r["win_iops"] for r in v]),
            "wall_us": med([r["win_s"] * 1e6 / r["win_ios"] for r in v]),
            "busy_cpu_us": med([(ncpu * r["win_s"] - r["guest_cpu_total_s"] + r["guest_busy_s"]) * 1e6 / r["win_ios"]
                                for r in v])}


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def md_fn(fn):
    return "`%s`" % fn.replace("|", "\\|")


def load_records(out):
    recs = []
    p = os.path.join(out, "profile.jsonl")
    if os.path.exists(p):
        with open(p) as f:
            recs = [json.loads(ln) for ln in f if ln.strip()]
    return recs


def driver_block(label, job, r, svg_rel, n):
    R = ["#### %s, %s\n" % (label, job)]
    R.append("%d I/Os in %.2f s (%.0f IOPS); %d samples in the window, %d busy, %d idle; "
             "**%.0f instructions per I/O** (samples); perf's own process %.1f%% of them. "
             "Flame graph: [%s](%s)\n" % (
                 r["ios"], r["win_s"], r["iops"] or 0, r["n_window"], r["n_busy"], r["n_idle"],
                 r["ipio"], 100 * r["perf_share"], os.path.basename(svg_rel), svg_rel))
    rows = []
    st, it = top(r["self"], r["k"], n), top(r["incl"], r["k"], n)
    for i in range(max(len(st), len(it))):
        a = st[i] if i < len(st) else ("", None)
        b = it[i] if i < len(it) else ("", None)
        rows.append([i + 1, md_fn(a[0]) if a[0] else "", "%.0f" % a[1] if a[1] is not None else "",
                     "%.1f%%" % (100 * a[1] / r["ipio"]) if a[1] is not None else "",
                     md_fn(b[0]) if b[0] else "", "%.0f" % b[1] if b[1] is not None else "",
                     "%.1f%%" % (100 * b[1] / r["ipio"]) if b[1] is not None else ""])
    R.append(md_table(["#", "function (self)", "instr/IO", "share", "function (inclusive)",
                       "instr/IO", "share"], rows))
    R.append("")
    return R


def plan_job(prof, job):
    """The profile's job of this name as the plan gives it ({} if none)."""
    return next((j for j in prof.get("jobs") or [] if isinstance(j, dict) and j.get("name") == job), {})


def job_arms(prof, job, recs):
    """The arm labels of a job, in order: the plan's job's own "arms"
    ("EXP:LABEL" for another experiment's arm) or the profile's; arms of
    records the plan does not name at the end."""
    pj = plan_job(prof, job)
    arms = [a.rpartition(":")[2] for a in pj.get("arms") or prof.get("arms") or ["virtio_blk", "vblk"]]
    for rec in recs:
        if rec.get("job") == job and rec.get("arm") not in arms:
            arms.append(rec.get("arm"))
    return arms


def comparisons(prof, arms):
    """(test, reference) pairs of a job's arms: the profile's test (its
    last arm, vblk) against its base (the first, virtio_blk) and any other
    arm of the profile, then against every other arm of the job
    (null_blk)."""
    pa = prof.get("arms") or ["virtio_blk", "vblk"]
    test = pa[-1]
    # passthru's profile (plan.py PT_PROFILE) has three: the passthrough
    # against virtio_blk, then against vblk's block path.
    return [(test, ref) for ref in pa[:-1] + [a for a in arms if a not in pa]]


def job_fio(prof, job):
    """The job's fio options; for a vblk-ptbench job (passthru), its queue
    depth as fio's iodepth."""
    pj = plan_job(prof, job)
    if "ptbench" in pj:
        return {"iodepth": pj["ptbench"].get("qd")}
    return pj.get("fio") or {}


def detail_job(prof, job, arms):
    """Jobs that get the time split and the categories: QD1 (the guest
    waits for the host between I/Os) and jobs with more arms than the
    profile's two (null_blk: what vblk pays that no device costs)."""
    return (str(job_fio(prof, job).get("iodepth")) == "1" or len(arms) > len(prof.get("arms") or [0, 0])
            or "ptbench" in plan_job(prof, job))


def split_block(out, job, arms, res, cmps, ns_insn, ncpu=2):
    """Markdown: per I/O wall, busy and idle time of each arm, what the
    difference of the walls is made of, and the same from the
    experiment's slices, which ran without perf."""
    R = ["#### Time per I/O, %s: busy instructions and idle\n" % job]
    R.append("*wall*: the window's guest time / I/Os (1 / IOPS; one fio job: the I/Os follow one another). "
             "*busy*: the instructions per I/O of all busy samples (both vCPUs, weighted as above) x %d ns. "
             "*idle* = wall - busy: the time per I/O in which no guest instruction ran; under icount with "
             "`sleep=on` the guest's clock then follows the host's, so this is the wait for the host (QEMU's "
             "device emulation, the doorbell's exit, the interrupt's injection), and perf's own sampling work, "
             "which no sample sees. *vCPUs busy*: %d x wall - idle of /proc/stat, per I/O: both vCPUs' "
             "non-idle time (/proc/stat's idle is measured; its user and system time is counted in ticks, "
             "which at QD1 miss most short busy spells: that is why *(busy CPU)* above is low here); it "
             "counts time in which both vCPUs were busy twice, so it is an upper bound of busy.\n"
             % (ns_insn, ncpu))
    rows, sp = [], {}
    for arm in arms:
        r = res.get((job, arm))
        if not r:
            continue
        t = sp[arm] = time_split(r, ns_insn, ncpu)
        rows.append([arm, "%.0f" % (r["iops"] or 0), "%.1f" % t["wall_us"], "%.0f" % t["busy_insn"],
                     "%.1f" % t["busy_us"], "%.1f" % t["idle_us"], "%.1f%%" % (100 * t["busy_share"]),
                     "%.1f" % t["busy_cpu_us"] if t["busy_cpu_us"] is not None else "-"])
    R.append(md_table(["driver", "IOPS", "wall us/IO", "busy instr/IO", "busy us/IO", "idle us/IO",
                       "busy share of wall", "vCPUs busy us/IO (/proc/stat)"], rows))
    R.append("")
    for test, ref in cmps:
        a, b = sp.get(ref), sp.get(test)
        if not (a and b):
            continue
        R.append("- %s vs %s: wall %+.1f us/IO = busy %+.1f us (%+.0f instructions) + idle %+.1f us; IOPS ratio "
                 "%s / %s %.3f. With %s's idle time as measured and no guest instructions at all the ratio "
                 "would be at most %.3f; with its busy time as measured and idle as %s's, %.3f." % (
                     test, ref, b["wall_us"] - a["wall_us"], b["busy_us"] - a["busy_us"],
                     b["busy_insn"] - a["busy_insn"], b["idle_us"] - a["idle_us"], test, ref,
                     a["wall_us"] / b["wall_us"], test, a["wall_us"] / b["idle_us"] if b["idle_us"] > 0 else 0,
                     ref, a["wall_us"] / (b["busy_us"] + a["idle_us"])))
    R.append("")
    rows = []
    for arm in arms:
        r = res.get((job, arm))
        sl = slices_split(out, r["rec"].get("exp") if r else None, job, arm, ncpu)
        if sl:
            rows.append([arm, sl["n"], "%.0f" % sl["iops"], "%.1f" % sl["wall_us"], "%.1f" % sl["busy_cpu_us"],
                         "%.1f" % (sl["wall_us"] - sl["busy_cpu_us"])])
    if rows:
        R.append("Without perf: the experiment's slices of the same job (medians). perf's sampling (and its irq "
                 "tracepoints) cost guest instructions, which at QD1 lengthen the wall of the profile windows "
                 "above; the slices' *idle at least* = wall - vCPUs busy is the time in which no vCPU ran.\n")
        R.append(md_table(["driver", "slices", "IOPS", "wall us/IO", "vCPUs busy us/IO (/proc/stat)",
                           "idle at least, us/IO"], rows))
        R.append("")
    return R


def category_block(job, arms, res, cmps):
    """Markdown: instructions per I/O by CATEGORIES, per arm, and the
    differences of the comparisons."""
    cats = {arm: categories(res[(job, arm)]["folded"]) for arm in arms if (job, arm) in res}
    ks = {arm: res[(job, arm)]["k"] for arm in cats}
    cmps = [(t, r) for t, r in cmps if t in cats and r in cats]
    R = ["#### Instructions per I/O by kind, %s\n" % job]
    R.append("Every busy sample's stack in one kind, the first that fits: an interrupt (any stack with an "
             "interrupt entry frame, or a handler's moved sample) belongs to *interrupts* whatever it "
             "interrupted, fio's system calls by the call. The kinds add up to the total.\n")
    rows = []
    for name, _ in CATEGORIES + [("total", None)]:
        v = {arm: (sum(cats[arm].values()) if name == "total" else cats[arm].get(name, 0.0)) * ks[arm]
             for arm in cats}
        if name != "total" and not any(round(x) for x in v.values()):
            continue
        rows.append([name] + ["%.0f" % v[arm] for arm in cats] +
                    ["%+.0f" % (v[t] - v[r]) for t, r in cmps])
    R.append(md_table(["kind"] + list(cats) + ["%s - %s" % c for c in cmps], rows))
    R.append("")
    return R


def section(out, plan=None, n=20, summary=None):
    """The report's profile section (markdown lines); writes the flame
    graphs and folded stacks into OUT/profile/. [] without profile data.
    One line per job for the terminal summary is appended to `summary`
    (a list) when given."""
    recs = load_records(out)
    if not recs:
        return []
    if plan is None:
        with open(os.path.join(out, "plan.json")) as f:
            plan = json.load(f)
    ns_insn = ns_per_insn(plan)
    prof = plan.get("profile") or {}
    R = ["## Profile: instructions per I/O by function\n"]
    R.append(
        "`scripts/bench --profile`: after the experiments, each driver's disk of drv (for passthru's jobs: "
        "each of passthru's three paths, driven by vblk-ptbench) ran the job alone "
        "(fio, %s s after %s s of settling) under `perf record -a -g -e cpu-clock/period=%s/` (a sample "
        "every %s ns of each CPU's clock, with its call chain; user space, whose chains perf cannot "
        "walk in fio, is one frame `[user]`). %s Per function, **instructions per I/O = "
        "(sum of its sample weights) x period / %s ns / I/Os**: a sample's weight is 1, or 1/2 when both "
        "vCPUs had a busy sample in the same period-long slot (the vCPUs take turns, and the clock "
        "counts the instructions of the one running); I/Os are the disk's completions "
        "(/sys/block/X/stat) in the same window. *Self*: the function was the leaf (its own "
        "instructions); *inclusive*: it was anywhere on the stack (it and all it called). Idle-loop "
        "samples are left out. Flame graphs: one rectangle per function on a call path, as wide as its "
        "share of the instructions, callers below callees; hover for samples and instructions per I/O; "
        "the driver modules' functions are blue. The folded stacks (`profile/*.folded`, weight per "
        "stack) are the data behind them.\n\n"
        "**Interrupts off.** The cpu-clock sample is taken in a timer interrupt, so none is taken while "
        "interrupts are off: a sample due inside a hard interrupt handler or a `spin_lock_irqsave` "
        "section is taken when interrupts come back on and charged to the code there (e.g. "
        "`_raw_spin_unlock_irqrestore`: read its self instructions as those of the section it ends, "
        "in its caller). Each CPU's timer fires on a grid (every period from a fixed phase), so a "
        "sample more than %d ns after its grid point was deferred (*deferred* below). When the boot "
        "also traced `irq:irq_handler_entry/exit`, a deferred sample whose grid point fell inside a "
        "handler on that CPU is moved to that handler (process `hardirq`, frame `[hardirq NAME]`); "
        "the handlers' traced time (exit - entry, the clock counting instructions) is the "
        "cross-check: *hard irq instr/IO, traced / sampled*. The move is approximate (sampled / traced "
        "went from 0.2 to 1.45 in the first boots, 2026-12-06): for the handlers read the traced "
        "table; samples of a handler that were not moved are charged to the code it interrupted.\n" % (
            prof.get("seconds", "?"), prof.get("warm", "?"), prof.get("period_ns", "?"),
            prof.get("period_ns", "?"),
            ("Under icount (`%s`) the guest's clock advances %d ns per guest instruction, so a CPU's "
             "cpu-clock samples fall every period/%d instructions it ran, and sample shares are "
             "instruction shares." % (plan.get("icount"), ns_insn, ns_insn)) if ns_insn else
            "**This boot ran in real time, not under icount: samples are shares of guest time, not of "
            "instructions, and the instruction counts below assume 8 ns per instruction.**",
            ns_insn or 8, DEFER_NS))
    ns_insn = ns_insn or 8
    pdir = os.path.join(out, "profile")
    ksyms = None
    if os.path.exists(os.path.join(pdir, "kallsyms")):
        with open(os.path.join(pdir, "kallsyms")) as f:
            ksyms = Kallsyms(f)
    res = {}
    for rec in recs:
        key = (rec.get("job"), rec.get("arm"))
        if rec.get("error") and "t0" not in rec:
            R.append("- **%s %s: no profile**: %s" % (key[0], key[1], rec["error"]))
            continue
        try:
            irqs = []
            with open(os.path.join(pdir, rec["file"])) as f:
                samples = parse_perf_script(f, ksyms, irqs)
        except OSError as e:
            R.append("- **%s %s: no perf script output**: %s" % (key[0], key[1], e))
            continue
        r = analyse(rec, samples, ns_insn, irqs)
        if not r["k"]:
            R.append("- **%s %s: no I/O in the window**" % key)
            continue
        stem = rec["file"].replace(".perf.txt", "")
        write_folded(os.path.join(pdir, stem + ".folded"), r["folded"])
        with open(os.path.join(pdir, stem + ".svg"), "w") as f:
            f.write(flame_svg(r["folded"], "%s, %s: %.0f instructions per I/O" % (
                rec["arm"], rec["job"], r["ipio"]), unit_per_weight=r["k"]))
        r["svg"] = "profile/%s.svg" % stem
        r["rec"] = rec
        res[key] = r
    jobs = []
    for rec in recs:
        if rec.get("job") not in jobs:
            jobs.append(rec.get("job"))
    jarms = {job: job_arms(prof, job, recs) for job in jobs}
    jcmps = {job: comparisons(prof, jarms[job]) for job in jobs}
    R.append("### Totals and the check of the method\n")
    R.append("*instr/IO (samples)*: the sum above over all busy samples. *(busy CPU)*: busy CPU time from "
             "/proc/stat over the window / %d ns / I/Os (counts both vCPUs' time in full, and perf's own "
             "sampling work, which no sample sees). *(wall)*: the window's guest time / %d ns / I/Os, the "
             "upper bound (all instructions of the guest, when some vCPU is always busy). "
             "*busy samples x period / busy CPU*: how much of /proc/stat's busy time the samples account "
             "for. *perf*: perf's own process in the busy samples.\n" % (ns_insn, ns_insn))
    trs = []
    for job in jobs:
        for arm in jarms[job]:
            r = res.get((job, arm))
            if not r:
                continue
            trs.append([job, arm, "%.0f" % (r["iops"] or 0), r["n_busy"], "%.0f" % r["ipio"],
                        "%.0f" % r["ipio_stat"], "%.0f" % r["ipio_wall"],
                        "%.2f" % (r["busy_ns_samples"] / r["busy_ns_stat"]) if r["busy_ns_stat"] else "-",
                        "%.1f%%" % (100 * r["perf_share"]), "%.1f%%" % (100 * r["deferred"]),
                        "%.0f / %.0f" % (r["hardirq_ipio_traced"], r["hardirq_ipio_samples"])
                        if r["irq_traced"] else "not traced",
                        "yes" if r["perf_late"] else "no"])
    R.append(md_table(["job", "driver", "IOPS", "busy samples", "instr/IO (samples)", "(busy CPU)",
                       "(wall)", "busy samples x period / busy CPU", "perf", "deferred",
                       "hard irq instr/IO, traced / sampled", "perf started late"], trs))
    R.append("")
    # The ratios, grouped by the reference arm (virtio_blk first).
    refs = []
    for job in jobs:
        for test, ref in jcmps[job]:
            if (test, ref) not in refs:
                refs.append((test, ref))
    for test, ref in refs:
        ratios = []
        for job in jobs:
            a, b = res.get((job, ref)), res.get((job, test))
            if (test, ref) in jcmps[job] and a and b:
                ratios.append("- %s: %s / %s instructions per I/O %.3f (samples), %.3f (busy CPU), %.3f (wall); "
                              "IOPS ratio in the profile windows %.3f%s" % (
                                  job, test, ref, b["ipio"] / a["ipio"], b["ipio_stat"] / a["ipio_stat"],
                                  b["ipio_wall"] / a["ipio_wall"], (b["iops"] or 0) / (a["iops"] or 1),
                                  ratio_text(out, job, a["rec"].get("exp"), ref, b["rec"].get("exp"), test)))
                if summary is not None:
                    summary.append("profile %s: instructions per I/O %s %.0f, %s %.0f, ratio %.3f "
                                   "(report.md, profile/*.svg)" % (job, ref, a["ipio"], test, b["ipio"],
                                                                  b["ipio"] / a["ipio"]))
        if ratios:
            R.append("Ratio %s / %s (below 1: %s needs fewer instructions per I/O):\n" % (test, ref, test))
            R += ratios
            R.append("")
    for job in jobs:
        arms = jarms[job]
        R.append("### %s\n" % job)
        for arm in arms:
            r = res.get((job, arm))
            if r:
                R += driver_block(arm, job, r, r["svg"], n)
        hrows = []
        for arm in arms:
            r = res.get((job, arm))
            if r and r["irq_traced"]:
                for name, (calls, ns) in sorted(r["handlers"].items(), key=lambda x: (-x[1][1], x[0])):
                    hrows.append([arm, "`%s`%s" % (name, " (the disk)" if name in r["disk_irq"] else ""), "%.3f" % (calls / r["ios"]), "%.0f" % (ns / ns_insn / calls),
                                  "%.0f" % (ns / ns_insn / r["ios"])])
        if hrows:
            R.append("#### Hard interrupt handlers, %s (traced)\n" % job)
            R.append("From `irq:irq_handler_entry/exit` in the window: the handler alone (not the "
                     "interrupt's entry and exit, nor the softirq it may raise).\n")
            R.append(md_table(["driver", "irq", "calls per I/O", "instr per call", "instr/IO"], hrows))
            R.append("")
        if detail_job(prof, job, arms):
            if str(job_fio(prof, job).get("iodepth")) == "1":
                R += split_block(out, job, arms, res, jcmps[job], ns_insn, plan.get("cpus") or 2)
            R += category_block(job, arms, res, jcmps[job])
        for test, ref in jcmps[job]:
            a, b = res.get((job, ref)), res.get((job, test))
            if not (a and b):
                continue
            R.append("#### %s minus %s, %s\n" % (test, ref, job))
            R.append("Instructions per I/O per function, sorted by the larger absolute difference (self or "
                     "inclusive). The self differences of all functions add up to the difference of the "
                     "totals, %+.0f (%.0f - %.0f).\n" % (b["ipio"] - a["ipio"], b["ipio"], a["ipio"]))
            rows = [[md_fn(fn), "%.0f" % sa, "%.0f" % sb, "%+.0f" % ds, "%.0f" % ia, "%.0f" % ib, "%+.0f" % di]
                    for fn, sa, sb, ds, ia, ib, di in diff_rows(a, b)]
            R.append(md_table(["function", "self %s" % ref, "self %s" % test, "self diff",
                               "incl %s" % ref, "incl %s" % test, "incl diff"], rows))
            R.append("")
    return R


def ratio_text(out, job, ref_exp, ref, test_exp, test):
    """The IOPS ratio test/ref for the same job in this boot's experiments
    (median of the slices), if one experiment ran both arms: drv's for
    vblk / virtio_blk, ceiling's for vblk / null_blk. The cross-check of
    the totals."""
    exp = ref_exp if ref_exp and ref_exp != "drv" else test_exp
    v = {}
    for r in slice_runs(out, exp, job):
        if "win_iops" in r:
            v.setdefault(r["arm"], []).append(r["win_iops"])
    if test not in v or ref not in v:
        return ""
    return "; %s's IOPS ratio (slices) %.3f, i.e. instructions per I/O %.3f" % (
        exp, med(v[test]) / med(v[ref]), med(v[ref]) / med(v[test]))


def main():
    out = os.path.realpath(sys.argv[1])
    print("\n".join(section(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
