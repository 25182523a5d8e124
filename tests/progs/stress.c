/* SPDX-License-Identifier: MIT */
/* stress — a time-bounded multithreaded torture test, run under
 * LD_PRELOAD=libsizeclass.so (`make stress STRESS_SECONDS=30`).
 *
 *   stress [-t threads] [-s seconds] [-n slots] [-m max_rss_mib] [-r round_threads] [-u]
 *
 * N worker threads (default 4) make blocks of 1..8192 bytes (malloc, calloc,
 * realloc, posix_memalign, aligned_alloc, memalign), fill each with a pattern
 * of its own tag, and trade them through shared slots: whichever thread
 * takes a block out of a slot verifies every byte and frees it, so most
 * frees cross threads. Workers also churn blocks locally, resize blocks in
 * place, and exit after a random number of operations; the main thread
 * replaces each one that exits, so arenas are handed on all the time. The
 * main thread samples the resident set. Meanwhile a driver thread runs
 * rounds of short-lived threads (-r per round, default 2, 0 = none; issue
 * 11's pattern): each round's threads verify and free every block their
 * predecessors handed over, make objects (8..512 B), arrays grown by
 * realloc (the prefix checked after each move) and buffers (4 KiB..256
 * KiB), every byte filled, free most of it in random order and hand the
 * rest to the next round; they exit, the next round starts on the arenas
 * they left. At the end every remaining block is verified and freed. Exit 0 and a summary line when
 * no byte was wrong and the resident set stayed under the bound (-m, default 512 MiB) and, on runs
 * of 10 s or more, did not keep growing after the first half; otherwise a
 * message and exit 1. -u runs without the preload check (for comparison
 * with the system allocator). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rss.h"

#define MAX_SIZE 8192
#define MAX_THREADS 64
#define LOCAL_MAX 64

/* A block in a slot: where, how big, its tag, and a checksum of the three. */
typedef struct {
  uint8_t *p;
  size_t n;
  uint64_t tag;
  uint64_t sum;
} rec_t;

static _Atomic(rec_t *) *slots;
static size_t nslots = 4096;
static atomic_bool stop;
static atomic_uint_fast64_t total_ops, total_verified, next_tag = 1;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

static void die(const char *what, const void *p, size_t n, size_t at) {
  fprintf(stderr, "stress: CORRUPTION: %s (block %p, %zu bytes, byte %zu)\n", what, p, n, at);
  fflush(stderr);
  _exit(1);
}

/* ---- patterns ------------------------------------------------------------- */

/* Word i/8 of a block's pattern; byte i is byte i%8 of that word (little
 * endian), so any prefix can be checked byte by byte. */
static uint64_t word_of(uint64_t tag, size_t i) { return (tag + i) * 0x9E3779B97F4A7C15ull; }
static uint8_t byte_of(uint64_t tag, size_t i) {
  return (uint8_t)(word_of(tag, i & ~(size_t)7) >> (8 * (i & 7)));
}

static void fill(uint8_t *p, size_t n, uint64_t tag) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = word_of(tag, i);
    memcpy(p + i, &w, 8);
  }
  for (; i < n; i++) p[i] = byte_of(tag, i);
}

/** Verify the first n bytes of p against tag; die on the first wrong one. */
static void verify(const uint8_t *p, size_t n, uint64_t tag) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    if (w != word_of(tag, i)) die("pattern mismatch", p, n, i);
  }
  for (; i < n; i++)
    if (p[i] != byte_of(tag, i)) die("pattern mismatch", p, n, i);
  atomic_fetch_add_explicit(&total_verified, 1, memory_order_relaxed);
}

static uint64_t rec_sum(const rec_t *r) {
  return (uint64_t)(uintptr_t)r->p ^ r->n * 0xBF58476D1CE4E5B9ull ^ r->tag ^ 0x5157E55ull;
}

/* ---- blocks and slots ----------------------------------------------------- */

/** A request size: mostly small (the classes), a quarter above 1024 B. */
static size_t pick_size(uint64_t *rs) {
  uint64_t r = rnd(rs);
  if ((r & 3) == 0) return 1025 + (size_t)(r >> 8) % (MAX_SIZE - 1024);
  size_t max = (size_t)16 << ((r >> 2) % 7); /* 16 .. 1024 */
  return 1 + (size_t)(r >> 16) % max;
}

static rec_t *make_rec(uint8_t *p, size_t n) {
  rec_t *r = malloc(sizeof(*r));
  if (r == NULL) die("malloc of a record failed", NULL, sizeof(*r), 0);
  r->p = p;
  r->n = n;
  r->tag = atomic_fetch_add_explicit(&next_tag, 1, memory_order_relaxed);
  fill(p, n, r->tag);
  r->sum = rec_sum(r);
  return r;
}

/** Verify a record and its block, then free both. */
static void drop_rec(rec_t *r) {
  if (r->sum != rec_sum(r)) die("record checksum", r, sizeof(*r), 0);
  verify(r->p, r->n, r->tag);
  if (malloc_usable_size(r->p) < r->n) die("usable size below request", r->p, r->n, 0);
  free(r->p);
  free(r);
}

/** Put r in slot i; whatever was there is verified and freed by us. */
static void put(size_t i, rec_t *r) {
  rec_t *old = atomic_exchange_explicit(&slots[i], r, memory_order_acq_rel);
  if (old != NULL) drop_rec(old);
}

static rec_t *take(size_t i) {
  return atomic_exchange_explicit(&slots[i], NULL, memory_order_acq_rel);
}

/** An aligned block of n bytes from one of the three aligned APIs. */
static uint8_t *aligned_block(uint64_t *rs, size_t n, size_t *align_out) {
  size_t align = (size_t)16 << (rnd(rs) % 9); /* 16 .. 4096 */
  void *p = NULL;
  switch (rnd(rs) % 3) {
    case 0:
      if (posix_memalign(&p, align, n) != 0) p = NULL;
      break;
    case 1:
      p = aligned_alloc(align, (n + align - 1) & ~(align - 1));
      break;
    default:
      p = memalign(align, n);
      break;
  }
  *align_out = align;
  return p;
}

/* ---- workers -------------------------------------------------------------- */

typedef struct {
  pthread_t thread;
  atomic_bool done;
  bool running;
  uint64_t seed;
} worker_t;

static void local_churn(uint64_t *rs) {
  uint8_t *ptrs[LOCAL_MAX];
  size_t sizes[LOCAL_MAX];
  uint64_t tags[LOCAL_MAX];
  unsigned k = 1 + (unsigned)(rnd(rs) % LOCAL_MAX);
  for (unsigned i = 0; i < k; i++) {
    sizes[i] = pick_size(rs);
    ptrs[i] = malloc(sizes[i]);
    if (ptrs[i] == NULL) die("malloc failed", NULL, sizes[i], 0);
    tags[i] = rnd(rs);
    fill(ptrs[i], sizes[i], tags[i]);
  }
  for (unsigned left = k; left > 0; left--) { /* free in random order */
    unsigned j = (unsigned)(rnd(rs) % left);
    verify(ptrs[j], sizes[j], tags[j]);
    free(ptrs[j]);
    ptrs[j] = ptrs[left - 1];
    sizes[j] = sizes[left - 1];
    tags[j] = tags[left - 1];
  }
}

static void one_op(uint64_t *rs) {
  size_t slot = (size_t)(rnd(rs) % nslots);
  unsigned what = (unsigned)(rnd(rs) % 100);
  if (what < 35) { /* malloc or calloc into a shared slot */
    size_t n = pick_size(rs);
    uint8_t *p;
    if (what < 28) {
      p = malloc(n);
    } else {
      p = calloc(1, n);
      for (size_t i = 0; p != NULL && i < n; i++)
        if (p[i] != 0) die("calloc block not zeroed", p, n, i);
    }
    if (p == NULL) die("allocation failed", NULL, n, 0);
    put(slot, make_rec(p, n));
  } else if (what < 50) { /* realloc a block someone made, maybe elsewhere */
    rec_t *r = take(slot);
    if (r == NULL) return;
    if (r->sum != rec_sum(r)) die("record checksum", r, sizeof(*r), 0);
    size_t n = pick_size(rs), keep = n < r->n ? n : r->n;
    uint8_t *q = realloc(r->p, n);
    if (q == NULL) die("realloc failed", r->p, n, 0);
    verify(q, keep, r->tag);
    free(r);
    put(slot, make_rec(q, n));
  } else if (what < 60) { /* aligned */
    size_t n = pick_size(rs), align;
    uint8_t *p = aligned_block(rs, n, &align);
    if (p == NULL) die("aligned allocation failed", NULL, n, align);
    if (((uintptr_t)p & (align - 1)) != 0) die("misaligned block", p, n, align);
    put(slot, make_rec(p, n));
  } else if (what < 80) { /* take and free: mostly a cross-thread free */
    rec_t *r = take(slot);
    if (r != NULL) drop_rec(r);
  } else if (what < 85) {
    local_churn(rs);
  } else { /* verify in place and put back */
    rec_t *r = take(slot);
    if (r == NULL) return;
    if (r->sum != rec_sum(r)) die("record checksum", r, sizeof(*r), 0);
    verify(r->p, r->n, r->tag);
    put(slot, r);
  }
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  uint64_t rs = w->seed | 1;
  uint64_t budget = 5000 + rnd(&rs) % 100000, ops = 0;
  while (ops < budget && !atomic_load_explicit(&stop, memory_order_relaxed)) {
    one_op(&rs);
    ops++;
  }
  atomic_fetch_add_explicit(&total_ops, ops, memory_order_relaxed);
  atomic_store_explicit(&w->done, true, memory_order_release);
  return NULL;
}

static bool start_worker(worker_t *w, uint64_t seed) {
  w->seed = seed;
  atomic_store(&w->done, false);
  w->running = pthread_create(&w->thread, NULL, worker_main, w) == 0;
  return w->running;
}

/* ---- rounds of short-lived threads ------------------------------------------- */

#define MAX_ROUND_THREADS 8
#define HAND_MAX 64   /* blocks one round thread hands to its successor */
#define ROUND_MAX 512 /* blocks one round thread makes */

/* A handed-over block: every byte follows its tag. */
typedef struct {
  uint8_t *p;
  size_t n;
  uint64_t tag;
} hand_t;

typedef struct {
  pthread_t thread;
  uint64_t seed;
  hand_t *in, *out; /* HAND_MAX each: from the previous round, to the next */
  size_t *n_in, *n_out;
} rounder_t;

static int round_threads = 2;
static atomic_uint_fast64_t total_rounds, total_handed;
static hand_t hands[2][MAX_ROUND_THREADS][HAND_MAX];
static size_t n_hands[2][MAX_ROUND_THREADS];

/** An array grown by realloc by 1.5x from 64 B past `target`, its new
 * bytes filled after every growth and the moved prefix verified. */
static hand_t grow_array(uint64_t *rs, size_t target) {
  hand_t a = {NULL, 64, rnd(rs)};
  a.p = malloc(a.n);
  if (a.p == NULL) die("malloc failed", NULL, a.n, 0);
  fill(a.p, a.n, a.tag);
  while (a.n < target) {
    size_t grown = a.n + a.n / 2;
    uint8_t *q = realloc(a.p, grown);
    if (q == NULL) die("realloc failed", a.p, grown, 0);
    verify(q, a.n, a.tag);
    for (size_t i = a.n; i < grown; i++) q[i] = byte_of(a.tag, i);
    a.p = q;
    a.n = grown;
  }
  return a;
}

static void *round_main(void *arg) {
  rounder_t *r = arg;
  uint64_t rs = r->seed | 1;
  for (size_t i = 0; i < *r->n_in; i++) { /* made by a thread that has exited */
    verify(r->in[i].p, r->in[i].n, r->in[i].tag);
    free(r->in[i].p);
  }
  *r->n_in = 0;
  hand_t b[ROUND_MAX];
  size_t n = 0, objects = 64 + (size_t)(rnd(&rs) % 256);
  for (size_t i = 0; i < objects; i++, n++) {
    b[n].n = 8 + (size_t)(rnd(&rs) % 505);
    b[n].tag = rnd(&rs);
    b[n].p = malloc(b[n].n);
    if (b[n].p == NULL) die("malloc failed", NULL, b[n].n, 0);
    fill(b[n].p, b[n].n, b[n].tag);
  }
  for (int i = 0; i < 2; i++) b[n++] = grow_array(&rs, 2048 + (size_t)(rnd(&rs) % (62 * 1024)));
  for (size_t i = 0, k = 1 + (size_t)(rnd(&rs) % 4); i < k; i++, n++) {
    size_t lo = (size_t)4096 << (rnd(&rs) % 6); /* 4 KiB .. 128 KiB */
    b[n].n = lo + (size_t)(rnd(&rs) % lo);
    b[n].tag = rnd(&rs);
    b[n].p = malloc(b[n].n);
    if (b[n].p == NULL) die("malloc failed", NULL, b[n].n, 0);
    fill(b[n].p, b[n].n, b[n].tag);
  }
  for (size_t left = n; left > 0; left--) { /* in random order: hand on 1 in 8, free the rest */
    size_t j = (size_t)(rnd(&rs) % left);
    if ((rnd(&rs) & 7) == 0 && *r->n_out < HAND_MAX) {
      r->out[(*r->n_out)++] = b[j];
      atomic_fetch_add_explicit(&total_handed, 1, memory_order_relaxed);
    } else {
      verify(b[j].p, b[j].n, b[j].tag);
      free(b[j].p);
    }
    b[j] = b[left - 1];
  }
  return NULL;
}

/** The driver: rounds of round_threads short-lived threads until stop. */
static void *rounds_driver(void *arg) {
  uint64_t seed = (uint64_t)(uintptr_t)arg, round;
  rounder_t r[MAX_ROUND_THREADS];
  for (round = 0; !atomic_load_explicit(&stop, memory_order_relaxed); round++) {
    int cur = (int)(round & 1);
    for (int t = 0; t < round_threads; t++) {
      r[t] = (rounder_t){.seed = rnd(&seed),
                         .in = hands[cur][t],
                         .out = hands[!cur][t],
                         .n_in = &n_hands[cur][t],
                         .n_out = &n_hands[!cur][t]};
      if (pthread_create(&r[t].thread, NULL, round_main, &r[t]) != 0)
        die("pthread_create failed for a round thread", NULL, 0, 0);
    }
    for (int t = 0; t < round_threads; t++) pthread_join(r[t].thread, NULL);
    atomic_fetch_add_explicit(&total_rounds, 1, memory_order_relaxed);
  }
  for (int h = 0; h < 2; h++) /* what the last round handed over */
    for (int t = 0; t < round_threads; t++) {
      for (size_t i = 0; i < n_hands[h][t]; i++) {
        verify(hands[h][t][i].p, hands[h][t][i].n, hands[h][t][i].tag);
        free(hands[h][t][i].p);
      }
      n_hands[h][t] = 0;
    }
  return NULL;
}

/* ---- main ------------------------------------------------------------------- */

int main(int argc, char **argv) {
  int nthreads = 4, opt;
  double seconds = 10;
  size_t max_rss_mib = 512;
  bool unpreloaded = false;
  const char *env_s = getenv("STRESS_SECONDS");
  if (env_s != NULL && env_s[0] != 0) seconds = atof(env_s);
  while ((opt = getopt(argc, argv, "t:s:n:m:r:u")) != -1) {
    switch (opt) {
      case 't':
        nthreads = atoi(optarg);
        break;
      case 's':
        seconds = atof(optarg);
        break;
      case 'n':
        nslots = (size_t)atol(optarg);
        break;
      case 'm':
        max_rss_mib = (size_t)atol(optarg);
        break;
      case 'r':
        round_threads = atoi(optarg);
        break;
      case 'u':
        unpreloaded = true;
        break;
      default:
        fprintf(stderr,
                "usage: stress [-t threads] [-s seconds] [-n slots] [-m mib] [-r round_threads] "
                "[-u]\n");
        return 2;
    }
  }
  if (nthreads < 1 || nthreads > MAX_THREADS || nslots == 0 || seconds <= 0 || round_threads < 0 ||
      round_threads > MAX_ROUND_THREADS) {
    fprintf(stderr, "stress: bad arguments\n");
    return 2;
  }
  bool (*owns)(const void *) = (bool (*)(const void *))dlsym(RTLD_DEFAULT, "sc_owns");
  if (!unpreloaded && owns == NULL) {
    fprintf(stderr, "stress: libsizeclass is not preloaded (use -u to run without it)\n");
    return 2;
  }
  slots = calloc(nslots, sizeof(*slots));
  if (slots == NULL) return 2;

  worker_t workers[MAX_THREADS] = {0};
  uint64_t seed = 0x5eed ^ (uint64_t)time(NULL), spawned = 0;
  for (int i = 0; i < nthreads; i++)
    if (start_worker(&workers[i], rnd(&seed))) spawned++;
  pthread_t driver;
  bool rounds_on = round_threads > 0 &&
                   pthread_create(&driver, NULL, rounds_driver, (void *)(uintptr_t)rnd(&seed)) == 0;
  if (round_threads > 0 && !rounds_on)
    die("pthread_create failed for the rounds driver", NULL, 0, 0);

  double start = now_s(), half = start + seconds / 2, end = start + seconds;
  size_t rss_first = 0, rss_second = 0;
  while (now_s() < end) {
    usleep(10000);
    size_t rss = rss_resident_bytes();
    if (now_s() < half) {
      if (rss > rss_first) rss_first = rss;
    } else if (rss > rss_second) {
      rss_second = rss;
    }
    for (int i = 0; i < nthreads; i++) { /* replace the workers that exited */
      if (!workers[i].running || !atomic_load_explicit(&workers[i].done, memory_order_acquire))
        continue;
      pthread_join(workers[i].thread, NULL);
      workers[i].running = false;
      if (start_worker(&workers[i], rnd(&seed))) spawned++;
    }
  }
  atomic_store(&stop, true);
  for (int i = 0; i < nthreads; i++)
    if (workers[i].running) pthread_join(workers[i].thread, NULL);
  if (rounds_on) pthread_join(driver, NULL);
  size_t held = 0;
  for (size_t i = 0; i < nslots; i++) {
    rec_t *r = take(i);
    if (r != NULL) {
      held++;
      drop_rec(r);
    }
  }
  free(slots);

  size_t peak = rss_first > rss_second ? rss_first : rss_second;
  printf(
      "stress: %d threads, %.0f s, %llu threads started, %llu ops, %llu blocks verified, "
      "%zu left in slots, peak RSS %zu MiB (first half %zu, second half %zu); %llu rounds of %d "
      "short-lived threads, %llu blocks handed between rounds\n",
      nthreads, seconds, (unsigned long long)spawned, (unsigned long long)total_ops,
      (unsigned long long)total_verified, held, peak >> 20, rss_first >> 20, rss_second >> 20,
      (unsigned long long)total_rounds, round_threads, (unsigned long long)total_handed);
  if (peak > max_rss_mib << 20) {
    fprintf(stderr, "stress: RSS %zu MiB over the bound of %zu MiB\n", peak >> 20, max_rss_mib);
    return 1;
  }
  /* Live data is bounded by the slots: once warm, the footprint must not
   * keep growing (it would if blocks or arenas leaked). */
  if (seconds >= 10 && rss_second > rss_first + rss_first / 2 + ((size_t)64 << 20)) {
    fprintf(stderr, "stress: RSS grew from %zu MiB to %zu MiB after warm-up\n", rss_first >> 20,
            rss_second >> 20);
    return 1;
  }
  if (total_ops == 0 || total_verified == 0 || (round_threads > 0 && total_rounds == 0)) {
    fprintf(stderr, "stress: nothing ran\n");
    return 1;
  }
  printf("stress: ok\n");
  return 0;
}
