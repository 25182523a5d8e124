/* SPDX-License-Identifier: MIT */
/* test_bench_smoke.c — the benchmark suite cannot rot: every benchmark of
 * scripts/bench.sh runs once, tiny, under LD_PRELOAD of libsizeclass and
 * must exit 0 with a RESULT line (each benchmark checks its own blocks) that
 * carries minor faults and system time, and the content checks of every
 * benchmark program must fire when a block is corrupted on purpose
 * (BENCH_CORRUPT), so a broken allocator cannot look fast. The footprint
 * section (peak and settled RSS, issue 7) runs tiny too, frame_burst's
 * --settle-ms mode and frame_latency's percentiles and pacing report what
 * they promise, and bench/report.py turns raw rows into its tables. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/** Every benchmark the runner knows; suite_is_covered keeps this in sync. */
static const char *const benches[] = {
    "frame-burst",
    "micro-lifo-1",
    "micro-lifo-100",
    "micro-lifo-10k",
    "micro-lifo-100k",
    "micro-rand-100",
    "micro-rand-10k",
    "micro-rand-100k",
    "micro-mixed-1k",
    "prodcons",
    "xthread-prodcons",
    "xthread-larson",
    "mixed",
    "thread-churn",
    "lifo-batch",
    "random-replace",
    "cxx-game",
    "frame-latency",
    "thread-rounds",
    "sizes-2t",
    "sizes-2t-pass",
    "sizes-2t-rounds",
    "thread-spawn",
    "stress-8t",
    "python",
    "python-malloc",
    "perl",
    "sqlite",
    "cppcheck",
    "gxx",
    "freeciv",
    "redis",
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
  /* getrusage's figures made it through: every process faults in a few
   * pages at least, and the system time is a number. */
  const char *faults = strstr(line, "minor faults ");
  cr_assert(faults != NULL, "no minor faults for %s:\n%s", name, out);
  cr_assert_gt(strtol(faults + 13, NULL, 10), 0, "%s: no minor faults counted:\n%s", name, out);
  const char *sys = strstr(line, "system ");
  cr_assert(sys != NULL && sys[7] >= '0' && sys[7] <= '9', "no system time for %s:\n%s", name, out);
}

Test(bench_smoke, frame_burst, .timeout = 120) { smoke("frame-burst"); }
Test(bench_smoke, micro_lifo_1, .timeout = 120) { smoke("micro-lifo-1"); }
Test(bench_smoke, micro_lifo_100, .timeout = 120) { smoke("micro-lifo-100"); }
Test(bench_smoke, micro_lifo_10k, .timeout = 120) { smoke("micro-lifo-10k"); }
Test(bench_smoke, micro_lifo_100k, .timeout = 120) { smoke("micro-lifo-100k"); }
Test(bench_smoke, micro_rand_100, .timeout = 120) { smoke("micro-rand-100"); }
Test(bench_smoke, micro_rand_10k, .timeout = 120) { smoke("micro-rand-10k"); }
Test(bench_smoke, micro_rand_100k, .timeout = 120) { smoke("micro-rand-100k"); }
Test(bench_smoke, micro_mixed_1k, .timeout = 120) { smoke("micro-mixed-1k"); }
Test(bench_smoke, xthread_prodcons, .timeout = 120) { smoke("xthread-prodcons"); }
Test(bench_smoke, xthread_larson, .timeout = 120) { smoke("xthread-larson"); }
Test(bench_smoke, mixed, .timeout = 120) { smoke("mixed"); }
Test(bench_smoke, thread_churn, .timeout = 120) { smoke("thread-churn"); }
Test(bench_smoke, python, .timeout = 120) { smoke("python"); }
Test(bench_smoke, python_malloc, .timeout = 120) { smoke("python-malloc"); }
Test(bench_smoke, perl, .timeout = 120) { smoke("perl"); }
Test(bench_smoke, sqlite, .timeout = 120) { smoke("sqlite"); }
Test(bench_smoke, lifo_batch, .timeout = 120) { smoke("lifo-batch"); }
Test(bench_smoke, random_replace, .timeout = 120) { smoke("random-replace"); }
Test(bench_smoke, cxx_game, .timeout = 120) { smoke("cxx-game"); }
Test(bench_smoke, frame_latency, .timeout = 120) { smoke("frame-latency"); }
Test(bench_smoke, thread_rounds, .timeout = 120) { smoke("thread-rounds"); }
Test(bench_smoke, sizes_2t, .timeout = 120) { smoke("sizes-2t"); }
Test(bench_smoke, sizes_2t_pass, .timeout = 120) { smoke("sizes-2t-pass"); }
Test(bench_smoke, sizes_2t_rounds, .timeout = 120) { smoke("sizes-2t-rounds"); }
Test(bench_smoke, cppcheck, .timeout = 120) { smoke("cppcheck"); }
Test(bench_smoke, gxx, .timeout = 120) { smoke("gxx"); }
Test(bench_smoke, thread_spawn, .timeout = 120) { smoke("thread-spawn"); }
Test(bench_smoke, stress_8t, .timeout = 120) { smoke("stress-8t"); }
Test(bench_smoke, freeciv, .timeout = 120) { smoke("freeciv"); }
Test(bench_smoke, redis, .timeout = 120) { smoke("redis"); }

/** The integer after "key=" in s, or -1 when absent. */
static long long field(const char *s, const char *key) {
  const char *p = strstr(s, key);
  return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/* The footprint section's command lines: both programs, with and without
 * --trim 1, report a settled RSS no larger than their peak. */
Test(bench_smoke, footprint_section, .timeout = 120) {
  static const char *const names[] = {"frame-burst-settle", "level-burst-settle"};
  static const char *const labels[] = {"libsizeclass:", "libsizeclass+malloc_trim:"};
  char runner[1024], cmd[4096], out[16384], want[256];
  runner_path(runner, sizeof(runner));
  snprintf(cmd, sizeof(cmd), "BUILD='%s' %s --smoke --sections footprint", build_dir(), runner);
  int rc = run(cmd, out, sizeof(out));
  cr_assert_eq(rc, 0, "footprint section failed (exit %d):\n%s", rc, out);
  for (size_t i = 0; i < 2; i++) {
    for (size_t j = 0; j < 2; j++) {
      snprintf(want, sizeof(want), "smoke footprint %s %s settled ", names[i], labels[j]);
      const char *line = strstr(out, want);
      cr_assert(line != NULL, "no line '%s':\n%s", want, out);
      char *end;
      long long settled = strtoll(line + strlen(want), &end, 10);
      const char *peak_at = strstr(end, "peak ");
      cr_assert(peak_at != NULL, "no peak after '%s':\n%s", want, out);
      long long peak = strtoll(peak_at + 5, NULL, 10);
      cr_assert_gt(settled, 0, "%s settled %lld:\n%s", want, settled, out);
      cr_assert_geq(peak, settled, "%s peak %lld below settled %lld:\n%s", want, peak, settled,
                    out);
    }
  }
}

/* frame_burst --settle-ms: the frame count follows the option, the figures
 * are there and consistent, --trim 1 does the same work (same checksum),
 * and without the option none of it runs. */
Test(bench_smoke, frame_burst_settle, .timeout = 120) {
  char cmd[4096], out[2][16384];
  const char *args[2] = {"--frames 300 --settle-ms 100", "--frames 300 --settle-ms 100 --trim 1"};
  for (int k = 0; k < 2; k++) {
    snprintf(cmd, sizeof(cmd), "LD_PRELOAD='%s/libsizeclass.so' '%s/bench/frame_burst' %s",
             build_dir(), build_dir(), args[k]);
    int rc = run(cmd, out[k], sizeof(out[k]));
    cr_assert_eq(rc, 0, "frame_burst %s failed (exit %d):\n%s", args[k], rc, out[k]);
    const char *line = strstr(out[k], "frame_burst: ");
    cr_assert(line != NULL, "no frame_burst: line:\n%s", out[k]);
    cr_assert_eq(field(line, "settle_frames="), 6, "100 ms at 60 Hz is 6 frames:\n%s", out[k]);
    long long settled = field(line, "settled_rss_kb="), peak = field(line, "peak_rss_kb=");
    cr_assert_gt(settled, 0, "settled_rss_kb missing:\n%s", out[k]);
    cr_assert_geq(peak, settled, "peak below settled:\n%s", out[k]);
    cr_assert_eq(field(line, "trim="), k, "trim= is not %d:\n%s", k, out[k]);
    cr_assert(strstr(out[k], "RESULT bench=frame-burst ") != NULL, "no RESULT:\n%s", out[k]);
  }
  const char *c0 = strstr(out[0], "checksum="), *c1 = strstr(out[1], "checksum=");
  cr_assert(c0 && c1 && strncmp(c0, c1, 25) == 0, "--trim 1 changed the work:\n%s\n%s", out[0],
            out[1]);
  snprintf(cmd, sizeof(cmd), "LD_PRELOAD='%s/libsizeclass.so' '%s/bench/frame_burst' --frames 300",
           build_dir(), build_dir());
  cr_assert_eq(run(cmd, out[0], sizeof(out[0])), 0, "frame_burst failed:\n%s", out[0]);
  cr_assert(strstr(out[0], "frame_burst: ") == NULL && strstr(out[0], "RESULT ") != NULL,
            "default frame_burst printed settle figures or no result:\n%s", out[0]);
}

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
Test(bench_verify, frame_burst_settle_detects_corruption) {
  corrupt("frame_burst", "--frames 0 --settle-ms 100"); /* the block is made in a light frame */
}
Test(bench_verify, footprint_detects_corruption) {
  corrupt("footprint", "--levels 1 --level-mb 1 --burst-mb 1 --settle-ms 20");
}
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
Test(bench_verify, lifo_batch_detects_corruption) { corrupt("lifo_batch", "--blocks 200"); }
Test(bench_verify, random_replace_detects_corruption) {
  corrupt("random_replace", "--steps 200 --live 50");
}
Test(bench_verify, cxx_game_detects_corruption) { corrupt("cxx_game", "--frames 20"); }
Test(bench_verify, frame_latency_detects_corruption) {
  corrupt("frame_latency", "--load 1000 --frames 3 --frame-us 100");
}
Test(bench_verify, thread_rounds_detects_corruption) {
  corrupt("thread_rounds", "--rounds 2 --objects 50");
}
Test(bench_verify, sizes_2t_detects_corruption) { corrupt("sizes_2t", "--ops 500 --slots 20"); }
Test(bench_verify, sizes_2t_pass_detects_corruption) {
  corrupt("sizes_2t", "--ops 500 --slots 20 --pass 500");
}
Test(bench_verify, sizes_2t_rounds_detects_corruption) {
  corrupt("sizes_2t_rounds", "--rounds 2 --steps 100 --min-ws 20 --max-ws 40");
}
Test(bench_verify, thread_spawn_detects_corruption) { corrupt("thread_spawn", "--threads 20"); }
Test(bench_verify, stress_mt_detects_corruption) {
  corrupt("stress_mt", "--ops 300 --threads 4 --slots 16");
}

/* The gxx benchmark's check reads the object file: with BENCH_CORRUPT=1
 * the launcher renames one generated function in the source, g++ still
 * compiles it, and the run must fail because the object lacks that symbol
 * (and print no RESULT). Without it the same run passes. */
Test(bench_verify, gxx_detects_missing_function, .timeout = 120) {
  char script[1024], cmd[4096], out[16384];
  if (access("bench/real/run_real.py", R_OK) == 0)
    snprintf(script, sizeof(script), "bench/real/run_real.py");
  else
    snprintf(script, sizeof(script), "%s/../bench/real/run_real.py", build_dir());
  for (int k = 0; k < 2; k++) {
    snprintf(cmd, sizeof(cmd),
             "BENCH_CORRUPT=%d BENCH_PRELOAD='%s/libsizeclass.so' python3 '%s' gxx 2", k,
             build_dir(), script);
    int rc = run(cmd, out, sizeof(out));
    if (k == 0) {
      cr_assert_eq(rc, 0, "gxx failed without BENCH_CORRUPT (exit %d):\n%s", rc, out);
      cr_assert(strstr(out, "RESULT bench=gxx ") != NULL, "no RESULT:\n%s", out);
    } else {
      cr_assert_neq(rc, 0, "gxx passed with a function renamed:\n%s", out);
      cr_assert(strstr(out, "gxx printed a wrong result") != NULL && strstr(out, "RESULT ") == NULL,
                "no mismatch report, or a result anyway:\n%s", out);
    }
  }
}

/** The float after "key=" in s (-1 when absent). */
static double ffield(const char *s, const char *key) {
  const char *p = strstr(s, key);
  return p ? strtod(p + strlen(key), NULL) : -1.0;
}

/* frame_latency: the percentiles come out in order, every figure is there,
 * and the frames are paced (25 frames 4 ms apart take at least 96 ms). */
Test(bench_smoke, frame_latency_figures, .timeout = 120) {
  static const char *const order[] = {
      "p50_ns=", "p90_ns=", "p99_ns=", "p999_ns=", "p9999_ns=", "max_ns="};
  char cmd[4096], out[16384];
  snprintf(cmd, sizeof(cmd),
           "LD_PRELOAD='%s/libsizeclass.so' '%s/bench/frame_latency' --load 20000 --frames 25 "
           "--frame-us 4000 --pairs 100",
           build_dir(), build_dir());
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cr_assert_eq(run(cmd, out, sizeof(out)), 0, "frame_latency failed:\n%s", out);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  cr_assert_geq(ms, 96.0, "25 frames of 4 ms took %.1f ms: not paced:\n%s", ms, out);
  const char *extra = strstr(out, "EXTRA ");
  cr_assert(extra != NULL, "no EXTRA line:\n%s", out);
  cr_assert_geq(ffield(extra, "calls="), 25 * 200.0, "fewer calls than 25 x 100 pairs:\n%s", out);
  double prev = 0;
  for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
    double v = ffield(extra, order[i]);
    cr_assert_geq(v, prev, "%s%.0f is below the previous percentile:\n%s", order[i], v, out);
    prev = v;
  }
  cr_assert_gt(prev, 0.0, "max_ns is 0:\n%s", out);
  double f50 = ffield(extra, "frame_p50_us="), f99 = ffield(extra, "frame_p99_us="),
         fmax = ffield(extra, "frame_max_us=");
  cr_assert(f50 > 0 && f50 <= f99 && f99 <= fmax, "frame times out of order:\n%s", out);
  /* The worst frame holds at least the slowest call. */
  cr_assert_geq(fmax * 1000.0, prev, "worst frame below the slowest call:\n%s", out);
}

/** Path of bench/report.py, found like scripts/bench.sh. */
static void report_path(char *out, size_t cap) {
  if (access("bench/report.py", R_OK) == 0) {
    snprintf(out, cap, "bench/report.py");
    return;
  }
  snprintf(out, cap, "%s/../bench/report.py", build_dir());
  cr_assert(access(out, R_OK) == 0, "bench/report.py not found");
}

/** Write raw rows for bench/report.py: one benchmark, every allocator,
 * with or without a checksum that disagrees. */
static void write_rows(const char *path, int disagree) {
  static const char *const allocs[] = {"glibc",    "jemalloc",     "mimalloc",
                                       "tcmalloc", "libsizeclass", "libsizeclass+stats"};
  FILE *f = fopen(path, "w");
  cr_assert(f != NULL, "cannot write %s", path);
  for (int run = 1; run <= 2; run++)
    for (size_t a = 0; a < 6; a++) {
      fprintf(f,
              "main\tframe-latency\tns/call\t%s\t%d\t%zu.5\t%zu\t%s\t%zu\t%zu.0\tcalls=100 "
              "timer_ns=20 p50_ns=%zu p90_ns=100 p99_ns=200 p999_ns=300 p9999_ns=400 max_ns=500 "
              "frame_p50_us=1.0 frame_p99_us=2.0 frame_max_us=3.0 load_ms=1.0\n",
              allocs[a], run, 100 + a, 2048 + a, disagree && a == 4 ? "bad" : "c0ffee", 1000 + a,
              10 + a, 30 + a);
      fprintf(f, "main\tredis\tus/req\t%s\t%d\t12.5\t%zu\t5eed\t%zu\t9.0\treq_per_s=80000\n",
              allocs[a], run, 16000 + a, 2000 + a);
    }
  fprintf(f, "main\tmicro-lifo-1\tns/pair\tglibc\t1\t11.0\t1600\tabc\n"); /* 8 fields */
  fclose(f);
}

/** Write raw rows for issues 18's and 22's targets: per benchmark, the
 * metric and peak RSS (KiB) of glibc, jemalloc, mimalloc, tcmalloc,
 * libsizeclass and libsizeclass+stats, two runs alike. */
static void write_target_rows(const char *path) {
  static const char *const allocs[] = {"glibc",    "jemalloc",     "mimalloc",
                                       "tcmalloc", "libsizeclass", "libsizeclass+stats"};
  static const struct {
    const char *name, *unit;
    double v[6];
    unsigned rss[6];
  } rows[] = {
      /* exact tier 1.20x the default: issue 18's micro target missed */
      {"micro-lifo-1", "ns/pair", {20, 20, 20, 20, 10, 12}, {2048, 2048, 2048, 2048, 2048, 2048}},
      /* 1.02x: frame-burst holds */
      {"frame-burst",
       "ns/alloc",
       {200, 200, 200, 200, 100, 102},
       {2048, 2048, 2048, 2048, 2048, 2048}},
      /* 1.05x: threaded holds; 2.00x tcmalloc: issue 22's best-peer time missed */
      {"xthread-larson",
       "ns/block",
       {200, 90, 80, 50, 100, 105},
       {4096, 4096, 4096, 4096, 4096, 4096}},
      /* above glibc's time, and 2.67x the best peer's peak RSS */
      {"sizes-2t-pass",
       "ns/step",
       {90, 50, 50, 50, 100, 100},
       {30720, 30720, 30720, 30720, 81920, 81920}},
  };
  FILE *f = fopen(path, "w");
  cr_assert(f != NULL, "cannot write %s", path);
  for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++)
    for (int run = 1; run <= 2; run++)
      for (size_t a = 0; a < 6; a++)
        fprintf(f, "main\t%s\t%s\t%s\t%d\t%.1f\t%u\tc0ffee\t100\t1.0\t-\n", rows[r].name,
                rows[r].unit, allocs[a], run, rows[r].v[a], rows[r].rss[a]);
  fclose(f);
}

/* bench/report_targets.py: issue 18's and 22's lines say holds, missed
 * (naming the benchmark and its ratio) or not measured, from the figures. */
Test(bench_report, issue_18_and_22_targets_from_raw_rows, .timeout = 60) {
  static const char *const want[] = {
      "- micro <= 1.15x: **missed** — micro-lifo-1 1.20",
      "- frame-burst <= 1.03x: holds",
      "- every threaded benchmark <= 1.10x: holds",
      "- python-malloc and freeciv <= 1.05x: not measured in this run",
      "- every benchmark <= glibc's time (sizes-2t-pass, thread-spawn and redis among them): "
      "**missed** — sizes-2t-pass 1.11",
      "best peer's time: **missed** — xthread-larson vs tcmalloc 2.00",
      "- their peak RSS, and sizes-2t-pass's, <= 1.25x the best peer's: **missed** — "
      "sizes-2t-pass 2.67"};
  char report[1024], cmd[4096], out[65536];
  char raw[] = "/tmp/bench-targets-XXXXXX";
  int fd = mkstemp(raw);
  cr_assert(fd >= 0, "mkstemp failed");
  close(fd);
  report_path(report, sizeof(report));
  write_target_rows(raw);
  snprintf(cmd, sizeof(cmd), "python3 '%s' --raw '%s' --md '%s.md'", report, raw, raw);
  int rc = run(cmd, out, sizeof(out));
  cr_assert_eq(rc, 0, "report.py failed (exit %d):\n%s", rc, out);
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    cr_expect(strstr(out, want[i]) != NULL, "no '%s' in the report:\n%s", want[i], out);
  snprintf(cmd, sizeof(cmd), "%s.md", raw);
  unlink(cmd);
  unlink(raw);
}

/* bench/report_targets.py: issue 31's lines (the C++ workloads, the public
 * two-thread pattern, their peak RSS) say holds or missed with the
 * benchmark and its ratio, from rows made to hold one and miss the rest. */
Test(bench_report, issue_31_targets_from_raw_rows, .timeout = 60) {
  static const char *const allocs[] = {"glibc",    "jemalloc",     "mimalloc",
                                       "tcmalloc", "libsizeclass", "libsizeclass+stats"};
  static const struct {
    const char *name, *unit;
    double v[6];
    unsigned rss[6];
  } rows[] = {
      /* below glibc's time, 1.19x mimalloc's */
      {"cxx-game", "us/frame", {100, 90, 80, 85, 95, 96}, {4096, 4096, 4096, 4096, 4096, 4096}},
      /* the best time, 2.00x the best peer's peak RSS */
      {"cppcheck", "ms", {100, 100, 100, 100, 90, 91}, {4096, 4096, 4096, 4096, 8192, 8192}},
      /* 1.05x glibc's time, glibc the best peer: within 1.10x of it */
      {"gxx", "ms", {100, 104, 103, 102, 105, 105}, {4096, 4096, 4096, 4096, 4096, 4096}},
      /* 1.10x glibc's time */
      {"sizes-2t-rounds",
       "ns/block",
       {100, 100, 100, 100, 110, 110},
       {4096, 4096, 4096, 4096, 4096, 4096}},
  };
  /* Each line ends at the newline: the misses listed are exactly these. */
  static const char *const want[] = {
      "## Targets (issue 31, default tier)",
      "- the C++ workloads (cxx-game, cppcheck, gxx) <= glibc's time: **missed** — gxx vs "
      "glibc 1.05\n",
      "- the C++ workloads (cxx-game, cppcheck, gxx) <= 1.10x the best peer's time: **missed** — "
      "cxx-game vs mimalloc 1.19\n",
      "- sizes-2t-rounds (the public two-thread pattern) <= glibc's time: **missed** — "
      "sizes-2t-rounds 1.10\n",
      "- their peak RSS <= 1.25x the best peer's: **missed** — cppcheck 2.00\n"};
  char report[1024], cmd[4096], out[65536];
  char raw[] = "/tmp/bench-targets31-XXXXXX";
  int fd = mkstemp(raw);
  cr_assert(fd >= 0, "mkstemp failed");
  close(fd);
  FILE *f = fopen(raw, "w");
  cr_assert(f != NULL, "cannot write %s", raw);
  for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++)
    for (int run = 1; run <= 2; run++)
      for (size_t a = 0; a < 6; a++)
        fprintf(f, "main\t%s\t%s\t%s\t%d\t%.1f\t%u\tc0ffee\t100\t1.0\t-\n", rows[r].name,
                rows[r].unit, allocs[a], run, rows[r].v[a], rows[r].rss[a]);
  fclose(f);
  report_path(report, sizeof(report));
  snprintf(cmd, sizeof(cmd), "python3 '%s' --raw '%s' --md '%s.md'", report, raw, raw);
  int rc = run(cmd, out, sizeof(out));
  cr_assert_eq(rc, 0, "report.py failed (exit %d):\n%s", rc, out);
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    cr_expect(strstr(out, want[i]) != NULL, "no '%s' in the report:\n%s", want[i], out);
  snprintf(cmd, sizeof(cmd), "%s.md", raw);
  unlink(cmd);
  unlink(raw);
}

/* bench/report.py: the tables of the new columns are there (both tiers,
 * faults, system time, latency, key-value server, targets), an old 8-field
 * row still loads, and disagreeing checksums fail the report. */
Test(bench_report, tables_from_raw_rows, .timeout = 60) {
  static const char *const want[] = {"| libsizeclass | libsizeclass+stats |",
                                     "## Exact-statistics tier: time ratios",
                                     "## Minor page faults",
                                     "## System time",
                                     "## Frame latency",
                                     "| libsizeclass / best peer |",
                                     "## Key-value server (redis)",
                                     "## Targets (issue 10",
                                     "## Targets (issue 11)",
                                     "| micro-lifo-1 |"};
  char report[1024], cmd[4096], out[65536];
  char raw[] = "/tmp/bench-report-XXXXXX";
  int fd = mkstemp(raw);
  cr_assert(fd >= 0, "mkstemp failed");
  close(fd);
  report_path(report, sizeof(report));
  write_rows(raw, 0);
  snprintf(cmd, sizeof(cmd), "python3 '%s' --raw '%s' --md '%s.md'", report, raw, raw);
  int rc = run(cmd, out, sizeof(out));
  cr_assert_eq(rc, 0, "report.py failed (exit %d):\n%s", rc, out);
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    cr_expect(strstr(out, want[i]) != NULL, "no '%s' in the report:\n%s", want[i], out);
  write_rows(raw, 1);
  rc = run(cmd, out, sizeof(out));
  cr_expect_eq(rc, 1, "disagreeing checksums must fail the report (exit %d):\n%s", rc, out);
  cr_expect(strstr(out, "## Checksum mismatches") != NULL, "no mismatch section:\n%s", out);
  snprintf(cmd, sizeof(cmd), "%s.md", raw);
  unlink(cmd);
  unlink(raw);
}
