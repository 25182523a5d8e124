# SPDX-License-Identifier: MIT
"""sites.py — allocation sites: which frames are the program's, their text
line, and where they are in the source (file:line, from binutils' addr2line at
render time when the program has debug information; the library records
object+offset only). Two sites of one class in one function (two calls to
malloc in resolve_merges) show the same names: label_same_function tells
them apart by their lines (or offsets, without debug information)."""

import os
import re
import subprocess

# The C library's objects (src/util/symbolize.c): a site's text line stops there.
LIBC_OBJECTS = ("libc.so", "ld-linux", "libpthread.so", "libdl.so", "librt.so")


def _object_kind(obj):
    """True for the C library's objects, "cxx" for libstdc++ (whose operator new
    counts as the C library's), False otherwise."""
    base = obj.rsplit("/", 1)[-1]
    if base.startswith(LIBC_OBJECTS):
        return True
    return "cxx" if base.startswith("libstdc++.so") else False


_OBJECT_KINDS = {}


def frame_is_libc(name, location):
    """Whether a frame is the C library's, as src/util/symbolize.c decides."""
    obj = location[:location.rfind("+0x")] if isinstance(location, str) else ""
    kind = _OBJECT_KINDS.get(obj)
    if kind is None:
        kind = _OBJECT_KINDS[obj] = _object_kind(obj)
    return kind is True or (kind == "cxx" and isinstance(name, str) and name.startswith("_Zn"))


def program_frames(site):
    """A site's frames, innermost first, up to the C library's start-up code (the
    frames the text report shows); its function alone when it has no frame."""
    frames = site.get("frames") or []
    if not frames:
        return [str(site.get("function") or "[no stack]")]
    locs = site.get("locations") or []
    n, nlocs, shown, kinds = len(frames), len(locs), 1, _OBJECT_KINDS
    while shown < n:  # frame_is_libc, inlined: 100 000 sites go through here
        loc = locs[shown] if shown < nlocs else ""
        obj = loc[:loc.rfind("+0x")] if type(loc) is str else ""
        kind = kinds.get(obj)
        if kind is None:
            kind = kinds[obj] = _object_kind(obj)
        if kind is not False and (kind is True or frame_is_libc(frames[shown], loc)):
            break
        shown += 1
    return [str(f) for f in frames[:shown]]


# Folded stacks name no object: their outermost frames are left out while they are
# the C library's start-up code (or the program's _start before it).
STARTUP_FRAMES = frozenset(("_start", "__libc_start_main", "__libc_start_call_main", "??",
                            "start_thread", "clone", "clone3", "__clone", "__clone3"))


def strip_startup(frames):
    i = 0
    while i < len(frames) - 1 and frames[i] in STARTUP_FRAMES:
        i += 1
    return frames[i:]


def site_chain(site, names=4):
    """A site's text line: its innermost frames up to the C library's start-up."""
    if not site.get("frames"):
        return site.get("function") or "[no stack]"
    frames = program_frames(site)
    return " < ".join(frames[:names]) + (" < ..." if len(frames) > names else "")


def rank_sites(sites, size, key, k):
    """The top k sites of a class by key (non-zero), as the library ranks them:
    most first, equal figures by site id (JSON order without ids)."""
    mine = [(-s[key], s.get("id", i), i) for i, s in enumerate(sites)
            if s["class"] == size and s[key]]
    mine.sort()
    return [sites[i] for _, _, i in mine[:k]]


def split_location(loc):
    """"MODULE+0xOFFSET" -> (module, offset); (None, None) when it is not one."""
    if not isinstance(loc, str):
        return None, None
    module, sep, off = loc.rpartition("+0x")
    if not sep or not module:
        return None, None
    try:
        return module, int(off, 16)
    except ValueError:
        return None, None


_DISCRIMINATOR = re.compile(r"\s*\(discriminator \d+\)$")


class SourceLines:
    """file:line of code locations, from addr2line (binutils: every system that
    builds the library has it, gcc depends on it): one call per module for
    every location asked for, results kept. Off (enabled False), without
    addr2line, for a module that is not a file here or has no debug
    information: no line (None), and the views show offsets as before."""

    def __init__(self, enabled=True, tool="addr2line"):
        self.enabled = enabled
        self.tool = tool
        self.found = {}

    def resolve(self, locations):
        """Looks up every location of the list not looked up yet."""
        if not self.enabled:
            return
        want = {}
        for loc in locations:
            if loc in self.found:
                continue
            module, off = split_location(loc)
            self.found[loc] = None
            if module is None or not os.path.isfile(module):
                continue
            # A frame's location is a return address: the call is the byte before.
            want.setdefault(module, {})[max(off - 1, 0)] = loc
        for module, offsets in want.items():
            try:
                out = subprocess.run([self.tool, "-a", "-i", "-e", module] +
                                     ["0x%x" % o for o in sorted(offsets)],
                                     capture_output=True, text=True, timeout=60,
                                     check=False).stdout
            except (OSError, subprocess.SubprocessError):
                self.enabled = False  # no addr2line: offsets only, said once per run
                return
            current = None
            for line in out.splitlines():
                if line.startswith("0x"):
                    try:
                        current = offsets.get(int(line, 16))
                    except ValueError:
                        current = None
                    continue
                if current is None or self.found.get(current) is not None:
                    continue  # the first line is the innermost (inlined) one
                where = _DISCRIMINATOR.sub("", line.strip())
                if where.startswith("??") or where.endswith(":0") or where.endswith(":?"):
                    continue
                self.found[current] = where

    def line(self, loc):
        """"path/file.c:42" of a location looked up, or None."""
        return self.found.get(loc)

    def short(self, loc):
        """"file.c:42" (no directory), or None."""
        w = self.found.get(loc)
        return None if w is None else w.rsplit("/", 1)[-1]


def site_locations(site, frames=2):
    """The locations of a site's innermost frames (the call and its caller)."""
    locs = site.get("locations") or []
    return [loc for loc in locs[:frames] if isinstance(loc, str)]


def site_source(site, lines):
    """"merge.c:40 < main.c:12": the source lines of a site's call and its
    caller, as far as they are known; None when none is."""
    got = [lines.short(loc) for loc in site_locations(site)]
    if not got or got[0] is None:
        return None
    if len(got) > 1 and got[1] is not None:
        return "%s < %s" % (got[0], got[1])
    return got[0]


def label_same_function(sites, lines, chain=None):
    """{id(site): label} for the sites of one list whose text lines are the same
    (two calls in one function): "call at merge.c:40" (or the call's offset
    without debug information), "k of n" when even those are the same."""
    chain = chain or site_chain
    groups = {}
    for s in sites:
        groups.setdefault(chain(s), []).append(s)
    out = {}
    for same in groups.values():
        if len(same) < 2:
            continue
        for k, s in enumerate(same, 1):
            locs = site_locations(s, 1)
            where = lines.short(locs[0]) if locs else None
            if where is None and locs:
                where = "+0x%x" % (split_location(locs[0])[1] or 0)
            out[id(s)] = "call %d of %d%s" % (k, len(same), " at " + where if where else "")
    return out
