/* SPDX-License-Identifier: MIT */
/* frame.c — allocator-wide frame statistics (sc_frame_mark).
 *
 * A frame is the span between two marks; the first frame runs from the
 * library's start to the first mark, so program setup lands in it. At each
 * mark the class figures are summed over every arena (stats.c: allocations,
 * frees, fresh carves, and with exact statistics requested bytes) and
 * compared with the sums of the previous mark; the difference is that frame. Only class
 * allocations (<= 1024 B) count: the system allocator's are not frames'
 * business.
 *
 * Warm-up: the first SIZECLASS_WARMUP_FRAMES frames (default 60, one second
 * at 60 fps; settings.c) are excluded from the count of frames
 * with zero fresh carves — the seeds' steady-state claim that, once warm,
 * every allocation reuses a freed block.
 *
 * Nothing here allocates: marks sum plain counters under the arena registry
 * lock, and readers get a snapshot guarded by a sequence counter (bounded
 * retries, so a dump from a signal handler that interrupted a mark still
 * finishes). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "features/frame.h"
#include "core/internal.h"
#include "util/settings.h"
#include "sizeclass.h"
#include "features/timeline.h"
#include "core/snapshot.h"
#include "util/os.h"

/* Counter sums at one instant. */
typedef struct totals_s {
  uint64_t allocs;
  uint64_t frees;
  uint64_t fresh_carves;
  uint64_t bytes;
} totals_t;

static pthread_mutex_t mark_lock = PTHREAD_MUTEX_INITIALIZER; /* one mark at a time */
static totals_t last_totals;                                  /* sums at the previous mark */
static sc_frame_stats_t frame_stats;
static _Atomic uint64_t frame_seq; /* odd while frame_stats is being written */

/** The class counters summed over every arena (into cls) and class. */
static totals_t totals_now(struct sc_class_stats cls[SC_CLASSES]) {
  totals_t t = {0, 0, 0, 0};
  sc__stats_classes(cls, false);
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    t.allocs += cls[c].allocs;
    t.frees += cls[c].frees;
    t.fresh_carves += cls[c].fresh_carves;
    t.bytes += cls[c].total_requested_bytes; /* 0 without exact statistics */
  }
  return t;
}

/** Close the current frame: diff the counter sums with the last mark's. */
sc_public void sc_frame_mark(void) {
  pthread_mutex_lock(&mark_lock);
  struct sc_class_stats cls[SC_CLASSES];
  totals_t now = totals_now(cls);
  totals_t d = {now.allocs - last_totals.allocs, now.frees - last_totals.frees,
                now.fresh_carves - last_totals.fresh_carves, now.bytes - last_totals.bytes};
  last_totals = now;

  atomic_fetch_add_explicit(&frame_seq, 1, memory_order_acq_rel);
  sc_frame_stats_t *f = &frame_stats;
  f->warmup_frames = sc__setting(SC_SET_WARMUP_FRAMES); /* sc_option_set may change it */
  f->frames++;
  if (d.allocs > f->max_allocs) f->max_allocs = d.allocs;
  f->total_allocs += d.allocs;
  f->total_frees += d.frees;
  f->total_fresh_carves += d.fresh_carves;
  f->total_bytes += d.bytes;
  if (f->frames > f->warmup_frames && d.fresh_carves == 0) f->zero_fresh_frames++;
  f->last_allocs = d.allocs;
  f->last_frees = d.frees;
  f->last_fresh_carves = d.fresh_carves;
  f->last_bytes = d.bytes;
  atomic_fetch_add_explicit(&frame_seq, 1, memory_order_release);
  sc__timeline_mark(f->frames, cls); /* per-class history, steady-state check */
  pthread_mutex_unlock(&mark_lock);
  /* The live snapshot (SIZECLASS_LIVE), when a higher layer listens. */
  sc_frame_listener_fn listener = atomic_load_explicit(&sc__frame_listener, memory_order_acquire);
  if (listener != NULL) listener();
}

_Atomic(sc_frame_listener_fn) sc__frame_listener;

void sc__frame_stats(sc_frame_stats_t *out) {
  /* A consistent copy unless a mark keeps running under us; after a few
   * tries (a signal handler interrupting its own thread's mark) take what
   * is there rather than spin forever. */
  for (int attempt = 0; attempt < 64; attempt++) {
    uint64_t before = atomic_load_explicit(&frame_seq, memory_order_acquire);
    if (before & 1) continue;
    memcpy(out, &frame_stats, sizeof(*out));
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&frame_seq, memory_order_relaxed) == before) return;
  }
  memcpy(out, &frame_stats, sizeof(*out));
}

static void frame_fork_child(void) {
  pthread_mutex_init(&mark_lock, NULL);
  /* A writer that died mid-update leaves the sequence odd: make it even. */
  if (atomic_load_explicit(&frame_seq, memory_order_relaxed) & 1)
    atomic_fetch_add_explicit(&frame_seq, 1, memory_order_relaxed);
}

__attribute__((constructor)) static void frame_on_load(void) {
  sc__os_atfork(NULL, NULL, frame_fork_child);
}
