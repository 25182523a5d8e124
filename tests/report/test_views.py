# SPDX-License-Identifier: MIT
"""The text and the page of the newer keys (issue 26 and the shared schema):
the reason of a run that did not end normally shown first, tags (with a tag
x class table and a bar per tag against its budget), threads, budgets with
breaches marked, snapshots; a file of several processes' reports as one page
with a chooser; ext-frag and hit rate null; every name escaped."""

import json
import re
import tempfile
import unittest

from common import base, fixture, run, write

EVIL = '<img src=x onerror=alert(1)>"\n\t\x1b[31m'


def evil_report():
    doc = fixture("full.json")
    doc["tags"][1]["name"] = EVIL + "tag"
    doc["budgets"][1]["what"] = "tag:" + EVIL + "tag"
    doc["threads"][0]["name"] = EVIL + "thread"
    doc["snapshots"][0]["name"] = EVIL + "snap"
    doc["reason"] = "abort: " + EVIL
    return doc


class Text(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def text(self, doc, *args):
        rc, out, err = run(["text", "--no-lines"] + list(args) +
                           [write(self.tmp.name, "r.json", doc)])
        self.assertEqual((rc, err), (0, ""))
        return out

    def test_tags_threads_budgets_snapshots(self):
        out = self.text(fixture("full.json"))
        self.assertTrue(out.startswith("== libsizeclass statistics (abort: frame check: fresh "
                                       "carve in class 32 B at frame 61) ==\n"))
        for want in (
                "\ntags: allocations by tag",
                "\n  audio                       100         90        10   10.0 KiB   68.3 KiB"
                "        0 B     4096 B   64.0 KiB  113.0%\n",
                "\ntags by class: live / peak blocks\n",
                "\n  audio                            -             -             -             -"
                "             -             -         10/60\n",
                "\nthreads: allocations by thread (exited threads of one name are one row)\n",
                "\n  worker                    4250     exited x3         30         30        0 B"
                "     2048 B        0 B          -\n",
                "\nbudgets: 1 of 4 breached\n",
                "\n  tag:audio              64.0 KiB   10.0 KiB   72.3 KiB   113.0%  BREACHED at "
                "frame 12\n",
                "\n  total                   1.0 MiB   23.4 KiB   97.6 KiB     9.5%  ok\n",
                "\nsnapshots (sc_snapshot): sizeclass-report text FILE@NAME shows one\n",
                "\n  level_unloaded              15     0.002 s        58     8416 B     5000 B\n"):
            self.assertIn(want, out)

    def test_names_are_escaped(self):
        out = self.text(evil_report())
        self.assertNotIn("\x1b", out)
        self.assertNotIn("\t", out)
        shown = '<img src=x onerror=alert(1)>"\\x0a\\x09\\x1b[31m'
        self.assertTrue(out.startswith("== libsizeclass statistics (abort: %s) ==\n" % shown))
        for what in ("tag", "thread", "snap"):
            self.assertIn("\n  " + shown + what, out)
        # every line of the tables is one line: no name breaks one
        tables = out[out.index("\ntags:"):]
        for line in tables.split("\n"):
            self.assertFalse(line.startswith("\t"))

    def test_null_ext_frag_and_hit_rate(self):
        doc = base()
        for c in doc["classes"][3:6]:  # 128 B..512 B: no allocation, nothing live
            c["hit_rate_permille"] = None
            c["external_fragmentation_permille"] = None
        out = self.text(doc)
        self.assertIn("\n   128 B         0         0         0         0         0         0"
                      "         0         -\n", out)
        self.assertIn("\n   128 B       0        0 B         0         0         0         -\n", out)

    def test_a_snapshot_has_its_own_text(self):
        path = write(self.tmp.name, "f.json", fixture("full.json"))
        rc, out, err = run(["text", path + "@level_unloaded"])
        self.assertEqual((rc, err), (0, ""))
        self.assertTrue(out.startswith("== libsizeclass snapshot level_unloaded (frame 15, at "
                                       "0.002 s) ==\n"), out[:200])
        self.assertIn("\nclasses: blocks (live = allocs - frees", out)
        self.assertIn("\nleaks: still live now\n", out)
        self.assertIn("\ntags: allocations by tag", out)
        self.assertNotIn("\nsites:", out)
        self.assertNotIn("\nbudgets:", out)


class Page(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def page(self, doc, suffix=""):
        path = write(self.tmp.name, "r.json", doc) if not isinstance(doc, str) else doc
        rc, out, err = run(["html", "--no-lines", path + suffix, "-o", "-"])
        self.assertEqual((rc, err), (0, ""))
        return out

    def test_the_reason_of_a_failed_run_comes_first(self):
        for reason, words in (("abort: frame check: fresh carve", "on the library&#x27;s abort: "
                                                                   "frame check: fresh carve"),
                              ("terminated: SIGTERM", "when terminated by SIGTERM"),
                              ("crash: SIGSEGV", "on a crash: SIGSEGV"),
                              ("_exit", "when the program called _exit")):
            doc = base()
            doc["reason"] = reason
            out = self.page(doc)
            m = re.search(r'<header id="summary"><h1>[^<]*</h1><p class="alert" id="reason">'
                          r"The program did not end normally: this report was written (.*?) "
                          r'\(reason <b class="mono">(.*?)</b>\)', out)
            self.assertIsNotNone(m, reason)
            self.assertEqual(m.group(1), words)
            self.assertEqual(m.group(2), reason)
        for reason in ("exit", "signal", "request"):
            doc = base()
            doc["reason"] = reason
            self.assertNotIn('class="alert" id="reason"', self.page(doc))

    def test_the_peak_tile_says_it_counts_the_system_allocator(self):
        out = self.page(base())
        self.assertIn('<div class="tile"><span>peak bytes (classes + system allocator)</span>',
                      out)

    def test_tags_threads_budgets_snapshots_sections(self):
        out = self.page(fixture("full.json"))
        nav = re.search(r"<nav>(.*?)</nav>", out).group(1)
        for sid in ("tags", "threads", "budgets", "snapshots"):
            self.assertIn('<section id="%s">' % sid, out)
            self.assertIn('href="#%s"' % sid, nav)
        tags = re.search(r'<section id="tags">(.*?)</section>', out).group(1)
        # the audio tag breached its budget: its row is marked, its bar over the limit
        row = re.search(r'<tr class="breach"><td class="l name">audio</td>(.*?)</tr>', tags)
        self.assertIsNotNone(row, tags)
        self.assertIn('aria-label="113.0\u202f% of the budget"', row.group(1))
        self.assertIn("#D55E00", row.group(1))
        ui = re.search(r'<tr><td class="l name">&lt;b&gt;&quot;ui&quot;&lt;/b&gt;\\x0aline2</td>'
                       r"(.*?)</tr>", tags)
        self.assertIsNotNone(ui, "an unbreached tag, escaped")
        self.assertIn('aria-label="0.0\u202f% of the budget"', ui.group(1))
        self.assertIn("<h3>Tags by class</h3>", tags)
        self.assertIn('<td class="num" title="100 allocations">10 / 60</td>', tags)
        budgets = re.search(r'<section id="budgets">(.*?)</section>', out).group(1)
        self.assertIn('<p class="note alert">1 of 4 budgets breached.</p>', budgets)
        self.assertEqual(budgets.count('<tr class="breach">'), 1)
        self.assertIn("<b>BREACHED at frame 12</b>", budgets)
        threads = re.search(r'<section id="threads">(.*?)</section>', out).group(1)
        self.assertIn('<tr class="idle"><td class="l name">worker</td><td class="num">4\u202f250'
                      '</td><td class="l">exited x3</td>', threads)
        snaps = re.search(r'<section id="snapshots">(.*?)</section>', out).group(1)
        self.assertIn('<td class="l name">level_loaded</td><td class="num">5</td>', snaps)

    def test_older_reports_have_none_of_these_sections(self):
        out = self.page(base())
        for sid in ("tags", "threads", "budgets", "snapshots", "chooser"):
            self.assertNotIn('id="%s"' % sid, out)

    def test_every_name_is_escaped(self):
        out = self.page(evil_report())
        self.assertNotIn("<img", out)
        self.assertNotIn("\x1b", out)
        self.assertEqual(out.count("<script"), 1, "the page's own script only")
        self.assertIn("&lt;img src=x onerror=alert(1)&gt;&quot;\\x0a\\x09\\x1b[31mtag", out)
        self.assertIn("&lt;img src=x onerror=alert(1)&gt;&quot;\\x0a\\x09\\x1b[31mthread", out)
        self.assertIn("&lt;img src=x onerror=alert(1)&gt;&quot;\\x0a\\x09\\x1b[31msnap", out)

    def test_null_ext_frag_and_hit_rate_and_nothing_live(self):
        doc = base()
        for c in doc["classes"][3:6]:
            c["hit_rate_permille"] = None
            c["external_fragmentation_permille"] = None
        out = self.page(doc)
        classes = re.search(r'<table class="classes">(.*?)</table>', out).group(1)
        rows = re.findall(r"<tr[^>]*>(.*?)</tr>", classes)
        row128 = [r for r in rows if "</span>128 B</td>" in r][0]
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row128)
        self.assertEqual((cells[3], cells[5]), ("n/a", "n/a"), "hit rate, ext-frag: %s" % row128)
        # 16 B: blocks were carved and all freed: ext-frag 100 % in the report, a figure of
        # nothing: n/a, no full orange bar
        row16 = [r for r in rows if "</span>16 B</td>" in r][0]
        self.assertEqual(doc["classes"][0]["external_fragmentation_permille"], 1000)
        self.assertIn('<td class="num muted">n/a</td>', row16)
        self.assertNotIn("#E69F00\"/></svg> <span class=\"v\">100.0", row16)

    def test_a_snapshot_page(self):
        path = write(self.tmp.name, "f.json", fixture("full.json"))
        out = self.page(path, "@level_loaded")
        self.assertIn("<h1>libsizeclass snapshot level_loaded of report_twin</h1>", out)
        self.assertIn('<dt>snapshot</dt><dd><b class="mono">level_loaded</b> at frame 5', out)
        self.assertNotIn('<section id="timeline">', out)
        self.assertNotIn('<section id="sites">', out)
        self.assertIn('<section id="tags">', out)
        # its default page name
        rc, _, err = run(["html", path + "@level_loaded"])
        self.assertEqual((rc, err), (0, ""))
        with open(self.tmp.name + "/f@level_loaded.html") as f:
            self.assertIn("libsizeclass snapshot level_loaded", f.read())

    def test_several_reports_are_one_page_with_a_chooser(self):
        a, b = base(), fixture("full.json")
        a["process"]["pid"], b["process"]["pid"] = 1111, 2222
        path = write(self.tmp.name, "two.json", json.dumps(a) + "\n" + json.dumps(b) + "\n")
        out = self.page(path)
        chooser = re.search(r'<section id="chooser">(.*?)</section>', out)
        self.assertIsNotNone(chooser, "a chooser")
        self.assertIn("<h2>2 reports in two.json</h2>", chooser.group(1))
        links = re.findall(r'<li><a href="#(r\d)">(.*?)</a>', chooser.group(1))
        self.assertEqual([k for k, _ in links], ["r1", "r2"])
        self.assertIn("pid 1111", links[0][1])
        self.assertIn("pid 2222", links[1][1])
        self.assertIn('<b class="alert">abort: frame check', chooser.group(1))
        for k in ("r1", "r2"):
            self.assertIn('<div class="report" id="%s">' % k, out)
            self.assertIn('<section id="%s-classes">' % k, out)
            self.assertIn('<header id="%s-summary">' % k, out)
        ids = re.findall(r' id="([^"]+)"', out)
        self.assertEqual(len(ids), len(set(ids)), "ids are unique")
        self.assertIn('<section id="r2-tags">', out)
        self.assertNotIn('<section id="r1-tags">', out)
        self.assertEqual(out.count("<script"), 1)


if __name__ == "__main__":
    unittest.main()
