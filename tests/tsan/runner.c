/* SPDX-License-Identifier: MIT */
/* tests/tsan/runner.c — main() of a suite built against the stand-in
 * criterion.h beside it (`make tsan`; see that header for why). Runs every
 * registered test in a process of its own (a failed assertion, a TSan
 * report or a crash ends only that test): the program itself again,
 * started with posix_spawn as `PROGRAM --run SUITE/NAME` (a plain fork
 * would run the library's fork handlers, which take and re-create its
 * locks in a way TSan cannot follow), with the test's .timeout (default
 * 300 s) times SC_TEST_TIMEOUT_SCALE (default 1; TSan runs code 5 to 15
 * times slower) as an alarm. It skips the tests CRITERION_TEST_PATTERN leaves out
 * (only the form `make tsan` writes: !(suite/name|...)), prints one line
 * per test and Criterion's "Synthesis" line, and exits 1 when a test
 * failed. */
#include <criterion/criterion.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { MAX_TESTS = 256 };
static const struct crl_test *tests[MAX_TESTS];
static int ntests;

void crl_register(const struct crl_test *t) {
  if (ntests == MAX_TESTS) {
    fprintf(stderr, "runner: more than %d tests\n", MAX_TESTS);
    exit(2);
  }
  tests[ntests++] = t;
}

void crl_fail(const char *file, int line, const char *expr, const char *fmt, ...) {
  fprintf(stderr, "%s:%d: Assertion Failed: %s\n", file, line, expr);
  if (fmt[0] != '\0') {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
  }
  fflush(stderr);
  _exit(1);
}

extern char **environ;

/** True when the pattern `!(a|b|...)` names test `want` (suite/name). */
static bool left_out(const char *pattern, const char *want) {
  if (pattern == NULL || strncmp(pattern, "!(", 2) != 0) return false;
  size_t n = strlen(want);
  for (const char *p = pattern + 2; *p != '\0' && *p != ')';) {
    size_t len = strcspn(p, "|)");
    if (len == n && strncmp(p, want, n) == 0) return true;
    p += len;
    if (*p == '|') p++;
  }
  return false;
}

int main(int argc, char **argv) {
  char id[512];
  if (argc == 3 && strcmp(argv[1], "--run") == 0) { /* one test, in this process */
    for (int i = 0; i < ntests; i++) {
      const struct crl_test *t = tests[i];
      snprintf(id, sizeof(id), "%s/%s", t->suite, t->name);
      if (strcmp(id, argv[2]) != 0) continue;
      const char *scale = getenv("SC_TEST_TIMEOUT_SCALE");
      double seconds = (t->opts.timeout > 0 ? t->opts.timeout : 300) *
                       (scale != NULL && atof(scale) > 0 ? atof(scale) : 1);
      alarm((unsigned)seconds);
      t->fn();
      fflush(NULL);
      return 0;
    }
    fprintf(stderr, "runner: no test %s\n", argv[2]);
    return 2;
  }
  const char *pattern = getenv("CRITERION_TEST_PATTERN");
  int tested = 0, passed = 0, failed = 0, crashed = 0;
  for (int i = 0; i < ntests; i++) {
    const struct crl_test *t = tests[i];
    snprintf(id, sizeof(id), "%s/%s", t->suite, t->name);
    if (t->opts.disabled || left_out(pattern, id)) continue;
    tested++;
    fflush(NULL);
    char *child_argv[] = {argv[0], "--run", id, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, child_argv, environ);
    if (rc != 0) {
      fprintf(stderr, "runner: posix_spawn: %s\n", strerror(rc));
      return 2;
    }
    int st;
    if (waitpid(pid, &st, 0) != pid) {
      perror("runner: waitpid");
      return 2;
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
      passed++;
      printf("[PASS] %s::%s\n", t->suite, t->name);
    } else if (WIFEXITED(st)) {
      failed++;
      printf("[FAIL] %s::%s: exit status %d\n", t->suite, t->name, WEXITSTATUS(st));
    } else {
      crashed++;
      failed++;
      printf("[FAIL] %s::%s: %s\n", t->suite, t->name,
             WTERMSIG(st) == SIGALRM ? "timed out" : strsignal(WTERMSIG(st)));
    }
    fflush(stdout);
  }
  printf("[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: %d \n", tested,
         passed, failed, crashed);
  return failed == 0 ? 0 : 1;
}
