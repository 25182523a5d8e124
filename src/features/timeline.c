/* SPDX-License-Identifier: MIT */
/* timeline.c — the frame timeline (timeline.h).
 *
 * At each sc_frame_mark the class figures are summed over every arena
 * anyway (frame.c); this file keeps, per class, what changed during the
 * frame — allocations, frees, fresh carves, requested bytes — and what is
 * live at its end, in a ring of the last SIZECLASS_FRAME_HISTORY frames
 * (default 600: ten seconds at 60 Hz), mmap'd at the first mark. It costs
 * nothing between marks. Requested bytes exist only with exact statistics;
 * without them those figures are not tracked (null), never 0, and the
 * block-byte figures (blocks x class size) stand beside them in every tier.
 *
 * Readers (reports, signal handlers included) copy an entry under a
 * sequence counter, with bounded retries. */
#include "features/timeline.h"

#include <string.h>

#include "features/frame_check.h"
#include "util/settings.h"
#include "core/size_class.h"

_Atomic uint64_t sc__frame_now = 1;

static struct {
  bool read;              /* SIZECLASS_FRAME_HISTORY was read */
  uint64_t cap;           /* frames kept; 0: off */
  sc_frame_entry_t *ring; /* mmap'd, cap entries */
  uint64_t count;         /* frames written so far */
  /* Cumulative sums at the previous mark. */
  uint64_t allocs[SC_CLASSES], frees[SC_CLASSES], fresh[SC_CLASSES], bytes[SC_CLASSES];
} tl;

static _Atomic uint64_t tl_seq; /* odd while an entry is written */

/** The ring of SIZECLASS_FRAME_HISTORY frames, made at the first mark
 * (never inside malloc). */
static void read_history(void) {
  tl.read = true;
  tl.cap = sc__setting(SC_SET_FRAME_HISTORY); /* settings.c: 0..1000000 */
  if (tl.cap == 0) return;
  tl.ring =
      sc__os_map_aligned(((size_t)tl.cap * sizeof(sc_frame_entry_t) + 4095) & ~(size_t)4095, 4096);
  if (tl.ring == NULL) {
    sc__warn("SIZECLASS_FRAME_HISTORY: no memory for the frame timeline; it is off");
    tl.cap = 0;
  }
}

static uint64_t diff(uint64_t now, uint64_t before) { return now > before ? now - before : 0; }

void sc__timeline_mark(uint64_t frame, const struct sc_class_stats cls[SC_CLASSES]) {
  if (!tl.read) read_history();
  atomic_store_explicit(&sc__frame_now, frame + 1, memory_order_relaxed);
  sc__frame_check_mark(frame, cls);
  sc_frame_entry_t e;
  e.frame = frame;
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    const struct sc_class_stats *s = &cls[c];
    e.allocs[c] = diff(s->allocs, tl.allocs[c]);
    e.frees[c] = diff(s->frees, tl.frees[c]);
    e.fresh[c] = diff(s->fresh_carves, tl.fresh[c]);
    e.bytes[c] = diff(s->total_requested_bytes, tl.bytes[c]);
    e.live_blocks[c] = s->live_blocks;
    e.live_bytes[c] = s->live_requested_bytes;
    tl.allocs[c] = s->allocs;
    tl.frees[c] = s->frees;
    tl.fresh[c] = s->fresh_carves;
    tl.bytes[c] = s->total_requested_bytes;
  }
  if (tl.cap == 0) return;
  atomic_fetch_add_explicit(&tl_seq, 1, memory_order_acq_rel);
  tl.ring[tl.count % tl.cap] = e;
  __atomic_store_n(&tl.count, tl.count + 1, __ATOMIC_RELEASE);
  atomic_fetch_add_explicit(&tl_seq, 1, memory_order_release);
}

/* ---- what the report reads (core/snapshot.h) -------------------------------------------- */

bool sc__timeline_frames(uint64_t *count, uint64_t *kept) {
  *count = __atomic_load_n(&tl.count, __ATOMIC_ACQUIRE);
  *kept = *count < tl.cap ? *count : tl.cap;
  return !(tl.read && tl.cap == 0);
}

void sc__timeline_entry(uint64_t count, uint64_t kept, uint64_t i, sc_frame_entry_t *out) {
  const sc_frame_entry_t *src = &tl.ring[(count - kept + i) % tl.cap];
  for (int attempt = 0; attempt < 64; attempt++) {
    uint64_t before = atomic_load_explicit(&tl_seq, memory_order_acquire);
    if (before & 1) continue;
    memcpy(out, src, sizeof(*out));
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&tl_seq, memory_order_relaxed) == before) return;
  }
  memcpy(out, src, sizeof(*out));
}

bool sc__timeline_started(void) { return tl.read; }
