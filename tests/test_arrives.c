/* SPDX-License-Identifier: MIT */
/* test_arrives.c — the report arrives when the run fails, and never lands
 * in the program's own files (docs/architecture.md, guarantee 12; issue 26): a stream closed at
 * startup gets nothing, even when the program reuses its number; the
 * library's own aborts, the termination signals, crashes (opt-in) and
 * _exit write the report first and end the process as it would have
 * ended; vfork children stay quiet; 1000 report signals during heavy
 * multi-threaded allocation give 1000 whole JSON reports.
 * Helper: tests/progs/arrives.c, run preloaded. */
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "stats_util.h"

static char dir[64];

static void setup(void) { su_tmpdir(dir); }
static void teardown(void) { cr_expect(cr_tmp_remove(dir)); }

TestSuite(arrives, .init = setup, .fini = teardown);

/* ---- running the helper ------------------------------------------------------------ */

typedef struct {
  int status; /* raw wait status */
  char *out;  /* stdout (free) */
  char err[4096];
} run_t;

/** Run `arrives ARGS...` preloaded with env (NULL-terminated NAME=value,
 * on top of ours minus SIZECLASS_*); `shell`: a /bin/sh line that runs
 * the program as "$0" "$@" (to close a stream before it starts). */
static void run_in(run_t *r, const char *shell, const char *const env[], const char *const args[]) {
  char prog[256];
  pr_prog_path(prog, sizeof(prog), "arrives");
  char *argv[16];
  size_t n = 0;
  if (shell != NULL) {
    argv[n++] = "/bin/sh";
    argv[n++] = "-c";
    argv[n++] = (char *)shell;
  }
  argv[n++] = prog;
  for (size_t i = 0; args[i] != NULL && n < 15; i++) argv[n++] = (char *)args[i];
  argv[n] = NULL;
  pr_opts_t o = {.preload = true, .drop_sizeclass_env = true, .timeout_s = 60, .env = env};
  pr_result_t pr;
  cr_assert(pr_run(&pr, argv, &o), "could not run %s", prog);
  cr_assert(!pr.timed_out, "%s %s hung", prog, args[0]);
  r->status = pr.status;
  r->out = pr.out;
  memcpy(r->err, pr.err, sizeof(r->err));
}

static void run(run_t *r, const char *const env[], const char *const args[]) {
  run_in(r, NULL, env, args);
}

static void run_free(run_t *r) { free(r->out); }

/** The run was ended by signal sig. */
#define expect_killed_by(r, sig)                                                                  \
  cr_expect(WIFSIGNALED((r)->status) && WTERMSIG((r)->status) == (sig),                           \
            "wait status %#x, not killed by signal %d; stderr: %s", (unsigned)(r)->status, (sig), \
            (r)->err)

#define expect_exit(r, code)                                                                \
  cr_expect(WIFEXITED((r)->status) && WEXITSTATUS((r)->status) == (code),                   \
            "wait status %#x, not exit %d; stderr: %s", (unsigned)(r)->status, (int)(code), \
            (r)->err)

/** dir/name */
static void in_dir(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", dir, name);
}

/** A report's file dir/name (removed if an earlier run left it) into path,
 * and the SIZECLASS_STATS=path that asks for it into var. */
static void report_in_dir(char *path, size_t cap, char *var, size_t var_cap, const char *name) {
  in_dir(path, cap, name);
  unlink(path);
  snprintf(var, var_cap, "SIZECLASS_STATS=%s", path);
}

/** The JSON report at path parses (python3's json module, strictly); its
 * "reason" (unquoted) into reason. */
static void json_reason(const char *path, char *reason, size_t cap) {
  cr_assert_eq(access(path, R_OK), 0, "no report at %s", path);
  su_json_t j;
  su_json_load(&j, path, "one");
  const char *v = su_jraw(&j, "0.reason");
  cr_assert_not_null(v, "no reason in %s", path);
  cr_assert_str_eq(su_jraw(&j, "0.schema"), "\"libsizeclass-stats\"");
  size_t n = strlen(v);
  cr_assert(n >= 2 && v[0] == '"' && v[n - 1] == '"', "reason is not a string: %s", v);
  snprintf(reason, cap, "%.*s", (int)(n - 2), v + 1);
  su_json_free(&j);
}

/** Times s holds needle. */
static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
  return n;
}

/* ---- 1. a stream closed at startup gets nothing -------------------------------------- */

/* The program starts with stderr (stdout) closed and opens its log file,
 * which takes fd 2 (fd 1): the file must hold exactly what it wrote. */
static void closed_stream_case(const char *shell, const char *stats, const char *fd_line) {
  char log[128];
  in_dir(log, sizeof(log), "game.log");
  const char *const env[] = {stats, "SIZECLASS_STATS_ON_CRASH=1", NULL};
  const char *const args[] = {"log", log, NULL};
  run_t r;
  run_in(&r, shell, env, args);
  expect_exit(&r, 0);
  char *got = su_read(log);
  cr_assert_not_null(got, "no %s", log);
  char want[64];
  snprintf(want, sizeof(want), "game log\n%s\n", fd_line);
  cr_expect_str_eq(got, want, "the program's file holds only what it wrote");
  free(got);
  run_free(&r);
}

Test(arrives, stderr_closed_at_startup_never_gets_the_report_in_the_programs_file, .timeout = 60) {
  closed_stream_case("exec \"$0\" \"$@\" 2>&-", "SIZECLASS_STATS=1", "fd 2");
  /* A bad value's warning, too, stays out of it. */
  closed_stream_case("exec \"$0\" \"$@\" 2>&-", "SIZECLASS_STATS_FORMAT=banana", "fd 2");
}

Test(arrives, stdout_closed_at_startup_never_gets_the_report_in_the_programs_file, .timeout = 60) {
  closed_stream_case("exec \"$0\" \"$@\" >&-", "SIZECLASS_STATS=stdout", "fd 1");
}

/* With stderr closed at startup, the report file's descriptor must not take
 * its number: a thread of the program writing to fd 2 meanwhile would
 * write into the report (before: its lines in 2 of 3 runs of 40 reports). */
Test(arrives, the_programs_writes_to_a_closed_stderr_never_land_in_the_report, .timeout = 120) {
  char path[128], var[160];
  report_in_dir(path, sizeof(path), var, sizeof(var), "r.json");
  const char *const env[] = {var, "SIZECLASS_STATS_SIGNAL=USR2", NULL};
  const char *const args[] = {"fd2_writer", "40", NULL};
  run_t r;
  run_in(&r, "exec \"$0\" \"$@\" 2>&-", env, args);
  expect_exit(&r, 0);
  char *got = su_read(path);
  cr_assert_not_null(got, "no %s", path);
  cr_expect_null(strstr(got, "program message"), "the program's line is in the report:\n%.300s",
                 got);
  cr_expect_eq(got[0], '{', "not the JSON report: %.100s", got);
  free(got);
  run_free(&r);
}

/* SIZECLASS_STATS naming the program's stderr (/dev/stderr, or the file the
 * shell sent it to) sends the report to the stream: it is never reopened
 * and truncated, and what the program wrote there stays. */
Test(arrives, a_path_that_is_stderr_keeps_the_programs_lines, .timeout = 60) {
  char log[128], var[200];
  in_dir(log, sizeof(log), "err.log");
  for (int k = 0; k < 2; k++) {
    snprintf(var, sizeof(var), "SIZECLASS_STATS=%s", k == 0 ? "/dev/stderr" : log);
    const char *const env[] = {var, NULL};
    char shell[300];
    snprintf(shell, sizeof(shell), "exec \"$0\" \"$@\" 2>'%s'", log);
    const char *const args[] = {"hello_err", NULL};
    run_t r;
    run_in(&r, shell, env, args);
    expect_exit(&r, 0);
    char *got = su_read(log);
    cr_assert_not_null(got, "no %s", log);
    cr_expect_not_null(strstr(got, "the program's own line\n"), "%s: lost:\n%.300s", var, got);
    cr_expect_not_null(strstr(got, "sizeclass"), "%s: no report:\n%.300s", var, got);
    free(got);
    run_free(&r);
  }
}

/* A SIGTERM that arrives while the same thread writes a report (here the
 * signal report, blocked on a full pipe that nobody reads yet) lets that
 * report finish, then writes the termination report and ends by SIGTERM
 * (before: the first report cut at the pipe's 4 KiB, no second one). */
Test(arrives, a_sigterm_during_a_report_lets_it_finish_then_reports_again, .timeout = 60) {
  char prog[256], preload[300];
  pr_prog_path(prog, sizeof(prog), "arrives");
  snprintf(preload, sizeof(preload), "LD_PRELOAD=%s/libsizeclass.so", pr_build_dir());
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  cr_assert_geq(fcntl(fds[1], F_SETPIPE_SZ, 4096), 4096);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    char *env[] = {preload, "SIZECLASS_STATS=1", "SIZECLASS_STATS_SIGNAL=USR2",
                   "SIZECLASS_STATS_FORMAT=json", NULL};
    char *argv[] = {prog, "usr2_wait", NULL};
    execve(prog, argv, env);
    _exit(98);
  }
  close(fds[1]);
  struct timespec pause = {0, 500 * 1000000L}; /* the report fills the pipe and waits */
  nanosleep(&pause, NULL);
  kill(pid, SIGTERM);
  nanosleep(&pause, NULL);
  static char got[1 << 20];
  size_t n = 0;
  for (ssize_t k; n < sizeof(got) - 1 && (k = read(fds[0], got + n, sizeof(got) - 1 - n)) > 0;)
    n += (size_t)k;
  got[n] = 0;
  close(fds[0]);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "wait status %#x", status);
  cr_expect_eq(count(got, "\"reason\": \"signal\""), 1, "%zu bytes:\n%.300s", n, got);
  cr_expect_eq(count(got, "\"reason\": \"terminated: SIGTERM\""), 1, "%zu bytes, end:\n%s", n,
               n > 300 ? got + n - 300 : got);
  cr_expect_eq(count(got, "\n}\n"), 2, "two whole reports (%zu bytes)", n);
}

/* Where the report cannot be written, one line says why. */
Test(arrives, a_report_to_a_closed_stdout_says_why_on_stderr, .timeout = 60) {
  char log[128];
  in_dir(log, sizeof(log), "game.log");
  const char *const env[] = {"SIZECLASS_STATS=stdout", NULL};
  const char *const args[] = {"log", log, NULL};
  run_t r;
  run_in(&r, "exec \"$0\" \"$@\" >&-", env, args);
  expect_exit(&r, 0);
  cr_expect_str_eq(r.err,
                   "sizeclass: SIZECLASS_STATS=\"stdout\": stdout was closed when the process "
                   "started; no report\n");
  run_free(&r);
}

/* ---- 2. the library's own aborts ------------------------------------------------------- */

Test(arrives, frame_check_abort_writes_the_json_report_first, .timeout = 60) {
  char path[128], reason[512], var[160];
  report_in_dir(path, sizeof(path), var, sizeof(var), "r.json");
  const char *const env[] = {var, "SIZECLASS_FRAME_CHECK=abort", "SIZECLASS_FRAME_CHECK_AFTER=1",
                             NULL};
  const char *const args[] = {"frame_abort", NULL};
  run_t r;
  run(&r, env, args);
  expect_killed_by(&r, SIGABRT);
  cr_expect_not_null(strstr(r.err, "sizeclass: frame "), "%s", r.err);
  json_reason(path, reason, sizeof(reason));
  cr_expect(strncmp(reason, "abort: frame ", 13) == 0, "reason: %s", reason);
  cr_expect_not_null(strstr(reason, ": fresh carve in class "), "reason: %s", reason);
  run_free(&r);
}

Test(arrives, double_free_writes_the_report_first, .timeout = 60) {
  char path[128], reason[512], var[160];
  report_in_dir(path, sizeof(path), var, sizeof(var), "r.json");
  const char *const env[] = {var, NULL};
  const char *const args[] = {"double_free", NULL};
  run_t r;
  run(&r, env, args);
  expect_killed_by(&r, SIGABRT);
  json_reason(path, reason, sizeof(reason));
  cr_expect(strncmp(reason, "abort: double free of 0x", 24) == 0, "reason: %s", reason);
  cr_expect_not_null(strstr(reason, " (class 64 B)"), "reason: %s", reason);
  /* The message on stderr says the same. */
  char line[600];
  snprintf(line, sizeof(line), "sizeclass: %s\n", reason + strlen("abort: "));
  cr_expect_not_null(strstr(r.err, line), "%s not in %s", line, r.err);
  run_free(&r);
}

Test(arrives, an_abort_names_its_message_in_the_text_header, .timeout = 60) {
  const char *const env[] = {"SIZECLASS_STATS=1", NULL};
  const char *const args[] = {"double_free", NULL};
  run_t r;
  run(&r, env, args);
  expect_killed_by(&r, SIGABRT);
  const char *h = strstr(r.err, "== libsizeclass statistics (abort: double free of 0x");
  cr_assert_not_null(h, "%s", r.err);
  const char *end = strchr(h, '\n');
  cr_assert_not_null(end);
  cr_expect(end - h > 12 && strncmp(end - 17, " (class 64 B)) ==", 17) == 0, "header: %.*s",
            (int)(end - h), h);
  cr_expect_eq(count(r.err, "== libsizeclass statistics"), 1, "one report: %s", r.err);
  run_free(&r);
}

Test(arrives, an_abort_without_a_report_asked_writes_none, .timeout = 60) {
  const char *const env[] = {NULL};
  const char *const args[] = {"double_free", NULL};
  run_t r;
  run(&r, env, args);
  expect_killed_by(&r, SIGABRT);
  cr_expect_not_null(strstr(r.err, "sizeclass: double free of 0x"), "%s", r.err);
  cr_expect_null(strstr(r.err, "== libsizeclass"), "%s", r.err);
  run_free(&r);
}

/* An abort on broken metadata (the SC_DEBUG library's validators find
 * each corruption of tests/progs/debug/corrupt.c): the report reads what
 * it can and never hangs or crashes the abort into something else. */
Test(arrives, an_abort_on_broken_metadata_still_ends_by_abort, .timeout = 240) {
  const char *const kinds[] = {"used", "link", "map", "carve", "pages", "queued"};
  char prog[512];
  pr_prog_path(prog, sizeof(prog), "debug/corrupt");
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
    char path[128], var[160], reason[512];
    report_in_dir(path, sizeof(path), var, sizeof(var), "r.json");
    const char *const env[] = {var, NULL};
    char *argv[] = {prog, (char *)kinds[i], NULL};
    pr_opts_t o = {.timeout_s = 60, .drop_sizeclass_env = true, .env = env};
    pr_result_t r;
    cr_assert(pr_run(&r, argv, &o), "could not run %s", prog);
    cr_expect(!r.timed_out, "%s: hung", kinds[i]);
    cr_expect(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT, "%s: status %#x: %s",
              kinds[i], (unsigned)r.status, r.err);
    if (strstr(r.err, "sizeclass: the report faulted; aborting without it\n") == NULL) {
      json_reason(path, reason, sizeof(reason));
      cr_expect(strncmp(reason, "abort: assertion failed: ", 25) == 0, "%s: reason %s", kinds[i],
                reason);
    }
    free(r.out);
  }
}

/* The report of an abort faults on records broken beyond its checks: one
 * line says so, and the abort happens at once. */
Test(arrives, a_fault_in_the_abort_report_aborts_at_once, .timeout = 60) {
  char prog[512], path[128], var[160];
  pr_prog_path(prog, sizeof(prog), "linked/report_fault");
  report_in_dir(path, sizeof(path), var, sizeof(var), "r.json");
  const char *const env[] = {var, NULL};
  char *argv[] = {prog, NULL};
  pr_opts_t o = {.timeout_s = 60, .drop_sizeclass_env = true, .env = env};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o), "could not run %s", prog);
  cr_expect(!r.timed_out, "hung");
  cr_expect(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT, "status %#x: %s",
            (unsigned)r.status, r.err);
  cr_expect_not_null(strstr(r.err, "sizeclass: double free of 0x"), "%s", r.err);
  cr_expect_not_null(strstr(r.err, "sizeclass: the report faulted; aborting without it\n"), "%s",
                     r.err);
  free(r.out);
}

/* ---- 3. termination signals ---------------------------------------------------------- */

static void terminated_case(const char *name, int sig) {
  char path[128], reason[128], var[160], want[64];
  report_in_dir(path, sizeof(path), var, sizeof(var), "r.json");
  const char *const env[] = {var, NULL};
  const char *const args[] = {"kill", name, NULL};
  run_t r;
  run(&r, env, args);
  expect_killed_by(&r, sig);
  json_reason(path, reason, sizeof(reason));
  snprintf(want, sizeof(want), "terminated: SIG%s", name);
  cr_expect_str_eq(reason, want);
  run_free(&r);
}

Test(arrives, termination_signals_write_the_report_and_kill_as_before, .timeout = 120) {
  terminated_case("TERM", SIGTERM);
  terminated_case("INT", SIGINT);
  terminated_case("HUP", SIGHUP);
}

Test(arrives, a_program_with_its_own_sigterm_handler_keeps_it, .timeout = 60) {
  char path[128], reason[128], var[160];
  report_in_dir(path, sizeof(path), var, sizeof(var), "r.json");
  const char *const env[] = {var, NULL};
  const char *const args[] = {"own_term", NULL};
  run_t r;
  run(&r, env, args);
  expect_exit(&r, 3);
  cr_expect_str_eq(r.out, "handled\n");
  /* Its handler ends the program with _exit(3): that report, not ours on
   * the signal. */
  json_reason(path, reason, sizeof(reason));
  cr_expect_str_eq(reason, "_exit");
  run_free(&r);
}

/* Python installs its KeyboardInterrupt handler only where it reads the
 * default action on SIGINT: the program still reads the default, and the
 * handler it installs replaces ours. */
Test(arrives, the_program_still_reads_the_default_action_and_replaces_ours, .timeout = 60) {
  char path[128], reason[128], var[160];
  report_in_dir(path, sizeof(path), var, sizeof(var), "r.json");
  const char *const env[] = {var, NULL};
  const char *const peek[] = {"peek", NULL};
  run_t r;
  run(&r, env, peek);
  expect_exit(&r, 4);
  cr_expect_str_eq(r.out, "handled\n");
  json_reason(path, reason, sizeof(reason));
  cr_expect_str_eq(reason, "_exit", "its own handler's _exit, not our SIGINT report");
  run_free(&r);
  /* signal(SIGHUP, SIG_DFL) reads the default and keeps the report. */
  unlink(path);
  const char *const hup[] = {"peek_hup", NULL};
  run(&r, env, hup);
  expect_killed_by(&r, SIGHUP);
  json_reason(path, reason, sizeof(reason));
  cr_expect_str_eq(reason, "terminated: SIGHUP");
  run_free(&r);
}

Test(arrives, python_keeps_its_keyboard_interrupt, .timeout = 60) {
  char *argv[] = {access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3", "-c",
                  "import os, signal, time\n"
                  "try:\n"
                  "  os.kill(os.getpid(), signal.SIGINT); time.sleep(5); print('no interrupt')\n"
                  "except KeyboardInterrupt:\n"
                  "  print('KeyboardInterrupt')\n",
                  NULL};
  const char *const env[] = {"SIZECLASS_STATS=1", NULL};
  pr_opts_t o = {.preload = true, .drop_sizeclass_env = true, .timeout_s = 60, .env = env};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o));
  cr_expect_eq(r.exit_code, 0, "%s", r.err);
  cr_expect_str_eq(r.out, "KeyboardInterrupt\n");
  cr_expect_eq(count(r.err, "== libsizeclass statistics (exit) =="), 1, "%s", r.err);
  free(r.out);
}

Test(arrives, without_a_report_a_termination_signal_is_untouched, .timeout = 60) {
  const char *const env[] = {NULL};
  const char *const args[] = {"kill", "TERM", NULL};
  run_t r;
  run(&r, env, args);
  expect_killed_by(&r, SIGTERM);
  cr_expect_str_eq(r.err, "");
  run_free(&r);
}

/* ---- 4. crashes, opt-in ---------------------------------------------------------------- */

static void crash_case(const char *mode, int sig, const char *want, bool on) {
  char path[128], reason[128], var[160];
  report_in_dir(path, sizeof(path), var, sizeof(var), "r.json");
  const char *const env[] = {var, on ? "SIZECLASS_STATS_ON_CRASH=1" : NULL, NULL};
  const char *const args[] = {mode, NULL};
  run_t r;
  run(&r, env, args);
  expect_killed_by(&r, sig);
  if (on) {
    json_reason(path, reason, sizeof(reason));
    cr_expect_str_eq(reason, want, "%s", mode);
  } else {
    cr_expect_neq(access(path, F_OK), 0, "%s: a report without SIZECLASS_STATS_ON_CRASH", mode);
  }
  run_free(&r);
}

Test(arrives, crashes_write_the_report_when_asked_and_die_by_the_same_signal, .timeout = 180) {
  crash_case("segv", SIGSEGV, "crash: SIGSEGV", true);
  crash_case("bus", SIGBUS, "crash: SIGBUS", true);
  crash_case("ill", SIGILL, "crash: SIGILL", true);
  crash_case("fpe", SIGFPE, "crash: SIGFPE", true);
  crash_case("abort", SIGABRT, "crash: SIGABRT", true);
  crash_case("thread_segv", SIGSEGV, "crash: SIGSEGV", true);
}

Test(arrives, a_stack_overflow_reports_from_the_alternate_stack, .timeout = 60) {
  crash_case("overflow", SIGSEGV, "crash: SIGSEGV", true);
  /* A thread gets its alternate stack when it makes its first allocation. */
  crash_case("thread_overflow", SIGSEGV, "crash: SIGSEGV", true);
}

Test(arrives, crashes_write_nothing_by_default, .timeout = 60) {
  crash_case("segv", SIGSEGV, NULL, false);
  crash_case("abort", SIGABRT, NULL, false);
}

Test(arrives, a_bad_on_crash_value_warns_and_switches_nothing_on, .timeout = 60) {
  char path[128], var[160];
  report_in_dir(path, sizeof(path), var, sizeof(var), "r.json");
  const char *const env[] = {var, "SIZECLASS_STATS_ON_CRASH=banana", NULL};
  const char *const args[] = {"segv", NULL};
  run_t r;
  run(&r, env, args);
  expect_killed_by(&r, SIGSEGV);
  cr_expect_eq(count(r.err, "sizeclass: "), 1, "%s", r.err);
  cr_expect_not_null(strstr(r.err, "sizeclass: SIZECLASS_STATS_ON_CRASH=\"banana\": "), "%s",
                     r.err);
  cr_expect_not_null(strstr(r.err, "; no report on a crash\n"), "%s", r.err);
  cr_expect_neq(access(path, F_OK), 0, "a crash report from a bad value");
  run_free(&r);
}

Test(arrives, a_program_with_its_own_sigsegv_handler_keeps_it, .timeout = 60) {
  const char *const env[] = {"SIZECLASS_STATS=1", "SIZECLASS_STATS_ON_CRASH=1", NULL};
  const char *const args[] = {"own_segv", NULL};
  run_t r;
  run(&r, env, args);
  expect_exit(&r, 4);
  cr_expect_str_eq(r.out, "handled\n");
  cr_expect_null(strstr(r.err, "(crash: "), "%s", r.err);
  run_free(&r);
}

/* The guard pages' fault handler keeps working beside the crash report:
 * its own faults are its report (an abort), others the crash report's. */
Test(arrives, guard_pages_and_the_crash_report_cooperate, .timeout = 60) {
  char path[128], reason[512], var[160];
  report_in_dir(path, sizeof(path), var, sizeof(var), "r.json");
  const char *const env[] = {var, "SIZECLASS_STATS_ON_CRASH=1", "SIZECLASS_GUARD=1", NULL};
  const char *const uaf[] = {"uaf", NULL};
  run_t r;
  run(&r, env, uaf);
  expect_killed_by(&r, SIGABRT);
  cr_expect_not_null(strstr(r.err, "sizeclass: use-after-free: write at 0x"), "%s", r.err);
  json_reason(path, reason, sizeof(reason));
  cr_expect(strncmp(reason, "abort: use-after-free: write at 0x", 34) == 0, "reason: %s", reason);
  run_free(&r);
  unlink(path);
  const char *const segv[] = {"segv", NULL};
  run(&r, env, segv);
  expect_killed_by(&r, SIGSEGV);
  json_reason(path, reason, sizeof(reason));
  cr_expect_str_eq(reason, "crash: SIGSEGV");
  run_free(&r);
}

/* ---- 5. _exit and _Exit ------------------------------------------------------------------ */

Test(arrives, underscore_exit_writes_the_report, .timeout = 60) {
  const char *const modes[] = {"_exit", "_Exit"};
  for (size_t i = 0; i < 2; i++) {
    char path[128], reason[128], var[160];
    report_in_dir(path, sizeof(path), var, sizeof(var), "r.json");
    const char *const env[] = {var, NULL};
    const char *const args[] = {modes[i], NULL};
    run_t r;
    run(&r, env, args);
    expect_exit(&r, 5);
    json_reason(path, reason, sizeof(reason));
    cr_expect_str_eq(reason, "_exit", "%s", modes[i]);
    run_free(&r);
  }
}

Test(arrives, exit_writes_one_report_only, .timeout = 60) {
  const char *const env[] = {"SIZECLASS_STATS=1", NULL};
  const char *const args[] = {"exit", NULL};
  run_t r;
  run(&r, env, args);
  expect_exit(&r, 6);
  cr_expect_eq(count(r.err, "== libsizeclass statistics (exit) =="), 1, "%s", r.err);
  cr_expect_eq(count(r.err, "== libsizeclass statistics"), 1, "%s", r.err);
  run_free(&r);
}

/* Debian's sh is dash, which ends with _exit. */
Test(arrives, a_shell_that_ends_with_underscore_exit_gets_its_report, .timeout = 60) {
  char *argv[] = {"/bin/sh", "-c", "echo hi", NULL};
  const char *const env[] = {"SIZECLASS_STATS=1", NULL};
  pr_opts_t o = {.preload = true, .drop_sizeclass_env = true, .timeout_s = 60, .env = env};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o));
  cr_expect_eq(r.exit_code, 0, "%s", r.err);
  cr_expect_str_eq(r.out, "hi\n");
  cr_expect_eq(count(r.err, "== libsizeclass statistics ("), 1, "one report: %s", r.err);
  free(r.out);
}

Test(arrives, sizeclass_run_stats_reports_a_shell, .timeout = 60) {
  cr_at_source_root("scripts/sizeclass-run");
  char lib[300];
  snprintf(lib, sizeof(lib), "SIZECLASS_LIB=%s/libsizeclass.so", pr_build_dir());
  char *argv[] = {"scripts/sizeclass-run", "--stats", "sh", "-c", "echo hi", NULL};
  const char *const env[] = {lib, NULL};
  pr_opts_t o = {.drop_sizeclass_env = true, .timeout_s = 60, .env = env};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o));
  cr_expect_eq(r.exit_code, 0, "%s", r.err);
  cr_expect_str_eq(r.out, "hi\n");
  cr_expect_eq(count(r.err, "== libsizeclass statistics ("), 1, "one report: %s", r.err);
  free(r.out);
}

/* A vfork child shares the parent's memory: it never reports, and the
 * parent's report still arrives. */
Test(arrives, a_vfork_child_writes_no_report, .timeout = 60) {
  char var[160];
  snprintf(var, sizeof(var), "SIZECLASS_STATS=%s/r.%%p.json", dir);
  const char *const env[] = {var, NULL};
  const char *const args[] = {"vfork", NULL};
  run_t r;
  run(&r, env, args);
  expect_exit(&r, 0);
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int reports = 0;
  char name[256] = "";
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (strncmp(e->d_name, "r.", 2) == 0) {
      reports++;
      snprintf(name, sizeof(name), "%s", e->d_name);
    }
  closedir(d);
  cr_assert_eq(reports, 1, "one report, the parent's");
  char path[400], reason[64];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  json_reason(path, reason, sizeof(reason));
  cr_expect_str_eq(reason, "exit");
  run_free(&r);
}

/* ---- 6. the report signal during heavy multi-threaded allocation ---------------------- */

static const char validate_py[] =
    "import json,sys,os\n"
    "d=sys.argv[1]; n=int(sys.argv[2]); bad=[]\n"
    "for i in range(n):\n"
    "  p=os.path.join(d,'r.%d.json'%i)\n"
    "  try:\n"
    "    j=json.load(open(p))\n"
    "    assert j['schema']=='libsizeclass-stats' and j['reason']=='signal', p\n"
    "  except Exception as e: bad.append('%s: %s'%(p,e))\n"
    "print('%d of %d reports parse'%(n-len(bad),n))\n"
    "print('\\n'.join(bad[:5]))\n"
    "sys.exit(1 if bad else 0)\n";

Test(arrives, a_thousand_report_signals_during_threaded_allocation, .timeout = 300) {
  enum { N = 1000 };
  char report[128], var[160], keep[160], n[16];
  in_dir(report, sizeof(report), "now.json");
  snprintf(var, sizeof(var), "SIZECLASS_STATS=%s", report);
  snprintf(keep, sizeof(keep), "ARRIVES_REPORT=%s", report);
  snprintf(n, sizeof(n), "%d", N);
  const char *const env[] = {var, keep, "SIZECLASS_STATS_SIGNAL=USR2", NULL};
  const char *const args[] = {"stress", n, dir, NULL};
  run_t r;
  run(&r, env, args);
  expect_exit(&r, 0);
  run_free(&r);
  char *argv[] = {access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3",
                  "-c",
                  (char *)validate_py,
                  dir,
                  n,
                  NULL};
  pr_opts_t o = {.timeout_s = 120};
  pr_result_t p;
  cr_assert(pr_run(&p, argv, &o));
  cr_expect_eq(p.exit_code, 0, "%s%s", p.out, p.err);
  free(p.out);
}
