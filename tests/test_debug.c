/* SPDX-License-Identifier: MIT */
/* test_debug.c — the invariants that check themselves (SC_DEBUG builds,
 * src/core/validate.c): tests/progs/debug/corrupt, linked with the SC_DEBUG
 * archive, breaks one invariant of a page or an arena on purpose, and the
 * library must stop at its next slow path (a refill, the thread's exit)
 * with one "sizeclass: assertion failed:" line that names the invariant,
 * the page or class and the figures that disagree; a busy run with nothing
 * broken must finish. The default build has none of it: its library holds
 * no validator. */
#include "cr_util.h"

/** Run the program on `what`; r gets what came of it. */
static void corrupt(pr_result_t *r, const char *what) {
  char path[512];
  pr_prog_path(path, sizeof(path), "debug/corrupt");
  char *argv[] = {path, (char *)what, NULL};
  pr_opts_t o = {.timeout_s = 60, .drop_sizeclass_env = true};
  cr_assert(pr_run(r, argv, &o), "could not run %s", path);
}

/** Expect the program to abort on `what` with a line that holds each of
 * the pieces (NULL-terminated). */
static void expect_found(const char *what, const char *const *pieces) {
  pr_result_t r;
  corrupt(&r, what);
  cr_expect(!r.timed_out, "%s: timed out", what);
  cr_expect_eq(r.exit_code, 128 + SIGABRT, "%s: exit %d, stderr:\n%s", what, r.exit_code, r.err);
  const char *line = strstr(r.err, "sizeclass: assertion failed: ");
  cr_expect_not_null(line, "%s: no assertion line in:\n%s", what, r.err);
  if (line != NULL) {
    const char *end = strchr(line, '\n');
    cr_expect_not_null(end, "%s: one whole line", what);
    for (const char *const *p = pieces; *p != NULL; p++)
      cr_expect_not_null(strstr(line, *p), "%s: expected \"%s\" in:\n%s", what, *p, r.err);
    cr_expect_null(strstr(end != NULL ? end : line, "sizeclass: assertion"), "%s: one line", what);
  }
  free(r.out);
}

Test(debug, a_healthy_busy_run_finds_nothing) {
  pr_result_t r;
  corrupt(&r, "none");
  cr_expect_eq(r.exit_code, 0, "exit %d, stderr:\n%s", r.exit_code, r.err);
  cr_expect_str_eq(r.out, "corrupt: none: nothing found\n");
  free(r.out);
}

Test(debug, a_page_that_counts_a_block_too_many_is_found_at_its_refill) {
  const char *const pieces[] = {"free-list length + used == blocks carved below carve_next",
                                "class 64 B)", "free list 0, used 1025, carved 1024", NULL};
  expect_found("used", pieces);
}

Test(debug, a_link_to_a_block_never_carved_is_found_at_thread_exit) {
  /* The block 512 of the page: offset 32768, above the 3 blocks carved. */
  const char *const pieces[] = {"a free-list link points into the carved blocks", "class 64 B)",
                                "link to offset 32768, carve_next 192", NULL};
  expect_found("link", pieces);
}

Test(debug, a_free_block_live_in_the_map_is_found_at_thread_exit) {
  /* State 255: SC_MAP_LIVE. */
  const char *const pieces[] = {"a block on the free list is free in the block map",
                                "entry 1, state 255", NULL};
  expect_found("map", pieces);
}

Test(debug, a_block_never_carved_but_live_in_the_map_is_found_at_thread_exit) {
  const char *const pieces[] = {"a block at or above carve_next is free in the block map",
                                "entry 100, state 255", NULL};
  expect_found("carve", pieces);
}

Test(debug, an_arena_that_miscounts_its_pages_is_found_at_thread_exit) {
  const char *const pieces[] = {"the class counts its pages (class 64 B): counted 2, active 1",
                                NULL};
  expect_found("pages", pieces);
}

Test(debug, a_queue_flag_gone_wrong_trips_a_slow_path_assertion) {
  const char *const pieces[] = {"page->queued (src/core/refill.c:", NULL};
  expect_found("queued", pieces);
}

Test(debug, the_default_build_holds_no_validator) {
  char *out =
      sh_ok(30,
            "nm '%s/libsizeclass.so' | grep -cE 'sc__(page|arena)_validate|sc__assert_fail' "
            "|| true",
            pr_build_dir());
  cr_expect_str_eq(out, "0\n", "validators in the default build: %s", out);
  free(out);
  out = sh_ok(30, "nm '%s/debug/libsizeclass.so' | grep -cE 'sc__(page|arena)_validate$' || true",
              pr_build_dir());
  cr_expect_str_eq(out, "2\n", "the SC_DEBUG build has both validators: %s", out);
  free(out);
}
