/* SPDX-License-Identifier: MIT */
/* sites_util.h — helpers of tests/test_sites.c, tests/test_timeline.c and
 * tests/test_frame_check.c:
 * run tests/progs/sites_prog (preloaded, or its statically linked twin)
 * with chosen SIZECLASS_* variables in a private directory, read back its
 * stdout, stderr and JSON report (flattened by stats_util.h), and find a
 * site of the report by its function's name. */
#ifndef SITES_UTIL_H
#define SITES_UTIL_H

#include "stats_util.h"

/* One run of the helper program. */
typedef struct {
  char dir[64];
  char out_path[128], err_path[128], json_path[128];
  char *out, *err; /* stdout and stderr, whole */
  int rc;          /* exit status, or 128 + signal */
} sp_run_t;

/** Run `sites_prog MODE [ARG]` (or sites_static with `static_link`) with
 * the NULL-terminated NAME=value entries of env; "%J" in a value stands for
 * the run's JSON report path. */
static inline void sp_run(sp_run_t *r, bool static_link, const char *mode, const char *arg,
                          const char *const *env) {
  memset(r, 0, sizeof(*r));
  su_tmpdir(r->dir);
  snprintf(r->out_path, sizeof(r->out_path), "%s/out", r->dir);
  snprintf(r->err_path, sizeof(r->err_path), "%s/err", r->dir);
  snprintf(r->json_path, sizeof(r->json_path), "%s/report.json", r->dir);
  static char vars[16][512];
  const char *envp[17];
  size_t n = 0;
  for (; env != NULL && env[n] != NULL && n < 16; n++) {
    const char *j = strstr(env[n], "%J");
    if (j != NULL)
      snprintf(vars[n], sizeof(vars[n]), "%.*s%s%s", (int)(j - env[n]), env[n], r->json_path,
               j + 2);
    else
      snprintf(vars[n], sizeof(vars[n]), "%s", env[n]);
    envp[n] = vars[n];
  }
  envp[n] = NULL;
  char prog[512];
  snprintf(prog, sizeof(prog), "%s/tests/progs/%s", su_build(),
           static_link ? "sites_static" : "sites_prog");
  const char *argv[] = {prog, mode, arg, NULL};
  r->rc = su_run(argv, envp, r->out_path, r->err_path, 60, !static_link);
  r->out = su_read(r->out_path);
  r->err = su_read(r->err_path);
  cr_assert_not_null(r->out);
  cr_assert_not_null(r->err);
}

static inline void sp_free(sp_run_t *r) {
  free(r->out);
  free(r->err);
  cr_tmp_remove(r->dir);
}

/** sp_run, which must exit 0, and its JSON report (the one of "%J") into
 * j; sp_done frees both. */
static inline void sp_run_report(sp_run_t *r, su_json_t *j, bool static_link, const char *mode,
                                 const char *arg, const char *const *env) {
  sp_run(r, static_link, mode, arg, env);
  cr_assert_eq(r->rc, 0, "exit %d: %s", r->rc, r->err);
  su_json_load(j, r->json_path, "one");
}

/** Run `sites_prog MODE [ARG]` with env: it must end with status rc and
 * write exactly `err` to stderr. */
static inline void sp_expect_err(const char *mode, const char *arg, const char *const *env, int rc,
                                 const char *err) {
  sp_run_t r;
  sp_run(&r, false, mode, arg, env);
  cr_expect_eq(r.rc, rc, "%s: exit %d, stderr: %s", mode, r.rc, r.err);
  cr_expect_str_eq(r.err, err);
  sp_free(&r);
}

/** Free a run and its report. */
static inline void sp_done(sp_run_t *r, su_json_t *j) {
  su_json_free(j);
  sp_free(r);
}

/** Index of the site of `function` in class `cls` (block size; 0: the
 * system allocator) in report 0 of j; -1 if absent. */
static inline long sp_site(const su_json_t *j, uint64_t cls, const char *function) {
  const char *len = su_jraw(j, "0.sites.len");
  if (len == NULL) return -1;
  char quoted[256];
  snprintf(quoted, sizeof(quoted), "\"%s\"", function);
  for (long i = 0; i < atol(len); i++) {
    const char *f = su_jraw(j, "0.sites.%ld.function", i);
    if (f != NULL && strcmp(f, quoted) == 0 && su_ju(j, "0.sites.%ld.class", i) == cls) return i;
  }
  return -1;
}

/** The site's figure `key` (allocs, live_blocks, ...). */
#define sp_fig(j, i, key) su_ju((j), "0.sites.%ld." key, (i))

/** The site's frame k, as a JSON string ("\"name\""), or NULL. */
static inline const char *sp_frame(const su_json_t *j, long i, int k) {
  return su_jraw(j, "0.sites.%ld.frames.%d", i, k);
}

#endif /* SITES_UTIL_H */
