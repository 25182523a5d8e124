/* SPDX-License-Identifier: MIT */
/* report_sites.c — who allocates each class: the sites section of the
 * statistics report, and the folded stacks (report_sites.h).
 *
 * For every class (and the system allocator, class 0) the report ranks the
 * sites three ways: by allocations, by blocks still live (leaks, at exit)
 * and by bytes lost to rounding up. JSON lists each ranked site once, with
 * the rankings it is in; text shows the top three of each. A site is named
 * by its innermost frame outside libsizeclass and the C library, with its
 * callers; each frame also as module+offset, for scripts/sc-addr2line.
 * Names are found here, at report time (symbolize.c), never while
 * allocating. Work memory is mmap'd: the report may run on a signal stack. */
#include "report/report_sites.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/settings.h"
#include "util/symbolize.h"
#include "report/report.h"
#include "util/os.h"
#include "util/path.h"
#include "util/startup.h"

#define TOP 5      /* sites per ranking per class, in JSON */
#define TEXT_TOP 3 /* ... in text */
#define LOC_CAP 1100
#define TEXT_NAMES 4 /* frames shown on a text line */

enum { BY_ALLOCS = 1, BY_LIVE = 2, BY_WASTED = 4, RANKINGS = 3 };

typedef struct {
  uint32_t id;
  uint8_t top; /* BY_* bits */
} pick_t;

/* What a sampled site's estimates of one class are multiplied by. */
typedef struct {
  double allocs, live, wasted, bytes;
} scale_t;

/* The report's work memory. */
typedef struct {
  sc_symbolizer_t *sym;
  const sc_site_t *sites;
  uint32_t nsites;
  bool sampled;
  scale_t scale[SC_SITES_CLASSES + 1]; /* by class index (+1: guard pages' sites) */
  pick_t picks[SC_SITES_CLASSES * TOP * RANKINGS];
  unsigned npicks;
  /* The row being written: its frames. */
  unsigned nframes;
  const char *function;
  const char *names[SC_UNWIND_DEPTH];
  const char *locs[SC_UNWIND_DEPTH];
  bool libc[SC_UNWIND_DEPTH]; /* the frame is the C library's (its start-up code) */
  const char *tops[RANKINGS];
  char loc_buf[SC_UNWIND_DEPTH][LOC_CAP];
} work_t;

/* ---- the figures of a site ------------------------------------------------------------- */

static uint64_t load(const _Atomic uint64_t *p) {
  return atomic_load_explicit(p, memory_order_relaxed);
}
/** A fixed-point estimate rounded to the nearest integer. */
static uint64_t q_round(uint64_t q) { return (q + (1u << (SC_SITES_Q - 1))) >> SC_SITES_Q; }
/** A fixed-point estimate, times `scale`, rounded to the nearest integer. */
static uint64_t q_scaled(uint64_t q, double scale) {
  if (scale == 1.0) return q_round(q);
  double v = (double)q * scale / (double)(1u << SC_SITES_Q) + 0.5;
  return v < 1.8e19 ? (uint64_t)v : UINT64_MAX;
}
/** Live blocks: the sum may dip below zero for a moment while a block's
 * free is counted before its allocation (other threads): read as 0. */
static uint64_t live_q_of(const sc_site_t *s) {
  int64_t v = (int64_t)load(&s->live_q);
  return v > 0 ? (uint64_t)v : 0;
}
static const scale_t *scale_of(const work_t *w, const sc_site_t *s) {
  return &w->scale[s->cls <= SC_SITES_CLASSES ? s->cls : SC_SITES_CLASSES];
}
static uint64_t allocs_of(const work_t *w, const sc_site_t *s) {
  return q_scaled(load(&s->allocs_q), scale_of(w, s)->allocs);
}
static uint64_t wasted_of(const work_t *w, const sc_site_t *s) {
  return q_scaled(load(&s->wasted_q), scale_of(w, s)->wasted);
}
static uint64_t bytes_of(const work_t *w, const sc_site_t *s) {
  return q_scaled(load(&s->bytes_q), scale_of(w, s)->bytes);
}
static uint64_t live_of(const work_t *w, const sc_site_t *s) {
  return q_scaled(live_q_of(s), scale_of(w, s)->live);
}

static uint64_t metric(const work_t *w, const sc_site_t *s, int by) {
  return by == BY_ALLOCS ? allocs_of(w, s) : by == BY_LIVE ? live_of(w, s) : wasted_of(w, s);
}

/** The factor that makes `sum` (Q fixed point) come to `truth`: 1 when
 * there is nothing to scale. */
static double factor(uint64_t truth, double sum) {
  return sum > 0 && truth > 0 ? (double)truth * (double)(1u << SC_SITES_Q) / sum : 1.0;
}

/** Calibrate a sampled run's estimates by the exact figures of each class
 * (a ratio estimator): the sites of a class are scaled so that they add up
 * to its allocations and live blocks, which every tier counts exactly, and
 * with exact statistics to its requested and wasted bytes (without them,
 * bytes go as allocations do). The spread of a top site's estimate then
 * depends on its share of its class's samples, not on its own samples
 * alone. At rate 1 the figures are the counts themselves: no scaling. */
static void calibrate(work_t *w, const struct sc_stats *st) {
  for (unsigned c = 0; c <= SC_SITES_CLASSES; c++) w->scale[c] = (scale_t){1.0, 1.0, 1.0, 1.0};
  if (!w->sampled || st == NULL) return;
  double sum[SC_SITES_CLASSES][4] = {{0}};
  for (uint32_t id = 0; id < w->nsites; id++) {
    const sc_site_t *s = &w->sites[id];
    if (s->cls >= SC_SITES_CLASSES) continue;
    sum[s->cls][0] += (double)load(&s->allocs_q);
    sum[s->cls][1] += (double)live_q_of(s);
    sum[s->cls][2] += (double)load(&s->wasted_q);
    sum[s->cls][3] += (double)load(&s->bytes_q);
  }
  bool exact = (st->tracked & SC_TRACKED_EXACT) != 0;
  for (unsigned c = 0; c < SC_SITES_CLASSES; c++) {
    scale_t *k = &w->scale[c];
    if (c == SC_SITES_SYSTEM) {
      k->allocs = factor(st->fallback.allocs, sum[c][0]);
      k->live = factor(st->fallback.live_blocks, sum[c][1]);
      k->wasted = k->bytes = k->allocs;
      continue;
    }
    const struct sc_class_stats *cls = &st->classes[c];
    k->allocs = factor(cls->allocs, sum[c][0]);
    k->live = factor(cls->live_blocks, sum[c][1]);
    k->wasted = k->bytes = k->allocs;
    if (exact) {
      k->bytes = factor(cls->total_requested_bytes, sum[c][3]);
      k->wasted = factor(cls->total_block_bytes - cls->total_requested_bytes, sum[c][2]);
    }
  }
}

/** Block size reported for class index c (0: the system allocator). */
static uint64_t class_bytes(unsigned c) { return c == SC_SITES_SYSTEM ? 0 : sc__class_size(c); }

/* ---- ranking ----------------------------------------------------------------------------------
 */

/** The top k sites of class c by `by` (non-zero values only), best first,
 * into ids; their count. */
static unsigned rank(const work_t *w, unsigned c, int by, uint32_t *ids, unsigned k) {
  uint64_t vals[TOP];
  unsigned n = 0;
  for (uint32_t id = 0; id < w->nsites; id++) {
    const sc_site_t *s = &w->sites[id];
    uint64_t v;
    if (s->cls != c || (v = metric(w, s, by)) == 0) continue;
    if (n == k && v <= vals[n - 1]) continue;
    unsigned at = n < k ? n++ : n - 1;
    while (at > 0 && vals[at - 1] < v) {
      vals[at] = vals[at - 1];
      ids[at] = ids[at - 1];
      at--;
    }
    vals[at] = v;
    ids[at] = id;
  }
  return n;
}

/** The ranked sites of every class, each once with its rankings, in class
 * order and by allocations within a class. */
static void pick_all(work_t *w) {
  static const int bys[RANKINGS] = {BY_ALLOCS, BY_LIVE, BY_WASTED};
  w->npicks = 0;
  for (unsigned c = 0; c < SC_SITES_CLASSES; c++) {
    unsigned first = w->npicks;
    for (unsigned r = 0; r < RANKINGS; r++) {
      uint32_t ids[TOP];
      unsigned n = rank(w, c, bys[r], ids, TOP);
      for (unsigned i = 0; i < n; i++) {
        unsigned j = first;
        while (j < w->npicks && w->picks[j].id != ids[i]) j++;
        if (j == w->npicks) w->picks[w->npicks++] = (pick_t){.id = ids[i], .top = 0};
        w->picks[j].top |= (uint8_t)bys[r];
      }
    }
    /* Insertion sort of this class's picks by allocations, most first. */
    for (unsigned i = first + 1; i < w->npicks; i++) {
      pick_t p = w->picks[i];
      uint64_t v = allocs_of(w, &w->sites[p.id]);
      unsigned j = i;
      while (j > first && allocs_of(w, &w->sites[w->picks[j - 1].id]) < v) {
        w->picks[j] = w->picks[j - 1];
        j--;
      }
      w->picks[j] = p;
    }
  }
}

/* ---- frames ------------------------------------------------------------------------------------
 */

/** Name the frames of site s into w: from its innermost frame outside the
 * C library (all of them if every frame is the C library's) outwards. */
static void describe(work_t *w, const sc_site_t *s) {
  sc_frame_info_t info[SC_UNWIND_DEPTH];
  unsigned depth = s->depth, first = 0;
  for (unsigned i = 0; i < depth; i++) sc__sym_frame(w->sym, s->pcs[i], &info[i]);
  first = sc__sym_first_program_frame(info, depth);
  w->nframes = 0;
  for (unsigned i = first; i < depth; i++) {
    unsigned k = w->nframes++;
    w->names[k] = info[i].name != NULL ? info[i].name : "??";
    w->libc[k] = info[i].allocator;
    sc__sym_location(w->loc_buf[k], LOC_CAP, &info[i]);
    w->locs[k] = w->loc_buf[k];
  }
  w->function = depth == 0 ? NULL : info[first].name;
  if (s->overflow) w->function = "[other sites: the site table is full]";
}

/* ---- JSON ----------------------------------------------------------------------------------- */

static const sc_em_col_t site_cols[] = {
    {"class", NULL, 0, 0},        {"function", NULL, 0, 0},
    {"frames", NULL, 0, 0},       {"locations", NULL, 0, 0},
    {"allocs", NULL, 0, 0},       {"live_blocks", NULL, 0, 0},
    {"wasted_bytes", NULL, 0, 0}, {"requested_bytes", NULL, 0, 0},
    {"samples", NULL, 0, 0},      {"sampled", NULL, 0, 0},
    {"top", NULL, 0, 0},          {"id", NULL, 0, 0},
};

static const sc_em_table_t site_table = {
    .key = "sites",
    .cols = site_cols,
    .ncols = sizeof(site_cols) / sizeof(site_cols[0]),
};

static void site_row(const void *ctx, unsigned r, sc_ev_t *v) {
  work_t *w = (work_t *)(uintptr_t)ctx; /* the row's scratch space */
  const pick_t *p = &w->picks[r];
  const sc_site_t *s = &w->sites[p->id];
  describe(w, s);
  unsigned ntops = 0;
  if (p->top & BY_ALLOCS) w->tops[ntops++] = "allocs";
  if (p->top & BY_LIVE) w->tops[ntops++] = "live_blocks";
  if (p->top & BY_WASTED) w->tops[ntops++] = "wasted_bytes";
  v[0] = sc__ev(SC_EV_SIZE, class_bytes(s->cls));
  v[1] = w->function != NULL ? sc__ev_str(w->function) : sc__ev(SC_EV_NULL, 0);
  v[2] = sc__ev_strs(w->names, w->nframes);
  v[3] = sc__ev_strs(w->locs, w->nframes);
  v[4] = sc__ev(SC_EV_COUNT, allocs_of(w, s));
  v[5] = sc__ev(SC_EV_COUNT, live_of(w, s));
  v[6] = sc__ev(SC_EV_BYTES, wasted_of(w, s));
  v[7] = sc__ev(SC_EV_BYTES, bytes_of(w, s));
  v[8] = sc__ev(SC_EV_COUNT, load(&s->samples));
  v[9] = sc__ev_bool(w->sampled);
  v[10] = sc__ev_strs(w->tops, ntops);
  v[11] = sc__ev(SC_EV_COUNT, p->id); /* the text rankings' tie-break (rank) */
}

/* ---- text --------------------------------------------------------------------------------------
 */

/** v right-aligned in width, after two spaces. */
static void text_cell(sc_emitter_t *e, sc_ev_t v, size_t width) {
  char cell[64];
  size_t n = sc__em_format(cell, v);
  cell[n] = 0;
  sc__em_text(e, "  ");
  for (; n < width; n++) sc__em_text(e, " ");
  sc__em_text(e, cell);
}

/** One text line: a site's figures and its innermost frames. */
static void text_site(sc_emitter_t *e, work_t *w, uint32_t id) {
  const sc_site_t *s = &w->sites[id];
  describe(w, s);
  text_cell(e, sc__ev(SC_EV_COUNT, allocs_of(w, s)), 10);
  text_cell(e, sc__ev(SC_EV_COUNT, live_of(w, s)), 8);
  text_cell(e, sc__ev(SC_EV_BYTES, wasted_of(w, s)), 9);
  sc__em_text(e, "  ");
  if (s->depth == 0) sc__em_text(e, s->overflow ? w->function : "[no stack]");
  /* The program's frames: the chain stops at the C library's start-up
   * code (__libc_start_main and the like: JSON has every frame). */
  unsigned shown = 0;
  while (shown < w->nframes && (shown == 0 || !w->libc[shown])) shown++;
  for (unsigned i = 0; i < shown && i < TEXT_NAMES; i++) {
    if (i) sc__em_text(e, " < ");
    sc__em_text(e, w->names[i]);
  }
  if (shown > TEXT_NAMES) sc__em_text(e, " < ...");
  sc__em_text_end(e);
}

/** The text rankings of class c. */
static void text_class(sc_emitter_t *e, work_t *w, unsigned c) {
  static const struct {
    int by;
    const char *title;
  } rankings[RANKINGS] = {
      {BY_ALLOCS, "by allocations"},
      {BY_LIVE, "by live blocks (leaks at exit)"},
      {BY_WASTED, "by bytes wasted to rounding up"},
  };
  for (unsigned r = 0; r < RANKINGS; r++) {
    uint32_t ids[TEXT_TOP];
    unsigned n = rank(w, c, rankings[r].by, ids, TEXT_TOP);
    if (n == 0) continue;
    sc__em_text(e, "  ");
    if (c == SC_SITES_SYSTEM) {
      sc__em_text(e, "system (> 1024 B)");
    } else {
      sc__em_text_value(e, sc__ev(SC_EV_SIZE, sc__class_size(c)));
    }
    sc__em_text(e, " ");
    sc__em_text(e, rankings[r].title);
    sc__em_text_end(e);
    for (unsigned i = 0; i < n; i++) text_site(e, w, ids[i]);
  }
}

static void text_sites(sc_emitter_t *e, work_t *w, uint64_t rate) {
  sc__em_text_end(e);
  if (rate == 1) {
    sc__em_text(e, "sites: who allocates each class (every allocation recorded: exact counts)");
  } else {
    sc__em_text(e, "sites: who allocates each class (sampled: about one allocation per ");
    sc__em_text_value(e, sc__ev(SC_EV_BYTES, rate));
    sc__em_text(e, " requested, at least one in ");
    sc__em_text_value(e, sc__ev(SC_EV_COUNT, rate / (uint64_t)sc__sites_charge));
    sc__em_text(e, "; estimates)");
  }
  sc__em_text_end(e);
  sc__em_text(e, "      allocs      live     wasted  function < callers");
  sc__em_text_end(e);
  if (w->npicks == 0) {
    sc__em_text(e, "  (none)");
    sc__em_text_end(e);
  }
  for (unsigned c = 0; c < SC_SITES_CLASSES; c++) text_class(e, w, c);
}

/* ---- the section ------------------------------------------------------------------------------
 */

static work_t *work_open(bool may_lock) {
  work_t *w = sc__os_map_aligned((sizeof(work_t) + 4095) & ~(size_t)4095, 4096);
  if (w == NULL) return NULL;
  w->sym = sc__sym_open(may_lock);
  if (w->sym == NULL) {
    sc__os_unmap(w, (sizeof(work_t) + 4095) & ~(size_t)4095);
    return NULL;
  }
  w->sites = sc__sites_table(&w->nsites);
  w->sampled = sc__sites_rate() != 1;
  return w;
}

static void work_close(work_t *w) {
  sc__sym_close(w->sym);
  sc__os_unmap(w, (sizeof(work_t) + 4095) & ~(size_t)4095);
}

void sc__report_sites(sc_emitter_t *e, bool may_lock, const struct sc_stats *st) {
  uint64_t rate = sc__sites_rate();
  work_t *w = rate != 0 ? work_open(may_lock) : NULL;
  if (w == NULL) {
    sc__em_kv(e, "site_sampling", NULL, sc__ev(SC_EV_NULL, 0));
    sc__em_kv(e, "sites", NULL, sc__ev(SC_EV_NULL, 0));
    sc__em_text_end(e);
    sc__em_text(e, rate != 0 ? "sites: no memory to write them"
                             : "sites: not recorded (SIZECLASS_SITES=on records who allocates "
                               "each class)");
    sc__em_text_end(e);
    return;
  }
  calibrate(w, st);
  pick_all(w);
  sc__em_section(e, "site_sampling", NULL);
  sc__em_kv(e, "rate_bytes", NULL, sc__ev(SC_EV_COUNT, rate));
  sc__em_kv(e, "charge_bytes", NULL, sc__ev(SC_EV_COUNT, (uint64_t)sc__sites_charge));
  sc__em_kv(e, "sampled", NULL, sc__ev_bool(w->sampled));
  sc__em_kv(e, "sites", NULL, sc__ev(SC_EV_COUNT, w->nsites));
  sc__em_kv(e, "overflowed_samples", NULL, sc__ev(SC_EV_COUNT, sc__sites_overflowed()));
  sc__em_kv(e, "depth", NULL, sc__ev(SC_EV_COUNT, SC_UNWIND_DEPTH));
  sc__em_section_end(e);
  sc__em_table(e, &site_table, w->npicks, site_row, w);
  text_sites(e, w, rate);
  work_close(w);
}

/* ---- folded stacks -------------------------------------------------------------------------- */

/** Append s to the line (control characters, ';' and ' ' become '_'). */
static void folded_name(sc_emitter_t *e, const char *s) {
  char buf[256];
  size_t n = 0;
  for (; *s && n < sizeof(buf) - 1; s++) {
    char ch = *s;
    if (ch == ';' || ch == ' ' || (unsigned char)ch < 0x20) ch = '_';
    buf[n++] = ch;
  }
  buf[n] = 0;
  sc__em_text(e, buf);
}

void sc__sites_write_folded(int fd, bool may_lock) {
  work_t *w = work_open(may_lock);
  if (w == NULL) return;
  struct sc_stats st;
  sc__stats_snapshot(&st, !may_lock);
  calibrate(w, &st);
  sc_emitter_t e;
  sc__em_begin(&e, fd, SC_EM_TEXT);
  for (uint32_t id = 0; id < w->nsites; id++) {
    const sc_site_t *s = &w->sites[id];
    uint64_t allocs = allocs_of(w, s);
    if (allocs == 0) continue;
    describe(w, s);
    for (unsigned i = w->nframes; i-- > 0;) {
      folded_name(&e, w->names[i]);
      sc__em_text(&e, ";");
    }
    sc__em_text(&e, "[");
    if (s->cls == SC_SITES_SYSTEM)
      sc__em_text(&e, "system");
    else
      sc__em_text_value(&e, sc__ev(SC_EV_SIZE, sc__class_size(s->cls)));
    sc__em_text(&e, "] ");
    sc__em_text_value(&e, sc__ev(SC_EV_COUNT, allocs));
    sc__em_text_end(&e);
  }
  sc__em_end(&e);
  work_close(w);
}

/* ---- at exit ------------------------------------------------------------------------------ */

static void folded_at_exit(void) {
  const char *tmpl;
  char path[4200];
  /* A forked child outside SIZECLASS_STATS_PID writes nothing either. */
  if (!sc__settings_report_here() || !sc__sites_folded(&tmpl) ||
      !sc__expand_pid_path(path, sizeof(path), tmpl, (uint64_t)getpid()))
    return;
  int fd = sc__os_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    /* Name the setting that chose the path, and the path. */
    static const char lead[] = "cannot write the folded stacks to ";
    char problem[sizeof(lead) + sizeof(path)];
    size_t len = strlen(path);
    memcpy(problem, lead, sizeof(lead) - 1);
    memcpy(problem + sizeof(lead) - 1, path, len + 1);
    bool named = sc__setting_text(SC_SET_SITES_FOLDED)[0] != 0;
    sc__setting_warn(named ? SC_SET_SITES_FOLDED : SC_SET_SITES_FORMAT, problem,
                     "no folded stacks");
    return;
  }
  sc__sites_write_folded(fd, true);
  close(fd);
}

sc_startup void sc__report_sites_arm(void) {
  static bool armed;
  const char *tmpl;
  if (armed || !sc__sites_folded(&tmpl)) return;
  atexit(folded_at_exit); /* may allocate: never from inside malloc */
  armed = true;
}

/* Armed at load (sc__sites_folded decides the features first). */
__attribute__((constructor)) static void report_sites_on_load(void) { sc__report_sites_arm(); }
