/* SPDX-License-Identifier: MIT */
/* sizes_2t_rounds — the public two-thread random-size pattern as issue 31
 * describes it (its section 3; sizes_2t is this project's own version).
 *
 * Two threads, many short rounds. In each round each thread fills a
 * working set of a random 1000..2000 blocks (--min-ws, --max-ws), each of
 * a size uniform over 16..16 000 B (--max), then makes --steps random
 * replacements: a random slot's block is taken out and a new one of a
 * fresh random size put there. The block taken out is checked and freed by
 * this thread, or --pass times in 1000 (default 125: one in 8) passed to
 * the other thread through a bounded ring (the two rings make a cross-thread
 * ring of two; a full ring means a local free), which frees it. At the end
 * of its round a thread frees its working set the same way (one in 8
 * through the ring); both then meet at a barrier, empty their incoming
 * rings and meet again, so no block outlives its round. Every block is
 * checked exactly once before its free; the checksum is the sum of every
 * tag made.
 *
 *   sizes_2t_rounds --rounds N [--steps S] [--min-ws A] [--max-ws B]
 *                   [--max M] [--pass P]
 *
 * Reports ns per block made (wall time over both threads' blocks). */
#include <pthread.h>

#include "bench.h"

BENCH_GLOBALS

typedef struct worker_s {
  pthread_t tid;
  uint64_t seed, rounds, steps, made;
  size_t min_ws, max_ws, max_size;
  unsigned pass; /* permille of the blocks given up passed to the other thread */
  bench_ring_t *in, *out;
  pthread_barrier_t *barrier;
} worker_t;

static bench_blk_t make(worker_t *w, bench_rng_t *r) {
  bench_blk_t b;
  b.n = (uint32_t)bench_range(r, 16, w->max_size);
  b.tag = bench_next(r);
  b.p = bench_nonnull(malloc(b.n), b.n);
  bench_stamp(b.p, b.n, b.tag);
  w->made++;
  return b;
}

/** A block given up: to the other thread one time in 1000/pass, else freed here. */
static void give_up(worker_t *w, bench_rng_t *r, bench_blk_t b) {
  if (!bench_chance(r, w->pass) || !bench_ring_put(w->out, b)) bench_check_free(b);
}

static void *work(void *arg) {
  worker_t *w = arg;
  bench_rng_t r = bench_rng(w->seed);
  bench_blk_t *s =
      bench_nonnull(calloc(w->max_ws, sizeof(bench_blk_t)), w->max_ws * sizeof(bench_blk_t));
  for (uint64_t round = 0; round < w->rounds; round++) {
    size_t ws = (size_t)bench_range(&r, w->min_ws, w->max_ws);
    for (size_t i = 0; i < ws; i++) s[i] = make(w, &r);
    for (uint64_t i = 0; i < w->steps; i++) {
      size_t k = (size_t)(bench_next(&r) % ws);
      bench_blk_t old = s[k];
      s[k] = make(w, &r);
      give_up(w, &r, old);
      if ((i & 15) == 0) bench_ring_drain(w->in);
    }
    for (size_t i = 0; i < ws; i++) give_up(w, &r, s[i]);
    pthread_barrier_wait(w->barrier); /* both have sent everything */
    bench_ring_drain(w->in);
    pthread_barrier_wait(w->barrier); /* and freed what they got */
  }
  free(s);
  bench_thread_done();
  return NULL;
}

int main(int argc, char **argv) {
  bench_init();
  uint64_t rounds = (uint64_t)bench_opt(argc, argv, "--rounds", 200);
  uint64_t steps = (uint64_t)bench_opt(argc, argv, "--steps", 4000);
  size_t min_ws = (size_t)bench_opt(argc, argv, "--min-ws", 1000);
  size_t max_ws = (size_t)bench_opt(argc, argv, "--max-ws", 2000);
  size_t max_size = (size_t)bench_opt(argc, argv, "--max", 16000);
  unsigned pass = (unsigned)bench_opt(argc, argv, "--pass", 125);
  if (min_ws < 1) min_ws = 1;
  if (max_ws < min_ws) max_ws = min_ws;
  if (max_size < 16) max_size = 16; /* stamps need 16 B */
  static bench_ring_t rings[2];
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, 2);
  worker_t w[2];
  uint64_t t0 = bench_now_ns();
  for (int t = 0; t < 2; t++) {
    w[t] = (worker_t){.seed = 71 + (uint64_t)t,
                      .rounds = rounds,
                      .steps = steps,
                      .min_ws = min_ws,
                      .max_ws = max_ws,
                      .max_size = max_size,
                      .pass = pass,
                      .in = &rings[t],
                      .out = &rings[1 - t],
                      .barrier = &barrier};
    if (pthread_create(&w[t].tid, NULL, work, &w[t]) != 0) {
      fprintf(stderr, "sizes_2t_rounds: pthread_create failed\n");
      return 4;
    }
  }
  for (int t = 0; t < 2; t++) pthread_join(w[t].tid, NULL);
  uint64_t dt = bench_now_ns() - t0;
  uint64_t made = w[0].made + w[1].made;
  pthread_barrier_destroy(&barrier);
  bench_result("sizes-2t-rounds", made ? (double)dt / (double)made : 0.0, "ns/block", made);
  return 0;
}
