# SPDX-License-Identifier: MIT
"""diff.py — two reports compared, and budgets (--fail-if).

A budget is METRIC OP VALUE; METRIC is a figure of the totals (peak_bytes), of
a class (class[64].hit_rate), of a tag (tag[audio].peak_block_bytes), of the
threads of one name (thread[render].live_block_bytes, summed over its rows)
or of one of the report's own budgets (budget[tag:audio].peak_share). Either
report may be a named snapshot (FILE@NAME): the same figures, of that moment."""

import json
import re
from fractions import Fraction

from .fmt import class_label, f_bytes, f_name
from .schema import (CLASS_SIZES, ReportError, peak_bytes, program_name, reason_words,
                     tag_peak)
from .sites import site_chain


class Untracked(Exception):
    """A figure the report does not have (default tier)."""


class Absent(Exception):
    """A tag, thread or budget a report does not hold: nothing to check."""


class NotRecorded(Exception):
    """A report without tags, threads or budgets at all (a library before
    them, or the feature off): a budget on them cannot be checked."""

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
    if not c["allocs"] or c["hit_rate_permille"] is None:
        return None  # no allocation: no rate to speak of
    return _ratio_pct(c["hit_rate_permille"], what)


def _ext_frag(c):
    """External fragmentation: undefined without pages, or with nothing live
    (a report that writes null there)."""
    if not c["capacity_blocks"] or c["external_fragmentation_permille"] is None:
        return None
    return Fraction(c["external_fragmentation_permille"], 10)


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
    "ext_frag": ("ratio", lambda d: _ext_frag(d["totals"]), "external fragmentation"),
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
    "ext_frag": ("ratio", lambda d, s: _ext_frag(_cls(d, s)), "external fragmentation"),
    "util": ("ratio", lambda d, s: None if not _cls(d, s)["allocs"] else _ratio_pct(
        _cls(d, s)["total_utilization_permille"], "utilization"), "utilization over the run"),
}



def _rows(doc, key, what):
    rows = doc.get(key)
    if rows is None:
        raise NotRecorded("%s are not recorded%s" % (
            what, " in a snapshot" if doc.get("snapshot") and key == "budgets" else ""))
    return rows


def _tag(doc, name):
    for tag in _rows(doc, "tags", "tags"):
        if tag["name"] == name:
            return tag
    raise Absent("no tag %s" % json.dumps(name))


def _tag_figure(key):
    def get(d, name):
        tag = _tag(d, name)
        if key == "peak_bytes":
            return _need(tag_peak(tag), "the tag's peak bytes (exact statistics)")
        return _need(tag[key], "%s (exact statistics)" % key)
    return get


def _thread_figure(key):
    def get(d, name):
        rows = [th for th in _rows(d, "threads", "threads") if th.get("name") == name]
        if not rows:
            raise Absent("no thread named %s" % json.dumps(name))
        return sum(_need(th.get(key), "%s of the threads" % key) for th in rows)
    return get


def _budget_figure(key):
    def get(d, what):
        rows = [b for b in _rows(d, "budgets", "budgets") if b["what"] == what]
        if not rows:
            raise Absent("no budget %s" % json.dumps(what))
        b = rows[-1]
        if key == "breached":
            return int(b["breached"])
        if key in ("peak_share", "live_share"):
            v = b["peak" if key == "peak_share" else "live"]
            return None if v is None or not b["limit"] else Fraction(v * 100, b["limit"])
        return b[key]
    return get


def _kind(key):
    return "bytes" if key.endswith("_bytes") else "count"


TAG_METRICS = dict(
    [(k, (_kind(k), _tag_figure(k), "the tag's " + k.replace("_", " ")))
     for k in ("allocs", "frees", "live_blocks", "live_requested_bytes", "peak_requested_bytes",
               "live_block_bytes", "peak_block_bytes", "system_live_bytes",
               "system_peak_bytes")]
    + [("peak_bytes", ("bytes", _tag_figure("peak_bytes"),
                       "the tag's peak block bytes plus its system allocator peak"))])
THREAD_METRICS = dict(
    (k, (_kind(k), _thread_figure(k), "the threads' " + k.replace("_", " ")))
    for k in ("allocs", "frees", "live_block_bytes", "peak_block_bytes", "system_live_bytes",
              "count"))
BUDGET_METRICS = {
    "limit": ("bytes", _budget_figure("limit"), "the budget's limit"),
    "live": ("bytes", _budget_figure("live"), "the budget's live bytes"),
    "peak": ("bytes", _budget_figure("peak"), "the budget's peak bytes"),
    "breached": ("count", _budget_figure("breached"), "1 when the budget was breached"),
    "first_breach_frame": ("count", _budget_figure("first_breach_frame"),
                           "the frame of the first breach"),
    "peak_share": ("ratio", _budget_figure("peak_share"), "the peak over the limit"),
    "live_share": ("ratio", _budget_figure("live_share"), "live bytes over the limit"),
}
SCOPES = {"class": CLASS_METRICS, "tag": TAG_METRICS, "thread": THREAD_METRICS,
          "budget": BUDGET_METRICS}

UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3,
         "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
BUDGET_RE = re.compile(r"\s*(?:(class|tag|thread|budget)\s*\[(.*)\]\s*\.\s*)?([a-z_]+)\s*"
                       r"(<=|>=|==|!=|<|>)\s*([+-])?\s*(\d+(?:\.\d+)?)\s*(%|pp|[KMG]iB|[KMG]|B)?"
                       r"\s*", re.S)
CLASS_RE = re.compile(r"\s*(\d+|system)\s*(?:B)?\s*")
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
                              "class[64].hit_rate<90%%, tag[audio].peak_block_bytes>+5%%)"
                              % self.text)
        self.scope, key, name, self.op, sign, num, unit = m.groups()
        self.size = self.key = None
        if self.scope == "class":
            cm = CLASS_RE.fullmatch(key)
            self.size = (0 if cm.group(1) == "system" else int(cm.group(1))) if cm else None
            if self.size not in CLASS_SIZES:
                raise ReportError("budget %r: no class of %s B (classes: %s)"
                                  % (self.text, key.strip(),
                                     ", ".join(str(s) for s in CLASS_SIZES)))
            self.key = self.size
        elif self.scope is not None:
            self.key = key.strip()
            if not self.key:
                raise ReportError("budget %r: %s[] names no %s" % (self.text, self.scope,
                                                                   self.scope))
        table = SCOPES[self.scope] if self.scope else GLOBAL_METRICS
        if name not in table:
            raise ReportError("budget %r: unknown figure %s (%s: %s)"
                              % (self.text, name, "per " + self.scope if self.scope else "totals",
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
        if self.scope is None:
            return self.name
        return "%s[%s].%s" % (self.scope, self.key, self.name)

    def get(self, doc):
        if self.scope is None:
            return self.getter(doc)
        return self.getter(doc, self.key)

    def evaluate(self, base, new, base_path, new_path):
        """(ok, line, record); raises ReportError when a figure is not tracked."""
        vals, absent = [], []
        for doc, path in ((base, base_path), (new, new_path)):
            try:
                vals.append(self.get(doc))
            except Untracked as e:
                raise ReportError("cannot check %s: %s is not tracked in %s (exact statistics "
                                  "were off: SIZECLASS_STATS or SIZECLASS_STATS_EXACT=1)"
                                  % (self.text, e, path))
            except NotRecorded as e:
                raise ReportError("cannot check %s: %s in %s" % (self.text, e, path))
            except Absent as e:
                vals.append(None)
                absent.append("%s in %s" % (e, path))
        b, n = vals
        rec = {"budget": self.text, "metric": self.label(), "base": _jnum(b), "new": _jnum(n)}
        if n is None or (self.change and b is None):
            rec.update(ok=True, checked=False)
            why = "; ".join(absent) if absent else self._undefined(b, n)
            return True, "n/a     %s: %s (not checked)" % (self.text, why), rec
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
    snap = doc.get("snapshot")
    if snap:
        return "%s: %spid %d, snapshot %s at frame %s" % (
            path, name + ", " if name else "", doc["process"]["pid"], f_name(snap["name"]),
            snap.get("frame"))
    fr = doc["frames"]["frames"]
    return "%s: %spid %d, report %s%s" % (
        path, name + ", " if name else "", doc["process"]["pid"],
        f_name(reason_words(doc["reason"])), ", %d frames" % fr if fr else "")


# Tags and threads side by side: (JSON list, label, figures compared).
DIFF_GROUPS = (("tags", "tag", ("live_block_bytes", "peak_block_bytes", "system_peak_bytes",
                                "allocs")),
               ("threads", "thread", ("live_block_bytes", "peak_block_bytes",
                                      "system_live_bytes", "allocs")))


def group_rows(base, new):
    """[(key, label, [(name, [(figure, kind, base, new)])])] for the tags and the
    threads (by name, summed) of either report; a list neither report has is
    left out."""
    out = []
    for key, label, figures in DIFF_GROUPS:
        if base.get(key) is None and new.get(key) is None:
            continue
        names = []
        for doc in (base, new):
            for row in doc.get(key) or []:
                n = row.get("name") or ""
                if n not in names:
                    names.append(n)
        rows = []
        for n in names:
            cells = []
            for fig in figures:
                vals = []
                for doc in (base, new):
                    mine = [r for r in doc.get(key) or [] if (r.get("name") or "") == n]
                    got = [r.get(fig) for r in mine]
                    vals.append(None if not mine or None in got else sum(got))
                cells.append((fig, _kind(fig), vals[0], vals[1]))
            rows.append((n, cells))
        out.append((key, label, rows))
    return out


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
    for key, label, rows in group_rows(base, new):
        for name, cells in rows:
            out.append("")
            out.append("%s %-*s  %12s  %12s  %10s" % (label, 31 - len(label),
                                                       f_name(name, 40) or "(unnamed)", "base",
                                                       "new", "change"))
            for fig, kind, b, n in cells:
                out.append("  %-28s  %12s  %12s  %10s" % (fig, fmt_metric(kind, b),
                                                          fmt_metric(kind, n),
                                                          fmt_change(kind, b, n)))
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
    for key, _, rows in group_rows(base, new):
        doc[key] = [dict([("name", name)] + [(fig, pair(kind, None, b, n))
                                             for fig, kind, b, n in cells])
                    for name, cells in rows]
    for side, d in (("base", base), ("new", new)):
        if d.get("snapshot"):
            doc[side]["snapshot"] = d["snapshot"]["name"]
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
