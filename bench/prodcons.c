/* SPDX-License-Identifier: MIT */
/* prodcons — one producer, one worker: the producer makes mixed small
 * messages in batches and hands each batch to the worker through a bounded
 * queue; the worker checks and frees every message (issue 31, "Memory":
 * the producer/consumer pattern with one worker).
 *
 * Every block is made by one thread and freed by the other, so all the
 * producer's memory comes back to it as remote frees: an allocator that
 * lets them wait while the producer carves fresh pages grows here. The
 * live set is bounded: at most --queue batches wait in the queue, one is
 * being filled and one freed.
 *
 * Message sizes: 60 % 16..64 B, 25 % 65..256 B, 15 % 257..1024 B (the
 * small classes only: a message queue of headers, short strings and
 * records).
 *
 *   prodcons --batches N [--batch B] [--queue Q]
 *
 * Each block carries its tag (first word) and the complement (last word);
 * the worker replays the producer's random sequence, so it knows every
 * size and tag. Reports ns per message (wall time). */
#include <pthread.h>

#include "bench.h"

BENCH_GLOBALS

#define QMAX 1024

/* The queue: a mutex and two condition variables, as a real program's
 * work queue would have; FIFO (a ring) or LIFO (a stack: the worker takes
 * the newest batch, so old ones may wait the whole run). */
typedef struct queue_s {
  void **slot[QMAX];
  size_t count, first; /* batches waiting; the oldest's index (FIFO) */
  pthread_mutex_t lock;
  pthread_cond_t nonempty, nonfull;
  uint64_t batches, qlen;
  size_t batch, size;
  int lifo;
  uint64_t seed;
} queue_t;

static size_t pick_size(const queue_t *q, bench_rng_t *r) {
  if (q->size != 0) return q->size;
  uint64_t k = bench_next(r) % 100;
  if (k < 60) return (size_t)bench_range(r, 16, 64);
  if (k < 85) return (size_t)bench_range(r, 65, 256);
  return (size_t)bench_range(r, 257, 1024);
}

static void put(queue_t *q, void **v) {
  pthread_mutex_lock(&q->lock);
  while (q->count >= q->qlen) pthread_cond_wait(&q->nonfull, &q->lock);
  q->slot[(q->first + q->count) % QMAX] = v;
  q->count++;
  pthread_cond_signal(&q->nonempty);
  pthread_mutex_unlock(&q->lock);
}

static void **get(queue_t *q) {
  pthread_mutex_lock(&q->lock);
  while (q->count == 0) pthread_cond_wait(&q->nonempty, &q->lock);
  void **v;
  if (q->lifo) {
    v = q->slot[(q->first + q->count - 1) % QMAX];
  } else {
    v = q->slot[q->first];
    q->first = (q->first + 1) % QMAX;
  }
  q->count--;
  pthread_cond_signal(&q->nonfull);
  pthread_mutex_unlock(&q->lock);
  return v;
}

/* A batch: its pointer array (a block of its own, system-sized for large
 * batches as a real program's vector would be), then the messages; the
 * first word of the array is the batch's seed, from which the worker
 * derives every size and tag. */
static void *producer(void *arg) {
  queue_t *q = arg;
  bench_rng_t r = bench_rng(q->seed);
  for (uint64_t i = 0; i < q->batches; i++) {
    void **v =
        bench_nonnull(malloc((q->batch + 1) * sizeof(void *)), (q->batch + 1) * sizeof(void *));
    uint64_t seed = bench_next(&r);
    bench_rng_t m = bench_rng(seed);
    v[0] = (void *)(uintptr_t)seed;
    for (size_t k = 1; k <= q->batch; k++) {
      size_t n = pick_size(q, &m);
      v[k] = bench_nonnull(malloc(n), n);
      bench_stamp(v[k], n, bench_next(&m));
    }
    put(q, v);
  }
  bench_thread_done();
  return NULL;
}

static void *worker(void *arg) {
  queue_t *q = arg;
  for (uint64_t i = 0; i < q->batches; i++) {
    void **v = get(q);
    bench_rng_t m = bench_rng((uint64_t)(uintptr_t)v[0]);
    for (size_t k = 1; k <= q->batch; k++) {
      size_t n = pick_size(q, &m);
      bench_check(v[k], n, bench_next(&m));
      free(v[k]);
    }
    free(v);
  }
  bench_thread_done();
  return NULL;
}

int main(int argc, char **argv) {
  bench_init();
  static queue_t q;
  q.batches = (uint64_t)bench_opt(argc, argv, "--batches", 2000);
  q.batch = (size_t)bench_opt(argc, argv, "--batch", 4096);
  q.qlen = (uint64_t)bench_opt(argc, argv, "--queue", 100);
  q.size = (size_t)bench_opt(argc, argv, "--size", 0);
  q.lifo = strcmp(bench_opt_str(argc, argv, "--order", "lifo"), "fifo") != 0;
  q.seed = 31;
  pthread_mutex_init(&q.lock, NULL);
  pthread_cond_init(&q.nonempty, NULL);
  pthread_cond_init(&q.nonfull, NULL);
  if (q.size != 0 && q.size < 16) q.size = 16; /* stamps need 16 B */
  if (q.batch < 1) q.batch = 1;
  if (q.qlen < 1) q.qlen = 1;
  if (q.qlen > QMAX) q.qlen = QMAX;
  uint64_t t0 = bench_now_ns();
  pthread_t pt, wt;
  if (pthread_create(&wt, NULL, worker, &q) != 0 || pthread_create(&pt, NULL, producer, &q) != 0) {
    fprintf(stderr, "prodcons: pthread_create failed\n");
    return 4;
  }
  pthread_join(pt, NULL);
  pthread_join(wt, NULL);
  uint64_t dt = bench_now_ns() - t0;
  uint64_t n = q.batches * q.batch;
  bench_result("prodcons", n ? (double)dt / (double)n : 0.0, "ns/msg", n);
  return 0;
}
