/* SPDX-License-Identifier: MIT */
/* unwinder.c — libgcc's unwinder, bound at run time (unwinder.h).
 *
 * The stack walks (stack.c, cfi.c) need three functions of libgcc_s. A
 * link-time dependency would map libgcc_s (~100 KiB resident) into every
 * preloaded program, though only allocation sites, SIZECLASS_TAGS rules and
 * budget breaches walk stacks. So they are looked up when one of those is
 * switched on: by the constructor (sites.c, once the settings are read), by
 * sc_option_set (seam.c) and by sc_budget_set (budget.c). dlsym and dlopen
 * allocate, so never from an allocation path; until bound, a walk finds no
 * frames. */
#include "features/unwinder.h"

#include <dlfcn.h>
#include <stddef.h>

#include "core/internal.h" /* sc__warn */
#include "features/sites.h"
#include "util/startup.h"

/** Function `name`: the global scope's (the program's own first), else
 * libgcc_s's, loaded on first need into *gcc. */
static sc_startup void *lookup(const char *name, void **gcc) {
  void *f = dlsym(RTLD_DEFAULT, name);
  if (f != NULL) return f;
  if (*gcc == NULL) *gcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
  return *gcc != NULL ? dlsym(*gcc, name) : NULL;
}

sc_startup bool sc__unwinder_bind(void) {
  if (sc__unwinder_ready()) return true;
  void *gcc = NULL;                /* never closed: the walks use it for the rest of the run */
  uint8_t was = sc__sites_pause(); /* dlopen's allocations are ours: no sites */
  void *backtrace = lookup("_Unwind_Backtrace", &gcc);
  void *get_ip_info = lookup("_Unwind_GetIPInfo", &gcc);
  void *find_fde = lookup("_Unwind_Find_FDE", &gcc);
  sc__sites_resume(was);
  if (backtrace == NULL || get_ip_info == NULL || find_fde == NULL) {
    static bool warned;
    if (!warned)
      sc__warn("libgcc's unwinder (libgcc_s.so.1) is not available: stacks have no frames");
    warned = true;
    return false;
  }
  /* All or none, _Unwind_Backtrace last: a walk that sees it sees the rest.
   * In the hooks' page, which is read-only but for this write. */
  sc__hooks_write_begin();
  __atomic_store_n(&sc__hooks_page.unwind_find_fde_fn, (sc_any_fn_t)find_fde, __ATOMIC_RELEASE);
  __atomic_store_n(&sc__hooks_page.unwind_get_ip_info_fn, (sc_any_fn_t)get_ip_info,
                   __ATOMIC_RELEASE);
  __atomic_store_n(&sc__hooks_page.unwind_backtrace_fn, (sc_any_fn_t)backtrace, __ATOMIC_RELEASE);
  sc__hooks_write_end();
  return true;
}
