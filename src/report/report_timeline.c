/* SPDX-License-Identifier: MIT */
/* report_timeline.c — the report's frame timeline section (report.h): the
 * frames features/timeline.c keeps, read through core/snapshot.h, as one
 * JSON table of every kept frame (with per-class lists) or, in text, the
 * last TEXT_FRAMES frames. Requested bytes are null without exact
 * statistics, never 0. */
#include "report/report.h"

#define TEXT_FRAMES 10 /* frames the text report shows */

typedef struct {
  uint64_t count, n, first; /* rows are entries first .. n-1 */
  bool exact;
  sc_frame_entry_t e; /* the row being written */
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
  sc_frame_entry_t *e = &rows->e;
  sc__timeline_entry(rows->count, rows->n, rows->first + r, e);
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

void sc__report_timeline(sc_emitter_t *e, bool exact, unsigned last) {
  rows_t rows;
  if (!sc__timeline_frames(&rows.count, &rows.n)) {
    sc__em_kv(e, "frame_timeline", NULL, sc__ev(SC_EV_NULL, 0));
    sc__em_text_end(e);
    sc__em_text(e, "frame timeline: off (SIZECLASS_FRAME_HISTORY=0)");
    sc__em_text_end(e);
    return;
  }
  rows.exact = exact;
  rows.first = 0;
  if (e->mode == SC_EM_JSON) {
    if (last != 0 && rows.n > last) rows.first = rows.n - last;
    sc__em_table(e, &tl_json, (unsigned)(rows.n - rows.first), tl_row, &rows);
    return;
  }
  if (rows.n == 0) return; /* the frames section already says none were marked */
  rows.first = rows.n > TEXT_FRAMES ? rows.n - TEXT_FRAMES : 0;
  sc__em_table(e, &tl_text, (unsigned)(rows.n - rows.first), tl_row, &rows);
}
