# SPDX-License-Identifier: MIT
"""diff.py — two reports compared, and budgets (--fail-if)."""

import json
import re
from fractions import Fraction

from .fmt import class_label, f_bytes
from .schema import CLASS_SIZES, REASONS, ReportError, peak_bytes, program_name
from .sites import site_chain


class Untracked(Exception):
    """A figure the report does not have (default tier)."""

def _need(v, what):
    if v is None:
        raise Untracked(what)
    return v


def _ratio_pct(permille, what):
    return Fraction(_need(permille, what), 10)


def _per_frame(doc, allocs):
    frames = doc["frames"]["frames"]
    return None if not frames else Fraction(allocs, frames)


def _hit_rate(c, what):
    if not c["allocs"]:
        return None  # no allocation: no rate to speak of
    return _ratio_pct(c["hit_rate_permille"], what)


# name: (kind, getter(doc), what it is). Kinds: count, bytes, ratio (a percentage),
# rate (per frame). A getter returns None where the figure is undefined (no allocation,
# no frame) and raises Untracked where the report did not track it.
GLOBAL_METRICS = {
    "peak_bytes": ("bytes", lambda d: _need(peak_bytes(d), "peak bytes (exact statistics)"),
                   "peak bytes: the classes' peak block bytes plus the system allocator's peak"),
    "peak_blocks": ("count", lambda d: _need(d["totals"]["peak_live_blocks"],
                                             "peak blocks (exact statistics)"),
                    "peak live class blocks"),
    "allocs": ("count", lambda d: d["totals"]["allocs"], "class allocations"),
    "allocs_per_frame": ("rate", lambda d: _per_frame(d, d["totals"]["allocs"]),
                         "class allocations per frame"),
    "hit_rate": ("ratio", lambda d: _hit_rate(d["totals"], "hit rate"), "hit rate"),
    "fresh_carves": ("count", lambda d: d["totals"]["fresh_carves"], "fresh carves"),
    "live_bytes": ("bytes", lambda d: d["leaks"]["block_bytes"] + d["leaks"]["fallback_bytes"],
                   "bytes live at the report (leaks at exit), classes and system"),
    "live_blocks": ("count", lambda d: d["totals"]["live_blocks"], "class blocks live"),
    "wasted_bytes": ("bytes", lambda d: _need(d["totals"]["wasted_bytes"],
                                              "wasted bytes (exact statistics)"),
                     "bytes lost to rounding up"),
    "int_frag": ("ratio", lambda d: None if d["totals"]["peak_block_bytes"] == 0 else
                 _ratio_pct(d["totals"]["peak_internal_fragmentation_permille"],
                            "internal fragmentation"), "internal fragmentation at peak"),
    "ext_frag": ("ratio", lambda d: None if not d["totals"]["capacity_blocks"] else
                 _ratio_pct(d["totals"]["external_fragmentation_permille"], "ext. fragmentation"),
                 "external fragmentation"),
    "zero_fresh": ("ratio", lambda d: None if not d["frames"]["steady_frames"] else
                   _ratio_pct(d["frames"]["zero_fresh_permille"], "zero-fresh frames"),
                   "frames after warm-up with no fresh carve"),
    "peak_rss": ("bytes", lambda d: d["process"]["peak_rss_bytes"], "peak RSS"),
    "system_peak_bytes": ("bytes", lambda d: _need(d["fallback"]["peak_live_bytes"],
                                                   "system peak bytes (exact statistics)"),
                          "system allocator's peak live bytes"),
}


def _cls(d, size):
    return d["classes"][CLASS_SIZES.index(size)]


CLASS_METRICS = {
    "peak_blocks": ("count", lambda d, s: _need(_cls(d, s)["peak_live_blocks"],
                                                "peak blocks (exact statistics)"),
                    "peak live blocks"),
    "peak_bytes": ("bytes", lambda d, s: _need(_cls(d, s)["peak_block_bytes"],
                                               "peak bytes (exact statistics)"),
                   "peak live block bytes"),
    "hit_rate": ("ratio", lambda d, s: _hit_rate(_cls(d, s), "hit rate"), "hit rate"),
    "allocs": ("count", lambda d, s: _cls(d, s)["allocs"], "allocations"),
    "allocs_per_frame": ("rate", lambda d, s: _per_frame(d, _cls(d, s)["allocs"]),
                         "allocations per frame"),
    "fresh_carves": ("count", lambda d, s: _cls(d, s)["fresh_carves"], "fresh carves"),
    "live_blocks": ("count", lambda d, s: _cls(d, s)["live_blocks"], "live blocks"),
    "live_bytes": ("bytes", lambda d, s: _cls(d, s)["live_block_bytes"], "live block bytes"),
    "wasted_bytes": ("bytes", lambda d, s: _need(_cls(d, s)["wasted_bytes"],
                                                 "wasted bytes (exact statistics)"),
                     "bytes lost to rounding up"),
    "int_frag": ("ratio", lambda d, s: _ratio_pct(_cls(d, s)[
        "peak_internal_fragmentation_permille"], "internal fragmentation")
        if _cls(d, s)["peak_block_bytes"] != 0 else None, "internal fragmentation at peak"),
    "ext_frag": ("ratio", lambda d, s: None if not _cls(d, s)["capacity_blocks"] else
                 _ratio_pct(_cls(d, s)["external_fragmentation_permille"], "ext. fragmentation"),
                 "external fragmentation"),
    "util": ("ratio", lambda d, s: None if not _cls(d, s)["allocs"] else _ratio_pct(
        _cls(d, s)["total_utilization_permille"], "utilization"), "utilization over the run"),
}

UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3,
         "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
BUDGET_RE = re.compile(r"\s*(?:class\s*\[\s*(\d+|system)\s*(?:B)?\s*\]\s*\.\s*)?([a-z_]+)\s*"
                       r"(<=|>=|==|!=|<|>)\s*([+-])?\s*(\d+(?:\.\d+)?)\s*(%|pp|[KMG]iB|[KMG]|B)?"
                       r"\s*")
OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
       ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


class Budget:
    """One --fail-if expression: METRIC OP VALUE, where a signed VALUE is a change
    from the base (with %: relative; otherwise in the metric's unit, percentage
    points for a ratio) and an unsigned one the new report's figure itself."""

    def __init__(self, text):
        self.text = text.strip()
        m = BUDGET_RE.fullmatch(text)
        if m is None:
            raise ReportError("budget %r: not METRIC OP VALUE (e.g. peak_bytes>+10%%, "
                              "class[64].hit_rate<90%%)" % self.text)
        cls, name, self.op, sign, num, unit = m.groups()
        self.size = None
        if cls is not None:
            self.size = 0 if cls == "system" else int(cls)
            if self.size not in CLASS_SIZES:
                raise ReportError("budget %r: no class of %s B (classes: %s)"
                                  % (self.text, cls, ", ".join(str(s) for s in CLASS_SIZES)))
            table = CLASS_METRICS
        else:
            table = GLOBAL_METRICS
        if name not in table:
            raise ReportError("budget %r: unknown figure %s (%s: %s)"
                              % (self.text, name, "per class" if cls else "totals",
                                 ", ".join(sorted(table))))
        self.name = name
        self.kind, self.getter, self.what = table[name]
        self.change = sign is not None
        self.relative = self.change and unit == "%"
        value = Fraction(num) * (-1 if sign == "-" else 1)
        if unit in UNITS:
            if self.kind != "bytes":
                raise ReportError("budget %r: %s is not a byte figure" % (self.text, name))
            value *= UNITS[unit]
        elif unit == "pp" and (self.kind != "ratio" or not self.change):
            raise ReportError("budget %r: pp (percentage points) is for a change of a ratio "
                              "(e.g. class[64].hit_rate<-2pp)" % self.text)
        elif unit == "%" and not self.change and self.kind != "ratio":
            raise ReportError("budget %r: %s is not a ratio: a change needs a sign "
                              "(%s%s+%s%%)" % (self.text, name, name, self.op, num))
        self.value = value

    def label(self):
        return ("class[%d]." % self.size if self.size is not None else "") + self.name

    def get(self, doc):
        if self.size is None:
            return self.getter(doc)
        return self.getter(doc, self.size)

    def evaluate(self, base, new, base_path, new_path):
        """(ok, line, record); raises ReportError when a figure is not tracked."""
        vals = []
        for doc, path in ((base, base_path), (new, new_path)):
            try:
                vals.append(self.get(doc))
            except Untracked as e:
                raise ReportError("cannot check %s: %s is not tracked in %s (exact statistics "
                                  "were off: SIZECLASS_STATS or SIZECLASS_STATS_EXACT=1)"
                                  % (self.text, e, path))
        b, n = vals
        rec = {"budget": self.text, "metric": self.label(), "base": _jnum(b), "new": _jnum(n)}
        if n is None or (self.change and b is None):
            rec.update(ok=True, checked=False)
            return True, "n/a     %s: %s (not checked)" % (self.text, self._undefined(b, n)), rec
        if self.relative:
            lhs = rel_change(b, n)
        elif self.change:
            lhs = n - b
        else:
            lhs = n
        failed = OPS[self.op](lhs, self.value)
        rec.update(ok=not failed, checked=True, change=_jnum(n - b if b is not None else None),
                   change_percent=_jnum(rel_change(b, n) if b is not None else None))
        detail = "%s -> %s" % (fmt_metric(self.kind, b), fmt_metric(self.kind, n))
        if b is not None:
            detail += " (%s)" % fmt_change(self.kind, b, n)
        return (not failed), "%s %s: %s" % ("FAILED " if failed else "ok     ", self.text,
                                            detail), rec

    def _undefined(self, b, n):
        if self.kind == "rate":
            return "no frames marked"
        return "undefined (no allocation, or nothing to measure)"


def rel_change(b, n):
    """(n - b) / b in percent; infinite growth from 0."""
    if b is None or n is None:
        return None
    if b == 0:
        return Fraction(0) if n == 0 else (float("inf") if n > 0 else float("-inf"))
    return Fraction(n - b) * 100 / b


def _jnum(v):
    """A figure for JSON: an integer, a decimal (4 places), or null (also for the
    infinite growth from 0, which JSON cannot say)."""
    if v is None:
        return None
    if isinstance(v, float):
        return v if v == v and abs(v) != float("inf") else None
    if isinstance(v, Fraction) and v.denominator != 1:
        return float(round(v, 4))
    return int(v)


def fmt_metric(kind, v):
    if v is None:
        return "-"
    if kind == "bytes":
        return f_bytes(int(v))
    if kind == "ratio":
        return "%.1f%%" % float(v)
    if kind == "rate":
        return "%.2f" % float(v)
    return str(int(v))


def fmt_change(kind, b, n):
    if b is None or n is None:
        return "-"
    if kind == "ratio":
        return "%+.1f pp" % float(n - b)
    r = rel_change(b, n)
    if isinstance(r, float):
        return "new" if r > 0 else "gone"
    return "%+.1f%%" % float(r)


DIFF_TOTALS = ("peak_bytes", "peak_blocks", "allocs", "allocs_per_frame", "hit_rate",
               "fresh_carves", "int_frag", "ext_frag", "wasted_bytes", "live_bytes",
               "zero_fresh", "peak_rss")
DIFF_CLASS = ("peak_blocks", "peak_bytes", "hit_rate", "int_frag", "ext_frag",
              "allocs_per_frame")


def _metric_pair(getter, base, new):
    out = []
    for d in (base, new):
        try:
            out.append(getter(d))
        except Untracked:
            out.append(None)
    return out


def site_key(s):
    return (s["class"], tuple(str(f) for f in s["frames"]) or (s.get("function") or "",))


def grown_sites(base, new, top=10):
    """The sites whose allocations grew, most first. A site is its class and its
    chain of function names (offsets move between builds); sites with the same
    names (two calls in one function) count together."""
    if base.get("sites") is None or new.get("sites") is None:
        return None

    def by_key(doc):
        out = {}
        for s in doc["sites"]:
            k = site_key(s)
            if k in out:
                agg = out[k]
                out[k] = dict(agg, allocs=agg["allocs"] + s["allocs"],
                              live_blocks=agg["live_blocks"] + s["live_blocks"])
            else:
                out[k] = s
        return out

    before, after = by_key(base), by_key(new)
    rows = []
    for k, s in after.items():
        b = before.get(k)
        ba = b["allocs"] if b else 0
        if s["allocs"] > ba:
            rows.append((s["allocs"] - ba, ba, s, b))
    rows.sort(key=lambda r: (-r[0], r[2]["class"]))
    return rows[:top]


def diff_report(base, new, base_path, new_path, budgets):
    totals = {}
    for name in DIFF_TOTALS:
        kind, getter, what = GLOBAL_METRICS[name]
        totals[name] = (kind, what) + tuple(_metric_pair(getter, base, new))
    classes = []
    for size in CLASS_SIZES:
        row = {}
        for name in DIFF_CLASS:
            kind, getter, what = CLASS_METRICS[name]
            row[name] = (kind, what) + tuple(_metric_pair(lambda d: getter(d, size), base, new))
        used = _cls(base, size)["allocs"] or _cls(new, size)["allocs"]
        classes.append((size, used, row))
    results = [b.evaluate(base, new, base_path, new_path) for b in budgets]
    return totals, classes, grown_sites(base, new), results


def describe_doc(doc, path):
    name, _ = program_name(doc)
    fr = doc["frames"]["frames"]
    return "%s: %spid %d, report %s%s" % (
        path, name + ", " if name else "", doc["process"]["pid"],
        REASONS.get(doc["reason"], doc["reason"]), ", %d frames" % fr if fr else "")


def diff_text(base, new, base_path, new_path, totals, classes, grown, results):
    out = ["sizeclass-report diff", "  base  " + describe_doc(base, base_path),
           "  new   " + describe_doc(new, new_path), "", "totals" + " " * 26 +
           "%12s  %12s  %10s" % ("base", "new", "change")]
    for name in DIFF_TOTALS:
        kind, what, b, n = totals[name]
        out.append("  %-28s  %12s  %12s  %10s" % (name, fmt_metric(kind, b), fmt_metric(kind, n),
                                                  fmt_change(kind, b, n)))
    for size, used, row in classes:
        if not used:
            continue
        out.append("")
        out.append("class %-26s  %12s  %12s  %10s" % ("%d B" % size, "base", "new", "change"))
        for name in DIFF_CLASS:
            kind, what, b, n = row[name]
            out.append("  %-28s  %12s  %12s  %10s" % (name, fmt_metric(kind, b),
                                                      fmt_metric(kind, n),
                                                      fmt_change(kind, b, n)))
    idle = [str(size) for size, used, _ in classes if not used]
    if idle:
        out.append("")
        out.append("classes without allocations in either report: %s B" % ", ".join(idle))
    out.append("")
    if grown is None:
        out.append("sites that grew: sites are not recorded in both reports (SIZECLASS_SITES)")
    elif not grown:
        out.append("sites that grew: none")
    else:
        out.append("sites that grew (allocations, most first)")
        out.append("  %10s  %8s  %-6s  %s" % ("more", "change", "class", "function < callers"))
        for more, ba, s, b in grown:
            out.append("  %10s  %8s  %-6s  %s" % (
                "+%d" % more, fmt_change("count", ba, s["allocs"]) if b else "new",
                class_label(s["class"]), site_chain(s)))
    if results:
        out.append("")
        out.append("budgets")
        for ok, line, _ in results:
            out.append("  " + line)
    return "\n".join(out) + "\n"


def diff_json(base, new, base_path, new_path, totals, classes, grown, results):
    def pair(kind, what, b, n):
        return {"base": _jnum(b), "new": _jnum(n),
                "change": _jnum(n - b) if b is not None and n is not None else None,
                "change_percent": _jnum(rel_change(b, n)) if kind != "ratio" else None}
    doc = {
        "schema": "sizeclass-report-diff", "version": 1,
        "base": {"path": base_path, "pid": base["process"]["pid"]},
        "new": {"path": new_path, "pid": new["process"]["pid"]},
        "totals": {name: pair(*totals[name]) for name in DIFF_TOTALS},
        "classes": [dict([("size", size)] + [(name, pair(*row[name])) for name in DIFF_CLASS])
                    for size, used, row in classes],
        "sites_grown": None if grown is None else [
            {"class": s["class"], "function": s.get("function"), "frames": s["frames"],
             "base_allocs": ba, "new_allocs": s["allocs"], "change": more,
             "base_live_blocks": b["live_blocks"] if b else 0, "new_live_blocks": s["live_blocks"]}
            for more, ba, s, b in grown],
        "budgets": [rec for _, _, rec in results],
        "failed": sum(1 for ok, _, _ in results if not ok),
    }
    return json.dumps(doc, indent=2) + "\n"


def read_budget_file(path):
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except (OSError, UnicodeDecodeError) as e:
        raise ReportError("%s: %s" % (path, getattr(e, "strerror", None) or e))
    out = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out
