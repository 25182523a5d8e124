/* SPDX-License-Identifier: MIT */
/* fuzz_alloc.c — libFuzzer harness: the input is a program of allocation
 * calls (malloc, calloc, realloc, memalign, posix_memalign, aligned_alloc,
 * free, and frees/allocations on a second thread) over 64 slots and sizes
 * 0..4096. Every block is filled with a tag when made and checked before it
 * is resized or freed; alignment, usable size, zeroing and ownership are
 * checked as they are handed out. A failed check aborts (a finding).
 *
 * Built by mk/fuzz.mk with clang -fsanitize=fuzzer,undefined and linked with
 * the whole library, shim included: malloc here (and in libFuzzer) is
 * libsizeclass.
 *
 * Encoding, per operation: [op][slot][size lo][size hi][extra]; a short
 * tail is ignored. size = (lo | hi << 8) % 4097. */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sizeclass.h"

#define SLOTS 64
#define MAX_SIZE 4096

typedef struct {
  uint8_t *p;
  size_t n;
  uint8_t tag;
} slot_t;

static slot_t slots[SLOTS];
static uint8_t next_tag = 1;

static void fail(const char *what, const slot_t *s) {
  fprintf(stderr, "fuzz_alloc: %s (block %p, %zu bytes, tag %u)\n", what, (void *)s->p, s->n,
          s->tag);
  abort();
}

static uint8_t pattern(uint8_t tag, size_t i) { return (uint8_t)(tag * 31u + i * 7u + (i >> 8)); }

static void fill(slot_t *s) {
  for (size_t i = 0; i < s->n; i++) s->p[i] = pattern(s->tag, i);
}

/** The first n bytes of s still hold its tag's pattern. */
static void check_prefix(const slot_t *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s->p[i] != pattern(s->tag, i)) fail("block contents changed", s);
}

/** Checks on a block just handed out for n bytes at alignment align. */
static void check_new(const slot_t *s, size_t align) {
  if (((uintptr_t)s->p & (align - 1)) != 0) fail("misaligned block", s);
  if (malloc_usable_size(s->p) < s->n) fail("usable size below the request", s);
  /* Class-sized requests at class alignment are ours; larger go to the system. */
  if (s->n <= SC_MAX_CLASS_SIZE && align <= SC_MAX_CLASS_SIZE && !sc_owns(s->p))
    fail("a class-sized block not from the classes", s);
  if (s->n > SC_MAX_CLASS_SIZE && sc_owns(s->p)) fail("a large block from the classes", s);
}

static void release(slot_t *s) {
  if (s->p == NULL) return;
  check_prefix(s, s->n);
  free(s->p);
  s->p = NULL;
}

static void adopt(slot_t *s, void *p, size_t n, size_t align) {
  s->p = p;
  s->n = n;
  s->tag = next_tag++;
  check_new(s, align);
  fill(s);
}

/* ---- the second thread: frees and allocations on request ---------------- */

static pthread_mutex_t mb_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mb_cond = PTHREAD_COND_INITIALIZER;
static struct {
  int state; /* 0 idle, 1 request posted, 2 done */
  void *free_this;
  size_t alloc_n; /* 0: no allocation; else n + 1 */
  void *made;
} mb;

static void *helper_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mb_lock);
  for (;;) {
    while (mb.state != 1) pthread_cond_wait(&mb_cond, &mb_lock);
    if (mb.free_this != NULL) free(mb.free_this);
    mb.made = mb.alloc_n != 0 ? malloc(mb.alloc_n - 1) : NULL;
    mb.state = 2;
    pthread_cond_broadcast(&mb_cond);
  }
  return NULL;
}

static pthread_once_t helper_once = PTHREAD_ONCE_INIT;

static void helper_start(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, helper_main, NULL) != 0) abort();
  pthread_detach(t);
}

/** On the helper thread: free p (may be NULL), then malloc(n) if want. */
static void *on_helper(void *p, size_t n, int want) {
  pthread_once(&helper_once, helper_start);
  pthread_mutex_lock(&mb_lock);
  mb.free_this = p;
  mb.alloc_n = want ? n + 1 : 0;
  mb.state = 1;
  pthread_cond_broadcast(&mb_cond);
  while (mb.state != 2) pthread_cond_wait(&mb_cond, &mb_lock);
  mb.state = 0;
  void *made = mb.made;
  pthread_mutex_unlock(&mb_lock);
  return made;
}

/* ---- the interpreter ------------------------------------------------------ */

static void run_op(uint8_t op, slot_t *s, size_t n, uint8_t extra) {
  switch (op % 10) {
    case 0: /* malloc */
      release(s);
      adopt(s, malloc(n), n, 16);
      break;
    case 1: { /* calloc: count x size with count from extra */
      release(s);
      size_t count = 1 + extra % 8, each = n / count;
      uint8_t *p = calloc(count, each);
      for (size_t i = 0; i < count * each; i++)
        if (p[i] != 0) fail("calloc block not zeroed", &(slot_t){p, count * each, 0});
      adopt(s, p, count * each, 16);
      break;
    }
    case 2: { /* realloc: the common prefix survives */
      size_t keep = 0;
      if (s->p != NULL) {
        check_prefix(s, s->n);
        keep = s->n < n ? s->n : n;
      }
      uint8_t *p = realloc(s->p, n);
      if (n == 0 && s->p != NULL) { /* glibc semantics: freed, NULL */
        if (p != NULL) fail("realloc(p, 0) returned a block", s);
        s->p = NULL;
        break;
      }
      if (p == NULL) fail("realloc failed", s);
      s->p = p;
      check_prefix(s, keep);
      adopt(s, p, n, 16);
      break;
    }
    case 3: { /* memalign, alignment 1..4096 */
      release(s);
      size_t align = (size_t)1 << (extra % 13);
      adopt(s, memalign(align, n), n, align);
      break;
    }
    case 4: { /* posix_memalign, alignment sizeof(void *)..4096 */
      release(s);
      size_t align = (size_t)sizeof(void *) << (extra % 10);
      void *p = NULL;
      if (posix_memalign(&p, align, n) != 0) fail("posix_memalign failed", s);
      adopt(s, p, n, align);
      break;
    }
    case 5: { /* aligned_alloc */
      release(s);
      size_t align = (size_t)1 << (extra % 13);
      adopt(s, aligned_alloc(align, n), n, align);
      break;
    }
    case 6: /* free */
    case 7:
      release(s);
      break;
    case 8: /* free on the other thread (a remote free) */
      if (s->p != NULL) check_prefix(s, s->n);
      on_helper(s->p, 0, 0);
      s->p = NULL;
      break;
    case 9: /* a block made by the other thread, freed later by this one */
      release(s);
      adopt(s, on_helper(NULL, n, 1), n, 16);
      break;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (size_t i = 0; i + 5 <= size; i += 5) {
    size_t n = (size_t)(data[i + 2] | data[i + 3] << 8) % (MAX_SIZE + 1);
    run_op(data[i], &slots[data[i + 1] % SLOTS], n, data[i + 4]);
  }
  for (int i = 0; i < SLOTS; i++) release(&slots[i]);
  return 0;
}
