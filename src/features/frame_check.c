/* SPDX-License-Identifier: MIT */
/* frame_check.c — the steady-state check (frame_check.h).
 *
 * A game's CI wants to assert "after the level loads, nothing new is
 * allocated": every allocation reuses a freed block. A fresh carve (a
 * block never handed out before) after the warm-up is the sign that the
 * footprint still grows. The check is on after frame
 * SIZECLASS_FRAME_CHECK_AFTER (default: SIZECLASS_WARMUP_FRAMES, itself 60
 * by default), or between sc_frame_expect_steady(true) and (false) calls,
 * which override the environment either way. A fresh carve while it is on
 * prints
 *     sizeclass: frame N: fresh carve in class C B
 * (N the frame in progress, or the frame just closed when found at a mark;
 * " at FUNCTION (MODULE+0xOFFSET)" follows when sites are recorded): once
 * per class in warn mode, then abort() in abort mode. Only class blocks
 * are carved: the system allocator's blocks (> 1024 B) are not checked. */
#include "features/frame_check.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/settings.h"
#include "features/sites.h"
#include "core/size_class.h"
#include "util/symbolize.h"
#include "features/timeline.h"
#include "core/snapshot.h"
#include "util/format.h"
#include "util/startup.h"
#include "util/os.h"

enum { MODE_OFF = 0, MODE_WARN = 1, MODE_ABORT = 2 };
enum { API_NONE = 0, API_ON = 1, API_OFF = 2 };

static int mode; /* SIZECLASS_FRAME_CHECK */
static _Atomic int api = API_NONE;
static _Atomic uint32_t warned; /* classes already reported (warn mode), one bit each */
static _Atomic int seen;        /* a carve while checking, since sc_frame_expect_steady */

/* The end-of-frame check: fresh carves per class when it last looked. */
static pthread_mutex_t look_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t base[SC_CLASSES];

/* ---- settings ---------------------------------------------------------------------------- */

sc_startup uint32_t sc__frame_check_decide(void) {
  /* The settings (settings.c) said no to a bad value already. */
  mode = (int)sc__setting(SC_SET_FRAME_CHECK);
  return mode != MODE_OFF ? SC_FEATURE_FRAME_CHECK : 0;
}

/** The last frame not checked: SIZECLASS_FRAME_CHECK_AFTER, else the
 * warm-up (read when used: sc_option_set may change either). */
static uint64_t after_frame(void) {
  if (sc__setting_state(SC_SET_FRAME_CHECK_AFTER) == SC_SETTING_GIVEN)
    return sc__setting(SC_SET_FRAME_CHECK_AFTER);
  return sc__setting(SC_SET_WARMUP_FRAMES);
}

/* ---- the message ------------------------------------------------------------------------- */

/** " at FUNCTION (MODULE+0xOFFSET)" into out: the innermost frame of the
 * calling thread's stack outside libsizeclass and the C library; "" when
 * no stack is recorded. */
static void site_text(char *out, size_t cap) {
  uintptr_t pcs[SC_UNWIND_DEPTH];
  unsigned n = sc__sites_stack_now(pcs, SC_UNWIND_DEPTH);
  if (n == 0) return;
  sc_symbolizer_t *sym = sc__sym_open(false); /* inside malloc: no loader lock */
  if (sym == NULL) return;
  sc_frame_info_t info[SC_UNWIND_DEPTH];
  for (unsigned i = 0; i < n; i++) sc__sym_frame(sym, pcs[i], &info[i]);
  const sc_frame_info_t f = info[sc__sym_first_program_frame(info, n)];
  bool named = f.name != NULL;
  sc__format(out, cap, " at %s%s%s+0x%" PRIxPTR "%s", named ? f.name : "", named ? " (" : "",
             f.module[0] != 0 ? f.module : "?", f.offset, named ? ")" : "");
  sc__sym_close(sym);
}

/** A fresh carve of class c in `frame` while checking: say so (once per
 * class in warn mode), and stop in abort mode. */
static void complain(uint64_t frame, unsigned c, bool site) {
  atomic_store_explicit(&seen, 1, memory_order_relaxed);
  uint32_t bit = 1u << c;
  if (mode != MODE_ABORT &&
      (atomic_fetch_or_explicit(&warned, bit, memory_order_relaxed) & bit) != 0)
    return;
  char where[1200] = "", line[SC_DIAG_LINE_CAP - 16];
  if (site) site_text(where, sizeof(where));
  sc__format(line, sizeof(line), "frame %" PRIu64 ": fresh carve in class %zu B%s", frame,
             sc__class_size(c), where);
  /* abort mode: the line, the report a run asked for, then abort() */
  if (mode == MODE_ABORT) sc__abort_with_report(line);
  sc__diag_printf("sizeclass: %s", line);
}

/* ---- the check --------------------------------------------------------------------------- */

static bool active(uint64_t frame) {
  int a = atomic_load_explicit(&api, memory_order_relaxed);
  if (a != API_NONE) return a == API_ON;
  return mode != MODE_OFF && frame > after_frame();
}

void sc__frame_check_fresh(unsigned c) {
  uint64_t frame = atomic_load_explicit(&sc__frame_now, memory_order_relaxed);
  if (active(frame)) complain(frame, c, true);
}

/** The end-of-frame check, for a program that only calls the API: fresh
 * carves since the last look, from the class counters cls. */
static void look(uint64_t frame, const struct sc_class_stats cls[SC_CLASSES]) {
  pthread_mutex_lock(&look_lock);
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    uint64_t now = cls[c].fresh_carves, before = base[c];
    base[c] = now;
    if (now > before && !sc__frame_check_on() && active(frame)) complain(frame, c, false);
  }
  pthread_mutex_unlock(&look_lock);
}

void sc__frame_check_mark(uint64_t frame, const struct sc_class_stats cls[SC_CLASSES]) {
  look(frame, cls);
}

sc_public bool sc_frame_expect_steady(bool on) {
  sc__init();
  if (!sc__frame_check_on()) { /* what the frame in progress carved so far */
    struct sc_class_stats cls[SC_CLASSES];
    sc__stats_classes(cls, false);
    look(atomic_load_explicit(&sc__frame_now, memory_order_relaxed), cls);
  }
  bool steady = atomic_exchange_explicit(&seen, 0, memory_order_relaxed) == 0;
  atomic_store_explicit(&api, on ? API_ON : API_OFF, memory_order_relaxed);
  return steady;
}

static void fork_child(void) { pthread_mutex_init(&look_lock, NULL); }

__attribute__((constructor)) static void frame_check_on_load(void) {
  sc__os_atfork(NULL, NULL, fork_child);
}
