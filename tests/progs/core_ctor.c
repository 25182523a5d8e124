/* SPDX-License-Identifier: MIT */
/* core_ctor.c — allocation before libsizeclass's constructor has run. The
 * executable's .preinit_array runs before every shared library's
 * constructor, the preloaded allocator's included: from there we create
 * threads (which wait, then all allocate at once: threads that existed before
 * their first allocation), and malloc, calloc, realloc and free, including
 * blocks of glibc size. main then loads and unloads a library (the dynamic
 * loader allocates through malloc) and reports. Output (deterministic):
 *   usable40=<n>            (64 under libsizeclass)
 *   order=preinit,ctor,main
 *   early=ok threads=ok dl=ok
 * Exit 1 on any failure. */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 4, BLOCKS = 20000 };

static char order[64];
static const char *early_result = "not-run";
static pthread_t early_threads[THREADS];
static pthread_barrier_t start_line;
static int threads_started;

static void *escape(void *p) {
  __asm__ volatile("" : "+r"(p) : : "memory");
  return p;
}

/** Each thread waits for the others, then churns blocks of every class. */
static void *early_thread(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  pthread_barrier_wait(&start_line);
  void *keep[64] = {0};
  for (unsigned i = 0; i < BLOCKS; i++) {
    size_t n = 1 + (i * 131 + id * 17) % 2048;
    unsigned slot = (i * 7) % 64;
    if (keep[slot] != NULL) {
      unsigned char *b = keep[slot];
      if (b[0] != (unsigned char)(slot + id)) return (void *)1;
      free(b);
    }
    unsigned char *p = malloc(n);
    if (p == NULL) return (void *)2;
    memset(p, (int)(slot + id), n);
    keep[slot] = p;
  }
  for (unsigned i = 0; i < 64; i++) free(keep[i]);
  return NULL;
}

/** Runs before any library constructor. */
static void early(void) {
  strcat(order, "preinit");
  /* Threads first, so they exist before any allocation of theirs. */
  pthread_barrier_init(&start_line, NULL, THREADS + 1);
  for (uintptr_t i = 0; i < THREADS; i++)
    if (pthread_create(&early_threads[i], NULL, early_thread, (void *)i) == 0) threads_started++;
  pthread_barrier_wait(&start_line);

  unsigned char *small = escape(malloc(100));
  unsigned char *zeroed = escape(calloc(10, 30));
  unsigned char *big = escape(malloc(5000));
  if (small == NULL || zeroed == NULL || big == NULL) return;
  if (malloc_usable_size(small) < 100 || malloc_usable_size(big) < 5000) {
    early_result = "usable-size";
    return;
  }
  for (int i = 0; i < 300; i++)
    if (zeroed[i] != 0) {
      early_result = "calloc";
      return;
    }
  memset(small, 0x11, 100);
  memset(big, 0x22, 5000);
  small = realloc(small, 2000); /* across 1024/1025 */
  big = realloc(big, 700);      /* and back */
  if (small == NULL || big == NULL) return;
  for (int i = 0; i < 100; i++)
    if (small[i] != 0x11) {
      early_result = "realloc-up";
      return;
    }
  for (int i = 0; i < 700; i++)
    if (big[i] != 0x22) {
      early_result = "realloc-down";
      return;
    }
  free(small);
  free(big);
  free(zeroed);
  early_result = "ok";
}

__attribute__((section(".preinit_array"), used)) static void (*preinit_entry)(void) = early;

__attribute__((constructor)) static void program_constructor(void) {
  strcat(order, ",ctor");
  free(escape(malloc(33)));
}

int main(void) {
  strcat(order, ",main");
  int ok = 1;
  void *probe = malloc(40);
  printf("usable40=%zu\n", malloc_usable_size(probe));
  free(probe);
  printf("order=%s\n", order);
  const char *threads = threads_started == THREADS ? "ok" : "not-started";
  for (int i = 0; i < threads_started; i++) {
    void *ret = NULL;
    pthread_join(early_threads[i], &ret);
    if (ret != NULL) threads = "failed";
  }
  /* The dynamic loader allocates link maps, paths and errors with malloc. */
  const char *dl = "ok";
  void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL)
    dl = "dlopen";
  else {
    double (*cosine)(double) = (double (*)(double))dlsym(h, "cos");
    if (cosine == NULL || cosine(0.0) != 1.0) dl = "dlsym";
    dlclose(h);
  }
  if (dlopen("/nonexistent/libnothing.so", RTLD_NOW) != NULL || dlerror() == NULL) dl = "dlerror";
  printf("early=%s threads=%s dl=%s\n", early_result, threads, dl);
  if (strcmp(early_result, "ok") != 0 || strcmp(threads, "ok") != 0 || strcmp(dl, "ok") != 0)
    ok = 0;
  return ok ? 0 : 1;
}
