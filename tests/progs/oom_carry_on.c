/* SPDX-License-Identifier: MIT */
/* oom_carry_on — out of memory is an answer, not a crash. Run under
 * LD_PRELOAD=libsizeclass.so:
 *
 *   oom_carry_on [headroom_mib] [threads]
 *
 * Lowers RLIMIT_AS to the current address-space size plus headroom_mib
 * (default 24), then allocates blocks of mixed sizes (16 B .. 1 MiB, every
 * class and the system route) until the allocator keeps saying no. Every
 * refusal must be NULL with errno ENOMEM (posix_memalign: ENOMEM returned and
 * the out-pointer untouched; realloc: NULL with the old block intact). While
 * memory is exhausted, `threads` threads started beforehand (default 2; one
 * has an arena, the others have never allocated) allocate too. Then half of
 * the blocks are freed and allocation must succeed again, then all, and
 * again. Every block's contents are checked before it is freed. Prints
 * "oom: ok ..." and exits 0; any failed check prints a line and exits 1. A
 * hang is caught by the caller's timeout. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "rss.h"

/* A block we hold: chained through its own first word. */
typedef struct blk_s {
  struct blk_s *next;
  size_t n;
} blk_t;

static const size_t sizes[] = {16,  24,   32,   48,   64,   100,  128,   200,   256,    300,    512,
                               777, 1000, 1024, 1025, 2000, 4096, 16384, 65536, 131072, 1 << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static int failed_checks;

static void check(bool ok, const char *what) {
  if (!ok) {
    /* stdio may itself be short of memory: write(2) the line. */
    char line[200];
    int len = snprintf(line, sizeof(line), "oom: FAILED: %s\n", what);
    if (len > 0 && write(2, line, (size_t)len) < 0) {
    }
    failed_checks++;
  }
}

static uint8_t byte_at(const blk_t *b, size_t i) { return (uint8_t)(((uintptr_t)b >> 4) + i * 13); }

static void fill(blk_t *b) {
  uint8_t *p = (uint8_t *)b;
  for (size_t i = sizeof(blk_t); i < b->n; i++) p[i] = byte_at(b, i);
}

static bool intact(const blk_t *b) {
  const uint8_t *p = (const uint8_t *)b;
  for (size_t i = sizeof(blk_t); i < b->n; i++)
    if (p[i] != byte_at(b, i)) return false;
  return true;
}

/** One allocation of size index k through one of the entry points; NULL
 * with errno set on refusal. */
static void *allocate(unsigned k, unsigned how) {
  size_t n = sizes[k % NSIZES];
  switch (how % 5) {
    case 0:
      return malloc(n);
    case 1:
      return calloc(1, n);
    case 2:
      return realloc(NULL, n);
    case 3:
      return memalign(64, n);
    default: {
      void *p = (void *)&failed_checks; /* must stay untouched on failure */
      int rc = posix_memalign(&p, 256, n);
      if (rc != 0) {
        check(p == (void *)&failed_checks, "posix_memalign touched its out-pointer");
        errno = rc;
        return NULL;
      }
      return p;
    }
  }
}

/** Allocate until `patience` refusals in a row; returns blocks made. */
static size_t exhaust(blk_t **list, size_t *refusals, unsigned patience, unsigned seed) {
  size_t made = 0;
  unsigned streak = 0, k = seed;
  while (streak < patience) {
    k = k * 1103515245u + 12345u;
    unsigned idx = (k >> 8) % NSIZES, how = (k >> 20);
    errno = 0;
    blk_t *b = allocate(idx, how);
    if (b == NULL) {
      check(errno == ENOMEM, "a refusal without ENOMEM");
      (*refusals)++;
      streak++;
      continue;
    }
    streak = 0;
    b->n = sizes[idx];
    fill(b);
    b->next = *list;
    *list = b;
    made++;
  }
  return made;
}

/** Free every second block (or all), checking each first. */
static size_t release(blk_t **list, bool all) {
  size_t freed = 0;
  blk_t **link = list;
  bool drop = true;
  while (*link != NULL) {
    blk_t *b = *link;
    if (all || drop) {
      check(intact(b), "a block's contents changed");
      *link = b->next;
      free(b);
      freed++;
    } else {
      link = &b->next;
    }
    drop = !drop;
  }
  return freed;
}

/* ---- threads that allocate while memory is exhausted --------------------- */

static pthread_barrier_t go;

static void *thread_main(void *arg) {
  bool warm = arg != NULL;
  blk_t *list = NULL;
  size_t refusals = 0;
  if (warm) free(malloc(32)); /* this thread gets an arena before the limit */
  pthread_barrier_wait(&go);  /* the limit is set */
  pthread_barrier_wait(&go);  /* memory is exhausted */
  exhaust(&list, &refusals, 200, warm ? 7u : 11u);
  check(refusals >= 200, "a thread was never refused");
  release(&list, true);
  return NULL;
}

int main(int argc, char **argv) {
  size_t headroom = (argc > 1 ? (size_t)atol(argv[1]) : 24) << 20;
  int nthreads = argc > 2 ? atoi(argv[2]) : 2;
  if (dlsym(RTLD_DEFAULT, "sc_owns") == NULL) {
    fprintf(stderr, "oom: libsizeclass is not preloaded\n");
    return 2;
  }
  pthread_t threads[16];
  if (nthreads < 0 || nthreads > 16) return 2;
  pthread_barrier_init(&go, NULL, (unsigned)nthreads + 1);
  for (int i = 0; i < nthreads; i++)
    if (pthread_create(&threads[i], NULL, thread_main, i == 0 ? (void *)1 : NULL) != 0) return 2;

  struct rlimit rl;
  getrlimit(RLIMIT_AS, &rl);
  rl.rlim_cur = rss_virtual_bytes() + headroom;
  if (setrlimit(RLIMIT_AS, &rl) != 0) {
    perror("oom: setrlimit");
    return 2;
  }
  pthread_barrier_wait(&go);

  /* 1. Exhaust memory: every refusal is NULL + ENOMEM. */
  blk_t *list = NULL;
  size_t refusals = 0;
  size_t first = exhaust(&list, &refusals, 1000, 1u);
  check(first > 0, "nothing could be allocated under the limit");
  check(refusals >= 1000, "never refused");

  /* 2. The other entry points, while exhausted. */
  errno = 0;
  check(malloc((size_t)1 << 40) == NULL && errno == ENOMEM, "a huge malloc");
  errno = 0;
  check(calloc((size_t)1 << 20, (size_t)1 << 20) == NULL && errno == ENOMEM, "a huge calloc");
  if (list != NULL) {
    blk_t *head = list;
    errno = 0;
    void *grown = realloc(head, (size_t)1 << 40);
    check(grown == NULL && errno == ENOMEM, "a huge realloc");
    if (grown == NULL)
      check(intact(head), "the block a failed realloc kept");
    else
      list = grown; /* (a check already failed) */
  }
  errno = 0;
  check(aligned_alloc(4096, (size_t)1 << 40) == NULL && errno == ENOMEM, "a huge aligned_alloc");

  /* 3. Other threads allocate into the exhausted process. */
  pthread_barrier_wait(&go);
  for (int i = 0; i < nthreads; i++) pthread_join(threads[i], NULL);

  /* 4. Give half back: the program carries on. */
  size_t freed_half = release(&list, false);
  size_t again = exhaust(&list, &refusals, 1000, 2u);
  check(again > 0, "no allocation succeeded after freeing half");

  /* 5. Give everything back, and once more. */
  size_t freed_all = release(&list, true);
  size_t third = exhaust(&list, &refusals, 1000, 3u);
  check(third > 0, "no allocation succeeded after freeing everything");
  release(&list, true);

  printf("oom: %s first=%zu refusals=%zu freed_half=%zu again=%zu freed_all=%zu third=%zu\n",
         failed_checks == 0 ? "ok" : "FAILED", first, refusals, freed_half, again, freed_all,
         third);
  return failed_checks == 0 ? 0 : 1;
}
