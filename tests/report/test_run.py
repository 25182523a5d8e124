# SPDX-License-Identifier: MIT
"""sizeclass-run's options (issue 26): --help describes every option and
exits 0; a --stats value that is no place for the report is refused before
the program runs; --html never writes JSON into a .txt (the combination is
refused)."""

import os
import subprocess
import tempfile
import unittest

from common import ROOT

RUN = os.path.join(ROOT, "scripts", "sizeclass-run")
LIB = os.path.join(os.environ.get("SC_BUILD", ""), "libsizeclass.so")


def sizeclass_run(args, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIZECLASS_")}
    env["SIZECLASS_LIB"] = LIB if os.path.exists(LIB) else "/nonexistent/libsizeclass.so"
    p = subprocess.run([RUN] + args, capture_output=True, text=True, cwd=cwd, env=env,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


class Options(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_help_describes_every_option(self):
        for flag in ("--help", "-h"):
            rc, out, err = sizeclass_run([flag], self.dir)
            self.assertEqual((rc, err), (0, ""), flag)
            self.assertTrue(out.startswith("usage: sizeclass-run "), out)
            for option in ("--stats ", "--stats=WHERE", "--json", "--html FILE", "--children",
                           "--  ", "-h, --help", "SIZECLASS_LIB"):
                self.assertIn("\n  " + option if option.startswith("-") else option, out,
                              "%s is described" % option)

    def test_a_bad_stats_value_is_refused(self):
        for value in ("banana", "", "report", "json", "2"):
            rc, out, err = sizeclass_run(["--stats=" + value, "touch", "ran"], self.dir)
            self.assertEqual(rc, 2, value)
            self.assertEqual(err, "sizeclass-run: --stats=%s: not a place for the report: give "
                             "1, on, stderr, stdout, or a file path (with a /, or ending in .txt "
                             "or .json)\n" % value)
            self.assertFalse(os.path.exists(os.path.join(self.dir, "ran")), "not run")

    def test_html_never_writes_json_into_a_txt(self):
        for value in ("t.txt", "stdout", "stderr", "./report.%p"):
            rc, out, err = sizeclass_run(["--html", "x.html", "--stats=" + value, "touch", "ran"],
                                         self.dir)
            self.assertEqual(rc, 2, value)
            self.assertIn("sizeclass-run: --html needs the JSON report in a file: --stats=%s is "
                          "not a .json file" % value, err)
            self.assertEqual(os.listdir(self.dir), [], "nothing written, nothing run")

    @unittest.skipUnless(os.path.exists(LIB), "needs SC_BUILD/libsizeclass.so")
    def test_good_values_run_the_program(self):
        for args in (["--stats=stdout"], ["--stats=./r.txt"], ["--stats=r.json"],
                     ["--html", "p.html", "--stats=r.%p.json"], ["--stats=on"]):
            rc, out, err = sizeclass_run(args + ["touch", "ran"], self.dir)
            self.assertEqual(rc, 0, "%s: %s" % (args, err))
            self.assertTrue(os.path.exists(os.path.join(self.dir, "ran")), args)
            os.remove(os.path.join(self.dir, "ran"))
        with open(os.path.join(self.dir, "r.txt")) as f:
            self.assertIn("== libsizeclass statistics (exit) ==", f.read())
        self.assertTrue(os.path.exists(os.path.join(self.dir, "p.html")))


if __name__ == "__main__":
    unittest.main()
