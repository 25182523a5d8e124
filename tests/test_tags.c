/* SPDX-License-Identifier: MIT */
/* test_tags.c — tags, threads and budgets (docs/tags.md, issue 27). The
 * helper programs (tests/progs/tags_*.c) link the static library. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cr_util.h"
#include "proc_run.h"

static pr_result_t run(const char *prog, const char *const *args, const char *const *env) {
  char path[512];
  pr_prog_path(path, sizeof(path), prog);
  char *argv[8] = {path};
  for (int i = 0; args != NULL && args[i] != NULL && i < 6; i++) argv[i + 1] = (char *)args[i];
  pr_opts_t o = {.drop_sizeclass_env = true, .env = env, .timeout_s = 60};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o), "%s did not run", prog);
  return r;
}

/** A fresh JSON report file from the template path ("/tmp/NAME_XXXXXX.json",
 * made with mkstemps), and the SIZECLASS_STATS=path that asks for it into
 * stats. */
static void json_report_file(char *path, char *stats, size_t cap) {
  int fd = mkstemps(path, 5);
  cr_assert(fd >= 0, "mkstemps %s", path);
  close(fd);
  snprintf(stats, cap, "SIZECLASS_STATS=%s", path);
}

static unsigned count_of(const char *hay, const char *needle) {
  unsigned n = 0;
  for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle)) n++;
  return n;
}

/* Must hold: three named threads and four tags (nested scopes, remote
 * frees, realloc across classes and 1 KiB, a thread that exits): every
 * tag and thread figure equals the program's own books, and the class
 * table still adds up (the program checks; "ok" or each mismatch). */
Test(tags, figures_match_the_programs_books) {
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", NULL};
  for (int i = 0; i < 3; i++) {
    pr_result_t r = run("tags_exact", NULL, env);
    cr_expect_eq(r.exit_code, 0, "run %d: %s%s", i, r.out, r.err);
    cr_expect_str_eq(r.out, "ok\n");
    free(r.out);
  }
}

/* The same under a report: the JSON holds the tags and threads. */
Test(tags, json_report_has_tags_and_threads) {
  char path[] = "/tmp/sc_tags_XXXXXX.json";
  char stats[600];
  json_report_file(path, stats, sizeof(stats));
  const char *env[] = {stats, "SIZECLASS_STATS_FORMAT=json", NULL};
  pr_result_t r = run("tags_exact", NULL, env);
  cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
  free(r.out);
  char cmd[800];
  snprintf(cmd, sizeof(cmd),
           "python3 -c 'import json,sys; d=json.load(open(\"%s\")); "
           "n={t[\"name\"] for t in d[\"tags\"]}; th={t[\"name\"] for t in d[\"threads\"]}; "
           "sys.exit(0 if {\"audio\",\"physics\",\"ui\",\"net\",\"untagged\"}<=n and "
           "{\"render\",\"mixer\",\"worker\"}<=th and d[\"budgets\"]==[] else 1)'",
           path);
  cr_expect_eq(system(cmd), 0, "the JSON report lacks tags or threads");
  unlink(path);
}

/* abort: the run stops at the allocation that crosses the budget, within
 * the documented bound (one 64 KiB page of the class per thread: 256
 * blocks of 256 B), with the breach line. */
Test(tags, budget_abort_stops_at_the_crossing) {
  const char *env[] = {"SIZECLASS_BUDGET=tag:audio=1MiB", "SIZECLASS_BUDGET_ACTION=abort", NULL};
  const char *args[] = {"8192", "verbose", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 128 + SIGABRT, "%s", r.err);
  cr_expect(strstr(r.err, "sizeclass: budget tag:audio 1.0 MiB exceeded: ") != NULL, "%s", r.err);
  cr_expect(strstr(r.out, "done") == NULL);
  const char *last = r.out, *p;
  while ((p = strstr(last + 1, "at ")) != NULL) last = p;
  int at = atoi(last + 3); /* the allocation that aborted: block index `at` */
  /* 4096 blocks are exactly 1 MiB: the 4097th crosses. */
  cr_expect(at >= 4096 && at <= 4096 + 256, "stopped at block %d", at);
  free(r.out);
}

/* A row that frees and fills again is checked as it fills: 15 000 blocks
 * of 64 B under x, freed, 15 000 under y, 15 000 under x again cross a
 * total of 1 MiB in the third phase (before: the run ended with 1.9 MB
 * live, never stopped: x's row climbed back to its old mark unchecked). */
Test(tags, a_budget_is_checked_as_a_freed_row_fills_again) {
  const char *env[] = {"SIZECLASS_BUDGET=total=1MiB", "SIZECLASS_BUDGET_ACTION=abort", NULL};
  const char *args[] = {"refill", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 128 + SIGABRT, "%s%s", r.out, r.err);
  cr_expect(strstr(r.out, "phase 3") != NULL, "%s", r.out);
  cr_expect(strstr(r.out, "done") == NULL, "%s", r.out);
  /* By a block of x, within two pages (2 x 64 KiB) of the crossing: not
   * later, by the system block of the "done" line's buffer. */
  cr_expect(strstr(r.err, "sizeclass: budget total 1.0 MiB exceeded: 1.") != NULL, "%s", r.err);
  cr_expect(strstr(r.err, "(allocation of 64 B by ") != NULL, "%s", r.err);
  free(r.out);
}

/* Tags switched on when the OS refuses the thread's counters: its frees
 * and mallocs under a tag go on (into the shared sink), with one warning
 * (before: a segfault at the free). */
Test(tags, tags_on_without_room_for_counters_warns_and_carries_on) {
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", NULL};
  const char *args[] = {"no_rows", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
  cr_expect_str_eq(r.out, "ok\n", "%s", r.err);
  cr_expect(strstr(r.err, "sizeclass: tags: the OS refused a thread's tag counters") != NULL, "%s",
            r.err);
  free(r.out);
}

/* fork while another thread registers tags and reads the thread table:
 * each child can register, allocate and read them (before: a child could
 * wait for ever on a lock that the other thread held at the fork). */
Test(tags, a_child_forked_during_registrations_carries_on, .timeout = 120) {
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", NULL};
  const char *args[] = {"fork", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
  cr_expect_str_eq(r.out, "ok\n", "%s", r.err);
  free(r.out);
}

/* A thread whose destructor frees after the library's exit handler
 * borrows an arena for it: it is still one thread (before: each counted
 * twice, "workers 22"), no row without a name stands for the arena it
 * borrowed, and the exited row's frees are blocks, not blocks less bytes
 * (they wrapped below zero). Each worker made 10 blocks of 100 B, kept,
 * and one of 48 B, freed by its destructor. */
Test(tags, a_free_after_the_exit_handler_counts_no_new_thread) {
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", NULL};
  const char *args[] = {"dtor", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
  cr_expect_str_eq(r.out, "workers 11 allocs 121 frees 11 unnamed 0\n", "%s", r.err);
  free(r.out);
}

/* The report's thread table keeps the threads with the most live bytes
 * when there are more than it holds (before: the first 256 met, which left
 * out the main thread and its 2 MiB). */
Test(tags, the_reports_thread_table_keeps_the_largest, .timeout = 60) {
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", NULL};
  const char *args[] = {"many", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 0, "%s", r.err);
  cr_expect(strstr(r.out, "{\"name\": \"bigmain\"") != NULL, "no bigmain row");
  free(r.out);
}

/* Blocks made before tags were on count in their thread and in the total:
 * a thread that held 2 MiB then shows them, and after they are freed, 1.5
 * MiB made again breaches a total of 1 MiB (before: their frees drove the
 * untagged row below zero and hid the new blocks, no breach). */
Test(tags, blocks_made_before_tags_count_in_budgets_and_threads) {
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", "SIZECLASS_BUDGET_ACTION=abort", NULL};
  const char *args[] = {"before", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 128 + SIGABRT, "%s%s", r.out, r.err);
  unsigned long long live = 0;
  const char *m = strstr(r.out, "main live ");
  cr_expect(m != NULL && sscanf(m, "main live %llu", &live) == 1, "%s", r.out);
  cr_expect_geq(live, 2ull << 20, "the main thread's live bytes: %llu", live);
  cr_expect(strstr(r.out, "phase 2") != NULL && strstr(r.out, "done") == NULL, "%s", r.out);
  cr_expect(strstr(r.err, "sizeclass: budget total 1.0 MiB exceeded: 1.") != NULL, "%s", r.err);
  cr_expect(strstr(r.err, "(allocation of 256 B by ") != NULL, "%s", r.err);
  free(r.out);
}

/* In a fork's child, the parent's other threads are ended threads and the
 * child's own row has its own id (before: the worker live, the child's
 * row with the parent's id). */
Test(tags, a_forked_childs_thread_table_is_its_own) {
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", NULL};
  const char *args[] = {"fork_table", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
  cr_expect(strstr(r.out, "worker exited 1 mine 0\n") != NULL, "%s", r.out);
  cr_expect(strstr(r.out, "exited 0 mine 1\n") != NULL, "%s", r.out);
  cr_expect(strstr(r.out, "exited 0 mine 0\n") == NULL, "%s", r.out);
  free(r.out);
}

/* The live snapshot of a program with 64 tagged threads and 40 named
 * snapshots fits (the live form keeps the 32 largest tags and threads and
 * the last 8 named snapshots, the last one's tags and threads): sizeclass-
 * top reads it (before: "the report did not fit in the snapshot (cut
 * short)", exit 1; now about 115 KiB). */
Test(tags, a_crowded_program_still_fits_the_live_snapshot, .timeout = 120) {
  cr_at_source_root("scripts/sizeclass-top");
  char top[1100];
  cr_assert_not_null(getcwd(top, 1000));
  strcat(top, "/scripts/sizeclass-top");
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", "SIZECLASS_LIVE=1", NULL};
  const char *args[] = {"crowd", top, NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
  cr_expect(strstr(r.out, "top rc 0\n") != NULL, "%s%s", r.out, r.err);
  free(r.out);
}

/* SIZECLASS_TAGS: a name past 63 bytes is cut, and a pattern past the
 * 64th left out, each with a warning that says so (before: nothing for
 * the name, "bad pattern" for the 65th). */
Test(tags, rules_past_the_limits_warn_what_they_do) {
  static char var[2048];
  size_t at = (size_t)snprintf(var, sizeof(var), "SIZECLASS_TAGS=");
  for (int i = 0; i < 70; i++) var[at++] = 'n';
  at += (size_t)snprintf(var + at, sizeof(var) - at, "=main");
  for (int i = 0; i < 65; i++)
    at += (size_t)snprintf(var + at, sizeof(var) - at, ";t%d=lib%d*", i, i);
  const char *env[] = {var, NULL};
  const char *args[] = {"1", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 0, "%s", r.err);
  cr_expect(strstr(r.err, "\" is cut to 63 bytes") != NULL, "%s", r.err);
  cr_expect(strstr(r.err, "a pattern of \"t64=lib64*\" is left out: 64 patterns at most") != NULL,
            "%s", r.err);
  cr_expect(strstr(r.err, "bad pattern") == NULL, "%s", r.err);
  free(r.out);
}

/* Must hold (issue 27): an abort for a budget writes the JSON report
 * first: its reason is "abort: budget ...", and its budgets show the
 * breach. 1024 blocks of 256 B (256 KiB) cross 64 KiB. */
Test(tags, budget_abort_writes_the_report_first) {
  char path[] = "/tmp/sc_tagab_XXXXXX.json";
  char stats[600];
  json_report_file(path, stats, sizeof(stats));
  const char *env[] = {"SIZECLASS_BUDGET=tag:audio=64KiB", "SIZECLASS_BUDGET_ACTION=abort", stats,
                       "SIZECLASS_STATS_FORMAT=json", NULL};
  const char *args[] = {"1024", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 128 + SIGABRT, "%s", r.err);
  cr_expect(strstr(r.out, "done") == NULL);
  cr_expect(strstr(r.err, "sizeclass: budget tag:audio 64.0 KiB exceeded: ") != NULL, "%s", r.err);
  free(r.out);
  char cmd[1200];
  snprintf(cmd, sizeof(cmd), "python3 -m json.tool '%s' >/dev/null", path);
  cr_expect_eq(system(cmd), 0, "the report is not JSON");
  snprintf(cmd, sizeof(cmd),
           "python3 -c 'import json,sys; d=json.load(open(\"%s\")); "
           "b=[x for x in d[\"budgets\"] if x[\"what\"]==\"tag:audio\"]; "
           "sys.exit(0 if d[\"reason\"].startswith(\"abort: budget\") and len(b)==1 and "
           "b[0][\"breached\"] is True and b[0][\"limit\"]==65536 and "
           "b[0][\"live\"]>65536 else 1)'",
           path);
  cr_expect_eq(system(cmd), 0, "the report lacks the abort's reason or the breach");
  unlink(path);
}

/* warn: one line, and the program's output is unchanged. */
Test(tags, budget_warn_prints_once) {
  const char *env[] = {"SIZECLASS_BUDGET=tag:audio=1MiB", NULL};
  const char *args[] = {"4200", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 0, "%s", r.err);
  cr_expect_str_eq(r.out, "done\n");
  cr_expect_eq(count_of(r.err, "exceeded"), 1, "%s", r.err);
  free(r.out);
  /* Under the budget: nothing at all. */
  const char *small[] = {"4000", NULL};
  r = run("tags_budget", small, env);
  cr_expect_str_eq(r.out, "done\n");
  cr_expect_str_eq(r.err, "");
  free(r.out);
}

/* Bad SIZECLASS_BUDGET entries: one warning each, naming it; the good one
 * still counts; nothing crashes. */
Test(tags, budget_bad_entries_warn_once_each) {
  const char *env[] = {"SIZECLASS_BUDGET=bogus=3; class:48=1k; total=12zz; tag:audio=1MiB", NULL};
  const char *args[] = {"4200", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 0, "%s", r.err);
  cr_expect_str_eq(r.out, "done\n");
  cr_expect_eq(count_of(r.err, "\"bogus=3\""), 1, "%s", r.err);
  cr_expect_eq(count_of(r.err, "\"class:48=1k\""), 1, "%s", r.err);
  cr_expect_eq(count_of(r.err, "\"total=12zz\""), 1, "%s", r.err);
  cr_expect_eq(count_of(r.err, "exceeded"), 1, "%s", r.err);
  free(r.out);
  /* Only bad entries: no budget, and no feature switched on (no tags counted). */
  const char *bad[] = {"SIZECLASS_BUDGET=total=zz", NULL};
  r = run("tags_budget", args, bad);
  cr_expect_str_eq(r.out, "done\n");
  cr_expect_eq(count_of(r.err, "\"total=zz\""), 1, "%s", r.err);
  cr_expect(strstr(r.err, "tags are not counted") != NULL, "%s", r.err);
  free(r.out);
}

/* Names: empty and 10 000 bytes get one warning each; quotes, newlines
 * and HTML are escaped in the JSON (it parses, the names come back). */
Test(tags, odd_names_warn_and_are_escaped) {
  char path[] = "/tmp/sc_tagn_XXXXXX.json";
  char stats[600];
  json_report_file(path, stats, sizeof(stats));
  const char *env[] = {stats, "SIZECLASS_STATS_FORMAT=json", NULL};
  const char *args[] = {"names", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 0, "%s", r.err);
  cr_expect_eq(count_of(r.err, "empty tag name"), 1, "%s", r.err);
  cr_expect_eq(count_of(r.err, "longer than 63"), 1, "%s", r.err);
  cr_expect_eq(count_of(r.err, "255 tags are registered already"), 1, "%s", r.err);
  cr_expect_str_eq(r.out, "done\n");
  free(r.out);
  char cmd[800];
  snprintf(cmd, sizeof(cmd),
           "python3 -c 'import json,sys; d=json.load(open(\"%s\")); n={t[\"name\"] for t in "
           "d[\"tags\"]}; sys.exit(0 if {\"q\\\"uote\",\"new\\nline\",\"<b>html</b>&amp;\"}<=n "
           "and \"x\"*63 in n and len(d[\"tags\"])==256 else 1)'",
           path);
  cr_expect_eq(system(cmd), 0, "names not escaped in the JSON");
  /* The page escapes them too, and shows the tags' table. */
  cr_at_source_root("scripts/sizeclass-report");
  snprintf(cmd, sizeof(cmd),
           "scripts/sizeclass-report html '%s' -o '%s.html' && grep -q 'id=\"tags\"' '%s.html' "
           "&& grep -q '&lt;b&gt;html&lt;/b&gt;&amp;amp;' '%s.html' && ! grep -q '<b>html' "
           "'%s.html'",
           path, path, path, path, path);
  cr_expect_eq(system(cmd), 0, "the page's tags table is missing or not escaped");
  char page[600];
  snprintf(page, sizeof(page), "%s.html", path);
  unlink(page);
  unlink(path);
}

/* The seeds' object pool: a pool created under a tag, or given one,
 * counts its objects under it. */
Test(tags, pools_count_under_their_tag) {
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", NULL};
  const char *args[] = {"pool", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
  cr_expect_str_eq(r.out, "ok\n");
  free(r.out);
}

/* SC_TAG_SCOPE (C) and sizeclass::tag_scope (C++, objects made with new). */
Test(tags, scope_macro_and_cxx_guard) {
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", NULL};
  const char *args[] = {"scope", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_str_eq(r.out, "ok\n", "%s", r.err);
  free(r.out);
  r = run("tags_cxx", NULL, env);
  cr_expect_str_eq(r.out, "ok\n", "%s", r.err);
  free(r.out);
}

/* SIZECLASS_TAGS: every block a library built by the test makes (malloc,
 * calloc, realloc, strdup, C++ new, above 1 KiB) lands in its tag, the
 * program's own in main's; bad rules warn once each, naming them. */
Test(tags, rules_tag_by_the_callers_library) {
  char path[512];
  pr_prog_path(path, sizeof(path), "tags_rules");
  char *argv[] = {path, NULL};
  const char *env[] = {"SIZECLASS_TAGS=lib=libtagsrules*;=x;noeq;game=main", NULL};
  pr_opts_t o = {.preload = true, .drop_sizeclass_env = true, .env = env, .timeout_s = 60};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o));
  cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
  cr_expect_str_eq(r.out, "ok\n", "%s", r.err);
  cr_expect_eq(count_of(r.err, "\"=x\""), 1, "%s", r.err);
  cr_expect_eq(count_of(r.err, "\"noeq\""), 1, "%s", r.err);
  free(r.out);
}

/* The exit status of `sizeclass-report diff` of report a (snapshot `at`,
 * "@name" or "") against report b with one --fail-if rule, its output
 * thrown away. */
static int report_diff(const char *a, const char *a_at, const char *b, const char *b_at,
                       const char *rule) {
  char cmd[1200];
  snprintf(cmd, sizeof(cmd),
           "scripts/sizeclass-report diff '%s%s' '%s%s' --fail-if '%s' >/dev/null 2>&1", a, a_at, b,
           b_at, rule);
  return system(cmd);
}
/* sizeclass-report diff checks a tag's figure: tag[NAME].METRIC OP VALUE. */
Test(tags, report_diff_fails_on_a_tag_figure) {
  cr_at_source_root("scripts/sizeclass-report");
  char path[] = "/tmp/sc_tagd_XXXXXX.json";
  char stats[600];
  json_report_file(path, stats, sizeof(stats));
  const char *env[] = {stats, "SIZECLASS_STATS_FORMAT=json", NULL};
  pr_result_t r = run("tags_exact", NULL, env);
  cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
  free(r.out);
  cr_expect_eq(report_diff(path, "", path, "", "tag[audio].peak_block_bytes>+5%"), 0,
               "an unchanged tag must pass");
  cr_expect_neq(report_diff(path, "", path, "", "tag[audio].live_blocks>10"), 0,
                "400 live audio blocks are over 10");
  unlink(path);
}

/* sc_budget_set at run time: a thread's and a class's budget, each breach
 * one line; unknown budgets are refused. */
Test(tags, budgets_set_at_run_time) {
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", NULL};
  const char *args[] = {"set", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
  cr_expect_str_eq(r.out, "done\n", "%s", r.err);
  /* The first line, then one more at each doubling of the excess. */
  cr_expect(count_of(r.err, "budget thread:budgeter 256.0 KiB exceeded: ") >= 1, "%s", r.err);
  /* Caught within one 64 KiB page of the class: at 384.x KiB. */
  cr_expect(count_of(r.err, "budget class:256 384.0 KiB exceeded: 384.") == 1, "%s", r.err);
  cr_expect(count_of(r.err, "budget thread:budgeter") <= 6, "%s", r.err);
  free(r.out);
}

/* Named snapshots hold the tags and threads of their moment (issue 28):
 * "a" with 400 live audio blocks of 256 B, "b" after 300 were freed; the
 * report tool's diff checks a tag's figure between them. */
Test(tags, named_snapshots_hold_tags_and_threads) {
  cr_at_source_root("scripts/sizeclass-report");
  char path[] = "/tmp/sc_tagsn_XXXXXX.json";
  char stats[600];
  json_report_file(path, stats, sizeof(stats));
  const char *env[] = {stats, "SIZECLASS_STATS_FORMAT=json", "SIZECLASS_STATS_EXACT=1", NULL};
  const char *args[] = {"snap", NULL};
  pr_result_t r = run("tags_budget", args, env);
  cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
  cr_expect_str_eq(r.out, "done\n", "%s", r.err);
  free(r.out);
  char cmd[1600];
  snprintf(cmd, sizeof(cmd),
           "python3 -c 'import json,sys\n"
           "d=json.load(open(\"%s\")); s=d[\"snapshots\"]\n"
           "def tag(i, n): return [t for t in s[i][\"tags\"] if t[\"name\"]==n][0]\n"
           "def cls(t, z): return [c for c in t[\"classes\"] if c[\"size\"]==z][0]\n"
           "def th(i): return [t for t in s[i][\"threads\"] if t[\"name\"]==\"snapper\"][0]\n"
           "a, b = tag(0, \"audio\"), tag(1, \"audio\")\n"
           "ok = [s[0][\"name\"]==\"a\", s[1][\"name\"]==\"b\",\n"
           " a[\"live_blocks\"]==400, a[\"live_block_bytes\"]==102400, b[\"live_blocks\"]==100,\n"
           " b[\"live_block_bytes\"]==25600, b[\"frees\"]==300, cls(a,256)[\"live_blocks\"]==400,\n"
           " cls(b,256)[\"live_blocks\"]==100, cls(b,256)[\"peak_live_blocks\"]==400,\n"
           " tag(0,\"ui\")[\"live_block_bytes\"]==640, tag(1,\"ui\")[\"live_block_bytes\"]==640,\n"
           " s[0][\"tags\"][0][\"name\"]==\"audio\",\n"
           " th(0)[\"live_block_bytes\"]-th(1)[\"live_block_bytes\"]==300*256]\n"
           "sys.exit(0 if all(ok) else print(ok) or 1)'",
           path);
  cr_expect_eq(system(cmd), 0, "the snapshots' tags or threads are wrong");
  /* a -> b: audio shrank (passes); b -> a: it grew 4x (fails); ui unchanged. */
  cr_expect_eq(report_diff(path, "@a", path, "@b", "tag[audio].live_block_bytes>+5%"), 0,
               "audio shrank from a to b");
  cr_expect_neq(report_diff(path, "@b", path, "@a", "tag[audio].live_block_bytes>+5%"), 0,
                "audio grew 4x from b to a");
  cr_expect_eq(report_diff(path, "@b", path, "@a", "tag[ui].live_block_bytes>+5%"), 0,
               "ui is unchanged");
  unlink(path);
}
