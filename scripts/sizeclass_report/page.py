# SPDX-License-Identifier: MIT
"""page.py — the report as one self-contained HTML page."""

import datetime
import html
import re

from .fmt import class_label, f_bytes, f_name, f_tenths, ratio
from .schema import (CLASS_SIZES, ReportError, SCHEMA, budget_note, failed_reason, peak_bytes,
                     program_name, reason_words, tag_budget, thread_name, thread_state)
from .sites import (label_same_function, program_frames, site_chain, site_locations, site_source,
                    strip_startup)


# Okabe-Ito: distinguishable with every common colour-vision deficiency.
OI = {"orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "yellow": "#F0E442",
      "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7", "black": "#000000"}
CLASS_COLOURS = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7")
SYSTEM_COLOUR = "#999999"
SITE_ROWS = 10          # sites per class in a table; the rest fold into "other"
FLAME_WIDTH = 1180      # px
FLAME_ROW = 18          # px per stack level
FLAME_MIN_PX = 1.0      # narrower nodes fold into "other" at full width
FLAME_MAX_NODES = 4000  # the most rectangles a flame graph draws
CHAR_PX = 7.3           # width of a character of the 12 px monospace labels (bound)
TIMELINE_COLUMNS = 1200 # the most columns a timeline chart draws; more frames are binned
NAME_CAP = 300          # characters of a name kept in tooltips and tables

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def esc(v):
    """Any value as HTML/SVG text: escaped, control characters made visible."""
    s = "" if v is None else str(v)
    s = _CONTROL.sub(lambda m: "\\x%02x" % ord(m.group()), s)
    return html.escape(s, quote=True)


def esc_name(v, n=NAME_CAP):
    """A name from the program (tag, thread, budget, snapshot, reason) as HTML
    text: escaped, every control character (newlines, tabs too) shown as
    \\xNN, at most n characters."""
    return esc(f_name(v, n))


def cap(s, n=NAME_CAP):
    s = str(s)
    return s if len(s) <= n else s[:n - 1] + "\u2026"


def h_count(v, unit=""):
    if v is None:
        return "\u2013"
    s = "{:,}".format(v).replace(",", "\u202f")
    return s + (" " + unit if unit else "")


def h_bytes(v):
    return "\u2013" if v is None else f_bytes(v)


def h_pct(permille):
    return "\u2013" if permille is None else "%d.%d\u202f%%" % (permille // 10, permille % 10)


def h_duration(ns):
    if ns is None:
        return "\u2013"
    if ns < 10 ** 6:
        return "%d \u00b5s" % (ns // 1000)
    if ns < 10 ** 9:
        return "%.1f ms" % (ns / 1e6)
    s = ns / 1e9
    if s < 120:
        return "%.2f s" % s
    return "%d min %d s" % (s // 60, s % 60)


def class_colour(size):
    return CLASS_COLOURS[CLASS_SIZES.index(size)] if size in CLASS_SIZES else SYSTEM_COLOUR


def tint(colour, amount):
    """colour mixed with white: amount 0 keeps it, 1 is white."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    mix = lambda c: int(round(c + (255 - c) * amount))  # noqa: E731
    return "#%02x%02x%02x" % (mix(r), mix(g), mix(b))


def svg_bar(frac, colour, width=80, under=None, label=""):
    """A horizontal bar of frac (0..1) of width px; under: a second, lighter bar."""
    parts = ['<svg class="bar" width="%d" height="12" viewBox="0 0 %d 12" role="img"'
             ' aria-label="%s"><rect width="%d" height="12" fill="#eeeeee"/>'
             % (width, width, esc(label), width)]
    if under is not None:
        parts.append('<rect width="%.1f" height="12" fill="%s"/>'
                     % (max(0.0, min(1.0, under)) * width, tint(colour, 0.6)))
    if frac is not None:
        parts.append('<rect width="%.1f" height="12" fill="%s"/>'
                     % (max(0.0, min(1.0, frac)) * width, colour))
    parts.append("</svg>")
    return "".join(parts)


def util_cell(util, frag, tracked=True):
    """Utilization (blue) and internal fragmentation (vermillion, the rest) in one bar."""
    if util is None:
        return '<td class="num muted">%s</td>' % ("n/a" if tracked else "not tracked")
    w, u = 80, max(0.0, min(1.0, util / 1000.0))
    bar = ('<svg class="bar" width="%d" height="12" viewBox="0 0 %d 12" role="img" '
           'aria-label="%s used, %s lost"><rect width="%.1f" height="12" fill="%s"/>'
           '<rect x="%.1f" width="%.1f" height="12" fill="%s"/></svg>'
           % (w, w, h_pct(util), h_pct(frag), u * w, OI["blue"], u * w, (1 - u) * w,
              OI["vermillion"]))
    return ('<td class="num">%s <span class="v">%s</span> <span class="v lost">%s</span></td>'
            % (bar, h_pct(util), h_pct(frag)))


def pct_cell(permille, colour, tracked=True):
    if permille is None:
        return '<td class="num muted">%s</td>' % ("n/a" if tracked else "not tracked")
    return ('<td class="num">%s <span class="v">%s</span></td>'
            % (svg_bar(permille / 1000.0, colour, 60, label=h_pct(permille)), h_pct(permille)))


def derive_tier(doc):
    if doc.get("tier") in ("exact", "default"):
        return doc["tier"], False
    return ("exact" if doc.get("exact_statistics") else "default"), True


def derive_features(doc):
    feats = doc.get("features")
    if isinstance(feats, list) and all(isinstance(f, str) for f in feats):
        return feats, False
    out = []
    if doc.get("exact_statistics"):
        out.append("exact")
    if doc.get("sites") is not None:
        out.append("sites")
    return out, True


def page_header(doc, src, folded_src):
    proc = doc["process"]
    name, path = program_name(doc)
    tier, tier_derived = derive_tier(doc)
    feats, feats_derived = derive_features(doc)
    rows = []

    def row(label, value):
        rows.append("<dt>%s</dt><dd>%s</dd>" % (esc(label), value))

    row("program", '<span class="mono">%s</span>' % esc(path) if path
        else '<span class="muted">not named by this report</span>')
    row("pid", h_count(proc.get("pid")) + (" (parent %s)" % h_count(proc["ppid"])
                                           if isinstance(proc.get("ppid"), int) else ""))
    cmd = proc.get("cmdline")
    row("command line", '<span class="mono">%s</span>' % esc(cap(cmd, 2000))
        if isinstance(cmd, str) else '<span class="muted">not recorded</span>')
    start = proc.get("start_unix_ms")
    if isinstance(start, int) and not isinstance(start, bool):
        when = datetime.datetime.fromtimestamp(start / 1000.0, datetime.timezone.utc)
        row("started", esc(when.strftime("%Y-%m-%d %H:%M:%S UTC")))
    snap = doc.get("snapshot")
    if snap:
        row("snapshot", '<b class="mono">%s</b> at frame %s, %s into the run' % (
            esc_name(snap["name"]), h_count(snap.get("frame")),
            esc(h_duration(snap.get("wall_ns")))))
    else:
        row("run time", esc(h_duration(proc.get("wall_ns"))) + " (report %s)"
            % esc_name(reason_words(doc["reason"])))
    row("tier", "<b>%s</b>%s" % (esc(tier), ' <span class="muted">(from the report\'s figures)'
                                           "</span>" if tier_derived else ""))
    row("features", (esc(", ".join(feats)) if feats else "none")
        + (' <span class="muted">(seen in the report; guard pages and checks are not '
           "recorded there)</span>" if feats_derived else ""))
    row("memory", "peak RSS %s, RSS at the report %s"
        % (esc(h_bytes(proc.get("peak_rss_bytes"))), esc(h_bytes(proc.get("rss_bytes")))))
    row("source", '<span class="mono">%s</span>%s, libsizeclass %s'
        % (esc(src), ' + <span class="mono">%s</span>' % esc(folded_src) if folded_src else "",
           esc(doc.get("library_version", "?"))))
    tot = doc["totals"]
    tiles = [
        ("class allocations", h_count(tot["allocs"])),
        ("reused (hit rate)", h_pct(tot["hit_rate_permille"])),
        ("peak bytes (classes + system allocator)", h_bytes(peak_bytes(doc))),
        ("live at the report", h_bytes(doc["leaks"]["block_bytes"]
                                       + doc["leaks"]["fallback_bytes"])),
    ]
    fr = doc["frames"]
    if fr["frames"]:
        tiles.append(("frames with no fresh carve", h_pct(fr["zero_fresh_permille"])
                      if fr["steady_frames"] else "no frame after warm-up"))
    title = "libsizeclass report" + (": " + name if name else "")
    if snap:
        title = "libsizeclass snapshot %s" % f_name(snap["name"], 80) + (" of " + name if name
                                                                       else "")
    alert = ""
    if failed_reason(doc["reason"]) and not snap:
        alert = ('<p class="alert" id="reason">The program did not end normally: this report '
                 'was written %s (reason <b class="mono">%s</b>).</p>'
                 % (esc_name(reason_words(doc["reason"]), 500), esc_name(doc["reason"], 500)))
    return ('<header id="summary"><h1>%s</h1>%s<dl class="meta">%s</dl><div class="tiles">%s'
            "</div></header>"
            % (esc(title), alert, "".join(rows),
               "".join('<div class="tile"><span>%s</span><b>%s</b></div>' % (esc(k), esc(v))
                       for k, v in tiles)))


def advice_for(doc):
    """Per class size: the advisor's words about it (HTML)."""
    adv = doc.get("advisor")
    out = {}
    if adv is None:
        return out
    ranking = adv.get("ranking") or []
    by_size = {c["size"]: c for c in doc["classes"]}
    best = [a["size"] for a in ranking if a["saved_bytes"]][:3]
    for a in ranking:
        cls = by_size.get(a["size"])
        if cls is None:
            continue
        if a["saved_bytes"]:
            words = ("a %d B class would have saved %s (%s of the %d B blocks): %s of %s "
                     "requests fit" % (a["intermediate_size"], f_bytes(a["saved_bytes"]),
                                       h_pct(a["saved_permille"]), a["size"],
                                       h_count(a["fitting_requests"]), h_count(cls["allocs"])))
            out[a["size"]] = ('<span class="advice%s">%s</span>'
                              % (" best" if a["size"] in best else "", esc(words)))
        elif a["wasted_bytes"]:
            if a["intermediate_size"] is None:
                words = ("%s (%s) lost to rounding up; no smaller class keeps 16 B alignment"
                         % (f_bytes(a["wasted_bytes"]), h_pct(a["waste_permille"])))
            else:
                words = ("%s (%s) lost to rounding up; no request would fit a %d B class"
                         % (f_bytes(a["wasted_bytes"]), h_pct(a["waste_permille"]),
                            a["intermediate_size"]))
            out[a["size"]] = '<span class="muted">%s</span>' % esc(words)
    return out


def section_classes(doc):
    exact = bool(doc["exact_statistics"])
    advice = advice_for(doc)
    classes = doc["classes"]
    peak_max = max([c["peak_live_blocks"] or c["live_blocks"] for c in classes] + [1])
    rows = []
    for c in classes + [doc["totals"]]:
        total = c is doc["totals"]
        size = None if total else c["size"]
        colour = OI["black"] if total else class_colour(size)
        idle = not total and not c["allocs"] and not c["live_blocks"]
        label = ("total" if total else
                 '<span class="sw" style="background:%s"></span>%d B' % (colour, size))
        live, peak = c["live_blocks"], c["peak_live_blocks"]
        if total:
            blocks = '<span class="v">%s / %s</span>' % (h_count(live), h_count(peak))
        else:
            blocks = ('%s <span class="v">%s / %s</span>'
                      % (svg_bar(live / peak_max, OI["blue"], 60,
                                 under=(peak / peak_max) if peak is not None else None,
                                 label="live %s, peak %s" % (live, peak)),
                         h_count(live), h_count(peak)))
        if total:
            adv = ""
        elif not exact:
            adv = '<span class="muted">the advisor needs exact statistics</span>'
        else:
            adv = advice.get(size, "" if idle else '<span class="muted">nothing lost</span>')
        rows.append(
            '<tr class="%s"><td class="l cls">%s</td><td class="num">%s</td><td class="num">%s</td>'
            "%s%s%s<td class=\"num\">%s</td><td class=\"l advice-cell\">%s</td></tr>"
            % ("total" if total else ("idle" if idle else ""), label, blocks,
               h_count(c["allocs"]),
               pct_cell(c["hit_rate_permille"] if c["allocs"] else None, OI["green"]),
               util_cell(c["peak_utilization_permille"],
                         c["peak_internal_fragmentation_permille"], exact),
               pct_cell(c["external_fragmentation_permille"] if c["live_blocks"] else None,
                        OI["orange"]),
               esc(h_bytes(c["wasted_bytes"])), adv))
    head = ("<tr><th class=\"l\">class</th><th>blocks live / peak</th><th>allocations</th>"
            "<th>hit rate</th><th>utilization / internal frag. at peak</th>"
            "<th>external frag.</th><th>wasted</th><th class=\"l\">advisor</th></tr>")
    brows = []
    for c in classes + [doc["totals"]]:
        total = c is doc["totals"]
        brows.append(
            "<tr%s><td class=\"l cls\">%s</td>%s</tr>"
            % (' class="total"' if total else "", "total" if total else "%d B" % c["size"],
               "".join('<td class="num">%s</td>' % esc(v) for v in (
                   h_count(c["pages"]), h_bytes(c["reserved_bytes"]),
                   h_bytes(c["live_block_bytes"]), h_bytes(c["live_requested_bytes"]),
                   h_bytes(c["peak_block_bytes"]), h_bytes(c["peak_requested_bytes"]),
                   h_bytes(c["total_block_bytes"]),
                   "\u2013" if c["mean_request_bytes"] is None
                   else f_tenths(c["mean_request_bytes"]) + " B",
                   h_count(c["fresh_carves"]), h_count(c["reuse_hits"])))))
    bhead = ("<tr><th class=\"l\">class</th><th>pages</th><th>reserved</th><th>live blocks</th>"
             "<th>live requested</th><th>peak blocks</th><th>peak requested</th>"
             "<th>all blocks</th><th>mean request</th><th>fresh carves</th><th>reused</th></tr>")
    note = ("" if exact else '<p class="note">Default tier: peaks, requested bytes, utilization '
            "and the advisor were not tracked (SIZECLASS_STATS or SIZECLASS_STATS_EXACT=1 turns "
            "them on); nothing shown as \u201cnot tracked\u201d is a zero.</p>")
    return ('<section id="classes"><h2>Size classes</h2>%s<p class="note">Blocks: the dark bar '
            "is live at the report, the light one the peak (longest bar: %s blocks). Hit rate: "
            "allocations served by a freed block. Utilization (blue): requested bytes over "
            "block bytes at the peak; internal fragmentation (vermillion) is the rest, lost to "
            "rounding up. External fragmentation: free room in the class's pages.</p>"
            "<table class=\"classes\">%s%s</table>"
            "<h3>Bytes per class</h3><p class=\"note\">\u201cblocks\u201d: bytes of the blocks "
            "handed out; \u201crequested\u201d: what the program asked for.</p>"
            "<table class=\"bytes\">%s%s</table></section>"
            % (note, h_count(peak_max), head, "".join(rows), bhead, "".join(brows)))


# ---- the frame timeline -------------------------------------------------------------------------

def nice_step(span, ticks=4):
    """A round step giving about `ticks` intervals over span."""
    if span <= 0:
        return 1
    raw = span / float(ticks)
    mag = 10 ** len(str(int(raw))) // 10 if raw >= 1 else 1
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return max(1, m * mag)
    return 10 * mag


def bin_timeline(tl):
    """At most TIMELINE_COLUMNS columns: (first frame, last frame, allocs max, fresh max,
    flagged, live blocks per class at the column's end)."""
    n = len(tl)
    per = max(1, -(-n // TIMELINE_COLUMNS))
    cols = []
    for i in range(0, n, per):
        chunk = tl[i:i + per]
        cols.append((chunk[0]["frame"], chunk[-1]["frame"], max(f["allocs"] for f in chunk),
                     max(f["fresh_carves"] for f in chunk), chunk, chunk[-1]["class_live_blocks"]))
    return cols, per


def svg_axes(h, ml, mt, pw, ph, ymax, ylabel, x_ticks):
    """Grid lines, y tick labels, x tick labels and axis titles."""
    out = []
    step = nice_step(ymax)
    top = max(step, -(-ymax // step) * step)
    v = 0
    while v <= top:
        y = mt + ph - ph * v / top
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="grid"/>'
                   '<text x="%d" y="%.1f" class="tick" text-anchor="end">%s</text>'
                   % (ml, ml + pw, y, y, ml - 6, y + 4, esc(h_count(v))))
        v += step
    for x, label in x_ticks:
        out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" class="axis"/>'
                   '<text x="%.1f" y="%d" class="tick" text-anchor="middle">%s</text>'
                   % (x, x, mt + ph, mt + ph + 4, x, mt + ph + 16, esc(label)))
    out.append('<text x="%d" y="%d" class="axt" text-anchor="end">frame</text>'
               % (ml + pw, h - 2))
    out.append('<text x="12" y="%d" class="axt" transform="rotate(-90 12 %d)" '
               'text-anchor="middle">%s</text>' % (mt + ph // 2, mt + ph // 2, esc(ylabel)))
    return "".join(out), top


def frame_ticks(first, last, ml, pw, ncols, per):
    span = last - first
    step = nice_step(span, 8)
    t = -(-first // step) * step
    out = []
    while t <= last:
        col = (t - first) / float(per)
        out.append((ml + pw * (col + 0.5) / ncols, h_count(t)))
        t += step
    return out


def section_timeline(doc):
    tl = doc["frame_timeline"]
    fr = doc["frames"]
    if not tl:
        why = ("SIZECLASS_FRAME_HISTORY=0 switched it off" if tl is None else
               "the program never called sc_frame_mark()")
        return ('<section id="timeline"><h2>Frame timeline</h2><p class="note">Not recorded: %s.'
                " A game that calls sc_frame_mark() once per frame gets allocations per frame, "
                "live blocks per class and the frames that broke the steady state.</p></section>"
                % esc(why))
    warm = fr["warmup_frames"]
    cols, per = bin_timeline(tl)
    n = len(cols)
    W, H, ml, mr, mt, mb = 1180, 230, 64, 30, 12, 40
    pw, ph = W - ml - mr, H - mt - mb
    colw = pw / float(n)
    first, last = tl[0]["frame"], tl[-1]["frame"]
    ticks = frame_ticks(first, last, ml, pw, n, per)
    flagged = [f["frame"] for f in tl if f["frame"] > warm and f["fresh_carves"]]
    # Allocations per frame: reuse and fresh carves stacked; flagged frames banded.
    ymax = max([c[2] for c in cols] + [1])
    axes, top = svg_axes(H, ml, mt, pw, ph, ymax, "allocations", ticks)
    body = []
    warm_cols = sum(1 for c in cols if c[1] <= warm)
    if warm_cols:
        body.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="#f0f0f0"><title>warm-up: '
                    "frames 1 to %d</title></rect>" % (ml, mt, warm_cols * colw, ph, warm))
        if warm_cols * colw > 70:
            body.append('<text x="%d" y="%d" class="tick">warm-up</text>' % (ml + 4, mt + 12))
    for i, (f0, f1, allocs, fresh, chunk, _) in enumerate(cols):
        x = ml + i * colw
        bad = any(f["frame"] > warm and f["fresh_carves"] for f in chunk)
        what = ("frame %d" % f0) if f0 == f1 else ("frames %d\u2013%d (most in one frame)"
                                                   % (f0, f1))
        tip = "%s: %d allocations, %d fresh carves%s" % (
            what, allocs, fresh, "; fresh carve after the warm-up" if bad else "")
        if bad:
            body.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" '
                        'fill-opacity="0.35"/>' % (x, mt, max(colw, 1.5), ph, OI["purple"]))
        ha = ph * allocs / float(top)
        hf = ph * fresh / float(top)
        body.append('<g><title>%s</title><rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" '
                    'fill="%s"/>' % (esc(tip), x, mt + ph - ha, max(colw - 0.3, 0.6), ha,
                                     OI["sky"]))
        if fresh:
            body.append('<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"/>'
                        % (x, mt + ph - hf, max(colw - 0.3, 0.6), hf, OI["vermillion"]))
        body.append("</g>")
    chart1 = ('<svg class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img" '
              'aria-label="allocations per frame">%s%s</svg>' % (W, H, W, H, axes, "".join(body)))
    # Live blocks per class over the frames.
    ymax = max([max(c[5]) for c in cols] + [1])
    axes, top = svg_axes(H, ml, mt, pw, ph, ymax, "live blocks", ticks)
    lines = []
    for k, size in enumerate(CLASS_SIZES):
        vals = [c[5][k] for c in cols]
        if not any(vals):
            continue
        pts = " ".join("%.1f,%.1f" % (ml + (i + 0.5) * colw, mt + ph - ph * v / float(top))
                       for i, v in enumerate(vals))
        lines.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2">'
                     "<title>%d B: %s live blocks at the last frame</title></polyline>"
                     % (pts, class_colour(size), size, h_count(vals[-1])))
    chart2 = ('<svg class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img" '
              'aria-label="live blocks per class">%s%s</svg>' % (W, H, W, H, axes, "".join(lines)))
    legend2 = "".join('<span><i class="sw" style="background:%s"></i>%d B</span>'
                      % (class_colour(s), s) for k, s in enumerate(CLASS_SIZES)
                      if any(c[5][k] for c in cols))
    shown = ("frames %s to %s" % (h_count(first), h_count(last)))
    binned = (" (%d frames a column, the busiest shown)" % per) if per > 1 else ""
    steady = ("%s of %s frames after the warm-up carved nothing new (%s)"
              % (h_count(fr["zero_fresh_frames"]), h_count(fr["steady_frames"]),
                 h_pct(fr["zero_fresh_permille"])) if fr["steady_frames"]
              else "no frame after the warm-up yet")
    flag_note = ("%s shown carved a fresh block after the warm-up (%s frames): "
                 "SIZECLASS_FRAME_CHECK would flag them%s"
                 % ("1 frame" if len(flagged) == 1 else h_count(len(flagged)) + " frames",
                    h_count(warm),
                    ": " + ", ".join(str(f) for f in flagged[:12])
                    + (", \u2026" if len(flagged) > 12 else "") if flagged else ""))
    return ('<section id="timeline"><h2>Frame timeline</h2><p class="note">%s marked, %s kept: '
            "%s%s. %s; at most %s allocations in a frame, %s on average.</p>"
            '<h3>Allocations per frame</h3><p class="legend"><span><i class="sw" style='
            '"background:%s"></i>allocations</span><span><i class="sw" style="background:%s">'
            '</i>fresh carves (never-used blocks)</span><span><i class="sw" style="background:%s;'
            'opacity:.5"></i>flagged: a fresh carve after the warm-up</span></p>%s'
            '<p class="note flagged">%s</p>'
            '<h3>Live blocks per class</h3><p class="legend">%s</p>%s</section>'
            % (h_count(fr["frames"]) + " frames", h_count(len(tl)), shown, binned, steady,
               h_count(fr["max_allocs"]), esc(f_tenths(fr["mean_allocs"])), OI["sky"],
               OI["vermillion"], OI["purple"], chart1,
               esc(flag_note + ("" if flag_note.endswith("\u2026") else ".")), legend2, chart2))


# ---- allocation sites ---------------------------------------------------------------------------

def read_folded(path):
    """Folded stacks (SIZECLASS_SITES_FORMAT=folded): (class size, frames outermost
    first, allocations) per line; class 0 is the system allocator."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ReportError("%s: %s" % (path, e.strerror or e))
    stacks = []
    leaf = re.compile(r"\[(?:(\d+) B|system)\]")
    for lineno, line in enumerate(raw.decode("utf-8", "replace").split("\n"), 1):
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        m = leaf.fullmatch(frames[-1]) if stack else None
        if m is None or not count.isdigit():
            raise ReportError("%s: line %d is not a folded stack of libsizeclass "
                              "(\"outermost;...;innermost;[64 B] COUNT\")" % (path, lineno))
        size = int(m.group(1)) if m.group(1) else 0
        if size not in CLASS_SIZES + (0,):
            raise ReportError("%s: line %d: no class of %d B" % (path, lineno, size))
        stacks.append((size, frames[:-1], int(count)))
    return stacks


def class_allocs(doc, size):
    if size == 0:
        return doc["fallback"]["allocs"]
    return doc["classes"][CLASS_SIZES.index(size)]["allocs"]


def flame_stacks(doc, folded):
    """(path, allocations) of every stack: the class first, then its frames from the
    outermost down."""
    if folded is not None:
        stacks = [(size, strip_startup(frames), n) for size, frames, n in folded]
    else:
        stacks = [(s["class"], program_frames(s)[::-1], s["allocs"]) for s in doc["sites"]]
        listed = {}
        for size, _, n in stacks:
            listed[size] = listed.get(size, 0) + n
        for size, n in sorted(listed.items()):
            rest = class_allocs(doc, size) - n
            if rest > 0:  # the sites the report's top lists leave out
                stacks.append((size, ["[sites not in the report's top lists]"], rest))
    labels = {size: "[%s]" % class_label(size) for size in CLASS_SIZES + (0,)}
    return [([labels[size]] + frames, n) for size, frames, n in stacks if n > 0]


def flame_layout(stacks):
    """(depth, x, w, name, allocations, class size) of every node drawn: the root
    (depth 0, every stack), the classes (depth 1), their frames. x and w are shares
    of the root, siblings by allocations, most first. Nodes narrower than
    FLAME_MIN_PX at full width fold into one "other" node under their parent (the
    tail of a large input never reaches the page), and the limit is raised until at
    most FLAME_MAX_NODES nodes are drawn. Built level by level: a folded node's
    stacks are never looked at again."""
    total = sum(n for _, n in stacks)
    min_value = total * FLAME_MIN_PX / FLAME_WIDTH
    order = {"[%s]" % class_label(s): i for i, s in enumerate(CLASS_SIZES + (0,))}
    while True:
        out = [(0, 0.0, 1.0, "all classes", total, None)]
        work = [(stacks, 1, 0.0, None)]
        while work and len(out) <= FLAME_MAX_NODES:
            items, depth, x, size = work.pop()
            groups = {}
            at = depth - 1
            for item in items:
                path = item[0]
                if len(path) > at:
                    g = groups.get(path[at])
                    if g is None:
                        g = groups[path[at]] = [0, []]
                    g[0] += item[1]
                    g[1].append(item)
            if depth == 1:
                named = sorted(groups.items(), key=lambda kv: order.get(kv[0], 99))
            else:
                named = sorted(groups.items(), key=lambda kv: (-kv[1][0], kv[0]))
            rest, rest_n = 0, 0
            for name, (value, members) in named:
                ksize = size
                if depth == 1:
                    ksize = next((s for s in CLASS_SIZES + (0,)
                                  if "[%s]" % class_label(s) == name), 0)
                if value < min_value:
                    rest += value
                    rest_n += 1
                    continue
                w = value / float(total)
                out.append((depth, x, w, name, value, ksize))
                work.append((members, depth + 1, x, ksize))
                x += w
            if rest:
                out.append((depth, x, rest / float(total), "other (%d more)" % rest_n, rest,
                            size))
        if len(out) <= FLAME_MAX_NODES:
            return out
        min_value *= 2


def flame_label(name, px):
    n = int((px - 6) // CHAR_PX)
    if n < 3:
        return ""
    return name if len(name) <= n else name[:n - 1] + "\u2026"


def svg_flame(doc, folded):
    stacks = flame_stacks(doc, folded)
    if not stacks:
        return '<p class="note">No allocation was recorded at any site.</p>'
    nodes = flame_layout(stacks)
    total = nodes[0][4]
    depth = max(n[0] for n in nodes) + 1
    H = depth * FLAME_ROW
    parts = []
    for d, x, w, name, value, size in nodes:
        px = w * FLAME_WIDTH
        colour = "#dddddd" if size is None else tint(class_colour(size), 0.25 if d == 1 else 0.55)
        share = "%.1f%%" % (100.0 * value / total)
        tip = "%s\n%s allocations, %s of all" % (cap(name), h_count(value), share)
        parts.append('<g class="fn" data-x="%.7f" data-w="%.7f" data-d="%d" data-n="%s"><title>'
                     '%s</title><rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"/>'
                     '<text x="%.2f" y="%d">%s</text></g>'
                     % (x, w, d, esc(cap(name)), esc(tip), x * FLAME_WIDTH, d * FLAME_ROW,
                        max(px - 0.5, 0.5), FLAME_ROW - 1, colour, x * FLAME_WIDTH + 3,
                        d * FLAME_ROW + 13, esc(flame_label(cap(name), px))))
    return ('<div class="flame-wrap"><p class="legend"><button type="button" class="reset">'
            "reset zoom</button> Click a frame to zoom into it, the top row to zoom out. "
            "Rows: all classes, the class, then the call stack from the outermost frame "
            "down; widths: allocations.</p><svg class=\"flame\" width=\"%d\" height=\"%d\" "
            'viewBox="0 0 %d %d" role="img" aria-label="flame graph of the allocation sites">'
            "%s</svg></div>" % (FLAME_WIDTH, H, FLAME_WIDTH, H, "".join(parts)))


def site_rows_json(doc):
    """Per class: the sites of the JSON report, most allocations first (their
    text is made only for the rows shown)."""
    per = {}
    for s in doc["sites"]:
        per.setdefault(s["class"], []).append(s)
    out = {}
    for size, sites in per.items():
        sites.sort(key=lambda s: (-s["allocs"], s.get("id", 0)))
        out[size] = [SiteRow(s) for s in sites]
    return out


class SiteRow:
    """A table row of a JSON site."""
    __slots__ = ("site", "allocs", "live", "wasted", "requested")

    def __init__(self, s):
        self.site = s
        self.allocs, self.live = s["allocs"], s["live_blocks"]
        self.wasted, self.requested = s["wasted_bytes"], s["requested_bytes"]

    def text(self):
        """Its frames, where it is (object+offset of the innermost frame, and the
        caller's offset: two calls in one function differ there), its badges."""
        s = self.site
        locs = [str(x) for x in s.get("locations") or []]
        where = locs[0] if locs else ""
        if len(locs) > 1:
            obj, _, off = locs[1].rpartition("+")
            same = obj == where.rpartition("+")[0]
            where += " < " + ("+" + off if same else locs[1])
        return site_chain(s, 8), where, site_badges(self)


def where_short(where):
    """object+0x1 < +0x2 with the object's directory left out."""
    return " < ".join(part.rsplit("/", 1)[-1] for part in where.split(" < "))


def site_badges(r):
    """What stands out about a site: blocks still live, a large share lost to rounding."""
    out = []
    if r.live:
        out.append("%s live" % h_count(r.live))
    if r.wasted and r.requested is not None and r.wasted * 5 >= r.wasted + r.requested:
        out.append("wastes %d%%" % (r.wasted * 100 // (r.wasted + r.requested)))
    return out


class FoldedRow:
    """A table row of a folded stack (allocations only)."""
    __slots__ = ("frames", "allocs", "live", "wasted", "requested")

    def __init__(self, frames, n):
        self.frames, self.allocs = frames, n
        self.live = self.wasted = self.requested = None

    def text(self):
        f = strip_startup(self.frames)
        return " < ".join(reversed(f[-8:])) + (" < ..." if len(f) > 8 else ""), "", []


def site_rows_folded(folded):
    out = {}
    for size, frames, n in folded:
        out.setdefault(size, []).append(FoldedRow(frames, n))
    for rows in out.values():
        rows.sort(key=lambda r: -r.allocs)
    return out


def section_sites(doc, folded, lines=None):
    sites = doc.get("sites")
    if sites is None and folded is None:
        return ('<section id="sites"><h2>Allocation sites</h2><p class="note">Not recorded: run '
                "the program with SIZECLASS_SITES=on (sampled) or SIZECLASS_SITES=1 (every "
                "allocation) to see who allocates each class.</p></section>")
    sampling = doc.get("site_sampling")
    if sampling is not None and sampling.get("sampled"):
        how = ("sampled (about one allocation per %s requested): the figures are estimates"
               % f_bytes(sampling["rate_bytes"]))
    elif sampling is not None:
        how = "every allocation recorded: exact counts"
    else:
        how = "from the folded stacks"
    rows = site_rows_json(doc) if sites is not None else site_rows_folded(folded)
    tables = []
    for size in CLASS_SIZES + (0,):
        mine = rows.get(size)
        if not mine:
            continue
        total = class_allocs(doc, size)
        body = []
        shown = [r.site for r in mine[:SITE_ROWS] if isinstance(r, SiteRow)]
        same = {}
        if lines is not None and shown:
            lines.resolve(loc for s in shown for loc in site_locations(s))
            same = label_same_function(shown, lines, lambda s: site_chain(s, 8))
        for r in mine[:SITE_ROWS]:
            chain, where, badges = r.text()
            source, title = None, where
            if isinstance(r, SiteRow) and lines is not None:
                source = site_source(r.site, lines)
                if id(r.site) in same:  # two calls in one function: which one
                    label = same[id(r.site)]
                    badges = badges + [label.split(" at ")[0] if source else label]
                if source:
                    full = [lines.line(loc) for loc in site_locations(r.site)]
                    title = "%s (%s)" % (" < ".join(w for w in full if w), where)
            badges = "".join('<span class="badge">%s</span>' % esc(b) for b in badges)
            places = ((' <span class="where src">%s</span>' % esc(cap(source)) if source else "")
                      + (' <span class="where">%s</span>' % esc(cap(where_short(where)))
                         if where else ""))
            body.append('<tr><td class="num">%s</td><td class="num">%s</td><td class="num">%s</td>'
                        '<td class="num">%s</td><td class="num">%s</td><td class="l mono chain" '
                        'title="%s">%s%s%s</td></tr>'
                        % (h_count(r.allocs), h_pct(ratio(r.allocs, total)), h_count(r.live),
                           esc(h_bytes(r.wasted)), esc(h_bytes(r.requested)), esc(cap(title)),
                           esc(cap(chain)), badges, places))
        rest = mine[SITE_ROWS:]
        if rest:
            def total_of(key):
                vals = [getattr(r, key) for r in rest]
                return None if any(v is None for v in vals) else sum(vals)
            ra = total_of("allocs")
            body.append('<tr class="other"><td class="num">%s</td><td class="num">%s</td>'
                        '<td class="num">%s</td><td class="num">%s</td><td class="num">%s</td>'
                        '<td class="l">other: %s more sites</td></tr>'
                        % (h_count(ra), h_pct(ratio(ra, total)), h_count(total_of("live")),
                           esc(h_bytes(total_of("wasted"))), esc(h_bytes(total_of("requested"))),
                           h_count(len(rest))))
        tables.append('<h3><span class="sw" style="background:%s"></span>%s: %s, %s '
                      "allocations in the class</h3><table class=\"sites\"><tr><th>allocations"
                      "</th><th>share</th><th>live blocks</th><th>wasted</th><th>requested</th>"
                      '<th class="l">function &lt; callers</th></tr>%s</table>'
                      % (class_colour(size), esc("system allocator (> 1024 B)" if size == 0
                                                  else class_label(size)),
                         "1 site" if len(mine) == 1 else h_count(len(mine)) + " sites",
                         h_count(total), "".join(body)))
    return ('<section id="sites"><h2>Allocation sites</h2><p class="note">Who allocates each '
            "class: %s. A site is a call stack; live blocks at exit are leaks.</p>"
            '<h3>Flame graph</h3>%s<div id="site-tables">%s</div></section>'
            % (esc(how), svg_flame(doc, folded), "".join(tables)))


# ---- leaks, the system allocator, arenas, purges ------------------------------------------------

def section_memory(doc):
    leaks, fb, ar, pu = doc["leaks"], doc["fallback"], doc["arenas"], doc["purge"]

    def dl(title, pairs):
        return ('<div><h3>%s</h3><dl class="kv">%s</dl></div>'
                % (esc(title), "".join("<dt>%s</dt><dd>%s</dd>" % (esc(k), esc(v))
                                       for k, v in pairs)))

    when = "at exit" if doc["reason"] == "exit" else "at the report"
    leak_pairs = [("class blocks", h_count(leaks["blocks"])),
                  ("their bytes", h_bytes(leaks["block_bytes"])),
                  ("requested", h_bytes(leaks["requested_bytes"])),
                  ("system blocks", h_count(leaks["fallback_blocks"])),
                  ("system bytes", h_bytes(leaks["fallback_bytes"]))]
    leak_pairs += [("%d B class" % r["size"], "%s blocks, %s" % (h_count(r["blocks"]),
                                                                h_bytes(r["block_bytes"])))
                   for r in leaks["classes"]]
    return ('<section id="memory"><h2>Leaks, the system allocator, threads</h2>'
            '<div class="grid4">%s%s%s%s</div></section>'
            % (dl("still live " + when, leak_pairs),
               dl("system allocator (> 1024 B)", [
                   ("malloc calls", h_count(fb["malloc_calls"])),
                   ("realloc calls", h_count(fb["realloc_calls"])),
                   ("aligned calls", h_count(fb["aligned_calls"])),
                   ("blocks made", h_count(fb["allocs"])),
                   ("live blocks", h_count(fb["live_blocks"])),
                   ("bytes made", h_bytes(fb["total_bytes"])),
                   ("peak live bytes", h_bytes(fb["peak_live_bytes"]))]),
               dl("arenas (threads)", [("created", h_count(ar["created"])),
                                       ("live", h_count(ar["live"])),
                                       ("adopted", h_count(ar["adopted"])),
                                       ("threads", h_count(ar["threads"]))]),
               dl("memory returned to the OS", [
                   ("purges", h_count(pu["purges"])),
                   ("bytes returned", h_bytes(pu["bytes_returned"])),
                   ("pages reused", h_count(pu["pages_reused_after_purge"])),
                   ("system trims", h_count(pu["system_trims"]))])))


# ---- the whole page -----------------------------------------------------------------------------

CSS = """
*{box-sizing:border-box}
body{margin:0;background:#fff;color:#1b1b1b;font:14px/1.45 "DejaVu Sans","Segoe UI",Roboto,
Helvetica,Arial,sans-serif}
main{max-width:1240px;margin:0 auto;padding:12px 20px 40px}
h1{font-size:22px;margin:6px 0 10px}
h2{font-size:18px;margin:30px 0 8px;padding-bottom:4px;border-bottom:2px solid #0072B2}
h3{font-size:15px;margin:18px 0 6px}
nav{position:sticky;top:0;background:#fff;border-bottom:1px solid #ccc;padding:6px 20px;
z-index:2}
nav a{margin-right:18px;color:#0072B2;text-decoration:none;font-weight:600}
.mono{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12px}
.muted,.note{color:#555}
.note{margin:4px 0 8px;max-width:1180px}
dl.meta{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:3px 16px;margin:0 0 12px}
dl.meta dt{color:#555}
dl.meta dd{margin:0;overflow-wrap:anywhere}
.tiles{display:flex;flex-wrap:wrap;gap:10px}
.tile{border:1px solid #c8c8c8;border-radius:6px;padding:6px 14px;min-width:170px}
.tile span{color:#555;font-size:12px}
.tile b{display:block;font-size:20px;font-variant-numeric:tabular-nums}
table{border-collapse:collapse;margin:4px 0 8px}
th,td{padding:3px 8px;text-align:right;vertical-align:middle}
th{font-weight:600;border-bottom:1px solid #888;white-space:nowrap}
td{border-bottom:1px solid #e6e6e6}
.l{text-align:left}
.num{white-space:nowrap;font-variant-numeric:tabular-nums}
tr.total td{border-top:1px solid #888;font-weight:600}
td.cls{white-space:nowrap;font-weight:600}
tr.idle{color:#888}
table.classes{width:100%}
table.classes th{white-space:normal}
table.classes td.advice-cell{white-space:normal;min-width:260px}
.v.lost{color:#8a3a00;min-width:4em}
svg.bar{vertical-align:-1px;margin-right:4px}
.v{display:inline-block;min-width:4.5em;text-align:right}
.advice.best{font-weight:600}
.sw{display:inline-block;width:11px;height:11px;margin-right:5px;border-radius:2px;
vertical-align:-1px}
.legend span{margin-right:18px;white-space:nowrap}
.legend i.sw{font-style:normal}
svg.chart,svg.flame{display:block;max-width:100%;height:auto}
svg text{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;font-size:11px;fill:#333}
svg .grid{stroke:#e3e3e3}
svg .axis{stroke:#777}
svg .axt{font-size:12px;fill:#333}
svg.flame text{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12px;
fill:#111;pointer-events:none}
svg.flame g.fn{cursor:pointer}
svg.flame g.fn rect{stroke:#fff;stroke-width:0.5}
svg.flame g.fn:hover rect{stroke:#000;stroke-width:1}
svg.flame g.above rect{opacity:.55}
button.reset{font:inherit;font-size:12px;margin-right:8px}
table.sites{width:100%}
table.sites td.chain{white-space:normal;overflow-wrap:anywhere;width:62%}
.badge{display:inline-block;margin-left:8px;padding:0 6px;border-radius:8px;background:#CC79A7;
color:#000;font-family:"DejaVu Sans",sans-serif;font-size:11px}
tr.other td{color:#555;font-style:italic}
.where{color:#666;font-size:11px;margin-left:8px}
.where.src{color:#0b4f80}
.grid4{display:grid;grid-template-columns:repeat(4,minmax(0,1fr));gap:16px}
dl.kv{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 12px;margin:0}
dl.kv dt{color:#555}
dl.kv dd{margin:0;text-align:right;font-variant-numeric:tabular-nums}
footer{margin-top:30px;color:#666;font-size:12px}
.alert{color:#8a1c00;font-weight:600}
p.alert{background:#fde7df;border-left:4px solid #D55E00;padding:6px 10px;margin:0 0 10px}
tr.breach td{background:#fde7df}
td.name{white-space:normal;overflow-wrap:anywhere;max-width:320px}
div.report{border-top:3px solid #0072B2;margin-top:24px}
p.which{font-weight:600;color:#0072B2;margin:8px 0 0}
"""

JS = """
(function () {
  var CH = %(char)s, W = %(width)d;
  function label(name, px) {
    var n = Math.floor((px - 6) / CH);
    if (n < 3) return '';
    return name.length <= n ? name : name.slice(0, n - 1) + '\\u2026';
  }
  var svgs = document.querySelectorAll('svg.flame');
  for (var s = 0; s < svgs.length; s++) (function (svg) {
    var gs = svg.querySelectorAll('g.fn');
    function zoom(x0, w0, d0) {
      for (var i = 0; i < gs.length; i++) {
        var g = gs[i], x = +g.getAttribute('data-x'), w = +g.getAttribute('data-w');
        var d = +g.getAttribute('data-d');
        if (x + w <= x0 + 1e-12 || x >= x0 + w0 - 1e-12) { g.style.display = 'none'; continue; }
        var a = Math.max(0, (x - x0) / w0), b = Math.min(1, (x + w - x0) / w0), px = (b - a) * W;
        var r = g.querySelector('rect'), t = g.querySelector('text');
        g.style.display = '';
        r.setAttribute('x', (a * W).toFixed(2));
        r.setAttribute('width', Math.max(px - 0.5, 0.5).toFixed(2));
        t.setAttribute('x', (a * W + 3).toFixed(2));
        t.textContent = label(g.getAttribute('data-n'), px);
        if (d < d0) g.classList.add('above'); else g.classList.remove('above');
      }
    }
    for (var i = 0; i < gs.length; i++) gs[i].addEventListener('click', function () {
      var d = +this.getAttribute('data-d');
      if (d === 0) zoom(0, 1, 0);
      else zoom(+this.getAttribute('data-x'), +this.getAttribute('data-w'), d);
    });
    var reset = svg.parentNode.querySelector('button.reset');
    if (reset) reset.addEventListener('click', function () { zoom(0, 1, 0); });
  })(svgs[s]);
})();
"""

# ---- tags, threads, budgets, snapshots ----------------------------------------------------------

def use_bar(peak, limit, breached=None):
    """A budget's use: peak over limit as a bar (green, orange from 90 %,
    vermillion over the limit) and its percentage."""
    if peak is None or not limit:
        return '<span class="muted">\u2013</span>'
    frac = peak / float(limit)
    over = breached if breached is not None else peak > limit
    colour = OI["vermillion"] if over else (OI["orange"] if frac >= 0.9 else OI["green"])
    pct = h_pct(peak * 1000 // limit)
    return '%s <span class="v%s">%s</span>' % (svg_bar(frac, colour, 120, label="%s of the budget"
                                                       % pct), " lost" if over else "", pct)


def section_tags(doc):
    tags = doc.get("tags")
    if tags is None:
        return ""
    rows = []
    for tag in tags:
        b = tag_budget(doc, tag)
        rows.append('<tr%s><td class="l name">%s</td><td class="num">%s</td><td class="num">%s'
                    '</td><td class="num">%s</td><td class="num">%s</td><td class="num">%s</td>'
                    '<td class="num">%s</td><td class="num">%s</td><td class="l">%s</td></tr>'
                    % (' class="breach"' if b and b[2] else "", esc_name(tag["name"]),
                       h_count(tag["allocs"]), h_count(tag["live_blocks"]),
                       esc(h_bytes(tag["live_block_bytes"])), esc(h_bytes(tag["peak_block_bytes"])),
                       esc(h_bytes(tag["system_peak_bytes"])),
                       esc(h_bytes(b[0])) if b else '<span class="muted">none</span>',
                       esc(h_bytes(b[1])) if b else "\u2013",
                       use_bar(b[1], b[0], b[2]) if b else ""))
    head = ('<tr><th class="l">tag</th><th>allocations</th><th>live blocks</th><th>live bytes'
            '</th><th>peak bytes</th><th>system peak</th><th>budget</th><th>budget peak</th>'
            '<th class="l">use of the budget</th></tr>')
    chead = '<tr><th class="l">tag</th>%s</tr>' % "".join(
        '<th><span class="sw" style="background:%s"></span>%d B</th>' % (class_colour(s), s)
        for s in CLASS_SIZES)
    crows = []
    for tag in tags:
        per = {c.get("size"): c for c in tag.get("classes") or []}
        cells = []
        for s in CLASS_SIZES:
            c = per.get(s)
            if c is None or not (c.get("allocs") or c.get("live_blocks")
                                 or c.get("peak_live_blocks")):
                cells.append('<td class="num muted">\u2013</td>')
            else:
                cells.append('<td class="num" title="%s allocations">%s / %s</td>'
                             % (h_count(c.get("allocs")), h_count(c.get("live_blocks")),
                                h_count(c.get("peak_live_blocks"))))
        crows.append('<tr><td class="l name">%s</td>%s</tr>' % (esc_name(tag["name"]),
                                                                "".join(cells)))
    return ('<section id="tags"><h2>Tags</h2><p class="note">Allocations by tag (sc_tag): '
            "blocks and bytes of the classes, the system allocator\u2019s apart; a budget\u2019s "
            "bar is the tag\u2019s peak over its budget.</p>"
            '<table class="tags">%s%s</table><h3>Tags by class</h3><p class="note">Live / peak '
            "blocks of each tag in each class.</p><table class=\"tags\">%s%s</table></section>"
            % (head, "".join(rows), chead, "".join(crows)))


def section_threads(doc):
    threads = doc.get("threads")
    if threads is None:
        return ""
    rows = []
    for th in threads:
        rows.append('<tr%s><td class="l name">%s</td><td class="num">%s</td><td class="l">%s</td>'
                    '<td class="num">%s</td><td class="num">%s</td><td class="num">%s</td>'
                    '<td class="num">%s</td><td class="num">%s</td><td class="num">%s</td></tr>'
                    % (' class="idle"' if th.get("exited") else "", esc_name(thread_name(th)),
                       h_count(th.get("tid")), esc(thread_state(th)), h_count(th["allocs"]),
                       h_count(th["frees"]), esc(h_bytes(th["live_block_bytes"])),
                       esc(h_bytes(th["peak_block_bytes"])),
                       esc(h_bytes(th["system_live_bytes"])), esc(h_bytes(th.get("budget")))))
    return ('<section id="threads"><h2>Threads</h2><p class="note">Allocations by thread; '
            "exited threads of one name are one row.</p><table class=\"threads\"><tr>"
            '<th class="l">thread</th><th>tid</th><th class="l">state</th><th>allocations</th>'
            "<th>frees</th><th>live bytes</th><th>peak bytes</th><th>system live</th>"
            "<th>budget</th></tr>%s</table></section>" % "".join(rows))


def section_budgets(doc):
    budgets = doc.get("budgets")
    if budgets is None:
        return ""
    rows = []
    for b in budgets:
        rows.append('<tr%s><td class="l name">%s</td><td class="num">%s</td><td class="num">%s'
                    '</td><td class="num">%s</td><td class="l">%s</td><td class="l">%s</td></tr>'
                    % (' class="breach"' if b["breached"] else "", esc_name(b["what"]),
                       esc(h_bytes(b["limit"])), esc(h_bytes(b["live"])),
                       esc(h_bytes(b["peak"])), use_bar(b["peak"], b["limit"], b["breached"]),
                       "<b>%s</b>" % esc(budget_note(b)) if b["breached"] else "ok"))
    breached = sum(1 for b in budgets if b["breached"])
    return ('<section id="budgets"><h2>Budgets</h2><p class="note%s">%s of %s budgets '
            "breached.</p><table class=\"budgets\"><tr><th class=\"l\">budget</th><th>limit"
            "</th><th>live</th><th>peak</th><th class=\"l\">use (peak / limit)</th>"
            '<th class="l">state</th></tr>%s</table></section>'
            % (" alert" if breached else "", h_count(breached), h_count(len(budgets)),
               "".join(rows)))


def section_snapshots(doc, src):
    snaps = doc.get("snapshots")
    if not snaps:
        return ""
    rows = []
    for s in snaps:
        rows.append('<tr><td class="l name">%s</td><td class="num">%s</td><td class="num">%s</td>'
                    '<td class="num">%s</td><td class="num">%s</td><td class="num">%s</td>'
                    '<td class="num">%s</td></tr>'
                    % (esc_name(s["name"]), h_count(s.get("frame")),
                       esc(h_duration(s.get("wall_ns"))), h_count(s["totals"]["live_blocks"]),
                       esc(h_bytes(s["totals"]["live_block_bytes"])),
                       esc(h_bytes(s["totals"]["peak_block_bytes"])),
                       esc(h_bytes(s["fallback"]["live_bytes"]))))
    return ('<section id="snapshots"><h2>Snapshots</h2><p class="note">Named snapshots '
            '(sc_snapshot), the last 32. One as a page: <span class="mono">sizeclass-report '
            "html %s@NAME</span>; two compared: <span class=\"mono\">sizeclass-report diff "
            "%s@A %s@B</span>.</p><table class=\"snapshots\"><tr><th class=\"l\">snapshot"
            "</th><th>frame</th><th>time</th><th>live blocks</th><th>live bytes</th>"
            "<th>peak bytes</th><th>system live</th></tr>%s</table></section>"
            % (esc(src), esc(src), esc(src), "".join(rows)))


# ---- the whole page -------------------------------------------------------------------------------

SECTION_NAMES = (("summary", "Summary"), ("budgets", "Budgets"), ("classes", "Size classes"),
                 ("timeline", "Frame timeline"), ("sites", "Allocation sites"),
                 ("tags", "Tags"), ("threads", "Threads"), ("snapshots", "Snapshots"),
                 ("memory", "Leaks and threads"))


def report_body(doc, src, folded, folded_src, lines):
    """The sections of one report (or snapshot), in page order."""
    snap = doc.get("snapshot")
    return "".join((
        page_header(doc, src, folded_src),
        section_budgets(doc),
        section_classes(doc),
        "" if snap else section_timeline(doc),
        "" if snap else section_sites(doc, folded, lines),
        section_tags(doc),
        section_threads(doc),
        section_snapshots(doc, src),
        section_memory(doc),
    ))


_ID = re.compile(r'(<[a-z]+ [^>]*?\bid=")([^"]+")')


def report_title(doc):
    name, _ = program_name(doc)
    return "%s, pid %s, report %s" % (name or "program not named", doc["process"]["pid"],
                                       reason_words(doc["reason"]))


def html_page(docs, src, folded=None, folded_src=None, lines=None):
    """The page of a report, or of several (a file of several processes' reports,
    or signal dumps): one section each under a chooser, newest last. folded
    stacks go with the last report."""
    if isinstance(docs, dict):
        docs = [docs]
    doc = docs[-1]
    name, _ = program_name(doc)
    title = "libsizeclass report" + (" \u2014 " + name if name else "") + \
        " (pid %s)" % doc["process"]["pid"]
    if len(docs) == 1:
        body = report_body(doc, src, folded, folded_src, lines)
        present = set(re.findall(r'<(?:section|header) id="([^"]+)"', body))
        nav = "".join('<a href="#%s">%s</a>' % (i, t) for i, t in SECTION_NAMES
                      if i in present)
    else:
        title += ", %d reports" % len(docs)
        parts, links = [], []
        for k, d in enumerate(docs, 1):
            last = k == len(docs)
            one = report_body(d, src, folded if last else None, folded_src if last else None,
                              lines)
            one = _ID.sub(lambda m: '%sr%d-%s' % (m.group(1), k, m.group(2)), one)
            parts.append('<div class="report" id="r%d"><p class="which">Report %d of %d: %s</p>'
                         "%s</div>" % (k, k, len(docs), esc_name(report_title(d)), one))
            links.append('<li><a href="#r%d">%s</a>%s</li>'
                         % (k, esc_name(report_title(d)),
                            ' <b class="alert">%s</b>' % esc_name(d["reason"], 200)
                            if failed_reason(d["reason"]) else ""))
        body = ('<section id="chooser"><h2>%d reports in %s</h2><p class="note">One per process '
                "(or signal dumps of one): choose one; each has every section.</p><ol>%s</ol>"
                "</section>%s" % (len(docs), esc(src), "".join(links), "".join(parts)))
        nav = "".join('<a href="#r%d">report %d</a>' % (k, k) for k in range(1, len(docs) + 1))
    return "".join((
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="sizeclass-report">',
        "<title>%s</title><style>%s</style></head><body>" % (esc(title), CSS),
        "<nav>%s</nav><main>" % nav,
        body,
        '<footer>Written by sizeclass-report from a libsizeclass JSON report (schema %s, '
        "version %d). The same report as text: <span class=\"mono\">sizeclass-report text "
        "%s</span>.</footer></main>" % (SCHEMA, doc["version"], esc(src)),
        "<script>%s</script></body></html>\n" % (JS % {"char": CHAR_PX, "width": FLAME_WIDTH}),
    ))
