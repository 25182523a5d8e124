/* SPDX-License-Identifier: MIT */
/* test_frames.c — frame statistics (sc_frame_mark): exact per-frame
 * counters for a known allocation pattern, the warm-up setting, and a
 * program that declares sc_frame_mark weak running with and without the
 * preloaded library.
 *
 * Frame counters are allocator-wide, so the exact tests run in a forked
 * child: there the test's thread is the only thread, and nothing allocates
 * behind the pattern's back. The child reports through a pipe; the parent
 * asserts. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "features/frame.h"
#include "core/internal.h"
#include "sizeclass.h"

/* Frames count requested bytes too: that takes exact statistics, switched
 * on for this program before its first allocation. */
const char *const sizeclass_options = "SIZECLASS_STATS_EXACT=1";

/* Class 512 (requests 257..512): a page holds 128 blocks. */
enum { REQ = 300, CLASS_512 = 5, DRAIN_MAX = 1 << 17 };

static void *drained[DRAIN_MAX]; /* blocks held live by the drain */

/** Allocate class-512 blocks, keeping them, until one of them is the first
 * block of a new page. Then the class has no free block anywhere in this
 * arena, the current page has exactly one block carved, and the next 127
 * allocations are fresh carves from it. Returns false if that never
 * happened. */
static bool drain_class_512(void) {
  sc_free(sc_malloc(REQ)); /* make sure the thread has an arena */
  sc_arena_t *a = sc__thread.arena;
  for (size_t i = 0; i < DRAIN_MAX; i++) {
    uint64_t pages = a->counts[CLASS_512].pages;
    drained[i] = sc_malloc(REQ);
    if (drained[i] == NULL) return false;
    if (a->counts[CLASS_512].pages > pages) return true;
  }
  return false;
}

/* What the child reports: a snapshot after each mark. */
typedef struct {
  int ok;
  sc_frame_stats_t snap[6];
} frame_report_t;

/** Run fn in a forked child and read back its report. */
static void run_in_child(void (*fn)(frame_report_t *), frame_report_t *out) {
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    frame_report_t r;
    memset(&r, 0, sizeof(r));
    fn(&r);
    ssize_t w = write(fds[1], &r, sizeof(r));
    _exit(w == (ssize_t)sizeof(r) ? 0 : 1);
  }
  close(fds[1]);
  memset(out, 0, sizeof(*out));
  size_t got = 0;
  while (got < sizeof(*out)) {
    ssize_t n = read(fds[0], (char *)out + got, sizeof(*out) - got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fds[0]);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed");
  cr_assert_eq(got, sizeof(*out), "child report incomplete");
}

/* The pattern. Nothing between two marks allocates except what it says. */
static void known_pattern(frame_report_t *r) {
  r->ok = sc_option_set("SIZECLASS_WARMUP_FRAMES", "2") && drain_class_512();
  if (!r->ok) return;
  void *blocks[15];
  sc_frame_mark(); /* frame 1: everything up to here */
  sc__frame_stats(&r->snap[0]);

  /* frame 2: 10 fresh blocks */
  for (int i = 0; i < 10; i++) blocks[i] = sc_malloc(REQ);
  sc_frame_mark();
  sc__frame_stats(&r->snap[1]);

  /* frame 3: free them and take them again: all reuse */
  for (int i = 0; i < 10; i++) sc_free(blocks[i]);
  for (int i = 0; i < 10; i++) blocks[i] = sc_malloc(REQ);
  sc_frame_mark();
  sc__frame_stats(&r->snap[2]);

  /* frame 4: 5 more (fresh), plus a large block that is not a class
   * allocation */
  for (int i = 10; i < 15; i++) blocks[i] = sc_malloc(REQ);
  sc_free(sc_malloc(5000));
  sc_frame_mark();
  sc__frame_stats(&r->snap[3]);

  /* frame 5: free everything */
  for (int i = 0; i < 15; i++) sc_free(blocks[i]);
  sc_frame_mark();
  sc__frame_stats(&r->snap[4]);

  /* frame 6: nothing at all (a mark itself allocates nothing) */
  sc_frame_mark();
  sc__frame_stats(&r->snap[5]);
}

static void expect_last(const sc_frame_stats_t *s, uint64_t allocs, uint64_t frees, uint64_t fresh,
                        uint64_t bytes, int frame) {
  cr_assert_eq(s->last_allocs, allocs, "frame %d allocs %lu", frame, (unsigned long)s->last_allocs);
  cr_assert_eq(s->last_frees, frees, "frame %d frees %lu", frame, (unsigned long)s->last_frees);
  cr_assert_eq(s->last_fresh_carves, fresh, "frame %d fresh carves %lu", frame,
               (unsigned long)s->last_fresh_carves);
  cr_assert_eq(s->last_bytes, bytes, "frame %d bytes %lu", frame, (unsigned long)s->last_bytes);
}

Test(frames, counters_are_exact_for_a_known_pattern) {
  frame_report_t r;
  run_in_child(known_pattern, &r);
  cr_assert(r.ok, "the drain reached a new page");
  const sc_frame_stats_t *s = r.snap;
  cr_assert_eq(s[0].frames, 1, "first mark closes frame 1");
  cr_assert_geq(s[0].last_allocs, 1, "frame 1 holds the drain");
  cr_assert_geq(s[0].last_fresh_carves, 1, "the drain carved a new page");
  expect_last(&s[1], 10, 0, 10, 10 * REQ, 2);
  expect_last(&s[2], 10, 10, 0, 10 * REQ, 3);
  expect_last(&s[3], 5, 0, 5, 5 * REQ, 4);
  expect_last(&s[4], 0, 15, 0, 0, 5);
  expect_last(&s[5], 0, 0, 0, 0, 6);
  const sc_frame_stats_t *end = &s[5];
  cr_assert_eq(end->frames, 6);
  cr_assert_eq(end->warmup_frames, 2, "SIZECLASS_WARMUP_FRAMES=2");
  /* After warm-up (frames 3..6) only frame 4 carved. */
  cr_assert_eq(end->zero_fresh_frames, 3);
  cr_assert_eq(end->total_allocs, s[0].total_allocs + 25);
  cr_assert_eq(end->total_frees, s[0].total_frees + 25);
  cr_assert_eq(end->total_fresh_carves, s[0].total_fresh_carves + 15);
  cr_assert_eq(end->total_bytes, s[0].total_bytes + 25 * REQ);
  uint64_t max = s[0].max_allocs > 10 ? s[0].max_allocs : 10;
  cr_assert_eq(end->max_allocs, max);
  cr_assert_eq(s[0].total_allocs, s[0].last_allocs, "frame 1 is all there was");
}

/* Frames sum the counters of every arena: allocations in another thread
 * count in the frame in which they happen. */
static void *thread_allocs(void *arg) {
  void **out = arg;
  for (int i = 0; i < 7; i++) out[i] = sc_malloc(REQ);
  return NULL;
}

static void two_threads(frame_report_t *r) {
  void *theirs[7];
  sc_frame_mark();
  sc__frame_stats(&r->snap[0]);
  pthread_t t;
  /* pthread_create allocates the thread's stack with mmap, not malloc, but
   * may allocate small bookkeeping: count the frame around the join only. */
  if (pthread_create(&t, NULL, thread_allocs, theirs) != 0) return;
  pthread_join(t, NULL);
  sc_frame_mark();
  sc__frame_stats(&r->snap[1]);
  for (int i = 0; i < 7; i++) sc_free(theirs[i]); /* freed here, by this thread */
  sc_frame_mark();
  sc__frame_stats(&r->snap[2]);
  r->ok = 1;
}

Test(frames, other_threads_count_too) {
  frame_report_t r;
  run_in_child(two_threads, &r);
  cr_assert(r.ok);
  cr_assert_geq(r.snap[1].last_allocs, 7, "the other thread's 7 allocations");
  cr_assert_geq(r.snap[1].last_bytes, 7 * REQ);
  cr_assert_eq(r.snap[2].last_frees, 7, "frees counted by the freeing thread");
  cr_assert_eq(r.snap[2].last_allocs, 0);
}

static void bad_warmup(frame_report_t *r) {
  /* Refused (one warning on stderr), and the fallback is used. */
  bool set = sc_option_set("SIZECLASS_WARMUP_FRAMES", "ten");
  sc_frame_mark();
  sc__frame_stats(&r->snap[0]);
  r->ok = !set;
}

static void default_warmup(frame_report_t *r) {
  for (int i = 0; i < 61; i++) sc_frame_mark();
  sc__frame_stats(&r->snap[0]);
  r->ok = 1;
}

Test(frames, warmup_default_and_bad_values) {
  frame_report_t r;
  run_in_child(bad_warmup, &r);
  cr_assert(r.ok, "sc_option_set refuses \"ten\"");
  cr_assert_eq(r.snap[0].warmup_frames, 60, "a bad value falls back to the default");
  run_in_child(default_warmup, &r);
  cr_assert_eq(r.snap[0].warmup_frames, 60, "default warm-up: 60 frames");
  cr_assert_eq(r.snap[0].frames, 61);
  cr_assert_eq(r.snap[0].zero_fresh_frames, 1, "only frame 61 is past warm-up; it was empty");
}

Test(frames, never_marked_is_all_zero) {
  sc_frame_stats_t s;
  memset(&s, 0xff, sizeof(s));
  sc__frame_stats(&s);
  sc_frame_stats_t zero;
  memset(&zero, 0, sizeof(zero));
  cr_assert_eq(memcmp(&s, &zero, sizeof(s)), 0);
}

/* ---- the weak declaration ----------------------------------------------- */

/** Run a shell command, return its stdout (caller frees) and exit status. */
static char *run_capture(const char *cmd, int *status) {
  FILE *f = popen(cmd, "r");
  cr_assert_not_null(f, "popen %s", cmd);
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  size_t n;
  while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (cap - len < 64) buf = realloc(buf, cap *= 2);
  }
  buf[len] = '\0';
  *status = pclose(f);
  return buf;
}

Test(frames, weak_declaration_runs_with_and_without_the_library) {
  const char *build = getenv("SC_BUILD");
  cr_assert_not_null(build, "SC_BUILD must point at the build directory");
  char cmd[1024];
  int status;
  snprintf(cmd, sizeof(cmd), "env -u LD_PRELOAD %s/tests/progs/frames_weak 200", build);
  char *plain = run_capture(cmd, &status);
  cr_assert_eq(status, 0, "plain run exits 0: %s", plain);
  cr_assert_not_null(strstr(plain, "sc_frame_mark: absent\n"), "plain: %s", plain);

  snprintf(cmd, sizeof(cmd), "LD_PRELOAD=%s/libsizeclass.so %s/tests/progs/frames_weak 200", build,
           build);
  char *pre = run_capture(cmd, &status);
  cr_assert_eq(status, 0, "preloaded run exits 0: %s", pre);
  cr_assert_not_null(strstr(pre, "sc_frame_mark: present\n"), "preloaded: %s", pre);

  /* Same work either way. */
  const char *a = strstr(plain, "frames: "), *b = strstr(pre, "frames: ");
  cr_assert(a && b);
  cr_assert_str_eq(a, b);
  cr_assert_not_null(strstr(a, "frames: 200 "));
  free(plain);
  free(pre);
}
