# SPDX-License-Identifier: MIT
"""The text report is rendered in one design: sizeclass_report/text.py's
tables are the C library's (src/report/*.c), table for table. This test
reads the C sources and fails on any difference in a column (JSON key, text
head, width, groups), a table's titles, or the key/value layout."""

import os
import re
import unittest

from common import ROOT

from sizeclass_report import text

C_FILES = ("report.c", "report_timeline.c", "report_sites.c")


def c_source():
    out = ""
    for name in C_FILES:
        with open(os.path.join(ROOT, "src", "report", name)) as f:
            out += f.read() + "\n"
    return out


def c_string(tok):
    return None if tok == "NULL" else "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', tok))


def c_enum(src):
    """The G_* group bits of report.c."""
    out = {}
    for body in re.findall(r"enum\s*\{([^}]*)\}", src):
        for name, val in re.findall(r"(G_\w+)\s*=\s*(\d+)", body):
            out[name] = int(val)
    return out


def c_groups(expr, enum):
    val = 0
    for part in expr.split("|"):
        part = part.strip()
        val |= int(part) if part.isdigit() else enum[part]
    return val


def c_cols(src, name):
    m = re.search(r"static const sc_em_col_t %s\[\] = \{(.*?)\n\};" % name, src, re.S)
    if m is None:
        return None
    enum = c_enum(src)
    cols = []
    for key, head, width, groups in re.findall(
            r'\{\s*(NULL|"[^"]*")\s*,\s*(NULL|"[^"]*")\s*,\s*(\d+)\s*,\s*([\w |]+?)\s*\}',
            m.group(1)):
        cols.append((c_string(key), c_string(head), int(width), c_groups(groups, enum)))
    return cols


def c_titles(src, name):
    m = re.search(r"static const sc_em_table_t %s = \{(.*?)\n\};" % name, src, re.S)
    if m is None:
        return None
    t = re.search(r"\.titles\s*=\s*\{(.*?)\}\s*,\s*\n", m.group(1), re.S)
    if t is None:
        return ()
    titles, cur = [], []
    for tok in re.findall(r'"(?:[^"\\]|\\.)*"|,', t.group(1)):
        if tok == ",":
            titles.append("".join(cur))
            cur = []
        else:
            cur.append(tok[1:-1].encode().decode("unicode_escape"))
    if cur:
        titles.append("".join(cur))
    return tuple(titles)


class TextTables(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.src = c_source()

    def test_columns_are_the_c_columns(self):
        for name, table in text.C_TABLES.items():
            want = [c for c in c_cols(self.src, name) or [] if c[1] is not None]
            self.assertTrue(want, "no C table %s in src/report/" % name)
            have = [tuple(c[:4]) for c in table if c[1] is not None]
            self.assertEqual(have, want, "text.py's %s differs from the C table" % name)

    def test_titles_are_the_c_titles(self):
        for name, titles in text.C_TITLES.items():
            want = c_titles(self.src, name)
            self.assertIsNotNone(want, "no C table %s in src/report/" % name)
            self.assertEqual(tuple(titles), want, "text.py's titles of %s" % name)

    def test_key_value_layout_is_emit_c(self):
        with open(os.path.join(ROOT, "src", "report", "emit.c")) as f:
            emit = f.read()
        for name in ("KV_LABEL_WIDTH", "KV_VALUE_WIDTH", "KV_PER_LINE"):
            m = re.search(r"#define %s (\d+)" % name, emit)
            self.assertIsNotNone(m, name)
            self.assertEqual(getattr(text.TextEmitter, name), int(m.group(1)), name)

    def test_the_comparison_can_fail(self):
        """A changed width in the C text is seen."""
        src = self.src.replace('{"live_blocks", "live", 8, G_BLOCKS | G_PAGES}',
                               '{"live_blocks", "live", 9, G_BLOCKS | G_PAGES}')
        self.assertNotEqual(src, self.src)
        have = [tuple(c[:4]) for c in text.CLASS_COLS]
        self.assertNotEqual(have, [c for c in c_cols(src, "class_cols") if c[1] is not None])


if __name__ == "__main__":
    unittest.main()
