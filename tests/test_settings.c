/* SPDX-License-Identifier: MIT */
/* test_settings.c — the one table of settings (src/util/settings.c, issue 19):
 * every documented behaviour works the same whether a setting comes from
 * the environment, the program's sizeclass_options string or
 * sc_option_set(); every bad value of every setting gets one warning in
 * one format and its fallback, and leaves the program's output alone; the
 * report always arrives (closed or reused stderr, stdout after the
 * program's output, a signal that never kills) and says whose it is; the
 * docs agree with the table.
 *
 * tests/progs/settings_prog is the helper (preloaded, and linked with the
 * archive as settings_prog_linked). Its sizeclass_options string is a
 * marker in the binary: options_prog writes a copy with the string wanted
 * in its place. This suite itself links libsizeclass.a, so it reads the
 * table (settings.h) to go through every setting. */
#include <ctype.h>

#include "core_util.h"
#include "util/settings.h"
#include "util/stream.h"
#include "sizeclass.h"
#include "stats_util.h"

/* ---- running the helper ---------------------------------------------------------- */

typedef struct {
  int rc;
  char *out; /* stdout (free it) */
  char *err; /* stderr (free it) */
} run_t;

static char dir[64]; /* this test's temporary directory */

static void fresh_dir(void) { cr_tmp_make(dir, sizeof(dir), "settings"); }

static void remove_dir(void) { cr_tmp_remove(dir); }

TestSuite(settings, .fini = remove_dir);

/** The helper's absolute path (linked: the one with the archive). */
static void helper_path(char *out, size_t cap, bool linked) {
  char rel[512];
  pr_prog_path(rel, sizeof(rel), linked ? "settings_prog_linked" : "settings_prog");
  cr_assert_not_null(realpath(rel, out), "no %s (make test builds it)", rel);
  (void)cap;
}

/** A copy of the helper in dir whose sizeclass_options string is opts
 * (the marker's place in the binary, NUL-padded); its path in out. */
static void options_prog(char *out, size_t cap, bool linked, const char *opts) {
  static const char marker[] = "@@SC_TEST_OPTIONS@@";
  static int copies;
  char src[4096];
  helper_path(src, sizeof(src), linked);
  size_t len;
  char *bin = cu_read_file(src, &len);
  cr_assert_not_null(bin);
  char *at = memmem(bin, len, marker, sizeof(marker) - 1);
  cr_assert_not_null(at, "no options marker in %s", src);
  cr_assert_null(memmem(at + 1, len - (size_t)(at + 1 - bin), marker, sizeof(marker) - 1),
                 "the marker is there once");
  cr_assert_lt(strlen(opts), 511);
  memset(at, 0, 512);
  memcpy(at, opts, strlen(opts));
  snprintf(out, cap, "%s/%s.%d", dir, linked ? "linked" : "preloaded", copies++);
  FILE *f = fopen(out, "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(bin, 1, len, f), len);
  fclose(f);
  cr_assert_eq(chmod(out, 0755), 0);
  free(bin);
}

/** Run argv (preloaded unless `linked`) with env on top of our environment
 * minus SIZECLASS_*, in dir; stdout and stderr to files, read back. */
static void run_argv(run_t *r, bool linked, char *const argv[], const char *const env[]) {
  char out[128], err[128];
  snprintf(out, sizeof(out), "%s/stdout", dir);
  snprintf(err, sizeof(err), "%s/stderr", dir);
  pr_opts_t o = {.preload = !linked,
                 .drop_sizeclass_env = true,
                 .timeout_s = 60,
                 .stdout_path = out,
                 .stderr_path = err,
                 .env = env,
                 .cwd = dir};
  pr_result_t pr;
  cr_assert(pr_run(&pr, argv, &o), "could not run %s", argv[0]);
  free(pr.out);
  cr_assert_not(pr.timed_out, "%s hung", argv[0]);
  r->rc = pr.exit_code;
  r->out = su_read(out);
  r->err = su_read(err);
  cr_assert(r->out != NULL && r->err != NULL);
}

/** Run the helper with sizeclass_options `opts` (NULL: none), env, args. */
static void run(run_t *r, bool linked, const char *opts, const char *const env[],
                const char *const args[]) {
  char prog[4096];
  options_prog(prog, sizeof(prog), linked, opts != NULL ? opts : "");
  char *argv[32] = {prog};
  size_t n = 1;
  for (; args != NULL && args[n - 1] != NULL && n < 31; n++) argv[n] = (char *)args[n - 1];
  argv[n] = NULL;
  run_argv(r, linked, argv, env);
}

static void run_free(run_t *r) {
  free(r->out);
  free(r->err);
}

/** Lines of s that start with "sizeclass:"; the first one in first. */
static int warnings(const char *s, char *first, size_t cap) {
  int n = 0;
  if (first != NULL) first[0] = 0;
  for (const char *p = s; p != NULL && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
    if (strncmp(p, "sizeclass:", 10) != 0) continue;
    if (n++ == 0 && first != NULL) {
      const char *nl = strchr(p, '\n');
      snprintf(first, cap, "%.*s", (int)(nl ? nl - p : (long)strlen(p)), p);
    }
  }
  return n;
}

/** Reports (their header lines) in s. */
static int reports(const char *s, const char *reason) {
  char header[64];
  snprintf(header, sizeof(header), "== libsizeclass statistics (%s) ==", reason);
  int n = 0;
  for (const char *p = strstr(s, header); p != NULL; p = strstr(p + 1, header)) n++;
  return n;
}

#define HELLO "hello from the program\n"
static const char *const print[] = {"print", NULL};

/* ---- every source arms the report the same way -------------------------------------- */

/* The three sources: the environment, sizeclass_options, sc_option_set. */
enum { ENV, OPTIONS, API };
static const char *const source_name[] = {"environment", "sizeclass_options", "sc_option_set"};

/** Run the helper (linked or preloaded) with NAME=VALUE settings given by
 * `source`, then args. */
static void run_from(run_t *r, int source, bool linked, const char *const set[][2], size_t nset,
                     const char *const args[]) {
  const char *env[8] = {NULL};
  char envbuf[8][128], opts[512] = "";
  const char *argv[32];
  size_t na = 0;
  for (size_t i = 0; i < nset; i++) {
    if (source == ENV) {
      snprintf(envbuf[i], sizeof(envbuf[i]), "%s=%s", set[i][0], set[i][1]);
      env[i] = envbuf[i];
    } else if (source == OPTIONS) {
      size_t l = strlen(opts);
      snprintf(opts + l, sizeof(opts) - l, "%s%s=%s", i ? "," : "", set[i][0], set[i][1]);
    } else {
      argv[na++] = "api";
      argv[na++] = set[i][0];
      argv[na++] = set[i][1];
    }
  }
  for (size_t i = 0; args[i] != NULL; i++) argv[na++] = args[i];
  argv[na] = NULL;
  run(r, linked, source == OPTIONS ? opts : NULL, env, argv);
}

Test(settings, stats_1_arms_the_exit_report_from_every_source, .timeout = 120) {
  fresh_dir();
  const char *const set[][2] = {{"SIZECLASS_STATS", "1"}};
  for (int linked = 0; linked < 2; linked++)
    for (int src = ENV; src <= API; src++) {
      run_t r;
      run_from(&r, src, linked, set, 1, print);
      const char *how = source_name[src];
      cr_expect_eq(r.rc, 0, "%s", how);
      cr_expect(strstr(r.out, HELLO) != NULL, "%s: %s", how, r.out);
      cr_expect_eq(reports(r.err, "exit"), 1, "%s (%s): %s", how, linked ? "linked" : "preloaded",
                   r.err);
      cr_expect_not_null(strstr(r.err, "statistics: exact tier; features on: exact\n"), "%s: %s",
                         how, r.err);
      cr_expect_eq(warnings(r.err, NULL, 0), 0, "%s: %s", how, r.err);
      run_free(&r);
    }
}

Test(settings, stats_and_sites_report_with_sites_from_every_source, .timeout = 120) {
  fresh_dir();
  const char *const set[][2] = {{"SIZECLASS_STATS", "1"}, {"SIZECLASS_SITES", "1"}};
  for (int linked = 0; linked < 2; linked++)
    for (int src = ENV; src <= API; src++) {
      run_t r;
      run_from(&r, src, linked, set, 2, print);
      const char *how = source_name[src];
      cr_expect_eq(r.rc, 0, "%s", how);
      cr_expect_eq(reports(r.err, "exit"), 1, "%s: %s", how, r.err);
      cr_expect_not_null(strstr(r.err, "features on: exact, sites\n"), "%s: %s", how, r.err);
      cr_expect_not_null(strstr(r.err, "\nsites: "), "%s: no sites section: %s", how, r.err);
      run_free(&r);
    }
}

Test(settings, a_report_signal_reports_and_never_kills, .timeout = 120) {
  fresh_dir();
  const char *const set[][2] = {{"SIZECLASS_STATS_SIGNAL", "USR2"}};
  const char *const args[] = {"raise", "USR2", NULL};
  for (int linked = 0; linked < 2; linked++)
    for (int src = ENV; src <= API; src++) {
      run_t r;
      run_from(&r, src, linked, set, 1, args);
      const char *how = source_name[src];
      cr_expect_eq(r.rc, 0, "%s: killed? exit %d", how, r.rc);
      cr_expect_not_null(strstr(r.out, "survived\n"), "%s: %s", how, r.out);
      cr_expect_eq(reports(r.err, "signal"), 1, "%s: %s", how, r.err);
      cr_expect_eq(reports(r.err, "exit"), 0, "%s: signal only, no exit report: %s", how, r.err);
      run_free(&r);
    }
}

/* Through sc_option_set, a feature switches on before the first small
 * allocation; the report settings work at any time; SYSTEM_TRIM never. */
Test(settings, sc_option_set_says_when_it_is_too_late, .timeout = 60) {
  fresh_dir();
  const char *const args[] = {"api",
                              "SIZECLASS_CHECK",
                              "1",
                              "api",
                              "SIZECLASS_SYSTEM_TRIM",
                              "glibc",
                              "api",
                              "SIZECLASS_NOPE",
                              "1",
                              "api",
                              "SIZECLASS_GUARD",
                              "often",
                              "print",
                              NULL};
  run_t r;
  const char *const env[] = {"SIZECLASS_STATS=1", NULL};
  run(&r, true, NULL, env, args);
  cr_expect_eq(r.rc, 0);
  cr_expect_str_eq(r.out,
                   "set SIZECLASS_CHECK=1\n"
                   "set SIZECLASS_SYSTEM_TRIM=0 errno=EBUSY\n"
                   "set SIZECLASS_NOPE=0 errno=EINVAL\n"
                   "set SIZECLASS_GUARD=0 errno=EINVAL\n" HELLO);
  cr_expect_not_null(strstr(r.err, "features on: exact, check\n"), "%s", r.err);
  cr_expect_eq(warnings(r.err, NULL, 0), 2, "the unknown name and the bad value: %s", r.err);
  run_free(&r);
}

/* A bad number's fallback, seen from outside: SIZECLASS_WARMUP_FRAMES
 * falls back to 60 warm-up frames (a good value is taken as given). */
Test(settings, a_bad_warmup_count_means_the_default_warmup, .timeout = 60) {
  fresh_dir();
  char json[128], stats[160];
  snprintf(json, sizeof(json), "%s/w.json", dir);
  snprintf(stats, sizeof(stats), "SIZECLASS_STATS=%s", json);
  static const struct {
    const char *var;
    uint64_t warmup;
  } cases[] = {{"SIZECLASS_WARMUP_FRAMES=banana", 60}, {"SIZECLASS_WARMUP_FRAMES=5", 5}};
  const char *const args[] = {"frames", "70", NULL};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const char *env[] = {cases[i].var, stats, NULL};
    run_t r;
    run(&r, false, NULL, env, args);
    cr_expect_eq(r.rc, 0, "%s: %s", cases[i].var, r.err);
    su_json_t j;
    su_json_load(&j, json, "one");
    cr_expect_eq(su_ju(&j, "0.frames.frames"), 70);
    cr_expect_eq(su_ju(&j, "0.frames.warmup_frames"), cases[i].warmup, "%s", cases[i].var);
    su_json_free(&j);
    run_free(&r);
  }
}

/* ---- the report always arrives --------------------------------------------------------- */

Test(settings, the_report_survives_a_closed_stderr, .timeout = 60) {
  fresh_dir();
  const char *const env[] = {"SIZECLASS_STATS=1", NULL};
  const char *const args[] = {"close-stderr", NULL};
  for (int linked = 0; linked < 2; linked++) {
    run_t r;
    run(&r, linked, NULL, env, args);
    cr_expect_eq(r.rc, 0);
    cr_expect_str_eq(r.out, HELLO);
    cr_expect_eq(reports(r.err, "exit"), 1, "%s", r.err);
    run_free(&r);
  }
}

/* coreutils close stdout and stderr at exit (close_stdout). */
Test(settings, the_report_survives_coreutils, .timeout = 60) {
  fresh_dir();
  const char *const env[] = {"SIZECLASS_STATS=1", NULL};
  char *argv[] = {"ls", "/", NULL};
  run_t r;
  run_argv(&r, false, argv, env);
  cr_expect_eq(r.rc, 0);
  cr_expect_not_null(strstr(r.out, "\nusr\n"), "%s", r.out);
  cr_expect_eq(reports(r.err, "exit"), 1, "%s", r.err);
  cr_expect_not_null(strstr(r.err, "command line: ls /\n"), "%s", r.err);
  run_free(&r);
}

/* A program that reuses fd 2 for a file of its own: the report goes where
 * stderr was, never into the program's file. */
Test(settings, a_reused_fd_2_does_not_get_the_report, .timeout = 60) {
  fresh_dir();
  char data[128];
  snprintf(data, sizeof(data), "%s/data", dir);
  const char *const env[] = {"SIZECLASS_STATS=1", NULL};
  const char *const args[] = {"reuse-stderr", data, NULL};
  for (int linked = 0; linked < 2; linked++) {
    run_t r;
    run(&r, linked, NULL, env, args);
    cr_expect_eq(r.rc, 0);
    char *d = su_read(data);
    cr_assert_not_null(d);
    cr_expect_str_eq(d, "data\n", "the program's file holds only its data");
    cr_expect_eq(reports(r.err, "exit"), 1, "%s", r.err);
    free(d);
    run_free(&r);
  }
}

/* The same for a report to stdout: a program that closes stdout, or
 * reuses fd 1 for a file of its own, still gets it where stdout was. */
Test(settings, a_report_to_stdout_survives_a_closed_or_reused_fd_1, .timeout = 60) {
  fresh_dir();
  char data[128];
  snprintf(data, sizeof(data), "%s/data", dir);
  const char *const env[] = {"SIZECLASS_STATS=stdout", NULL};
  const char *const closed[] = {"close-stdout", NULL};
  const char *const reused[] = {"reuse-stdout", data, NULL};
  for (int linked = 0; linked < 2; linked++) {
    run_t r;
    run(&r, linked, NULL, env, closed);
    cr_expect_eq(r.rc, 0, "%s", r.err);
    cr_expect(strncmp(r.out, HELLO, strlen(HELLO)) == 0, "the program's output first: %s", r.out);
    cr_expect_eq(reports(r.out, "exit"), 1, "%s", r.out);
    run_free(&r);
    run(&r, linked, NULL, env, reused);
    cr_expect_eq(r.rc, 0, "%s", r.err);
    char *d = su_read(data);
    cr_assert_not_null(d);
    cr_expect_str_eq(d, "data\n", "the program's file holds only its data");
    cr_expect_eq(reports(r.out, "exit"), 1, "%s", r.out);
    free(d);
    run_free(&r);
  }
}

/** s starts with `first` and then holds one JSON report that parses. */
static void expect_output_then_json(const char *s, const char *first) {
  cr_assert(strncmp(s, first, strlen(first)) == 0, "the program's output first: %s", s);
  const char *json = s + strlen(first);
  cr_assert_eq(json[0], '{', "then the report: %s", s);
  su_json_t j;
  su_json_load_text(&j, dir, "report.json", json);
  cr_expect_str_eq(su_jraw(&j, "0.schema"), "\"libsizeclass-stats\"");
  su_json_free(&j);
}

Test(settings, a_report_on_stdout_comes_after_the_programs_output, .timeout = 60) {
  fresh_dir();
  const char *const env[] = {"SIZECLASS_STATS=stdout", "SIZECLASS_STATS_FORMAT=json", NULL};
  for (int linked = 0; linked < 2; linked++) {
    run_t r;
    run(&r, linked, NULL, env, print);
    cr_expect_eq(r.rc, 0);
    expect_output_then_json(r.out, HELLO);
    cr_expect_str_eq(r.err, "");
    run_free(&r);
  }
  /* The issue's case: sqlite3 buffers its output until exit. */
  char *argv[] = {"sqlite3", ":memory:", "select 1", NULL};
  run_t r;
  run_argv(&r, false, argv, env);
  cr_assert_eq(r.rc, 0, "sqlite3: %s", r.err);
  expect_output_then_json(r.out, "1\n");
  run_free(&r);
}

/* ---- every bad value: one warning, the fallback, the output unchanged ---------------- */

/* Values no setting of a kind takes (numbers: also each range's ends). */
static size_t bad_values(const sc_setting_t *s, char out[][48], size_t max) {
  static const char *const common[] = {"banana", " ", "1 ", "-1", "99999999999999999999"};
  size_t n = 0;
  for (size_t i = 0; i < sizeof(common) / sizeof(common[0]) && n < max; i++)
    snprintf(out[n++], 48, "%s", common[i]);
  switch (s->kind) {
    case SC_KIND_SWITCH:
      snprintf(out[n++], 48, "2");
      snprintf(out[n++], 48, "enabled");
      break;
    case SC_KIND_NUMBER:
      snprintf(out[n++], 48, "%" PRIu64, s->max + 1);
      /* below the range (0 is "off" where on/off words are taken) */
      if (s->min > 0 && (s->flags & SC_SETF_SWITCH_WORDS) == 0)
        snprintf(out[n++], 48, "%" PRIu64, s->min - 1);
      snprintf(out[n++], 48, "5x");
      snprintf(out[n++], 48, "+5");
      break;
    case SC_KIND_PATH:
      if ((s->flags & SC_SETF_STRICT_PATH) == 0) return 0; /* any text is a path */
      snprintf(out[n++], 48, "2");
      snprintf(out[n++], 48, "json");
      break;
    case SC_KIND_SIGNAL:
      snprintf(out[n++], 48, "NOPE");
      snprintf(out[n++], 48, "KILL");
      snprintf(out[n++], 48, "SEGV");
      snprintf(out[n++], 48, "99");
      snprintf(out[n++], 48, "0");
      snprintf(out[n++], 48, "RTMIN+100");
      snprintf(out[n++], 48, "INT");
      snprintf(out[n++], 48, "sigchld");
      snprintf(out[n++], 48, "2");
      break;
    case SC_KIND_ENUM:
      snprintf(out[n++], 48, "2");
      break;
  }
  return n;
}

/** The warning the docs promise for value v of s. */
static void expected_warning(const sc_setting_t *s, const char *v, char *out, size_t cap) {
  char expect[320];
  sc__setting_expect(s, expect, sizeof(expect));
  snprintf(out, cap, "sizeclass: %s=\"%s\": expected %s; %s", s->name, v, expect, s->instead);
}

/** True when line is the warning the docs promise for value v of s: the
 * table's line, or for a signal the report refuses, "SIGINT is refused
 * (why): " before the table's "expected ...". */
static bool is_expected_warning(const sc_setting_t *s, const char *v, const char *line) {
  char want[1400], head[256], expect[320], tail[640];
  expected_warning(s, v, want, sizeof(want));
  if (strcmp(line, want) == 0) return true;
  if (s->kind != SC_KIND_SIGNAL) return false;
  snprintf(head, sizeof(head), "sizeclass: %s=\"%s\": ", s->name, v);
  sc__setting_expect(s, expect, sizeof(expect));
  snprintf(tail, sizeof(tail), "): expected %s; %s", expect, s->instead);
  size_t n = strlen(line), k = strlen(tail);
  return strncmp(line, head, strlen(head)) == 0 && n > k && strcmp(line + n - k, tail) == 0 &&
         strstr(line, "refused (") != NULL;
}

/** Run sc__setting_store(id, v) with stderr captured into buf. */
static sc_setting_state_t store_capturing(sc_setting_id_t id, const char *v, char *buf,
                                          size_t cap) {
  char path[] = "/tmp/sc_settings_err_XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  unlink(path);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  sc__stream_rebind(2); /* the library writes only to the stderr it knows */
  sc_setting_state_t st = sc__setting_store(id, v);
  dup2(saved, 2);
  close(saved);
  sc__stream_rebind(2);
  ssize_t n = pread(fd, buf, cap - 1, 0);
  close(fd);
  buf[n > 0 ? n : 0] = 0;
  return st;
}

/* The reader, in this process, for every setting: each bad value gets one
 * line, the fallback, and the state BAD; good values and empty ones none. */
Test(settings, the_reader_refuses_every_bad_value_with_one_line_and_the_fallback) {
  unsigned checked = 0;
  for (unsigned i = 0; i < SC_SETTINGS; i++) {
    const sc_setting_t *s = &sc__settings[i];
    char bad[16][48], err[1400], want[1400];
    size_t n = bad_values(s, bad, 16);
    for (size_t k = 0; k < n; k++) {
      sc_setting_state_t st = store_capturing((sc_setting_id_t)i, bad[k], err, sizeof(err));
      cr_expect_eq(st, SC_SETTING_BAD, "%s=\"%s\" taken", s->name, bad[k]);
      cr_expect_eq(sc__setting((sc_setting_id_t)i), s->fallback, "%s=\"%s\": not the fallback",
                   s->name, bad[k]);
      char line[1400];
      cr_expect_eq(warnings(err, line, sizeof(line)), 1, "%s=\"%s\": %s", s->name, bad[k], err);
      expected_warning(s, bad[k], want, sizeof(want));
      cr_expect(is_expected_warning(s, bad[k], line), "%s\nnot\n%s", line, want);
      checked++;
    }
    /* Empty means unset: the default, silently. */
    cr_expect_eq(store_capturing((sc_setting_id_t)i, "", err, sizeof(err)), SC_SETTING_UNSET);
    cr_expect_str_eq(err, "", "%s=\"\"", s->name);
    cr_expect_eq(sc__setting((sc_setting_id_t)i), s->def);
  }
  cr_assert_geq(checked, 100, "bad values tried: %u", checked);
}

/* The warnings read as the issue asks, word for word (not derived from the
 * table), and numbers are plain decimals. */
Test(settings, warnings_read_as_documented) {
  static const struct {
    sc_setting_id_t id;
    const char *value, *line;
  } cases[] = {
      {SC_SET_CHECK, "banana",
       "sizeclass: SIZECLASS_CHECK=\"banana\": expected on/off (1, 0, yes, no, true, false); "
       "checking mode stays off\n"},
      {SC_SET_STATS, "banana",
       "sizeclass: SIZECLASS_STATS=\"banana\": expected 1, on, stderr, stdout, 0, off or a file "
       "path (with a /, or ending in .txt or .json); the report goes to stderr\n"},
      {SC_SET_GUARD_SLOTS, "70000",
       "sizeclass: SIZECLASS_GUARD_SLOTS=\"70000\": expected a number from 1 to 65536; using "
       "256\n"},
      {SC_SET_GUARD, "7x",
       "sizeclass: SIZECLASS_GUARD=\"7x\": expected on, off or a number from 1 to 1000000000; "
       "guard pages stay off\n"},
      {SC_SET_WARMUP_FRAMES, "ten",
       "sizeclass: SIZECLASS_WARMUP_FRAMES=\"ten\": expected a number from 0 to 1000000000; "
       "using 60\n"},
      {SC_SET_CHECK_QUARANTINE, "lots",
       "sizeclass: SIZECLASS_CHECK_QUARANTINE=\"lots\": expected a number from 0 to 1048576; no "
       "quarantine\n"},
      {SC_SET_SYSTEM_TRIM, "sometimes",
       "sizeclass: SIZECLASS_SYSTEM_TRIM=\"sometimes\": expected paced or glibc; using paced\n"},
      {SC_SET_FRAME_CHECK, "loud",
       "sizeclass: SIZECLASS_FRAME_CHECK=\"loud\": expected warn, abort, on (warn: 1, yes, "
       "true) or off (0, no, false); the check stays off\n"},
      /* Alone it arms no report: it must not say that one goes to stderr. */
      {SC_SET_STATS_FORMAT, "banana",
       "sizeclass: SIZECLASS_STATS_FORMAT=\"banana\": expected text or json; a report, when one "
       "is asked for, is text on stderr\n"},
      {SC_SET_STATS_SIGNAL, "banana",
       "sizeclass: SIZECLASS_STATS_SIGNAL=\"banana\": expected USR1, USR2 or a real-time signal "
       "(RTMIN, RTMIN+n, RTMAX-n), with or without SIG, or its number; no report on a signal, "
       "and nothing switched on\n"},
      {SC_SET_STATS_SIGNAL, "INT",
       "sizeclass: SIZECLASS_STATS_SIGNAL=\"INT\": SIGINT is refused (Ctrl-C must still stop "
       "the program): expected USR1, USR2 or a real-time signal (RTMIN, RTMIN+n, RTMAX-n), with "
       "or without SIG, or its number; no report on a signal, and nothing switched on\n"},
      {SC_SET_STATS_SIGNAL, "17",
       "sizeclass: SIZECLASS_STATS_SIGNAL=\"17\": SIGCHLD is refused (waiting for child "
       "processes relies on it): expected USR1, USR2 or a real-time signal (RTMIN, RTMIN+n, "
       "RTMAX-n), with or without SIG, or its number; no report on a signal, and nothing "
       "switched on\n"},
      /* No suffix whose every value is over the maximum (g was one). */
      {SC_SET_SITES, "1g",
       "sizeclass: SIZECLASS_SITES=\"1g\": expected on, off, 1 or a byte count from 2 to 128m "
       "(k, m: KiB, MiB); sites stay off\n"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char err[1024];
    store_capturing(cases[i].id, cases[i].value, err, sizeof(err));
    cr_expect_str_eq(err, cases[i].line);
  }
  /* No "1000u" anywhere: every expectation in plain decimals. */
  for (unsigned i = 0; i < SC_SETTINGS; i++) {
    char expect[320];
    sc__setting_expect(&sc__settings[i], expect, sizeof(expect));
    for (const char *p = expect; *p; p++)
      cr_expect(!(p[0] >= '0' && p[0] <= '9' && (p[1] == 'u' || p[1] == 'U')), "%s: %s",
                sc__settings[i].name, expect);
  }
}

/* SIZECLASS_FRAME_CHECK takes the on/off words every switch takes: on
 * means warn; abort only by name. */
Test(settings, frame_check_takes_the_on_and_off_words) {
  static const char *const on[] = {"1", "on", "ON", "yes", "true", "warn"};
  static const char *const off[] = {"0", "off", "no", "False"};
  char err[1024];
  for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
    cr_expect_eq(store_capturing(SC_SET_FRAME_CHECK, on[i], err, sizeof(err)), SC_SETTING_GIVEN,
                 "%s: %s", on[i], err);
    cr_expect_eq(sc__setting(SC_SET_FRAME_CHECK), SC_FRAME_CHECK_WARN, "%s", on[i]);
    cr_expect_str_eq(err, "");
  }
  for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
    cr_expect_eq(store_capturing(SC_SET_FRAME_CHECK, off[i], err, sizeof(err)), SC_SETTING_GIVEN,
                 "%s: %s", off[i], err);
    cr_expect_eq(sc__setting(SC_SET_FRAME_CHECK), SC_FRAME_CHECK_OFF, "%s", off[i]);
    cr_expect_str_eq(err, "");
  }
  cr_expect_eq(store_capturing(SC_SET_FRAME_CHECK, "abort", err, sizeof(err)), SC_SETTING_GIVEN);
  cr_expect_eq(sc__setting(SC_SET_FRAME_CHECK), SC_FRAME_CHECK_ABORT);
  cr_expect_eq(store_capturing(SC_SET_FRAME_CHECK, "2", err, sizeof(err)), SC_SETTING_BAD);
  store_capturing(SC_SET_FRAME_CHECK, "", err, sizeof(err));
}

/* SIZECLASS_SITES takes k and m; g is refused (1g is over 128m). */
Test(settings, sites_byte_suffixes_are_k_and_m) {
  char err[1024];
  cr_expect_eq(store_capturing(SC_SET_SITES, "64k", err, sizeof(err)), SC_SETTING_GIVEN);
  cr_expect_eq(sc__setting(SC_SET_SITES), 64 << 10);
  cr_expect_eq(store_capturing(SC_SET_SITES, "128M", err, sizeof(err)), SC_SETTING_GIVEN);
  cr_expect_eq(sc__setting(SC_SET_SITES), SC_SITES_MAX_RATE);
  cr_expect_eq(store_capturing(SC_SET_SITES, "0g", err, sizeof(err)), SC_SETTING_BAD);
  char expect[320];
  sc__setting_expect(&sc__settings[SC_SET_SITES], expect, sizeof(expect));
  cr_expect_null(strstr(expect, "GiB"), "%s", expect);
  cr_expect_null(strstr(expect, " g"), "%s", expect);
  store_capturing(SC_SET_SITES, "", err, sizeof(err));
}

/* A signal that is no signal or that the program, its shell or its
 * terminal relies on arms nothing: no exact statistics, no report at exit
 * or on the signal; one warning. */
Test(settings, a_bad_or_reserved_report_signal_arms_nothing, .timeout = 120) {
  fresh_dir();
  static const char *const bad[] = {"banana", "KILL", "SEGV", "RTMIN+100", "0",
                                    "INT",    "CHLD", "TSTP", "SIGWINCH",  "PIPE"};
  const char *const tracked[] = {"tracked", NULL};
  for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
    char var[64], line[1400];
    snprintf(var, sizeof(var), "SIZECLASS_STATS_SIGNAL=%s", bad[k]);
    const char *env[] = {var, NULL};
    run_t r;
    run(&r, false, NULL, env, tracked);
    cr_expect_eq(r.rc, 0, "%s", var);
    cr_expect_str_eq(r.out, "tracked counts\n", "%s switched exact statistics on", var);
    cr_expect_eq(warnings(r.err, line, sizeof(line)), 1, "%s: %s", var, r.err);
    cr_expect_not_null(strstr(line, "; no report on a signal, and nothing switched on"), "%s",
                       line);
    cr_expect_eq(reports(r.err, "exit") + reports(r.err, "signal"), 0, "%s: %s", var, r.err);
    run_free(&r);
  }
  /* The good ones arm the signal and exact statistics. */
  static const char *const good[] = {"USR1", "SIGUSR2", "RTMIN", "RTMIN+3", "rtmax-2"};
  for (size_t k = 0; k < sizeof(good) / sizeof(good[0]); k++) {
    char var[64];
    snprintf(var, sizeof(var), "SIZECLASS_STATS_SIGNAL=%s", good[k]);
    const char *env[] = {var, NULL};
    run_t r;
    run(&r, false, NULL, env, tracked);
    cr_expect_str_eq(r.out, "tracked exact\n", "%s", var);
    cr_expect_eq(warnings(r.err, NULL, 0), 0, "%s: %s", var, r.err);
    run_free(&r);
  }
}

/* Refused, SIGINT still stops the program (Ctrl-C) and SIGCHLD is left to
 * the program: no report on either. */
Test(settings, a_refused_signal_keeps_its_meaning, .timeout = 60) {
  fresh_dir();
  const char *const env_int[] = {"SIZECLASS_STATS_SIGNAL=INT", NULL};
  const char *const raise_int[] = {"raise", "INT", NULL};
  run_t r;
  run(&r, false, NULL, env_int, raise_int);
  cr_expect_eq(r.rc, 128 + SIGINT, "SIGINT must still stop it: exit %d", r.rc);
  cr_expect_null(strstr(r.out, "survived"));
  cr_expect_eq(reports(r.err, "signal"), 0, "%s", r.err);
  run_free(&r);
  const char *const env_chld[] = {"SIZECLASS_STATS_SIGNAL=CHLD", NULL};
  const char *const raise_chld[] = {"raise", "CHLD", NULL};
  run(&r, true, NULL, env_chld, raise_chld);
  cr_expect_eq(r.rc, 0);
  cr_expect_str_eq(r.out, "survived\n");
  cr_expect_eq(reports(r.err, "signal") + reports(r.err, "exit"), 0, "%s", r.err);
  run_free(&r);
}

/* "=1" in sizeclass_options names no setting: the word is ignored with
 * "expected SETTING=value", not an "unknown setting" guess. */
Test(settings, an_empty_name_in_the_options_string_is_said_plainly, .timeout = 60) {
  fresh_dir();
  run_t r;
  char line[1400];
  run(&r, false, "=1", NULL, print);
  cr_expect_str_eq(r.out, HELLO);
  cr_expect_eq(warnings(r.err, line, sizeof(line)), 1, "%s", r.err);
  cr_expect_str_eq(line,
                   "sizeclass: sizeclass_options=\"=1\": expected SETTING=value (no setting "
                   "named); the word is ignored");
  cr_expect_null(strstr(r.err, "did you mean"), "%s", r.err);
  run_free(&r);
}

/* Each bad value in a real run: one warning, the program's output as it
 * was, and what the fallback means seen from outside (a feature stays
 * off, the report goes to stderr, no file is written). */
Test(settings, bad_values_in_a_run_warn_once_and_change_nothing_else, .timeout = 300) {
  fresh_dir();
  char json[128], stats[160];
  snprintf(json, sizeof(json), "%s/r.json", dir);
  snprintf(stats, sizeof(stats), "SIZECLASS_STATS=%s", json);
  for (unsigned i = 0; i < SC_SETTINGS; i++) {
    const sc_setting_t *s = &sc__settings[i];
    char bad[16][48];
    size_t n = bad_values(s, bad, 16);
    for (size_t k = 0; k < n; k += 3) { /* every third value: the reader test has them all */
      char var[1024], line[1400], want[1400];
      snprintf(var, sizeof(var), "%s=%s", s->name, bad[k]);
      /* A JSON report file shows the features, unless the setting is about
       * the report itself. */
      bool observe = i != SC_SET_STATS && i != SC_SET_STATS_SIGNAL && i != SC_SET_STATS_EXACT;
      const char *env[] = {var, observe ? stats : "SIZECLASS_SITES=1", NULL};
      if (i == SC_SET_STATS_SIGNAL) env[1] = NULL; /* alone: it arms nothing */
      unlink(json);
      run_t r;
      run(&r, false, NULL, env, print);
      cr_expect_eq(r.rc, 0, "%s", var);
      cr_expect_str_eq(r.out, HELLO, "%s: the program's output", var);
      cr_expect_eq(warnings(r.err, line, sizeof(line)), 1, "%s: %s", var, r.err);
      expected_warning(s, bad[k], want, sizeof(want));
      cr_expect(is_expected_warning(s, bad[k], line), "%s\nnot\n%s", line, want);
      if (i == SC_SET_STATS_SIGNAL) {
        cr_expect_eq(reports(r.err, "exit") + reports(r.err, "signal"), 0,
                     "%s: a bad signal arms no report: %s", var, r.err);
      } else if (i == SC_SET_STATS || i == SC_SET_STATS_FORMAT) {
        cr_expect_eq(reports(r.err, "exit"), 1, "%s: the report on stderr: %s", var, r.err);
        cr_expect_neq(access(json, F_OK), 0, "%s: no report file", var);
      } else if (i == SC_SET_STATS_EXACT) {
        cr_expect_not_null(strstr(r.err, "statistics: default tier"), "%s: %s", var, r.err);
      } else {
        su_json_t j;
        su_json_load(&j, json, "one");
        const char *features = su_jraw(&j, "0.features.1");
        cr_expect_null(features, "%s switched a feature on: %s", var, features);
        su_json_free(&j);
      }
      /* Nothing named after the value in the directory it ran in. */
      char named[1024];
      snprintf(named, sizeof(named), "%s/%s", dir, bad[k]);
      cr_expect_neq(access(named, F_OK), 0, "%s wrote a file", var);
      run_free(&r);
    }
  }
}

/* The issue's list for SIZECLASS_STATS: none of them writes a file. */
Test(settings, a_bad_stats_value_never_writes_a_file, .timeout = 120) {
  fresh_dir();
  const char *const bad[] = {"banana", "2", "-1", "json", " ", "1 "};
  for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
    char var[64];
    snprintf(var, sizeof(var), "SIZECLASS_STATS=%s", bad[k]);
    const char *env[] = {var, NULL};
    run_t r;
    run(&r, false, NULL, env, print);
    cr_expect_str_eq(r.out, HELLO);
    cr_expect_eq(warnings(r.err, NULL, 0), 1, "%s: %s", var, r.err);
    cr_expect_eq(reports(r.err, "exit"), 1, "%s: report on stderr: %s", var, r.err);
    int ls_rc;
    char *listing = pr_sh(&ls_rc, 10, "ls -A '%s'", dir);
    cr_assert_not_null(listing);
    /* Only the helper's copy and the two capture files. */
    for (char *f = strtok(listing, "\n"); f != NULL; f = strtok(NULL, "\n"))
      cr_expect(
          strncmp(f, "preloaded.", 10) == 0 || strcmp(f, "stderr") == 0 || strcmp(f, "stdout") == 0,
          "%s wrote %s", var, f);
    free(listing);
    run_free(&r);
    /* The copies pile up: start each value afresh. */
    remove_dir();
    fresh_dir();
  }
}

Test(settings, unknown_variables_name_the_closest_setting, .timeout = 60) {
  fresh_dir();
  const char *const env[] = {"SIZECLASS_STAT=1", "SIZECLASS_CHEK=1", "SIZECLASS_LIB=/x", NULL};
  run_t r;
  run(&r, false, "SIZECLASS_GAURD=1 SIZECLASS_SITES", env, print);
  cr_expect_str_eq(r.out, HELLO);
  cr_expect_eq(warnings(r.err, NULL, 0), 4, "%s", r.err);
  cr_expect_not_null(strstr(r.err,
                            "sizeclass: SIZECLASS_STAT=\"1\": unknown setting (did you "
                            "mean SIZECLASS_STATS?); ignored\n"),
                     "%s", r.err);
  cr_expect_not_null(strstr(r.err,
                            "sizeclass: SIZECLASS_CHEK=\"1\": unknown setting (did you "
                            "mean SIZECLASS_CHECK?); ignored\n"),
                     "%s", r.err);
  cr_expect_not_null(strstr(r.err,
                            "sizeclass: SIZECLASS_GAURD=\"1\": unknown setting (did you "
                            "mean SIZECLASS_GUARD?); ignored\n"),
                     "%s", r.err);
  cr_expect_not_null(strstr(r.err,
                            "sizeclass: sizeclass_options=\"SIZECLASS_SITES\": expected "
                            "SETTING=value; the word is ignored\n"),
                     "%s", r.err);
  cr_expect_null(strstr(r.err, "SIZECLASS_LIB"), "sizeclass-run's variable is no setting");
  cr_expect_eq(reports(r.err, "exit"), 0, "nothing was switched on: %s", r.err);
  run_free(&r);
}

/* ---- whose report it is ---------------------------------------------------------------- */

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

Test(settings, the_report_says_whose_it_is, .timeout = 60) {
  fresh_dir();
  char prog[4096], json[128], var[160], txt[128], var_txt[160];
  snprintf(json, sizeof(json), "%s/r.json", dir);
  snprintf(var, sizeof(var), "SIZECLASS_STATS=%s", json);
  char copy[4096];
  options_prog(copy, sizeof(copy), true, "");
  cr_assert_not_null(realpath(copy, prog)); /* what /proc/self/exe says */
  char *argv[] = {prog, "print", NULL};
  const char *env[] = {var, "SIZECLASS_GUARD=1", NULL};
  uint64_t before = now_ms();
  run_t r;
  run_argv(&r, true, argv, env);
  uint64_t after = now_ms();
  cr_assert_eq(r.rc, 0, "%s", r.err);
  su_json_t j;
  su_json_load(&j, json, "one");
  cr_expect_eq(su_ju(&j, "0.process.ppid"), (uint64_t)getpid(), "its parent is this test");
  cr_expect_neq(su_ju(&j, "0.process.pid"), (uint64_t)getpid());
  char want[4200];
  snprintf(want, sizeof(want), "\"%s\"", prog);
  cr_expect_str_eq(su_jraw(&j, "0.process.exe"), want);
  snprintf(want, sizeof(want), "\"%s print\"", prog);
  cr_expect_str_eq(su_jraw(&j, "0.process.cmdline"), want);
  uint64_t start = su_ju(&j, "0.process.start_unix_ms");
  /* The kernel counts a process's start in clock ticks (10 ms). */
  cr_expect(start + 50 >= before && start <= after + 50,
            "start %" PRIu64 " not in [%" PRIu64 ", %" PRIu64 "]", start, before, after);
  cr_expect_leq(su_ju(&j, "0.process.wall_ns"), (after - before + 50) * 1000000);
  cr_expect_str_eq(su_jraw(&j, "0.tier"), "\"exact\"");
  cr_expect_eq(su_ju(&j, "0.features.len"), 2);
  cr_expect_str_eq(su_jraw(&j, "0.features.0"), "\"exact\"");
  cr_expect_str_eq(su_jraw(&j, "0.features.1"), "\"guard\"");
  uint64_t pid = su_ju(&j, "0.process.pid");
  su_json_free(&j);
  run_free(&r);

  /* The text form says the same under its header. */
  snprintf(txt, sizeof(txt), "%s/r.txt", dir);
  snprintf(var_txt, sizeof(var_txt), "SIZECLASS_STATS=%s", txt);
  const char *env_txt[] = {var_txt, NULL};
  run_argv(&r, true, argv, env_txt);
  char *t = su_read(txt);
  cr_assert_not_null(t);
  char line[9000];
  cr_expect(strncmp(t, "== libsizeclass statistics (exit) ==\npid ", 41) == 0, "%s", t);
  snprintf(line, sizeof(line), ", parent %d: %s\ncommand line: %s print\nstarted ", (int)getpid(),
           prog, prog);
  cr_expect_not_null(strstr(t, line), "%s", t);
  cr_expect_not_null(strstr(t, " UTC, run time "), "%s", t);
  cr_expect_not_null(strstr(t, "statistics: exact tier; features on: exact\n"), "%s", t);
  (void)pid;
  free(t);
  run_free(&r);
}

Test(settings, a_long_command_line_is_cut_with_an_ellipsis, .timeout = 60) {
  fresh_dir();
  char prog[4096], json[128], var[160], arg[400];
  snprintf(json, sizeof(json), "%s/r.json", dir);
  snprintf(var, sizeof(var), "SIZECLASS_STATS=%s", json);
  options_prog(prog, sizeof(prog), true, "");
  memset(arg, 'a', sizeof(arg) - 1);
  arg[sizeof(arg) - 1] = 0;
  char *argv[] = {prog, "print", arg, NULL};
  const char *env[] = {var, NULL};
  run_t r;
  run_argv(&r, true, argv, env);
  cr_assert_eq(r.rc, 0);
  su_json_t j;
  su_json_load(&j, json, "one");
  const char *cmd = su_jraw(&j, "0.process.cmdline"); /* JSON: quoted, "…" escaped or not */
  cr_assert_not_null(cmd);
  char full[4600];
  snprintf(full, sizeof(full), "%s print %s", prog, arg);
  /* python's json.dumps writes "…" as \u2026 */
  size_t len = strlen(cmd);
  cr_expect(len > 8 && strcmp(cmd + len - 7, "\\u2026\"") == 0, "ends in an ellipsis: %s", cmd);
  cr_expect_eq(len - 1 - 7, 256, "256 bytes kept: %zu", len - 8);
  cr_expect(strncmp(cmd + 1, full, 256) == 0, "%s", cmd);
  su_json_free(&j);
  run_free(&r);
}

/* ---- only the process launched ---------------------------------------------------------- */

/** Run scripts/sizeclass-run with opts on the helper's spawn mode. */
static void run_wrapper(run_t *r, const char *opt1, const char *opt2) {
  char prog[4096], lib[4200], script[4096];
  options_prog(prog, sizeof(prog), false, "");
  cr_assert_not_null(realpath("scripts/sizeclass-run", script), "run from the source root");
  snprintf(lib, sizeof(lib), "SIZECLASS_LIB=%s/libsizeclass.so", pr_build_dir());
  char *argv[6];
  size_t n = 0;
  argv[n++] = script;
  if (opt1 != NULL) argv[n++] = (char *)opt1;
  if (opt2 != NULL) argv[n++] = (char *)opt2;
  argv[n++] = prog;
  argv[n++] = "spawn";
  argv[n] = NULL;
  const char *env[] = {lib, NULL};
  run_argv(r, true, argv, env); /* "linked": the wrapper preloads it */
}

Test(settings, sizeclass_run_stats_reports_only_the_program, .timeout = 60) {
  fresh_dir();
  run_t r;
  run_wrapper(&r, "--stats", NULL);
  cr_assert_eq(r.rc, 0, "%s", r.err);
  uint64_t pid = su_said(r.out, "pid");
  cr_expect_eq(reports(r.err, "exit"), 1, "the program, not its two children: %s", r.err);
  char line[64];
  snprintf(line, sizeof(line), "\npid %" PRIu64 ", parent ", pid);
  cr_expect_not_null(strstr(r.err, line), "the report is the program's: %s", r.err);
  cr_expect_eq(warnings(r.err, NULL, 0), 0, "%s", r.err);
  run_free(&r);

  run_wrapper(&r, "--stats", "--children");
  cr_assert_eq(r.rc, 0, "%s", r.err);
  cr_expect_eq(reports(r.err, "exit"), 3, "the program and its two children: %s", r.err);
  run_free(&r);
}

Test(settings, another_pid_neither_reports_nor_counts, .timeout = 60) {
  fresh_dir();
  /* pid 1 is init: never this process. Even a bad report setting is not
   * read there. */
  const char *const env[] = {"SIZECLASS_STATS=1", "SIZECLASS_STATS_PID=1", "SIZECLASS_SITES=1",
                             "SIZECLASS_STATS_FORMAT=xml", NULL};
  run_t r;
  run(&r, false, NULL, env, print);
  cr_expect_eq(r.rc, 0);
  cr_expect_str_eq(r.out, HELLO);
  cr_expect_str_eq(r.err, "", "no report, no warning");
  run_free(&r);
}

/* ---- the docs agree with the table -------------------------------------------------------- */

/** The whole file (free it); asserts. */
static char *slurp(const char *path) {
  char *text = cu_read_file(path, NULL);
  cr_assert_not_null(text, "cannot read %s (tests run from the source root)", path);
  return text;
}

Test(settings, using_md_has_the_generated_table, .timeout = 60) {
  char gen[512];
  pr_prog_path(gen, sizeof(gen), "settings_doc");
  int rc;
  char *table = pr_sh(&rc, 30, "'%s'", gen);
  cr_assert_not_null(table);
  cr_assert_eq(rc, 0);
  char *doc = slurp("docs/using.md");
  const char *begin =
      "<!-- settings: generated from src/util/settings.c by `make settings-doc` -->\n";
  const char *at = strstr(doc, begin);
  cr_assert_not_null(at, "docs/using.md has the settings markers");
  at += strlen(begin);
  const char *end = strstr(at, "<!-- end of settings -->");
  cr_assert_not_null(end);
  cr_expect_eq((size_t)(end - at), strlen(table), "run `make settings-doc`");
  cr_expect(strncmp(at, table, strlen(table)) == 0,
            "docs/using.md's table differs from the "
            "table's: run `make settings-doc`");
  /* Each setting in one row of it, and nowhere else in a table row. */
  for (unsigned i = 0; i < SC_SETTINGS; i++) {
    char row[80];
    snprintf(row, sizeof(row), "\n| `%s` |", sc__settings[i].name);
    int rows = 0;
    for (const char *p = strstr(doc, row); p != NULL; p = strstr(p + 1, row)) rows++;
    cr_expect_eq(rows, 1, "%s: %d rows in docs/using.md", sc__settings[i].name, rows);
  }
  free(doc);
  free(table);
}

Test(settings, the_man_page_has_an_entry_for_each_setting) {
  char *page = slurp("man/sizeclass.7");
  const char *env = strstr(page, "\n.SH ENVIRONMENT\n");
  cr_assert_not_null(env);
  const char *end = strstr(env + 1, "\n.SH ");
  cr_assert_not_null(end);
  for (unsigned i = 0; i < SC_SETTINGS; i++) {
    const sc_setting_t *s = &sc__settings[i];
    char entry[96];
    snprintf(entry, sizeof(entry), "\n.TP\n.B %s\n", s->name);
    const char *at = strstr(env, entry);
    cr_expect(at != NULL && at < end, "sizeclass.7 has no ENVIRONMENT entry for %s", s->name);
  }
  /* And no entry for a name that is no setting. */
  for (const char *p = strstr(env, "\n.TP\n.B SIZECLASS_"); p != NULL && p < end;
       p = strstr(p + 1, "\n.TP\n.B SIZECLASS_")) {
    const char *name = p + 8;
    size_t len = strcspn(name, " \n");
    cr_expect_neq(sc__setting_find(name, len), SC_SETTINGS, "sizeclass.7 documents %.*s", (int)len,
                  name);
  }
  free(page);
}

/* Names the docs may use that are not settings: sizeclass-run's library
 * variable, the CMake package's variables, and the misspelt example of the
 * unknown-setting warning. */
static bool other_name(const char *name, size_t len) {
  static const char *const others[] = {"SIZECLASS_LIB", "SIZECLASS_INCLUDE_DIR",
                                       "SIZECLASS_LIBRARY_DIR", "SIZECLASS_PRELOAD_LIBRARY",
                                       "SIZECLASS_STAT"};
  for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
    if (strlen(others[i]) == len && memcmp(others[i], name, len) == 0) return true;
  return false;
}

/* README, the table and the behaviour say one thing about bad values: a
 * bad value never switches a feature on, except that any SIZECLASS_STATS
 * value asks for a report (on stderr when bad), which the README says next
 * to the promise; and the table's fallback for a bad signal arms nothing. */
Test(settings, the_readme_states_the_one_exception_to_never_switching_on) {
  char *readme = slurp("README.md");
  for (char *p = readme; *p; p++)
    if (*p == '\n') *p = ' ';
  const char *promise = strstr(readme, "never switches a feature on");
  cr_assert_not_null(promise);
  const char *exception = strstr(promise, "`SIZECLASS_STATS`");
  cr_expect(exception != NULL && exception - promise < 120 &&
                strstr(promise, "on stderr") != NULL &&
                strstr(promise, "on stderr") - promise < 200,
            "the README's promise names the SIZECLASS_STATS exception: %.200s", promise);
  free(readme);
  cr_expect_eq(sc__settings[SC_SET_STATS].fallback, SC_STATS_STDERR);
  cr_expect_not_null(strstr(sc__settings[SC_SET_STATS_SIGNAL].instead, "nothing switched on"));
}

Test(settings, the_docs_name_only_settings_and_the_readme_lists_them_all, .timeout = 60) {
  int rc;
  char *files = pr_sh(&rc, 30, "ls README.md docs/*.md man/*.[1-8]");
  cr_assert_not_null(files);
  int n = 0;
  for (char *f = strtok(files, "\n"); f != NULL; f = strtok(NULL, "\n"), n++) {
    char *text = slurp(f);
    for (const char *p = strstr(text, "SIZECLASS_"); p != NULL; p = strstr(p + 1, "SIZECLASS_")) {
      if (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) continue;
      size_t len = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
      while (len > 0 && p[len - 1] == '_') len--;
      if (len <= 10) continue; /* "SIZECLASS_*" */
      cr_expect(sc__setting_find(p, len) != SC_SETTINGS || other_name(p, len),
                "%s names %.*s, which is no setting", f, (int)len, p);
    }
    free(text);
  }
  cr_assert_geq(n, 8);
  free(files);
  char *readme = slurp("README.md");
  for (unsigned i = 0; i < SC_SETTINGS; i++) {
    char word[64];
    snprintf(word, sizeof(word), "`%s`", sc__settings[i].name);
    cr_expect_not_null(strstr(readme, word), "README.md's list lacks %s", word);
  }
  free(readme);
}

/* `make test` installs only what the README names. */
Test(settings, the_readme_names_every_package_make_test_installs) {
  char *script = slurp("scripts/ensure-deps.sh");
  const char *test = strstr(script, "\n  test)\n");
  cr_assert_not_null(test);
  const char *end = strstr(test, ";;");
  cr_assert_not_null(end);
  char *readme = slurp("README.md");
  int n = 0;
  for (const char *p = test; p < end; p++) {
    /* Package names: the words after "want" and the criterion line's. */
    if (strncmp(p, "want ", 5) != 0 && strncmp(p, "need+=(", 7) != 0) continue;
    p += p[0] == 'w' ? 5 : 7;
    while (p < end && *p != '\n' && *p != ')') {
      if (*p == '\\' && p[1] == '\n') {
        p += 2;
        continue;
      }
      size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789+.-");
      if (len > 0) {
        char word[64];
        snprintf(word, sizeof(word), "`%.*s`", (int)len, p);
        cr_expect_not_null(strstr(readme, word),
                           "README.md does not name %s, which make test "
                           "installs",
                           word);
        n++;
        p += len;
      } else {
        p++;
      }
    }
  }
  cr_assert_geq(n, 10, "packages found: %d", n);
  free(script);
  free(readme);
}
