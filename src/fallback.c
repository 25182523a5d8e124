/* fallback.c — the route to the system allocator (glibc) for requests the
 * classes do not serve and for pointers the classes did not make. glibc
 * exports its allocator as __libc_*, so no dlsym is needed on this path. */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

#include "internal.h"

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

sc_fallback_stats_t sc__fallback_stats;

/* glibc's malloc_usable_size and malloc_trim have no __libc_ alias; the
 * constructor finds them with dlsym (never called from inside malloc). */
static size_t (*sys_usable_size_fn)(void *);
static int (*sys_trim_fn)(size_t);

void sc__sys_bind(void) {
  sys_usable_size_fn = (size_t(*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
  sys_trim_fn = (int (*)(size_t))dlsym(RTLD_NEXT, "malloc_trim");
}

int sc__sys_trim(size_t pad) { return sys_trim_fn != NULL ? sys_trim_fn(pad) : 0; }

size_t sc__sys_usable_size(const void *p) {
  if (sys_usable_size_fn != NULL) return sys_usable_size_fn((void *)p);
  /* Before the constructor: read glibc's chunk header (size word before the
   * block; bit 1 marks an mmapped chunk, whose header is two words). */
  size_t word = ((const size_t *)p)[-1];
  size_t chunk = word & ~(size_t)7;
  return (word & 2) ? chunk - 2 * sizeof(size_t) : chunk - sizeof(size_t);
}

/** Add `delta` (two's complement for a decrease) to the live bytes and
 * raise the peak if the sum passed it. */
static void add_live_bytes(uint64_t delta) {
  sc_fallback_stats_t *s = &sc__fallback_stats;
  uint64_t live = atomic_fetch_add_explicit(&s->live_bytes, delta, memory_order_relaxed) + delta;
  uint64_t peak = atomic_load_explicit(&s->peak_live_bytes, memory_order_relaxed);
  while (live > peak && live < (UINT64_MAX >> 1) &&
         !atomic_compare_exchange_weak_explicit(&s->peak_live_bytes, &peak, live,
                                                memory_order_relaxed, memory_order_relaxed)) {
  }
}

static void count_made(void *p, _Atomic uint64_t *calls) {
  atomic_fetch_add_explicit(calls, 1, memory_order_relaxed);
  if (p == NULL) return;
  uint64_t bytes = sc__sys_usable_size(p);
  sc_fallback_stats_t *s = &sc__fallback_stats;
  atomic_fetch_add_explicit(&s->allocs, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&s->bytes_total, bytes, memory_order_relaxed);
  add_live_bytes(bytes);
}

static void count_released(const void *p) {
  sc_fallback_stats_t *s = &sc__fallback_stats;
  atomic_fetch_add_explicit(&s->frees, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&s->live_bytes, sc__sys_usable_size(p), memory_order_relaxed);
}

void *sc__sys_malloc(size_t n) {
  void *p = __libc_malloc(n);
  count_made(p, &sc__fallback_stats.malloc_calls);
  return p;
}

void *sc__sys_calloc(size_t count, size_t size) {
  void *p = __libc_calloc(count, size);
  count_made(p, &sc__fallback_stats.malloc_calls);
  return p;
}

void *sc__sys_memalign(size_t align, size_t n) {
  void *p = __libc_memalign(align, n);
  count_made(p, &sc__fallback_stats.aligned_calls);
  return p;
}

void *sc__sys_realloc(void *p, size_t n) {
  size_t old = sc__sys_usable_size(p);
  void *q = __libc_realloc(p, n);
  atomic_fetch_add_explicit(&sc__fallback_stats.realloc_calls, 1, memory_order_relaxed);
  if (q != NULL) {
    size_t now = sc__sys_usable_size(q);
    atomic_fetch_add_explicit(&sc__fallback_stats.bytes_total, now, memory_order_relaxed);
    add_live_bytes((uint64_t)now - old);
  }
  return q;
}

void sc__sys_free(void *p) {
  count_released(p);
  __libc_free(p);
}
