/* SPDX-License-Identifier: MIT */
/* corrupt.c — break one invariant of the allocator's state on purpose and
 * let the SC_DEBUG library (mk/debug.mk, linked in) find it at its next
 * slow path: tests/test_debug.c expects one "sizeclass: assertion failed:"
 * line and abort(). The argument names what to break:
 *
 *   none    nothing: a busy run (threads, remote frees, a trim) exits 0
 *   used    a page counts one block more than it handed out; found when
 *           the page runs dry (a refill)
 *   link    a free block's link points at a block of its page that was
 *           never carved (the fast path's check, "in its page", passes);
 *           found when the thread exits
 *   map     a block on a free list is live in the block map; at exit
 *   carve   a block that was never carved is live in the block map; at exit
 *   pages   the arena counts a page of a class that it does not have; at exit
 *   queued  the page a class allocates from is not marked queued; the
 *           slow path's sc_assert finds it when the page leaves its queue
 *
 * The work runs on a thread of its own, whose exit validates its arena. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core_util.h"
#include "sizeclass.h"

static const char *what;

/** The page of class block p. */
static sc_page_t *page_of(void *p) {
  uintptr_t u = (uintptr_t)p;
  return sc__page_of(sc__segment_of(u), u);
}

/** The state byte of block p in its page's map. */
static uint8_t *map_of(void *p) {
  sc_page_t *page = page_of(p);
  return sc__map_entry(page->map, (uintptr_t)p, page->shift);
}

/** Allocate 64-byte blocks until the page of `first` has none left, then
 * one more: the refill. (The blocks stay: the program ends there.) */
static void run_page_dry(void *first) {
  sc_page_t *page = page_of(first);
  /* Loads the compiler may not keep: it takes malloc for touching nothing. */
  while (__atomic_load_n(&page->carve_next, __ATOMIC_RELAXED) != page->carve_end ||
         !sc__is_list_end(__atomic_load_n(&page->free, __ATOMIC_RELAXED)))
    cu_escape(malloc(64));
  cu_escape(malloc(64));
}

/** A busy run that must find nothing: blocks of every class, freed here
 * and by another thread, a trim. */
static void *busy_other(void *arg) {
  void **blocks = arg;
  for (int i = 0; i < 4096; i += 2) free(blocks[i]);
  return NULL;
}

static void busy(void) {
  void **blocks = malloc(4096 * sizeof(void *));
  for (int round = 0; round < 4; round++) {
    for (int i = 0; i < 4096; i++) blocks[i] = malloc((size_t)(i % 1024) + 1);
    pthread_t t;
    pthread_create(&t, NULL, busy_other, blocks);
    pthread_join(t, NULL);
    for (int i = 1; i < 4096; i += 2) free(blocks[i]);
    sc_trim();
  }
  free(blocks);
}

static void *work(void *arg) {
  (void)arg;
  void *a = cu_escape(malloc(64)), *b = cu_escape(malloc(64)), *c = cu_escape(malloc(64));
  sc_page_t *page = page_of(a);
  sc_arena_t *arena = page->arena;
  if (strcmp(what, "none") == 0) {
    busy();
  } else if (strcmp(what, "used") == 0) {
    page->used++;
    run_page_dry(a);
  } else if (strcmp(what, "link") == 0) {
    sc_free(b); /* b heads the page's free list (sc_free: the compiler keeps the writes below) */
    uintptr_t never = (uintptr_t)sc__page_start(page) + 512 * 64;
    ((sc_block_t *)b)->next = sc__encode((sc_block_t *)never, b, page);
  } else if (strcmp(what, "map") == 0) {
    sc_free(b);
    *map_of(b) = SC_MAP_LIVE;
  } else if (strcmp(what, "carve") == 0) {
    page->map[100u << sc__map_shift] = SC_MAP_LIVE;
  } else if (strcmp(what, "pages") == 0) {
    arena->counts[page->class_idx].pages++;
  } else if (strcmp(what, "queued") == 0) {
    page->queued = 0;
    run_page_dry(a);
  } else {
    fprintf(stderr, "corrupt: unknown case %s\n", what);
    exit(2);
  }
  (void)c;
  return NULL; /* the thread's exit validates its arena */
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: corrupt none|used|link|map|carve|pages|queued\n");
    return 2;
  }
  what = argv[1];
  pthread_t t;
  pthread_create(&t, NULL, work, NULL);
  pthread_join(t, NULL);
  printf("corrupt: %s: nothing found\n", what);
  return 0;
}
