/* SPDX-License-Identifier: MIT */
/* cross_thread — blocks freed by a thread other than the one that made them.
 *
 *   cross_thread --mode prodcons --ops N
 *     One producer allocates N blocks (16..1024 B, mostly small) and passes
 *     them through a bounded single-producer/single-consumer ring; the
 *     consumer checks and frees them (every free is a remote free).
 *   cross_thread --mode larson --threads T --slots S --ops N
 *     A server loop after Larson & Krishnan: S slots shared by T threads;
 *     each thread N times replaces the block in a random slot with a new one
 *     and frees the old one, which another thread usually made.
 *
 * Reports ns per block (wall time over all blocks of all threads). Blocks
 * carry their size and a tag in the first word and its complement in the
 * last; the consumer knows each block's exact tag, larson checks that each
 * block is self-consistent. */
#include <pthread.h>
#include <sched.h>

#include "bench.h"

BENCH_GLOBALS

/** A request size: 80 % in 16..256 B, the rest 257..1024 B. */
static size_t pick_size(bench_rng_t *r) {
  return bench_chance(r, 800) ? (size_t)bench_range(r, 16, 256) : (size_t)bench_range(r, 257, 1024);
}

/** Tag of a block: random high bits, its size in the low 11 bits. */
static uint64_t make_tag(bench_rng_t *r, size_t n) { return (bench_next(r) << 11) | n; }

/* ---- producer / consumer -------------------------------------------------- */

#define RING 1024

typedef struct ring_s {
  void *slot[RING];
  _Alignas(64) _Atomic uint64_t head; /* next to write (producer) */
  _Alignas(64) _Atomic uint64_t tail; /* next to read (consumer) */
  uint64_t ops;
  uint64_t seed;
} ring_t;

/** Producer: allocate, stamp, publish; yield while the ring is full. */
static void *producer(void *arg) {
  ring_t *q = arg;
  bench_rng_t r = bench_rng(q->seed);
  for (uint64_t i = 0; i < q->ops; i++) {
    size_t n = pick_size(&r);
    uint64_t tag = make_tag(&r, n);
    void *p = bench_nonnull(malloc(n), n);
    bench_stamp(p, n, tag);
    while (i - atomic_load_explicit(&q->tail, memory_order_acquire) >= RING) sched_yield();
    q->slot[i % RING] = p;
    atomic_store_explicit(&q->head, i + 1, memory_order_release);
  }
  bench_thread_done();
  return NULL;
}

/** Consumer: replay the producer's sequence, check each block, free it. */
static void *consumer(void *arg) {
  ring_t *q = arg;
  bench_rng_t r = bench_rng(q->seed);
  for (uint64_t i = 0; i < q->ops; i++) {
    size_t n = pick_size(&r);
    uint64_t tag = make_tag(&r, n);
    while (atomic_load_explicit(&q->head, memory_order_acquire) <= i) sched_yield();
    void *p = q->slot[i % RING];
    atomic_store_explicit(&q->tail, i + 1, memory_order_release);
    bench_check(p, n, tag);
    free(p);
  }
  bench_thread_done();
  return NULL;
}

/** Run producer and consumer; returns blocks passed. */
static uint64_t run_prodcons(uint64_t ops) {
  static ring_t q;
  q.ops = ops;
  q.seed = 11;
  pthread_t pt, ct;
  pthread_create(&ct, NULL, consumer, &q);
  pthread_create(&pt, NULL, producer, &q);
  pthread_join(pt, NULL);
  pthread_join(ct, NULL);
  return ops;
}

/* ---- larson-style server loop --------------------------------------------- */

typedef struct larson_s {
  _Atomic(void *) *slots;
  size_t nslots;
  uint64_t ops;
} larson_t;

typedef struct worker_s {
  larson_t *l;
  uint64_t seed;
  pthread_t tid;
} worker_t;

/** Check a block stamped with make_tag and free it. */
static void check_free(void *p) {
  uint64_t tag;
  memcpy(&tag, p, 8);
  size_t n = (size_t)(tag & 2047);
  if (n < 16 || n > 1024) {
    fprintf(stderr, "bench: block %p has a bad size word %016llx\n", p, (unsigned long long)tag);
    exit(3);
  }
  bench_check(p, n, tag);
  free(p);
}

/** A new stamped block of random size. */
static void *make_block(bench_rng_t *r) {
  size_t n = pick_size(r);
  void *p = bench_nonnull(malloc(n), n);
  bench_stamp(p, n, make_tag(r, n));
  return p;
}

/** One server thread: replace random slots, free what was there. */
static void *larson_worker(void *arg) {
  worker_t *w = arg;
  larson_t *l = w->l;
  bench_rng_t r = bench_rng(w->seed);
  for (uint64_t i = 0; i < l->ops; i++) {
    size_t k = (size_t)(bench_next(&r) % l->nslots);
    void *old = atomic_exchange_explicit(&l->slots[k], make_block(&r), memory_order_acq_rel);
    check_free(old);
  }
  bench_thread_done();
  return NULL;
}

/** Fill the slots, run the threads, empty the slots; returns blocks made. */
static uint64_t run_larson(int threads, size_t nslots, uint64_t ops) {
  larson_t l = {.nslots = nslots, .ops = ops};
  l.slots = bench_nonnull(calloc(nslots, sizeof(*l.slots)), nslots * sizeof(*l.slots));
  bench_rng_t r = bench_rng(5);
  for (size_t k = 0; k < nslots; k++) atomic_store(&l.slots[k], make_block(&r));
  worker_t *w = bench_nonnull(calloc((size_t)threads, sizeof(*w)), sizeof(*w) * (size_t)threads);
  for (int t = 0; t < threads; t++) {
    w[t].l = &l;
    w[t].seed = 100 + (uint64_t)t;
    pthread_create(&w[t].tid, NULL, larson_worker, &w[t]);
  }
  for (int t = 0; t < threads; t++) pthread_join(w[t].tid, NULL);
  for (size_t k = 0; k < nslots; k++) check_free(atomic_load(&l.slots[k]));
  free(w);
  free(l.slots);
  return ops * (uint64_t)threads;
}

int main(int argc, char **argv) {
  bench_init();
  const char *mode = bench_opt_str(argc, argv, "--mode", "prodcons");
  uint64_t ops = (uint64_t)bench_opt(argc, argv, "--ops", 1000000);
  uint64_t t0 = bench_now_ns(), n;
  const char *name;
  if (strcmp(mode, "prodcons") == 0) {
    name = "xthread-prodcons";
    n = run_prodcons(ops);
  } else if (strcmp(mode, "larson") == 0) {
    name = "xthread-larson";
    int threads = (int)bench_opt(argc, argv, "--threads", 2);
    size_t slots = (size_t)bench_opt(argc, argv, "--slots", 10000);
    n = run_larson(threads < 1 ? 1 : threads, slots < 1 ? 1 : slots, ops);
  } else {
    fprintf(stderr, "cross_thread: unknown mode '%s' (prodcons, larson)\n", mode);
    return 2;
  }
  uint64_t dt = bench_now_ns() - t0;
  bench_result(name, n ? (double)dt / (double)n : 0.0, "ns/block", n);
  return 0;
}
