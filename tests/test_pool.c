/* SPDX-License-Identifier: MIT */
/* test_pool.c — the object pool (include/sizeclass_pool.h): every test of
 * the seeds' chapter 9.1 with the seed's own numbers, the chapter 7.1.6
 * triggered-collection test, and a randomized comparison against a plain
 * reference model of the same rules. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sizeclass.h"
#include "sizeclass_pool.h"

/* The seed's configuration table (chapter 9.1): capacity 64, max 96,
 * growToCap, a burst of 20 objects per frame for 30 frames. */
enum { SEED_CAPACITY = 64, SEED_MAX = 96, SEED_BURST = 20, SEED_FRAMES = 30 };

/* The seed's pooled object: the transient state of one effect, floating
 * text or drop. */
typedef struct {
  int32_t kind, x, y, vx, vy, life;
} item_t;

static const struct sc_pool_config seed_config = {
    .capacity = SEED_CAPACITY, .max_capacity = SEED_MAX, .policy = SC_POOL_GROW_TO_CAP};

static struct sc_pool_stats stats_of(const sc_pool *pool) {
  struct sc_pool_stats s;
  sc_pool_stats(pool, &s);
  return s;
}

static sc_pool *pool_new(size_t capacity, size_t max, enum sc_pool_policy policy) {
  struct sc_pool_config c = {.capacity = capacity, .max_capacity = max, .policy = policy};
  sc_pool *pool = sc_pool_create(sizeof(item_t), &c);
  cr_assert_not_null(pool);
  return pool;
}

/* ---- chapter 9.1 -------------------------------------------------------- */

Test(pool, warm_up_then_steady_reuse_creates_nothing_more) {
  sc_pool *pool = sc_pool_create(sizeof(item_t), &seed_config);
  cr_assert_not_null(pool);
  item_t *warm[SEED_CAPACITY];
  for (int i = 0; i < SEED_CAPACITY; i++) warm[i] = sc_pool_acquire(pool);
  cr_assert_eq(stats_of(pool).created, SEED_CAPACITY, "warm-up creates exactly capacity");
  cr_assert_eq(stats_of(pool).hits, 0);
  for (int i = 0; i < SEED_CAPACITY; i++) cr_assert(sc_pool_release(pool, warm[i]));
  for (int round = 0; round < 10; round++) {
    item_t *batch[SEED_CAPACITY];
    for (int i = 0; i < SEED_CAPACITY; i++) batch[i] = sc_pool_acquire(pool);
    for (int i = 0; i < SEED_CAPACITY; i++) cr_assert(sc_pool_release(pool, batch[i]));
  }
  struct sc_pool_stats s = stats_of(pool);
  cr_assert_eq(s.created, SEED_CAPACITY, "steady state creates nothing");
  cr_assert_eq(s.hits, SEED_CAPACITY * 10, "steady state: every acquire is a hit");
  cr_assert_eq(s.rejected, 0);
  cr_assert_eq(s.free, SEED_CAPACITY);
  cr_assert_eq(s.live, 0);
  sc_pool_destroy(pool);
}

Test(pool, burst_per_frame_creates_only_in_the_first_frame) {
  sc_pool *pool = sc_pool_create(sizeof(item_t), &seed_config);
  cr_assert_not_null(pool);
  for (int f = 0; f < SEED_FRAMES; f++) {
    item_t *batch[SEED_BURST];
    for (int i = 0; i < SEED_BURST; i++) batch[i] = sc_pool_acquire(pool);
    for (int i = 0; i < SEED_BURST; i++) cr_assert(sc_pool_release(pool, batch[i]));
  }
  struct sc_pool_stats s = stats_of(pool);
  cr_assert_eq(s.created, SEED_BURST, "a burst of 20 creates 20, in frame one only");
  cr_assert_eq(s.hits, SEED_BURST * (SEED_FRAMES - 1), "every later frame is all hits");
  cr_assert_eq(s.peak_live, SEED_BURST, "peak live = one frame's burst");
  cr_assert_eq(s.acquired, SEED_BURST * SEED_FRAMES);
  cr_assert_eq(s.misses, SEED_BURST);
  cr_assert_eq(sc_pool_hit_rate_permille(&s), 966); /* 580 * 1000 / 600 */
  sc_pool_destroy(pool);
}

Test(pool, reject_returns_null_and_counts_once) {
  sc_pool *pool = pool_new(4, 4, SC_POOL_REJECT);
  for (int i = 0; i < 4; i++) cr_assert_not_null(sc_pool_acquire(pool));
  cr_assert_null(sc_pool_acquire(pool), "the fifth acquire is rejected");
  struct sc_pool_stats s = stats_of(pool);
  cr_assert_eq(s.rejected, 1);
  cr_assert_eq(s.capacity, 4);
  cr_assert_eq(s.live, 4);
  sc_pool_destroy(pool);
}

Test(pool, overwrite_oldest_hands_out_the_oldest_live_object) {
  sc_pool *pool = pool_new(3, 3, SC_POOL_OVERWRITE_OLDEST);
  item_t *a = sc_pool_acquire(pool), *b = sc_pool_acquire(pool), *c = sc_pool_acquire(pool);
  cr_assert(a && b && c && a != b && b != c && a != c);
  a->life = 7;
  cr_assert_eq(sc_pool_acquire(pool), a, "the oldest object, a, is reused");
  cr_assert_eq(a->life, 0, "and reset like a new one");
  struct sc_pool_stats s = stats_of(pool);
  cr_assert_eq(s.live, 3, "live stays at capacity");
  cr_assert_eq(s.overwritten, 1);
  cr_assert_eq(s.capacity, 3);
  /* a is now the newest: the order continues with b, c, then a again. */
  cr_assert_eq(sc_pool_acquire(pool), b);
  cr_assert_eq(sc_pool_acquire(pool), c);
  cr_assert_eq(sc_pool_acquire(pool), a);
  /* Releasing the middle of the live list keeps the order of the rest. */
  cr_assert(sc_pool_release(pool, b));
  cr_assert_eq(sc_pool_acquire(pool), b, "a free object is reused before overwriting");
  cr_assert_eq(sc_pool_acquire(pool), c, "then the oldest live, c");
  cr_assert_eq(stats_of(pool).overwritten, 5);
  sc_pool_destroy(pool);
}

Test(pool, grow_to_cap_grows_then_rejects) {
  sc_pool *pool = pool_new(4, 6, SC_POOL_GROW_TO_CAP);
  for (int i = 0; i < 6; i++) cr_assert_not_null(sc_pool_acquire(pool));
  struct sc_pool_stats s = stats_of(pool);
  cr_assert_eq(s.capacity, 6);
  cr_assert_eq(s.grown, 2, "4 -> 6 is two growths");
  cr_assert_null(sc_pool_acquire(pool), "at the ceiling the pool rejects");
  cr_assert_eq(stats_of(pool).rejected, 1);
  sc_pool_destroy(pool);
}

Test(pool, reset_returns_everything_and_clears_the_window) {
  sc_pool *pool = sc_pool_create(sizeof(item_t), &seed_config);
  cr_assert_not_null(pool);
  item_t *first = NULL;
  for (int i = 0; i < 30; i++) {
    item_t *o = sc_pool_acquire(pool);
    if (i == 0) first = o;
  }
  uint64_t created = stats_of(pool).created;
  sc_pool_reset(pool);
  struct sc_pool_stats s = stats_of(pool);
  cr_assert_eq(s.live, 0);
  cr_assert_eq(s.acquired, 0, "window counters restart");
  cr_assert_eq(s.misses, 0);
  cr_assert_eq(s.peak_live, 0);
  cr_assert_eq(s.created, created, "created is history and survives reset");
  cr_assert_eq(s.capacity, 30);
  cr_assert_eq(s.free, 30);
  cr_assert_not(sc_pool_release(pool, first), "after reset nothing is live");
  first = sc_pool_acquire(pool);
  cr_assert_eq(stats_of(pool).hits, 1, "reset objects are reused");
  cr_assert(sc_pool_release(pool, first));
  sc_pool_destroy(pool);
}

Test(pool, release_of_what_is_not_live_fails_and_changes_nothing) {
  sc_pool *pool = sc_pool_create(sizeof(item_t), &seed_config);
  sc_pool *other = sc_pool_create(sizeof(item_t), &seed_config);
  cr_assert(pool && other);
  item_t *o = sc_pool_acquire(pool);
  item_t *keep = sc_pool_acquire(pool);
  cr_assert(sc_pool_release(pool, o));
  struct sc_pool_stats before = stats_of(pool);
  cr_assert_not(sc_pool_release(pool, o), "the same object cannot be released twice");
  cr_assert_not(sc_pool_release(pool, sc_pool_acquire(other)), "another pool's object");
  cr_assert_not(sc_pool_release(pool, (char *)keep + 4), "a pointer into the middle");
  void *heap = malloc(sizeof(item_t));
  cr_assert_not(sc_pool_release(pool, heap), "a heap block");
  free(heap);
  int local;
  cr_assert_not(sc_pool_release(pool, &local), "a stack address");
  cr_assert_not(sc_pool_release(pool, NULL));
  struct sc_pool_stats after = stats_of(pool);
  cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0, "failed releases change nothing");
  cr_assert(sc_pool_release(pool, keep), "the live object is still releasable");
  sc_pool_destroy(pool);
  sc_pool_destroy(other);
}

Test(pool, hit_rate_is_an_integer_floor_in_permille) {
  sc_pool *pool = sc_pool_create(sizeof(item_t), &seed_config);
  struct sc_pool_stats s = stats_of(pool);
  s.acquired = 3;
  s.hits = 2;
  cr_assert_eq(sc_pool_hit_rate_permille(&s), 666);
  struct sc_pool_stats empty = stats_of(pool);
  cr_assert_eq(empty.acquired, 0);
  cr_assert_eq(sc_pool_hit_rate_permille(&empty), 0, "nothing acquired: 0, not a division");
  s.acquired = s.hits = UINT64_MAX;
  cr_assert_eq(sc_pool_hit_rate_permille(&s), 1000, "no overflow on huge counts");
  sc_pool_destroy(pool);
}

/* ---- chapter 7.1.6: reset and triggered collection ----------------------- */

static void mark_reset(void *object, void *ctx) {
  ((item_t *)object)->kind = 99;
  (*(int *)ctx)++;
}

Test(pool, reuse_returns_the_same_object_reset) {
  struct sc_pool_config c = {
      .capacity = 16, .policy = SC_POOL_REJECT, .max_free = 8, .collect_per_step = 4};
  sc_pool *pool = sc_pool_create(sizeof(item_t), &c);
  item_t *a = sc_pool_acquire(pool);
  a->x = 42;
  cr_assert(sc_pool_release(pool, a));
  item_t *b = sc_pool_acquire(pool);
  cr_assert_eq(b, a, "the same object is reused");
  cr_assert_eq(b->x, 0, "its dirty state is gone");
  cr_assert_eq(stats_of(pool).created, 1);
  sc_pool_destroy(pool);

  int calls = 0;
  c.reset = mark_reset;
  c.reset_ctx = &calls;
  pool = sc_pool_create(sizeof(item_t), &c);
  a = sc_pool_acquire(pool);
  cr_assert_eq(a->kind, 99, "a custom reset runs on new objects");
  a->kind = 1;
  a->x = 5;
  cr_assert(sc_pool_release(pool, a));
  b = sc_pool_acquire(pool);
  cr_assert_eq(b, a);
  cr_assert_eq(b->kind, 99, "and on reused ones");
  cr_assert_eq(b->x, 5, "instead of zeroing");
  cr_assert_eq(calls, 2);
  sc_pool_destroy(pool);
}

Test(pool, triggered_collection_in_steps) {
  /* The seed's numbers: maxSize 4, collectPerStep 3, 12 releases. */
  struct sc_pool_config c = {
      .capacity = 12, .policy = SC_POOL_REJECT, .max_free = 4, .collect_per_step = 3};
  sc_pool *pool = sc_pool_create(sizeof(item_t), &c);
  item_t *items[12];
  for (int i = 0; i < 12; i++) cr_assert_not_null(items[i] = sc_pool_acquire(pool));
  uint64_t collected_before = 0;
  for (int i = 0; i < 12; i++) {
    cr_assert(sc_pool_release(pool, items[i]));
    struct sc_pool_stats s = stats_of(pool);
    cr_assert_leq(s.free, 4, "free never exceeds max_free after a release");
    cr_assert_leq(s.collected - collected_before, 3, "at most collect_per_step per release");
    collected_before = s.collected;
  }
  struct sc_pool_stats s = stats_of(pool);
  cr_assert_eq(s.free, 4);
  cr_assert_eq(s.collected, 8, "8 of the 12 releases each dropped one object");
  cr_assert_eq(s.capacity, 4, "capacity = created - collected");
  cr_assert_eq(s.created, 12);
  /* A collected object is no longer the pool's. */
  cr_assert_not(sc_pool_release(pool, items[0]));
  /* Capacity freed by collection is created again on demand, as a miss. */
  for (int i = 0; i < 12; i++) cr_assert_not_null(items[i] = sc_pool_acquire(pool));
  s = stats_of(pool);
  cr_assert_eq(s.hits, 4);
  cr_assert_eq(s.created, 20);
  cr_assert_eq(s.grown, 0);
  sc_pool_destroy(pool);
}

Test(pool, collection_never_drops_more_than_a_step) {
  /* reset makes all 12 free at once; later releases each trim at most 3. */
  struct sc_pool_config c = {
      .capacity = 12, .policy = SC_POOL_REJECT, .max_free = 4, .collect_per_step = 3};
  sc_pool *pool = sc_pool_create(sizeof(item_t), &c);
  for (int i = 0; i < 12; i++) cr_assert_not_null(sc_pool_acquire(pool));
  sc_pool_reset(pool);
  cr_assert_eq(stats_of(pool).free, 12, "reset itself collects nothing");
  uint64_t expect_free[] = {9, 6, 4, 4};
  for (int i = 0; i < 4; i++) {
    void *o = sc_pool_acquire(pool);
    cr_assert(sc_pool_release(pool, o));
    cr_assert_eq(stats_of(pool).free, expect_free[i], "step %d", i);
  }
  cr_assert_eq(stats_of(pool).collected, 8);
  sc_pool_destroy(pool);
}

/* ---- API edges ------------------------------------------------------------ */

Test(pool, bad_configurations_are_refused) {
  struct sc_pool_config c = {.capacity = 4, .max_capacity = 2, .policy = SC_POOL_GROW_TO_CAP};
  cr_assert_null(sc_pool_create(16, &c), "max_capacity below capacity");
  c.max_capacity = 8;
  cr_assert_null(sc_pool_create(0, &c), "object size 0");
  cr_assert_null(sc_pool_create(16, NULL), "no config");
  c.capacity = 0;
  cr_assert_null(sc_pool_create(16, &c), "capacity 0");
  c.capacity = 4;
  c.policy = (enum sc_pool_policy)7;
  cr_assert_null(sc_pool_create(16, &c), "unknown policy");
  sc_pool_destroy(NULL);
}

Test(pool, objects_come_from_the_size_classes) {
  struct sc_pool_config c = {.capacity = 8, .policy = SC_POOL_REJECT};
  sc_pool *small = sc_pool_create(40, &c);
  sc_pool *large = sc_pool_create(3000, &c);
  void *p = sc_pool_acquire(small), *q = sc_pool_acquire(large);
  cr_assert(sc_owns(p), "a 40 B object is a class block");
  cr_assert_eq(sc_usable_size(p), 64);
  cr_assert_not(sc_owns(q), "a 3000 B object comes from the system allocator");
  cr_assert_geq(sc_usable_size(q), 3000);
  memset(q, 0xab, 3000);
  cr_assert(sc_pool_release(large, q));
  sc_pool_destroy(small); /* p still live: destroy frees it too */
  sc_pool_destroy(large);
}

Test(pool, large_pool_overwrite_and_arbitrary_release) {
  /* 100 000 objects cycled through overwrite-oldest twice, then released in
   * an interleaved order: with a scanning pool this is 10^10 steps. */
  enum { N = 100000 };
  struct sc_pool_config c = {.capacity = N, .policy = SC_POOL_OVERWRITE_OLDEST};
  sc_pool *pool = sc_pool_create(16, &c);
  void **order = malloc(N * sizeof(void *));
  for (int i = 0; i < N; i++) order[i] = sc_pool_acquire(pool);
  for (int i = 0; i < 2 * N; i++)
    cr_assert_eq(sc_pool_acquire(pool), order[i % N], "overwrite takes the oldest, %d", i);
  for (int i = 0; i < N; i += 2) cr_assert(sc_pool_release(pool, order[i]));
  for (int i = N - 1; i > 0; i -= 2) cr_assert(sc_pool_release(pool, order[i]));
  struct sc_pool_stats s = stats_of(pool);
  cr_assert_eq(s.live, 0);
  cr_assert_eq(s.free, N);
  cr_assert_eq(s.overwritten, 2 * N);
  free(order);
  sc_pool_destroy(pool);
}

/* ---- randomized, against a reference model ------------------------------ */

/* The model keeps the same rules with plain arrays and linear scans: live in
 * acquisition order (oldest first), free with the hot end last. */
typedef struct {
  struct sc_pool_config cfg;
  struct sc_pool_stats st;
  void **live;
  size_t n_live;
  void **free;
  size_t n_free;
  void **gone; /* collected objects, to try releasing them */
  size_t n_gone;
} model_t;

static uint64_t rng_state;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static bool model_knows(const model_t *m, const void *p) {
  for (size_t i = 0; i < m->n_live; i++)
    if (m->live[i] == p) return true;
  for (size_t i = 0; i < m->n_free; i++)
    if (m->free[i] == p) return true;
  return false;
}

static void remove_at(void **a, size_t *n, size_t i) {
  memmove(&a[i], &a[i + 1], (*n - i - 1) * sizeof(void *));
  (*n)--;
}

static void expect_same_stats(const model_t *m, sc_pool *pool, long step) {
  struct sc_pool_stats s = stats_of(pool);
  const struct sc_pool_stats *e = &m->st;
#define SAME(f)                                                                        \
  cr_assert_eq(s.f, e->f, "step %ld: " #f " %lu, model %lu", step, (unsigned long)s.f, \
               (unsigned long)e->f)
  SAME(created);
  SAME(acquired);
  SAME(released);
  SAME(hits);
  SAME(misses);
  SAME(rejected);
  SAME(overwritten);
  SAME(grown);
  SAME(collected);
  SAME(peak_live);
  SAME(live);
  SAME(free);
  SAME(capacity);
#undef SAME
}

/** Model of acquire; returns the object the pool must return, or (void*)1
 * for "a new object", or NULL for "rejected". */
static void *model_acquire(model_t *m) {
  struct sc_pool_stats *s = &m->st;
  s->acquired++;
  void *p;
  if (m->n_free > 0) {
    p = m->free[--m->n_free];
    s->hits++;
  } else if (s->capacity < m->cfg.capacity) {
    p = (void *)1;
    s->misses++;
  } else if (m->cfg.policy == SC_POOL_OVERWRITE_OLDEST && m->n_live > 0) {
    p = m->live[0];
    remove_at(m->live, &m->n_live, 0);
    s->overwritten++;
  } else if (m->cfg.policy == SC_POOL_GROW_TO_CAP && s->capacity < m->cfg.max_capacity) {
    p = (void *)1;
    s->misses++;
    s->grown++;
  } else {
    s->rejected++;
    return NULL;
  }
  return p;
}

static void model_took(model_t *m, void *p, bool is_new) {
  if (is_new) {
    m->st.created++;
    m->st.capacity++;
  }
  m->live[m->n_live++] = p;
  m->st.live = m->n_live;
  m->st.free = m->n_free;
  if (m->st.live > m->st.peak_live) m->st.peak_live = m->st.live;
}

static void model_release(model_t *m, size_t live_index) {
  void *p = m->live[live_index];
  remove_at(m->live, &m->n_live, live_index);
  m->free[m->n_free++] = p;
  m->st.released++;
  for (size_t d = 0; d < m->cfg.collect_per_step && m->n_free > m->cfg.max_free; d++) {
    m->gone[m->n_gone++ % 64] = m->free[0];
    remove_at(m->free, &m->n_free, 0);
    m->st.collected++;
    m->st.capacity--;
  }
  m->st.live = m->n_live;
  m->st.free = m->n_free;
}

static void model_reset(model_t *m) {
  memcpy(&m->free[m->n_free], m->live, m->n_live * sizeof(void *));
  m->n_free += m->n_live;
  m->n_live = 0;
  struct sc_pool_stats *s = &m->st;
  s->acquired = s->released = s->hits = s->misses = 0;
  s->rejected = s->overwritten = s->grown = s->peak_live = 0;
  s->live = 0;
  s->free = m->n_free;
}

/* Each live object carries a tag filling it; a damaged tag means two
 * objects overlap or the pool wrote into a live object. */
static void tag_fill(void *p, size_t n, uint64_t tag) {
  for (size_t i = 0; i < n; i++) ((uint8_t *)p)[i] = (uint8_t)(tag * 31 + i);
}
static bool tag_ok(const void *p, size_t n, uint64_t tag) {
  for (size_t i = 0; i < n; i++)
    if (((const uint8_t *)p)[i] != (uint8_t)(tag * 31 + i)) return false;
  return true;
}
static bool all_zero(const void *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (((const uint8_t *)p)[i] != 0) return false;
  return true;
}

/* Tags are looked up by object through a small linear table. */
typedef struct {
  void *p;
  uint64_t tag;
} tag_entry_t;

static uint64_t *tag_of(tag_entry_t *t, size_t n, void *p) {
  for (size_t i = 0; i < n; i++)
    if (t[i].p == p) return &t[i].tag;
  return NULL;
}

static void random_run(uint64_t seed, long steps) {
  rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
  static const size_t sizes[] = {1, 8, 24, 64, 100, 333, 1000, 1024, 1500, 3000};
  size_t object_size = sizes[rng() % (sizeof(sizes) / sizeof(sizes[0]))];
  model_t m = {0};
  m.cfg.policy = (enum sc_pool_policy)(rng() % 3);
  m.cfg.capacity = 1 + rng() % 40;
  m.cfg.max_capacity = m.cfg.capacity + rng() % 24;
  m.cfg.max_free = rng() % 30;
  m.cfg.collect_per_step = rng() % 5;
  size_t limit = m.cfg.policy == SC_POOL_GROW_TO_CAP ? m.cfg.max_capacity : m.cfg.capacity;
  m.live = calloc(limit + 1, sizeof(void *));
  m.free = calloc(limit + 1, sizeof(void *));
  m.gone = calloc(64, sizeof(void *));
  tag_entry_t *tags = calloc(limit + 1, sizeof(tag_entry_t));
  size_t n_tags = 0;
  sc_pool *pool = sc_pool_create(object_size, &m.cfg);
  cr_assert_not_null(pool);
  uint64_t next_tag = 1;

  for (long step = 0; step < steps; step++) {
    unsigned op = (unsigned)(rng() % 100);
    if (op < 50) { /* acquire */
      void *want = model_acquire(&m);
      void *got = sc_pool_acquire(pool);
      if (want == NULL) {
        cr_assert_null(got, "step %ld: the model rejects", step);
      } else {
        cr_assert_not_null(got, "step %ld", step);
        bool is_new = want == (void *)1;
        if (is_new) {
          cr_assert_not(model_knows(&m, got), "step %ld: a new object is new", step);
        } else {
          cr_assert_eq(got, want, "step %ld: the model's choice of object", step);
        }
        cr_assert(all_zero(got, object_size), "step %ld: acquired objects are zeroed", step);
        uint64_t *t = tag_of(tags, n_tags, got);
        if (t == NULL) {
          /* a new object may reuse a collected object's address */
          cr_assert(is_new);
          uint64_t *old = NULL;
          for (size_t i = 0; i < n_tags && old == NULL; i++)
            if (!model_knows(&m, tags[i].p)) old = &tags[i].tag, tags[i].p = got;
          if (old == NULL) {
            tags[n_tags].p = got;
            old = &tags[n_tags++].tag;
          }
          t = old;
        }
        *t = next_tag++;
        tag_fill(got, object_size, *t);
        model_took(&m, got, is_new);
      }
    } else if (op < 88 && m.n_live > 0) { /* release a live object */
      size_t i = (size_t)(rng() % m.n_live);
      void *p = m.live[i];
      uint64_t *t = tag_of(tags, n_tags, p);
      cr_assert(t && tag_ok(p, object_size, *t), "step %ld: a live object stayed intact", step);
      model_release(&m, i);
      cr_assert(sc_pool_release(pool, p), "step %ld", step);
    } else if (op < 98) { /* release something that is not live */
      void *p;
      unsigned kind = (unsigned)(rng() % 3);
      if (kind == 0 && m.n_free > 0)
        p = m.free[rng() % m.n_free];
      else if (kind == 1 && m.n_gone > 0)
        p = m.gone[rng() % (m.n_gone < 64 ? m.n_gone : 64)];
      else if (m.n_live > 0 && object_size > 1)
        p = (char *)m.live[rng() % m.n_live] + 1;
      else
        p = &m;
      bool live = false; /* a collected address may have been reused since */
      for (size_t i = 0; i < m.n_live; i++) live |= m.live[i] == p;
      if (live) continue;
      cr_assert_not(sc_pool_release(pool, p), "step %ld: not live, kind %u", step, kind);
    } else { /* reset */
      model_reset(&m);
      sc_pool_reset(pool);
    }
    expect_same_stats(&m, pool, step);
  }
  sc_pool_destroy(pool);
  free(m.live);
  free(m.free);
  free(m.gone);
  free(tags);
}

Test(pool, randomized_against_a_reference_model) {
  for (uint64_t seed = 1; seed <= 300; seed++) random_run(seed, 2000);
}
