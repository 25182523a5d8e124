#!/usr/bin/env python3
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
                                              against TOOL text of its JSON form
  report_util.py png FILE.png                 "W H COLOURS SHARE": size, distinct
                                              colours and the share of pixels that
                                              are not the background, in permille
Python 3 standard library only."""

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
    doc = load(src)
    for a in assigns:
        path, _, value = a.partition("=")
        keys = path.split(".")
        node = doc
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        last = keys[-1]
        if isinstance(node, list):
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
    the text shows (which must lie between the two JSON forms')."""
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
        out = subprocess.run([tool, "text", fixed], stdout=subprocess.PIPE,
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


def png(path):
    w, h, bpp, rows = read_png(path)
    colours, ink = set(), 0
    bg = rows[0][:3]
    for row in rows[::2]:
        for x in range(0, w * bpp, bpp * 2):
            px = row[x:x + 3]
            colours.add(px)
            ink += px != bg
    samples = ((h + 1) // 2) * ((w + 1) // 2)
    print(w, h, len(colours), ink * 1000 // samples)
    return 0


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
        return png(sys.argv[2])
    print("report_util.py: unknown command %s" % cmd, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
