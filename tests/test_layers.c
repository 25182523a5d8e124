/* SPDX-License-Identifier: MIT */
/* test_layers.c — the library keeps its layers (src/README.md), checked by
 * scripts/check-layers.py on the tree and on the build's objects: the core
 * includes nothing of the features or the report and references nothing of
 * a higher layer but, weakly, the features' table (core/hooks.h); the report includes and calls
 * nothing of the core or the features but core/snapshot.h. And the check fails when a rule breaks:
 * a copy of the tree with one bad include, objects with one call across a layer. Runs from the
 * source root. */
#include "cr_util.h"

static char tmp[256];

static void remove_tmp(void) { cr_tmp_remove(tmp); }

TestSuite(layers, .fini = remove_tmp);

/** A copy of the sources in tmp (src, shim, include, the script). */
static void copy_tree(void) {
  cr_tmp_make(tmp, sizeof(tmp), "layers");
  cr_at_source_root("scripts/check-layers.py");
  free(sh_ok(30, "cp -r src shim include scripts '%s'/", tmp));
}

/** Run the check in tmp (`args` after --root); its output, *rc its exit. */
static char *check_in_tmp(int *rc, const char *args) {
  return sh_run(rc, 60, "cd '%s' && python3 scripts/check-layers.py --root . %s", tmp, args);
}

/** Expect the check to fail in tmp with `line` among its lines. */
static void expect_breach(const char *args, const char *line) {
  int rc;
  char *out = check_in_tmp(&rc, args);
  cr_expect_eq(rc, 1, "the check must fail:\n%s", out);
  cr_expect_not_null(strstr(out, line), "expected \"%s\" in:\n%s", line, out);
  free(out);
}

Test(layers, the_tree_and_its_objects_keep_the_layers) {
  char *out = sh_ok(60, "python3 scripts/check-layers.py --objects '%s/obj'", pr_build_dir());
  cr_expect_str_empty(out, "%s", out);
  free(out);
}

Test(layers, a_core_file_that_includes_a_feature_fails) {
  copy_tree();
  free(sh_ok(10, "echo '#include \"features/exact.h\"' >> '%s/src/core/arena.c'", tmp));
  expect_breach("",
                "layers: src/core/arena.c: #include \"features/exact.h\": core/ may not "
                "include features/");
}

Test(layers, the_report_sees_the_snapshot_only) {
  copy_tree();
  /* Directly, */
  free(sh_ok(10, "echo '#include \"core/internal.h\"' >> '%s/src/report/advisor.c'", tmp));
  expect_breach("",
                "layers: src/report/advisor.c: #include \"core/internal.h\": report/ may "
                "not include core/ (only core/snapshot.h)");
  /* and through the snapshot's own includes. */
  free(sh_ok(10, "echo '#include \"core/hooks.h\"' >> '%s/src/core/snapshot.h'", tmp));
  expect_breach("",
                "layers: src/report/report_timeline.c: reaches core/hooks.h through its "
                "includes");
}

Test(layers, util_includes_nothing_above_it) {
  copy_tree();
  free(sh_ok(10, "echo '#include \"core/config.h\"' >> '%s/src/util/path.c'", tmp));
  expect_breach("",
                "layers: src/util/path.c: #include \"core/config.h\": util/ may not "
                "include core/");
}

/** Compile `code` into tmp/obj/src/<rel>.o. */
static void bad_object(const char *rel, const char *code) {
  free(sh_ok(60, "printf '%%s\\n' '%s' | cc -c -x c - -o '%s/obj/src/%s.o'", code, tmp, rel));
}

Test(layers, calls_across_the_layers_fail) {
  copy_tree();
  free(sh_ok(30, "mkdir -p '%s/obj' && cp -r '%s/obj/src' '%s/obj/shim' '%s/obj/'", tmp,
             pr_build_dir(), pr_build_dir(), tmp));
  /* The core's one door to the features is a weak reference to their
   * table: no breach, */
  bad_object("core/zz_door",
             "extern const int sc__feature_table __attribute__((weak)); "
             "const void *sc__zz_door(void) { return &sc__feature_table; }");
  int rc;
  char *out = check_in_tmp(&rc, "--objects obj");
  cr_expect_eq(rc, 0, "a weak reference to the features' table is fine:\n%s", out);
  free(out);
  /* but a strong one is a breach (the core would not link alone), */
  bad_object("core/zz_strong",
             "extern const int sc__feature_table; "
             "const void *sc__zz_strong(void) { return &sc__feature_table; }");
  expect_breach("--objects obj",
                "layers: core/zz_strong.o: calls sc__feature_table (features/seam.o): "
                "core/ may not call features/ (only the features' table, weakly");
  free(sh_ok(10, "rm '%s/obj/src/core/zz_strong.o'", tmp));
  /* and so is any call of a feature, */
  bad_object("core/zz_bad", "void sc__exact_sum(void); void sc__zz_bad(void) { sc__exact_sum(); }");
  expect_breach("--objects obj",
                "layers: core/zz_bad.o: calls sc__exact_sum (features/exact.o): "
                "core/ may not call features/");
  /* util calls nothing of the core, */
  bad_object("util/zz_core",
             "void sc__arena_get(void); void sc__zz_core(void) { sc__arena_get(); }");
  expect_breach("--objects obj",
                "layers: util/zz_core.o: calls sc__arena_get (core/arena.o): util/ may not "
                "call core/");
  /* features never call the report, */
  bad_object("features/zz_up",
             "void sc__report_write(void); void sc__zz_up(void) { sc__report_write(); }");
  expect_breach("--objects obj",
                "layers: features/zz_up.o: calls sc__report_write "
                "(report/report.o): features/ may not call report/");
  /* and the report calls what core/snapshot.h declares, nothing else. */
  bad_object("report/zz_feat",
             "void sc__sites_decide(void); void sc__zz_feat(void) { sc__sites_decide(); }");
  expect_breach("--objects obj",
                "layers: report/zz_feat.o: calls sc__sites_decide "
                "(features/sites.o), which core/snapshot.h does not declare");
}
