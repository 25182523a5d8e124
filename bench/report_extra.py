# SPDX-License-Identifier: MIT
"""report_extra.py — tables of figures that single benchmarks report beyond
their metric, from the EXTRA fields the runner keeps (bench/report.py calls
these):
  - frame-latency: per-call latency percentiles and per-frame allocator
    time, per allocator (issue 10);
  - redis: requests per second and the server's peak RSS, faults and
    system time, per allocator (issue 10's key-value server)."""
import statistics

LATENCY = "frame-latency"
KV = "redis"
PEERS = ["glibc", "jemalloc", "mimalloc", "tcmalloc"]

# (extra key, column title, unit of the value: ns or us)
LAT_COLS = [("p50_ns", "p50", "ns"), ("p90_ns", "p90", "ns"), ("p99_ns", "p99", "ns"),
            ("p999_ns", "p99.9", "ns"), ("p9999_ns", "p99.99", "ns"), ("max_ns", "max", "ns"),
            ("frame_p50_us", "frame p50", "us"), ("frame_p99_us", "frame p99", "us"),
            ("frame_max_us", "worst frame", "us")]
SPREAD = {"p9999_ns", "max_ns", "frame_max_us"}  # shown with the runs' min–max


def extras(sec, bench, alloc):
    """The EXTRA dicts of the successful runs of one allocator."""
    return [r.extra for r in sec.get(bench, {}).get(alloc, []) if r.value is not None and r.extra]


def latency_medians(sec, allocs):
    """{alloc: {key: median over runs}} of frame-latency's figures."""
    out = {}
    for a in allocs:
        runs = extras(sec, LATENCY, a)
        if runs:
            out[a] = {k: statistics.median(r[k] for r in runs if k in r)
                      for k in runs[0]}
    return out


def duration(v, unit):
    """A time in ns or us, shown in ns, µs or ms with 3 significant digits."""
    ns = v if unit == "ns" else v * 1e3
    if ns < 1e3:
        return "%.0f ns" % ns
    if ns < 1e6:
        return ("%.2f µs" if ns < 1e4 else "%.1f µs" if ns < 1e5 else "%.0f µs") % (ns / 1e3)
    return ("%.2f ms" if ns < 1e7 else "%.1f ms") % (ns / 1e6)


def latency_table(sec, allocs):
    """Per-call percentiles and per-frame allocator time of frame-latency."""
    med = latency_medians(sec, allocs)
    if not med:
        return []
    rows = [a for a in allocs if a in med]
    timer = statistics.median(m.get("timer_ns", 0) for m in med.values())
    calls = statistics.median(m.get("calls", 0) for m in med.values())
    out = ["## Frame latency (frame-latency)", "",
           "Every malloc and free of the frames timed (clock_gettime, vDSO; the timer's own "
           "~%.0f ns is inside every figure), %.0f calls a run. Per-call percentiles from a "
           "log-linear histogram (a bucket's upper end, within 6.25 %%); a frame's allocator "
           "time is the sum of its calls. Medians of the runs; p99.99, max and the worst frame "
           "also show the runs' min–max. Lower is better." % (timer, calls), ""]
    out.append("| allocator | " + " | ".join(t for _, t, _ in LAT_COLS) + " |")
    out.append("|---|" + "---:|" * len(LAT_COLS))
    for a in rows:
        cells = []
        for key, _, unit in LAT_COLS:
            v = med[a].get(key)
            if v is None:
                cells.append("–")
                continue
            text = duration(v, unit)
            if key in SPREAD:
                vals = [r[key] for r in extras(sec, LATENCY, a) if key in r]
                text += " (%s–%s)" % (duration(min(vals), unit), duration(max(vals), unit))
            cells.append(text)
        out.append("| %s | %s |" % (a, " | ".join(cells)))
    peers = [a for a in rows if a in PEERS]
    for ours in [a for a in rows if a not in PEERS]:
        cells = []
        for key, _, _ in LAT_COLS:
            best = min((med[p][key] for p in peers if key in med[p]), default=None)
            v = med[ours].get(key)
            cells.append("%.2f" % (v / best) if v is not None and best else "–")
        out.append("| %s / best peer | %s |" % (ours, " | ".join(cells)))
    out.append("")
    return out


def kv_table(sec, allocs):
    """redis: throughput and the server's resources per allocator."""
    if KV not in sec:
        return []
    out = ["## Key-value server (redis)", "",
           "redis-server under each allocator, driven by redis-benchmark on loopback (bench/real/"
           "redis_kv.py); requests per second over the client's wall time (higher is better), "
           "and the server's peak RSS, minor faults and system time (wait4). Medians of the "
           "runs, min–max in brackets.", ""]
    out.append("| allocator | requests/s | vs glibc | server peak RSS (MiB) | minor faults "
               "| system time (ms) |")
    out.append("|---|---:|---:|---:|---:|---:|")
    base = None
    for a in allocs:
        runs = [r for r in sec[KV].get(a, []) if r.value is not None]
        if not runs:
            continue
        rps = [r.extra.get("req_per_s", 1e6 / r.value) for r in runs]
        m = statistics.median(rps)
        if a == "glibc":
            base = m
        faults = [r.minflt for r in runs if r.minflt is not None]
        stime = [r.stime for r in runs if r.stime is not None]
        out.append("| %s | %.0f (%.0f–%.0f) | %s | %.1f | %s | %s |" % (
            a, m, min(rps), max(rps), "%.2f" % (m / base) if base else "–",
            statistics.median(r.rss for r in runs) / 1024.0,
            "%.0f" % statistics.median(faults) if faults else "–",
            "%.0f" % statistics.median(stime) if stime else "–"))
    out.append("")
    return out
