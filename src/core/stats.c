/* SPDX-License-Identifier: MIT */
/* stats.c — the statistics snapshot: every arena's per-class counters summed
 * into one struct sc_stats, with the fallback, arena, frame, purge and
 * process figures beside them. Reads only; never allocates, never blocks
 * when asked to walk unlocked (the dump from a signal handler). */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "core/purge.h"
#include "core/hooks.h"
#include "core/size_class.h"
#include "core/snapshot.h"
#include "util/os.h"

/* Raw sums over arenas, before the derived figures. The default tier's
 * come from every arena's slow-path counters and every active page's
 * descriptor; the exact tier's from the per-request counters, which the
 * sums (hooks.h: sc_exact_sums_t). Requested bytes wrap per arena (a
 * block may be freed by a thread other than its owner); their sums are
 * exact. peak and req_peak are each arena's owner view at its own peak;
 * live is the owners' view (blocks freed by other threads count until
 * drained). */
typedef struct {
  uint64_t allocs, fresh, used, drained, remote_frees, pages;
  uint64_t coloured; /* active pages whose first block is not at their start */
  /* Of the pages, those other threads gave back to the OS for their idle
   * owner (reclaim.c), not yet taken back by its drain; coloured ones. */
  uint64_t reclaimed, reclaimed_coloured;
} class_sum_t;

/* What a walk over the arenas fills. */
typedef struct {
  class_sum_t c[SC_CLASSES];
  sc_exact_sums_t x[SC_CLASSES]; /* exact statistics only */
  bool exact;
  bool unlocked;
  bool pages_missed; /* an unlocked walk had to leave some arena's pages out */
} sums_t;

/** A relaxed load of a counter another thread may be incrementing. */
static inline uint64_t load(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/** Add an active page's own counters to the sums in ctx. */
static void add_page(const sc_page_t *page, void *ctx) {
  sums_t *sum = ctx;
  unsigned c = __atomic_load_n(&page->class_idx, __ATOMIC_RELAXED);
  if (c >= SC_CLASSES) return;
  class_sum_t *d = &sum->c[c];
  d->allocs += load(&page->allocs);
  d->fresh += sc__page_fresh(page);
  /* A coloured page holds one block fewer (config.h). */
  if (__atomic_load_n(&page->shared_colour, __ATOMIC_RELAXED) != 0) d->coloured++;
  d->used += __atomic_load_n(&page->used, __ATOMIC_RELAXED) & SC_USED_COUNT;
}

/** Add arena a's counters, and its pages', to the sums in ctx. */
static void add_arena(sc_arena_t *a, void *ctx) {
  sums_t *sum = ctx;
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    const sc_class_counts_t *k = &a->counts[c];
    class_sum_t *d = &sum->c[c];
    d->allocs += load(&k->retired_allocs);
    d->fresh += load(&k->retired_fresh);
    d->drained += load(&k->drained);
    d->remote_frees += load(&k->remote_frees);
    d->pages += load(&k->pages);
    d->reclaimed += __atomic_load_n(&a->reclaimed_pages[c], __ATOMIC_RELAXED);
    d->reclaimed_coloured += __atomic_load_n(&a->reclaimed_coloured[c], __ATOMIC_RELAXED);
  }
  if (sum->exact) sc__ops.lifecycle.stats_arena(a, sum->x);
  if (!sc__segment_walk(a, add_page, sum, sum->unlocked)) sum->pages_missed = true;
}

/** a - b, or 0 when racing updates made b larger (a dump while threads run). */
static uint64_t sub0(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/** Fill one class's public figures from its sums. Without exact statistics
 * the blocks come from the pages: live blocks are the owners' counts plus
 * blocks freed by other threads and drained, minus every free done by a
 * thread of another arena (those waiting in remote lists are free, not
 * live). */
static void derive_class(struct sc_class_stats *o, const class_sum_t *d, const sc_exact_sums_t *x,
                         uint64_t size, uint64_t orphan_frees) {
  o->size = size;
  /* Reclaimed pages hold no memory: not the class's any more, though
   * their owner has not taken them back (their blocks count as freed). */
  uint64_t pages = sub0(d->pages, d->reclaimed);
  uint64_t coloured = sub0(d->coloured, d->reclaimed_coloured);
  o->pages = pages;
  o->reserved_bytes = pages * SC_PAGE_SIZE;
  o->capacity_blocks = pages * (SC_PAGE_SIZE / size) - (coloured < pages ? coloured : pages);
  o->remote_frees = d->remote_frees + orphan_frees;
  o->fresh_carves = d->fresh;
  if (x != NULL) {
    for (unsigned b = 0; b < SC_BUCKETS; b++) {
      o->request_histogram[b] = x->hist[b];
      o->allocs += x->hist[b];
    }
    /* Frees by the owners (what they handed out, less what is live and
     * what came back from other threads) and by other threads. */
    o->frees = sub0(o->allocs + d->remote_frees, x->live + d->drained);
    o->live_blocks = sub0(o->allocs, o->frees);
    /* Peaks are summed over each arena's (and, with tags, each tag's)
     * own: an upper bound, which no more blocks can be live than were
     * ever carved bounds too (tags that take turns with one class's
     * blocks would otherwise add up past it). */
    o->peak_live_blocks = x->peak < d->fresh ? x->peak : d->fresh;
    o->live_requested_bytes = o->live_blocks ? x->req_live : 0;
    o->peak_block_bytes = o->peak_live_blocks * size;
    o->peak_requested_bytes = x->req_peak < o->peak_block_bytes ? x->req_peak : o->peak_block_bytes;
    o->total_requested_bytes = x->req_total;
  } else {
    o->allocs = d->allocs;
    o->live_blocks = sub0(d->used + d->drained, o->remote_frees);
    o->frees = sub0(o->allocs, o->live_blocks);
  }
  o->reuse_hits = sub0(o->allocs, d->fresh);
  o->hit_rate_permille = o->allocs ? o->reuse_hits * 1000 / o->allocs : 0;
  o->live_block_bytes = o->live_blocks * size;
  o->total_block_bytes = o->allocs * size;
}

bool sc__stats_classes(struct sc_class_stats out[SC_CLASSES], bool unlocked) {
  sums_t sum;
  memset(&sum, 0, sizeof(sum));
  memset(out, 0, SC_CLASSES * sizeof(out[0]));
  sum.exact = (sc__features & SC_FEATURE_EXACT) != 0;
  sum.unlocked = unlocked;
  if (unlocked)
    sc__arenas_foreach_unlocked(add_arena, &sum);
  else
    sc__arenas_foreach(add_arena, &sum);
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    uint64_t orphans = atomic_load_explicit(&sc__orphan_remote_frees[c], memory_order_relaxed);
    derive_class(&out[c], &sum.c[c], sum.exact ? &sum.x[c] : NULL, sc__class_size(c), orphans);
  }
  return !sum.pages_missed;
}

/** Add class o into the totals t (every field is a count or a byte sum). */
static void add_totals(struct sc_class_stats *t, const struct sc_class_stats *o) {
  t->pages += o->pages;
  t->reserved_bytes += o->reserved_bytes;
  t->capacity_blocks += o->capacity_blocks;
  t->live_blocks += o->live_blocks;
  t->peak_live_blocks += o->peak_live_blocks;
  t->allocs += o->allocs;
  t->frees += o->frees;
  t->remote_frees += o->remote_frees;
  t->reuse_hits += o->reuse_hits;
  t->fresh_carves += o->fresh_carves;
  t->live_requested_bytes += o->live_requested_bytes;
  t->live_block_bytes += o->live_block_bytes;
  t->peak_requested_bytes += o->peak_requested_bytes;
  t->peak_block_bytes += o->peak_block_bytes;
  t->total_requested_bytes += o->total_requested_bytes;
  t->total_block_bytes += o->total_block_bytes;
  for (unsigned b = 0; b < SC_BUCKETS; b++) t->request_histogram[b] += o->request_histogram[b];
  t->hit_rate_permille = t->allocs ? t->reuse_hits * 1000 / t->allocs : 0;
}

/** Value in kB of the "<key>" line of /proc/self/status, in bytes; 0 if
 * absent. open/read only: safe in a signal handler. */
static uint64_t proc_status_bytes(const char *status, size_t len, const char *key) {
  size_t klen = strlen(key);
  for (size_t i = 0; i + klen < len; i++) {
    if ((i != 0 && status[i - 1] != '\n') || memcmp(status + i, key, klen) != 0) continue;
    uint64_t v = 0;
    for (i += klen; i < len && (status[i] == ' ' || status[i] == '\t'); i++) {
    }
    for (; i < len && status[i] >= '0' && status[i] <= '9'; i++)
      v = v * 10 + (uint64_t)(status[i] - '0');
    return v * 1024;
  }
  return 0;
}

/** Peak and current resident set from /proc/self/status. */
static void read_rss(uint64_t *peak, uint64_t *now) {
  char buf[4096];
  size_t len = 0;
  *peak = *now = 0;
  int fd = sc__os_open("/proc/self/status", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return;
  for (;;) {
    ssize_t r = read(fd, buf + len, sizeof(buf) - len);
    if (r <= 0) break;
    len += (size_t)r;
    if (len == sizeof(buf)) break;
  }
  close(fd);
  *peak = proc_status_bytes(buf, len, "VmHWM:");
  *now = proc_status_bytes(buf, len, "VmRSS:");
}

/** Add arena a's system-allocator counters to ctx (an sc_fallback_counts_t). */
static void add_fallback(sc_arena_t *a, void *ctx) {
  sc_fallback_counts_t *t = ctx;
  const sc_fallback_counts_t *k = &a->fallback;
  t->allocs += load(&k->allocs);
  t->frees += load(&k->frees);
  t->malloc_calls += load(&k->malloc_calls);
  t->realloc_calls += load(&k->realloc_calls);
  t->aligned_calls += load(&k->aligned_calls);
  t->bytes_total += load(&k->bytes_total);
  t->bytes_freed += load(&k->bytes_freed);
}

/** The system-allocator counters: every thread's, and the shared ones. */
static void snapshot_fallback(struct sc_stats *out, bool unlocked) {
  sc_fallback_counts_t t;
  memset(&t, 0, sizeof(t));
  if (unlocked)
    sc__arenas_foreach_unlocked(add_fallback, &t);
  else
    sc__arenas_foreach(add_fallback, &t);
  const sc_fallback_shared_t *f = &sc__fallback_shared;
#define SHARED(field) atomic_load_explicit(&f->field, memory_order_relaxed)
  out->fallback.malloc_calls = t.malloc_calls + SHARED(malloc_calls);
  out->fallback.realloc_calls = t.realloc_calls + SHARED(realloc_calls);
  out->fallback.aligned_calls = t.aligned_calls + SHARED(aligned_calls);
  out->fallback.allocs = t.allocs + SHARED(allocs);
  out->fallback.frees = t.frees + SHARED(frees);
  out->fallback.live_blocks = sub0(out->fallback.allocs, out->fallback.frees);
  out->fallback.total_bytes = t.bytes_total + SHARED(bytes_total);
  /* Blocks glibc made before we loaded may be freed through us: the sum
   * can wrap below zero (shown as it is, as before). */
  out->fallback.live_bytes = out->fallback.total_bytes - t.bytes_freed - SHARED(bytes_freed);
  /* Kept by exact statistics only (exact.c). */
  out->fallback.peak_live_bytes = (sc__features & SC_FEATURE_EXACT) ? SHARED(peak_live_bytes) : 0;
#undef SHARED
}

/** The memory-return figures (purge.c, sys_trim.c). */
static void snapshot_purge(struct sc_stats *out) {
  sc_purge_stats_t ps;
  sc__purge_stats(&ps);
  out->purge.purges = ps.purges;
  out->purge.bytes_returned = ps.bytes_returned;
  out->purge.pages_reused_after_purge = ps.pages_reused_after_purge;
  out->purge.system_trims = sc__sys_trim_count();
}

void sc__stats_rss(uint64_t *peak, uint64_t *now) { read_rss(peak, now); }

void sc__stats_snapshot(struct sc_stats *out, bool unlocked) {
  sc__stats_snapshot_no_rss(out, unlocked);
  read_rss(&out->process.peak_rss_bytes, &out->process.rss_bytes);
}

void sc__stats_snapshot_no_rss(struct sc_stats *out, bool unlocked) {
  memset(out, 0, sizeof(*out));
  /* 1. Per-class figures from every arena, and their totals. */
  bool complete = sc__stats_classes(out->classes, unlocked);
  bool exact = (sc__features & SC_FEATURE_EXACT) != 0;
  out->tracked = (complete ? SC_TRACKED_COUNTS : 0) | (exact ? SC_TRACKED_EXACT : 0);
  if (unlocked)
    sc__arena_counts_unlocked(&out->arenas.created, &out->arenas.live, &out->arenas.adopted);
  else
    sc__arena_counts(&out->arenas.created, &out->arenas.live, &out->arenas.adopted);
  out->arenas.threads = out->arenas.created + out->arenas.adopted;
  for (unsigned c = 0; c < SC_CLASSES; c++) add_totals(&out->totals, &out->classes[c]);
  /* 2. The other modules, the features (the frame figures) and the process. */
  snapshot_fallback(out, unlocked);
  snapshot_purge(out);
  sc__ops.lifecycle.stats(out);
  out->process.pid = (uint64_t)getpid();
  uint64_t now = sc__os_now_ns();
  out->process.wall_ns =
      sc__stats_start_ns != 0 && now > sc__stats_start_ns ? now - sc__stats_start_ns : 0;
}

sc_public void sc_stats_get(struct sc_stats *out) { sc__stats_snapshot(out, false); }
