# SPDX-License-Identifier: MIT
"""text.py — the text report: the one text renderer of sizeclass-report.

The library writes its text report itself, in C, from live counters and from
signal handlers (src/report/emit.c renders what report.c, report_sites.c and
report_timeline.c describe as tables): it cannot hand that job to Python.
This module renders the same text from the JSON form, and nothing else in
the tool does (the page and diff have their own, different output). To keep
the two renderers one design, the tables here are the C tables, table for
table: the same (JSON key, head, width, groups) columns and titles under the
C array names (C_TABLES, C_TITLES), the same key/value layout (KV_*). Two
tests hold them together: tests/report/test_text_tables.py reads the C
sources and fails on any difference in a table, and tests/test_report.c
(text_is_the_library_text_*) compares this module's text with the library's
own, byte for byte, for the same moment of one process.

Sections the library's JSON has but this module renders with tables of its
own (no C table to mirror yet): tags, threads, budgets and snapshots, after
the sites."""

from .fmt import f_bytes, f_name, f_count, f_ns, f_permille, f_size, f_tenths, f_utc_ms, ratio
from .schema import CLASS_SIZES, budget_note, tag_budget, thread_name, thread_state
from .sites import (label_same_function, rank_sites, site_chain, site_locations,
                    site_source)


class TextEmitter:
    """The text half of src/report/emit.c: sections, key/value lines, tables."""

    KV_LABEL_WIDTH, KV_VALUE_WIDTH, KV_PER_LINE = 18, 10, 3  # emit.c's KV_* defines

    def __init__(self):
        self.parts = []
        self.kv_col = 0

    def put(self, s):
        self.parts.append(s)

    def kv_break(self):
        if self.kv_col:
            self.put("\n")
        self.kv_col = 0

    def section(self, title):
        self.kv_break()
        if title is not None:
            self.put("\n" + title + "\n")

    def section_end(self):
        self.kv_break()

    def kv(self, label, cell):
        if label is None:
            return
        self.put("  " + label + " " * max(self.KV_LABEL_WIDTH - len(label), 1)
                 + cell.rjust(self.KV_VALUE_WIDTH))
        self.kv_col += 1
        if self.kv_col == self.KV_PER_LINE:
            self.kv_break()

    def table(self, titles, cols, rows, total=False):
        """cols: (head, width, groups) with column 0 in every group; rows: cells."""
        self.kv_break()
        for g, title in enumerate(titles):
            if title is None:
                continue
            shown = [i for i, (head, _, groups) in enumerate(cols)
                     if head is not None and (i == 0 or groups >> g & 1)]
            self.put("\n" + title + "\n  ")
            self.put("  ".join(cols[i][0].rjust(cols[i][1]) for i in shown) + "\n")
            if not rows or (len(rows) == 1 and total):
                self.put("  (none)\n")
            for r, row in enumerate(rows):
                if total and r == len(rows) - 1:
                    width = sum(cols[i][1] for i in shown) + 2 * (len(shown) - 1)
                    self.put("  " + "-" * width + "\n")
                self.put("  " + "  ".join(row[i].rjust(cols[i][1]) for i in shown) + "\n")

    def text(self, s):
        self.put(s)

    def text_end(self):
        self.put("\n")

    def result(self):
        self.kv_break()
        return "".join(self.parts)


G_BLOCKS, G_PAGES, G_BYTES, G_TOTAL = 1, 2, 4, 8

# The class table: JSON key, text head, width, text tables, format.
CLASS_COLS = (
    ("size", "class", 6, 0, f_size),
    ("pages", "pages", 6, G_PAGES, f_count),
    ("reserved_bytes", "reserved", 9, G_PAGES, f_bytes),
    ("capacity_blocks", "capacity", 8, G_PAGES, f_count),
    ("live_blocks", "live", 8, G_BLOCKS | G_PAGES, f_count),
    ("peak_live_blocks", "peak", 8, G_BLOCKS, f_count),
    ("allocs", "allocs", 8, G_BLOCKS, f_count),
    ("frees", "frees", 8, G_BLOCKS, f_count),
    ("remote_frees", "remote", 8, G_BLOCKS, f_count),
    ("reuse_hits", "reuse", 8, G_BLOCKS, f_count),
    ("fresh_carves", "fresh", 8, G_BLOCKS, f_count),
    ("hit_rate_permille", "hit-rate", 8, G_BLOCKS, f_permille),
    ("free_blocks", "free", 8, G_PAGES, f_count),
    ("external_fragmentation_permille", "ext-frag", 8, G_PAGES, f_permille),
    ("live_requested_bytes", "live-req", 9, G_BYTES, f_bytes),
    ("live_block_bytes", "live-blk", 9, G_BYTES, f_bytes),
    ("live_utilization_permille", "util", 6, G_BYTES, f_permille),
    ("live_internal_fragmentation_permille", "int-frag", 8, G_BYTES, f_permille),
    ("peak_requested_bytes", "peak-req", 9, G_BYTES, f_bytes),
    ("peak_block_bytes", "peak-blk", 9, G_BYTES, f_bytes),
    ("peak_utilization_permille", "util", 6, G_BYTES, f_permille),
    ("peak_internal_fragmentation_permille", "int-frag", 8, G_BYTES, f_permille),
    ("total_requested_bytes", "total-req", 9, G_TOTAL, f_bytes),
    ("total_block_bytes", "total-blk", 9, G_TOTAL, f_bytes),
    ("total_utilization_permille", "util", 6, G_TOTAL, f_permille),
    ("total_internal_fragmentation_permille", "int-frag", 8, G_TOTAL, f_permille),
    ("wasted_bytes", "wasted", 9, G_TOTAL, f_bytes),
    ("mean_request_bytes", "mean-req", 8, G_TOTAL, f_tenths),
)
CLASS_TITLES = (
    "classes: blocks (live = allocs - frees; peak: sum of per-thread peaks)",
    "classes: pages and external fragmentation (free blocks / capacity)",
    "classes: bytes of live blocks and at peak (util = requested / block bytes)",
    "classes: bytes over the whole run",
)

# The process header: JSON key under "process", text label, format. One line
# per figure the library prints; a figure the report lacks is left out.
PROCESS_FIELDS = (
    ("pid", "pid", f_count),
    ("wall_ns", "wall time", f_ns),
    ("peak_rss_bytes", "peak RSS", f_bytes),
    ("rss_bytes", "RSS now", f_bytes),
)

SECTIONS_KV = {
    "fallback": ("system allocator (requests > 1024 B)", (
        ("malloc_calls", "malloc calls", f_count),
        ("realloc_calls", "realloc calls", f_count),
        ("aligned_calls", "aligned calls", f_count),
        ("allocs", "blocks made", f_count),
        ("frees", "blocks freed", f_count),
        ("live_blocks", "live blocks", f_count),
        ("total_bytes", "bytes made", f_bytes),
        ("live_bytes", "live bytes", f_bytes),
        ("peak_live_bytes", "peak live bytes", f_bytes))),
    "arenas": ("arenas (one per allocating thread)", (
        ("created", "created", f_count),
        ("live", "live", f_count),
        ("adopted", "adopted", f_count),
        ("threads", "threads", f_count))),
    "purge": ("memory returned to the OS", (
        ("purges", "purges", f_count),
        ("bytes_returned", "bytes returned", f_bytes),
        ("pages_reused_after_purge", "pages reused", f_count),
        ("system_trims", "system trims", f_count))),
}

FRAME_FIELDS = (
    ("frames", "frames", f_count),
    ("warmup_frames", "warm-up", f_count),
    ("steady_frames", "after warm-up", f_count),
    ("zero_fresh_frames", "zero-fresh", f_count),
    ("zero_fresh_permille", "zero-fresh share", f_permille),
    ("max_allocs", "max allocs", f_count),
    ("mean_allocs", "mean allocs", f_tenths),
    ("total_allocs", "allocs", f_count),
    ("total_frees", "frees", f_count),
    ("total_fresh_carves", "fresh carves", f_count),
    ("total_bytes", "bytes", f_bytes),
    ("last_allocs", "last: allocs", f_count),
    ("last_frees", "last: frees", f_count),
    ("last_fresh_carves", "last: fresh", f_count),
    ("last_bytes", "last: bytes", f_bytes),
)

TIMELINE_COLS = (
    ("frame", "frame", 8, 1, f_count),
    ("allocs", "allocs", 8, 1, f_count),
    ("frees", "frees", 8, 1, f_count),
    ("fresh_carves", "fresh", 6, 1, f_count),
    ("bytes", "bytes", 10, 1, f_bytes),
    ("live_bytes", "live-req", 10, 1, f_bytes),
    ("block_bytes", "blk-bytes", 10, 1, f_bytes),
    ("live_block_bytes", "live-blk", 10, 1, f_bytes),
    ("live_blocks", "live", 8, 1, f_count),
)
TIMELINE_TEXT_FRAMES = 10  # report_timeline.c's TEXT_FRAMES
TIMELINE_TITLES = ("frame timeline: the last frames (all kept frames, per class, in the JSON "
                   "form; bytes: requested, blk-: blocks x class size)",)

# The text-only tables of report.c (rows made by the functions below).
HIST_COLS = (
    (None, "class", 6, 0),
    (None, "from", 6, 1),
    (None, "to", 6, 1),
    (None, "requests", 10, 1),
    (None, "share", 6, 1),
    (None, "waste", 6, 1),
)
HIST_TITLES = ("request sizes (16 B buckets; share of the class's allocations; waste: block "
               "bytes a request of `to` bytes leaves unused)",)
ADVICE_COLS = (
    ("size", "class", 6, 0),
    ("wasted_bytes", "wasted", 9, 1),
    ("waste_permille", "waste", 6, 1),
    ("intermediate_size", "split", 6, 1),
    ("fitting_requests", "fits", 9, 1),
    ("saved_bytes", "saved", 9, 1),
    ("saved_permille", "saved%", 6, 1),
)
ADVICE_TITLES = ("advisor: bytes lost to rounding up (cumulative), most first; saved: what a "
                 "class at 3/4 of the size would have saved",)
LEAK_COLS = (
    ("size", "class", 6, 0),
    ("blocks", "blocks", 9, 1),
    ("block_bytes", "bytes", 9, 1),
    ("requested_bytes", "requested", 9, 1),
)
LEAK_TITLES = ("  by class",)

# The C arrays these mirror (tests/report/test_text_tables.py compares them).
C_TABLES = {"class_cols": CLASS_COLS, "hist_cols": HIST_COLS, "advice_cols": ADVICE_COLS,
            "leak_cols": LEAK_COLS, "tl_cols": TIMELINE_COLS}
C_TITLES = {"class_table": CLASS_TITLES, "hist_table": HIST_TITLES,
            "advice_table": ADVICE_TITLES, "leak_table": LEAK_TITLES,
            "tl_text": TIMELINE_TITLES}


def _cols(table):
    """(head, width, groups) of the text columns of a table."""
    return [(c[1], c[2], c[3]) for c in table if c[1] is not None]

def text_whose(e, doc, proc):
    """The lines under the header: whose report it is, and which tier and
    features (reports from before these keys have none)."""
    if "ppid" in proc:
        e.text("pid %s, parent %s: %s" % (f_count(proc["pid"]), f_count(proc["ppid"]),
                                          proc.get("exe") or "(program unknown)"))
        e.text_end()
        e.text("command line: " + proc.get("cmdline", ""))
        e.text_end()
        e.text("started %s, run time %s" % (f_utc_ms(proc.get("start_unix_ms")),
                                             f_ns(proc.get("wall_ns"))))
        e.text_end()
    if "tier" in doc:
        features = doc.get("features") or []
        e.text("statistics: %s tier; features on: %s"
               % (doc["tier"], ", ".join(features) if features else "none"))
        e.text_end()


def text_report(doc, lines=None):
    """The library's text report of doc, byte for byte; then what the library's
    text does not show: the source lines of the sites (lines: a SourceLines,
    None for none), tags, threads, budgets and snapshots. A snapshot
    (FILE@NAME) has a text of its own (text_snapshot)."""
    if doc.get("snapshot"):
        return text_snapshot(doc)
    e = TextEmitter()
    # The reason as the library writes it; a control character in it (an abort
    # message quoting the program) shown as \xNN, as in every name.
    e.text("== libsizeclass statistics (%s) ==" % f_name(doc["reason"], 1000))
    e.text_end()
    exact = bool(doc["exact_statistics"])
    proc = doc["process"]
    text_whose(e, doc, proc)
    e.section("process")
    for key, label, fmt in PROCESS_FIELDS:
        if key in proc:
            e.kv(label, fmt(proc[key]))
    e.section_end()
    if not exact:
        e.text("not tracked (\"-\"): requested bytes, utilization, request sizes, peaks and "
               "the advisor; exact statistics are off (SIZECLASS_STATS_EXACT=1 or "
               "SIZECLASS_STATS turns them on)")
        e.text_end()
    if not doc["counts_complete"]:
        e.text("incomplete: another thread held the segment lock, some pages' counts are "
               "missing from this report")
        e.text_end()
    cols = _cols(CLASS_COLS)
    rows = []
    for cls in doc["classes"] + [doc["totals"]]:
        row = [fmt(cls.get(key)) for key, _, _, _, fmt in CLASS_COLS]
        if cls is doc["totals"]:
            row[0] = "total"
        rows.append(row)
    e.table(CLASS_TITLES, cols, rows, total=True)
    text_histogram(e, doc)
    text_advisor(e, doc)
    text_leaks(e, doc)
    for key in ("fallback", "arenas"):
        title, fields = SECTIONS_KV[key]
        e.section(title)
        for k, label, fmt in fields:
            e.kv(label, fmt(doc[key][k]))
        e.section_end()
    text_frames(e, doc)
    text_timeline(e, doc)
    title, fields = SECTIONS_KV["purge"]
    e.section(title)
    for k, label, fmt in fields:
        e.kv(label, fmt(doc["purge"][k]))
    e.section_end()
    text_sites(e, doc, lines)
    text_extras(e, doc)
    return e.result()


def text_snapshot(doc):
    """A named snapshot: its classes, the system allocator, what was live,
    its tags and threads."""
    snap, proc = doc["snapshot"], doc["process"]
    e = TextEmitter()
    e.text("== libsizeclass snapshot %s (frame %s, at %s) =="
           % (f_name(snap["name"]), f_count(snap.get("frame")), f_ns(snap.get("wall_ns"))))
    e.text_end()
    text_whose(e, doc, proc)
    rows = []
    for cls in doc["classes"] + [doc["totals"]]:
        row = [fmt(cls.get(key)) for key, _, _, _, fmt in CLASS_COLS]
        if cls is doc["totals"]:
            row[0] = "total"
        rows.append(row)
    e.table(CLASS_TITLES, _cols(CLASS_COLS), rows, total=True)
    text_leaks(e, doc)
    title, fields = SECTIONS_KV["fallback"]
    e.section(title)
    for k, label, fmt in fields:
        e.kv(label, fmt(doc["fallback"][k]))
    e.section_end()
    text_extras(e, doc)
    return e.result()


def text_histogram(e, doc):
    rows = []
    for cls in doc["classes"]:
        hist = cls.get("request_histogram") or []
        size = cls["size"]
        for b, n in enumerate(hist):
            if not n:
                continue
            to = b * 16
            rows.append([f_size(size), f_count(to - 15 if b else 0), f_count(to), f_count(n),
                         f_permille(ratio(n, cls["allocs"])),
                         f_permille(ratio(size - to if size > to else 0, size))])
    e.table(HIST_TITLES, _cols(HIST_COLS), rows)


def text_advisor(e, doc):
    adv = doc.get("advisor")
    if adv is None:
        return
    e.section(None)
    ranking = adv.get("ranking") or []
    rows = [[f_size(a["size"]), f_bytes(a["wasted_bytes"]), f_permille(a["waste_permille"]),
             f_size(a["intermediate_size"]), f_count(a["fitting_requests"]),
             f_bytes(a["saved_bytes"]), f_permille(a["saved_permille"])] for a in ranking]
    e.table(ADVICE_TITLES, _cols(ADVICE_COLS), rows)
    by_size = {c["size"]: c for c in doc["classes"]}
    said = 0
    for a in ranking:
        if said == 3:
            break
        if not a["saved_bytes"]:
            continue
        cls = by_size.get(a["size"], {})
        e.text("  -> a %s class would have saved %s (%s of the %s blocks): %s of %s requests fit"
               % (f_size(a["intermediate_size"]), f_bytes(a["saved_bytes"]),
                  f_permille(ratio(a["saved_bytes"], cls.get("total_block_bytes"))),
                  f_size(a["size"]), f_count(a["fitting_requests"]),
                  f_count(cls.get("allocs"))))
        e.text_end()
        said += 1
    if said == 0:
        e.text("  -> no intermediate class would have saved anything")
        e.text_end()
    e.section_end()


def text_leaks(e, doc):
    leaks = doc["leaks"]
    e.section("leaks: still live at exit" if doc["reason"] == "exit" else "leaks: still live now")
    e.kv("class blocks", f_count(leaks["blocks"]))
    e.kv("block bytes", f_bytes(leaks["block_bytes"]))
    e.kv("requested", f_bytes(leaks["requested_bytes"]))
    e.kv("system blocks", f_count(leaks["fallback_blocks"]))
    e.kv("system bytes", f_bytes(leaks["fallback_bytes"]))
    rows = [[f_size(r["size"]), f_count(r["blocks"]), f_bytes(r["block_bytes"]),
             f_bytes(r["requested_bytes"])] for r in leaks["classes"]]
    e.table(LEAK_TITLES, _cols(LEAK_COLS), rows)
    e.section_end()


def text_frames(e, doc):
    fr = doc["frames"]
    e.section("frames (sc_frame_mark)")
    if not fr["frames"]:
        e.text("  no frames marked (call sc_frame_mark() once per frame)")
        e.text_end()
    else:
        for key, label, fmt in FRAME_FIELDS:
            e.kv(label, fmt(fr[key]))
    e.section_end()


def text_timeline(e, doc):
    tl = doc["frame_timeline"]
    if tl is None:
        e.text_end()
        e.text("frame timeline: off (SIZECLASS_FRAME_HISTORY=0)")
        e.text_end()
        return
    if not tl:
        return
    rows = [[fmt(f.get(key)) for key, _, _, _, fmt in TIMELINE_COLS]
            for f in tl[-TIMELINE_TEXT_FRAMES:]]
    e.table(TIMELINE_TITLES, _cols(TIMELINE_COLS), rows)


def text_sites(e, doc, lines=None):
    sampling, sites = doc.get("site_sampling"), doc.get("sites")
    if sampling is None or sites is None:
        e.text_end()
        e.text("sites: not recorded (SIZECLASS_SITES=on records who allocates each class)")
        e.text_end()
        return
    rate, charge = sampling["rate_bytes"], sampling["charge_bytes"]
    e.text_end()
    if rate == 1:
        e.text("sites: who allocates each class (every allocation recorded: exact counts)")
    else:
        e.text("sites: who allocates each class (sampled: about one allocation per %s requested, "
               "at least one in %s; estimates)" % (f_bytes(rate), f_count(rate // max(charge, 1))))
    e.text_end()
    e.text("      allocs      live     wasted  function < callers")
    e.text_end()
    if not sites:
        e.text("  (none)")
        e.text_end()
    rankings = (("allocs", "by allocations"), ("live_blocks", "by live blocks (leaks at exit)"),
                ("wasted_bytes", "by bytes wasted to rounding up"))
    tops = [(size, key, title, rank_sites(sites, size, key, 3))
            for size in CLASS_SIZES + (0,) for key, title in rankings]
    if lines is not None:
        lines.resolve(loc for _, _, _, top in tops for s in top for loc in site_locations(s))
    for size, key, title, top in tops:
        if not top:
            continue
        e.text("  %s %s" % ("system (> 1024 B)" if size == 0 else f_size(size), title))
        e.text_end()
        same = label_same_function(top, lines) if lines is not None else {}
        for s in top:
            e.text("  %s  %s  %s  %s" % (f_count(s["allocs"]).rjust(10),
                                         f_count(s["live_blocks"]).rjust(8),
                                         f_bytes(s["wasted_bytes"]).rjust(9), site_chain(s)))
            where = site_source(s, lines) if lines is not None else None
            label = same.get(id(s))
            if label and where:
                label = label.split(" at ")[0]  # the call's line is in where
            said = [x for x in (label, where) if x]
            if said:
                e.text("  (%s)" % "; ".join(said))
            e.text_end()


# ---- what the library's text does not show: tags, threads, budgets, snapshots ----------------
# The tool's own tables (the JSON keys are newer than the C text tables): names
# left-aligned and escaped (f_name), figures right-aligned.

NAME_WIDTH = 20


def name_table(e, title, heads, rows, note=None):
    """A table whose first column is a name: heads (head, width) after it."""
    e.text_end()
    e.text(title)
    e.text_end()
    if note:
        e.text(note)
        e.text_end()
    width = max([NAME_WIDTH] + [min(len(r[0]), 40) for r in rows])
    def cell(s, w):  # a negative width: left-aligned
        return s.rjust(w) if w >= 0 else s.ljust(-w)

    e.text(("  " + "  ".join([heads[0][0].ljust(width)] + [cell(h, w) for h, w in heads[1:]]))
           .rstrip())
    e.text_end()
    if not rows:
        e.text("  (none)")
        e.text_end()
    for r in rows:
        e.text(("  " + "  ".join([r[0].ljust(width)] + [cell(c, w) for c, (_, w) in
                                                          zip(r[1:], heads[1:])])).rstrip())
        e.text_end()


def f_use(peak, limit):
    """peak over limit in percent (the share of a budget used), or "-"."""
    if peak is None or not limit:
        return "-"
    return f_permille(peak * 1000 // limit)


def text_extras(e, doc):
    text_tags(e, doc)
    text_threads(e, doc)
    text_budgets(e, doc)
    text_snapshots(e, doc)


def text_tags(e, doc):
    tags = doc.get("tags")
    if tags is None:
        return
    rows = [[f_name(t["name"]), f_count(t["allocs"]), f_count(t["frees"]),
             f_count(t["live_blocks"]), f_bytes(t["live_block_bytes"]),
             f_bytes(t["peak_block_bytes"]), f_bytes(t["system_live_bytes"]),
             f_bytes(t["system_peak_bytes"])] + tag_budget_cells(doc, t) for t in tags]
    name_table(e, "tags: allocations by tag (sc_tag; sys: the system allocator, > 1024 B; use: "
               "peak block and system bytes over the budget)",
               (("tag", 0), ("allocs", 9), ("frees", 9), ("live", 8), ("live-blk", 9),
                ("peak-blk", 9), ("sys-live", 9), ("sys-peak", 9), ("budget", 9), ("use", 6)),
               rows)
    heads = [("tag", 0)] + [(f_size(s), 12) for s in CLASS_SIZES]
    rows = []
    for t in tags:
        per = {c.get("size"): c for c in t.get("classes") or []}
        rows.append([f_name(t["name"])] + [
            "-" if s not in per else "%s/%s" % (f_count(per[s].get("live_blocks")),
                                                f_count(per[s].get("peak_live_blocks")))
            for s in CLASS_SIZES])
    name_table(e, "tags by class: live / peak blocks", heads, rows)



def tag_budget_cells(doc, t):
    b = tag_budget(doc, t)
    return ["-", "-"] if b is None else [f_bytes(b[0]), f_use(b[1], b[0])]


def text_threads(e, doc):
    threads = doc.get("threads")
    if threads is None:
        return
    rows = [[f_name(thread_name(t)), f_count(t.get("tid")), thread_state(t),
             f_count(t["allocs"]), f_count(t["frees"]), f_bytes(t["live_block_bytes"]),
             f_bytes(t["peak_block_bytes"]), f_bytes(t["system_live_bytes"]),
             f_bytes(t.get("budget"))] for t in threads]
    name_table(e, "threads: allocations by thread (exited threads of one name are one row)",
               (("thread", 0), ("tid", 8), ("state", 12), ("allocs", 9), ("frees", 9),
                ("live-blk", 9), ("peak-blk", 9), ("sys-live", 9), ("budget", 9)), rows)





def text_budgets(e, doc):
    budgets = doc.get("budgets")
    if budgets is None:
        return
    rows = [[f_name(b["what"]), f_bytes(b["limit"]), f_bytes(b["live"]), f_bytes(b["peak"]),
             f_use(b["peak"], b["limit"]), budget_note(b)] for b in budgets]
    breached = sum(1 for b in budgets if b.get("breached"))
    name_table(e, "budgets: %s of %s breached" % (f_count(breached), f_count(len(budgets))),
               (("budget", 0), ("limit", 9), ("live", 9), ("peak", 9), ("use", 7),
                ("state", -20)), rows)


def text_snapshots(e, doc):
    snaps = doc.get("snapshots")
    if not snaps:
        return
    rows = [[f_name(s["name"]), f_count(s.get("frame")), f_ns(s.get("wall_ns")),
             f_count(s["totals"]["live_blocks"]), f_bytes(s["totals"]["live_block_bytes"]),
             f_bytes(s["fallback"]["live_bytes"])] for s in snaps]
    name_table(e, "snapshots (sc_snapshot): sizeclass-report text FILE@NAME shows one",
               (("snapshot", 0), ("frame", 8), ("time", 10), ("live", 8), ("live-blk", 9),
                ("sys-live", 9)), rows)
