/* SPDX-License-Identifier: MIT */
/* mixed — small blocks, large blocks (the fallback path) and realloc growth.
 *
 * Each step is one of:
 *   75 %  replace a random block of a 4096-slot pool with a new small one
 *         (16..1024 B, mostly under 256 B);
 *   10 %  replace a random block of a 64-slot pool with a large one
 *         (1 KiB..64 KiB, log-uniform; 5 % up to 256 KiB);
 *   15 %  build a string by appending 1..48 B pieces with realloc to the
 *         exact length (naive code does this), or a vector of 8-byte items
 *         by doubling its capacity, up to 64..4096 B / 8..1024 items; check
 *         every byte, then free it.
 * Pool blocks are stamped and checked before being freed.
 *
 *   mixed --steps N
 *
 * Reports ns per allocator call (malloc, realloc and free together). */
#include "bench.h"

BENCH_GLOBALS

#define SMALL_SLOTS 4096
#define LARGE_SLOTS 64

typedef struct slot_s {
  void *p;
  size_t n;
  uint64_t tag;
} slot_t;

typedef struct mixed_s {
  bench_rng_t rng;
  uint64_t calls; /* malloc + realloc + free */
  slot_t small[SMALL_SLOTS];
  slot_t large[LARGE_SLOTS];
} mixed_t;

/** Small request size: 80 % 16..256 B, 20 % 257..1024 B. */
static size_t small_size(bench_rng_t *r) {
  return bench_chance(r, 800) ? (size_t)bench_range(r, 16, 256) : (size_t)bench_range(r, 257, 1024);
}

/** Large request size: log-uniform 1 KiB..64 KiB, sometimes up to 256 KiB. */
static size_t large_size(bench_rng_t *r) {
  unsigned top = bench_chance(r, 50) ? 18 : 16;
  unsigned shift = (unsigned)bench_range(r, 10, top - 1);
  size_t lo = (size_t)1 << shift;
  return (size_t)bench_range(r, lo + 1, lo * 2);
}

/** Replace the block in a slot with a new stamped one of n bytes. */
static void replace(mixed_t *m, slot_t *s, size_t n) {
  if (s->p) {
    bench_check(s->p, s->n, s->tag);
    free(s->p);
    m->calls++;
  }
  s->p = bench_nonnull(malloc(n), n);
  s->n = n;
  s->tag = bench_next(&m->rng);
  bench_stamp(s->p, n, s->tag);
  m->calls++;
}

/** Byte i of a grown string or vector with seed t. */
static inline unsigned char grown_byte(uint64_t t, size_t i) {
  return (unsigned char)((t >> (i & 31)) + i * 7);
}

/** Build a string by exact-size appends; check it; free it. */
static void grow_string(mixed_t *m) {
  size_t target = (size_t)bench_range(&m->rng, 64, 4096);
  uint64_t t = bench_next(&m->rng);
  size_t len = 0;
  unsigned char *s = NULL;
  while (len < target) {
    size_t piece = (size_t)bench_range(&m->rng, 1, 48);
    s = bench_nonnull(realloc(s, len + piece + 1), len + piece + 1);
    m->calls++;
    for (size_t i = 0; i < piece; i++) s[len + i] = grown_byte(t, len + i);
    len += piece;
    s[len] = 0;
  }
  for (size_t i = 0; i < len; i++)
    if (s[i] != grown_byte(t, i)) bench_mismatch("string", s, len, grown_byte(t, i), s[i]);
  bench_checksum += t;
  free(s);
  m->calls++;
}

/** Build a vector of 8-byte items by capacity doubling; check it; free it. */
static void grow_vector(mixed_t *m) {
  size_t target = (size_t)bench_range(&m->rng, 8, 1024);
  uint64_t t = bench_next(&m->rng);
  size_t n = 0, cap = 0;
  uint64_t *v = NULL;
  while (n < target) {
    if (n == cap) {
      cap = cap ? cap * 2 : 2;
      v = bench_nonnull(realloc(v, cap * 8), cap * 8);
      m->calls++;
    }
    v[n] = t + n;
    n++;
  }
  for (size_t i = 0; i < n; i++)
    if (v[i] != t + i) bench_mismatch("vector", v, n * 8, t + i, v[i]);
  bench_checksum += t;
  free(v);
  m->calls++;
}

int main(int argc, char **argv) {
  bench_init();
  uint64_t steps = (uint64_t)bench_opt(argc, argv, "--steps", 200000);
  static mixed_t m;
  m.rng = bench_rng(3);
  uint64_t t0 = bench_now_ns();
  for (uint64_t i = 0; i < steps; i++) {
    uint64_t pick = bench_next(&m.rng) % 100;
    if (pick < 75) {
      replace(&m, &m.small[bench_next(&m.rng) % SMALL_SLOTS], small_size(&m.rng));
    } else if (pick < 85) {
      replace(&m, &m.large[bench_next(&m.rng) % LARGE_SLOTS], large_size(&m.rng));
    } else if (pick < 93) {
      grow_string(&m);
    } else {
      grow_vector(&m);
    }
  }
  slot_t *pools[2] = {m.small, m.large};
  size_t counts[2] = {SMALL_SLOTS, LARGE_SLOTS};
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < counts[k]; i++)
      if (pools[k][i].p) {
        bench_check(pools[k][i].p, pools[k][i].n, pools[k][i].tag);
        free(pools[k][i].p);
        m.calls++;
      }
  uint64_t dt = bench_now_ns() - t0;
  bench_result("mixed", m.calls ? (double)dt / (double)m.calls : 0.0, "ns/call", m.calls);
  return 0;
}
