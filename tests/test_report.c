/* SPDX-License-Identifier: MIT */
/* test_report.c — scripts/sizeclass-report as a user meets it, without a
 * browser (make test-report adds the browser): its text form is the
 * library's own, byte for byte, for the same moment of one process; every
 * budget kind passes and fails where it should; files that are not reports
 * get one line and exit status 2; every string of a report is escaped in
 * the page; a report of 100 000 sites renders quickly into a small page;
 * sizeclass-run --html makes the page of a run. Reports come from
 * tests/progs/report_twin (a real process under the preloaded library);
 * tests/report/report_util.py edits them and compares. Runs from the source
 * root, as make test does. */
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "cr_util.h"

static char tmp[256];

static void remove_tmp(void) { cr_tmp_remove(tmp); }

TestSuite(report, .fini = remove_tmp);

static void make_tmp(void) {
  cr_tmp_make(tmp, sizeof(tmp), "report");
  cr_at_source_root("scripts/sizeclass-report");
}

/** The whole file (free it), or NULL. */
static char *slurp(const char *path) { return cu_read_file(path, NULL); }

/* What one run of the tool left: its exit status, stdout and stderr. */
typedef struct {
  int rc;
  char *out, *err;
} tool_t;

/** scripts/sizeclass-report ARGS (a shell fragment) with stdout and stderr apart. */
__attribute__((format(printf, 2, 3))) static void tool(tool_t *t, const char *fmt, ...) {
  char args[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof(args), fmt, ap);
  va_end(ap);
  int rc;
  char *o =
      pr_sh(&rc, 120, "scripts/sizeclass-report %s >'%s/tool.out' 2>'%s/tool.err'", args, tmp, tmp);
  cr_assert_not_null(o, "sizeclass-report %s: did not run or timed out", args);
  free(o);
  char path[512];
  t->rc = rc;
  snprintf(path, sizeof(path), "%s/tool.out", tmp);
  t->out = slurp(path);
  snprintf(path, sizeof(path), "%s/tool.err", tmp);
  t->err = slurp(path);
  cr_assert(t->out != NULL && t->err != NULL);
}

static void tool_free(tool_t *t) {
  free(t->out);
  free(t->err);
}

/** Number of lines of s. */
static unsigned lines(const char *s) {
  unsigned n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

/** report_twin under LD_PRELOAD with the NAME=value entries of env, its
 * reports into tmp/dir. */
static void twin(const char *dir, const char *mode, const char *const env[]) {
  char path[512], prog[512];
  snprintf(path, sizeof(path), "%s/%s", tmp, dir);
  cr_assert_eq(mkdir(path, 0755), 0);
  pr_prog_path(prog, sizeof(prog), "report_twin");
  char *argv[] = {prog, path, (char *)mode, NULL};
  pr_opts_t o = {.preload = true,
                 .drop_sizeclass_env = true,
                 .timeout_s = 60,
                 .env = env,
                 .stderr_path = "/dev/null"};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o), "could not run %s", prog);
  cr_assert_eq(r.exit_code, 0, "report_twin: %s", r.out);
  cr_assert_str_eq(r.out, "done\n");
  free(r.out);
}

/** A real report with everything in it: exact statistics, sites, 17 frames
 * (10 of warm-up), live blocks; tmp/rep/0.a.json. */
static void real_report(void) {
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", "SIZECLASS_SITES=1", "SIZECLASS_WARMUP_FRAMES=10",
                       NULL};
  twin("rep", "frames", env);
}

/** report_util.py ARGS (shell fragment); must succeed; its output. */
#define util_ok(...) sh_ok(300, "python3 tests/report/report_util.py " __VA_ARGS__)

/* ---- the Python tests of the tool (tests/report/test_*.py) -------------------------------- */

/* The package's own tests: schema, text tables against the C ones, the
 * page, diff, snapshots and the command line, on synthetic reports
 * (tests/report/fixtures/). One Criterion test runs them all and shows the
 * failures. */
Test(report, python_unit_tests, .timeout = 600) {
  cr_at_source_root("scripts/sizeclass-report");
  int rc;
  char *out = pr_sh(&rc, 600,
                    "SC_BUILD='%s' python3 -m unittest discover -s tests/report -p 'test_*.py' "
                    "2>&1",
                    pr_build_dir());
  cr_assert_not_null(out, "python3 -m unittest did not run or timed out");
  cr_expect_eq(rc, 0, "%s", out);
  cr_expect_not_null(strstr(out, "\nOK"), "%s", out);
  free(out);
}

/* ---- the text form: the library's, byte for byte ------------------------------------------ */

/** report_twin's five attempts, compared by report_util.py twin. */
static void text_same(const char *mode, const char *const env[]) {
  make_tmp();
  twin("t", mode, env);
  char *out = util_ok("twin '%s/t' scripts/sizeclass-report", tmp);
  cr_expect_eq(strncmp(out, "same ", 5), 0, "%s", out);
  free(out);
}

Test(report, text_is_the_library_text_exact_sites_frames) {
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", "SIZECLASS_SITES=1", "SIZECLASS_WARMUP_FRAMES=10",
                       NULL};
  text_same("frames", env);
}

Test(report, text_is_the_library_text_default_tier) {
  const char *env[] = {"SIZECLASS_WARMUP_FRAMES=3", NULL};
  text_same("frames", env);
}

Test(report, text_is_the_library_text_sampled_sites_no_timeline) {
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", "SIZECLASS_SITES=64", "SIZECLASS_FRAME_HISTORY=0",
                       NULL};
  text_same("frames", env);
}

Test(report, text_is_the_library_text_no_frames) {
  const char *env[] = {"SIZECLASS_SITES=on", NULL};
  text_same("none", env);
}

/* The comparison can fail: one figure changed in the JSON form shows. */
Test(report, text_comparison_sees_a_changed_figure) {
  make_tmp();
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", NULL};
  twin("t", "frames", env);
  for (int n = 0; n < 5; n++)
    free(sh_ok(60,
               "sed -i 's/\"reuse_hits\": 450,/\"reuse_hits\": 451,/' '%s/t/%d.a.json' "
               "'%s/t/%d.b.json'",
               tmp, n, tmp, n));
  int rc;
  char *out = pr_sh(&rc, 120,
                    "python3 tests/report/report_util.py twin '%s/t' "
                    "scripts/sizeclass-report",
                    tmp);
  cr_assert_not_null(out);
  cr_expect_eq(rc, 1, "%s", out);
  cr_expect_not_null(strstr(out,
                            "+    16 B         0        30       480       480         0       "
                            "451"),
                     "%s", out);
  free(out);
}

/* Several reports in one file (signal dumps on stderr): text prints each,
 * html renders the last. */
Test(report, a_file_of_several_reports) {
  make_tmp();
  real_report();
  free(sh_ok(60, "cat '%s/rep/1.a.json' '%s/rep/2.a.json' > '%s/two.json'", tmp, tmp, tmp));
  tool_t t;
  tool(&t, "text '%s/two.json'", tmp);
  cr_assert_eq(t.rc, 0, "%s", t.err);
  unsigned headers = 0;
  for (const char *p = t.out; (p = strstr(p, "== libsizeclass statistics (request) ==")); p++)
    headers++;
  cr_expect_eq(headers, 2);
  tool_free(&t);
  tool(&t, "html '%s/two.json' -o '%s/two.html'", tmp, tmp);
  cr_expect_eq(t.rc, 0, "%s", t.err);
  tool_free(&t);
}

/* ---- files that are not reports ------------------------------------------------------------ */

/** Each command on path: exit 2, nothing on stdout, one line on stderr that
 * names the file and says `what`, and no page written. */
static void refused(const char *path, const char *what) {
  static const char *const cmds[] = {"text '%s'", "html '%s' -o '%s.html'", "diff '%s' '%s'"};
  for (int i = 0; i < 3; i++) {
    tool_t t;
    tool(&t, cmds[i], path, path);
    cr_expect_eq(t.rc, 2, "%s on %s: exit %d", cmds[i], path, t.rc);
    cr_expect_str_empty(t.out, "%s on %s: stdout %s", cmds[i], path, t.out);
    cr_expect_eq(lines(t.err), 1, "%s on %s: one line, not: %s", cmds[i], path, t.err);
    cr_expect_eq(strncmp(t.err, "sizeclass-report: ", 18), 0, "%s", t.err);
    cr_expect_not_null(strstr(t.err, path), "names the file: %s", t.err);
    cr_expect_not_null(strstr(t.err, what), "%s on %s: '%s' in: %s", cmds[i], path, what, t.err);
    tool_free(&t);
  }
  char page[512];
  snprintf(page, sizeof(page), "%s.html", path);
  cr_expect_neq(access(page, F_OK), 0, "no page for %s", path);
}

Test(report, not_a_report_truncated_newer_version) {
  make_tmp();
  real_report();
  char path[512];
  snprintf(path, sizeof(path), "%s/text.txt", tmp);
  free(sh_ok(10, "echo 'hello, world' > '%s'", path));
  refused(path, "not a libsizeclass report");
  snprintf(path, sizeof(path), "%s/other.json", tmp);
  free(sh_ok(10, "echo '{\"schema\": \"something-else\", \"version\": 1}' > '%s'", path));
  refused(path, "not a libsizeclass report");
  snprintf(path, sizeof(path), "%s/plain.json", tmp);
  free(sh_ok(10, "echo '{\"classes\": []}' > '%s'", path));
  refused(path, "not a libsizeclass report");
  snprintf(path, sizeof(path), "%s/empty.json", tmp);
  free(sh_ok(10, ": > '%s'", path));
  refused(path, "empty file");
  /* Cut anywhere: inside a number, a key, a string, between members. */
  static const unsigned cuts[] = {1, 100, 777, 5000, 12345};
  for (unsigned i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
    snprintf(path, sizeof(path), "%s/cut%u.json", tmp, cuts[i]);
    free(sh_ok(10, "head -c %u '%s/rep/0.a.json' > '%s'", cuts[i], tmp, path));
    refused(path, "truncated report");
  }
  snprintf(path, sizeof(path), "%s/v2.json", tmp);
  free(util_ok("set '%s/rep/0.a.json' '%s' version=2", tmp, path));
  refused(path, "report version 2 is newer than this sizeclass-report reads (1)");
  snprintf(path, sizeof(path), "%s/v0.json", tmp);
  free(util_ok("set '%s/rep/0.a.json' '%s' version=0", tmp, path));
  refused(path, "malformed report: version 0");
  snprintf(path, sizeof(path), "%s/bad.json", tmp);
  free(util_ok("set '%s/rep/0.a.json' '%s' 'classes.2.allocs=\"many\"'", tmp, path));
  refused(path, "malformed report: classes[2].allocs is not a count");
  snprintf(path, sizeof(path), "%s/missing.json", tmp);
  refused(path, "No such file or directory");
}

/* ---- escaping ----------------------------------------------------------------------------------
 */

/* A program named <script>, a command line and site names full of markup:
 * the page shows them as text, and its only script is its own. */
Test(report, every_string_is_escaped) {
  make_tmp();
  real_report();
  free(
      util_ok("set '%s/rep/0.a.json' '%s/evil.json' "
              "'process.exe=\"/usr/bin/<script>\"' "
              "'process.cmdline=\"<script>alert(2)</script> --x=\\\"&amp;\\\" <b id=x>\"' "
              "'sites.0.frames.0=\"<img src=x onerror=alert(3)>\"' "
              "'sites.0.function=\"<img src=x onerror=alert(3)>\"' "
              "'sites.0.locations.0=\"/</title><script>alert(4)</script>+0x1\"' "
              "'library_version=\"</style><script>alert(5)</script>\"'",
              tmp, tmp));
  tool_t t;
  tool(&t, "html '%s/evil.json' -o '%s/evil.html'", tmp, tmp);
  cr_assert_eq(t.rc, 0, "%s", t.err);
  tool_free(&t);
  char path[512];
  snprintf(path, sizeof(path), "%s/evil.html", tmp);
  char *page = slurp(path);
  cr_assert_not_null(page);
  cr_expect_null(strstr(page, "<script>alert"), "raw markup from the report");
  cr_expect_null(strstr(page, "<img"), "raw markup from the report");
  cr_expect_null(strstr(page, "<b id=x>"), "raw markup from the report");
  cr_expect_null(strstr(page, "</title><script>"), "raw markup from the report");
  unsigned scripts = 0;
  for (const char *p = page; (p = strstr(p, "<script")); p++) scripts++;
  cr_expect_eq(scripts, 1, "the page's own script only");
  cr_expect_not_null(strstr(page, "<span class=\"mono\">/usr/bin/&lt;script&gt;</span>"),
                     "the program, as text");
  cr_expect_not_null(strstr(page,
                            "&lt;script&gt;alert(2)&lt;/script&gt; --x=&quot;&amp;amp;&quot; "
                            "&lt;b id=x&gt;"),
                     "the command line, as text");
  cr_expect_not_null(strstr(page, "&lt;img src=x onerror=alert(3)&gt;"), "a site, as text");
  cr_expect_not_null(strstr(page, "<title>libsizeclass report \xe2\x80\x94 &lt;script&gt; (pid"),
                     "the page's title names the program, escaped");
  free(page);
}

/* ---- large input -------------------------------------------------------------------------------
 */

/* 100 000 sites (and their folded stacks): rendered, under 5 MB, the tail
 * folded into "other". The CPU bound catches work that grows with the
 * square of the sites (minutes here), not a speed goal: the page takes
 * about 2 s of CPU (docs/stats.md), and a unit test on a shared machine
 * is no place to time it (a 5 s bound failed at 5.02 s under load). */
Test(report, a_hundred_thousand_sites, .timeout = 300) {
  make_tmp();
  real_report();
  free(util_ok("big '%s/rep/0.a.json' '%s/big.json' 100000", tmp, tmp));
  for (int folded = 0; folded < 2; folded++) {
    if (!folded) free(sh_ok(10, "mv '%s/big.json.folded' '%s/big.folded'", tmp, tmp));
    /* The tool's CPU time (the machine may be busy: its wall time is shown). */
    struct rusage r0, r1;
    getrusage(RUSAGE_CHILDREN, &r0);
    double t0 = pr_now();
    tool_t t;
    tool(&t, "html '%s/big.json' -o '%s/big.html'", tmp, tmp);
    double took = pr_now() - t0;
    getrusage(RUSAGE_CHILDREN, &r1);
    double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
                 (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
                 (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) * 1e-6 +
                 (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e-6;
    cr_assert_eq(t.rc, 0, "%s", t.err);
    tool_free(&t);
    cr_expect_lt(cpu, 30.0, "%s: %.2f s of CPU (%.2f s wall)",
                 folded ? "with the folded stacks" : "JSON only", cpu, took);
    char path[512];
    snprintf(path, sizeof(path), "%s/big.html", tmp);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_lt(st.st_size, 5 * 1024 * 1024, "%ld bytes", (long)st.st_size);
    char *page = slurp(path);
    cr_expect_not_null(strstr(page, "more sites</td>"), "the tables fold their tail");
    cr_expect_not_null(strstr(page, "data-n=\"other ("), "the flame graph folds its tail");
    free(page);
    if (!folded) free(sh_ok(10, "mv '%s/big.folded' '%s/big.json.folded'", tmp, tmp));
  }
}

/* ---- the page's sections, and reports without frames or sites ------------------------------- */

Test(report, html_sections_and_what_is_not_recorded) {
  make_tmp();
  real_report();
  const char *env[] = {NULL};
  twin("plain", "none", env);
  tool_t t;
  tool(&t, "html '%s/rep/0.a.json' -o -", tmp);
  cr_assert_eq(t.rc, 0, "%s", t.err);
  static const char *const full[] = {
      "<section id=\"classes\">", "<section id=\"timeline\">", "<section id=\"sites\">",
      "<section id=\"memory\">", "<header id=\"summary\">", "<svg class=\"flame\"",
      "aria-label=\"allocations per frame\"", "aria-label=\"live blocks per class\"",
      "tie_a &lt; main", "a 768 B class would have saved 10.0 KiB",
      /* frame 17 carves 300 blocks after a warm-up of 10 frames */
      "SIZECLASS_FRAME_CHECK would flag them: 17", "<b>exact</b>"};
  for (unsigned i = 0; i < sizeof(full) / sizeof(full[0]); i++)
    cr_expect_not_null(strstr(t.out, full[i]), "missing: %s", full[i]);
  tool_free(&t);
  tool(&t, "html '%s/plain/0.a.json' -o -", tmp);
  cr_assert_eq(t.rc, 0, "%s", t.err);
  static const char *const plain[] = {
      "<section id=\"timeline\"><h2>Frame timeline</h2><p class=\"note\">Not recorded",
      "<section id=\"sites\"><h2>Allocation sites</h2><p class=\"note\">Not recorded",
      "<b>default</b>", "not tracked", "the advisor needs exact statistics"};
  for (unsigned i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
    cr_expect_not_null(strstr(t.out, plain[i]), "missing: %s", plain[i]);
  cr_expect_null(strstr(t.out, "<svg class=\"flame\""));
  tool_free(&t);
}

/* The header shows who ran when the report says it (the process keys, the
 * tier and the features of later libraries), and derives the tier and
 * features when it does not. */
Test(report, html_header_names_the_process) {
  make_tmp();
  real_report();
  free(
      util_ok("set '%s/rep/0.a.json' '%s/named.json' process.ppid=4321 "
              "'process.exe=\"/opt/game/bin/island\"' "
              "'process.cmdline=\"/opt/game/bin/island --level 3\"' "
              "process.start_unix_ms=1764648000000 'tier=\"default\"' "
              "'features=[\"sites\", \"guard\", \"frame_check\"]'",
              tmp, tmp));
  tool_t t;
  tool(&t, "html '%s/named.json' -o -", tmp);
  cr_assert_eq(t.rc, 0, "%s", t.err);
  static const char *const named[] = {"<title>libsizeclass report \xe2\x80\x94 island (pid",
                                      "<h1>libsizeclass report: island</h1>",
                                      "<dd><span class=\"mono\">/opt/game/bin/island</span></dd>",
                                      ("(parent 4\xe2\x80\xaf" /* \xaf ends before 3 */
                                       "321)"),
                                      "<span class=\"mono\">/opt/game/bin/island --level 3</span>",
                                      "<dt>started</dt><dd>2025-12-02 04:00:00 UTC</dd>",
                                      "<dt>tier</dt><dd><b>default</b></dd>",
                                      "<dt>features</dt><dd>sites, guard, frame_check</dd>"};
  for (unsigned i = 0; i < sizeof(named) / sizeof(named[0]); i++)
    cr_expect_not_null(strstr(t.out, named[i]), "missing: %s", named[i]);
  tool_free(&t);
  /* Reports from before these keys: no name; the tier and features from
   * the figures. */
  free(
      util_ok("set '%s/rep/0.a.json' '%s/old.json' -process.ppid -process.exe -process.cmdline "
              "-process.start_unix_ms -tier -features",
              tmp, tmp));
  tool(&t, "html '%s/old.json' -o -", tmp);
  cr_assert_eq(t.rc, 0, "%s", t.err);
  static const char *const derived[] = {
      "<h1>libsizeclass report</h1>", "not named by this report",
      "<dt>tier</dt><dd><b>exact</b> <span class=\"muted\">(from the report's figures)</span>",
      "<dt>features</dt><dd>exact, sites <span class=\"muted\">(seen in the report"};
  for (unsigned i = 0; i < sizeof(derived) / sizeof(derived[0]); i++)
    cr_expect_not_null(strstr(t.out, derived[i]), "missing: %s", derived[i]);
  cr_expect_null(strstr(t.out, "<dt>started</dt>"));
  tool_free(&t);
}

/* sizeclass-run --html runs the program and renders its report. */
Test(report, sizeclass_run_html) {
  make_tmp();
  char prog[512];
  pr_prog_path(prog, sizeof(prog), "report_twin");
  free(sh_ok(10, "mkdir '%s/r'", tmp));
  int rc;
  char *out = pr_sh(&rc, 120,
                    "env -u SIZECLASS_STATS -u SIZECLASS_STATS_FORMAT SIZECLASS_LIB='%s/"
                    "libsizeclass.so' scripts/sizeclass-run --html '%s/run.html' '%s' '%s/r' "
                    "frames",
                    pr_build_dir(), tmp, prog, tmp);
  cr_assert_not_null(out);
  cr_expect_eq(rc, 0, "%s", out);
  cr_expect_not_null(strstr(out, "done\n"), "%s", out);
  free(out);
  char path[512];
  snprintf(path, sizeof(path), "%s/run.html", tmp);
  char *page = slurp(path);
  cr_assert_not_null(page, "no page");
  cr_expect_not_null(strstr(page, "report at exit"), "the exit report of the program");
  cr_expect_not_null(strstr(page,
                            "<section id=\"timeline\"><h2>Frame timeline</h2><p "
                            "class=\"note\">17 frames marked"));
  free(page);
  /* A program that leaves no report (death by a signal): no page, its status. */
  out = pr_sh(&rc, 60,
              "SIZECLASS_LIB='%s/libsizeclass.so' scripts/sizeclass-run --html '%s/none.html' "
              "sh -c 'kill -9 $$'",
              pr_build_dir(), tmp);
  cr_assert_not_null(out);
  cr_expect_eq(rc, 137, "%s", out);
  cr_expect_not_null(strstr(out, "sizeclass-run: no report from sh"), "%s", out);
  free(out);
  snprintf(path, sizeof(path), "%s/none.html", tmp);
  cr_expect_neq(access(path, F_OK), 0);
}

/* ---- diff and budgets --------------------------------------------------------------------------
 */

/** base.json: the real report with round figures where the budgets look:
 * peak bytes 90 000 + 10 000 (system), class 64 peak 100 blocks, hit rate
 * 95.0 %. new.json: base with the assignments given. */
static void pair(const char *assign) {
  free(
      util_ok("set '%s/rep/0.a.json' '%s/base.json' totals.peak_block_bytes=90000 "
              "fallback.peak_live_bytes=10000 classes.2.peak_live_blocks=100 "
              "classes.2.hit_rate_permille=950",
              tmp, tmp));
  free(util_ok("set '%s/base.json' '%s/new.json' %s", tmp, tmp, assign));
}

/** diff base new with the budget: its exit status is want; a failure names
 * the budget on stderr with the two figures. */
static void budget(const char *expr, int want, const char *detail) {
  tool_t t;
  tool(&t, "diff '%s/base.json' '%s/new.json' --fail-if '%s'", tmp, tmp, expr);
  cr_expect_eq(t.rc, want, "%s: exit %d, want %d\n%s%s", expr, t.rc, want, t.out, t.err);
  char line[512];
  snprintf(line, sizeof(line), "%s %s: %s", want ? "FAILED " : "ok     ", expr, detail);
  cr_expect_not_null(strstr(t.out, line), "%s: no line '%s' in:\n%s", expr, line, t.out);
  if (want == 1) {
    snprintf(line, sizeof(line), "sizeclass-report: budget exceeded: %s: %s\n", expr, detail);
    cr_expect_str_eq(t.err, line);
  } else {
    cr_expect_str_empty(t.err);
  }
  tool_free(&t);
}

Test(report, budget_peak_bytes_growth) {
  make_tmp();
  real_report();
  pair("totals.peak_block_bytes=100000"); /* 110 000: +10 % exactly */
  budget("peak_bytes>+10%", 0, "97.6 KiB -> 107.4 KiB (+10.0%)");
  pair("totals.peak_block_bytes=100001");
  budget("peak_bytes>+10%", 1, "97.6 KiB -> 107.4 KiB (+10.0%)");
  pair("totals.peak_block_bytes=85000");
  budget("peak_bytes>+10%", 0, "97.6 KiB -> 92.7 KiB (-5.0%)");
  /* An absolute limit and a change in bytes. */
  budget("peak_bytes>100KiB", 0, "97.6 KiB -> 92.7 KiB (-5.0%)");
  pair("totals.peak_block_bytes=92401"); /* 102 401 B > 100 KiB */
  budget("peak_bytes>100KiB", 1, "97.6 KiB -> 100.0 KiB (+2.4%)");
  budget("peak_bytes>+2KiB", 1, "97.6 KiB -> 100.0 KiB (+2.4%)");
  budget("peak_bytes>+3KiB", 0, "97.6 KiB -> 100.0 KiB (+2.4%)");
}

Test(report, budget_class_peak_blocks_growth) {
  make_tmp();
  real_report();
  pair("classes.2.peak_live_blocks=105");
  budget("class[64].peak_blocks>+5%", 0, "100 -> 105 (+5.0%)");
  pair("classes.2.peak_live_blocks=106");
  budget("class[64].peak_blocks>+5%", 1, "100 -> 106 (+6.0%)");
  /* Another class is another figure. */
  budget("class[32].peak_blocks>+5%", 0, "6 -> 6 (+0.0%)");
  /* From nothing, any growth is infinite (base's class 128 B emptied: the
   * loader's own blocks may land there, e.g. dlopen of libgcc_s for sites). */
  pair("classes.3.peak_live_blocks=1");
  free(util_ok("set '%s/base.json' '%s/base.json' classes.3.peak_live_blocks=0", tmp, tmp));
  budget("class[128].peak_blocks>+1000%", 1, "0 -> 1 (new)");
}

Test(report, budget_class_hit_rate_floor) {
  make_tmp();
  real_report();
  pair("classes.2.hit_rate_permille=900");
  budget("class[64].hit_rate<90%", 0, "95.0% -> 90.0% (-5.0 pp)");
  pair("classes.2.hit_rate_permille=899");
  budget("class[64].hit_rate<90%", 1, "95.0% -> 89.9% (-5.1 pp)");
  /* A drop in percentage points. */
  budget("class[64].hit_rate<-5pp", 1, "95.0% -> 89.9% (-5.1 pp)");
  budget("class[64].hit_rate<-6pp", 0, "95.0% -> 89.9% (-5.1 pp)");
  /* A class without allocations has no hit rate: nothing to check (class
   * 512 B emptied in both: the loader's own blocks may land there, e.g.
   * dlopen of libgcc_s for sites). */
  free(util_ok("set '%s/base.json' '%s/base.json' classes.5.allocs=0", tmp, tmp));
  free(util_ok("set '%s/new.json' '%s/new.json' classes.5.allocs=0", tmp, tmp));
  tool_t t;
  tool(&t, "diff '%s/base.json' '%s/new.json' --fail-if 'class[512].hit_rate<90%%'", tmp, tmp);
  cr_expect_eq(t.rc, 0, "%s%s", t.out, t.err);
  cr_expect_not_null(strstr(t.out, "n/a     class[512].hit_rate<90%: undefined"), "%s", t.out);
  tool_free(&t);
}

/* Budgets from a file and the command line together; the JSON form. */
Test(report, budget_file_and_json) {
  make_tmp();
  real_report();
  pair("classes.2.peak_live_blocks=106 classes.2.hit_rate_permille=899");
  free(sh_ok(10,
             "printf '# memory budget of the game\\npeak_bytes>+10%%%%\\n\\n"
             "class[64].peak_blocks>+5%%%%   # pooled nodes\\n' > '%s/budget.txt'",
             tmp));
  tool_t t;
  tool(&t,
       "diff '%s/base.json' '%s/new.json' --json --budget '%s/budget.txt' "
       "--fail-if 'class[64].hit_rate<90%%'",
       tmp, tmp, tmp);
  cr_expect_eq(t.rc, 1);
  cr_expect_eq(lines(t.err), 2, "two budgets exceeded: %s", t.err);
  cr_expect_not_null(strstr(t.err, "budget exceeded: class[64].peak_blocks>+5%"));
  cr_expect_not_null(strstr(t.err, "budget exceeded: class[64].hit_rate<90%"));
  /* The JSON form: parsed, with its budgets. */
  char path[512];
  snprintf(path, sizeof(path), "%s/diff.json", tmp);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(t.out, f);
  fclose(f);
  tool_free(&t);
  char *out = sh_ok(30,
                    "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
                    "print(d[\"failed\"], [(b[\"metric\"], b[\"ok\"]) for b in d[\"budgets\"]], "
                    "d[\"classes\"][2][\"peak_blocks\"])' '%s'",
                    path);
  cr_expect_str_eq(out,
                   "2 [('peak_bytes', True), ('class[64].peak_blocks', False), "
                   "('class[64].hit_rate', False)] {'base': 100, 'new': 106, 'change': 6, "
                   "'change_percent': 6}\n");
  free(out);
}

/* Budgets that cannot be read or checked: exit 2, one line. */
Test(report, budget_errors) {
  make_tmp();
  real_report();
  pair("classes.2.peak_live_blocks=106");
  static const struct {
    const char *expr, *what;
  } bad[] = {
      {"peak_bytes>10%", "peak_bytes is not a ratio: a change needs a sign"},
      {"class[48].hit_rate<90%", "no class of 48 B"},
      {"class[64].speed>1", "unknown figure speed"},
      {"peak_bytes", "not METRIC OP VALUE"},
      {"hit_rate<90KiB", "hit_rate is not a byte figure"},
      {"peak_blocks<2pp", "pp (percentage points) is for a change of a ratio"},
  };
  for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    tool_t t;
    tool(&t, "diff '%s/base.json' '%s/new.json' --fail-if '%s'", tmp, tmp, bad[i].expr);
    cr_expect_eq(t.rc, 2, "%s: exit %d", bad[i].expr, t.rc);
    cr_expect_eq(lines(t.err), 1, "%s", t.err);
    cr_expect_not_null(strstr(t.err, bad[i].what), "%s: %s", bad[i].expr, t.err);
    cr_expect_str_empty(t.out);
    tool_free(&t);
  }
  /* A default-tier report has no peaks: a budget on them cannot be checked. */
  const char *env[] = {NULL};
  twin("plain", "none", env);
  tool_t t;
  tool(&t, "diff '%s/plain/0.a.json' '%s/plain/1.a.json' --fail-if 'class[64].peak_blocks>+5%%'",
       tmp, tmp);
  cr_expect_eq(t.rc, 2, "%s%s", t.out, t.err);
  cr_expect_not_null(strstr(t.err,
                            "cannot check class[64].peak_blocks>+5%: peak blocks (exact "
                            "statistics) is not tracked in"),
                     "%s", t.err);
  tool_free(&t);
}

/* The comparison itself: per class figures, and the sites that grew. */
Test(report, diff_shows_classes_and_grown_sites) {
  make_tmp();
  real_report();
  free(sh_ok(60,
             "python3 -c \"import json, sys; d = json.load(open(sys.argv[1])); "
             "[s.update(allocs=s['allocs'] + 40) for s in d['sites'] if s['function'] == 'tie_b']; "
             "d['classes'][1]['peak_live_blocks'] = 9; json.dump(d, open(sys.argv[2], 'w'))\" "
             "'%s/rep/0.a.json' '%s/grown.json'",
             tmp, tmp));
  tool_t t;
  tool(&t, "diff '%s/rep/0.a.json' '%s/grown.json'", tmp, tmp);
  cr_assert_eq(t.rc, 0, "%s", t.err);
  cr_expect_not_null(strstr(t.out, "class 32 B"), "%s", t.out);
  cr_expect_not_null(strstr(t.out,
                            "\n  peak_blocks                              6             9      "
                            "+50.0%\n"),
                     "%s", t.out);
  cr_expect_not_null(strstr(t.out, "sites that grew (allocations, most first)"), "%s", t.out);
  cr_expect_not_null(strstr(t.out, "         +40  +1333.3%  32 B    tie_b < main"), "%s", t.out);
  cr_expect_null(strstr(t.out, "tie_a < main"), "tie_a did not grow: %s", t.out);
  tool_free(&t);
}
