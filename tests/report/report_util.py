#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""report_util.py — helpers of tests/test_report.c (and of make test-report):
reports to feed scripts/sizeclass-report, and checks of what it made.

  report_util.py big IN.json OUT.json N       IN with N generated sites (names of
                                              every sort, stacks up to 32 deep), and
                                              OUT.json.folded with N stacks
  report_util.py set IN.json OUT.json PATH=VALUE...
                                              IN with values replaced: PATH is
                                              dotted (classes.2.peak_live_blocks),
                                              VALUE JSON (106, null, "x")
  report_util.py twin DIR TOOL                the text form of report_twin's report
                                              against TOOL text --no-lines of its JSON
                                              form
  report_util.py png FILE.png                 "W H COLOURS SHARE": size, distinct
                                              colours and the share of pixels that
                                              are not the background, in permille;
                                              with --palette, fail unless it is a
                                              picture of the page (size, colours,
                                              ink, the class colours)
  report_util.py measure-copy PAGE COPY       PAGE with a script that measures its
                                              layout in the browser into the DOM
  report_util.py layout DOM                   the measurements of that copy: no text
                                              over text, nothing beyond 1280 px, the
                                              flame graph zooms; "height N"
  report_util.py dom DOM                      the sections and pieces the demo's
                                              page must have, one line each; exit 1
                                              when one is missing
Python 3 standard library only."""

import html
import html.parser
import json
import os
import random
import struct
import subprocess
import sys
import zlib


def load(path):
    with open(path) as f:
        return json.load(f)


def big(src, dst, n):
    doc = load(src)
    rnd = random.Random(20)
    words = ["update", "spawn", "tick", "load_level", "std::vector<int>::push_back",
             "operator new", "<script>alert(1)</script>", "a&b", "\"quoted\"", "caf\u00e9",
             "render'pass", "x" * 200, "tab\there"]
    sites, folded = [], []
    for i in range(n):
        size = rnd.choice([16, 32, 64, 128, 256, 512, 1024, 0])
        depth = rnd.choice([1, 2, 3, 5, 8, 32])
        frames = ["%s_%d" % (rnd.choice(words), rnd.randrange(5000)) for _ in range(depth)]
        frames[-1] = "main"
        allocs = rnd.choice([1, 1, 2, 3, 10, 100, 5000])
        sites.append({"class": size, "function": frames[0], "frames": frames,
                      "locations": ["/usr/bin/game+0x%x" % rnd.randrange(1 << 20)
                                    for _ in frames],
                      "allocs": allocs, "live_blocks": rnd.choice([0, 0, 1, 7]),
                      "wasted_bytes": rnd.randrange(1000), "requested_bytes": allocs * 10,
                      "samples": allocs, "sampled": False, "top": ["allocs"], "id": i})
        leaf = "[system]" if size == 0 else "[%d B]" % size
        folded.append(";".join(f.replace(";", "_").replace(" ", "_").replace("\t", "_")
                               for f in reversed(frames)) + ";" + leaf + " %d" % allocs)
    doc["sites"] = sites
    doc["site_sampling"] = {"rate_bytes": 1, "charge_bytes": 0, "sampled": False, "sites": n,
                            "overflowed_samples": 0, "depth": 32}
    with open(dst, "w") as f:
        json.dump(doc, f)
    with open(dst + ".folded", "w") as f:
        f.write("\n".join(folded) + "\n")


def set_values(src, dst, assigns):
    """Each assign is PATH=JSON (set), or -PATH (delete the key)."""
    doc = load(src)
    for a in assigns:
        drop = a.startswith("-")
        path, _, value = (a[1:] if drop else a).partition("=")
        keys = path.split(".")
        node = doc
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        last = keys[-1]
        if drop:
            node.pop(last, None)
        elif isinstance(node, list):
            node[int(last)] = json.loads(value)
        else:
            node[last] = json.loads(value)
    with open(dst, "w") as f:
        json.dump(doc, f, indent=2)


def twin(d, tool):
    """report_twin wrote N.a.json, N.txt, N.b.json five times, nothing allocated
    between them. An attempt whose two JSON forms agree in every figure but the
    wall time brackets its text form: the text is compared, byte for byte, with
    the tool's rendering of the first JSON form with its wall time set to the one
    the text shows (which must lie between the two JSON forms'). The tool runs
    with --no-lines: without it, it adds the sites' file:line, which the library
    does not print."""
    used = 0
    for n in range(5):
        a, b = load(os.path.join(d, "%d.a.json" % n)), load(os.path.join(d, "%d.b.json" % n))
        wa, wb = a["process"].pop("wall_ns"), b["process"].pop("wall_ns")
        if a != b:
            continue
        with open(os.path.join(d, "%d.txt" % n)) as f:
            text = f.read()
        marker = "wall time"
        at = text.find(marker)
        if at < 0:
            print("attempt %d: no wall time in the text form" % n)
            return 1
        secs = text[at + len(marker):].split()[0]
        whole, _, frac = secs.partition(".")
        ms = int(whole) * 1000 + int(frac)
        if not wa // 10 ** 6 <= ms <= wb // 10 ** 6:
            print("attempt %d: the text's wall time %s s is not between %d and %d ns"
                  % (n, secs, wa, wb))
            return 1
        a["process"]["wall_ns"] = ms * 10 ** 6
        fixed = os.path.join(d, "%d.fixed.json" % n)
        with open(os.path.join(d, "%d.a.json" % n)) as f:
            raw = f.read()
        # The same file with one number changed: its keys stay in the library's order.
        old = '"wall_ns": %d' % wa
        if raw.count(old) != 1:
            print("attempt %d: wall_ns not found once in the JSON form" % n)
            return 1
        with open(fixed, "w") as f:
            f.write(raw.replace(old, '"wall_ns": %d' % (ms * 10 ** 6)))
        out = subprocess.run([tool, "text", "--no-lines", fixed], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True)
        if out.returncode != 0:
            print("attempt %d: %s text failed: %s" % (n, tool, out.stderr.strip()))
            return 1
        if out.stdout != text:
            import difflib
            print("attempt %d: the text forms differ (--- the library, +++ %s text):" % (n, tool))
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(True),
                                                       out.stdout.splitlines(True),
                                                       "library", "sizeclass-report"))
            return 1
        used += 1
    if used == 0:
        print("no attempt with two equal JSON forms around the text form")
        return 1
    print("same %d" % used)
    return 0


def read_png(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as f:
        d = f.read()
    if d[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    i, idat, ihdr = 8, [], None
    while i < len(d):
        n, = struct.unpack(">I", d[i:i + 4])
        t, c = d[i + 4:i + 8], d[i + 8:i + 8 + n]
        if zlib.crc32(t + c) & 0xffffffff != struct.unpack(">I", d[i + 8 + n:i + 12 + n])[0]:
            raise ValueError("bad CRC in chunk %r" % t)
        if t == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", c)
        elif t == b"IDAT":
            idat.append(c)
        i += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("not an 8-bit RGB(A) PNG: depth %d, colour type %d" % (depth, ctype))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    if len(raw) != h * (stride + 1):
        raise ValueError("image data of %d bytes, not %d" % (len(raw), h * (stride + 1)))
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif f == 2:
            for x in range(stride):
                line[x] = (line[x] + prev[x]) & 255
        elif f == 3:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + (a + prev[x]) // 2) & 255
        elif f == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b, c = prev[x], prev[x - bpp] if x >= bpp else 0
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif f != 0:
            raise ValueError("unknown filter %d" % f)
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


# The class colours of the page (Okabe-Ito), as a screenshot has them.
PALETTE = ("E69F00", "56B4E9", "009E73", "F0E442", "0072B2", "D55E00", "CC79A7")


def png(path, palette=False):
    w, h, bpp, rows = read_png(path)
    counts, ink = {}, 0
    bg = rows[0][:3]
    for row in rows[::2]:
        for x in range(0, w * bpp, bpp * 2):
            px = row[x:x + 3]
            counts[px] = counts.get(px, 0) + 1
            ink += px != bg
    samples = ((h + 1) // 2) * ((w + 1) // 2)
    share = ink * 1000 // samples
    seen = [c for c in PALETTE if counts.get(bytes.fromhex(c), 0) >= 20]
    print("%d x %d px, %d colours, %d permille ink, class colours %s"
          % (w, h, len(counts), share, " ".join(seen) or "none"))
    if not palette:
        return 0
    problems = []
    if w != 1280 or h < 1500:
        problems.append("a 1280 px wide page of 1500 px or more, not %d x %d" % (w, h))
    if len(counts) < 200:
        problems.append("more than 200 colours, not %d" % len(counts))
    if share < 40:
        problems.append("ink on 4 %% of the page or more, not %d permille" % share)
    if len(seen) < 5:
        problems.append("5 class colours or more, not %d" % len(seen))
    for p in problems:
        print("missing: " + p)
    return 1 if problems else 0


MEASURE_JS = r"""
<script>
window.addEventListener('load', function () {
  var doc = document.documentElement, out = {};
  out.width = doc.scrollWidth;
  out.height = doc.scrollHeight;
  out.window = window.innerWidth;
  function texts(root) {
    var rects = [], walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT), n;
    while ((n = walker.nextNode())) {
      var s = n.nodeValue.trim(), el = n.parentElement;
      if (!s || el.closest('script,style,title,head,#layout-check')) continue;
      if (el.closest('[style*="display: none"]')) continue;
      var list;
      if (el instanceof SVGElement) list = [el.getBoundingClientRect()];
      else { var r = document.createRange(); r.selectNodeContents(n); list = r.getClientRects(); }
      for (var i = 0; i < list.length; i++) {
        var b = list[i];
        if (b.width < 0.5 || b.height < 0.5) continue;
        rects.push({x0: b.left + scrollX, x1: b.right + scrollX, y0: b.top + scrollY,
                    y1: b.bottom + scrollY, what: s.slice(0, 50)});
      }
    }
    return rects;
  }
  function overlaps(rects) {
    var bad = [];
    rects.sort(function (a, b) { return a.y0 - b.y0; });
    for (var i = 0; i < rects.length; i++)
      for (var j = i + 1; j < rects.length && rects[j].y0 < rects[i].y1 - 1; j++) {
        var a = rects[i], b = rects[j];
        var ox = Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0);
        var oy = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0);
        if (ox > 1 && oy > 1) bad.push(a.what + ' | ' + b.what);
      }
    return bad;
  }
  var all = texts(document.body);
  out.texts = all.length;
  out.overlaps = overlaps(all);
  out.outside = all.filter(function (r) { return r.x0 < -0.5 || r.x1 > window.innerWidth + 0.5; })
                   .map(function (r) { return r.what + ' at ' + Math.round(r.x0) + '..' +
                                       Math.round(r.x1); });
  var flame = document.querySelector('svg.flame');
  out.zoom = {found: !!flame};
  if (flame) {
    var deep = flame.querySelector('g.fn[data-d="3"]') || flame.querySelector('g.fn[data-d="2"]');
    var w0 = +deep.querySelector('rect').getAttribute('width');
    deep.dispatchEvent(new MouseEvent('click', {bubbles: true}));
    var shown = 0, hidden = 0, gs = flame.querySelectorAll('g.fn');
    for (var i = 0; i < gs.length; i++) {
      if (gs[i].style.display === 'none') hidden++; else shown++;
    }
    out.zoom.before = w0;
    out.zoom.after = +deep.querySelector('rect').getAttribute('width');
    out.zoom.shown = shown;
    out.zoom.hidden = hidden;
    out.zoom.label = deep.querySelector('text').textContent;
    out.zoom.name = deep.getAttribute('data-n');
    out.zoom.overlaps = overlaps(texts(flame));
    flame.querySelector('g.fn[data-d="0"]').dispatchEvent(new MouseEvent('click', {bubbles: true}));
    out.zoom.back = +deep.querySelector('rect').getAttribute('width');
    var still = 0;
    for (var i = 0; i < gs.length; i++) if (gs[i].style.display === 'none') still++;
    out.zoom.hidden_after_reset = still;
  }
  var pre = document.createElement('pre');
  pre.id = 'layout-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def measure_copy(src, dst):
    with open(src, encoding="utf-8") as f:
        page = f.read()
    at = page.rindex("</body>")
    with open(dst, "w", encoding="utf-8") as f:
        f.write(page[:at] + MEASURE_JS + page[at:])
    return 0


def layout(dom_path):
    with open(dom_path, encoding="utf-8") as f:
        dom = f.read()
    start = dom.find('<pre id="layout-check">')
    if start < 0:
        print("missing: the measurements (the script did not run)")
        return 1
    end = dom.index("</pre>", start)
    m = json.loads(html.unescape(dom[start + len('<pre id="layout-check">'):end]))
    problems = []
    print("height %d" % m["height"])
    print("%d pieces of text measured; page %d px wide in a %d px window"
          % (m["texts"], m["width"], m["window"]))
    if m["texts"] < 300:
        problems.append("text on the page (%d pieces)" % m["texts"])
    if m["width"] > m["window"]:
        problems.append("a page that does not scroll sideways (%d px wide)" % m["width"])
    for o in m["overlaps"][:20]:
        problems.append("no overlap: " + o)
    for o in m["outside"][:20]:
        problems.append("inside the window: " + o)
    z = m["zoom"]
    if not z["found"]:
        problems.append("a flame graph")
    else:
        print("zoom: %r %.1f px -> %.1f px (label %r), %d frames shown, %d hidden; back to "
              "%.1f px, %d hidden" % (z["name"], z["before"], z["after"], z["label"], z["shown"],
                                      z["hidden"], z["back"], z["hidden_after_reset"]))
        if not z["after"] > 1170:
            problems.append("the clicked frame at the full width (%.1f px)" % z["after"])
        if z["back"] != z["before"] or z["hidden_after_reset"] != 0:
            problems.append("the top row zooming out again")
        if not z["label"] or len(z["label"]) < min(len(z["name"]), 10):
            problems.append("the zoomed frame's name (%r)" % z["label"])
        for o in z["overlaps"][:20]:
            problems.append("no overlap in the zoomed flame graph: " + o)
    for p in problems:
        print("missing: " + p)
    return 1 if problems else 0


class Dom(html.parser.HTMLParser):
    """Elements by tag, id and class; the text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.classes, self.tags, self.text = set(), {}, {}, []
        self.g_fn = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if "id" in a:
            self.ids.add(a["id"])
        for c in (a.get("class") or "").split():
            self.classes[tag + "." + c] = self.classes.get(tag + "." + c, 0) + 1

    def handle_data(self, data):
        self.text.append(data)


def dom_check(path):
    with open(path, encoding="utf-8") as f:
        d = Dom()
        d.feed(f.read())
    text = " ".join("".join(d.text).split())
    need = [
        ("the summary header", "summary" in d.ids),
        ("the size classes", "classes" in d.ids),
        ("the frame timeline", "timeline" in d.ids),
        ("the allocation sites", "sites" in d.ids),
        ("the leaks and threads", "memory" in d.ids),
        ("the five section titles", all(t in text for t in (
            "Size classes", "Frame timeline", "Allocation sites", "Flame graph",
            "Leaks, the system allocator, threads"))),
        ("the header's fields", all(t in text for t in (
            "pid", "command line", "run time", "tier", "features")) and "exact" in text),
        # 5 used classes x (peak, hit rate, utilization); external
        # fragmentation has no bar where nothing is live (every class at the
        # demo's exit)
        ("a class table with bars", d.classes.get("table.classes", 0) == 1
         and d.classes.get("svg.bar", 0) >= 15),
        ("the advisor beside its class", "a 48 B class would have saved" in text),
        ("two timeline charts", d.classes.get("svg.chart", 0) == 2),
        # the demo loads its level's memory first: no frame after the
        # warm-up carves, and the note says how many would be flagged (0)
        ("the frames the steady-state check flags",
         "SIZECLASS_FRAME_CHECK would flag them" in text),
        ("a flame graph", d.classes.get("svg.flame", 0) == 1 and d.classes.get("g.fn", 0) >= 20),
        ("a site table per class with sites", d.classes.get("table.sites", 0) >= 5),
        ("the demo's sites", all(f in text for f in ("board_spawn", "resolve_merges",
                                                     "float_text"))),
        ("units on the numbers", " KiB" in text and " %" in text.replace("\u202f", " ")),
        ("one script, the page's own", d.tags.get("script", 0) == 1),
    ]
    bad = 0
    for what, ok in need:
        print("%s %s" % ("ok     " if ok else "missing", what))
        bad += not ok
    return 1 if bad else 0


def main():
    cmd = sys.argv[1]
    if cmd == "big":
        big(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    if cmd == "set":
        set_values(sys.argv[2], sys.argv[3], sys.argv[4:])
        return 0
    if cmd == "twin":
        return twin(sys.argv[2], sys.argv[3])
    if cmd == "png":
        return png(sys.argv[2], "--palette" in sys.argv[3:])
    if cmd == "measure-copy":
        return measure_copy(sys.argv[2], sys.argv[3])
    if cmd == "layout":
        return layout(sys.argv[2])
    if cmd == "dom":
        return dom_check(sys.argv[2])
    print("report_util.py: unknown command %s" % cmd, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
