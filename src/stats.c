/* stats.c — the statistics snapshot: every arena's per-class counters summed
 * into one struct sc_stats, with the fallback, arena, frame, purge and
 * process figures beside them. Reads only; never allocates, never blocks
 * when asked to walk unlocked (the dump from a signal handler). */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "purge.h"
#include "size_class.h"
#include "stats.h"

uint64_t sc__stats_start_ns;

/* Raw sums over arenas, before the derived figures. req_live wraps per
 * arena (a block may be freed by a thread other than its owner); its sum is
 * exact. peak and req_peak are each arena's owner view at its own peak. */
typedef struct {
  uint64_t frees, remote_frees, fresh_carves, pages, peak, req_total, req_live, req_peak;
  uint64_t hist[SC_BUCKETS];
} class_sum_t;

/** A relaxed load of a counter another thread may be incrementing. */
static inline uint64_t load(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/** Add arena a's counters to the sums in ctx (a class_sum_t[SC_CLASSES]). */
static void add_arena(sc_arena_t *a, void *ctx) {
  class_sum_t *sum = ctx;
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    const sc_class_stats_t *s = &a->stats[c];
    class_sum_t *d = &sum[c];
    d->frees += load(&s->frees);
    d->remote_frees += load(&s->remote_frees);
    d->fresh_carves += load(&s->fresh_carves);
    d->pages += load(&s->pages);
    d->peak += load(&s->peak);
    d->req_total += load(&s->req_total);
    d->req_live += load(&s->req_live);
    d->req_peak += load(&s->req_peak);
    for (unsigned b = 0; b < SC_BUCKETS; b++) d->hist[b] += load(&s->hist[b]);
  }
}

/** a - b, or 0 when racing updates made b larger (a dump while threads run). */
static uint64_t sub0(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/** Fill one class's public figures from its sums. */
static void derive_class(struct sc_class_stats *o, const class_sum_t *d, uint64_t size) {
  o->size = size;
  for (unsigned b = 0; b < SC_BUCKETS; b++) {
    o->request_histogram[b] = d->hist[b];
    o->allocs += d->hist[b];
  }
  o->pages = d->pages;
  o->reserved_bytes = d->pages * SC_PAGE_SIZE;
  o->capacity_blocks = d->pages * (SC_PAGE_SIZE / size);
  o->frees = d->frees;
  o->remote_frees = d->remote_frees;
  o->live_blocks = sub0(o->allocs, d->frees);
  o->peak_live_blocks = d->peak;
  o->fresh_carves = d->fresh_carves;
  o->reuse_hits = sub0(o->allocs, d->fresh_carves);
  o->hit_rate_permille = o->allocs ? o->reuse_hits * 1000 / o->allocs : 0;
  o->live_requested_bytes = o->live_blocks ? d->req_live : 0;
  o->live_block_bytes = o->live_blocks * size;
  o->peak_requested_bytes = d->req_peak;
  o->peak_block_bytes = d->peak * size;
  o->total_requested_bytes = d->req_total;
  o->total_block_bytes = o->allocs * size;
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
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
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

/** The system-allocator counters (atomics in fallback.c). */
static void snapshot_fallback(struct sc_stats *out) {
  const sc_fallback_stats_t *f = &sc__fallback_stats;
  out->fallback.malloc_calls = atomic_load_explicit(&f->malloc_calls, memory_order_relaxed);
  out->fallback.realloc_calls = atomic_load_explicit(&f->realloc_calls, memory_order_relaxed);
  out->fallback.aligned_calls = atomic_load_explicit(&f->aligned_calls, memory_order_relaxed);
  out->fallback.allocs = atomic_load_explicit(&f->allocs, memory_order_relaxed);
  out->fallback.frees = atomic_load_explicit(&f->frees, memory_order_relaxed);
  out->fallback.live_blocks = sub0(out->fallback.allocs, out->fallback.frees);
  out->fallback.total_bytes = atomic_load_explicit(&f->bytes_total, memory_order_relaxed);
  out->fallback.live_bytes = atomic_load_explicit(&f->live_bytes, memory_order_relaxed);
  out->fallback.peak_live_bytes = atomic_load_explicit(&f->peak_live_bytes, memory_order_relaxed);
}

/** Frame and purge figures from their modules. */
static void snapshot_frames_purge(struct sc_stats *out) {
  sc_frame_stats_t fs;
  sc__frame_stats(&fs);
  out->frames.frames = fs.frames;
  out->frames.warmup_frames = fs.warmup_frames;
  out->frames.max_allocs = fs.max_allocs;
  out->frames.total_allocs = fs.total_allocs;
  out->frames.total_frees = fs.total_frees;
  out->frames.total_fresh_carves = fs.total_fresh_carves;
  out->frames.total_bytes = fs.total_bytes;
  out->frames.zero_fresh_frames = fs.zero_fresh_frames;
  out->frames.last_allocs = fs.last_allocs;
  out->frames.last_frees = fs.last_frees;
  out->frames.last_fresh_carves = fs.last_fresh_carves;
  out->frames.last_bytes = fs.last_bytes;
  sc_purge_stats_t ps;
  sc__purge_stats(&ps);
  out->purge.purges = ps.purges;
  out->purge.bytes_returned = ps.bytes_returned;
  out->purge.pages_reused_after_purge = ps.pages_reused_after_purge;
}

void sc__stats_snapshot(struct sc_stats *out, bool unlocked) {
  class_sum_t sum[SC_CLASSES];
  memset(out, 0, sizeof(*out));
  memset(sum, 0, sizeof(sum));
  /* 1. The class counters, summed over every arena. */
  if (unlocked) {
    sc__arenas_foreach_unlocked(add_arena, sum);
    sc__arena_counts_unlocked(&out->arenas.created, &out->arenas.live, &out->arenas.adopted);
  } else {
    sc__arenas_foreach(add_arena, sum);
    sc__arena_counts(&out->arenas.created, &out->arenas.live, &out->arenas.adopted);
  }
  out->arenas.threads = out->arenas.created + out->arenas.adopted;
  /* 2. Derived per-class figures and their totals. */
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    derive_class(&out->classes[c], &sum[c], sc__class_size(c));
    add_totals(&out->totals, &out->classes[c]);
  }
  /* 3. The other modules and the process. */
  snapshot_fallback(out);
  snapshot_frames_purge(out);
  out->process.pid = (uint64_t)getpid();
  read_rss(&out->process.peak_rss_bytes, &out->process.rss_bytes);
  uint64_t now = sc__os_now_ns();
  out->process.wall_ns =
      sc__stats_start_ns != 0 && now > sc__stats_start_ns ? now - sc__stats_start_ns : 0;
}

sc_public void sc_stats_get(struct sc_stats *out) { sc__stats_snapshot(out, false); }
