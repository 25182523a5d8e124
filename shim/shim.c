/* SPDX-License-Identifier: MIT */
/* shim.c — the C allocation API, mapped onto libsizeclass. Linked into
 * libsizeclass.so these definitions interpose on glibc's for the whole
 * process (LD_PRELOAD); linked from libsizeclass.a into an executable they
 * replace them at link time. Semantics follow glibc where the standard
 * leaves room. */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/purge.h"
#include "core/internal.h"

#define SC_EXPORT __attribute__((visibility("default")))

SC_EXPORT void *malloc(size_t n) { return sc__malloc_inline(n); }

SC_EXPORT void free(void *p) { sc__free_inline(p); }

/* C23's sized frees, and cfree (glibc before 2.26; old binaries still call
 * it): free. The size and alignment are not trusted: the block's own page
 * says both (operator delete's sized forms do the same, cxx.c). Defined
 * here because a glibc that has them (C23 support, newer than Debian
 * 12's 2.36) would otherwise free a block of ours as one of its own. */
void free_sized(void *p, size_t n);
void free_aligned_sized(void *p, size_t align, size_t n);
void cfree(void *p);
SC_EXPORT void free_sized(void *p, size_t n) {
  (void)n;
  free(p);
}
SC_EXPORT void free_aligned_sized(void *p, size_t align, size_t n) {
  (void)align, (void)n;
  free(p);
}
SC_EXPORT void cfree(void *p) { free(p); }

SC_EXPORT void *calloc(size_t count, size_t size) { return sc__calloc(count, size); }

SC_EXPORT void *realloc(void *p, size_t n) { return sc__realloc(p, n); }

SC_EXPORT void *reallocarray(void *p, size_t count, size_t size) {
  size_t n;
  if (__builtin_mul_overflow(count, size, &n)) {
    errno = ENOMEM;
    return NULL;
  }
  return sc__realloc(p, n);
}

SC_EXPORT int posix_memalign(void **out, size_t align, size_t n) {
  return sc__posix_memalign(out, align, n);
}

/* C11: alignment must be a power of two (glibc >= 2.38 agrees). */
SC_EXPORT void *aligned_alloc(size_t align, size_t n) {
  if (align == 0 || (align & (align - 1)) != 0) {
    errno = EINVAL;
    return NULL;
  }
  return sc__memalign(align, n);
}

/* glibc: a non-power-of-two alignment is rounded up to the next one. */
SC_EXPORT void *memalign(size_t align, size_t n) {
  if (align > SIZE_MAX / 2 + 1) { /* no power of two >= align fits */
    errno = EINVAL;
    return NULL;
  }
  size_t a = 1;
  while (a < align) a <<= 1;
  return sc__memalign(a, n);
}

SC_EXPORT void *valloc(size_t n) { return sc__memalign((size_t)sysconf(_SC_PAGESIZE), n); }

SC_EXPORT void *pvalloc(size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t rounded;
  if (__builtin_add_overflow(n, page - 1, &rounded)) {
    errno = ENOMEM;
    return NULL;
  }
  rounded &= ~(page - 1);
  return sc__memalign(page, rounded == 0 ? page : rounded);
}

SC_EXPORT size_t malloc_usable_size(void *p) { return sc__usable_size(p); }

/* glibc's other names for its allocator. A program or library that calls
 * them (a malloc wrapper of its own, code from the days of __malloc_hook)
 * would otherwise hand a block of ours to glibc's free, or one of glibc's
 * to ours: each is an alias of the function above of the same job, no code
 * of its own (names spelled through the macros, so that mk/sanitize.mk's
 * renaming reaches them too). The library reaches glibc's own around these
 * (core/libc_syms.c). */
#define SC_STRING(x) #x
#if defined(__clang__)
#define SC_ALIAS_OF(f) __attribute__((alias(SC_STRING(f)), visibility("default")))
#else /* GCC wants the target's attributes (malloc, alloc_size, …) said too */
#define SC_ALIAS_OF(f) __attribute__((alias(SC_STRING(f)), copy(f), visibility("default")))
#endif
void *__libc_malloc(size_t n) SC_ALIAS_OF(malloc);
void *__libc_calloc(size_t count, size_t size) SC_ALIAS_OF(calloc);
void *__libc_realloc(void *p, size_t n) SC_ALIAS_OF(realloc);
void __libc_free(void *p) SC_ALIAS_OF(free);
void *__libc_memalign(size_t align, size_t n) SC_ALIAS_OF(memalign);
void *__libc_valloc(size_t n) SC_ALIAS_OF(valloc);
void *__libc_pvalloc(size_t n) SC_ALIAS_OF(pvalloc);

/* glibc: 1 if memory was given back to the OS. glibc trims its own heap,
 * which serves requests > 1024 B (each thread's glibc arena top follows:
 * core/sys_top.c), then ours goes back at once (this thread's and exited
 * threads' arenas; see docs/footprint.md for other live threads: the
 * trim asks each for a purge step, after the glibc part is announced). */
SC_EXPORT int malloc_trim(size_t pad) {
  int sys = sc__sys_trim_now(pad);
  size_t ours = sc__purge_trim();
  return ours != 0 || sys != 0;
}

/* glibc's, seen first: a program that sets glibc's trim or mmap threshold
 * chose glibc's trimming, and the library's paced trim steps aside
 * (core/sys_top.c). */
SC_EXPORT int mallopt(int param, int value) { return sc__mallopt(param, value); }

/* glibc's figures for its heaps plus the classes' (core/mallinfo.c).
 * mallinfo's ints wrap as glibc's own do past 2 GiB. */
SC_EXPORT struct mallinfo2 mallinfo2(void) {
  struct mallinfo2 mi;
  sc__mallinfo2(&mi);
  return mi;
}

SC_EXPORT struct mallinfo mallinfo(void) {
  struct mallinfo2 mi;
  sc__mallinfo2(&mi);
  struct mallinfo old;
  SC_MALLINFO_COPY(old, mi, int);
  return old;
}

/* _exit and _Exit: the report a run asked for arrives when a program ends
 * this way too (dash, and forked children that must not run atexit
 * handlers, do): the core's last words (reason "_exit"; not in a clone or
 * vfork child), then the process ends as glibc's _exit ends it. exit()
 * does not come here (glibc calls its own _exit), and its report is not
 * written twice. */
SC_EXPORT void _exit(int status) {
  sc__last_words_exit();
  for (;;) syscall(SYS_exit_group, status);
}

SC_EXPORT void _Exit(int status) {
  sc__last_words_exit();
  for (;;) syscall(SYS_exit_group, status);
}
