/* SPDX-License-Identifier: MIT */
/* live_frames.c — a game-shaped program for the live snapshot's tests
 * (tests/test_live.c) and for trying sizeclass-top by hand. Built without
 * the library (weak references): run it with LD_PRELOAD=libsizeclass.so
 * and SIZECLASS_LIVE=1.
 *
 *   live_frames run SECONDS   a 60 fps loop whose allocations swell and
 *                             shrink; a named snapshot "level_loaded" at
 *                             frame 30; prints "ready PID" first
 *   live_frames hold SECONDS  a few frames, a named snapshot "held", a
 *                             last mark, then prints the sc_stats_get
 *                             figures as "key=value" lines and "ready",
 *                             and sleeps without allocating
 *   live_frames idle SECONDS  no frames: a few allocations every 50 ms
 *                             (the helper thread publishes)
 *   live_frames one SECONDS   one block of 100 B, then sleeps: most
 *                             classes never served a block */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SC_FRAME_WEAK
#include "sizeclass.h"

#pragma weak sc_stats_get
#pragma weak sc_snapshot

enum { SLOTS = 512 };

static char *slot[SLOTS];
static volatile sig_atomic_t stop; /* SIGTERM: end as if the time were up */

static void on_term(int sig) {
  (void)sig;
  stop = 1;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (!stop && nanosleep(&ts, &ts) != 0) {
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/** Frame f: keep about `live` blocks of varied sizes, churning a few. */
static void frame_work(long f, unsigned live) {
  for (unsigned i = 0; i < SLOTS; i++) {
    bool want = i < live;
    if (slot[i] != NULL && (!want || (i + (unsigned)f) % 7 == 0)) {
      free(slot[i]);
      slot[i] = NULL;
    }
    if (want && slot[i] == NULL) {
      size_t n = 8 + ((i * 37u + (unsigned)f * 11u) % 1000);
      slot[i] = malloc(n);
      if (slot[i] != NULL) memset(slot[i], (int)i, n);
    }
  }
  if (f % 20 == 0) free(malloc(4096)); /* the system route too */
}

static void say(const char *s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t k = write(1, s, n);
    if (k <= 0) return;
    s += k;
    n -= (size_t)k;
  }
}

static int run(double seconds) {
  char line[64];
  snprintf(line, sizeof(line), "ready %d\n", (int)getpid());
  say(line);
  double end = now_s() + seconds;
  for (long f = 0; now_s() < end && !stop; f++) {
    /* 64 .. 448 blocks live, on a slow triangle wave */
    long phase = f % 240;
    unsigned live = (unsigned)(64 + (phase < 120 ? phase : 240 - phase) * 32 / 10);
    frame_work(f, live);
    if (f == 30 && sc_snapshot) sc_snapshot("level_loaded");
    SC_FRAME_MARK();
    sleep_ms(16);
  }
  return 0;
}

static int hold(double seconds) {
  char line[512];
  for (long f = 0; f < 10; f++) {
    frame_work(f, 100 + (unsigned)f * 10);
    SC_FRAME_MARK();
  }
  if (sc_snapshot) sc_snapshot("held");
  SC_FRAME_MARK();
  if (!sc_stats_get) {
    say("no library\n");
    return 1;
  }
  struct sc_stats st;
  sc_stats_get(&st);
  int n = snprintf(
      line, sizeof(line),
      "frames=%llu\nlive_blocks=%llu\nallocs=%llu\nfrees=%llu\nfresh_carves=%llu\n"
      "live_block_bytes=%llu\nfallback_allocs=%llu\nfallback_live_blocks=%llu\n",
      (unsigned long long)st.frames.frames, (unsigned long long)st.totals.live_blocks,
      (unsigned long long)st.totals.allocs, (unsigned long long)st.totals.frees,
      (unsigned long long)st.totals.fresh_carves, (unsigned long long)st.totals.live_block_bytes,
      (unsigned long long)st.fallback.allocs, (unsigned long long)st.fallback.live_blocks);
  for (unsigned c = 0; c < SC_NUM_CLASSES && n > 0 && (size_t)n < sizeof(line) - 40; c++)
    n += snprintf(line + n, sizeof(line) - (size_t)n, "class%u_live=%llu\n", c,
                  (unsigned long long)st.classes[c].live_blocks);
  say(line);
  say("ready\n");
  sleep_ms((long)(seconds * 1000));
  return 0;
}

static int idle(double seconds) {
  char line[64];
  snprintf(line, sizeof(line), "ready %d\n", (int)getpid());
  say(line);
  double end = now_s() + seconds;
  for (long f = 0; now_s() < end && !stop; f++) {
    frame_work(f, (unsigned)(f % 200));
    sleep_ms(50);
  }
  return 0;
}

static int one(double seconds) {
  static void *volatile kept;
  kept = malloc(100);
  char line[64];
  snprintf(line, sizeof(line), "ready %d\n", (int)getpid());
  say(line);
  double end = now_s() + seconds;
  while (now_s() < end && !stop) sleep_ms(50);
  free(kept);
  return 0;
}

int main(int argc, char **argv) {
  signal(SIGTERM, on_term); /* a clean exit: the library removes its file */
  double seconds = argc > 2 ? atof(argv[2]) : 10;
  if (argc > 1 && strcmp(argv[1], "hold") == 0) return hold(seconds);
  if (argc > 1 && strcmp(argv[1], "idle") == 0) return idle(seconds);
  if (argc > 1 && strcmp(argv[1], "one") == 0) return one(seconds);
  return run(seconds);
}
