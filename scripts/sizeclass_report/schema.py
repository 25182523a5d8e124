# SPDX-License-Identifier: MIT
"""schema.py — reading libsizeclass JSON reports: parsing, the schema check
(also of the optional keys: reason, tags, threads, budgets, snapshots; each
may be absent or null), a named snapshot as a report of its own (FILE@NAME),
stdin (-), and the figures every view derives from a report."""

import json
import os
import sys
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

    def row(self, v, where):
        if not isinstance(v, dict):
            self.fail(where, "is not an object")
        return v

    def string(self, parent, key, where, nullable=False):
        if key not in parent:
            self.fail(where + key, "is missing")
        v = parent[key]
        if v is None and nullable:
            return None
        if not isinstance(v, str):
            self.fail(where + key, "is not a string")
        return v

    def boolean(self, parent, key, where):
        if key not in parent:
            self.fail(where + key, "is missing")
        if not isinstance(parent[key], bool):
            self.fail(where + key, "is not true or false")

    def optional_list(self, parent, key, where):
        """An optional key: absent or null (None), else a list of objects."""
        v = parent.get(key)
        if v is None:
            return None
        if not isinstance(v, list):
            self.fail(where + key, "is not a list or null")
        return [self.row(r, "%s%s[%d]" % (where, key, i)) for i, r in enumerate(v)]


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
    check_classes(c, doc, "")
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
    check_fallback(c, doc, "")
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
    check_tags_threads(c, doc, "")
    for i, b in enumerate(c.optional_list(doc, "budgets", "") or []):
        where = "budgets[%d]." % i
        c.string(b, "what", where)
        c.nums(b, ("limit", "live", "peak", "first_breach_frame"), where)
        c.boolean(b, "breached", where)
    for i, s in enumerate(c.optional_list(doc, "snapshots", "") or []):
        where = "snapshots[%d]." % i
        c.string(s, "name", where)
        c.nums(s, ("frame", "wall_ns"), where)
        check_classes(c, s, where)
        check_fallback(c, s, where)
        check_tags_threads(c, s, where)
    return doc


def check_classes(c, doc, where0):
    classes = c.lst(doc, "classes", where0, length=len(CLASS_SIZES))
    for i, cls in enumerate(classes):
        where = "%sclasses[%d]." % (where0, i)
        c.row(cls, where[:-1])
        if cls.get("size") != CLASS_SIZES[i]:
            c.fail(where + "size", "is not %d" % CLASS_SIZES[i])
        c.nums(cls, CLASS_INT_KEYS, where)
        c.nums(cls, ("mean_request_bytes",), where, NUM)
        c.lst(cls, "request_histogram", where, nullable=True, length=BUCKETS)
    totals = c.obj(doc, "totals", where0)
    c.nums(totals, CLASS_INT_KEYS, where0 + "totals.")
    c.nums(totals, ("mean_request_bytes",), where0 + "totals.", NUM)


def check_fallback(c, doc, where0):
    c.nums(c.obj(doc, "fallback", where0), ("malloc_calls", "realloc_calls", "aligned_calls",
                                            "allocs", "frees", "live_blocks", "total_bytes",
                                            "live_bytes", "peak_live_bytes"),
           where0 + "fallback.")


TAG_KEYS = ("allocs", "frees", "live_blocks", "live_requested_bytes", "peak_requested_bytes",
            "live_block_bytes", "peak_block_bytes", "system_live_bytes", "system_peak_bytes")
THREAD_KEYS = ("allocs", "frees", "live_block_bytes", "peak_block_bytes", "system_live_bytes")


def check_tags_threads(c, doc, where0):
    for i, tag in enumerate(c.optional_list(doc, "tags", where0) or []):
        where = "%stags[%d]." % (where0, i)
        c.string(tag, "name", where)
        c.nums(tag, ("budget",), where)
        c.nums(tag, TAG_KEYS, where)
        for k, row in enumerate(c.lst(tag, "classes", where, nullable=True) or []):
            w = "%sclasses[%d]" % (where, k)
            c.row(row, w)
            c.nums(row, ("size", "live_blocks", "peak_live_blocks", "allocs"), w + ".")
    for i, th in enumerate(c.optional_list(doc, "threads", where0) or []):
        where = "%sthreads[%d]." % (where0, i)
        c.string(th, "name", where, nullable=True)
        c.nums(th, ("tid", "count", "budget"), where)
        c.boolean(th, "exited", where)
        c.nums(th, THREAD_KEYS, where)


TEXT_HEADER = "== libsizeclass statistics ("
_STDIN = []


def read_input(path):
    """The bytes of path; - is stdin (read once, however often it is named)."""
    if path == "-":
        if not _STDIN:
            _STDIN.append(sys.stdin.buffer.read())
        return _STDIN[0]
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ReportError("%s: %s" % (path, e.strerror or e))


def read_reports(path):
    """Every report of the file at path (- for stdin), checked."""
    raw = read_input(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ReportError("%s: not a libsizeclass report (not UTF-8 text)" % path)
    if text.lstrip().startswith(TEXT_HEADER):
        raise ReportError("%s: this is a text report; run with SIZECLASS_STATS_FORMAT=json "
                          "(or SIZECLASS_STATS=FILE.json) for a report this tool reads" % path)
    return [check_report(d, path) for d in parse_documents(text, path)]


def split_source(arg):
    """FILE or FILE@SNAPSHOT: (file, snapshot name or None). A file that exists
    under the whole name is that file (its name may hold an @)."""
    if arg == "-" or "@" not in arg or os.path.exists(arg):
        return arg, None
    path, _, name = arg.rpartition("@")
    return path, name


def read_sources(arg):
    """The reports named by a command line argument: every report of FILE, or
    the snapshot FILE@NAME of its last report, as a report of its own."""
    path, name = split_source(arg)
    docs = read_reports(path)
    if name is None:
        return docs
    return [snapshot_report(docs[-1], name, path)]


def read_source(arg):
    return read_sources(arg)[-1]


def read_report(path):
    return read_reports(path)[-1]


def snapshot_report(doc, name, path):
    """The snapshot of doc named name (the last of that name: a name taken
    again replaces it) as a report: its classes, totals, system allocator,
    tags and threads; the process of doc; what a snapshot does not hold
    (sites, the advisor, the frame timeline, purges) left out, and "snapshot"
    saying which one it is. Leaks are what was live at the snapshot."""
    snaps = doc.get("snapshots") or []
    found = [s for s in snaps if s["name"] == name]
    if not found:
        names = ", ".join(json.dumps(s["name"]) for s in snaps[-8:])
        raise ReportError("%s: no snapshot named %s (%s)" % (
            path, json.dumps(name), "snapshots: " + names if snaps
            else "the report has no snapshots: the program calls sc_snapshot(name)"))
    s = found[-1]
    out = dict(doc)
    for k in ("classes", "totals", "fallback", "tags", "threads"):
        out[k] = s.get(k)
    out["process"] = dict(doc["process"], wall_ns=s.get("wall_ns"), rss_bytes=None,
                          peak_rss_bytes=None)
    out["snapshot"] = {"name": s["name"], "frame": s.get("frame"), "wall_ns": s.get("wall_ns")}
    out["snapshots"] = []
    out["budgets"] = None
    out["advisor"] = None
    out["sites"] = out["site_sampling"] = None
    out["frame_timeline"] = None
    totals, fb = out["totals"], out["fallback"]
    out["leaks"] = {
        "blocks": totals["live_blocks"], "block_bytes": totals["live_block_bytes"],
        "requested_bytes": totals["live_requested_bytes"],
        "fallback_blocks": fb["live_blocks"], "fallback_bytes": fb["live_bytes"],
        "classes": [{"size": c["size"], "blocks": c["live_blocks"],
                     "block_bytes": c["live_block_bytes"],
                     "requested_bytes": c["live_requested_bytes"]}
                    for c in out["classes"] if c["live_blocks"]]}
    frames = dict.fromkeys(doc["frames"], None)
    frames.update(frames=s.get("frame") or 0, warmup_frames=doc["frames"]["warmup_frames"])
    out["frames"] = frames
    out["purge"] = dict.fromkeys(doc["purge"], None)
    out["arenas"] = dict.fromkeys(doc["arenas"], None)
    return out


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


REASONS = {"exit": "at exit", "signal": "on a signal", "request": "by sc_stats_print",
           "_exit": "when the program called _exit"}
# Reasons that say the run did not end as planned: the views show them first.
FAILED_REASONS = ("abort: ", "terminated: ", "crash: ", "_exit")


def reason_words(reason):
    """How the report came to be written, in words."""
    if reason in REASONS:
        return REASONS[reason]
    for prefix, words in (("abort: ", "on the library's abort: "),
                          ("terminated: ", "when terminated by "),
                          ("crash: ", "on a crash: ")):
        if reason.startswith(prefix):
            return words + reason[len(prefix):]
    return reason


def failed_reason(reason):
    """Whether reason says the program did not end normally."""
    return isinstance(reason, str) and reason.startswith(FAILED_REASONS)


def tag_peak(t):
    """A tag's peak bytes against its budget: its class blocks' and its system
    allocator's peaks (None when either is not tracked)."""
    a, b = t.get("peak_block_bytes"), t.get("system_peak_bytes")
    return None if a is None else a + (b or 0)

def thread_name(t):
    name = t.get("name")
    return name if name else "(unnamed)"

def thread_state(t):
    if not t.get("exited"):
        return "running"
    n = t.get("count") or 1
    return "exited" if n == 1 else "exited x%d" % n

def budget_note(b):
    if not b.get("breached"):
        return "ok"
    frame = b.get("first_breach_frame")
    return "BREACHED" + (" at frame %d" % frame if frame is not None else "")


def tag_budget(doc, tag):
    """(limit, peak, breached) of a tag's budget: its "tag:NAME" row of the
    budgets when there is one, else the tag's own budget against its peak;
    None when it has none."""
    for b in doc.get("budgets") or []:
        if b["what"] == "tag:" + tag["name"]:
            return b["limit"], b["peak"], b["breached"]
    if tag.get("budget") is None:
        return None
    peak = tag_peak(tag)
    return tag["budget"], peak, peak is not None and peak > tag["budget"]
