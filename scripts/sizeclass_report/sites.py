# SPDX-License-Identifier: MIT
"""sites.py — allocation sites: which frames are the program's, their text line."""

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
