/* SPDX-License-Identifier: MIT */
/* test_install.c — `make install` / `make uninstall` (mk/install.mk) into a
 * temporary prefix: the versioned shared library and its links, the static
 * library, headers, sizeclass.pc and the sizeclass-run wrapper; a program
 * built through pkg-config, one linked statically, and a plain program run
 * through the wrapper; DESTDIR staging; and an uninstall that removes
 * exactly what was installed. Runs from the source root (as `make test`
 * does); SC_BUILD names the build directory. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cr_util.h"

/* A program using the library through its headers and pkg-config. */
static const char app_src[] =
    "#include <malloc.h>\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include \"sizeclass.h\"\n"
    "#include \"sizeclass_pool.h\"\n"
    "int main(void) {\n"
    "  struct sc_pool_config c = {.capacity = 8, .policy = SC_POOL_REJECT};\n"
    "  sc_pool *pool = sc_pool_create(40, &c);\n"
    "  void *o = sc_pool_acquire(pool);\n"
    "  sc_pool_release(pool, o);\n"
    "  void *again = sc_pool_acquire(pool);\n"
    "  void *p = malloc(40);\n"
    "  sc_frame_mark();\n"
    "  printf(\"reuse %d usable %zu owned %d\\n\", o == again, malloc_usable_size(p),"
    " (int)sc_owns(p));\n"
    "  free(p);\n"
    "  sc_pool_destroy(pool);\n"
    "  return 0;\n"
    "}\n";

/* A program that knows nothing of the library: what the wrapper changes. */
static const char plain_src[] =
    "#include <malloc.h>\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "int main(int argc, char **argv) {\n"
    "  void *p = malloc(40);\n"
    "  const char *s = getenv(\"SIZECLASS_STATS\"), *f = getenv(\"SIZECLASS_STATS_FORMAT\");\n"
    "  const char *pre = getenv(\"LD_PRELOAD\");\n"
    "  printf(\"usable %zu stats %s format %s preload %s args\", malloc_usable_size(p),\n"
    "         s ? s : \"-\", f ? f : \"-\", pre && strstr(pre, \"libsizeclass\") ? \"yes\" : "
    "\"no\");\n"
    "  for (int i = 1; i < argc; i++) printf(\" [%s]\", argv[i]);\n"
    "  printf(\"\\n\");\n"
    "  free(p);\n"
    "  return 0;\n"
    "}\n";

static char tmp[256];

/** A private temporary directory for this test. */
static void make_tmp(void) {
  cr_tmp_make(tmp, sizeof(tmp), "install");
  cr_at_source_root("mk/install.mk");
}

/** Suite teardown: remove the temporary directory, pass or fail. */
static void remove_tmp(void) { cr_tmp_remove(tmp); }

TestSuite(install, .fini = remove_tmp);

/* Commands here may build and install: each gets 300 s. */
#define SH_S 300

/** `make install`/`uninstall` of the already built library: the build
 * outputs are not remade (-o), so a test never rebuilds under other tests. */
static void make_target(const char *target, const char *vars) {
  const char *build = getenv("SC_BUILD");
  cr_assert_not_null(build, "SC_BUILD must point at the build directory");
  free(sh_ok(SH_S,
             "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory BUILD=%s "
             "-o %s/libsizeclass.so -o %s/libsizeclass.a %s %s",
             build, build, build, target, vars));
}

/** A fresh temporary directory, and `make install PREFIX=` it. */
static void install_in_tmp(void) {
  make_tmp();
  char vars[512];
  snprintf(vars, sizeof(vars), "PREFIX=%s", tmp);
  make_target("install", vars);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "%s", path);
  fputs(text, f);
  fclose(f);
}

static bool is_link_to(const char *path, const char *target) {
  char buf[256];
  ssize_t n = readlink(path, buf, sizeof(buf) - 1);
  if (n < 0) return false;
  buf[n] = '\0';
  return strcmp(buf, target) == 0;
}

/** Every regular file and link under dir, sorted, one per line. */
static char *files_under(const char *dir) {
  return sh_ok(SH_S, "cd '%s' && find . \\( -type f -o -type l \\) | sort", dir);
}

Test(install, installs_libraries_headers_pkgconfig_and_wrapper) {
  install_in_tmp();

  char path[512];
  struct stat st;
  snprintf(path, sizeof(path), "%s/lib/libsizeclass.so.0.1.0", tmp);
  cr_assert(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "the versioned library");
  char *soname = sh_ok(SH_S, "readelf -d '%s' | grep SONAME", path);
  cr_assert_not_null(strstr(soname, "[libsizeclass.so.0]"), "soname: %s", soname);
  free(soname);
  snprintf(path, sizeof(path), "%s/lib/libsizeclass.so.0", tmp);
  cr_assert(is_link_to(path, "libsizeclass.so.0.1.0"));
  snprintf(path, sizeof(path), "%s/lib/libsizeclass.so", tmp);
  cr_assert(is_link_to(path, "libsizeclass.so.0"));
  snprintf(path, sizeof(path), "%s/bin/sizeclass-run", tmp);
  cr_assert(stat(path, &st) == 0 && (st.st_mode & S_IXUSR), "the wrapper is executable");

  char *listing = files_under(tmp);
  cr_assert_str_eq(listing,
                   "./bin/sizeclass-report\n"
                   "./bin/sizeclass-run\n"
                   "./bin/sizeclass-top\n"
                   "./include/sizeclass.h\n"
                   "./include/sizeclass.hpp\n"
                   "./include/sizeclass_pool.h\n"
                   "./lib/cmake/sizeclass/sizeclass-config-version.cmake\n"
                   "./lib/cmake/sizeclass/sizeclass-config.cmake\n"
                   "./lib/cmake/sizeclass/sizeclass-targets.cmake\n"
                   "./lib/libsizeclass.a\n"
                   "./lib/libsizeclass.so\n"
                   "./lib/libsizeclass.so.0\n"
                   "./lib/libsizeclass.so.0.1.0\n"
                   "./lib/pkgconfig/sizeclass.pc\n"
                   "./share/man/man1/sizeclass-report.1\n"
                   "./share/man/man1/sizeclass-run.1\n"
                   "./share/man/man1/sizeclass-top.1\n"
                   "./share/man/man3/sc_budget_set.3\n"
                   "./share/man/man3/sc_calloc.3\n"
                   "./share/man/man3/sc_class_size.3\n"
                   "./share/man/man3/sc_frame_expect_steady.3\n"
                   "./share/man/man3/sc_frame_mark.3\n"
                   "./share/man/man3/sc_free.3\n"
                   "./share/man/man3/sc_malloc.3\n"
                   "./share/man/man3/sc_option_set.3\n"
                   "./share/man/man3/sc_owns.3\n"
                   "./share/man/man3/sc_pool_acquire.3\n"
                   "./share/man/man3/sc_pool_create.3\n"
                   "./share/man/man3/sc_pool_destroy.3\n"
                   "./share/man/man3/sc_pool_hit_rate_permille.3\n"
                   "./share/man/man3/sc_pool_release.3\n"
                   "./share/man/man3/sc_pool_reset.3\n"
                   "./share/man/man3/sc_pool_set_tag.3\n"
                   "./share/man/man3/sc_pool_stats.3\n"
                   "./share/man/man3/sc_posix_memalign.3\n"
                   "./share/man/man3/sc_realloc.3\n"
                   "./share/man/man3/sc_snapshot.3\n"
                   "./share/man/man3/sc_stats_enable_exact.3\n"
                   "./share/man/man3/sc_stats_get.3\n"
                   "./share/man/man3/sc_stats_print.3\n"
                   "./share/man/man3/sc_stats_tags.3\n"
                   "./share/man/man3/sc_stats_threads.3\n"
                   "./share/man/man3/sc_tag.3\n"
                   "./share/man/man3/sc_tag_enter.3\n"
                   "./share/man/man3/sc_tag_leave.3\n"
                   "./share/man/man3/sc_trim.3\n"
                   "./share/man/man3/sc_usable_size.3\n"
                   "./share/man/man7/sizeclass.7\n");
  free(listing);

  /* Man pages: the version filled in; every other name a link to its page. */
  char *th = sh_ok(
      SH_S,
      "find '%s/share/man' -type f -exec grep -h '^\\.TH' {} + | grep -c '\"libsizeclass 0.1.0\"'",
      tmp);
  char *pages = sh_ok(SH_S, "ls man | wc -l"); /* every page of the source tree */
  cr_assert_str_eq(th, pages, "every page (%s) carries the version: %s", pages, th);
  free(pages);
  free(th);
  snprintf(path, sizeof(path), "%s/share/man/man3/sc_free.3", tmp);
  cr_assert(is_link_to(path, "sc_malloc.3"));
  snprintf(path, sizeof(path), "%s/share/man/man3/sc_pool_destroy.3", tmp);
  cr_assert(is_link_to(path, "sc_pool_create.3"));
  char *dangling = sh_ok(SH_S, "find '%s/share/man' -xtype l", tmp);
  cr_assert_str_empty(dangling, "no link points nowhere");
  free(dangling);

  /* Through pkg-config, dynamically linked. */
  snprintf(path, sizeof(path), "%s/app.c", tmp);
  write_file(path, app_src);
  char *version =
      sh_ok(SH_S, "PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --modversion sizeclass", tmp);
  cr_assert_str_eq(version, "0.1.0\n");
  free(version);
  free(sh_ok(SH_S,
             "cd '%s' && cc -std=gnu11 -o app app.c "
             "$(PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --cflags --libs sizeclass)",
             tmp, tmp));
  char *needed = sh_ok(SH_S, "readelf -d '%s/app' | grep NEEDED", tmp);
  cr_assert_not_null(strstr(needed, "[libsizeclass.so.0]"), "app needs the soname: %s", needed);
  free(needed);
  sh_expect(SH_S, "reuse 1 usable 64 owned 1\n", "linked: malloc is ours",
            "LD_LIBRARY_PATH='%s/lib' '%s/app'", tmp, tmp);

  /* Statically linked with the installed archive: no library path needed. */
  free(sh_ok(SH_S,
             "cd '%s' && cc -std=gnu11 -o app_static app.c -I'%s/include' '%s/lib/libsizeclass.a' "
             "-lpthread -ldl",
             tmp, tmp, tmp));
  sh_expect(SH_S, "reuse 1 usable 64 owned 1\n", "static: malloc is ours",
            "env -u LD_LIBRARY_PATH '%s/app_static'", tmp);
}

Test(install, wrapper_preloads_and_sets_the_stats_variables) {
  install_in_tmp();
  char path[512];
  snprintf(path, sizeof(path), "%s/plain.c", tmp);
  write_file(path, plain_src);
  free(sh_ok(SH_S, "cd '%s' && cc -std=gnu11 -o plain plain.c", tmp));
  const char *clean = "env -u LD_PRELOAD -u SIZECLASS_STATS -u SIZECLASS_STATS_FORMAT";

  sh_expect(SH_S, "usable 40 stats - format - preload no args [x]\n",
            "without the wrapper: glibc's malloc", "%s '%s/plain' x", clean, tmp);

  sh_expect(SH_S, "usable 64 stats - format - preload yes args [a] [b c]\n", "the wrapper preloads",
            "%s '%s/bin/sizeclass-run' '%s/plain' a 'b c'", clean, tmp, tmp);

  sh_expect(SH_S, "usable 64 stats 1 format - preload yes args\n", "--stats asks for the report",
            "%s '%s/bin/sizeclass-run' --stats '%s/plain' 2>/dev/null", clean, tmp, tmp);

  char want[512];
  snprintf(want, sizeof(want),
           "usable 64 stats %s/report.json format json preload yes args [--json]\n", tmp);
  sh_expect(SH_S, want, "options stop at the program (or --)",
            "%s '%s/bin/sizeclass-run' --stats='%s/report.json' --json -- '%s/plain' --json", clean,
            tmp, tmp, tmp);

  sh_expect(SH_S, "usable 64 stats 1 format json preload yes args\n", "--json implies --stats",
            "%s '%s/bin/sizeclass-run' --json '%s/plain' 2>/dev/null", clean, tmp, tmp);

  /* --html: the JSON report of the program, rendered by the installed sizeclass-report. */
  char *out = sh_ok(SH_S, "%s '%s/bin/sizeclass-run' --html '%s/page.html' '%s/plain' 2>/dev/null",
                    clean, tmp, tmp, tmp);
  cr_assert_eq(strncmp(out, "usable 64 stats ", 16), 0, "%s", out);
  cr_assert_not_null(strstr(out, ".json format json preload yes args\n"), "%s", out);
  free(out);
  sh_expect(SH_S, "1\n", "the page of the run", "grep -c '<section id=\"classes\">' '%s/page.html'",
            tmp);

  int status;
  out = sh_run(&status, SH_S, "%s '%s/bin/sizeclass-run' --frobnicate '%s/plain'", clean, tmp, tmp);
  cr_assert_eq(status, 2, "unknown option: usage error");
  cr_assert_not_null(strstr(out, "usage: sizeclass-run"));
  free(out);
  out = sh_run(&status, SH_S, "%s '%s/bin/sizeclass-run'", clean, tmp);
  cr_assert_eq(status, 2, "no program: usage error");
  free(out);
}

Test(install, uninstall_removes_exactly_what_was_installed) {
  make_tmp();
  char vars[512];
  snprintf(vars, sizeof(vars), "PREFIX=%s", tmp);
  char path[512];
  snprintf(path, sizeof(path), "%s/lib", tmp);
  cr_assert_eq(mkdir(path, 0755), 0);
  snprintf(path, sizeof(path), "%s/lib/libother.so", tmp);
  write_file(path, "not ours\n");
  make_target("install", vars);
  make_target("install", vars); /* installing twice is fine */
  make_target("uninstall", vars);
  char *listing = files_under(tmp);
  cr_assert_str_eq(listing, "./lib/libother.so\n", "only the file that was there before");
  free(listing);
}

Test(install, destdir_stages_with_final_paths_inside) {
  make_tmp();
  char vars[512];
  snprintf(vars, sizeof(vars), "PREFIX=/opt/sizeclass DESTDIR=%s/stage", tmp);
  make_target("install", vars);
  char stage[512];
  snprintf(stage, sizeof(stage), "%s/stage/opt/sizeclass", tmp);
  char *listing = files_under(stage);
  cr_assert_not_null(strstr(listing, "./lib/libsizeclass.so.0.1.0\n"), "%s", listing);
  cr_assert_not_null(strstr(listing, "./bin/sizeclass-run\n"));
  free(listing);
  char *pc = sh_ok(SH_S, "cat '%s/lib/pkgconfig/sizeclass.pc'", stage);
  cr_assert_not_null(strstr(pc, "libdir=/opt/sizeclass/lib\n"), "%s", pc);
  cr_assert_null(strstr(pc, "/stage"), "DESTDIR does not leak into the file");
  free(pc);
  char *wrapper =
      sh_ok(SH_S, "grep -c '/opt/sizeclass/lib/libsizeclass.so.0' '%s/bin/sizeclass-run'", stage);
  cr_assert_str_eq(wrapper, "1\n");
  free(wrapper);
  make_target("uninstall", vars);
  snprintf(stage, sizeof(stage), "%s/stage", tmp);
  listing = files_under(stage);
  cr_assert_str_eq(listing, "");
  free(listing);
}

/* ---- the CMake package --------------------------------------------------- */

/* A CMake project using the installed package: requests that the version
 * file must refuse first (each QUIET, each must come back not found), then
 * the one the README shows, with both targets. */
static const char cmake_project[] =
    "cmake_minimum_required(VERSION 3.13)\n"
    "project(sc_cmake_test C)\n"
    "foreach(v 0.2 1.0 0.1.1 0.2...0.3)\n"
    "  find_package(sizeclass ${v} QUIET)\n"
    "  if(sizeclass_FOUND)\n"
    "    message(FATAL_ERROR \"find_package(sizeclass ${v}) accepted ${sizeclass_VERSION}\")\n"
    "  endif()\n"
    "  unset(sizeclass_DIR CACHE)\n"
    "endforeach()\n"
    "find_package(sizeclass 0.1 REQUIRED)\n"
    "message(STATUS \"sizeclass ${sizeclass_VERSION} at ${SIZECLASS_LIBRARY_DIR}\")\n"
    "add_executable(app_shared app.c)\n"
    "target_link_libraries(app_shared PRIVATE sizeclass::sizeclass)\n"
    "add_executable(app_static app.c)\n"
    "target_link_libraries(app_static PRIVATE sizeclass::static)\n";

Test(install, cmake_find_package_against_a_destdir_install, .timeout = 240) {
  make_tmp();
  char vars[512];
  snprintf(vars, sizeof(vars), "PREFIX=/usr/local DESTDIR=%s/stage", tmp);
  make_target("install", vars);
  char path[512];
  snprintf(path, sizeof(path), "%s/proj", tmp);
  cr_assert_eq(mkdir(path, 0755), 0);
  snprintf(path, sizeof(path), "%s/proj/CMakeLists.txt", tmp);
  write_file(path, cmake_project);
  snprintf(path, sizeof(path), "%s/proj/app.c", tmp);
  write_file(path, app_src);

  /* The staged tree is found through CMAKE_PREFIX_PATH alone: every path
   * inside the package is relative to its config file. */
  char *out =
      sh_ok(SH_S, "cmake -S '%s/proj' -B '%s/proj/build' -DCMAKE_PREFIX_PATH='%s/stage/usr/local'",
            tmp, tmp, tmp);
  char want[512];
  snprintf(want, sizeof(want), "-- sizeclass 0.1.0 at %s/stage/usr/local/lib\n", tmp);
  cr_assert_not_null(strstr(out, want), "configure output: %s", out);
  free(out);
  free(sh_ok(SH_S, "cmake --build '%s/proj/build'", tmp));

  char *link = sh_ok(SH_S, "cat '%s/proj/build/CMakeFiles/app_static.dir/link.txt'", tmp);
  snprintf(want, sizeof(want), "%s/stage/usr/local/lib/libsizeclass.a -lpthread -ldl", tmp);
  cr_assert_not_null(strstr(link, want), "static link line: %s", link);
  free(link);
  char *needed = sh_ok(SH_S, "readelf -d '%s/proj/build/app_shared' | grep NEEDED", tmp);
  cr_assert_not_null(strstr(needed, "[libsizeclass.so.0]"), "needs the soname: %s", needed);
  free(needed);
  needed = sh_ok(SH_S, "readelf -d '%s/proj/build/app_static' | grep NEEDED", tmp);
  cr_assert_null(strstr(needed, "libsizeclass"), "static: no libsizeclass.so: %s", needed);
  free(needed);

  snprintf(path, sizeof(path), "%s/stage/usr/local/lib", tmp);
  sh_expect(SH_S, "reuse 1 usable 64 owned 1\n", "sizeclass::sizeclass: malloc is ours",
            "LD_LIBRARY_PATH='%s' '%s/proj/build/app_shared'", path, tmp);
  sh_expect(SH_S, "reuse 1 usable 64 owned 1\n", "sizeclass::static: malloc is ours",
            "env -u LD_LIBRARY_PATH '%s/proj/build/app_static'", tmp);
}

/* The version file alone, in CMake's script mode, over the requests it
 * must accept and refuse (what find_package would set before including it). */
Test(install, cmake_version_file_accepts_only_compatible_requests) {
  install_in_tmp();
  static const struct {
    const char *request; /* "" = no version; "A...B" = a range */
    const char *sizeof_void_p;
    const char *want; /* COMPATIBLE EXACT UNSUITABLE */
  } cases[] = {
      {"", "8", "TRUE - -"},          {"0.1", "8", "TRUE - -"},
      {"0.1.0", "8", "TRUE TRUE -"},  {"0", "8", "TRUE - -"},
      {"0.0.9", "8", "FALSE - -"},    {"0.1.1", "8", "FALSE - -"},
      {"0.2", "8", "FALSE - -"},      {"1.0", "8", "FALSE - -"},
      {"0.1...0.3", "8", "TRUE - -"}, {"0.1...<0.1.0", "8", "FALSE - -"},
      {"0.2...1", "8", "FALSE - -"},  {"0.1", "4", "TRUE - TRUE"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const char *req = cases[i].request;
    char set[1024] = "";
    const char *dots = strstr(req, "...");
    if (dots != NULL) {
      bool exclude = dots[3] == '<';
      snprintf(set, sizeof(set),
               "set(PACKAGE_FIND_VERSION_RANGE \"%s\")\n"
               "set(PACKAGE_FIND_VERSION_MIN \"%.*s\")\n"
               "set(PACKAGE_FIND_VERSION_MAX \"%s\")\n"
               "set(PACKAGE_FIND_VERSION_RANGE_MAX %s)\n"
               "set(PACKAGE_FIND_VERSION \"%.*s\")\n",
               req, (int)(dots - req), req, dots + 3 + exclude, exclude ? "EXCLUDE" : "INCLUDE",
               (int)(dots - req), req);
    } else if (req[0] != 0) {
      unsigned major = 0, minor = 0, count = 1;
      sscanf(req, "%u.%u", &major, &minor);
      for (const char *c = req; *c != 0; c++) count += *c == '.';
      snprintf(set, sizeof(set),
               "set(PACKAGE_FIND_VERSION \"%s\")\n"
               "set(PACKAGE_FIND_VERSION_MAJOR %u)\n"
               "set(PACKAGE_FIND_VERSION_MINOR %u)\n"
               "set(PACKAGE_FIND_VERSION_COUNT %u)\n",
               req, major, minor, count);
    }
    char script[2048], file[512];
    snprintf(
        script, sizeof(script),
        "%sset(CMAKE_SIZEOF_VOID_P %s)\n"
        "include(\"%s/lib/cmake/sizeclass/sizeclass-config-version.cmake\")\n"
        "foreach(v PACKAGE_VERSION_COMPATIBLE PACKAGE_VERSION_EXACT PACKAGE_VERSION_UNSUITABLE)\n"
        "  if(NOT DEFINED ${v})\n    set(${v} -)\n  endif()\n"
        "endforeach()\n"
        "message(\"${PACKAGE_VERSION_COMPATIBLE} ${PACKAGE_VERSION_EXACT} "
        "${PACKAGE_VERSION_UNSUITABLE}\")\n",
        set, cases[i].sizeof_void_p, tmp);
    snprintf(file, sizeof(file), "%s/v%zu.cmake", tmp, i);
    write_file(file, script);
    char *out = sh_ok(SH_S, "cmake -P '%s'", file);
    char want[64];
    snprintf(want, sizeof(want), "%s\n", cases[i].want);
    cr_expect_str_eq(out, want, "request '%s', %s-byte pointers: %s", req, cases[i].sizeof_void_p,
                     out);
    free(out);
  }
}
