/* SPDX-License-Identifier: MIT */
/* test_frame_check.c — the steady-state check (SIZECLASS_FRAME_CHECK,
 * SIZECLASS_FRAME_CHECK_AFTER, sc_frame_expect_steady;
 * src/features/frame_check.c), on `sites_prog frames`: ten marked frames of
 * class 64 blocks, the load in frame 1 (100 fresh carves), reuse in frames
 * 2-6, 8 and 10, and 50 fresh carves in frames 7 and 9; and on
 * `sites_prog steady FRAME`, the same frames with sc_frame_expect_steady(true)
 * after frame FRAME's mark and the answer of sc_frame_expect_steady(false)
 * at the end. The frame timeline of the same pattern is
 * tests/test_timeline.c. */
#include <signal.h>

#include "sites_util.h"

/* Warn mode: the first carve after frame 1 (frame 7) is reported, exactly
 * once for the class (frame 9 carves again), and the program goes on. */
Test(frame_check, warn_reports_a_class_once) {
  const char *env[] = {"SIZECLASS_FRAME_CHECK=warn", "SIZECLASS_FRAME_CHECK_AFTER=1", NULL};
  sp_expect_err("frames", NULL, env, 0, "sizeclass: frame 7: fresh carve in class 64 B\n");
}

/* Abort mode: the message, then abort() (a death test). */
Test(frame_check, abort_stops_the_program_at_the_first_carve) {
  sp_run_t r;
  const char *env[] = {"SIZECLASS_FRAME_CHECK=abort", "SIZECLASS_FRAME_CHECK_AFTER=1", NULL};
  sp_run(&r, false, "frames", NULL, env);
  cr_assert_eq(r.rc, 128 + SIGABRT, "exit %d", r.rc);
  cr_expect_str_eq(r.err, "sizeclass: frame 7: fresh carve in class 64 B\n");
  cr_expect_null(strstr(r.out, "walks"), "it stopped before the end");
  sp_free(&r);
}

/* With sites recorded, the message names the allocation's site. */
Test(frame_check, names_the_site_when_sites_are_recorded) {
  sp_run_t r;
  const char *env[] = {"SIZECLASS_FRAME_CHECK=abort", "SIZECLASS_FRAME_CHECK_AFTER=1",
                       "SIZECLASS_SITES=on", NULL};
  sp_run(&r, false, "frames", NULL, env);
  cr_assert_eq(r.rc, 128 + SIGABRT);
  const char *want = "sizeclass: frame 7: fresh carve in class 64 B at carve_site (";
  cr_expect(strncmp(r.err, want, strlen(want)) == 0, "%s", r.err);
  cr_expect_not_null(strstr(r.err, "/sites_prog+0x"), "%s", r.err);
  sp_free(&r);
}

/* The default start is the warm-up (60 frames: nothing checked here), or
 * SIZECLASS_WARMUP_FRAMES; frames up to SIZECLASS_FRAME_CHECK_AFTER are
 * not checked. */
Test(frame_check, starts_after_the_warm_up) {
  const char *quiet[] = {"SIZECLASS_FRAME_CHECK=abort", NULL};
  sp_expect_err("frames", NULL, quiet, 0, "");
  const char *warm[] = {"SIZECLASS_FRAME_CHECK=warn", "SIZECLASS_WARMUP_FRAMES=8", NULL};
  sp_expect_err("frames", NULL, warm, 0, "sizeclass: frame 9: fresh carve in class 64 B\n");
  const char *after[] = {"SIZECLASS_FRAME_CHECK=warn", "SIZECLASS_FRAME_CHECK_AFTER=9", NULL};
  sp_expect_err("frames", NULL, after, 0, "");
}

/* The API alone (no environment): checked at each mark, from the frame's
 * counters; the second call says whether the section stayed steady. */
Test(frame_check, the_api_switches_it_on_around_a_section) {
  sp_run_t r;
  sp_run(&r, false, "steady", "1", NULL);
  cr_assert_eq(r.rc, 0);
  cr_expect_eq(su_said(r.out, "steady"), 0);
  cr_expect_str_eq(r.err, "sizeclass: frame 7: fresh carve in class 64 B\n");
  sp_free(&r);
  sp_run(&r, false, "steady", "9", NULL);
  cr_assert_eq(r.rc, 0);
  cr_expect_eq(su_said(r.out, "steady"), 1, "frame 10 carves nothing");
  cr_expect_str_empty(r.err);
  sp_free(&r);
}

/* The API overrides the environment's start: on at frame 1 although
 * SIZECLASS_FRAME_CHECK_AFTER says 100; caught by the seam, with abort. */
Test(frame_check, the_api_overrides_the_environment) {
  const char *env[] = {"SIZECLASS_FRAME_CHECK=abort", "SIZECLASS_FRAME_CHECK_AFTER=100", NULL};
  sp_expect_err("steady", "1", env, 128 + SIGABRT,
                "sizeclass: frame 7: fresh carve in class 64 B\n");
}

Test(frame_check, bad_settings_warn_once) {
  sp_run_t r;
  const char *env[] = {"SIZECLASS_FRAME_CHECK=sometimes", NULL};
  sp_run(&r, false, "frames", NULL, env);
  cr_assert_eq(r.rc, 0);
  cr_expect_str_eq(r.err,
                   "sizeclass: SIZECLASS_FRAME_CHECK=\"sometimes\": expected warn, abort, on "
                   "(warn: 1, yes, true) or off (0, no, false); the check stays off\n");
  sp_free(&r);
  const char *after[] = {"SIZECLASS_FRAME_CHECK=warn", "SIZECLASS_FRAME_CHECK_AFTER=soon",
                         "SIZECLASS_WARMUP_FRAMES=2", NULL};
  sp_run(&r, false, "frames", NULL, after);
  cr_expect_str_eq(r.err,
                   "sizeclass: SIZECLASS_FRAME_CHECK_AFTER=\"soon\": expected a number from 0 to "
                   "1000000000; checking after the warm-up\nsizeclass: frame 7: fresh carve in "
                   "class 64 B\n");
  sp_free(&r);
}

/* The on/off words every switch takes: on (1, yes, true) is warn, off
 * (0, no, false) no check, both without a warning. */
Test(frame_check, on_and_off_words_are_taken) {
  static const char *const on[] = {"SIZECLASS_FRAME_CHECK=on", "SIZECLASS_FRAME_CHECK=1",
                                   "SIZECLASS_FRAME_CHECK=TRUE"};
  for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
    sp_run_t r;
    const char *env[] = {on[i], "SIZECLASS_WARMUP_FRAMES=2", NULL};
    sp_run(&r, false, "frames", NULL, env);
    cr_expect_eq(r.rc, 0, "%s: warn, not abort", on[i]);
    cr_expect_str_eq(r.err, "sizeclass: frame 7: fresh carve in class 64 B\n", "%s", on[i]);
    sp_free(&r);
  }
  sp_run_t r;
  const char *off[] = {"SIZECLASS_FRAME_CHECK=no", "SIZECLASS_WARMUP_FRAMES=2", NULL};
  sp_run(&r, false, "frames", NULL, off);
  cr_expect_eq(r.rc, 0);
  cr_expect_str_eq(r.err, "");
  sp_free(&r);
}
