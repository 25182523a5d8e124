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

#define TEXT_FRAMES 10 /* frames the text report shows */

_Atomic uint64_t sc__frame_now = 1;

/* One frame. */
typedef struct {
  uint64_t frame;
  uint64_t allocs[SC_CLASSES], frees[SC_CLASSES], fresh[SC_CLASSES];
  uint64_t live_blocks[SC_CLASSES];
  uint64_t bytes[SC_CLASSES];      /* requested during the frame (exact tier) */
  uint64_t live_bytes[SC_CLASSES]; /* requested by live blocks at its end (exact tier) */
} entry_t;

static struct {
  bool read;      /* SIZECLASS_FRAME_HISTORY was read */
  uint64_t cap;   /* frames kept; 0: off */
  entry_t *ring;  /* mmap'd, cap entries */
  uint64_t count; /* frames written so far */
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
  tl.ring = sc__os_map_aligned(((size_t)tl.cap * sizeof(entry_t) + 4095) & ~(size_t)4095, 4096);
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
  entry_t e;
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

/** Copy entry i (0: the oldest of n kept when count frames were written). */
static void read_entry(uint64_t count, uint64_t n, uint64_t i, entry_t *out) {
  const entry_t *src = &tl.ring[(count - n + i) % tl.cap];
  for (int attempt = 0; attempt < 64; attempt++) {
    uint64_t before = atomic_load_explicit(&tl_seq, memory_order_acquire);
    if (before & 1) continue;
    memcpy(out, src, sizeof(*out));
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&tl_seq, memory_order_relaxed) == before) return;
  }
  memcpy(out, src, sizeof(*out));
}

/* ---- the report ------------------------------------------------------------------------- */

typedef struct {
  uint64_t count, n, first; /* rows are entries first .. n-1 */
  bool exact;
  entry_t e; /* the row being written */
} rows_t;

static const sc_em_col_t tl_cols[] = {
    {"frame", "frame", 8, 1},
    {"allocs", "allocs", 8, 1},
    {"frees", "frees", 8, 1},
    {"fresh_carves", "fresh", 6, 1},
    {"bytes", "bytes", 10, 1},
    {"live_bytes", "live-req", 10, 1},
    {"block_bytes", "blk-bytes", 10, 1},
    {"live_block_bytes", "live-blk", 10, 1},
    {"live_blocks", "live", 8, 1},
    {"class_allocs", NULL, 0, 0},
    {"class_frees", NULL, 0, 0},
    {"class_fresh_carves", NULL, 0, 0},
    {"class_live_blocks", NULL, 0, 0},
    {"class_bytes", NULL, 0, 0},
    {"class_live_bytes", NULL, 0, 0},
};

static const sc_em_table_t tl_json = {
    .key = "frame_timeline",
    .cols = tl_cols,
    .ncols = sizeof(tl_cols) / sizeof(tl_cols[0]),
};

static const sc_em_table_t tl_text = {
    .titles = {"frame timeline: the last frames (all kept frames, per class, in the JSON form; "
               "bytes: requested, blk-: blocks x class size)"},
    .ngroups = 1,
    .cols = tl_cols,
    .ncols = sizeof(tl_cols) / sizeof(tl_cols[0]),
};

static void tl_row(const void *ctx, unsigned r, sc_ev_t *v) {
  rows_t *rows = (rows_t *)(uintptr_t)ctx; /* the row's scratch space */
  entry_t *e = &rows->e;
  read_entry(rows->count, rows->n, rows->first + r, e);
  uint64_t allocs = 0, frees = 0, fresh = 0, bytes = 0, live_bytes = 0, block_bytes = 0;
  uint64_t live_block_bytes = 0, live_blocks = 0;
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    uint64_t size = sc__class_size(c);
    allocs += e->allocs[c];
    frees += e->frees[c];
    fresh += e->fresh[c];
    bytes += e->bytes[c];
    live_bytes += e->live_bytes[c];
    block_bytes += e->allocs[c] * size;
    live_block_bytes += e->live_blocks[c] * size;
    live_blocks += e->live_blocks[c];
  }
  sc_ev_t null = sc__ev(SC_EV_NULL, 0);
  v[0] = sc__ev(SC_EV_COUNT, e->frame);
  v[1] = sc__ev(SC_EV_COUNT, allocs);
  v[2] = sc__ev(SC_EV_COUNT, frees);
  v[3] = sc__ev(SC_EV_COUNT, fresh);
  v[4] = rows->exact ? sc__ev(SC_EV_BYTES, bytes) : null;
  v[5] = rows->exact ? sc__ev(SC_EV_BYTES, live_bytes) : null;
  v[6] = sc__ev(SC_EV_BYTES, block_bytes);
  v[7] = sc__ev(SC_EV_BYTES, live_block_bytes);
  v[8] = sc__ev(SC_EV_COUNT, live_blocks);
  v[9] = sc__ev_list(e->allocs, SC_CLASSES);
  v[10] = sc__ev_list(e->frees, SC_CLASSES);
  v[11] = sc__ev_list(e->fresh, SC_CLASSES);
  v[12] = sc__ev_list(e->live_blocks, SC_CLASSES);
  v[13] = rows->exact ? sc__ev_list(e->bytes, SC_CLASSES) : null;
  v[14] = rows->exact ? sc__ev_list(e->live_bytes, SC_CLASSES) : null;
}

void sc__report_timeline(sc_emitter_t *e, bool exact) {
  if (tl.read && tl.cap == 0) {
    sc__em_kv(e, "frame_timeline", NULL, sc__ev(SC_EV_NULL, 0));
    sc__em_text_end(e);
    sc__em_text(e, "frame timeline: off (SIZECLASS_FRAME_HISTORY=0)");
    sc__em_text_end(e);
    return;
  }
  rows_t rows;
  rows.count = __atomic_load_n(&tl.count, __ATOMIC_ACQUIRE);
  rows.n = rows.count < tl.cap ? rows.count : tl.cap;
  rows.exact = exact;
  rows.first = 0;
  if (e->mode == SC_EM_JSON) {
    sc__em_table(e, &tl_json, (unsigned)rows.n, tl_row, &rows);
    return;
  }
  if (rows.n == 0) return; /* the frames section already says none were marked */
  rows.first = rows.n > TEXT_FRAMES ? rows.n - TEXT_FRAMES : 0;
  sc__em_table(e, &tl_text, (unsigned)(rows.n - rows.first), tl_row, &rows);
}

bool sc__timeline_started(void) { return tl.read; }
