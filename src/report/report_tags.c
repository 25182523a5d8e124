/* SPDX-License-Identifier: MIT */
/* report_tags.c — the report's tags, threads and budgets (docs/tags.md):
 * one table each, largest first; JSON "tags", "threads", "budgets" (null
 * while tags are off). Reads features/tags.c's figures into static
 * buffers (a report never allocates; reports are not written twice at
 * once). */
#include "core/snapshot.h"
#include "report/emit.h"
#include "report/report_tags.h"
#include "sizeclass.h"

#define SC_TAGS 256 /* tags.h */

static struct sc_tag_stats tags[SC_TAGS];
static struct sc_thread_stats threads[256];
static sc_budget_view_t budgets[64];
static unsigned order[256];

static const sc_em_col_t tag_cols[] = {
    {"name", "tag", 16, 0},
    {"budget", "budget", 10, 1},
    {"allocs", "allocs", 10, 1},
    {"frees", "frees", 10, 1},
    {"live_blocks", "live", 9, 1},
    {"live_requested_bytes", "requested", 10, 1},
    {"peak_requested_bytes", NULL, 0, 0},
    {"live_block_bytes", "bytes", 10, 1},
    {"peak_block_bytes", "peak", 10, 1},
    {"system_live_bytes", "sys_bytes", 10, 1},
    {"system_peak_bytes", "sys_peak", 10, 1},
};
static const sc_em_table_t tag_table = {
    .key = "tags",
    .titles = {"tags (largest first; peaks: each thread's own, summed)"},
    .ngroups = 1,
    .cols = tag_cols,
    .ncols = sizeof(tag_cols) / sizeof(tag_cols[0]),
};

static sc_ev_t opt_bytes(uint64_t v) { return v ? sc__ev(SC_EV_BYTES, v) : sc__ev(SC_EV_NULL, 0); }

/* Rows: ctx is the rows (NULL: the report's own), in the order of order[]. */
static void tag_row(const void *ctx, unsigned r, sc_ev_t *v) {
  const struct sc_tag_stats *base = ctx != NULL ? ctx : tags;
  const struct sc_tag_stats *s = &base[order[r]];
  unsigned k = 0;
  v[k++] = sc__ev_str(s->name);
  v[k++] = opt_bytes(s->budget);
  v[k++] = sc__ev(SC_EV_COUNT, s->allocs);
  v[k++] = sc__ev(SC_EV_COUNT, s->frees);
  v[k++] = sc__ev(SC_EV_COUNT, s->live_blocks);
  v[k++] = sc__ev(SC_EV_BYTES, s->live_requested_bytes);
  v[k++] = sc__ev(SC_EV_BYTES, s->peak_requested_bytes);
  v[k++] = sc__ev(SC_EV_BYTES, s->live_block_bytes);
  v[k++] = sc__ev(SC_EV_BYTES, s->peak_block_bytes);
  v[k++] = sc__ev(SC_EV_BYTES, s->system_live_bytes);
  v[k] = sc__ev(SC_EV_BYTES, s->system_peak_bytes);
}

/* A tag's classes (JSON only): "classes": [{size, live_blocks,
 * peak_live_blocks, allocs}] inside the tag's object. */
static const sc_em_col_t tag_class_cols[] = {
    {"size", NULL, 0, 0},
    {"live_blocks", NULL, 0, 0},
    {"peak_live_blocks", NULL, 0, 0},
    {"allocs", NULL, 0, 0},
};
static const sc_em_table_t tag_class_table = {
    .key = "classes",
    .ngroups = 0,
    .cols = tag_class_cols,
    .ncols = sizeof(tag_class_cols) / sizeof(tag_class_cols[0]),
};

static void tag_class_row(const void *ctx, unsigned c, sc_ev_t *v) {
  const struct sc_tag_stats *s = ctx;
  v[0] = sc__ev(SC_EV_COUNT, s->classes[c].size);
  v[1] = sc__ev(SC_EV_COUNT, s->classes[c].live_blocks);
  v[2] = sc__ev(SC_EV_COUNT, s->classes[c].peak_live_blocks);
  v[3] = sc__ev(SC_EV_COUNT, s->classes[c].allocs);
}

/** The tags base[order[0..n)]: a text table, or in JSON one object per
 * tag with its classes. */
static void tags_out(sc_emitter_t *e, const struct sc_tag_stats *base, unsigned n) {
  if (e->mode != SC_EM_JSON) {
    sc__em_table(e, &tag_table, n, tag_row, base);
    return;
  }
  sc_ev_t v[sizeof(tag_cols) / sizeof(tag_cols[0])];
  sc__em_array(e, "tags");
  for (unsigned r = 0; r < n; r++) {
    tag_row(base, r, v);
    sc__em_item(e);
    for (unsigned k = 0; k < sizeof(tag_cols) / sizeof(tag_cols[0]); k++)
      sc__em_kv(e, tag_cols[k].key, NULL, v[k]);
    sc__em_table(e, &tag_class_table, SC_CLASSES, tag_class_row, &base[order[r]]);
    sc__em_item_end(e);
  }
  sc__em_array_end(e);
}

static const sc_em_col_t thread_cols[] = {
    {"name", "thread", 16, 0},
    {"tid", "tid", 8, 1},
    {"exited", "exited", 6, 1},
    {"count", "count", 6, 1},
    {"allocs", "allocs", 10, 1},
    {"frees", "frees", 10, 1},
    {"live_block_bytes", "bytes", 10, 1},
    {"peak_block_bytes", "peak", 10, 1},
    {"system_live_bytes", "sys_bytes", 10, 1},
    {"budget", "budget", 10, 1},
};
static const sc_em_table_t thread_table = {
    .key = "threads",
    .titles = {"threads (largest first; exited threads of one name are one row)"},
    .ngroups = 1,
    .cols = thread_cols,
    .ncols = sizeof(thread_cols) / sizeof(thread_cols[0]),
};

static void thread_row(const void *ctx, unsigned r, sc_ev_t *v) {
  const struct sc_thread_stats *base = ctx != NULL ? ctx : threads;
  const struct sc_thread_stats *s = &base[order[r]];
  unsigned k = 0;
  v[k++] = sc__ev_str(s->name);
  v[k++] = sc__ev(SC_EV_COUNT, (uint64_t)s->tid);
  v[k++] = sc__ev(SC_EV_BOOL, s->exited);
  v[k++] = sc__ev(SC_EV_COUNT, s->count);
  v[k++] = sc__ev(SC_EV_COUNT, s->allocs);
  v[k++] = sc__ev(SC_EV_COUNT, s->frees);
  v[k++] = sc__ev(SC_EV_BYTES, s->live_block_bytes);
  v[k++] = sc__ev(SC_EV_BYTES, s->peak_block_bytes);
  v[k++] = sc__ev(SC_EV_BYTES, s->system_live_bytes);
  v[k++] = opt_bytes(s->budget);
}

static const sc_em_col_t budget_cols[] = {
    {"what", "budget", 20, 0},      {"limit", "limit", 10, 1},
    {"live", "live", 10, 1},        {"peak", "peak", 10, 1},
    {"breached", "breached", 8, 1}, {"first_breach_frame", "frame", 8, 1},
};
static const sc_em_table_t budget_table = {
    .key = "budgets",
    .titles = {"budgets (live and peak as last checked)"},
    .ngroups = 1,
    .cols = budget_cols,
    .ncols = sizeof(budget_cols) / sizeof(budget_cols[0]),
};

static void budget_row(const void *ctx, unsigned r, sc_ev_t *v) {
  (void)ctx;
  const sc_budget_view_t *b = &budgets[r];
  v[0] = sc__ev_str(b->what);
  v[1] = sc__ev(SC_EV_BYTES, b->limit);
  v[2] = sc__ev(SC_EV_BYTES, b->live);
  v[3] = sc__ev(SC_EV_BYTES, b->peak);
  v[4] = sc__ev(SC_EV_BOOL, b->breached);
  v[5] = b->breached ? sc__ev(SC_EV_COUNT, b->first_frame) : sc__ev(SC_EV_NULL, 0);
}

/** order[0..n) by key, largest first (insertion sort: n is small). */
static void sort_desc(unsigned n, const uint64_t *key) {
  for (unsigned i = 0; i < n; i++) order[i] = i;
  for (unsigned i = 1; i < n; i++)
    for (unsigned j = i; j > 0 && key[order[j]] > key[order[j - 1]]; j--) {
      unsigned t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
}

void sc__report_tags(sc_emitter_t *e, bool unlocked, unsigned max_rows) {
  static uint64_t key[SC_TAGS]; /* SC_TAGS is 256: threads fit too */
  if (!sc__tags_report_on()) {
    sc__em_kv(e, "tags", NULL, sc__ev(SC_EV_NULL, 0));
    sc__em_kv(e, "threads", NULL, sc__ev(SC_EV_NULL, 0));
    sc__em_kv(e, "budgets", NULL, sc__ev(SC_EV_NULL, 0));
    return;
  }
  size_t n = sc__tags_fill(tags, SC_TAGS, unlocked);
  if (n > SC_TAGS) n = SC_TAGS;
  for (unsigned i = 0; i < n; i++) key[i] = tags[i].live_block_bytes + tags[i].system_live_bytes;
  sort_desc((unsigned)n, key);
  tags_out(e, tags, (unsigned)(n < max_rows ? n : max_rows));
  size_t m = sc__tags_threads_fill(threads, 256, unlocked);
  if (m > 256) m = 256;
  for (unsigned i = 0; i < m; i++)
    key[i] = threads[i].live_block_bytes + threads[i].system_live_bytes;
  sort_desc((unsigned)m, key);
  sc__em_table(e, &thread_table, (unsigned)(m < max_rows ? m : max_rows), thread_row, NULL);
  size_t b = sc__budget_list(budgets, 64);
  sc__em_table(e, &budget_table, (unsigned)(b > 64 ? 64 : b), budget_row, NULL);
}

void sc__report_named_tags(sc_emitter_t *e, const sc_named_t *n) {
  if (!n->tags_on) {
    sc__em_kv(e, "tags", NULL, sc__ev(SC_EV_NULL, 0));
    sc__em_kv(e, "threads", NULL, sc__ev(SC_EV_NULL, 0));
    return;
  }
  /* Kept largest first: in their order. */
  unsigned nt = n->ntags < SC_NAMED_TAGS ? n->ntags : SC_NAMED_TAGS;
  unsigned nth = n->nthreads < SC_NAMED_THREADS ? n->nthreads : SC_NAMED_THREADS;
  for (unsigned i = 0; i < SC_NAMED_TAGS || i < SC_NAMED_THREADS; i++) order[i] = i;
  tags_out(e, n->tags, nt);
  sc__em_table(e, &thread_table, nth, thread_row, n->threads);
}
