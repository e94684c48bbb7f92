#!/usr/bin/env python3
"""Unit tests of the bench's host-side profile code (tests/bench/profile_report.py):
perf script parsing, folding, weights, the flame graph SVG and the tables.

    python3 tests/bench/test_profile.py     prints "N passed, N failed";
                                            exit status 1 on any failure
"""
import json
import os
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_report as P  # noqa: E402
from checks import check, finish  # noqa: E402


SCRIPT = """\
fio   232 [000]    10.000100:    1000000 
\tffffffffad1a7b82 vblk_queue_rq ([vblk])
\tffffffffad1a8104 blk_mq_dispatch_rq_list ([kernel.kallsyms])
\tffffffffac66b405 io_submit ([kernel.kallsyms])
\t    7f0c84cc102d [unknown] (/usr/bin/fio)

swapper       0 [001]    10.000200:    1000000 
\tffffffffad1b8d0f pv_native_safe_halt ([kernel.kallsyms])
\tffffffffad1bb229 default_idle ([kernel.kallsyms])
\tffffffffac3ea41d do_idle ([kernel.kallsyms])

swapper       0 [001]    10.001300:    1000000 
\tffffffffad1b8d0f vblk_irq ([vblk])
\tffffffffad1b8d0f __handle_irq_event_percpu ([kernel.kallsyms])
\tffffffffad1b8d0f pv_native_safe_halt ([kernel.kallsyms])
\tffffffffac3ea41d do_idle ([kernel.kallsyms])

fio   232 [000]    10.001100:    1000000 
\tffffffffad1a7b82 memset_orig ([kernel.kallsyms])
\tffffffffad1a8104 vblk_queue_rq ([vblk])
\tffffffffad1a8104 blk_mq_dispatch_rq_list ([kernel.kallsyms])
\tffffffffac66b405 io_submit ([kernel.kallsyms])
\t    7f0c84cc102d [unknown] (/usr/bin/fio)

kworker/0:1H-kb    40 [000]    10.002100:    1000000 
\tffffffffad1a7b82 blk_mq_run_work_fn ([kernel.kallsyms])

fio   232 [000]    20.000000:    1000000 
\tffffffffad1a7b82 outside_window ([kernel.kallsyms])
"""


def test_parse():
    s = P.parse_perf_script(SCRIPT.splitlines(True))
    check("parse count", len(s) == 6, len(s))
    check("parse header", s[0]["comm"] == "fio" and s[0]["tid"] == 232 and s[0]["cpu"] == 0
          and abs(s[0]["time"] - 10.0001) < 1e-9 and s[0]["period"] == 1000000, s[0])
    check("parse frames", s[0]["frames"] == ["vblk_queue_rq [vblk]", "blk_mq_dispatch_rq_list",
                                             "io_submit", "[user]"], s[0]["frames"])
    check("comm with dash", s[4]["comm"] == "kworker/0:1H-kb" and s[4]["tid"] == 40, s[4])
    check("idle", P.is_idle(s[1]) and not P.is_idle(s[2]) and not P.is_idle(s[0]))
    return s


def test_tidy():
    check("tidy", P.tidy_frames(["a", "[unknown]", "[fio]", "[fio]", "[unknown]", "[fio]", "[libc.so.6]"])
          == ["a", "[fio]", "[libc.so.6]"], P.tidy_frames(["a", "[unknown]", "[fio]", "[fio]", "[unknown]", "[fio]"]))
    check("tidy leaf", P.tidy_frames(["[unknown]", "[unknown]"]) == ["[unknown]"])
    check("tidy keeps repeats of functions", P.tidy_frames(["f", "f"]) == ["f", "f"])


def test_top_ties():
    # equal weights must come out in one order whatever the dict's (a set's
    # iteration order changes with PYTHONHASHSEED)
    a = P.top({"b": 2, "a": 2, "c": 5}, 1.0, 3)
    b = P.top({"a": 2, "c": 5, "b": 2}, 1.0, 3)
    check("top ties by name", a == b == [("c", 5.0), ("a", 2.0), ("b", 2.0)], a)


def test_names():
    check("module", P.frame_name("virtblk_done", "[virtio_blk]") == "virtblk_done [virtio_blk]")
    check("kernel", P.frame_name("memset_orig", "[kernel.kallsyms]") == "memset_orig")
    check("unknown", P.frame_name("[unknown]", "/usr/lib/x86_64-linux-gnu/libc.so.6") == "[libc.so.6]")
    check("unknown dso", P.frame_name("[unknown]", "[unknown]") == "[unknown]")
    check("ko path", P.frame_name("f", "/lib/modules/x/vblk.ko") == "f [vblk]")
    check("comm root", P.comm_root("kworker/0:1H-kblockd") == "kworker" and P.comm_root("fio") == "fio"
          and P.comm_root("ksoftirqd/1") == "ksoftirqd")


def test_kallsyms():
    k = P.Kallsyms(["ffffffff81000000 T _stext\n", "ffffffff81000100 t memset_orig\n",
                    "ffffffff81000000 D some_data\n",
                    "ffffffffc0001000 t vblk_queue_rq\t[vblk]\n", "ffffffffc0001200 t vblk_irq\t[vblk]\n"])
    check("ksym kernel", k.name(0xffffffff81000123) == "memset_orig", k.name(0xffffffff81000123))
    check("ksym module", k.name(0xffffffffc0001010) == "vblk_queue_rq [vblk]")
    check("ksym module 2", k.name(0xffffffffc0001201) == "vblk_irq [vblk]")
    check("ksym below", k.name(0x1000) is None)
    txt = ["fio 1 [000] 1.000000: 1000000",
           "\tffffffffc0001010 [unknown] ([vblk])",
           "\tffffffff81000101 [unknown] ([kernel.kallsyms])",
           "\t7f43ac4236b9 [unknown] (/usr/lib/x86_64-linux-gnu/libc.so.6)", ""]
    s = P.parse_perf_script([t + "\n" for t in txt], k)
    check("ksym in parse", s[0]["frames"] == ["vblk_queue_rq [vblk]", "memset_orig", "[user]"], s[0]["frames"])
    u = P.parse_perf_script(["fio 1 [000] 1.000000: 1000000\n", "\t7f1 get_io_u (/usr/bin/fio)\n",
                             "\t7f2 [unknown] (/usr/bin/fio)\n", "\t7f3 [unknown] ([unknown])\n", "\n"], k)
    check("user-only stack", u[0]["frames"] == ["[user]"], u[0]["frames"])


def test_fold_weights(s):
    win = P.in_window(s, 10.0, 11.0)
    check("window", len(win) == 5, len(win))
    wt = P.weights(win, 1000000)
    check("idle dropped", len(wt) == 4, len(wt))
    by = {(x["cpu"], x["time"]): w for x, w in wt}
    # 10.0011 (cpu 0) and 10.0013 (cpu 1) share the slot 10.001: 1/2 each.
    check("weights", by[(0, 10.0001)] == 1.0 and by[(0, 10.0011)] == 0.5 and by[(1, 10.0013)] == 0.5
          and by[(0, 10.0021)] == 1.0, by)
    f = P.fold(wt)
    check("fold keys", f.get("fio;[user];io_submit;blk_mq_dispatch_rq_list;vblk_queue_rq [vblk]") == 1.0
          and f.get("fio;[user];io_submit;blk_mq_dispatch_rq_list;vblk_queue_rq [vblk];memset_orig") == 0.5
          and f.get("swapper;do_idle;pv_native_safe_halt;__handle_irq_event_percpu;vblk_irq [vblk]") == 0.5
          and f.get("kworker;blk_mq_run_work_fn") == 1.0, f)
    self_w, incl = P.self_incl(f)
    check("self", self_w["vblk_queue_rq [vblk]"] == 1.0 and self_w["memset_orig"] == 0.5, self_w)
    check("incl", incl["vblk_queue_rq [vblk]"] == 1.5 and incl["io_submit"] == 1.5
          and "fio" not in incl, incl)
    check("self sums to total", abs(sum(self_w.values()) - sum(f.values())) < 1e-9)
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "x.folded")
        P.write_folded(p, f)
        check("folded round trip", P.read_folded(p) == f)
    return f


def test_svg(f):
    svg = P.flame_svg(f, "t <&>", unit_per_weight=1000)
    try:
        root = ET.fromstring(svg)
    except ET.ParseError as e:
        check("svg parses", False, e)
        return
    ns = "{http://www.w3.org/2000/svg}"
    rects = root.findall(".//%sg/%srect" % (ns, ns))
    titles = [t.text for t in root.findall(".//%sg/%stitle" % (ns, ns))]
    # all, 3 roots (fio, swapper, kworker), fio's 5 levels, swapper's 4, kworker's 1 = 14
    check("svg rects", len(rects) == 14, len(rects))
    check("svg title escaped", "t &lt;&amp;&gt;" in svg)
    check("svg tooltip", any(t.startswith("vblk_queue_rq [vblk]: 1.5 samples, 50.00%, 1500 ") for t in titles),
          titles)
    allw = [float(r.get("width")) for r in rects if r.get("x") == "10.00"]
    check("svg root full width", abs(max(allw) - 1180) < 0.01, allw)
    ys = {}
    for g in root.findall(".//%sg" % ns):
        t, r = g.find(ns + "title").text, g.find(ns + "rect")
        ys[t.split(":")[0]] = (float(r.get("y")), float(r.get("x")), float(r.get("width")))
    check("svg callee above caller", ys["memset_orig"][0] < ys["vblk_queue_rq [vblk]"][0])
    check("svg callee inside caller", ys["memset_orig"][1] >= ys["vblk_queue_rq [vblk]"][1]
          and ys["memset_orig"][1] + ys["memset_orig"][2] <= ys["vblk_queue_rq [vblk]"][1]
          + ys["vblk_queue_rq [vblk]"][2] + 1e-6)


def test_hardirq():
    txt = ["fio 9 [000] 1.000000: 1000000", "\t1 a ([kernel.kallsyms])", "",
           "             fio 9 [000] 1.000500:     irq:irq_handler_entry: irq=25 name=virtio2-req.0",
           "fio 9 [000] 1.001004: irq:irq_handler_exit: irq=25 ret=handled",
           "fio 9 [000] 1.001010: 1000000", "\t2 b ([kernel.kallsyms])", "",
           "fio 9 [000] 1.002000: 1000000", "\t3 c ([kernel.kallsyms])", "",
           "swapper 0 [000] 1.003050: 1000000", "\t4 pv_native_safe_halt ([kernel.kallsyms])", "",
           "swapper 0 [000] 1.002990: irq:irq_handler_entry: irq=26 name=vblk0",
           "swapper 0 [000] 1.003040: irq:irq_handler_exit: irq=26 ret=handled",
           "fio 9 [000] 1.004000: 1000000", "\t5 d ([kernel.kallsyms])", ""]
    irqs = []
    s = P.parse_perf_script([t + "\n" for t in txt], None, irqs)
    check("irq parse", len(s) == 5 and len(irqs) == 4 and irqs[0]["name"] == "virtio2-req.0"
          and irqs[1]["kind"] == "exit" and irqs[0]["cpu"] == 0, (len(s), irqs))
    d = P.grid_delays(s, 1000000)
    check("grid delays", d == [0, 10000, 0, 50000, 0], d)
    iv = P.irq_intervals(irqs)
    check("intervals", [(round(a, 6), round(b, 6), n) for a, b, n in iv[0]] ==
          [(1.0005, 1.001004, "virtio2-req.0"), (1.00299, 1.00304, "vblk0")], iv)
    check("handler at", P.handler_at(iv, 0, 1.0008) == "virtio2-req.0" and P.handler_at(iv, 0, 1.002) is None
          and P.handler_at(iv, 1, 1.0008) is None)
    moved, n = P.attribute_hardirq(s, d, iv)
    check("moved", n == 2 and moved[1]["frames"] == ["[hardirq virtio2-req.0]"] and moved[1]["comm"] == "hardirq"
          and moved[3]["frames"] == ["[hardirq vblk0]"] and not P.is_idle(moved[3]) and moved[0] is s[0],
          (n, moved))
    rec = {"period_ns": 1000000, "t0": 0.5, "t1": 1.5, "win_ios": 10, "win_iops": 10.0,
           "guest_busy_s": 0.005, "irq_trace": True}
    r = P.analyse(rec, s, 8, irqs)
    check("analyse hardirq", r["moved"] == 2 and abs(r["hardirq_ipio_samples"] - 2 * 1e6 / 8 / 10) < 1e-6
          and abs(r["hardirq_ipio_traced"] - (504000 + 50000) / 8 / 10) < 1e-3
          and r["handlers"]["vblk0"][0] == 1, r)
    check("analyse deferred", abs(r["deferred"] - 2 / 5) < 1e-9, r["deferred"])
    check("disk irq by time", r["disk_irq"] == {"virtio2-req.0"} and
          r["folded"].get("hardirq;[hardirq: disk]") == 1.0 and r["folded"].get("hardirq;[hardirq vblk0]") == 1.0,
          (r["disk_irq"], r["folded"]))
    h = {"virtio2-req.0": [5, 100.0], "virtio3-req.0": [1, 10.0], "0000:00:0c.0": [2, 50.0]}
    check("disk irq prefix", P.disk_irq_name(h, ["prefix", "virtio3-"]) == "virtio3-req.0")
    check("disk irq exact", P.disk_irq_name(h, ["exact", "0000:00:0c.0"]) == "0000:00:0c.0")
    check("disk irq none", P.disk_irq_name(h, ["none", None]) == "virtio2-req.0" and P.disk_irq_name({}) is None)
    h2 = dict(h, **{"virtio3-req.1": [1, 5.0]})
    check("disk irqs prefix: every queue", P.disk_irqs(h2, ["prefix", "virtio3-"]) == {"virtio3-req.0", "virtio3-req.1"})
    check("disk irqs exact", P.disk_irqs(h2, ["exact", "0000:00:0c.0"]) == {"0000:00:0c.0"}
          and P.disk_irqs(h2, ["none", None]) == {"virtio2-req.0"} and P.disk_irqs({}) == set())
    iv2 = {0: [(1.0, 1.1, "virtio3-req.0"), (2.0, 2.1, "virtio3-req.1"), (3.0, 3.1, "other")]}
    ss = [{"comm": "fio", "tid": 9, "cpu": 0, "time": t, "period": 1, "frames": ["x"]} for t in (1.05, 2.05, 3.05)]
    mv, n2 = P.attribute_hardirq(ss, [0, 0, 0], iv2, {"virtio3-req.0", "virtio3-req.1"})
    check("both queues are the disk", n2 == 0)
    mv, n2 = P.attribute_hardirq([dict(x, time=x["time"] + 0.00001) for x in ss], [10000] * 3, iv2,
                                 {"virtio3-req.0", "virtio3-req.1"})
    check("both queues are the disk, moved", n2 == 3 and [x["frames"][0] for x in mv] ==
          ["[hardirq: disk]", "[hardirq: disk]", "[hardirq other]"], mv)


def test_tables():
    a = {"self": {"x": 2.0, "y": 1.0}, "incl": {"x": 3.0, "y": 1.0, "top": 3.0}, "k": 100.0}
    b = {"self": {"x": 1.0, "z": 4.0}, "incl": {"x": 5.0, "z": 4.0, "top": 5.0}, "k": 100.0}
    rows = P.diff_rows(a, b)
    check("diff first", rows[0][0] == "z" and rows[0][3] == 400 and rows[0][6] == 400, rows[0])
    byfn = {r[0]: r for r in rows}
    check("diff x", byfn["x"][1:] == (200, 100, -100, 300, 500, 200), byfn["x"])
    check("diff y (only in a)", byfn["y"][3] == -100 and byfn["y"][6] == -100, byfn["y"])
    check("diff self sums", sum(r[3] for r in rows) == 200)
    check("top", P.top(a["incl"], 10, 2) == [("top", 30.0), ("x", 30.0)] or
          P.top(a["incl"], 10, 2) == [("x", 30.0), ("top", 30.0)])
    t = P.md_table(["a", "b"], [[1, "`x\\|y`"]])
    check("md table", t.splitlines() == ["| a | b |", "|---|---|", "| 1 | `x\\|y` |"], t)
    check("ns per insn", P.ns_per_insn({"icount": "-icount shift=3,align=off"}) == 8
          and P.ns_per_insn({"icount": None}) is None)


def test_analyse(s):
    rec = {"period_ns": 1000000, "t0": 10.0, "t1": 11.0, "win_ios": 10, "win_iops": 10.0,
           "guest_busy_s": 0.004}
    r = P.analyse(rec, s, 8)
    # 3.0 busy weights x 1e6 ns / 8 ns / 10 I/Os
    check("analyse ipio", abs(r["ipio"] - 3.0 * 1e6 / 8 / 10) < 1e-6, r.get("ipio"))
    check("analyse counts", r["n_window"] == 5 and r["n_busy"] == 4 and r["n_idle"] == 1, r)
    check("analyse stat", abs(r["ipio_stat"] - 4e6 / 8 / 10) < 1e-6 and abs(r["ipio_wall"] - 1e9 / 8 / 10) < 1e-3)
    check("analyse perf late", not r["perf_late"])


def test_section():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "profile"))
        recs = []
        for arm, fn in (("virtio_blk", "virtio_queue_rq [virtio_blk]"), ("vblk", "vblk_queue_rq [vblk]")):
            name = "j.%s.perf.txt" % arm
            with open(os.path.join(d, "profile", name), "w") as f:
                for i in range(4 if arm == "vblk" else 5):
                    f.write("fio 9 [000] %.6f: 1000000\n\tffffffffc0000001 %s (%s)\n"
                            "\tffffffff81000002 io_submit ([kernel.kallsyms])\n\n" % (
                        10 + i * 0.001, fn.split()[0], fn.split()[1][1:-1] and "[%s]" % fn.split()[1][1:-1]))
            recs.append({"exp": "drv", "job": "j", "arm": arm, "period_ns": 1000000, "t0": 9.0, "t1": 11.0,
                         "win_ios": 100, "win_iops": 50.0, "guest_busy_s": 0.005, "file": name})
        with open(os.path.join(d, "profile.jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in recs))
        plan = {"icount": "-icount shift=3", "profile": {"arms": ["virtio_blk", "vblk"], "period_ns": 1000000}}
        summ = []
        txt = "\n".join(P.section(d, plan, summary=summ))
        check("section summary", summ == ["profile j: instructions per I/O virtio_blk 6250, vblk 5000, "
                                          "ratio 0.800 (report.md, profile/*.svg)"], summ)
        check("section svg", os.path.exists(os.path.join(d, "profile", "j.vblk.svg")))
        check("section folded", os.path.exists(os.path.join(d, "profile", "j.virtio_blk.folded")))
        check("section totals", "| j | vblk | 50 | 4 | 5000 |" in txt and "| j | virtio_blk | 50 | 5 | 6250 |" in txt,
              txt)
        check("section ratio", "instructions per I/O 0.800 (samples)" in txt, txt)
        check("section diff", "| `vblk_queue_rq [vblk]` | 0 | 5000 | +5000 |" in txt, txt)
        check("section empty", P.section(os.path.join(d, "profile")) == [])


def test_categories():
    f = {"fio;[user]": 1.0,
         "fio;[user];entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_io_submit;vblk_queue_rq [vblk]": 2.0,
         "fio;[user];do_syscall_64;__x64_sys_io_submit;asm_common_interrupt;common_interrupt;vblk_irq [vblk]": 0.5,
         "fio;[user];do_syscall_64;__x64_sys_io_pgetevents;aio_read_events_ring": 0.25,
         "fio;[user];do_syscall_64;__x64_sys_futex": 0.125,
         "swapper;do_idle;schedule_idle": 4.0,
         "swapper;do_idle;asm_sysvec_call_function_single;sysvec_call_function_single": 8.0,
         "hardirq;[hardirq: disk]": 16.0, "perf;[user]": 32.0, "ksoftirqd;handle_softirqs": 64.0,
         "kworker;blk_mq_run_work_fn": 128.0, "python3;[user]": 256.0}
    c = P.categories(f)
    check("categories", c == {"fio: user space": 1.0, "fio: io_submit": 2.0,
                              "interrupts (handlers, entry and exit, softirqs on exit)": 24.5,
                              "fio: io_getevents": 0.25, "fio: other kernel": 0.125,
                              "idle task outside interrupts (waking up, going to sleep)": 4.0,
                              "perf (the profiler)": 32.0, "ksoftirqd": 64.0, "kworker": 128.0,
                              "other processes": 256.0}, c)
    check("categories add up", abs(sum(c.values()) - sum(f.values())) < 1e-9)


def test_time_split():
    r = {"win_s": 2.0, "ios": 10000, "ipio": 12500.0, "busy_ns_stat": 0.5e9, "idle_ns_stat": 2.5e9}
    t = P.time_split(r, 8)
    # wall 200 us/IO, busy 12500 x 8 ns = 100 us, idle 100 us; vCPUs busy (2 x 2 s - 2.5 s) / 10000 = 150 us
    check("split", abs(t["wall_us"] - 200) < 1e-9 and abs(t["busy_us"] - 100) < 1e-9
          and abs(t["idle_us"] - 100) < 1e-9 and abs(t["busy_cpu_us"] - 150) < 1e-9
          and abs(t["busy_share"] - 0.5) < 1e-9 and t["busy_insn"] == 12500.0, t)
    t = P.time_split(dict(r, idle_ns_stat=None), 8)
    check("split without idle", t["busy_cpu_us"] is None)
    with tempfile.TemporaryDirectory() as d:
        check("slices none", P.slices_split(d, "drv", "q1", "vblk") is None)
        runs = [{"exp": "drv", "job": "q1", "arm": "vblk", "record": True, "win_s": 1.0, "win_ios": n,
                 "win_iops": float(n), "guest_cpu_total_s": 1.6, "guest_busy_s": 0.2} for n in (4000, 5000, 4500)]
        runs += [{"exp": "drv", "job": "q1", "arm": "vblk", "record": False, "win_s": 1.0, "win_ios": 1,
                  "win_iops": 1.0, "guest_cpu_total_s": 1.6, "guest_busy_s": 0.2},
                 {"exp": "drv", "job": "q1", "arm": "virtio_blk", "record": True, "win_s": 1.0, "win_ios": 1,
                  "win_iops": 1.0, "guest_cpu_total_s": 1.6, "guest_busy_s": 0.2}]
        with open(os.path.join(d, "runs.jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in runs))
        sl = P.slices_split(d, "drv", "q1", "vblk")
        # idle 1.4 s of 2 s of vCPU time: busy 0.6 s / 4500 I/Os = 133.3 us; wall 1 s / 4500 = 222.2 us
        check("slices", sl["n"] == 3 and sl["iops"] == 4500.0 and abs(sl["wall_us"] - 1e6 / 4500) < 1e-6
              and abs(sl["busy_cpu_us"] - 0.6e6 / 4500) < 1e-6, sl)


def test_arms():
    prof = {"arms": ["virtio_blk", "vblk"],
            "jobs": [{"name": "j2", "fio": {"iodepth": 64}, "arms": ["virtio_blk", "vblk", "ceiling:null_blk"]},
                     {"name": "q1", "fio": {"iodepth": 1}}, {"name": "j1", "fio": {"iodepth": 64}}]}
    recs = [{"job": "j1", "arm": "vblk"}, {"job": "j1", "arm": "odd"}]
    check("job arms own", P.job_arms(prof, "j2", []) == ["virtio_blk", "vblk", "null_blk"])
    check("job arms profile's", P.job_arms(prof, "q1", []) == ["virtio_blk", "vblk"])
    check("job arms records", P.job_arms(prof, "j1", recs) == ["virtio_blk", "vblk", "odd"])
    check("job arms no plan", P.job_arms({}, "x", []) == ["virtio_blk", "vblk"])
    check("comparisons", P.comparisons(prof, ["virtio_blk", "vblk", "null_blk"])
          == [("vblk", "virtio_blk"), ("vblk", "null_blk")])
    check("comparisons 2", P.comparisons(prof, ["virtio_blk", "vblk"]) == [("vblk", "virtio_blk")])
    check("detail", P.detail_job(prof, "q1", ["virtio_blk", "vblk"])
          and P.detail_job(prof, "j2", ["virtio_blk", "vblk", "null_blk"])
          and not P.detail_job(prof, "j1", ["virtio_blk", "vblk"]))


def write_arm(d, name, fn, mod, n, t0=10.0, comm="fio", idle=0):
    """n busy samples of comm in fn [mod] (1 ms apart, CPU 0) and idle
    samples on CPU 1."""
    with open(os.path.join(d, "profile", name), "w") as f:
        for i in range(n):
            f.write("%s 9 [000] %.6f: 1000000\n\tffffffffc0000001 %s ([%s])\n"
                    "\tffffffff81000002 io_submit ([kernel.kallsyms])\n\n" % (comm, t0 + i * 0.001, fn, mod))
        for i in range(idle):
            f.write("swapper 0 [001] %.6f: 1000000\n\tffffffff81000003 default_idle ([kernel.kallsyms])\n\n"
                    % (t0 + i * 0.001))


def test_section3():
    """Three arms on one job (the ceiling's null_blk), and a QD1 job."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "profile"))
        recs = []
        for job, arm, exp, fn, mod, n in (("j2", "virtio_blk", "drv", "virtio_queue_rq", "virtio_blk", 5),
                                          ("j2", "vblk", "drv", "vblk_queue_rq", "vblk", 4),
                                          ("j2", "null_blk", "ceiling", "null_queue_rq", "null_blk", 2),
                                          ("q1", "virtio_blk", "drv", "virtio_queue_rq", "virtio_blk", 8),
                                          ("q1", "vblk", "drv", "vblk_queue_rq", "vblk", 6)):
            name = "%s.%s.perf.txt" % (job, arm)
            write_arm(d, name, fn, mod, n, idle=3)
            # q1: 2 s windows with 100 I/Os: wall 20000 us/IO
            recs.append({"exp": exp, "job": job, "arm": arm, "period_ns": 1000000, "t0": 9.0,
                         "t1": 11.0, "win_ios": 100, "win_iops": 50.0 if arm != "vblk" else 60.0,
                         "guest_busy_s": 0.005, "guest_cpu_total_s": 3.0, "file": name})
        with open(os.path.join(d, "profile.jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in recs))
        runs = [{"exp": "ceiling", "job": "j2", "arm": a, "record": True, "win_iops": v}
                for a, v in (("null_blk", 100.0), ("null_blk", 110.0), ("null_blk", 120.0), ("vblk", 90.0),
                             ("null_blk#2", 1.0))]
        runs += [{"exp": "drv", "job": "q1", "arm": a, "record": True, "win_iops": v, "win_s": 1.0,
                  "win_ios": int(v), "guest_cpu_total_s": 1.5, "guest_busy_s": 0.1}
                 for a, v in (("virtio_blk", 40.0), ("vblk", 50.0))]
        with open(os.path.join(d, "runs.jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in runs))
        plan = {"icount": "-icount shift=3", "profile": {
            "exp": "drv", "arms": ["virtio_blk", "vblk"], "period_ns": 1000000,
            "jobs": [{"name": "j2", "fio": {"iodepth": 64}, "arms": ["virtio_blk", "vblk", "ceiling:null_blk"]},
                     {"name": "q1", "fio": {"iodepth": 1}}]}}
        summ = []
        txt = "\n".join(P.section(d, plan, summary=summ))
        # 1 sample = 1e6 / 8 / 100 = 1250 instructions per I/O
        check("3 arms summary", summ == [
            "profile j2: instructions per I/O virtio_blk 6250, vblk 5000, ratio 0.800 (report.md, profile/*.svg)",
            "profile q1: instructions per I/O virtio_blk 10000, vblk 7500, ratio 0.750 (report.md, profile/*.svg)",
            "profile j2: instructions per I/O null_blk 2500, vblk 5000, ratio 2.000 (report.md, profile/*.svg)"],
            summ)
        check("3 arms totals", "| j2 | null_blk | 50 | 2 | 2500 |" in txt, txt)
        check("3 arms svg", os.path.exists(os.path.join(d, "profile", "j2.null_blk.svg")))
        check("3 arms ratio head", "Ratio vblk / null_blk (below 1: vblk needs fewer instructions per I/O):" in txt)
        check("3 arms ceiling ratio", "- j2: vblk / null_blk instructions per I/O 2.000 (samples)" in txt and
              "ceiling's IOPS ratio (slices) 0.818, i.e. instructions per I/O 1.222" in txt, txt)
        check("drv ratio", "drv's IOPS ratio (slices) 1.250, i.e. instructions per I/O 0.800" in txt, txt)
        check("no slices table for j2", txt.count("Without perf: the experiment's slices") == 1, txt)
        check("diff vs virtio_blk", "#### vblk minus virtio_blk, j2" in txt and "#### vblk minus virtio_blk, q1" in txt)
        check("diff vs null_blk", "#### vblk minus null_blk, j2" in txt and "#### vblk minus null_blk, q1" not in txt
              and "| `null_queue_rq [null_blk]` | 2500 | 0 | -2500 |" in txt
              and "totals, +2500 (5000 - 2500)" in txt, txt)
        check("kinds", "#### Instructions per I/O by kind, j2" in txt and
              "| kind | virtio_blk | vblk | null_blk | vblk - virtio_blk | vblk - null_blk |" in txt and
              "| fio: other kernel | 6250 | 5000 | 2500 | -1250 | +2500 |" in txt and
              "| total | 6250 | 5000 | 2500 | -1250 | +2500 |" in txt, txt)
        check("split only at QD1", "#### Time per I/O, q1" in txt and "#### Time per I/O, j2" not in txt)
        # q1: wall 2 s / 100 = 20000 us; vblk busy 7500 x 8 ns = 60 us; idle 19940 us
        # vCPUs busy: (2 x 2 s - (3.0 - 0.005) s) / 100 I/Os = 10050 us
        check("split rows", "| vblk | 60 | 20000.0 | 7500 | 60.0 | 19940.0 | 0.3% | 10050.0 |" in txt and
              "| virtio_blk | 50 | 20000.0 | 10000 | 80.0 | 19920.0 | 0.4% | 10050.0 |" in txt, txt)
        # slices: vblk 50 I/Os in 1 s: wall 20000 us, busy (2 - 1.4) s / 50 = 12000 us, idle 8000
        check("split slices", "| vblk | 1 | 50 | 20000.0 | 12000.0 | 8000.0 |" in txt and
              "| virtio_blk | 1 | 40 | 25000.0 | 15000.0 | 10000.0 |" in txt, txt)
        check("split diff", "- vblk vs virtio_blk: wall +0.0 us/IO = busy -20.0 us (-2500 instructions) + idle "
              "+20.0 us; IOPS ratio vblk / virtio_blk 1.000. With vblk's idle time as measured and no guest "
              "instructions at all the ratio would be at most 1.003; with its busy time as measured and idle "
              "as virtio_blk's, 1.001." in txt, txt)
        check("kinds at QD1", "#### Instructions per I/O by kind, q1" in txt)


def main():
    s = test_parse()
    test_names()
    test_tidy()
    test_top_ties()
    test_kallsyms()
    f = test_fold_weights(s)
    test_svg(f)
    test_hardirq()
    test_tables()
    test_analyse(s)
    test_section()
    test_categories()
    test_time_split()
    test_arms()
    test_section3()
    return finish()


if __name__ == "__main__":
    sys.exit(main())
