/* SPDX-License-Identifier: MIT */
/* fallback.c — the route to the system allocator (glibc) for requests the
 * classes do not serve and for pointers the classes did not make: glibc's
 * __libc_malloc family, found in libc.so.6 itself (libc_syms.c: the
 * library defines those names too, and no dlsym may run on this path).
 *
 * Whatever this file wraps around glibc must not make glibc slower than it
 * is alone, under contention too: the counters are the calling thread's own
 * (in its arena, plain adds on a line no other thread writes); only threads
 * without an arena use shared atomics. With features on, the seam sees the
 * blocks (allocation sites) and the live bytes (exact statistics: the
 * process-wide live and peak, exact.c). */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/hooks.h"
#include "core/sys_record.h"
#include "util/startup.h"

#if defined(__SANITIZE_ADDRESS__)
/* ASan's allocator interface (sanitizer/allocator_interface.h, not always
 * installed): non-zero when p is the start of one of its live blocks. */
int __sanitizer_get_ownership(const volatile void *p);
#endif

#if defined(SC_SYS_DIRECT)
/* mk/sanitize.mk's builds: the names are the sanitizer's allocator (its
 * -D__libc_malloc=malloc & co.), which the library does not define there. */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);
#else
#include "core/libc_syms.h"
#endif
/* glibc's mallinfo under a name the library does not define (it defines
 * mallinfo and mallinfo2 for the whole heap: mallinfo.c). */
extern struct mallinfo __libc_mallinfo(void);

sc_fallback_shared_t sc__fallback_shared;

/** Bind glibc's allocator (the hooks' page's `libc`), or abort: without it
 * no block above 1 KiB can be made or freed. */
static sc_noinline sc_cold void libc_bind(void) {
  sc_libc_alloc_t t;
#if defined(SC_SYS_DIRECT)
  t = (sc_libc_alloc_t){__libc_malloc, __libc_calloc, __libc_realloc, __libc_memalign, __libc_free};
#else
  t.malloc_fn = (void *(*)(size_t))sc__libc_sym("__libc_malloc");
  t.calloc_fn = (void *(*)(size_t, size_t))sc__libc_sym("__libc_calloc");
  t.realloc_fn = (void *(*)(void *, size_t))sc__libc_sym("__libc_realloc");
  t.memalign_fn = (void *(*)(size_t, size_t))sc__libc_sym("__libc_memalign");
  t.free_fn = (void (*)(void *))sc__libc_sym("__libc_free");
  if (t.malloc_fn == NULL || t.calloc_fn == NULL || t.realloc_fn == NULL || t.memalign_fn == NULL ||
      t.free_fn == NULL)
    sc__abort_with_report(
        "glibc's allocator (__libc_malloc & co. in libc.so.6) was not found: blocks above 1024 B "
        "come from it, so the program must be dynamically linked with glibc");
#endif
  sc__hooks_write_begin();
  sc__hooks_page.libc = t;
  sc__hooks_write_end();
}

/* The table's first entries (hooks.c): bind, then do what was asked. A
 * system block may be the first thing a program asks for, before the
 * library's start; after the first call the table holds glibc's own. */
void *sc__libc_first_malloc(size_t n) {
  libc_bind();
  return sc__hooks_page.libc.malloc_fn(n);
}
void *sc__libc_first_calloc(size_t count, size_t size) {
  libc_bind();
  return sc__hooks_page.libc.calloc_fn(count, size);
}
void *sc__libc_first_realloc(void *p, size_t n) {
  libc_bind();
  return sc__hooks_page.libc.realloc_fn(p, n);
}
void *sc__libc_first_memalign(size_t align, size_t n) {
  libc_bind();
  return sc__hooks_page.libc.memalign_fn(align, n);
}
void sc__libc_first_free(void *p) {
  libc_bind();
  sc__hooks_page.libc.free_fn(p);
}

/* glibc's allocator (its first entries bind it), in the hooks' page. */
#define glibc (sc__hooks_page.libc)

/* glibc's main heap when the library took over (sc__sys_start): blocks the
 * program got from glibc before then may lie in [heap_lo, heap_hi) and are
 * the only unrecorded pointers the system route accepts. */
static uintptr_t heap_lo, heap_hi;

sc_startup void sc__sys_start(void) {
  glibc.free_fn(glibc.malloc_fn(1));
  heap_hi = (uintptr_t)sbrk(0);
  /* The main heap's bytes (other arenas' too, at worst: a lower bound).
   * glibc's own figures: mallinfo2 is the library's. An int's worth,
   * which a heap at startup is. */
  size_t arena = (size_t)(unsigned)__libc_mallinfo().arena;
  heap_lo = arena < heap_hi ? heap_hi - arena : 0;
}

/* glibc's malloc_usable_size has no __libc_ alias; the constructor finds
 * it (never from inside malloc) in glibc itself: the next definition after
 * ours may be another allocator's (redis, for one, links jemalloc), which
 * must never be asked about glibc's blocks (sys_trim.c finds malloc_trim
 * the same way). In
 * mk/sanitize.mk's ASan build the system route is AddressSanitizer's
 * malloc (the library's own malloc_usable_size is renamed there), whose
 * blocks only its malloc_usable_size can measure: that one, from the start. */
/* In the hooks' page (core/hooks.h: read-only once bound); under ASan it
 * is set there from the start. */
#define sys_usable_size_fn (sc__hooks_page.sys_usable_size_fn)

/** Usable size of live glibc block p, from its chunk header alone: the
 * size word just before the block (bit 1 marks an mmapped chunk, whose
 * header is two words). glibc's malloc_usable_size also reads the next
 * chunk's header to see whether p is in use — another cache line on every
 * call, which the counters of a block the caller just made or is freeing
 * need not pay. */
static size_t header_size(const void *p) {
  size_t word = ((const size_t *)p)[-1];
  size_t chunk = word & ~(size_t)7;
  return (word & 2) ? chunk - 2 * sizeof(size_t) : chunk - sizeof(size_t);
}

/* False when the "system allocator" behind __libc_malloc is not glibc's
 * own: a valgrind tool that replaces malloc (its blocks have no glibc
 * header), or AddressSanitizer (mk/sanitize.mk routes the system route to
 * its malloc). Then glibc's (or the tool's) malloc_usable_size answers. */
static bool headers_are_glibcs = true;

/* True when nothing is unusual on this route: glibc's headers, no feature
 * on (sc__sys_refresh). One test for both on every call. */
static bool sys_plain;

void sc__sys_refresh(void) { sys_plain = headers_are_glibcs && sc__features == 0; }

/** True when LD_PRELOAD holds a valgrind tool that replaces malloc (every
 * vgpreload_* but the core). */
static bool valgrind_replaces_malloc(void) {
  const char *pre = getenv("LD_PRELOAD");
  for (const char *s = pre; s != NULL && (s = strstr(s, "vgpreload_")) != NULL; s++)
    if (strncmp(s + 10, "core", 4) != 0) return true;
  return false;
}

/** True when p, which the record does not know, is a block glibc handed
 * out before the library took over: inside glibc's main heap as it was
 * then, and its chunk header that of an in-use chunk of that heap (a sane
 * size, not mmapped, main arena, the next chunk inside the heap with its
 * PREV_INUSE bit set). A fake chunk on the stack, in a global or in an
 * mmapped area is not. */
static bool glibc_block_before_takeover(const void *p) {
#if defined(__SANITIZE_ADDRESS__)
  /* mk/sanitize.mk's ASan build: the system route is ASan's malloc, which
   * knows its own blocks. */
  return __sanitizer_get_ownership(p) != 0;
#endif
  uintptr_t u = (uintptr_t)p;
  if (!headers_are_glibcs) return true; /* a tool's malloc (valgrind) judges its own */
  if ((u & 15) != 0 || u < heap_lo + 2 * sizeof(size_t) || u >= heap_hi) return false;
  size_t word = ((const size_t *)p)[-1];
  size_t size = word & ~(size_t)7;
  if ((word & 6) != 0 || size < 4 * sizeof(size_t) || (size & 15) != 0) return false;
  uintptr_t next = u - 2 * sizeof(size_t) + size;
  uintptr_t top = (uintptr_t)sbrk(0);
  if (next < u || next + 2 * sizeof(size_t) > top) return false;
  return (((const size_t *)next)[1] & 1) != 0;
}

/** Record block p that the system route hands to the program: p, or NULL
 * (ENOMEM) when the record cannot grow (a block it does not know could
 * never be freed). A stale record (glibc handed out an address whose free
 * went around us, with __libc_free) is replaced. */
static sc_noinline void *record_slow(void *p) {
  if (sc__sysrec_remove(p, NULL) && sc__sysrec_insert(p, 0)) return p;
  glibc.free_fn(p);
  errno = ENOMEM;
  return NULL;
}
static inline void *record(void *p) {
  if (p != NULL && sc_unlikely(!sc__sysrec_insert(p, 0))) return record_slow(p);
  return p;
}

/** p, outside the segments, is about to be freed or resized by the system
 * route (`call`: the message's words): forget its record, or accept it as
 * glibc's from before the takeover; anything else aborts. True when it was
 * recorded. */
static bool forget(void *p, uint32_t *info, const char *call) {
  if (sc_likely(sc__sysrec_remove(p, info))) return true;
  if (!glibc_block_before_takeover(p)) sc__fatal_block(call, p, 0);
  return false;
}

static size_t block_size(const void *p) {
  if (sc_likely(headers_are_glibcs) || sys_usable_size_fn == NULL) return header_size(p);
  return sys_usable_size_fn((void *)p);
}

sc_startup void sc__sys_bind(void) {
#if defined(__SANITIZE_ADDRESS__)
  headers_are_glibcs = false;
#else
  headers_are_glibcs = !valgrind_replaces_malloc();
  /* Not found: the chunk header is read directly. */
  size_t (*fn)(void *) =
      (size_t(*)(void *))dlvsym(RTLD_NEXT, "malloc_usable_size", SC_GLIBC_BASE_VERSION);
  /* mallinfo2 came with glibc 2.33; before it, __libc_mallinfo answers. */
  struct mallinfo2 (*info_fn)(void) =
      (struct mallinfo2(*)(void))dlvsym(RTLD_NEXT, "mallinfo2", "GLIBC_2.33");
  sc__hooks_write_begin();
  sys_usable_size_fn = fn;
  sc__hooks_page.sys_mallinfo2_fn = info_fn;
  sc__hooks_write_end();
#endif
  sc__sys_refresh();
}

void sc__sys_mallinfo2(struct mallinfo2 *out) {
  if (sc__hooks_page.sys_mallinfo2_fn != NULL) {
    *out = sc__hooks_page.sys_mallinfo2_fn();
    return;
  }
  struct mallinfo m = __libc_mallinfo(); /* its ints wrap at 2 GiB, as glibc's do */
  SC_MALLINFO_COPY(*out, m, unsigned);
}

size_t sc__sys_usable_size(const void *p) {
  if (sc_unlikely(!sc__sysrec_lookup(p, NULL)) && !glibc_block_before_takeover(p))
    sc__fatal_block("malloc_usable_size of invalid pointer", p, 0);
  if (sys_usable_size_fn != NULL) return sys_usable_size_fn((void *)p);
  return header_size(p); /* before the constructor */
}

/* ---- counting ----------------------------------------------------------------- */

enum { CALL_MALLOC, CALL_ALIGNED, CALL_REALLOC };

/* Blocks above this size grow by exactly what realloc asks: an eighth of
 * them (16 KiB and more) is too much memory to hold on a guess, and a
 * program that grows buffers that large usually plans the growth itself. */
#define SYS_ROOM_MAX ((size_t)128 << 10)

/** The calling thread, without an arena, made, freed or resized a system
 * block: its glibc arena's top is for it to shrink (sys_top.c), at its
 * next look or at its end, which it must then see. */
static void system_used_unbound(void) {
  if (sc__thread.sys_used_unbound) return;
  sc__thread.sys_used_unbound = 1;
  if (sc__sys_trim_paced()) sc__arena_watch_exit();
}

/** Count one call of kind `call` that made block p (NULL: it failed) of
 * `bytes` usable bytes (`made`: a new block, not a resized one), and
 * released `freed` bytes (realloc's old block). Plain adds, one field at a
 * time: merged into one 16-byte access, the compiler's choice, they stalled
 * on the store-to-load forwarding of the previous free's 8-byte add. */
static void count_call(int call, const void *p, uint64_t bytes, bool made, uint64_t freed) {
  sc_arena_t *a = sc__thread.arena;
  if (sc_likely(a != NULL)) {
    sc_fallback_counts_t *k = &a->fallback;
    uint64_t *calls = call == CALL_MALLOC    ? &k->malloc_calls
                      : call == CALL_ALIGNED ? &k->aligned_calls
                                             : &k->realloc_calls;
    ++*calls;
    if (p != NULL) {
      k->allocs += made;
      __atomic_store_n(&k->bytes_total, k->bytes_total + bytes, __ATOMIC_RELAXED);
      if (freed != 0) __atomic_store_n(&k->bytes_freed, k->bytes_freed + freed, __ATOMIC_RELAXED);
    }
  } else {
    system_used_unbound();
    sc_fallback_shared_t *s = &sc__fallback_shared;
    _Atomic uint64_t *calls = call == CALL_MALLOC    ? &s->malloc_calls
                              : call == CALL_ALIGNED ? &s->aligned_calls
                                                     : &s->realloc_calls;
    atomic_fetch_add_explicit(calls, 1, memory_order_relaxed);
    if (p != NULL) {
      atomic_fetch_add_explicit(&s->allocs, made, memory_order_relaxed);
      atomic_fetch_add_explicit(&s->bytes_total, bytes, memory_order_relaxed);
      atomic_fetch_add_explicit(&s->bytes_freed, freed, memory_order_relaxed);
    }
  }
  if (p != NULL && (sc__features & SC_FEATURE_EXACT))
    sc__ops.sys.on_live(a, (int64_t)(bytes - freed));
}

/** Count block p of the system allocator, made by a call of kind `call`. */
static void count_made(void *p, int call) {
  count_call(call, p, p != NULL ? block_size(p) : 0, true, 0);
}

/** malloc's route for requests above SC_SMALL_MAX when nothing is unusual
 * (a thread with an arena, no feature on, glibc's headers): the counts on
 * the thread's own line, and nothing else around glibc's call. */
void *sc__sys_malloc(size_t n) {
  void *p = record(glibc.malloc_fn(n));
  sc_arena_t *a = sc__thread.arena;
  if (sc_likely(p != NULL && a != NULL && sys_plain)) {
    sc_fallback_counts_t *k = &a->fallback;
    k->malloc_calls++;
    k->allocs++;
    __atomic_store_n(&k->bytes_total, k->bytes_total + header_size(p), __ATOMIC_RELAXED);
    return p;
  }
  count_made(p, CALL_MALLOC);
  if (sc__features != 0) sc__ops.sys.on_alloc(p, n);
  return p;
}

void *sc__sys_calloc(size_t count, size_t size) {
  void *p = record(glibc.calloc_fn(count, size));
  count_made(p, CALL_MALLOC);
  if (sc__features != 0) sc__ops.sys.on_alloc(p, count * size); /* checked by the caller */
  return p;
}

void *sc__sys_memalign(size_t align, size_t n) {
  void *p = record(glibc.memalign_fn(align, n));
  count_made(p, CALL_ALIGNED);
  if (sc__features != 0) sc__ops.sys.on_alloc(p, n);
  return p;
}

/** Count a realloc that kept its block p of `bytes` usable bytes as it
 * was (what count_call counts for it, the thread's own line first). */
static inline void count_in_place(const void *p, uint64_t bytes) {
  sc_arena_t *a = sc__thread.arena;
  if (sc_likely(a != NULL)) {
    sc_fallback_counts_t *k = &a->fallback;
    k->realloc_calls++;
    __atomic_store_n(&k->bytes_total, k->bytes_total + bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&k->bytes_freed, k->bytes_freed + bytes, __ATOMIC_RELAXED);
    return;
  }
  count_call(CALL_REALLOC, p, bytes, false, bytes);
}

/** The size to ask glibc for when a block of `have` usable bytes grows to
 * n: n, or n and an eighth more when the growth is small (at most an
 * eighth of the block: text or an array grown a piece at a time, not a
 * resize to a new size) and the block below SYS_ROOM_MAX, so that the next
 * pieces fit without a call. */
static size_t sys_grown_size(size_t have, size_t n) {
  if (n - have > have / 8 || n > SYS_ROOM_MAX) return n;
  return (n + n / 8 + 15) & ~(size_t)15;
}

/** realloc of system block p to n bytes through glibc's realloc (which
 * may move it): its record moves with it. */
static sc_noinline void *sys_realloc_call(void *p, size_t n) {
  uint32_t info = 0;
  bool was = forget(p, &info, "realloc of invalid pointer");
  size_t old = block_size(p);
  if (sc__features != 0) sc__ops.sys.on_free(p, info, old);
  void *q = glibc.realloc_fn(p, n);
  if (q != NULL && sc_unlikely(!sc__sysrec_insert(q, 0))) {
    /* The record cannot grow: glibc's realloc moved or resized the block,
     * which the program then cannot keep. Give it back, as a failed
     * realloc would leave it (the old contents are lost: never seen). */
    q = record_slow(q);
  } else if (q == NULL && was) {
    sc__sysrec_insert(p, 0); /* p stays valid */
  }
  count_call(CALL_REALLOC, q, q != NULL ? block_size(q) : 0, false, old);
  if (sc__features != 0) sc__ops.sys.on_alloc(q != NULL ? q : p, q != NULL ? n : old);
  return q;
}

/* With features on too: a block kept in place keeps its usable size, so
 * its tag's bytes, the exact tier's live bytes and a sampled site's record
 * stay as they are (a class block resized in place is the same); what
 * grows goes through sys_realloc_call, which tells them. Only glibc's
 * headers are needed. */
void *sc__sys_realloc(void *p, size_t n) {
  if (sc_likely(headers_are_glibcs) && sc_likely(sc__sysrec_lookup(p, NULL))) {
    size_t have = header_size(p);
    /* In place when the chunk holds n and n keeps at least seven eighths
     * of it (the room sys_grown_size gave, or a small trim): glibc's
     * realloc would return p too, having split off the rest (here the rest
     * stays with the block, as its room to grow). */
    if (n <= have && n >= have - have / 8) {
      count_in_place(p, have);
      return p;
    }
    if (n > have) n = sys_grown_size(have, n);
  }
  return sys_realloc_call(p, n);
}

/** free of a system block by a thread without an arena, or with features
 * on, or without glibc's headers. */
static sc_noinline void sys_free_any(void *p, uint32_t info) {
  uint64_t bytes = block_size(p);
  if (sc__features != 0) sc__ops.sys.on_free(p, info, bytes);
  sc_arena_t *a = sc__thread.arena;
  bool look = false;
  if (sc_likely(a != NULL)) {
    a->fallback.frees++;
    uint64_t freed = a->fallback.bytes_freed + bytes;
    __atomic_store_n(&a->fallback.bytes_freed, freed, __ATOMIC_RELAXED);
    if (freed - a->sys_trim_mark >= SC_SYS_TRIM_DEBT) {
      a->sys_trim_mark = freed;
      look = true;
    }
  } else {
    system_used_unbound();
    atomic_fetch_add_explicit(&sc__fallback_shared.frees, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&sc__fallback_shared.bytes_freed, bytes, memory_order_relaxed);
  }
  if (sc__features & SC_FEATURE_EXACT) sc__ops.sys.on_live(a, -(int64_t)bytes);
  glibc.free_fn(p);
  /* After the free: a trim or a shrink now sees the block's memory free. */
  if (a == NULL)
    sc__sys_trim_freed_shared(bytes);
  else if (look)
    sc__sys_trim_poll();
}

/** The paced trim's look (sc__sys_trim_poll) once a thread has freed
 * SC_SYS_TRIM_DEBT bytes of system blocks since the last one. */
static sc_noinline void sys_free_trim(sc_arena_t *a, uint64_t freed, void *p) {
  a->sys_trim_mark = freed;
  glibc.free_fn(p);
  sc__sys_trim_poll();
}

/** free's route with features on (or a tool's malloc): the record's word
 * for the features, then the general free. */
static sc_noinline void sys_free_featured(void *p) {
  uint32_t info = 0; /* the features' word of p's record */
  if (sc_unlikely(!sc__sysrec_remove(p, &info))) forget(p, &info, "invalid free");
  sys_free_any(p, info);
}

void sc__sys_free(void *p) {
  if (sc_likely(sys_plain)) {
    /* No feature keeps a word in p's record: none to read back (and no
     * stack slot for it, so glibc's free below is a tail jump). */
    if (sc_unlikely(!sc__sysrec_remove(p, NULL))) forget(p, NULL, "invalid free");
    sc_arena_t *a = sc__thread.arena;
    if (sc_unlikely(a == NULL)) {
      sys_free_any(p, 0);
      return;
    }
    sc_fallback_counts_t *k = &a->fallback;
    k->frees++;
    uint64_t freed = k->bytes_freed + header_size(p);
    __atomic_store_n(&k->bytes_freed, freed, __ATOMIC_RELAXED);
    if (sc_unlikely(freed - a->sys_trim_mark >= SC_SYS_TRIM_DEBT)) {
      sys_free_trim(a, freed, p);
      return;
    }
    glibc.free_fn(p);
    return;
  }
  sys_free_featured(p);
}
