/* SPDX-License-Identifier: MIT */
/* sys_before_takeover — blocks a program got from glibc before the library
 * took over are still freed, resized and measured correctly, run under
 * LD_PRELOAD=libsizeclass.so. .preinit_array runs before every
 * constructor (the preloaded library's too) and before the program's first
 * malloc: blocks made there with __libc_malloc stand for those of a library
 * whose constructor ran before ours. Exit 0 when all is well; 1 after a
 * line on stderr otherwise; 2 when not preloaded. */
#include <dlfcn.h>
#include <stdbool.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/libc_syms.h" /* linked alone (Makefile): glibc's own allocator */

void *__libc_malloc(size_t n);
void __libc_free(void *p);

static const size_t sizes[] = {8, 100, 1000, 1500, 5000, 20000};
#define N (sizeof(sizes) / sizeof(sizes[0]))
static unsigned char *blocks[3][N];

static void make_blocks(void) {
  /* glibc's __libc_malloc: the name itself is the preloaded library's. */
  void *(*glibc_malloc)(size_t) = (void *(*)(size_t))sc__libc_sym("__libc_malloc");
  if (glibc_malloc == NULL) return;
  for (size_t i = 0; i < N; i++)
    for (int k = 0; k < 3; k++) {
      blocks[k][i] = glibc_malloc(sizes[i]);
      if (blocks[k][i] != NULL) memset(blocks[k][i], (int)(i * 3 + (size_t)k + 1), sizes[i]);
    }
}
__attribute__((section(".preinit_array"), used)) static void (*const pre)(void) = make_blocks;

static int fail(const char *what, size_t n) {
  fprintf(stderr, "sys_before_takeover: %s (%zu bytes)\n", what, n);
  return 1;
}

static int check(const unsigned char *p, size_t n, int v) {
  for (size_t j = 0; j < n; j++)
    if (p[j] != (unsigned char)v) return 0;
  return 1;
}

int main(void) {
  if (dlsym(RTLD_DEFAULT, "sc_owns") == NULL) {
    fprintf(stderr, "sys_before_takeover: libsizeclass is not preloaded\n");
    return 2;
  }
  for (size_t i = 0; i < N; i++) {
    size_t n = sizes[i];
    if (blocks[0][i] == NULL || blocks[1][i] == NULL || blocks[2][i] == NULL)
      return fail("no block", n);
    if (malloc_usable_size(blocks[0][i]) < n) return fail("usable size too small", n);
    free(blocks[0][i]);
    unsigned char *q = realloc(blocks[1][i], n * 2 + 2000); /* grows: the system route */
    if (q == NULL || !check(q, n, (int)(i * 3 + 2))) return fail("grown contents", n);
    free(q);
    q = realloc(blocks[2][i], 16); /* shrinks: into the classes when small */
    if (q == NULL || !check(q, n < 16 ? n : 16, (int)(i * 3 + 3)))
      return fail("shrunk contents", n);
    free(q);
  }
  /* After the takeover, the __libc_* names are the library's: a block of
   * __libc_malloc is one of its classes, __libc_free takes a malloc'd one. */
  bool (*owns)(const void *) = (bool (*)(const void *))dlsym(RTLD_DEFAULT, "sc_owns");
  void *p = __libc_malloc(100);
  if (p == NULL || !owns(p)) return fail("__libc_malloc is not the library's", 100);
  __libc_free(p);
  __libc_free(malloc(5000));
  printf("ok\n");
  return 0;
}
