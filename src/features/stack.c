/* SPDX-License-Identifier: MIT */
/* stack.c — stack walking for allocation sites (stack.h).
 *
 * libgcc's _Unwind_Backtrace walks the stack from the DWARF call-frame
 * information that every object built for x86-64 carries, so it works for
 * programs built without frame pointers (all of Debian). It is called
 * through a pointer bound when a stack-walking feature is switched on
 * (unwinder.c: dlsym, and dlopen of libgcc_s if no loaded object has it),
 * never from the walk itself, and never reached through glibc's
 * backtrace(), which dlopens libgcc_s — and allocates — on first use. Until
 * it is bound a walk finds no frames. GCC 12's libgcc finds each frame's
 * unwind table with glibc's _dl_find_object: no lock, no allocation.
 *
 * The walk starts inside the library (this file's frame, the seam's, the
 * shim's): those frames are skipped by address, using the labels that
 * bracket the library's code in each section (mark/text_mark.h). Tail calls
 * make the number of library frames vary from one entry point to another,
 * so they are told apart by address, never counted. */
#include "features/stack.h"

#include "features/cfi.h"
#include "features/unwinder.h"
#include "core/internal.h"

/* The code labels of mark/text_begin.c and mark/text_end.c. */
extern const char sc__text_begin[], sc__text_end[];
extern const char sc__text_unlikely_begin[], sc__text_unlikely_end[];
extern const char sc__text_hot_begin[], sc__text_hot_end[];
extern const char sc__text_startup_begin[], sc__text_startup_end[];
extern const char sc__text_exit_begin[], sc__text_exit_end[];

/** True when pc lies in [begin, end). */
static inline bool in_range(uintptr_t pc, const char *begin, const char *end) {
  return pc >= (uintptr_t)begin && pc < (uintptr_t)end;
}

bool sc__unwind_is_ours(uintptr_t pc) {
  return in_range(pc, sc__text_begin, sc__text_end) ||
         in_range(pc, sc__text_unlikely_begin, sc__text_unlikely_end) ||
         in_range(pc, sc__text_hot_begin, sc__text_hot_end) ||
         in_range(pc, sc__text_startup_begin, sc__text_startup_end) ||
         in_range(pc, sc__text_exit_begin, sc__text_exit_end);
}

/* The walk's state: which frames are skipped, and where kept ones go. */
typedef struct walk_s {
  sc_unwind_get_ip_info_fn get_ip_info; /* libgcc's (on_frame) */
  uintptr_t *pcs;
  unsigned n, max;
  int phase; /* 0: before the library's frames, 1: in them, 2: the program's */
} walk_t;

/** One frame of _Unwind_Backtrace: skip frames up to and through the
 * library's own, keep the rest until max. */
static _Unwind_Reason_Code on_frame(struct _Unwind_Context *ctx, void *arg) {
  walk_t *w = arg;
  int before = 0;
  uintptr_t ip = w->get_ip_info(ctx, &before);
  if (ip == 0) return _URC_END_OF_STACK;
  /* A return address follows its call: step back into the call (a signal
   * frame's address is the interrupted instruction itself). */
  uintptr_t pc = before ? ip : ip - 1;
  if (w->phase < 2) {
    bool ours = sc__unwind_is_ours(pc);
    if (w->phase == 0) {
      if (ours) w->phase = 1;
      return _URC_NO_REASON;
    }
    if (ours) return _URC_NO_REASON;
    w->phase = 2;
  }
  w->pcs[w->n++] = pc;
  return w->n < w->max ? _URC_NO_REASON : _URC_NORMAL_STOP;
}

/** Keep frame pc (an address inside a call) as on_frame does; false when
 * the walk is done. */
static bool keep(walk_t *w, uintptr_t pc) {
  if (w->phase < 2) {
    bool ours = sc__unwind_is_ours(pc);
    if (w->phase == 0) {
      if (ours) w->phase = 1;
      return true;
    }
    if (ours) return true;
    w->phase = 2;
  }
  w->pcs[w->n++] = pc;
  return w->n < w->max;
}

sc_noinline unsigned sc__unwind_libgcc(uintptr_t *pcs, unsigned max) {
  /* _Unwind_Backtrace is published last (unwinder.c): with it, the rest. */
  sc_unwind_backtrace_fn backtrace = sc__unwind_backtrace();
  walk_t w = {.get_ip_info = sc__unwind_get_ip_info(), .pcs = pcs, .n = 0, .max = max, .phase = 0};
  if (max == 0 || backtrace == NULL) return 0;
  backtrace(on_frame, &w);
  return w.n;
}

/** Largest step from a frame's stack pointer to its CFA believed: a wrong
 * rule must not send the walk far away. */
#define MAX_FRAME ((uintptr_t)64 << 20)

/* The fast walk: each frame's rule comes from the cache of cfi.c, and the
 * step is three loads. It starts from this function's own frame, which
 * __builtin_frame_address gives a frame pointer: its caller's stack
 * pointer is that frame's address + 16, its return address is above the
 * saved rbp. A frame whose rule the cache cannot give sends the whole walk
 * to libgcc. */
sc_noinline unsigned sc__unwind(uintptr_t *pcs, unsigned max) {
  walk_t w = {.pcs = pcs, .n = 0, .max = max, .phase = 0};
  if (max == 0 || !sc__unwinder_ready()) return 0;
  const uintptr_t *fp = __builtin_frame_address(0);
  uintptr_t ra = (uintptr_t)__builtin_return_address(0);
  uintptr_t sp = (uintptr_t)fp + 16, rbp = fp[0];
  if (!keep(&w, (uintptr_t)&sc__unwind)) return w.n; /* this frame is ours: phase 1 */
  for (unsigned steps = 0; ra != 0 && steps < 512; steps++) {
    uintptr_t pc = ra - 1;
    sc_cfi_rule_t rule;
    int status = sc__cfi_rule(pc, &rule);
    if (status == SC_CFI_COMPLEX) return sc__unwind_libgcc(pcs, max);
    if (!keep(&w, pc) || status == SC_CFI_END) break;
    uintptr_t cfa = (rule.cfa_rbp ? rbp : sp) + (uintptr_t)(intptr_t)rule.cfa_off;
    if (cfa <= sp || cfa - sp > MAX_FRAME || (cfa & 7) != 0) break; /* not a sane frame */
    ra = ((const uintptr_t *)cfa)[-1];
    if (rule.rbp_saved) rbp = *(const uintptr_t *)(cfa + (uintptr_t)(intptr_t)rule.rbp_off);
    sp = cfa;
  }
  return w.n;
}
