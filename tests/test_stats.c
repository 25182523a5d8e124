/* SPDX-License-Identifier: MIT */
/* test_stats.c — the statistics report (issue 3, docs/stats.md).
 *
 * Exact numbers come from tests/progs/stats_pattern run under LD_PRELOAD:
 * a known pattern (1000 x 40 B and 300 x 700 B, half freed, across three
 * threads, plus system-allocator calls) whose every counter the test
 * derives from the pattern itself. The C runtime makes one allocation of its
 * own (a thread's TLS vector); a "baseline" run of the same program without
 * the pattern shows it, and must leave the pattern's classes empty. JSON
 * reports are parsed by python3's json module; text reports are split into
 * cells and compared, cell by cell, with the rendering docs/stats.md
 * specifies of the JSON values of the same state. */
#include "sizeclass.h"
#include "stats_util.h"

/* The in-process tests read exact figures (requested bytes, histogram):
 * this program switches exact statistics on before its first allocation. */
const char *const sizeclass_options = "SIZECLASS_STATS_EXACT=1";

/* ---- the pattern (see tests/progs/stats_pattern.c) ------------------------------- */

enum { C64 = 2, C256 = 4, C1024 = 6, PAGE = 65536 };

/* Raw expectations of one class; everything else follows from them. */
typedef struct {
  uint64_t size, pages, allocs, frees, remote, fresh, peak;
  uint64_t req_live, req_peak, req_total;
  unsigned bucket; /* the one histogram bucket used */
} expect_t;

/* 40 B -> class 64, bucket ceil(40/16) = 3. Main: 1000 + 100 again; B: 200;
 * C: 1. Frees: B 250 remote + 50 local, C 1, main 250. Fresh: main's 1000
 * and B's 200 (main's 100 and C's 1 reuse freed blocks). Peaks: main 1000,
 * B 200 (C, adopting B's arena, stays below). Pages: one per arena that
 * carved (1024 blocks each). Peak requested: 40 B each at those peaks. */
static const expect_t exp64 = {.size = 64,
                               .pages = 2,
                               .allocs = 1301,
                               .frees = 551,
                               .remote = 250,
                               .fresh = 1200,
                               .peak = 1200,
                               .req_live = 750 * 40,
                               .req_peak = 1200 * 40,
                               .req_total = 1301 * 40,
                               .bucket = 3};
/* 700 B -> class 1024, bucket 44. Main: 300 + 30 again (the 30 reuse blocks
 * main freed in its last page). Frees: B 75 remote, main 75. 300 blocks need
 * 5 pages of 64. */
static const expect_t exp1024 = {.size = 1024,
                                 .pages = 5,
                                 .allocs = 330,
                                 .frees = 150,
                                 .remote = 75,
                                 .fresh = 300,
                                 .peak = 300,
                                 .req_live = 180 * 700,
                                 .req_peak = 300 * 700,
                                 .req_total = 330 * 700,
                                 .bucket = 44};

/* 20 x 200 B -> class 256 (bucket 13), all live: small byte figures. */
static const expect_t exp256 = {.size = 256,
                                .pages = 1,
                                .allocs = 20,
                                .frees = 0,
                                .remote = 0,
                                .fresh = 20,
                                .peak = 20,
                                .req_live = 20 * 200,
                                .req_peak = 20 * 200,
                                .req_total = 20 * 200,
                                .bucket = 13};

static uint64_t permille(uint64_t a, uint64_t b) { return a * 1000 / b; }

/** Blocks `pages` pages of class `size` made in turn by one thread hold: a
 * page of a class above 64 B that does not start at its class's first
 * colour holds one block fewer (src/core/config.h: one page in size / 64
 * starts its first block at the page's start). */
static uint64_t capacity_of(uint64_t pages, uint64_t size) {
  uint64_t colours = size > 64 ? size / 64 : 1;
  return pages * (PAGE / size) - (pages - (pages + colours - 1) / colours);
}

/** A JSON figure that is null when undefined (a class's hit rate without
 * allocations, its external fragmentation with nothing live): NULLV. */
#define NULLV UINT64_MAX
#define ju_or_null(j, ...)                                                  \
  ({                                                                        \
    const char *n_ = su_jraw((j), __VA_ARGS__);                             \
    n_ != NULL &&strcmp(n_, "null") == 0 ? NULLV : su_ju((j), __VA_ARGS__); \
  })

/** Assert every key of class object `p` (e.g. "0.classes.2") against e. */
static void check_class(const su_json_t *j, const char *p, const expect_t *e) {
  uint64_t cap = capacity_of(e->pages, e->size), live = e->allocs - e->frees;
  uint64_t reuse = e->allocs - e->fresh;
  uint64_t live_blk = live * e->size, peak_blk = e->peak * e->size;
  uint64_t total_blk = e->allocs * e->size;
  struct {
    const char *key;
    uint64_t want;
  } k[] = {
      {"size", e->size},
      {"pages", e->pages},
      {"reserved_bytes", e->pages * PAGE},
      {"capacity_blocks", cap},
      {"live_blocks", live},
      {"peak_live_blocks", e->peak},
      {"allocs", e->allocs},
      {"frees", e->frees},
      {"remote_frees", e->remote},
      {"reuse_hits", reuse},
      {"fresh_carves", e->fresh},
      {"hit_rate_permille", e->allocs ? permille(reuse, e->allocs) : NULLV},
      {"free_blocks", cap - live},
      {"external_fragmentation_permille", live ? permille(cap - live, cap) : NULLV},
      {"live_requested_bytes", e->req_live},
      {"live_block_bytes", live_blk},
      {"live_utilization_permille", permille(e->req_live, live_blk)},
      {"live_internal_fragmentation_permille", 1000 - permille(e->req_live, live_blk)},
      {"peak_requested_bytes", e->req_peak},
      {"peak_block_bytes", peak_blk},
      {"peak_utilization_permille", permille(e->req_peak, peak_blk)},
      {"peak_internal_fragmentation_permille", 1000 - permille(e->req_peak, peak_blk)},
      {"total_requested_bytes", e->req_total},
      {"total_block_bytes", total_blk},
      {"total_utilization_permille", permille(e->req_total, total_blk)},
      {"total_internal_fragmentation_permille", 1000 - permille(e->req_total, total_blk)},
      {"wasted_bytes", total_blk - e->req_total},
  };
  for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
    cr_expect_eq(ju_or_null(j, "%s.%s", p, k[i].key), k[i].want,
                 "%s.%s = %" PRIu64 ", want %" PRIu64, p, k[i].key,
                 ju_or_null(j, "%s.%s", p, k[i].key), k[i].want);
  char mean[32];
  su_tenths(mean, e->req_total * 10 / e->allocs);
  cr_expect_str_eq(su_jraw(j, "%s.mean_request_bytes", p), mean);
  cr_assert_eq(su_ju(j, "%s.request_histogram.len", p), 65);
  for (unsigned b = 0; b < 65; b++)
    cr_expect_eq(su_ju(j, "%s.request_histogram.%u", p, b), b == e->bucket ? e->allocs : 0,
                 "%s bucket %u", p, b);
}

/* One run of the pattern: its exit report, the API's text and JSON of the
 * state at the end of main, and a baseline run's exit report. */
typedef struct {
  char dir[64], path[8][160];
  char *out;
  su_json_t exit_json, api_json, base_json;
  su_text_t api_text;
} pattern_t;

enum { P_EXIT, P_API_TXT, P_API_JSON, P_BASE, P_OUT, P_ERR };

/* Where a run's setting comes from: the environment, the program's own
 * sizeclass_options string, or sc_option_set before its first allocation
 * (stats_pattern: STATS_PATTERN_API); exact statistics alone, by
 * sc_stats_enable_exact (STATS_PATTERN_ENABLE_EXACT: the setting is not
 * used, no exit report is armed). Every figure must be the same. */
typedef enum { FROM_ENV, FROM_OPTIONS, FROM_API, FROM_ENABLE } source_t;

/** The program to run for `setting` (NAME=VALUE) from `source` into
 * prog: the helper, or for FROM_OPTIONS a copy of it in dir whose
 * sizeclass_options string is the setting; *env gets the environment
 * entry that carries it (in buf), or NULL. */
static void armed(char *prog, size_t cap, const char *dir, source_t source, const char *setting,
                  char *buf, size_t bufcap, const char **env) {
  su_prog(prog, cap);
  *env = NULL;
  if (source == FROM_ENABLE) {
    *env = "STATS_PATTERN_ENABLE_EXACT=1";
    return;
  }
  if (source != FROM_OPTIONS) {
    snprintf(buf, bufcap, "%s%s", source == FROM_API ? "STATS_PATTERN_API=" : "", setting);
    *env = buf;
    return;
  }
  static const char marker[] = "@@SC_STATS_PATTERN_OPTIONS@@";
  size_t len;
  char *bin = cu_read_file(prog, &len);
  cr_assert_not_null(bin, "%s", prog);
  char *at = memmem(bin, len, marker, sizeof(marker) - 1);
  cr_assert_not_null(at, "no options marker in %s", prog);
  at--; /* the array starts with the NUL before the marker */
  cr_assert_lt(strlen(setting), 255);
  memset(at, 0, 256);
  memcpy(at, setting, strlen(setting));
  snprintf(prog, cap, "%s/stats_pattern.options", dir);
  FILE *f = fopen(prog, "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(bin, 1, len, f), len);
  fclose(f);
  cr_assert_eq(chmod(prog, 0755), 0);
  free(bin);
}

/** The pattern, with its exit report armed from `source`, beside a
 * baseline run (armed from the environment). */
static void pattern_run_from(pattern_t *r, source_t source) {
  static const char *const names[] = {"exit.json", "api.txt", "api.json",
                                      "base.json", "out",     "err"};
  char prog[256], env[300], setting[300], buf[340];
  su_tmpdir(r->dir);
  su_prog(prog, sizeof(prog));
  for (int i = 0; i < 6; i++) snprintf(r->path[i], sizeof(r->path[i]), "%s/%s", r->dir, names[i]);
  snprintf(env, sizeof(env), "SIZECLASS_STATS=%s", r->path[P_BASE]);
  const char *base_argv[] = {prog, "baseline", NULL};
  const char *base_env[] = {env, NULL};
  cr_assert_eq(su_run(base_argv, base_env, r->path[P_OUT], r->path[P_ERR], 30, true), 0);
  snprintf(setting, sizeof(setting), "SIZECLASS_STATS=%s", r->path[P_EXIT]);
  const char *run_env[] = {NULL, NULL};
  armed(prog, sizeof(prog), r->dir, source, setting, buf, sizeof(buf), &run_env[0]);
  const char *argv[] = {prog, "pattern", r->path[P_API_TXT], r->path[P_API_JSON], NULL};
  cr_assert_eq(su_run(argv, run_env, r->path[P_OUT], r->path[P_ERR], 30, true), 0);
  r->out = su_read(r->path[P_OUT]);
  if (source == FROM_API || source == FROM_ENABLE)
    cr_assert_eq(su_said(r->out, "api"), 1, "sc_option_set or sc_stats_enable_exact refused");
  memset(&r->exit_json, 0, sizeof(r->exit_json));
  if (source != FROM_ENABLE) su_json_load(&r->exit_json, r->path[P_EXIT], "one");
  su_json_load(&r->api_json, r->path[P_API_JSON], "one");
  su_json_load(&r->base_json, r->path[P_BASE], "one");
  su_text_load(&r->api_text, r->path[P_API_TXT]);
}

static void pattern_run(pattern_t *r) { pattern_run_from(r, FROM_ENV); }

static void pattern_free(pattern_t *r) {
  su_json_free(&r->exit_json);
  su_json_free(&r->api_json);
  su_json_free(&r->base_json);
  su_text_free(&r->api_text);
  free(r->out);
  cr_expect(cr_tmp_remove(r->dir));
}

/* Keys of a class object that are integers (everything but the histogram
 * and mean_request_bytes). */
static const char *const class_keys[] = {"size",
                                         "pages",
                                         "reserved_bytes",
                                         "capacity_blocks",
                                         "live_blocks",
                                         "peak_live_blocks",
                                         "allocs",
                                         "frees",
                                         "remote_frees",
                                         "reuse_hits",
                                         "fresh_carves",
                                         "hit_rate_permille",
                                         "free_blocks",
                                         "live_requested_bytes",
                                         "live_block_bytes",
                                         "peak_requested_bytes",
                                         "peak_block_bytes",
                                         "total_requested_bytes",
                                         "total_block_bytes",
                                         "wasted_bytes"};
#define N_CLASS_KEYS (sizeof(class_keys) / sizeof(class_keys[0]))

/** Every report of the pattern (exit and API) holds exactly these numbers. */
static void check_pattern_report(const pattern_t *r, const su_json_t *j) {
  /* The baseline: only the C runtime's own block, and not in our classes. */
  for (unsigned c = 0; c < 7; c++)
    if (c == C64 || c == C256 || c == C1024)
      for (size_t k = 0; k < N_CLASS_KEYS; k++)
        if (strcmp(class_keys[k], "size") != 0)
          cr_assert_eq(ju_or_null(&r->base_json, "0.classes.%u.%s", c, class_keys[k]),
                       strcmp(class_keys[k], "hit_rate_permille") == 0 ? NULLV : 0,
                       "class %u %s: no allocations", c, class_keys[k]);
  check_class(j, "0.classes.2", &exp64);
  check_class(j, "0.classes.6", &exp1024);
  check_class(j, "0.classes.4", &exp256);
  /* Every other class is exactly the baseline's. */
  for (unsigned c = 0; c < 7; c++) {
    if (c == C64 || c == C256 || c == C1024) continue;
    for (size_t k = 0; k < N_CLASS_KEYS; k++)
      cr_expect_eq(ju_or_null(j, "0.classes.%u.%s", c, class_keys[k]),
                   ju_or_null(&r->base_json, "0.classes.%u.%s", c, class_keys[k]), "class %u %s", c,
                   class_keys[k]);
    for (unsigned b = 0; b < 65; b++)
      cr_expect_eq(su_ju(j, "0.classes.%u.request_histogram.%u", c, b),
                   su_ju(&r->base_json, "0.classes.%u.request_histogram.%u", c, b));
  }
  /* Totals: sums over the classes; their ratios from the sums. */
  for (size_t k = 1; k < N_CLASS_KEYS; k++) {
    if (strcmp(class_keys[k], "hit_rate_permille") == 0) continue;
    uint64_t sum = 0;
    for (unsigned c = 0; c < 7; c++) sum += su_ju(j, "0.classes.%u.%s", c, class_keys[k]);
    cr_expect_eq(su_ju(j, "0.totals.%s", class_keys[k]), sum, "totals.%s", class_keys[k]);
  }
  cr_expect_eq(su_ju(j, "0.totals.hit_rate_permille"),
               permille(su_ju(j, "0.totals.reuse_hits"), su_ju(j, "0.totals.allocs")));
  cr_expect_eq(ju_or_null(j, "0.totals.external_fragmentation_permille"),
               su_ju(j, "0.totals.live_blocks") ? permille(su_ju(j, "0.totals.free_blocks"),
                                                           su_ju(j, "0.totals.capacity_blocks"))
                                                : NULLV);
  cr_expect_eq(
      su_ju(j, "0.totals.live_utilization_permille"),
      permille(su_ju(j, "0.totals.live_requested_bytes"), su_ju(j, "0.totals.live_block_bytes")));
  cr_expect_null(su_jraw(j, "0.totals.size"));
  /* Arenas: main's, B's (created), adopted by C. */
  cr_expect_eq(su_ju(j, "0.arenas.created"), 2);
  cr_expect_eq(su_ju(j, "0.arenas.live"), 1);
  cr_expect_eq(su_ju(j, "0.arenas.adopted"), 1);
  cr_expect_eq(su_ju(j, "0.arenas.threads"), 3);
  /* Fallback: the baseline made none; usable sizes as the program saw them. */
  cr_assert_eq(su_ju(&r->base_json, "0.fallback.allocs"), 0);
  cr_expect_eq(su_ju(j, "0.fallback.malloc_calls"), 3);
  cr_expect_eq(su_ju(j, "0.fallback.realloc_calls"), 1);
  cr_expect_eq(su_ju(j, "0.fallback.aligned_calls"), 1);
  cr_expect_eq(su_ju(j, "0.fallback.allocs"), 4);
  cr_expect_eq(su_ju(j, "0.fallback.frees"), 1);
  cr_expect_eq(su_ju(j, "0.fallback.live_blocks"), 3);
  const char *f = strstr(r->out, "fallback ");
  cr_assert_not_null(f);
  uint64_t total, live, peak;
  cr_assert_eq(sscanf(f, "fallback %" SCNu64 " %" SCNu64 " %" SCNu64, &total, &live, &peak), 3);
  cr_expect_eq(su_ju(j, "0.fallback.total_bytes"), total);
  cr_expect_eq(su_ju(j, "0.fallback.live_bytes"), live);
  cr_expect_eq(su_ju(j, "0.fallback.peak_live_bytes"), peak);
  /* Leaks: the live blocks, by class. */
  cr_expect_eq(su_ju(j, "0.leaks.blocks"), su_ju(j, "0.totals.live_blocks"));
  cr_expect_eq(su_ju(j, "0.leaks.block_bytes"), su_ju(j, "0.totals.live_block_bytes"));
  cr_expect_eq(su_ju(j, "0.leaks.requested_bytes"), su_ju(j, "0.totals.live_requested_bytes"));
  cr_expect_eq(su_ju(j, "0.leaks.fallback_blocks"), 3);
  cr_expect_eq(su_ju(j, "0.leaks.fallback_bytes"), live);
  unsigned n = 0;
  for (unsigned c = 0; c < 7; c++) {
    if (su_ju(j, "0.classes.%u.live_blocks", c) == 0) continue;
    cr_expect_eq(su_ju(j, "0.leaks.classes.%u.size", n), su_ju(j, "0.classes.%u.size", c));
    cr_expect_eq(su_ju(j, "0.leaks.classes.%u.blocks", n), su_ju(j, "0.classes.%u.live_blocks", c));
    cr_expect_eq(su_ju(j, "0.leaks.classes.%u.block_bytes", n),
                 su_ju(j, "0.classes.%u.live_block_bytes", c));
    cr_expect_eq(su_ju(j, "0.leaks.classes.%u.requested_bytes", n),
                 su_ju(j, "0.classes.%u.live_requested_bytes", c));
    n++;
  }
  cr_expect_eq(su_ju(j, "0.leaks.classes.len"), n);
  /* Process. */
  cr_expect_eq(su_ju(j, "0.process.pid"), su_said(r->out, "pid"));
  cr_expect_gt(su_ju(j, "0.process.peak_rss_bytes"), 0);
  cr_expect_geq(su_ju(j, "0.process.peak_rss_bytes"), su_ju(j, "0.process.rss_bytes"));
  cr_expect_gt(su_ju(j, "0.process.wall_ns"), 0);
  cr_expect_str_eq(su_jraw(j, "0.schema"), "\"libsizeclass-stats\"");
  cr_expect_eq(su_ju(j, "0.version"), 1);
}

/* ---- the default tier: counts exact, per-request figures not tracked ------------- */

/* A run of stats_pattern in its own temporary directory: its argv
 * (json, text: report paths in the directory), stdout and stderr files. */
typedef struct {
  char dir[64], prog[256], json[128], text[128], out[128], err[128];
} tier_run_t;

/** Run stats_pattern preloaded, with env (NULL-terminated), as
 * `stats_pattern MODE ARG JSON`: ARG is the run's own text path when NULL. */
static void tier_run(tier_run_t *r, const char *mode, const char *arg, const char *const *env) {
  su_tmpdir(r->dir);
  su_prog(r->prog, sizeof(r->prog));
  snprintf(r->json, sizeof(r->json), "%s/api.json", r->dir);
  snprintf(r->text, sizeof(r->text), "%s/api.txt", r->dir);
  snprintf(r->out, sizeof(r->out), "%s/out", r->dir);
  snprintf(r->err, sizeof(r->err), "%s/err", r->dir);
  const char *argv[] = {r->prog, mode, arg != NULL ? arg : r->text, r->json, NULL};
  cr_assert_eq(su_run(argv, env, r->out, r->err, 30, true), 0);
}

static void tier_done(tier_run_t *r) { cr_expect(cr_tmp_remove(r->dir)); }

/** The pattern run without any SIZECLASS_STATS* variable: its API report
 * (sc_stats_print) has every block count of the exact run, and shows every
 * per-request figure as null, never as 0. */
Test(stats, default_tier_counts_exact_and_untracked_null, .timeout = 60) {
  tier_run_t r;
  const char *env[] = {NULL};
  tier_run(&r, "pattern", NULL, env);
  su_json_t j;
  su_json_load(&j, r.json, "one");
  cr_expect_eq(su_ju(&j, "0.exact_statistics"), 0);
  cr_expect_eq(su_ju(&j, "0.counts_complete"), 1);
  const struct {
    const char *path;
    const expect_t *e;
  } cls[] = {{"0.classes.2", &exp64}, {"0.classes.6", &exp1024}, {"0.classes.4", &exp256}};
  for (size_t i = 0; i < 3; i++) {
    const char *p = cls[i].path;
    const expect_t *e = cls[i].e;
    cr_expect_eq(su_ju(&j, "%s.allocs", p), e->allocs, "%s.allocs", p);
    cr_expect_eq(su_ju(&j, "%s.frees", p), e->frees, "%s.frees", p);
    cr_expect_eq(su_ju(&j, "%s.live_blocks", p), e->allocs - e->frees, "%s.live_blocks", p);
    cr_expect_eq(su_ju(&j, "%s.remote_frees", p), e->remote, "%s.remote_frees", p);
    cr_expect_eq(su_ju(&j, "%s.fresh_carves", p), e->fresh, "%s.fresh_carves", p);
    cr_expect_eq(su_ju(&j, "%s.reuse_hits", p), e->allocs - e->fresh, "%s.reuse_hits", p);
    cr_expect_eq(su_ju(&j, "%s.pages", p), e->pages, "%s.pages", p);
    cr_expect_eq(su_ju(&j, "%s.live_block_bytes", p), (e->allocs - e->frees) * e->size);
    static const char *const untracked[] = {"peak_live_blocks",
                                            "live_requested_bytes",
                                            "peak_requested_bytes",
                                            "peak_block_bytes",
                                            "total_requested_bytes",
                                            "live_utilization_permille",
                                            "wasted_bytes",
                                            "mean_request_bytes",
                                            "request_histogram",
                                            "peak_utilization_permille",
                                            "total_internal_fragmentation_permille"};
    for (size_t k = 0; k < sizeof(untracked) / sizeof(untracked[0]); k++)
      cr_expect_str_eq(su_jraw(&j, "%s.%s", p, untracked[k]), "null", "%s.%s", p, untracked[k]);
  }
  cr_expect_str_eq(su_jraw(&j, "0.advisor"), "null");
  cr_expect_str_eq(su_jraw(&j, "0.leaks.requested_bytes"), "null");
  cr_expect_str_eq(su_jraw(&j, "0.fallback.peak_live_bytes"), "null");
  cr_expect_eq(su_ju(&j, "0.fallback.allocs"), 4, "the system route is counted in every tier");
  cr_expect_eq(su_ju(&j, "0.fallback.frees"), 1);
  su_json_free(&j);
  /* The text form names what was not tracked and shows "-", not 0. */
  char *t = su_read(r.text);
  cr_assert_not_null(t);
  cr_expect_not_null(strstr(t, "not tracked (\"-\"): requested bytes"), "%s", t);
  cr_expect_null(strstr(t, "advisor:"), "no advisor without request sizes");
  free(t);
  tier_done(&r);
}

/** SIZECLASS_STATS_EXACT=1 switches exact statistics on without a report. */
Test(stats, exact_by_environment_without_report, .timeout = 60) {
  tier_run_t r;
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", NULL};
  tier_run(&r, "pattern", NULL, env);
  su_json_t j;
  su_json_load(&j, r.json, "one");
  cr_expect_eq(su_ju(&j, "0.exact_statistics"), 1);
  check_class(&j, "0.classes.2", &exp64);
  check_class(&j, "0.classes.6", &exp1024);
  su_json_free(&j);
  char *e = su_read(r.err);
  cr_expect_str_eq(e, "", "no report at exit: %s", e);
  free(e);
  tier_done(&r);
}

/** sc_stats_enable_exact: on before the first allocation, refused after. */
static void enable_case(const char *when, uint64_t want) {
  tier_run_t r;
  const char *env[] = {NULL};
  tier_run(&r, "enable", when, env);
  char *o = su_read(r.out);
  cr_assert_not_null(o);
  cr_expect_eq(su_said(o, "enable"), want, "%s: %s", when, o);
  free(o);
  su_json_t j;
  su_json_load(&j, r.json, "one");
  cr_expect_eq(su_ju(&j, "0.exact_statistics"), want, "%s", when);
  if (want)
    cr_expect_eq(su_ju(&j, "0.classes.2.total_requested_bytes"), 10 * 40);
  else
    cr_expect_str_eq(su_jraw(&j, "0.classes.2.total_requested_bytes"), "null");
  cr_expect_eq(su_ju(&j, "0.classes.2.live_blocks"), want ? 5 : 15, "%s", when);
  su_json_free(&j);
  tier_done(&r);
}

Test(stats, enable_exact_before_first_allocation, .timeout = 60) { enable_case("first", 1); }
Test(stats, enable_exact_too_late_changes_nothing, .timeout = 60) { enable_case("late", 0); }

Test(stats, exact_numbers_json, .timeout = 60) {
  pattern_t r;
  pattern_run(&r);
  check_pattern_report(&r, &r.exit_json);
  check_pattern_report(&r, &r.api_json);
  cr_expect_str_eq(su_jraw(&r.exit_json, "0.reason"), "\"exit\"");
  cr_expect_str_eq(su_jraw(&r.api_json, "0.reason"), "\"request\"");
  cr_expect_eq(su_ju(&r.api_json, "docs"), 1);
  pattern_free(&r);
}

/* The same figures, threads, remote frees, a thread's exit and the
 * adoption of its arena included, whichever source switched exact
 * statistics on: the program's sizeclass_options string, or sc_option_set
 * before its first allocation (the environment: above). */
static void exact_numbers_from(source_t source) {
  pattern_t r;
  pattern_run_from(&r, source);
  if (source != FROM_ENABLE) check_pattern_report(&r, &r.exit_json);
  check_pattern_report(&r, &r.api_json);
  cr_expect_eq(su_ju(&r.api_json, "0.exact_statistics"), 1);
  pattern_free(&r);
}

Test(stats, exact_numbers_from_the_options_string, .timeout = 60) {
  exact_numbers_from(FROM_OPTIONS);
}
Test(stats, exact_numbers_from_the_api, .timeout = 60) { exact_numbers_from(FROM_API); }

/* sc_stats_enable_exact() before the first allocation: no exit report is
 * armed; the program's own (sc_stats_print) has the same figures. */
Test(stats, exact_numbers_from_sc_stats_enable_exact, .timeout = 60) {
  exact_numbers_from(FROM_ENABLE);
}

/* The advisor: for 64 B, every 40 B request fits a 48 B class and saves 16 B;
 * for 1024 B, every 700 B request fits 768 B and saves 256 B. The ranking is
 * by wasted bytes: 1024 B (106920), 64 B (31224), then the baseline's. */
Test(stats, advisor, .timeout = 60) {
  pattern_t r;
  pattern_run(&r);
  const su_json_t *j = &r.exit_json;
  cr_assert_eq(su_ju(j, "0.advisor.intermediate_sizes.len"), 5);
  static const uint64_t mids[] = {48, 96, 192, 384, 768};
  for (unsigned i = 0; i < 5; i++)
    cr_expect_eq(su_ju(j, "0.advisor.intermediate_sizes.%u", i), mids[i]);
  cr_expect_eq(su_ju(j, "0.advisor.ranking.0.size"), 1024);
  cr_expect_eq(su_ju(j, "0.advisor.ranking.0.wasted_bytes"), 330 * 1024 - 330 * 700);
  cr_expect_eq(su_ju(j, "0.advisor.ranking.0.intermediate_size"), 768);
  cr_expect_eq(su_ju(j, "0.advisor.ranking.0.fitting_requests"), 330);
  cr_expect_eq(su_ju(j, "0.advisor.ranking.0.saved_bytes"), 330 * 256);
  cr_expect_eq(su_ju(j, "0.advisor.ranking.0.saved_permille"), 250);
  cr_expect_eq(su_ju(j, "0.advisor.ranking.0.waste_permille"), permille(106920, 337920));
  cr_expect_eq(su_ju(j, "0.advisor.ranking.1.size"), 64);
  cr_expect_eq(su_ju(j, "0.advisor.ranking.1.wasted_bytes"), 1301 * 24);
  cr_expect_eq(su_ju(j, "0.advisor.ranking.1.intermediate_size"), 48);
  cr_expect_eq(su_ju(j, "0.advisor.ranking.1.fitting_requests"), 1301);
  cr_expect_eq(su_ju(j, "0.advisor.ranking.1.saved_bytes"), 1301 * 16);
  cr_expect_eq(su_ju(j, "0.advisor.ranking.1.waste_permille"), 375);
  /* Every row, recomputed from its class's histogram; sorted; classes with
   * allocations only. */
  uint64_t rows = su_ju(j, "0.advisor.ranking.len"), used = 0, prev = UINT64_MAX;
  for (unsigned c = 0; c < 7; c++) used += su_ju(j, "0.classes.%u.allocs", c) != 0;
  cr_expect_eq(rows, used);
  for (unsigned i = 0; i < rows; i++) {
    uint64_t size = su_ju(j, "0.advisor.ranking.%u.size", i);
    unsigned c = (unsigned)__builtin_ctzll(size) - 4;
    uint64_t blk = su_ju(j, "0.classes.%u.total_block_bytes", c);
    uint64_t wasted = blk - su_ju(j, "0.classes.%u.total_requested_bytes", c);
    cr_expect_eq(su_ju(j, "0.advisor.ranking.%u.wasted_bytes", i), wasted);
    cr_expect_leq(wasted, prev, "ranking is by wasted bytes");
    prev = wasted;
    uint64_t fits = 0, mid = size >= 64 ? size / 4 * 3 : 0;
    for (uint64_t b = size / 32 + 1; mid && b <= mid / 16; b++)
      fits += su_ju(j, "0.classes.%u.request_histogram.%" PRIu64, c, b);
    cr_expect_eq(su_ju(j, "0.advisor.ranking.%u.fitting_requests", i), fits);
    cr_expect_eq(su_ju(j, "0.advisor.ranking.%u.saved_bytes", i), fits * (size - mid));
    if (mid == 0) cr_expect_str_eq(su_jraw(j, "0.advisor.ranking.%u.intermediate_size", i), "null");
  }
  pattern_free(&r);
}

/* ---- the text form, cell by cell ---------------------------------------------------- */

typedef struct {
  const char *head, *key;
} colmap_t;

/** The text table titled `title` has rows rendering, in order, the JSON
 * objects path_fmt % row (the last one `total_path` with label "total" when
 * that is given), in the columns cols. */
static void check_table(const su_text_t *t, const su_json_t *j, const char *title,
                        const colmap_t *cols, size_t ncols, const char *array,
                        const char *total_path) {
  long at = su_find(t, 0, title);
  cr_assert_geq(at, 0, "no table '%s'", title);
  char cells[40][48], want[64];
  size_t n = su_cells(t->line[at + 1], cells, 40);
  cr_assert_eq(n, ncols, "'%s': %zu headers", title, n);
  for (size_t i = 0; i < ncols; i++) cr_expect_str_eq(cells[i], cols[i].head);
  uint64_t rows = su_ju(j, "%s.len", array) + (total_path ? 1 : 0);
  size_t line = (size_t)at + 2;
  if (rows == 0) cr_expect_str_eq(t->line[line], "  (none)");
  for (uint64_t r = 0; r < rows; r++, line++) {
    if (t->line[line][2] == '-') line++; /* the rule above the total row */
    n = su_cells(t->line[line], cells, 40);
    cr_assert_eq(n, ncols, "'%s' row %" PRIu64 ": '%s'", title, r, t->line[line]);
    char obj[128];
    bool total = total_path && r == rows - 1;
    if (total)
      snprintf(obj, sizeof(obj), "%s", total_path);
    else
      snprintf(obj, sizeof(obj), "%s.%" PRIu64, array, r);
    for (size_t i = 0; i < ncols; i++) {
      if (total && i == 0) {
        cr_expect_str_eq(cells[0], "total");
        continue;
      }
      const char *raw = su_jraw(j, "%s.%s", obj, cols[i].key);
      cr_assert_not_null(raw, "%s.%s", obj, cols[i].key);
      su_render(want, su_kind_of(cols[i].key), raw);
      cr_expect_str_eq(cells[i], want, "'%s' %s.%s: text '%s', JSON %s", title, obj, cols[i].key,
                       cells[i], raw);
    }
  }
}

/** The key/value section titled `title`: each label shows its key's value. */
static void check_kv(const su_text_t *t, const su_json_t *j, const char *title, const char *obj,
                     const colmap_t *kv, size_t nkv) {
  long at = su_find(t, 0, title);
  cr_assert_geq(at, 0, "no section '%s'", title);
  size_t seen = 0;
  char cells[16][48], want[64];
  for (size_t line = (size_t)at + 1; line < t->n && t->line[line][0] == ' '; line++) {
    size_t n = su_cells(t->line[line], cells, 16);
    cr_assert_eq(n % 2, 0, "'%s': '%s'", title, t->line[line]);
    for (size_t c = 0; c < n; c += 2)
      for (size_t k = 0; k < nkv; k++) {
        if (strcmp(cells[c], kv[k].head) != 0) continue;
        const char *raw = su_jraw(j, "%s.%s", obj, kv[k].key);
        cr_assert_not_null(raw);
        su_render(want, su_kind_of(kv[k].key), raw);
        cr_expect_str_eq(cells[c + 1], want, "%s: %s", title, kv[k].head);
        seen++;
      }
  }
  cr_expect_eq(seen, nkv, "'%s': %zu of %zu labels", title, seen, nkv);
}

#define COLS(...) \
  (const colmap_t[]){__VA_ARGS__}, sizeof((const colmap_t[]){__VA_ARGS__}) / sizeof(colmap_t)

/** The text report t shows exactly the numbers of the JSON report j (both
 * written from one state), every table and section; the pid too when both
 * come from one process. */
static void check_text_against_json(const su_text_t *t, const su_json_t *j, bool same_process) {
  check_table(
      t, j, "classes: blocks",
      COLS({"class", "size"}, {"live", "live_blocks"}, {"peak", "peak_live_blocks"},
           {"allocs", "allocs"}, {"frees", "frees"}, {"remote", "remote_frees"},
           {"reuse", "reuse_hits"}, {"fresh", "fresh_carves"}, {"hit-rate", "hit_rate_permille"}),
      "0.classes", "0.totals");
  check_table(t, j, "classes: pages",
              COLS({"class", "size"}, {"pages", "pages"}, {"reserved", "reserved_bytes"},
                   {"capacity", "capacity_blocks"}, {"live", "live_blocks"},
                   {"free", "free_blocks"}, {"ext-frag", "external_fragmentation_permille"}),
              "0.classes", "0.totals");
  check_table(t, j, "classes: bytes of live",
              COLS({"class", "size"}, {"live-req", "live_requested_bytes"},
                   {"live-blk", "live_block_bytes"}, {"util", "live_utilization_permille"},
                   {"int-frag", "live_internal_fragmentation_permille"},
                   {"peak-req", "peak_requested_bytes"}, {"peak-blk", "peak_block_bytes"},
                   {"util", "peak_utilization_permille"},
                   {"int-frag", "peak_internal_fragmentation_permille"}),
              "0.classes", "0.totals");
  check_table(t, j, "classes: bytes over",
              COLS({"class", "size"}, {"total-req", "total_requested_bytes"},
                   {"total-blk", "total_block_bytes"}, {"util", "total_utilization_permille"},
                   {"int-frag", "total_internal_fragmentation_permille"},
                   {"wasted", "wasted_bytes"}, {"mean-req", "mean_request_bytes"}),
              "0.classes", "0.totals");
  check_table(t, j, "advisor:",
              COLS({"class", "size"}, {"wasted", "wasted_bytes"}, {"waste", "waste_permille"},
                   {"split", "intermediate_size"}, {"fits", "fitting_requests"},
                   {"saved", "saved_bytes"}, {"saved%", "saved_permille"}),
              "0.advisor.ranking", NULL);
  check_table(t, j, "  by class",
              COLS({"class", "size"}, {"blocks", "blocks"}, {"bytes", "block_bytes"},
                   {"requested", "requested_bytes"}),
              "0.leaks.classes", NULL);
  check_kv(t, j, "leaks:", "0.leaks",
           COLS({"class blocks", "blocks"}, {"block bytes", "block_bytes"},
                {"requested", "requested_bytes"}, {"system blocks", "fallback_blocks"},
                {"system bytes", "fallback_bytes"}));
  check_kv(
      t, j, "system allocator", "0.fallback",
      COLS({"malloc calls", "malloc_calls"}, {"realloc calls", "realloc_calls"},
           {"aligned calls", "aligned_calls"}, {"blocks made", "allocs"}, {"blocks freed", "frees"},
           {"live blocks", "live_blocks"}, {"bytes made", "total_bytes"},
           {"live bytes", "live_bytes"}, {"peak live bytes", "peak_live_bytes"}));
  check_kv(t, j, "arenas", "0.arenas",
           COLS({"created", "created"}, {"live", "live"}, {"adopted", "adopted"},
                {"threads", "threads"}));
  check_kv(t, j, "memory returned", "0.purge",
           COLS({"purges", "purges"}, {"bytes returned", "bytes_returned"},
                {"pages reused", "pages_reused_after_purge"}));
  if (same_process) check_kv(t, j, "process", "0.process", COLS({"pid", "pid"}));
  /* The request-size table: every non-empty bucket, in order. */
  long at = su_find(t, 0, "request sizes");
  cr_assert_geq(at, 0);
  size_t line = (size_t)at + 2;
  char cells[8][48], want[64];
  for (unsigned c = 0; c < 7; c++) {
    uint64_t size = su_ju(j, "0.classes.%u.size", c), allocs = su_ju(j, "0.classes.%u.allocs", c);
    for (unsigned b = 0; b < 65; b++) {
      uint64_t count = su_ju(j, "0.classes.%u.request_histogram.%u", c, b);
      if (count == 0) continue;
      cr_assert_eq(su_cells(t->line[line++], cells, 8), 6);
      uint64_t to = b * 16ull;
      sprintf(want, "%" PRIu64 " B", size);
      cr_expect_str_eq(cells[0], want);
      sprintf(want, "%" PRIu64, b ? to - 15 : 0);
      cr_expect_str_eq(cells[1], want);
      sprintf(want, "%" PRIu64, to);
      cr_expect_str_eq(cells[2], want);
      sprintf(want, "%" PRIu64, count);
      cr_expect_str_eq(cells[3], want);
      sprintf(want, "%" PRIu64, permille(count, allocs));
      su_render(want, K_PERMILLE, want);
      cr_expect_str_eq(cells[4], want);
    }
  }
  cr_expect_str_eq(t->line[line], "", "the request-size table has no extra rows");
}

Test(stats, text_shows_the_json_numbers, .timeout = 60) {
  pattern_t r;
  pattern_run(&r);
  check_text_against_json(&r.api_text, &r.api_json, true);
  cr_expect_geq(su_find(&r.api_text, 0, "== libsizeclass statistics (request) =="), 0);
  /* The advisor's advice lines, from the same numbers. */
  cr_expect_geq(su_find(&r.api_text, 0,
                        "  -> a 768 B class would have saved 82.5 KiB (25.0% of the 1024 B "
                        "blocks): 330 of 330 requests fit"),
                0);
  cr_expect_geq(su_find(&r.api_text, 0,
                        "  -> a 48 B class would have saved 20.3 KiB (25.0% of the 64 B blocks): "
                        "1301 of 1301 requests fit"),
                0);
  pattern_free(&r);
}

/* The exit dump in text form holds the pattern's numbers too. */
Test(stats, exit_dump_text, .timeout = 60) {
  pattern_t r;
  pattern_run(&r);
  char path[200], env[256], prog[256];
  snprintf(path, sizeof(path), "%s/exit.txt", r.dir);
  snprintf(env, sizeof(env), "SIZECLASS_STATS=%s", path);
  su_prog(prog, sizeof(prog));
  const char *argv[] = {prog, "pattern", NULL};
  const char *envv[] = {env, NULL};
  cr_assert_eq(su_run(argv, envv, r.path[P_OUT], r.path[P_ERR], 30, true), 0);
  su_text_t t;
  su_text_load(&t, path);
  cr_expect_geq(su_find(&t, 0, "== libsizeclass statistics (exit) =="), 0);
  /* Same state as the API report's except the process figures. */
  check_table(
      &t, &r.api_json, "classes: blocks",
      COLS({"class", "size"}, {"live", "live_blocks"}, {"peak", "peak_live_blocks"},
           {"allocs", "allocs"}, {"frees", "frees"}, {"remote", "remote_frees"},
           {"reuse", "reuse_hits"}, {"fresh", "fresh_carves"}, {"hit-rate", "hit_rate_permille"}),
      "0.classes", "0.totals");
  check_text_against_json(&t, &r.exit_json, false);
  su_text_free(&t);
  pattern_free(&r);
}

/* ---- the switches ------------------------------------------------------------------- */

/* Run `stats_pattern mode` with env; returns its stderr (free it). */
static char *run_mode(const char *dir, const char *mode, const char *const env[], int want_rc) {
  char prog[256], out[128], err[128];
  su_prog(prog, sizeof(prog));
  snprintf(out, sizeof(out), "%s/out", dir);
  snprintf(err, sizeof(err), "%s/err", dir);
  const char *argv[] = {prog, mode, NULL};
  int rc = su_run(argv, env, out, err, 30, true);
  char *e = su_read(err);
  cr_assert_eq(rc, want_rc, "%s exited %d: %s", mode, rc, e);
  return e;
}

/** Lines of s starting with "sizeclass:". */
static int warnings(const char *s, const char *must_contain) {
  int n = 0;
  for (const char *p = s; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, "sizeclass:", 10) == 0) {
      n++;
      const char *nl = strchr(p, '\n');
      char line[512];
      size_t len = nl ? (size_t)(nl - p) : strlen(p);
      snprintf(line, sizeof(line), "%.*s", (int)len, p);
      cr_expect_not_null(strstr(line, must_contain), "warning '%s' lacks '%s'", line, must_contain);
    }
  return n;
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

static void cleanup(const char *dir) { cr_expect(cr_tmp_remove(dir)); }

#define TEXT_REPORT_AT_EXIT "== libsizeclass statistics (exit) =="

Test(stats, unset_or_off_prints_nothing, .timeout = 30) {
  char dir[64];
  su_tmpdir(dir);
  char *e = run_mode(dir, "small", NULL, 0);
  cr_expect_str_eq(e, "");
  free(e);
  const char *off[] = {"SIZECLASS_STATS=0", NULL};
  e = run_mode(dir, "small", off, 0);
  cr_expect_str_eq(e, "");
  free(e);
  cleanup(dir);
}

Test(stats, stderr_and_stdout, .timeout = 30) {
  char dir[64], out[128];
  su_tmpdir(dir);
  const char *on[] = {"SIZECLASS_STATS=1", NULL};
  char *e = run_mode(dir, "small", on, 0);
  cr_expect_eq(strncmp(e, TEXT_REPORT_AT_EXIT, strlen(TEXT_REPORT_AT_EXIT)), 0);
  cr_expect_not_null(strstr(e, "classes: blocks"));
  free(e);
  const char *json_stdout[] = {"SIZECLASS_STATS=stdout", "SIZECLASS_STATS_FORMAT=json", NULL};
  e = run_mode(dir, "small", json_stdout, 0);
  cr_expect_str_eq(e, "");
  free(e);
  /* stdout holds the program's pid line, then the report. */
  snprintf(out, sizeof(out), "%s/out", dir);
  char *o = su_read(out);
  char *json = strchr(o, '\n') + 1;
  su_json_t j;
  su_json_load_text(&j, dir, "stdout.json", json);
  cr_expect_eq(su_ju(&j, "0.classes.2.allocs"), 10);
  cr_expect_eq(su_ju(&j, "0.classes.2.frees"), 5);
  cr_expect_eq(su_ju(&j, "0.process.pid"), su_said(o, "pid"));
  su_json_free(&j);
  free(o);
  cleanup(dir);
}

/** The last cell of the row of `table` (its title's start) whose line
 * starts with `row` ("    16 B"), into out. */
static void last_cell(const char *text, const char *table, const char *row, char *out, size_t cap) {
  out[0] = 0;
  const char *t = strstr(text, table);
  cr_assert_not_null(t, "no table '%s'", table);
  for (const char *p = t; p != NULL && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
    if (p != t && *p == '\n') break; /* the table's end */
    if (strncmp(p, row, strlen(row)) != 0) continue;
    const char *nl = strchr(p, '\n');
    const char *end = nl ? nl : p + strlen(p), *b = end;
    while (b > p && b[-1] != ' ') b--;
    snprintf(out, cap, "%.*s", (int)(end - b), b);
    return;
  }
  cr_assert_fail("no row '%s' in '%s'", row, table);
}

/* A class without allocations has no hit rate, and one with nothing live
 * no external fragmentation: "-" in the text, null in the JSON, never
 * "0.0%" or an alarming "100.0%" (the frames mode frees all it allocates,
 * in the 64 B class; the 16 B class is never used). */
Test(stats, empty_classes_show_no_hit_rate_and_no_fragmentation, .timeout = 30) {
  char dir[64], cell[64], env[200], path[160];
  su_tmpdir(dir);
  const char *text_env[] = {"SIZECLASS_STATS=1", NULL};
  char *e = run_mode(dir, "frames", text_env, 0);
  last_cell(e, "classes: blocks", "    16 B", cell, sizeof(cell));
  cr_expect_str_eq(cell, "-", "16 B hit rate: %s", e);
  last_cell(e, "classes: blocks", "    64 B", cell, sizeof(cell));
  cr_expect_str_eq(cell, "90.0%", "64 B hit rate (45 of 50 reused): %s", e);
  last_cell(e, "classes: pages", "    64 B", cell, sizeof(cell));
  cr_expect_str_eq(cell, "-", "64 B ext-frag with nothing live: %s", e);
  free(e);
  snprintf(path, sizeof(path), "%s/r.json", dir);
  snprintf(env, sizeof(env), "SIZECLASS_STATS=%s", path);
  const char *json_env[] = {env, NULL};
  free(run_mode(dir, "frames", json_env, 0));
  su_json_t j;
  su_json_load(&j, path, "one");
  cr_expect_str_eq(su_jraw(&j, "0.classes.0.hit_rate_permille"), "null");
  cr_expect_eq(su_ju(&j, "0.classes.2.hit_rate_permille"), 900);
  cr_expect_eq(su_ju(&j, "0.classes.2.live_blocks"), 0);
  cr_expect_eq(su_ju(&j, "0.classes.2.pages"), 1);
  cr_expect_str_eq(su_jraw(&j, "0.classes.2.external_fragmentation_permille"), "null");
  su_json_free(&j);
  cleanup(dir);
}

Test(stats, bad_format_warns_once_and_falls_back, .timeout = 30) {
  char dir[64], env[200], path[160];
  su_tmpdir(dir);
  snprintf(path, sizeof(path), "%s/r.json", dir);
  snprintf(env, sizeof(env), "SIZECLASS_STATS=%s", path);
  const char *envv[] = {env, "SIZECLASS_STATS_FORMAT=xml", NULL};
  char *e = run_mode(dir, "small", envv, 0);
  cr_expect_eq(warnings(e,
                        "SIZECLASS_STATS_FORMAT=\"xml\": expected text or json; a report, when "
                        "one is asked for, is text on stderr"),
               1, "%s", e);
  cr_expect_not_null(strstr(e, TEXT_REPORT_AT_EXIT), "no text report on stderr: %s", e);
  cr_expect_not(exists(path));
  free(e);
  cleanup(dir);
}

Test(stats, unwritable_path_warns_once_and_falls_back, .timeout = 30) {
  char dir[64];
  su_tmpdir(dir);
  const char *envv[] = {"SIZECLASS_STATS=/nonexistent-sizeclass-dir/r.json", NULL};
  char *e = run_mode(dir, "small", envv, 0);
  cr_expect_eq(warnings(e, "/nonexistent-sizeclass-dir/r.json"), 1, "%s", e);
  cr_expect_not_null(strstr(e, TEXT_REPORT_AT_EXIT), "no text report on stderr: %s", e);
  cr_expect_not_null(strstr(e, "classes: blocks"));
  free(e);
  cleanup(dir);
}

Test(stats, bad_signal_warns_once_and_arms_nothing, .timeout = 30) {
  char dir[64], env[200], path[160];
  su_tmpdir(dir);
  /* With a report file: the exit report still goes there. */
  snprintf(path, sizeof(path), "%s/r.txt", dir);
  snprintf(env, sizeof(env), "SIZECLASS_STATS=%s", path);
  const char *with_file[] = {env, "SIZECLASS_STATS_SIGNAL=NOPE", NULL};
  char *e = run_mode(dir, "small", with_file, 0);
  cr_expect_eq(warnings(e, "SIZECLASS_STATS_SIGNAL=\"NOPE\": expected USR1, USR2"), 1, "%s", e);
  free(e);
  su_text_t t;
  su_text_load(&t, path);
  cr_expect_eq(su_find(&t, 0, TEXT_REPORT_AT_EXIT), 0);
  su_text_free(&t);
  /* Alone, a bad signal or one that cannot be caught arms nothing: one
   * warning, no report at exit. */
  const char *bad[] = {"KILL", "SEGV", "99", "banana"};
  for (int i = 0; i < 4; i++) {
    char var[64], said[64];
    snprintf(var, sizeof(var), "SIZECLASS_STATS_SIGNAL=%s", bad[i]);
    snprintf(said, sizeof(said), "SIZECLASS_STATS_SIGNAL=\"%s\": ", bad[i]);
    const char *alone[] = {var, NULL};
    e = run_mode(dir, "small", alone, 0);
    cr_expect_eq(warnings(e, said), 1, "%s", e);
    cr_expect_null(strstr(e, TEXT_REPORT_AT_EXIT), "%s armed a report: %s", bad[i], e);
    free(e);
  }
  cleanup(dir);
}

Test(stats, pid_expansion, .timeout = 30) {
  char dir[64], env[200], path[200], out[128];
  su_tmpdir(dir);
  /* Every %p is the pid (a second one too), %% a single %. */
  snprintf(env, sizeof(env), "SIZECLASS_STATS=%s/r.%%p.100%%%%.%%p.json", dir);
  const char *envv[] = {env, NULL};
  char *e = run_mode(dir, "small", envv, 0);
  cr_expect_str_eq(e, "");
  free(e);
  snprintf(out, sizeof(out), "%s/out", dir);
  char *o = su_read(out);
  uint64_t pid = su_said(o, "pid");
  snprintf(path, sizeof(path), "%s/r.%" PRIu64 ".100%%.%" PRIu64 ".json", dir, pid, pid);
  cr_assert(exists(path), "no %s", path);
  su_json_t j;
  su_json_load(&j, path, "one"); /* .json implies JSON */
  cr_expect_eq(su_ju(&j, "0.process.pid"), pid);
  cr_expect_eq(su_ju(&j, "0.classes.2.live_blocks"), 5);
  su_json_free(&j);
  free(o);
  cleanup(dir);
}

Test(stats, relative_path, .timeout = 30) {
  char dir[64], prog[256], out[128], err[128];
  su_tmpdir(dir);
  su_prog(prog, sizeof(prog));
  snprintf(out, sizeof(out), "%s/out", dir);
  snprintf(err, sizeof(err), "%s/err", dir);
  /* The child runs in dir through a shell; the path is relative to it. */
  char cmd[600];
  snprintf(
      cmd, sizeof(cmd),
      "cd '%s' && SIZECLASS_STATS=rel.txt LD_PRELOAD='%s/libsizeclass.so' '%s' small >/dev/null",
      dir, su_build(), prog);
  cr_assert_eq(system(cmd), 0);
  char path[128];
  snprintf(path, sizeof(path), "%s/rel.txt", dir);
  su_text_t t;
  su_text_load(&t, path);
  cr_expect_eq(su_find(&t, 0, TEXT_REPORT_AT_EXIT), 0);
  su_text_free(&t);
  cleanup(dir);
}

/* Frames (sc_frame_mark, frame.c): 10 frames of 5 allocations and 5 frees
 * of 40 B, warm-up 2. Only the first frame carves (5 fresh blocks). */
Test(stats, frames_section, .timeout = 30) {
  char dir[64], env[200], path[160], txt[160];
  su_tmpdir(dir);
  snprintf(path, sizeof(path), "%s/f.json", dir);
  snprintf(env, sizeof(env), "SIZECLASS_STATS=%s", path);
  const char *envv[] = {env, "SIZECLASS_WARMUP_FRAMES=2", NULL};
  free(run_mode(dir, "frames", envv, 0));
  su_json_t j;
  su_json_load(&j, path, "one");
  struct {
    const char *key;
    uint64_t want;
  } k[] = {{"frames", 10},
           {"warmup_frames", 2},
           {"steady_frames", 8},
           {"zero_fresh_frames", 8},
           {"zero_fresh_permille", 1000},
           {"max_allocs", 5},
           {"total_allocs", 50},
           {"total_frees", 50},
           {"total_fresh_carves", 5},
           {"total_bytes", 2000},
           {"last_allocs", 5},
           {"last_frees", 5},
           {"last_fresh_carves", 0},
           {"last_bytes", 200}};
  for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
    cr_expect_eq(su_ju(&j, "0.frames.%s", k[i].key), k[i].want, "frames.%s", k[i].key);
  cr_expect_str_eq(su_jraw(&j, "0.frames.mean_allocs"), "5.0");
  /* The same state as text shows the same numbers. */
  snprintf(txt, sizeof(txt), "%s/f.txt", dir);
  snprintf(env, sizeof(env), "SIZECLASS_STATS=%s", txt);
  free(run_mode(dir, "frames", envv, 0));
  su_text_t t;
  su_text_load(&t, txt);
  check_kv(
      &t, &j, "frames", "0.frames",
      COLS({"frames", "frames"}, {"warm-up", "warmup_frames"}, {"after warm-up", "steady_frames"},
           {"zero-fresh", "zero_fresh_frames"}, {"zero-fresh share", "zero_fresh_permille"},
           {"max allocs", "max_allocs"}, {"mean allocs", "mean_allocs"}, {"allocs", "total_allocs"},
           {"frees", "total_frees"}, {"fresh carves", "total_fresh_carves"},
           {"bytes", "total_bytes"}, {"last: allocs", "last_allocs"}, {"last: frees", "last_frees"},
           {"last: fresh", "last_fresh_carves"}, {"last: bytes", "last_bytes"}));
  su_text_free(&t);
  su_json_free(&j);
  cleanup(dir);
}

/* ---- dumps in awkward places --------------------------------------------------------- */

/* A forked child writes its own report, with its parent's blocks and its
 * own, whichever source armed the report. */
static void fork_case(source_t source) {
  char dir[64], setting[200], buf[240], path[200], prog[256], out[128], err[128];
  su_tmpdir(dir);
  snprintf(setting, sizeof(setting), "SIZECLASS_STATS=%s/f.%%p.json", dir);
  const char *envv[] = {NULL, NULL};
  armed(prog, sizeof(prog), dir, source, setting, buf, sizeof(buf), &envv[0]);
  snprintf(out, sizeof(out), "%s/out", dir);
  snprintf(err, sizeof(err), "%s/err", dir);
  /* sc_stats_enable_exact arms no exit report: each process prints its own. */
  const char *argv[] = {prog, "fork", source == FROM_ENABLE ? dir : NULL, NULL};
  cr_assert_eq(su_run(argv, envv, out, err, 30, true), 0);
  char *o = su_read(out);
  uint64_t parent = su_said(o, "pid"), child = su_said(o, "child");
  cr_assert_neq(parent, child);
  su_json_t j;
  snprintf(path, sizeof(path), "%s/f.%" PRIu64 ".json", dir, child);
  su_json_load(&j, path, "one");
  cr_expect_eq(su_ju(&j, "0.process.pid"), child);
  cr_expect_eq(su_ju(&j, "0.exact_statistics"), 1);
  cr_expect_eq(su_ju(&j, "0.classes.2.allocs"), 100); /* inherited from the parent */
  cr_expect_eq(su_ju(&j, "0.classes.2.total_requested_bytes"), 100 * 40);
  cr_expect_eq(su_ju(&j, "0.classes.6.allocs"), 10); /* its own */
  cr_expect_eq(su_ju(&j, "0.classes.6.live_blocks"), 10);
  cr_expect_eq(su_ju(&j, "0.classes.6.live_requested_bytes"), 10 * 700);
  cr_expect_eq(su_ju(&j, "0.classes.6.peak_live_blocks"), 10);
  cr_expect_eq(su_ju(&j, "0.classes.6.pages"), 1);
  cr_expect_eq(su_ju(&j, "0.arenas.live"), 1);
  su_json_free(&j);
  snprintf(path, sizeof(path), "%s/f.%" PRIu64 ".json", dir, parent);
  su_json_load(&j, path, "one");
  cr_expect_eq(su_ju(&j, "0.process.pid"), parent);
  cr_expect_eq(su_ju(&j, "0.classes.2.allocs"), 100);
  cr_expect_eq(su_ju(&j, "0.classes.2.live_requested_bytes"), 100 * 40);
  cr_expect_eq(su_ju(&j, "0.classes.6.allocs"), 0);
  su_json_free(&j);
  free(o);
  cleanup(dir);
}

Test(stats, forked_child_writes_its_own_report, .timeout = 30) { fork_case(FROM_ENV); }
Test(stats, forked_child_report_from_the_options_string, .timeout = 30) { fork_case(FROM_OPTIONS); }
Test(stats, forked_child_report_from_the_api, .timeout = 30) { fork_case(FROM_API); }
Test(stats, forked_child_with_sc_stats_enable_exact, .timeout = 30) { fork_case(FROM_ENABLE); }

/* main returns while two threads allocate and free as fast as they can:
 * the exit dump must neither hang nor crash, and must be a whole report. */
Test(stats, exit_while_threads_run, .timeout = 60) {
  char dir[64], env[200], path[160];
  su_tmpdir(dir);
  snprintf(path, sizeof(path), "%s/b.json", dir);
  snprintf(env, sizeof(env), "SIZECLASS_STATS=%s", path);
  const char *envv[] = {env, NULL};
  for (int round = 0; round < 3; round++) {
    char *e = run_mode(dir, "busy", envv, 0);
    cr_expect_str_eq(e, "");
    free(e);
    su_json_t j;
    su_json_load(&j, path, "one");
    cr_expect_eq(su_ju(&j, "0.classes.len"), 7);
    cr_expect_geq(su_ju(&j, "0.classes.2.allocs"), 100);
    cr_expect_eq(su_ju(&j, "0.arenas.created"), 3);
    cr_expect_str_eq(su_jraw(&j, "0.reason"), "\"exit\"");
    su_json_free(&j);
  }
  cleanup(dir);
}

Test(stats, exit_from_another_thread, .timeout = 30) {
  char dir[64], env[200], path[160];
  su_tmpdir(dir);
  snprintf(path, sizeof(path), "%s/t.json", dir);
  snprintf(env, sizeof(env), "SIZECLASS_STATS=%s", path);
  const char *envv[] = {env, NULL};
  free(run_mode(dir, "exit-thread", envv, 0));
  su_json_t j;
  su_json_load(&j, path, "one");
  cr_expect_eq(su_ju(&j, "0.classes.2.allocs"), 100);
  cr_expect_eq(su_ju(&j, "0.classes.2.live_blocks"), 100);
  su_json_free(&j);
  cleanup(dir);
}

/* Three signal dumps on stderr while a thread allocates 8 B blocks: exact
 * figures for the classes the thread does not touch, and the two dumps in a
 * row are identical there (a dump that allocated would show it). */
static void signal_dumps(const char *name, int signo) {
  char dir[64], prog[256], out[128], err[128], sig[16], env[64];
  su_tmpdir(dir);
  su_prog(prog, sizeof(prog));
  snprintf(out, sizeof(out), "%s/out", dir);
  snprintf(err, sizeof(err), "%s/err", dir);
  snprintf(sig, sizeof(sig), "%d", signo);
  snprintf(env, sizeof(env), "SIZECLASS_STATS_SIGNAL=%s", name);
  const char *argv[] = {prog, "signal", sig, NULL};
  const char *envv[] = {env, "SIZECLASS_STATS_FORMAT=json", NULL};
  cr_assert_eq(su_run(argv, envv, out, err, 30, true), 0);
  su_json_t j;
  su_json_load(&j, err, "many");
  cr_assert_eq(su_ju(&j, "docs"), 3);
  for (int d = 0; d < 3; d++) cr_expect_str_eq(su_jraw(&j, "%d.reason", d), "\"signal\"");
  cr_expect_eq(su_ju(&j, "0.classes.2.allocs"), 1000);
  cr_expect_eq(su_ju(&j, "0.classes.2.live_blocks"), 1000);
  cr_expect_eq(su_ju(&j, "0.classes.6.allocs"), 0);
  cr_expect_eq(su_ju(&j, "2.classes.2.allocs"), 1000);
  cr_expect_eq(su_ju(&j, "2.classes.6.allocs"), 300);
  cr_expect_eq(su_ju(&j, "2.classes.6.pages"), 5);
  cr_expect_eq(su_ju(&j, "2.classes.6.total_requested_bytes"), 300 * 700);
  for (unsigned c = 1; c < 7; c++)
    for (size_t k = 0; k < N_CLASS_KEYS; k++)
      cr_expect_eq(ju_or_null(&j, "0.classes.%u.%s", c, class_keys[k]),
                   ju_or_null(&j, "1.classes.%u.%s", c, class_keys[k]), "class %u %s", c,
                   class_keys[k]);
  cr_expect_eq(su_ju(&j, "0.fallback.allocs"), su_ju(&j, "1.fallback.allocs"));
  cr_expect_eq(su_ju(&j, "1.fallback.allocs"), 0);
  su_json_free(&j);
  cleanup(dir);
}

Test(stats, signal_dump, .timeout = 60) { signal_dumps("USR2", SIGUSR2); }
Test(stats, signal_names, .timeout = 60) {
  signal_dumps("sigusr1", SIGUSR1);
  char rt[16];
  snprintf(rt, sizeof(rt), "RTMIN+%d", 2);
  signal_dumps(rt, SIGRTMIN + 2);
}

/* ---- the API, in this process ---------------------------------------------------------- */

/* In a forked child (the only thread there): sc_stats_get around 1000
 * sc_malloc(700), and sc_stats_print's JSON of the same state. */
Test(stats, api_get_and_print, .timeout = 30) {
  char dir[64], path[128];
  su_tmpdir(dir);
  snprintf(path, sizeof(path), "%s/api.json", dir);
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    static struct sc_stats s[4];
    static void *p[1000];
    sc_stats_get(&s[0]);
    for (int i = 0; i < 1000; i++) p[i] = sc_malloc(700);
    for (int i = 0; i < 500; i++) sc_free(p[i]);
    sc_stats_get(&s[1]);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    sc_stats_print(fd, SC_STATS_JSON);
    close(fd);
    sc_stats_get(&s[2]);
    ssize_t w = write(fds[1], s, sizeof(s));
    _exit(w == (ssize_t)sizeof(s) ? 0 : 1);
  }
  close(fds[1]);
  static struct sc_stats s[4];
  size_t got = 0;
  for (ssize_t r; got < sizeof(s) && (r = read(fds[0], (char *)s + got, sizeof(s) - got)) > 0;)
    got += (size_t)r;
  int status;
  waitpid(pid, &status, 0);
  cr_assert_eq(got, sizeof(s));
  const struct sc_class_stats *a = &s[0].classes[C1024], *b = &s[1].classes[C1024];
  cr_expect_eq(b->size, 1024);
  cr_expect_eq(b->allocs - a->allocs, 1000);
  cr_expect_eq(b->frees - a->frees, 500);
  cr_expect_eq(b->live_blocks - a->live_blocks, 500);
  cr_expect_eq(b->request_histogram[44] - a->request_histogram[44], 1000);
  cr_expect_eq(b->total_requested_bytes - a->total_requested_bytes, 700000);
  cr_expect_eq(b->live_requested_bytes - a->live_requested_bytes, 350000);
  cr_expect_eq(b->reuse_hits + b->fresh_carves, b->allocs);
  cr_expect_eq(b->capacity_blocks, capacity_of(b->pages, 1024));
  cr_expect_eq(s[1].totals.allocs, s[2].totals.allocs, "sc_stats_print allocated");
  cr_expect_eq(s[1].tracked, SC_TRACKED_COUNTS | SC_TRACKED_EXACT,
               "sizeclass_options switched exact statistics on");
  cr_expect_eq(s[1].fallback.allocs, s[2].fallback.allocs, "sc_stats_print allocated");
  cr_expect_eq(s[1].process.pid, (uint64_t)pid);
  su_json_t j;
  su_json_load(&j, path, "one");
  for (unsigned c = 0; c < 7; c++) {
    cr_expect_eq(su_ju(&j, "0.classes.%u.allocs", c), s[1].classes[c].allocs);
    cr_expect_eq(su_ju(&j, "0.classes.%u.live_blocks", c), s[1].classes[c].live_blocks);
    cr_expect_eq(su_ju(&j, "0.classes.%u.live_requested_bytes", c),
                 s[1].classes[c].live_requested_bytes);
    cr_expect_eq(su_ju(&j, "0.classes.%u.peak_requested_bytes", c),
                 s[1].classes[c].peak_requested_bytes);
  }
  cr_expect_eq(su_ju(&j, "0.totals.allocs"), s[1].totals.allocs);
  su_json_free(&j);
  cleanup(dir);
}
