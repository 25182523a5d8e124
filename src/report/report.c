/* SPDX-License-Identifier: MIT */
/* report.c — what the statistics report says, in which order, under which
 * keys and headers (docs/stats.md). It describes each section once to the
 * emitter (emit.c), which renders text or JSON from the same values. */
#include "report/proc_info.h"
#include "report/report_tags.h"
#include "report/report_sites.h"
#include "report/report.h"

#include <string.h>

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define VERSION_STRING \
  STRINGIFY(SC_VERSION_MAJOR) "." STRINGIFY(SC_VERSION_MINOR) "." STRINGIFY(SC_VERSION_PATCH)

/* Text tables of the class table (bits of sc_em_col_t.groups). */
enum { G_BLOCKS = 1, G_PAGES = 2, G_BYTES = 4, G_TOTAL = 8 };

/* Everything the row functions read. The statistics come first: the
 * class table's rows read only them (stats_of), so that a named snapshot's
 * statistics print through the same rows. */
typedef struct report_s {
  const struct sc_stats *st;
  sc_reason_t reason;
  sc_advice_t advice[SC_CLASSES];
  unsigned order[SC_CLASSES]; /* classes by wasted bytes, most first */
  unsigned ranked;            /* classes with allocations, in `order` */
  unsigned leak_class[SC_CLASSES];
  unsigned leaks;                              /* classes with live blocks */
  uint16_t hist_cell[SC_CLASSES * SC_BUCKETS]; /* c * SC_BUCKETS + bucket */
  unsigned hist_cells;                         /* non-empty histogram buckets */
} report_t;

/* ---- the class table --------------------------------------------------------- */

static const sc_em_col_t class_cols[] = {
    {"size", "class", 6, 0},
    {"pages", "pages", 6, G_PAGES},
    {"reserved_bytes", "reserved", 9, G_PAGES},
    {"capacity_blocks", "capacity", 8, G_PAGES},
    {"live_blocks", "live", 8, G_BLOCKS | G_PAGES},
    {"peak_live_blocks", "peak", 8, G_BLOCKS},
    {"allocs", "allocs", 8, G_BLOCKS},
    {"frees", "frees", 8, G_BLOCKS},
    {"remote_frees", "remote", 8, G_BLOCKS},
    {"reuse_hits", "reuse", 8, G_BLOCKS},
    {"fresh_carves", "fresh", 8, G_BLOCKS},
    {"hit_rate_permille", "hit-rate", 8, G_BLOCKS},
    {"free_blocks", "free", 8, G_PAGES},
    {"external_fragmentation_permille", "ext-frag", 8, G_PAGES},
    {"live_requested_bytes", "live-req", 9, G_BYTES},
    {"live_block_bytes", "live-blk", 9, G_BYTES},
    {"live_utilization_permille", "util", 6, G_BYTES},
    {"live_internal_fragmentation_permille", "int-frag", 8, G_BYTES},
    {"peak_requested_bytes", "peak-req", 9, G_BYTES},
    {"peak_block_bytes", "peak-blk", 9, G_BYTES},
    {"peak_utilization_permille", "util", 6, G_BYTES},
    {"peak_internal_fragmentation_permille", "int-frag", 8, G_BYTES},
    {"total_requested_bytes", "total-req", 9, G_TOTAL},
    {"total_block_bytes", "total-blk", 9, G_TOTAL},
    {"total_utilization_permille", "util", 6, G_TOTAL},
    {"total_internal_fragmentation_permille", "int-frag", 8, G_TOTAL},
    {"wasted_bytes", "wasted", 9, G_TOTAL},
    {"mean_request_bytes", "mean-req", 8, G_TOTAL},
    {"request_histogram", NULL, 0, 0},
};

static const sc_em_table_t class_table = {
    .key = "classes",
    .total_key = "totals",
    .titles = {"classes: blocks (live = allocs - frees; peak: sum of per-thread peaks)",
               "classes: pages and external fragmentation (free blocks / capacity)",
               "classes: bytes of live blocks and at peak (util = requested / block bytes)",
               "classes: bytes over the whole run"},
    .ngroups = 4,
    .cols = class_cols,
    .ncols = sizeof(class_cols) / sizeof(class_cols[0]),
};

/** v, or null when exact statistics were off (its figure was not tracked). */
static sc_ev_t exact_st(const struct sc_stats *st, sc_ev_t v) {
  return (st->tracked & SC_TRACKED_EXACT) ? v : sc__ev(SC_EV_NULL, 0);
}

static sc_ev_t exact(const report_t *rep, sc_ev_t v) { return exact_st(rep->st, v); }

/** The statistics a row function's context points to: a report_t, or a
 * lone `const struct sc_stats *` (a report_t begins with one). */
static const struct sc_stats *stats_of(const void *ctx) {
  return *(const struct sc_stats *const *)ctx;
}

static void class_row(const void *ctx, unsigned r, sc_ev_t *v) {
  const struct sc_stats *st = stats_of(ctx);
  const struct sc_class_stats *s = r < SC_CLASSES ? &st->classes[r] : &st->totals;
  uint64_t free_blocks =
      s->capacity_blocks > s->live_blocks ? s->capacity_blocks - s->live_blocks : 0;
  uint64_t wasted = s->total_block_bytes > s->total_requested_bytes
                        ? s->total_block_bytes - s->total_requested_bytes
                        : 0;
  unsigned i = 0;
  v[i++] = r < SC_CLASSES ? sc__ev(SC_EV_SIZE, s->size) : sc__ev_label("total");
  v[i++] = sc__ev(SC_EV_COUNT, s->pages);
  v[i++] = sc__ev(SC_EV_BYTES, s->reserved_bytes);
  v[i++] = sc__ev(SC_EV_COUNT, s->capacity_blocks);
  v[i++] = sc__ev(SC_EV_COUNT, s->live_blocks);
  v[i++] = exact_st(st, sc__ev(SC_EV_COUNT, s->peak_live_blocks));
  v[i++] = sc__ev(SC_EV_COUNT, s->allocs);
  v[i++] = sc__ev(SC_EV_COUNT, s->frees);
  v[i++] = sc__ev(SC_EV_COUNT, s->remote_frees);
  v[i++] = sc__ev(SC_EV_COUNT, s->reuse_hits);
  v[i++] = sc__ev(SC_EV_COUNT, s->fresh_carves);
  /* No allocations: no hit rate ("-", null), not 0 %. */
  v[i++] = s->allocs ? sc__ev(SC_EV_PERMILLE, s->hit_rate_permille) : sc__ev(SC_EV_NULL, 0);
  v[i++] = sc__ev(SC_EV_COUNT, free_blocks);
  /* Nothing live: the free blocks are the class's retained pages, not
   * blocks lost between live ones; external fragmentation is n/a ("-",
   * null) rather than an alarming 100 %. */
  v[i++] = s->live_blocks ? sc__ev_ratio(free_blocks, s->capacity_blocks) : sc__ev(SC_EV_NULL, 0);
  v[i++] = exact_st(st, sc__ev(SC_EV_BYTES, s->live_requested_bytes));
  v[i++] = sc__ev(SC_EV_BYTES, s->live_block_bytes);
  v[i++] = exact_st(st, sc__ev_ratio(s->live_requested_bytes, s->live_block_bytes));
  v[i++] = exact_st(st, sc__ev_ratio_rest(s->live_requested_bytes, s->live_block_bytes));
  v[i++] = exact_st(st, sc__ev(SC_EV_BYTES, s->peak_requested_bytes));
  v[i++] = exact_st(st, sc__ev(SC_EV_BYTES, s->peak_block_bytes));
  v[i++] = exact_st(st, sc__ev_ratio(s->peak_requested_bytes, s->peak_block_bytes));
  v[i++] = exact_st(st, sc__ev_ratio_rest(s->peak_requested_bytes, s->peak_block_bytes));
  v[i++] = exact_st(st, sc__ev(SC_EV_BYTES, s->total_requested_bytes));
  v[i++] = sc__ev(SC_EV_BYTES, s->total_block_bytes);
  v[i++] = exact_st(st, sc__ev_ratio(s->total_requested_bytes, s->total_block_bytes));
  v[i++] = exact_st(st, sc__ev_ratio_rest(s->total_requested_bytes, s->total_block_bytes));
  v[i++] = exact_st(st, sc__ev(SC_EV_BYTES, wasted));
  v[i++] = exact_st(st, s->allocs ? sc__ev(SC_EV_TENTHS, s->total_requested_bytes * 10 / s->allocs)
                                  : sc__ev(SC_EV_NULL, 0));
  v[i] = exact_st(st, sc__ev_list(s->request_histogram, SC_STATS_BUCKETS));
}

/* ---- request sizes (text; JSON has request_histogram per class) ---------------- */

static const sc_em_col_t hist_cols[] = {
    {NULL, "class", 6, 0},     {NULL, "from", 6, 1},  {NULL, "to", 6, 1},
    {NULL, "requests", 10, 1}, {NULL, "share", 6, 1}, {NULL, "waste", 6, 1},
};

static const sc_em_table_t hist_table = {
    .titles = {"request sizes (16 B buckets; share of the class's allocations; waste: block "
               "bytes a request of `to` bytes leaves unused)"},
    .ngroups = 1,
    .cols = hist_cols,
    .ncols = sizeof(hist_cols) / sizeof(hist_cols[0]),
};

static void hist_row(const void *ctx, unsigned r, sc_ev_t *v) {
  const report_t *rep = ctx;
  unsigned c = rep->hist_cell[r] / SC_BUCKETS, b = rep->hist_cell[r] % SC_BUCKETS;
  const struct sc_class_stats *s = &rep->st->classes[c];
  uint64_t to = (uint64_t)b << SC_GRANULE_SHIFT;
  v[0] = sc__ev(SC_EV_SIZE, s->size);
  v[1] = sc__ev(SC_EV_COUNT, b ? to - 15 : 0);
  v[2] = sc__ev(SC_EV_COUNT, to);
  v[3] = sc__ev(SC_EV_COUNT, s->request_histogram[b]);
  v[4] = sc__ev_ratio(s->request_histogram[b], s->allocs);
  v[5] = sc__ev_ratio(s->size > to ? s->size - to : 0, s->size);
}

/* ---- the advisor ------------------------------------------------------------------ */

static const sc_em_col_t advice_cols[] = {
    {"size", "class", 6, 0},
    {"wasted_bytes", "wasted", 9, 1},
    {"waste_permille", "waste", 6, 1},
    {"intermediate_size", "split", 6, 1},
    {"fitting_requests", "fits", 9, 1},
    {"saved_bytes", "saved", 9, 1},
    {"saved_permille", "saved%", 6, 1},
};

static const sc_em_table_t advice_table = {
    .key = "ranking",
    .titles = {"advisor: bytes lost to rounding up (cumulative), most first; saved: what a "
               "class at 3/4 of the size would have saved"},
    .ngroups = 1,
    .cols = advice_cols,
    .ncols = sizeof(advice_cols) / sizeof(advice_cols[0]),
};

static void advice_row(const void *ctx, unsigned r, sc_ev_t *v) {
  const report_t *rep = ctx;
  unsigned c = rep->order[r];
  const sc_advice_t *a = &rep->advice[c];
  uint64_t blocks = rep->st->classes[c].total_block_bytes;
  v[0] = sc__ev(SC_EV_SIZE, a->size);
  v[1] = sc__ev(SC_EV_BYTES, a->wasted_bytes);
  v[2] = sc__ev_ratio(a->wasted_bytes, blocks);
  v[3] = a->intermediate_size ? sc__ev(SC_EV_SIZE, a->intermediate_size) : sc__ev(SC_EV_NULL, 0);
  v[4] = sc__ev(SC_EV_COUNT, a->fitting_requests);
  v[5] = sc__ev(SC_EV_BYTES, a->saved_bytes);
  v[6] = sc__ev_ratio(a->saved_bytes, blocks);
}

/** Text advice: the classes where an intermediate class pays, best first. */
static void advice_lines(sc_emitter_t *e, const report_t *rep) {
  unsigned said = 0;
  for (unsigned r = 0; r < rep->ranked && said < 3; r++) {
    const sc_advice_t *a = &rep->advice[rep->order[r]];
    const struct sc_class_stats *s = &rep->st->classes[rep->order[r]];
    if (a->saved_bytes == 0) continue;
    sc__em_text(e, "  -> a ");
    sc__em_text_value(e, sc__ev(SC_EV_SIZE, a->intermediate_size));
    sc__em_text(e, " class would have saved ");
    sc__em_text_value(e, sc__ev(SC_EV_BYTES, a->saved_bytes));
    sc__em_text(e, " (");
    sc__em_text_value(e, sc__ev_ratio(a->saved_bytes, s->total_block_bytes));
    sc__em_text(e, " of the ");
    sc__em_text_value(e, sc__ev(SC_EV_SIZE, a->size));
    sc__em_text(e, " blocks): ");
    sc__em_text_value(e, sc__ev(SC_EV_COUNT, a->fitting_requests));
    sc__em_text(e, " of ");
    sc__em_text_value(e, sc__ev(SC_EV_COUNT, s->allocs));
    sc__em_text(e, " requests fit");
    sc__em_text_end(e);
    said++;
  }
  if (said == 0) {
    sc__em_text(e, "  -> no intermediate class would have saved anything");
    sc__em_text_end(e);
  }
}

static void section_advisor(sc_emitter_t *e, const report_t *rep) {
  static const uint64_t splits[] = {48, 96, 192, 384, 768};
  if (!(rep->st->tracked & SC_TRACKED_EXACT)) { /* it reads the request sizes */
    sc__em_kv(e, "advisor", NULL, sc__ev(SC_EV_NULL, 0));
    return;
  }
  sc__em_section(e, "advisor", NULL);
  sc__em_kv(e, "intermediate_sizes", NULL, sc__ev_list(splits, 5));
  sc__em_table(e, &advice_table, rep->ranked, advice_row, rep);
  advice_lines(e, rep);
  sc__em_section_end(e);
}

/* ---- leaks -------------------------------------------------------------------------- */

static const sc_em_col_t leak_cols[] = {
    {"size", "class", 6, 0},
    {"blocks", "blocks", 9, 1},
    {"block_bytes", "bytes", 9, 1},
    {"requested_bytes", "requested", 9, 1},
};

static const sc_em_table_t leak_table = {
    .key = "classes",
    .titles = {"  by class"},
    .ngroups = 1,
    .cols = leak_cols,
    .ncols = sizeof(leak_cols) / sizeof(leak_cols[0]),
};

static void leak_row(const void *ctx, unsigned r, sc_ev_t *v) {
  const report_t *rep = ctx;
  const struct sc_class_stats *s = &rep->st->classes[rep->leak_class[r]];
  v[0] = sc__ev(SC_EV_SIZE, s->size);
  v[1] = sc__ev(SC_EV_COUNT, s->live_blocks);
  v[2] = sc__ev(SC_EV_BYTES, s->live_block_bytes);
  v[3] = exact(rep, sc__ev(SC_EV_BYTES, s->live_requested_bytes));
}

static void section_leaks(sc_emitter_t *e, const report_t *rep) {
  const struct sc_stats *st = rep->st;
  sc__em_section(e, "leaks",
                 rep->reason == SC_REASON_EXIT || rep->reason == SC_REASON_QUICK_EXIT
                     ? "leaks: still live at exit"
                     : "leaks: still live now");
  sc__em_kv(e, "blocks", "class blocks", sc__ev(SC_EV_COUNT, st->totals.live_blocks));
  sc__em_kv(e, "block_bytes", "block bytes", sc__ev(SC_EV_BYTES, st->totals.live_block_bytes));
  sc__em_kv(e, "requested_bytes", "requested",
            exact(rep, sc__ev(SC_EV_BYTES, st->totals.live_requested_bytes)));
  sc__em_kv(e, "fallback_blocks", "system blocks", sc__ev(SC_EV_COUNT, st->fallback.live_blocks));
  sc__em_kv(e, "fallback_bytes", "system bytes", sc__ev(SC_EV_BYTES, st->fallback.live_bytes));
  sc__em_table(e, &leak_table, rep->leaks, leak_row, rep);
  sc__em_section_end(e);
}

/* ---- the key/value sections ---------------------------------------------------------- */

/** The statistics tier and the optional features on: JSON "tier" and
 * "features", and a text line. */
static void section_features(sc_emitter_t *e, const struct sc_stats *st) {
  static const struct {
    uint32_t bit;
    const char *name;
  } names[] = {{SC_FEATURE_EXACT, "exact"},
               {SC_FEATURE_SITES, "sites"},
               {SC_FEATURE_GUARD, "guard"},
               {SC_FEATURE_CHECK, "check"},
               {SC_FEATURE_FRAME_CHECK, "frame_check"}};
  const char *on[sizeof(names) / sizeof(names[0])];
  unsigned n = 0;
  for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if ((sc__features & names[i].bit) != 0) on[n++] = names[i].name;
  const char *tier = (st->tracked & SC_TRACKED_EXACT) != 0 ? "exact" : "default";
  sc__em_kv(e, "tier", NULL, sc__ev_str(tier));
  sc__em_kv(e, "features", NULL, sc__ev_strs(on, n));
  sc__em_text(e, "statistics: ");
  sc__em_text(e, tier);
  sc__em_text(e, " tier; features on: ");
  for (unsigned i = 0; i < n; i++) {
    if (i > 0) sc__em_text(e, ", ");
    sc__em_text(e, on[i]);
  }
  if (n == 0) sc__em_text(e, "none");
  sc__em_text_end(e);
}

/** Whose report it is: text, lines under the header; JSON, the process
 * object. Not inlined: its 1.3 KiB of buffers must not stay on the stack
 * under the later sections (a signal report runs on the interrupted
 * thread's stack). */
static sc_noinline void section_process(sc_emitter_t *e, const struct sc_stats *st, bool live) {
  /* The live snapshot reads /proc once per process: its program, command
   * line and start time stay. */
  static sc_proc_info_t live_who;
  sc_proc_info_t who;
  char when[40];
  if (live && live_who.pid == st->process.pid) {
    memcpy(&who, &live_who, sizeof(who));
  } else {
    sc__proc_info(&who);
    if (live) memcpy(&live_who, &who, sizeof(who));
  }
  sc__em_text(e, "pid ");
  sc__em_text_value(e, sc__ev(SC_EV_COUNT, who.pid));
  sc__em_text(e, ", parent ");
  sc__em_text_value(e, sc__ev(SC_EV_COUNT, who.ppid));
  sc__em_text(e, ": ");
  sc__em_text(e, who.have_exe ? who.exe : "(program unknown)");
  sc__em_text_end(e);
  sc__em_text(e, "command line: ");
  sc__em_text(e, who.cmdline);
  sc__em_text_end(e);
  when[sc__proc_format_time(when, who.start_unix_ms)] = 0;
  sc__em_text(e, "started ");
  sc__em_text(e, who.have_start ? when : "(unknown)");
  sc__em_text(e, ", run time ");
  sc__em_text_value(e, sc__ev(SC_EV_NS, st->process.wall_ns));
  sc__em_text_end(e);
  section_features(e, st);
  sc__em_section(e, "process", "process");
  sc__em_kv(e, "pid", "pid", sc__ev(SC_EV_COUNT, st->process.pid));
  sc__em_kv(e, "ppid", NULL, sc__ev(SC_EV_COUNT, who.ppid));
  sc__em_kv(e, "exe", NULL, who.have_exe ? sc__ev_str(who.exe) : sc__ev(SC_EV_NULL, 0));
  sc__em_kv(e, "cmdline", NULL, sc__ev_str(who.cmdline));
  sc__em_kv(e, "start_unix_ms", NULL,
            who.have_start ? sc__ev(SC_EV_COUNT, who.start_unix_ms) : sc__ev(SC_EV_NULL, 0));
  sc__em_kv(e, "wall_ns", "wall time", sc__ev(SC_EV_NS, st->process.wall_ns));
  sc__em_kv(e, "peak_rss_bytes", "peak RSS", sc__ev(SC_EV_BYTES, st->process.peak_rss_bytes));
  sc__em_kv(e, "rss_bytes", "RSS now", sc__ev(SC_EV_BYTES, st->process.rss_bytes));
  sc__em_section_end(e);
}

/** What was measured: the JSON flags, and in text a line naming what was
 * not (a "-" in the tables is never a zero). */
static void section_tracking(sc_emitter_t *e, const struct sc_stats *st) {
  bool exact = (st->tracked & SC_TRACKED_EXACT) != 0;
  bool counts = (st->tracked & SC_TRACKED_COUNTS) != 0;
  sc__em_kv(e, "exact_statistics", NULL, sc__ev(SC_EV_COUNT, exact));
  sc__em_kv(e, "counts_complete", NULL, sc__ev(SC_EV_COUNT, counts));
  if (!exact) {
    sc__em_text(e,
                "not tracked (\"-\"): requested bytes, utilization, request sizes, peaks and "
                "the advisor; exact statistics are off (SIZECLASS_STATS_EXACT=1 or "
                "SIZECLASS_STATS turns them on)");
    sc__em_text_end(e);
  }
  if (!counts) {
    sc__em_text(e,
                "incomplete: another thread held the segment lock, some pages' counts are "
                "missing from this report");
    sc__em_text_end(e);
  }
}

static void section_fallback(sc_emitter_t *e, const struct sc_stats *st) {
  sc__em_section(e, "fallback", "system allocator (requests > 1024 B)");
  sc__em_kv(e, "malloc_calls", "malloc calls", sc__ev(SC_EV_COUNT, st->fallback.malloc_calls));
  sc__em_kv(e, "realloc_calls", "realloc calls", sc__ev(SC_EV_COUNT, st->fallback.realloc_calls));
  sc__em_kv(e, "aligned_calls", "aligned calls", sc__ev(SC_EV_COUNT, st->fallback.aligned_calls));
  sc__em_kv(e, "allocs", "blocks made", sc__ev(SC_EV_COUNT, st->fallback.allocs));
  sc__em_kv(e, "frees", "blocks freed", sc__ev(SC_EV_COUNT, st->fallback.frees));
  sc__em_kv(e, "live_blocks", "live blocks", sc__ev(SC_EV_COUNT, st->fallback.live_blocks));
  sc__em_kv(e, "total_bytes", "bytes made", sc__ev(SC_EV_BYTES, st->fallback.total_bytes));
  sc__em_kv(e, "live_bytes", "live bytes", sc__ev(SC_EV_BYTES, st->fallback.live_bytes));
  sc__em_kv(e, "peak_live_bytes", "peak live bytes",
            exact_st(st, sc__ev(SC_EV_BYTES, st->fallback.peak_live_bytes)));
  sc__em_section_end(e);
}

static void section_arenas(sc_emitter_t *e, const struct sc_stats *st) {
  sc__em_section(e, "arenas", "arenas (one per allocating thread)");
  sc__em_kv(e, "created", "created", sc__ev(SC_EV_COUNT, st->arenas.created));
  sc__em_kv(e, "live", "live", sc__ev(SC_EV_COUNT, st->arenas.live));
  sc__em_kv(e, "adopted", "adopted", sc__ev(SC_EV_COUNT, st->arenas.adopted));
  sc__em_kv(e, "threads", "threads", sc__ev(SC_EV_COUNT, st->arenas.threads));
  sc__em_section_end(e);
}

static void section_frames(sc_emitter_t *e, const report_t *rep) {
  const struct sc_stats *st = rep->st;
  uint64_t frames = st->frames.frames;
  uint64_t steady = frames > st->frames.warmup_frames ? frames - st->frames.warmup_frames : 0;
  /* Text shows the figures only once frames were marked. */
#define L(label) (frames ? (label) : NULL)
  sc__em_section(e, "frames", "frames (sc_frame_mark)");
  if (frames == 0) {
    sc__em_text(e, "  no frames marked (call sc_frame_mark() once per frame)");
    sc__em_text_end(e);
  }
  sc__em_kv(e, "frames", L("frames"), sc__ev(SC_EV_COUNT, frames));
  sc__em_kv(e, "warmup_frames", L("warm-up"), sc__ev(SC_EV_COUNT, st->frames.warmup_frames));
  sc__em_kv(e, "steady_frames", L("after warm-up"), sc__ev(SC_EV_COUNT, steady));
  sc__em_kv(e, "zero_fresh_frames", L("zero-fresh"),
            sc__ev(SC_EV_COUNT, st->frames.zero_fresh_frames));
  sc__em_kv(e, "zero_fresh_permille", L("zero-fresh share"),
            sc__ev_ratio(st->frames.zero_fresh_frames, steady));
  sc__em_kv(e, "max_allocs", L("max allocs"), sc__ev(SC_EV_COUNT, st->frames.max_allocs));
  sc__em_kv(
      e, "mean_allocs", L("mean allocs"),
      frames ? sc__ev(SC_EV_TENTHS, st->frames.total_allocs * 10 / frames) : sc__ev(SC_EV_NULL, 0));
  sc__em_kv(e, "total_allocs", L("allocs"), sc__ev(SC_EV_COUNT, st->frames.total_allocs));
  sc__em_kv(e, "total_frees", L("frees"), sc__ev(SC_EV_COUNT, st->frames.total_frees));
  sc__em_kv(e, "total_fresh_carves", L("fresh carves"),
            sc__ev(SC_EV_COUNT, st->frames.total_fresh_carves));
  sc__em_kv(e, "total_bytes", L("bytes"), exact(rep, sc__ev(SC_EV_BYTES, st->frames.total_bytes)));
  sc__em_kv(e, "last_allocs", L("last: allocs"), sc__ev(SC_EV_COUNT, st->frames.last_allocs));
  sc__em_kv(e, "last_frees", L("last: frees"), sc__ev(SC_EV_COUNT, st->frames.last_frees));
  sc__em_kv(e, "last_fresh_carves", L("last: fresh"),
            sc__ev(SC_EV_COUNT, st->frames.last_fresh_carves));
  sc__em_kv(e, "last_bytes", L("last: bytes"),
            exact(rep, sc__ev(SC_EV_BYTES, st->frames.last_bytes)));
#undef L
  sc__em_section_end(e);
}

static void section_purge(sc_emitter_t *e, const struct sc_stats *st) {
  sc__em_section(e, "purge", "memory returned to the OS");
  sc__em_kv(e, "purges", "purges", sc__ev(SC_EV_COUNT, st->purge.purges));
  sc__em_kv(e, "bytes_returned", "bytes returned", sc__ev(SC_EV_BYTES, st->purge.bytes_returned));
  sc__em_kv(e, "pages_reused_after_purge", "pages reused",
            sc__ev(SC_EV_COUNT, st->purge.pages_reused_after_purge));
  sc__em_kv(e, "system_trims", "system trims", sc__ev(SC_EV_COUNT, st->purge.system_trims));
  sc__em_section_end(e);
}

/* ---- the report ------------------------------------------------------------------------ */

/** Precompute the row lists of the derived tables. */
static void report_prepare(report_t *rep, const struct sc_stats *st, sc_reason_t reason) {
  rep->st = st;
  rep->reason = reason;
  sc__advise(st, rep->advice, rep->order);
  rep->ranked = rep->leaks = rep->hist_cells = 0;
  for (unsigned r = 0; r < SC_CLASSES; r++)
    if (st->classes[rep->order[r]].allocs != 0) rep->order[rep->ranked++] = rep->order[r];
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    if (st->classes[c].live_blocks != 0) rep->leak_class[rep->leaks++] = c;
    for (unsigned b = 0; b < SC_BUCKETS; b++)
      if (st->classes[c].request_histogram[b] != 0)
        rep->hist_cell[rep->hist_cells++] = (uint16_t)(c * SC_BUCKETS + b);
  }
}

/** The report's "reason": its name, then ": <why>" when there is one
 * (cut to fit, and to one line). */
static const char *reason_name(char *out, size_t cap, sc_reason_t reason, const char *why) {
  static const char *const names[] = {
      [SC_REASON_API] = "request",           [SC_REASON_EXIT] = "exit",
      [SC_REASON_SIGNAL] = "signal",         [SC_REASON_ABORT] = "abort",
      [SC_REASON_TERMINATED] = "terminated", [SC_REASON_CRASH] = "crash",
      [SC_REASON_QUICK_EXIT] = "_exit",      [SC_REASON_LIVE] = "live",
  };
  const char *name = (unsigned)reason < sizeof(names) / sizeof(names[0]) ? names[reason] : NULL;
  if (name == NULL) name = "request";
  size_t n = 0;
  while (*name != 0 && n + 1 < cap) out[n++] = *name++;
  if (why != NULL) {
    for (const char *sep = ": "; *sep != 0 && n + 1 < cap;) out[n++] = *sep++;
    for (; *why != 0 && *why != '\n' && n + 1 < cap; why++) out[n++] = *why;
  }
  out[n] = 0;
  return out;
}

/* ---- named snapshots (sc_snapshot) ------------------------------------------------------- */

static const sc_em_col_t named_cols[] = {
    {NULL, "name", 24, 0},    {NULL, "frame", 8, 1},  {NULL, "time", 10, 1},  {NULL, "live", 9, 1},
    {NULL, "live-blk", 9, 1}, {NULL, "system", 9, 1}, {NULL, "allocs", 9, 1}, {NULL, "fresh", 8, 1},
};

static const sc_em_table_t named_table = {
    .titles = {"named snapshots (sc_snapshot; the last 32, oldest first; live: class blocks, "
               "system: the system allocator's live bytes)"},
    .ngroups = 1,
    .cols = named_cols,
    .ncols = sizeof(named_cols) / sizeof(named_cols[0]),
};

typedef struct {
  uint64_t count;
  char name[SC_NAMED_NAME_CAP + 4]; /* the row's name, cleaned */
} named_rows_t;

/** A snapshot's name as printable UTF-8, into out (SC_NAMED_NAME_CAP + 4). */
static const char *named_name(const sc_named_t *n, char *out) {
  size_t len = strnlen(n->name, SC_NAMED_NAME_CAP - 1);
  memcpy(out, n->name, len);
  sc__proc_clean(out, len, SC_NAMED_NAME_CAP - 1);
  return out;
}

static void named_row(const void *ctx, unsigned r, sc_ev_t *v) {
  named_rows_t *rows = (named_rows_t *)(uintptr_t)ctx; /* the row's scratch space */
  const sc_named_t *n = sc__named_entry(rows->count, r);
  const struct sc_stats *st = &n->stats;
  v[0] = sc__ev_str(named_name(n, rows->name));
  v[1] = sc__ev(SC_EV_COUNT, n->frame);
  v[2] = sc__ev(SC_EV_NS, n->wall_ns);
  v[3] = sc__ev(SC_EV_COUNT, st->totals.live_blocks);
  v[4] = sc__ev(SC_EV_BYTES, st->totals.live_block_bytes);
  v[5] = sc__ev(SC_EV_BYTES, st->fallback.live_bytes);
  v[6] = sc__ev(SC_EV_COUNT, st->totals.allocs);
  v[7] = sc__ev(SC_EV_COUNT, st->totals.fresh_carves);
}

/** A named snapshot's "tags" and "threads" (the schema's keys; null while
 * the library did not track them): the largest ones it kept, in the shape
 * of the report's own. */
static void named_tags_threads(sc_emitter_t *e, const sc_named_t *n) {
  sc__report_named_tags(e, n); /* report_tags.c */
}

/** The report's "snapshots": every kept named snapshot with the same
 * objects as the report's own "classes", "totals" and "fallback"; in text,
 * a short table. Not inlined: its buffers stay off the later sections'
 * stack. */
static sc_noinline void section_snapshots(sc_emitter_t *e, bool live) {
  named_rows_t rows;
  rows.count = sc__named_count();
  uint64_t kept = rows.count < SC_NAMED_MAX ? rows.count : SC_NAMED_MAX;
  sc__em_array(e, "snapshots");
  /* The live form: the last SC_LIVE_NAMED (docs/live.md). */
  uint64_t first = live && kept > SC_LIVE_NAMED ? kept - SC_LIVE_NAMED : 0;
  for (uint64_t i = first; i < kept && e->mode == SC_EM_JSON; i++) {
    const sc_named_t *n = sc__named_entry(rows.count, i);
    const struct sc_stats *st = &n->stats;
    sc__em_item(e);
    sc__em_kv(e, "name", NULL, sc__ev_str(named_name(n, rows.name)));
    sc__em_kv(e, "frame", NULL, sc__ev(SC_EV_COUNT, n->frame));
    sc__em_kv(e, "wall_ns", NULL, sc__ev(SC_EV_NS, n->wall_ns));
    sc__em_kv(e, "exact_statistics", NULL,
              sc__ev(SC_EV_COUNT, (st->tracked & SC_TRACKED_EXACT) != 0));
    sc__em_table(e, &class_table, SC_CLASSES + 1, class_row, &st);
    section_fallback(e, st);
    if (live && i + 1 < kept) { /* the live form: the last one's only (docs/live.md) */
      sc__em_kv(e, "tags", NULL, sc__ev(SC_EV_NULL, 0));
      sc__em_kv(e, "threads", NULL, sc__ev(SC_EV_NULL, 0));
    } else {
      named_tags_threads(e, n);
    }
    sc__em_item_end(e);
  }
  sc__em_array_end(e);
  if (kept != 0) sc__em_table(e, &named_table, (unsigned)kept, named_row, &rows);
}

/** The report: everything, or (live) what the live snapshot holds — the
 * same keys, with the last LIVE_FRAMES frames of the timeline and no
 * sites (null), so that one write stays within tens of microseconds. */
static void report_body(sc_emitter_t *e, sc_reason_t reason, const char *why, bool unlocked,
                        const sc_live_rss_t *live) {
  struct sc_stats st;
  report_t rep;
  char name[400];
  /* Names resolved through the loader (its lock) only outside signal
   * handlers and the library's own aborts. */
  bool may_lock =
      reason == SC_REASON_API || reason == SC_REASON_EXIT || reason == SC_REASON_QUICK_EXIT;
  reason_name(name, sizeof(name), reason, why);
  if (live != NULL) {
    sc__stats_snapshot_no_rss(&st, unlocked);
    st.process.peak_rss_bytes = live->peak;
    st.process.rss_bytes = live->now;
  } else {
    sc__stats_snapshot(&st, unlocked);
  }
  report_prepare(&rep, &st, reason);
  sc__em_text(e, "== libsizeclass statistics (");
  sc__em_text(e, name);
  sc__em_text(e, ") ==");
  sc__em_text_end(e);
  sc__em_kv(e, "schema", NULL, sc__ev_str("libsizeclass-stats"));
  sc__em_kv(e, "version", NULL, sc__ev(SC_EV_COUNT, 1));
  sc__em_kv(e, "library_version", NULL, sc__ev_str(VERSION_STRING));
  sc__em_kv(e, "reason", NULL, sc__ev_str(name));
  section_process(e, &st, live != NULL); /* and the features on */
  section_tracking(e, &st);
  sc__em_table(e, &class_table, SC_CLASSES + 1, class_row, &rep);
  if (live == NULL) sc__em_table(e, &hist_table, rep.hist_cells, hist_row, &rep);
  section_advisor(e, &rep);
  section_leaks(e, &rep);
  section_fallback(e, &st);
  section_arenas(e, &st);
  section_frames(e, &rep);
  sc__report_timeline(e, (st.tracked & SC_TRACKED_EXACT) != 0,
                      live != NULL ? SC_LIVE_FRAMES : 0); /* timeline.c */
  section_purge(e, &st);
  section_snapshots(e, live != NULL);
  if (live != NULL) {
    sc__em_kv(e, "site_sampling", NULL, sc__ev(SC_EV_NULL, 0));
    sc__em_kv(e, "sites", NULL, sc__ev(SC_EV_NULL, 0));
  } else {
    sc__report_sites(e, may_lock, &st); /* report_sites.c */
  }
  /* report_tags.c: tags, threads, budgets (the live form: the largest) */
  sc__report_tags(e, unlocked, live != NULL ? SC_LIVE_TAG_ROWS : UINT32_MAX);
}

void sc__report_write(int fd, enum sc_stats_format format, sc_reason_t reason, bool unlocked) {
  sc__report_write_why(fd, format, reason, NULL, unlocked);
}

void sc__report_write_why(int fd, enum sc_stats_format format, sc_reason_t reason, const char *why,
                          bool unlocked) {
  sc_emitter_t e;
  sc__em_begin(&e, fd, format == SC_STATS_JSON ? SC_EM_JSON : SC_EM_TEXT);
  report_body(&e, reason, why, unlocked, NULL);
  sc__em_end(&e);
}

size_t sc__report_live(char *buf, size_t cap, const sc_live_rss_t *rss, bool *cut) {
  sc_emitter_t e;
  sc__em_begin_mem(&e, buf, cap, SC_EM_JSON);
  report_body(&e, SC_REASON_LIVE, NULL, false, rss);
  sc__em_end(&e);
  *cut = e.mem_full;
  return e.mem_len;
}

sc_public void sc_stats_print(int fd, enum sc_stats_format format) {
  sc__report_write(fd, format, SC_REASON_API, false);
}
