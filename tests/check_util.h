/* SPDX-License-Identifier: MIT */
/* check_util.h — the misuse scenarios of the guard pages
 * (SIZECLASS_GUARD) and the checking mode (SIZECLASS_CHECK): memory errors
 * that plain hardening cannot see (writes past a request, reads and writes
 * after free). Each performs its error through the plain malloc API and
 * must never return: the allocator prints one "sizeclass:" line and
 * aborts. They are shared by tests/test_guard.c and tests/test_check.c
 * (run inside the test process, linked with libsizeclass.a, under
 * Criterion's .signal = SIGABRT) and by tests/progs/check_misuse.c (run
 * under LD_PRELOAD with the mode's variables, where the test checks the
 * exact stderr line). A scenario that returns reports a failed
 * precondition (>= 2) or an undetected error (0). */
#ifndef CHECK_UTIL_H
#define CHECK_UTIL_H

#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* What a scenario needs from its host. */
typedef struct {
  /** Called just before the error with the block the message will name,
   * the offset of the faulting access (or of the changed byte) from it,
   * and the kernel ids of the threads that allocated and freed it (0:
   * not freed); the preloaded program prints them for the test. */
  void (*announce)(uintptr_t block, long offset, long alloc_tid, long free_tid);
} ck_env_t;

/** The modes a scenario runs in. */
enum { CK_CHECK = 1, CK_GUARD = 2 };

/* A scenario: its name, its mode, and the message it must produce, with
 * %B (block), %A (block + offset), %O (offset), %T (allocating thread),
 * %F (freeing thread) filled in from what it announced. */
typedef struct {
  const char *name;
  int mode;
  bool needs_quarantine; /* only caught while freed blocks are held back */
  const char *message;
  int (*run)(const ck_env_t *env);
} ck_case_t;

/** p unchanged but opaque to the optimizer: the error must really happen. */
static inline void *ck_opaque(void *p) {
  __asm__ volatile("" : "+r"(p) : : "memory");
  return p;
}

static inline long ck_tid(void) { return (long)syscall(SYS_gettid); }

/** Flip every bit of byte i of p (a change whatever the byte held). */
static inline void ck_flip(void *p, size_t i) {
  volatile uint8_t *b = ck_opaque(p);
  b[i] ^= 0xff;
}

/** Read byte i of p (and keep the read). */
static inline int ck_read(const void *p, size_t i) {
  const volatile uint8_t *b = ck_opaque((void *)p);
  return b[i];
}

/* ---- the checking mode --------------------------------------------------- */

/** Write the byte just past the 24-byte request p (NULL: no block), then
 * free p: the free must find it. */
static inline int ck_overflow_24_then_free(const ck_env_t *env, uint8_t *p) {
  if (p == NULL) return 2;
  env->announce((uintptr_t)p, 24, 0, 0);
  ck_flip(p, 24);
  free(ck_opaque(p));
  return 0;
}

/** A byte written past a 24-byte request (class 32) is found by free. */
static inline int ck_check_overflow(const ck_env_t *env) {
  return ck_overflow_24_then_free(env, ck_opaque(malloc(24)));
}

/** The same write, found by a realloc that keeps the block (same class). */
static inline int ck_check_overflow_realloc(const ck_env_t *env) {
  uint8_t *p = ck_opaque(malloc(20));
  if (p == NULL) return 2;
  env->announce((uintptr_t)p, 30, 0, 0);
  ck_flip(p, 30);
  void *q = ck_opaque(realloc(p, 28));
  return q == p ? 0 : 3;
}

/** Write byte `offset` of a freed 32-byte block, then use the class until
 * the block would be handed out again (no quarantine: the next malloc) or
 * leaves the quarantine (after enough other frees): either finds it. */
static inline int ck_uaf_write_at(const ck_env_t *env, size_t offset) {
  uint8_t *p = ck_opaque(malloc(32));
  if (p == NULL) return 2;
  free(ck_opaque(p));
  env->announce((uintptr_t)p, (long)offset, 0, 0);
  ck_flip(p, offset);
  for (int i = 0; i < (1 << 20); i++) free(ck_opaque(malloc(32)));
  return 0;
}
static inline int ck_check_uaf_8(const ck_env_t *env) { return ck_uaf_write_at(env, 8); }
static inline int ck_check_uaf_16(const ck_env_t *env) { return ck_uaf_write_at(env, 16); }
static inline int ck_check_uaf_last(const ck_env_t *env) { return ck_uaf_write_at(env, 31); }

/** The write comes after the class handed out a block again, the block
 * that the freed one would have been without a quarantine (LIFO reuse); the
 * quarantine holds it, and finds the write when it leaves. */
static inline int ck_check_uaf_reused(const ck_env_t *env) {
  uint8_t *p = ck_opaque(malloc(32));
  if (p == NULL) return 2;
  free(ck_opaque(p));
  void *q = ck_opaque(malloc(32));
  if (q == p) return 3; /* no quarantine: the write would hit a live block */
  env->announce((uintptr_t)p, 16, 0, 0);
  ck_flip(p, 16);
  for (int i = 0; i < (1 << 20); i++) free(ck_opaque(malloc(32)));
  return 0;
}

/** The same, but nothing leaves the quarantine: the process exits with
 * the block still held, and the exit check finds it. */
static inline int ck_check_uaf_at_exit(const ck_env_t *env) {
  uint8_t *p = ck_opaque(malloc(32));
  if (p == NULL) return 2;
  free(ck_opaque(p));
  void *q = ck_opaque(malloc(32));
  if (q == p) return 3;
  env->announce((uintptr_t)p, 16, 0, 0);
  ck_flip(p, 16);
  exit(0);
}

/** A second free of a block (in quarantine, or on its free list). */
static inline int ck_check_double_free(const ck_env_t *env) {
  void *p = ck_opaque(malloc(32));
  if (p == NULL) return 2;
  free(ck_opaque(p));
  env->announce((uintptr_t)p, 0, 0, 0);
  free(ck_opaque(p));
  return 0;
}

/* ---- guard pages ----------------------------------------------------------- */

/** A block of n bytes from the guard pool (SIZECLASS_GUARD=1 guards every
 * allocation while a slot is free): its usable size is the request, and
 * it ends at its page's end (after the 16-byte rounding). */
static inline uint8_t *ck_guarded(size_t n) {
  for (int i = 0; i < 64; i++) {
    uint8_t *p = ck_opaque(malloc(n));
    if (p == NULL) return NULL;
    if (malloc_usable_size(p) == n && (((uintptr_t)p + n + 15) & ~(uintptr_t)15) % 4096 == 0)
      return p;
  }
  return NULL;
}

static inline int ck_guard_overflow_write(const ck_env_t *env) {
  uint8_t *p = ck_guarded(48);
  if (p == NULL) return 2;
  env->announce((uintptr_t)p, 48, ck_tid(), 0);
  ((volatile uint8_t *)ck_opaque(p))[48] = 1;
  return 0;
}

static inline int ck_guard_overflow_read(const ck_env_t *env) {
  uint8_t *p = ck_guarded(48);
  if (p == NULL) return 2;
  env->announce((uintptr_t)p, 48, ck_tid(), 0);
  return ck_read(p, 48) == 1000; /* never: the read faults */
}

static inline int ck_guard_uaf_read(const ck_env_t *env) {
  uint8_t *p = ck_guarded(48);
  if (p == NULL) return 2;
  free(ck_opaque(p));
  env->announce((uintptr_t)p, 0, ck_tid(), ck_tid());
  return ck_read(p, 0) == 1000;
}

static inline int ck_guard_uaf_write(const ck_env_t *env) {
  uint8_t *p = ck_guarded(48);
  if (p == NULL) return 2;
  free(ck_opaque(p));
  env->announce((uintptr_t)p, 47, ck_tid(), ck_tid());
  ((volatile uint8_t *)ck_opaque(p))[47] = 1;
  return 0;
}

typedef struct {
  void *p;
  long tid;
} ck_thread_free_t;

static inline void *ck_free_main(void *arg) {
  ck_thread_free_t *f = arg;
  f->tid = ck_tid();
  free(ck_opaque(f->p));
  return NULL;
}

/** Another thread frees the block; the message names it. */
static inline int ck_guard_uaf_thread(const ck_env_t *env) {
  uint8_t *p = ck_guarded(48);
  if (p == NULL) return 2;
  ck_thread_free_t f = {.p = p, .tid = 0};
  pthread_t t;
  if (pthread_create(&t, NULL, ck_free_main, &f) != 0) return 3;
  pthread_join(t, NULL);
  env->announce((uintptr_t)p, 8, ck_tid(), f.tid);
  return ck_read(p, 8) == 1000;
}

/** A write into the 16-byte rounding of a 24-byte request: inside the page,
 * so no fault; free finds it. */
static inline int ck_guard_slack(const ck_env_t *env) {
  return ck_overflow_24_then_free(env, ck_guarded(24));
}

static inline int ck_guard_double_free(const ck_env_t *env) {
  uint8_t *p = ck_guarded(48);
  if (p == NULL) return 2;
  free(ck_opaque(p));
  env->announce((uintptr_t)p, 0, 0, 0);
  free(ck_opaque(p));
  return 0;
}

static inline int ck_guard_invalid_free(const ck_env_t *env) {
  uint8_t *p = ck_guarded(48);
  if (p == NULL) return 2;
  env->announce((uintptr_t)p, 8, 0, 0);
  free(ck_opaque(p + 8));
  return 0;
}

static inline int ck_guard_realloc_freed(const ck_env_t *env) {
  uint8_t *p = ck_guarded(48);
  if (p == NULL) return 2;
  free(ck_opaque(p));
  env->announce((uintptr_t)p, 0, 0, 0);
  return ck_opaque(realloc(ck_opaque(p), 40)) == NULL;
}

/** A read 64 slots further on (SIZECLASS_GUARD_SLOTS=4096; slots are
 * handed out in order at first, so that one never held a block). */
static inline int ck_guard_wild(const ck_env_t *env) {
  uint8_t *p = ck_guarded(48);
  if (p == NULL) return 2;
  uint8_t *far = (uint8_t *)(((uintptr_t)p & ~(uintptr_t)4095) + 64 * 2 * 4096);
  env->announce((uintptr_t)far, 0, 0, 0);
  return ck_read(far, 0) == 1000;
}

/** Every scenario, NULL-terminated. */
static const ck_case_t ck_cases[] = {
    {"check_overflow", CK_CHECK, false,
     "sizeclass: overflow past the 24-byte request in block %B (class 32 B): byte 24 changed",
     ck_check_overflow},
    {"check_overflow_realloc", CK_CHECK, false,
     "sizeclass: overflow past the 20-byte request in block %B (class 32 B): byte 30 changed",
     ck_check_overflow_realloc},
    {"check_uaf_8", CK_CHECK, false,
     "sizeclass: use-after-free write in block %B (class 32 B): byte 8 changed", ck_check_uaf_8},
    {"check_uaf_16", CK_CHECK, false,
     "sizeclass: use-after-free write in block %B (class 32 B): byte 16 changed", ck_check_uaf_16},
    {"check_uaf_last", CK_CHECK, false,
     "sizeclass: use-after-free write in block %B (class 32 B): byte 31 changed",
     ck_check_uaf_last},
    {"check_uaf_reused", CK_CHECK, true,
     "sizeclass: use-after-free write in block %B (class 32 B): byte 16 changed",
     ck_check_uaf_reused},
    {"check_uaf_at_exit", CK_CHECK, true,
     "sizeclass: use-after-free write in block %B (class 32 B): byte 16 changed",
     ck_check_uaf_at_exit},
    {"check_double_free", CK_CHECK, false, "sizeclass: double free of %B (class 32 B)",
     ck_check_double_free},
    {"guard_overflow_write", CK_GUARD, false,
     "sizeclass: heap-buffer-overflow: write at %A, offset %O of the 48-byte block %B "
     "(allocated by thread %T)",
     ck_guard_overflow_write},
    {"guard_overflow_read", CK_GUARD, false,
     "sizeclass: heap-buffer-overflow: read at %A, offset %O of the 48-byte block %B "
     "(allocated by thread %T)",
     ck_guard_overflow_read},
    {"guard_uaf_read", CK_GUARD, false,
     "sizeclass: use-after-free: read at %A, offset %O of the 48-byte block %B "
     "(allocated by thread %T, freed by thread %F)",
     ck_guard_uaf_read},
    {"guard_uaf_write", CK_GUARD, false,
     "sizeclass: use-after-free: write at %A, offset %O of the 48-byte block %B "
     "(allocated by thread %T, freed by thread %F)",
     ck_guard_uaf_write},
    {"guard_uaf_thread", CK_GUARD, false,
     "sizeclass: use-after-free: read at %A, offset %O of the 48-byte block %B "
     "(allocated by thread %T, freed by thread %F)",
     ck_guard_uaf_thread},
    {"guard_slack", CK_GUARD, false,
     "sizeclass: overflow past the 24-byte request in block %B (guarded): byte 24 changed",
     ck_guard_slack},
    {"guard_double_free", CK_GUARD, false, "sizeclass: double free of %B", ck_guard_double_free},
    {"guard_invalid_free", CK_GUARD, false, "sizeclass: invalid free of %A", ck_guard_invalid_free},
    {"guard_realloc_freed", CK_GUARD, false, "sizeclass: realloc of freed block of %B",
     ck_guard_realloc_freed},
    {"guard_wild", CK_GUARD, false,
     "sizeclass: wild read at %B in the guard pages (no block there)", ck_guard_wild},
    {NULL, 0, false, NULL, NULL},
};

/** The scenario called name, or NULL. */
static inline const ck_case_t *ck_find(const char *name) {
  for (const ck_case_t *c = ck_cases; c->name != NULL; c++)
    if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

/** The expected message of c for what it announced, into out. */
static inline void ck_expected(const ck_case_t *c, uintptr_t block, long offset, long alloc_tid,
                               long free_tid, char *out, size_t cap) {
  size_t n = 0;
  for (const char *s = c->message; *s != 0 && n + 1 < cap; s++) {
    char tmp[64];
    const char *put = NULL;
    if (s[0] == '%' && s[1] != 0) {
      switch (s[1]) {
        case 'B':
          snprintf(tmp, sizeof(tmp), "0x%lx", (unsigned long)block);
          break;
        case 'A':
          snprintf(tmp, sizeof(tmp), "0x%lx", (unsigned long)(block + offset));
          break;
        case 'O':
          snprintf(tmp, sizeof(tmp), "%ld", offset);
          break;
        case 'T':
          snprintf(tmp, sizeof(tmp), "%ld", alloc_tid);
          break;
        case 'F':
          snprintf(tmp, sizeof(tmp), "%ld", free_tid);
          break;
        default:
          tmp[0] = 0;
      }
      put = tmp;
      s++;
    }
    if (put != NULL) {
      for (; *put != 0 && n + 1 < cap; put++) out[n++] = *put;
    } else {
      out[n++] = *s;
    }
  }
  out[n] = 0;
}

#endif /* CHECK_UTIL_H */
