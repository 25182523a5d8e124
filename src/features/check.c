/* SPDX-License-Identifier: MIT */
/* check.c — the checking mode (check.h; docs/hardening.md, "Checking mode").
 *
 * A class block's life in this mode:
 *   hand-out  its request is recorded (requested-size array) and the bytes
 *             from the request's end to the block's end get SLACK_BYTE;
 *   free      the slack must be intact (else "overflow past the N-byte
 *             request"), then bytes from POISON_START to the end get
 *             a poison byte of its own (poison_byte), and the free key goes into word 1;
 *   quarantine (optional) the block waits in a FIFO ring, still poisoned
 *             and keyed (a second free is a double free), and is checked
 *             when it leaves the ring or when the process exits;
 *   next hand-out  before it is taken from its page, key and poison must
 *             be intact (else "use-after-free write ... byte N changed").
 * The link word (word 0) is checked by the hardened list itself. A block
 * is known to be poisoned when it is on a page's free list, or when a
 * page that emptied is carved again below its high-water mark. */
#include "features/check.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "util/diag.h"
#include "util/format.h"
#include "features/exact.h"
#include "util/settings.h"
#include "util/startup.h"

/** Bytes of a freed block that hold list words: the link, and the free
 * key (checked on its own). The poison follows. */
#define POISON_START (2 * sizeof(uintptr_t))
/** The poison byte of a block whose free key is `key`: a byte of the key,
 * so that it differs from block to block and from process to process and
 * one freed block's bytes do not tell another's. */
static inline uint8_t poison_byte(uintptr_t key) { return (uint8_t)(key >> 56); }
#define SLACK_BYTE 0xca
/* At most 1048576 blocks in quarantine: SIZECLASS_CHECK_QUARANTINE's range
 * (settings.c). */

/* The quarantine: a ring of freed blocks, oldest at q_head. */
static void **q_ring;
static uint32_t q_cap, q_head, q_count;
/* Recursive for fork: see guard.c's ring_lock. */
static pthread_mutex_t q_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
/* Set while this thread hands a block from the quarantine back to its
 * page: the free that does it passes the checks it already passed. */
static sc_tls bool releasing;

/* ---- reports ------------------------------------------------------------------ */

/** "sizeclass: <what> in block 0x… (class N B): byte K changed", abort;
 * `what` is "overflow past the R-byte request" when req is not SIZE_MAX. */
static sc_noreturn sc_cold void report(const char *what, size_t req, const void *b, size_t size,
                                       size_t byte) {
  char line[SC_DIAG_CAP], over[64];
  if (req != SIZE_MAX) sc__format(over, sizeof(over), "overflow past the %zu-byte request", req);
  sc__format(line, sizeof(line), "%s in block 0x%" PRIxPTR " (class %zu B): byte %zu changed",
             req != SIZE_MAX ? over : what, (uintptr_t)b, size, byte);
  sc__abort_with_report(line);
}

/* ---- the patterns ------------------------------------------------------------- */

/** Requested size of block p of page (any thread: the shared line). */
static uint16_t *req_slot(const sc_page_t *page, const void *p) {
  return sc__req_slot(page, (uintptr_t)p);
}

/** Abort when the slack of block p (size bytes, req requested) changed. */
static void check_slack(const uint8_t *p, size_t size, size_t req) {
  if (sc_unlikely(req > size)) req = size; /* never: requests fit their class */
  size_t at = sc__diag_first_changed(p + req, size - req, SLACK_BYTE);
  if (sc_unlikely(at != size - req)) report("", req, p, size, req + at);
}

/** Abort when freed block b (size bytes) was written since it was
 * poisoned and keyed. */
static void check_freed(const uint8_t *b, size_t size) {
  uintptr_t key = sc__free_key(b), seen = ((const sc_block_t *)b)->key;
  if (sc_unlikely(seen != key)) {
    uint8_t want[sizeof(key)], got[sizeof(key)];
    memcpy(want, &key, sizeof(key));
    memcpy(got, &seen, sizeof(seen));
    size_t i = 0;
    while (i < sizeof(key) - 1 && want[i] == got[i]) i++;
    report("use-after-free write", SIZE_MAX, b, size, offsetof(sc_block_t, key) + i);
  }
  size_t at = sc__diag_first_changed(b + POISON_START, size - POISON_START, poison_byte(key));
  if (sc_unlikely(at != size - POISON_START))
    report("use-after-free write", SIZE_MAX, b, size, POISON_START + at);
}

/** Poison freed block b (size bytes) and key it. */
static void poison(uint8_t *b, size_t size) {
  uintptr_t key = sc__free_key(b);
  ((sc_block_t *)b)->key = key;
  memset(b + POISON_START, poison_byte(key), size - POISON_START);
}

void sc__check_take(const sc_page_t *page) {
  size_t size = sc__page_block_size(page);
  const sc_block_t *b = page->free;
  if (!sc__is_list_end(b)) {
    check_freed((const uint8_t *)b, size);
    return;
  }
  /* A page that emptied is carved again from its start: below the
   * high-water mark every block was handed out and freed in this class. */
  const uint8_t *at = page->carve_next;
  if (at == page->carve_end || (uintptr_t)(at + size) - sc__page_base(page) > sc__page_carved(page))
    return;
#if SC_HARDEN
  const sc_block_t *stale = (const sc_block_t *)at;
  if ((((uintptr_t)sc__decode(stale->next, stale, page) ^ (uintptr_t)at) >> SC_PAGE_SHIFT) != 0)
    sc__fatal_list_at(page); /* its link word was written after free */
#endif
  check_freed(at, size);
}

void sc__check_alloc(const sc_page_t *page, void *b, size_t n) {
  ((sc_block_t *)b)->key = 0; /* live: no key (the slack may cover part of it) */
  *sc__req_slot_local(page, (uintptr_t)b) = (uint16_t)n;
  memset((uint8_t *)b + n, SLACK_BYTE, sc__page_block_size(page) - n);
}

void sc__check_poison(const sc_page_t *page, void *p, bool local) {
  poison(p, local ? sc__page_block_size(page) : (size_t)page->shared_mask + 1);
}

/* ---- the quarantine ----------------------------------------------------------- */

/** Hand block p, out of the quarantine, back through the ordinary free
 * path (its owner's list, or the owner's remote list). */
static void release(void *p) {
  const sc_page_t *page = sc__page_of(sc__segment_of((uintptr_t)p), (uintptr_t)p);
  check_freed(p, (size_t)page->shared_mask + 1);
  ((sc_block_t *)p)->key = 0; /* live again for the moment, so free takes it */
  releasing = true;
  sc__free_inline(p);
  releasing = false;
}

/** Put p in the quarantine; the block that leaves it (if full), or NULL. */
static void *quarantine(void *p) {
  void *out = NULL;
  pthread_mutex_lock(&q_lock);
  if (q_count == q_cap) {
    out = q_ring[q_head];
    q_ring[q_head] = p;
    q_head = q_head + 1 == q_cap ? 0 : q_head + 1;
  } else {
    uint32_t at = q_head + q_count;
    q_ring[at >= q_cap ? at - q_cap : at] = p;
    q_count++;
  }
  pthread_mutex_unlock(&q_lock);
  return out;
}

bool sc__check_free(void *p, sc_page_t *page, bool local) {
  if (releasing) return false;
  uintptr_t u = (uintptr_t)p, offset = u & (SC_PAGE_SIZE - 1);
  size_t size;
  if (local) {
    if (!sc__shared_block_start(page, offset) || u >= (uintptr_t)page->carve_next)
      sc__fatal_invalid(p);
    size = sc__page_block_size(page);
  } else {
    if (page->state != SC_PAGE_ACTIVE || !sc__shared_block_start(page, offset) ||
        offset >= sc__page_carved(page))
      sc__fatal_block("invalid free", p, 0);
    size = (size_t)page->shared_mask + 1;
  }
  /* A block in quarantine is still live in its map; its key marks it. A
   * block on a free list is caught by the map, on the free path. */
  if (sc_unlikely(((sc_block_t *)p)->key == sc__free_key(p)))
    sc__fatal_block("double free", p, (unsigned)size);
  check_slack(p, size, *req_slot(page, p));
  if (q_cap == 0) return false;
  poison(p, size); /* its key: a second free is a double free */
  void *out = quarantine(p);
  if (out != NULL) release(out);
  return true;
}

/* ---- realloc, usable size ----------------------------------------------------- */

void sc__check_resize(void *p, size_t n) {
  const sc_page_t *page = sc__page_of(sc__segment_of((uintptr_t)p), (uintptr_t)p);
  size_t size = (size_t)page->shared_mask + 1;
  check_slack(p, size, *req_slot(page, p));
  memset((uint8_t *)p + n, SLACK_BYTE, size - n);
}

size_t sc__check_usable(const void *p) {
  const sc_page_t *page = sc__page_of(sc__segment_of((uintptr_t)p), (uintptr_t)p);
  return *req_slot(page, p);
}

/* ---- fork, exit ---------------------------------------------------------------- */

void sc__check_fork(int phase) {
  if (q_cap == 0) return;
  if (phase == 0) {
    pthread_mutex_lock(&q_lock);
  } else if (phase == 1) {
    pthread_mutex_unlock(&q_lock);
  } else {
    pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    q_lock = fresh;
  }
}

/** At exit, every block still in quarantine must be as it was freed. */
__attribute__((destructor)) static void check_at_exit(void) {
  if (q_cap == 0 || !sc__check_on()) return;
  pthread_mutex_lock(&q_lock);
  for (uint32_t i = 0; i < q_count; i++) {
    uint32_t at = q_head + i;
    const uint8_t *b = q_ring[at >= q_cap ? at - q_cap : at];
    const sc_page_t *page = sc__page_of(sc__segment_of((uintptr_t)b), (uintptr_t)b);
    check_freed(b, (size_t)page->shared_mask + 1);
  }
  pthread_mutex_unlock(&q_lock);
}

/* ---- the decision --------------------------------------------------------------- */

sc_startup bool sc__check_decide(void) {
  /* The settings (settings.c) said no to a bad value already. */
  if (sc__setting(SC_SET_CHECK) == 0) return false;
  uint32_t cap = (uint32_t)sc__setting(SC_SET_CHECK_QUARANTINE);
  if (cap != 0) {
    size_t bytes = ((size_t)cap * sizeof(void *) + 4095) & ~(size_t)4095;
    q_ring = sc__os_map_aligned(bytes, 4096);
    if (q_ring == NULL) {
      sc__warn("SIZECLASS_CHECK_QUARANTINE: no memory for the quarantine; none");
      cap = 0;
    }
  }
  q_cap = cap;
  return true;
}
