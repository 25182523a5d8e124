/* SPDX-License-Identifier: MIT */
/* sizes_2t — two threads replacing blocks of random sizes from 8 B to
 * 16 KiB, some freed by the other thread (issue 11, row 2).
 *
 * Each thread owns --slots slots, filled first. Each of its --ops steps
 * picks a random slot, takes its block out and puts a new one of a uniform
 * random size in 16 B..16 KiB there (so about 94 % of the requests are
 * above 1024 B: under libsizeclass, mostly the system allocator's work
 * behind its own wrapper). The block taken out is checked and freed by
 * this thread, or, --pass times in 1000 (default 125: one in 8), passed to
 * the other thread through a bounded single-producer/single-consumer ring
 * (freed here when the ring is full); each thread empties its incoming
 * ring as it goes. Stamps need 16 B,
 * so the smallest request is 16 B rather than 8.
 *
 *   sizes_2t --ops N [--slots S] [--pass P]
 *
 * Every block is checked exactly once before its free; the checksum is the
 * sum of every tag made, whichever thread frees the block. Reports ns per
 * step (wall time over both threads' steps). */
#include <pthread.h>
#include <sched.h>

#include "bench.h"

BENCH_GLOBALS

#define MAX_SIZE 16384

typedef struct worker_s {
  pthread_t tid;
  uint64_t seed, ops;
  size_t nslots;
  unsigned pass; /* permille of the blocks taken out passed to the other thread */
  bench_ring_t *in, *out;
  _Atomic int *done; /* threads that finished their steps */
} worker_t;

static bench_blk_t make(bench_rng_t *r) {
  bench_blk_t b;
  b.n = (uint32_t)bench_range(r, 16, MAX_SIZE);
  b.tag = bench_next(r);
  b.p = bench_nonnull(malloc(b.n), b.n);
  bench_stamp(b.p, b.n, b.tag);
  return b;
}

static void *work(void *arg) {
  worker_t *w = arg;
  bench_rng_t r = bench_rng(w->seed);
  bench_blk_t *s =
      bench_nonnull(calloc(w->nslots, sizeof(bench_blk_t)), w->nslots * sizeof(bench_blk_t));
  for (size_t i = 0; i < w->nslots; i++) s[i] = make(&r);
  for (uint64_t i = 0; i < w->ops; i++) {
    size_t k = (size_t)(bench_next(&r) % w->nslots);
    bench_blk_t old = s[k];
    s[k] = make(&r);
    if (!bench_chance(&r, w->pass) || !bench_ring_put(w->out, old)) bench_check_free(old);
    if ((i & 15) == 0) bench_ring_drain(w->in);
  }
  for (size_t i = 0; i < w->nslots; i++) bench_check_free(s[i]);
  free(s);
  /* Drain until the other thread has finished sending too. */
  atomic_fetch_add(w->done, 1);
  while (atomic_load(w->done) < 2) {
    bench_ring_drain(w->in);
    sched_yield();
  }
  bench_ring_drain(w->in);
  bench_thread_done();
  return NULL;
}

int main(int argc, char **argv) {
  bench_init();
  uint64_t ops = (uint64_t)bench_opt(argc, argv, "--ops", 1000000);
  size_t slots = (size_t)bench_opt(argc, argv, "--slots", 1000);
  unsigned pass = (unsigned)bench_opt(argc, argv, "--pass", 125);
  if (slots < 1) slots = 1;
  static bench_ring_t rings[2];
  _Atomic int done = 0;
  worker_t w[2];
  uint64_t t0 = bench_now_ns();
  for (int t = 0; t < 2; t++) {
    w[t] = (worker_t){.seed = 41 + (uint64_t)t,
                      .ops = ops,
                      .nslots = slots,
                      .pass = pass,
                      .in = &rings[t],
                      .out = &rings[1 - t],
                      .done = &done};
    if (pthread_create(&w[t].tid, NULL, work, &w[t]) != 0) {
      fprintf(stderr, "sizes_2t: pthread_create failed\n");
      return 4;
    }
  }
  for (int t = 0; t < 2; t++) pthread_join(w[t].tid, NULL);
  uint64_t dt = bench_now_ns() - t0;
  bench_result("sizes-2t", ops ? (double)dt / (double)(2 * ops) : 0.0, "ns/step", 2 * ops);
  return 0;
}
