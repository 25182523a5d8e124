# SPDX-License-Identifier: MIT
"""Sites in the text and the page (issue 26): two call sites in one function
("resolve_merges < main" twice in one class) are told apart by file:line,
found by binutils' addr2line at render time in a program built with -g, and
labelled "call k of n" (with the call's offset when the program has no debug
information). Runs a real program under the library (SC_BUILD, as
tests/test_report.c sets it); the library itself records object+offset only."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from common import run

from sizeclass_report.sites import SourceLines, label_same_function

SOURCE = """/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
static void *keep[64];
__attribute__((noinline)) static void resolve_merges(int n, int m) {
  for (int i = 0; i < n; i++) keep[i] = malloc(40); /* line 5 */
  for (int i = 0; i < m; i++) keep[32 + i] = malloc(40); /* line 6 */
}
int main(void) {
  resolve_merges(5, 3); /* line 9 */
  return 0;
}
"""

LIB = os.path.join(os.environ.get("SC_BUILD", ""), "libsizeclass.so")


class Labels(unittest.TestCase):
    def test_same_function_sites_are_labelled_by_offset_without_lines(self):
        sites = [{"class": 64, "frames": ["f", "main"], "function": "f",
                  "locations": ["/nonexistent/game+0x%x" % off, "/nonexistent/game+0x99"]}
                 for off in (0x1234, 0x1250)]
        sites.append({"class": 64, "frames": ["g", "main"], "function": "g",
                      "locations": ["/nonexistent/game+0x40", "/nonexistent/game+0x99"]})
        lines = SourceLines()
        lines.resolve(loc for s in sites for loc in s["locations"])
        self.assertIsNone(lines.line(sites[0]["locations"][0]), "no such file: no line")
        got = label_same_function(sites, lines)
        self.assertEqual(got, {id(sites[0]): "call 1 of 2 at +0x1234",
                               id(sites[1]): "call 2 of 2 at +0x1250"})

    def test_no_addr2line(self):
        lines = SourceLines(tool="/nonexistent/addr2line")
        lines.resolve(["/bin/sh+0x10"])
        self.assertIsNone(lines.line("/bin/sh+0x10"))
        self.assertFalse(lines.enabled)


@unittest.skipUnless(os.path.exists(LIB) and shutil.which("cc") and shutil.which("addr2line"),
                     "needs SC_BUILD/libsizeclass.so, cc and addr2line")
class TwoCallsInOneFunction(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        with open(os.path.join(d, "merge.c"), "w") as f:
            f.write(SOURCE)
        cls.reports = {}
        for name, flags in (("debug", ["-g", "-O0"]), ("plain", ["-g0", "-O0"])):
            exe = os.path.join(d, name)
            subprocess.run(["cc"] + flags + ["-o", exe, os.path.join(d, "merge.c")], check=True)
            report = os.path.join(d, name + ".json")
            env = {k: v for k, v in os.environ.items() if not k.startswith("SIZECLASS_")}
            env.update(LD_PRELOAD=LIB, SIZECLASS_STATS=report, SIZECLASS_SITES="1")
            subprocess.run([exe], env=env, check=True, timeout=60)
            cls.reports[name] = report

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def sites(self, name):
        with open(self.reports[name]) as f:
            doc = json.load(f)
        return [s for s in doc["sites"] if s["function"] == "resolve_merges"]

    def test_the_report_has_two_sites_of_one_function(self):
        sites = self.sites("debug")
        self.assertEqual(sorted(s["allocs"] for s in sites), [3, 5])
        self.assertEqual({s["class"] for s in sites}, {64})

    def test_text_shows_file_and_line(self):
        rc, out, err = run(["text", self.reports["debug"]])
        self.assertEqual((rc, err), (0, ""))
        self.assertIn("\n           5         5      120 B  resolve_merges < main  (call 1 of 2; "
                      "merge.c:5 < merge.c:9)\n", out)
        self.assertIn("\n           3         3       72 B  resolve_merges < main  (call 2 of 2; "
                      "merge.c:6 < merge.c:9)\n", out)
        # --no-lines: the library's own text
        rc, out, err = run(["text", "--no-lines", self.reports["debug"]])
        self.assertEqual((rc, err), (0, ""))
        self.assertIn("\n           5         5      120 B  resolve_merges < main\n", out)
        self.assertNotIn("merge.c", out)

    def test_without_debug_information_the_offsets_tell_them_apart(self):
        rc, out, err = run(["text", self.reports["plain"]])
        self.assertEqual((rc, err), (0, ""))
        calls = re.findall(r"resolve_merges < main  \(call (\d) of 2 at \+0x([0-9a-f]+)\)\n", out)
        self.assertEqual(sorted(set(k for k, _ in calls)), ["1", "2"], out)
        self.assertEqual(len(set(off for _, off in calls)), 2, "two offsets")

    def test_the_page_shows_file_and_line(self):
        rc, out, err = run(["html", self.reports["debug"], "-o", "-"])
        self.assertEqual((rc, err), (0, ""))
        sites = re.search(r'<div id="site-tables">(.*?)</div></section>', out).group(1)
        for line, k in (("5", "1"), ("6", "2")):
            row = re.search(r"<tr>((?:(?!</tr>).)*merge\.c:%s &lt; merge\.c:9(?:(?!</tr>).)*)"
                            r"</tr>" % line, sites)
            self.assertIsNotNone(row, "a row at merge.c:%s in %s" % (line, sites))
            self.assertIn('<span class="badge">call %s of 2</span>' % k, row.group(1))
            self.assertIn('<span class="where src">merge.c:%s &lt; merge.c:9</span>' % line,
                          row.group(1))
        rc, out, err = run(["html", "--no-lines", self.reports["debug"], "-o", "-"])
        self.assertNotIn("merge.c", out)


if __name__ == "__main__":
    unittest.main()
