#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""sites_bench.py — the targets of issue 12, measured (make bench-sites).

Overhead: whole-process runs of frame-burst (build/bench/frame_burst) and
python (bench/real/py_churn.py, CPython's default pymalloc; python-malloc:
PYTHONMALLOC=malloc, every object through malloc) under
  libsizeclass            preloaded, nothing else on (the baseline)
  sites=on                SIZECLASS_SITES=on (the default sampling rate)
  sites=1                 SIZECLASS_SITES=1 (every allocation)
  glibc                   no preload
  heaptrack               heaptrack's recorder on glibc (Debian's heaptrack)
interleaved: each round runs every configuration once, in a shuffled
order, RUNS rounds. Each run's wall time and CPU time (user + system of the
whole process tree, from wait4) are kept; the table shows medians and the
min-max range, and each configuration's median of the per-round ratios to
its baseline (libsizeclass for the sites, glibc for heaptrack). The
sampled configurations write their report at exit (SIZECLASS_SITES alone
implies it, text on stderr, without exact statistics): its cost is in the
figures.

Accuracy: frame-burst is deterministic (fixed seed). One run at rate 1
gives the true sites; ACC_RUNS runs at the default rate give estimates. For
every class with at least 1000 allocations, the true top site (by
allocations) must be the sampled run's top site, and its estimate within
+-20 % of the truth.

Writes OUT/sites.md (default bench/results) and prints it.
Environment: BUILD (build), RUNS (7), ACC_RUNS (5), FRAMES (200000),
PY_N (300000), ONLY (a regex over workload names)."""
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.path.abspath(os.environ.get("BUILD") or os.path.join(ROOT, "build"))
OUT = os.environ.get("OUT") or os.path.join(ROOT, "bench", "results")
RUNS = int(os.environ.get("RUNS") or "7")
ACC_RUNS = int(os.environ.get("ACC_RUNS") or "5")
FRAMES = int(os.environ.get("FRAMES") or "200000")
PY_N = int(os.environ.get("PY_N") or "300000")
ONLY = os.environ.get("ONLY", "")
LIB = os.path.join(BUILD, "libsizeclass.so")
PYTHON = "/usr/bin/python3"
HEAPTRACK = shutil.which("heaptrack")

WORKLOADS = [
    ("frame-burst", [os.path.join(BUILD, "bench", "frame_burst"), "--frames", str(FRAMES)], {}),
    ("python", [PYTHON, os.path.join(ROOT, "bench", "real", "py_churn.py"), str(PY_N)], {}),
    ("python-malloc", [PYTHON, os.path.join(ROOT, "bench", "real", "py_churn.py"), str(PY_N)],
     {"PYTHONMALLOC": "malloc"}),
]

# name, preload, extra environment, baseline name
CONFIGS = [
    ("libsizeclass", True, {}, None),
    ("sites=on", True, {"SIZECLASS_SITES": "on"}, "libsizeclass"),
    ("sites=1", True, {"SIZECLASS_SITES": "1"}, "libsizeclass"),
    ("glibc", False, {}, None),
]
if HEAPTRACK:
    CONFIGS.append(("heaptrack", False, {}, "glibc"))


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SIZECLASS_") and k != "LD_PRELOAD"}
    return env


def run_once(argv, env, tmp):
    """(wall s, cpu s) of one whole-process run; exits on failure."""
    t0 = time.perf_counter()
    with open(os.path.join(tmp, "stdout"), "wb") as out, \
            open(os.path.join(tmp, "stderr"), "wb") as err:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, cwd=tmp)
        _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("sites_bench: %s failed:\n%s" % (" ".join(argv),
                                                 open(os.path.join(tmp, "stderr")).read()[-2000:]))
    return wall, ru.ru_utime + ru.ru_stime


def command(config, argv, extra, tmp):
    name, preload, cenv, _ = config
    env = clean_env()
    env.update(extra)
    env.update(cenv)
    if preload:
        env["LD_PRELOAD"] = LIB
    if name == "heaptrack":
        argv = [HEAPTRACK, "-o", os.path.join(tmp, "heaptrack.data")] + argv
    return argv, env


def overhead(tmp):
    rows = []
    for wname, argv, extra in WORKLOADS:
        if ONLY and not re.search(ONLY, wname):
            continue
        samples = {c[0]: [] for c in CONFIGS}
        for _ in range(RUNS):
            order = list(CONFIGS)
            random.shuffle(order)
            for config in order:
                cargv, env = command(config, argv, extra, tmp)
                samples[config[0]].append(run_once(cargv, env, tmp))
                for f in os.listdir(tmp):  # heaptrack's data files
                    if f.startswith("heaptrack.data"):
                        os.unlink(os.path.join(tmp, f))
        rows.append((wname, samples))
    return rows


def med(xs):
    return statistics.median(xs)


def fmt_range(xs):
    return "%.3f (%.3f–%.3f)" % (med(xs), min(xs), max(xs))


def overhead_table(rows):
    lines = []
    for wname, samples in rows:
        lines.append("### %s\n" % wname)
        lines.append("| configuration | wall s, median (min–max) | CPU s, median (min–max) "
                     "| wall ratio | CPU ratio |")
        lines.append("|---|---:|---:|---:|---:|")
        for name, _, _, base in CONFIGS:
            xs = samples[name]
            walls = [w for w, _ in xs]
            cpus = [c for _, c in xs]
            if base:
                bs = samples[base]
                wr = med([a[0] / b[0] for a, b in zip(xs, bs)])
                cr = med([a[1] / b[1] for a, b in zip(xs, bs)])
                ratio = ("%.3f" % wr, "%.3f" % cr)
                ratio = tuple("%s (vs %s)" % (r, base) for r in ratio)
            else:
                ratio = ("-", "-")
            lines.append("| %s | %s | %s | %s | %s |" % (name, fmt_range(walls), fmt_range(cpus),
                                                          ratio[0], ratio[1]))
        lines.append("")
    return lines


def report_json(argv, env, tmp, rate):
    path = os.path.join(tmp, "sites.json")
    env = dict(env)
    env.update({"LD_PRELOAD": LIB, "SIZECLASS_SITES": rate, "SIZECLASS_STATS": path})
    run_once(argv, env, tmp)
    return json.load(open(path))


def site_key(s):
    return (s["class"], tuple(s["locations"]))


def accuracy(tmp):
    argv = [os.path.join(BUILD, "bench", "frame_burst"), "--frames", str(FRAMES)]
    truth = report_json(argv, clean_env(), tmp, "1")
    class_allocs = {c["size"]: c["allocs"] for c in truth["classes"]}
    class_allocs[0] = truth["fallback"]["allocs"]
    tops = {}
    for s in truth["sites"]:
        if "allocs" in s["top"] and (s["class"] not in tops or
                                     s["allocs"] > tops[s["class"]]["allocs"]):
            tops[s["class"]] = s
    runs = [report_json(argv, clean_env(), tmp, "on") for _ in range(ACC_RUNS)]
    lines = ["| class | allocations | true top site | its allocations | top in sampled runs "
             "| estimate error: median, worst | samples (median) |",
             "|---|---:|---|---:|---:|---:|---:|"]
    verdicts = []
    for cls in sorted(tops, key=lambda c: (c == 0, c)):
        if class_allocs.get(cls, 0) < 1000:
            continue
        t = tops[cls]
        hits, errors, samples = 0, [], []
        for r in runs:
            sites = [s for s in r["sites"] if s["class"] == cls]
            best = max(sites, key=lambda s: s["allocs"]) if sites else None
            if best is not None and site_key(best) == site_key(t):
                hits += 1
            same = [s for s in sites if site_key(s) == site_key(t)]
            if same:
                errors.append(same[0]["allocs"] / t["allocs"] - 1)
                samples.append(same[0]["samples"])
            else:
                errors.append(-1.0)
        worst = max(errors, key=abs)
        where = "%s < %s" % (t["function"], t["frames"][1] if len(t["frames"]) > 1 else "")
        lines.append("| %s | %d | %s (%s) | %d | %d/%d | %+.1f %%, %+.1f %% | %s |" % (
            "%d B" % cls if cls else "system", class_allocs[cls], where, t["locations"][0].rsplit(
                "/", 1)[-1], t["allocs"], hits, len(runs), 100 * med(errors), 100 * worst,
            med(samples) if samples else "-"))
        verdicts.append((cls, hits == len(runs) and abs(worst) <= 0.20))
    return lines, verdicts


def main():
    if not os.path.exists(LIB):
        sys.exit("sites_bench: %s missing (make)" % LIB)
    tmp = tempfile.mkdtemp(prefix="sc-sites-bench-")
    try:
        t0 = time.time()
        rows = overhead(tmp)
        acc_lines, verdicts = accuracy(tmp) if not ONLY or re.search(ONLY, "accuracy") else ([],
                                                                                              [])
        spent = time.time() - t0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    md = ["# Allocation sites: overhead and accuracy (issue 12)", "",
          "- when: %s, %d interleaved rounds (shuffled order), %.0f s in all; libsizeclass %s" % (
              time.strftime("%Y-%m-%d %H:%M"), RUNS, spent, git),
          "- machine: %d CPU(s), shared with other work: wall time is noisy, CPU time (user + "
          "system of the process tree) much less so" % os.cpu_count(),
          "- frame-burst: `frame_burst --frames %d`; python: `py_churn.py %d`" % (FRAMES, PY_N),
          "- reproduce: `make bench-sites` (RUNS, ACC_RUNS, FRAMES, PY_N, ONLY)", ""]
    md += ["## Overhead", ""] + overhead_table(rows)
    md.append("Targets: sites=on at most 1.03 of libsizeclass on frame-burst and 1.05 on python "
              "(CPU ratio, median of paired rounds); sites=1 below heaptrack.")
    for wname, samples in rows:
        if "sites=on" not in samples:
            continue
        limit = 1.03 if wname == "frame-burst" else 1.05 if wname == "python" else None
        cr = med([a[1] / b[1] for a, b in zip(samples["sites=on"], samples["libsizeclass"])])
        wr = med([a[0] / b[0] for a, b in zip(samples["sites=on"], samples["libsizeclass"])])
        if limit:
            md.append("- %s, sites=on: CPU %.3f, wall %.3f: **%s**" % (
                wname, cr, wr, "holds" if cr <= limit else "missed"))
        if "heaptrack" in samples:
            s1 = med([c for _, c in samples["sites=1"]])
            ht = med([c for _, c in samples["heaptrack"]])
            s1w = med([w for w, _ in samples["sites=1"]])
            htw = med([w for w, _ in samples["heaptrack"]])
            md.append("- %s, sites=1 vs heaptrack: CPU %.3f s vs %.3f s, wall %.3f s vs %.3f s: "
                      "**%s**" % (wname, s1, ht, s1w, htw,
                                  "holds" if s1 < ht and s1w < htw else "missed"))
    if acc_lines:
        md += ["", "## Accuracy (frame-burst, default rate vs rate 1)", "",
               "%d sampled runs; a site is its class and its frames' module+offset." % ACC_RUNS,
               ""] + acc_lines + [""]
        md.append("Target: the true top site of each class with >= 1000 allocations is the "
                  "sampled top site in every run, its estimate within 20 %: " + ", ".join(
                      "%s %s" % ("%d B" % c if c else "system", "holds" if ok else "**missed**")
                      for c, ok in verdicts))
    text = "\n".join(md) + "\n"
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "sites.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
