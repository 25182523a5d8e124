# SPDX-License-Identifier: MIT
"""sizeclass-report diff with the newer keys: --fail-if on a tag, on the
threads of a name and on one of the report's own budgets, beside the
figures of the totals and the classes; two named snapshots of one report
compared with the same budgets; null ext-frag and hit rate undefined, not
untracked."""

import json
import tempfile
import unittest

from common import base, fixture, run, write


class Diff(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.base_doc = fixture("full.json")
        self.base = write(self.tmp.name, "base.json", self.base_doc)

    def tearDown(self):
        self.tmp.cleanup()

    def new(self, edit):
        doc = fixture("full.json")
        edit(doc)
        return write(self.tmp.name, "new.json", doc)

    def budget(self, new, expr, want, detail):
        """diff base new --fail-if expr: exit want, the budget's line with detail."""
        rc, out, err = run(["diff", self.base, new, "--fail-if", expr])
        self.assertEqual(rc, want, "%s: %s%s" % (expr, out, err))
        line = "%s %s: %s" % ("FAILED " if want else "ok     ", expr, detail)
        self.assertIn(line, out)
        if want:
            self.assertEqual(err, "sizeclass-report: budget exceeded: %s: %s\n" % (expr, detail))
        else:
            self.assertEqual(err, "")

    def test_tag_budget(self):
        def grow(pct):
            def edit(doc):
                doc["tags"][1]["peak_block_bytes"] = 70000 * (100 + pct) // 100
            return edit
        self.budget(self.new(grow(5)), "tag[audio].peak_block_bytes>+5%", 0,
                    "68.3 KiB -> 71.7 KiB (+5.0%)")
        self.budget(self.new(grow(6)), "tag[audio].peak_block_bytes>+5%", 1,
                    "68.3 KiB -> 72.4 KiB (+6.0%)")
        # the tag's peak with its system allocator's, absolute
        self.budget(self.new(grow(6)), "tag[audio].peak_bytes>80KiB", 0,
                    "72.3 KiB -> 76.4 KiB (+5.7%)")
        # a name with quotes, markup and a newline is matched as it is
        self.budget(self.new(lambda d: None), 'tag[<b>"ui"</b>\nline2].live_blocks>5', 1,
                    "6 -> 6 (+0.0%)")

    def test_thread_budget(self):
        def edit(doc):
            doc["threads"][1]["live_block_bytes"] = 3000
        self.budget(self.new(edit), "thread[render].live_block_bytes>2KiB", 1,
                    "1280 B -> 3000 B (+134.4%)")
        self.budget(self.new(edit), "thread[render].live_block_bytes>+2000", 0,
                    "1280 B -> 3000 B (+134.4%)")

        def two(doc):  # two running threads of one name: summed
            doc["threads"].append(dict(doc["threads"][1], tid=4299, allocs=50))
        self.budget(self.new(two), "thread[render].allocs>+20%", 1, "200 -> 250 (+25.0%)")

    def test_budget_of_the_report(self):
        self.budget(self.new(lambda d: None), "budget[tag:audio].peak_share>90%", 1,
                    "113.1% -> 113.1% (+0.0 pp)")
        self.budget(self.new(lambda d: None), "budget[total].breached>0", 0, "0 -> 0 (+0.0%)")

        def breach(doc):
            doc["budgets"][0].update(breached=True, first_breach_frame=40)
        self.budget(self.new(breach), "budget[total].breached>0", 1, "0 -> 1 (new)")

    def test_what_is_not_there(self):
        rc, out, err = run(["diff", self.base, self.base, "--fail-if", "tag[nope].allocs>1"])
        self.assertEqual((rc, err), (0, ""))
        self.assertIn("n/a     tag[nope].allocs>1: no tag \"nope\" in %s" % self.base, out)
        old = write(self.tmp.name, "old.json", base())
        for expr, what in (("tag[audio].allocs>1", "tags are not recorded in"),
                           ("thread[main].allocs>1", "threads are not recorded in"),
                           ("budget[total].peak>1", "budgets are not recorded in")):
            rc, out, err = run(["diff", old, self.base, "--fail-if", expr])
            self.assertEqual(rc, 2, expr)
            self.assertEqual(out, "")
            self.assertIn("cannot check %s: %s %s" % (expr, what, old), err)

    def test_bad_selectors(self):
        for expr, what in (("tag[audio].speed>1", "unknown figure speed (per tag: allocs, "),
                           ("thread[].allocs>1", "thread[] names no thread"),
                           ("budget[total].peak_share>90KiB", "peak_share is not a byte figure"),
                           ("class[48].hit_rate<90%", "no class of 48 B"),
                           ("klass[64].hit_rate<90%", "not METRIC OP VALUE")):
            rc, out, err = run(["diff", self.base, self.base, "--fail-if", expr])
            self.assertEqual(rc, 2, expr)
            self.assertEqual(err.count("\n"), 1, err)
            self.assertIn(what, err, expr)

    def test_two_snapshots(self):
        a, b = self.base + "@level_loaded", self.base + "@level_unloaded"
        rc, out, err = run(["diff", a, b, "--fail-if", "peak_bytes<-30%",
                            "--fail-if", "tag[audio].peak_block_bytes>+5%"])
        self.assertEqual(rc, 1, out + err)
        self.assertIn("  base  %s: report_twin, pid 11702, snapshot level_loaded at frame 5\n"
                      % a, out)
        self.assertIn("FAILED  peak_bytes<-30%: 74.0 KiB -> 44.3 KiB (-40.1%)", out)
        self.assertIn("ok      tag[audio].peak_block_bytes>+5%: 68.3 KiB -> 34.1 KiB (-50.0%)",
                      out)
        self.assertIn("\ntag audio                                 base           new      "
                      "change\n  live_block_bytes                  10.0 KiB        5120 B      "
                      "-50.0%\n", out)
        self.assertIn("\n  allocs_per_frame                    165.20         55.07      -66.7%",
                      out)
        rc, out, err = run(["diff", a, b, "--json"])
        self.assertEqual((rc, err), (0, ""))
        d = json.loads(out)
        self.assertEqual((d["base"]["snapshot"], d["new"]["snapshot"]),
                         ("level_loaded", "level_unloaded"))
        audio = [t for t in d["tags"] if t["name"] == "audio"][0]
        self.assertEqual(audio["peak_block_bytes"], {"base": 70000, "new": 35000,
                                                     "change": -35000, "change_percent": -50})
        # a snapshot has no budgets of its own
        rc, out, err = run(["diff", a, b, "--fail-if", "budget[total].peak>1"])
        self.assertEqual(rc, 2)
        self.assertIn("budgets are not recorded in a snapshot", err)

    def test_null_ext_frag_and_hit_rate_are_undefined(self):
        def nulls(doc):
            for c in doc["classes"][3:] + [doc["totals"]]:
                c["external_fragmentation_permille"] = None
            doc["classes"][3]["hit_rate_permille"] = None
        new = self.new(nulls)
        for expr in ("ext_frag>50%", "class[128].ext_frag>50%", "class[128].hit_rate<90%"):
            rc, out, err = run(["diff", self.base, new, "--fail-if", expr])
            self.assertEqual((rc, err), (0, ""), expr)
            self.assertIn("n/a     %s: undefined" % expr, out)


if __name__ == "__main__":
    unittest.main()
