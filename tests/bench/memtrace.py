#!/usr/bin/env python3
"""Memory a disk's bind costs, from an ftrace of the kmem/percpu/cma events.

    memtrace.py account TRACE [--ncpu N]     one trace: JSON accounting on stdout
    memtrace.py report DIR                   DIR = tests/bench/memory.sh's output:
                                             writes DIR/memory.json, DIR/memory.md
    memtrace.py across OUT.md K=DIR ...      one table across kernels from each
                                             DIR/memory.json (scripts/bench --memory
                                             --kernel A,B): total KiB (min-max)

An allocation counts when it was made inside the traced window (bind to
ready) and not freed inside it; frees are matched to allocations by pointer
(slab, percpu) or page frame number (pages, CMA). Frees of older memory and
allocations freed again are left out: the result is what the bind left
behind. Parts:

  slab     kmalloc / kmem_cache_alloc objects, bytes_alloc (what the
           allocator handed out, rounded up to the object size); large
           kmallocs (served by the page allocator) count here too
  percpu   percpu_alloc_percpu bytes_alloc (size x possible CPUs)
  pages    page allocations, 4 KiB << order, by the class of their stack
           (a stacktrace trigger on mm_page_alloc): requests (blk-mq's
           request + driver PDU pages), dma (rings and other device-visible
           memory: the DMA API, virtio's vring_alloc_queue, vblk_dma_alloc),
           vmalloc, pgtable, cma, other, unknown (no stack) count in the
           total; slab (new slab pages), kmalloc_large and percpu_chunk
           back objects already counted above and are shown apart;
           pagecache (udev reading the new disk; tmpfs: udev's database)
           and process (page faults, forks of the tools in the window) are
           not the driver's and are shown apart too
  slab_process  slab objects of the tools' processes (PROC_SITES), apart

total = slab + percpu + the counted page classes.
"""
import json
import os
import re
import statistics
import sys

PAGE = 4096
LINE = re.compile(r"\[(\d{3})\]\s+(?:\S+\s+)?\d+\.\d+:\s+(\w+):\s*(.*)$")
SLAB_ALLOC = {"kmalloc", "kmalloc_node", "kmem_cache_alloc", "kmem_cache_alloc_node"}
SLAB_FREE = {"kfree", "kmem_cache_free"}
PAGE_FREE = {"mm_page_free", "mm_page_free_batched"}
COUNTED = ("requests", "dma", "vmalloc", "pgtable", "cma", "other", "unknown")
APART = ("slab", "kmalloc_large", "percpu_chunk", "pagecache", "process")
# Stack frame substrings -> page class, first match wins.
CLASSES = [
    ("kmalloc_large", ("kmalloc_large", "kmalloc_order")),
    ("slab", ("allocate_slab", "new_slab", "alloc_slab_page", "cache_grow_begin")),
    ("percpu_chunk", ("pcpu_",)),
    ("requests", ("blk_mq_alloc_map_and_rqs", "blk_mq_alloc_rqs")),
    ("dma", ("dma_direct_alloc", "dma_alloc_attrs", "dma_pool_alloc", "dma_alloc_pages",
             "iommu_dma_alloc", "vring_alloc_queue", "vblk_dma_alloc")),
    ("process", ("copy_process", "handle_mm_fault", "do_anonymous_page", "begin_new_exec",
                 "do_execve", "setup_arg_pages", "dup_mm")),
    ("pagecache", ("filemap", "page_cache_ra", "readahead", "__page_cache_alloc",
                   "block_read_full", "grow_dev", "shmem_alloc")),
    ("pgtable", ("pte_alloc", "pmd_alloc", "pud_alloc", "p4d_alloc")),
    ("vmalloc", ("vmalloc", "vm_area_alloc_pages", "vm_map_ram")),
]
# Slab call sites of the tools that run in the window (vblk-bind, udevadm,
# udev's workers: forks, execs, /proc and 9p lookups, sockets): their
# objects outlive the window when they are freed after an RCU grace period.
# Not the driver's; shown apart as slab_process.
PROC_SITES = {
    "copy_process", "dup_task_struct", "vm_area_dup", "vm_area_alloc", "anon_vma_fork",
    "anon_vma_clone", "__anon_vma_prepare", "mas_alloc_nodes", "prepare_creds",
    "prepare_exec_creds", "alloc_empty_file", "dup_fd", "alloc_pid", "dup_mm", "mm_alloc",
    "alloc_bprm", "copy_fs_struct", "copy_sighand", "copy_signal", "proc_alloc_inode",
    "v9fs_alloc_inode", "do_epoll_ctl", "sk_prot_alloc", "sock_alloc_inode",
    "security_file_alloc", "security_task_alloc", "security_prepare_creds",
    "dup_userfaultfd", "alloc_fdtable", "expand_files", "getname_flags",
}
# Frames that say nothing about who asked for the page.
GENERIC = re.compile(r"alloc_pages|get_free_pages|folio_alloc|get_page_from_freelist|"
                     r"trace|stack|event_trigger|^alloc_page|_noprof$")


def fields(rest):
    """key=value tokens of an event's text; a lone token after call_site
    (a module name, `[vblk]`) is appended to it."""
    out, last = {}, None
    for tok in rest.split():
        if "=" in tok:
            last, _, v = tok.partition("=")
            out[last] = v
        elif last:
            out[last] += " " + tok
    return out


def num(v, default=0):
    try:
        return int(v, 0)
    except (TypeError, ValueError):
        return default


def nonnull(ptr):
    """A pointer field (hex, with or without 0x; hashed or not) that is set."""
    try:
        return ptr is not None and int(ptr, 16) != 0
    except ValueError:
        return False


def page_class(stack):
    if stack is None:
        return "unknown"
    for name, subs in CLASSES:
        if any(s in f for f in stack for s in subs):
            return name
    return "other"


def origin(stack):
    for f in stack or []:
        if not GENERIC.search(f.split("+")[0]):
            return f.split("+")[0]
    return "?"


def module_of(site):
    m = re.search(r"\[(\w+)\]", site or "")
    return m.group(1) if m else "kernel"


class Account:
    def __init__(self, ncpu=1):
        self.ncpu = ncpu
        self.slab = {}      # ptr -> (bytes, call_site)
        self.percpu = {}    # ptr -> (bytes, call_site)
        self.pages = {}     # pfn -> [class, origin]
        self.events = 0
        self.older_frees = 0
        self.last_page = {}  # cpu -> pfns of its last mm_page_alloc (for the stack)

    def event(self, cpu, name, f):
        self.events += 1
        if name in SLAB_ALLOC:
            ptr = f.get("ptr")
            if nonnull(ptr):
                self.slab[ptr] = (num(f.get("bytes_alloc")), f.get("call_site", "?"))
        elif name in SLAB_FREE:
            if self.slab.pop(f.get("ptr"), None) is None:
                self.older_frees += 1
        elif name == "percpu_alloc_percpu":
            ptr = f.get("ptr")
            if nonnull(ptr):
                b = num(f.get("bytes_alloc")) or num(f.get("size")) * self.ncpu
                self.percpu[ptr] = (b, f.get("call_site", "?"))
        elif name == "percpu_free_percpu":
            if self.percpu.pop(f.get("ptr"), None) is None:
                self.older_frees += 1
        elif name == "mm_page_alloc":
            pfn = num(f.get("pfn"), -1)
            if pfn < 0:
                return
            n = 1 << num(f.get("order"))
            cell = ["unknown", "?"]  # shared by the pages, set by the stack
            for p in range(pfn, pfn + n):
                self.pages[p] = cell
            self.last_page[cpu] = cell
        elif name == "cma_alloc_finish":
            pfn, n = num(f.get("pfn"), -1), num(f.get("count"))
            if pfn >= 0 and num(f.get("errorno", "0")) == 0:
                cell = ["cma", f.get("name", "cma")]
                for p in range(pfn, pfn + n):
                    self.pages[p] = cell
        elif name in PAGE_FREE or name == "cma_release":
            pfn = num(f.get("pfn"), -1)
            n = num(f.get("count")) if name == "cma_release" else 1 << num(f.get("order"))
            hit = False
            for p in range(pfn, pfn + n):
                hit = self.pages.pop(p, None) is not None or hit
            if not hit:
                self.older_frees += 1

    def stack(self, cpu, frames):
        cell = self.last_page.pop(cpu, None)
        if cell is not None:
            cell[0], cell[1] = page_class(frames), origin(frames)

    def result(self):
        pages = {c: 0 for c in COUNTED + APART}
        porig = {}
        for cls, org in self.pages.values():
            pages[cls] += PAGE
            key = "%s:%s" % (cls, org)
            porig[key] = porig.get(key, 0) + PAGE
        proc = [b for b, s in self.slab.values() if s.split("+")[0] in PROC_SITES]
        slab = sum(b for b, _ in self.slab.values()) - sum(proc)
        percpu = sum(b for b, _ in self.percpu.values())
        sites, mods = {}, {}
        for b, s in list(self.slab.values()) + list(self.percpu.values()):
            if s.split("+")[0] in PROC_SITES:
                continue
            site = s.split("+")[0] + ("" if module_of(s) == "kernel" else " [%s]" % module_of(s))
            sites[site] = sites.get(site, 0) + b
            mods[module_of(s)] = mods.get(module_of(s), 0) + b
        counted = sum(pages[c] for c in COUNTED)
        top = lambda d: sorted(d.items(), key=lambda kv: -kv[1])[:30]
        return {
            "total": slab + percpu + counted,
            "slab": slab, "slab_objects": len(self.slab) - len(proc), "percpu": percpu,
            "slab_process": sum(proc),
            "pages_counted": counted, "pages": pages,
            "slab_percpu_by_module": mods,
            "top_sites": top(sites), "top_page_origins": top(porig),
            "events": self.events, "older_frees": self.older_frees,
        }


def account(lines, ncpu=1):
    a = Account(ncpu)
    stack_cpu, frames = None, None
    for ln in lines:
        s = ln.strip()
        if s.startswith("=>"):
            if frames is not None:
                frames.append(s[2:].strip())
            continue
        if frames is not None:
            a.stack(stack_cpu, frames)
            frames = None
        if not s or s.startswith("#"):
            continue
        m = LINE.search(ln)
        if m:
            cpu, name, rest = int(m.group(1)), m.group(2), m.group(3)
            if name == "" or rest.startswith("<stack trace>"):
                continue
            a.event(cpu, name, fields(rest))
        elif "<stack trace>" in s:
            m2 = re.search(r"\[(\d{3})\]", ln)
            stack_cpu, frames = (int(m2.group(1)) if m2 else -1), []
    if frames is not None:
        a.stack(stack_cpu, frames)
    return a.result()


# ---- report over memory.sh's directory ----------------------------------------

def kib(b):
    return "%.1f" % (b / 1024.0)


def read_kv(path):
    d = {}
    if os.path.exists(path):
        with open(path) as f:
            for ln in f:
                k, _, v = ln.strip().partition("=")
                if k:
                    d[k] = v
    return d


def meminfo(path):
    d = {}
    with open(path) as f:
        for ln in f:
            k, _, v = ln.partition(":")
            if v.split():
                d[k.strip()] = int(v.split()[0]) * 1024
    return d


def load_samples(d):
    """samples.tsv: config driver n disk hwq tags overrun trace"""
    rows = []
    with open(os.path.join(d, "samples.tsv")) as f:
        for ln in f:
            p = ln.split()
            if len(p) >= 8 and not ln.startswith("#"):
                rows.append(dict(zip(("config", "driver", "n", "disk", "hwq", "tags",
                                      "overrun", "trace"), p)))
    return rows


def disk_info(d, trace):
    """<trace>.disk (memory.sh): queue/X=V lines, then vblk/config's "key value"."""
    out = {}
    p = os.path.join(d, trace[:-len(".trace")] + ".disk") if trace.endswith(".trace") else ""
    if p and os.path.exists(p):
        with open(p) as f:
            for ln in f:
                k, sep, v = ln.strip().partition("=")
                if not sep:
                    k, _, v = ln.strip().partition(" ")
                out[k] = v.strip()
    return out


def pcp_pages(path):
    """Pages on the per-CPU free lists: the pagesets' count: lines of a
    /proc/zoneinfo copy (0 when there is none). MemFree leaves them out."""
    n = 0
    if os.path.exists(path):
        with open(path) as f:
            for ln in f:
                p = ln.split()
                if len(p) == 2 and p[0] == "count:":
                    n += int(p[1])
    return n * PAGE


def coarse(d, config, driver, ndisks):
    b, a = (os.path.join(d, "meminfo-%s-%s-%s" % (config, driver, w)) for w in ("before", "after"))
    if not (os.path.exists(b) and os.path.exists(a)) or not ndisks:
        return None
    mb, ma = meminfo(b), meminfo(a)
    # Free pages, the per-CPU lists' included.
    mb["FreePcp"] = mb.get("MemFree", 0) + pcp_pages(b + ".zoneinfo")
    ma["FreePcp"] = ma.get("MemFree", 0) + pcp_pages(a + ".zoneinfo")
    dl = lambda k: (mb.get(k, 0) - ma.get(k, 0)) if k in ("MemFree", "FreePcp") else (ma.get(k, 0) - mb.get(k, 0))
    return {k: dl(k) / ndisks for k in ("MemFree", "FreePcp", "Slab", "Percpu", "VmallocUsed",
                                        "Cached", "PageTables", "KernelStack")}


def summarize(d):
    info = read_kv(os.path.join(d, "info"))
    ncpu = num(info.get("ncpu_possible", "1"), 1)
    groups = {}
    for s in load_samples(d):
        with open(os.path.join(d, s["trace"]), errors="replace") as f:
            s["acct"] = account(f, ncpu)
        groups.setdefault((s["config"], s["driver"]), []).append(s)
    cells = []
    for (config, driver), ss in groups.items():
        med = lambda k: statistics.median(x["acct"][k] for x in ss)
        medp = lambda c: statistics.median(x["acct"]["pages"][c] for x in ss)
        totals = [x["acct"]["total"] for x in ss]
        cells.append({
            "config": config, "driver": driver, "binds": len(ss),
            "hwq": ss[0]["hwq"], "tags": ss[0]["tags"], "disk": disk_info(d, ss[0]["trace"]),
            "total": med("total"), "total_min": min(totals), "total_max": max(totals),
            "slab": med("slab"), "percpu": med("percpu"), "slab_process": med("slab_process"), "pages_counted": med("pages_counted"),
            "pages": {c: medp(c) for c in COUNTED + APART},
            "by_module": ss[len(ss) // 2]["acct"]["slab_percpu_by_module"],
            "overrun": sum(num(x["overrun"]) for x in ss),
            "coarse": coarse(d, config, driver, len(ss)),
            "samples": [dict((k, v) for k, v in x.items()) for x in ss],
        })
    return {"info": info, "cells": cells, "dir": d}


def md(summary):
    info, cells = summary["info"], summary["cells"]
    L = ["# Memory per bound disk\n"]
    L.append("Kernel %s, %s vCPUs (%s possible); vblk.ko %s. Each row: the median over "
             "the binds of that many identical disks, one traced window each (bind to "
             "ready: udev settled, the disk in /sys/block). KiB; see tests/bench/memtrace.py "
             "for what each column holds.\n" % (info.get("kernel", "?"), info.get("ncpu", "?"),
                                               info.get("ncpu_possible", "?"),
                                               info.get("ko", "?")))
    hdr = ["config", "driver", "hw queues x nr_tags", "ring / depth", "binds", "total KiB (min-max)", "slab",
           "percpu", "pages: requests", "rings+DMA", "other pages", "slab+percpu from modules' code",
           "apart: slab pages", "page cache", "tools' processes", "meminfo/disk: MemFree drop", "with per-CPU lists", "Slab", "Percpu"]
    L.append("| " + " | ".join(hdr) + " |")
    L.append("|" + "---|" * len(hdr))
    for c in sorted(cells, key=lambda c: (c["config"], c["driver"])):
        p, co = c["pages"], c["coarse"] or {}
        own = sum(v for m, v in c["by_module"].items() if m != "kernel")
        L.append("| " + " | ".join([
            c["config"], c["driver"], "%s x %s" % (c["hwq"], c["tags"]),
            "%s / %s" % (c["disk"].get("ring_size", "-"), c["disk"].get("queue_depth", "-")),
            str(c["binds"]),
            "%s (%s-%s)" % (kib(c["total"]), kib(c["total_min"]), kib(c["total_max"])),
            kib(c["slab"]), kib(c["percpu"]), kib(p["requests"]), kib(p["dma"]),
            kib(p["other"] + p["unknown"] + p["pgtable"] + p["cma"] + p["vmalloc"]), kib(own),
            kib(p["slab"] + p["kmalloc_large"] + p["percpu_chunk"]), kib(p["pagecache"]),
            kib(p["process"] + c["slab_process"]),
            kib(co["MemFree"]) if co else "-",
            kib(co["FreePcp"]) if co and os.path.exists(os.path.join(
                summary["dir"], "meminfo-%s-%s-before.zoneinfo" % (c["config"], c["driver"]))) else "-",
            kib(co["Slab"]) if co else "-",
            kib(co["Percpu"]) if co else "-"]) + " |")
    lost = sum(c["overrun"] for c in cells)
    L.append("")
    L.append("Events lost to ring-buffer overruns: %d%s." % (
        lost, "" if not lost else " (**the totals above are not exact**)"))
    L.append("Coarse cross-check: /proc/meminfo before and after binding the config's disks "
             "(page cache dropped before each snapshot), divided by the number of disks. "
             "MemFree's drop holds the new slab pages, not the objects, the tools' leftovers, "
             "and moves with the "
             "per-CPU free page lists (MemFree leaves them out; the next column adds them back from "
             "/proc/zoneinfo).")
    return "\n".join(L) + "\n"


def across(runs):
    """runs: [(kernel, memory.json dict or None)] -> markdown table, rows
    config x driver, columns kernels."""
    keys, cells = [], {}
    for k, m in runs:
        for c in (m or {}).get("cells", []):
            key = (c["config"], c["driver"])
            if key not in keys:
                keys.append(key)
            cells[(key, k)] = "%.0f (%.0f-%.0f)" % (c["total"] / 1024.0, c["total_min"] / 1024.0,
                                                    c["total_max"] / 1024.0)
    ks = [k for k, _ in runs]
    L = ["| config | driver | " + " | ".join(ks) + " |", "|" + "---|" * (2 + len(ks))]
    for key in sorted(keys):
        L.append("| %s | %s | %s |" % (key[0], key[1], " | ".join(cells.get((key, k), "-") for k in ks)))
    L.append("")
    L.append("KiB per bound disk: median of the binds (min-max); a kernel without a memory.json is a column of -.")
    return "\n".join(L) + "\n"


def main(argv):
    if len(argv) >= 2 and argv[0] == "account":
        ncpu = num(argv[3], 1) if len(argv) >= 4 and argv[2] == "--ncpu" else 1
        with open(argv[1], errors="replace") as f:
            json.dump(account(f, ncpu), sys.stdout, indent=1)
        print()
        return 0
    if len(argv) == 2 and argv[0] == "report":
        s = summarize(argv[1])
        with open(os.path.join(argv[1], "memory.json"), "w") as f:
            json.dump(s, f, indent=1)
        text = md(s)
        with open(os.path.join(argv[1], "memory.md"), "w") as f:
            f.write(text)
        print(text)
        return 0
    if len(argv) >= 3 and argv[0] == "across":
        runs = []
        for a in argv[2:]:
            k, _, d = a.partition("=")
            p = os.path.join(d, "memory.json")
            runs.append((k, json.load(open(p)) if os.path.exists(p) else None))
        text = across(runs)
        with open(argv[1], "w") as f:
            f.write(text)
        print(text, end="")
        return 0 if any(m for _, m in runs) else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
