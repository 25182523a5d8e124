/* test_docs.c — what a newcomer reads holds: the man pages of man/ are
 * clean for groff and mandoc, cover every public function and every
 * SIZECLASS_* variable the library reads. Runs from the source root (as
 * `make test` does). */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core_util.h"

static char tmp[256];

/** A private temporary directory for this test. */
static void make_tmp(void) {
  snprintf(tmp, sizeof(tmp), "/tmp/sc-docs-XXXXXX");
  cr_assert_not_null(mkdtemp(tmp));
  cr_assert_eq(access("man/sizeclass.7", R_OK), 0, "tests run from the source root");
}

/** Suite teardown: remove the temporary directory, pass or fail. */
static void remove_tmp(void) {
  if (tmp[0] == '\0') return;
  int rc;
  free(pr_sh(&rc, 60, "rm -rf '%s'", tmp));
}

TestSuite(docs, .fini = remove_tmp);

/** Run a shell command that must succeed within timeout_s; its output. */
#define sh_ok(timeout_s, ...)                                              \
  ({                                                                       \
    int rc_;                                                               \
    char *out_ = pr_sh(&rc_, (timeout_s), __VA_ARGS__);                    \
    cr_assert_not_null(out_, "could not run, or timed out: " __VA_ARGS__); \
    cr_assert_eq(rc_, 0, "exit %d: %s\n%s", rc_, #__VA_ARGS__, out_);      \
    out_;                                                                  \
  })

/** The whole file (free it); asserts it can be read. */
static char *slurp(const char *path) {
  char *text = cu_read_file(path, NULL);
  cr_assert_not_null(text, "cannot read %s", path);
  return text;
}

/* ---- man pages ------------------------------------------------------------ */

Test(docs, man_pages_are_clean_for_groff_and_mandoc) {
  char *pages = sh_ok(30, "ls man/*.[1-8]");
  int n = 0;
  for (char *page = strtok(pages, "\n"); page != NULL; page = strtok(NULL, "\n"), n++) {
    char *out = sh_ok(30, "groff -man -t -ww -z '%s'", page);
    cr_expect_str_empty(out, "groff -ww on %s:\n%s", page, out);
    free(out);
    out = sh_ok(30, "mandoc -T lint -W warning '%s'", page);
    cr_expect_str_empty(out, "mandoc -T lint on %s:\n%s", page, out);
    free(out);
    out = sh_ok(30, "LC_ALL=C grep -n '[^ -~]' '%s' || true", page);
    cr_expect_str_empty(out, "%s: ASCII only (escapes for the rest):\n%s", page, out);
    free(out);
  }
  cr_assert_geq(n, 5, "sizeclass.7, sizeclass-run.1 and the three API pages");
  free(pages);
}

/** The names a header declares as functions: "sc_x" for each line that
 * starts with a type and has "sc_x(" in it (declarations, not macros). */
static size_t declared_functions(const char *header, char names[][64], size_t max) {
  char *text = slurp(header);
  size_t n = 0;
  for (char *line = strtok(text, "\n"); line != NULL && n < max; line = strtok(NULL, "\n")) {
    if (!islower((unsigned char)line[0])) continue; /* comments, macros, members */
    char *call = strstr(line, "sc_");
    while (call != NULL && call[strspn(call, "abcdefghijklmnopqrstuvwxyz0123456789_")] != '(')
      call = strstr(call + 1, "sc_");
    if (call == NULL) continue;
    size_t len = strspn(call, "abcdefghijklmnopqrstuvwxyz0123456789_");
    snprintf(names[n++], 64, "%.*s", (int)len, call);
  }
  free(text);
  return n;
}

Test(docs, every_public_function_has_a_man_page, .timeout = 60) {
  make_tmp();
  char *out = sh_ok(60, "make -s --no-print-directory install-man PREFIX=/usr DESTDIR='%s'", tmp);
  free(out);
  static char names[128][64];
  size_t n = declared_functions("include/sizeclass.h", names, 128);
  n += declared_functions("include/sizeclass_pool.h", names + n, 128 - n);
  cr_assert_geq(n, 19, "the headers' functions were found (%zu)", n);
  for (size_t i = 0; i < n; i++) {
    char path[512];
    snprintf(path, sizeof(path), "%s/usr/share/man/man3/%s.3", tmp, names[i]);
    struct stat st;
    cr_expect_eq(stat(path, &st), 0,
                 "no man page for %s (add it to a page's NAME and to "
                 "MAN_ALIASES in mk/install.mk)",
                 names[i]);
    /* The page it resolves to names it in its NAME section. */
    char *name_line = sh_ok(10, "sed -n '/^\\.SH NAME/,/^\\.SH/p' '%s' | tr '\\n' ' '", path);
    char word[80];
    snprintf(word, sizeof(word), "%s,", names[i]);
    char last[80];
    snprintf(last, sizeof(last), "%s \\-", names[i]);
    cr_expect(strstr(name_line, word) != NULL || strstr(name_line, last) != NULL,
              "%s's page does not name it: %s", names[i], name_line);
    free(name_line);
  }
}

Test(docs, sizeclass7_documents_every_environment_variable) {
  /* Every "SIZECLASS_..." string in the library's sources is a variable it
   * reads or names in a message. */
  char *vars = sh_ok(30,
                     "grep -ohE '\"SIZECLASS_[A-Z0-9_]+' src/*.c src/*.h shim/*.c | "
                     "tr -d '\"' | sort -u");
  char *page = slurp("man/sizeclass.7");
  const char *env = strstr(page, "\n.SH ENVIRONMENT\n");
  cr_assert_not_null(env, "sizeclass.7 has an ENVIRONMENT section");
  const char *env_end = strstr(env + 1, "\n.SH ");
  cr_assert_not_null(env_end);
  size_t env_len = (size_t)(env_end - env);
  int n = 0;
  for (char *v = strtok(vars, "\n"); v != NULL; v = strtok(NULL, "\n"), n++) {
    char entry[128];
    snprintf(entry, sizeof(entry), "\n.TP\n.B %s\n", v);
    const char *at = strstr(env, entry);
    cr_expect(at != NULL && at < env + env_len,
              "%s is read by the library but has no entry in sizeclass.7's ENVIRONMENT", v);
  }
  cr_assert_geq(n, 6, "the variables were found");
  free(vars);
  free(page);
}
