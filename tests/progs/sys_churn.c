/* SPDX-License-Identifier: MIT */
/* sys_churn.c — the system route's memory under libsizeclass (issue 11):
 * blocks above 1024 B go to glibc, whose heaps then hold nothing else.
 *
 *   sys_churn cycles N   N cycles of: 16 blocks of 100 KiB, written in full,
 *                        then freed. Prints "faults F" (minor page faults of
 *                        the cycles after the first 10).
 *   sys_churn burst MS   64 MiB in 64 KiB blocks, freed; then waits MS ms and
 *                        makes and frees 16 MiB more. Prints "peak P",
 *                        "held H" (RSS after the burst was freed) and
 *                        "after A" (RSS at the end), in bytes.
 *   sys_churn steady MS  for MS ms, 512 blocks of 16..48 KiB (16 MiB live)
 *                        replaced at random, and every 256 steps a swing:
 *                        20 MiB of blocks of 128 KiB made and freed. Prints
 *                        "trims T" (the library's paced trims in that
 *                        time; -1: not preloaded).
 *   sys_churn drop MS    the same with 64 MiB more in blocks of 64 KiB,
 *                        freed halfway. Prints "trims T", then "before B",
 *                        "after A" and "trimmed R": RSS just before the
 *                        64 MiB were freed, at the end, and after a
 *                        malloc_trim(0) then, in bytes.
 *   sys_churn quiet MS   64 MiB in 64 KiB blocks, freed; then for MS ms
 *                        only small blocks (4096 of 64 B made and freed,
 *                        over and over). Prints "peak P", "held H" and
 *                        "after A" as burst does.
 *   sys_churn spread MS  64 MiB in 64 KiB blocks made by the main thread,
 *                        freed by 8 threads, 8 MiB each (less than a
 *                        thread's look on frees needs) after MS/2 ms of
 *                        small blocks, then MS ms more of them. Prints
 *                        "peak P", "after A" and "trims T".
 *   sys_churn workers MS 8 threads each make 8 MiB in 64 KiB blocks (in
 *                        their own glibc arenas), free them, then make
 *                        small blocks for MS ms. Prints "peak P", "after A"
 *                        (once the threads ended) and "trims T".
 *   sys_churn workers-trim MS  the same, but each thread makes a small
 *                        block first (its arena exists when the trim asks
 *                        it for a step), and the main thread calls
 *                        malloc_trim(0) once the threads freed theirs.
 *   sys_churn leavers N  4 threads each make N MiB in 64 KiB blocks (in
 *                        their own glibc arenas), free them and end.
 *                        Prints "peak P" and "after A" (once they ended).
 *   sys_churn leavers-trim N  the same, the main thread calling
 *                        malloc_trim(0) while their blocks are live.
 *   sys_churn leavers-large N  the same as leavers, the threads making no
 *                        block of 1 KiB or less (no arena of the library's).
 *   sys_churn chosen MS  mallopt(M_TRIM_THRESHOLD, 128 KiB) first, then as
 *                        workers, then 60 cycles as cycles does; prints
 *                        what workers does, then "faults F".
 *   sys_churn chosen-mmap MS  the same with mallopt(M_MMAP_THRESHOLD,
 *                        256 KiB) instead. */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "rss.h"
#include "sizeclass.h"

static long minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/** Make `count` blocks of `size` bytes, written in full, then free them. */
static void churn(int count, size_t size) {
  void *p[1024];
  for (int i = 0; i < count; i++) {
    p[i] = malloc(size);
    if (p[i] == NULL) exit(3);
    memset(p[i], i, size);
  }
  for (int i = 0; i < count; i++) free(p[i]);
}

/** `n` cycles of 16 blocks of 100 KiB; prints the faults of those after
 * the first 10. */
static void cycles(long n) {
  long start = 0;
  for (long c = 0; c < n; c++) {
    if (c == 10) start = minflt();
    churn(16, 100 << 10);
  }
  printf("faults %ld\n", minflt() - start);
}

/** The library's paced trims so far; -1 when it is not there. */
static long system_trims(void) {
  void (*get)(struct sc_stats *) = (void (*)(struct sc_stats *))dlsym(RTLD_DEFAULT, "sc_stats_get");
  if (get == NULL) return -1;
  static struct sc_stats st;
  get(&st);
  return (long)st.purge.system_trims;
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/** For `ms` ms, 4096 blocks of 64 B made and freed, over and over. */
static void small_blocks(void **small, long ms) {
  uint64_t end = now_ms() + (uint64_t)ms;
  while (now_ms() < end) {
    for (int i = 0; i < 4096; i++)
      if ((small[i] = malloc(64)) == NULL) exit(3);
    for (int i = 0; i < 4096; i++) free(small[i]);
  }
}

/** A steady loop of system blocks whose live bytes swing up and back, for
 * `ms` ms; with `drop`, 64 MiB more held for the first half. */
static void steady(long ms, bool drop) {
  enum { SLOTS = 512, SWING = 160, EXTRA = 1024 };
  static void *slot[SLOTS], *swing[SWING], *extra[EXTRA];
  size_t before_rss = 0;
  for (int i = 0; drop && i < EXTRA; i++) {
    if ((extra[i] = malloc(64 << 10)) == NULL) exit(3);
    memset(extra[i], i, 64 << 10);
  }
  uint64_t x = 88172645463325252ull; /* xorshift */
  for (int i = 0; i < SLOTS; i++)
    if ((slot[i] = malloc(32 << 10)) == NULL) exit(3);
  long before = system_trims();
  uint64_t half = now_ms() + (uint64_t)ms / 2, end = half + (uint64_t)ms / 2;
  for (uint64_t step = 1; now_ms() < end; step++) {
    if (drop && before_rss == 0 && now_ms() >= half) {
      before_rss = rss_resident_bytes();
      for (int i = 0; i < EXTRA; i++) free(extra[i]);
    }
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t n = (16 << 10) + (size_t)(x % (32 << 10));
    free(slot[x % SLOTS]);
    if ((slot[x % SLOTS] = malloc(n)) == NULL) exit(3);
    memset(slot[x % SLOTS], (int)step, n);
    if (step % 256 != 0) continue;
    for (int i = 0; i < SWING; i++)
      if ((swing[i] = malloc(128 << 10)) == NULL) exit(3);
    for (int i = 0; i < SWING; i++) free(swing[i]);
  }
  long after = system_trims();
  printf("trims %ld\n", before < 0 ? -1 : after - before);
  if (drop) {
    printf("before %zu\nafter %zu\n", before_rss, rss_resident_bytes());
    malloc_trim(0);
    printf("trimmed %zu\n", rss_resident_bytes());
  }
  for (int i = 0; i < SLOTS; i++) free(slot[i]);
}

/** 64 MiB of system blocks freed, then `ms` ms of small blocks only. */
static void quiet(long ms) {
  static void *p[1024];
  for (int i = 0; i < 1024; i++) {
    if ((p[i] = malloc(64 << 10)) == NULL) exit(3);
    memset(p[i], i, 64 << 10);
  }
  printf("peak %zu\n", rss_resident_bytes());
  for (int i = 0; i < 1024; i++) free(p[i]);
  printf("held %zu\n", rss_resident_bytes());
  static void *small[4096];
  small_blocks(small, ms);
  printf("after %zu\n", rss_resident_bytes());
}

enum { SPREAD_THREADS = 8, SPREAD_BLOCKS = 128 };
static void *spread_blocks[SPREAD_THREADS][SPREAD_BLOCKS];
static long spread_ms;

/** One thread of `spread`: its share held for spread_ms / 2 of small
 * blocks, freed, then spread_ms more of them. */
static void *spread_thread(void *arg) {
  void **mine = arg, *small[4096];
  small_blocks(small, spread_ms / 2);
  for (int i = 0; i < SPREAD_BLOCKS; i++) free(mine[i]);
  small_blocks(small, spread_ms);
  return NULL;
}

/** 64 MiB made by the main thread, freed by 8 threads, 8 MiB each. */
static void spread(long ms) {
  pthread_t t[SPREAD_THREADS];
  spread_ms = ms;
  for (int k = 0; k < SPREAD_THREADS; k++)
    for (int i = 0; i < SPREAD_BLOCKS; i++) {
      if ((spread_blocks[k][i] = malloc(64 << 10)) == NULL) exit(3);
      memset(spread_blocks[k][i], i, 64 << 10);
    }
  printf("peak %zu\n", rss_resident_bytes());
  for (int k = 0; k < SPREAD_THREADS; k++)
    if (pthread_create(&t[k], NULL, spread_thread, spread_blocks[k]) != 0) exit(3);
  for (int k = 0; k < SPREAD_THREADS; k++) pthread_join(t[k], NULL);
  printf("after %zu\ntrims %ld\n", rss_resident_bytes(), system_trims());
}

static pthread_barrier_t workers_made;
static bool workers_small_first;

/** One thread of `workers`: 8 MiB of its own, then small blocks. */
static void *worker_thread(void *arg) {
  void *mine[SPREAD_BLOCKS], *small[4096];
  (void)arg;
  if (workers_small_first) free(malloc(64));
  for (int i = 0; i < SPREAD_BLOCKS; i++) {
    if ((mine[i] = malloc(64 << 10)) == NULL) exit(3);
    memset(mine[i], i, 64 << 10);
  }
  pthread_barrier_wait(&workers_made); /* the main thread reads the peak */
  pthread_barrier_wait(&workers_made);
  for (int i = 0; i < SPREAD_BLOCKS; i++) free(mine[i]);
  pthread_barrier_wait(&workers_made); /* the main thread may trim */
  small_blocks(small, spread_ms);
  return NULL;
}

/** 64 MiB made and freed by 8 threads, 8 MiB each, in their own arenas;
 * with `trim`, the main thread calls malloc_trim(0) once they are freed. */
static void workers(long ms, bool trim) {
  pthread_t t[SPREAD_THREADS];
  spread_ms = ms;
  workers_small_first = trim;
  if (pthread_barrier_init(&workers_made, NULL, SPREAD_THREADS + 1) != 0) exit(3);
  for (int k = 0; k < SPREAD_THREADS; k++)
    if (pthread_create(&t[k], NULL, worker_thread, NULL) != 0) exit(3);
  pthread_barrier_wait(&workers_made);
  printf("peak %zu\n", rss_resident_bytes());
  pthread_barrier_wait(&workers_made);
  pthread_barrier_wait(&workers_made);
  if (trim) malloc_trim(0);
  for (int k = 0; k < SPREAD_THREADS; k++) pthread_join(t[k], NULL);
  printf("after %zu\ntrims %ld\n", rss_resident_bytes(), system_trims());
}

enum { LEAVERS = 4 };
static pthread_barrier_t leavers_made;
static long leaver_blocks;
static bool leaver_small = true; /* each makes a small block first */

/** One thread of `leavers`: its blocks made, freed, and the thread ends. */
static void *leaver_thread(void *arg) {
  (void)arg;
  if (leaver_small) free(malloc(64)); /* the thread has an arena of the library's */
  void **mine = malloc((size_t)leaver_blocks * sizeof(void *));
  if (mine == NULL) exit(3);
  for (long i = 0; i < leaver_blocks; i++) {
    if ((mine[i] = malloc(64 << 10)) == NULL) exit(3);
    memset(mine[i], (int)i, 64 << 10);
  }
  pthread_barrier_wait(&leavers_made); /* the main thread reads the peak */
  pthread_barrier_wait(&leavers_made);
  for (long i = 0; i < leaver_blocks; i++) free(mine[i]);
  free(mine);
  return NULL;
}

/** 4 threads make `mib` MiB each, free them and end; with `trim`, the main
 * thread calls malloc_trim(0) before they free them. */
static void leavers(long mib, bool trim) {
  pthread_t t[LEAVERS];
  leaver_blocks = mib * 16;
  if (pthread_barrier_init(&leavers_made, NULL, LEAVERS + 1) != 0) exit(3);
  for (int k = 0; k < LEAVERS; k++)
    if (pthread_create(&t[k], NULL, leaver_thread, NULL) != 0) exit(3);
  pthread_barrier_wait(&leavers_made);
  printf("peak %zu\n", rss_resident_bytes());
  if (trim) malloc_trim(0);
  pthread_barrier_wait(&leavers_made);
  for (int k = 0; k < LEAVERS; k++) pthread_join(t[k], NULL);
  printf("after %zu\n", rss_resident_bytes());
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  long n = atol(argv[2]);
  if (strcmp(argv[1], "cycles") == 0) {
    cycles(n);
    return 0;
  }
  if (strcmp(argv[1], "chosen") == 0 || strcmp(argv[1], "chosen-mmap") == 0) {
    bool mmap = strcmp(argv[1], "chosen-mmap") == 0;
    if (mallopt(mmap ? M_MMAP_THRESHOLD : M_TRIM_THRESHOLD, mmap ? 256 << 10 : 128 << 10) == 0)
      return 3;
    workers(n, false);
    cycles(60);
    return 0;
  }
  if (strcmp(argv[1], "burst") == 0) {
    void *p[1024];
    for (int i = 0; i < 1024; i++) {
      p[i] = malloc(64 << 10);
      if (p[i] == NULL) return 3;
      memset(p[i], i, 64 << 10);
    }
    printf("peak %zu\n", rss_resident_bytes());
    for (int i = 0; i < 1024; i++) free(p[i]);
    printf("held %zu\n", rss_resident_bytes());
    nap_ms(n);
    churn(256, 64 << 10);
    printf("after %zu\n", rss_resident_bytes());
    return 0;
  }
  if (strcmp(argv[1], "spread") == 0) {
    spread(n);
    return 0;
  }
  if (strcmp(argv[1], "workers") == 0 || strcmp(argv[1], "workers-trim") == 0) {
    workers(n, strcmp(argv[1], "workers-trim") == 0);
    return 0;
  }
  if (strcmp(argv[1], "leavers") == 0 || strcmp(argv[1], "leavers-trim") == 0 ||
      strcmp(argv[1], "leavers-large") == 0) {
    leaver_small = strcmp(argv[1], "leavers-large") != 0;
    leavers(n, strcmp(argv[1], "leavers-trim") == 0);
    return 0;
  }
  if (strcmp(argv[1], "quiet") == 0) {
    quiet(n);
    return 0;
  }
  if (strcmp(argv[1], "steady") == 0 || strcmp(argv[1], "drop") == 0) {
    steady(n, strcmp(argv[1], "drop") == 0);
    return 0;
  }
  return 2;
}
