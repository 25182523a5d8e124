/* SPDX-License-Identifier: MIT */
/* stress_mt — more threads than cores, mixed sizes, realloc, and blocks
 * passed between threads through shared slots (issue 11, row 3).
 *
 * --threads threads (8 on this 2-core machine: oversubscribed, so threads
 * are preempted inside the allocator) share --slots slots. Each of a
 * thread's --ops steps draws a slot, a size and a tag, then:
 *   40 %  put a new block in the slot; the block that was there (usually
 *         made by another thread) is checked and freed;
 *   20 %  take the slot's block and realloc it to the new size (check the
 *         head survived), or make a new block when the slot was empty;
 *         put it back;
 *   15 %  take the slot's block, check and free it (the tag is unused);
 *   25 %  local work: 1..32 blocks made and freed in random order.
 * Sizes: 70 % 16..1024 B, 25 % 1025..8192 B, 5 % 8 KiB..64 KiB.
 *
 *   stress_mt --ops N [--threads T] [--slots S]
 *
 * Every step creates exactly one slot tag and every block is checked once
 * before its free, so at the end the sum of the tags checked must equal
 * the sum of the tags made, however the threads interleaved (else exit 3:
 * a block was lost or freed twice); that sum is the checksum. Reports ns
 * per step (wall time over all threads' steps). */
#include <pthread.h>

#include "bench.h"

BENCH_GLOBALS

typedef struct blk_s {
  void *p;
  uint32_t n;
  uint64_t tag;
} blk_t;

typedef struct shared_s {
  _Atomic(blk_t *) *slots;
  size_t nslots;
  uint64_t ops;
  _Atomic uint64_t made; /* sum of the slot tags every thread made */
} shared_t;

typedef struct worker_s {
  pthread_t tid;
  uint64_t seed;
  shared_t *sh;
} worker_t;

static size_t pick_size(bench_rng_t *r) {
  uint64_t k = bench_next(r) % 100;
  if (k < 70) return (size_t)bench_range(r, 16, 1024);
  if (k < 95) return (size_t)bench_range(r, 1025, 8192);
  return (size_t)bench_range(r, 8193, 65536);
}

/* Slot records come from malloc too, as a real program's would. */
static blk_t *make(size_t n, uint64_t tag) {
  blk_t *b = bench_nonnull(malloc(sizeof(*b)), sizeof(*b));
  b->n = (uint32_t)n;
  b->tag = tag;
  b->p = bench_nonnull(malloc(n), n);
  bench_stamp(b->p, n, tag);
  return b;
}

static void drop(blk_t *b) {
  if (b == NULL) return;
  bench_check(b->p, b->n, b->tag);
  free(b->p);
  free(b);
}

/** Resize a taken block to n; its first 8 bytes must survive. */
static void resize(blk_t *b, size_t n, uint64_t tag) {
  uint64_t head;
  memcpy(&head, b->p, 8);
  if (head != b->tag) bench_mismatch("head", b->p, b->n, b->tag, head);
  b->p = bench_nonnull(realloc(b->p, n), n);
  memcpy(&head, b->p, 8);
  if (head != b->tag) bench_mismatch("realloc head", b->p, n, b->tag, head);
  bench_checksum += b->tag; /* the old tag ends here */
  b->n = (uint32_t)n;
  b->tag = tag;
  bench_stamp(b->p, n, tag);
}

/** Local blocks made and freed by this thread; returns the sum of their tags. */
static uint64_t local_work(bench_rng_t *r) {
  uint64_t made = 0;
  blk_t v[32];
  size_t k = (size_t)bench_range(r, 1, 32);
  for (size_t i = 0; i < k; i++) {
    v[i].n = (uint32_t)pick_size(r);
    v[i].tag = bench_next(r);
    made += v[i].tag;
    v[i].p = bench_nonnull(malloc(v[i].n), v[i].n);
    bench_stamp(v[i].p, v[i].n, v[i].tag);
  }
  for (size_t left = k; left > 0; left--) {
    size_t j = (size_t)(bench_next(r) % left);
    bench_check(v[j].p, v[j].n, v[j].tag);
    free(v[j].p);
    v[j] = v[left - 1];
  }
  return made;
}

static void *work(void *arg) {
  worker_t *w = arg;
  shared_t *sh = w->sh;
  bench_rng_t r = bench_rng(w->seed);
  uint64_t made = 0;
  for (uint64_t i = 0; i < sh->ops; i++) {
    _Atomic(blk_t *) *slot = &sh->slots[bench_next(&r) % sh->nslots];
    size_t n = pick_size(&r);
    uint64_t tag = bench_next(&r), what = bench_next(&r) % 100;
    if (what < 40) {
      made += tag;
      drop(atomic_exchange(slot, make(n, tag)));
    } else if (what < 60) {
      made += tag;
      blk_t *b = atomic_exchange(slot, NULL);
      if (b == NULL)
        b = make(n, tag);
      else
        resize(b, n, tag);
      drop(atomic_exchange(slot, b));
    } else if (what < 75) {
      drop(atomic_exchange(slot, NULL));
    } else {
      made += local_work(&r);
    }
  }
  atomic_fetch_add(&sh->made, made);
  bench_thread_done();
  return NULL;
}

int main(int argc, char **argv) {
  bench_init();
  shared_t sh = {0};
  sh.ops = (uint64_t)bench_opt(argc, argv, "--ops", 500000);
  int threads = (int)bench_opt(argc, argv, "--threads", 8);
  sh.nslots = (size_t)bench_opt(argc, argv, "--slots", 4096);
  if (threads < 1) threads = 1;
  if (sh.nslots < 1) sh.nslots = 1;
  sh.slots = bench_nonnull(calloc(sh.nslots, sizeof(*sh.slots)), sh.nslots * sizeof(*sh.slots));
  worker_t *w = bench_nonnull(calloc((size_t)threads, sizeof(*w)), sizeof(*w) * (size_t)threads);
  uint64_t t0 = bench_now_ns();
  for (int t = 0; t < threads; t++) {
    w[t].seed = 300 + (uint64_t)t;
    w[t].sh = &sh;
    if (pthread_create(&w[t].tid, NULL, work, &w[t]) != 0) {
      fprintf(stderr, "stress_mt: pthread_create failed\n");
      return 4;
    }
  }
  for (int t = 0; t < threads; t++) pthread_join(w[t].tid, NULL);
  uint64_t dt = bench_now_ns() - t0;
  for (size_t i = 0; i < sh.nslots; i++) drop(atomic_load(&sh.slots[i]));
  bench_thread_done();
  if (atomic_load(&bench_checksum_all) != atomic_load(&sh.made)) {
    fprintf(stderr, "bench: tags checked %016llx != tags made %016llx: a block was lost\n",
            (unsigned long long)atomic_load(&bench_checksum_all),
            (unsigned long long)atomic_load(&sh.made));
    return 3;
  }
  free(w);
  free(sh.slots);
  uint64_t n = sh.ops * (uint64_t)threads;
  bench_result("stress-8t", n ? (double)dt / (double)n : 0.0, "ns/step", n);
  return 0;
}
