#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench-guard.py — what guard sampling and the checking mode cost.

Runs frame-burst, micro (LIFO, working set 1) and micro (random order,
working set 10 000) under the preloaded library in these variants, in
interleaved rounds (every variant of a benchmark once per round, the
order of the variants rotated each round, so that drift of a shared
machine hits all of them alike):

  libsizeclass         no feature on (the reference)
  +guard               SIZECLASS_GUARD=on (the default rate)
  +guard 1/5000        SIZECLASS_GUARD=5000 (GWP-ASan's default rate)
  +check               SIZECLASS_CHECK=1
  +check+quarantine    SIZECLASS_CHECK=1 SIZECLASS_CHECK_QUARANTINE=1024

For each benchmark and variant it prints the median of the runs and their
spread (min..max), and the overhead against the reference: the median of
the per-round ratios (variant / reference in the same round) and their
spread. Writes the table to OUT/guard.md (default bench/results).
`make bench-guard [RUNS=n]` runs it; needs the library and the benchmark
programs built (make lib bench-progs).

Environment: BUILD (default build), OUT (default bench/results), RUNS
(default 7, at least 5), QUICK=1 (a tenth of the sizes, for a try).
"""
import os
import re
import statistics
import subprocess
import sys

BUILD = os.environ.get("BUILD") or "build"
OUT = os.environ.get("OUT") or "bench/results"
RUNS = int(os.environ.get("RUNS") or 7)
QUICK = os.environ.get("QUICK") not in (None, "", "0")

BENCHES = [
    ("frame-burst", "frame_burst", ["--frames", "20000" if QUICK else "200000"]),
    ("micro-lifo-1", "micro",
     ["--order", "lifo", "--ws", "1", "--pairs", "400000" if QUICK else "4000000"]),
    ("micro-rand-10k", "micro",
     ["--order", "rand", "--ws", "10000", "--pairs", "200000" if QUICK else "2000000"]),
]
VARIANTS = [
    ("libsizeclass", {}),
    ("+guard", {"SIZECLASS_GUARD": "on"}),
    ("+guard 1/5000", {"SIZECLASS_GUARD": "5000"}),
    ("+check", {"SIZECLASS_CHECK": "1"}),
    ("+check+quarantine", {"SIZECLASS_CHECK": "1", "SIZECLASS_CHECK_QUARANTINE": "1024"}),
]


def run(prog, args, extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIZECLASS_")}
    env.update(extra)
    env["LD_PRELOAD"] = os.path.abspath(os.path.join(BUILD, "libsizeclass.so"))
    out = subprocess.run([os.path.join(BUILD, "bench", prog)] + args, env=env,
                         capture_output=True, text=True, timeout=600)
    m = re.search(r"^RESULT .* metric=([0-9.]+) unit=(\S+)", out.stdout, re.M)
    if out.returncode != 0 or m is None:
        sys.exit(f"bench-guard: {prog} {' '.join(args)} failed ({out.returncode}): "
                 f"{out.stderr[-500:]}")
    return float(m.group(1)), m.group(2)


def main():
    if RUNS < 5:
        sys.exit("bench-guard: at least 5 runs (RUNS)")
    rows = []
    for name, prog, args in BENCHES:
        times = {v: [] for v, _ in VARIANTS}
        unit = ""
        for r in range(RUNS):
            order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
            for label, extra in order:
                t, unit = run(prog, args, extra)
                times[label].append(t)
        base = times["libsizeclass"]
        for label, _ in VARIANTS:
            ts = times[label]
            ratios = [t / b for t, b in zip(ts, base)]
            rows.append((name, label, unit, statistics.median(ts), min(ts), max(ts),
                         statistics.median(ratios), min(ratios), max(ratios)))
            print(f"{name:15} {label:18} median {statistics.median(ts):9.3f} {unit} "
                  f"({min(ts):.3f}..{max(ts):.3f}); vs libsizeclass "
                  f"{(statistics.median(ratios) - 1) * 100:+6.1f} % "
                  f"({(min(ratios) - 1) * 100:+.1f}..{(max(ratios) - 1) * 100:+.1f})",
                  flush=True)
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "guard.md")
    with open(path, "w") as f:
        f.write("# Guard sampling and the checking mode: overhead\n\n")
        f.write(f"- {RUNS} interleaved rounds{' (quick sizes)' if QUICK else ''}; "
                f"{os.cpu_count()} CPU(s); reproduce: `make bench-guard RUNS={RUNS}`\n")
        f.write("- overhead: median of the per-round ratios to libsizeclass without "
                "features (spread: min..max of those ratios)\n\n")
        f.write("| benchmark | variant | median | spread | overhead | overhead spread |\n")
        f.write("|---|---|---:|---:|---:|---:|\n")
        for name, label, unit, med, lo, hi, rmed, rlo, rhi in rows:
            f.write(f"| {name} | {label} | {med:.2f} {unit} | {lo:.2f}..{hi:.2f} | "
                    f"{(rmed - 1) * 100:+.1f} % | {(rlo - 1) * 100:+.1f}..{(rhi - 1) * 100:+.1f} % |\n")
    print(f"bench-guard: {path}")


if __name__ == "__main__":
    main()
