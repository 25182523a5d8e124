"""report.py — turn the runner's raw rows into bench/results/latest.md (and
print it) and the chart latest.png. Called by scripts/bench.sh.

Raw rows (tab-separated): section, benchmark, unit, allocator, run, metric
(lower is better; FAIL for a failed run), peak RSS in KiB, checksum.
Sections: main (every allocator), stats (libsizeclass with and without
SIZECLASS_STATS), harden (hardened vs SC_HARDEN=0), footprint (every
allocator plus glibc and libsizeclass calling malloc_trim; the metric is the
settled RSS in KiB, the RSS column the peak).

Exit status 1 when a run failed or when the runs of one benchmark disagree
on the checksum of what they computed (an allocator corrupted something)."""
import argparse
import collections
import datetime
import statistics
import sys

PEERS = ["glibc", "jemalloc", "mimalloc", "tcmalloc"]
OURS = "libsizeclass"
SPEED_TARGETS = ("frame-burst", "micro-")  # faster than every peer
XTHREAD = "xthread-"  # at least jemalloc's throughput
RSS_SLACK = 1.25  # peak RSS within 1.25x of the best peer
TRIM = "+malloc_trim"  # footprint labels of allocators that call malloc_trim(0)
FP_ORDER = ["glibc", "glibc" + TRIM, "jemalloc", "mimalloc", "tcmalloc", OURS, OURS + TRIM]


def load(path):
    """{section: {bench: {alloc: [(metric or None, rss, checksum)]}}}, units, order."""
    data = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(list)))
    units, order = {}, collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 8:
                continue
            section, bench, unit, alloc, _run, metric, rss, checksum = parts
            if bench not in order[section]:
                order[section].append(bench)
            if unit != "?":
                units[bench] = unit
            value = None if metric == "FAIL" else float(metric)
            data[section][bench][alloc].append((value, int(rss), checksum))
    return data, units, order


def summary(runs):
    """(median, min, max, median rss KiB, failures) of one allocator's runs."""
    vals = [v for v, _, _ in runs if v is not None]
    rss = [r for v, r, _ in runs if v is not None]
    fails = len(runs) - len(vals)
    if not vals:
        return None, None, None, None, fails
    return statistics.median(vals), min(vals), max(vals), statistics.median(rss), fails


def fmt(x):
    """A metric with 3 significant digits, no exponent."""
    if x >= 100:
        return "%.0f" % x
    if x >= 10:
        return "%.1f" % x
    return "%.2f" % x


def cell(s):
    med, lo, hi, _, fails = s
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


def main_tables(data, units, order):
    """The time and RSS tables of the main section, and the target check."""
    sec = data["main"]
    allocs = [a for a in PEERS + [OURS] if any(a in sec[b] for b in order["main"])]
    peers = [a for a in allocs if a != OURS]
    out = ["## Time (median of runs, min–max; lower is better)", ""]
    out.append("| benchmark | unit | " + " | ".join(allocs) + " | "
               + " | ".join("sc/%s" % p for p in peers) + " |")
    out.append("|---|---|" + "---:|" * len(allocs) + "---:|" * len(peers))
    sums = {}
    for b in order["main"]:
        s = {a: summary(sec[b][a]) for a in allocs}
        sums[b] = s
        row = [b, units.get(b, "?")] + [cell(s[a]) for a in allocs]
        row += [rfmt(ratio(s[OURS][0], s[p][0]), 1.0) for p in peers]
        out.append("| " + " | ".join(row) + " |")
    out += ["", "Ratios are libsizeclass's median over the peer's: below 1.00 (bold) we are faster.", ""]
    out += ["## Peak RSS (MiB, median of runs; lower is better)", ""]
    out.append("| benchmark | " + " | ".join(allocs) + " | sc/best peer |")
    out.append("|---|" + "---:|" * len(allocs) + "---:|")
    for b in order["main"]:
        s = sums[b]
        best = min((s[p][3] for p in peers if s[p][3] is not None), default=None)
        row = [b] + [mib(s[a][3]) if s[a][3] is not None else "FAIL" for a in allocs]
        row.append(rfmt(ratio(s[OURS][3], best)))
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    out += targets(sums, peers)
    return out, sums, allocs


def targets(sums, peers):
    """Issue 4's targets, each marked holds or missed with the numbers."""
    out = ["## Targets (issue 4)", ""]
    slow, xth, fat = [], [], []
    for b, s in sums.items():
        ours = s[OURS]
        if ours[0] is None:
            continue
        if b.startswith(SPEED_TARGETS):
            for p in peers:
                r = ratio(ours[0], s[p][0])
                if r is not None and r >= 1.0:
                    slow.append("%s vs %s %.2f" % (b, p, r))
        if b.startswith(XTHREAD) and "jemalloc" in s:
            r = ratio(ours[0], s["jemalloc"][0])
            if r is not None and r > 1.0:
                xth.append("%s %.2f" % (b, r))
        best = min((s[p][3] for p in peers if s[p][3] is not None), default=None)
        r = ratio(ours[3], best)
        if r is not None and r > RSS_SLACK:
            fat.append("%s %.2f" % (b, r))

    def line(title, misses):
        if misses:
            return "- %s: **missed** — %s" % (title, "; ".join(misses))
        return "- %s: holds" % title

    out.append(line("frame-burst and micro faster than every peer (time ratio < 1.00)", slow))
    out.append(line("cross-thread at least jemalloc's throughput (ratio to jemalloc <= 1.00)", xth))
    out.append(line("peak RSS within %.2fx of the best peer" % RSS_SLACK, fat))
    out.append("")
    return out


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
    return out


def checksum_problems(data):
    """Benchmarks whose runs disagree on their checksum."""
    bad = []
    for section, benches in data.items():
        for b, per_alloc in benches.items():
            sums = {c for runs in per_alloc.values() for v, _, c in runs if v is not None}
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
              "tcmalloc": "#c44e52", OURS: "#dd8452"}
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
    md += variant_table(data, units, order, "stats", "Statistics overhead (issue 3)",
                        OURS, OURS + "+stats",
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
                for v, _, _ in runs if v is None)
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
