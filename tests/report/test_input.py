# SPDX-License-Identifier: MIT
"""What sizeclass-report reads (issue 26): - for stdin in every command, a
text report refused with what to do, FILE@NAME for a named snapshot, and the
schema check of the newer keys (reason, tags, threads, budgets, snapshots):
absent, null or well-formed is read, anything else refused in one line."""

import os
import tempfile
import unittest

from common import base, fixture, run, write

TEXT_REPORT = ("== libsizeclass statistics (exit) ==\n"
               "pid 1, parent 0: /bin/game\n\nprocess\n  pid                        1\n")


class Input(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.base = write(self.dir, "base.json", base())
        self.full = write(self.dir, "full.json", fixture("full.json"))

    def tearDown(self):
        self.tmp.cleanup()

    def refused(self, path, what):
        """Every command on path: exit 2, one line naming the file and saying what."""
        for args in (["text", path], ["html", path, "-o", path + ".html"],
                     ["diff", path, self.base], ["diff", self.base, path]):
            rc, out, err = run(args)
            self.assertEqual(rc, 2, "%s: %s" % (args, err))
            self.assertEqual(out, "", args)
            self.assertEqual(err.count("\n"), 1, err)
            self.assertTrue(err.startswith("sizeclass-report: "), err)
            self.assertIn(what, err, args)
        self.assertFalse(os.path.exists(path + ".html"))

    def test_a_text_report_is_refused_with_what_to_do(self):
        path = write(self.dir, "report.txt", TEXT_REPORT)
        self.refused(path, path + ": this is a text report; run with "
                     "SIZECLASS_STATS_FORMAT=json")

    def test_a_text_report_on_stdin_too(self):
        rc, out, err = run(["text", "-"], stdin=TEXT_REPORT)
        self.assertEqual(rc, 2)
        self.assertIn("-: this is a text report; run with SIZECLASS_STATS_FORMAT=json", err)

    def test_stdin_in_every_command(self):
        with open(self.base) as f:
            text = f.read()
        rc, want, _ = run(["text", "--no-lines", self.base])
        self.assertEqual(rc, 0)
        rc, out, err = run(["text", "--no-lines", "-"], stdin=text)
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(out, want)
        # html from stdin: the page on stdout (no file name to derive one from)
        rc, out, err = run(["html", "-"], stdin=text)
        self.assertEqual((rc, err), (0, ""))
        self.assertIn('<section id="classes">', out)
        self.assertIn("<span class=\"mono\">stdin</span>", out)
        rc, out, err = run(["diff", "-", self.base, "--fail-if", "peak_bytes>+0%"], stdin=text)
        self.assertEqual((rc, err), (0, ""))
        self.assertIn("base  -: report_twin", out)
        # both from stdin: the same report twice
        rc, out, err = run(["diff", "-", "-"], stdin=text)
        self.assertEqual((rc, err), (0, ""))

    def test_a_snapshot_by_name(self):
        rc, out, err = run(["text", self.full + "@level_loaded"])
        self.assertEqual((rc, err), (0, ""))
        self.assertTrue(out.startswith("== libsizeclass snapshot level_loaded (frame 5, "), out)
        rc, out, err = run(["text", self.full + "@nope"])
        self.assertEqual(rc, 2)
        self.assertIn('no snapshot named "nope" (snapshots: "level_loaded", "level_unloaded")',
                      err)
        rc, out, err = run(["text", self.base + "@level_loaded"])
        self.assertEqual(rc, 2)
        self.assertIn("the report has no snapshots", err)

    def test_a_file_whose_name_holds_an_at(self):
        path = write(self.dir, "run@3.json", base())
        rc, out, err = run(["text", path])
        self.assertEqual((rc, err), (0, ""))
        self.assertTrue(out.startswith("== libsizeclass statistics (request) =="))


class Schema(unittest.TestCase):
    """The newer keys: absent, null or well-formed is read; malformed refused."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def check(self, doc):
        path = write(self.tmp.name, "r.json", doc)
        return run(["text", "--no-lines", path])

    def test_absent_and_null_are_read(self):
        doc = base()
        for k in ("tags", "threads", "budgets", "snapshots"):
            self.assertNotIn(k, doc)
        rc, absent, err = self.check(doc)
        self.assertEqual((rc, err), (0, ""))
        doc.update(tags=None, threads=None, budgets=None, snapshots=[])
        rc, null, err = self.check(doc)
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(absent, null, "null and absent read the same")
        for title in ("\ntags:", "\nthreads:", "\nbudgets:", "\nsnapshots"):
            self.assertNotIn(title, null)

    def test_well_formed_is_read(self):
        rc, out, err = self.check(fixture("full.json"))
        self.assertEqual((rc, err), (0, ""))

    def test_every_failed_reason_is_read(self):
        for reason in ("abort: frame check: fresh carve", "terminated: SIGTERM",
                       "crash: SIGSEGV", "_exit", "exit", "signal"):
            doc = base()
            doc["reason"] = reason
            rc, out, err = self.check(doc)
            self.assertEqual((rc, err), (0, ""))
            self.assertTrue(out.startswith("== libsizeclass statistics (%s) ==\n" % reason))

    def malformed(self, edit, what):
        doc = fixture("full.json")
        edit(doc)
        rc, out, err = self.check(doc)
        self.assertEqual(rc, 2, what)
        self.assertEqual(out, "")
        self.assertEqual(err.count("\n"), 1, err)
        self.assertIn("malformed report: " + what, err)

    def test_malformed_new_keys_are_refused(self):
        def setter(path, value):
            def edit(doc):
                node = doc
                for k in path[:-1]:
                    node = node[k]
                node[path[-1]] = value
            return edit
        cases = (
            (("reason",), 7, "reason is missing"),
            (("tags",), {"audio": 1}, "tags is not a list or null"),
            (("tags", 1), "audio", "tags[1] is not an object"),
            (("tags", 1, "name"), 5, "tags[1].name is not a string"),
            (("tags", 1, "budget"), -1, "tags[1].budget is not a count"),
            (("tags", 1, "peak_block_bytes"), "big", "tags[1].peak_block_bytes is not a count"),
            (("tags", 1, "classes", 0), 3, "tags[1].classes[0] is not an object"),
            (("threads",), "main", "threads is not a list or null"),
            (("threads", 0, "exited"), "no", "threads[0].exited is not true or false"),
            (("threads", 0, "tid"), 1.5, "threads[0].tid is not a count"),
            (("budgets", 1, "breached"), 1, "budgets[1].breached is not true or false"),
            (("budgets", 1, "what"), None, "budgets[1].what is not a string"),
            (("budgets", 1, "first_breach_frame"), "12", "budgets[1].first_breach_frame is not "
             "a count"),
            (("snapshots",), None, None),  # null: read
            (("snapshots", 0, "name"), 3, "snapshots[0].name is not a string"),
            (("snapshots", 0, "classes"), [], "snapshots[0].classes has 0 entries, not 7"),
            (("snapshots", 1, "totals"), None, "snapshots[1].totals is not an object"),
            (("snapshots", 1, "tags", 0, "name"), [], "snapshots[1].tags[0].name is not a "
             "string"),
        )
        for path, value, what in cases:
            with self.subTest(path=path):
                if what is None:
                    doc = fixture("full.json")
                    setter(path, value)(doc)
                    self.assertEqual(self.check(doc)[0], 0)
                    continue
                self.malformed(setter(path, value), what)

    def test_missing_keys_of_a_row(self):
        def drop(doc):
            del doc["threads"][2]["count"]
        self.malformed(drop, "threads[2].count is missing")


if __name__ == "__main__":
    unittest.main()
