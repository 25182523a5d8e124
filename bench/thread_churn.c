/* SPDX-License-Identifier: MIT */
/* thread_churn — many short-lived threads that allocate and exit.
 *
 * B batches of T threads. Each thread allocates A blocks (16..1024 B, mostly
 * small, 2 % larger than 1 KiB), frees three quarters of them in random
 * order, and hands the rest to the main thread before it exits; the main
 * thread checks and frees those after the join, i.e. after their arena's
 * thread is gone. The next batch starts on the arenas the last one left.
 *
 *   thread_churn --batches B --threads T --allocs A
 *
 * Reports microseconds per thread (create, work, exit, join, leftovers). */
#include <pthread.h>

#include "bench.h"

BENCH_GLOBALS

typedef struct block_s {
  void *p;
  size_t n;
  uint64_t tag;
} block_t;

typedef struct worker_s {
  pthread_t tid;
  uint64_t seed;
  size_t allocs;
  block_t *blocks; /* made by the worker; the last quarter outlives it */
} worker_t;

/** Request size: 2 % above 1 KiB, else 80 % 16..256 B, 20 % 257..1024 B. */
static size_t pick_size(bench_rng_t *r) {
  if (bench_chance(r, 20)) return (size_t)bench_range(r, 1025, 8192);
  return bench_chance(r, 800) ? (size_t)bench_range(r, 16, 256) : (size_t)bench_range(r, 257, 1024);
}

/** Worker: allocate, free 3/4 in random order, leave 1/4 to main. */
static void *work(void *arg) {
  worker_t *w = arg;
  bench_rng_t r = bench_rng(w->seed);
  block_t *b = w->blocks;
  for (size_t i = 0; i < w->allocs; i++) {
    b[i].n = pick_size(&r);
    b[i].tag = bench_next(&r);
    b[i].p = bench_nonnull(malloc(b[i].n), b[i].n);
    bench_stamp(b[i].p, b[i].n, b[i].tag);
  }
  for (size_t i = w->allocs; i > 1; i--) { /* shuffle: random free order */
    size_t k = (size_t)(bench_next(&r) % i);
    block_t t = b[i - 1];
    b[i - 1] = b[k];
    b[k] = t;
  }
  size_t keep = w->allocs / 4;
  for (size_t i = keep; i < w->allocs; i++) {
    bench_check(b[i].p, b[i].n, b[i].tag);
    free(b[i].p);
  }
  bench_thread_done();
  return NULL;
}

int main(int argc, char **argv) {
  bench_init();
  uint64_t batches = (uint64_t)bench_opt(argc, argv, "--batches", 200);
  int threads = (int)bench_opt(argc, argv, "--threads", 4);
  size_t allocs = (size_t)bench_opt(argc, argv, "--allocs", 400);
  if (threads < 1) threads = 1;
  worker_t *w = bench_nonnull(calloc((size_t)threads, sizeof(*w)), sizeof(*w) * (size_t)threads);
  for (int t = 0; t < threads; t++)
    w[t].blocks = bench_nonnull(calloc(allocs ? allocs : 1, sizeof(block_t)),
                                sizeof(block_t) * (allocs ? allocs : 1));

  uint64_t t0 = bench_now_ns();
  for (uint64_t bi = 0; bi < batches; bi++) {
    for (int t = 0; t < threads; t++) {
      w[t].seed = bi * 1000 + (uint64_t)t;
      w[t].allocs = allocs;
      if (pthread_create(&w[t].tid, NULL, work, &w[t]) != 0) {
        fprintf(stderr, "thread_churn: pthread_create failed\n");
        return 4;
      }
    }
    for (int t = 0; t < threads; t++) pthread_join(w[t].tid, NULL);
    for (int t = 0; t < threads; t++)
      for (size_t i = 0; i < allocs / 4; i++) {
        block_t *b = &w[t].blocks[i];
        bench_check(b->p, b->n, b->tag);
        free(b->p);
      }
  }
  uint64_t dt = bench_now_ns() - t0;
  for (int t = 0; t < threads; t++) free(w[t].blocks);
  free(w);
  uint64_t n = batches * (uint64_t)threads;
  bench_result("thread-churn", n ? (double)dt / 1000.0 / (double)n : 0.0, "us/thread", n);
  return 0;
}
