# SPDX-License-Identifier: MIT
"""report.py — turn the runner's raw rows into bench/results/latest.md (and
print it) and the chart latest.png. Called by scripts/bench.sh.

Raw rows (tab-separated): section, benchmark, unit, allocator, run, metric
(lower is better; FAIL for a failed run), peak RSS in KiB, checksum, minor
page faults, system time in ms, and the benchmark's EXTRA figures
("k=v k=v", or -). Rows of 8 fields (older runs) have no faults, system
time or extras.
Sections: main (every allocator, and libsizeclass+stats: the library with
SIZECLASS_STATS=/dev/null, its exact-statistics tier), stats (libsizeclass
with and without SIZECLASS_STATS), harden (hardened vs SC_HARDEN=0),
footprint (every allocator plus glibc and libsizeclass calling malloc_trim;
the metric is the settled RSS in KiB, the RSS column the peak).
The targets of the issues are checked in report_targets.py; the tables of
single benchmarks' own figures (frame-latency, redis) are in report_extra.py.

Exit status 1 when a run failed or when the runs of one benchmark disagree
on the checksum of what they computed (an allocator corrupted something)."""
import argparse
import collections
import datetime
import statistics
import sys

import report_extra
import report_targets

PEERS = ["glibc", "jemalloc", "mimalloc", "tcmalloc"]
OURS = "libsizeclass"
EXACT = OURS + "+stats"  # the exact-statistics tier (SIZECLASS_STATS set)
RSS_SLACK = 1.25  # peak RSS within 1.25x of the best peer
TRIM = "+malloc_trim"  # footprint labels of allocators that call malloc_trim(0)
FP_ORDER = ["glibc", "glibc" + TRIM, "jemalloc", "mimalloc", "tcmalloc", OURS, OURS + TRIM]

# One run: metric (None: failed), peak RSS KiB, checksum, minor faults and
# system time ms (None: not recorded), extras {key: float}.
Run = collections.namedtuple("Run", "value rss checksum minflt stime extra")
# Medians of one allocator's successful runs; fails counts the others.
Summary = collections.namedtuple("Summary", "med lo hi rss fails minflt stime")


def number(text):
    return None if text in ("-", "", "?") else float(text)


def parse_extra(text):
    """{key: float} from "k=v k=v" (values that are not numbers are dropped)."""
    out = {}
    for item in text.split():
        k, _, v = item.partition("=")
        try:
            out[k] = float(v)
        except ValueError:
            pass
    return out


def load(path):
    """{section: {bench: {alloc: [Run]}}}, units, order."""
    data = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(list)))
    units, order = {}, collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 8:
                parts += ["-", "-", "-"]
            if len(parts) != 11:
                continue
            section, bench, unit, alloc, _run, metric, rss, checksum, minflt, stime, extra = parts
            if bench not in order[section]:
                order[section].append(bench)
            if unit != "?":
                units[bench] = unit
            value = None if metric == "FAIL" else float(metric)
            data[section][bench][alloc].append(
                Run(value, int(rss), checksum, number(minflt), number(stime), parse_extra(extra)))
    return data, units, order


def median_of(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summary(runs):
    """Summary of one allocator's runs (medians over the successful ones)."""
    ok = [r for r in runs if r.value is not None]
    fails = len(runs) - len(ok)
    if not ok:
        return Summary(None, None, None, None, fails, None, None)
    vals = [r.value for r in ok]
    return Summary(statistics.median(vals), min(vals), max(vals),
                   statistics.median([r.rss for r in ok]), fails,
                   median_of([r.minflt for r in ok]), median_of([r.stime for r in ok]))


def fmt(x):
    """A metric with 3 significant digits, no exponent."""
    if x >= 100:
        return "%.0f" % x
    if x >= 10:
        return "%.1f" % x
    return "%.2f" % x


def cell(s):
    med, lo, hi, fails = s.med, s.lo, s.hi, s.fails
    if med is None:
        return "FAIL"
    text = "%s (%s–%s)" % (fmt(med), fmt(lo), fmt(hi))
    return text + (" [%d failed]" % fails if fails else "")


def mib(kib):
    return "%.1f" % (kib / 1024.0)


def fp_mib(kib):
    """MiB with 2 decimals below 10 MiB (frame-burst's whole process is a few)."""
    return "%.2f" % (kib / 1024.0) if kib < 10240 else mib(kib)


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def rfmt(r, bold_below=None):
    if r is None:
        return "–"
    text = "%.2f" % r
    return "**%s**" % text if bold_below is not None and r < bold_below else text


def count(x):
    """A count (page faults) in 3 significant digits, k and M for thousands
    and millions."""
    if x is None:
        return "–"
    if x >= 1e6:
        return "%.2fM" % (x / 1e6)
    if x >= 1e4:
        return "%.0fk" % (x / 1e3)
    if x >= 1e3:
        return "%.1fk" % (x / 1e3)
    return "%d" % x


def best_of(s, peers, field):
    """The lowest median of `field` among the peers, or None."""
    return min((getattr(s[p], field) for p in peers if getattr(s[p], field) is not None),
               default=None)


def per_alloc_table(title, note, benches, sums, allocs, field, show, ratios):
    """One figure per allocator and benchmark, then ratio columns:
    ratios is [(header, ours, peer or "best")]."""
    out = ["## %s" % title, "", note, ""]
    out.append("| benchmark | " + " | ".join(allocs) + " | "
               + " | ".join(h for h, _, _ in ratios) + " |")
    out.append("|---|" + "---:|" * (len(allocs) + len(ratios)))
    peers = [a for a in allocs if a in PEERS]
    for b in benches:
        s = sums[b]
        row = [b] + [show(getattr(s[a], field)) if s[a].med is not None else "FAIL"
                     for a in allocs]
        for _, ours, peer in ratios:
            base = best_of(s, peers, field) if peer == "best" else getattr(s[peer], field)
            row.append(rfmt(ratio(getattr(s[ours], field), base)))
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    return out


def main_tables(data, units, order):
    """The main section's tables: time (both tiers against the peers), peak
    RSS, minor page faults and system time. Returns (lines, summaries,
    allocators)."""
    sec = data["main"]
    benches = order["main"]
    allocs = [a for a in PEERS + [OURS, EXACT] if any(a in sec[b] for b in benches)]
    peers = [a for a in allocs if a in PEERS]
    ours = [a for a in (OURS, EXACT) if a in allocs]
    sums = {b: {a: summary(sec[b].get(a, [])) for a in allocs} for b in benches}

    out = ["## Time (median of runs, min–max; lower is better)", ""]
    if EXACT in allocs:
        out += ["`%s`: the same library with `SIZECLASS_STATS=/dev/null` (the exact-statistics "
                "tier: per-request accounting on, report written at exit), in the same "
                "interleaved rounds." % EXACT, ""]
    lead = OURS if OURS in allocs else (ours[0] if ours else None)
    head_ratios = [p for p in peers] if lead else []
    out.append("| benchmark | unit | " + " | ".join(allocs) + " | "
               + " | ".join("sc/%s" % p for p in head_ratios) + " |")
    out.append("|---|---|" + "---:|" * (len(allocs) + len(head_ratios)))
    for b in benches:
        s = sums[b]
        row = [b, units.get(b, "?")] + [cell(s[a]) for a in allocs]
        row += [rfmt(ratio(s[lead].med, s[p].med), 1.0) for p in head_ratios]
        out.append("| " + " | ".join(row) + " |")
    out += ["", "Ratios are libsizeclass's median over the peer's: below 1.00 (bold) we are faster.",
            ""]
    if EXACT in allocs and OURS in allocs:
        out += ["### Exact-statistics tier: time ratios", ""]
        out.append("| benchmark | stats/default | " + " | ".join("stats/%s" % p for p in peers)
                   + " |")
        out.append("|---|---:|" + "---:|" * len(peers))
        for b in benches:
            s = sums[b]
            row = [b, rfmt(ratio(s[EXACT].med, s[OURS].med))]
            row += [rfmt(ratio(s[EXACT].med, s[p].med), 1.0) for p in peers]
            out.append("| " + " | ".join(row) + " |")
        out += ["", "`stats/default`: %s's median over libsizeclass's (the cost of exact "
                "statistics); `stats/peer`: %s's over the peer's." % (EXACT, EXACT), ""]

    rss_ratios = [("%s/best peer" % ("sc" if o == OURS else "stats"), o, "best") for o in ours]
    out += per_alloc_table("Peak RSS (MiB, median of runs; lower is better)",
                           "getrusage's `ru_maxrss` of the benchmark process (real programs: "
                           "of the measured program, the largest of it and the children it "
                           "waited for: gxx's is cc1plus's; redis: of the server).",
                           benches, sums, allocs, "rss", lambda v: mib(v) if v else "–",
                           rss_ratios)
    if any(s[a].minflt is not None for s in sums.values() for a in allocs):
        fault_ratios = []
        for o in ours:
            tag = "sc" if o == OURS else "stats"
            if "glibc" in peers:
                fault_ratios.append(("%s/glibc" % tag, o, "glibc"))
            fault_ratios.append(("%s/best peer" % tag, o, "best"))
        out += per_alloc_table(
            "Minor page faults (median of runs; lower is better)",
            "getrusage's `ru_minflt` of the same process: pages the kernel had to map on a "
            "first touch (memory an allocator took fresh from the kernel, or gave back and "
            "touched again).", benches, sums, allocs, "minflt", count, fault_ratios)
        time_ratios = [("%s/glibc" % ("sc" if o == OURS else "stats"), o, "glibc")
                       for o in ours if "glibc" in peers]
        out += per_alloc_table(
            "System time (ms, median of runs; lower is better)",
            "getrusage's `ru_stime` of the same process: time in the kernel (mmap, munmap, "
            "madvise, brk, page faults, futex waits; for redis also its network I/O).",
            benches, sums, allocs, "stime", lambda v: fmt(v) if v is not None else "–",
            time_ratios)
    return out, sums, allocs


def variant_table(data, units, order, section, title, cheap, costly, note):
    """A two-configuration comparison: medians and the overhead of `costly`
    over `cheap` (median over median, minus one)."""
    if section not in data:
        return []
    sec = data[section]
    out = ["## %s" % title, "", note, ""]
    out.append("| benchmark | unit | %s | %s | overhead |" % (cheap, costly))
    out.append("|---|---|---:|---:|---:|")
    for b in order[section]:
        sb, so = summary(sec[b][cheap]), summary(sec[b][costly])
        r = ratio(so[0], sb[0])
        change = "%+.1f %%" % ((r - 1.0) * 100) if r is not None else "–"
        out.append("| %s | %s | %s | %s | %s |" % (b, units.get(b, "?"), cell(sb), cell(so), change))
    out.append("")
    return out


def footprint_table(data, order, runs):
    """Peak and settled RSS per allocator of the footprint section (issue 7),
    libsizeclass's ratios to the best peer, and issue 7's targets."""
    if "footprint" not in data:
        return []
    sec = data["footprint"]
    benches = order["footprint"]
    allocs = [a for a in FP_ORDER if any(a in sec[b] for b in benches)]
    allocs += sorted({a for b in benches for a in sec[b]} - set(allocs))
    out = ["## Footprint: peak and settled RSS (issue 7)", ""]
    out += ["MiB, median of %s run%s per allocator (lower is better). *Peak*: the "
               "process's largest resident set (/proc/self/statm samples and getrusage); "
               "*settled*: its resident set at the end of the light frames that follow the "
               "bursts. `%s`: the program calls `malloc_trim(0)` after each burst (`--trim 1`). "
               "frame-burst-settle: `frame_burst --settle-ms` (all but the inventory freed, then "
               "light 60 Hz frames); level-burst-settle: `bench/footprint.c` (level load, burst, "
               "settle; docs/footprint.md)." % (runs, "" if str(runs) == "1" else "s", TRIM), ""]
    head = "| allocator |"
    rule = "|---|"
    for b in benches:
        head += " %s peak | %s settled |" % (b, b)
        rule += "---:|---:|"
    out += [head, rule]
    med = {}  # (bench, alloc) -> (peak KiB, settled KiB) or None
    for a in allocs:
        row = [a]
        for b in benches:
            runs_ = sec[b].get(a, [])
            if not runs_:
                med[b, a] = None
                row += ["–", "–"]
                continue
            s = summary(runs_)
            if s[0] is None:
                med[b, a] = None
                row += ["FAIL", "FAIL"]
                continue
            med[b, a] = (s[3], s[0])
            cells = [fp_mib(s[3]), fp_mib(s[0])]
            if s[4]:
                cells = [c + " [%d failed]" % s[4] for c in cells]
            row += cells
        out.append("| " + " | ".join(row) + " |")

    def best(b, peers, idx):
        """(value, allocator) of the lowest median among peers, or None."""
        vals = [(med[b, p][idx], p) for p in peers if med.get((b, p))]
        return min(vals) if vals else None

    plain = [a for a in allocs if not a.startswith(OURS) and not a.endswith(TRIM)]
    every = [a for a in allocs if not a.startswith(OURS)]
    misses = {"settled": [], "peak": []}
    for ours, peers, label in ((OURS, plain, "%s / best peer without malloc_trim" % OURS),
                               (OURS + TRIM, every, "%s%s / best peer" % (OURS, TRIM))):
        if ours not in allocs:
            continue
        row = [label]
        for b in benches:
            for idx in (0, 1):
                bp = best(b, peers, idx)
                r = ratio(med[b, ours][idx], bp[0]) if med.get((b, ours)) and bp else None
                row.append("–" if r is None else "%.2f (%s)" % (r, bp[1]))
                if ours == OURS and r is not None:
                    if idx == 1 and r > 1.0:
                        misses["settled"].append("%s %.2f vs %s" % (b, r, bp[1]))
                    if idx == 0 and r > RSS_SLACK:
                        misses["peak"].append("%s %.2f vs %s" % (b, r, bp[1]))
        out.append("| " + " | ".join(row) + " |")
    out += ["", "Ratios: libsizeclass's median over the lowest peer median (that peer in "
            "brackets); libsizeclass without `malloc_trim` is compared with the peers that do "
            "not call it either.", ""]
    if OURS in allocs:
        for key, title in (("settled", "settled RSS no higher than the best peer's (ratio <= 1.00)"),
                           ("peak", "peak RSS within %.2fx of the best peer" % RSS_SLACK)):
            if misses[key]:
                out.append("- %s: **missed** — %s" % (title, "; ".join(misses[key])))
            else:
                out.append("- %s: holds" % title)
        out.append("")
    return out + footprint_costs(sec, benches, allocs)


def footprint_costs(sec, benches, allocs):
    """Minor page faults and system time of the footprint runs: what giving
    memory back and taking it again cost (medians per allocator)."""
    sums = {(b, a): summary(sec[b].get(a, [])) for b in benches for a in allocs}
    if all(x.minflt is None for x in sums.values()):
        return []
    out = ["Minor page faults and system time (ms) of the same runs (getrusage of the "
           "process), medians:", ""]
    out.append("| allocator |" + "".join(" %s faults | %s system |" % (b, b) for b in benches))
    out.append("|---|" + "---:|---:|" * len(benches))
    for a in allocs:
        row = [a]
        for b in benches:
            x = sums[b, a]
            row += [count(x.minflt), fmt(x.stime) if x.stime is not None else "–"]
        out.append("| " + " | ".join(row) + " |")
    return out + [""]


def checksum_problems(data):
    """Benchmarks whose runs disagree on their checksum."""
    bad = []
    for section, benches in data.items():
        for b, per_alloc in benches.items():
            sums = {r.checksum for runs in per_alloc.values() for r in runs if r.value is not None}
            if len(sums) > 1:
                bad.append("%s/%s: %s" % (section, b, ", ".join(sorted(sums))))
    return bad


def chart(path, sums, allocs, order):
    """Bars per benchmark, each allocator normalised to glibc (time and RSS)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: matplotlib missing, no chart", file=sys.stderr)
        return
    benches = [b for b in order if sums[b]["glibc"][0]]
    fig, axes = plt.subplots(2, 1, figsize=(max(10, 0.9 * len(benches) + 3), 9), sharex=True)
    width = 0.8 / len(allocs)
    colors = {"glibc": "#999999", "jemalloc": "#4c72b0", "mimalloc": "#55a868",
              "tcmalloc": "#c44e52", OURS: "#dd8452", EXACT: "#f5c08a"}
    for ax, idx, label in ((axes[0], 0, "time / glibc (lower is better)"),
                           (axes[1], 3, "peak RSS / glibc (lower is better)")):
        for k, a in enumerate(allocs):
            ys = []
            for b in benches:
                base, v = sums[b]["glibc"][idx], sums[b][a][idx]
                ys.append(v / base if v and base else 0)
            xs = [i + (k - (len(allocs) - 1) / 2) * width for i in range(len(benches))]
            ax.bar(xs, ys, width, label=a, color=colors.get(a))
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: "%g" % y))
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(ncol=len(allocs), loc="upper left", fontsize=8)
    axes[1].set_xticks(range(len(benches)))
    axes[1].set_xticklabels(benches, rotation=40, ha="right")
    fig.suptitle("libsizeclass vs peers, normalised to glibc (median of runs)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    ap.add_argument("--md", required=True)
    ap.add_argument("--png")
    ap.add_argument("--runs", default="?")
    ap.add_argument("--fp-runs", default="?")
    ap.add_argument("--mode", default="full")
    ap.add_argument("--machine", default="")
    ap.add_argument("--peers", default="")
    ap.add_argument("--seconds", default="?")
    ap.add_argument("--rev", default="?")
    args = ap.parse_args()
    data, units, order = load(args.raw)
    if not data:
        sys.exit("report.py: no results in %s" % args.raw)

    md = ["# Benchmark results", ""]
    md.append("- when: %s, %s mode, %s runs per allocator%s, interleaved; %s s in all"
              % (datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), args.mode, args.runs,
                 " (footprint section: %s)" % args.fp_runs if "footprint" in data else "",
                 args.seconds))
    md.append("- machine: %s" % args.machine)
    md.append("- libsizeclass: %s" % args.rev)
    md.append("- peers: %s" % args.peers)
    md.append("- reproduce: `make bench%s`" % (" QUICK=1" if args.mode == "quick" else ""))
    md.append("")
    sums = None
    if "main" in data:
        body, sums, allocs = main_tables(data, units, order)
        md += body
        md += report_extra.latency_table(data["main"], allocs)
        md += report_extra.kv_table(data["main"], allocs)
        md += report_targets.all_targets(sums, [a for a in allocs if a in PEERS],
                                         report_extra.latency_medians(data["main"], allocs))
    md += variant_table(data, units, order, "stats", "Statistics overhead (issue 3)",
                        OURS, EXACT,
                        "libsizeclass without and with `SIZECLASS_STATS=/dev/null` (the report "
                        "is built and written at exit), same run, interleaved. Issue 3's target: "
                        "under 3 %.")
    md += variant_table(data, units, order, "harden", "Cost of hardening",
                        "SC_HARDEN=0", "hardened",
                        "`make SC_HARDEN=0 BUILD=build/noharden` against the default (hardened) "
                        "build, same run, interleaved.")
    md += footprint_table(data, order, args.fp_runs)
    bad = checksum_problems(data)
    fails = sum(1 for sec in data.values() for b in sec.values() for runs in b.values()
                for r in runs if r.value is None)
    if bad:
        md += ["## Checksum mismatches", ""] + ["- " + x for x in bad] + [""]
    text = "\n".join(md)
    with open(args.md, "w") as f:
        f.write(text)
    print(text)
    if args.png and sums:
        chart(args.png, sums, allocs, order["main"])
    if bad or fails:
        sys.exit(1)


main()
