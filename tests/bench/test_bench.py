#!/usr/bin/env python3
"""Host unit tests of the bench's python that needs no guest: memtrace.py's
accounting (synthetic ftrace text in the formats of 6.1 and 6.12) and
matrix.py's table across kernels. Prints one line per failed check and
`N passed, N failed`; exit status 1 on any failure.

    python3 tests/bench/test_bench.py       (make unit runs it)
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memtrace  # noqa: E402
import matrix  # noqa: E402

NP, NF = [0], [0]


def check(name, got, want):
    if got == want:
        NP[0] += 1
    else:
        NF[0] += 1
        print("FAIL %s: got %r, want %r" % (name, got, want))


def ev(cpu, name, text, task="vblk-bind-812", ts="51.123456", flags="...1."):
    return "%16s [%03d] %s %12s: %s: %s" % (task, cpu, flags, ts, name, text)


def stack(cpu, *frames, task="vblk-bind-812"):
    return [ev(cpu, "", "", task=task).replace(": : ", ": <stack trace>")] + \
        [" => %s" % f for f in frames]


def page(cpu, pfn, order=0):
    return ev(cpu, "mm_page_alloc", "page=00000000deadbeef pfn=0x%x order=%d migratetype=0 "
              "gfp_flags=GFP_KERNEL" % (pfn, order))


def acct(lines, ncpu=1):
    return memtrace.account(lines, ncpu)


def test_slab():
    t = ["# tracer: nop", "#",
         ev(1, "kmalloc", "call_site=vblk_probe+0x1a/0x300 [vblk] ptr=ffff888004a1c000 "
            "bytes_req=8000 bytes_alloc=8192 gfp_flags=GFP_KERNEL|__GFP_ZERO node=-1 accounted=false"),
         ev(0, "kmem_cache_alloc", "call_site=blk_mq_alloc_tag_set+0x6c/0x1f0 ptr=ffff888004a1d000 "
            "bytes_req=64 bytes_alloc=64 gfp_flags=GFP_KERNEL node=-1 accounted=false name=kmalloc-64"),
         ev(0, "kmalloc_node", "call_site=blk_mq_init_tags+0x1/0x2 ptr=ffff888004a1e000 "
            "bytes_req=100 bytes_alloc=128 gfp_flags=GFP_KERNEL node=0", flags="....."),
         ev(1, "kfree", "call_site=foo+0x1/0x2 ptr=ffff888004a1d000"),
         ev(1, "kmem_cache_free", "call_site=bar+0x1/0x2 ptr=ffff888000000040 name=dentry"),
         ev(0, "kmalloc", "call_site=x+0x1/0x2 ptr=0000000000000000 bytes_req=8 bytes_alloc=0 "
            "gfp_flags=GFP_NOWAIT node=-1"),
         ev(0, "kmem_cache_alloc", "call_site=vm_area_dup+0x1/0x2 ptr=ffff888004a1f000 "
            "bytes_req=200 bytes_alloc=256 gfp_flags=GFP_KERNEL node=-1 name=vm_area_struct")]
    r = acct(t)
    check("slab net bytes", r["slab"], 8192 + 128)
    check("slab objects", r["slab_objects"], 2)
    check("slab frees of older objects", r["older_frees"], 1)
    check("slab by module", r["slab_percpu_by_module"], {"vblk": 8192, "kernel": 128})
    check("slab total", r["total"], 8192 + 128)
    check("tools' objects apart", r["slab_process"], 256)
    check("top site names the module", r["top_sites"][0], ["vblk_probe [vblk]", 8192]
          if isinstance(r["top_sites"][0], list) else ("vblk_probe [vblk]", 8192))


def test_pages():
    t = [page(0, 0x1000, 1)] + stack(0, "__alloc_pages_noprof+0x1/0x2", "dma_direct_alloc+0x1/0x2",
                                      "vblk_ring_alloc+0x1/0x2 [vblk]")
    t += [page(1, 0x2000, 0)] + stack(1, "__alloc_pages+0x1/0x2", "allocate_slab+0x1/0x2",
                                       "___slab_alloc+0x1/0x2")
    # CPU 0's page, then CPU 1's event, then CPU 0's stack: kept apart.
    t += [page(0, 0x3000, 2), page(1, 0x4000, 0)]
    t += stack(0, "__alloc_pages+0x1/0x2", "__vmalloc_node_range+0x1/0x2")
    t += stack(1, "__alloc_pages+0x1/0x2", "__kmalloc_large_node+0x1/0x2")
    t += [page(0, 0x5000, 0)] + stack(0, "alloc_pages+0x1", "filemap_add_folio+0x1", "page_cache_ra_unbounded+0x1")
    t += [page(0, 0x6000, 0)]  # no stack
    t += [page(1, 0x7000, 1)] + stack(1, "__alloc_pages+0x1/0x2", "some_driver_fn+0x1/0x2")
    t += [ev(1, "mm_page_free_batched", "page=00000000 pfn=0x7001 order=0")]
    t += [ev(1, "mm_page_free", "page=00000000 pfn=0x9999 order=0")]
    t += [ev(0, "cma_alloc_finish", "name=reserved pfn=0x8000 page=0000 count=4 align=2 errorno=0")]
    t += [ev(0, "cma_alloc_finish", "name=reserved pfn=0x8100 page=0000 count=4 align=2 errorno=0")]
    t += [ev(0, "cma_release", "name=reserved pfn=0x8100 page=0000 count=4")]
    r = acct(t)
    p = r["pages"]
    check("dma order 1", p["dma"], 8192)
    check("slab backing apart", p["slab"], 4096)
    check("vmalloc order 2 (interleaved stack)", p["vmalloc"], 16384)
    check("kmalloc_large apart", p["kmalloc_large"], 4096)
    check("page cache apart", p["pagecache"], 4096)
    check("no stack: unknown", p["unknown"], 4096)
    check("other, half freed", p["other"], 4096)
    check("cma net", p["cma"], 16384)
    check("older page frees", r["older_frees"], 1)
    check("pages counted", r["pages_counted"], 8192 + 16384 + 4096 + 4096 + 16384)
    check("dma origin", dict(r["top_page_origins"]).get("dma:dma_direct_alloc"), 8192)


def test_percpu():
    t = [ev(0, "percpu_alloc_percpu", "call_site=blk_mq_alloc_ctxs+0x1/0x2 reserved=0 is_atomic=0 "
            "size=64 align=8 base_addr=00000000 off=128 ptr=0000000011112222 bytes_alloc=256 "
            "gfp_flags=GFP_KERNEL"),
         ev(0, "percpu_alloc_percpu", "reserved=0 is_atomic=0 size=32 align=8 base_addr=00000000 "
            "off=256 ptr=0000000011113333"),
         ev(0, "percpu_alloc_percpu", "reserved=0 is_atomic=0 size=8 align=8 base_addr=00000000 "
            "off=512 ptr=0000000011114444"),
         ev(0, "percpu_free_percpu", "base_addr=00000000 off=512 ptr=0000000011114444")]
    r = acct(t, ncpu=4)
    check("percpu: bytes_alloc, or size x CPUs", r["percpu"], 256 + 32 * 4)
    check("percpu total", r["total"], 256 + 128)


def test_report():
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "info"), "w") as f:
        f.write("kernel=6.12.0\nncpu=4\nncpu_possible=4\nko=x\n")
    samples = []
    for n, b in ((1, 4096), (2, 8192), (3, 4096)):
        name = "default-vblk-%d.trace" % n
        with open(os.path.join(d, name), "w") as f:
            f.write(ev(0, "kmalloc", "call_site=a+0x1/0x2 [vblk] ptr=ff%d bytes_req=1 bytes_alloc=%d"
                       % (n, b)) + "\n")
        samples.append("default vblk %d vblka 2 256 0 %s" % (n, name))
    with open(os.path.join(d, "samples.tsv"), "w") as f:
        f.write("\n".join(samples) + "\n")
    for w, free in (("before", 100000), ("after", 100000 - 3 * 16)):
        with open(os.path.join(d, "meminfo-default-vblk-%s" % w), "w") as f:
            f.write("MemFree: %d kB\nSlab: 10 kB\nPercpu: 0 kB\n" % free)
    with open(os.path.join(d, "meminfo-default-vblk-before.zoneinfo"), "w") as f:
        f.write("Node 0, zone DMA32\n  pagesets\n    cpu: 0\n              count: 10\n"
                "              high:  100\n    cpu: 1\n              count: 2\n")
    with open(os.path.join(d, "meminfo-default-vblk-after.zoneinfo"), "w") as f:
        f.write("Node 0, zone DMA32\n  pagesets\n    cpu: 0\n              count: 0\n")
    s = memtrace.summarize(d)
    c = s["cells"][0]
    check("report median", (c["total"], c["total_min"], c["total_max"]), (4096, 4096, 8192))
    check("report coarse MemFree per disk", c["coarse"]["MemFree"], 16 * 1024)
    check("report coarse with per-CPU lists", c["coarse"]["FreePcp"], 16 * 1024 + 12 * 4096 / 3)
    text = memtrace.md(s)
    t2 = memtrace.across([("6.1", s), ("7.3", None)])
    check("across kernels", "| default | vblk | 4 (4-8) | - |" in t2, True)
    check("report row", "| default | vblk | 2 x 256 | - / - | 3 | 4.0 (4.0-8.0) |" in text, True)


# ---- matrix.py --------------------------------------------------------------------

def summ(kernel, git, rows):
    return {"kernel": kernel, "git": git, "mode": "full", "started": "2026-12-06T01:00:00Z",
            "rows": [dict(exp=e, job=j, base="virtio_blk", test="vblk", r=r, aa=aa, v=v)
                     for e, j, r, aa, v in rows]}


def test_matrix():
    s61 = summ("6.1.0-1", "abc", [("drv", "rr4k-qd64-nj1", 1.12, 1.01, "win"),
                                  ("drv", "rr4k-qd1", 0.98, 0.995, "within noise")])
    s612 = summ("6.12.0-1", "abc", [("drv", "rr4k-qd64-nj1", 1.05, None, "within noise"),
                                    ("notify", "rr4k-qd64-nj2", 1.3, 1.02, "win")])
    m = matrix.merge([("6.1", s61), ("6.12", s612), ("7.3", None)])
    check("matrix kernels", m["kernels"], ["6.1", "6.12", "7.3"])
    keys = [(r["exp"], r["job"]) for r in m["rows"]]
    check("matrix rows: union, first-seen order",
          keys, [("drv", "rr4k-qd64-nj1"), ("drv", "rr4k-qd1"), ("notify", "rr4k-qd64-nj2")])
    check("matrix cell", matrix.cell_text(m["rows"][0]["cells"]["6.1"]), "1.12 (1.0%) win")
    check("matrix A/A missing", matrix.cell_text(m["rows"][0]["cells"]["6.12"]), "1.05 (-) within noise")
    check("matrix absent cell", matrix.cell_text(m["rows"][1]["cells"].get("6.12")), "-")
    text = matrix.markdown(m)
    lines = text.splitlines()
    hdr = [ln for ln in lines if ln.startswith("| experiment")]
    check("matrix header", hdr and hdr[0], "| experiment | job | test / base | 6.1 | 6.12 | 7.3 |")
    check("matrix says a kernel had no run", "7.3: no summary" in text, True)
    check("matrix headline filter", [(r["exp"], r["job"]) for r in matrix.merge(
        [("6.1", s61)], headline=[("drv", "rr4k-qd1")])["rows"]], [("drv", "rr4k-qd1")])
    json.dumps(m)


def main():
    for t in (test_slab, test_pages, test_percpu, test_report, test_matrix):
        try:
            t()
        except Exception as e:  # a crash is one failed check
            NF[0] += 1
            print("FAIL %s: %s: %s" % (t.__name__, type(e).__name__, e))
    print("bench python: %d passed, %d failed" % (NP[0], NF[0]))
    return 1 if NF[0] else 0


if __name__ == "__main__":
    sys.exit(main())
