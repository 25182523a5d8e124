/* SPDX-License-Identifier: MIT */
/* budget.c — budgets (budget.h): parsing SIZECLASS_BUDGET and
 * sc_budget_set, the check at the tags' trigger, the breach line and the
 * action (SIZECLASS_BUDGET_ACTION: warn, or abort with the report). */
#include "features/budget.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "features/frame.h"
#include "features/stack.h"
#include "features/tags.h"
#include "features/unwinder.h"
#include "sizeclass.h"
#include "util/format.h"
#include "util/settings.h"
#include "util/symbolize.h"
#include "util/startup.h"

bool sc__budgets_set;

enum { B_TOTAL, B_TAG, B_CLASS, B_THREAD };

#define BUDGETS 64
typedef struct {
  uint64_t limit, peak, live, first_frame, last_excess;
  int16_t tag; /* B_TAG: its id once registered; -1 before */
  uint8_t kind, cls;
  bool breached;
  char name[SC_TAG_NAME_MAX + 1]; /* tag or thread name */
} budget_t;

static budget_t budgets[BUDGETS];
static unsigned budgets_n;
static pthread_mutex_t budget_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- text, without stdio (util/format.h) ---------------------------------------- */

/** The longest budget line. */
#define LINE_CAP 512

/** "32.0 MiB", "512 B" into out (32 bytes at least). */
static const char *size_text(char *out, size_t cap, uint64_t v) {
  static const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (v < 1024) {
    sc__format(out, cap, "%" PRIu64 " B", v);
    return out;
  }
  unsigned u = 0;
  uint64_t d = 1024;
  while (u < 3 && v / d >= 1024) d <<= 10, u++;
  uint64_t tenths = (v * 10 + d / 2) / d;
  sc__format(out, cap, "%" PRIu64 ".%" PRIu64 " %s", tenths / 10, tenths % 10, units[u]);
  return out;
}

/** "total", "tag:NAME", "class:BYTES" or "thread:NAME" into out. */
static const char *what_text(char *out, size_t cap, const budget_t *b) {
  switch (b->kind) {
    case B_TOTAL:
      sc__format(out, cap, "total");
      break;
    case B_TAG:
      sc__format(out, cap, "tag:%s", b->name);
      break;
    case B_CLASS:
      sc__format(out, cap, "class:%zu", sc__class_size(b->cls));
      break;
    default:
      sc__format(out, cap, "thread:%s", b->name);
  }
  return out;
}

/* ---- parsing ------------------------------------------------------------------------ */

/** A size: digits, an optional fraction, an optional unit (B, k/K/KB/KiB, M.., G..). */
static bool parse_size(const char *s, size_t len, uint64_t *out) {
  size_t i = 0;
  uint64_t v = 0, frac = 0, fdiv = 1;
  while (i < len && s[i] == ' ') i++;
  if (i == len || s[i] < '0' || s[i] > '9') return false;
  for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (i < len && s[i] == '.')
    for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++)
      if (fdiv < 1000000) frac = frac * 10 + (uint64_t)(s[i] - '0'), fdiv *= 10;
  while (i < len && s[i] == ' ') i++;
  unsigned shift = 0;
  if (i < len) {
    char u = (char)(s[i] | 0x20);
    shift = u == 'k' ? 10 : u == 'm' ? 20 : u == 'g' ? 30 : u == 't' ? 40 : u == 'b' ? 0 : 99;
    if (shift == 99) return false;
    i++;
    if (shift != 0 && i < len && (s[i] | 0x20) == 'i') i++;
    if (shift != 0 && i < len && (s[i] | 0x20) == 'b') i++;
  }
  while (i < len && s[i] == ' ') i++;
  if (i != len || (shift != 0 && v > (UINT64_MAX >> shift) - 1)) return false;
  *out = (v << shift) + ((frac << shift) / fdiv);
  return true;
}

/** The budget `what` (len bytes) into b; false when it names nothing. */
static bool parse_what(const char *w, size_t len, budget_t *b) {
  while (len > 0 && w[0] == ' ') w++, len--;
  while (len > 0 && w[len - 1] == ' ') len--;
  memset(b, 0, sizeof(*b));
  b->tag = -1;
  if (len == 5 && memcmp(w, "total", 5) == 0) {
    b->kind = B_TOTAL;
    return true;
  }
  if (len > 4 && memcmp(w, "tag:", 4) == 0 && len - 4 <= SC_TAG_NAME_MAX) {
    b->kind = B_TAG;
    memcpy(b->name, w + 4, len - 4);
    return true;
  }
  if (len > 7 && memcmp(w, "thread:", 7) == 0 && len - 7 <= 15) {
    b->kind = B_THREAD;
    memcpy(b->name, w + 7, len - 7);
    return true;
  }
  if (len > 6 && memcmp(w, "class:", 6) == 0) {
    uint64_t size;
    if (!parse_size(w + 6, len - 6, &size)) return false;
    for (unsigned c = 0; c < SC_CLASSES; c++)
      if (sc__class_size(c) == size) {
        b->kind = B_CLASS;
        b->cls = (uint8_t)c;
        return true;
      }
  }
  return false;
}

/** Set (or replace) budget b with `limit` (0: remove it). */
static bool budget_put(const budget_t *nb, uint64_t limit) {
  pthread_mutex_lock(&budget_lock);
  unsigned i;
  for (i = 0; i < budgets_n; i++) {
    budget_t *b = &budgets[i];
    if (b->kind == nb->kind && b->cls == nb->cls && strcmp(b->name, nb->name) == 0) break;
  }
  bool ok = true;
  if (i == budgets_n) {
    if (budgets_n == BUDGETS) {
      ok = false;
    } else {
      budgets[budgets_n] = *nb;
      __atomic_store_n(&budgets_n, budgets_n + 1, __ATOMIC_RELEASE); /* readers take no lock */
    }
  }
  if (ok) {
    budgets[i].limit = limit;
    budgets[i].last_excess = 0;
    __atomic_store_n(&sc__budgets_set, true, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&budget_lock);
  return ok;
}

static void warn_entry(const char *what, const char *e, size_t len) {
  while (len > 0 && *e == ' ') e++, len--;
  char line[LINE_CAP];
  sc__format(line, sizeof(line),
             "SIZECLASS_BUDGET: %s \"%.*s\" ignored (expected total=SIZE, tag:NAME=SIZE, "
             "class:BYTES=SIZE or thread:NAME=SIZE, SIZE like 32MiB)",
             what, (int)(len < 79 ? len : 79), e);
  sc__text_printable(line);
  sc__warn(line);
}

sc_startup bool sc__budget_decide(void) {
  if (sc__setting_state(SC_SET_BUDGET) != SC_SETTING_GIVEN) return false;
  const char *s = sc__setting_text(SC_SET_BUDGET);
  bool any = false;
  while (*s) {
    const char *end = strchr(s, ';');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    const char *eq = memchr(s, '=', len);
    budget_t b;
    uint64_t limit;
    bool blank = true;
    for (size_t i = 0; i < len; i++)
      if (s[i] != ' ') blank = false;
    if (blank) {
      /* an empty entry (a trailing ';') */
    } else if (eq == NULL || !parse_what(s, (size_t)(eq - s), &b)) {
      warn_entry("unknown budget", s, len);
    } else if (!parse_size(eq + 1, len - (size_t)(eq + 1 - s), &limit) || limit == 0) {
      warn_entry("bad size in", s, len);
    } else if (budget_put(&b, limit)) {
      any = true;
    }
    s += len;
    if (*s == ';') s++;
  }
  return any;
}

sc_public bool sc_budget_set(const char *what, uint64_t bytes) {
  budget_t b;
  sc__init();
  if (what == NULL || !parse_what(what, strlen(what), &b)) {
    sc__warn(
        "sc_budget_set: unknown budget (expected total, tag:NAME, class:BYTES or "
        "thread:NAME)");
    return false;
  }
  if (!sc__tags_on && !sc__tags_start()) {
    sc__warn(
        "sc_budget_set: budgets are not checked: they need exact statistics "
        "(SIZECLASS_STATS_EXACT=1 or SIZECLASS_BUDGET) without SIZECLASS_CHECK");
    return false;
  }
  (void)sc__unwinder_bind(); /* a breach names its callers (the program called us) */
  return budget_put(&b, bytes);
}

/* ---- checking ----------------------------------------------------------------------- */

typedef struct {
  unsigned c;
  int64_t blocks;
  uint64_t bytes;
} class_walk_t;

static void total_arena(sc_arena_t *a, void *ctx) {
  uint64_t *t = ctx;
  if (sc__tag_rows_counted(a) != NULL) *t += sc__tags_thread_live(a);
}

static void class_arena(sc_arena_t *a, void *ctx) {
  class_walk_t *w = ctx;
  if (sc__tag_rows_counted(a) == NULL) return;
  const sc_tag_thread_t *tt = sc__tag_thread_of(a);
  w->blocks += sc__tags_before_live(a, w->c);
  for (unsigned t = 0; t < SC_TAGS; t++) {
    if (((__atomic_load_n(&tt->used[t / 64], __ATOMIC_RELAXED) >> (t % 64)) & 1) == 0) continue;
    const sc_tag_row_t *r = sc__tag_row_of(a, t);
    w->blocks += (int64_t)__atomic_load_n(&r->x.peak[w->c], __ATOMIC_RELAXED) -
                 __atomic_load_n(&r->x.headroom[w->c], __ATOMIC_RELAXED);
  }
  w->blocks -= (int64_t)(atomic_load_explicit(&tt->remote_in[w->c], memory_order_relaxed) -
                         __atomic_load_n(&tt->drained[w->c], __ATOMIC_RELAXED));
}

/** The live bytes budget b holds now, seen from arena a's thread. */
static uint64_t budget_live(const budget_t *b, sc_arena_t *a) {
  switch (b->kind) {
    case B_TOTAL: {
      uint64_t t = 0;
      sc__arenas_foreach_unlocked(total_arena, &t);
      return t;
    }
    case B_TAG:
      return sc__tags_tag_live((unsigned)b->tag);
    case B_CLASS: {
      class_walk_t w = {b->cls, 0, 0};
      sc__arenas_foreach_unlocked(class_arena, &w);
      return w.blocks > 0 ? (uint64_t)w.blocks * sc__class_size(b->cls) : 0;
    }
    default:
      return sc__tags_thread_live(a);
  }
}

/** "mix_voice < audio_update < main" into out: the caller's functions
 * (the program's frames, outside the C library and this one). */
static const char *callers_text(char *out, size_t cap) {
  uintptr_t pcs[16];
  unsigned n = sc__unwind(pcs, 16), shown = 0;
  size_t len = 0;
  sc_symbolizer_t *sym = n ? sc__sym_open(false) : NULL;
  for (unsigned i = 0; i < n && shown < 3 && sym != NULL; i++) {
    sc_frame_info_t f;
    sc__sym_frame(sym, pcs[i], &f);
    if (f.allocator) continue;
    char loc[96];
    if (f.name == NULL) sc__sym_location(loc, sizeof(loc), &f);
    len += sc__format(out + len, cap - len, "%s%s", shown++ ? " < " : "",
                      f.name != NULL ? f.name : loc);
  }
  if (sym != NULL) sc__sym_close(sym);
  if (shown == 0) sc__format(out, cap, "an unknown caller");
  return out;
}

static void breach(budget_t *b, uint64_t live, size_t n) {
  char line[LINE_CAP], what[96], limit[32], now[32], callers[LINE_CAP];
  sc__format(line, sizeof(line),
             "budget %s %s exceeded: %s live at frame %" PRIu64 " (allocation of %zu B by %s)",
             what_text(what, sizeof(what), b), size_text(limit, sizeof(limit), b->limit),
             size_text(now, sizeof(now), live), b->first_frame, n,
             callers_text(callers, sizeof(callers)));
  sc__text_printable(line);
  /* abort: the line, the report (SIZECLASS_STATS, reason "abort: budget
   * ..."), then abort() (core/harden.c). */
  if (sc__setting(SC_SET_BUDGET_ACTION) == SC_BUDGET_ACTION_ABORT) sc__abort_with_report(line);
  sc__warn(line);
}

static _Thread_local bool checking; /* the unwinder may allocate: no re-entry */

void sc__budget_check(sc_arena_t *a, unsigned t, unsigned c, size_t n) {
  if (checking) return;
  checking = true;
  char tname[16] = {0};
  bool named = false;
  unsigned count = __atomic_load_n(&budgets_n, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < count; i++) {
    budget_t *b = &budgets[i];
    if (b->limit == 0) continue;
    if (b->kind == B_TAG) {
      if (b->tag < 0) { /* found once registered: ids never change */
        const char *name = sc__tag_name(t);
        if (name == NULL || t == 0 || strcmp(name, b->name) != 0) continue;
        b->tag = (int16_t)t;
      }
      if ((unsigned)b->tag != t) continue;
    } else if (b->kind == B_CLASS) {
      if (b->cls != c) continue;
    } else if (b->kind == B_THREAD) {
      if (!named) prctl(PR_GET_NAME, tname, 0, 0, 0), named = true;
      if (strncmp(tname, b->name, 15) != 0) continue;
    }
    uint64_t live = budget_live(b, a);
    if (live > b->peak) b->peak = live;
    b->live = live;
    if (live <= b->limit) continue;
    uint64_t excess = live - b->limit;
    if (b->breached && excess < 2 * b->last_excess) continue;
    if (!b->breached) {
      sc_frame_stats_t fs;
      sc__frame_stats(&fs);
      b->first_frame = fs.frames;
      b->breached = true;
    }
    /* Again at each doubling of the excess, counted from 1/16 of the limit. */
    b->last_excess = excess > b->limit / 16 ? excess : b->limit / 16;
    breach(b, live, n);
  }
  checking = false;
}

uint64_t sc__budget_of_tag(unsigned t) {
  const char *name = sc__tag_name(t);
  for (unsigned i = 0; i < budgets_n && name != NULL; i++)
    if (budgets[i].kind == B_TAG && strcmp(budgets[i].name, name) == 0) return budgets[i].limit;
  return 0;
}

uint64_t sc__budget_of_thread(const char *name) {
  for (unsigned i = 0; i < budgets_n; i++)
    if (budgets[i].kind == B_THREAD && strncmp(budgets[i].name, name, 15) == 0)
      return budgets[i].limit;
  return 0;
}

size_t sc__budget_list(sc_budget_view_t *out, size_t cap) {
  unsigned count = __atomic_load_n(&budgets_n, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < count && i < cap; i++) {
    const budget_t *b = &budgets[i];
    what_text(out[i].what, sizeof(out[i].what), b);
    sc__text_printable(out[i].what);
    out[i].limit = b->limit;
    out[i].live = b->live;
    out[i].peak = b->peak;
    out[i].breached = b->breached;
    out[i].first_frame = b->first_frame;
  }
  return count;
}

void sc__budget_fork(int phase) { sc__lock_fork(&budget_lock, phase); }
