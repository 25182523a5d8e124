/* SPDX-License-Identifier: MIT */
/* test_core_api.c — the allocation API of the core allocator, one entry point
 * at a time: the size-class mapping, glibc-compatible edge cases, alignment,
 * routing between the classes and glibc, LIFO reuse and non-overlap. This
 * binary is linked with libsizeclass.a, so plain malloc here is ours. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core_util.h"
#include "core/internal.h"
#include "core/size_class.h"
#include "sizeclass.h"

/* glibc's own allocator, reachable under these names even when malloc is
 * interposed. Blocks made with it before the library took over (here, from
 * .preinit_array, which runs before every constructor and before this
 * program's first malloc) stand for "made before the library loaded": the
 * library must free and resize them. One made after the takeover is a
 * pointer the library never handed out, and is refused. */
#include "core/libc_syms.h"

enum {
  PRE_100,
  PRE_1,
  PRE_100B,
  PRE_1024,
  PRE_5000,
  PRE_200,
  PRE_3000,
  PRE_CALLOC_20,
  PRE_ALIGNED,
  PRE_10,
  PRE_10B,
  PRE_32,
  PRE_COUNT
};
static void *pre_blocks[PRE_COUNT];

static void make_pre_blocks(void) {
  static const size_t sizes[PRE_COUNT] = {100, 1, 100, 1024, 5000, 200, 3000, 0, 0, 10, 10, 32};
  /* glibc's own, found in libc.so.6: the names are the library's. */
  void *(*glibc_malloc)(size_t) = (void *(*)(size_t))sc__libc_sym("__libc_malloc");
  void *(*glibc_calloc)(size_t, size_t) = (void *(*)(size_t, size_t))sc__libc_sym("__libc_calloc");
  void *(*glibc_memalign)(size_t, size_t) =
      (void *(*)(size_t, size_t))sc__libc_sym("__libc_memalign");
  if (glibc_malloc == NULL || glibc_calloc == NULL || glibc_memalign == NULL) return;
  for (int i = 0; i < PRE_COUNT; i++) pre_blocks[i] = glibc_malloc(sizes[i]);
  pre_blocks[PRE_CALLOC_20] = glibc_calloc(1, 20);
  pre_blocks[PRE_ALIGNED] = glibc_memalign(256, 100);
}
__attribute__((section(".preinit_array"),
               used)) static void (*const pre_init)(void) = make_pre_blocks;

/** Pre-takeover block k (each test uses its own: each is freed once). */
static void *pre_block(int k) {
  cr_assert_not_null(pre_blocks[k], "no pre-takeover block %d", k);
  return pre_blocks[k];
}

/** Class size a request of n bytes must get: the smallest power of two
 * >= max(n, 16), or 0 above 1024 (computed independently of the library). */
static size_t expected_class(size_t n) {
  if (n > 1024) return 0;
  size_t c = 16;
  while (c < n) c <<= 1;
  return c;
}

/** glibc's malloc_usable_size (the next definition after ours). */
static size_t glibc_usable_size(void *p) {
  size_t (*fn)(void *) = (size_t(*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
  cr_assert_not_null(fn, "glibc's malloc_usable_size not found");
  return fn(p);
}

/** Blocks the system allocator freed through us so far (the statistics
 * keep them in every tier). */
static uint64_t fallback_frees(void) {
  struct sc_stats st;
  sc_stats_get(&st);
  return st.fallback.frees;
}

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

Test(core_api, link_time_interposition) {
  void *p = cu_escape(malloc(40));
  cr_assert_not_null(p);
  cr_assert(sc_owns(p), "malloc(40) in a binary linked with libsizeclass.a is not ours");
  cr_assert_eq(malloc_usable_size(p), 64);
  free(p);
  /* glibc's own callers of malloc reach us too. */
  char *s = strdup("interposed");
  cr_assert(sc_owns(s), "strdup's block is not ours");
  cr_assert_str_eq(s, "interposed");
  free(s);
  void *c = cu_escape(calloc(3, 10));
  cr_assert(sc_owns(c));
  cr_assert_eq(malloc_usable_size(c), 32);
  free(c);
}

Test(core_api, class_mapping_0_to_1025) {
  enum { N = 1026 };
  void *blocks[N], *sc_blocks[N];
  for (size_t n = 0; n < N; n++) {
    size_t want = expected_class(n);
    cr_assert_eq(sc_class_size(n), want, "sc_class_size(%zu) = %zu, want %zu", n, sc_class_size(n),
                 want);
    void *p = cu_escape(malloc(n));
    void *q = cu_escape(sc_malloc(n));
    cr_assert_not_null(p, "malloc(%zu)", n);
    cr_assert_not_null(q, "sc_malloc(%zu)", n);
    if (n <= 1024) {
      cr_assert(sc_owns(p), "malloc(%zu) not from the classes", n);
      cr_assert(sc_owns(q), "sc_malloc(%zu) not from the classes", n);
      cr_assert_eq(malloc_usable_size(p), want, "malloc_usable_size(malloc(%zu)) = %zu", n,
                   malloc_usable_size(p));
      cr_assert_eq(sc_usable_size(q), want, "sc_usable_size(sc_malloc(%zu))", n);
      size_t align = want < 64 ? want : 64; /* above: the page's colour (config.h) */
      cr_assert_eq((uintptr_t)p % align, 0, "malloc(%zu) = %p not aligned to %zu", n, p, align);
      cr_assert_eq((uintptr_t)q % align, 0);
    } else {
      cr_assert(!sc_owns(p), "malloc(%zu) should come from glibc", n);
      cr_assert(!sc_owns(q));
      cr_assert_geq(malloc_usable_size(p), n);
      cr_assert_eq(malloc_usable_size(p), glibc_usable_size(p));
    }
    size_t fill = n <= 1024 ? want : n;
    cu_fill(p, fill, n);
    cu_fill(q, fill, n + N);
    blocks[n] = p;
    sc_blocks[n] = q;
  }
  for (size_t n = 0; n < N; n++) {
    size_t fill = n <= 1024 ? expected_class(n) : n;
    cr_assert(cu_check(blocks[n], fill, n), "block of malloc(%zu) overwritten", n);
    cr_assert(cu_check(sc_blocks[n], fill, n + N), "block of sc_malloc(%zu) overwritten", n);
    free(blocks[n]);
    sc_free(sc_blocks[n]);
  }
  cr_assert_eq(sc_class_size(SIZE_MAX), 0);
}

Test(core_api, malloc_zero_gives_unique_16_byte_blocks) {
  enum { N = 3000 };
  uintptr_t *p = calloc(N, sizeof(*p));
  for (size_t i = 0; i < N; i++) {
    void *b = cu_escape(malloc(0));
    cr_assert_not_null(b);
    cr_assert(sc_owns(b));
    cr_assert_eq(malloc_usable_size(b), 16);
    cr_assert_eq((uintptr_t)b % 16, 0);
    cu_fill(b, 16, i);
    p[i] = (uintptr_t)b;
  }
  for (size_t i = 0; i < N; i++) cr_assert(cu_check((void *)p[i], 16, i), "block %zu", i);
  qsort(p, N, sizeof(*p), cmp_ptr);
  for (size_t i = 1; i < N; i++)
    cr_assert_geq(p[i] - p[i - 1], 16, "malloc(0) blocks %#lx and %#lx overlap", p[i - 1], p[i]);
  for (size_t i = 0; i < N; i++) free((void *)p[i]);
  free(p);
  void *z = cu_escape(sc_malloc(0));
  cr_assert(sc_owns(z));
  cr_assert_eq(sc_usable_size(z), 16);
  sc_free(z);
}

Test(core_api, enomem_on_impossible_requests) {
  size_t huge = cu_opaque_size(SIZE_MAX);
  size_t half = cu_opaque_size(SIZE_MAX / 2 + 1);

  errno = 0;
  cr_assert_null(malloc(huge));
  cr_assert_eq(errno, ENOMEM, "malloc(SIZE_MAX): errno %d", errno);
  errno = 0;
  cr_assert_null(sc_malloc(huge));
  cr_assert_eq(errno, ENOMEM);
  errno = 0;
  cr_assert_null(malloc(huge - 4096));
  cr_assert_eq(errno, ENOMEM);

  errno = 0;
  cr_assert_null(calloc(half, 2), "calloc overflow must fail");
  cr_assert_eq(errno, ENOMEM);
  errno = 0;
  cr_assert_null(calloc(2, half));
  cr_assert_eq(errno, ENOMEM);
  errno = 0;
  cr_assert_null(calloc(cu_opaque_size((size_t)1 << 33), cu_opaque_size((size_t)1 << 33)));
  cr_assert_eq(errno, ENOMEM);
  errno = 0;
  cr_assert_null(sc_calloc(half, 4));
  cr_assert_eq(errno, ENOMEM);

  errno = 0;
  cr_assert_null(reallocarray(NULL, half, 2));
  cr_assert_eq(errno, ENOMEM);

  /* A failed resize leaves the old block intact, small or large. */
  size_t sizes[] = {32, 1024, 5000};
  for (size_t i = 0; i < 3; i++) {
    void *p = malloc(sizes[i]);
    cu_fill(p, sizes[i], i);
    errno = 0;
    cr_assert_null(reallocarray(cu_escape(p), half, 2));
    cr_assert_eq(errno, ENOMEM);
    errno = 0;
    cr_assert_null(realloc(cu_escape(p), huge));
    cr_assert_eq(errno, ENOMEM, "realloc(%zu B block, SIZE_MAX): errno %d", sizes[i], errno);
    errno = 0;
    cr_assert_null(sc_realloc(cu_escape(p), huge));
    cr_assert_eq(errno, ENOMEM);
    cr_assert(cu_check(p, sizes[i], i), "failed realloc damaged the %zu B block", sizes[i]);
    free(p);
  }

  void *sentinel = (void *)0x1234, *out = sentinel;
  cr_assert_eq(posix_memalign(&out, 64, huge), ENOMEM);
  cr_assert_eq(out, sentinel);
  errno = 0;
  cr_assert_null(aligned_alloc(64, huge));
  cr_assert_eq(errno, ENOMEM);
  errno = 0;
  cr_assert_null(memalign(64, huge));
  cr_assert_eq(errno, ENOMEM);
  errno = 0;
  cr_assert_null(valloc(huge));
  cr_assert_eq(errno, ENOMEM);
  errno = 0;
  cr_assert_null(pvalloc(huge));
  cr_assert_eq(errno, ENOMEM);
}

Test(core_api, calloc_zeroes_reused_blocks) {
  for (size_t n = 0; n <= 1100; n++) {
    /* Dirty a block, free it, and calloc the same class: LIFO hands the
     * dirty block back, which must come back zeroed. */
    size_t fill = n <= 1024 ? expected_class(n) : n;
    unsigned char *d = cu_escape(malloc(n));
    memset(d, 0xA5, fill);
    free(d);
    unsigned char *z = cu_escape(n % 2 ? calloc(1, n) : calloc(n, 1));
    cr_assert_not_null(z);
    cr_assert_eq(sc_owns(z), n <= 1024);
    for (size_t i = 0; i < n; i++) cr_assert_eq(z[i], 0, "calloc(%zu) byte %zu not zero", n, i);
    free(z);
  }
  unsigned char *z = cu_escape(sc_calloc(7, 9));
  cr_assert(sc_owns(z));
  cr_assert_eq(sc_usable_size(z), 64);
  for (size_t i = 0; i < 63; i++) cr_assert_eq(z[i], 0);
  sc_free(z);
}

Test(core_api, realloc_null_is_malloc) {
  size_t sizes[] = {0, 1, 16, 17, 100, 1024, 1025, 4000};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    size_t n = sizes[i];
    void *p = cu_escape(realloc(NULL, n));
    void *q = cu_escape(sc_realloc(NULL, n));
    void *r = cu_escape(reallocarray(NULL, 1, n));
    cr_assert_not_null(p);
    cr_assert_not_null(q);
    cr_assert_not_null(r);
    cr_assert_eq(sc_owns(p), n <= 1024, "realloc(NULL, %zu)", n);
    cr_assert_eq(sc_owns(q), n <= 1024);
    cr_assert_eq(sc_owns(r), n <= 1024);
    if (n <= 1024) {
      cr_assert_eq(malloc_usable_size(p), expected_class(n));
      cr_assert_eq(malloc_usable_size(r), expected_class(n));
    } else {
      cr_assert_geq(malloc_usable_size(p), n);
    }
    free(p);
    sc_free(q);
    free(r);
  }
}

Test(core_api, realloc_to_zero_frees_and_returns_null) {
  for (size_t n = 1; n <= 1024; n *= 2) {
    void *p = cu_escape(malloc(n));
    cr_assert_null(realloc(p, 0), "realloc(p, 0) must return NULL");
    /* The block was freed: LIFO reuse hands the very same block back. */
    void *q = cu_escape(malloc(n));
    cr_assert_eq(q, p, "realloc(p, 0) did not free the %zu B block", n);
    cr_assert_null(sc_realloc(q, 0));
    void *r = cu_escape(malloc(n));
    cr_assert_eq(r, p, "sc_realloc(p, 0) did not free the block");
    free(r);
  }
  uint64_t before = fallback_frees();
  void *big = cu_escape(malloc(5000));
  cr_assert_null(realloc(big, 0));
  cr_assert_eq(fallback_frees(), before + 1, "realloc(large, 0) did not free through glibc");
  void *g = pre_block(PRE_100);
  cr_assert_null(realloc(g, 0));
}

/* Sizes on both sides of every class boundary and of 1024/1025. */
static const size_t boundary_sizes[] = {1,   15,   16,   17,   31,   32,   33,    63,  64,
                                        65,  127,  128,  129,  255,  256,  257,   511, 512,
                                        513, 1023, 1024, 1025, 1500, 4096, 100000};
#define N_BOUNDARY (sizeof(boundary_sizes) / sizeof(boundary_sizes[0]))

/** realloc each size to each other size, with rfn, checking contents. */
static void check_realloc_pairs(void *(*mfn)(size_t), void *(*rfn)(void *, size_t),
                                void (*ffn)(void *)) {
  for (size_t i = 0; i < N_BOUNDARY; i++) {
    for (size_t j = 0; j < N_BOUNDARY; j++) {
      size_t a = boundary_sizes[i], b = boundary_sizes[j];
      uint64_t seed = i * 100 + j;
      void *p = cu_escape(mfn(a));
      cu_fill(p, a, seed);
      void *q = cu_escape(rfn(p, b));
      cr_assert_not_null(q, "realloc(%zu -> %zu)", a, b);
      size_t keep = a < b ? a : b;
      cr_assert(cu_check(q, keep, seed), "realloc %zu -> %zu lost contents", a, b);
      cr_assert_eq(sc_owns(q), b <= 1024, "realloc %zu -> %zu: wrong side of 1024", a, b);
      cr_assert_geq(malloc_usable_size(q), b);
      if (b <= 1024) cr_assert_eq(malloc_usable_size(q), expected_class(b));
      if (a <= 1024 && b <= 1024 && expected_class(a) == expected_class(b))
        cr_assert_eq(q, p, "realloc within class %zu moved the block", expected_class(a));
      /* The block is fully usable at its new size. */
      cu_fill(q, b, seed + 1);
      cr_assert(cu_check(q, b, seed + 1));
      ffn(q);
    }
  }
}

static void *libc_realloc_wrap(void *p, size_t n) { return realloc(p, n); }
static void *libc_malloc_wrap(size_t n) { return malloc(n); }
static void libc_free_wrap(void *p) { free(p); }

Test(core_api, realloc_keeps_contents_across_every_boundary) {
  check_realloc_pairs(libc_malloc_wrap, libc_realloc_wrap, libc_free_wrap);
  check_realloc_pairs(sc_malloc, sc_realloc, sc_free);
}

Test(core_api, realloc_grows_and_shrinks_byte_by_byte) {
  unsigned char *p = NULL;
  for (size_t n = 1; n <= 1100; n++) {
    p = realloc(p, n);
    cr_assert_not_null(p);
    p[n - 1] = (unsigned char)(n * 7);
    for (size_t i = 0; i < n; i++)
      cr_assert_eq(p[i], (unsigned char)((i + 1) * 7), "grow to %zu: byte %zu", n, i);
  }
  for (size_t n = 1100; n >= 1; n--) {
    p = realloc(p, n);
    cr_assert_not_null(p);
    cr_assert_eq(sc_owns(p), n <= 1024);
    for (size_t i = 0; i < n; i++)
      cr_assert_eq(p[i], (unsigned char)((i + 1) * 7), "shrink to %zu: byte %zu", n, i);
  }
  free(p);
}

/** Fill p's n bytes from seed; check them. */
static void fill_bytes(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 31 + seed);
}
static void expect_bytes(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(p[i], (unsigned char)(i * 31 + seed), "byte %zu of %zu", i, n);
}

/* A system block grown a little gets room for the next pieces (an eighth
 * more), which then fit without moving it; a moderate shrink keeps it as
 * it is; a large one gives the memory back to glibc. */
Test(core_api, a_system_block_grown_a_little_has_room_for_the_next_pieces) {
  unsigned char *p = malloc(2000);
  cr_assert(!sc_owns(p));
  fill_bytes(p, 2000, 5);
  size_t have = malloc_usable_size(p);
  unsigned char *q = realloc(p, have + 100); /* an eighth of the block at most */
  cr_assert_not_null(q);
  expect_bytes(q, 2000, 5);
  size_t room = malloc_usable_size(q);
  cr_assert_geq(room, have + 100 + (have + 100) / 8, "usable %zu after growing %zu to %zu", room,
                have, have + 100);
  fill_bytes(q, room, 6);
  /* Pieces that fit the room: the same block, its contents kept. */
  for (size_t n = have + 101; n <= room; n += 37) {
    unsigned char *r = realloc(q, n);
    cr_assert_eq(r, q, "grow to %zu of %zu moved the block", n, room);
    cr_assert_eq(malloc_usable_size(r), room);
  }
  expect_bytes(q, room, 6);
  /* A shrink by an eighth at most keeps the block and its size; one by a
   * quarter goes to glibc, which splits the tail off. */
  cr_assert_eq(realloc(q, room - room / 8), q);
  cr_assert_eq(malloc_usable_size(q), room);
  expect_bytes(q, room - room / 8, 6);
  q = realloc(q, room - room / 4);
  cr_assert_not_null(q);
  cr_assert_lt(malloc_usable_size(q), room - room / 8);
  expect_bytes(q, room - room / 4, 6);
  free(q);

  /* A resize by more than an eighth (a new size, not a piece) and a big
   * jump get exactly what they ask for (glibc's rounding only). */
  p = malloc(2000);
  q = realloc(p, 2700);
  cr_assert_not_null(q);
  cr_assert_lt(malloc_usable_size(q), 2700 + 2700 / 8);
  q = realloc(q, 8000);
  cr_assert_not_null(q);
  cr_assert_lt(malloc_usable_size(q), 8000 + 8000 / 8);
  /* A large shrink goes to glibc, which gives the tail back. */
  unsigned char *big = malloc(64 << 10);
  fill_bytes(big, 64 << 10, 7);
  unsigned char *small = realloc(big, 3000);
  cr_assert_not_null(small);
  cr_assert_lt(malloc_usable_size(small), 4096);
  expect_bytes(small, 3000, 7);
  free(small);
  free(q);
}

/* Within its class a block is kept by realloc; a freed one still aborts
 * (test_harden), and a pointer inside a block is no block. */
Test(core_api, realloc_within_a_class_keeps_the_block) {
  unsigned char *p = malloc(100); /* 128 B class */
  fill_bytes(p, 100, 3);
  for (size_t n = 65; n <= 128; n++) cr_assert_eq(realloc(p, n), p, "n %zu", n);
  expect_bytes(p, 100, 3);
  unsigned char *q = realloc(p, 64); /* the 64 B class: moved */
  cr_assert_neq(q, p);
  cr_assert_eq(malloc_usable_size(q), 64);
  expect_bytes(q, 64, 3);
  unsigned char *s = malloc(10); /* the 16 B class serves 1..16 */
  for (size_t n = 1; n <= 16; n++) cr_assert_eq(realloc(s, n), s, "n %zu", n);
  free(s);
  free(q);
}

Test(core_api, reallocarray_resizes_like_realloc) {
  unsigned *a = reallocarray(NULL, 10, sizeof(unsigned));
  cr_assert(sc_owns(a));
  for (unsigned i = 0; i < 10; i++) a[i] = i * 3;
  a = reallocarray(a, 300, sizeof(unsigned)); /* 1200 B: to glibc */
  cr_assert_not_null(a);
  cr_assert(!sc_owns(a));
  for (unsigned i = 0; i < 10; i++) cr_assert_eq(a[i], i * 3);
  a = reallocarray(a, 20, sizeof(unsigned)); /* back into the classes */
  cr_assert(sc_owns(a));
  cr_assert_eq(malloc_usable_size(a), 128);
  for (unsigned i = 0; i < 10; i++) cr_assert_eq(a[i], i * 3);
  free(a);
}

Test(core_api, posix_memalign_rejects_bad_alignment_untouched) {
  size_t bad[] = {0, 1, 2, 3, 4, 5, 6, 7, 12, 24, 48, 96, 1000, 4097, SIZE_MAX};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    void *sentinel = (void *)0xDEADBEEF, *out = sentinel;
    errno = 1234;
    cr_assert_eq(posix_memalign(&out, bad[i], 64), EINVAL, "alignment %zu", bad[i]);
    cr_assert_eq(out, sentinel, "posix_memalign(%zu) touched the out-pointer", bad[i]);
    cr_assert_eq(errno, 1234, "posix_memalign changed errno");
    out = sentinel;
    cr_assert_eq(sc_posix_memalign(&out, bad[i], 64), EINVAL);
    cr_assert_eq(out, sentinel);
  }
  /* Through volatile: clang rejects a constant alignment that is not a
   * power of two at compile time (-Wnon-power-of-two-alignment). */
  volatile size_t align_0 = 0, align_24 = 24;
  errno = 0;
  cr_assert_null(aligned_alloc(align_0, 16));
  cr_assert_eq(errno, EINVAL);
  errno = 0;
  cr_assert_null(aligned_alloc(align_24, 48));
  cr_assert_eq(errno, EINVAL);
}

/** One aligned allocation through each entry point. */
typedef void *(*aligned_fn)(size_t align, size_t n);
static void *via_posix_memalign(size_t align, size_t n) {
  void *p = NULL;
  int rc = posix_memalign(&p, align, n);
  cr_assert_eq(rc, 0, "posix_memalign(%zu, %zu) = %d", align, n, rc);
  return p;
}
static void *via_sc_posix_memalign(size_t align, size_t n) {
  void *p = NULL;
  int rc = sc_posix_memalign(&p, align, n);
  cr_assert_eq(rc, 0, "sc_posix_memalign(%zu, %zu) = %d", align, n, rc);
  return p;
}
static void *via_aligned_alloc(size_t align, size_t n) { return aligned_alloc(align, n); }
static void *via_memalign(size_t align, size_t n) { return memalign(align, n); }

Test(core_api, aligned_requests_routed_and_freed_right) {
  aligned_fn fns[] = {via_posix_memalign, via_sc_posix_memalign, via_aligned_alloc, via_memalign};
  const char *names[] = {"posix_memalign", "sc_posix_memalign", "aligned_alloc", "memalign"};
  size_t sizes[] = {0, 1, 8, 16, 17, 100, 512, 1000, 1024, 1025, 3000, 70000};
  for (size_t f = 0; f < 4; f++) {
    for (size_t align = 8; align <= 8192; align *= 2) {
      for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s];
        void *p = cu_escape(fns[f](align, n));
        cr_assert_not_null(p, "%s(%zu, %zu)", names[f], align, n);
        cr_assert_eq((uintptr_t)p % align, 0, "%s(%zu, %zu) = %p misaligned", names[f], align, n,
                     p);
        bool small = align <= 1024 && n <= 1024;
        cr_assert_eq(sc_owns(p), small, "%s(%zu, %zu): served by the wrong allocator", names[f],
                     align, n);
        cr_assert_geq(malloc_usable_size(p), n);
        cu_fill(p, n, align + n);
        cr_assert(cu_check(p, n, align + n));
        if (small) {
          size_t cls = malloc_usable_size(p);
          cr_assert_eq(cls, expected_class(n > align ? n : align), "%s(%zu, %zu) class", names[f],
                       align, n);
          free(p);
          /* Freed into its class: the next block of that class (with that
           * alignment: above 64 B, from a page of colour 0) is p again. */
          void *q = cu_escape(align > 64 ? aligned_alloc(align, cls) : malloc(cls));
          cr_assert_eq(q, p, "%s(%zu, %zu): free did not return the block to its class", names[f],
                       align, n);
          free(q);
        } else {
          uint64_t before = fallback_frees();
          free(p);
          cr_assert_eq(fallback_frees(), before + 1, "%s(%zu, %zu): free missed glibc", names[f],
                       align, n);
        }
      }
    }
  }
}

/* C23's sized frees and the old cfree: glibc 2.36's headers declare
 * neither (cfree is only a compatibility symbol there). */
void free_sized(void *p, size_t n);
void free_aligned_sized(void *p, size_t align, size_t n);
void cfree(void *p);

/* Each is free: a block of ours goes back to its class (the next malloc
 * of the class is that block), a system block goes to glibc through the
 * system route (counted), NULL is nothing, and a second free of one block
 * aborts as free's does. Without the library's own, glibc's would take
 * our blocks for its own. */
Test(core_api, free_sized_free_aligned_sized_and_cfree_are_free) {
  void *p = cu_escape(malloc(100));
  free_sized(p, 100);
  cr_assert_eq(cu_escape(malloc(128)), p, "free_sized did not return the block to its class");
  free(p);
  p = cu_escape(aligned_alloc(64, 200));
  cr_assert(sc_owns(p));
  free_aligned_sized(p, 64, 200);
  cr_assert_eq(cu_escape(malloc(256)), p, "free_aligned_sized did not return the block");
  free(p);
  p = cu_escape(malloc(30));
  cfree(p);
  cr_assert_eq(cu_escape(malloc(32)), p, "cfree did not return the block to its class");
  free(p);
  uint64_t before = fallback_frees();
  free_sized(cu_escape(malloc(5000)), 5000);
  free_aligned_sized(cu_escape(aligned_alloc(4096, 8192)), 4096, 8192);
  cfree(cu_escape(malloc(3000)));
  cr_assert_eq(fallback_frees(), before + 3, "a system block's sized free missed glibc");
  free_sized(NULL, 0);
  free_aligned_sized(NULL, 16, 0);
  cfree(NULL);
}

Test(core_api, free_sized_twice_aborts_as_a_double_free, .signal = SIGABRT) {
  void *p = cu_escape(malloc(48));
  free_sized(p, 48);
  free_sized(p, 48);
}

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);
void *__libc_memalign(size_t align, size_t n);
void *__libc_valloc(size_t n);
void *__libc_pvalloc(size_t n);

/* glibc's __libc_* names are the library's allocator: a block of one name
 * is freed or resized by the other, class blocks and system blocks alike
 * (glibc's __libc_free given a class block took it for a chunk of its own). */
Test(core_api, libc_names_are_the_librarys_allocator) {
  void *p = cu_escape(__libc_malloc(100));
  cr_assert(sc_owns(p), "__libc_malloc(100) is not a class block");
  __libc_free(p);
  cr_assert_eq(cu_escape(malloc(128)), p, "__libc_free did not return the block to its class");
  free(p);
  char *c = cu_escape(__libc_calloc(10, 30));
  cr_assert(sc_owns(c));
  for (int i = 0; i < 300; i++) cr_assert_eq(c[i], 0);
  c = cu_escape(__libc_realloc(c, 700));
  cr_assert(sc_owns(c));
  __libc_free(c);
  void *a = cu_escape(__libc_memalign(256, 100));
  cr_assert(sc_owns(a) && ((uintptr_t)a & 255) == 0);
  free(a);
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  void *v = cu_escape(__libc_valloc(10));
  cr_assert(v != NULL && ((uintptr_t)v & (page - 1)) == 0);
  __libc_free(v);
  void *pv = cu_escape(__libc_pvalloc(10));
  cr_assert(pv != NULL && malloc_usable_size(pv) >= page);
  __libc_free(pv);
  /* System blocks: made by one name, freed by the other, through the route
   * that counts them. */
  uint64_t before = fallback_frees();
  __libc_free(cu_escape(malloc(5000)));
  free(cu_escape(__libc_malloc(6000)));
  free(cu_escape(__libc_realloc(cu_escape(malloc(3000)), 9000)));
  cr_assert_eq(fallback_frees(), before + 3, "a system block missed the system route");
  __libc_free(NULL);
}

Test(core_api, libc_free_twice_aborts_as_a_double_free, .signal = SIGABRT) {
  void *p = cu_escape(malloc(48));
  __libc_free(p);
  __libc_free(p);
}

/* mallinfo2 and mallinfo count the classes' blocks too: 1000 blocks of
 * 100 B (class 128) add 128 000 bytes in use and their pages to the arena,
 * and their frees take the bytes off again. Some slack: the test runner's
 * threads may allocate meanwhile. glibc's blocks count as in glibc's own
 * figures (the test after). */
Test(core_api, mallinfo_counts_the_classes_blocks) {
  enum { N = 1000, SLACK = 16384 };
  static void *blocks[N];
  struct mallinfo2 a = mallinfo2();
  for (int i = 0; i < N; i++) blocks[i] = cu_escape(malloc(100));
  struct mallinfo2 b = mallinfo2();
  cr_assert_geq(b.uordblks - a.uordblks, N * 128, "in use: %zu -> %zu", a.uordblks, b.uordblks);
  cr_assert_lt(b.uordblks - a.uordblks, N * 128 + SLACK);
  /* Their pages (one of them may have been there already). */
  cr_assert_geq(b.arena - a.arena, N * 128 - 65536, "the classes' pages are not in arena");
  cr_assert_eq(b.uordblks + b.fordblks, b.arena, "in use %zu + free %zu != arena %zu", b.uordblks,
               b.fordblks, b.arena);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  struct mallinfo old = mallinfo();
#pragma GCC diagnostic pop
  cr_assert_geq((size_t)old.uordblks, b.uordblks - SLACK, "mallinfo: %d", old.uordblks);
  for (int i = 0; i < N; i++) free(blocks[i]);
  struct mallinfo2 c = mallinfo2();
  cr_assert_lt(c.uordblks, a.uordblks + SLACK, "frees not counted: %zu", c.uordblks);
}

Test(core_api, mallinfo_counts_glibcs_blocks_as_glibc_does) {
  struct mallinfo2 c = mallinfo2();
  void *g = cu_escape(malloc(100000));
  struct mallinfo2 d = mallinfo2();
  cr_assert_geq(d.uordblks + d.hblkhd - c.uordblks - c.hblkhd, 100000, "glibc's block not counted");
  free(g);
}

/** The `live` figure of the class of `size` in malloc_info's document. */
static unsigned long long info_class_live(const char *doc, unsigned size) {
  char key[64];
  snprintf(key, sizeof key, "<class size=\"%u\" ", size);
  const char *at = strstr(doc, key);
  cr_assert_not_null(at, "no %s in:\n%s", key, doc);
  at = strstr(at, " live=\"");
  cr_assert_not_null(at);
  return strtoull(at + 7, NULL, 10);
}

/** malloc_info(0, ...) into a string (the caller frees it). */
static char *info_document(void) {
  char *doc = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&doc, &len);
  cr_assert_not_null(m);
  cr_assert_eq(malloc_info(0, m), 0);
  cr_assert_eq(fclose(m), 0);
  return doc;
}

/* malloc_info is glibc's document (its heaps: the blocks above 1 KiB)
 * with the classes in one more element before its end: 1000 blocks of
 * 100 B are 1000 more live blocks of class 128, and their frees take them
 * off again. Options other than 0 are refused, as glibc refuses them. */
Test(core_api, malloc_info_counts_the_classes_blocks) {
  enum { N = 1000, SLACK = 64 };
  static void *blocks[N];
  char *before = info_document();
  for (int i = 0; i < N; i++) blocks[i] = cu_escape(malloc(100));
  void *big = cu_escape(malloc(100000));
  char *during = info_document();
  cr_assert_eq(strncmp(during, "<malloc version=\"1\">\n", 21), 0, "%s", during);
  cr_assert_not_null(strstr(during, "<heap nr=\"0\">"), "glibc's heaps missing:\n%s", during);
  const char *ours = strstr(during, "<sizeclass version=\"1\">\n");
  cr_assert_not_null(ours, "%s", during);
  const char *end = strstr(during, "</malloc>");
  cr_assert_not_null(end);
  cr_assert_gt(end, ours, "the classes come after the document's end");
  cr_assert_str_eq(end, "</malloc>\n", "one end, last: %s", end);
  unsigned long long a = info_class_live(before, 128), b = info_class_live(during, 128);
  cr_assert_geq(b - a, N, "class 128 live: %llu -> %llu", a, b);
  cr_assert_lt(b - a, N + SLACK);
  cr_assert_not_null(strstr(ours, "<summary pages=\""), "%s", ours);
  cr_assert_null(strstr(ours, "<total"), "<total> is glibc's name: %s", ours);
  for (int i = 0; i < N; i++) free(blocks[i]);
  free(big);
  char *after = info_document();
  cr_assert_lt(info_class_live(after, 128), a + SLACK, "frees not counted");
  free(before);
  free(during);
  free(after);
  FILE *null = fopen("/dev/null", "w");
  cr_assert_not_null(null);
  cr_assert_eq(malloc_info(1, null), EINVAL);
  fclose(null);
}

/* malloc_stats prints glibc's lines, then the classes' (a line per class
 * that has pages: 1000 blocks of 100 B show), then the whole heap's total
 * in glibc's shape. */
Test(core_api, malloc_stats_prints_the_classes) {
  enum { N = 1000 };
  static void *blocks[N];
  for (int i = 0; i < N; i++) blocks[i] = cu_escape(malloc(100));
  FILE *out = tmpfile();
  cr_assert_not_null(out);
  fflush(stderr);
  int saved = dup(2);
  cr_assert_geq(saved, 0);
  cr_assert_eq(dup2(fileno(out), 2), 2);
  malloc_stats();
  fflush(stderr);
  cr_assert_eq(dup2(saved, 2), 2);
  close(saved);
  char text[8192] = {0};
  rewind(out);
  size_t got = fread(text, 1, sizeof text - 1, out);
  fclose(out);
  cr_assert_gt(got, 0);
  cr_assert_not_null(strstr(text, "Arena 0:"), "glibc's lines missing:\n%s", text);
  const char *ours = strstr(text, "Size classes (libsizeclass");
  cr_assert_not_null(ours, "%s", text);
  const char *line = strstr(ours, "class  128 B:");
  cr_assert_not_null(line, "%s", ours);
  const char *in_use = strstr(line, " blocks, ");
  cr_assert_not_null(in_use);
  cr_assert_geq(strtoull(in_use + 9, NULL, 10), N, "%s", line);
  cr_assert_not_null(strstr(ours, "classes' in use bytes = "), "%s", ours);
  /* Last, the whole heap's total, at least the classes' blocks. */
  const char *total = strstr(ours, "Total (incl. mmap and size classes):\n");
  cr_assert_not_null(total, "%s", ours);
  const char *used = strstr(total, "in use bytes     = ");
  cr_assert_not_null(used, "%s", total);
  cr_assert_geq(strtoull(used + 19, NULL, 10), (unsigned long long)N * 128, "%s", total);
  for (int i = 0; i < N; i++) free(blocks[i]);
}

Test(core_api, memalign_rounds_alignment_up) {
  size_t aligns[] = {0, 1, 3, 24, 48, 100, 1000};
  for (size_t i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
    size_t pow2 = 1;
    while (pow2 < aligns[i]) pow2 <<= 1;
    void *p = cu_escape(memalign(aligns[i], 10));
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % pow2, 0, "memalign(%zu) = %p", aligns[i], p);
    cr_assert(sc_owns(p));
    free(p);
  }
}

Test(core_api, valloc_and_pvalloc_are_page_aligned) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t sizes[] = {0, 1, 100, 1024, 5000};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    size_t n = sizes[i];
    void *v = cu_escape(valloc(n));
    void *pv = cu_escape(pvalloc(n));
    cr_assert_not_null(v);
    cr_assert_not_null(pv);
    cr_assert_eq((uintptr_t)v % page, 0);
    cr_assert_eq((uintptr_t)pv % page, 0);
    cr_assert(!sc_owns(v));
    cr_assert(!sc_owns(pv));
    cr_assert_geq(malloc_usable_size(v), n);
    size_t rounded = n == 0 ? page : (n + page - 1) / page * page;
    cr_assert_geq(malloc_usable_size(pv), rounded, "pvalloc(%zu) usable %zu", n,
                  malloc_usable_size(pv));
    memset(pv, 0x5A, rounded);
    uint64_t before = fallback_frees();
    free(v);
    free(pv);
    cr_assert_eq(fallback_frees(), before + 2);
  }
}

Test(core_api, usable_size_of_null_and_glibc_blocks) {
  cr_assert_eq(malloc_usable_size(NULL), 0);
  cr_assert_eq(sc_usable_size(NULL), 0);
  size_t sizes[] = {1, 100, 1024, 5000};
  int blocks[] = {PRE_1, PRE_100B, PRE_1024, PRE_5000};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    void *g = pre_block(blocks[i]);
    cr_assert(!sc_owns(g));
    cr_assert_geq(malloc_usable_size(g), sizes[i]);
    cr_assert_eq(malloc_usable_size(g), glibc_usable_size(g));
    cr_assert_eq(sc_usable_size(g), glibc_usable_size(g));
    free(g);
  }
}

Test(core_api, glibc_blocks_are_resized_and_freed_by_glibc) {
  /* Shrink a glibc block into the classes: contents move. */
  void *g = pre_block(PRE_200);
  cu_fill(g, 200, 1);
  void *q = realloc(g, 50);
  cr_assert(sc_owns(q));
  cr_assert(cu_check(q, 50, 1));
  free(q);
  /* Grow a glibc block: it stays with glibc. */
  g = pre_block(PRE_3000);
  cu_fill(g, 3000, 2);
  q = realloc(g, 9000);
  cr_assert(!sc_owns(q));
  cr_assert(cu_check(q, 3000, 2));
  free(q);
  /* A glibc block of under 1024 B grown into the classes. */
  g = pre_block(PRE_CALLOC_20);
  cu_fill(g, 20, 3);
  q = realloc(g, 1000);
  cr_assert(sc_owns(q));
  cr_assert(cu_check(q, 20, 3));
  free(q);
  uint64_t before = fallback_frees();
  free(pre_block(PRE_ALIGNED));
  free(pre_block(PRE_10));
  cr_assert_eq(fallback_frees(), before + 2, "free did not route glibc blocks to glibc");
}

static void *free_in_thread(void *arg) {
  errno = 777;
  free(arg);
  return (void *)(intptr_t)errno;
}

Test(core_api, free_preserves_errno) {
  void *blocks[] = {malloc(10),      malloc(1000),       malloc(5000),
                    malloc(2 << 20), pre_block(PRE_10B), NULL};
  for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
    errno = 4242;
    free(blocks[i]);
    cr_assert_eq(errno, 4242, "free of block %zu changed errno to %d", i, errno);
  }
  errno = 4343;
  sc_free(cu_escape(sc_malloc(10)));
  cr_assert_eq(errno, 4343);
  /* A free from another thread (remote path; the thread makes its arena). */
  void *p = cu_escape(malloc(100));
  pthread_t t;
  void *ret;
  pthread_create(&t, NULL, free_in_thread, p);
  pthread_join(t, &ret);
  cr_assert_eq((intptr_t)ret, 777, "remote free changed errno to %ld", (long)(intptr_t)ret);
}

Test(core_api, lifo_reuse_per_class) {
  size_t reqs[] = {0, 1, 16, 17, 32, 33, 64, 65, 128, 129, 256, 257, 512, 513, 1024};
  for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
    void *p = cu_escape(malloc(reqs[i]));
    free(p);
    void *q = cu_escape(malloc(reqs[i]));
    cr_assert_eq(q, p, "malloc(%zu): alloc-free-alloc gave %p then %p", reqs[i], p, q);
    free(q);
    /* Any request of the same class takes the block back. */
    void *r = cu_escape(malloc(expected_class(reqs[i])));
    cr_assert_eq(r, p, "class %zu did not reuse the freed block", expected_class(reqs[i]));
    free(r);
    void *s = cu_escape(sc_malloc(reqs[i]));
    sc_free(s);
    cr_assert_eq(cu_escape(sc_malloc(reqs[i])), s);
    sc_free(s);
  }
  /* A stack of frees comes back in reverse order. */
  void *blk[16];
  for (int i = 0; i < 16; i++) blk[i] = cu_escape(malloc(48));
  for (int i = 0; i < 16; i++) free(blk[i]);
  for (int i = 15; i >= 0; i--) cr_assert_eq(cu_escape(malloc(48)), blk[i], "LIFO order at %d", i);
  for (int i = 0; i < 16; i++) free(blk[i]);
}

/* A class block is aligned to its size up to 64 B. Above, every block of
 * a page starts at the page's colour, a multiple of 64 B below the block
 * size, plus whole blocks; and the pages of a class take different colours
 * (the first two half a block apart), so that the blocks' first lines do
 * not all fall in the same cache sets (config.h). */
Test(core_api, every_class_block_aligned_and_pages_coloured) {
  enum { PER_CLASS = 3000 };
  void **p = malloc(PER_CLASS * sizeof(void *));
  for (size_t cls = 16; cls <= 1024; cls *= 2) {
    size_t line = cls < 64 ? cls : 64;
    bool seen[16] = {false};
    unsigned colours = 0;
    for (size_t i = 0; i < PER_CLASS; i++) {
      size_t n = cls / 2 + 1 + i % (cls / 2);
      p[i] = cu_escape(malloc(n));
      cr_assert_eq(malloc_usable_size(p[i]), cls);
      uintptr_t u = (uintptr_t)p[i], colour = (u & (SC_PAGE_SIZE - 1)) % cls;
      cr_assert_eq(u % line, 0, "class %zu block %p misaligned", cls, p[i]);
      if (i > 0 && (u & ~(uintptr_t)(SC_PAGE_SIZE - 1)) ==
                       ((uintptr_t)p[i - 1] & ~(uintptr_t)(SC_PAGE_SIZE - 1)))
        cr_assert_eq(colour, ((uintptr_t)p[i - 1] & (SC_PAGE_SIZE - 1)) % cls,
                     "class %zu: blocks %p and %p of one page, two colours", cls, p[i - 1], p[i]);
      if (!seen[colour / line]) colours++;
      seen[colour / line] = true;
      /* The lines before a page's colour hold no block. */
      if (colour != 0)
        cr_assert(!sc_owns((void *)(u & ~(uintptr_t)(SC_PAGE_SIZE - 1))),
                  "class %zu: the start of a page of colour %zu is owned", cls, (size_t)colour);
    }
    /* 3000 blocks fill at least 3 pages of each class above 64 B. */
    if (cls <= 64) {
      cr_assert_eq(colours, 1, "class %zu: %u colours", cls, colours);
    } else {
      cr_assert_geq(colours, 2, "class %zu: one colour for every page", cls);
      cr_assert(seen[cls / 2 / 64], "class %zu: no page half a block into its page", cls);
    }
    for (size_t i = 0; i < PER_CLASS; i++) free(p[i]);
  }
  free(p);
}

/* A page's free list ends in an odd address of its first 4 KiB, where its
 * first block is, whatever its colour: malloc prefetches every link it
 * pops, the end too, and a page's last 4 KiB may never have been touched
 * (a prefetch there walks the page tables every time). */
Test(core_api, list_end_lies_by_the_first_block) {
  enum { PER_CLASS = 3000 };
  void **p = malloc(PER_CLASS * sizeof(void *));
  for (size_t cls = 16; cls <= 1024; cls *= 2) {
    for (size_t i = 0; i < PER_CLASS; i++) {
      p[i] = cu_escape(malloc(cls));
      uintptr_t u = (uintptr_t)p[i];
      sc_page_t *page = sc__page_of(sc__segment_of(u), u);
      uintptr_t end = (uintptr_t)sc__list_end(page), first = (uintptr_t)sc__page_first(page);
      uintptr_t base = u & ~(uintptr_t)(SC_PAGE_SIZE - 1);
      cr_assert_eq(end & 1, 1, "class %zu: list end %#lx is even", cls, (unsigned long)end);
      cr_assert(end >= base && end < base + 4096,
                "class %zu: list end %#lx outside the first 4 KiB of page %#lx", cls,
                (unsigned long)end, (unsigned long)base);
      cr_assert_geq(first, base);
      cr_assert_lt(first, base + 4096 - cls + 1, "class %zu: first block %#lx", cls,
                   (unsigned long)first);
    }
    for (size_t i = 0; i < PER_CLASS; i++) free(p[i]);
  }
  free(p);
  uintptr_t none = (uintptr_t)sc__empty_page.free;
  cr_assert(none & 1 && none < 4096, "the empty page's list end %#lx", (unsigned long)none);
}

/* Aligned requests above 64 B come from pages of colour 0 of their class,
 * among the coloured pages plain mallocs fill: every one aligned, ours,
 * and its block back in its class when freed; plain blocks keep theirs. */
Test(core_api, aligned_requests_among_coloured_pages) {
  enum { N = 600 };
  void **plain = malloc(N * sizeof(void *)), **aligned = malloc(N * sizeof(void *));
  for (size_t cls = 128; cls <= 1024; cls *= 2) {
    for (size_t i = 0; i < N; i++) {
      plain[i] = cu_escape(malloc(cls - i % 8));
      size_t align = cls >> (i % 2); /* the class size, or half of it */
      aligned[i] = cu_escape(aligned_alloc(align, cls / 2 + 1));
      cr_assert(sc_owns(aligned[i]), "aligned_alloc(%zu, %zu) not ours", align, cls / 2 + 1);
      cr_assert_eq((uintptr_t)aligned[i] % align, 0, "aligned_alloc(%zu) = %p", align, aligned[i]);
      cr_assert_eq(malloc_usable_size(aligned[i]), cls);
      cu_fill(aligned[i], cls, i);
      cu_fill(plain[i], cls - i % 8, i + N);
    }
    for (size_t i = 0; i < N; i++) {
      cr_assert(cu_check(aligned[i], cls, i), "class %zu: aligned block %zu overwritten", cls, i);
      cr_assert(cu_check(plain[i], cls - i % 8, i + N), "class %zu: block %zu overwritten", cls, i);
      free(plain[i]);
      if (i % 3 == 0) free(aligned[i]);
    }
    /* Freed aligned blocks come back to aligned requests. */
    for (size_t i = 0; i < N; i += 3) {
      aligned[i] = cu_escape(aligned_alloc(cls, cls));
      cr_assert_eq((uintptr_t)aligned[i] % cls, 0);
    }
    for (size_t i = 0; i < N; i++) free(aligned[i]);
  }
  free(plain);
  free(aligned);
}

/* An aligned request that its class's current page cannot serve (another
 * colour) takes a page that can, and that page becomes the current one:
 * the requests after it, aligned or plain, run on it instead of walking
 * the class's pages each time. */
Test(core_api, aligned_request_moves_the_class_to_its_page) {
  enum { N = 64 * 24 }; /* 24 pages of 1 KiB blocks */
  size_t g = sc__bucket_of(1000);
  void **p = malloc(N * sizeof(void *));
  size_t n = 0;
  /* Pages of several colours, each with room; the current one not
   * 1 KiB-aligned (15 colours in 16 are not). */
  while (n < N || ((uintptr_t)sc__page_first(sc__thread.current[g]) & 1023) == 0) {
    cr_assert_lt(n, 4 * N, "every page of the 1 KiB class has colour 0");
    if (n >= N && n % 256 == 0) p = realloc(p, (n + 256) * sizeof(void *));
    p[n++] = cu_escape(malloc(1000));
  }
  for (size_t i = 1; i < n; i += 2) free(p[i]);
  sc_page_t *before = sc__thread.current[g];
  cr_assert_neq((uintptr_t)sc__page_first(before) & 1023, 0);
  void *first = cu_escape(aligned_alloc(1024, 1000));
  cr_assert_eq((uintptr_t)first % 1024, 0, "aligned_alloc(1024) = %p", first);
  sc_page_t *now = sc__thread.current[g];
  cr_assert_neq(now, before, "the class kept its page of another colour");
  cr_assert_eq((uintptr_t)sc__page_first(now) & 1023, 0, "the class's current page is not aligned");
  cr_assert_eq(sc__page_of(sc__segment_of((uintptr_t)first), (uintptr_t)first), now);
  /* Plain and aligned requests in turn: each aligned one leaves its page
   * the current one, where the plain ones take their blocks too. */
  void *pairs[80];
  for (size_t i = 0; i < 80; i += 2) {
    pairs[i] = cu_escape(malloc(1000));
    pairs[i + 1] = cu_escape(aligned_alloc(1024, 1000));
    uintptr_t u = (uintptr_t)pairs[i + 1];
    cr_assert_eq(u % 1024, 0, "aligned_alloc(1024) = %p", pairs[i + 1]);
    cr_assert_eq(sc__page_of(sc__segment_of(u), u), sc__thread.current[g],
                 "pair %zu: the aligned block's page is not the current one", i / 2);
  }
  for (size_t i = 0; i < 80; i++) free(pairs[i]);
  free(first);
  for (size_t i = 0; i < n; i += 2) free(p[i]);
  free(p);
}

/* An aligned request that its current page cannot serve takes a block
 * from a page already in its class's queue whose colour allows it, when
 * one lies among the first (here the first page the thread made, colour
 * 0, right behind the head), not from a new page. In a thread of its own:
 * its arena's pages of the class take their colours from the first. */
static void *aligned_from_queued_page(void *unused) {
  (void)unused;
  enum { N = 64 * 12 }; /* 12 pages of 1 KiB blocks */
  static void *p[N];
  size_t g = sc__bucket_of(1000);
  for (size_t i = 0; i < N; i++) p[i] = cu_escape(malloc(1000));
  uintptr_t first = (uintptr_t)p[0];
  sc_page_t *page0 = sc__page_of(sc__segment_of(first), first);
  cr_assert_eq((uintptr_t)sc__page_first(page0) & 1023, 0, "the first page has a colour");
  for (size_t i = 1; i < N; i += 2) free(p[i]); /* every page has room again */
  cr_assert_neq((uintptr_t)sc__page_first(sc__thread.current[g]) & 1023, 0,
                "the current page is aligned: nothing to walk for");
  void *a = cu_escape(aligned_alloc(1024, 1000));
  uintptr_t u = (uintptr_t)a;
  cr_assert_eq(sc__page_of(sc__segment_of(u), u), page0,
               "aligned_alloc took %p, not a block of the queued page of colour 0", a);
  cr_assert_eq(sc__thread.current[g], page0);
  free(a);
  for (size_t i = 0; i < N; i += 2) free(p[i]);
  return NULL;
}

Test(core_api, aligned_request_uses_a_queued_page) {
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, aligned_from_queued_page, NULL), 0);
  cr_assert_eq(pthread_join(t, NULL), 0);
}

/* Live blocks of every size 1..1100, several of each, with patterns. */
enum { OV_MAX = 1100, OV_PER = 8, OV_N = OV_MAX * OV_PER };
typedef struct {
  uintptr_t p;
  size_t n;
  uint64_t seed;
} live_t;

static int cmp_live(const void *a, const void *b) {
  return cmp_ptr(&((const live_t *)a)->p, &((const live_t *)b)->p);
}

static void *alloc_some_way(size_t n, size_t k) {
  switch (k % 4) {
    case 0:
      return malloc(n);
    case 1:
      return calloc(1, n);
    case 2:
      return realloc(NULL, n);
    default:
      return sc_malloc(n);
  }
}

/** Every block still holds its pattern, and no two blocks' ranges overlap. */
static void check_live(live_t *live, size_t count) {
  for (size_t i = 0; i < count; i++)
    cr_assert(cu_check((void *)live[i].p, live[i].n, live[i].seed),
              "block of %zu B at %#lx overwritten", live[i].n, live[i].p);
  live_t *sorted = malloc(count * sizeof(*sorted));
  memcpy(sorted, live, count * sizeof(*sorted));
  qsort(sorted, count, sizeof(*sorted), cmp_live);
  for (size_t i = 1; i < count; i++) {
    uintptr_t end = sorted[i - 1].p + malloc_usable_size((void *)sorted[i - 1].p);
    cr_assert_leq(end, sorted[i].p, "blocks %#lx (%zu B) and %#lx (%zu B) overlap", sorted[i - 1].p,
                  sorted[i - 1].n, sorted[i].p, sorted[i].n);
  }
  free(sorted);
}

Test(core_api, no_overlap_among_thousands_of_live_blocks) {
  live_t *live = malloc(OV_N * sizeof(*live));
  uint64_t rng = 42, seed = 1;
  for (size_t k = 0; k < OV_PER; k++) {
    for (size_t n = 1; n <= OV_MAX; n++) {
      live_t *l = &live[(n - 1) * OV_PER + k];
      l->n = n;
      l->seed = seed++;
      l->p = (uintptr_t)cu_escape(alloc_some_way(n, k + n));
      cr_assert(l->p != 0);
      cu_fill((void *)l->p, n, l->seed);
    }
  }
  check_live(live, OV_N);
  /* Free a random half (checking each block first), refill those slots with
   * other sizes, and check again: reused blocks must not collide either. */
  for (int round = 0; round < 3; round++) {
    for (size_t i = 0; i < OV_N; i++) {
      if (cu_rand(&rng) % 2) continue;
      live_t *l = &live[i];
      cr_assert(cu_check((void *)l->p, l->n, l->seed));
      free((void *)l->p);
      l->n = 1 + cu_rand(&rng) % OV_MAX;
      l->seed = seed++;
      l->p = (uintptr_t)cu_escape(alloc_some_way(l->n, i));
      cr_assert(l->p != 0);
      cu_fill((void *)l->p, l->n, l->seed);
    }
    check_live(live, OV_N);
  }
  for (size_t i = 0; i < OV_N; i++) {
    cr_assert(cu_check((void *)live[i].p, live[i].n, live[i].seed));
    free((void *)live[i].p);
  }
  free(live);
}

static int global_object;

Test(core_api, sc_owns_only_class_blocks) {
  int local = 0;
  cr_assert(!sc_owns(NULL));
  cr_assert(!sc_owns(&local));
  cr_assert(!sc_owns(&global_object));
  cr_assert(!sc_owns((void *)sc_owns));
  void *g = pre_block(PRE_32);
  cr_assert(!sc_owns(g));
  free(g);
  void *big = cu_escape(malloc(2000));
  cr_assert(!sc_owns(big));
  free(big);
  char *p = cu_escape(malloc(100));
  cr_assert(sc_owns(p));
  cr_assert(sc_owns(p + 127), "an address inside the block lies in our classes");
  free(p);
}

/** In a child limited to a little more address space than it has: allocate
 * until refused, check the refusal, free all, allocate again. 0 = all good. */
static int exhaust_and_recover(void) {
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = rss_virtual_bytes() + ((size_t)48 << 20);
  if (setrlimit(RLIMIT_AS, &rl) != 0) return 10;
  void *last = NULL;
  size_t count = 0;
  int saw_null = 0;
  for (; count < 50000000; count++) {
    size_t n = count % 64 == 0 ? 4000 : 17 + count % 1000;
    errno = 0;
    void **b = malloc(n);
    if (b == NULL) {
      if (errno != ENOMEM) return 11;
      saw_null = 1;
      break;
    }
    b[0] = last;
    b[1] = (void *)(uintptr_t)(n ^ 0x5A5A);
    ((unsigned char *)b)[n - 1] = (unsigned char)n;
    last = b;
  }
  if (!saw_null) return 12;
  if (sc_malloc(cu_opaque_size(SIZE_MAX)) != NULL) return 13;
  while (last != NULL) {
    void **b = last;
    size_t n = (uintptr_t)b[1] ^ 0x5A5A;
    if (n < 17 || n > malloc_usable_size(b) || ((unsigned char *)b)[n - 1] != (unsigned char)n)
      return 14;
    last = b[0];
    free(b);
  }
  for (int i = 0; i < 100000; i++) {
    void *p = malloc(1 + (size_t)i % 1024);
    if (p == NULL) return 15;
    free(p);
  }
  return 0;
}

Test(core_api, malloc_returns_enomem_when_the_os_refuses, .timeout = 60) {
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) _exit(exhaust_and_recover());
  int rc = pr_wait_child(pid, 45);
  cr_assert_eq(rc, 0,
               "child under a low RLIMIT_AS: exit %d (10 setrlimit, 11 errno, 12 never "
               "refused, 13 SIZE_MAX, 14 damaged, 15 no recovery, -2 hung, >128 crashed)",
               rc);
}

/* A page whose blocks were all freed, in any order, is carved again in
 * address order when it next serves (caches and prefetchers follow), and
 * those re-carved blocks count as reuse, not as fresh carves. Without the
 * re-carve the second round follows the shuffled free order. */
Test(core_api, emptied_pages_are_recarved_in_address_order_as_reuse) {
  enum { PER_PAGE = 64, PAGES = 10, N = PER_PAGE * PAGES }; /* 1024 B class */
  static void *blocks[N];
  for (int i = 0; i < N; i++) blocks[i] = cu_escape(malloc(1000));
  for (int i = N - 1; i > 0; i--) { /* free in a shuffled order */
    int j = (int)((unsigned)(i * 7919 + 13) % (unsigned)(i + 1));
    void *t = blocks[i];
    blocks[i] = blocks[j];
    blocks[j] = t;
  }
  for (int i = 0; i < N; i++) free(blocks[i]);
  struct sc_stats before, after;
  sc_stats_get(&before);
  for (int i = 0; i < N; i++) blocks[i] = cu_escape(malloc(1000));
  sc_stats_get(&after);
  /* Other blocks of the class (the test runner's) may share the first and
   * last pages, so up to one page of blocks can be new; the rest is reuse. */
  uint64_t fresh = after.classes[6].fresh_carves - before.classes[6].fresh_carves;
  cr_assert_leq(fresh, PER_PAGE, "%lu of %d re-carved blocks counted as fresh",
                (unsigned long)fresh, N);
  /* Apart from the page that was current when the round began (served from
   * its free list) and page switches, each block follows the previous one. */
  int in_order = 0;
  for (int i = 1; i < N; i++) in_order += (uintptr_t)blocks[i] == (uintptr_t)blocks[i - 1] + 1024;
  cr_assert_geq(in_order, N - 2 * PER_PAGE - PAGES,
                "only %d of %d blocks followed their predecessor", in_order, N - 1);
  for (int i = 0; i < N; i++) free(blocks[i]);
}
