#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cg_split.py — split a callgrind (cache simulation) profile into the
allocator's share and the program's: instructions and cache misses of every
call the program made into the allocator (inclusive: the allocator's own
work and whatever it called), counted from the call sites, so that nested
allocator functions (operator new -> malloc) are never counted twice; the
rest is the program's (its reads of the blocks included: where a layout
costs misses outside the allocator, they land there).

  cg_split.py CALLGRIND_OUT [--top N]

The allocator is: any function of an object whose name says libsizeclass,
libmimalloc, libtcmalloc or libjemalloc (or a round-up shim,
libround), glibc's malloc family (by name, in libc.so.6) and libstdc++'s
operator new / delete (by name, in whatever object callgrind finds them). Prints one line of key=value figures, then (--top)
the allocator's functions by their own (exclusive) D1 read misses."""
import re
import sys

ALLOC_OBJ = re.compile(r"lib(sizeclass|sc-|mimalloc|tcmalloc|jemalloc|round)")
GLIBC_FN = re.compile(
    r"^(malloc|free|calloc|realloc|cfree|_int_\w+|malloc_\w+|unlink_chunk.*|sysmalloc.*|"
    r"tcache\w*|ptmalloc_init.*|__libc_(malloc|free|calloc|realloc|memalign)|_mid_memalign.*|"
    r"memalign|aligned_alloc|posix_memalign|__malloc_\w+|arena_get2.*|munmap_chunk.*|"
    r"new_heap|grow_heap.*|heap_trim.*|systrim.*|malloc_usable_size|__malloc_arena\w*)$")
CXX_FN = re.compile(r"^(operator new|operator delete)")


def is_alloc(ob, fn):
    """By object, or by name in any object: callgrind may place an
    allocator's entry points in an object it cannot name ("???")."""
    if ALLOC_OBJ.search(ob or ""):
        return True
    return bool(GLIBC_FN.match(fn or "") or CXX_FN.match(fn or "") or
                re.match(r"^(tc_|mi_|je_|tcmalloc::|_mi_)", fn or ""))


def name_of(table, value):
    """Callgrind's name compression: "(id) name" defines, "(id)" refers."""
    m = re.match(r"\((\d+)\)\s*(.*)", value)
    if not m:
        return value
    if m.group(2):
        table[m.group(1)] = m.group(2)
    return table.get(m.group(1), "?")


def main():
    path = sys.argv[1]
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 0
    obs, fns = {}, {}
    events, summary = [], None
    ob = fn = None
    cob = cfn = None
    pending_call = None  # (caller is alloc, callee is alloc, calls)
    incl = None  # the program's calls into the allocator, summed
    ncalls = 0
    excl = {}  # allocator function -> exclusive costs
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line:
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                vals = line.split()[1:]
                costs = [int(v) for v in vals] + [0] * (len(events) - len(vals))
                if pending_call is not None:
                    caller_alloc, callee_alloc, n = pending_call
                    if callee_alloc and not caller_alloc:
                        incl = [a + b for a, b in zip(incl, costs)]
                        ncalls += n
                    pending_call = None
                elif is_alloc(ob, fn):
                    key = fn
                    prev = excl.get(key, [0] * len(events))
                    excl[key] = [a + b for a, b in zip(prev, costs)]
                continue
            if line.startswith("events:"):
                events = line.split()[1:]
                incl = [0] * len(events)
            elif line.startswith("summary:"):
                summary = [int(v) for v in line.split()[1:]]
            elif line.startswith("ob="):
                ob = name_of(obs, line[3:])
            elif line.startswith("fn="):
                fn = name_of(fns, line[3:])
                cob = None
            elif line.startswith("cob="):
                cob = name_of(obs, line[4:])
            elif line.startswith("cfn="):
                cfn = name_of(fns, line[4:])
            elif line.startswith("calls="):
                callee_ob = cob if cob is not None else ob
                pending_call = (is_alloc(ob, fn), is_alloc(callee_ob, cfn),
                                int(line[6:].split()[0]))
                cob = None
            elif line.startswith("totals:"):
                summary = summary or [int(v) for v in line.split()[1:]]
    ev = {e: i for i, e in enumerate(events)}

    def get(v, e):
        return v[ev[e]] if e in ev else 0

    out = {"calls": ncalls}
    for e in ("Ir", "D1mr", "D1mw", "DLmr", "DLmw"):
        out["total_" + e] = get(summary, e)
        out["alloc_" + e] = get(incl, e)
        out["prog_" + e] = get(summary, e) - get(incl, e)
    print(" ".join("%s=%d" % kv for kv in out.items()))
    if top:
        rows = sorted(excl.items(), key=lambda kv: -get(kv[1], "D1mr"))[:top]
        for name, v in rows:
            print("  %-60s Ir=%d D1mr=%d D1mw=%d DLmr=%d" % (
                name[:60], get(v, "Ir"), get(v, "D1mr"), get(v, "D1mw"), get(v, "DLmr")))


if __name__ == "__main__":
    main()
