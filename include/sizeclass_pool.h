/* SPDX-License-Identifier: MIT */
/* sizeclass_pool.h — a typed object pool on top of libsizeclass.
 *
 * A pool hands out objects of one size and takes them back, so a game loop
 * that bursts effects every frame reuses the same objects instead of asking
 * the allocator again. Its statistics make "reuse really happened" something
 * a test can assert: after warm-up `created` stops growing and every acquire
 * is a hit.
 *
 *   struct sc_pool_config cfg = {.capacity = 64, .max_capacity = 96,
 *                                .policy = SC_POOL_GROW_TO_CAP};
 *   sc_pool *pool = sc_pool_create(sizeof(struct particle), &cfg);
 *   struct particle *p = sc_pool_acquire(pool);   // zeroed, or NULL
 *   ...
 *   sc_pool_release(pool, p);
 *
 * Objects are created lazily, one per miss, up to `capacity`; what happens
 * when all of them are live is the policy's choice. Free objects above
 * `max_free` go back to the allocator at most `collect_per_step` per release
 * (triggered collection: memory returns in small steps, never as a spike).
 *
 * Every operation except create and destroy is O(1): objects are found from
 * their address through a hash index kept outside the objects, live objects
 * sit in a doubly linked list in acquisition order (so the oldest is its
 * head) and free objects in a doubly linked list (hot end reused first, cold
 * end collected first). A pool is not thread-safe: use it from one thread,
 * or lock around it. Its memory comes from sc_malloc/sc_free. */
#ifndef SIZECLASS_POOL_H
#define SIZECLASS_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What sc_pool_acquire does when every object the pool may hold is live. */
enum sc_pool_policy {
  /** Return NULL (counted in `rejected`): a hard ceiling of `capacity`. */
  SC_POOL_REJECT = 0,
  /** Take back the oldest live object and hand it out again, reset
   * (counted in `overwritten`); the previous holder's pointer now refers to
   * the new object. For feedback whose oldest instance matters least. */
  SC_POOL_OVERWRITE_OLDEST = 1,
  /** Create more objects up to `max_capacity` (counted in `grown`), then
   * reject. */
  SC_POOL_GROW_TO_CAP = 2,
};

/** Reset callback: called on every object handed out by sc_pool_acquire
 * (new, reused or overwritten) so a reused object equals a new one. */
typedef void (*sc_pool_reset_fn)(void *object, void *ctx);

/** Pool settings. Zero-initialise and set what you need. */
struct sc_pool_config {
  size_t capacity;     /* objects held before the policy applies (>= 1) */
  size_t max_capacity; /* SC_POOL_GROW_TO_CAP ceiling (>= capacity); else ignored */
  enum sc_pool_policy policy;
  sc_pool_reset_fn reset;  /* NULL: the object is zeroed on acquire */
  void *reset_ctx;         /* passed to reset */
  size_t max_free;         /* free objects kept before collection starts */
  size_t collect_per_step; /* objects freed per release at most; 0: never collect */
};
typedef struct sc_pool_config sc_pool_config;

/** Pool statistics. `created` and `collected` are cumulative over the
 * pool's life; the others listed as "window" restart at sc_pool_reset.
 * Always: acquired = hits + misses + overwritten + rejected, and
 * capacity = live + free = created - collected. */
struct sc_pool_stats {
  uint64_t created;     /* objects allocated from the allocator */
  uint64_t acquired;    /* window: sc_pool_acquire calls */
  uint64_t released;    /* window: successful sc_pool_release calls */
  uint64_t hits;        /* window: acquires served from the free list */
  uint64_t misses;      /* window: acquires that created an object */
  uint64_t rejected;    /* window: acquires that returned NULL */
  uint64_t overwritten; /* window: acquires that took the oldest live object */
  uint64_t grown;       /* window: misses beyond `capacity` (grow-to-cap) */
  uint64_t collected;   /* objects given back to the allocator by collection */
  uint64_t peak_live;   /* window: most objects live at once */
  uint64_t live;        /* objects handed out now */
  uint64_t free;        /* objects held for reuse now */
  uint64_t capacity;    /* objects the pool holds now (live + free) */
};

typedef struct sc_pool sc_pool;

/** A pool of objects of object_size bytes; NULL (and one "sizeclass:" line
 * on stderr) for a zero size, a zero capacity or max_capacity < capacity
 * under grow-to-cap, or NULL when out of memory. */
sc_pool *sc_pool_create(size_t object_size, const struct sc_pool_config *config);
/** Count the pool's objects created from now on under tag `tag` (an
 * sc_tag_t of <sizeclass.h>; 0: none). A pool created while a tag is
 * entered takes that one. */
void sc_pool_set_tag(sc_pool *pool, unsigned tag);
/** An object, reset; NULL when the policy refuses or memory runs out (both
 * counted in `rejected`). */
void *sc_pool_acquire(sc_pool *pool);
/** Give a live object back: true. False, changing nothing, when object is
 * not live in this pool (released already, from another pool or the heap,
 * a pointer into the middle of an object, NULL). May free up to
 * collect_per_step surplus free objects. */
bool sc_pool_release(sc_pool *pool, void *object);
/** Every live object becomes free (no collection happens here); window
 * counters restart; `created`, `collected` and capacity stay. */
void sc_pool_reset(sc_pool *pool);
/** Snapshot of the pool's statistics. */
void sc_pool_stats(const sc_pool *pool, struct sc_pool_stats *out);
/** hits * 1000 / acquired, rounded down; 0 when nothing was acquired. */
unsigned sc_pool_hit_rate_permille(const struct sc_pool_stats *stats);
/** Free every object (live ones included) and the pool itself; NULL is a
 * no-op. */
void sc_pool_destroy(sc_pool *pool);

#ifdef __cplusplus
}
#endif
#endif /* SIZECLASS_POOL_H */
