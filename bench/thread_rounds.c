/* SPDX-License-Identifier: MIT */
/* thread_rounds — rounds of short-lived threads that hand blocks to the
 * next round (issue 11, row 1).
 *
 * --rounds rounds, each of --threads threads started together and joined
 * before the next round starts. Each thread, as a worker of a thread pool
 * that is torn down after every job would:
 *   1. checks and frees the blocks the previous round's thread of the same
 *      index handed over (every one made by a thread that has exited);
 *   2. makes --objects objects of 8..512 B (mostly under 128 B), light
 *      stamped, and 4 growing arrays (realloc by 1.5x from 64 B up to
 *      2..64 KiB, filled as they grow: a vector, a string builder);
 *   3. makes 16..32 buffers of 4 KiB..256 KiB (log-uniform), written in
 *      full (I/O and decode buffers);
 *   4. frees most of it in random order and hands the rest (1 in 8 objects,
 *      one array, one buffer) to the next round.
 * The main thread frees what the last round handed over. Blocks are checked
 * before every free (buffers and arrays in full).
 *
 *   thread_rounds --rounds R [--threads T] [--objects N]
 *
 * Reports microseconds per round (start, work, exit and join of its threads). */
#include <pthread.h>

#include "bench.h"

BENCH_GLOBALS

enum { STAMPED, FILLED, ARRAY }; /* how a block's contents are checked */

typedef struct blk_s {
  void *p;
  size_t n;
  uint64_t tag;
  int kind;
} blk_t;

#define ARRAYS 4
#define MAX_BUFFERS 32

/* What one thread hands to its successor: at most objects/8 + 2 blocks. */
typedef struct handoff_s {
  blk_t *v;
  size_t n;
} handoff_t;

typedef struct worker_s {
  pthread_t tid;
  uint64_t seed;
  size_t objects;
  handoff_t *in, *out; /* from the previous round, to the next */
  blk_t *scratch;      /* this thread's blocks (sized by main, reused) */
} worker_t;

/** Object size: 8..512 B, 70 % under 128 B. Stamps need 16 B, so the
 * request is never below that; 8..15 B requests become 16 B. */
static size_t object_size(bench_rng_t *r) {
  size_t n =
      bench_chance(r, 700) ? (size_t)bench_range(r, 8, 127) : (size_t)bench_range(r, 128, 512);
  return n < 16 ? 16 : n;
}

/** Buffer size: log-uniform 4 KiB..256 KiB. */
static size_t buffer_size(bench_rng_t *r) {
  unsigned shift = (unsigned)bench_range(r, 12, 17);
  return (size_t)bench_range(r, (uint64_t)1 << shift, (uint64_t)2 << shift);
}

/** Byte i of a grown array with tag t. */
static inline unsigned char array_byte(uint64_t t, size_t i) { return (unsigned char)(i * 31 + t); }

static void check_free(blk_t *b) {
  if (b->kind == STAMPED) {
    bench_check(b->p, b->n, b->tag);
  } else if (b->kind == FILLED) {
    bench_verify(b->p, b->n, b->tag);
  } else {
    const unsigned char *a = b->p;
    for (size_t i = 0; i < b->n; i++)
      if (a[i] != array_byte(b->tag, i)) bench_mismatch("array", a, b->n, b->tag, a[i]);
    bench_checksum += b->tag;
  }
  free(b->p);
}

/** An array grown by realloc (x1.5) to a random final size, its bytes
 * written as it grows. */
static blk_t grow_array(bench_rng_t *r) {
  size_t target = (size_t)bench_range(r, 2048, 64 * 1024), cap = 64, len = 0;
  uint64_t tag = bench_next(r);
  unsigned char *a = bench_nonnull(malloc(cap), cap);
  while (len < target) {
    if (len == cap) {
      cap += cap / 2;
      a = bench_nonnull(realloc(a, cap), cap);
    }
    size_t end = cap < target ? cap : target;
    for (; len < end; len++) a[len] = array_byte(tag, len);
    if (len == 64) bench_after_stamp(a); /* BENCH_CORRUPT counts arrays too */
  }
  blk_t b = {a, len, tag, ARRAY};
  return b;
}

static void *work(void *arg) {
  worker_t *w = arg;
  bench_rng_t r = bench_rng(w->seed);
  for (size_t i = 0; i < w->in->n; i++) check_free(&w->in->v[i]);
  w->in->n = 0;

  blk_t *b = w->scratch;
  size_t n = 0;
  for (size_t i = 0; i < w->objects; i++) {
    blk_t o = {NULL, object_size(&r), bench_next(&r), STAMPED};
    o.p = bench_nonnull(malloc(o.n), o.n);
    bench_stamp(o.p, o.n, o.tag);
    b[n++] = o;
  }
  for (int i = 0; i < ARRAYS; i++) b[n++] = grow_array(&r);
  size_t nbuf = (size_t)bench_range(&r, MAX_BUFFERS / 2, MAX_BUFFERS);
  for (size_t i = 0; i < nbuf; i++) {
    blk_t o = {NULL, buffer_size(&r), bench_next(&r), FILLED};
    o.p = bench_nonnull(malloc(o.n), o.n);
    bench_fill(o.p, o.n, o.tag);
    b[n++] = o;
  }

  /* Hand over 1 in 8 objects, the last array and the last buffer. */
  for (size_t i = 0; i < w->objects; i += 8) w->out->v[w->out->n++] = b[i];
  size_t last_array = w->objects + ARRAYS - 1;
  w->out->v[w->out->n++] = b[last_array];
  w->out->v[w->out->n++] = b[n - 1];
  size_t m = 0; /* the rest, compacted, then freed in random order */
  for (size_t i = 0; i < n - 1; i++)
    if ((i < w->objects && i % 8 != 0) || (i >= w->objects && i != last_array)) b[m++] = b[i];
  for (size_t i = m; i > 1; i--) {
    size_t k = (size_t)(bench_next(&r) % i);
    blk_t t = b[i - 1];
    b[i - 1] = b[k];
    b[k] = t;
  }
  for (size_t i = 0; i < m; i++) check_free(&b[i]);
  bench_thread_done();
  return NULL;
}

int main(int argc, char **argv) {
  bench_init();
  uint64_t rounds = (uint64_t)bench_opt(argc, argv, "--rounds", 250);
  int threads = (int)bench_opt(argc, argv, "--threads", 2);
  size_t objects = (size_t)bench_opt(argc, argv, "--objects", 10000);
  if (threads < 1) threads = 1;
  if (objects < 1) objects = 1;
  worker_t *w = bench_nonnull(calloc((size_t)threads, sizeof(*w)), sizeof(*w) * (size_t)threads);
  handoff_t *h = bench_nonnull(calloc(2 * (size_t)threads, sizeof(*h)), 2 * sizeof(*h) * threads);
  size_t cap = objects / 8 + 3;
  for (int t = 0; t < 2 * threads; t++) h[t].v = bench_nonnull(calloc(cap, sizeof(blk_t)), cap);
  for (int t = 0; t < threads; t++)
    w[t].scratch = bench_nonnull(calloc(objects + ARRAYS + MAX_BUFFERS, sizeof(blk_t)), objects);

  uint64_t t0 = bench_now_ns();
  for (uint64_t ri = 0; ri < rounds; ri++) {
    for (int t = 0; t < threads; t++) {
      w[t].seed = ri * 1000 + (uint64_t)t;
      w[t].objects = objects;
      w[t].in = &h[(ri % 2) * (uint64_t)threads + (uint64_t)t];
      w[t].out = &h[((ri + 1) % 2) * (uint64_t)threads + (uint64_t)t];
      if (pthread_create(&w[t].tid, NULL, work, &w[t]) != 0) {
        fprintf(stderr, "thread_rounds: pthread_create failed\n");
        return 4;
      }
    }
    for (int t = 0; t < threads; t++) pthread_join(w[t].tid, NULL);
  }
  for (int t = 0; t < 2 * threads; t++) {
    for (size_t i = 0; i < h[t].n; i++) check_free(&h[t].v[i]);
    free(h[t].v);
  }
  uint64_t dt = bench_now_ns() - t0;
  for (int t = 0; t < threads; t++) free(w[t].scratch);
  free(h);
  free(w);
  bench_result("thread-rounds", rounds ? (double)dt / 1e3 / (double)rounds : 0.0, "us/round",
               rounds);
  return 0;
}
