#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cg_table.py — cxx_cachesim.sh's rows (files or stdin) as markdown tables,
one per workload: instructions and misses in millions, the allocator's per
call (calls into it from the program), the program's own misses."""
import sys
from collections import OrderedDict


def main():
    rows = OrderedDict()
    for path in sys.argv[1:] or ["-"]:
        f = sys.stdin if path == "-" else open(path)
        for line in f:
            parts = line.split()
            if len(parts) < 3 or "=" not in parts[2]:
                continue
            kv = dict(p.split("=", 1) for p in parts[2:] if "=" in p)
            rows.setdefault(parts[0], OrderedDict())[parts[1]] = kv
    for wl, allocs in rows.items():
        print("%s:\n" % wl)
        print("| allocator | Ir total (M) | allocator Ir (M) | Ir per call | D1 read misses total (M)"
              " | in the allocator (M) | in the program (M) | LL read misses (M) | peak RSS (MiB) |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for a, kv in allocs.items():
            g = lambda k: int(kv.get(k, "0"))
            calls = max(g("calls"), 1)
            print("| %s | %.1f | %.2f | %.1f | %.3f | %.3f | %.3f | %.3f | %.1f |" % (
                a, g("total_Ir") / 1e6, g("alloc_Ir") / 1e6, g("alloc_Ir") / calls,
                g("total_D1mr") / 1e6, g("alloc_D1mr") / 1e6, g("prog_D1mr") / 1e6,
                g("total_DLmr") / 1e6, g("peak_rss_kb") / 1024.0))
        print()


if __name__ == "__main__":
    main()
