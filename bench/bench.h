/* SPDX-License-Identifier: MIT */
/* bench.h — what every benchmark program shares: a deterministic random
 * generator, a clock, block stamping and checking (so a broken allocator
 * cannot look fast), option parsing and the one RESULT line the runner
 * reads. Benchmarks are ordinary programs linked against nothing but libc;
 * the runner picks the allocator with LD_PRELOAD. The header compiles as C
 * and as C++ (the .cc benchmarks), so both kinds share one harness. */
#ifndef BENCH_H
#define BENCH_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../tests/rss.h"

/* C11 and C++ spell thread-local and atomic storage differently; the atomic
 * free functions used here (atomic_fetch_add, atomic_load) exist in both. */
#ifdef __cplusplus
#include <atomic>
#define BENCH_TLS thread_local
typedef std::atomic<uint64_t> bench_atomic_u64;
#else
#include <stdatomic.h>
#define BENCH_TLS _Thread_local
typedef _Atomic uint64_t bench_atomic_u64;
#endif

/* ---- random numbers: xorshift64*, independent of addresses ------------- */

typedef struct bench_rng_s {
  uint64_t s;
} bench_rng_t;

/** A generator whose sequence depends only on seed. */
static inline bench_rng_t bench_rng(uint64_t seed) {
  bench_rng_t r = {seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull};
  if (r.s == 0) r.s = 1;
  return r;
}

/** Next 64 random bits. */
static inline uint64_t bench_next(bench_rng_t *r) {
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  return r->s * 0x2545F4914F6CDD1Dull;
}

/** Uniform integer in [lo, hi]. */
static inline uint64_t bench_range(bench_rng_t *r, uint64_t lo, uint64_t hi) {
  return lo + bench_next(r) % (hi - lo + 1);
}

/** True with probability permille/1000. */
static inline int bench_chance(bench_rng_t *r, unsigned permille) {
  return bench_next(r) % 1000 < permille;
}

/** A 64-bit mix of x (splitmix64 finaliser), used to derive block contents. */
static inline uint64_t bench_mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

/* ---- time and memory ---------------------------------------------------- */

/** Monotonic nanoseconds. */
static inline uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/** Peak resident set of this process so far, in KiB. */
static inline long bench_peak_rss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

/** Resident set of this process now, in KiB (tests/rss.h: /proc/self/statm,
 * no stdio, so no allocation); 0 if it cannot be read. */
static inline long bench_rss_kb(void) { return (long)(rss_resident_bytes() / 1024); }

/** Sleep until the monotonic clock reads at least deadline_ns. */
static inline void bench_sleep_until(uint64_t deadline_ns) {
  uint64_t now = bench_now_ns();
  if (now >= deadline_ns) return;
  struct timespec ts = {(time_t)((deadline_ns - now) / 1000000000ull),
                        (long)((deadline_ns - now) % 1000000000ull)};
  nanosleep(&ts, NULL);
}

/* ---- block contents ------------------------------------------------------
 * Every block a benchmark allocates carries data derived from a tag. Light
 * stamping writes the first and last 8 bytes (enough to catch two live
 * blocks that overlap or a block handed out twice, without turning a
 * microbenchmark into a memset benchmark); full filling writes every byte,
 * as a constructor would. Checks run before each free; a mismatch prints
 * what was found and exits with status 3. BENCH_CORRUPT=k in the
 * environment corrupts the k-th stamped block on purpose, so a test can
 * prove the checks fire. */

extern BENCH_TLS uint64_t bench_stamped;    /* blocks this thread stamped */
extern BENCH_TLS uint64_t bench_checksum;   /* sum of tags this thread checked */
extern uint64_t bench_corrupt_k;            /* BENCH_CORRUPT, 0 = never */
extern bench_atomic_u64 bench_checksum_all; /* checksums of finished threads */

/** Add this thread's checksum to the process total; call as a thread ends. */
static inline void bench_thread_done(void) {
  atomic_fetch_add(&bench_checksum_all, bench_checksum);
  bench_checksum = 0;
}

/** Report a content mismatch and exit(3). */
__attribute__((cold, noreturn, unused)) static void bench_mismatch(const char *what, const void *p,
                                                                   size_t n, uint64_t want,
                                                                   uint64_t got) {
  fprintf(stderr, "bench: %s mismatch in block %p (%zu B): want %016llx got %016llx\n", what, p, n,
          (unsigned long long)want, (unsigned long long)got);
  exit(3);
}

/** Count a stamped block and corrupt it when it is the chosen one. */
static inline void bench_after_stamp(void *p) {
  if (__builtin_expect(++bench_stamped == bench_corrupt_k, 0)) ((unsigned char *)p)[0] ^= 0x5a;
}

/** Light stamp: tag in the first 8 bytes, its complement in the last 8. n >= 16. */
static inline void bench_stamp(void *p, size_t n, uint64_t tag) {
  uint64_t inv = ~tag;
  memcpy(p, &tag, 8);
  memcpy((char *)p + n - 8, &inv, 8);
  bench_after_stamp(p);
}

/** Check a light stamp made with (n, tag). */
static inline void bench_check(const void *p, size_t n, uint64_t tag) {
  uint64_t head, tail;
  memcpy(&head, p, 8);
  memcpy(&tail, (const char *)p + n - 8, 8);
  if (__builtin_expect(head != tag, 0)) bench_mismatch("head", p, n, tag, head);
  if (__builtin_expect(tail != ~tag, 0)) bench_mismatch("tail", p, n, ~tag, tail);
  bench_checksum += tag;
}

/** Full fill: every 8-byte word (and the tail bytes) derived from tag. */
static inline void bench_fill(void *p, size_t n, uint64_t tag) {
  unsigned char *b = (unsigned char *)p;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = tag + i * 0x9E3779B97F4A7C15ull;
    memcpy(b + i, &w, 8);
  }
  for (; i < n; i++) b[i] = (unsigned char)(tag >> (i & 7));
  bench_after_stamp(p);
}

/** Check a full fill made with (n, tag). */
static inline void bench_verify(const void *p, size_t n, uint64_t tag) {
  const unsigned char *b = (const unsigned char *)p;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w, want = tag + i * 0x9E3779B97F4A7C15ull;
    memcpy(&w, b + i, 8);
    if (__builtin_expect(w != want, 0)) bench_mismatch("word", p, n, want, w);
  }
  for (; i < n; i++)
    if (b[i] != (unsigned char)(tag >> (i & 7))) bench_mismatch("byte", p, n, tag, b[i]);
  bench_checksum += tag;
}

/** Abort with a message when malloc fails (benchmarks never expect it). */
static inline void *bench_nonnull(void *p, size_t n) {
  if (p == NULL) {
    fprintf(stderr, "bench: allocation of %zu B failed\n", n);
    exit(4);
  }
  return p;
}

/* ---- options and output ------------------------------------------------- */

/** Value of the last "--name S" in argv, or def when absent (a later
 * option overrides an earlier one, so the runner can shrink a benchmark). */
static inline const char *bench_opt_str(int argc, char **argv, const char *name, const char *def) {
  for (int i = argc - 2; i >= 1; i--)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return def;
}

/** Value of the last "--name V" in argv as an integer, or def when absent. */
static inline long long bench_opt(int argc, char **argv, const char *name, long long def) {
  const char *v = bench_opt_str(argc, argv, name, NULL);
  return v ? strtoll(v, NULL, 0) : def;
}

/** Read BENCH_CORRUPT; call first thing in main. */
static inline void bench_init(void) {
  const char *k = getenv("BENCH_CORRUPT");
  bench_corrupt_k = k ? strtoull(k, NULL, 0) : 0;
}

/** The line the runner parses: the metric (lower is better), its unit, the
 * operations it was measured over, the checksum, and from getrusage of this
 * process (all its threads, from exec on): peak RSS, minor page faults
 * (first touches of fresh pages, the cost of memory an allocator gave back
 * and takes again) and system time in ms (mmap, munmap, madvise, brk and
 * the faults themselves). */
static inline void bench_result(const char *name, double metric, const char *unit, uint64_t ops) {
  bench_thread_done();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf(
      "RESULT bench=%s metric=%.3f unit=%s ops=%llu checksum=%016llx rss_kb=%ld minflt=%ld "
      "stime_ms=%.1f\n",
      name, metric, unit, (unsigned long long)ops,
      (unsigned long long)atomic_load(&bench_checksum_all), ru.ru_maxrss, ru.ru_minflt,
      (double)ru.ru_stime.tv_sec * 1e3 + (double)ru.ru_stime.tv_usec / 1e3);
  fflush(stdout);
}

#ifndef __cplusplus
/* ---- two threads passing blocks (sizes_2t, sizes_2t_rounds) ---- */

#define BENCH_RING 4096

/** A block made by bench_stamp: its address, size and tag. */
typedef struct bench_blk_s {
  void *p;
  uint32_t n;
  uint64_t tag;
} bench_blk_t;

/* Blocks passed from one thread to the other (one producer, one consumer). */
typedef struct bench_ring_s {
  bench_blk_t slot[BENCH_RING];
  _Alignas(64) _Atomic uint64_t head; /* next to write (producer) */
  _Alignas(64) _Atomic uint64_t tail; /* next to read (consumer) */
} bench_ring_t;

/** Check block b, then free it. */
static inline void bench_check_free(bench_blk_t b) {
  bench_check(b.p, b.n, b.tag);
  free(b.p);
}

/** Pass a block to the other thread; false when the ring is full. */
static inline int bench_ring_put(bench_ring_t *q, bench_blk_t b) {
  uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
  if (h - atomic_load_explicit(&q->tail, memory_order_acquire) >= BENCH_RING) return 0;
  q->slot[h % BENCH_RING] = b;
  atomic_store_explicit(&q->head, h + 1, memory_order_release);
  return 1;
}

/** Check and free every block waiting in the ring. */
static inline void bench_ring_drain(bench_ring_t *q) {
  uint64_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
  uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);
  for (; t < h; t++) bench_check_free(q->slot[t % BENCH_RING]);
  atomic_store_explicit(&q->tail, t, memory_order_release);
}
#endif /* !__cplusplus */

/** Defines the globals above; expand once per program. */
#define BENCH_GLOBALS                \
  BENCH_TLS uint64_t bench_stamped;  \
  BENCH_TLS uint64_t bench_checksum; \
  uint64_t bench_corrupt_k;          \
  bench_atomic_u64 bench_checksum_all;

#endif /* BENCH_H */
