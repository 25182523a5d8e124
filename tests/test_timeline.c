/* SPDX-License-Identifier: MIT */
/* test_timeline.c — the frame timeline (SIZECLASS_FRAME_HISTORY), on
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
