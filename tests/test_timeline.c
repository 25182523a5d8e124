/* SPDX-License-Identifier: MIT */
/* test_timeline.c — the frame timeline (SIZECLASS_FRAME_HISTORY) and the
 * steady-state check (SIZECLASS_FRAME_CHECK, sc_frame_expect_steady), on
 * `sites_prog frames`: ten marked frames of class 64 blocks, the load in
 * frame 1 (100 fresh carves), reuse in frames 2-6, 8 and 10 (50 each), and
 * 50 fresh carves in frames 7 and 9 (150 and 200 allocations). */
#include "sites_util.h"

/* Per frame: allocations and fresh carves (every block is freed in its
 * frame, so frees = allocations and nothing stays live). */
static const uint64_t frame_allocs[11] = {0, 100, 50, 50, 50, 50, 50, 150, 50, 200, 50};
static const uint64_t frame_fresh[11] = {0, 100, 0, 0, 0, 0, 0, 50, 0, 50, 0};
#define CLASS_64 2

/** Frame row i of the timeline is frame f, as the pattern says; with
 * `exact`, requested bytes are tracked (40 per allocation). */
static void check_frame(const su_json_t *j, unsigned i, unsigned f, bool exact) {
  cr_expect_eq(su_ju(j, "0.frame_timeline.%u.frame", i), f);
  cr_expect_eq(su_ju(j, "0.frame_timeline.%u.allocs", i), frame_allocs[f], "frame %u allocs", f);
  cr_expect_eq(su_ju(j, "0.frame_timeline.%u.frees", i), frame_allocs[f], "frame %u frees", f);
  cr_expect_eq(su_ju(j, "0.frame_timeline.%u.fresh_carves", i), frame_fresh[f], "frame %u fresh",
               f);
  cr_expect_eq(su_ju(j, "0.frame_timeline.%u.block_bytes", i), frame_allocs[f] * 64);
  cr_expect_eq(su_ju(j, "0.frame_timeline.%u.live_block_bytes", i), 0);
  cr_expect_eq(su_ju(j, "0.frame_timeline.%u.class_allocs.%d", i, CLASS_64), frame_allocs[f]);
  cr_expect_eq(su_ju(j, "0.frame_timeline.%u.class_fresh_carves.%d", i, CLASS_64), frame_fresh[f]);
  cr_expect_eq(su_ju(j, "0.frame_timeline.%u.class_allocs.len", i), 7);
  for (int c = 0; c < 7; c++)
    if (c != CLASS_64) cr_expect_eq(su_ju(j, "0.frame_timeline.%u.class_allocs.%d", i, c), 0);
  if (exact) {
    cr_expect_eq(su_ju(j, "0.frame_timeline.%u.bytes", i), frame_allocs[f] * 40);
    cr_expect_eq(su_ju(j, "0.frame_timeline.%u.live_bytes", i), 0);
    cr_expect_eq(su_ju(j, "0.frame_timeline.%u.class_bytes.%d", i, CLASS_64), frame_allocs[f] * 40);
  } else { /* not tracked: null, never 0 */
    cr_expect_str_eq(su_jraw(j, "0.frame_timeline.%u.bytes", i), "null");
    cr_expect_str_eq(su_jraw(j, "0.frame_timeline.%u.live_bytes", i), "null");
    cr_expect_str_eq(su_jraw(j, "0.frame_timeline.%u.class_bytes", i), "null");
  }
}

Test(timeline, every_frame_per_class_with_exact_statistics) {
  sp_run_t r;
  su_json_t j;
  const char *env[] = {"SIZECLASS_STATS=%J", NULL};
  sp_run_report(&r, &j, false, "frames", NULL, env);
  cr_assert_eq(su_ju(&j, "0.frame_timeline.len"), 10);
  for (unsigned f = 1; f <= 10; f++) check_frame(&j, f - 1, f, true);
  sp_done(&r, &j);
}

/* The default tier (SIZECLASS_SITES alone implies a report without exact
 * statistics; JSON on stderr): requested bytes are not tracked. */
Test(timeline, default_tier_says_bytes_are_not_tracked) {
  sp_run_t r;
  const char *env[] = {"SIZECLASS_SITES=1", "SIZECLASS_STATS_FORMAT=json", NULL};
  sp_run(&r, false, "frames", NULL, env);
  cr_assert_eq(r.rc, 0);
  su_json_t j;
  su_json_load(&j, r.err_path, "one");
  cr_assert_eq(su_ju(&j, "0.exact_statistics"), 0);
  cr_assert_eq(su_ju(&j, "0.frame_timeline.len"), 10);
  for (unsigned f = 1; f <= 10; f++) check_frame(&j, f - 1, f, false);
  sp_done(&r, &j);
}

Test(timeline, keeps_the_last_frames_of_its_history) {
  sp_run_t r;
  su_json_t j;
  const char *env[] = {"SIZECLASS_STATS=%J", "SIZECLASS_FRAME_HISTORY=4", NULL};
  sp_run_report(&r, &j, false, "frames", NULL, env);
  cr_assert_eq(su_ju(&j, "0.frame_timeline.len"), 4, "the last 4, oldest first");
  for (unsigned f = 7; f <= 10; f++) check_frame(&j, f - 7, f, true);
  sp_done(&r, &j);
}

Test(timeline, off_with_a_history_of_0) {
  sp_run_t r;
  su_json_t j;
  const char *env[] = {"SIZECLASS_STATS=%J", "SIZECLASS_FRAME_HISTORY=0", NULL};
  sp_run_report(&r, &j, false, "frames", NULL, env);
  cr_expect_str_eq(su_jraw(&j, "0.frame_timeline"), "null");
  sp_done(&r, &j);
}

Test(timeline, the_text_form_shows_the_last_frames) {
  sp_run_t r;
  const char *env[] = {"SIZECLASS_STATS=1", NULL};
  sp_run(&r, false, "frames", NULL, env);
  cr_assert_eq(r.rc, 0);
  const char *t = strstr(r.err, "frame timeline: the last frames");
  cr_assert_not_null(t, "%s", r.err);
  const char *row7 = strstr(t, "\n         7       150       150      50");
  cr_expect_not_null(row7, "%s", t);
  sp_free(&r);
}

/* ---- the steady-state check -------------------------------------------------------------- */

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
