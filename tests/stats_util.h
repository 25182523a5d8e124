/* SPDX-License-Identifier: MIT */
/* stats_util.h — helpers of tests/test_stats.c: run a helper program
 * preloaded with chosen SIZECLASS_* variables (through proc_run.h),
 * flatten a JSON report with python3's json module (strict: it must parse)
 * into "path=value" lines, split the text report into tables and key/value
 * pairs, and render values the way docs/stats.md says the text form shows
 * them. */
#ifndef STATS_UTIL_H
#define STATS_UTIL_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cr_util.h"

/* ---- files and processes -------------------------------------------------------- */

static inline const char *su_build(void) { return pr_build_dir(); }

/** Whole file as a NUL-terminated string (free it); NULL if unreadable. */
static inline char *su_read(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  for (size_t r; (r = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
    len += r;
    if (len + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  buf[len] = 0;
  return buf;
}

/** A fresh temporary directory (path in dir, >= 64 bytes). */
static inline void su_tmpdir(char *dir) { cr_tmp_make(dir, 64, "stats"); }

/** Run argv (preloaded with LD_PRELOAD=libsizeclass.so when asked) with the
 * NAME=value entries of env (NULL-terminated) on top of our environment
 * minus LD_PRELOAD and SIZECLASS_*; stdout and stderr go to files. Kills it
 * after timeout_s (a hang is a failure, not a timing check). Returns the
 * exit status, or 128 + signal. */
static inline int su_run(const char *const argv[], const char *const env[], const char *out,
                         const char *err, int timeout_s, bool preload_lib) {
  pr_opts_t o = {.preload = preload_lib,
                 .drop_sizeclass_env = true,
                 .timeout_s = timeout_s,
                 .stdout_path = out,
                 .stderr_path = err,
                 .env = env};
  pr_result_t r;
  cr_assert(pr_run(&r, (char *const *)argv, &o), "could not run %s", argv[0]);
  free(r.out);
  if (r.timed_out)
    cr_assert_fail("%s %s hung (killed after %d s)", argv[0], argv[1] ? argv[1] : "", timeout_s);
  return r.exit_code;
}

/** The helper program's path. */
static inline void su_prog(char *out, size_t cap) {
  snprintf(out, cap, "%s/tests/progs/stats_pattern", su_build());
}

/** Value of "<word> N" on a line of s (the program's stdout); asserts. */
static inline uint64_t su_said(const char *s, const char *word) {
  size_t w = strlen(word);
  for (const char *p = s; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, word, w) == 0 && p[w] == ' ') return strtoull(p + w + 1, NULL, 10);
  cr_assert_fail("no '%s' in the program's output: %s", word, s);
  return 0;
}

/* ---- JSON, flattened by python3 --------------------------------------------------- */

/* Parses the JSON documents in a file (mode "one": exactly one, json.load;
 * "many": a sequence, as signal dumps leave on stderr), refuses
 * non-integers except the documented decimals (mean_*), prints
 * docs=N, then PATH=VALUE per scalar and PATH.len=N per list, PATH being
 * "<doc>.<key>.<index>...". */
static const char su_flatten_py[] =
    "import json,sys\n"
    "src=open(sys.argv[1]).read()\n"
    "if sys.argv[2]=='one': docs=[json.loads(src)]\n"
    "else:\n"
    "  dec=json.JSONDecoder(); docs=[]; i=0\n"
    "  while True:\n"
    "    while i<len(src) and src[i].isspace(): i+=1\n"
    "    if i>=len(src): break\n"
    "    d,i=dec.raw_decode(src,i); docs.append(d)\n"
    "out=['docs=%d'%len(docs)]\n"
    "def w(p,k,v):\n"
    "  if isinstance(v,dict):\n"
    "    for kk,x in v.items(): w(p+'.'+kk,kk,x)\n"
    "  elif isinstance(v,list):\n"
    "    out.append(p+'.len=%d'%len(v))\n"
    "    for i,x in enumerate(v): w(p+'.'+str(i),k,x)\n"
    "  else:\n"
    "    if isinstance(v,float) and not k.startswith('mean_'): sys.exit('float at '+p)\n"
    "    out.append(p+'='+('null' if v is None else json.dumps(v)))\n"
    "for n,d in enumerate(docs): w(str(n),'',d)\n"
    "print('\\n'.join(out))\n";

typedef struct {
  char *buf;
  char **key, **val;
  size_t n;
} su_json_t;

/** Flatten the JSON in path; asserts that python3 accepted it. */
static inline void su_json_load(su_json_t *j, const char *path, const char *mode) {
  char out[512], err[512];
  snprintf(out, sizeof(out), "%s.flat", path);
  snprintf(err, sizeof(err), "%s.flat.err", path);
  /* Debian's python3 when there (a pyenv shim is a shell script). */
  char *argv[] = {access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3",
                  "-c",
                  (char *)su_flatten_py,
                  (char *)path,
                  (char *)mode,
                  NULL};
  pr_opts_t o = {.timeout_s = 60, .stdout_path = out, .stderr_path = err};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o), "could not run python3");
  free(r.out);
  char *e = su_read(err);
  cr_assert(r.exit_code == 0, "python3 rejected %s: %s", path, e ? e : "?");
  free(e);
  j->buf = su_read(out);
  cr_assert_not_null(j->buf);
  size_t lines = 1;
  for (char *p = j->buf; *p; p++) lines += *p == '\n';
  j->key = calloc(lines, sizeof(char *));
  j->val = calloc(lines, sizeof(char *));
  j->n = 0;
  for (char *line = strtok(j->buf, "\n"); line; line = strtok(NULL, "\n")) {
    char *eq = strchr(line, '=');
    if (eq == NULL) continue;
    *eq = 0;
    j->key[j->n] = line;
    j->val[j->n++] = eq + 1;
  }
}

/** The one JSON report in text (a program's stdout, say), written to
 * dir/name and flattened. */
static inline void su_json_load_text(su_json_t *j, const char *dir, const char *name,
                                     const char *text) {
  char path[256];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
  su_json_load(j, path, "one");
}

static inline void su_json_free(su_json_t *j) {
  free(j->buf);
  free(j->key);
  free(j->val);
}

/** The raw value at a printf-formatted path, or NULL. */
static inline const char *su_jraw(const su_json_t *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline const char *su_jraw(const su_json_t *j, const char *fmt, ...) {
  char path[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(path, sizeof(path), fmt, ap);
  va_end(ap);
  for (size_t i = 0; i < j->n; i++)
    if (strcmp(j->key[i], path) == 0) return j->val[i];
  return NULL;
}

/** The integer at a path; asserts it exists and is an integer. */
#define su_ju(j, ...)                                                                \
  ({                                                                                 \
    const char *v_ = su_jraw((j), __VA_ARGS__);                                      \
    cr_assert_not_null(v_, "JSON key missing");                                      \
    char *end_;                                                                      \
    uint64_t u_ = strtoull(v_, &end_, 10);                                           \
    cr_assert(*end_ == 0 && v_[0] >= '0' && v_[0] <= '9', "not an integer: %s", v_); \
    u_;                                                                              \
  })

/* ---- the text form ----------------------------------------------------------------- */

/* A text report split into lines, each split into cells: runs of two or
 * more spaces separate cells; a cell holds at most single spaces. */
typedef struct {
  char *buf;
  char **line;
  size_t n;
} su_text_t;

static inline void su_text_load(su_text_t *t, const char *path) {
  t->buf = su_read(path);
  cr_assert_not_null(t->buf, "no report at %s", path);
  size_t lines = 1;
  for (char *p = t->buf; *p; p++) lines += *p == '\n';
  t->line = calloc(lines + 1, sizeof(char *));
  t->n = 0;
  char *p = t->buf;
  while (*p) {
    t->line[t->n++] = p;
    char *nl = strchr(p, '\n');
    if (nl == NULL) break;
    *nl = 0;
    p = nl + 1;
  }
}

static inline void su_text_free(su_text_t *t) {
  free(t->buf);
  free(t->line);
}

/** Index of the first line at or after `from` starting with prefix; -1. */
static inline long su_find(const su_text_t *t, size_t from, const char *prefix) {
  for (size_t i = from; i < t->n; i++)
    if (strncmp(t->line[i], prefix, strlen(prefix)) == 0) return (long)i;
  return -1;
}

/** Split line into cells (copies into store); their count. */
static inline size_t su_cells(const char *line, char cells[][48], size_t max) {
  size_t n = 0;
  const char *p = line;
  while (*p == ' ') p++;
  while (*p && n < max) {
    size_t len = 0;
    while (p[len] && !(p[len] == ' ' && (p[len + 1] == ' ' || p[len + 1] == 0))) len++;
    if (len > 47) len = 47;
    memcpy(cells[n], p, len);
    cells[n++][len] = 0;
    p += len;
    while (*p == ' ') p++;
  }
  return n;
}

/* ---- rendering, as docs/stats.md specifies ---------------------------------------- */

typedef enum { K_COUNT, K_BYTES, K_SIZE, K_PERMILLE, K_TENTHS, K_NS } su_kind_t;

/** x.y from tenths. */
static inline void su_tenths(char *out, uint64_t tenths) {
  sprintf(out, "%" PRIu64 ".%" PRIu64, tenths / 10, tenths % 10);
}

/** The text rendering of a JSON value raw (integer, decimal or null). */
static inline void su_render(char *out, su_kind_t kind, const char *raw) {
  if (strcmp(raw, "null") == 0) {
    strcpy(out, "-");
    return;
  }
  uint64_t v = strtoull(raw, NULL, 10);
  char num[40];
  switch (kind) {
    case K_COUNT:
      sprintf(out, "%" PRIu64, v);
      return;
    case K_SIZE:
      sprintf(out, "%" PRIu64 " B", v);
      return;
    case K_PERMILLE:
      su_tenths(num, v);
      sprintf(out, "%s%%", num);
      return;
    case K_TENTHS:
      strcpy(out, raw);
      return; /* JSON has the same one decimal */
    case K_NS:
      sprintf(out, "%" PRIu64 ".%03" PRIu64 " s", v / 1000000000, v / 1000000 % 1000);
      return;
    case K_BYTES:
      break;
  }
  if (v < 10240) {
    sprintf(out, "%" PRIu64 " B", v);
    return;
  }
  const char *unit[] = {"KiB", "MiB", "GiB"};
  unsigned u = 0;
  uint64_t div = 1024;
  while (u < 2 && v >= 1000 * div) div *= 1024, u++;
  su_tenths(num, v * 10 / div);
  sprintf(out, "%s %s", num, unit[u]);
}

/** Kind of a JSON key, from its name (the schema's naming rules). */
static inline su_kind_t su_kind_of(const char *key) {
  size_t n = strlen(key);
  if (strcmp(key, "size") == 0 || strcmp(key, "intermediate_size") == 0) return K_SIZE;
  if (strncmp(key, "mean_", 5) == 0) return K_TENTHS;
  if (strcmp(key, "wall_ns") == 0) return K_NS;
  if (n > 9 && strcmp(key + n - 9, "_permille") == 0) return K_PERMILLE;
  if ((n > 6 && strcmp(key + n - 6, "_bytes") == 0) || strcmp(key, "bytes_returned") == 0)
    return K_BYTES;
  return K_COUNT;
}

#endif /* STATS_UTIL_H */
