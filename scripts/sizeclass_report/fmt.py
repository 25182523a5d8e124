# SPDX-License-Identifier: MIT
"""fmt.py — numbers as the library writes them (src/report/emit.c)."""

import datetime
import re
from decimal import Decimal


def f_count(v):
    return "-" if v is None else str(v)


def f_size(v):
    return "-" if v is None else "%d B" % v


def f_bytes(v):
    """Exact below 10 KiB; else KiB, MiB or GiB floored to 0.1, switching at 1000."""
    if v is None:
        return "-"
    if v < 10240:
        return "%d B" % v
    units, u, div = (" KiB", " MiB", " GiB"), 0, 1024
    while u < 2 and v >= 1000 * div:
        div *= 1024
        u += 1
    t = v * 10 // div
    return "%d.%d%s" % (t // 10, t % 10, units[u])


def f_permille(v):
    return "-" if v is None else "%d.%d%%" % (v // 10, v % 10)


def f_tenths(v):
    if v is None:
        return "-"
    t = int(Decimal(v) * 10)
    return "%d.%d" % (t // 10, t % 10)


def f_ns(v):
    if v is None:
        return "-"
    ms = v // 1000000
    return "%d.%03d s" % (ms // 1000, ms % 1000)


def ratio(num, den):
    """num/den in permille, floored; None when den is 0 (emit.h sc__ev_ratio)."""
    if num is None or den is None or den == 0:
        return None
    return num * 1000 // den


def f_utc_ms(ms):
    """A wall-clock time in ms since the epoch as the library writes it
    (proc_info.c: 2026-12-02 05:01:58.136 UTC)."""
    if ms is None:
        return "(unknown)"
    t = datetime.datetime.fromtimestamp(ms // 1000, datetime.timezone.utc)
    return "%04d-%02d-%02d %02d:%02d:%02d.%03d UTC" % (t.year, t.month, t.day, t.hour, t.minute,
                                                      t.second, ms % 1000)


def class_label(size):
    return "system" if size == 0 else "%d B" % size


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
NAME_CAP = 300


def f_name(v, n=NAME_CAP):
    """A name from the program (a tag, a thread, a snapshot) for a text line:
    control characters (newlines, tabs, escapes) shown as \\xNN, at most n
    characters."""
    s = _CONTROL.sub(lambda m: "\\x%02x" % ord(m.group()), "" if v is None else str(v))
    return s if len(s) <= n else s[:n - 1] + "\u2026"
