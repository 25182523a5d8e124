/* SPDX-License-Identifier: MIT */
/* round_shim.c — issue 31's rounding experiment from the other side:
 * mimalloc (fine size classes: 16, 32, 48, 64, 80, 96, 112, 128, 160, ...)
 * with every request of at most 1024 B rounded up to libsizeclass's
 * classes (powers of two, 16 B at least) before mimalloc sees it. Run
 * against the same shim built without the rounding (-DROUND=0: the same
 * extra call per operation), the difference is what power-of-two rounding
 * alone costs mimalloc: RSS and cache misses. Throw-away, never shipped:
 * built by bench/experiments/rounding.sh into /tmp.
 *
 *   cc -O2 -shared -fPIC -DROUND=1 -o libround.so round_shim.c \
 *      /lib/x86_64-linux-gnu/libmimalloc.so.2 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

void *mi_malloc(size_t n);
void *mi_calloc(size_t count, size_t size);
void *mi_realloc(void *p, size_t n);
void *mi_malloc_aligned(size_t n, size_t align);
void mi_free(void *p);
size_t mi_usable_size(const void *p);

#define EXPORT __attribute__((visibility("default")))

static inline size_t up(size_t n) {
#if ROUND
  if (n > 1024) return n;
  if (n <= 16) return 16;
  return (size_t)1 << (64 - __builtin_clzl(n - 1));
#else
  return n;
#endif
}

EXPORT void *malloc(size_t n) { return mi_malloc(up(n)); }
EXPORT void free(void *p) { mi_free(p); }
EXPORT void *calloc(size_t c, size_t s) {
  size_t n;
  if (__builtin_mul_overflow(c, s, &n)) {
    errno = ENOMEM;
    return NULL;
  }
  return mi_calloc(1, up(n));
}
EXPORT void *realloc(void *p, size_t n) { return mi_realloc(p, up(n)); }
EXPORT void *memalign(size_t a, size_t n) { return mi_malloc_aligned(up(n), a); }
EXPORT void *aligned_alloc(size_t a, size_t n) { return mi_malloc_aligned(up(n), a); }
EXPORT int posix_memalign(void **out, size_t a, size_t n) {
  void *p = mi_malloc_aligned(up(n), a);
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}
EXPORT size_t malloc_usable_size(void *p) { return mi_usable_size(p); }

static void *must(void *p) {
  if (p == NULL) abort();
  return p;
}
EXPORT void *_Znwm(size_t n) { return must(mi_malloc(up(n))); }
EXPORT void *_Znam(size_t n) { return must(mi_malloc(up(n))); }
EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t a) { return must(mi_malloc_aligned(up(n), a)); }
EXPORT void *_ZnamSt11align_val_t(size_t n, size_t a) { return must(mi_malloc_aligned(up(n), a)); }
EXPORT void _ZdlPv(void *p) { mi_free(p); }
EXPORT void _ZdaPv(void *p) { mi_free(p); }
EXPORT void _ZdlPvm(void *p, size_t n) {
  (void)n;
  mi_free(p);
}
EXPORT void _ZdaPvm(void *p, size_t n) {
  (void)n;
  mi_free(p);
}
EXPORT void _ZdlPvSt11align_val_t(void *p, size_t a) {
  (void)a;
  mi_free(p);
}
EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a) {
  (void)n;
  (void)a;
  mi_free(p);
}
