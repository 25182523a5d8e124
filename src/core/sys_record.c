/* SPDX-License-Identifier: MIT */
/* sys_record.c — the record of the system route's blocks (sys_record.h).
 *
 * Key: the address's 1 KiB window, p >> 10, below 2^47 (37 bits): 13 bits
 * pick a top entry (a static array), 12 a mid node's entry, 12 a leaf
 * slot. Nodes (4096 entries: 32 KiB mid nodes, 20 KiB leaves) are mapped
 * when first needed. A leaf slot is one tag byte: 0 when empty, else
 * TAG_LIVE and the block's 16-byte offset in its window (with the window,
 * its whole address), claimed with one compare-and-swap; TAG_INFO says
 * the record's info word, in the leaf's second part, is not 0. The tags
 * are what a malloc and a free touch: 4 KiB of them per 4 MiB of heap,
 * so that a heap of large blocks freed in random order finds them in
 * cache (16-byte slots holding the address and the word missed the
 * first-level cache on nearly every free); the info words' pages are only
 * touched by features that keep a word. A second start in one window, an
 * address that is not 16-byte aligned or one above 2^47 goes to the
 * overflow table (a spin lock, a linear scan; only small system blocks
 * share a window, and those come from the OOM fallback or memalign). */
#include "core/sys_record.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "core/internal.h"

#define WINDOW_SHIFT 10
#define KEY_BITS (47 - WINDOW_SHIFT) /* 37 */
#define NODE_BITS 12
#define NODE_ENTRIES ((size_t)1 << NODE_BITS)
#define TOP_BITS (KEY_BITS - 2 * NODE_BITS) /* 13 */
#define TOP_ENTRIES ((size_t)1 << TOP_BITS)
#define MID_BYTES (NODE_ENTRIES * sizeof(uintptr_t))

#define TAG_LIVE 0x80u   /* a record */
#define TAG_INFO 0x40u   /* its info word is not 0 */
#define TAG_OFFSET 0x3fu /* the block's offset in its window, in 16 bytes */

typedef struct {
  _Atomic(uint8_t) tag[NODE_ENTRIES];   /* per window: 0, or TAG_LIVE | ... */
  _Atomic(uint32_t) info[NODE_ENTRIES]; /* valid while the tag has TAG_INFO */
} leaf_t;
#define LEAF_BYTES sizeof(leaf_t)

/** The tag of a record of u (16-byte aligned), without TAG_INFO. */
static inline unsigned tag_of(uintptr_t u) { return TAG_LIVE | ((u >> 4) & TAG_OFFSET); }
/** True when tag t is a record of u. */
static inline bool tag_is(unsigned t, uintptr_t u) { return (t & ~TAG_INFO) == tag_of(u); }

/* Top level: each entry a mid node (an array of NODE_ENTRIES leaf
 * pointers), or 0. */
static _Atomic(uintptr_t) top[TOP_ENTRIES];

/** The node at *at, mapped and installed if there is none yet; NULL if the
 * OS refuses. Mapped memory is zero: a node needs no other
 * initialisation, so a reader that sees its address sees its zeros. */
static sc_noinline uintptr_t node_make(_Atomic(uintptr_t) *at, size_t bytes) {
  uintptr_t n = atomic_load_explicit(at, memory_order_acquire);
  if (n != 0) return n;
  void *fresh = sc__os_map_aligned(bytes, 4096);
  if (fresh == NULL) return 0;
  uintptr_t expected = 0;
  /* Release and acquire: a thread that sees the node sees its zeros (plain
   * loads and stores on x86-64; ThreadSanitizer needs them said). */
  if (atomic_compare_exchange_strong_explicit(at, &expected, (uintptr_t)fresh, memory_order_release,
                                              memory_order_acquire))
    return (uintptr_t)fresh;
  sc__os_unmap(fresh, bytes); /* another thread installed one first */
  return expected;
}

/** The leaf of u's window (its slot: *i), mapping its nodes when they do
 * not exist; NULL when u is above the map or the OS refuses. */
static sc_noinline leaf_t *leaf_make(uintptr_t u, size_t *i) {
  uintptr_t key = u >> WINDOW_SHIFT;
  if (key >> KEY_BITS != 0) return NULL;
  uintptr_t mid = node_make(&top[key >> (2 * NODE_BITS)], MID_BYTES);
  if (mid == 0) return NULL;
  uintptr_t leaf =
      node_make(&((_Atomic(uintptr_t) *)mid)[(key >> NODE_BITS) & (NODE_ENTRIES - 1)], LEAF_BYTES);
  if (leaf == 0) return NULL;
  *i = key & (NODE_ENTRIES - 1);
  return (leaf_t *)leaf;
}

/* The leaf and slot of u's window, or a jump to `none` when u is not
 * 16-byte aligned, above the map, or its nodes do not exist (two dependent
 * loads: a statement, so that the fast paths test nothing else). */
#define SLOT_FIND(u, leaf, i, none)                                                              \
  do {                                                                                           \
    if (sc_unlikely(((u)&15) != 0)) goto none;                                                   \
    uintptr_t t_ = (u) >> (WINDOW_SHIFT + 2 * NODE_BITS);                                        \
    if (sc_unlikely(t_ >= TOP_ENTRIES)) goto none;                                               \
    uintptr_t mid_ = atomic_load_explicit(&top[t_], memory_order_acquire);                       \
    if (sc_unlikely(mid_ == 0)) goto none;                                                       \
    uintptr_t leaf_ = atomic_load_explicit(                                                      \
        &((_Atomic(uintptr_t) *)mid_)[((u) >> (WINDOW_SHIFT + NODE_BITS)) & (NODE_ENTRIES - 1)], \
        memory_order_acquire);                                                                   \
    if (sc_unlikely(leaf_ == 0)) goto none;                                                      \
    (leaf) = (leaf_t *)leaf_;                                                                    \
    (i) = ((u) >> WINDOW_SHIFT) & (NODE_ENTRIES - 1);                                            \
  } while (0)

/* ---- the overflow table ---------------------------------------------------- */

typedef struct {
  uintptr_t p; /* 0: free entry */
  uint32_t info;
} over_entry_t;

#define OVER_CHUNK_ENTRIES ((65536 - 16) / sizeof(over_entry_t))
typedef struct over_chunk_s {
  struct over_chunk_s *next;
  size_t used; /* entries ever taken in this chunk */
  over_entry_t e[OVER_CHUNK_ENTRIES];
} over_chunk_t;

static atomic_flag over_lock = ATOMIC_FLAG_INIT;
static over_chunk_t *over_head;
static _Atomic size_t over_count; /* records in the table: 0, no lookup needs the lock */

static void over_acquire(void) {
  while (atomic_flag_test_and_set_explicit(&over_lock, memory_order_acquire)) {
  }
}
static void over_release(void) { atomic_flag_clear_explicit(&over_lock, memory_order_release); }

/** p's entry (the lock held), or NULL. */
static over_entry_t *over_find(uintptr_t u) {
  for (over_chunk_t *c = over_head; c != NULL; c = c->next)
    for (size_t i = 0; i < c->used; i++)
      if (c->e[i].p == u) return &c->e[i];
  return NULL;
}

static bool over_insert(uintptr_t u, uint32_t info) {
  over_acquire();
  bool ok = over_find(u) == NULL;
  if (ok) {
    over_entry_t *free_entry = over_find(0);
    if (free_entry == NULL) {
      if (over_head == NULL || over_head->used == OVER_CHUNK_ENTRIES) {
        over_chunk_t *c = sc__os_map_aligned(sizeof(over_chunk_t), 4096);
        if (c == NULL) {
          over_release();
          return false;
        }
        c->next = over_head;
        over_head = c;
      }
      free_entry = &over_head->e[over_head->used++];
    }
    free_entry->p = u;
    free_entry->info = info;
    atomic_fetch_add_explicit(&over_count, 1, memory_order_relaxed);
  }
  over_release();
  return ok;
}

/** Find u in the overflow table: remove it (`remove`), or set its info
 * (`set`), or only read it. */
static sc_noinline bool over_access_locked(uintptr_t u, uint32_t *info, bool remove, bool set,
                                           uint32_t value) {
  over_acquire();
  over_entry_t *e = over_find(u);
  if (e != NULL) {
    if (info != NULL) *info = e->info;
    if (set) e->info = value;
    if (remove) {
      e->p = 0;
      atomic_fetch_sub_explicit(&over_count, 1, memory_order_relaxed);
    }
  }
  over_release();
  return e != NULL;
}
static inline bool over_access(uintptr_t u, uint32_t *info, bool remove, bool set, uint32_t value) {
  if (sc_likely(atomic_load_explicit(&over_count, memory_order_acquire) == 0)) return false;
  return over_access_locked(u, info, remove, set, value);
}

void sc__sysrec_fork_child(void) { atomic_flag_clear(&over_lock); }

/* ---- the API ----------------------------------------------------------------- */

/** The info word of the record in slot i whose tag is t. */
static inline uint32_t info_get(leaf_t *leaf, size_t i, unsigned t) {
  return (t & TAG_INFO) ? atomic_load_explicit(&leaf->info[i], memory_order_relaxed) : 0;
}

/** Give the record in slot i (tag t, ours: only its block's own thread
 * changes it while it lives) the info word info. */
static void info_put(leaf_t *leaf, size_t i, unsigned t, uint32_t info) {
  if (info != 0) {
    atomic_store_explicit(&leaf->info[i], info, memory_order_relaxed);
    /* Release: a reader that sees TAG_INFO (acquire) sees the word. */
    atomic_store_explicit(&leaf->tag[i], (uint8_t)(t | TAG_INFO), memory_order_release);
  } else if (t & TAG_INFO) {
    atomic_store_explicit(&leaf->tag[i], (uint8_t)(t & ~TAG_INFO), memory_order_relaxed);
  }
}

/** The rest of an insert that claimed slot i for u: undone (false) if u
 * sits in the overflow table, else u's record gets info. The fast path
 * comes here only when the table holds records or info is not 0. */
static sc_noinline bool insert_finish(leaf_t *leaf, size_t i, uintptr_t u, uint32_t info) {
  /* u may sit in the overflow table from when its window was taken. */
  if (over_access(u, NULL, false, false, 0)) {
    atomic_store_explicit(&leaf->tag[i], 0, memory_order_relaxed);
    return false;
  }
  info_put(leaf, i, tag_of(u), info);
  return true;
}

/** Insert u when its window has no nodes yet, its slot is taken, or u is
 * above the map or not 16-byte aligned. */
static sc_noinline bool insert_slow(uintptr_t u, uint32_t info) {
  size_t i = 0;
  leaf_t *leaf = (u & 15) == 0 ? leaf_make(u, &i) : NULL;
  if (leaf != NULL) {
    uint8_t expected = 0;
    if (atomic_compare_exchange_strong_explicit(&leaf->tag[i], &expected, (uint8_t)tag_of(u),
                                                memory_order_relaxed, memory_order_relaxed))
      return insert_finish(leaf, i, u, info);
    if (tag_is(expected, u)) return false;
  }
  return over_insert(u, info);
}

bool sc__sysrec_insert(const void *p, uint32_t info) {
  uintptr_t u = (uintptr_t)p;
  leaf_t *leaf;
  size_t i;
  SLOT_FIND(u, leaf, i, slow);
  uint8_t expected = 0;
  if (sc_unlikely(!atomic_compare_exchange_strong_explicit(&leaf->tag[i], &expected,
                                                           (uint8_t)tag_of(u), memory_order_relaxed,
                                                           memory_order_relaxed)))
    goto slow;
  if (sc_unlikely((atomic_load_explicit(&over_count, memory_order_acquire) | info) != 0))
    return insert_finish(leaf, i, u, info);
  return true;
slow:
  return insert_slow(u, info);
}

/** Find p's record: true when it is there, *info (info may be NULL) its
 * word; `remove` forgets it. */
static inline bool record_find(const void *p, uint32_t *info, bool remove) {
  uintptr_t u = (uintptr_t)p;
  leaf_t *leaf;
  size_t i;
  SLOT_FIND(u, leaf, i, other);
  unsigned t = atomic_load_explicit(&leaf->tag[i], memory_order_acquire);
  if (sc_likely(tag_is(t, u))) {
    if (info != NULL) *info = info_get(leaf, i, t);
    /* A load and a store, no lock: while u's record is in its slot no
     * other record can take the slot (another block's insert finds it
     * taken), so only another remove of u could race with this one: a
     * double free of one block by two threads at the same moment, which
     * then reaches glibc (whose own check sees most). */
    if (remove) atomic_store_explicit(&leaf->tag[i], 0, memory_order_relaxed);
    return true;
  }
other:
  return over_access(u, info, remove, false, 0);
}

bool sc__sysrec_remove(const void *p, uint32_t *info) { return record_find(p, info, true); }

bool sc__sysrec_lookup(const void *p, uint32_t *info) { return record_find(p, info, false); }

void sc__sysrec_set_info(const void *p, uint32_t info) {
  uintptr_t u = (uintptr_t)p;
  leaf_t *leaf;
  size_t i;
  SLOT_FIND(u, leaf, i, other);
  unsigned t = atomic_load_explicit(&leaf->tag[i], memory_order_relaxed);
  if (tag_is(t, u)) {
    info_put(leaf, i, t, info);
    return;
  }
other:
  over_access(u, NULL, false, true, info);
}
