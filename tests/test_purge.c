/* SPDX-License-Identifier: MIT */
/* test_purge.c — memory goes back to the OS (issue 7, docs/footprint.md):
 * a freed burst settles under light load within a bounded time,
 * malloc_trim/sc_trim return everything at once, exited threads' memory is
 * returnable, steps are bounded, blocks still in use (or waiting in a remote
 * list) are never purged, and the settings parse as documented. Linked with
 * libsizeclass.a: every malloc here is ours. Each test runs in its own
 * process, so sc__purge_configure() settings do not leak between tests. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include "core_util.h"
#include "core/internal.h"
#include "core/purge.h"
#include "util/stream.h"
#include "sizeclass.h"

#define MIB ((size_t)1 << 20)
/** A delay no test outlives: nothing is purged but by a trim. */
#define NEVER_MS 3600000

/** A singly linked list of `bytes` worth of blocks of n bytes (>= 16; each
 * block's first word links the next one). */
static void *alloc_list(size_t bytes, size_t n) {
  void *head = NULL;
  size_t count = bytes / (size_t)sc_class_size(n);
  for (size_t i = 0; i < count; i++) {
    void **p = malloc(n);
    cr_assert_not_null(p);
    *p = head;
    head = p;
  }
  return head;
}

static void free_list(void *head) {
  while (head != NULL) {
    void *next = *(void **)head;
    free(head);
    head = next;
  }
}

static sc_purge_stats_t purge_stats(void) {
  sc_purge_stats_t s;
  sc__purge_stats(&s);
  return s;
}

/** Steps are paced in time (at least 1 ms apart, and 8 times as long as
 * the last step took), so settling is bounded in milliseconds: ~0.5 s for
 * 512 MiB here. The bound below only turns "never" into a failure. */
#define SETTLE_MAX_MS 30000

/** A light load: `slots` blocks of 48 B in ring, one replaced per operation,
 * until RSS is below `target` or max_ms passed. Returns the milliseconds it
 * took (> max_ms: it did not get there). */
static double light_load(void **ring, unsigned slots, double max_ms, size_t target) {
  double start = pr_now(), ms = 0;
  for (uint64_t ops = 0; rss_resident_bytes() >= target && ms <= max_ms;) {
    for (unsigned k = 0; k < 1024; k++, ops++) {
      free(ring[ops % slots]);
      ring[ops % slots] = cu_escape(malloc(48));
    }
    ms = (pr_now() - start) * 1000;
  }
  return ms;
}

/* ---- a burst settles ------------------------------------------------------ */

Test(purge, burst_settles_under_light_load) {
  sc__purge_configure(0, 16); /* return pages as soon as they are found empty */
  sc_purge_stats_t before = purge_stats();
  size_t base = rss_resident_bytes();
  void *list = alloc_list(512 * MIB, 200);
  size_t peak = rss_resident_bytes();
  cr_assert_geq(peak - base, 480 * MIB, "the burst should be resident: %zu B", peak - base);
  free_list(list);
  void *ring[32] = {0};
  double ms = light_load(ring, 32, SETTLE_MAX_MS, peak / 10);
  size_t settled = rss_resident_bytes();
  cr_assert_leq(ms, SETTLE_MAX_MS, "RSS %zu B still >= 10%% of peak %zu B after %.0f ms", settled,
                peak, ms);
  cr_assert_lt(settled, peak / 10);
  sc_purge_stats_t after = purge_stats();
  cr_assert_geq(after.pages_purged - before.pages_purged, 7000);
  cr_assert_geq(after.bytes_returned - before.bytes_returned, 440 * MIB);
  cr_assert_gt(after.segments_unmapped, before.segments_unmapped);
  for (unsigned i = 0; i < 32; i++) free(ring[i]);
}

Test(purge, delay_holds_memory_until_trim) {
  sc__purge_configure(NEVER_MS, 16);
  void *list = alloc_list(256 * MIB, 100);
  size_t peak = rss_resident_bytes();
  free_list(list);
  void *ring[32] = {0};
  light_load(ring, 32, 200, 0); /* 200 ms of light load */
  size_t held = rss_resident_bytes();
  cr_assert_gt(held, peak / 2, "nothing may be purged before the delay: %zu of %zu B", held, peak);
  for (unsigned i = 0; i < 32; i++) free(ring[i]);
  cr_assert_eq(malloc_trim(0), 1);
  size_t trimmed = rss_resident_bytes();
  cr_assert_lt(trimmed, peak / 10, "after malloc_trim: %zu B of peak %zu B", trimmed, peak);
  sc_trim(); /* whatever emptied while asserting */
  cr_assert_eq(sc_trim(), 0, "a second trim finds nothing left");
}

/* ---- exited threads ---------------------------------------------------------- */

static void *alloc_and_free_100mib(void *arg) {
  (void)arg;
  free_list(alloc_list(100 * MIB, 64));
  return NULL;
}

static void *alloc_100mib(void *arg) {
  (void)arg;
  return alloc_list(100 * MIB, 64);
}

/** Run fn in a thread that exits; returns what it returned. */
static void *in_thread(void *(*fn)(void *)) {
  pthread_t t;
  void *ret = NULL;
  cr_assert_eq(pthread_create(&t, NULL, fn, NULL), 0);
  cr_assert_eq(pthread_join(t, &ret), 0);
  return ret;
}

/** Set the delay (ms) and step, warm up (100 MiB made and freed by a
 * thread, glibc trimmed): the resident size to measure from. */
static size_t warm_base(uint64_t delay_ms, uint32_t step) {
  sc__purge_configure(delay_ms, step);
  free_list(in_thread(alloc_100mib));
  malloc_trim(0);
  return rss_resident_bytes();
}

Test(purge, exited_thread_leaves_nothing_after_trim) {
  sc__purge_configure(NEVER_MS, 16);
  in_thread(alloc_and_free_100mib); /* warm up: thread stack, arena, glibc */
  malloc_trim(0);
  size_t base = rss_resident_bytes();
  in_thread(alloc_and_free_100mib);
  size_t held = rss_resident_bytes();
  cr_assert_gt(held, base + 90 * MIB, "the exited thread's pages are still held");
  cr_assert_eq(malloc_trim(0), 1);
  size_t after = rss_resident_bytes();
  cr_assert_lt(after, base + 2 * MIB, "resident after trim: %zu B over the base", after - base);
}

Test(purge, blocks_freed_after_their_thread_exited_are_returned) {
  size_t base = warm_base(NEVER_MS, 16);
  void *list = in_thread(alloc_100mib);
  free_list(list); /* remote frees into the abandoned arena */
  cr_assert_gt(rss_resident_bytes(), base + 90 * MIB);
  size_t got = sc_trim();
  cr_assert_geq(got, 90 * MIB, "sc_trim returned %zu B", got);
  size_t after = rss_resident_bytes();
  cr_assert_lt(after, base + 2 * MIB, "resident after trim: %zu B over the base", after - base);
}

Test(purge, exiting_thread_returns_what_is_past_the_delay) {
  size_t base = warm_base(0, 16);
  in_thread(alloc_and_free_100mib);
  size_t after = rss_resident_bytes();
  cr_assert_lt(after, base + 10 * MIB, "resident after exit: %zu B over the base", after - base);
}

Test(purge, live_threads_tend_abandoned_arenas) {
  size_t base = warm_base(0, 64);
  void *list = in_thread(alloc_100mib); /* its blocks outlive it */
  cr_assert_gt(rss_resident_bytes(), base + 90 * MIB);
  free_list(list); /* remote frees into the abandoned arena */
  void *ring[32] = {0};
  double ms = light_load(ring, 32, SETTLE_MAX_MS, base + 10 * MIB);
  cr_assert_leq(ms, SETTLE_MAX_MS, "RSS %zu B over the base after %.0f ms",
                rss_resident_bytes() - base, ms);
  for (unsigned i = 0; i < 32; i++) free(ring[i]);
}

/* ---- bounded steps, reuse, safety -------------------------------------------- */

Test(purge, a_step_purges_at_most_step_pages) {
  sc__purge_configure(0, 4);
  void *keep = cu_escape(malloc(16)); /* the arena exists */
  free_list(alloc_list(8 * MIB, 512));
  sc_arena_t *a = sc__thread.arena;
  cr_assert_not_null(a);
  for (int i = 0; i < 20; i++) {
    sc_purge_stats_t s0 = purge_stats();
    a->purge.next_ns = 0;
    sc__purge_tick(a);
    sc_purge_stats_t s1 = purge_stats();
    cr_assert_leq(s1.pages_purged - s0.pages_purged, 4, "step %d purged %llu pages", i,
                  (unsigned long long)(s1.pages_purged - s0.pages_purged));
  }
  cr_assert_gt(purge_stats().pages_purged, 0);
  free(keep);
}

Test(purge, purged_pages_are_reused_before_fresh_memory) {
  sc__purge_configure(NEVER_MS, 16);
  /* Keep one block per segment's worth so no segment is unmapped. */
  size_t n = 32 * MIB / 512;
  void **blocks = malloc(n * sizeof(void *));
  cr_assert_not_null(blocks);
  for (size_t i = 0; i < n; i++) blocks[i] = cu_escape(malloc(512));
  for (size_t i = 0; i < n; i++)
    if (i % 4096 != 0) free(blocks[i]);
  cr_assert_geq(sc_trim(), 28 * MIB);
  sc_purge_stats_t s0 = purge_stats();
  size_t vm0 = rss_virtual_bytes();
  void *list = alloc_list(24 * MIB, 32); /* another class */
  sc_purge_stats_t s1 = purge_stats();
  cr_assert_geq(s1.pages_reused_after_purge - s0.pages_reused_after_purge, 300,
                "only %llu purged pages reused",
                (unsigned long long)(s1.pages_reused_after_purge - s0.pages_reused_after_purge));
  cr_assert_leq(rss_virtual_bytes(), vm0 + 4 * MIB, "fresh segments were mapped instead");
  free_list(list);
  for (size_t i = 0; i < n; i += 4096) free(blocks[i]);
  free(blocks);
}

Test(purge, live_blocks_survive_purges_and_trims) {
  sc__purge_configure(0, 8);
  enum { SLOTS = 20000 };
  void **slot = calloc(SLOTS, sizeof(void *));
  size_t *size = calloc(SLOTS, sizeof(size_t));
  uint64_t *seed = calloc(SLOTS, sizeof(uint64_t));
  cr_assert(slot && size && seed);
  uint64_t rng = 12345;
  for (uint64_t op = 0; op < 600000; op++) {
    size_t i = (size_t)(cu_rand(&rng) % SLOTS);
    if (slot[i] != NULL) {
      cr_assert(cu_check(slot[i], size[i], seed[i]), "block %zu corrupted at op %llu", i,
                (unsigned long long)op);
      free(slot[i]);
      slot[i] = NULL;
    } else {
      size[i] = 1 + (size_t)(cu_rand(&rng) % 1024);
      seed[i] = op;
      slot[i] = malloc(size[i]);
      cr_assert_not_null(slot[i]);
      cu_fill(slot[i], size[i], seed[i]);
    }
    if (op % 100000 == 99999) {
      /* Free most, so that whole pages empty out, then trim. */
      for (size_t k = 0; k < SLOTS; k++)
        if (slot[k] != NULL && k % 7 != 0) {
          cr_assert(cu_check(slot[k], size[k], seed[k]));
          free(slot[k]);
          slot[k] = NULL;
        }
      sc_trim();
    }
  }
  for (size_t k = 0; k < SLOTS; k++)
    if (slot[k] != NULL) {
      cr_assert(cu_check(slot[k], size[k], seed[k]), "block %zu corrupted", k);
      free(slot[k]);
    }
  free(slot);
  free(size);
  free(seed);
}

/* Threads that allocate, free their own and each other's blocks, exit and
 * are replaced (their arenas abandoned, tended, adopted), while some of
 * them trim: every block keeps its contents until its free. */
enum { STRESS_SLOTS = 4096, STRESS_THREADS = 4, STRESS_ROUNDS = 6 };
typedef struct {
  _Atomic(void *) slot[STRESS_SLOTS]; /* shared: any thread may free any block */
  _Atomic int bad;
} stress_t;

/* A stress block: its seed in the first 8 bytes, then 0..1016 pattern bytes. */
static size_t stress_size(uint64_t seed) { return 8 + (size_t)(seed % 1017); }

static void *stress_block(uint64_t seed) {
  uint8_t *p = malloc(stress_size(seed));
  if (p == NULL) return NULL;
  memcpy(p, &seed, 8);
  cu_fill(p + 8, stress_size(seed) - 8, seed);
  return p;
}

static bool stress_intact(const uint8_t *p) {
  uint64_t seed;
  memcpy(&seed, p, 8);
  return cu_check(p + 8, stress_size(seed) - 8, seed);
}

static void *stress_worker(void *arg) {
  stress_t *st = arg;
  uint64_t rng = (uint64_t)(uintptr_t)&rng ^ 0x9E3779B97F4A7C15ull;
  for (int op = 0; op < 60000; op++) {
    size_t i = (size_t)(cu_rand(&rng) % STRESS_SLOTS);
    void *p = atomic_exchange(&st->slot[i], NULL);
    if (p != NULL) {
      if (!stress_intact(p)) atomic_store(&st->bad, 1);
      free(p);
    } else {
      p = stress_block(cu_rand(&rng));
      if (p == NULL) {
        atomic_store(&st->bad, 2);
        continue;
      }
      void *old = NULL;
      if (!atomic_compare_exchange_strong(&st->slot[i], &old, p)) free(p);
    }
    if (op % 20000 == 19999) sc_trim();
  }
  return NULL;
}

Test(purge, concurrent_threads_exits_and_trims_keep_blocks_intact) {
  sc__purge_configure(0, 8);
  static stress_t st;
  for (int round = 0; round < STRESS_ROUNDS; round++) {
    pthread_t t[STRESS_THREADS];
    for (int k = 0; k < STRESS_THREADS; k++)
      cr_assert_eq(pthread_create(&t[k], NULL, stress_worker, &st), 0);
    for (int k = 0; k < STRESS_THREADS; k++) cr_assert_eq(pthread_join(t[k], NULL), 0);
    cr_assert_eq(atomic_load(&st.bad), 0, "round %d: a block lost its contents", round);
  }
  for (size_t i = 0; i < STRESS_SLOTS; i++) {
    void *p = atomic_load(&st.slot[i]);
    if (p == NULL) continue;
    cr_assert(stress_intact(p));
    free(p);
  }
  sc_trim();
}

/* Thread B frees every block of a page of thread A; the blocks wait in A's
 * remote list, so A's purge steps must not take the page (its `used` count
 * still has them) until A drains them. */
static void *free_all_remotely(void *list) {
  free_list(list);
  return NULL;
}

Test(purge, pages_with_pending_remote_frees_are_not_purged) {
  sc__purge_configure(0, 64);
  void *keep = cu_escape(malloc(16));
  sc_arena_t *a = sc__thread.arena;
  void *list = alloc_list(4 * MIB, 256);
  sc_page_t *page = sc__page_of(sc__segment_of((uintptr_t)list), (uintptr_t)list);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, free_all_remotely, list), 0);
  cr_assert_eq(pthread_join(t, NULL), 0);
  cr_assert_neq(atomic_load(&a->remote_free), 0, "the frees wait in the remote list");
  for (int i = 0; i < 50; i++) {
    a->purge.next_ns = 0;
    sc__purge_tick(a);
  }
  cr_assert_eq(page->state, SC_PAGE_ACTIVE, "a page with pending remote frees was purged");
  cr_assert_gt(page->used, 0);
  cr_assert_neq(atomic_load(&a->remote_free), 0);
  sc_purge_stats_t s0 = purge_stats();
  cr_assert_geq(sc_trim(), 3 * MIB, "the trim drains the remote list and returns the pages");
  cr_assert_gt(purge_stats().pages_purged, s0.pages_purged);
  free(keep);
}

/* ---- an idle thread's pages, freed by others (reclaim.c) ---------------------- */

/** Resident 4 KiB pages of the 64 KiB page at `page` (mincore). */
static unsigned resident_os_pages(const sc_page_t *page) {
  unsigned char v[SC_PAGE_SIZE / 4096];
  cr_assert_eq(mincore(sc__page_start(page), SC_PAGE_SIZE, v), 0);
  unsigned n = 0;
  for (unsigned i = 0; i < sizeof(v); i++) n += v[i] & 1;
  return n;
}

/** 4 MiB of 256 B blocks made by this thread, one in the middle in *mid
 * (its page has none but these: the first and the last page of the run
 * may hold other blocks of the class). */
static void *alloc_list_mid(void **mid) {
  void *list = alloc_list(4 * MIB, 256);
  void *p = list;
  for (size_t i = 0; i < 4 * MIB / 256 / 2; i++) p = *(void **)p;
  *mid = p;
  return list;
}

typedef struct {
  void *list;       /* blocks to free here (another thread's) */
  sc_arena_t *idle; /* their owner, which stays off its slow paths */
  size_t pages;     /* what the reclaim gave back */
  bool by_steps;    /* through purge steps (the idle test), or at once */
} reclaim_job_t;

/** Free job->list here (remote frees), hand the batch over, then reclaim
 * the owner's pages: at once, or by this thread's purge steps. */
static void *free_and_reclaim(void *arg) {
  reclaim_job_t *job = arg;
  free_list(job->list);
  sc_arena_t *me = sc__thread.arena;
  cr_assert_not_null(me);
  sc__arena_flush_remote(me);
  if (!job->by_steps) {
    job->pages = sc__remote_reclaim(job->idle);
    return NULL;
  }
  sc_purge_stats_t s0 = purge_stats();
  for (int i = 0; i < 2000 && purge_stats().pages_purged == s0.pages_purged; i++) {
    me->purge.next_ns = 0;
    sc__purge_tick(me);
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  job->pages = purge_stats().pages_purged - s0.pages_purged;
  return NULL;
}

static void run_reclaim(reclaim_job_t *job) {
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, free_and_reclaim, job), 0);
  cr_assert_eq(pthread_join(t, NULL), 0);
}

/* Thread A makes 4 MiB of blocks and waits; B frees them all. B's reclaim
 * gives back every page of A's it holds wholly (all but A's current page,
 * still being carved), before A makes another slow-path call; A's next
 * drain marks the blocks free and keeps the pages as purged spares, which
 * it then reuses. */
Test(purge, pages_an_idle_thread_made_and_others_freed_are_returned) {
  sc__purge_configure(NEVER_MS, 64);
  void *keep = cu_escape(malloc(16));
  sc_arena_t *a = sc__thread.arena;
  void *mid;
  void *list = alloc_list_mid(&mid);
  sc_page_t *page = sc__page_of(sc__segment_of((uintptr_t)mid), (uintptr_t)mid);
  cr_assert_eq(resident_os_pages(page), SC_PAGE_SIZE / 4096);
  unsigned c = page->class_idx;
  uint64_t drained = a->counts[c].drained;
  static struct sc_stats st[3]; /* before, during, after */
  const struct sc_class_stats *before = st[0].classes, *during = st[1].classes,
                              *after = st[2].classes;
  sc_stats_get(&st[0]);
  reclaim_job_t job = {list, a, 0, false};
  run_reclaim(&job);
  cr_assert_geq(job.pages, 62, "pages given back: %zu of 64", job.pages);
  cr_assert_eq(resident_os_pages(page), 0, "the page's memory is still resident");
  cr_assert_eq(page->state, SC_PAGE_ACTIVE, "the owner has not taken it back yet");
  cr_assert_neq(atomic_load(&a->reclaimed), NULL);
  cr_assert_neq(atomic_load(&a->remote_free), 0, "the current page's blocks wait as before");
  /* The statistics no longer count the pages given back, nor their blocks
   * as live, before the owner takes them back, and the same after. */
  sc_stats_get(&st[1]);
  cr_assert_eq(before[c].pages - during[c].pages, job.pages, "class pages %" PRIu64 " -> %" PRIu64,
               before[c].pages, during[c].pages);
  cr_assert_eq(before[c].reserved_bytes - during[c].reserved_bytes, job.pages * SC_PAGE_SIZE);
  cr_assert_eq(before[c].capacity_blocks - during[c].capacity_blocks,
               job.pages * (SC_PAGE_SIZE / 256) - a->reclaimed_coloured[c],
               "a page holds 256 blocks, a coloured one 255");
  cr_assert_eq(before[c].live_blocks - during[c].live_blocks, 4 * MIB / 256);
  sc__arena_drain(a);
  sc_stats_get(&st[2]);
  cr_assert_eq(after[c].pages, during[c].pages);
  cr_assert_eq(after[c].capacity_blocks, during[c].capacity_blocks);
  cr_assert_eq(after[c].live_blocks, during[c].live_blocks);
  cr_assert_eq(a->reclaimed_pages[c], 0);
  cr_assert_eq(atomic_load(&a->reclaimed), NULL);
  cr_assert_eq(page->state, SC_PAGE_PURGED, "a reclaimed page becomes a purged spare");
  cr_assert_eq(a->counts[c].drained - drained, 4 * MIB / 256, "every block is counted drained");
  /* The pages serve again, and their blocks hold what is written. */
  void *again = alloc_list(4 * MIB, 256);
  size_t n = 0;
  for (void *p = again; p != NULL; p = *(void **)p, n++) cu_fill((void **)p + 1, 248, n);
  n = 0;
  for (void *p = again; p != NULL; p = *(void **)p, n++)
    cr_assert(cu_check((void **)p + 1, 248, n), "block %zu lost its contents", n);
  cr_assert_eq(page->state, SC_PAGE_ACTIVE, "the spare page was reused");
  free_list(again);
  free(keep);
}

/* The same, left to B's purge steps: A waits in pthread_join, so its
 * slow-path count stays still and the steps find it idle. */
Test(purge, purge_steps_return_an_idle_threads_pages) {
  sc__purge_configure(NEVER_MS, 64);
  void *keep = cu_escape(malloc(16));
  void *mid;
  void *list = alloc_list_mid(&mid);
  sc_page_t *page = sc__page_of(sc__segment_of((uintptr_t)mid), (uintptr_t)mid);
  reclaim_job_t job = {list, sc__thread.arena, 0, true};
  run_reclaim(&job);
  cr_assert_geq(job.pages, 62, "pages given back by purge steps: %zu of 64", job.pages);
  cr_assert_eq(resident_os_pages(page), 0);
  cr_assert_eq(sc_trim() > 0, true, "the trim takes the pages back and returns the rest");
  cr_assert_eq(page->state, SC_PAGE_PURGED);
  free(keep);
}

/* A list longer than one walk follows (SC_RECLAIM_WALK_MAX links): each
 * walk takes on where the last stopped (the owner's stash), until all
 * 32 MiB of pages are given back; the owner's drain takes the rest. */
static void *free_and_reclaim_all(void *arg) {
  reclaim_job_t *job = arg;
  free_list(job->list);
  sc__arena_flush_remote(sc__thread.arena);
  for (int walks = 0; walks < 64; walks++) job->pages += sc__remote_reclaim(job->idle);
  return NULL;
}

Test(purge, a_long_list_is_walked_in_parts) {
  sc__purge_configure(NEVER_MS, 64);
  void *keep = cu_escape(malloc(16));
  sc_arena_t *a = sc__thread.arena;
  void *list = alloc_list(32 * MIB, 256); /* 131 072 blocks, 512 pages */
  cr_assert_gt(32 * MIB / 256, 4 * SC_RECLAIM_WALK_MAX);
  reclaim_job_t job = {list, a, 0, false};
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, free_and_reclaim_all, &job), 0);
  cr_assert_eq(pthread_join(t, NULL), 0);
  cr_assert_geq(job.pages, 500, "pages given back: %zu of 512", job.pages);
  cr_assert_eq(atomic_load(&a->reclaim_stash), 0, "a walk left part of the list unread");
  sc__arena_drain(a);
  cr_assert(!sc__arena_has_returns(a));
  free(keep);
}

/* A page with one live block left is not given back: the walk hands its
 * blocks back to the owner's list, whose drain frees them as usual. */
Test(purge, a_page_with_a_live_block_is_not_reclaimed) {
  sc__purge_configure(NEVER_MS, 64);
  void *keep = cu_escape(malloc(16));
  sc_arena_t *a = sc__thread.arena;
  enum { N = 1024 }; /* 4 pages of 256 B blocks, and a few */
  void **b = malloc(N * sizeof(void *));
  cr_assert_not_null(b);
  for (unsigned i = 0; i < N; i++) b[i] = cu_escape(malloc(256));
  /* Every block but one in each page goes to the other thread. */
  void *list = NULL;
  unsigned kept = 0;
  for (unsigned i = 0; i < N; i++) {
    uintptr_t u = (uintptr_t)b[i];
    if ((u & (SC_PAGE_SIZE - 1)) >> 8 == 7) {
      kept++;
      continue;
    }
    *(void **)b[i] = list;
    list = b[i];
  }
  cr_assert_gt(kept, 3);
  unsigned c = sc__page_of(sc__segment_of((uintptr_t)b[0]), (uintptr_t)b[0])->class_idx;
  uint64_t drained = a->counts[c].drained;
  reclaim_job_t job = {list, a, 0, false};
  run_reclaim(&job);
  cr_assert_eq(job.pages, 0, "a page with a live block was given back");
  sc__arena_drain(a);
  cr_assert_eq(a->counts[c].drained - drained, N - kept);
  for (unsigned i = 0; i < N; i++)
    if (((uintptr_t)b[i] & (SC_PAGE_SIZE - 1)) >> 8 == 7) free(b[i]);
  free(b);
  free(keep);
}

/** Free a block whose page was purged (its segment still mapped): the
 * hardened check must catch it as an invalid free. */
static void reach_purged_page(void) {
  sc__purge_configure(NEVER_MS, 16);
  enum { N = 2048 }; /* 8 pages of 256 B blocks */
  void **b = malloc(N * sizeof(void *));
  cr_assert_not_null(b);
  for (unsigned i = 0; i < N; i++) b[i] = cu_escape(malloc(256));
  /* Keep one block in every other page, so every segment stays mapped. */
  for (unsigned i = 0; i < N; i++)
    if (i % 512 != 0) free(b[i]);
  sc_trim();
  void *victim = NULL;
  for (unsigned i = 0; i < N && victim == NULL; i++) {
    uintptr_t u = (uintptr_t)b[i];
    if (i % 512 != 0 && sc__segment_owned(u) &&
        sc__page_of(sc__segment_of(u), u)->state == SC_PAGE_PURGED)
      victim = b[i];
  }
  cr_assert_not_null(victim, "no block on a purged page of a mapped segment");
  free(victim);
}

Test(purge, free_into_a_purged_page_aborts, .signal = SIGABRT) { reach_purged_page(); }

/* ---- settings ------------------------------------------------------------------ */

/** Set the two settings with sc_option_set, the reader the environment
 * goes through (NULL: unset), and return what it wrote to stderr (fd 2)
 * in buf. */
static void read_env(const char *delay, const char *step, char *buf, size_t cap) {
  char path[] = "/tmp/sc_purge_env_XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  unlink(path);
  int saved = dup(2);
  dup2(fd, 2);
  sc__stream_rebind(2); /* the library writes only to the stderr it knows */
  sc_option_set("SIZECLASS_PURGE_DELAY_MS", delay);
  sc_option_set("SIZECLASS_PURGE_STEP", step);
  dup2(saved, 2);
  close(saved);
  sc__stream_rebind(2);
  ssize_t n = pread(fd, buf, cap - 1, 0);
  close(fd);
  buf[n > 0 ? n : 0] = 0;
}

static uint64_t count_lines(const char *s, const char *prefix) {
  uint64_t n = 0;
  for (const char *line = s; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : "")
    if (strncmp(line, prefix, strlen(prefix)) == 0) n++;
  return n;
}

Test(purge, settings_defaults_and_good_values) {
  char err[1024];
  uint64_t delay;
  uint32_t step;
  read_env(NULL, NULL, err, sizeof(err));
  sc__purge_settings(&delay, &step);
  cr_assert_eq(delay, 1000);
  cr_assert_eq(step, 64);
  cr_assert_str_empty(err);
  read_env("0", "0", err, sizeof(err));
  sc__purge_settings(&delay, &step);
  cr_assert_eq(delay, 0);
  cr_assert_eq(step, 0);
  cr_assert_str_empty(err);
  read_env("250", "4096", err, sizeof(err));
  sc__purge_settings(&delay, &step);
  cr_assert_eq(delay, 250);
  cr_assert_eq(step, 4096);
  cr_assert_str_empty(err);
}

Test(purge, bad_settings_warn_once_and_use_defaults) {
  const char *bad[] = {"abc", " ", "-1", " 5", "5ms", "3600001", "99999999999999999999999"};
  char err[1024];
  for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    read_env(bad[i], bad[i], err, sizeof(err));
    uint64_t delay;
    uint32_t step;
    sc__purge_settings(&delay, &step);
    cr_assert_eq(delay, 1000, "delay for '%s'", bad[i]);
    cr_assert_eq(step, 64, "step for '%s'", bad[i]);
    cr_assert_eq(count_lines(err, "sizeclass: SIZECLASS_PURGE_DELAY_MS="), 1, "'%s': %s", bad[i],
                 err);
    cr_assert_eq(count_lines(err, "sizeclass: SIZECLASS_PURGE_STEP="), 1, "'%s': %s", bad[i], err);
    cr_assert_eq(count_lines(err, ""), 2, "exactly two lines for '%s': %s", bad[i], err);
  }
}

/* ---- preloaded: settings from the environment, the exported malloc_trim ----- */

/** Run purge_burst preloaded with env; parse its four lines. */
static void run_burst(const char *const *env, const char *mib, const char *max_ms, size_t *peak,
                      size_t *settled, unsigned long long *done, int *trim, size_t *trimmed,
                      char *err, size_t errcap) {
  char prog[4096];
  cu_build_path(prog, sizeof(prog), "tests/progs/purge_burst");
  char *argv[] = {prog, (char *)mib, (char *)max_ms, NULL};
  pr_opts_t o = {.preload = true, .timeout_s = 120, .env = env};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o), "could not run %s", prog);
  cr_assert_eq(r.exit_code, 0, "purge_burst: exit %d, stderr: %s", r.exit_code, r.err);
  cr_assert_eq(sscanf(r.out, "peak %zu\nsettled %zu %llu\ntrim %d\ntrimmed %zu", peak, settled,
                      done, trim, trimmed),
               5, "output: %s", r.out);
  snprintf(err, errcap, "%s", r.err);
  free(r.out);
}

Test(purge, preloaded_burst_settles_with_env_delay) {
  const char *env[] = {"SIZECLASS_PURGE_DELAY_MS=0", NULL};
  size_t peak, settled, trimmed;
  unsigned long long ms;
  int trim;
  char err[4096];
  run_burst(env, "256", "30000", &peak, &settled, &ms, &trim, &trimmed, err, sizeof(err));
  cr_assert_geq(peak, 240 * MIB);
  cr_assert_lt(settled, peak / 10, "settled %zu of peak %zu after %llu ms", settled, peak, ms);
  cr_assert_str_empty(err);
}

Test(purge, preloaded_bad_env_warns_and_malloc_trim_returns_all) {
  const char *env[] = {"SIZECLASS_PURGE_DELAY_MS=soon", NULL};
  size_t peak, settled, trimmed;
  unsigned long long ms;
  int trim;
  char err[4096];
  run_burst(env, "128", "10", &peak, &settled, &ms, &trim, &trimmed, err, sizeof(err));
  cr_assert_eq(count_lines(err,
                           "sizeclass: SIZECLASS_PURGE_DELAY_MS=\"soon\": expected a number "
                           "from 0 to 3600000; using 1000\n"),
               1, "%s", err);
  cr_assert_eq(count_lines(err, ""), 1, "one warning line only: %s", err);
  cr_assert_geq(peak, 120 * MIB);
  cr_assert_eq(trim, 1);
  cr_assert_lt(trimmed, peak / 10, "after malloc_trim(0): %zu of peak %zu", trimmed, peak);
}

/* ---- the system allocator's memory (sys_trim.c) ------------------------------ */

/** Run sys_churn preloaded with env; its stdout (free it). */
static char *run_churn(const char *const *env, const char *mode, const char *arg) {
  char prog[4096];
  cu_build_path(prog, sizeof(prog), "tests/progs/sys_churn");
  char *argv[] = {prog, (char *)mode, (char *)arg, NULL};
  pr_opts_t o = {.preload = true, .timeout_s = 120, .env = env};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o), "could not run %s", prog);
  cr_assert_eq(r.exit_code, 0, "sys_churn: exit %d, stderr: %s", r.exit_code, r.err);
  cr_assert_str_empty(r.err);
  return r.out;
}

/* Blocks of 100 KiB made and freed in a loop: under glibc's own policy
 * (trim the heap top past 128 KiB free, mmap above its threshold) each cycle
 * gives pages back and faults them in again; paced, they stay. */
Test(purge, system_blocks_churn_without_faults) {
  const char *paced[] = {NULL};
  const char *glibc[] = {"SIZECLASS_SYSTEM_TRIM=glibc", NULL};
  long f_paced = -1, f_glibc = -1;
  char *out = run_churn(paced, "cycles", "200");
  cr_assert_eq(sscanf(out, "faults %ld", &f_paced), 1, "%s", out);
  free(out);
  out = run_churn(glibc, "cycles", "200");
  cr_assert_eq(sscanf(out, "faults %ld", &f_glibc), 1, "%s", out);
  free(out);
  /* 190 cycles x 16 blocks x 25 pages: glibc's way faults on most of them. */
  cr_assert_lt(f_paced, 1000, "paced: %ld faults (glibc's policy: %ld)", f_paced, f_glibc);
  cr_assert_gt(f_glibc, 10 * f_paced + 1000, "glibc's policy: %ld faults, paced %ld", f_glibc,
               f_paced);
}

/** Run sys_churn `mode` (burst or quiet) for `ms` with a purge delay of
 * 50 ms: its 64 MiB burst must be mostly given back by its end. */
static void burst_goes_back(const char *mode, const char *ms) {
  const char *env[] = {"SIZECLASS_PURGE_DELAY_MS=50", NULL};
  char *out = run_churn(env, mode, ms);
  size_t peak = 0, held = 0, after = 0;
  cr_assert_eq(sscanf(out, "peak %zu\nheld %zu\nafter %zu", &peak, &held, &after), 3, "%s", out);
  free(out);
  cr_assert_geq(peak, 64 * MIB);
  cr_assert_lt(after, peak / 2, "%s: peak %zu, held %zu, after %zu", mode, peak, held, after);
}

/** Run sys_churn `mode` `arg` (a burst of 64 MiB or more) with env, and
 * read its "peak P", "after A" and "trims T" lines. */
static void run_sys_burst(const char *const *env, const char *mode, const char *arg, size_t *peak,
                          size_t *after, long *trims) {
  char *out = run_churn(env, mode, arg);
  cr_assert_eq(sscanf(out, "peak %zu\nafter %zu\ntrims %ld", peak, after, trims), 3, "%s", out);
  free(out);
  cr_assert_geq(*peak, 64 * MIB, "%s: peak %zu", mode, *peak);
}

/* A freed burst of system blocks is returned once the purge delay passed,
 * at the next free of enough system memory. */
Test(purge, system_burst_returns_after_the_delay) { burst_goes_back("burst", "200"); }

/* A loop whose live system bytes stay level but for swings that come back
 * within the delay is never trimmed: a trim would give back the gaps
 * between its blocks and the swings' memory, which it faults in again.
 * (The policy before this one trimmed it once per delay: 3 or 4 times.)
 * The delay is long against the swings (a few ms apart), so that a busy
 * machine's scheduling does not make a drop look held. */
Test(purge, steady_system_churn_is_not_trimmed) {
  const char *env[] = {"SIZECLASS_PURGE_DELAY_MS=300", NULL};
  char *out = run_churn(env, "steady", "1200");
  long trims = -2;
  cr_assert_eq(sscanf(out, "trims %ld", &trims), 1, "%s", out);
  free(out);
  cr_assert_eq(trims, 0, "%ld paced trims in a steady loop", trims);
}

/* The same loop after it freed 64 MiB for good: the drop holds through its
 * swings, and is given back a delay later. */
Test(purge, a_drop_that_holds_under_churn_is_trimmed) {
  const char *env[] = {"SIZECLASS_PURGE_DELAY_MS=100", NULL};
  char *out = run_churn(env, "drop", "1200");
  long trims = -2;
  size_t before = 0, after = 0;
  cr_assert_eq(sscanf(out, "trims %ld\nbefore %zu\nafter %zu", &trims, &before, &after), 3, "%s",
               out);
  free(out);
  cr_assert_geq(trims, 1, "no paced trim after the drop (RSS %zu before, %zu after)", before,
                after);
  cr_assert_lt(after + 32 * MIB, before, "RSS %zu before the drop, %zu after (%ld trims)", before,
               after, trims);
}

/* The main thread's 64 MiB freed by 8 threads, 8 MiB each: no thread frees
 * enough to look, and the purge steps' looks (one every 25 ms among all
 * arenas) see the level and the drop. */
Test(purge, system_burst_freed_by_many_threads_returns) {
  const char *env[] = {"SIZECLASS_PURGE_DELAY_MS=50", NULL};
  size_t peak = 0, after = 0;
  long trims = -2;
  run_sys_burst(env, "spread", "600", &peak, &after, &trims);
  cr_assert_lt(after, peak / 2, "peak %zu, after %zu, %ld paced trims", peak, after, trims);
}

/* 64 MiB made and freed by 8 threads, 8 MiB each, in their own glibc
 * arenas, which then make small blocks only: malloc_trim does not shrink
 * those arenas' tops, and each thread shrinks its own after the trim.
 * (Before: 71.6 MiB at the end; glibc alone 4.5.) */
Test(purge, system_burst_of_worker_threads_returns) {
  const char *env[] = {"SIZECLASS_PURGE_DELAY_MS=50", NULL};
  size_t peak = 0, after = 0;
  long trims = -2;
  run_sys_burst(env, "workers", "600", &peak, &after, &trims);
  cr_assert_geq(trims, 1, "no paced trim (peak %zu, after %zu)", peak, after);
  cr_assert_lt(after, peak / 4, "peak %zu, after %zu, %ld paced trims", peak, after, trims);
}

/* The same burst, then the program's own malloc_trim(0), with nothing
 * returned on its own (SIZECLASS_PURGE_STEP=0): the trim asks every thread
 * for a purge step, which shrinks its glibc arena's top too. */
Test(purge, malloc_trim_returns_worker_threads_tops) {
  const char *env[] = {"SIZECLASS_PURGE_DELAY_MS=50", "SIZECLASS_PURGE_STEP=0", NULL};
  size_t peak = 0, after = 0;
  long trims = -2;
  run_sys_burst(env, "workers-trim", "600", &peak, &after, &trims);
  cr_assert_eq(trims, 0, "%ld paced trims with SIZECLASS_PURGE_STEP=0", trims);
  cr_assert_lt(after, peak / 4, "peak %zu, after %zu", peak, after);
}

/* 4 threads make 24 MiB each in their own glibc arenas, free them and
 * end: no later trim can reach those arenas' tops, so each thread returns
 * its own as it ends (a top of 16 MiB or more free: rounds of short
 * threads with smaller buffers keep theirs for the next round).
 * (Before: 98 MiB kept; glibc alone 2.1.) */
static void leavers_return_their_bursts(const char *mode) {
  const char *env[] = {NULL};
  char *out = run_churn(env, mode, "24");
  size_t peak = 0, after = 0;
  cr_assert_eq(sscanf(out, "peak %zu\nafter %zu", &peak, &after), 2, "%s", out);
  free(out);
  cr_assert_geq(peak, 96 * MIB);
  cr_assert_lt(after, peak / 4, "%s: peak %zu, after %zu", mode, peak, after);
}

Test(purge, a_thread_that_ends_returns_its_burst) { leavers_return_their_bursts("leavers"); }

/* The same with threads that make no block of 1 KiB or less: they have no
 * arena of the library's, and their end is seen all the same. (Before:
 * 98 MiB kept.) */
Test(purge, a_thread_with_system_blocks_only_returns_its_burst) {
  leavers_return_their_bursts("leavers-large");
}

/* The same with a malloc_trim while the blocks are live: the threads
 * follow it (nothing to shrink then), and their frees after it still count
 * at their end. */
Test(purge, a_thread_that_ends_after_a_trim_returns_its_burst) {
  leavers_return_their_bursts("leavers-trim");
}

/* A program that sets glibc's trim threshold itself chose glibc's
 * trimming: no paced trim, and nothing sets its threshold back (a shrink
 * of a thread's top lowers and restores it), so glibc trims the heap top
 * of every cycle of 100 KiB blocks after the burst, as the program asked. */
static void program_threshold_in_force(const char *mode) {
  const char *env[] = {"SIZECLASS_PURGE_DELAY_MS=50", NULL};
  char *out = run_churn(env, mode, "600");
  size_t peak = 0, after = 0;
  long trims = -2, faults = -1;
  cr_assert_eq(
      sscanf(out, "peak %zu\nafter %zu\ntrims %ld\nfaults %ld", &peak, &after, &trims, &faults), 4,
      "%s", out);
  free(out);
  cr_assert_eq(trims, 0, "%s: %ld paced trims after the program's mallopt", mode, trims);
  /* 50 cycles x 16 blocks x 25 pages, most faulted in again */
  cr_assert_gt(faults, 5000, "%s: %ld faults: glibc's trimming was not in force", mode, faults);
  /* the workers' arenas trimmed their tops in their frees, as under glibc */
  cr_assert_lt(after, peak / 4, "%s: peak %zu, after %zu", mode, peak, after);
}

Test(purge, a_threshold_the_program_set_stays) { program_threshold_in_force("chosen"); }

/* The program set only the mmap threshold: glibc's trim threshold is
 * glibc's again (the library's, out of reach, would keep every top now
 * that nothing is paced). */
Test(purge, a_program_mmap_threshold_brings_glibc_trimming_back) {
  program_threshold_in_force("chosen-mmap");
}

/* SIZECLASS_PURGE_STEP=0 means nothing goes back on its own: the same drop
 * stays until the program calls malloc_trim, which returns it. */
Test(purge, no_paced_system_trim_with_purge_step_0) {
  const char *env[] = {"SIZECLASS_PURGE_DELAY_MS=100", "SIZECLASS_PURGE_STEP=0", NULL};
  char *out = run_churn(env, "drop", "1200");
  long trims = -2;
  size_t before = 0, after = 0, trimmed = 0;
  cr_assert_eq(sscanf(out, "trims %ld\nbefore %zu\nafter %zu\ntrimmed %zu", &trims, &before, &after,
                      &trimmed),
               4, "%s", out);
  free(out);
  cr_assert_eq(trims, 0, "%ld paced trims with SIZECLASS_PURGE_STEP=0", trims);
  cr_assert_gt(after + 32 * MIB, before, "RSS %zu before the drop, %zu after", before, after);
  cr_assert_lt(trimmed + 32 * MIB, after, "malloc_trim: RSS %zu, before it %zu", trimmed, after);
}

/* A freed burst of system blocks followed only by small blocks (a level's
 * load buffers, then frames): no large free comes to look, and the purge
 * steps of the small blocks' arena return it once the delay has passed. */
Test(purge, system_burst_returns_under_small_blocks_only) { burst_goes_back("quiet", "600"); }

/* SIZECLASS_SYSTEM_TRIM takes paced or glibc; anything else warns once. */
Test(purge, system_trim_bad_setting_warns) {
  char prog[4096];
  cu_build_path(prog, sizeof(prog), "tests/progs/sys_churn");
  char *argv[] = {prog, "cycles", "12", NULL};
  const char *env[] = {"SIZECLASS_SYSTEM_TRIM=sometimes", NULL};
  pr_opts_t o = {.preload = true, .timeout_s = 60, .env = env};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o));
  cr_assert_eq(r.exit_code, 0);
  cr_assert_str_eq(r.err,
                   "sizeclass: SIZECLASS_SYSTEM_TRIM=\"sometimes\": expected paced or glibc; using "
                   "paced\n");
  free(r.out);
}

/* ---- statistics walks against segment release ------------------------------ */

/* A walk of the pages of an arena (statistics) that pauses inside a
 * segment while the owner trims: the unmapping must wait for the walk,
 * which then reads the rest of that segment's descriptors safely. */
typedef struct {
  sc_arena_t *arena;
  atomic_int walking; /* 1 once the walk has paused in its first page */
  unsigned pages;     /* pages the walk visited */
} slow_walk_t;

static void slow_walk_page(const sc_page_t *page, void *ctx) {
  (void)page;
  slow_walk_t *w = ctx;
  if (w->pages++ == 0) {
    atomic_store(&w->walking, 1);
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL); /* the owner trims meanwhile */
  }
}

static void *slow_walk(void *arg) {
  slow_walk_t *w = arg;
  sc__segment_walk(w->arena, slow_walk_page, w, false);
  return NULL;
}

Test(purge, a_segment_is_not_unmapped_under_a_walk) {
  sc__purge_configure(NEVER_MS, 16);
  free_list(alloc_list(16 * MIB, 256)); /* four segments of empty pages */
  slow_walk_t w = {.arena = sc__thread.arena, .pages = 0};
  atomic_init(&w.walking, 0);
  cr_assert_not_null(w.arena);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, slow_walk, &w), 0);
  while (!atomic_load(&w.walking)) sched_yield();
  sc_purge_stats_t s0 = purge_stats();
  cr_assert_geq(sc_trim(), 15 * MIB, "the trim returns the empty pages");
  cr_assert_eq(pthread_join(t, NULL), 0);
  cr_assert_gt(purge_stats().segments_unmapped, s0.segments_unmapped);
  /* The walk read on through the segments the trim was emptying (pages
   * purged meanwhile are skipped, as any walk skips inactive pages);
   * without the segment lock it faulted on the first unmapped one. */
  cr_assert_gt(w.pages, 1, "the walk went on through the pages: %u", w.pages);
}

/* A thread that makes and frees bursts of whole segments, each returned and
 * its segment unmapped at once (delay 0), while the test's thread walks
 * every arena's pages for statistics (sc_stats_get) as fast as it can: a
 * walk must never meet a segment unmapped under it (segment.c's lock). */
static atomic_int burst_done;

static void *segment_bursts(void *arg) {
  (void)arg;
  for (int i = 0; i < 60; i++) {
    free_list(alloc_list(8 * MIB, 256));
    sc_trim(); /* this thread's empty pages and segments, now */
  }
  atomic_store(&burst_done, 1);
  return NULL;
}

Test(purge, stats_walks_survive_segments_unmapped_meanwhile, .timeout = 120) {
  sc__purge_configure(0, 4096);
  sc_purge_stats_t s0 = purge_stats();
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, segment_bursts, NULL), 0);
  uint64_t walks = 0;
  struct sc_stats st;
  while (!atomic_load(&burst_done)) {
    sc_stats_get(&st);
    cr_assert(st.tracked & SC_TRACKED_COUNTS);
    walks++;
  }
  cr_assert_eq(pthread_join(t, NULL), 0);
  sc_purge_stats_t s1 = purge_stats();
  cr_assert_geq(s1.segments_unmapped - s0.segments_unmapped, 60, "the bursts unmapped %llu",
                (unsigned long long)(s1.segments_unmapped - s0.segments_unmapped));
  cr_assert_gt(walks, 10, "only %llu walks overlapped the bursts", (unsigned long long)walks);
}
