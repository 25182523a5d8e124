/* SPDX-License-Identifier: MIT */
/* random_replace — a live set where each step frees a random block and
 * allocates a new one of a random size (issue 10).
 *
 * An array of --live blocks is filled first; then each of --steps steps
 * picks a random slot, checks and frees its block, and puts a new block of
 * a random, mostly small size there. The live set keeps its size while its
 * blocks are replaced in random order, so frees land all over the heap and
 * the allocator's free lists come back shuffled: the steady state of a
 * long-running program (a cache, a scene, an interpreter's heap) rather
 * than the tidy LIFO of a benchmark loop. Sizes:
 *   60 %  16..64 B, 25 %  65..256 B, 12 %  257..1024 B,
 *    3 %  1025..8192 B (served by the system allocator under libsizeclass).
 * Blocks are stamped (first and last 8 bytes) and checked before their free.
 *
 *   random_replace --steps N [--live L]
 *
 * Reports ns per step (one free and one malloc). */
#include "bench.h"

BENCH_GLOBALS

typedef struct slot_s {
  void *p;
  uint32_t n;
  uint64_t tag;
} slot_t;

/** A request size from the mix above. */
static size_t pick_size(bench_rng_t *r) {
  uint64_t k = bench_next(r) % 100;
  if (k < 60) return (size_t)bench_range(r, 16, 64);
  if (k < 85) return (size_t)bench_range(r, 65, 256);
  if (k < 97) return (size_t)bench_range(r, 257, 1024);
  return (size_t)bench_range(r, 1025, 8192);
}

/** Fill a slot with a new stamped block. */
static void fill_slot(slot_t *s, bench_rng_t *r) {
  size_t n = pick_size(r);
  s->p = bench_nonnull(malloc(n), n);
  s->n = (uint32_t)n;
  s->tag = bench_next(r);
  bench_stamp(s->p, n, s->tag);
}

/** Check and free a slot's block. */
static void empty_slot(slot_t *s) {
  bench_check(s->p, s->n, s->tag);
  free(s->p);
  s->p = NULL;
}

int main(int argc, char **argv) {
  bench_init();
  uint64_t steps = (uint64_t)bench_opt(argc, argv, "--steps", 1000000);
  size_t live = (size_t)bench_opt(argc, argv, "--live", 20000);
  if (live < 1) live = 1;
  slot_t *v = bench_nonnull(calloc(live, sizeof(slot_t)), live * sizeof(slot_t));
  bench_rng_t r = bench_rng(17);
  for (size_t i = 0; i < live; i++) fill_slot(&v[i], &r);

  uint64_t t0 = bench_now_ns();
  for (uint64_t i = 0; i < steps; i++) {
    slot_t *s = &v[bench_next(&r) % live];
    empty_slot(s);
    fill_slot(s, &r);
  }
  uint64_t dt = bench_now_ns() - t0;

  for (size_t i = 0; i < live; i++) empty_slot(&v[i]);
  free(v);
  bench_result("random-replace", steps ? (double)dt / (double)steps : 0.0, "ns/step", steps);
  return 0;
}
