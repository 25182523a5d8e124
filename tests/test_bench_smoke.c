/* test_bench_smoke.c — the benchmark suite cannot rot: every benchmark of
 * scripts/bench.sh runs once, tiny, under LD_PRELOAD of libsizeclass and
 * must exit 0 with a RESULT line (each benchmark checks its own blocks), and
 * the content checks of every benchmark program must fire when a block is
 * corrupted on purpose (BENCH_CORRUPT), so a broken allocator cannot look
 * fast. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/** Every benchmark the runner knows; suite_is_covered keeps this in sync. */
static const char *const benches[] = {
    "frame-burst",      "micro-lifo-1",   "micro-lifo-100", "micro-lifo-10k",
    "micro-lifo-100k",  "micro-rand-100", "micro-rand-10k", "micro-rand-100k",
    "xthread-prodcons", "xthread-larson", "mixed",          "thread-churn",
    "python",           "python-malloc",  "perl",           "sqlite",
};
#define NBENCH (sizeof(benches) / sizeof(benches[0]))

/** The build directory (absolute), from SC_BUILD. */
static const char *build_dir(void) {
  const char *b = getenv("SC_BUILD");
  cr_assert(b != NULL && b[0] != 0, "SC_BUILD must point at the build directory");
  return b;
}

/** Path of scripts/bench.sh: in the working directory (make runs the tests
 * from the repository root), else next to the build directory. */
static void runner_path(char *out, size_t cap) {
  if (access("scripts/bench.sh", X_OK) == 0) {
    snprintf(out, cap, "scripts/bench.sh");
    return;
  }
  snprintf(out, cap, "%s/../scripts/bench.sh", build_dir());
  cr_assert(access(out, X_OK) == 0, "scripts/bench.sh not found");
}

/** Run a shell command, capture stdout+stderr into out; return its exit
 * status (-1 if it did not exit normally). */
static int run(const char *cmd, char *out, size_t cap) {
  char full[4096];
  snprintf(full, sizeof(full), "%s 2>&1", cmd);
  FILE *f = popen(full, "r");
  cr_assert(f != NULL, "popen failed for %s", cmd);
  size_t n = 0, r;
  while (n + 1 < cap && (r = fread(out + n, 1, cap - 1 - n, f)) > 0) n += r;
  out[n] = 0;
  char sink[4096];
  while (fread(sink, 1, sizeof(sink), f) > 0) {
  }
  int status = pclose(f);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/** Run one benchmark in smoke mode and check its RESULT. */
static void smoke(const char *name) {
  char runner[1024], cmd[4096], out[16384], want[256];
  runner_path(runner, sizeof(runner));
  snprintf(cmd, sizeof(cmd), "BUILD='%s' %s --smoke --only '^%s$'", build_dir(), runner, name);
  int rc = run(cmd, out, sizeof(out));
  cr_assert_eq(rc, 0, "%s failed (exit %d):\n%s", name, rc, out);
  snprintf(want, sizeof(want), "smoke %s: ", name);
  const char *line = strstr(out, want);
  cr_assert(line != NULL, "no result line for %s:\n%s", name, out);
  double metric = strtod(line + strlen(want), NULL);
  cr_assert_gt(metric, 0.0, "%s reported a metric of %f:\n%s", name, metric, out);
}

Test(bench_smoke, frame_burst, .timeout = 120) { smoke("frame-burst"); }
Test(bench_smoke, micro_lifo_1, .timeout = 120) { smoke("micro-lifo-1"); }
Test(bench_smoke, micro_lifo_100, .timeout = 120) { smoke("micro-lifo-100"); }
Test(bench_smoke, micro_lifo_10k, .timeout = 120) { smoke("micro-lifo-10k"); }
Test(bench_smoke, micro_lifo_100k, .timeout = 120) { smoke("micro-lifo-100k"); }
Test(bench_smoke, micro_rand_100, .timeout = 120) { smoke("micro-rand-100"); }
Test(bench_smoke, micro_rand_10k, .timeout = 120) { smoke("micro-rand-10k"); }
Test(bench_smoke, micro_rand_100k, .timeout = 120) { smoke("micro-rand-100k"); }
Test(bench_smoke, xthread_prodcons, .timeout = 120) { smoke("xthread-prodcons"); }
Test(bench_smoke, xthread_larson, .timeout = 120) { smoke("xthread-larson"); }
Test(bench_smoke, mixed, .timeout = 120) { smoke("mixed"); }
Test(bench_smoke, thread_churn, .timeout = 120) { smoke("thread-churn"); }
Test(bench_smoke, python, .timeout = 120) { smoke("python"); }
Test(bench_smoke, python_malloc, .timeout = 120) { smoke("python-malloc"); }
Test(bench_smoke, perl, .timeout = 120) { smoke("perl"); }
Test(bench_smoke, sqlite, .timeout = 120) { smoke("sqlite"); }

/* Every benchmark the runner lists has a smoke test above, and vice versa. */
Test(bench_smoke, suite_is_covered) {
  char runner[1024], cmd[2048], out[8192];
  runner_path(runner, sizeof(runner));
  snprintf(cmd, sizeof(cmd), "%s --list", runner);
  cr_assert_eq(run(cmd, out, sizeof(out)), 0, "%s --list failed:\n%s", runner, out);
  size_t listed = 0;
  for (char *save = NULL, *name = strtok_r(out, "\n", &save); name != NULL;
       name = strtok_r(NULL, "\n", &save)) {
    int found = 0;
    for (size_t i = 0; i < NBENCH; i++) found |= strcmp(benches[i], name) == 0;
    cr_expect(found, "benchmark '%s' has no smoke test", name);
    listed++;
  }
  cr_assert_eq(listed, NBENCH, "runner lists %zu benchmarks, the smoke tests know %zu", listed,
               NBENCH);
}

/** Run a benchmark program with its 3rd stamped block corrupted; it must
 * notice, say so, and exit 3. */
static void corrupt(const char *prog, const char *args) {
  char cmd[4096], out[16384];
  snprintf(cmd, sizeof(cmd), "BENCH_CORRUPT=3 LD_PRELOAD='%s/libsizeclass.so' '%s/bench/%s' %s",
           build_dir(), build_dir(), prog, args);
  int rc = run(cmd, out, sizeof(out));
  cr_assert_eq(rc, 3, "%s %s: want exit 3 on a corrupted block, got %d:\n%s", prog, args, rc, out);
  cr_assert(strstr(out, "bench: ") != NULL && strstr(out, "RESULT ") == NULL,
            "%s %s: no mismatch report, or a result anyway:\n%s", prog, args, out);
}

Test(bench_verify, frame_burst_detects_corruption) { corrupt("frame_burst", "--frames 50"); }
Test(bench_verify, micro_detects_corruption) { corrupt("micro", "--ws 10 --pairs 100"); }
Test(bench_verify, prodcons_detects_corruption) {
  corrupt("cross_thread", "--mode prodcons --ops 1000");
}
Test(bench_verify, larson_detects_corruption) {
  corrupt("cross_thread", "--mode larson --threads 2 --slots 100 --ops 1000");
}
Test(bench_verify, mixed_detects_corruption) { corrupt("mixed", "--steps 2000"); }
Test(bench_verify, thread_churn_detects_corruption) {
  corrupt("thread_churn", "--batches 2 --threads 2 --allocs 40");
}
