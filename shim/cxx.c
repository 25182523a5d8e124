/* SPDX-License-Identifier: MIT */
/* cxx.c — C++'s operator new and operator delete, mapped onto the
 * allocator directly (Itanium C++ ABI names, x86-64).
 *
 * A C++ program reaches malloc through libstdc++'s operator new anyway, but
 * through two more calls and checks per allocation and per delete: on a
 * C++ workload that was a third of the allocator's instructions. So the
 * library defines the operators itself. Only success is handled here: when
 * the allocator cannot serve a request, the C++ runtime's own operator of
 * the same name takes it over (found with dlsym at that moment: a lookup
 * that fails allocates its error message, which a C program must not see
 * when the library loads), and does what the language requires — the new_handler loop,
 * std::bad_alloc, or nullptr for the nothrow forms. Deletes of any form are free(): the allocator
 * finds every block's size and alignment from its address. */
#include <dlfcn.h>
#include <stdlib.h>

#include "core/alloc.h"

#ifndef SC_NO_CXX_OPERATORS /* make asan: ASan's own operators stay */

#define SC_EXPORT __attribute__((visibility("default")))

/* The C++ runtime's operators that take over a request we could not serve. */
typedef void *(*new_fn)(size_t);
typedef void *(*new_nothrow_fn)(size_t, const void *);
typedef void *(*new_aligned_fn)(size_t, size_t);
typedef void *(*new_aligned_nothrow_fn)(size_t, size_t, const void *);

enum {
  NEW,
  NEW_ARRAY,
  NEW_NOTHROW,
  NEW_ARRAY_NOTHROW,
  NEW_ALIGNED,
  NEW_ARRAY_ALIGNED,
  NEW_ALIGNED_NOTHROW,
  NEW_ARRAY_ALIGNED_NOTHROW,
  NEW_FORMS
};

static const char *const runtime_names[NEW_FORMS] = {
    "_Znwm",
    "_Znam",
    "_ZnwmRKSt9nothrow_t",
    "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t",
    "_ZnamSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t",
    "_ZnamSt11align_val_tRKSt9nothrow_t",
};

/** The C++ runtime's operator of form `form`; NULL when none is loaded. */
static void *runtime_op(int form) { return dlsym(RTLD_NEXT, runtime_names[form]); }

/** A throwing operator new without a runtime to throw from (cannot happen in
 * a C++ program): say so and stop, as an uncaught bad_alloc would. */
static sc_noreturn void no_runtime(size_t n) {
  (void)n;
  sc__abort_with_report("operator new: out of memory, and no C++ runtime to throw std::bad_alloc");
}

/* ---- the out-of-line handovers to the runtime ---------------------------- */

static sc_noinline void *new_failed(int form, size_t n) {
  new_fn fn = (new_fn)runtime_op(form);
  if (fn == NULL) no_runtime(n);
  return fn(n);
}

static sc_noinline void *new_nothrow_failed(int form, size_t n, const void *tag) {
  new_nothrow_fn fn = (new_nothrow_fn)runtime_op(form);
  return fn != NULL ? fn(n, tag) : NULL;
}

static sc_noinline void *new_aligned_failed(int form, size_t n, size_t align) {
  new_aligned_fn fn = (new_aligned_fn)runtime_op(form);
  if (fn == NULL) no_runtime(n);
  return fn(n, align);
}

static sc_noinline void *new_aligned_nothrow_failed(int form, size_t n, size_t align,
                                                    const void *tag) {
  new_aligned_nothrow_fn fn = (new_aligned_nothrow_fn)runtime_op(form);
  return fn != NULL ? fn(n, align, tag) : NULL;
}

/** An aligned request as the allocator serves it; NULL if it cannot (an
 * alignment that is not a power of two goes to the runtime, which decides). */
static inline void *aligned(size_t n, size_t align) {
  if (align == 0 || (align & (align - 1)) != 0) return NULL;
  return sc__memalign(align, n);
}

/* ---- operator new ------------------------------------------------------------ */

SC_EXPORT void *_Znwm(size_t n) {
  void *p = sc__malloc_inline(n);
  if (sc_likely(p != NULL)) return p;
  return new_failed(NEW, n);
}

SC_EXPORT void *_Znam(size_t n) {
  void *p = sc__malloc_inline(n);
  if (sc_likely(p != NULL)) return p;
  return new_failed(NEW_ARRAY, n);
}

SC_EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag) {
  void *p = sc__malloc_inline(n);
  if (sc_likely(p != NULL)) return p;
  return new_nothrow_failed(NEW_NOTHROW, n, tag);
}

SC_EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *tag) {
  void *p = sc__malloc_inline(n);
  if (sc_likely(p != NULL)) return p;
  return new_nothrow_failed(NEW_ARRAY_NOTHROW, n, tag);
}

SC_EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t align) {
  void *p = aligned(n, align);
  if (sc_likely(p != NULL)) return p;
  return new_aligned_failed(NEW_ALIGNED, n, align);
}

SC_EXPORT void *_ZnamSt11align_val_t(size_t n, size_t align) {
  void *p = aligned(n, align);
  if (sc_likely(p != NULL)) return p;
  return new_aligned_failed(NEW_ARRAY_ALIGNED, n, align);
}

SC_EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t align, const void *tag) {
  void *p = aligned(n, align);
  if (sc_likely(p != NULL)) return p;
  return new_aligned_nothrow_failed(NEW_ALIGNED_NOTHROW, n, align, tag);
}

SC_EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t align, const void *tag) {
  void *p = aligned(n, align);
  if (sc_likely(p != NULL)) return p;
  return new_aligned_nothrow_failed(NEW_ARRAY_ALIGNED_NOTHROW, n, align, tag);
}

/* ---- operator delete: every form is free() ----------------------------------- */

SC_EXPORT void _ZdlPv(void *p) { sc__free_inline(p); }
SC_EXPORT void _ZdaPv(void *p) { sc__free_inline(p); }
SC_EXPORT void _ZdlPvm(void *p, size_t n) {
  (void)n;
  sc__free_inline(p);
}
SC_EXPORT void _ZdaPvm(void *p, size_t n) {
  (void)n;
  sc__free_inline(p);
}
SC_EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *tag) {
  (void)tag;
  sc__free_inline(p);
}
SC_EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *tag) {
  (void)tag;
  sc__free_inline(p);
}
SC_EXPORT void _ZdlPvSt11align_val_t(void *p, size_t align) {
  (void)align;
  sc__free_inline(p);
}
SC_EXPORT void _ZdaPvSt11align_val_t(void *p, size_t align) {
  (void)align;
  sc__free_inline(p);
}
SC_EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t align) {
  (void)n;
  (void)align;
  sc__free_inline(p);
}
SC_EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t align) {
  (void)n;
  (void)align;
  sc__free_inline(p);
}
SC_EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag) {
  (void)align;
  (void)tag;
  sc__free_inline(p);
}
SC_EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag) {
  (void)align;
  (void)tag;
  sc__free_inline(p);
}

#endif /* SC_NO_CXX_OPERATORS */
