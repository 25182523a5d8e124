/* SPDX-License-Identifier: MIT */
/* test_core_threads.c — the core allocator across threads: blocks freed by
 * other threads go home and are reused, short-lived threads hand their arenas
 * on (bounded footprint), and fork while other threads allocate neither
 * deadlocks nor leaves the child unable to allocate. Linked with
 * libsizeclass.a: every malloc here, Criterion's included, is ours. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core_util.h"
#include "core/internal.h"
#include "core/purge.h"
#include "sizeclass.h"

/* ---- counters summed over arenas ---------------------------------------- */

typedef struct {
  uint64_t allocs, frees, remote_frees, fresh_carves, pages;
} totals_t;

/** Class counters summed over every arena (read after the threads joined),
 * as the default statistics keep them. */
static totals_t totals(void) {
  struct sc_stats st;
  sc_stats_get(&st);
  totals_t t = {st.totals.allocs, st.totals.frees, st.totals.remote_frees, st.totals.fresh_carves,
                st.totals.pages};
  return t;
}

/* ---- cross-thread frees --------------------------------------------------- */

/* Thread i allocates XT_PER blocks and passes each, filled with a pattern,
 * through a single-producer single-consumer ring to thread i+1, which checks
 * and frees it. */
enum { XT_THREADS = 4, XT_PER = 250000, XT_RING = 1024 };

typedef struct {
  void *p;
  uint32_t n;
  uint64_t seed;
} xt_slot_t;

typedef struct {
  xt_slot_t slot[XT_RING];
  _Atomic uint64_t head; /* next slot the consumer reads */
  _Atomic uint64_t tail; /* next slot the producer writes */
  char pad[64];
} xt_ring_t;

static xt_ring_t xt_rings[XT_THREADS];
static _Atomic uint64_t xt_bad, xt_consumed;

static void *xt_worker(void *arg) {
  unsigned id = (unsigned)(uintptr_t)arg;
  xt_ring_t *out = &xt_rings[id];
  xt_ring_t *in = &xt_rings[(id + XT_THREADS - 1) % XT_THREADS];
  uint64_t rng = 0x1234567ull + id, produced = 0, consumed = 0;
  while (produced < XT_PER || consumed < XT_PER) {
    bool progress = false;
    /* Produce a burst. */
    uint64_t tail = atomic_load_explicit(&out->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&out->head, memory_order_acquire);
    for (int k = 0; k < 64 && produced < XT_PER && tail - head < XT_RING; k++) {
      uint32_t n = 1 + (uint32_t)(cu_rand(&rng) % 1024);
      void *p = malloc(n);
      if (p == NULL) {
        atomic_fetch_add(&xt_bad, 1);
        produced++;
        continue;
      }
      uint64_t seed = ((uint64_t)id << 32) | produced;
      cu_fill(p, n, seed);
      xt_slot_t *s = &out->slot[tail % XT_RING];
      s->p = p;
      s->n = n;
      s->seed = seed;
      tail++;
      produced++;
      atomic_store_explicit(&out->tail, tail, memory_order_release);
      progress = true;
    }
    /* Consume a burst: check and free blocks made by the previous thread. */
    head = atomic_load_explicit(&in->head, memory_order_relaxed);
    tail = atomic_load_explicit(&in->tail, memory_order_acquire);
    for (int k = 0; k < 64 && head < tail; k++) {
      xt_slot_t *s = &in->slot[head % XT_RING];
      uint32_t n = s->n;
      if (!cu_check(s->p, n, s->seed) || malloc_usable_size(s->p) < n) atomic_fetch_add(&xt_bad, 1);
      free(s->p);
      head++;
      consumed++;
      atomic_store_explicit(&in->head, head, memory_order_release);
      progress = true;
    }
    if (!progress) sched_yield();
  }
  atomic_fetch_add(&xt_consumed, consumed);
  return NULL;
}

Test(core_threads, cross_thread_frees_go_home_and_are_reused, .timeout = 120) {
  totals_t before = totals();
  pthread_t t[XT_THREADS];
  for (unsigned i = 0; i < XT_THREADS; i++)
    cr_assert_eq(pthread_create(&t[i], NULL, xt_worker, (void *)(uintptr_t)i), 0);
  for (unsigned i = 0; i < XT_THREADS; i++) pthread_join(t[i], NULL);
  totals_t after = totals();
  uint64_t total = (uint64_t)XT_THREADS * XT_PER;
  cr_assert_eq(atomic_load(&xt_bad), 0, "%lu blocks came back damaged or NULL",
               (unsigned long)atomic_load(&xt_bad));
  cr_assert_eq(atomic_load(&xt_consumed), total);
  uint64_t remote = after.remote_frees - before.remote_frees;
  uint64_t fresh = after.fresh_carves - before.fresh_carves;
  uint64_t pages = after.pages - before.pages;
  cr_assert_geq(remote, total, "only %lu of %lu frees were counted as remote",
                (unsigned long)remote, (unsigned long)total);
  cr_assert_geq(after.frees - before.frees, total);
  cr_assert_geq(after.allocs - before.allocs, total);
  /* Blocks freed remotely went back to their owners and were handed out
   * again: if they were lost, every allocation would be a fresh carve. */
  cr_assert_lt(fresh, total / 8, "%lu of %lu blocks were fresh carves: remote frees not reused",
               (unsigned long)fresh, (unsigned long)total);
  cr_assert_lt(pages * SC_PAGE_SIZE, (size_t)128 << 20, "%lu pages for a bounded live set",
               (unsigned long)pages);
}

/* ---- thread churn ------------------------------------------------------------ */

/* Blocks a thread leaves behind for a later thread to check and free. */
enum { CH_THREADS = 10000, CH_WAVE = 4, CH_LEFT = 64, CH_KEEP = 8 };
typedef struct {
  void *p;
  size_t n;
  uint64_t seed;
} ch_block_t;
static ch_block_t ch_left[CH_LEFT];
static pthread_mutex_t ch_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t ch_bad;
static pthread_key_t ch_key;

/** A user TSD destructor that frees after our arena may have been handed on. */
static void ch_key_destructor(void *p) {
  if (!cu_check(p, 24, 99)) atomic_fetch_add(&ch_bad, 1);
  free(p);
}

static void *ch_worker(void *arg) {
  uint64_t id = (uint64_t)(uintptr_t)arg;
  uint64_t rng = id * 0x9E3779B97F4A7C15ull + 1;
  ch_block_t mine[24];
  for (int i = 0; i < 24; i++) {
    size_t n = 1 + cu_rand(&rng) % 1100;
    mine[i].p = malloc(n);
    mine[i].n = n;
    mine[i].seed = (id << 8) | (uint64_t)i;
    if (mine[i].p == NULL) {
      atomic_fetch_add(&ch_bad, 1);
      return NULL;
    }
    cu_fill(mine[i].p, n, mine[i].seed);
  }
  void *tsd = malloc(24);
  cu_fill(tsd, 24, 99);
  pthread_setspecific(ch_key, tsd);
  /* Free most of our own blocks; swap the rest with those an earlier thread
   * left (most of which belong to arenas whose threads exited). */
  for (int i = CH_KEEP; i < 24; i++) {
    if (!cu_check(mine[i].p, mine[i].n, mine[i].seed)) atomic_fetch_add(&ch_bad, 1);
    free(mine[i].p);
  }
  for (int i = 0; i < CH_KEEP; i++) {
    pthread_mutex_lock(&ch_lock);
    ch_block_t *slot = &ch_left[cu_rand(&rng) % CH_LEFT];
    ch_block_t old = *slot;
    *slot = mine[i];
    pthread_mutex_unlock(&ch_lock);
    if (old.p != NULL) {
      if (!cu_check(old.p, old.n, old.seed)) atomic_fetch_add(&ch_bad, 1);
      free(old.p);
    }
  }
  return NULL;
}

Test(core_threads, thread_churn_keeps_footprint_bounded, .timeout = 120) {
  cr_assert_eq(pthread_key_create(&ch_key, ch_key_destructor), 0);
  /* Warm up one wave so the baseline includes a few thread stacks. */
  pthread_t t[CH_WAVE];
  for (int i = 0; i < CH_WAVE; i++) pthread_create(&t[i], NULL, ch_worker, (void *)(uintptr_t)i);
  for (int i = 0; i < CH_WAVE; i++) pthread_join(t[i], NULL);
  size_t rss0 = rss_resident_bytes(), vm0 = rss_virtual_bytes();
  uint64_t created0, live0, adopted0;
  sc__arena_counts(&created0, &live0, &adopted0);

  for (int w = 1; w < CH_THREADS / CH_WAVE; w++) {
    for (int i = 0; i < CH_WAVE; i++)
      cr_assert_eq(pthread_create(&t[i], NULL, ch_worker, (void *)(uintptr_t)(w * CH_WAVE + i)), 0);
    for (int i = 0; i < CH_WAVE; i++) pthread_join(t[i], NULL);
  }
  size_t rss1 = rss_resident_bytes(), vm1 = rss_virtual_bytes();
  uint64_t created, live, adopted;
  sc__arena_counts(&created, &live, &adopted);
  cr_assert_eq(atomic_load(&ch_bad), 0, "%lu blocks damaged", (unsigned long)atomic_load(&ch_bad));
  /* Arenas are handed on: a handful exist however many threads ran. */
  cr_assert_leq(created, 2 * CH_WAVE + 4, "%lu arenas created for %d threads (%lu adopted)",
                (unsigned long)created, CH_THREADS, (unsigned long)adopted);
  cr_assert_leq(live, 2, "%lu arenas still owned after every worker exited", (unsigned long)live);
  cr_assert_geq(adopted - adopted0, (uint64_t)CH_THREADS - CH_THREADS / CH_WAVE,
                "only %lu adoptions", (unsigned long)(adopted - adopted0));
  /* Footprint: far below one leaked segment per thread. */
  cr_assert_lt(rss1 > rss0 ? rss1 - rss0 : 0, (size_t)64 << 20, "RSS grew from %zu to %zu", rss0,
               rss1);
  cr_assert_lt(vm1 > vm0 ? vm1 - vm0 : 0, (size_t)512 << 20, "address space grew from %zu to %zu",
               vm0, vm1);
  for (int i = 0; i < CH_LEFT; i++) {
    if (ch_left[i].p == NULL) continue;
    cr_assert(cu_check(ch_left[i].p, ch_left[i].n, ch_left[i].seed));
    free(ch_left[i].p);
  }
}

/* glibc frees some per-thread buffers (strerror's "Unknown error N", dlerror
 * text) after every TSD destructor ran, i.e. after our arena was handed on. */
static void *exit_worker(void *arg) {
  int i = (int)(uintptr_t)arg;
  void *p = cu_escape(malloc(100));
  free(p);
  const char *msg = strerror(100000 + i); /* malloc'd, freed at thread exit */
  if (strncmp(msg, "Unknown error", 13) != 0) return (void *)1;
  if (i % 4 == 0 && dlopen("/nonexistent/libsizeclass-test.so", RTLD_NOW) == NULL) (void)dlerror();
  return NULL;
}

/* A thread that only makes aligned blocks (above 64 B: pages of colour 0,
 * src/core/refill.c) which another thread frees gets them back: its
 * aligned path drains its remote list before it makes a page, so its
 * pages stay few however many rounds pass. */
enum { AL_ROUNDS = 200, AL_BATCH = 1000 };
static void *al_batch[AL_BATCH];
static void *al_free_batch(void *arg) {
  (void)arg;
  for (int i = 0; i < AL_BATCH; i++) free(al_batch[i]);
  return NULL;
}
Test(core_threads, aligned_blocks_freed_elsewhere_come_back, .timeout = 120) {
  for (int round = 0; round < AL_ROUNDS; round++) {
    for (int i = 0; i < AL_BATCH; i++) {
      al_batch[i] = cu_escape(aligned_alloc(128, 100));
      cr_assert(al_batch[i] != NULL && (uintptr_t)al_batch[i] % 128 == 0);
    }
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, al_free_batch, NULL), 0);
    pthread_join(t, NULL);
  }
  struct sc_stats st;
  sc_stats_get(&st);
  /* 1000 live blocks of 128 B fill two pages; never drained, the rounds
   * would have taken 400. */
  cr_assert_leq(st.classes[3].pages, 16, "class 128 B: %" PRIu64 " pages after %d rounds",
                st.classes[3].pages, AL_ROUNDS);
}

Test(core_threads, frees_after_thread_exit_hand_off_do_not_leak_arenas, .timeout = 60) {
  uint64_t created0, live0, adopted0, created, live, adopted;
  sc__arena_counts(&created0, &live0, &adopted0);
  for (int i = 0; i < 2000; i++) {
    pthread_t t;
    void *ret;
    cr_assert_eq(pthread_create(&t, NULL, exit_worker, (void *)(uintptr_t)i), 0);
    pthread_join(t, &ret);
    cr_assert_null(ret);
  }
  sc__arena_counts(&created, &live, &adopted);
  cr_assert_leq(created - created0, 4, "%lu arenas created by 2000 sequential threads",
                (unsigned long)(created - created0));
  cr_assert_leq(live, live0 + 1, "%lu arenas still owned (%lu before)", (unsigned long)live,
                (unsigned long)live0);
}

/* ---- fork under load ----------------------------------------------------------- */

enum { FK_WORKERS = 3, FK_SLOTS = 256, FK_SHARED = 64, FK_FORKS = 100 };
static _Atomic int fk_stop;
static _Atomic uint64_t fk_bad, fk_ops;
static _Atomic(uintptr_t) fk_shared[FK_SHARED]; /* blocks any thread may free */

/* A shared block starts with its size and seed, then the pattern. */
static void *fk_make(size_t n, uint64_t seed) {
  if (n < 16) n = 16;
  uint64_t *p = malloc(n);
  if (p == NULL) return NULL;
  p[0] = n;
  p[1] = seed;
  cu_fill(p + 2, n - 16, seed);
  return p;
}
static bool fk_ok(const void *b) {
  const uint64_t *p = b;
  return p[0] >= 16 && p[0] <= 4096 && cu_check(p + 2, p[0] - 16, p[1]);
}

/* ---- an owner that naps while others free its blocks (core/reclaim.c) ---------- */

/* The owner makes blocks of every class, hands most to the workers through
 * a shared stack and keeps the rest, then naps: the workers free what it
 * made (remote frees) while allocating and freeing their own, and their
 * purge steps give back the owner's pages whose blocks they hold wholly.
 * The owner wakes, checks and frees what it kept, and makes more, drawing
 * on its reclaimed pages, many times over; every block keeps its contents
 * and the reclaim runs. */
enum { NP_ROUNDS = 40, NP_BLOCKS = 4096, NP_KEEP = 256, NP_WORKERS = 2, NP_MINE = 2048 };
static void *np_stack[NP_ROUNDS * NP_BLOCKS];
static size_t np_top;
static pthread_mutex_t np_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int np_done;
static _Atomic uint64_t np_bad, np_freed;

static void *np_take(void) {
  pthread_mutex_lock(&np_lock);
  void *p = np_top > 0 ? np_stack[--np_top] : NULL;
  pthread_mutex_unlock(&np_lock);
  return p;
}

static void *np_worker(void *arg) {
  uint64_t rng = 99 + (uintptr_t)arg;
  static _Thread_local void *mine[NP_MINE];
  for (;;) {
    void *p = np_take();
    if (p == NULL) {
      if (atomic_load(&np_done)) break;
    } else {
      if (!fk_ok(p)) atomic_fetch_add(&np_bad, 1);
      free(p);
      atomic_fetch_add_explicit(&np_freed, 1, memory_order_relaxed);
    }
    /* Their own churn: slow paths, and so purge steps. */
    uint64_t r = cu_rand(&rng);
    unsigned i = (unsigned)(r % NP_MINE);
    if (mine[i] != NULL && !fk_ok(mine[i])) atomic_fetch_add(&np_bad, 1);
    free(mine[i]);
    mine[i] = fk_make(16 + (r >> 16) % 1009, r);
  }
  for (unsigned i = 0; i < NP_MINE; i++) {
    if (mine[i] != NULL && !fk_ok(mine[i])) atomic_fetch_add(&np_bad, 1);
    free(mine[i]);
  }
  return NULL;
}

Test(core_threads, an_owner_that_naps_while_others_free_keeps_its_blocks, .timeout = 120) {
  sc__purge_configure(3600000, 64); /* nothing purged but what the reclaim gives back */
  sc_purge_stats_t s0;
  sc__purge_stats(&s0);
  pthread_t w[NP_WORKERS];
  for (uintptr_t i = 0; i < NP_WORKERS; i++)
    cr_assert_eq(pthread_create(&w[i], NULL, np_worker, (void *)i), 0);
  static void *kept[NP_KEEP];
  uint64_t rng = 5, made = 0;
  for (unsigned round = 0; round < NP_ROUNDS; round++) {
    for (unsigned k = 0; k < NP_KEEP; k++) {
      if (kept[k] != NULL && !fk_ok(kept[k])) atomic_fetch_add(&np_bad, 1);
      free(kept[k]);
      kept[k] = NULL;
    }
    /* What it keeps first, then what it hands on: most pages of the
     * latter hold none of the former. */
    for (unsigned k = 0; k < NP_KEEP; k++) {
      uint64_t r = cu_rand(&rng);
      kept[k] = fk_make(16 + (r >> 16) % 1009, r);
      cr_assert_not_null(kept[k]);
    }
    for (unsigned b = 0; b < NP_BLOCKS; b++) {
      uint64_t r = cu_rand(&rng);
      void *p = fk_make(16 + (r >> 16) % 1009, r);
      cr_assert_not_null(p);
      made++;
      pthread_mutex_lock(&np_lock);
      np_stack[np_top++] = p;
      pthread_mutex_unlock(&np_lock);
    }
    struct timespec nap = {0, 12000000}; /* longer than SC_RECLAIM_IDLE_NS */
    nanosleep(&nap, NULL);
  }
  atomic_store(&np_done, 1);
  for (unsigned i = 0; i < NP_WORKERS; i++) cr_assert_eq(pthread_join(w[i], NULL), 0);
  for (unsigned k = 0; k < NP_KEEP; k++) {
    if (kept[k] != NULL && !fk_ok(kept[k])) atomic_fetch_add(&np_bad, 1);
    free(kept[k]);
  }
  cr_assert_eq(atomic_load(&np_bad), 0, "%" PRIu64 " blocks lost their contents",
               atomic_load(&np_bad));
  cr_assert_eq(atomic_load(&np_freed), made);
  sc_purge_stats_t s1;
  sc__purge_stats(&s1);
  cr_assert_gt(s1.pages_purged, s0.pages_purged, "the workers gave back none of the owner's pages");
}

static void *fk_short_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < 50; i++) free(cu_escape(malloc(1 + (size_t)i * 37)));
  return NULL;
}

static void *fk_worker(void *arg) {
  uint64_t rng = 777 + (uintptr_t)arg;
  void *mine[FK_SLOTS] = {0};
  uint64_t seq = 0;
  while (!atomic_load_explicit(&fk_stop, memory_order_relaxed)) {
    uint64_t r = cu_rand(&rng);
    unsigned i = (unsigned)(r % FK_SLOTS);
    if (mine[i] != NULL) {
      if (!fk_ok(mine[i])) atomic_fetch_add(&fk_bad, 1);
      if (r & 0x100) {
        free(mine[i]);
        mine[i] = NULL;
      } else { /* pass it on: another thread (or a child) frees it */
        uintptr_t old = atomic_exchange(&fk_shared[(r >> 9) % FK_SHARED], (uintptr_t)mine[i]);
        mine[i] = NULL;
        if (old != 0) {
          if (!fk_ok((void *)old)) atomic_fetch_add(&fk_bad, 1);
          free((void *)old);
        }
      }
    } else {
      size_t n = (r >> 20) % 8 == 0 ? 1025 + (r >> 32) % 3000 : 1 + (r >> 32) % 1024;
      mine[i] = fk_make(n, seq++);
    }
    /* Now and then a short-lived thread: arena hand-on takes the lock fork
     * must hold. */
    if ((uintptr_t)arg == 0 && (r & 0xfff) == 0) {
      pthread_t t;
      if (pthread_create(&t, NULL, fk_short_thread, NULL) == 0) pthread_join(t, NULL);
    }
    atomic_fetch_add_explicit(&fk_ops, 1, memory_order_relaxed);
  }
  for (unsigned i = 0; i < FK_SLOTS; i++) {
    if (mine[i] != NULL && !fk_ok(mine[i])) atomic_fetch_add(&fk_bad, 1);
    free(mine[i]);
  }
  return NULL;
}

static void *child_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < 200; i++) {
    void *p = fk_make(16 + (size_t)i * 13, (uint64_t)i);
    if (p == NULL || !fk_ok(p)) return (void *)1;
    free(p);
  }
  return NULL;
}

/** What a child does at once after fork: allocate, check, free, exit. */
static int child_body(unsigned iter) {
  enum { N = 1000 };
  void *blocks[N];
  for (unsigned i = 0; i < N; i++) {
    size_t n = i % 10 == 0 ? 1025 + i * 3 : 16 + (i * 37 + iter) % 1008;
    blocks[i] = fk_make(n, i + iter);
    if (blocks[i] == NULL) return 2;
  }
  for (unsigned i = 0; i < N; i++) {
    if (!fk_ok(blocks[i])) return 3;
    free(blocks[i]);
  }
  /* Free blocks the parent's other threads made (remote frees). */
  for (unsigned i = 0; i < FK_SHARED; i += 2) {
    uintptr_t b = atomic_exchange(&fk_shared[i], 0);
    if (b != 0) {
      if (!fk_ok((void *)b)) return 4;
      free((void *)b);
    }
  }
  void *p = NULL;
  if (posix_memalign(&p, 256, 300) != 0 || !sc_owns(p)) return 5;
  free(p);
  pthread_t t;
  void *ret = (void *)1;
  if (iter % 10 == 0) {
    if (pthread_create(&t, NULL, child_thread, NULL) != 0) return 6;
    pthread_join(t, &ret);
    if (ret != NULL) return 7;
  }
  return 0;
}

/* Some forks come from a fresh thread with no arena yet: its child's first
 * malloc must take the arena lock, which fork may have caught held. */
typedef struct {
  unsigned iter;
  int rc;
} fork_job_t;

static void *fork_from_thread(void *arg) {
  fork_job_t *job = arg;
  pid_t pid = fork();
  if (pid == 0) _exit(child_body(job->iter));
  job->rc = pid < 0 ? -1 : pr_wait_child(pid, 20);
  return NULL;
}

Test(core_threads, fork_under_load_never_deadlocks, .timeout = 120) {
  pthread_t t[FK_WORKERS];
  for (unsigned i = 0; i < FK_WORKERS; i++)
    cr_assert_eq(pthread_create(&t[i], NULL, fk_worker, (void *)(uintptr_t)i), 0);
  while (atomic_load(&fk_ops) < 10000) sched_yield();
  int failures = 0, deadlocks = 0, last_rc = 0;
  for (unsigned i = 0; i < FK_FORKS; i++) {
    int rc;
    if (i % 4 == 0) {
      fork_job_t job = {i, -1};
      pthread_t ft;
      cr_assert_eq(pthread_create(&ft, NULL, fork_from_thread, &job), 0);
      pthread_join(ft, NULL);
      rc = job.rc;
    } else {
      pid_t pid = fork();
      cr_assert_geq(pid, 0, "fork failed");
      if (pid == 0) _exit(child_body(i));
      rc = pr_wait_child(pid, 20);
    }
    if (rc == -2)
      deadlocks++;
    else if (rc != 0) {
      failures++;
      last_rc = rc;
    }
    /* Keep forking while the workers are mid-operation. */
    for (int k = 0; k < 20; k++) sched_yield();
  }
  atomic_store(&fk_stop, 1);
  for (unsigned i = 0; i < FK_WORKERS; i++) pthread_join(t[i], NULL);
  for (unsigned i = 0; i < FK_SHARED; i++) {
    uintptr_t b = atomic_exchange(&fk_shared[i], 0);
    if (b != 0) {
      cr_assert(fk_ok((void *)b));
      free((void *)b);
    }
  }
  cr_assert_eq(deadlocks, 0, "%d of %d children hung (deadlock after fork)", deadlocks, FK_FORKS);
  cr_assert_eq(failures, 0, "%d of %d children failed (last exit code %d)", failures, FK_FORKS,
               last_rc);
  cr_assert_eq(atomic_load(&fk_bad), 0, "%lu blocks damaged in the parent",
               (unsigned long)atomic_load(&fk_bad));
}

/* Deterministic variant: fork while another thread holds the arena registry
 * lock (sc__arenas_foreach holds it around its callback, as the statistics
 * dump does). The child's new thread needs that lock for its arena. */
static _Atomic int held_state; /* 1 = callback holds the lock, 2 = may return */

static void hold_lock_cb(sc_arena_t *a, void *ctx) {
  (void)a;
  if (*(int *)ctx) return; /* only once */
  *(int *)ctx = 1;
  atomic_store(&held_state, 1);
  double until = pr_now() + 0.2;
  while (atomic_load(&held_state) != 2 && pr_now() < until) usleep(1000);
}

static void *hold_lock_thread(void *arg) {
  (void)arg;
  int once = 0;
  sc__arenas_foreach(hold_lock_cb, &once);
  return NULL;
}

static void *child_new_thread(void *arg) {
  (void)arg;
  void *p = fk_make(200, 5);
  bool ok = p != NULL && sc_owns(p) && fk_ok(p);
  free(p);
  return ok ? NULL : (void *)1;
}

/** In a forked child: run fn on a new thread, and exit 0 when it returned
 * NULL (3 when not, 2 when no thread started). */
static void exit_after_thread(void *(*fn)(void *)) {
  pthread_t t;
  void *ret = (void *)1;
  if (pthread_create(&t, NULL, fn, NULL) != 0) _exit(2);
  pthread_join(t, &ret);
  _exit(ret == NULL ? 0 : 3);
}

Test(core_threads, fork_while_arena_lock_held, .timeout = 60) {
  for (int round = 0; round < 5; round++) {
    atomic_store(&held_state, 0);
    pthread_t holder;
    cr_assert_eq(pthread_create(&holder, NULL, hold_lock_thread, NULL), 0);
    while (atomic_load(&held_state) != 1) sched_yield();
    /* fork's prepare handler waits for the lock; the holder lets go soon. */
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) exit_after_thread(child_new_thread);
    atomic_store(&held_state, 2);
    int rc = pr_wait_child(pid, 10);
    pthread_join(holder, NULL);
    cr_assert_neq(rc, -2, "child hung: fork inherited the arena lock held");
    cr_assert_eq(rc, 0, "child failed with %d", rc);
  }
}

/* A fork handler that allocates, registered before the library's own (a
 * shared library's constructor does that when libsizeclass.a is linked into
 * the program). Its prepare step runs after ours, while we hold the arena
 * registry lock; if the forking thread never allocated before, that
 * allocation needs an arena. Armed only by the test below. */
static _Atomic int alloc_in_prepare;

static void prepare_allocates(void) {
  if (atomic_load(&alloc_in_prepare)) free(cu_escape(malloc(24)));
}

__attribute__((constructor(101))) static void register_prepare_allocates(void) {
  pthread_atfork(prepare_allocates, NULL, NULL);
}

/* A thread that has not allocated yet forks. */
static void *fork_first_thing(void *arg) {
  (void)arg;
  atomic_store(&alloc_in_prepare, 1);
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  return (void *)(intptr_t)(pid < 0 ? -1 : pr_wait_child(pid, 10));
}

Test(core_threads, fork_from_a_thread_without_arena_with_allocating_handler, .timeout = 60) {
  /* In a child process, so that a deadlock is a timeout, not a hung suite. */
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) exit_after_thread(fork_first_thing);
  int rc = pr_wait_child(pid, 10);
  cr_assert_neq(rc, -2, "fork deadlocked: a prepare handler allocated under the arena lock");
  cr_assert_eq(rc, 0, "child failed with %d", rc);
}
