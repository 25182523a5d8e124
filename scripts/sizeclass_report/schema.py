# SPDX-License-Identifier: MIT
"""schema.py — reading libsizeclass JSON reports: parsing, the schema check,
and the figures every view derives from a report."""

import json
from decimal import Decimal


PROG = "sizeclass-report"
SCHEMA = "libsizeclass-stats"
SCHEMA_VERSION = 1
CLASS_SIZES = (16, 32, 64, 128, 256, 512, 1024)
BUCKETS = 65


class ReportError(Exception):
    """A file this tool cannot use: one line, exit status 2."""

INT = (int,)
NUM = (int, Decimal)


def _line_col(text, pos):
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def parse_documents(text, path):
    """Every JSON document of text (a report, or several one after another)."""
    docs, i, n = [], 0, len(text)
    dec = json.JSONDecoder(parse_float=Decimal)
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            break
        if text[i] != "{":
            if not docs:
                raise ReportError("%s: not a libsizeclass report (not a JSON object)" % path)
            line, col = _line_col(text, i)
            raise ReportError("%s: unexpected text after the report at line %d, column %d"
                              % (path, line, col))
        try:
            doc, i = dec.raw_decode(text, i)
        except json.JSONDecodeError as e:
            if e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string"):
                raise ReportError("%s: truncated report: the JSON ends at line %d before the "
                                  "report is complete" % (path, text.count("\n", 0, n) + 1))
            raise ReportError("%s: not a libsizeclass report: invalid JSON at line %d, column %d "
                              "(%s)" % (path, e.lineno, e.colno, e.msg))
        docs.append(doc)
    if not docs:
        raise ReportError("%s: empty file, not a libsizeclass report" % path)
    return docs


class Checker:
    """Checks that a report has the keys this tool reads, with their types."""

    def __init__(self, path):
        self.path = path

    def fail(self, where, what):
        raise ReportError("%s: malformed report: %s %s" % (self.path, where, what))

    def obj(self, parent, key, where, nullable=False):
        if key not in parent:
            self.fail(where + key, "is missing")
        v = parent[key]
        if v is None and nullable:
            return None
        if not isinstance(v, dict):
            self.fail(where + key, "is not an object")
        return v

    def lst(self, parent, key, where, nullable=False, length=None):
        if key not in parent:
            self.fail(where + key, "is missing")
        v = parent[key]
        if v is None and nullable:
            return None
        if not isinstance(v, list):
            self.fail(where + key, "is not a list")
        if length is not None and len(v) != length:
            self.fail(where + key, "has %d entries, not %d" % (len(v), length))
        return v

    def nums(self, parent, keys, where, types=INT, nullable=True):
        for k in keys:
            if k not in parent:
                self.fail(where + k, "is missing")
            v = parent[k]
            if v is None and nullable:
                continue
            if isinstance(v, bool) or not isinstance(v, types) or v < 0:
                self.fail(where + k, "is not a count")


CLASS_INT_KEYS = (
    "pages", "reserved_bytes", "capacity_blocks", "live_blocks", "peak_live_blocks", "allocs",
    "frees", "remote_frees", "reuse_hits", "fresh_carves", "hit_rate_permille", "free_blocks",
    "external_fragmentation_permille", "live_requested_bytes", "live_block_bytes",
    "live_utilization_permille", "live_internal_fragmentation_permille",
    "peak_requested_bytes", "peak_block_bytes", "peak_utilization_permille",
    "peak_internal_fragmentation_permille", "total_requested_bytes", "total_block_bytes",
    "total_utilization_permille", "total_internal_fragmentation_permille", "wasted_bytes")


def check_report(doc, path):
    """The schema and version first (the clear errors), then the structure."""
    if not isinstance(doc, dict) or "schema" not in doc:
        raise ReportError('%s: not a libsizeclass report (no "schema": "%s")' % (path, SCHEMA))
    if doc["schema"] != SCHEMA:
        raise ReportError('%s: not a libsizeclass report (its schema is %s, not "%s")'
                          % (path, json.dumps(doc["schema"])[:60], SCHEMA))
    ver = doc.get("version")
    if isinstance(ver, bool) or not isinstance(ver, int) or ver < 1:
        raise ReportError("%s: malformed report: version %s" % (path, json.dumps(ver)[:40]))
    if ver > SCHEMA_VERSION:
        raise ReportError("%s: report version %d is newer than this %s reads (%d): use the "
                          "sizeclass-report of the library that wrote it"
                          % (path, ver, PROG, SCHEMA_VERSION))
    c = Checker(path)
    if not isinstance(doc.get("reason"), str):
        c.fail("reason", "is missing")
    proc = c.obj(doc, "process", "")
    c.nums(proc, ("pid", "wall_ns", "peak_rss_bytes", "rss_bytes"), "process.")
    c.nums(doc, ("exact_statistics", "counts_complete"), "")
    classes = c.lst(doc, "classes", "", length=len(CLASS_SIZES))
    for i, cls in enumerate(classes):
        where = "classes[%d]." % i
        if not isinstance(cls, dict):
            c.fail("classes[%d]" % i, "is not an object")
        if cls.get("size") != CLASS_SIZES[i]:
            c.fail(where + "size", "is not %d" % CLASS_SIZES[i])
        c.nums(cls, CLASS_INT_KEYS, where)
        c.nums(cls, ("mean_request_bytes",), where, NUM)
        c.lst(cls, "request_histogram", where, nullable=True, length=BUCKETS)
    totals = c.obj(doc, "totals", "")
    c.nums(totals, CLASS_INT_KEYS, "totals.")
    c.nums(totals, ("mean_request_bytes",), "totals.", NUM)
    adv = c.obj(doc, "advisor", "", nullable=True)
    if adv is not None:
        for i, row in enumerate(c.lst(adv, "ranking", "advisor.")):
            c.nums(row, ("size", "wasted_bytes", "waste_permille", "intermediate_size",
                         "fitting_requests", "saved_bytes", "saved_permille"),
                   "advisor.ranking[%d]." % i)
    leaks = c.obj(doc, "leaks", "")
    c.nums(leaks, ("blocks", "block_bytes", "requested_bytes", "fallback_blocks",
                   "fallback_bytes"), "leaks.")
    for i, row in enumerate(c.lst(leaks, "classes", "leaks.")):
        c.nums(row, ("size", "blocks", "block_bytes", "requested_bytes"), "leaks.classes[%d]." % i)
    c.nums(c.obj(doc, "fallback", ""), ("malloc_calls", "realloc_calls", "aligned_calls",
                                        "allocs", "frees", "live_blocks", "total_bytes",
                                        "live_bytes", "peak_live_bytes"), "fallback.")
    c.nums(c.obj(doc, "arenas", ""), ("created", "live", "adopted", "threads"), "arenas.")
    frames = c.obj(doc, "frames", "")
    c.nums(frames, ("frames", "warmup_frames", "steady_frames", "zero_fresh_frames",
                    "zero_fresh_permille", "max_allocs", "total_allocs", "total_frees",
                    "total_fresh_carves", "total_bytes", "last_allocs", "last_frees",
                    "last_fresh_carves", "last_bytes"), "frames.")
    c.nums(frames, ("mean_allocs",), "frames.", NUM)
    timeline = c.lst(doc, "frame_timeline", "", nullable=True)
    for i, f in enumerate(timeline or []):
        where = "frame_timeline[%d]." % i
        if not isinstance(f, dict):
            c.fail("frame_timeline[%d]" % i, "is not an object")
        c.nums(f, ("frame", "allocs", "frees", "fresh_carves", "bytes", "live_bytes",
                   "block_bytes", "live_block_bytes", "live_blocks"), where)
        for k in ("class_allocs", "class_frees", "class_fresh_carves", "class_live_blocks"):
            c.lst(f, k, where, length=len(CLASS_SIZES))
        for k in ("class_bytes", "class_live_bytes"):
            c.lst(f, k, where, nullable=True, length=len(CLASS_SIZES))
    c.nums(c.obj(doc, "purge", ""), ("purges", "bytes_returned", "pages_reused_after_purge",
                                     "system_trims"), "purge.")
    sampling = c.obj(doc, "site_sampling", "", nullable=True)
    if sampling is not None:
        c.nums(sampling, ("rate_bytes", "charge_bytes", "sites", "overflowed_samples"),
               "site_sampling.")
    sites = c.lst(doc, "sites", "", nullable=True)
    for i, s in enumerate(sites or []):
        where = "sites[%d]." % i
        if not isinstance(s, dict):
            c.fail("sites[%d]" % i, "is not an object")
        c.nums(s, ("class", "allocs", "live_blocks", "wasted_bytes", "requested_bytes"), where)
        if not isinstance(s.get("frames"), list) or not isinstance(s.get("locations"), list):
            c.fail(where + "frames", "is missing")
    return doc


def read_reports(path):
    """Every report of the file at path, checked."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ReportError("%s: %s" % (path, e.strerror or e))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ReportError("%s: not a libsizeclass report (not UTF-8 text)" % path)
    return [check_report(d, path) for d in parse_documents(text, path)]


def read_report(path):
    return read_reports(path)[-1]


def program_name(doc):
    proc = doc["process"]
    exe, cmd = proc.get("exe"), proc.get("cmdline")
    if isinstance(exe, str) and exe:
        return exe.rsplit("/", 1)[-1], exe
    if isinstance(cmd, str) and cmd.strip():
        first = cmd.split()[0]
        return first.rsplit("/", 1)[-1], first
    return None, None


def peak_bytes(doc):
    a, b = doc["totals"]["peak_block_bytes"], doc["fallback"]["peak_live_bytes"]
    return None if a is None or b is None else a + b


REASONS = {"exit": "at exit", "signal": "on a signal", "request": "by sc_stats_print"}
