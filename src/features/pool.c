/* SPDX-License-Identifier: MIT */
/* pool.c — the typed object pool of include/sizeclass_pool.h (the seeds'
 * chapter 9.1 pool with 7.1.6 triggered collection), O(1) per operation.
 *
 * Layout: one allocation holds the pool header, an array of slots (one per
 * object the pool may ever hold at once) and an open-addressing hash index
 * from object address to slot. A slot records its object and links it into
 * one of three lists: live (acquisition order, oldest at the head), free
 * (tail = hot end, reused first; head = cold end, collected first), or the
 * stack of slots without an object. Nothing is stored inside the objects, so
 * a user's writes cannot corrupt the pool and any pointer can be checked.
 *
 * Built into the library, objects come from sc_malloc. Built with
 * -DSC_POOL_STANDALONE into a program that may run without the library (the
 * demo), they come from malloc — which is libsizeclass's whenever it is
 * preloaded, so the process still has exactly one allocator. */
#include <stdint.h>
#include <string.h>

#include "core/config.h"
#include "sizeclass_pool.h"

#ifdef SC_POOL_STANDALONE
#include <stdlib.h>
#include <unistd.h>
#define pool_calloc calloc
#define pool_malloc malloc
#define pool_free free
/** One "sizeclass:" line on stderr, without stdio. */
static void pool_warn(const char *msg) {
  static const char prefix[] = "sizeclass: ";
  ssize_t r = write(2, prefix, sizeof(prefix) - 1);
  r = write(2, msg, strlen(msg));
  r = write(2, "\n", 1);
  (void)r;
}
#else
#include "core/internal.h"
#include "sizeclass.h"
#define pool_calloc sc_calloc
#define pool_malloc sc_malloc
#define pool_free sc_free
#define pool_warn sc__warn
#endif

/* Tags (docs/tags.md): a pool counts its objects under the tag entered
 * when it was created (or given by sc_pool_set_tag). Standalone, the
 * library's functions are weak references: absent, no tag. */
#ifdef SC_POOL_STANDALONE
typedef unsigned sc_tag_t;
sc_tag_t sc_tag_enter(sc_tag_t tag) __attribute__((weak));
void sc_tag_leave(sc_tag_t previous) __attribute__((weak));
#define pool_tags_ok() (sc_tag_enter != NULL && sc_tag_leave != NULL)
#else
#define pool_tags_ok() true
#endif

#define NIL UINT32_MAX
/** Slot and object counts stay below this so indices fit in 32 bits and the
 * hash table (twice as large) in memory arithmetic. */
#define POOL_LIMIT_MAX ((size_t)1 << 30)

typedef struct slot_s {
  void *obj;           /* NULL while the slot holds no object */
  uint64_t live_epoch; /* equals pool->epoch while the object is live */
  uint32_t prev;       /* list links (slot indices, NIL at the ends) */
  uint32_t next;
} slot_t;

typedef struct list_s {
  uint32_t head;
  uint32_t tail;
} list_t;

struct sc_pool {
  size_t object_size;
  struct sc_pool_config cfg;
  size_t limit;    /* most objects held at once: capacity or max_capacity */
  uint64_t epoch;  /* bumped by reset: every live slot becomes free at once */
  list_t live;     /* head = oldest acquisition */
  list_t free;     /* tail = hot end, head = cold end */
  uint32_t unused; /* stack of slots without an object, linked by next */
  uint32_t fresh;  /* slots at and beyond this index were never used */
  uint32_t table_mask;
  struct sc_pool_stats st;
  slot_t *slots;   /* limit entries */
  uint32_t *table; /* table_mask + 1 entries: slot index + 1, 0 = empty */
  unsigned tag;    /* the tag its objects are counted under (0: none) */
};

/* ---- lists ---------------------------------------------------------------- */

/** Append slot i at the tail of list l. */
static void list_push_tail(sc_pool *pool, list_t *l, uint32_t i) {
  slot_t *s = &pool->slots[i];
  s->next = NIL;
  s->prev = l->tail;
  if (l->tail != NIL)
    pool->slots[l->tail].next = i;
  else
    l->head = i;
  l->tail = i;
}

/** Unlink slot i from list l. */
static void list_remove(sc_pool *pool, list_t *l, uint32_t i) {
  slot_t *s = &pool->slots[i];
  if (s->prev != NIL)
    pool->slots[s->prev].next = s->next;
  else
    l->head = s->next;
  if (s->next != NIL)
    pool->slots[s->next].prev = s->prev;
  else
    l->tail = s->prev;
  s->prev = s->next = NIL;
}

/** Move every slot of `from` to the tail of `to`, in order, in O(1). */
static void list_splice_tail(sc_pool *pool, list_t *to, list_t *from) {
  if (from->head == NIL) return;
  if (to->tail != NIL) {
    pool->slots[to->tail].next = from->head;
    pool->slots[from->head].prev = to->tail;
  } else {
    to->head = from->head;
  }
  to->tail = from->tail;
  from->head = from->tail = NIL;
}

/* ---- the address index ------------------------------------------------------ */

/** Home bucket of an object address (Fibonacci hashing of the address). */
static uint32_t hash_home(const sc_pool *pool, const void *p) {
  uint64_t h = ((uint64_t)(uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull;
  return (uint32_t)(h >> 32) & pool->table_mask;
}

/** Bucket holding object p, or NIL when p is no object of this pool. */
static uint32_t hash_find(const sc_pool *pool, const void *p) {
  for (uint32_t b = hash_home(pool, p);; b = (b + 1) & pool->table_mask) {
    uint32_t e = pool->table[b];
    if (e == 0) return NIL;
    if (pool->slots[e - 1].obj == p) return b;
  }
}

/** Index slot i under its object's address. */
static void hash_insert(sc_pool *pool, uint32_t i) {
  uint32_t b = hash_home(pool, pool->slots[i].obj);
  while (pool->table[b] != 0) b = (b + 1) & pool->table_mask;
  pool->table[b] = i + 1;
}

/** Empty bucket b, shifting later entries of its probe run back so lookups
 * never need tombstones. */
static void hash_erase(sc_pool *pool, uint32_t b) {
  uint32_t hole = b;
  for (uint32_t j = (b + 1) & pool->table_mask; pool->table[j] != 0;
       j = (j + 1) & pool->table_mask) {
    uint32_t home = hash_home(pool, pool->slots[pool->table[j] - 1].obj);
    /* The entry at j may fill the hole unless its home lies in (hole, j]. */
    bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    pool->table[hole] = pool->table[j];
    hole = j;
  }
  pool->table[hole] = 0;
}

/* ---- objects ---------------------------------------------------------------- */

/** A new object in a slot of its own, indexed; NIL when memory runs out. */
static uint32_t object_create(sc_pool *pool) {
  uint32_t i = pool->unused;
  if (i == NIL && pool->fresh == pool->limit) return NIL; /* callers check limit first */
  void *obj;
  if (pool->tag != 0 && pool_tags_ok()) {
    sc_tag_t prev = sc_tag_enter(pool->tag);
    obj = pool_malloc(pool->object_size);
    sc_tag_leave(prev);
  } else {
    obj = pool_malloc(pool->object_size);
  }
  if (obj == NULL) return NIL;
  if (i != NIL)
    pool->unused = pool->slots[i].next;
  else
    i = pool->fresh++;
  slot_t *s = &pool->slots[i];
  s->obj = obj;
  s->live_epoch = 0;
  s->prev = s->next = NIL;
  hash_insert(pool, i);
  pool->st.created++;
  pool->st.capacity++;
  return i;
}

/** Give the object of free slot i back to the allocator. */
static void object_collect(sc_pool *pool, uint32_t i) {
  slot_t *s = &pool->slots[i];
  list_remove(pool, &pool->free, i);
  hash_erase(pool, hash_find(pool, s->obj));
  pool_free(s->obj);
  s->obj = NULL;
  s->next = pool->unused;
  pool->unused = i;
  pool->st.free--;
  pool->st.capacity--;
  pool->st.collected++;
}

/** Triggered collection: free surplus objects from the cold end, at most
 * collect_per_step of them. */
static void collect_step(sc_pool *pool) {
  size_t step = pool->cfg.collect_per_step;
  for (size_t dropped = 0; dropped < step && pool->st.free > pool->cfg.max_free; dropped++)
    object_collect(pool, pool->free.head);
}

/* ---- the API ------------------------------------------------------------------ */

/** Validate a configuration; a message for the first problem, else NULL. */
static const char *config_problem(size_t object_size, const struct sc_pool_config *c) {
  if (c == NULL) return "sc_pool_create: no config";
  if (object_size == 0) return "sc_pool_create: object size 0";
  if (c->capacity == 0) return "sc_pool_create: capacity 0";
  if (c->policy != SC_POOL_REJECT && c->policy != SC_POOL_OVERWRITE_OLDEST &&
      c->policy != SC_POOL_GROW_TO_CAP)
    return "sc_pool_create: unknown policy";
  if (c->policy == SC_POOL_GROW_TO_CAP && c->max_capacity < c->capacity)
    return "sc_pool_create: max_capacity below capacity";
  size_t limit = c->policy == SC_POOL_GROW_TO_CAP ? c->max_capacity : c->capacity;
  if (limit > POOL_LIMIT_MAX) return "sc_pool_create: capacity too large";
  return NULL;
}

sc_public sc_pool *sc_pool_create(size_t object_size, const struct sc_pool_config *config) {
  const char *problem = config_problem(object_size, config);
  if (problem != NULL) {
    pool_warn(problem);
    return NULL;
  }
  size_t limit = config->policy == SC_POOL_GROW_TO_CAP ? config->max_capacity : config->capacity;
  size_t buckets = 16;
  while (buckets < 2 * limit) buckets *= 2; /* load factor <= 1/2 */
  size_t slots_off = (sizeof(sc_pool) + 15) & ~(size_t)15;
  size_t table_off = slots_off + limit * sizeof(slot_t);
  size_t total = table_off + buckets * sizeof(uint32_t);
  char *mem = pool_calloc(1, total); /* zeroed: an empty index */
  if (mem == NULL) return NULL;
  sc_pool *pool = (sc_pool *)mem;
  pool->object_size = object_size;
  pool->cfg = *config;
  if (pool_tags_ok()) { /* the tag entered now */
    pool->tag = sc_tag_enter(0);
    sc_tag_leave(pool->tag);
  }
  pool->limit = limit;
  pool->epoch = 1;
  pool->live.head = pool->live.tail = NIL;
  pool->free.head = pool->free.tail = NIL;
  pool->unused = NIL;
  pool->fresh = 0;
  pool->table_mask = (uint32_t)(buckets - 1);
  pool->slots = (slot_t *)(mem + slots_off);
  pool->table = (uint32_t *)(mem + table_off);
  return pool;
}

/** Take a slot for acquire following the seed's order: reuse, create up to
 * capacity, then the policy. NIL when refused. */
static uint32_t acquire_slot(sc_pool *pool) {
  struct sc_pool_stats *st = &pool->st;
  uint32_t i = pool->free.tail;
  if (i != NIL) {
    list_remove(pool, &pool->free, i);
    st->free--;
    st->hits++;
    return i;
  }
  if (st->capacity < pool->cfg.capacity) {
    i = object_create(pool);
    if (i != NIL) st->misses++;
    return i;
  }
  if (pool->cfg.policy == SC_POOL_OVERWRITE_OLDEST && pool->live.head != NIL) {
    i = pool->live.head;
    list_remove(pool, &pool->live, i);
    st->live--;
    st->overwritten++;
    return i;
  }
  if (pool->cfg.policy == SC_POOL_GROW_TO_CAP && st->capacity < pool->cfg.max_capacity) {
    i = object_create(pool);
    if (i != NIL) {
      st->misses++;
      st->grown++;
    }
    return i;
  }
  return NIL;
}

sc_public void *sc_pool_acquire(sc_pool *pool) {
  struct sc_pool_stats *st = &pool->st;
  st->acquired++;
  uint32_t i = acquire_slot(pool);
  if (i == NIL) {
    st->rejected++;
    return NULL;
  }
  slot_t *s = &pool->slots[i];
  s->live_epoch = pool->epoch;
  list_push_tail(pool, &pool->live, i);
  if (++st->live > st->peak_live) st->peak_live = st->live;
  if (pool->cfg.reset != NULL)
    pool->cfg.reset(s->obj, pool->cfg.reset_ctx);
  else
    memset(s->obj, 0, pool->object_size);
  return s->obj;
}

sc_public bool sc_pool_release(sc_pool *pool, void *object) {
  if (object == NULL) return false;
  uint32_t b = hash_find(pool, object);
  if (b == NIL) return false; /* foreign, interior, or collected */
  uint32_t i = pool->table[b] - 1;
  slot_t *s = &pool->slots[i];
  if (s->live_epoch != pool->epoch) return false; /* already free */
  s->live_epoch = 0;
  list_remove(pool, &pool->live, i);
  list_push_tail(pool, &pool->free, i);
  pool->st.live--;
  pool->st.free++;
  pool->st.released++;
  collect_step(pool);
  return true;
}

sc_public void sc_pool_reset(sc_pool *pool) {
  struct sc_pool_stats *st = &pool->st;
  /* The live list joins the free list's hot end; bumping the epoch makes
   * every slot in it "not live" without visiting them. */
  list_splice_tail(pool, &pool->free, &pool->live);
  pool->epoch++;
  st->free += st->live;
  st->live = 0;
  st->acquired = st->released = st->hits = st->misses = 0;
  st->rejected = st->overwritten = st->grown = st->peak_live = 0;
}

sc_public void sc_pool_stats(const sc_pool *pool, struct sc_pool_stats *out) { *out = pool->st; }

sc_public unsigned sc_pool_hit_rate_permille(const struct sc_pool_stats *stats) {
  if (stats->acquired == 0) return 0;
  unsigned __int128 scaled = (unsigned __int128)stats->hits * 1000u;
  return (unsigned)(scaled / stats->acquired);
}

sc_public void sc_pool_destroy(sc_pool *pool) {
  if (pool == NULL) return;
  for (uint32_t i = 0; i < pool->fresh; i++)
    if (pool->slots[i].obj != NULL) pool_free(pool->slots[i].obj);
  pool_free(pool);
}

sc_public void sc_pool_set_tag(sc_pool *pool, unsigned tag) {
  if (pool != NULL) pool->tag = tag;
}
