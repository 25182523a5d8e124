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
 * finds every block's size and alignment from its address (a sized delete
 * cannot skip the ownership test with its size: a block of <= 1 KiB may be
 * the system allocator's when no segment could be had).
 *
 * The throwing forms, nearly every C++ allocation, take malloc's fast path
 * (alloc.h) with each of its slow exits through a handler of its own that
 * also hands a failure over: the fast path then keeps nothing across a
 * call (no register saved and restored, no stack write), where calling
 * malloc's whole path and testing its result kept the size alive in a
 * callee-saved register on every call: 3 instructions per new, issue 31. */
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

/* ---- the throwing forms' slow exits (the request first: n stays in its
 * register on the way out) ---------------------------------------------------- */

/** n > SC_SMALL_MAX: the system route. */
static sc_noinline void *new_large(size_t n, int form) {
  void *p = sc__malloc_slow(n);
  return sc_likely(p != NULL) ? p : new_failed(form, n);
}

/** The countdown ran out (a feature's turn): its path takes the block. */
static sc_noinline void *new_noted(size_t n, size_t g, sc_page_t *page, int form) {
  void *p = sc__alloc_noted_fn(n, g, page);
  return sc_likely(p != NULL) ? p : new_failed(form, n);
}

/** The class's page had no block (or the thread no arena yet). */
static sc_noinline void *new_refill(size_t n, size_t g, int form) {
  void *p = sc__arena_alloc_slow(n, g);
  return sc_likely(p != NULL) ? p : new_failed(form, n);
}

/** sc__malloc_inline (alloc.h: sc__alloc_granule), each slow exit a tail
 * call of the handler above that also handles its failure. */
static sc_always_inline void *new_inline(int form, size_t n) {
  if (sc_unlikely(n > SC_SMALL_MAX)) return new_large(n, form);
  size_t g = sc__bucket_of(n);
  sc_thread_t *t = &sc__thread;
  sc_page_t *page = t->current[g];
  if (sc_unlikely(sc__countdown(&t->sample_left))) return new_noted(n, g, page, form);
  size_t index;
  sc_block_t *b = sc__page_take_narrow(page, &index); /* narrow entries, as malloc */
  if (sc_likely(b != NULL)) return b;
  return new_refill(n, g, form);
}

/* ---- operator new ------------------------------------------------------------ */

SC_EXPORT void *_Znwm(size_t n) { return new_inline(NEW, n); }

SC_EXPORT void *_Znam(size_t n) { return new_inline(NEW_ARRAY, n); }

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
