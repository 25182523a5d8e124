/* SPDX-License-Identifier: MIT */
/* test_docs.c — what a newcomer reads holds: the man pages of man/ are
 * clean for groff and mandoc, cover every public function and every
 * SIZECLASS_* variable the library reads; the README stays short, its links
 * lead somewhere, and its quick-start commands, run in a clean copy of the
 * source tree, print what the README says they print. Runs from the source
 * root (as `make test` does). */
#include <ctype.h>
#include <sys/stat.h>

#include "cr_util.h"

static char tmp[256];

/** A private temporary directory for this test. */
static void make_tmp(void) {
  cr_tmp_make(tmp, sizeof(tmp), "docs");
  cr_at_source_root("README.md");
}

static void remove_tmp(void) { cr_tmp_remove(tmp); }

TestSuite(docs, .fini = remove_tmp);

/** True when `line` (without its newline) is a whole line of text. */
static bool has_line(const char *text, const char *line, size_t len) {
  for (const char *p = text; p != NULL && *p != 0;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl != NULL ? (size_t)(nl - p) : strlen(p);
    if (n == len && memcmp(p, line, len) == 0) return true;
    p = nl != NULL ? nl + 1 : NULL;
  }
  return false;
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
  char *text = cr_slurp(header);
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
   * reads or names in a message (but SIZECLASS_LIB, sizeclass-run's, which
   * the library only knows so as not to call it an unknown setting; the
   * table itself is checked both ways by tests/test_settings.c). */
  char *vars = sh_ok(30,
                     "grep -ohE '\"SIZECLASS_[A-Z0-9_]+' -r src shim --include='*.[ch]' | "
                     "tr -d '\"' | grep -vx SIZECLASS_LIB | sort -u");
  char *page = cr_slurp("man/sizeclass.7");
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

/* ---- the README ------------------------------------------------------------ */

Test(docs, readme_is_short_and_its_links_lead_somewhere) {
  struct stat st;
  cr_assert_eq(stat("README.md", &st), 0);
  cr_assert_leq(st.st_size, 12 * 1024,
                "README.md is %lld bytes; keep it under 12 KiB and move "
                "detail to docs/",
                (long long)st.st_size);
  char *text = cr_slurp("README.md");
  int links = 0;
  for (const char *p = strstr(text, "]("); p != NULL; p = strstr(p + 2, "](")) {
    const char *start = p + 2, *end = strchr(start, ')');
    cr_assert_not_null(end);
    char target[512];
    snprintf(target, sizeof(target), "%.*s", (int)(end - start), start);
    char *hash = strchr(target, '#');
    if (hash != NULL) *hash = 0;
    if (target[0] == 0 || strstr(target, "://") != NULL) continue;
    links++;
    cr_expect_eq(access(target, F_OK), 0, "README.md links to %s, which does not exist", target);
  }
  cr_assert_geq(links, 5, "the README links to docs/");
  free(text);
}

/** The body of the first ``` block at or after `from` whose fence line is
 * "```" + lang; NULL if none. Caller frees. */
static char *fenced_block(const char *from, const char *lang) {
  char fence[32];
  snprintf(fence, sizeof(fence), "```%s\n", lang);
  const char *open = strstr(from, fence);
  if (open == NULL) return NULL;
  const char *body = open + strlen(fence);
  const char *close = strstr(body, "```\n");
  if (close == NULL) return NULL;
  return strndup(body, (size_t)(close - body));
}

/* The quick start: a ```sh block of commands (comments after #), then a
 * ```text block that starts with "$ make run" and shows, line for line,
 * part of what it prints ("…" lines stand for what is left out). Every
 * command but `make test` (which is what runs this test) runs in a copy of
 * the tracked and new files of the tree, as on a fresh clone, and the lines
 * shown must be in its output. */
Test(docs, readme_quick_start_commands_work_as_written, .timeout = 240) {
  char *text = cr_slurp("README.md");
  const char *quick = strstr(text, "\n## Quick start\n");
  cr_assert_not_null(quick, "README.md has a '## Quick start' section");
  char *cmds = fenced_block(quick, "sh");
  cr_assert_not_null(cmds, "the quick start has a ```sh block");
  char *shown = fenced_block(quick, "text");
  cr_assert_not_null(shown, "the quick start shows what `make run` prints in a ```text block");
  cr_assert(strncmp(shown, "$ make run\n", 11) == 0, "the ```text block starts with '$ make run'");

  make_tmp();
  /* The files a clone would have: tracked ones and new ones not ignored
   * (from a tarball without git: everything but the build directory). */
  free(sh_ok(120,
             "if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then "
             "git ls-files -co --exclude-standard -z | tar --null -T - -cf -; "
             "else tar --exclude=./build -cf - .; fi | tar -xf - -C '%s'",
             tmp));
  bool saw_run = false, saw_test = false;
  for (char *line = strtok(cmds, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    char *hash = strchr(line, '#');
    if (hash != NULL) *hash = 0;
    size_t len = strlen(line);
    while (len > 0 && isspace((unsigned char)line[len - 1])) line[--len] = 0;
    if (len == 0) continue;
    if (strcmp(line, "make test") == 0) {
      saw_test = true;
      continue;
    }
    char *out = sh_ok(200, "cd '%s' && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL %s", tmp, line);
    if (strcmp(line, "make run") == 0) {
      saw_run = true;
      int checked = 0;
      for (const char *p = shown + 11; *p != 0;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl != NULL ? (size_t)(nl - p) : strlen(p);
        bool elided = (n == 3 && memcmp(p, "…", 3) == 0) || (n == 3 && memcmp(p, "...", 3) == 0);
        if (n > 0 && !elided) {
          cr_expect(has_line(out, p, n), "README shows a line `make run` does not print: %.*s",
                    (int)n, p);
          checked++;
        }
        p = nl != NULL ? nl + 1 : p + n;
      }
      cr_assert_geq(checked, 5, "the README shows some of the output");
    }
    free(out);
  }
  cr_assert(saw_run && saw_test, "the quick start is `make run` and `make test`");
  free(cmds);
  free(shown);
  free(text);
}

/* The README's steady-state recipe for CI (the ```sh line that sets
 * SIZECLASS_FRAME_CHECK=abort), run exactly as printed, passes on the
 * bundled demo: exit 0, no "fresh carve" line, and the library really was
 * loaded (the demo says its frames were marked). It runs in a directory
 * whose `build` is the build the tests use, so $PWD/build/... and
 * build/... in the line mean what they mean at the source root. */
Test(docs, readme_frame_check_recipe_passes_on_the_demo, .timeout = 120) {
  char *text = cr_slurp("README.md");
  char line[1024] = "";
  for (const char *p = strstr(text, "```sh\n"); p != NULL && line[0] == 0;
       p = strstr(p + 1, "```sh\n")) {
    const char *end = strstr(p + 6, "```\n");
    cr_assert_not_null(end);
    for (const char *l = p + 6; l < end;) {
      const char *nl = strchr(l, '\n');
      if (memmem(l, (size_t)(nl - l), "SIZECLASS_FRAME_CHECK=abort", 27) != NULL) {
        snprintf(line, sizeof(line), "%.*s", (int)(nl - l), l);
        break;
      }
      l = nl + 1;
    }
  }
  free(text);
  cr_assert(line[0] != 0, "the README shows the frame-check recipe in a ```sh block");
  char *hash = strchr(line, '#');
  if (hash != NULL) *hash = 0;
  cr_assert_not_null(strstr(line, "merge_island"), "the recipe runs the demo: %s", line);
  make_tmp();
  const char *b = getenv("SC_BUILD");
  char build[4096], link[512];
  cr_assert_not_null(realpath(b != NULL ? b : "build", build));
  snprintf(link, sizeof(link), "%s/build", tmp);
  cr_assert_eq(symlink(build, link), 0);
  char demo[4200];
  snprintf(demo, sizeof(demo), "%s/examples/merge_island", build);
  cr_assert_eq(access(demo, X_OK), 0, "no %s (make test builds the demo)", demo);
  int rc;
  char *out = sh_run(&rc, 100, "cd '%s' && %s 2>&1", tmp, line);
  cr_expect_eq(rc, 0, "`%s` exited %d:\n%s", line, rc, out);
  cr_expect_null(strstr(out, "fresh carve"), "%s", out);
  cr_expect_not_null(strstr(out, "marked in libsizeclass"), "the library was not loaded:\n%s", out);
  free(out);
}

/* ---- one version ------------------------------------------------------------- */

/** The value of "NAME := value" in the Makefile; asserts. */
static void makefile_var(const char *name, char *out, size_t cap) {
  char *mk = cr_slurp("Makefile");
  for (char *line = strtok(mk, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    size_t n = strlen(name);
    if (strncmp(line, name, n) != 0 || (line[n] != ' ' && line[n] != ':')) continue;
    char *eq = strstr(line, ":=");
    cr_assert_not_null(eq, "%s", line);
    eq += 2;
    while (*eq == ' ') eq++;
    snprintf(out, cap, "%s", eq);
    free(mk);
    return;
  }
  cr_assert_fail("no %s in the Makefile", name);
}

/* The Makefile's VERSION is the one source; the header's SC_VERSION_* and the
 * Debian changelog's newest entry must say the same. (Installed files take
 * it from the Makefile: test_install and make test-deb check those.) */
Test(docs, the_version_is_the_same_everywhere) {
  char version[64], somajor[16];
  makefile_var("VERSION", version, sizeof(version));
  makefile_var("SOMAJOR", somajor, sizeof(somajor));
  unsigned major, minor, patch;
  cr_assert_eq(sscanf(version, "%u.%u.%u", &major, &minor, &patch), 3, "VERSION %s", version);
  char *header = cr_slurp("include/sizeclass.h");
  char want[128];
  snprintf(want, sizeof(want), "#define SC_VERSION_MAJOR %u\n", major);
  cr_expect_not_null(strstr(header, want), "sizeclass.h: %s", want);
  snprintf(want, sizeof(want), "#define SC_VERSION_MINOR %u\n", minor);
  cr_expect_not_null(strstr(header, want), "sizeclass.h: %s", want);
  snprintf(want, sizeof(want), "#define SC_VERSION_PATCH %u\n", patch);
  cr_expect_not_null(strstr(header, want), "sizeclass.h: %s", want);
  free(header);
  char *changelog = cr_slurp("packaging/debian/changelog");
  snprintf(want, sizeof(want), "libsizeclass (%s) ", version);
  cr_expect(strncmp(changelog, want, strlen(want)) == 0,
            "packaging/debian/changelog must start with an entry for %s", version);
  free(changelog);
  cr_expect_eq(strspn(somajor, "0123456789"), strlen(somajor), "SOMAJOR %s", somajor);
}

/* ---- the licence ------------------------------------------------------------- */

/* MIT, the same holders everywhere the licence is stated. */
Test(docs, the_licence_is_mit_everywhere) {
  char *license = cr_slurp("LICENSE");
  cr_expect(
      strncmp(license, "MIT License\n\nCopyright (c) 2026 The libsizeclass authors\n", 56) == 0,
      "LICENSE: %.80s", license);
  cr_expect_not_null(strstr(license, "Permission is hereby granted, free of charge"));
  free(license);
  char *copyright = cr_slurp("packaging/debian/copyright");
  cr_expect_not_null(strstr(copyright,
                            "\nFiles: *\nCopyright: 2026 The libsizeclass authors\n"
                            "License: MIT\n"),
                     "%s", copyright);
  cr_expect_not_null(strstr(copyright, "\nLicense: MIT\n Permission is hereby granted"));
  free(copyright);
  char *pc = cr_slurp("sizeclass.pc.in");
  cr_expect_not_null(strstr(pc, "\nLicense: MIT\n"), "%s", pc);
  free(pc);
  char *readme = cr_slurp("README.md");
  cr_expect_not_null(strstr(readme, "\n## Licence\n\nMIT: see [LICENSE](LICENSE)."));
  free(readme);
}

/* Every file of code, build or manual says its licence in its first three
 * lines (SPDX), so a file copied out of the tree still carries it. */
Test(docs, every_source_file_names_its_licence) {
  char *missing =
      sh_ok(60,
            "for f in Makefile .ci/run sizeclass.pc.in cmake/*.in examples/*/CMakeLists.txt "
            "$(find scripts -type f -not -path '*/__pycache__/*') "
            "$(find src shim include tests bench examples mk man -path tests/fuzz/corpus -prune -o "
            "-type f \\( -name '*.[ch]' -o -name '*.cc' -o -name '*.py' -o -name '*.sh' -o "
            "-name '*.pl' -o -name '*.mk' -o -name '*.[1-8]' \\) -print); do "
            "head -n 3 \"$f\" | grep -q 'SPDX-License-Identifier: MIT' || echo \"$f\"; done");
  cr_expect_str_eq(missing, "", "files without an SPDX-License-Identifier line:\n%s", missing);
  free(missing);
}

/* `make help` lists the targets people use on one screen (at most 40
 * lines of at most 80 columns), and every target it lists exists: `make -n
 * TARGET` succeeds for each, as it does not for a name make does not know
 * (checked first, so the loop can fail). */
Test(docs, make_help_lists_only_targets_that_exist, .timeout = 600) {
  cr_at_source_root("Makefile");
  const char *make = "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory";
  int rc;
  free(sh_run(&rc, 60, "%s -n no-such-target-here", make));
  cr_assert_neq(rc, 0, "make -n of an unknown target must fail");
  char *help = sh_ok(60, "%s -s help", make);
  int lines = 0, targets = 0;
  for (const char *p = help; *p != 0;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl != NULL ? (size_t)(nl - p) : strlen(p);
    cr_expect_leq(n, 80, "a line of make help over 80 columns: %.*s", (int)n, p);
    if (lines > 0) {
      cr_expect(n > 2 && p[0] == ' ' && p[1] == ' ' && islower((unsigned char)p[2]),
                "not a target line: %.*s", (int)n, p);
      targets++;
    }
    lines++;
    p = nl != NULL ? nl + 1 : p + n;
  }
  cr_expect_leq(lines, 40, "make help is over one screen:\n%s", help);
  cr_expect_geq(targets, 20, "make help lists too few targets:\n%s", help);
  free(help);
  char *missing = sh_ok(500,
                        "for t in $(%s -s help | sed 1d | awk '{print $1}'); do "
                        "%s -n \"$t\" >/dev/null 2>&1 || echo \"$t\"; done",
                        make, make);
  cr_expect_str_eq(missing, "", "make help lists targets make -n cannot make:\n%s", missing);
  free(missing);
}
