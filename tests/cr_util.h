/* SPDX-License-Identifier: MIT */
/* cr_util.h — the suites' helpers that need Criterion's assertions: a
 * shell command line that must run (sh_run) or succeed (sh_ok), a private
 * temporary directory (cr_tmp_make, cr_tmp_remove) and a file that must be
 * readable (cr_slurp). The suites run from the source root, as `make test`
 * runs them; the helpers that need no Criterion are core_util.h's and
 * proc_run.h's (this header brings both). */
#ifndef CR_UTIL_H
#define CR_UTIL_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core_util.h"

/** Run a printf-formatted shell command line (stdout and stderr together)
 * within timeout_s: its output (free() it), its exit code in *status. The
 * test fails when it could not start or timed out. */
#define sh_run(status, timeout_s, ...)                                        \
  ({                                                                          \
    char *sh_out_ = pr_sh((status), (timeout_s), __VA_ARGS__);                \
    cr_assert_not_null(sh_out_, "could not run, or timed out: " __VA_ARGS__); \
    sh_out_;                                                                  \
  })

/** The same for a command that must succeed (exit code 0). */
#define sh_ok(timeout_s, ...)                                                 \
  ({                                                                          \
    int sh_rc_;                                                               \
    char *sh_ok_ = sh_run(&sh_rc_, (timeout_s), __VA_ARGS__);                 \
    cr_assert_eq(sh_rc_, 0, "exit %d: %s\n%s", sh_rc_, #__VA_ARGS__, sh_ok_); \
    sh_ok_;                                                                   \
  })

/** A command that must succeed and print exactly `want` (stdout and
 * stderr); `why` says what that shows. */
#define sh_expect(timeout_s, want, why, ...)                        \
  do {                                                              \
    char *sh_x_ = sh_ok((timeout_s), __VA_ARGS__);                  \
    cr_assert_str_eq(sh_x_, (want), "%s: %s", (why), #__VA_ARGS__); \
    free(sh_x_);                                                    \
  } while (0)

/** The run r (proc_run.h) exited by itself with `code`. */
#define cr_assert_exit(r, code)                                                             \
  cr_assert(WIFEXITED((r)->status) && WEXITSTATUS((r)->status) == (code),                   \
            "wait status %#x, not exit %d; stderr: %s", (unsigned)(r)->status, (int)(code), \
            (r)->err)

/** Make a private temporary directory /tmp/sc-<tag>-XXXXXX; its path into
 * dir (cap bytes). */
static inline void cr_tmp_make(char *dir, size_t cap, const char *tag) {
  snprintf(dir, cap, "/tmp/sc-%s-XXXXXX", tag);
  cr_assert_not_null(mkdtemp(dir), "mkdtemp %s", dir);
}

/** The test runs from the source root (as `make test` runs it): `file`,
 * one of the tree's, is there. */
static inline void cr_at_source_root(const char *file) {
  cr_assert_eq(access(file, R_OK), 0, "tests run from the source root (no %s here)", file);
}

/** Remove a directory cr_tmp_make made, whatever it holds (nothing when
 * dir is empty: the test never made it); false, with a line on stderr,
 * when it could not. For a suite's .fini too, pass or fail. */
static inline bool cr_tmp_remove(const char *dir) {
  if (dir[0] == '\0') return true;
  int rc;
  free(pr_sh(&rc, 60, "rm -rf '%s'", dir));
  if (rc != 0) fprintf(stderr, "could not remove %s\n", dir);
  return rc == 0;
}

/** The whole file, NUL-terminated (free() it); the test fails when it
 * cannot be read. */
static inline char *cr_slurp(const char *path) {
  char *text = cu_read_file(path, NULL);
  cr_assert_not_null(text, "cannot read %s", path);
  return text;
}

#endif /* CR_UTIL_H */
