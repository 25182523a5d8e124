/* SPDX-License-Identifier: MIT */
/* harden_util.h — the misuse scenarios of the hardening suite. Each one
 * performs one memory-safety misuse through the plain malloc API and must
 * never return: the allocator aborts with a "sizeclass:" line. They are shared
 * by tests/test_harden.c (run inside the test process, which is linked with
 * libsizeclass.a, under Criterion's .signal = SIGABRT) and by
 * tests/progs/harden_misuse.c (run under LD_PRELOAD, where the test checks
 * the exact stderr line). A scenario that returns reports a failed
 * precondition (>= 2) or an undetected misuse (0). The suites run the
 * helper program with proc_run.h. */
#ifndef HARDEN_UTIL_H
#define HARDEN_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <unistd.h>

#include "core/config.h"

/* What a scenario needs from its host. */
typedef struct {
  /** Called with the address the abort message will name, just before the
   * misuse (the preloaded program prints it for the test to compare). */
  void (*announce)(uintptr_t p);
  /** sc_owns: true when p lies in a handed-out class block. */
  bool (*owns)(const void *p);
} hu_env_t;

/* A scenario: its name, the message it must produce, and the code. */
typedef struct {
  const char *name;
  const char *what;    /* "double free", "invalid free", "corrupted free list" */
  unsigned class_size; /* class named in the message; 0 when it names none */
  int (*run)(const hu_env_t *env);
} hu_case_t;

/** The class every scenario uses; its size appears in the messages. */
#define HU_SIZE 32

/** p unchanged but opaque to the optimizer: the misuse must really happen,
 * and GCC must not diagnose or drop it (-Wuse-after-free, dead stores). */
static inline void *hu_opaque(void *p) {
  __asm__ volatile("" : "+r"(p) : : "memory");
  return p;
}

static inline uintptr_t hu_page_base(const void *p) {
  return (uintptr_t)p & ~(uintptr_t)(SC_PAGE_SIZE - 1);
}
static inline uintptr_t hu_segment_base(const void *p) {
  return (uintptr_t)p & ~(uintptr_t)(SC_SEGMENT_SIZE - 1);
}

/* ---- running frees on another thread --------------------------------- */

typedef struct {
  void *ptrs[4];
  unsigned count;
  const hu_env_t *env;
  bool announce_last; /* announce the last pointer before freeing it */
} hu_frees_t;

static inline void *hu_frees_main(void *arg) {
  hu_frees_t *f = arg;
  for (unsigned i = 0; i < f->count; i++) {
    if (f->announce_last && i + 1 == f->count) f->env->announce((uintptr_t)f->ptrs[i]);
    free(hu_opaque(f->ptrs[i]));
  }
  return NULL;
}

/** Free ptrs[0..count) in order on a new thread, and wait for it. */
static inline int hu_free_on_thread(const hu_env_t *env, void *const *ptrs, unsigned count,
                                    bool announce_last) {
  hu_frees_t f = {.count = count, .env = env, .announce_last = announce_last};
  for (unsigned i = 0; i < count; i++) f.ptrs[i] = ptrs[i];
  pthread_t t;
  if (pthread_create(&t, NULL, hu_frees_main, &f) != 0) return 2;
  pthread_join(t, NULL);
  return 0;
}

/** A fresh class block, checked to be ours. */
static inline void *hu_block(const hu_env_t *env) {
  void *p = hu_opaque(malloc(HU_SIZE));
  return p != NULL && env->owns(p) ? p : NULL;
}

/* ---- double free -------------------------------------------------------- */

/** Same thread frees a block twice (the block is on its page's free list). */
static inline int hu_double_free(const hu_env_t *env) {
  void *p = hu_block(env);
  if (p == NULL) return 2;
  void *again = hu_opaque(p);  /* the compiler must not know it is p */
  env->announce((uintptr_t)p); /* first: printing may allocate, and get p again */
  free(p);
  free(again);
  return 0;
}

/** Another thread frees the owner's block twice (the remote path). */
static inline int hu_double_free_thread(const hu_env_t *env) {
  void *p = hu_block(env);
  if (p == NULL) return 2;
  void *twice[2] = {p, p};
  return hu_free_on_thread(env, twice, 2, true);
}

/** Another thread frees a block; the owner frees it while it still sits on
 * the owner's remote-free list. */
static inline int hu_double_free_remote_list(const hu_env_t *env) {
  void *p = hu_block(env);
  if (p == NULL) return 2;
  int rc = hu_free_on_thread(env, &p, 1, false);
  if (rc != 0) return rc;
  env->announce((uintptr_t)p);
  free(hu_opaque(p));
  return 0;
}

/** Another thread frees q then p (same page); the owner drains its remote
 * list, which it shows by getting q back from malloc, and then frees p, now
 * on its page's free list, a second time. */
static inline int hu_double_free_after_drain(const hu_env_t *env) {
  void *p = NULL, *q = NULL;
  for (int i = 0; i < 1000; i++) {
    p = hu_block(env);
    q = hu_block(env);
    if (p == NULL || q == NULL) return 2;
    if (hu_page_base(p) == hu_page_base(q)) break;
    p = q = NULL;
  }
  if (p == NULL) return 3;
  void *order[2] = {q, p};
  int rc = hu_free_on_thread(env, order, 2, false);
  if (rc != 0) return rc;
  /* The remote list is drained when the class runs out of local room;
   * q was pushed last, so it is the block handed out first after that. */
  for (long i = 0; i < (1L << 22); i++) {
    void *r = hu_opaque(malloc(HU_SIZE));
    if (r == q) {
      env->announce((uintptr_t)p);
      free(hu_opaque(p));
      return 0;
    }
    if (r == p) return 4;
  }
  return 5;
}

/** Free a block, then realloc it to n bytes. */
static inline int hu_realloc_freed(const hu_env_t *env, size_t n) {
  void *p = hu_block(env);
  if (p == NULL) return 2;
  void *again = hu_opaque(p);
  free(p);
  env->announce((uintptr_t)again);
  void *q = realloc(again, n);
  hu_opaque(q);
  return 0;
}

/** realloc of a freed block into another class frees it a second time. */
static inline int hu_double_free_realloc(const hu_env_t *env) {
  return hu_realloc_freed(env, 4 * HU_SIZE);
}

/** realloc of a freed block within its class must not bring it back to
 * life (it would be live and on a free list at once). */
static inline int hu_realloc_freed_same_class(const hu_env_t *env) {
  return hu_realloc_freed(env, HU_SIZE - 1);
}

/* ---- invalid free ------------------------------------------------------- */

/** A pointer into the middle of a live block. */
static inline int hu_invalid_interior(const hu_env_t *env) {
  uint8_t *p = hu_block(env);
  if (p == NULL) return 2;
  env->announce((uintptr_t)(p + HU_SIZE / 2));
  free(hu_opaque(p + HU_SIZE / 2));
  return 0;
}

/** Another thread frees a pointer into the middle of the owner's block. */
static inline int hu_invalid_interior_thread(const hu_env_t *env) {
  uint8_t *p = hu_block(env);
  if (p == NULL) return 2;
  void *inner = p + HU_SIZE / 2;
  return hu_free_on_thread(env, &inner, 1, true);
}

/* Blocks above 64 B start at their page's colour, a multiple of 64 B
 * (src/core/config.h), and their map has an entry per 64 B: a pointer to a
 * line inside such a block, or before a page's first block, passes the
 * low-bits test and is caught by its INTERIOR map entry. */

/** The class of those scenarios: 256 B, four lines a block. */
#define HU_LINES_SIZE 256

/** A fresh 256 B block, checked to be ours. */
static inline uint8_t *hu_lines_block(const hu_env_t *env) {
  uint8_t *p = hu_opaque(malloc(HU_LINES_SIZE));
  return p != NULL && env->owns(p) ? p : NULL;
}

/** free of a pointer to the second line of a live 256 B block. */
static inline int hu_invalid_interior_line(const hu_env_t *env) {
  uint8_t *p = hu_lines_block(env);
  if (p == NULL) return 2;
  env->announce((uintptr_t)(p + 64));
  free(hu_opaque(p + 64));
  return 0;
}

/** Another thread frees a pointer to the third line of the owner's 256 B
 * block. */
static inline int hu_invalid_interior_line_thread(const hu_env_t *env) {
  uint8_t *p = hu_lines_block(env);
  if (p == NULL) return 2;
  void *inner = p + 128;
  return hu_free_on_thread(env, &inner, 1, true);
}

/** malloc_usable_size of a pointer to the last line of a 256 B block. */
static inline int hu_interior_line_usable(const hu_env_t *env) {
  uint8_t *p = hu_lines_block(env);
  if (p == NULL) return 2;
  env->announce((uintptr_t)(p + 192));
  return (int)malloc_usable_size(hu_opaque(p + 192)) * 0;
}

/** realloc of a pointer to the last line of a 256 B block. */
static inline int hu_interior_line_realloc(const hu_env_t *env) {
  uint8_t *p = hu_lines_block(env);
  if (p == NULL) return 2;
  env->announce((uintptr_t)(p + 192));
  hu_opaque(realloc(hu_opaque(p + 192), 100));
  return 0;
}

/** free of the start of a page whose first 256 B block sits above it (a
 * coloured page: no block starts in the lines before its colour). */
static inline int hu_invalid_colour_gap(const hu_env_t *env) {
  for (int i = 0; i < 10000; i++) {
    uint8_t *p = hu_lines_block(env);
    if (p == NULL) return 2;
    if (((uintptr_t)p & (HU_LINES_SIZE - 1)) == 0) continue; /* colour 0 */
    uintptr_t base = hu_page_base(p);
    env->announce(base);
    free(hu_opaque((void *)base));
    return 0;
  }
  return 3;
}

/** A block-aligned pointer into the part of an in-use page never carved
 * (the last block of the page of a fresh block), in *out; 0, or the
 * scenario's failure code. */
static inline int hu_uncarved_block(const hu_env_t *env, void **out) {
  for (int i = 0; i < 10000; i++) {
    void *p = hu_block(env);
    if (p == NULL) return 2;
    uintptr_t last = hu_page_base(p) + SC_PAGE_SIZE - HU_SIZE;
    if (env->owns((void *)last)) continue; /* this page is carved out */
    *out = hu_opaque((void *)last);
    return 0;
  }
  return 3;
}

/** free of a block-aligned pointer into an in-use page's uncarved part. */
static inline int hu_invalid_uncarved(const hu_env_t *env) {
  void *last;
  int rc = hu_uncarved_block(env, &last);
  if (rc != 0) return rc;
  env->announce((uintptr_t)last);
  free(last);
  return 0;
}

/** A pointer to a data page of our segment that no class uses. */
static inline int hu_invalid_unused_page(const hu_env_t *env) {
  void *p = hu_block(env);
  if (p == NULL) return 2;
  uintptr_t t = hu_segment_base(p) + (SC_PAGES_PER_SEGMENT - 1) * SC_PAGE_SIZE;
  if (env->owns((void *)t)) return 3;
  env->announce(t);
  free(hu_opaque((void *)t));
  return 0;
}

/** A pointer into a segment's metadata (its requested-size arrays). */
static inline int hu_invalid_metadata(const hu_env_t *env) {
  void *p = hu_block(env);
  if (p == NULL) return 2;
  uintptr_t t = hu_segment_base(p) + SC_HEADER_BYTES;
  env->announce(t);
  free(hu_opaque((void *)t));
  return 0;
}

/* ---- corrupted free lists ----------------------------------------------- */

/** What a use-after-free write might leave in a block's first word. */
static inline void hu_scribble(void *p) {
  static const char junk[sizeof(uintptr_t)] = "UAF!UAF!";
  memcpy(hu_opaque(p), junk, sizeof(junk));
  hu_opaque(p);
}

/** A use-after-free write into a block on the local free list, then two
 * mallocs of its class (the first one pops the block and follows its link). */
static inline int hu_corrupt_list(const hu_env_t *env) {
  void *p = hu_block(env);
  if (p == NULL) return 2;
  void *again = hu_opaque(p);
  free(p);
  hu_scribble(again);
  env->announce(hu_page_base(again));
  hu_opaque(malloc(HU_SIZE));
  hu_opaque(malloc(HU_SIZE));
  return 0;
}

/** A use-after-free write into a block on the owner's remote-free list, then
 * mallocs of its class until the owner drains that list. */
static inline int hu_corrupt_remote(const hu_env_t *env) {
  void *p = hu_block(env);
  if (p == NULL) return 2;
  int rc = hu_free_on_thread(env, &p, 1, false);
  if (rc != 0) return rc;
  hu_scribble(p);
  env->announce(hu_page_base(p));
  for (long i = 0; i < (1L << 22); i++) hu_opaque(malloc(HU_SIZE));
  return 0;
}

/* ---- forged links (a leaked link, a guessed key) ----------------------- */

/** Three blocks a, b, v of one page (the scenario's precondition), or 3. */
static inline int hu_three_in_page(const hu_env_t *env, void **a, void **b, void **v) {
  for (int i = 0; i < 1000; i++) {
    *a = hu_block(env);
    *b = hu_block(env);
    *v = hu_block(env);
    if (*a == NULL || *b == NULL || *v == NULL) return 2;
    if (hu_page_base(*a) == hu_page_base(*b) && hu_page_base(*b) == hu_page_base(*v)) return 0;
  }
  return 3;
}

/** An attacker's forgery: free a then b (b's link then leads to a), read
 * b's link through a use-after-free and take it for `a ^ key` (one key for
 * the whole process: the key is recovered from one freed block), then
 * write `target ^ key` into b's link and malloc twice: the second malloc
 * would hand out `target`. Returns 0 when it did (the forgery steered
 * malloc: the test fails), 1 when the allocator gave another block and
 * did not abort (no forgery, no detection either). */
static inline int hu_forge(const hu_env_t *env, void *a, void *b, uintptr_t target) {
  env->announce(hu_page_base(b)); /* first: printing may allocate */
  free(hu_opaque(a));
  free(hu_opaque(b));
  uintptr_t leaked = *(volatile uintptr_t *)hu_opaque(b);
  uintptr_t key = leaked ^ (uintptr_t)a;
  /* The target's own first word must look like a link too (the pop that
   * hands it out follows it): a live block's owner writes it at will. */
  *(volatile uintptr_t *)target = (uintptr_t)a ^ key;
  *(volatile uintptr_t *)hu_opaque(b) = target ^ key;
  void *first = hu_opaque(malloc(HU_SIZE));
  void *second = hu_opaque(malloc(HU_SIZE));
  (void)first;
  return (uintptr_t)second == target ? 0 : 1;
}

/** A forged link, made from a leaked one, to a live block: two owners. */
static inline int hu_forged_link_live(const hu_env_t *env) {
  void *a, *b, *v;
  int rc = hu_three_in_page(env, &a, &b, &v);
  if (rc != 0) return rc;
  return hu_forge(env, a, b, (uintptr_t)v);
}

/** A forged link, made from a leaked one, to a misaligned address (half
 * way into free block a, whose bytes a use-after-free writes: a block that
 * overlaps two). */
static inline int hu_forged_link_misaligned(const hu_env_t *env) {
  void *a, *b, *v;
  int rc = hu_three_in_page(env, &a, &b, &v);
  if (rc != 0) return rc;
  return hu_forge(env, a, b, (uintptr_t)a + HU_SIZE / 2);
}

/* ---- fake chunks above 1 KiB ------------------------------------------- */

/** Room for a fake glibc chunk of 0x410 bytes (a 1032-byte block) and the
 * two chunk headers after it. */
typedef struct {
  _Alignas(16) size_t w[(0x410 + 0x40) / sizeof(size_t)];
} hu_fake_t;

static hu_fake_t hu_fake_global;

/** Make a fake in-use 0x410 chunk in f, with sane chunk headers after it
 * (what glibc's checks look at), and return its block: the pointer a free
 * would take, 16 bytes into it. */
static inline void *hu_fake_chunk(hu_fake_t *f) {
  memset(f, 0, sizeof(*f));
  f->w[1] = 0x410 | 1; /* size, PREV_INUSE */
  f->w[0x410 / sizeof(size_t) + 1] = 0x20 | 1;
  f->w[0x430 / sizeof(size_t) + 1] = 0x20 | 1;
  return hu_opaque(&f->w[2]);
}

/** What a fake chunk's block does in the allocator (`how`: 0 free, 1
 * realloc, 2 malloc_usable_size); returns 0 (not caught) if it comes back.
 * A freed fake would be what malloc(1032) returns next. */
static inline int hu_fake_use(const hu_env_t *env, void *p, int how) {
  env->announce((uintptr_t)p);
  if (how == 0) {
    free(p);
  } else if (how == 1) {
    void *q = realloc(p, 2000);
    hu_opaque(q);
  } else {
    size_t n = malloc_usable_size(p);
    hu_opaque((void *)n);
  }
  return 0;
}

static inline int hu_fake_stack_free(const hu_env_t *env) {
  hu_fake_t f;
  return hu_fake_use(env, hu_fake_chunk(&f), 0);
}
static inline int hu_fake_stack_realloc(const hu_env_t *env) {
  hu_fake_t f;
  return hu_fake_use(env, hu_fake_chunk(&f), 1);
}
static inline int hu_fake_stack_usable(const hu_env_t *env) {
  hu_fake_t f;
  return hu_fake_use(env, hu_fake_chunk(&f), 2);
}
static inline int hu_fake_global_free(const hu_env_t *env) {
  return hu_fake_use(env, hu_fake_chunk(&hu_fake_global), 0);
}
static inline int hu_fake_global_realloc(const hu_env_t *env) {
  return hu_fake_use(env, hu_fake_chunk(&hu_fake_global), 1);
}

/** A large block freed twice: the second free finds no record. */
static inline int hu_double_free_large(const hu_env_t *env) {
  void *p = hu_opaque(malloc(5000));
  if (p == NULL || env->owns(p)) return 2;
  void *again = hu_opaque(p);  /* the compiler must not know it is p */
  env->announce((uintptr_t)p); /* first: printing may allocate, and get p again */
  free(p);
  free(again);
  return 0;
}

/** A large block freed at offset `off` into it: 16 (the same 1 KiB window
 * of the record, another offset in it) or 8 (not 16-byte aligned: the
 * record's overflow table). Neither is a block: refused before glibc. */
static inline int hu_large_offset_use(const hu_env_t *env, size_t off, int how) {
  char *p = hu_opaque(malloc(5000));
  if (p == NULL || env->owns(p)) return 2;
  return hu_fake_use(env, hu_opaque(p + off), how);
}
static inline int hu_interior_large_free(const hu_env_t *env) {
  return hu_large_offset_use(env, 16, 0);
}
static inline int hu_interior_large_usable(const hu_env_t *env) {
  return hu_large_offset_use(env, 16, 2);
}
static inline int hu_misaligned_large_free(const hu_env_t *env) {
  return hu_large_offset_use(env, 8, 0);
}
static inline int hu_misaligned_large_realloc(const hu_env_t *env) {
  return hu_large_offset_use(env, 8, 1);
}

/** malloc_usable_size of a pointer into the middle of a live class block,
 * and of a block-aligned one in a page's uncarved part: the inline answer
 * checks what free checks. */
static inline int hu_interior_usable(const hu_env_t *env) {
  uint8_t *p = hu_block(env);
  if (p == NULL) return 2;
  return hu_fake_use(env, hu_opaque(p + HU_SIZE / 2), 2);
}
static inline int hu_uncarved_usable(const hu_env_t *env) {
  void *last;
  int rc = hu_uncarved_block(env, &last);
  return rc != 0 ? rc : hu_fake_use(env, last, 2);
}

/** Every scenario, NULL-terminated. */
static const hu_case_t hu_cases[] = {
    {"double_free", "double free", HU_SIZE, hu_double_free},
    {"double_free_thread", "double free", HU_SIZE, hu_double_free_thread},
    {"double_free_remote_list", "double free", HU_SIZE, hu_double_free_remote_list},
    {"double_free_after_drain", "double free", HU_SIZE, hu_double_free_after_drain},
    {"double_free_realloc", "realloc of freed block", HU_SIZE, hu_double_free_realloc},
    {"realloc_freed_same_class", "realloc of freed block", HU_SIZE, hu_realloc_freed_same_class},
    {"invalid_interior", "invalid free", 0, hu_invalid_interior},
    {"invalid_interior_thread", "invalid free", 0, hu_invalid_interior_thread},
    {"invalid_uncarved", "invalid free", 0, hu_invalid_uncarved},
    {"invalid_interior_line", "invalid free", 0, hu_invalid_interior_line},
    {"invalid_interior_line_thread", "invalid free", 0, hu_invalid_interior_line_thread},
    {"interior_line_usable", "malloc_usable_size of invalid pointer", 0, hu_interior_line_usable},
    {"interior_line_realloc", "realloc of invalid pointer", 0, hu_interior_line_realloc},
    {"invalid_colour_gap", "invalid free", 0, hu_invalid_colour_gap},
    {"invalid_unused_page", "invalid free", 0, hu_invalid_unused_page},
    {"invalid_metadata", "invalid free", 0, hu_invalid_metadata},
    {"corrupt_list", "corrupted free list", HU_SIZE, hu_corrupt_list},
    {"corrupt_remote", "corrupted free list", HU_SIZE, hu_corrupt_remote},
    {"forged_link_live", "corrupted free list", HU_SIZE, hu_forged_link_live},
    {"forged_link_misaligned", "corrupted free list", HU_SIZE, hu_forged_link_misaligned},
    {"fake_stack_free", "invalid free", 0, hu_fake_stack_free},
    {"fake_stack_realloc", "realloc of invalid pointer", 0, hu_fake_stack_realloc},
    {"fake_stack_usable", "malloc_usable_size of invalid pointer", 0, hu_fake_stack_usable},
    {"fake_global_free", "invalid free", 0, hu_fake_global_free},
    {"fake_global_realloc", "realloc of invalid pointer", 0, hu_fake_global_realloc},
    {"double_free_large", "invalid free", 0, hu_double_free_large},
    {"interior_large_free", "invalid free", 0, hu_interior_large_free},
    {"interior_large_usable", "malloc_usable_size of invalid pointer", 0, hu_interior_large_usable},
    {"misaligned_large_free", "invalid free", 0, hu_misaligned_large_free},
    {"misaligned_large_realloc", "realloc of invalid pointer", 0, hu_misaligned_large_realloc},
    {"interior_usable", "malloc_usable_size of invalid pointer", 0, hu_interior_usable},
    {"uncarved_usable", "malloc_usable_size of invalid pointer", 0, hu_uncarved_usable},
    {NULL, NULL, 0, NULL},
};

/** The scenario called name, or NULL. */
static inline const hu_case_t *hu_find(const char *name) {
  for (const hu_case_t *c = hu_cases; c->name != NULL; c++)
    if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

#endif /* HARDEN_UTIL_H */
