/* SPDX-License-Identifier: MIT */
/* unwinder.h — libgcc's unwinder, bound at run time (unwinder.c): the
 * library has no link-time dependency on libgcc_s, so a program that walks
 * no stacks never maps it. */
#ifndef SC_UNWINDER_H
#define SC_UNWINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <unwind.h>

#include "core/hooks.h"

#pragma GCC visibility push(hidden)

/* The bases _Unwind_Find_FDE fills in (libgcc's internal unwind-dw2-fde.h). */
struct dwarf_eh_bases {
  void *tbase;
  void *dbase;
  void *func;
};

typedef _Unwind_Reason_Code (*sc_unwind_backtrace_fn)(_Unwind_Trace_Fn fn, void *arg);
typedef _Unwind_Ptr (*sc_unwind_get_ip_info_fn)(struct _Unwind_Context *ctx, int *before);
typedef const void *(*sc_unwind_find_fde_fn)(void *pc, struct dwarf_eh_bases *bases);

/* The three live in the hooks' page (core/hooks.h: read-only but for the
 * binding), NULL until bound (then fixed for the run); read them with these
 * (acquire): a walk in another thread may run while they are bound. */
/** _Unwind_Backtrace: calls fn on each frame, the caller's first, until it
 * stops; libgcc's does not allocate (GCC 12+ finds tables with glibc's
 * _dl_find_object). */
static inline sc_unwind_backtrace_fn sc__unwind_backtrace(void) {
  return (sc_unwind_backtrace_fn)__atomic_load_n(&sc__hooks_page.unwind_backtrace_fn,
                                                 __ATOMIC_ACQUIRE);
}
/** _Unwind_GetIPInfo: a frame's code address and whether it is the exact
 * instruction (a signal frame) rather than a return address. */
static inline sc_unwind_get_ip_info_fn sc__unwind_get_ip_info(void) {
  return (sc_unwind_get_ip_info_fn)__atomic_load_n(&sc__hooks_page.unwind_get_ip_info_fn,
                                                   __ATOMIC_ACQUIRE);
}
/** _Unwind_Find_FDE: the frame description entry covering pc (NULL: none),
 * without allocating. */
static inline sc_unwind_find_fde_fn sc__unwind_find_fde(void) {
  return (sc_unwind_find_fde_fn)__atomic_load_n(&sc__hooks_page.unwind_find_fde_fn,
                                                __ATOMIC_ACQUIRE);
}

/** Bind the three: each from the process's global scope first (a program
 * that defines its own wins, as it would with a link-time dependency),
 * the rest from libgcc_s.so.1, loaded (RTLD_LOCAL) if it is not yet. True
 * when all three are bound. Calls dlsym and dlopen, which allocate: only
 * from a constructor or an API function the program calls, never from an
 * allocation path or a signal handler. Idempotent; the first successful
 * binding stays. */
bool sc__unwinder_bind(void);

/** True when the walks can run (all three bound). */
static inline bool sc__unwinder_ready(void) { return sc__unwind_backtrace() != NULL; }

#pragma GCC visibility pop

#endif /* SC_UNWINDER_H */
