/* SPDX-License-Identifier: MIT */
/* trim_stall.c — what one malloc_trim(0) costs, and whether a steady loop
 * of large blocks sees it (docs/performance.md, "a trim only for memory
 * that stayed free"). Not part of `make bench`:
 *
 *   cc -O2 -o /tmp/trim_stall bench/experiments/trim_stall.c
 *   /tmp/trim_stall trim MIB EVERY   glibc alone: MIB MiB of 8..24 KiB
 *                                    blocks, every EVERY-th freed (1: all),
 *                                    then one timed malloc_trim(0)
 *   /tmp/trim_stall loop N SECONDS   N blocks of 8..24 KiB replaced at
 *                                    random for SECONDS (preload the
 *                                    allocator): the worst free+malloc
 *                                    pair, and how many took over 1 ms */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static unsigned rng = 1;

/** A block size of 8..24 KiB, from a fixed sequence. */
static size_t next_size(void) {
  rng = rng * 1103515245u + 12345u;
  return 8192 + (rng >> 8) % 16384;
}

/** n blocks, each written in full. */
static void **fill(size_t n) {
  void **p = calloc(n, sizeof(void *));
  for (size_t i = 0; p != NULL && i < n; i++) {
    size_t s = next_size();
    if ((p[i] = malloc(s)) == NULL) exit(3);
    memset(p[i], 1, s);
  }
  if (p == NULL) exit(3);
  return p;
}

static void trim(size_t mib, size_t every) {
  /* The library's paced policy's thresholds, so glibc trims nothing itself. */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  size_t n = mib * 1024 / 16, freed = 0;
  void **p = fill(n);
  for (size_t i = 0; i < n; i += every, freed++) free(p[i]);
  double t0 = now_ms();
  int rc = malloc_trim(0);
  printf("heap %zu MiB, %zu of %zu blocks freed: malloc_trim %.2f ms (rc %d)\n", mib, freed, n,
         now_ms() - t0, rc);
}

static void loop(size_t n, double seconds) {
  void **p = fill(n);
  double end = now_ms() + seconds * 1e3, worst = 0;
  long slow = 0, pairs = 0;
  while (now_ms() < end) {
    for (int k = 0; k < 1000; k++, pairs++) {
      size_t i = (size_t)(rng >> 4) % n, s = next_size();
      double t0 = now_ms();
      free(p[i]);
      if ((p[i] = malloc(s)) == NULL) exit(3);
      double t = now_ms() - t0;
      memset(p[i], 1, s);
      if (t > worst) worst = t;
      if (t > 1.0) slow++;
    }
  }
  printf("pairs %ld, worst free+malloc %.2f ms, over 1 ms: %ld\n", pairs, worst, slow);
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "trim") == 0) {
    trim(strtoul(argv[2], NULL, 0), strtoul(argv[3], NULL, 0));
    return 0;
  }
  if (argc == 4 && strcmp(argv[1], "loop") == 0) {
    loop(strtoul(argv[2], NULL, 0), atof(argv[3]));
    return 0;
  }
  fprintf(stderr, "usage: trim_stall trim MIB EVERY | loop N SECONDS\n");
  return 2;
}
